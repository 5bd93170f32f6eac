"""Operations (root calls of a dispatcher labelled by the NFS procedure below
them, parse/core/root_calls.c) and the slowest root calls kept with their trees
(ftflame/correct/operations.py), in every output."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ftflame.correct import operations
from ftflame.parse import build_events
from ftflame.report import RENDERERS
from helpers import leafroots
from helpers.events import HERE, load, parse_events


def _ops(p):
    return {r.operation: r for r in operations.operation_table(p)}


def test_root_calls_are_named_by_the_procedure_below_the_dispatcher():
    p = load("operations")
    rows = _ops(p)
    assert {k: r.calls for k, r in rows.items()} == {
        "v3 WRITE": 2, "v3 GETATTR": 1, "COMPOUND(SEQUENCE,PUTFH,WRITE)": 1,
        # the nfsd3_proc_null in an interrupt names nothing
        operations.NO_OPERATION: 1}
    assert all(r.root == "svc_process" for r in rows.values())
    assert rows["COMPOUND(SEQUENCE,PUTFH,WRITE)"].how == \
        "nfsd4_proc_compound > nfsd4_sequence,nfsd4_putfh,nfsd4_write"
    assert rows["v3 WRITE"].how == "nfsd3_proc_write"
    w = rows["v3 WRITE"].raw
    assert (w["p50"], w["max"], w["mean"]) == (4000, 10000, 7000)
    assert sum(r.share for r in rows.values()) == pytest.approx(1.0)
    # the root call that is a procedure itself is no operation and in no row
    assert p.scol("op")[p.col("func")[p.scol("node")] == p.funcs.index("nfsd3_proc_read")].tolist() == [-1]


def test_a_trace_rooted_at_one_procedure_has_no_operation_table():
    events = [e for e in parse_events(open(os.path.join(HERE, "operations.events")).read()) if e[2] == 200]
    p = build_events(events, source="read-only")
    assert p.operations == () and operations.operation_table(p) is None
    assert "Operations" not in RENDERERS["txt"].render(p)
    assert json.loads(RENDERERS["json"].render(p))["operations"] == []


def test_the_n_slowest_calls_are_kept_per_operation():
    events = parse_events(open(os.path.join(HERE, "operations.events")).read())
    one = build_events(events, slowest=1)
    kept = {(s.root, s.operation): s.dur for s in operations.slowest_calls(one)}
    assert kept[("svc_process", "v3 WRITE")] == 10000  # the slower of the two
    assert len(kept) == len(operations.slowest_calls(one)) == 5
    assert operations.slowest_calls(build_events(events, slowest=0)) == ()
    assert len(operations.slowest_calls(build_events(events))) == 6


def _check_sums(tree):
    """A JSON slowest[] tree (columns, entry order): every call's incl is its
    excl plus its children's incl, exactly; callers come before their calls.
    Returns the number of calls."""
    n, parent, incl = tree["calls"], tree["parent"], tree["incl_ns"]
    assert all(len(v) == n for v in tree.values() if isinstance(v, list) and v is not tree["funcs"])
    assert parent[0] == -1 and all(0 <= parent[i] < i for i in range(1, n))
    kids = [0] * n
    for i in range(1, n):
        kids[parent[i]] += incl[i]
    for i in range(n):
        assert incl[i] == tree["excl_ns"][i] + kids[i], tree["funcs"][tree["func"][i]]
    return n


def test_slowest_json_trees_sum_exactly_and_the_slowest_is_the_latency_maximum():
    p = load("operations")
    doc = json.loads(RENDERERS["json"].render(p))
    slow = doc["slowest"]
    for s in slow:
        assert s["tree"]["incl_ns"][0] == s["dur_ns"] and s["tree"]["at_ns"][0] == 0
        _check_sums(s["tree"])
    top = max(slow, key=lambda s: s["dur_ns"])
    assert top["dur_ns"] == max(r["dur_ns"] for r in doc["root_calls"]) == 10000
    assert top["dominant_path"] == ["svc_process", "nfsd_dispatch", "nfsd3_proc_write", "nfsd_write"]
    assert [r["operation"] for r in doc["root_calls"]][:4] == \
        ["v3 WRITE", "v3 GETATTR", "v3 WRITE", "COMPOUND(SEQUENCE,PUTFH,WRITE)"]
    ops = {o["operation"]: o for o in doc["operations"]}
    assert ops["v3 WRITE"]["dur_ns"]["max"] == 10000 and ops["v3 WRITE"]["calls"] == 2


def test_text_sections_and_top_choose_what_is_printed():
    p = load("operations")
    from ftflame.report.options import RenderOptions

    opts = RenderOptions(sections=("operations", "slowest"), top=1)
    text = RENDERERS["txt"].render(p, opts)
    assert text.startswith("Latency per root call")
    assert "svc_process, per operation:" in text
    assert "Functions by" not in text and "ftflame report:" not in text
    assert "the 1 slowest of 6 kept" in text
    assert "path: svc_process > nfsd_dispatch > nfsd3_proc_write > nfsd_write" in text
    assert all(len(line) <= 80 for line in RENDERERS["txt"].render(p).splitlines())


def test_cli_refuses_an_unknown_section_and_a_negative_count(tmp_path):
    trace = os.path.join(os.path.dirname(HERE), "fixtures", "k6.1", "s04-null", "trace.dat")
    for args in (["--sections", "operations,bogus"], ["--slowest", "-1"], ["--top", "x"],
                 ["--slowest", "100001"]):
        r = subprocess.run([sys.executable, "-m", "ftflame.cli", "report", trace, *args],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "Traceback" not in r.stderr, args
        assert "error: argument" in r.stderr.strip().splitlines()[-1]


def test_html_carries_the_slowest_trees_and_the_operation_of_each_point():
    from ftflame.report.html import report_data

    p = load("operations")
    data = report_data(p)
    S = data["samples"]
    assert "svc_process: v3 WRITE" in S["roots"]
    slow = {c["sample"]: c for c in data["slowest"]}
    k = int(np.argmax(S["dur"]))
    tree = slow[S["sample"][k]]["tree"]  # the plot's slowest point opens this tree
    assert tree["incl"][0] == S["dur"][k] == 10000
    assert [data["funcs"][f] for f in tree["func"]] == ["svc_process", "nfsd_dispatch", "nfsd3_proc_write", "nfsd_write"]
    assert tree["t"][0] == 0 and tree["parent"][0] == -1


# /proc/net/rpc/nfsd: "proc3 N null getattr ..." (procedure order of
# fs/nfsd/nfs3proc.c), "proc4ops N c0 c1 ..." (by NFSv4 operation number)
V3_PROCS = ("null getattr setattr lookup access readlink read write create mkdir symlink mknod remove "
            "rmdir rename link readdir readdirplus fsstat fsinfo pathconf commit").split()
V4_OPS = {3: "ACCESS", 4: "CLOSE", 5: "COMMIT", 6: "CREATE", 8: "DELEGRETURN", 9: "GETATTR", 10: "GETFH",
          11: "LINK", 12: "LOCK", 13: "LOCKT", 14: "LOCKU", 15: "LOOKUP", 16: "LOOKUPP", 17: "NVERIFY",
          18: "OPEN", 20: "OPEN_CONFIRM", 21: "OPEN_DOWNGRADE", 22: "PUTFH", 23: "PUTPUBFH",
          24: "PUTROOTFH", 25: "READ", 26: "READDIR", 27: "READLINK", 28: "REMOVE", 29: "RENAME",
          30: "RENEW", 31: "RESTOREFH", 32: "SAVEFH", 33: "SECINFO", 34: "SETATTR", 37: "VERIFY",
          38: "WRITE", 42: "EXCHANGE_ID", 43: "CREATE_SESSION", 44: "DESTROY_SESSION",
          45: "FREE_STATEID", 52: "SECINFO_NO_NAME", 53: "SEQUENCE", 55: "TEST_STATEID",
          57: "DESTROY_CLIENTID", 58: "RECLAIM_COMPLETE"}


def server_counts(path: str) -> dict:
    """{"v3 GETATTR": n, ..., "v4 GETATTR": n} from a /proc/net/rpc/nfsd copy."""
    out = {}
    for line in open(path):
        w = line.split()
        if w[0] == "proc3":
            out.update({"v3 " + name.upper(): int(v) for name, v in zip(V3_PROCS, w[2:])})
        elif w[0] == "proc4ops":
            out.update({"v4 " + V4_OPS[i]: int(v) for i, v in enumerate(w[2:]) if i in V4_OPS})
    return out


def test_each_operation_count_equals_the_servers_statistics():
    """k6.1/s17-mixed-ops: one nfsd thread served NFSv3 and NFSv4.2 writes,
    reads, getattrs, lookups, creates and commits under svc_process, with
    /proc/net/rpc/nfsd read at the start and at the end of the traced
    window. Every operation the server counted is a labelled root call, up to
    the root calls that span a lost-event gap (counted)."""
    from conftest import fixture, profile_of

    trace = fixture("k6.1/s17-mixed-ops/trace.dat")
    here = os.path.dirname(trace)
    before, after = (server_counts(os.path.join(here, f"nfsd-{w}.txt")) for w in ("before", "after"))
    server = {k: after[k] - before[k] for k in after if after[k] - before[k]}
    p = profile_of(trace)
    traced = {}
    for r in operations.operation_table(p):
        if r.operation.startswith("COMPOUND("):
            for op in r.operation[len("COMPOUND("):-1].split(","):
                traced["v4 " + op] = traced.get("v4 " + op, 0) + r.calls
        elif r.operation.startswith("v3 "):
            traced[r.operation] = r.calls
    lost = sum(r.gap_calls for r in operations.operation_table(p) if r.operation == operations.NO_OPERATION)
    assert set(server) == set(traced)
    for op, n in server.items():
        assert abs(traced[op] - n) <= lost, (op, traced[op], n)
    for op in ("v3 WRITE", "v3 READ", "v3 GETATTR", "v3 LOOKUP", "v3 CREATE", "v3 COMMIT",
               "v4 WRITE", "v4 READ", "v4 GETATTR", "v4 LOOKUP", "v4 CREATE", "v4 COMMIT", "v4 OPEN"):
        assert traced[op] > 0, op  # the workload's mix is there
    assert len({int(x) for x in p.scol("pid")}) == 1  # one nfsd thread


def test_text_slowest_section_fits_80_columns_with_long_names():
    long = "f" * 300
    events = [("entry", 0, 100, 0, "svc_process", 0, 1, 0, 0, 0, 0, 0),
              ("entry", 0, 100, 0, "nfsd4_proc_compound", 1, 2, 0, 0, 0, 0, 0)]
    t = 10
    for op in ["nfsd4_secinfo_no_name", "nfsd4_bind_conn_to_session"] * 9:  # 18 operations: cut at 16
        events += [("entry", 0, 100, 0, op, 2, t, 0, 0, 0, 0, 0),
                   ("exit", 0, 100, 0, op, 2, t + 1, 1000 + t, 1001 + t, 0, 0, 0)]
        t += 2
    events += [("entry", 0, 100, 0, long, 2, t, 0, 0, 0, 0, 0),
                ("exit", 0, 100, 0, long, 2, t + 1, 2000, 9000, 0, 0, 0),
                ("exit", 0, 100, 0, "nfsd4_proc_compound", 1, t + 2, 900, 9500, 0, 0, 0),
                ("exit", 0, 100, 0, "svc_process", 0, t + 3, 800, 10000, 0, 0, 0)]
    p = build_events(events, source="long")
    assert p.operations[0].endswith(",SECINFO_NO_NAME,BIND_CONN_TO_SESSION,...)")
    text = RENDERERS["txt"].render(p)
    assert [line for line in text.splitlines() if len(line) > 80] == []
    assert "path: svc_process > nfsd4_proc_compound >" in text and "    " + "f" * 67 + "..." in text


def test_offcpu_goes_to_the_path_that_was_switched_out():
    """off-cpu.events: inner (under outer) is switched out for 500 ns; the
    time is charged to both open frames, and the hot list gives it to the
    deepest one only (the path's off-CPU time minus its children's)."""
    doc = json.loads(RENDERERS["json"].render(load("off-cpu")))
    assert doc["hot"]["offcpu"] == [{"path": ["outer", "inner"], "calls": 1, "offcpu_ns": 500.0, "share": 1.0}]
    assert doc["hot"]["functions"][0]["name"] == "inner"
    assert json.loads(RENDERERS["json"].render(load("operations")))["hot"]["offcpu"] is None


def test_operation_nodes_are_the_paths_of_the_functions_that_named_it():
    """k6.1/s17-mixed-ops, per operation (operations.operation_nodes): every
    path of the procedure that named a v3/NFSACL operation is in exactly that
    operation (as a top, its subtree with it); a COMPOUND holds its op
    functions' paths right under nfsd4_proc_compound; ancestors are included
    up to the root; no path of another procedure is in it; the totals are
    the tops' own figures."""
    from conftest import fixture, profile_of

    p = profile_of(fixture("k6.1/s17-mixed-ops/trace.dat"))
    nodes = operations.operation_nodes(p)
    parent, func = p.col("parent"), p.col("func")
    name = [p.funcs[int(f)] for f in func]
    procs = {r for r in range(p.nrows) if name[r].startswith("nfsd3_proc_")}
    assert procs and set(nodes) == set(range(len(p.operations)))
    owner = {}
    for o, n in nodes.items():
        rows = set(n.rows.tolist())
        names, compound = operations.naming_functions(p.op_how[o])
        assert n.tops.size and {name[r] for r in n.tops.tolist()} == set(names), p.operations[o]
        for r in n.tops.tolist():
            if compound:
                assert name[int(parent[r])] == "nfsd4_proc_compound"
            a = int(parent[r])
            while a >= 0:  # ancestors up to the root
                assert a in rows
                a = int(parent[a])
        for r in rows:  # each row: an ancestor of a top, a top, or below one
            chain, a = [], r
            while a >= 0:
                chain.append(a)
                a = int(parent[a])
            below = any(t in chain for t in n.tops.tolist())
            assert below or any(r in _chain(parent, t) for t in n.tops.tolist()), (p.operations[o], name[r])
            if r in procs:
                assert name[r] in names, (p.operations[o], name[r])  # no other procedure's path
        for r in procs & rows:
            owner.setdefault(r, []).append(p.operations[o])
        assert n.incl == int(p.col("incl")[n.tops].sum())
        assert n.shared == compound
    assert set(owner) == procs  # every procedure path is in an operation ...
    for r, ops in owner.items():  # ... exactly the one it names
        assert ops == ["v3 " + name[r][len("nfsd3_proc_"):].upper()] or name[r] == "nfsd3_proc_getacl", ops
    getacl = [r for r in procs if name[r] == "nfsd3_proc_getacl"]
    assert [owner[r] for r in getacl] == [["NFSACL3 GETACL"]] * len(getacl)


