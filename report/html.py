"""HTML report: one self-contained file (CSS, JS and data inline, no network).

The page is rendered with Jinja2 from `templates/report.html`, which
`{% include %}`s the CSS and JS kept as real files beside it. Python prepares
compact, columnar data (`report_data`) and the page's own JS draws the flame
graph on a canvas, the tables, the histograms and the latency plot.

Size: a trace with 124k call paths gives < 1 MB because
* the flame graph ships at most DEFAULT_MAX_FRAMES frames: paths narrower
  than 0.01% of the graph are merged per parent into "[N small frames]"
  (report/flametree.py);
* per-function histograms are coarsened to 4 buckets per power of two;
* root calls beyond MAX_SAMPLES are thinned per time bin, keeping the
  slowest and fastest of each bin and the slowest overall (the page says so).
The function table, callers/callees and every figure shown are computed from
the full Profile, not from the merged flame tree.
"""
from __future__ import annotations

import json
import os
from itertools import repeat

import numpy as np

from ftflame import __version__
from ftflame.correct import corrections, fit, uncertainty
from ftflame.correct.calibration import provenance
from ftflame.correct.corrections import STAT_NAMES, corrected_stats
from ftflame.correct.operations import (
    NO_OPERATION,
    SlowCall,
    operation_nodes,
    operation_table,
    slow_call_tree,
    slowest_columns,
)
from ftflame.model import sandwich
from ftflame.model.profile import HIST_SUB, NODE_PARTIAL, SAMPLE_GAP, SAMPLE_IRQ, SAMPLE_PARTIAL, Profile, distinct, hist_lower

from . import callsjson, flametree
from .common import report_notes
from .options import DEFAULT, RenderOptions

MAX_SAMPLES = 20000
HIST_PER_OCTAVE = 4  # coarse buckets per power of two in the shipped histograms


def _ints(a) -> list:
    # through map, not a Python loop: a column may have a row per root call
    return list(map(int, map(round, a.tolist() if hasattr(a, "tolist") else a)))


def _ints_or_none(a) -> list:
    """_ints, None (null) for NaN: a figure the trace does not give (a gap
    root call's corrected duration)."""
    return [None if x != x else int(round(x)) for x in a.tolist()]


