"""`ftflame report RUN_DIR` sets the nfsd threads' CPU time, measured outside
the tracer (cpu-main.txt, cpu-baseline.txt: collect/cpusnap.sh), beside the
balance sheet (ftflame/correct/cpu.py): the share of it inside the traced
root calls, corrected, the rest named, and from the baseline run the on-CPU
time per RPC next to the corrected on-CPU time per root call.

The run directory is made by hand: a real trace (the curated fixture
k6.1/s01-v3-write4k: 23 root calls of nfsd3_proc_write) and the CPU files
cpusnap.sh writes when it runs a workload on a fake /proc (FTFLAME_PROC):
two nfsd threads whose schedstat moves by the workload, /proc/stat and the
server's RPC counts. (Figures are made up; the checks are of consistency.)
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from ftflame.correct.cpu import CpuFileError, parse_cpu_file
from helpers import inproc
from helpers.cpurun import cpu_text, run_dir

FTFLAME = [sys.executable, "-m", "ftflame.cli"]
ROOT_CALLS = 23


def report(d, suffix):
    out = d.parent / f"report.{suffix}"
    r = subprocess.run([*FTFLAME, "report", str(d), "-o", str(out), "-q"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r, (json.loads(out.read_text()) if suffix == "json" else out.read_text())


def test_cpu_accounting_adds_up_in_json(tmp_path):
    _, doc = report(run_dir(tmp_path), "json")
    c = doc["cpu"]
    assert c["source"] == "/proc/<tid>/schedstat" and c["threads"] == 2
    assert c["nfsd_on_cpu_ns"] == 400_000_000
    assert c["server_rpc_calls"] == 1030 and c["root_calls"] == ROOT_CALLS
    parts = {p["key"]: p for p in c["parts"]}
    assert list(parts) == ["roots_corrected", "roots_overhead", "roots_irq", "roots_rest", "outside_roots"]
    # the parts are the whole: in ns exactly, in % within rounding
    assert sum(p["ns"] for p in c["parts"]) == pytest.approx(c["nfsd_on_cpu_ns"], abs=1.0)
    assert sum(p["pct"] for p in c["parts"]) == pytest.approx(100.0, abs=0.05)
    # the corrected share is the balance sheet's corrected time of the roots
    sheet = doc["balance"]
    assert len(sheet) == 1 and sheet[0]["calls"] == ROOT_CALLS
    assert parts["roots_corrected"]["ns"] == pytest.approx(sheet[0]["corrected_mean_ns"] * ROOT_CALLS, rel=1e-4)
    assert parts["roots_overhead"]["ns"] == pytest.approx(sheet[0]["overhead_mean_ns"] * ROOT_CALLS, rel=1e-4)
    # the machine's time by kind, from /proc/stat (USER_HZ ticks)
    kinds = {m["kind"]: m for m in c["machine"]}
    assert kinds["softirq"]["ns"] == 300_000_000 and kinds["irq"]["ns"] == 100_000_000  # 30 and 10 ticks
    assert sum(m["pct"] for m in c["machine"]) == pytest.approx(100.0, abs=0.1)
    # per RPC: the baseline's on-CPU time against the corrected time per root call
    r = c["per_rpc"]
    assert r["baseline_on_cpu_ns"] == 250_000_000 and r["baseline_rpc_calls"] == 1027
    assert r["baseline_on_cpu_per_rpc_ns"] == pytest.approx(250e6 / 1027, abs=0.05)
    assert r["corrected_per_root_call_ns"] == pytest.approx(sheet[0]["corrected_mean_ns"], abs=0.05)
    assert r["unexplained_ns"] == pytest.approx(r["baseline_on_cpu_per_rpc_ns"] - r["corrected_per_root_call_ns"],
                                                abs=0.1)
    assert r["unexplained_pct"] == pytest.approx(100 * r["unexplained_ns"] / r["baseline_on_cpu_per_rpc_ns"], abs=0.01)
    assert r["main_on_cpu_per_rpc_ns"] == pytest.approx(400e6 / 1030, abs=0.05)


def test_cpu_accounting_lines_in_text(tmp_path):
    _, doc = report(run_dir(tmp_path), "json")
    _, text = report(tmp_path / "run", "txt")
    c = doc["cpu"]
    part = text[text.index("CPU time of the nfsd threads, measured outside the tracer"):]
    assert "400.000 ms" in part and "1,030 server RPCs" in part
    for p in c["parts"]:
        assert f"{p['pct']:.1f}%" in part and p["label"] in part
    r = c["per_rpc"]
    assert f"on-CPU per RPC (baseline):      {r['baseline_on_cpu_per_rpc_ns'] / 1e3:,.3f} us" in part
    assert f"({r['unexplained_pct']:.1f}% of it)" in part
    assert all(len(line) <= 80 for line in part.splitlines())


def test_cpu_accounting_in_html(tmp_path):
    _, doc = report(run_dir(tmp_path), "json")
    _, page = report(tmp_path / "run", "html")
    assert "balance-cpu" in page  # (tests/browser/test_cpu_browser.py renders it)
    shipped = json.loads(page.split('id="ftflame-data">', 1)[1].split("</script>", 1)[0])
    assert shipped["cpu"] == doc["cpu"]  # the page prints the figures it is given


def test_no_cpu_files_no_cpu_lines(tmp_path):
    d = run_dir(tmp_path, main=False, baseline=False)
    _, doc = report(d, "json")
    _, text = report(d, "txt")
    assert "cpu" not in doc
    assert "CPU time of the nfsd threads" not in text


def test_without_baseline_no_per_rpc_figures(tmp_path):
    _, doc = report(run_dir(tmp_path, baseline=False), "json")
    assert doc["cpu"]["per_rpc"] is None
    _, text = report(tmp_path / "run", "txt")
    assert "per RPC" not in text


def test_a_cut_cpu_file_is_a_warning_not_a_failure(tmp_path):
    d = run_dir(tmp_path, baseline=False)
    text = (d / "cpu-main.txt").read_text()
    (d / "cpu-main.txt").write_text(text[: text.index("=== after")])
    _, doc = report(d, "json")
    _, text = report(d, "txt")
    assert "cpu" not in doc and "CPU time of the nfsd threads" not in text
    assert "cpu-main.txt: unreadable (cut short (no '=== end' line)): the CPU accounting is left out" \
        in " ".join(text.split())  # (a note of the report, wrapped)
    with pytest.raises(CpuFileError):
        parse_cpu_file(d / "cpu-main.txt")


def test_the_cpu_file_is_an_input_never_written_over(tmp_path):
    d = run_dir(tmp_path, baseline=False)
    before = (d / "cpu-main.txt").read_bytes()
    r = subprocess.run([*FTFLAME, "report", str(d), "-o", str(d / "cpu-main.txt"), "-F", "txt"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "cpu-main.txt" in r.stderr
    assert (d / "cpu-main.txt").read_bytes() == before


def test_perf_stat_csv_as_perf_prints_it(tmp_path):
    """`perf stat -e task-clock --per-thread -t TIDS -x,` lines as perf 6.1
    wrote them on this project's build host: a thread that ran (with the
    CPUs-utilized metric) and one that did not (<not counted>)."""
    d = run_dir(tmp_path, baseline=False)
    text = (d / "cpu-main.txt").read_text()
    perf = ("=== perf ok\n# started on Fri Nov 27 08:52:16 2026\n\n"
            "nfsd-101,231.53,msec,task-clock,231525110,100.00,0.161,CPUs utilized\n"
            "nfsd-102,<not counted>,msec,task-clock,0,100.00,,\n")
    (d / "cpu-main.txt").write_text(text.replace("=== perf not used (FTFLAME_NO_PERF)\n", perf))
    c = parse_cpu_file(d / "cpu-main.txt")
    assert c["source"] == "perf task-clock" and c["threads"] == 2
    assert c["nfsd_on_cpu_ns"] == 231_530_000 and c["schedstat_on_cpu_ns"] == 400_000_000
    _, doc = report(d, "json")
    assert doc["cpu"]["nfsd_on_cpu_ns"] == 231_530_000 and doc["cpu"]["source"] == "perf task-clock"


# ---- every figure of a cpu file checked where it is parsed (issue 37) ----

def _cpu_dir(tmp_path, text, trace=None):
    from conftest import fixture

    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(fixture(trace or "k6.1/s15-icount-calib/trace-root.dat"), d / "trace.dat")
    (d / "cpu-main.txt").write_text(text)
    return d


@pytest.mark.parametrize("change,what", [
    (("clk_tck 100", "clk_tck 0"), "clk_tck 0"),
    (("nfsd-101,300.5,", "nfsd-101,nan,"), "'nan'"),
    (("nfsd-101,300.5,", "nfsd-101,inf,"), "'inf'"),
    (("nfsd-101,300.5,", "nfsd-101,1e400,"), "'1e400'"),
    (("nfsd-101,300.5,", "nfsd-101,-495,"), "'-495'"),
    (("101 301000000 60 20", "101 -5 60 20"), "-5"),
    (("101 301000000 60 20", "101 301000000"), "3 schedstat counters"),
])
def test_a_bad_cpu_figure_leaves_the_accounting_out(tmp_path, change, what):
    """Before: ZeroDivisionError and NaN (internal error, exit 1), or on-CPU
    -495 ms with shares of -1.9% and 104.3%."""
    d = _cpu_dir(tmp_path, cpu_text((300, 100)).replace(*change))
    with pytest.raises(CpuFileError, match=re.escape(what)):
        parse_cpu_file(d / "cpu-main.txt")
    rc, err, text = inproc.report(d)
    assert rc == 0, err
    doc = inproc.strict_loads(text)
    assert "cpu" not in doc
    assert any("cpu-main.txt: unreadable" in n and what in n for n in doc["trace"]["notes"])


@pytest.mark.parametrize("change,what", [
    (("cpu  1100 10 700 8150 20 40 70 5 0 0", "cpu  1100 10 700"), "the cpu line has 3 of its 8 fields"),
    (("cpu  1100 10 700", "cpu  900 10 700"), "counters went backwards"),
    (("rpc 152 0 0 0 0", "rpc 7 0 0 0 0"), "RPC count went backwards"),
])
def test_a_cut_or_backward_counter_leaves_that_figure_out(tmp_path, change, what):
    """Before: negative percentages of the machine's time, a negative RPC count."""
    d = _cpu_dir(tmp_path, cpu_text((300, 100)).replace(*change))
    rc, err, text = inproc.report(d)
    assert rc == 0, err
    c = inproc.strict_loads(text)["cpu"]
    assert any(what in w and w.startswith("cpu-main.txt: ") for w in c["warnings"]), c["warnings"]
    assert c["nfsd_on_cpu_ns"] == 400_750_000  # (perf's: still there)
    if "RPC" in what:
        assert c["server_rpc_calls"] is None and c["machine"]
    else:
        assert c["machine"] == [] and c["server_rpc_calls"] == 131