def _chain(parent, row: int) -> set:
    out = set()
    while row >= 0:
        out.add(row)
        row = int(parent[row])
    return out


def test_operations_json_carries_each_operations_paths():
    """JSON operations[].flame: the naming functions' paths from the root,
    their summed inclusive time; null for (no procedure)."""
    from conftest import fixture, profile_of
    from ftflame.report.callsjson import operations_json

    p = profile_of(fixture("k6.1/s17-mixed-ops/trace.dat"))
    for r in operations_json(p):
        f = r["flame"]
        if r["operation"] == operations.NO_OPERATION:
            assert f is None
            continue
        assert f["paths"] and f["incl_ns"] == sum(x["incl_ns"] for x in f["paths"])
        last = {x["path"][-1] for x in f["paths"]}
        assert last == set(operations.naming_functions(r["recognised_by"])[0])
        assert all(x["path"][0] == r["root"] for x in f["paths"])


def _kept_tree_events():
    """One root call whose calls need every escape of the core's 20-byte
    records (parse/core/root_calls.h, ftf_rec): a root that began 3 s before
    the tree's base (its first completed call), a call of 5 s (over 32
    bits), one that ended on CPU 1, an interrupt subtree (irq time and count
    on its callers), off-CPU time, and a call whose exit never came."""
    r = 10_000
    b = r + 3_000_000_000
    def entry(cpu, func, depth, ts, flags=0):
        return ("entry", cpu, 100, flags, func, depth, ts, 0, 0, 0, 0, 0)

    def exit_(cpu, func, depth, ts, calltime, rettime, flags=0):
        return ("exit", cpu, 100, flags, func, depth, ts, calltime, rettime, 0, 0, 0)

    return [entry(0, "outer", 0, 1), entry(0, "first", 1, 2), exit_(0, "first", 1, 3, b, b + 100),
            entry(0, "long", 1, 4), entry(0, "lost", 2, 5), entry(0, "inner", 3, 6),
            entry(0, "handler", 4, 7, 0x08), exit_(0, "handler", 4, 8, b + 2_000, b + 2_300, 0x08),
            ("switch", 0, 100, 0, "", 0, 9, 0, 0, 0, 0, 0), ("switch", 0, 0, 0, "", 0, 2_009, 0, 0, 0, 100, 0),
            exit_(0, "inner", 3, 2_010, b + 1_500, b + 3_000),
            entry(1, "moved", 3, 2_011), exit_(1, "moved", 3, 2_012, b + 4_000, b + 4_500),
            exit_(1, "long", 1, 2_013, b + 1_000, b + 5_000_001_000),  # "lost" never exited
            exit_(1, "outer", 0, 2_014, r, r + 9_000_000_000)]


