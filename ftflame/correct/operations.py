"""Per-operation latency and the slowest root calls, computed once beside the
Profile (as corrections.corrected_stats is): every renderer prints these.

Operations: the C core labels each root call of a dispatcher (svc_process,
nfsd_dispatch, nfsd4_proc_compound, ...) by the NFS procedure it reached
below it (parse/core/calls.c says how); a root call that reached none is
"(no procedure)", counted. A trace whose roots never reach a procedure below
them (rooted at one procedure) has no operation table.

Slowest calls: the core keeps the N slowest root calls per (root path,
operation) with their whole call trees. Here each call of such a tree gets
its own time (incl - its children's incl: exact), its corrected time by the
per-call model of corrections.py, and the tree's dominant path (the chain
of children that took most of the time).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ftflame.correct.corrections import net_switch_work
from ftflame.model.profile import (CALL_COLUMNS, CALL_DONE, CALL_EXTRAS, CALL_GAP, CALL_IRQ, SAMPLE_GAP, SAMPLE_IRQ,
                                   SAMPLE_PARTIAL, KeptTree, Profile)

NO_OPERATION = "(no procedure)"
QUANTILES = (50, 90, 99)
_CACHE = "_operations"
_SLOW_CACHE = "_slowest"
_C = {n: i for i, n in enumerate(CALL_COLUMNS)}
_DESC_ESC = 0xFFFFFF  # parse/core/builder.h: FTF_REC_DESC_ESC, FTF_REC_FLAGS_SHIFT
_FLAGS_SHIFT = 24


@dataclass(frozen=True)
class OperationRow:
    root: str         # the root function (dispatcher)
    operation: str    # the label, or NO_OPERATION
    how: str          # the function(s) that named it
    op: int           # operation id (-1: none)
    calls: int
    gap_calls: int    # left out of the corrected figures (span a lost-event gap...)
    raw: dict         # p50, p90, p99, max, mean (ns) over every call
    corr: dict        # the same over the clean calls' corrected durations
    share: float      # of the raw time of every root call in the table
    corr_share: float


def _nearest_rank(sorted_vals: np.ndarray) -> dict:
    n = len(sorted_vals)
    if not n:
        return {"p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0, "mean": 0.0}
    out = {f"p{q}": float(sorted_vals[max(int(np.ceil(n * q / 100.0)) - 1, 0)]) for q in QUANTILES}
    out["max"] = float(sorted_vals[-1])
    out["mean"] = float(sorted_vals.sum() / n)
    return out


def spread_of(vals: np.ndarray, half_widths: np.ndarray) -> dict:
    """_nearest_rank's figures' 95% half-widths when every value may move by
    its own half-width, all in the same direction (the calibration's costs
    move together): half the distance between the figures of the values
    all moved up and all moved down (ftflame/correct/uncertainty.py)."""
    up = _nearest_rank(np.sort(vals + half_widths))
    down = _nearest_rank(np.sort(np.maximum(vals - half_widths, 0.0)))
    return {k: (up[k] - down[k]) / 2.0 for k in up}


def sample_roots(p: Profile) -> np.ndarray:
    """The root function's name index (p.funcs) of every root call."""
    return p.col("func")[p.scol("node")] if len(p.samples) else np.zeros(0, np.int64)


def operation_table(p: Profile) -> Optional[tuple]:
    """OperationRows (busiest first) for the root functions whose calls were
    labelled, or None when no root call reached a procedure below it."""
    if _CACHE in p.__dict__:
        return p.__dict__[_CACHE]
    p.__dict__[_CACHE] = out = _operation_table(p)
    return out


def _operation_table(p: Profile) -> Optional[tuple]:
    if not len(p.samples) or not p.operations:
        return None
    op = p.scol("op")
    root = sample_roots(p)
    labelled_roots = np.unique(root[op >= 0])
    sel = np.isin(root, labelled_roots)
    dur = p.scol("dur").astype(np.float64)
    corr = p.corrected_or_raw.sample_dur
    clean = (p.scol("flags") & SAMPLE_GAP) == 0
    total = float(dur[sel].sum()) or 1.0
    corr_total = float(corr[sel & clean].sum()) or 1.0
    rows = []
    keys = np.unique(np.stack([root[sel], op[sel]], axis=1), axis=0)
    for r, o in keys.tolist():
        m = sel & (root == r) & (op == o)
        mc = m & clean
        d, c = np.sort(dur[m]), np.sort(corr[mc])
        rows.append(OperationRow(
            root=p.funcs[r], operation=p.operations[o] if o >= 0 else NO_OPERATION,
            how=p.op_how[o] if 0 <= o < len(p.op_how) else "no nfsd3_proc_*/nfsd4 operation below the root",
            op=int(o), calls=int(m.sum()), gap_calls=int(m.sum() - mc.sum()),
            raw=_nearest_rank(d), corr=_nearest_rank(c),
            share=float(d.sum()) / total, corr_share=float(c.sum()) / corr_total))
    rows.sort(key=lambda x: (-x.raw["mean"] * x.calls, x.root, x.operation))
    return tuple(rows)


