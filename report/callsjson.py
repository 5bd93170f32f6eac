"""JSON `operations[]` and `slowest[]` (docs/design.md, the JSON contract):
the figures of ftflame/correct/operations.py, printed."""
from __future__ import annotations

import numpy as np

from ftflame.correct.operations import operation_nodes, operation_table, slow_call_tree, slowest_calls
from ftflame.model.profile import Profile


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


def call_tree_json(p: Profile, calls: dict, start_ns: int):
    """One kept root call's tree as columns, one value per call in entry
    order (row 0 is the root; a call's children follow it in call order):
    no key repeated per call, function names once per tree (`funcs`, indexed
    by `func`), start times relative to the root call's (`at_ns`)."""
    n = len(calls["parent"])
    if not n:
        return None
    ids, func = np.unique(calls["func"], return_inverse=True)
    first = np.full(len(ids), n, dtype=np.int64)
    np.minimum.at(first, func, np.arange(n))
    order = np.argsort(first, kind="stable")  # names in order of first appearance
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids))
    return {"calls": n, "funcs": [p.funcs[int(f)] for f in ids[order].tolist()],
            "func": rank[func].tolist(), "parent": calls["parent"].tolist(),
            "at_ns": (calls["calltime"] - start_ns).tolist(), "cpu": calls["cpu"].tolist(),
            "incl_ns": calls["incl"].tolist(), "excl_ns": calls["excl"].tolist(),
            "incl_corr_ns": _r1_list(calls["corr_incl"]), "excl_corr_ns": _r1_list(calls["corr_excl"]),
            "irq_ns": calls["irq"].tolist(), "offcpu_ns": calls["offcpu"].tolist() if p.offcpu_known else None,
            "irq": calls["is_irq"].astype(np.int64).tolist(), "gap": calls["gap"].astype(np.int64).tolist()}


def slowest_json(p: Profile) -> list:
    return [{"root": s.root, "operation": s.operation, "start_ns": s.start_ns, "pid": s.pid, "cpu": s.cpu,
             "dur_ns": s.dur, "dur_corr_ns": _r1(s.corr), "gap": s.gap, "dominant_path": list(s.dominant),
             "tree": call_tree_json(p, slow_call_tree(p, s), s.start_ns) if s.tree is not None else None}
            for s in slowest_calls(p)]


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