def test_kept_trees_keep_every_figure_through_the_compact_records():
    p = build_events(_kept_tree_events(), source="escapes")
    (s,) = operations.slowest_calls(p)
    t = s.tree
    assert t.recs.itemsize == 20 and t.extras.itemsize == 16
    cols = operations.call_columns(t)
    C = {n: i for i, n in enumerate(operations.CALL_COLUMNS)}
    got = {p.funcs[int(c[C["func"]])]: {n: int(c[C[n]]) for n in ("calltime", "dur", "cpu", "irq", "offcpu",
                                                                   "irq_roots", "desc", "flags")}
           for c in cols}
    b = 10_000 + 3_000_000_000
    assert got["outer"] == {"calltime": 10_000, "dur": 9_000_000_000, "cpu": 1, "irq": 300, "offcpu": 2_000,
                            "irq_roots": 1, "desc": 4, "flags": 5}
    assert got["long"] == {"calltime": b + 1_000, "dur": 5_000_000_000, "cpu": 1, "irq": 300, "offcpu": 2_000,
                           "irq_roots": 1, "desc": 2, "flags": 5}
    # "lost" never completed: left out of the tree, its children go to its
    # caller; the calls open when it was found out span a gap (CALL_GAP)
    assert got["lost"]["flags"] == 0
    assert got["inner"] == {"calltime": b + 1_500, "dur": 1_500, "cpu": 0, "irq": 300, "offcpu": 2_000,
                            "irq_roots": 1, "desc": 0, "flags": 1}
    assert got["handler"] == {"calltime": b + 2_000, "dur": 300, "cpu": 0, "irq": 0, "offcpu": 0, "irq_roots": 0,
                              "desc": 0, "flags": 3}
    assert got["moved"]["cpu"] == 1 and got["first"]["calltime"] == b
    doc = json.loads(RENDERERS["json"].render(p))
    tree = doc["slowest"][0]["tree"]
    assert tree["incl_ns"][0] == 9_000_000_000 and _check_sums(tree) == 6
    names = [tree["funcs"][f] for f in tree["func"]]
    assert names == ["outer", "first", "long", "inner", "handler", "moved"]
    assert [names[i] for i in range(6) if tree["parent"][i] == 2] == ["inner", "moved"]  # lost's, to long
    assert tree["at_ns"][names.index("long")] == 3_000_001_000 and tree["cpu"] == [1, 0, 1, 0, 0, 1]
    assert tree["irq"] == [0, 0, 0, 0, 1, 0] and tree["gap"] == [1, 0, 1, 0, 0, 0]


