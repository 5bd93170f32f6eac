"""trace.dat files written by tests/helpers/datwriter.py (issue 19): trace-cmd reads
them and finds the events written; each reader's Profile holds the call
trees written (calls and summed inclusive time per function); and the two
readers agree on every figure, on files with random field layouts, page
ends, time extends, absolute stamps, padding and lost-events flags, in
every form of file (version 6 or 7, uncompressed, zstd or zlib, either
byte order, 8- or 4-byte longs) (hypothesis picks them)."""
from __future__ import annotations

import json
import random
import re
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from helpers import datwriter, readers

SETTINGS = settings(max_examples=12, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
plans = st.builds(datwriter.PagePlan, early_end=st.sampled_from([0.0, 0.02, 0.2]),
                  lost=st.just(0.0), absolute=st.sampled_from([0.0, 0.05, 0.5]),
                  padding=st.sampled_from([0.0, 0.5, 1.0]), seed=st.integers(0, 1000))
lossy_plans = st.builds(datwriter.PagePlan, early_end=st.sampled_from([0.0, 0.1]),
                        lost=st.sampled_from([0.1, 0.5]), lost_stored=st.sampled_from([0.0, 0.5, 1.0]),
                        absolute=st.sampled_from([0.0, 0.1]), padding=st.sampled_from([0.0, 0.5]),
                        seed=st.integers(0, 1000))
# every form the writer has; trace-cmd 3.1.6 here has no zlib plugin
FORMS = [datwriter.Form(v, comp, big, long) for v, comp in ((6, "none"), (7, "none"), (7, "zstd"), (7, "zlib"))
         for big in (False, True) for long in (8, 4)]
forms = st.sampled_from(FORMS)
trace_cmd_forms = st.sampled_from([f for f in FORMS if f.compression != "zlib"])
LINE = re.compile(r"^\s*(\S+)-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{9}): (\w+):")
DROPPED = re.compile(r"^CPU:(\d+) \[(?:(\d+) )?EVENTS DROPPED\]")


def generated(tmp_path, seed: int, plan, form=datwriter.LE64, **kw):
    t, written = datwriter.random_trace(random.Random(seed), plan=plan, form=form, **kw)
    path = str(tmp_path / f"gen-{seed}.dat")
    datwriter.write(t, path)
    return path, t, written


def trace_cmd_events(path: str) -> tuple[list, list]:
    """(cpu, ts ns, event name) of every event trace-cmd reports (raw, no
    plugins), and its (cpu, count or None) dropped-events lines."""
    out = subprocess.run(["trace-cmd", "report", "-N", "-t", "-R", path], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    events, dropped = [], []
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            events.append((int(m[3]), int(m[4]) * 10**9 + int(m[5]), m[6]))
        elif (d := DROPPED.match(line)):
            dropped.append((int(d[1]), int(d[2]) if d[2] else -1))
    return events, dropped


def written_events(t: datwriter.Trace) -> list:
    names = {t.entry.id: "funcgraph_entry", t.exit.id: "funcgraph_exit", t.switch.id: "sched_switch"}
    return [(cpu, ts, names[int.from_bytes(data[:2], t.form.byteorder)])
            for cpu, evs in t.cpus.items() for ts, data in evs]


@pytest.mark.skipif(not shutil.which("trace-cmd"), reason="trace-cmd not installed (make setup)")
@SETTINGS
@given(seed=st.integers(0, 2**31), plan=st.one_of(plans, lossy_plans), form=trace_cmd_forms)
def test_trace_cmd_reads_what_was_written(tmp_path, seed, plan, form):
    path, t, _ = generated(tmp_path, seed, plan, form)
    events, dropped = trace_cmd_events(path)
    assert sorted(events) == sorted(written_events(t))
    assert sorted(dropped) == sorted((cpu, n) for cpu, ns in t.lost.items() for n in ns)


def report_json(path: str, reader: str, tmp_path) -> dict:
    out = tmp_path / f"{reader}.json"
    proc = readers.report(path, reader, "-q", "--format", "json", "-o", str(out), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("reader", readers.params())
@SETTINGS
@given(seed=st.integers(0, 2**31), plan=plans, form=forms)
def test_profile_holds_the_calls_written(tmp_path, reader, seed, plan, form):
    """Without lost events, every call written is a completed call with its
    inclusive time, whatever the layout, the page cuts and the file's form
    (libtracecmd: no zlib here)."""
    assume(reader == "builtin" or form.compression != "zlib")
    path, _t, written = generated(tmp_path, seed, plan, form)
    got = report_json(path, reader, tmp_path)
    assert got["trace"]["entries"] == written.entries
    assert got["trace"]["exits"] == written.exits
    assert got["trace"]["counters"]["switches"] == written.switches
    assert {f["name"]: f["calls"] for f in got["functions"]} == written.calls
    assert {f["name"]: f["incl_ns"]["sum"] for f in got["functions"]} == written.incl_ns


def comparable(report: dict) -> dict:
    """A report without what names the reader or the file."""
    report = json.loads(json.dumps(report))
    report["trace"].pop("source", None)
    report["trace"].pop("reader", None)
    return report


@pytest.mark.skipif(readers.missing("builtin") is not None,
                    reason=str(readers.missing("builtin")))
@SETTINGS
@given(seed=st.integers(0, 2**31), plan=st.one_of(plans, lossy_plans), form=trace_cmd_forms)
def test_readers_agree_on_generated_files(tmp_path, seed, plan, form):
    path, _t, _w = generated(tmp_path, seed, plan, form)
    assert comparable(report_json(path, "builtin", tmp_path)) == \
        comparable(report_json(path, "libtracecmd", tmp_path))


def test_layouts_vary():
    """The writer's layouts cover what kernels did: both depth sizes, exits
    with and without retval, func not always first."""
    seen = set()
    for seed in range(60):
        entry, exit_ = datwriter.graph_formats(random.Random(seed))
        seen.add(("depth", exit_.offset("depth")[1]))
        seen.add(("retval", any("retval" in d for d, *_ in exit_.fields)))
        seen.add(("func first", entry.fields[0][0].endswith("func")))
    assert seen >= {("depth", 4), ("depth", 8), ("retval", True), ("retval", False),
                    ("func first", True), ("func first", False)}