# ---- the slowest calls ---------------------------------------------------

@dataclass(frozen=True)
class SlowCall:
    sample: int        # row of p.samples
    root: str
    operation: Optional[str]  # None: its root function is no dispatcher (no operation table row)
    start_ns: int      # calltime (the tracer's clock)
    pid: int
    cpu: int
    dur: int           # raw duration (ns)
    corr: float        # corrected duration (ns), as the latency data says; NaN for a gap call (left out)
    gap: bool
    tree: Optional[KeptTree]  # its calls as the core kept them, None: tree too big to keep
    dominant: tuple    # names along the chain of children that took most of the time


def slowest_calls(p: Profile) -> tuple:
    """The kept slowest root calls, slowest first."""
    if _SLOW_CACHE in p.__dict__:
        return p.__dict__[_SLOW_CACHE]
    p.__dict__[_SLOW_CACHE] = out = _slowest_calls(p)
    return out


def _slowest_calls(p: Profile) -> tuple:
    if not p.slowest_trees:
        return ()
    op = p.scol("op")
    root = sample_roots(p)
    dur = p.scol("dur")
    corr = p.corrected_or_raw.sample_dur
    flags = p.scol("flags")
    op_roots = {r.root for r in operation_table(p) or ()}
    out = []
    for i, tree in p.slowest_trees:
        name = p.funcs[int(root[i])] + (" (partial)" if flags[i] & SAMPLE_PARTIAL else "") + \
            (" [irq]" if flags[i] & SAMPLE_IRQ else "")
        s = SlowCall(
            sample=int(i), root=name,
            operation=p.operations[op[i]] if op[i] >= 0 else NO_OPERATION if name in op_roots else None,
            start_ns=int(p.scol("calltime")[i]), pid=int(p.scol("pid")[i]), cpu=int(p.scol("cpu")[i]),
            dur=int(dur[i]), corr=float(corr[i]), gap=bool(flags[i] & SAMPLE_GAP), tree=tree, dominant=())
        calls = slow_call_tree(p, s)  # decoded for its dominant path, then let go
        out.append(s if calls is None else
                   dataclasses.replace(s, dominant=tuple(p.funcs[f] for f in dominant_path(calls))))
    out.sort(key=lambda s: (-s.dur, s.sample))
    return tuple(out)


def call_columns(t: KeptTree) -> np.ndarray:
    """A kept tree's calls as int64 columns (CALL_COLUMNS, entry order): the
    core's 20-byte records with their extras put back in place."""
    r = t.recs
    out = np.zeros((len(r), len(CALL_COLUMNS)), dtype=np.int64)
    out[:, _C["func"]] = r["func"]
    out[:, _C["parent"]] = np.where(r["parent"] == 0xFFFFFFFF, -1, r["parent"].astype(np.int64))
    out[:, _C["flags"]] = r["desc_flags"] >> _FLAGS_SHIFT
    out[:, _C["cpu"]] = t.cpu
    # the base as int64 bits (a damaged calltime may be over 2^63: wraps as the core's do)
    base = np.array(t.base, dtype=np.uint64).astype(np.int64)
    out[:, _C["calltime"]] = base + r["start"].astype(np.int64)
    out[:, _C["dur"]] = r["dur"]
    out[:, _C["desc"]] = r["desc_flags"] & _DESC_ESC
    e = t.extras
    for fid, name in enumerate(CALL_EXTRAS):
        sel = e["field"] == fid
        if sel.any():
            v = e["value"][sel]
            out[e["rec"][sel], _C["calltime" if name == "start" else name]] = \
                v.astype(np.uint32).astype(np.int32) if name == "cpu" else v.astype(np.int64)
    return out


def slow_call_tree(p: Profile, s: SlowCall) -> Optional[dict]:
    """The columns of slowest call s's tree (call_tree), None when it was too
    big to keep: decoded from the core's records each time an output asks,
    never kept (a tree's columns take 4 to 6 times its records' bytes)."""
    if s.tree is None:
        return None
    cal = p.calibration if p.corrected is not None else None
    irqs = p.corrected.irqs if p.corrected is not None else "exclude"
    offcpu_removed = p.corrected is None or p.corrected.offcpu.startswith("removed")
    return call_tree(call_columns(s.tree), cal, irqs, offcpu_removed, s.corr)