def test_a_tree_past_the_cap_is_not_kept_but_counted_and_shown():
    """A root call of TREE_MAX_CALLS + 1 calls (the root and its leaves):
    among the slowest with its figures, without its tree; counted
    (slowest_without_tree) and said in every output."""
    from ftflame.model.profile import TREE_MAX_CALLS

    n = TREE_MAX_CALLS
    events = [("entry", 0, 100, 0, "root", 0, 1, 0, 0, 0, 0, 0)]
    for i in range(n):
        events += [("entry", 0, 100, 0, "leaf", 1, 2 + 2 * i, 0, 0, 0, 0, 0),
                   ("exit", 0, 100, 0, "leaf", 1, 3 + 2 * i, 10 + 10 * i, 15 + 10 * i, 0, 0, 0)]
    events.append(("exit", 0, 100, 0, "root", 0, 3 + 2 * n, 5, 20 + 10 * n, 0, 0, 0))
    events += [("entry", 0, 100, 0, "root", 0, 4 + 2 * n, 0, 0, 0, 0, 0),
               ("exit", 0, 100, 0, "root", 0, 5 + 2 * n, 30 + 10 * n, 40 + 10 * n, 0, 0, 0)]
    p = build_events(events, source="big")
    big, small = operations.slowest_calls(p)
    assert big.dur == 15 + 10 * n and big.tree is None and small.tree is not None
    assert p.counters["slowest_without_tree"] == 1
    note = f"1 slowest call kept without its call tree (more than {n:,} calls: too big to keep)"
    text = RENDERERS["txt"].render(p)
    assert note in " ".join(text.split()) and "(its call tree was too big to keep)" in text
    doc = json.loads(RENDERERS["json"].render(p))
    assert doc["slowest"][0]["tree"] is None and note in doc["trace"]["notes"]


