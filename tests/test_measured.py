"""`ftflame report RUN_DIR` checks the trace against the totals collect.sh
measured outside the tracer (meta.json "measured", ftflame/correct/measured.py):
the server's operation counts against the trace's calls, the client's mean
execute time next to the server's corrected time, iozone's throughput as
time per operation (issue 14).

The trace is the bundled sample (tests/data/sample/trace.dat: 118 root calls
of nfsd3_proc_write, 2 of them across lost-event gaps, 810 lost events);
each meta.json is written by the test in the shape collect.sh writes it
(tests/test_collect_measured.py checks that shape on the collector side).
"""
from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ftflame.correct.measured import count_check, iozone_rows, load_meta, server_counter
from helpers import inproc

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "tests" / "data" / "sample" / "trace.dat"
FTFLAME = [sys.executable, "-m", "ftflame.cli"]
TRACE_CALLS = 118  # root calls of nfsd3_proc_write in the sample
IOZONE = {"units": "kB/s", "command_line": "iozone -i0 -i1 -r4k -s4m -f /mnt/nfs/x",
          "rows": [{"file_kb": 4096, "record_kb": 4, "throughput": {"write": 452854, "read": 3425146}}]}


def meta_doc(write_calls, lost_total=0, mounts=None, iozone=None, latency=None):
    delta = {"rpc": {"calls": write_calls + 3}, "proc3": {"getattr": 3, "write": write_calls}}
    return {"schema": "ftflame-meta/1", "graph_functions": ["nfsd3_proc_write", "nfsd4_write"],
            "trace": "trace.dat", "lost_events_total": lost_total, "baseline": None,
            "measured": {"nfsd_stats": "/proc/net/rpc/nfsd", "mountstats": "/proc/self/mountstats",
                         "main": {"nfsd": {"before": {}, "after": {}, "delta": delta},
                                  "client_mounts": mounts, "iozone": iozone, "iozone_latency": latency},
                         "baseline": None}}


def run_dir(tmp_path, meta) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(SAMPLE, d / "trace.dat")
    if meta is not None:
        (d / "meta.json").write_text(meta if isinstance(meta, str) else json.dumps(meta))
    return d


