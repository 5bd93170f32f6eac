"""JSON `operations[]` and `slowest[]` (docs/design.md, the JSON contract):
the figures of ftflame/correct/operations.py, printed."""
from __future__ import annotations

import json

import numpy as np

from ftflame.correct.operations import (operation_nodes, operation_table, slow_call_tree, slow_call_trees,
                                       slowest_calls)
from ftflame.model.profile import Profile

from ._rowfmt import format_rows

# "%.1f" % x == repr(round(x, 1)) below this (report/jsonout.py, REPR_SAFE)
_F1_SAFE = 1e14


def _r1(x: float):
    """ns to one decimal; None (null) for NaN: a figure the trace does not give."""
    return None if x != x else round(float(x), 1)


def _stats(d: dict) -> dict:
    return {k: _r1(d[k]) for k in ("p50", "p90", "p99", "max", "mean")}


def operations_json(p: Profile) -> list:
    """One object per (root function, operation); [] when the trace's root
    calls reached no procedure below them (rooted at one procedure)."""
    return [{"root": r.root, "operation": r.operation, "recognised_by": r.how, "calls": r.calls,
             "gap_calls": r.gap_calls, "dur_ns": _stats(r.raw), "dur_corr_ns": _stats(r.corr),
             "share": round(r.share, 6), "share_corr": round(r.corr_share, 6),
             "flame": operation_flame_json(p, r.op)}
            for r in operation_table(p) or ()]


def _path(p: Profile, row: int) -> list:
    parent, func = p.col("parent"), p.col("func")
    out = []
    while row >= 0:
        out.append(p.funcs[int(func[row])])
        row = int(parent[row])
    return out[::-1]


def operation_flame_json(p: Profile, op: int):
    """The call paths of the flame graph that belong to operation `op`
    (ftflame/correct/operations.py, operation_nodes): each naming function's
    path from the root down (its subtree and ancestors go with it), and their
    summed inclusive time; null for (no procedure)."""
    n = operation_nodes(p).get(op)
    if n is None:
        return None
    corr = np.asarray(p.corrected_or_raw.incl, dtype=np.float64)
    return {"paths": [{"path": _path(p, int(r)), "calls": int(p.col("calls")[r]), "incl_ns": int(p.col("incl")[r]),
                       "incl_corr_ns": _r1(corr[r])} for r in n.tops.tolist()],
            "incl_ns": n.incl, "incl_corr_ns": _r1(n.incl_corr), "shared": n.shared}


def _r1_list(a) -> list:
    return [None if x != x else round(x, 1) for x in np.asarray(a, dtype=np.float64).tolist()]


def _tree_funcs(p: Profile, calls: dict):
    """A kept tree's function table: (names in order of first appearance,
    each call's index into them)."""
    n = len(calls["func"])
    ids, func = np.unique(calls["func"], return_inverse=True)
    first = np.full(len(ids), n, dtype=np.int64)
    np.minimum.at(first, func, np.arange(n))
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids))
    return [p.funcs[int(f)] for f in ids[order].tolist()], rank[func]


def call_tree_json(p: Profile, calls: dict, start_ns: int):
    """One kept root call's tree as columns, one value per call in entry
    order (row 0 is the root; a call's children follow it in call order):
    no key repeated per call, function names once per tree (`funcs`, indexed
    by `func`), start times relative to the root call's (`at_ns`)."""
    n = len(calls["parent"])
    if not n:
        return None
    names, func = _tree_funcs(p, calls)
    return {"calls": n, "funcs": names, "func": func.tolist(), "parent": calls["parent"].tolist(),
            "at_ns": (calls["calltime"] - start_ns).tolist(), "cpu": calls["cpu"].tolist(),
            "incl_ns": calls["incl"].tolist(), "excl_ns": calls["excl"].tolist(),
            "incl_corr_ns": _r1_list(calls["corr_incl"]), "excl_corr_ns": _r1_list(calls["corr_excl"]),
            "irq_ns": calls["irq"].tolist(), "offcpu_ns": calls["offcpu"].tolist() if p.offcpu_known else None,
            "irq": calls["is_irq"].astype(np.int64).tolist(), "gap": calls["gap"].astype(np.int64).tolist()}


