"""Per-operation latency and the slowest root calls, computed once beside the
Profile (as corrections.corrected_stats is): every renderer prints these.

Operations: the C core labels each root call of a dispatcher (svc_process,
nfsd_dispatch, nfsd4_proc_compound, ...) by the NFS procedure it reached
below it (parse/core/root_calls.c says how); a root call that reached none is
"(no procedure)", counted. A trace whose roots never reach a procedure below
them (rooted at one procedure) has no operation table. Root latency: the
same figures per root function (split by operation for a dispatcher), for
every trace: what a report leads with.

Slowest calls: the core keeps the N slowest root calls per (root path,
operation) with their whole call trees. Here each call of such a tree gets
its own time (incl - its children's incl: exact), its corrected time by the
per-call model of corrections.py, and the tree's dominant path (the chain
of children that took most of the time).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

import ftflame._model as _model
from ftflame.correct.corrections import net_switch_work
from ftflame.model.profile import (
    CALL_ARGS,
    CALL_COLUMNS,
    CALL_DONE,
    CALL_EXTRAS,
    CALL_GAP,
    CALL_IRQ,
    CALL_RET,
    CALL_WITH_ARGS,
    KEPT_BY_CORRECTED,
    SAMPLE_GAP,
    SAMPLE_IRQ,
    SAMPLE_PARTIAL,
    KeptTree,
    KeptTrees,
    OffCpu,
    Profile,
    distinct,
    retval_is_error,
)

NO_OPERATION = "(no procedure)"
QUANTILES = (50, 90, 99)
NAN = float("nan")
_C = {n: i for i, n in enumerate(CALL_COLUMNS)}
_DESC_ESC = 0xFFFFFF  # parse/core/builder.h: FTF_REC_DESC_ESC, FTF_REC_FLAGS_SHIFT
_FLAGS_SHIFT = 24


class OperationRow(NamedTuple):  # a tuple: made per root function, 100,000s of them
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
    irq_calls: int = 0  # of the calls, those entered in interrupt context


def _nearest_rank(sorted_vals: np.ndarray) -> dict:
    n = len(sorted_vals)
    if not n:  # no call (e.g. every one spans a gap): no figure, not 0 (NaN, printed null / "-")
        return {"p50": NAN, "p90": NAN, "p99": NAN, "max": NAN, "mean": NAN}
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


def _grouped_sums(vals: np.ndarray, at: np.ndarray) -> np.ndarray:
    """vals[at[k]:at[k + 1]].sum() of every group k, each the very float
    numpy's sum gives (a mean printed to 0.1 ns must not move): one pass per
    position for the groups under 8 values (numpy adds those one by one from
    0.0), numpy's own sum for the bigger ones (it sums those pairwise)."""
    n = np.diff(at)
    out = np.zeros(len(n))
    small = n < 8
    for j in range(int(n[small].max()) if small.any() else 0):
        has = small & (n > j)
        out[has] += vals[at[:-1][has] + j]
    for k in np.flatnonzero(~small).tolist():
        out[k] = vals[at[k]:at[k + 1]].sum()
    return out


def _grouped_nearest_rank(vals: np.ndarray, at: np.ndarray) -> tuple:
    """_nearest_rank of every group vals[at[k]:at[k + 1]] (each sorted) at
    once: (a dict of the figures' arrays, each group's sum); NaN for an
    empty group. A trace may have 100,000s of root functions."""
    n = np.diff(at)
    some = n > 0
    sums = _grouped_sums(vals, at)
    out = {}
    for q in QUANTILES:
        rank = np.maximum(np.ceil(n * q / 100.0).astype(np.int64) - 1, 0)
        out[f"p{q}"] = np.where(some, vals[np.where(some, at[:-1] + rank, 0)] if len(vals) else NAN, NAN)
    out["max"] = np.where(some, vals[np.where(some, at[1:] - 1, 0)] if len(vals) else NAN, NAN)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["mean"] = np.where(some, sums / n, NAN)
    return out, sums


def sample_roots(p: Profile, rows=None) -> np.ndarray:
    """The root function's name index (p.funcs) of every root call (or of
    those at rows: no whole column made for a few)."""
    if not len(p.samples):
        return np.zeros(0, np.int64)
    return p.col("func")[p.scol("node", rows)] if rows is not None else p.col("func")[p.samples.values("node")]


def operation_table(p: Profile) -> tuple | None:
    """OperationRows (busiest first) for the root functions whose calls were
    labelled, or None when no root call reached a procedure below it."""
    return p.views.get("operation_table", lambda: _operation_table(p))


def _operation_table(p: Profile) -> tuple | None:
    if not len(p.samples) or not p.operations:
        return None
    node = p.samples.values("node")
    disp = _root_funcs(p, node, p.samples.values("op") >= 0)
    # a root call of a dispatcher: by its call path's function (a row per
    # path, not an int64 column per root call)
    by_path = np.isin(p.col("func"), disp)
    return _latency_rows(p, by_path[node], set())


def _root_funcs(p: Profile, node: np.ndarray, where: np.ndarray | None = None) -> np.ndarray:
    """The distinct root functions (sorted) of the root calls (those in
    where), found from the call paths they lie on: the distinct functions
    of those paths, without a column per root call."""
    on = np.flatnonzero(np.bincount(node if where is None else node[where], minlength=p.nrows))
    return distinct(p.col("func")[on])


def root_table(p: Profile) -> tuple:
    """Latency of every root call, one row per root function, split by
    operation for a dispatcher (the rows of operation_table): what every
    report leads with. A plain root's row has operation "" (and how "")."""
    # the columns kept only when an output asked for them: the rows alone
    # hold the figures (100,000s of root functions: MBs held twice)
    return p.views.get("root_table", lambda: _rows_of(
        root_columns(p) if "root_columns" in p.views else _root_columns(p)))


