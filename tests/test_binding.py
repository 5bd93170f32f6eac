"""Every figure of the JSON and text reports against the independent per-call
reference (tests/helpers/callref.py), raw and corrected, per path and per function,
on real traces with many calls per path (distinct p50/p90/p99/max).

The reports come from the `ftflame report` command (the real correction,
with a hook cost given on the command line); the expectations come from
the events alone. Tolerances are the printed precision and nothing more."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import fixture, require_fixtures
from helpers import callref, corpus

FTFLAME = [sys.executable, "-m", "ftflame.cli"]

# (trace, O_in, O_out): traces without gap calls, off-CPU time or clamps
# (asserted below), so the per-call model is all there is to check
TRACES = [
    ("k6.1/s13-calib-null/trace-dispatch-full.dat", 300.0, 200.0),
    ("k6.1/s09-depth3/trace.dat", 200.0, 100.0),
    ("k6.1/s07-tracefs-text/trace-default.txt.gz", 250.0, 150.0),
    ("k6.1/s11-perf-ftrace/perf-ftrace.txt.gz", 250.0, 150.0),
]
IDS = [t[0].split("/")[1] for t in TRACES]
STATS = ("sum", "min", "max", "mean", "p50", "p90", "p99")


def trace_path(rel: str) -> str:
    """A trace of TRACES. The curated text traces are heads of the corpus's:
    the cut leaves a path clamped, outside the conditions the reference
    needs (asserted in case()); the whole recordings are not. The .dat ones
    are whole copies in the curated set."""
    if not rel.endswith(".txt.gz"):
        return fixture(rel)
    path = corpus.in_corpus(rel)
    if path is None:
        pytest.skip(corpus.missing_reason(rel))
    return path


def twin_path(p, row: int) -> tuple:
    """A Profile path named as the twin names paths: " [irq]" on the
    function where interrupt context starts (task and irq context are two
    paths)."""
    flags, parent = p.col("flags"), p.col("parent")
    names = []
    while row >= 0:
        up = int(parent[row])
        starts = bool(flags[row] & 1) and (up < 0 or not flags[up] & 1)  # NODE_IRQ
        names.append(p.name(row) + (" [irq]" if starts else ""))
        row = up
    return tuple(names[::-1])


@pytest.fixture(scope="module", params=TRACES, ids=IDS)
def case(request):
    require_fixtures()
    rel, o_in, o_out = request.param
    path = trace_path(rel)
    calls = callref.calls_of(callref.trace_events(path))
    ref = callref.Reference(calls, o_in, o_out)
    out = {}
    for fmt in ("json", "txt"):
        proc = subprocess.run(FTFLAME + ["report", "-q", path, "-F", fmt, "--overhead-in", str(o_in),
                                         "--overhead-out", str(o_out)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        out[fmt] = proc.stdout
    doc = json.loads(out["json"])
    corr = doc["calibration"]["corrections"]
    # the conditions under which the reference is the whole model
    assert corr["gap_calls"] == 0 and corr["clamped_paths"] == 0 and corr["offcpu_removed_ns"] == 0
    assert ref.negative_root_calls() == 0
    return {"path": path, "ref": ref, "calls": calls, "doc": doc, "txt": out["txt"]}


def tree_nodes(doc) -> dict:
    out = {}

    def walk(nodes, prefix, parent_irq):
        for n in nodes:
            # named as the twin names paths: " [irq]" where irq context starts
            irq = "irq" in n["flags"]
            path = prefix + (n["name"] + (" [irq]" if irq and not parent_irq else ""),)
            assert path not in out, path
            out[path] = n
            walk(n["children"], path, irq)

    walk(doc["tree"], (), False)
    return out


def check_raw(obj: dict, want: dict, what: str):
    for k in STATS:
        assert obj[k] == want[k], f"{what} {k}: {obj[k]} != reference {want[k]}"


def check_corr(obj: dict, want: dict, what: str, exact: bool):
    for k in STATS:
        tol = 0.051 if exact or k in ("sum", "mean") else 0.051 + 2e-4 * abs(want[k])
        assert abs(obj[k] - want[k]) <= tol, f"{what} {k}: {obj[k]} != reference {want[k]:.2f}"


def test_json_tree_equals_reference(case):
    ref, nodes = case["ref"], tree_nodes(case["doc"])
    assert set(nodes) == set(ref.paths)
    distinct = 0
    for path, e in ref.paths.items():
        n, what = nodes[path], "/".join(path)
        assert n["calls"] == e["calls"], what
        check_raw(n["incl_ns"], e["incl"], what + " incl")
        check_raw(n["excl_ns"], e["excl"], what + " excl")
        want_flags = {"irq"} if e["irq"] else set()
        want_flags |= {"irq_root"} if e["irq_root"] else set()
        want_flags |= {"partial"} if e["partial"] else set()
        assert set(n["flags"]) == want_flags, what
        ic, xc = n["incl_corr_ns"], n["excl_corr_ns"]
        assert ic["calls"] == xc["calls"] == e["calls"], what
        # exact per-call statistics for root calls, scaled ones elsewhere
        assert ("approx" not in ic) == e["root"], what
        check_corr(ic, e["incl_corr"], what + " incl*", e["root"])
        check_corr(xc, e["excl_corr"], what + " excl*", False)
        inc = e["incl"]
        distinct += e["calls"] >= 20 and len({inc["p50"], inc["p90"], inc["p99"], inc["max"]}) == 4
    assert distinct >= 2, "the trace must show paths whose p50/p90/p99/max differ"


def test_json_functions_equal_reference(case):
    ref, doc = case["ref"], case["doc"]
    funcs = {f["name"]: f for f in doc["functions"]}
    assert set(funcs) == set(ref.functions)
    for name, e in ref.functions.items():
        f = funcs[name]
        assert f["calls"] == e["calls"] == f["incl_corr_ns"]["calls"], name
        check_raw(f["incl_ns"], e["incl"], name + " incl")
        check_raw(f["excl_ns"], e["excl"], name + " excl")
        exact = all(ref.paths[p]["root"] for p in e["paths"])
        assert ("approx" not in f["incl_corr_ns"]) == exact, name
        check_corr(f["incl_corr_ns"], e["incl_corr"], name + " incl*", exact)
        check_corr(f["excl_corr_ns"], e["excl_corr"], name + " excl*", False)


def test_json_root_calls_equal_reference(case):
    """root_calls: every root call's raw and corrected duration."""
    ref, doc = case["ref"], case["doc"]
    by_name = {}
    for rc in doc["root_calls"]:
        by_name.setdefault(rc["name"], []).append(rc)
    roots = {p[0]: e for p, e in ref.paths.items() if e["root"]}
    assert set(by_name) == set(roots)
    for name, e in roots.items():
        got = sorted((rc["dur_ns"], rc["dur_corr_ns"]) for rc in by_name[name])
        assert [g[0] for g in got] == sorted(c for c in _durations(case, (name,)))
        want = sorted(round(v, 1) for v in e["corr_values"])
        assert [g[1] for g in sorted(got, key=lambda g: g[1])] == pytest.approx(want, abs=0.051)
        assert all(rc["irq"] == e["irq"] for rc in by_name[name])