def test_a_gap_root_call_has_no_corrected_duration_in_any_output():
    """lost-events.events: `outer` spans lost events (a gap call, left out of
    corrected figures). Its corrected duration is no figure: null in the
    JSON (root_calls, slowest and every call of its tree), "-" in the text's
    slowest table, null in the HTML's data (the page prints "–"); never 0."""
    from ftflame.correct.corrections import correct
    from ftflame.model.profile import Calibration
    from ftflame.report.html import report_data

    raw = load("lost-events")
    for p in (raw, correct(raw, Calibration(100.0, 50.0, "command line"))):
        (s,) = operations.slowest_calls(p)
        assert s.gap and np.isnan(s.corr)
        doc = json.loads(RENDERERS["json"].render(p))
        assert doc["root_calls"][0]["gap"] and doc["root_calls"][0]["dur_corr_ns"] is None
        slow = doc["slowest"][0]
        assert slow["dur_corr_ns"] is None and slow["tree"]["incl_ns"][0] == 2100
        assert set(slow["tree"]["incl_corr_ns"] + slow["tree"]["excl_corr_ns"]) == {None}
        data = report_data(p)
        assert data["slowest"][0]["durc"] is None and data["slowest"][0]["tree"]["incl_corr"] is None
        if p.corrected is not None:
            assert data["samples"]["durc"] == [None]
            row = [line for line in RENDERERS["txt"].render(p).splitlines() if line.endswith("outer (gap)")]
            assert row and row[0].split()[:2] == ["2.100", "-"]