def test_off_cpu_time_is_outside_the_root_calls(tmp_path):
    """A trace with sched_switch (5.10's NFSv4 writes, 1,352 switches): the
    root calls' share of the threads' on-CPU time is their raw time less the
    time they spent switched out (the balance sheet's off-CPU mean); the
    switched-out time is not on-CPU time of the threads at all."""
    d = _cpu_dir(tmp_path, cpu_text((500, 200)), "k5.10/s21-v4-write-sched/trace.dat")
    rc, err, text = inproc.report(d)
    assert rc == 0, err
    doc = inproc.strict_loads(text)
    b, = doc["balance"]  # nfsd4_write, 49 clean root calls
    raw, off = b["calls"] * b["measured_raw_mean_ns"], b["calls"] * b["offcpu_mean_ns"]
    assert off > 0.1 * raw  # (what this test needs: much time switched out)
    parts = {p["key"]: p["ns"] for p in doc["cpu"]["parts"]}
    inside = sum(v for k, v in parts.items() if k != "outside_roots")
    assert inside == pytest.approx(raw - off, abs=b["calls"] * 0.1)
    assert parts["outside_roots"] == pytest.approx(doc["cpu"]["nfsd_on_cpu_ns"] - (raw - off), abs=b["calls"] * 0.1)
    assert not any("no sched_switch" in w for w in doc["cpu"]["warnings"])
