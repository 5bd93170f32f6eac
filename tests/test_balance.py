"""Balance sheet (ftflame/correct/balance.py): measured raw mean = corrected
components + removed hook cost + irq + off-CPU + switch work + unaccounted, and the check
against an external total (baseline recording or a given number)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import fixture, profile_of
from ftflame.correct.balance import parse_measured, sheet
from ftflame.correct.calibration import calibrate_from_traces, for_profile
from ftflame.correct.corrections import correct
from ftflame.model.errors import InputError
from ftflame.model.profile import Calibration
from helpers import leafroots

FTFLAME = [sys.executable, "-m", "ftflame.cli"]
ICOUNT = "k6.1/s15-icount-calib/"


@pytest.fixture(scope="module")
def icount(tmp_path_factory):
    calib = [fixture(ICOUNT + n) for n in ("trace-null.dat", "trace-dispatch-root.dat", "trace-dispatch-full.dat")]
    doc = calibrate_from_traces(*(profile_of(p) for p in calib))
    path = tmp_path_factory.mktemp("cal") / "calibration.json"
    path.write_text(json.dumps(doc))
    cal = Calibration(doc["o_in_ns"], doc["o_out_ns"], "file:" + str(path), doc["method"], doc)
    full = profile_of(fixture(ICOUNT + "trace-full.dat"))
    root = profile_of(fixture(ICOUNT + "trace-root.dat"))
    return {"cal": cal, "path": str(path),
            "full": correct(full, for_profile(cal, full)), "root": correct(root, for_profile(cal, root))}


def test_balance_sheet_adds_up(icount):
    b, = sheet(icount["full"])
    assert b["function"] == "nfsd3_proc_write" and b["calls"] == 116 and b["gap_calls"] == 2
    # nothing unaccounted: the model removes exactly what it says it removes
    # (parts + unaccounted == measured holds by definition, so test the term)
    assert b["unaccounted_mean_ns"] == 0.0 and b["clamped_mean_ns"] == 0.0
    # against the trace itself it balances by construction: no accounted %
    assert b["accounted_pct"] is None and b["external"] is None
    assert "--baseline" in b["accounted_note"] and "--measured" in b["accounted_note"]
    # the components are the root's own time and its children's
    assert sum(c["mean_ns"] for c in b["components"]) == pytest.approx(b["corrected_mean_ns"], abs=1)
    # where the 433.5 us went (docs/overhead.md)
    assert round(b["measured_raw_mean_ns"] / 1e3, 1) == 433.5
    assert round(b["overhead_mean_ns"] / 1e3, 1) == 336.1  # with the hook level and the sub-buffer moves (docs/overhead.md)
    assert round(b["irq_mean_ns"] / 1e3, 1) == 51.0 and b["irq_per_call"] == pytest.approx(1.06, abs=0.01)
    assert round(b["irq_corrected_mean_ns"] / 1e3, 1) == 1.6
    assert round(b["offcpu_mean_ns"] / 1e3, 1) == 36.4
    # the scheduler's work around the 26 switches, out with the off-CPU time
    assert round(b["switch_work_mean_ns"] / 1e3, 3) == 0.489 and b["switches"] == 26
    parts = (b["corrected_mean_ns"] + b["overhead_mean_ns"] + b["irq_mean_ns"] + b["offcpu_mean_ns"]
             + b["switch_work_mean_ns"])
    assert parts == pytest.approx(b["measured_raw_mean_ns"], abs=0.3)


def test_balance_sheet_with_clamps():
    """A hook cost too large for the trace (O_in 1200, O_out 700 ns): the
    root's formula goes below zero, the corrected mean is clamped at 0 and
    the clamp term is what the formula lacked, with the sign that makes
    the sheet add up (nothing left unaccounted)."""
    full = profile_of(fixture(ICOUNT + "trace-full.dat"))
    b, = sheet(correct(full, Calibration(1200.0, 700.0, "given", "given", None)))
    formula = (b["measured_raw_mean_ns"] - b["overhead_mean_ns"] - b["irq_mean_ns"] - b["offcpu_mean_ns"]
               - b["switch_work_mean_ns"])
    assert formula < -100_000 and b["corrected_mean_ns"] == 0.0
    assert b["clamped_mean_ns"] == pytest.approx(-formula, abs=0.2)
    assert b["unaccounted_mean_ns"] == 0.0


def test_balance_against_the_root_only_baseline(icount):
    b, = sheet(icount["full"], baseline=icount["root"])
    e = b["external"]
    assert e["source"].startswith("baseline ") and e["calls"] == 128
    assert e["mean_ns"] == pytest.approx(10208.9, abs=0.1)
    assert 90 < e["accounted_pct"] < 110  # the acceptance bound
    assert e["accounted_pct"] == pytest.approx(93.66, abs=0.01)
    assert e["difference_ns"] == pytest.approx(b["corrected_mean_ns"] - e["mean_ns"], abs=0.1)
    assert b["accounted_pct"] == e["accounted_pct"]  # the sheet's % is the independent one
    # listed among the independent totals, with its difference in %
    t, = b["independent"]
    assert (t["source"], t["mean_ns"], t["difference_ns"]) == (e["source"], e["mean_ns"], e["difference_ns"])
    assert t["difference_pct"] == pytest.approx(e["accounted_pct"] - 100.0, abs=0.01)


def test_balance_in_text_and_json_via_the_cli(icount, tmp_path):
    args = ["report", fixture(ICOUNT + "trace-full.dat"), "--calibration", icount["path"],
            "--baseline", fixture(ICOUNT + "trace-root.dat"), "-q"]
    txt = subprocess.run(FTFLAME + args, capture_output=True, text=True)
    assert txt.returncode == 0, txt.stderr
    assert "Balance sheet per root function" in txt.stdout
    assert "accounted 93.7%" in txt.stdout and "-0.647" in txt.stdout
    # the calibration's sampling spread (0.424) and the model's own error on 6.1
    # (ftflame/correct/model_error.json), which the header names
    from ftflame.correct.modelerror import for_kernel

    m = for_kernel("6.1.0-56-amd64")
    assert f"9.562  +- {(424.2 + m['mean'] * 9562.1) / 1e3:.3f} (95%)" in txt.stdout
    assert "the model's own error on kernel 6.1" in " ".join(txt.stdout.split())
    assert "+ scheduler's work around switches          0.489  26 switches" in txt.stdout
    assert "calibration: O_in 656.0 ns, O_out 657.1 ns" in txt.stdout
    assert all(len(line) <= 80 for line in txt.stdout.splitlines())
    js = subprocess.run(FTFLAME + args + ["-F", "json"], capture_output=True, text=True)
    doc = json.loads(js.stdout)
    b = doc["balance"][0]
    assert b["external"]["accounted_pct"] == pytest.approx(93.66, abs=0.01)
    cal = doc["calibration"]
    assert cal["spread"]["o_out"]["ci95_ns"][0] <= cal["o_out_ns"] <= cal["spread"]["o_out"]["ci95_ns"][1]
    corr = cal["corrections"]
    assert corr["irqs"] == "exclude" and corr["offcpu"] == "removed" and corr["gap_calls"] > 0
    assert corr["clamped_paths"] >= 0 and corr["unreliable_paths"] > 0
    f = next(f for f in doc["functions"] if f["name"] == "nfsd3_proc_write")
    assert f["unreliable"] is True and f["incl_corr_ns"]["calls"] == 116
    # exact per-call statistics for root calls
    assert "approx" not in f["incl_corr_ns"]
    assert f["incl_corr_ns"]["min"] <= f["incl_corr_ns"]["p50"] <= f["incl_corr_ns"]["max"]


def test_measured_values(icount):
    assert parse_measured("nfsd3_proc_write=124us") == ("nfsd3_proc_write", 124000.0)
    assert parse_measured("f=0.5ms") == ("f", 500000.0)
    assert parse_measured("f=2000ns") == ("f", 2000.0)
    assert parse_measured("f=12") == ("f", 12000.0)  # bare: us, as function_graph prints
    for bad in ("f", "=3us", "f=abc", "f=3 lightyears"):
        with pytest.raises(InputError):
            parse_measured(bad)
    b, = sheet(icount["full"], measured=[("nfsd3_proc_write", 10207.3)])
    assert b["external"]["source"] == "given (--measured)"
    assert b["external"]["accounted_pct"] == pytest.approx(93.68, abs=0.01)
    with pytest.raises(InputError, match="not a root function"):
        sheet(icount["full"], measured=[("nfsd_write", 1000.0)])
    proc = subprocess.run(FTFLAME + ["report", fixture(ICOUNT + "trace-full.dat"), "--measured", "nfsd_write=3us"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_sheet_holds_few_whole_tree_temporaries():
    """The sheet's per-node columns are made in place (clean sums, the own
    clamp) and the irq calls only at the irq roots: its peak is about five
    per-node float columns, not seven."""
    import tracemalloc

    from conftest import SAMPLE
    from ftflame.correct import balance
    from ftflame.model.profile import Calibration
    from ftflame.parse import read

    p = correct(read(SAMPLE), Calibration(o_in_ns=150.0, o_out_ns=90.0, source="test"))
    want = balance.attach(p).balance  # the Profile's cached views made before
    tracemalloc.start()
    try:
        got = balance.attach(p).balance
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == want
    assert peak / (8 * p.nrows) < 6


def test_the_sheet_of_many_root_functions_has_no_python_per_root(tmp_path, monkeypatch):
    """A trace with 100k distinct root functions: the sheet grouped its root
    rows by name one row at a time (Profile.name per row) and sorted and
    counted the functions it does not itemise one by one in Python.
    Counted, not timed: names looked up for the rows it itemises only; the
    note's totals the same as summed in order."""
    from ftflame import parse
    from ftflame.correct import balance
    from ftflame.model.profile import Profile

    n = 5000
    path = tmp_path / "roots.txt"
    path.write_text(leafroots.trace(leafroots.line(0, f"{1 + i % 997}.000", f"f_{i}") for i in range(n)))
    p = correct(parse.read(str(path)), Calibration(10.0, 20.0, "test", "fixed values (test)"))
    looked_up = {"n": 0}
    name = Profile.name

    def counted(self, row):
        looked_up["n"] += 1
        return name(self, row)

    monkeypatch.setattr(Profile, "name", counted)
    entries, (funcs, calls, raw_ns) = balance._sheet(p, None, ())
    assert len(entries) == balance.TOP_ROOTS and funcs == n - balance.TOP_ROOTS == calls
    assert looked_up["n"] <= 2 * balance.TOP_ROOTS, f"{looked_up['n']} names looked up for {n} root functions"
    busiest = sorted(((1 + i % 997) * 1000.0, -i) for i in range(n))[::-1]
    assert [e["function"] for e in entries] == [f"f_{-i}" for _, i in busiest[:balance.TOP_ROOTS]]
    rest = 0.0
    for ns, _ in busiest[balance.TOP_ROOTS:]:
        rest += ns
    assert raw_ns == rest