@pytest.mark.parametrize("name", ["k6.1/s17-mixed-ops/trace.dat", "k6.1/s10-lost/trace.dat"])
def test_real_slowest_trees_sum_exactly_and_the_slowest_is_the_latency_maximum(name):
    """Issue 16's acceptance on recorded traces: every kept tree in the
    JSON sums exactly (incl = excl + children, per call), holds every
    recorded call of its root call (its descendants, interrupt calls
    included), and the slowest kept call is the latency data's maximum."""
    from conftest import fixture, profile_of

    p = profile_of(fixture(name))
    doc = json.loads(RENDERERS["json"].render(p))
    calls = {(r["pid"], r["start_ns"]): r for r in doc["root_calls"]}
    assert doc["slowest"] and all(s["tree"] is not None for s in doc["slowest"])
    for s in doc["slowest"]:
        root = calls[(s["pid"], s["start_ns"])]
        assert s["tree"]["incl_ns"][0] == s["dur_ns"] == root["dur_ns"]
        n = _check_sums(s["tree"])
        assert n - 1 - sum(s["tree"]["irq"]) == root["descendants"] or s["gap"]
    assert doc["slowest"][0]["dur_ns"] == max(r["dur_ns"] for r in doc["root_calls"])


@pytest.mark.parametrize("name", ["k6.1/s17-mixed-ops/trace.dat", "k6.1/s10-lost/trace.dat"])
def test_slowest_text_formatted_in_c_is_the_json_of_the_objects(name, monkeypatch):
    """jsonout writes slowest[] with each tree's columns formatted in C
    (callsjson.slowest_json_parts): the same text as json.dumps of the
    objects (callsjson.slowest_json), corrected or not, and with every
    tree's corrected figures taking the Python fallback (_F1_SAFE 0)."""
    from conftest import fixture, profile_of
    from ftflame.correct.corrections import correct
    from ftflame.model.profile import Calibration
    from ftflame.report import callsjson

    raw = profile_of(fixture(name))
    for p in (raw, correct(raw, Calibration(700.0, 300.0, "command line"))):
        want = json.dumps(callsjson.slowest_json(p), separators=(",", ":"))
        assert "".join(callsjson.slowest_json_parts(p)) == want
        with monkeypatch.context() as m:
            m.setattr(callsjson, "_F1_SAFE", 0.0)
            assert "".join(callsjson.slowest_json_parts(p)) == want