# ---- histograms -------------------------------------------------------------
def coarse_bucket(fine: np.ndarray) -> np.ndarray:
    """Fine bucket (HIST_SUB per octave) -> coarse bucket (HIST_PER_OCTAVE per
    octave). Values below HIST_SUB ns fall in HIST_SUB/HIST_PER_OCTAVE-ns steps."""
    step = HIST_SUB // HIST_PER_OCTAVE
    f = np.asarray(fine, dtype=np.int64)
    return np.where(f < HIST_SUB, f // step, HIST_PER_OCTAVE + (f - HIST_SUB) // step)


def coarse_edges(upto: int) -> list:
    """Lower bound in ns of coarse buckets 0..upto (upto+1 = the last upper bound)."""
    step = HIST_SUB // HIST_PER_OCTAVE
    c = np.arange(upto + 2, dtype=np.int64)
    fine = np.where(c < HIST_PER_OCTAVE, c * step, HIST_SUB + (c - HIST_PER_OCTAVE) * step)
    return _ints(hist_lower(fine))


def function_histograms(ft) -> tuple:
    """Per function: [first coarse bucket, count, count, ...] (dense), and the
    largest coarse bucket used. Every function's at once: a trace may have
    a function per distinct root call, 100,000s."""
    h = ft.hist_incl
    n = len(ft)
    off = np.asarray(h.offsets[:n + 1], dtype=np.int64)
    sizes = np.diff(off)
    full = np.flatnonzero(sizes > 0)
    if not len(full):
        return [[0] for _ in range(n)], 0
    cb = coarse_bucket(h.buckets[off[0]:off[-1]])
    row = np.repeat(np.arange(n), sizes)
    at = off[full] - off[0]
    lo, hi = np.minimum.reduceat(cb, at), np.maximum.reduceat(cb, at)
    first = np.zeros(n, dtype=np.int64)  # each function's coarse bucket lo in `dense`
    width = hi - lo + 1
    first[full] = np.cumsum(width) - width
    low = np.zeros(n, dtype=np.int64)
    low[full] = lo
    dense = np.zeros(int(width.sum()), dtype=np.int64)
    np.add.at(dense, first[row] + cb - low[row], h.counts[off[0]:off[-1]].astype(np.int64))
    d = dense.tolist()
    out = [[0] for _ in range(n)]
    for i, b, s, w in zip(full.tolist(), lo.tolist(), first[full].tolist(), width.tolist()):
        out[i] = [b] + d[s:s + w]
    return out, max(int(hi.max()), 0)


# ---- callers and callees ----------------------------------------------------
def call_edges(p: Profile) -> list:
    """[caller func (-1: a root), callee func, calls, incl ns(, corrected incl
    ns, the clean calls it covers, when calibrated)] summed over every call
    path, from the full tree (ftflame.model.sandwich.call_edges)."""
    if p.nrows == 0:
        return []
    cr, ce, calls, incl, inclc, callsc = sandwich.call_edges(p)
    cols = [cr.tolist(), ce.tolist(), _ints(calls), _ints(incl)]
    if p.calibration.applied:
        cols.append(_ints(inclc))
        cols.append(_ints(callsc))
    return [list(r) for r in zip(*cols)]


# ---- sandwich: a function's callers and callees, merged ---------------------------
# Functions with a sandwich in the page: the busiest by self time and by
# inclusive time, in turn; merged calls under 1% of the function's time are
# not drawn (their time stays in their caller's box), and each side keeps at
# most SANDWICH_ROWS rows, the page SANDWICH_BUDGET in all.
SANDWICH_FUNCTIONS = 60
SANDWICH_MIN_FRACTION = 1 / 100
SANDWICH_ROWS = 80
SANDWICH_BUDGET = 1000
SANDWICH_NEAR_ROOT = 0.5  # share of the call paths under a function's calls


def sandwich_data(p: Profile) -> list:
    """[{func, callers, callees}] (ftflame/model/sandwich.py): each side's
    rows parents first, row 0 the function itself, as columns up (distance
    back to the caller row; 0 for row 0), func, incl, calls (and inclc),
    with `undrawn`, the merged rows left out."""
    from ftflame.model.sandwich import Sandwiches

    ft = p.functions
    if p.nrows == 0 or not len(ft):
        return []
    # a root function's sandwich is the flame graph itself: none
    roots = set(p.col("func")[p.col("parent") < 0].tolist())
    has = np.array([i for i in np.flatnonzero(ft.calls > 0).tolist() if int(ft.func_ids[i]) not in roots], dtype=np.int64)
    by_self = has[np.argsort(-ft.excl[has], kind="stable")].tolist()
    by_incl = has[np.argsort(-ft.incl[has], kind="stable")].tolist()
    chosen, seen = [], set()
    for a, b in zip(by_self, by_incl):
        for i in (a, b):
            if i not in seen and len(chosen) < SANDWICH_FUNCTIONS:
                seen.add(i)
                chosen.append(int(ft.func_ids[i]))
    sw = Sandwiches(p)
    out, budget = [], SANDWICH_BUDGET
    for f in chosen:
        if budget <= 0:
            break
        tops = sw.outermost(f)
        if sw.subtree_rows(tops) > SANDWICH_NEAR_ROOT * p.nrows:
            continue  # near the root: its callees are most of the flame graph, drawn above
        both = {"callers": sw.callers(f, tops), "callees": sw.callees(f, tops)}
        entry = {"func": f}
        for side in ("callers", "callees"):
            t = both[side]
            incl = t["incl"]
            ok = np.flatnonzero(incl >= incl[0] * SANDWICH_MIN_FRACTION)
            # the largest first (a row's caller is as large: kept before it)
            keep = np.sort(ok[np.lexsort((ok, -incl[ok]))][:SANDWICH_ROWS])
            row = np.full(len(incl), -1, dtype=np.int64)
            row[keep] = np.arange(len(keep))
            par = t["parent"][keep]
            newpar = np.where(par >= 0, row[np.maximum(par, 0)], -1)
            cols = {"up": (np.arange(len(keep)) - np.where(newpar >= 0, newpar, 0)).tolist(),
                    "func": t["func"][keep].tolist(),
                    "incl": _ints(incl[keep]), "calls": _ints(t["calls"][keep]),
                    "undrawn": int(len(incl) - len(keep))}
            if "inclc" in t:
                cols["inclc"] = _ints(t["inclc"][keep])
            entry[side] = cols
            budget -= len(keep)
        out.append(entry)
    return out


# ---- root calls over time -----------------------------------------------------
def thin_samples(start: np.ndarray, dur: np.ndarray, group: np.ndarray, limit: int) -> np.ndarray:
    """Indices of root calls to plot: all when there are at most `limit`;
    else per group and time bin the slowest and fastest call, plus the
    slowest calls overall, so outliers and stalls always survive."""
    n = len(start)
    if n <= limit:
        return np.arange(n)
    keep = np.zeros(n, dtype=bool)
    keep[np.argsort(-dur, kind="stable")[: limit // 10]] = True
    groups, g = np.unique(group, return_inverse=True)
    bins = max(limit * 4 // 10 // max(len(groups), 1), 1)
    # each group's time bins at once (a group per root function: 100,000s)
    lo = np.full(len(groups), start.max(), dtype=start.dtype)
    hi = np.full(len(groups), start.min(), dtype=start.dtype)
    np.minimum.at(lo, g, start)
    np.maximum.at(hi, g, start)
    t0 = lo[g]
    span = np.maximum(hi - lo, 1)[g]
    b = ((start - t0) * bins // (span + 1)).astype(np.int64)
    rows = np.arange(n)
    # per group and bin the slowest call and the fastest, the first in row order on a tie
    for key in (-dur, dur):
        pick = np.lexsort((rows, key, b, g))
        first = np.ones(n, dtype=bool)
        first[1:] = (b[pick][1:] != b[pick][:-1]) | (g[pick][1:] != g[pick][:-1])
        keep[pick[first]] = True
    return np.flatnonzero(keep)


def sample_groups(p: Profile) -> tuple:
    """The latency plot's groups: (labels, each root call's group). A root
    function is one group, a dispatcher's operations each one of their own.
    Groups found as columns, in the order of their first root call (a
    trace may have a root function per root call, 100,000s); labels made
    per group."""
    n = len(p.samples)
    if n == 0:
        return [], np.zeros(n, dtype=np.int64)
    lean = _sample_groups_cached(p)
    if lean is not None:
        return lean[0], lean[1]
    func = p.col("func")[p.scol("node")].astype(np.int64)
    flags = p.scol("flags")
    partial, irq = (flags & SAMPLE_PARTIAL) != 0, (flags & SAMPLE_IRQ) != 0
    op_roots = {r.root for r in operation_table(p) or ()}
    op = np.full(n, -2, dtype=np.int64)  # -2: no dispatcher, its operation not in the label
    if op_roots:
        disp = np.array([name in op_roots for name in p.funcs], dtype=bool)[func]
        op = np.where(disp, p.scol("op").astype(np.int64), -2)
    keys = np.lexsort((op, irq, partial, func))
    k = np.column_stack((func, partial, irq, op))[keys]
    new = np.ones(n, dtype=bool)
    new[1:] = (k[1:] != k[:-1]).any(axis=1)
    key_of = np.empty(n, dtype=np.int64)
    key_of[keys] = np.cumsum(new) - 1
    firsts = np.full(int(new.sum()), n, dtype=np.int64)
    np.minimum.at(firsts, key_of, np.arange(n))
    by_first = np.argsort(firsts, kind="stable")
    rank = np.empty(len(by_first), dtype=np.int64)
    rank[by_first] = np.arange(len(by_first))
    group = rank[key_of]
    at = firsts[by_first]  # a root call of each group, groups in order
    names = list(map(p.funcs.__getitem__, func[at].tolist()))
    for i in np.flatnonzero(partial[at] | irq[at] | (op[at] != -2)).tolist():  # the marked ones only
        r = int(at[i])
        names[i] += (" (partial)" if partial[r] else "") + (" [irq]" if irq[r] else "")
        if op[r] != -2:
            names[i] += ": " + (p.operations[op[r]] if op[r] >= 0 else NO_OPERATION)
    if len(set(names)) < len(names):  # two groups with one label are one group
        labels: dict = {}
        merged = np.array([labels.setdefault(x, len(labels)) for x in names], dtype=np.int64)
        names, group = list(labels), merged[group]
    return names, group


SAMPLE_CHUNK_ROWS = 1 << 16


def _sample_groups_lean(p: Profile):
    """sample_groups from a 4-byte code per root call (call path, partial,
    interrupt, the operation a dispatcher's label names), the groups of
    the codes present: (labels, each root call's group, the distinct
    (group, call path) pairs), or None when the codes are too many."""
    rc = p.samples
    n = len(rc)
    node, flags, op = rc.stored("node"), rc.stored("flags"), rc.stored("op")
    if node is None or flags is None or op is None or n == 0:
        return None
    func = p.col("func")
    op_roots = {r.root for r in operation_table(p) or ()}
    disp_func = np.array([name in op_roots for name in p.funcs], dtype=bool) if op_roots else None
    span = max(int(op.max()), -1) + 3  # op + 2 in 1..span-1; 0: no dispatcher
    ncode = p.nrows * 4 * span
    if int(op.min()) < -1 or ncode > max(n // 4, 1 << 20) or ncode >= 1 << 31:
        return None
    disp_node = disp_func[func] if disp_func is not None else np.zeros(p.nrows, dtype=bool)
    code = np.empty(n, dtype=np.int32)
    firsts = np.full(ncode, n, dtype=np.int64)
    for lo in range(0, n, SAMPLE_CHUNK_ROWS):
        hi = min(lo + SAMPLE_CHUNK_ROWS, n)
        nd, fl = node[lo:hi].astype(np.int32), flags[lo:hi]
        c = (nd * 2 + ((fl & SAMPLE_PARTIAL) != 0)) * 2 + ((fl & SAMPLE_IRQ) != 0)
        c = c * span + np.where(disp_node[nd], op[lo:hi].astype(np.int32) + 2, 0)
        code[lo:hi] = c
        u, i = np.unique(c, return_index=True)
        unset = firsts[u] == n
        firsts[u[unset]] = lo + i[unset]
    present = np.flatnonzero(firsts < n)
    c_op = present % span
    c_irq = (present // span) % 2
    c_partial = (present // (2 * span)) % 2
    c_node = present // (4 * span)
    c_func = func[c_node].astype(np.int64)
    c_opx = np.where(c_op == 0, -2, c_op - 2)
    # the groups: distinct (func, partial, irq, op), in the order of their first root call
    keys, key_of = np.unique(np.stack([c_func, c_partial, c_irq, c_opx], axis=1), axis=0, return_inverse=True)
    key_of = key_of.reshape(-1)
    kfirst = np.full(len(keys), n, dtype=np.int64)
    np.minimum.at(kfirst, key_of, firsts[present])
    by_first = np.argsort(kfirst, kind="stable")
    rank = np.empty(len(by_first), dtype=np.int64)
    rank[by_first] = np.arange(len(by_first))
    gk = keys[by_first]  # each group's key, groups in order
    names = list(map(p.funcs.__getitem__, gk[:, 0].tolist()))
    for i in np.flatnonzero((gk[:, 1] != 0) | (gk[:, 2] != 0) | (gk[:, 3] != -2)).tolist():  # the marked ones only
        fn, pa, iq, o = gk[i].tolist()
        names[i] += (" (partial)" if pa else "") + (" [irq]" if iq else "")
        if o != -2:
            names[i] += ": " + (p.operations[o] if o >= 0 else NO_OPERATION)
    g_of_code = rank[key_of]
    if len(set(names)) < len(names):  # two groups with one label are one group
        labels: dict = {}
        merged = np.array([labels.setdefault(x, len(labels)) for x in names], dtype=np.int64)
        names, g_of_code = list(labels), merged[g_of_code]
    table = np.zeros(ncode, dtype=np.int32)
    table[present] = g_of_code
    group = table[code]
    del code, table
    return names, group, (g_of_code, c_node)


def _root_figures_of_pairs(p: Profile, pairs: tuple, groups: int) -> list:
    """root_figures_of from the distinct (group, call path) pairs of the
    root calls (no column per root call): the same rows."""
    g_of_code, c_node = pairs
    # the distinct pairs in (group, path) order, as one integer each (distinct(),
    # not np.unique(axis=0): that imports numpy.ma)
    span = int(c_node.max()) + 1 if len(c_node) else 1
    key = distinct(g_of_code.astype(np.int64) * span + c_node.astype(np.int64))
    uniq = np.stack([key // span, key % span], axis=1)
    one = np.bincount(uniq[:, 0], minlength=groups) == 1
    sel = uniq[one[uniq[:, 0]]]
    return _root_figures_rows(p, sel[:, 0], sel[:, 1], groups)


def _thin_lean(p: Profile, group: np.ndarray, ngroups: int, limit: int) -> np.ndarray:
    """thin_samples of the stored columns, a chunk of root calls at a time:
    the slowest limit // 10 (ties: the first in row order), and per group
    and time bin the slowest and the fastest call (ties: the first): the
    same rows, without a sort of all of them."""
    rc = p.samples
    start, dur = rc.values("calltime"), rc.values("dur")
    n = len(start)
    if n <= limit:
        return np.arange(n)
    keep = np.zeros(n, dtype=bool)
    k = limit // 10
    if k:
        thr = np.partition(dur, n - k)[n - k]  # the k-th largest
        above = dur > thr
        keep |= above
        ties = np.flatnonzero(dur == thr)[: k - int(np.count_nonzero(above))]
        keep[ties] = True
        del above, ties
    bins = max(limit * 4 // 10 // max(ngroups, 1), 1)
    lo = np.full(ngroups, np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(ngroups, np.iinfo(np.int64).min, dtype=np.int64)
    for a in range(0, n, SAMPLE_CHUNK_ROWS):
        b = min(a + SAMPLE_CHUNK_ROWS, n)
        g = group[a:b]
        np.minimum.at(lo, g, start[a:b])
        np.maximum.at(hi, g, start[a:b])
    span = np.maximum(hi - lo, 1)
    nid = ngroups * bins
    best = {}
    for sign in (1, -1):  # the slowest (largest dur) and the fastest
        val = np.full(nid, np.iinfo(np.int64).min, dtype=np.int64)
        row = np.full(nid, -1, dtype=np.int64)
        for a in range(0, n, SAMPLE_CHUNK_ROWS):
            b = min(a + SAMPLE_CHUNK_ROWS, n)
            g = group[a:b].astype(np.int64)
            bin_ = (start[a:b] - lo[g]) * bins // (span[g] + 1)
            cid = g * bins + bin_
            v = dur[a:b].astype(np.int64) * sign
            cmax = np.full(nid, np.iinfo(np.int64).min, dtype=np.int64)
            np.maximum.at(cmax, cid, v)
            cand = np.flatnonzero(v == cmax[cid])
            u, i = np.unique(cid[cand], return_index=True)
            r = a + cand[i]
            better = cmax[u] > val[u]  # an equal value: the earlier row stays
            val[u[better]] = cmax[u[better]]
            row[u[better]] = r[better]
        best[sign] = row[row >= 0]
    keep[best[1]] = True
    keep[best[-1]] = True
    return np.flatnonzero(keep)


def _sample_groups_cached(p: Profile):
    """_sample_groups_lean, once per Profile (the slowest calls' order and
    the latency plot both ask)."""
    return p.views.get("sample_groups_lean", lambda: _sample_groups_lean(p))


def samples_data(p: Profile, trees: dict | None = None) -> dict:
    """Root calls over time; `trees` (sample row -> index into slowest[]) the
    calls whose tree the page carries: the plot marks those points
    clickable, and no other."""
    s = p.samples
    n = len(s)
    if n == 0:
        return {"total": 0, "shown": 0, "t0": 0, "roots": [], "root_stats": [], "root": [], "t": [], "dur": [], "durc": [],
                "flags": [], "pid": [], "cpu": [], "trees": []}
    ops = operation_table(p)
    lean = _sample_groups_cached(p)
    if lean is not None:  # the stored columns, no int64 column per root call
        names, group, pairs = lean
        flags, start, dur = s.values("flags"), s.values("calltime"), s.values("dur")
        idx = _thin_lean(p, group, len(names), MAX_SAMPLES)
    else:
        names, group = sample_groups(p)
        flags, start, dur = p.scol("flags"), p.scol("calltime"), p.scol("dur")
        idx = thin_samples(start, dur, group, MAX_SAMPLES)
    durc = np.asarray(p.corrected_or_raw.sample_dur, dtype=np.float64)
    if trees:  # a point that opens a tree is always drawn
        idx = distinct(np.concatenate([idx, np.fromiter(trees, dtype=np.int64)]))
    idx = idx[np.argsort(start[idx], kind="stable")]
    t0 = int(p.counters.get("first_ts", 0)) or int(start.min())
    counts = np.bincount(group, minlength=len(names))
    by_op = {f"{r.root}: {r.operation}": r for r in ops or ()}
    figures = (_root_figures_of_pairs(p, pairs, len(names)) if lean is not None
               else root_figures_of(p, p.scol("node"), group, len(names)))
    root_stats = [operation_figures(p, by_op[name]) if name in by_op else figures[k] for k, name in enumerate(names)]
    return {
        "root_stats": root_stats,
        "total": n, "shown": len(idx), "roots": names, "root_calls": counts.tolist(),
        # t: after the first event; t0 + t: the trace clock, as every output prints a start
        "t0": t0, "root": group[idx].tolist(), "t": _ints(start[idx] - t0), "dur": _ints(dur[idx]),
        "durc": _ints_or_none(durc[idx]) if p.calibration.applied else None,
        "flags": flags[idx].tolist(), "pid": p.scol("pid", idx).tolist(),
        "cpu": p.scol("cpu", idx).tolist(), "sample": idx.tolist(),
        # [point, slowest[] index]: the points a click opens a tree for
        "trees": [[k, trees[i]] for k, i in enumerate(idx.tolist()) if i in (trees or {})],
    }


def operation_figures(p: Profile, r) -> dict:
    """The latency panel's summary of one operation (ftflame/correct/operations.py):
    exact nearest-rank figures over its calls, corrected over the clean ones."""
    out = {"calls": r.calls, "p50": round(r.raw["p50"]), "p99": round(r.raw["p99"]), "max": round(r.raw["max"])}
    if p.calibration.applied:
        clean = r.calls - r.gap_calls  # none: no corrected figure ("–")
        out.update({"callsc": clean, "approx": False,
                    **{k + "c": round(r.corr[k], 1) if clean else None for k in ("p50", "p99", "max")}})
    return out


def operations_data(p: Profile) -> list:
    """The operation table as the JSON's operations[] has it."""
    from .callsjson import ns_or_null, operations_json

    ops = operations_json(p)
    # the corrected figures' 95% half-widths, as the JSON's intervals.operations
    # (null, printed "–", for an operation without clean calls)
    pm = uncertainty.operation_half_widths(p)
    for o, h in zip(ops, pm or ()):
        o["dur_corr_pm_ns"] = {k: ns_or_null(v) for k, v in h.items()}
    return ops


# The slowest calls' own trees leave out calls under this share of the root
# call (under 4 pixels across a 1000-pixel chart): their time stays in
# their caller's box, and the page says how many were left out.
CALL_TREE_MIN_FRACTION = 1 / 250
# Calls drawn over all the slowest calls' trees in one page (about 45 bytes
# each), the slowest calls first; a call past it is listed without its tree
# (the JSON's slowest[] has every one).
CALL_TREE_BUDGET = 1500


# The latency plot's highest points in the views it opens on (every root
# function, and the busiest group, which it shows first), raw and corrected:
# their trees are always in the page, over any budget.
TREES_ALWAYS = 5


def tree_order(p: Profile, calls: tuple) -> tuple:
    """(positions in `calls`, the kept slowest root calls, in the order their
    trees go into the page; how many of them go in whatever the budget).
    The highest points of every view of the latency plot (all root
    functions, each group; raw and corrected) come first, then each view's
    second highest, and so on: the points a reader clicks, those drawn above
    the bulk in whatever view is on screen. A trace may keep a call per
    distinct root function: each view's ranks are found as columns, and the
    round over them as one sort, not a pass per rank over every view."""
    if not calls:
        return [], 0
    names, group = sample_groups(p)
    busiest = int(np.argmax(np.bincount(group, minlength=len(names))))  # the plot's first view (latency.js)
    cols = slowest_columns(p)  # the calls' figures as columns, in their order
    n = len(calls)
    sample, dur = cols["sample"][:n], cols["dur"][:n].astype(np.int64)
    g = group[sample]
    # views: 0 all the calls, 1 the busiest group, then the other groups in
    # the order of their first call
    uniq, first = np.unique(g, return_index=True)
    rank_of = np.empty(len(uniq), dtype=np.int64)
    by_first = np.argsort(first, kind="stable")
    rank_of[by_first] = np.arange(len(uniq))
    view = rank_of[np.searchsorted(uniq, g)]
    b = np.searchsorted(uniq, busiest)
    if b < len(uniq) and uniq[b] == busiest:
        view = np.where(view < rank_of[b], view + 1, np.where(view == rank_of[b], 0, view))
    else:  # the busiest group has no kept call: its view is empty
        view = view + 1
    view = view + 1
    keys = [(-dur, None)]
    if p.calibration.applied:  # a gap call has no corrected point
        corr = cols["corr"][:n]
        keys.append((-corr, corr == corr))
    # each view ranked by each key (the highest first, then by sample row),
    # as (list, rank, call); list: view * keys + key, the round's order
    lists, ranks, ks = [], [], []
    nkeys = len(keys)
    everyone = np.arange(n)
    for j, (key, ok) in enumerate(keys):
        sel = everyone if ok is None else everyone[ok]
        for v in (np.zeros(n, dtype=np.int64), view):  # the view of all calls, then each group's
            o = sel[np.lexsort((sample[sel], key[sel], v[sel]))]
            vo = v[o]
            lists.append(vo * nkeys + j)
            ranks.append(np.arange(len(o)) - np.searchsorted(vo, vo, side="left"))
            ks.append(o)
    lst, rk, k = np.concatenate(lists), np.concatenate(ranks), np.concatenate(ks)
    by = np.lexsort((lst, rk))
    lst, rk, k = lst[by], rk[by], k[by]

    def take(sel: np.ndarray, seen: np.ndarray) -> np.ndarray:
        """The calls of these (list, rank) entries in their order, each once."""
        ks = k[sel]
        ks = ks[~seen[ks]]
        _, at = np.unique(ks, return_index=True)
        return ks[np.sort(at)]

    seen = np.zeros(n, dtype=bool)
    always = take(np.flatnonzero((rk < TREES_ALWAYS) & (lst < 2 * nkeys)), seen)
    seen[always] = True
    # views 0 and 1 appear again in the round over every view
    order = np.concatenate((always, take(np.arange(len(k)), seen)))
    return order.tolist(), len(always)


def slowest_data(p: Profile) -> list:
    """The kept slowest root calls, slowest first, each with its call tree as
    columns (entry order; parent -1 for the root) while the page's budget
    lasts (tree_order says which first): the page draws a call's tree as a
    flame chart of its own when its row or its latency point is clicked."""
    cols = slowest_columns(p)
    if cols is None:
        return []
    trees: dict = {}
    budget = CALL_TREE_BUDGET
    order, always = tree_order(p, range(len(cols["sample"])))
    ops = cols["operations"]
    for n, k in enumerate(order):
        if budget <= 0 and n >= always:
            break  # the rest go without their trees
        if not cols["kept"][k]:
            continue
        # a SlowCall for the calls drawn only: a trace may keep one per
        # distinct root function, and their dominant paths are not drawn
        s = SlowCall(sample=int(cols["sample"][k]), root=cols["root"][k], operation=ops[cols["operation_of"][k]],
                     **{f: cols[f][k].item() for f in ("start_ns", "pid", "cpu", "dur", "corr", "gap")},
                     tree=p.slowest_trees.tree(int(cols["tree"][k])), dominant=())
        c = slow_call_tree(p, s)
        keep = np.flatnonzero(c["incl"] >= c["incl"][0] * CALL_TREE_MIN_FRACTION) if len(c["incl"]) else []
        row = np.full(len(c["incl"]), -1, dtype=np.int64)
        row[keep] = np.arange(len(keep))
        par = c["parent"][keep]  # a kept call's caller is kept: it lasted longer
        trees[k] = {
            "func": c["func"][keep].tolist(), "parent": np.where(par >= 0, row[np.maximum(par, 0)], -1).tolist(),
            "t": (c["calltime"][keep] - s.start_ns).tolist(), "incl": c["incl"][keep].tolist(),
            "excl": c["excl"][keep].tolist(),
            "incl_corr": None if s.corr != s.corr else _round1(c["corr_incl"][keep]),  # a gap call: none
            "irq": c["is_irq"][keep].astype(int).tolist(),
            "offcpu": c["offcpu"][keep].tolist() if p.offcpu_known else None,
            "calls": int(len(c["incl"]))}
        # what the entries and exits recorded (funcgraph-args, return values): only when the trace has it
        trees[k].update({key: [v[i] for i in keep.tolist()] for key, v in callsjson.values_json(p, c).items()})
        budget -= len(keep)
    corr = cols["corr"]
    durc = list(map(round, corr.tolist(), repeat(1)))
    for i in np.flatnonzero(corr != corr).tolist():  # a gap call: none
        durc[i] = None
    tree = [None] * len(durc)
    for k, t in trees.items():
        tree[k] = t
    rows = zip(cols["sample"].tolist(), cols["root"], cols["kept"].tolist(),
               map(ops.__getitem__, cols["operation_of"].tolist()),
               *(cols[f].tolist() for f in ("start_ns", "pid", "cpu", "dur")), durc, cols["gap"].tolist(), tree)
    # a dict per call made through map, not a Python loop
    return list(map(dict, map(zip, repeat(SLOWEST_KEYS), rows)))


SLOWEST_KEYS = ("sample", "root", "kept_tree", "operation", "start_ns", "pid", "cpu", "dur", "durc", "gap", "tree")


def root_figures_of(p: Profile, node: np.ndarray, group: np.ndarray, groups: int) -> list:
    """Per group of root calls, the latency panel's summary of its root
    function: its call path's figures as the JSON tree has them (raw
    incl_ns, corrected incl_corr_ns), or None when its root calls lie on
    more than one path. As columns: a group per root function, 100,000s."""
    out: list = [None] * groups
    pick = np.lexsort((node, group))
    g, r = group[pick], node[pick]
    new = np.ones(len(g), dtype=bool)
    new[1:] = (g[1:] != g[:-1]) | (r[1:] != r[:-1])
    one = np.bincount(g[new], minlength=groups) == 1  # the groups of one call path
    at = np.flatnonzero(new & one[g])
    if not len(at):
        return out
    return _root_figures_rows(p, g[at], r[at], groups)


def _root_figures_rows(p: Profile, which: np.ndarray, r: np.ndarray, groups: int) -> list:
    """root_figures_of's rows: group which[k]'s figures are call path r[k]'s."""
    out: list = [None] * groups
    if not len(which):
        return out
    ip, _ = p.node_percentiles
    calls = p.col("calls")[r]
    cols = {"calls": calls.astype(np.int64), "p50": ip[r, 0].astype(np.int64), "p99": ip[r, 2].astype(np.int64),
            "max": np.where(calls != 0, p.col("incl_max")[r].astype(np.int64), 0)}
    rows = [dict(zip(cols, v)) for v in zip(*(c.tolist() for c in cols.values()))]
    st = corrected_stats(p) if p.calibration.applied else None
    if st is not None:
        stat, approx, _, _ = st["nodes", "incl"]
        more = {"callsc": np.asarray(p.corrected.calls)[r].astype(np.int64).tolist(),
                **{k: _round1(stat[q][r]) for k, q in (("p50c", 4), ("p99c", 6), ("maxc", 2))},
                "approx": approx[r].astype(bool).tolist()}
        for d, v in zip(rows, zip(*more.values())):
            d.update(zip(more, v))
    for k, d in zip(which.tolist(), rows):
        out[k] = d
    return out


# ---- the function table --------------------------------------------------------
def _round1(a) -> list:
    """Values as the JSON writes them (0.1 ns)."""
    return [round(x, 1) for x in np.asarray(a, dtype=np.float64).tolist()]


def _means(mean) -> list:
    """The model's raw means as the JSON writes them (0.1 ns)."""
    return [round(m, 1) for m in mean.tolist()]


def corrected_stats_data(p: Profile, level: str, rows: np.ndarray) -> dict:
    """The corrected inclusive statistics of `rows` (of p.functions or of the
    node table), as in the JSON's incl_corr_ns: the page prints them and
    computes none. `approx` lists the positions whose min, max and
    percentiles are estimates (docs/overhead.md)."""
    stats = corrected_stats(p)
    if stats is None:  # a calibration without corrected sums: raw figures
        return {}
    cols, approx, _, _ = stats[level, "incl"]
    rows = np.asarray(rows, dtype=np.int64)
    out = {name: _round1(cols[k][rows]) for k, name in enumerate(("sum", "min", "max", "mean", "p50", "p90", "p99"))
           if name != "sum"}
    out["approx"] = np.flatnonzero(approx[rows] != 0).tolist()
    # 95% half-widths from the calibration's intervals (ftflame/correct/uncertainty.py), as the JSON's `intervals`
    hw = uncertainty.stat_half_widths(p)
    if hw is not None:
        out["pm"] = {name: _round1(hw[level, "incl"][k][rows]) for k, name in enumerate(STAT_NAMES)}
        out["pm"]["self"] = _round1(hw[level, "excl"][0][rows])  # the corrected self time's (a sum)
    return out


def functions_data(p: Profile) -> dict:
    ft = p.functions
    applied = p.calibration.applied
    hists, top = function_histograms(ft)
    d = {
        "func": ft.func_ids.tolist(), "calls": ft.calls.tolist(),
        "incl": ft.incl.tolist(), "excl": ft.excl.tolist(),
        "min": ft.incl_min.tolist(), "max": ft.incl_max.tolist(),
        "xmin": ft.excl_min.tolist(), "xmax": ft.excl_max.tolist(),
        "p50": ft.incl_pct[:, 0].tolist(), "p90": ft.incl_pct[:, 1].tolist(),
        "p99": ft.incl_pct[:, 2].tolist(),
        "xp50": ft.excl_pct[:, 0].tolist(), "xp99": ft.excl_pct[:, 2].tolist(),
        "irq": ft.irq.tolist(), "off": ft.offcpu.tolist() if p.offcpu_known else None, "gap": ft.gap_calls.tolist(),
        "hist": hists, "hist_edges": coarse_edges(top),
    }
    d["mean"] = _means(ft.incl_mean)
    rs = ft.returns
    if rs is not None:  # the calls that returned an error code apart (FunctionTable.returns)
        d["ret"] = {"calls": rs.calls.tolist(), "err": rs.err.calls.tolist(),
                    "err_mean": _means(rs.err.incl_mean), "err_max": rs.err.incl_max.tolist(),
                    "ok_mean": _means(rs.ok.incl_mean), "ok_max": rs.ok.incl_max.tolist()}
    if applied:
        d["inclc"] = _ints(ft.incl_corr)
        d["exclc"] = _ints(ft.excl_corr)
        d["callsc"] = ft.calls_corr.tolist()
        d["corr"] = corrected_stats_data(p, "functions", np.arange(len(ft)))
        # flagged as every output flags them (corrections.function_extras)
        d["bigcorr"] = np.flatnonzero(corrections.function_extras(p).get("unreliable", ())).tolist()
    return d


def flame_data(p: Profile, tree: flametree.FlameTree) -> dict:
    applied = p.calibration.applied
    ip, _ = p.node_percentiles
    node = np.array(tree.node, dtype=np.int64)
    real = node >= 0
    p50 = np.zeros(len(node), dtype=np.int64)
    p99 = np.zeros(len(node), dtype=np.int64)
    if p.nrows:
        p50[real] = ip[node[real], 0]
        p99[real] = ip[node[real], 2]
    depth = [0] * len(tree)
    for i in range(1, len(tree)):
        depth[i] = depth[tree.parent[i]] + 1
    # func: a function id, or -1 for a synthetic frame ("all", small, off-CPU, context)
    d = {
        "depth": depth, "func": tree.func,
        "small": [[i, tree.nmerged[i]] for i, k in enumerate(tree.kind) if k == flametree.KIND_SMALL],
        "offcpu": [i for i, k in enumerate(tree.kind) if k == flametree.KIND_OFFCPU],
        # [irq] / [softirq] above the roots that ran in interrupt context
        "context": [[i, label] for i, label in sorted(tree.context.items())],
        "calls": tree.calls, "incl": _ints(tree.incl), "excl": _ints(tree.excl),
        # layout widths in ns (report/flametree.py): the page draws them as they are
        "w": _round1(tree.width),
        "p50": p50.tolist(), "p99": p99.tolist(), "flags": tree.flags,
        "threshold_ns": int(tree.threshold_ns), "paths_total": tree.paths_total,
        "paths_shown": tree.paths_shown,
    }
    if applied:
        cc = np.asarray(p.corrected_or_raw.calls)
        callsc = np.zeros(len(node), dtype=np.int64)
        if p.nrows:
            callsc[real] = cc[node[real]]
        d.update({"inclc": _ints(tree.incl_corr), "exclc": _ints(tree.excl_corr),
                  "callsc": callsc.tolist(), "wc": _round1(tree.width_corr)})
        # corrected p50/p99 of the real frames (synthetic ones have none)
        st = corrected_stats_data(p, "nodes", np.where(real, node, 0)) if p.nrows else {}
        if st:
            approx = set(st["approx"])
            d["corr"] = {"p50": [v if ok else 0 for v, ok in zip(st["p50"], real.tolist())],
                         "p99": [v if ok else 0 for v, ok in zip(st["p99"], real.tolist())],
                         "approx": [i for i in range(len(node)) if real[i] and i in approx]}
    d["ops"] = operation_frames(p, tree)
    return d


def operation_frames(p: Profile, tree: flametree.FlameTree) -> list:
    """Per operation (ftflame/correct/operations.py, operation_nodes), the
    frames the page shows when it is chosen: `tops`, the frames of the
    naming functions' paths (each with its whole subtree: frames are in
    pre-order, so a subtree is the run of frames after its top at greater
    depth), and `anc`, [frame, raw width, corrected width] of their
    ancestors, each as wide as the tops under it. `incl`/`inclc` are the
    operation's totals as the JSON's operations[].flame has them; `undrawn`
    counts tops merged into a small frame (not drawn on their own)."""
    nodes = operation_nodes(p)
    if not nodes:
        return []
    frame_of = {int(n): i for i, n in enumerate(tree.node) if n >= 0}
    out = []
    for o, n in nodes.items():
        tops = [frame_of[r] for r in n.tops.tolist() if r in frame_of]
        w, wc = {}, {}
        for t in tops:
            a = tree.parent[t]
            while a >= 0:
                w[a] = w.get(a, 0.0) + tree.width[t]
                wc[a] = wc.get(a, 0.0) + tree.width_corr[t]
                a = tree.parent[a]
        out.append({"op": p.operations[o], "tops": sorted(tops),
                    "anc": [[a, round(w[a], 1), round(wc[a], 1)] for a in sorted(w)],
                    "incl": n.incl, "inclc": round(n.incl_corr, 1), "shared": n.shared,
                    "undrawn": len(n.tops) - len(tops)})
    return out


def header_data(p: Profile) -> dict:
    t, c, cal = p.trace, p.counters, p.calibration
    span = int(c.get("last_ts", 0)) - int(c.get("first_ts", 0))
    options = [
        ("stacks", "per task" if t.per_task else "per CPU"),
        ("irq context from", t.irq_source),
        ("sched_switch", "recorded: off-CPU time split out" if p.offcpu_known
         else "no sched_switch events: off-CPU time unknown, it stays inside the calls"),
        ("funcgraph-retval", "yes" if t.has_retval else "no"),
        # recorded (funcgraph-args): an entry carried values; 7.x's event
        # format has the field whether the option was on or not
        ("function args", f"recorded (funcgraph-args): up to {p.call_args} a call" if p.call_args
         else "not recorded" + (" (the event format has the field, no entry filled it)" if t.has_args else "")),
    ]
    if t.compression:
        options.append(("compression", t.compression))
    if t.file_version:
        options.append(("trace.dat version", str(t.file_version)))
    notes = report_notes(p)
    clamped = int(np.count_nonzero(p.corrected.clamped)) if p.corrected is not None else 0
    return {
        "source": t.source, "title": _title(t.source),
        "format": t.format, "kernel": t.kernel, "cpus": t.cpus, "clock": t.clock,
        "tracer": t.tracer_version, "options": options,
        "events": int(c.get("events", 0)), "exits": int(c.get("exits", 0)),
        "root_calls": len(p.samples), "paths": p.nrows, "max_depth": int(c.get("max_depth", -1)),
        "span_ns": max(span, 0),
        "calibration": {"applied": cal.applied, "source": cal.source, "method": cal.method,
                        "provenance": provenance(cal),
                        "o_in_ns": cal.o_in_ns, "o_out_ns": cal.o_out_ns,
                        "details": _jsonable(dict(cal.details)),
                        "fit": _jsonable(dict(cal.fit)) if cal.fit else None, "fit_words": fit.words(cal),
                        "notes": list(p.corrected.notes) if p.corrected is not None else [],
                        # what the intervals in the tooltips hold (uncertainty.made_of)
                        "intervals_made_of": (m["text"] if (m := uncertainty.made_of(p)) else None)},
        "clamped": clamped, "anomalies": notes, "version": __version__,
        "gap_causes": p.gap_causes,
    }


def _title(source: str) -> str:
    """The file name, with its folder when the name alone says little
    (collect.sh and the fixtures call every trace trace*.dat)."""
    path = source.rstrip("/")
    base = os.path.basename(path) or path
    parent = os.path.basename(os.path.dirname(path))
    return f"{parent}/{base}" if parent and base.startswith("trace") else base


def _jsonable(x):
    try:
        json.dumps(x)
        return x
    except (TypeError, ValueError):
        return json.loads(json.dumps(x, default=str))


def report_data(p: Profile, tree: flametree.FlameTree | None = None) -> dict:
    tree = tree or flametree.build(p, flametree.DEFAULT_MIN_FRACTION)
    slowest = slowest_data(p)
    return {
        "schema": "ftflame-html/1",
        "header": header_data(p),
        "funcs": list(p.funcs),
        "partial_flag": NODE_PARTIAL,
        "flame": flame_data(p, tree),
        "functions": functions_data(p),
        "edges": call_edges(p),
        "sandwich": sandwich_data(p),
        "samples": samples_data(p, {c["sample"]: k for k, c in enumerate(slowest) if c["tree"] is not None}),
        "operations": operations_data(p),
        "slowest": slowest,
        "sample_flags": {"gap": SAMPLE_GAP, "partial": SAMPLE_PARTIAL, "irq": SAMPLE_IRQ},
        "balance": _jsonable(list(p.balance)),
        # the nfsd threads' CPU time measured outside the tracer, when the run has it
        **({"cpu": _jsonable(p.cpu)} if p.cpu is not None else {}),
    }


# ---- the page's copy of the data ----------------------------------------------
# report_data is what the page shows; the page ships it smaller (templates/core.js
# FT.unpack undoes this before anything reads it): a frame's layout width is its
# inclusive time but where they differ (the (partial) pseudo-root, clock skew,
# frames not drawn in corrected mode), and the corrected widths and percentiles
# go at the precision the page shows (whole ns: FT.time never shows less).
def _same_as(values: list, base: str, base_values: list) -> dict:
    """values as {base, zero: runs of indices where 0, except: [[index, value], ...]}
    where they differ from base otherwise."""
    zero = [i for i, (v, b) in enumerate(zip(values, base_values)) if v == 0 and b != 0]
    return {"base": base, "zero": _runs(zero),
            "except": [[i, v] for i, (v, b) in enumerate(zip(values, base_values)) if v != b and v != 0]}


def _runs(indices: list) -> list:
    """Sorted indices as [[first, count], ...] runs."""
    out = []
    for i in indices:
        if out and out[-1][0] + out[-1][1] == i:
            out[-1][1] += 1
        else:
            out.append([i, 1])
    return out


def page_flame(fl: dict) -> dict:
    out = dict(fl)
    out["w"] = _same_as([int(x) if x == int(x) else x for x in fl["w"]], "incl", fl["incl"])
    if "wc" in fl:
        out["wc"] = _same_as(_ints(fl["wc"]), "inclc", fl["inclc"])
    if "corr" in fl:
        c = fl["corr"]
        out["corr"] = {"p50": _ints(c["p50"]), "p99": _ints(c["p99"]), "approx": {"runs": _runs(c["approx"])}}
    return out


def page_tree(tree: dict | None) -> dict | None:
    """A slowest call's tree as the page ships it: each call's caller as the
    distance back to it ("up"), its start from its caller's ("dt"), the
    corrected time in whole ns (what the page shows), the interrupt calls as
    runs of indices, off-CPU time where not 0."""
    if tree is None:
        return None
    par, t = tree["parent"], tree["t"]
    out = {k: v for k, v in tree.items() if k not in ("parent", "t", "irq", "offcpu", "incl_corr")}
    out["up"] = [i - q for i, q in enumerate(par)]
    out["dt"] = [v - (t[q] if q >= 0 else 0) for v, q in zip(t, par)]
    out["incl_corr"] = None if tree["incl_corr"] is None else _ints(tree["incl_corr"])
    out["irq"] = _runs([i for i, v in enumerate(tree["irq"]) if v])
    out["offcpu"] = None if tree["offcpu"] is None else [[i, v] for i, v in enumerate(tree["offcpu"]) if v]
    return out


def page_data(data: dict) -> dict:
    return {**data, "flame": page_flame(data["flame"]),
            "slowest": [{**c, "tree": page_tree(c["tree"])} for c in data["slowest"]]}


def data_json(data: dict) -> str:
    """JSON safe inside <script>: no "</", no "<!--" can end or confuse it."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def environment():
    import jinja2

    import ftflame.templates

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(os.path.dirname(ftflame.templates.__file__)),
        autoescape=jinja2.select_autoescape(["html", "svg"], default_for_string=True),
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def render(p: Profile, opts: RenderOptions = DEFAULT) -> str:
    data = report_data(p)
    tpl = environment().get_template("report.html")
    return tpl.render(h=data["header"], data_json=data_json(page_data(data)))