def call_tree(tree: np.ndarray, cal, irqs: str, offcpu_removed: bool, root_corr: float) -> dict:
    """Columns of one kept call tree, completed calls only (a call whose
    exit never came is left out, its children hung under its caller):
    func, parent (row, -1 root), incl, excl = incl - children's incl
    (exact), corr_incl and corr_excl (the per-call model of corrections.py;
    the root's corr_incl is the root call's corrected duration; NaN for
    every call of a gap root call, which the correction leaves out), irq
    (ns in interrupt subtrees), offcpu, flags, calltime, cpu."""
    done = (tree[:, _C["flags"]] & CALL_DONE) != 0
    keep = np.flatnonzero(done)
    new_row = np.full(len(tree), -1, dtype=np.int64)
    new_row[keep] = np.arange(len(keep))
    parent = tree[:, _C["parent"]].copy()
    # hang a call whose parent never completed under its nearest completed ancestor
    while True:  # one vectorised step per level of calls that never completed
        bad = np.flatnonzero((parent >= 0) & ~done[np.maximum(parent, 0)])
        if not len(bad):
            break
        parent[bad] = parent[parent[bad]]
    par = np.where(parent[keep] >= 0, new_row[np.maximum(parent[keep], 0)], -1)
    t = tree[keep]
    incl = t[:, _C["dur"]].astype(np.int64)
    n = len(keep)
    has = par >= 0
    kids = np.bincount(par[has], weights=incl[has], minlength=n).astype(np.int64) if n else incl
    excl = incl - kids
    is_irq = (t[:, _C["flags"]] & CALL_IRQ) != 0
    o_in = float(cal.o_in_ns) if cal is not None else 0.0
    o_out = float(cal.o_out_ns) if cal is not None else 0.0
    off = t[:, _C["offcpu"]].astype(np.float64) if offcpu_removed else np.zeros(n)
    desc = t[:, _C["desc"]].astype(np.float64)
    inside_sw = np.zeros(n, bool)
    if offcpu_removed and t[:, _C["sched"]].any():
        off, desc, inside_sw = _switch_work_per_call(t, par, incl, off, desc, o_in, o_out)
    if irqs == "exclude":
        task = incl - off - t[:, _C["irq"]] - o_in - desc * (o_in + o_out) - t[:, _C["irq_roots"]] * o_out
    else:
        task = incl - off - o_in - desc * (o_in + o_out)
    ci = np.maximum(np.where(is_irq, incl - off - o_in - desc * (o_in + o_out), task), 0.0)
    ci[inside_sw] = 0.0  # the scheduler's work, taken out with its switch frame's
    if n:
        ci[0] = root_corr
    if np.isnan(root_corr):  # a gap root call: none of its calls has a corrected figure
        ci = np.full(n, np.nan)
    # a child counts in its caller's corrected time unless it is an irq
    # subtree taken out of it (irqs="exclude")
    counted = has & ~(is_irq & ~is_irq[np.maximum(par, 0)] if irqs == "exclude" else np.zeros(n, bool))
    ckids = np.bincount(par[counted], weights=ci[counted], minlength=n) if n else ci
    cx = ci - ckids
    return {"func": t[:, _C["func"]], "parent": par, "incl": incl, "excl": excl, "corr_incl": ci,
            "corr_excl": cx, "irq": t[:, _C["irq"]], "offcpu": t[:, _C["offcpu"]],
            "flags": t[:, _C["flags"]], "calltime": t[:, _C["calltime"]], "cpu": t[:, _C["cpu"]],
            "gap": (t[:, _C["flags"]] & CALL_GAP) != 0, "is_irq": is_irq}


def _switch_work_per_call(t, par, incl, off, desc, o_in: float, o_out: float):
    """The per-call model's share of corrections.switch_work: (off-CPU time
    plus switch work, the descendants charged a hook cost, the calls inside
    a switch frame). A switch frame's switch work is all its on-CPU time;
    the calls under it are the scheduler's work, taken out with it."""
    sched = t[:, _C["sched"]].astype(np.float64)
    on_cpu = np.maximum(incl - t[:, _C["offcpu"]] - t[:, _C["irq"]], 0)
    is_sw = (sched > 0) & (sched == on_cpu)
    inside = np.zeros(len(par), bool)
    has = par >= 0
    while True:  # one vectorised step per level of calls below a switch frame
        nxt = has & (is_sw | inside)[np.maximum(par, 0)]
        if (nxt == inside).all():
            break
        inside = nxt
    gone = off + net_switch_work(sched.copy(), t[:, _C["sched_calls"]], t[:, _C["sched_outs"]], o_in, o_out)
    return gone, desc - t[:, _C["offcpu_calls"]], inside