@pytest.mark.parametrize("name", ["k6.1/s17-mixed-ops/trace.dat", "k6.1/s10-lost/trace.dat"])
def test_root_latency_text_formatted_in_c_is_the_json_of_the_rows(name):
    """jsonout writes root_latency[] from the table's columns in C
    (callsjson.root_latency_text): the same text as json.dumps of the rows'
    objects (callsjson.root_latency_json), corrected or not."""
    from conftest import fixture, profile_of
    from ftflame.correct.corrections import correct
    from ftflame.model.profile import Calibration
    from ftflame.report import callsjson

    raw = profile_of(fixture(name))
    for p in (raw, correct(raw, Calibration(700.0, 300.0, "command line"))):
        assert callsjson.root_latency_text(p) == json.dumps(callsjson.root_latency_json(p), separators=(",", ":"))


def test_grouped_figures_are_each_groups_own():
    """The latency figures of all root functions at once are those of each
    group alone, to the last bit: means printed to 0.1 ns must not move
    (numpy adds up to 7 values one by one, more pairwise)."""
    rng = np.random.default_rng(7)
    sizes = rng.integers(0, 40, 300)
    at = np.concatenate(([0], np.cumsum(sizes)))
    vals = np.concatenate([np.sort(rng.random(n) * 10.0 ** rng.integers(0, 12)) for n in sizes])
    got, sums = operations._grouped_nearest_rank(vals, at)
    for k in range(len(sizes)):
        want = operations._nearest_rank(vals[at[k]:at[k + 1]].copy())
        assert {f: got[f][k] for f in want} == pytest.approx(want, nan_ok=True, rel=0, abs=0)
        assert sums[k] == vals[at[k]:at[k + 1]].sum()


def test_json_makes_no_row_object_per_root_function(monkeypatch, tmp_path):
    """A trace of 3,000 distinct root functions: the JSON prints the roots'
    latency from the table's columns and makes no row object per root
    function (one each cost more than the rest of such a report)."""
    made = []
    real = operations.OperationRow

    class Counted(real):
        def __new__(cls, *a, **kw):
            made.append(1)
            return real.__new__(cls, *a, **kw)

    monkeypatch.setattr(operations, "OperationRow", Counted)
    trace = tmp_path / "roots.txt"
    trace.write_text("# tracer: function_graph\n#\n" + "".join(f" 0)   {1 + i % 97}.000 us    |  f_{i}();\n"
                                                           for i in range(3000)))
    from ftflame import parse
    from ftflame.report import callsjson

    p = parse.read(str(trace))
    text = RENDERERS["json"].render(p)
    assert len(json.loads(text)["root_latency"]) == 3000
    assert made == []
    assert callsjson.root_latency_text(p) == json.dumps(callsjson.root_latency_json(p), separators=(",", ":"))
    assert len(made) == 3000