def root_columns(p: Profile) -> dict | None:
    """root_table's figures as columns, in its row order (None: no root
    call): what prints every row (the JSON) reads, not 100,000s of rows."""
    return p.views.get("root_columns", lambda: _root_columns(p))


def _root_columns(p: Profile) -> dict | None:
    if not len(p.samples):
        return None
    node = p.samples.values("node")
    dispatchers = set(_root_funcs(p, node, p.samples.values("op") >= 0).tolist()) if p.operations else set()
    plain = set(_root_funcs(p, node).tolist()) - dispatchers
    return _latency_columns(p, np.ones(len(node), dtype=bool), plain, split_irq=True)


def _latency_rows(p: Profile, sel: np.ndarray, plain: set, split_irq: bool = False) -> tuple:
    """OperationRows of the root calls in sel (_latency_columns)."""
    return _rows_of(_latency_columns(p, sel, plain, split_irq))


def _rows_of(cols: dict | None) -> tuple:
    """_latency_columns' rows as OperationRows."""
    if cols is None:
        return ()
    names = list(cols["raw"])
    raws = zip(*(cols["raw"][k].tolist() for k in names))
    cors = zip(*(cols["corr"][k].tolist() for k in names))
    return tuple(OperationRow(
        root=r, operation=o, how=h, op=op, calls=n, gap_calls=g, raw=dict(zip(names, d)),
        corr=dict(zip(names, c)), share=sh, corr_share=csh, irq_calls=q)
        for r, o, h, op, n, g, d, c, sh, csh, q in zip(
            cols["root"], cols["operation"], cols["how"], *(cols[k].tolist() for k in (
                "op", "calls", "gap_calls")), raws, cors, *(cols[k].tolist() for k in (
                    "share", "corr_share", "irq_calls"))))


def rows_of_columns(cols: dict, idx: list) -> tuple:
    """The OperationRows of rows idx of _latency_columns' columns."""
    at = np.asarray(idx, dtype=np.int64)
    return _rows_of({k: ({n: a[at] for n, a in v.items()} if isinstance(v, dict) else
                         [v[i] for i in idx] if isinstance(v, list) else v[at]) for k, v in cols.items()})


def _latency_columns(p: Profile, sel: np.ndarray, plain: set, split_irq: bool = False) -> dict:
    """The figures of the root calls in sel per (root function,
    operation), busiest first (the rows' columns: OperationRow's fields,
    raw and corr a column per figure); a root function id in plain is no
    dispatcher (one row, operation ""). split_irq: the root calls entered
    in interrupt context and the others of a function in rows of their own
    (a handler's latency is not the task's)."""
    lean = _lean_groups(p, sel, split_irq)
    if lean is not None:
        cols, kroot, kop = lean
        return _order_rows(p, cols, kroot, kop, plain)
    flags = p.scol("flags")
    at = np.flatnonzero(sel)
    # each row's root calls found by one sort of all of them, not a scan of
    # all per row (a trace may have 100,000s of root functions), on one
    # int64 key per root call (_groups_of): a root call costs its row's
    # bytes again here, not three times them
    irq = (flags[at] & SAMPLE_IRQ) != 0 if split_irq else np.zeros(len(at), bool)
    kroot, kop, inv = _groups_of(sample_roots(p, at).astype(np.int64), p.scol("op", at), irq)
    del irq
    dur = p.scol("dur", at).astype(np.float64)
    total = float(dur.sum()) or 1.0
    order = np.lexsort((dur, inv))
    durs, d_at = dur[order], np.searchsorted(inv[order], np.arange(len(kroot) + 1))
    del dur, order
    ok = (flags[at] & SAMPLE_GAP) == 0
    corr_at, corr_inv = np.asarray(p.corrected_or_raw.sample_dur)[at[ok]], inv[ok]
    corr_total = float(corr_at.sum()) or 1.0
    order = np.lexsort((corr_at, corr_inv))
    corrs, c_at = corr_at[order], np.searchsorted(corr_inv[order], np.arange(len(kroot) + 1))
    del corr_at, corr_inv, order, ok
    raw, raw_sum = _grouped_nearest_rank(durs, d_at)
    cor, cor_sum = _grouped_nearest_rank(corrs, c_at)
    del durs, corrs
    calls = np.diff(d_at)
    cols = {"op": kop, "calls": calls, "gap_calls": calls - np.diff(c_at), "raw": raw, "corr": cor,
            "share": raw_sum / total, "corr_share": cor_sum / corr_total,
            "irq_calls": np.bincount(inv, weights=(flags[at] & SAMPLE_IRQ) != 0,
                                     minlength=len(kroot)).astype(np.int64)}
    return _order_rows(p, cols, kroot, kop, plain)


def _order_rows(p: Profile, cols: dict, kroot: np.ndarray, kop: np.ndarray, plain: set) -> dict:
    """_latency_columns' groups (kroot, kop) and their columns, in the rows'
    order, with their names."""
    raw, calls = cols["raw"], cols["calls"]
    # a plain root's operation and how "", else its operation's (the
    # operations' tables, looked up per row in C: 100,000s of rows)
    is_plain = np.isin(kroot, np.fromiter(plain, dtype=np.int64, count=len(plain)))
    op_names = [*p.operations, NO_OPERATION, ""]
    which = np.where(is_plain, len(op_names) - 1, np.where(kop >= 0, kop, len(op_names) - 2))
    hows = [*p.op_how, "no nfsd3_proc_*/nfsd4 operation below the root", ""]
    how = np.where(is_plain, len(hows) - 1, np.where((kop >= 0) & (kop < len(p.op_how)), kop, len(hows) - 2))
    # busiest first, then by name, operation and interrupt calls (a stable
    # sort: what sorting the rows by those keys gave)
    order = np.lexsort((cols["irq_calls"], _ranks(op_names)[which], p.name_ranks()[kroot], -raw["mean"] * calls))
    out = {k: ({n: a[order] for n, a in v.items()} if isinstance(v, dict) else v[order]) for k, v in cols.items()}
    out.update(root=list(map(p.funcs.__getitem__, kroot[order].tolist())),
               operation=list(map(op_names.__getitem__, which[order].tolist())),
               how=list(map(hows.__getitem__, how[order].tolist())))
    return out