def dominant_path(calls: dict) -> list:
    """Function ids from the root down the child with the most inclusive
    time at each level, while that child holds at least half its caller's
    time (below that no single chain dominates)."""
    par, incl = calls["parent"], calls["incl"]
    if not len(par):
        return []
    order = np.lexsort((-incl, par))  # children grouped by parent, biggest first
    parents, at = np.unique(par[order], return_index=True)
    first = dict(zip(parents.tolist(), order[at].tolist()))
    path, row = [0], 0
    while row in first and incl[first[row]] * 2 >= incl[row] and incl[row] > 0:
        row = first[row]
        path.append(row)
    return [int(calls["func"][r]) for r in path]


# ---- the call paths of each operation ------------------------------------

COMPOUND_FUNC = "nfsd4_proc_compound"
_NODES_CACHE = "_operation_nodes"


@dataclass(frozen=True)
class OperationNodes:
    """The call paths of the aggregated tree that belong to one operation:
    the paths of the function(s) that named it (`tops`: for a procedure its
    function's paths below a dispatcher root; for a COMPOUND its op
    functions' paths right under nfsd4_proc_compound), their subtrees and
    their ancestors up to the root (`rows`). The dispatcher's own work around
    the procedure (decode, reply) is in the ancestors' self time: the
    aggregate cannot split it per operation, so no operation claims it."""
    op: int
    tops: np.ndarray     # rows of the naming functions' paths (outermost only)
    rows: np.ndarray     # tops, their descendants and their ancestors (sorted)
    calls: int           # calls of the tops
    incl: int            # raw inclusive ns of the tops
    incl_corr: float     # corrected inclusive ns of the tops
    shared: bool         # COMPOUND: an op function's paths hold every COMPOUND that ran it


def naming_functions(how: str) -> tuple:
    """The function names in an op_how string, and whether they are the op
    functions of a COMPOUND ("nfsd4_proc_compound > nfsd4_sequence,nfsd4_putfh,...")."""
    if how.startswith(COMPOUND_FUNC + " >"):
        names = how[len(COMPOUND_FUNC) + 2:].strip().split(",")
        return tuple(n for n in names if n and n != "..."), True
    return (how,), False


def _root_rows(parent: np.ndarray) -> tuple:
    """The root row and the depth (roots 0) of every row, one vectorised
    step per level."""
    root = np.arange(len(parent))
    depth = np.zeros(len(parent), dtype=np.int64)
    while True:
        up = parent[root]
        step = up >= 0
        if not step.any():
            return root, depth
        root[step] = up[step]
        depth += step


def operation_nodes(p: Profile) -> dict:
    """{op id: OperationNodes} for the operations of operation_table(p);
    {} when it has none."""
    if _NODES_CACHE in p.__dict__:
        return p.__dict__[_NODES_CACHE]
    p.__dict__[_NODES_CACHE] = out = _operation_nodes(p)
    return out


def _operation_nodes(p: Profile) -> dict:
    table = operation_table(p)
    if not table or not p.nrows:
        return {}
    parent = np.asarray(p.col("parent"), dtype=np.int64)
    func = np.asarray(p.col("func"), dtype=np.int64)
    index = {name: i for i, name in enumerate(p.funcs)}
    dispatchers = np.array([index[r.root] for r in table if r.root in index], dtype=np.int64)
    root, depth = _root_rows(parent)
    under_dispatcher = np.isin(func[root], dispatchers)
    parent_func = np.where(parent >= 0, func[np.maximum(parent, 0)], -1)
    by_depth = np.argsort(depth, kind="stable")
    bounds = np.flatnonzero(np.diff(depth[by_depth])) + 1
    levels = np.split(by_depth, bounds)  # shallowest first
    compound = index.get(COMPOUND_FUNC, -2)
    out = {}
    for o in sorted({r.op for r in table if r.op >= 0}):
        names, is_compound = naming_functions(p.op_how[o])
        ids = [index[n] for n in names if n in index]
        top = under_dispatcher & np.isin(func, ids)
        if is_compound:
            top &= parent_func == compound
        inside = np.zeros(p.nrows, dtype=bool)   # a top or below one
        outer = np.zeros(p.nrows, dtype=bool)    # a top with no top above it
        for rows in levels:
            par = parent[rows]
            above = np.where(par >= 0, inside[np.maximum(par, 0)], False)
            outer[rows] = top[rows] & ~above
            inside[rows] = top[rows] | above
        holds = inside.copy()                   # a top, below one, or above one
        for rows in reversed(levels):
            par = parent[rows]
            up = par[(par >= 0) & holds[rows]]
            holds[up] = True
        tops = np.flatnonzero(outer)
        out[o] = OperationNodes(
            op=o, tops=tops, rows=np.flatnonzero(holds),
            calls=int(p.col("calls")[tops].sum()), incl=int(p.col("incl")[tops].sum()),
            incl_corr=float(np.asarray(p.corrected_or_raw.incl, dtype=np.float64)[tops].sum()),
            shared=is_compound)
    return out