def test_the_text_latency_table_makes_rows_only_for_what_it_prints(tmp_path, monkeypatch):
    """The text report leads with the root calls' latency, one row per root
    function over 1% of the time and one line for the rest: with 100k root
    functions an OperationRow (and its dicts) made per root function was a
    third of the text report. Counted: rows made for the lines printed only;
    the summed-up line's figures as before."""
    from ftflame.parse import read
    from ftflame.report import textcalls

    n = 5000
    path = tmp_path / "roots.txt"
    path.write_text(leafroots.trace([leafroots.line(0, "90000.000", "big")] +
                                    [leafroots.line(0, f"{1 + i % 997}.000", f"f_{i}") for i in range(n)]))
    p = read(str(path))
    made = {"n": 0}
    row = operations.OperationRow

    def counted(*a, **k):
        made["n"] += 1
        return row(*a, **k)

    monkeypatch.setattr(operations, "OperationRow", counted)
    text = "\n".join(textcalls.operations_lines(p))
    assert made["n"] <= 10, f"{made['n']} rows made for {n + 1} root functions"
    total = 90_000_000 + sum((1 + k % 997) * 1000 for k in range(n))
    share = 0
    for i in sorted(range(n), key=lambda i: (-(1 + i % 997), f"f_{i}")):  # the table's order
        share += (1 + i % 997) * 1000 / total
    assert f"({n:,} more root functions, {n:,} calls, {share * 100:.1f}% of the time, not shown)" in \
        text.replace("\n", " ")


def python_calls(fn) -> int:
    """The Python and builtin calls made from Python code while fn() runs
    (sys.setprofile's call and c_call events): what a loop per row costs."""
    calls = {"n": 0}

    def profiler(frame, event, arg):
        if event in ("call", "c_call"):
            calls["n"] += 1

    sys.setprofile(profiler)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls["n"]


def test_many_root_functions_are_ordered_without_python_per_function(tmp_path):
    """The root calls' latency rows (root_columns), the function table and
    the hot functions were each ordered, or named, by Python code per root
    function or function (a loop appending names and operations, sorts with
    a key function): with 100k root functions a second of the report.
    Counted: the calls from Python code while they are made, a few hundred,
    not a few per function."""
    from ftflame.correct import hotlists
    from ftflame.parse import read

    def roots(n: int):
        path = tmp_path / f"roots{n}.txt"
        path.write_text(leafroots.trace(leafroots.line(0, f"{1 + i % 97}.000", f"f_{(i * 7919) % n}") for i in range(n)))
        return read(str(path))

    small = roots(10)  # what runs once (a regular expression compiled on first use...) run here
    operations.root_columns(small), small.functions, hotlists.hot_functions(small)
    n = 5000
    p = roots(n)
    assert python_calls(lambda: operations.root_columns(p)) < 500
    assert python_calls(lambda: p.functions) < 500
    assert python_calls(lambda: hotlists.hot_functions(p)) < 500
    want = [name for _, name in sorted((-(1 + i % 97), f"f_{(i * 7919) % n}") for i in range(n))[:10]]
    assert [r.name for r in hotlists.hot_functions(p)] == want
    assert list(p.functions.names[:10]) == want and operations.root_columns(p)["root"][:10] == want


@pytest.mark.parametrize("width", [1, 3])
def test_operation_nodes_do_not_depend_on_how_many_operations_a_pass_carries(monkeypatch, width):
    """operation_nodes carries 64 operations a pass (a bit each of a
    uint64); a trace with more takes several passes. With 1 or 3 a pass,
    k6.1/s17-mixed-ops' operations (more than 3) get the same tops, rows
    and totals as in one pass."""
    from conftest import fixture, profile_of

    one = operations._operation_nodes(profile_of(fixture("k6.1/s17-mixed-ops/trace.dat")))
    assert len(one) > 3
    monkeypatch.setattr(operations, "OPS_A_PASS", width)
    split = operations._operation_nodes(profile_of(fixture("k6.1/s17-mixed-ops/trace.dat")))
    assert set(split) == set(one)
    for o, n in one.items():
        m = split[o]
        assert np.array_equal(n.tops, m.tops) and np.array_equal(n.rows, m.rows), o
        assert (n.calls, n.incl, n.incl_corr, n.shared) == (m.calls, m.incl, m.incl_corr, m.shared), o