def report(d, suffix):
    out = d.parent / f"report.{suffix}"
    r = subprocess.run([*FTFLAME, "report", str(d), "-o", str(out), "-q"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text()) if suffix == "json" else out.read_text()


def test_server_count_equal_to_trace_calls(tmp_path):
    doc = report(run_dir(tmp_path, meta_doc(TRACE_CALLS)), "json")
    m = doc["measured"]
    assert m["server_rpc_calls"] == TRACE_CALLS + 3
    c, = m["server_counts"]  # (nfsd4_write: no calls counted, none traced: not in the trace)
    assert (c["function"], c["counter"], c["server_calls"], c["trace_calls"], c["status"]) == \
        ("nfsd3_proc_write", "proc3 write", TRACE_CALLS, TRACE_CALLS, "equal")
    assert m["warnings"] == []


def test_shortfall_within_lost_events_is_explained(tmp_path):
    d = run_dir(tmp_path, meta_doc(TRACE_CALLS + 5, lost_total=810))
    m = report(d, "json")["measured"]
    c = m["server_counts"][0]
    assert c["status"] == "explained" and c["difference"] == -5 and c["lost_events"] == 810
    assert m["warnings"] == []
    assert "5 calls fewer: within the 810 lost events" in report(d, "txt")


def test_other_differences_are_warnings(tmp_path):
    text = report(run_dir(tmp_path, meta_doc(TRACE_CALLS + 1000)), "txt")
    assert "nfsd3_proc_write: server proc3 write 1,118, trace 118 calls: warning" in text
    assert "WARNING: nfsd3_proc_write: the trace has 1,000 calls fewer than the server\n" in text
    assert count_check("f", "c", 100, 118, 810)["status"] == "warning"  # more in the trace
    assert count_check("f", "c", 119, 118, None)["status"] == "warning"  # lost events unknown
    assert count_check("f", "c", 119, 118, 3)["note"] == "1 call fewer: within the 3 lost events"


def test_client_execute_time_next_to_server_corrected_time(tmp_path):
    mounts = {"/mnt/nfs": {"device": "127.0.0.1:/srv/nfs", "fstype": "nfs", "ops": {
        "WRITE": {"delta": {"ops": 118, "rtt_ms": 50, "execute_ms": 59}},
        "GETATTR": {"delta": {"ops": 3, "rtt_ms": 0, "execute_ms": 1}}}},
        "/mnt/v4": {"device": "127.0.0.1:/", "fstype": "nfs4", "ops": {
            "WRITE": {"delta": {"ops": 7, "rtt_ms": 1, "execute_ms": 1}}}}}
    doc = report(run_dir(tmp_path, meta_doc(TRACE_CALLS, mounts=mounts)), "json")
    c, = doc["measured"]["client"]  # the v3 function, the v3 mount's WRITE only
    srv = doc["balance"][0]["corrected_mean_ns"]
    assert (c["mount"], c["op"], c["client_ops"]) == ("/mnt/nfs", "WRITE", 118)
    assert c["client_execute_mean_ns"] == pytest.approx(59e6 / 118, abs=0.1)
    assert c["client_rtt_mean_ns"] == pytest.approx(50e6 / 118, abs=0.1)
    assert c["server_corrected_mean_ns"] == srv
    assert c["server_share_pct"] == pytest.approx(100 * srv / (59e6 / 118), abs=0.01)
    text = report(tmp_path / "run", "txt")
    assert "client WRITE on /mnt/nfs: 118 ops\n    mean execute 500.000 us, RTT 423.729 us\n" in text
    assert (f"server nfsd3_proc_write corrected {srv / 1000:.3f} us: {c['server_share_pct']:.1f}% "
            "of the execute time") in text


def test_iozone_throughput_as_time_per_operation(tmp_path):
    latency = {"write": {"file": "wol.dat", "count": 1024, "mean_us": 3.293, "max_us": 30}}
    text = report(run_dir(tmp_path, meta_doc(TRACE_CALLS, iozone=IOZONE, latency=latency)), "txt")
    rows = iozone_rows(IOZONE)
    assert rows[0]["operations"] == 1024
    assert rows[0]["time_per_op_ns"] == pytest.approx(1e9 * 4 / 452854, abs=0.1)  # 8.833 us per 4 kB
    assert "write             452,854 kB/s  4 kB records: 8.833 us/op" in text
    assert "write latency (-Q): 1,024 ops, mean 3.3 us, max 30 us" in text
    ops = iozone_rows({"units": "ops/s", "rows": [{"file_kb": 1024, "record_kb": 16, "throughput": {"read": 4000}}]})
    assert ops[0]["time_per_op_ns"] == 250000.0 and ops[0]["operations"] == 64


def test_server_counters_of_the_graph_functions():
    delta = {"proc3": {"write": 4, "null": 1}, "proc4": {"null": 1, "compound": 9},
             "proc4ops": {"WRITE": 6, "SEQUENCE": 9}}
    assert server_counter("nfsd4_write", delta) == ("proc4ops WRITE", 6)
    assert server_counter("nfsd_dispatch", delta) == ("NFS calls (proc2+proc3+proc4)", 15)
    assert server_counter("nfsd4_proc_compound", delta) == ("proc4 compound", 9)
    assert server_counter("nfsd_open", delta) is None


def test_no_meta_json_no_section(tmp_path):
    d = run_dir(tmp_path, None)
    assert "measured" not in report(d, "json")
    assert "Measured outside the tracer" not in report(d, "txt")


def test_unreadable_meta_json_is_a_warning_not_a_failure(tmp_path):
    doc = report(run_dir(tmp_path, '{"measured": '), "json")
    w, = doc["measured"]["warnings"]
    assert "meta.json: unreadable" in w and "left out" in w


def test_balance_sheet_lists_the_client_execute_time_as_an_independent_total(tmp_path):
    """Issue 14: the balance sheet lists each independent total it had (here
    the client's mean execute time of the operation the root function
    serves) with its difference, in the JSON, the text and the HTML data."""
    mounts = {"/mnt/nfs": {"device": "127.0.0.1:/srv/nfs", "fstype": "nfs", "ops": {
        "WRITE": {"delta": {"ops": 118, "rtt_ms": 50, "execute_ms": 59}}}}}
    d = run_dir(tmp_path, meta_doc(TRACE_CALLS, mounts=mounts))
    doc = report(d, "json")
    b = doc["balance"][0]
    t, = b["independent"]
    assert t["source"] == "client execute time (WRITE on /mnt/nfs, 118 ops)"
    assert t["mean_ns"] == pytest.approx(59e6 / 118, abs=0.1)
    assert t["difference_ns"] == pytest.approx(b["corrected_mean_ns"] - t["mean_ns"], abs=0.1)
    assert t["difference_pct"] == pytest.approx(100 * t["difference_ns"] / t["mean_ns"], abs=0.01)
    text = report(d, "txt")
    sheet = text[text.index("Balance sheet"):]
    assert "vs client execute time (WRITE on /mnt/nfs, 118 ops): 500.000" in " ".join(sheet.split())
    assert f"({t['difference_pct']:+.1f}%)" in sheet
    html = report(d, "html")
    assert '"independent": [{"source": "client execute time (WRITE on /mnt/nfs, 118 ops)"' in html \
        or '"independent":[{"source":"client execute time (WRITE on /mnt/nfs, 118 ops)"' in html


def test_escape_sequences_in_meta_json_are_shown_not_sent(tmp_path):
    """Issue 37 item 9: meta.json's mount point, iozone command line and
    test names, and the run folder's own path, reached the terminal raw
    (a window title set, the screen cleared)."""
    evil = "\x1b]0;PWN\x07\x1b[2J"
    mounts = {f"/mnt/{evil}nfs": {"device": f"h:/{evil}", "fstype": "nfs", "ops": {
        "WRITE": {"delta": {"ops": 118, "rtt_ms": 50, "execute_ms": 59}}}}}
    iozone = {"units": "kB/s", "command_line": f"iozone -i0 {evil}",
              "rows": [{"file_kb": 4096, "record_kb": 4, "throughput": {f"wr{evil}ite": 452854}}]}
    latency = {f"w{evil}": {"file": "wol.dat", "count": 1, "mean_us": 1.0, "max_us": 1}}
    d = run_dir(tmp_path, meta_doc(TRACE_CALLS, mounts=mounts, iozone=iozone, latency=latency))
    d = d.rename(tmp_path / f"run{evil}")
    r = subprocess.run([*FTFLAME, "report", str(d)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for stream in (r.stdout, r.stderr):
        assert "\x1b" not in stream and "\x07" not in stream, stream
    shown = "\\x1b]0;PWN\\x07\\x1b[2J"
    assert f"client WRITE on /mnt/{shown}nfs: 118 ops" in r.stdout
    assert f"iozone: iozone -i0 {shown}" in r.stdout
    assert f"wr{shown}ite" in r.stdout and f"w{shown} latency" in r.stdout
    assert f"run{shown}" in r.stdout  # the header's input path


# ---- every figure of meta.json checked where it is loaded (issue 37) ----

def _set(doc, path, value):
    d = doc
    for k in path[:-1]:
        d = d[k]
    d[path[-1]] = value
    return doc


MOUNTS = {"/mnt/nfs": {"device": "srv:/x", "fstype": "nfs",
                       "ops": {"WRITE": {"delta": {"ops": 118, "execute_ms": 9.5, "rtt_ms": 6}}}}}
LATENCY = {"write": {"count": 118, "mean_us": 400.5, "max_us": 900}}


@pytest.mark.parametrize("path,value,field", [
    (("measured", "main", "nfsd"), "x", "measured.main.nfsd: a string, not an object"),
    (("measured", "main", "nfsd", "delta", "proc3"), [1], "measured.main.nfsd.delta.proc3: a list"),
    (("graph_functions",), 5, "graph_functions: a number, not a list"),
    (("measured", "main", "nfsd", "delta", "proc3", "write"), -118, "proc3.write: -118 is below 0"),
    (("measured", "main", "nfsd", "delta", "proc3", "write"), True, "proc3.write: true is not a number"),
    (("measured", "main", "client_mounts", "/mnt/nfs", "ops", "WRITE", "delta", "execute_ms"), -1e9,
     "WRITE.delta.execute_ms: -1000000000.0 is below 0"),
    (("measured", "main", "client_mounts", "/mnt/nfs", "ops", "WRITE", "delta", "ops"), 1.5,
     "WRITE.delta.ops: 1.5 is not a whole number"),
    (("measured", "main", "iozone", "rows", 0, "throughput", "write"), "fast", "rows[0].throughput.write: a string"),
    (("measured", "main", "iozone_latency", "write", "count"), 10**400, "latency.write.count: "),
    (("lost_events_total",), float("nan"), "lost_events_total: NaN is not a number JSON has"),
    (("measured", "main", "iozone_latency", "write", "mean_us"), float("inf"),
     "iozone_latency.write.mean_us: Infinity is not a number JSON has"),
])
def test_a_bad_meta_figure_is_left_out_with_a_warning(tmp_path, path, value, field):
    """Before: an internal error (exit 1), or a negative client execute mean,
    or a bare NaN in the JSON report."""
    doc = _set(meta_doc(TRACE_CALLS, mounts=copy.deepcopy(MOUNTS), iozone=copy.deepcopy(IOZONE),
                        latency=copy.deepcopy(LATENCY)), path, value)
    d = run_dir(tmp_path, json.dumps(doc))
    rc, err, text = inproc.report(d)
    assert rc == 0, err
    m = inproc.strict_loads(text)["measured"]
    assert any(f"meta.json: {'.'.join(map(str, path[:2]))}" in w and field in w and w.endswith(": left out")
               for w in m["warnings"]), m["warnings"]
    for c in m["client"]:
        assert c["client_execute_mean_ns"] >= 0 and c["client_rtt_mean_ns"] >= 0
    if path[:3] == ("measured", "main", "nfsd"):  # a count left out is not a count of 0
        assert m["server_counts"] == []


def test_a_meta_nested_too_deep_is_a_warning(tmp_path):
    """Before: RecursionError, an internal error."""
    d = run_dir(tmp_path, "[" * 100_000 + "]" * 100_000)
    rc, err, text = inproc.report(d)
    assert rc == 0, err
    w, = inproc.strict_loads(text)["measured"]["warnings"]
    assert "meta.json: unreadable (nested more than 32 levels deep)" in w


def test_load_meta_keeps_only_what_it_checked(tmp_path):
    doc = meta_doc(TRACE_CALLS, mounts=copy.deepcopy(MOUNTS))
    doc["measured"]["main"]["nfsd"]["before"] = {"rpc": {"calls": float("nan")}}  # (not read)
    d = run_dir(tmp_path, json.dumps(doc))
    meta, warnings = load_meta(str(d / "trace.dat"))
    assert "before" not in meta["measured"]["main"]["nfsd"]
    assert warnings == (f"{d / 'meta.json'}: measured.main.nfsd.before.rpc.calls: NaN is not a number JSON "
                        "has: left out",)
    assert meta["measured"]["main"]["client_mounts"] == MOUNTS