def slowest_json(p: Profile) -> list:
    return [_slow_call_json(p, s) for s in slowest_calls(p)]


def _slow_call_json(p: Profile, s, tree: bool = True) -> dict:
    out = {"root": s.root, "operation": s.operation, "start_ns": s.start_ns, "pid": s.pid, "cpu": s.cpu,
           "dur_ns": s.dur, "dur_corr_ns": _r1(s.corr), "gap": s.gap, "dominant_path": list(s.dominant)}
    if tree:
        out["tree"] = call_tree_json(p, slow_call_tree(p, s), s.start_ns) if s.tree is not None else None
    return out


def _ints_text(a) -> str:
    """json.dumps(list(a)) (compact) of an integer column, formatted in C."""
    a = np.ascontiguousarray(a, dtype=np.int64)
    return "[" + format_rows([",", ("i", a)], len(a))[1:] + "]" if len(a) else "[]"


def _r1_text(a) -> str:
    """json.dumps(_r1_list(a)) (compact), in C where "%.1f" is the same text."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    if len(a) and np.abs(a).max() < _F1_SAFE:  # NaN fails this too
        return "[" + format_rows([",", ("f1", a)], len(a))[1:] + "]"
    return json.dumps(_r1_list(a), separators=(",", ":"))


def _tree_text(p: Profile, calls: dict, start_ns: int) -> str:
    """json.dumps(call_tree_json(...)) (compact), its columns formatted in C:
    a tree's columns as Python numbers take 10 times their text and leave
    the heap fragmented (20 MB more peak RSS for the 66k calls of
    k6.1/s14-v3-write-big's trees)."""
    n = len(calls["parent"])
    if not n:
        return "null"
    names, func = _tree_funcs(p, calls)
    cols = [("func", _ints_text(func)), ("parent", _ints_text(calls["parent"])),
            ("at_ns", _ints_text(calls["calltime"] - start_ns)), ("cpu", _ints_text(calls["cpu"])),
            ("incl_ns", _ints_text(calls["incl"])), ("excl_ns", _ints_text(calls["excl"])),
            ("incl_corr_ns", _r1_text(calls["corr_incl"])), ("excl_corr_ns", _r1_text(calls["corr_excl"])),
            ("irq_ns", _ints_text(calls["irq"])),
            ("offcpu_ns", _ints_text(calls["offcpu"]) if p.offcpu_known else "null"),
            ("irq", _ints_text(calls["is_irq"])), ("gap", _ints_text(calls["gap"]))]
    return '{"calls":%d,"funcs":%s,' % (n, json.dumps(names, separators=(",", ":"))) + ",".join('"%s":%s' % c for c in cols) + "}"


def slowest_json_parts(p: Profile):
    """The pieces of json.dumps(slowest_json(p)) (compact), made one call at
    a time as they are asked for, each tree's columns formatted in C
    (_tree_text)."""
    yield "["
    for i, (s, calls) in enumerate(slow_call_trees(p, slowest_calls(p))):
        head = json.dumps({**_slow_call_json(p, s, tree=False), "tree": None}, separators=(",", ":"))
        yield ("," if i else "") + head[:-len("null}")] + \
            (_tree_text(p, calls, s.start_ns) if calls is not None else "null") + "}"
    yield "]"


def hot_json(p: Profile) -> dict:
    """The hot lists (ftflame/correct/hotlists.py): `functions` and `paths` by
    corrected self time, `offcpu` paths by their own off-CPU time (null
    without sched_switch events)."""
    from ftflame.correct import hotlists

    def rows(items, key):
        return [{("path" if r.path else "name"): list(r.path) if r.path else r.name, "calls": r.calls,
                 key: _r1(r.ns), "share": round(r.share, 6)} for r in items]

    off = hotlists.offcpu_paths(p)
    return {"functions": rows(hotlists.hot_functions(p), "self_corr_ns"),
            "paths": rows(hotlists.hot_paths(p), "self_corr_ns"),
            "offcpu": None if off is None else rows(off, "offcpu_ns")}