def _durations(case, path):
    return [c.dur for c in case["calls"] if c.path == path]


# ---- the text report -------------------------------------------------------

NUM = r"([\d,]+(?:\.\d+)?)"


def close(printed: str, want_ns: float) -> bool:
    """A us figure as printed (3 decimals, fewer when it must fit) against ns."""
    digits = len(printed.split(".")[1]) if "." in printed else 0
    value = float(printed.replace(",", "")) * 1000.0
    return abs(value - want_ns) <= 0.5 * 10 ** (3 - digits) + 1e-3 + 1e-9 * abs(want_ns)


def table(text: str, title: str) -> list:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows = []
    for line in lines[start + 4:]:
        if not line.strip():
            break
        rows.append(line)
    assert rows, title
    return rows


def test_text_function_table_equals_reference(case):
    ref = case["ref"]
    rows = table(case["txt"], "Functions by corrected inclusive time")
    for line in rows:
        # Calls (N, or N+G with G gap calls), p50*, p99*, Total*, flag and name;
        # a name longer than its column stands on a line of its own above
        m = re.match(r"^\s*([\d,]+)(?:\+([\d,]+))? +" + NUM + " +" + NUM + " +" + NUM
                     + r" (.)(\S+)(?: \[irq(?:\+task)?\])?$", line)
        if m is None and line.strip() and " " not in line.strip():
            continue  # a long name's own line: its figures follow
        assert m, line
        name = m.group(7)
        if name.endswith("..."):
            continue  # cut to fit
        e = ref.functions[name]
        assert int(m.group(1).replace(",", "")) == e["calls"], line
        assert m.group(2) is None, line  # the cases have no gap calls
        assert float(m.group(3).replace(",", "")) <= float(m.group(4).replace(",", "")), f"p50* > p99*: {line}"
        assert close(m.group(5), e["incl_corr"]["sum"]), f"Total*: {line}"