# Up to this many groups of root calls, _latency_columns finds each group's
# calls with a mask, a group at a time (its figures from one scratch array
# of its values, sorted in place): a few bytes a root call at the peak where
# sorting all of them at once took about 100 (docs/performance.md, branch
# rootcols). More groups (a root function per root call): all at once.
LEAN_GROUPS = 64


def _lean_groups(p: Profile, sel: np.ndarray, split_irq: bool) -> tuple | None:
    """_latency_columns' columns before their order (cols, kroot, kop), the
    groups found from the stored columns (a root call's call path, its
    operation, its interrupt flag: a code of 4 bytes), or None when there
    are too many groups or codes for that. The same figures as the sort of
    all root calls: each group's values sorted alike (integer durations sum
    exactly in any order; the corrected ones are summed sorted, as there)."""
    rc = p.samples
    node, op, flags, dur = rc.stored("node"), rc.stored("op"), rc.stored("flags"), rc.stored("dur")
    if node is None or op is None or flags is None or dur is None:
        return None
    n = len(rc)
    span = int(op.max()) + 2
    ncode = p.nrows * span * 2
    if op.min() < -1 or ncode > max(n // 4, 1 << 20):  # a count per code: at most 2 bytes a root call
        return None
    every = bool(sel.all())
    # ((node * span + op + 1) * 2 + irq), in place on one 4-byte column
    code: np.ndarray = node.astype(np.int32 if ncode < 1 << 31 else np.int64)
    np.multiply(code, span, out=code)
    np.add(code, op, out=code)
    np.add(code, 1, out=code)
    np.multiply(code, 2, out=code)
    if split_irq:
        np.add(code, (flags & SAMPLE_IRQ) != 0, out=code)
    present = np.flatnonzero(np.bincount(code if every else code[sel], minlength=ncode))
    p_irq = present % 2
    p_op = (present // 2) % span - 1
    p_root = p.col("func")[present // (2 * span)].astype(np.int64)
    kroot, kop, ginv = _groups_of(p_root, p_op, p_irq)
    if len(kroot) > LEAN_GROUPS:
        return None
    table = np.full(ncode, -1, dtype=np.int8)
    table[present] = ginv
    del present, p_irq, p_op, p_root, ginv
    inv = table[code]
    del code, table
    if not every:
        inv[~sel] = -1
    total = float(dur.sum(dtype=np.int64, where=sel)) or 1.0
    sdur = np.asarray(p.corrected_or_raw.sample_dur)
    ok = (flags & SAMPLE_GAP) == 0
    ok &= sel
    corr_total = float((sdur if ok.all() else sdur[ok]).sum()) or 1.0
    raw_g, cor_g, calls, corr_calls, irq_calls = [], [], [], [], []
    for g in range(len(kroot)):
        m = inv == g
        vals = dur[m].astype(np.float64)
        vals.sort()
        raw_g.append(_grouped_nearest_rank(vals, np.array([0, len(vals)])))
        calls.append(len(vals))
        irq_calls.append(int(np.count_nonzero(flags[m] & SAMPLE_IRQ)))
        del vals
        m &= ok
        vals = sdur[m]
        vals.sort()
        cor_g.append(_grouped_nearest_rank(vals, np.array([0, len(vals)])))
        corr_calls.append(len(vals))
        del vals, m
    calls_a = np.array(calls, dtype=np.int64)

    def figures(per: list) -> tuple:
        if not per:
            return {k: np.zeros(0) for k in (*(f"p{q}" for q in QUANTILES), "max", "mean")}, np.zeros(0)
        return ({k: np.concatenate([f[k] for f, _ in per]) for k in per[0][0]},
                np.concatenate([s for _, s in per]))
    raw, raw_sum = figures(raw_g)
    cor, cor_sum = figures(cor_g)
    cols = {"op": kop, "calls": calls_a, "gap_calls": calls_a - np.array(corr_calls, dtype=np.int64),
            "raw": raw, "corr": cor, "share": raw_sum / total, "corr_share": cor_sum / corr_total,
            "irq_calls": np.array(irq_calls, dtype=np.int64)}
    return cols, kroot, kop


def _groups_of(root: np.ndarray, op: np.ndarray, irq: np.ndarray) -> tuple:
    """The distinct (root, op, irq) of the root calls, in that order (as
    np.unique of the rows gives them): (their roots, their operations, each
    call's group). One key per call (np.unique of rows sorts them as bytes,
    slower by far)."""
    span = int(op.max()) + 2 if len(op) else 1
    if len(root) and (root.min() < 0 or op.min() < -1 or int(root.max()) >= (1 << 62) // (2 * span)):
        keys, inv = np.unique(np.stack([root, op, irq], axis=1), axis=0, return_inverse=True)
        return keys[:, 0], keys[:, 1], inv.reshape(-1)
    key, inv = np.unique((root * span + op + 1) * 2 + irq, return_inverse=True)
    return key // (2 * span), (key // 2) % span - 1, inv.reshape(-1)


def _ranks(strings: list) -> np.ndarray:
    """Each string's rank in Python's order of them (equal strings: equal ranks)."""
    rank = {x: k for k, x in enumerate(sorted(set(strings)))}
    return np.array([rank[x] for x in strings], dtype=np.int64)


# ---- the slowest calls ---------------------------------------------------

class SlowCall(NamedTuple):  # a tuple: kept per root function, 100,000s of them
    sample: int        # row of p.samples
    root: str
    operation: str | None  # None: its root function is no dispatcher (no operation table row)
    start_ns: int      # calltime (the tracer's clock)
    pid: int
    cpu: int
    dur: int           # raw duration (ns)
    corr: float        # corrected duration (ns), as the latency data says; NaN for a gap call (left out)
    gap: bool
    tree: KeptTree | None  # its calls as the core kept them, None: tree too big to keep
    dominant: tuple    # names along the chain of children that took most of the time
    # what the trace recorded of the root call (None: nothing): its entry's
    # argument values (funcgraph-args, as many as recorded) and its return value
    call_args: tuple | None = None
    call_ret: int | None = None
    # the calls of its tree that returned an error code: the first
    # ERRORS_NAMED as (function, return value), in entry order, and how many
    errors: tuple = ()
    error_calls: int = 0
    # why the core kept it: "raw" (among the slowest of its root path and
    # operation by raw duration), "corrected" (by on-CPU task time, the
    # corrected figures' ranking), "both"
    kept_by: str = "raw"


ERRORS_NAMED = 3
KEPT_BY_NAMES = ("", "raw", "corrected", "both")  # by KeptTrees.by


def slowest_calls(p: Profile, top: int | None = None) -> tuple:
    """The kept slowest root calls, slowest first: SlowCalls[:top] (all when
    top is None). Each is made with its tree decoded (its dominant path,
    its recorded values): an output that prints a few asks for those."""
    if top is None or "slowest_calls" in p.views:
        calls = p.views.get("slowest_calls", lambda: _slowest_calls(p, None))
        return calls if top is None else calls[:top]
    return p.views.get(("slowest_calls", top), lambda: _slowest_calls(p, top))


def slowest_count(p: Profile) -> int:
    """How many slowest root calls were kept."""
    cols = slowest_columns(p)
    return 0 if cols is None else len(cols["sample"])


class Ranked(NamedTuple):
    rows: np.ndarray  # the kept calls (indices into p.slowest_trees) that stay
    by: np.ndarray  # per call of p.slowest_trees: KEPT_BY_RAW | KEPT_BY_CORRECTED, 0 when left out
    slower_left_out: int  # root calls slower by corrected duration than a group's kept ones, without a tree


def ranked_slowest(p: Profile) -> Ranked:
    """The slowest root calls by corrected duration, exactly: per (root
    path, operation), the KeptTrees.n calls of the core's on-CPU candidates
    (FTF_SLOWEST_CANDIDATES x n of them) with the longest corrected
    durations (a gap call's, unknown, last), the others' KEPT_BY_CORRECTED
    taken off and a call kept by neither left out. A corrected duration is
    never more than the on-CPU time the candidates were kept by, so the n
    slowest are among them unless the candidates' own slowest n reach below
    a call that was not kept: every root call's corrected duration is known
    here, and such calls are counted (slower_left_out; 0 on every curated
    trace). Without a calibration applied, the n of them with the most
    on-CPU time (the core's ranking); n unknown: the core's sets."""
    return p.views.get("ranked_slowest", lambda: _ranked_slowest(p))


def _ranked_slowest(p: Profile) -> Ranked:
    kt = p.slowest_trees
    by = np.asarray(kt.by, dtype=np.int64).copy()
    if not len(kt) or not kt.n or not len(p.samples):
        return Ranked(np.arange(len(kt)), by, 0)
    corr = np.asarray(p.corrected_or_raw.sample_dur, dtype=np.float64)
    width = len(p.operations) + 2  # a (root path, operation) group: node * width + op + 1

    def group(rows):  # the stored columns at these rows only: no int64 column of every root call
        return p.scol("node", rows).astype(np.int64) * width + p.scol("op", rows).astype(np.int64) + 1

    cand = np.flatnonzero(by & KEPT_BY_CORRECTED)
    s = kt.sample[cand]
    if p.calibration.applied:  # slowest first, unknown (a gap call's) last
        key = np.where(np.isnan(corr[s]), np.inf, -corr[s])
    else:  # no corrected duration: the core's on-CPU ranking, its n slowest
        key = -kt.on_cpu[cand].astype(np.float64)
    g = group(s)
    order = np.lexsort((s, key, g))
    g = g[order]
    first = np.r_[0, np.flatnonzero(np.diff(g)) + 1] if len(g) else np.zeros(0, np.int64)
    rank = np.arange(len(g)) - np.repeat(first, np.diff(np.r_[first, len(g)]))
    top = cand[order][rank < kt.n]
    by[cand] &= ~KEPT_BY_CORRECTED
    by[top] |= KEPT_BY_CORRECTED
    if not p.calibration.applied:
        return Ranked(np.flatnonzero(by != 0), by, 0)
    # the check: per group, no root call slower than the slowest n chosen
    # (fewer than n chosen: than none) without a tree; over the samples a
    # slice at a time (a trace has millions of root calls)
    chosen = np.sort(kt.sample[top])
    ug, gi = np.unique(group(chosen), return_inverse=True)
    gi = gi.reshape(-1)
    low = np.full(len(ug), np.inf)
    np.minimum.at(low, gi, np.where(np.isnan(corr[chosen]), np.inf, corr[chosen]))
    low[np.bincount(gi, minlength=len(ug)) < kt.n] = -np.inf
    left_out = 0
    step = 1 << 16
    for a in range(0, len(corr), step):
        rows = np.arange(a, min(a + step, len(corr)))
        c = corr[rows]
        gr = group(rows)
        at = np.minimum(np.searchsorted(ug, gr), max(len(ug) - 1, 0))
        bar = np.where(ug[at] == gr, low[at], -np.inf) if len(ug) else np.full(len(rows), -np.inf)
        slower = rows[~np.isnan(c) & (c > bar)]
        left_out += int((~np.isin(slower, chosen, assume_unique=True)).sum())
    return Ranked(np.flatnonzero(by != 0), by, left_out)


def slowest_columns(p: Profile) -> dict | None:
    """The kept slowest root calls' figures as columns, slowest first (then
    by sample row), None when none was kept: SlowCall's fields but those of
    its decoded tree (slowest_batches), plus `tree` (its index in
    p.slowest_trees), `kept` (its tree was kept) and `operation_of` (an
    index into `operations`, whose entries are SlowCall.operation's). A
    trace may keep a call per distinct root function: columns, not an
    object per call. The calls are ranked_slowest's."""
    return p.views.get("slowest_columns", lambda: _slowest_columns(p))


def _slowest_columns(p: Profile) -> dict | None:
    kt = p.slowest_trees
    ranked = ranked_slowest(p)
    if not len(ranked.rows):
        return None
    keep = ranked.rows
    order = keep[np.lexsort((kt.sample[keep], -p.scol("dur", kt.sample[keep])))]  # slowest first, then by row
    rows = kt.sample[order]
    flags = p.scol("flags", rows)
    names = list(map(p.funcs.__getitem__, sample_roots(p, rows).tolist()))
    for i in np.flatnonzero(flags & (SAMPLE_PARTIAL | SAMPLE_IRQ)).tolist():  # the marked ones only
        names[i] += (" (partial)" if flags[i] & SAMPLE_PARTIAL else "") + (" [irq]" if flags[i] & SAMPLE_IRQ else "")
    op = p.scol("op", rows)
    # an operation's label; NO_OPERATION for the other calls of a root in
    # the operation table; None for a root that is no dispatcher
    ops = [*p.operations, NO_OPERATION, None]
    op_of = np.where(op >= 0, op, len(ops) - 1)
    op_roots = {r.root for r in operation_table(p) or ()}
    if op_roots:
        in_table = np.fromiter(map(op_roots.__contains__, names), dtype=bool, count=len(names))
        op_of = np.where((op < 0) & in_table, len(ops) - 2, op_of)
    return {"tree": order, "kept": kt.kept[order], "sample": rows, "root": names,
            "operation_of": op_of.astype(np.int64), "operations": ops,
            **{k: np.ascontiguousarray(p.scol(c, rows)) for k, c in (
                ("start_ns", "calltime"), ("pid", "pid"), ("cpu", "cpu"), ("dur", "dur"))},
            "corr": np.asarray(p.corrected_or_raw.sample_dur, dtype=np.float64)[rows],
            "gap": (flags & SAMPLE_GAP) != 0, "kept_by": ranked.by[order]}


def _slowest_calls(p: Profile, top: int | None) -> tuple:
    cols = slowest_columns(p)
    if cols is None:
        return ()
    n = len(range(len(cols["sample"]))[:top])
    # each tree decoded for its dominant path, then let go; every other
    # figure taken from the columns
    paths: list = []
    values: list = []  # what the trace recorded of each root call (_call_values)
    for a, b, dec, first, kept in slowest_batches(p, 0, n):
        found = iter(dominant_paths(dec, first, kept) if dec is not None else ())
        recorded = iter(_call_values(p, dec, first, kept) if dec is not None else ())
        for has in cols["kept"][a:b].tolist():
            paths.append(tuple(p.funcs[f] for f in next(found)) if has else ())
            values.append(next(recorded) if has else {})
    kt, ops = p.slowest_trees, cols["operations"]
    return tuple(SlowCall(
        sample=i, root=r, operation=ops[o], start_ns=start, pid=pid, cpu=cpu, dur=dur, corr=c, gap=gap,
        tree=kt.tree(k), dominant=dom, kept_by=KEPT_BY_NAMES[by], **val)
        for i, r, o, start, pid, cpu, dur, c, gap, k, by, dom, val in zip(
            *(cols[k][:n].tolist() for k in ("sample",)), cols["root"][:n],
            *(cols[k][:n].tolist() for k in ("operation_of", "start_ns", "pid", "cpu", "dur", "corr", "gap", "tree",
                                             "kept_by")),
            paths, values))


def slowest_batches(p: Profile, lo: int = 0, hi: int | None = None):
    """The kept slowest calls lo..hi (slowest_columns' order) a batch at a
    time: (a, b, call_trees' columns of the kept trees of calls a..b (None
    when none is), each kept tree's first row in them, its rows). A batch
    holds up to BATCH_CALLS calls' records and one more tree, or one bigger
    tree alone."""
    cols = slowest_columns(p)
    if cols is None:
        return
    kt = p.slowest_trees
    hi = len(cols["tree"]) if hi is None else hi
    k = cols["tree"][lo:hi]
    if not len(k):
        return
    sizes = kt.sizes(k)
    big = np.flatnonzero(sizes > BATCH_CALLS)
    cuts = distinct(np.concatenate([np.flatnonzero(np.diff((np.cumsum(sizes) - sizes) // BATCH_CALLS)) + 1,
                                    big, big + 1]))
    cuts = cuts[(cuts > 0) & (cuts < len(k))].tolist()
    cal, irqs, offcpu_removed = _correction_of(p)
    for a, b in zip([0, *cuts], [*cuts, len(k)]):
        has = cols["kept"][lo + a:lo + b]
        ks = k[a:b][has]
        if not len(ks):
            yield lo + a, lo + b, None, np.zeros(0, np.int64), np.zeros(0, np.int64)
            continue
        yield (lo + a, lo + b, *call_trees(kept_call_columns(kt, ks), kt.sizes(ks), cal, irqs, offcpu_removed,
                                           cols["corr"][lo + a:lo + b][has]))


def _correction_of(p: Profile) -> tuple:
    """What call_trees takes of the correction: (calibration, irqs,
    off-CPU time removed)."""
    cal = p.calibration if p.corrected is not None else None
    irqs = p.corrected.irqs if p.corrected is not None else "exclude"
    return cal, irqs, p.corrected is None or p.corrected.offcpu is OffCpu.REMOVED


def _call_values(p: Profile, cols: dict, first: np.ndarray, kept: np.ndarray) -> list:
    """Per kept tree of a batch (call_trees' columns): its root call's
    argument values and return value, and its calls that returned an error
    code (SlowCall's fields). A few numpy calls per batch, not per tree: a
    trace may keep a tree per distinct root function."""
    n = len(kept)
    if not (p.trace.has_retval or p.call_args):
        return [{}] * n
    err = cols["has_ret"] & retval_is_error(cols["retval"])
    tree_of = np.repeat(np.arange(n), kept)
    nerr = np.bincount(tree_of[err], minlength=n).tolist()
    named: dict = {}
    for r in np.flatnonzero(err).tolist():  # the error calls only, in entry order
        t = named.setdefault(int(tree_of[r]), [])
        if len(t) < ERRORS_NAMED:
            t.append((p.funcs[int(cols["func"][r])], int(cols["retval"][r])))
    root = np.minimum(first, max(len(err) - 1, 0))
    has_args, has_ret = cols["has_args"][root].tolist(), cols["has_ret"][root].tolist()
    args, ret = cols["args"][root, :p.call_args].tolist(), cols["retval"][root].tolist()
    return [{} if not kept[j] else
            {"call_args": tuple(args[j]) if has_args[j] else None, "call_ret": ret[j] if has_ret[j] else None,
             "errors": tuple(named.get(j, ())), "error_calls": nerr[j]} for j in range(n)]


def call_columns(t: KeptTree) -> np.ndarray:
    """A kept tree's calls as int64 columns (CALL_COLUMNS, entry order): the
    core's 20-byte records with their extras put back in place."""
    return call_columns_of([t])


def _joined(parts: list) -> np.ndarray:
    """Structured arrays of one dtype end to end (np.concatenate compares
    their fields pair by pair: slower than the decoding for small trees)."""
    if len(parts) == 1:
        return parts[0]
    return np.frombuffer(b"".join([x.tobytes() for x in parts]), dtype=parts[0].dtype)


def call_columns_of(trees: list) -> np.ndarray:
    """call_columns of several kept trees, one after the other (each tree's
    parents moved to the rows it takes)."""
    return _call_columns(_joined([t.recs for t in trees]), np.array([len(t.recs) for t in trees], dtype=np.int64),
                         np.array([t.cpu for t in trees], dtype=np.int64),
                         # the bases as int64 bits (a damaged calltime may be over 2^63: wraps as the core's do)
                         np.array([t.base for t in trees], dtype=np.uint64).astype(np.int64),
                         _joined([t.extras for t in trees]), np.array([len(t.extras) for t in trees]))


def kept_call_columns(kt: KeptTrees, ks: np.ndarray) -> np.ndarray:
    """call_columns_of the kept trees ks of p.slowest_trees, gathered from
    its blocks."""
    nex = kt.ext_at[ks + 1] - kt.ext_at[ks]
    sizes = kt.sizes(ks)
    # np.take, not indexing: numpy's fancy indexing of a structured array
    # copies field by field, eight times slower (2.4 against 0.3 ms for
    # 90k records)
    return _call_columns(np.take(kt.recs, _ranges(kt.rec_at[ks], sizes)), sizes, kt.cpu[ks], kt.base[ks],
                         np.take(kt.extras, _ranges(kt.ext_at[ks], nex)), nex)


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The positions starts[k]..starts[k] + sizes[k] of every k, one range
    after the other."""
    first = np.cumsum(sizes) - sizes
    return np.repeat(starts - first, sizes) + np.arange(int(sizes.sum()), dtype=np.int64)


def _call_columns(r: np.ndarray, sizes: np.ndarray, cpus: np.ndarray, bases: np.ndarray, e: np.ndarray,
                  nex: np.ndarray) -> np.ndarray:
    """call_columns_of trees given as their records r and extras e, one tree
    after the other, each tree's records and extras (sizes, nex), CPU and
    base (int64 bits)."""
    first = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], out=first[1:])
    at = np.repeat(first, sizes)
    out = np.zeros((len(r), len(CALL_COLUMNS)), dtype=np.int64)
    out[:, _C["func"]] = r["func"]
    out[:, _C["parent"]] = np.where(r["parent"] == 0xFFFFFFFF, -1, r["parent"].astype(np.int64) + at)
    out[:, _C["flags"]] = r["desc_flags"] >> _FLAGS_SHIFT
    out[:, _C["cpu"]] = np.repeat(cpus, sizes)
    out[:, _C["calltime"]] = np.repeat(bases, sizes) + r["start"].astype(np.int64)
    out[:, _C["dur"]] = r["dur"]
    out[:, _C["desc"]] = r["desc_flags"] & _DESC_ESC
    del at
    if not len(e):
        return out
    rec = e["rec"].astype(np.int64) + np.repeat(first, nex)
    for fid, name in enumerate(CALL_EXTRAS):
        sel = e["field"] == fid
        if sel.any():
            v = e["value"][sel]
            out[rec[sel], _C["calltime" if name == "start" else name]] = \
                v.astype(np.uint32).astype(np.int32) if name == "cpu" else v.astype(np.int64)
    return out


def slow_call_tree(p: Profile, s: SlowCall) -> dict | None:
    """The columns of slowest call s's tree (call_tree), None when it was too
    big to keep: decoded from the core's records each time an output asks,
    never kept (a tree's columns take 4 to 6 times its records' bytes)."""
    return next(slow_call_trees(p, [s]))[1]


# calls decoded at once by slow_call_trees: a trace may keep a tree per
# distinct root function, and decoding them one by one cost more than the
# whole report; this many calls' columns stay small beside the report's peak
BATCH_CALLS = 1 << 13


def slow_call_trees(p: Profile, calls: list):
    """(s, slow_call_tree(p, s)) for each slowest call s of `calls`, in
    order, decoded a batch of trees at a time (up to BATCH_CALLS calls, or
    one bigger tree)."""
    for batch, cols, first, kept in slow_call_batches(p, calls):
        rows = zip(first.tolist(), kept.tolist())
        for s in batch:
            yield (s, None) if s.tree is None else (s, tree_slice(cols, *next(rows)))


def slow_call_batches(p: Profile, calls: list):
    """The slowest calls `calls` in batches, in order: (batch, call_trees'
    columns of the batch's kept trees (None when none is kept), each kept
    tree's first row in them, its rows)."""
    cal, irqs, offcpu_removed = _correction_of(p)

    def decoded(batch: list):
        trees = [s.tree for s in batch if s.tree is not None]
        if not trees:
            return batch, None, np.zeros(0, np.int64), np.zeros(0, np.int64)
        return (batch, *call_trees(call_columns_of(trees), np.array([len(t.recs) for t in trees]),
                                   cal, irqs, offcpu_removed,
                                   np.array([s.corr for s in batch if s.tree is not None])))

    batch: list = []
    size = 0
    for s in calls:
        n = len(s.tree.recs) if s.tree is not None else 0
        if batch and size + n > BATCH_CALLS:
            yield decoded(batch)
            batch, size = [], 0
        batch.append(s)
        size += n
    if batch:
        yield decoded(batch)


def call_tree(tree: np.ndarray, cal, irqs: str, offcpu_removed: bool, root_corr: float) -> dict:
    """Columns of one kept call tree, completed calls only (a call whose
    exit never came is left out, its children hung under its caller):
    func, parent (row, -1 root), incl, excl = incl - children's incl
    (exact), corr_incl and corr_excl (the per-call model of corrections.py;
    the root's corr_incl is the root call's corrected duration; NaN for
    every call of a gap root call, which the correction leaves out), irq
    (ns in interrupt subtrees), offcpu, flags, calltime, cpu."""
    return call_trees(tree, np.array([len(tree)]), cal, irqs, offcpu_removed, np.array([root_corr]))[0]


def call_trees(tree: np.ndarray, sizes: np.ndarray, cal, irqs: str, offcpu_removed: bool,
               root_corr: np.ndarray) -> tuple:
    """call_tree of several trees at once, their calls one after the other
    (call_columns_of; sizes: each tree's calls, root_corr: each root call's
    corrected duration): (the columns of all their completed calls, each
    tree's first row in them, each tree's rows). Every figure is its own
    call's or its tree's: the same numbers as one tree at a time."""
    tree_of = np.repeat(np.arange(len(sizes)), sizes)
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
    tree_of = tree_of[keep]
    kept = np.bincount(tree_of, minlength=len(sizes))
    first = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(kept[:-1], out=first[1:])
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
    sched = np.bincount(tree_of, weights=t[:, _C["sched"]] != 0, minlength=len(sizes)) > 0 \
        if offcpu_removed and n else np.zeros(len(sizes), bool)
    if sched.any():  # only in the trees with switch work
        in_sw = sched[tree_of]
        sw_off, sw_desc, inside_sw = _switch_work_per_call(t, par, incl, off, desc, o_in, o_out)
        off, desc, inside_sw = np.where(in_sw, sw_off, off), np.where(in_sw, sw_desc, desc), inside_sw & in_sw
    if irqs == "exclude":
        task = incl - off - t[:, _C["irq"]] - o_in - desc * (o_in + o_out) - t[:, _C["irq_roots"]] * o_out
    else:
        task = incl - off - o_in - desc * (o_in + o_out)
    ci = np.maximum(np.where(is_irq, incl - off - o_in - desc * (o_in + o_out), task), 0.0)
    ci[inside_sw] = 0.0  # the scheduler's work, taken out with its switch frame's
    roots = kept > 0
    ci[first[roots]] = root_corr[roots]
    # a gap root call: none of its calls has a corrected figure
    ci[np.isnan(root_corr)[tree_of]] = np.nan
    # a child counts in its caller's corrected time unless it is an irq
    # subtree taken out of it (irqs="exclude")
    counted = has & ~(is_irq & ~is_irq[np.maximum(par, 0)] if irqs == "exclude" else np.zeros(n, bool))
    ckids = np.bincount(par[counted], weights=ci[counted], minlength=n) if n else ci
    cx = ci - ckids
    return ({"func": t[:, _C["func"]], "parent": par, "incl": incl, "excl": excl, "corr_incl": ci,
             "corr_excl": cx, "irq": t[:, _C["irq"]], "offcpu": t[:, _C["offcpu"]],
             "flags": t[:, _C["flags"]], "calltime": t[:, _C["calltime"]], "cpu": t[:, _C["cpu"]],
             "gap": (t[:, _C["flags"]] & CALL_GAP) != 0, "is_irq": is_irq,
             # what the entry and exit carried (funcgraph-args, return values), 0 where absent
             "retval": t[:, _C["retval"]], "has_ret": (t[:, _C["flags"]] & CALL_RET) != 0,
             "args": t[:, _C[CALL_ARGS[0]]:_C[CALL_ARGS[-1]] + 1],
             "has_args": (t[:, _C["flags"]] & CALL_WITH_ARGS) != 0}, first, kept)


def tree_slice(calls: dict, first: int, n: int) -> dict:
    """One tree's columns out of call_trees' (its parents as its own rows)."""
    out = {k: v[first:first + n] for k, v in calls.items()}
    par = out["parent"]
    out["parent"] = np.where(par >= 0, par - first, -1)
    return out


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
    return dominant_paths(calls, np.zeros(1, np.int64), np.array([len(calls["parent"])]))[0]


def dominant_paths(calls: dict, first: np.ndarray, kept: np.ndarray) -> list:
    """dominant_path of each tree of call_trees' columns (first: each tree's
    first row, kept: its rows)."""
    tree, row = dominant_steps(calls, first, kept)
    func = calls["func"][row].tolist() if len(row) else []
    at = np.searchsorted(tree, np.arange(len(kept) + 1)).tolist()
    return [func[a:b] for a, b in zip(at[:-1], at[1:])]


def dominant_steps(calls: dict, first: np.ndarray, kept: np.ndarray) -> tuple:
    """The rows of every tree's dominant path (dominant_path) at once, tree
    after tree, each from its root down: (their trees, the rows). A step
    of all the paths at a time: a trace may keep a tree per distinct root
    function."""
    par, incl = calls["parent"], calls["incl"]
    trees = np.flatnonzero(kept > 0)
    if not len(par) or not len(trees):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    child = _biggest_child(par, incl)
    # incl[c] * 2 >= incl[r] as incl[c] >= incl[r] - incl[c]: no overflow for
    # durations in 0..2^63
    fits = incl.min() >= 0
    steps_tree, steps_row = [trees], [first[trees]]
    cur_tree, cur = trees, first[trees]
    while len(cur):
        c = child[cur]
        ok = (c >= 0) & (incl[cur] > 0)
        c0 = np.maximum(c, 0)
        if fits:
            ok &= incl[c0] >= incl[cur] - incl[c0]
        else:  # a damaged duration: Python's numbers
            ok &= np.array([2 * int(a) >= int(b) for a, b in zip(incl[c0].tolist(), incl[cur].tolist())], bool)
        cur_tree, cur = cur_tree[ok], c[ok]
        steps_tree.append(cur_tree)
        steps_row.append(cur)
    tree, row = np.concatenate(steps_tree), np.concatenate(steps_row)
    order = np.argsort(tree, kind="stable")  # steps were appended level by level
    return tree[order], row[order]


def _biggest_child(par: np.ndarray, incl: np.ndarray) -> np.ndarray:
    """Each call's child with the most inclusive time, the first (lowest
    row) of equals; -1 for a call without children. Two passes of minima
    per parent over -incl (the order a sort by (parent, -incl) gives, the
    same wrap of -incl included), not that sort: a batch's calls sorted
    took three quarters of dominant_steps."""
    n = len(par)
    rows = np.flatnonzero(par >= 0)
    pr = par[rows]
    neg = -incl[rows]
    best = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(best, pr, neg)
    top = neg == best[pr]
    child = np.full(n, n, dtype=np.int64)
    np.minimum.at(child, pr[top], rows[top])
    child[child == n] = -1
    return child


# ---- the call paths of each operation ------------------------------------

COMPOUND_FUNC = "nfsd4_proc_compound"


@dataclass(frozen=True, eq=False, repr=False)
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


def operation_nodes(p: Profile) -> dict:
    """{op id: OperationNodes} for the operations of operation_table(p);
    {} when it has none."""
    return p.views.get("operation_nodes", lambda: _operation_nodes(p))


OPS_A_PASS = 64  # operations a pass over the levels carries, a bit each of a uint64


def _operation_nodes(p: Profile) -> dict:
    table = operation_table(p)
    if not table or not p.nrows:
        return {}
    parent = np.asarray(p.col("parent"), dtype=np.int64)
    func = np.asarray(p.col("func"), dtype=np.int64)
    index = {name: i for i, name in enumerate(p.funcs)}
    dispatchers = np.array([index[r.root] for r in table if r.root in index], dtype=np.int64)
    # The Profile's shape views (the core's depth column, one step per
    # level: each row once), let go again after if the Profile had let go of
    # them (the correction's memory): not every row's root and depth walked
    # up a level at a time (rows x depth; 5% of the JSON's CPU on 178k paths)
    views = ("level_order", "levels", "tree_tops")
    cached = [v for v in views if v in p.__dict__]
    order, level_at = p.level_order  # the rows level by level, shallowest first, for the passes in C
    parent32 = np.ascontiguousarray(p.nodes.stored("parent"), dtype=np.int32)
    under_dispatcher = np.isin(func[p.tree_tops], dispatchers)
    p.forget(*(v for v in views if v not in cached))
    parent_func = np.where(parent >= 0, func[np.maximum(parent, 0)], -1)
    compound = index.get(COMPOUND_FUNC, -2)
    ops = sorted({r.op for r in table if r.op >= 0})
    out = {}
    # every operation's paths in one top-down and one bottom-up pass over the
    # levels, an operation a bit (64 at a time): not two passes per operation
    # (9 operations on the long bench trace: 0.03 s of the JSON's CPU)
    for g in range(0, len(ops), OPS_A_PASS):
        group = ops[g:g + OPS_A_PASS]
        top = np.zeros(p.nrows, dtype=np.uint64)
        shared = {}
        for b, o in enumerate(group):
            names, is_compound = naming_functions(p.op_how[o])
            ids = [index[n] for n in names if n in index]
            mine = under_dispatcher & np.isin(func, ids)
            if is_compound:
                mine &= parent_func == compound
            top |= mine.astype(np.uint64) << np.uint64(b)
            shared[o] = is_compound
        # a top or below one; a top with no top above it; a top, below one
        # or above one: carried down the levels and back up in C, a row at a
        # time (numpy's steps per level gathered and scattered every row
        # several times: 1.4 of this function's 4.9 ms on 113k paths)
        inside = np.zeros(p.nrows, dtype=np.uint64)
        outer = np.zeros(p.nrows, dtype=np.uint64)
        holds = np.zeros(p.nrows, dtype=np.uint64)
        _model.bits_down_up(order, level_at, parent32, top, inside, outer, holds)
        del inside
        calls, incl = p.col("calls"), p.col("incl")
        incl_corr = np.asarray(p.corrected_or_raw.incl, dtype=np.float64)
        for b, o in enumerate(group):
            bit = np.uint64(1) << np.uint64(b)
            # listed from a boolean mask: numpy's nonzero of a uint64 array
            # is four times slower than of a boolean one
            tops = np.flatnonzero((outer & bit) != 0)
            out[o] = OperationNodes(
                op=o, tops=tops, rows=np.flatnonzero((holds & bit) != 0),
                calls=int(calls[tops].sum()), incl=int(incl[tops].sum()),
                incl_corr=float(incl_corr[tops].sum()), shared=shared[o])
    return out
