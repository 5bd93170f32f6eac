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


def call_tree_json(p: Profile, calls: dict) -> dict:
    """The nested call tree of one kept root call (row 0 is the root)."""
    n = len(calls["parent"])
    known = p.offcpu_known
    nodes = [{"name": p.funcs[int(calls["func"][i])], "start_ns": int(calls["calltime"][i]),
              "cpu": int(calls["cpu"][i]), "incl_ns": int(calls["incl"][i]), "excl_ns": int(calls["excl"][i]),
              "incl_corr_ns": _r1(calls["corr_incl"][i]), "excl_corr_ns": _r1(calls["corr_excl"][i]),
              "irq_ns": int(calls["irq"][i]), "offcpu_ns": int(calls["offcpu"][i]) if known else None,
              "irq": bool(calls["is_irq"][i]), "gap": bool(calls["gap"][i]), "children": []}
             for i in range(n)]
    for i in range(1, n):  # entry order: children after their parent, in call order
        nodes[int(calls["parent"][i])]["children"].append(nodes[i])
    return nodes[0] if n else None


def slowest_json(p: Profile) -> list:
    return [{"root": s.root, "operation": s.operation, "start_ns": s.start_ns, "pid": s.pid, "cpu": s.cpu,
             "dur_ns": s.dur, "dur_corr_ns": _r1(s.corr), "gap": s.gap, "dominant_path": list(s.dominant),
             "tree": call_tree_json(p, slow_call_tree(p, s)) if s.tree is not None else None}
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