def tree_rows(rows: list, corrected: bool = True):
    """(path, numbers, line) of the text call tree; paths rebuilt from the
    drawing (branch '+-'/'`-' after '| '/'  ' per level), named as the twin
    names them (" [irq]" where irq context starts). Corrected tree: Calls (N,
    or N+G with G gap calls), Avg, Avg*, Self*, a flag; raw tree: Calls, Total, Self, Avg, two
    spaces. Numbers: (Calls, and the three figures)."""
    counts = r"^\s*([\d,]+)(?:\+([\d,]+))? +" if corrected else r"^\s*([\d,]+) +()"
    for_label = " ." if corrected else "  "
    stack = []
    for line in rows:
        m = re.match(counts + NUM + " +" + NUM + " +" + NUM + for_label + r"((?:\| |  )*(?:`-|\+-))?(.*)$", line)
        if not m:
            continue
        depth = len(m.group(6) or "") // 2
        label = m.group(7)
        # an interrupt subtree left out of its parent: "[irq] name" in the corrected tree
        label = re.sub(r"^\[(?:soft)?irq\] (.*)$", r"\1 [irq]", label)
        del stack[depth:]
        bare = label.removesuffix(" [irq]")
        cut = bare.endswith("...") or bare.startswith("[+")
        stack.append(None if cut or (stack and stack[-1] is None) else label)
        if stack[-1] is not None:
            yield tuple(stack), (m.group(1), m.group(3), m.group(4), m.group(5), label.endswith(" [irq]")), line


def test_text_call_tree_equals_reference(case):
    ref = case["ref"]
    lines = case["txt"].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Call tree per path"))
    seen = 0
    for path, (calls, avg, avg_c, self_c, irq_marked), line in tree_rows(lines[start + 4:]):
        e = ref.paths[path]
        assert irq_marked == (e["irq"] and (len(path) == 1 or not ref.paths[path[:-1]]["irq"])), line
        assert not e["irq_root"] or irq_marked, line
        assert int(calls.replace(",", "")) == e["calls"], line
        assert close(avg, e["incl"]["sum"] / e["calls"]), f"Avg: {line}"
        assert close(avg_c, e["corr_incl_sum"] / e["calls"]), f"Avg*: {line}"
        assert close(self_c, e["corr_excl_sum"] / e["calls"]), f"Self*: {line}"
        seen += 1
    assert seen >= 5


def test_raw_text_report_equals_reference(case):
    """The uncorrected text report (a Profile without calibration): its
    function table with p50, p99 and Total, and its tree (Self there)."""
    from ftflame.parse import read
    from ftflame.report import RENDERERS

    text = RENDERERS["txt"].render(read(case["path"]))
    ref = case["ref"]
    for line in table(text, "Functions by total inclusive time"):
        # Calls, p50, p99, Total and name; a long name on a line of its own above
        m = re.match(r"^\s*([\d,]+) +" + NUM + " +" + NUM + " +" + NUM + r"  (\S+)(?: \[irq(?:\+task)?\])?$", line)
        if m is None and line.strip() and " " not in line.strip():
            continue
        assert m, line
        if m.group(5).endswith("..."):
            continue  # cut to fit
        e = ref.functions[m.group(5)]
        assert int(m.group(1).replace(",", "")) == e["calls"], line
        assert close(m.group(2), e["incl"]["p50"]), f"p50: {line}"
        assert close(m.group(3), e["incl"]["p99"]), f"p99: {line}"
        assert close(m.group(4), e["incl"]["sum"]), f"Total: {line}"
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Call tree, aggregated"))
    seen = 0
    for path, (calls, total, self_, avg, irq_marked), line in tree_rows(lines[start + 4:], corrected=False):
        e = ref.paths[path]
        assert irq_marked == (e["irq"] and (len(path) == 1 or not ref.paths[path[:-1]]["irq"])), line
        assert not e["irq_root"] or irq_marked, line
        assert int(calls.replace(",", "")) == e["calls"], line
        assert close(total, e["incl"]["sum"]) and close(self_, e["excl"]["sum"]), line
        assert close(avg, e["incl"]["sum"] / e["calls"]), line
        seen += 1
    assert seen >= 5


def test_reference_shares_no_code_with_ftflame():
    """The reference modules import nothing of ftflame."""
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("callref.py", "textparse_py.py"):
        with open(os.path.join(here, "helpers", name)) as f:
            src = f.read()
        assert not re.search(r"^\s*(from|import)\s+ftflame", src, re.M), name


def test_json_trace_and_calibration_objects(case):
    """The header objects: completed calls, the hook cost used, and the
    totals the correction removed (over the roots: nested paths are inside)."""
    doc, calls = case["doc"], case["calls"]
    assert doc["trace"]["exits"] == len(calls)
    cal = doc["calibration"]
    rel = next(t for t in TRACES if case["path"].endswith(t[0]))
    o_in, o_out = rel[1], rel[2]
    assert (cal["o_in_ns"], cal["o_out_ns"], cal["applied"]) == (o_in, o_out, True)
    roots = [c for c in calls if len(c.path) == 1]
    over = sum(o_in + c.desc * (o_in + o_out) + (0 if c.irq else c.irq_roots * o_out) for c in roots)
    irq = sum(0 if c.irq else c.irq_time for c in roots)
    corr = cal["corrections"]
    assert corr["overhead_removed_ns"] == pytest.approx(over, abs=0.051)
    assert corr["irq_removed_ns"] == pytest.approx(irq, abs=0.051)
    assert corr["clean_calls"] == len(calls)
