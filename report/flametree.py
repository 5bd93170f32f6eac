"""The flame-graph tree shared by the HTML and SVG renderers.

The Profile's call-path tree can hold 100k+ paths; a flame graph shows a few
thousand at most. Paths whose frame would be narrower than `min_fraction` of
the whole graph (or beyond `max_frames`) are merged, per parent, into one
"[N small frames]" frame carrying their summed time, so the widths still add
up and nothing disappears from the totals.

Widths are time, never sample counts. A frame's width is
max(inclusive time, sum of its children's widths): the two differ only for
the "(partial)" pseudo-root (no time of its own) and for clock skew between
CPUs, and taking the larger keeps every child inside its parent. Off-CPU time
(from sched_switch; the Profile charges it to every open frame) becomes an
"[off-CPU]" child holding the part not already inside a child, so a task
sleeping in a function is visibly different from one computing there.

Corrected mode (docs/html.md "Flame graph widths"): a frame is as wide as
its corrected inclusive time, the figure its tooltip states, and what is
drawn on it fits inside. Time the correction removed is not drawn: no
[off-CPU] frames (off-CPU time removed), and interrupt subtrees nested in
task context are left out with their time (irqs excluded), as they are
left out of the interrupted calls' corrected time. Hook cost was never a
frame. `drawn_corrected` says which paths are drawn.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ftflame.correct.corrections import irq_kind
from ftflame.model.profile import NODE_IRQ, OffCpu, Profile

KIND_ROOT, KIND_FRAME, KIND_SMALL, KIND_OFFCPU, KIND_CONTEXT = 0, 1, 2, 3, 4
DEFAULT_MIN_FRACTION = 1e-4  # 0.01% of the whole graph: 0.15 px at 1500 px, visible once zoomed
DEFAULT_MAX_FRAMES = 6000  # keeps the HTML of a trace of 100k+ call paths under a megabyte


@dataclass
class FlameTree:
    """Frames in depth-first pre-order; index 0 is the root "all"; within a
    parent, its kept children widest first, then [off-CPU], then the small frame.

    Per frame: parent (-1 for the root), kind, func (Profile function id, -1
    for synthetic frames), node (Profile row, -1 for synthetic frames),
    nmerged (paths merged into a small frame), width / width_corr (layout
    widths in ns), calls, incl / incl_corr, excl / excl_corr (the path's own
    figures; for synthetic frames their totals), flags (Profile node flags).
    """

    parent: list
    kind: list
    func: list
    node: list
    nmerged: list
    width: list
    width_corr: list
    calls: list
    incl: list
    incl_corr: list
    excl: list
    excl_corr: list
    flags: list
    threshold_ns: float
    paths_total: int  # call paths in the Profile
    paths_shown: int  # of which drawn as their own frame
    context: dict = field(default_factory=dict)  # KIND_CONTEXT frame -> "[irq]" / "[softirq]"

    def __len__(self) -> int:
        return len(self.parent)

    def add(self, *values) -> int:
        for name, v in zip(_FIELDS, values):
            getattr(self, name).append(v)
        return len(self.parent) - 1

    def label(self, i: int, funcs) -> str:
        k = self.kind[i]
        if k == KIND_ROOT:
            return "all"
        if k == KIND_SMALL:
            return f"[{self.nmerged[i]} small frames]"
        if k == KIND_OFFCPU:
            return "[off-CPU]"
        if k == KIND_CONTEXT:
            return self.context[i]
        return funcs[self.func[i]]


_FIELDS = ("parent", "kind", "func", "node", "nmerged", "width", "width_corr", "calls", "incl",
           "incl_corr", "excl", "excl_corr", "flags")


def context_frames(p: Profile) -> dict:
    """Root paths that ran in interrupt context -> the frame they are shown
    under, "[irq]" or "[softirq]" (the name the corrected folded stacks give
    interrupt subtrees): a function entered both in a task and in an
    interrupt is two roots, and folded stacks, flame graphs and speedscope
    name frames by function, so without it the two would look like one."""
    if p.nrows == 0:
        return {}
    top = np.flatnonzero((p.col("parent") < 0) & ((p.col("flags") & NODE_IRQ) != 0))
    func = p.col("func")
    return {int(r): irq_kind(p.funcs[func[r]]) for r in top}


def _levels(p: Profile) -> list:
    """Rows grouped by depth, deepest first (for bottom-up sums): the node
    table's depth column, as Profile.levels groups it."""
    return list(reversed(p.levels))


def layout_widths(p: Profile, value: np.ndarray, levels=None, base=None, drawn=None) -> np.ndarray:
    """max(value, sum of children's widths + own off-CPU frame), bottom-up;
    0 for paths not drawn."""
    parent = np.ascontiguousarray(p.col("parent"))
    levels = _levels(p) if levels is None else levels
    width = np.zeros(p.nrows)
    childsum = np.zeros(p.nrows + 1)
    base = exclusive_offcpu(p) if base is None else base
    for rows in levels:
        width[rows] = np.maximum(value[rows], childsum[rows] + base[rows])
        if drawn is not None:
            width[rows] = np.where(drawn[rows], width[rows], 0.0)
        np.add.at(childsum, parent[rows], width[rows])
    return width


def drawn_corrected(p: Profile) -> np.ndarray:
    """Per path: drawn in corrected mode, i.e. its corrected time counts in
    its parent's (ftflame.correct.corrections.counted_children) all the way up.
    Children of the (partial) pseudo-root are drawn: it has no time of its
    own and is as wide as they are."""
    from ftflame.correct.corrections import counted_children

    if p.nrows == 0:
        return np.zeros(0, dtype=bool)
    c = p.corrected
    parent = p.col("parent")
    ok = counted_children(p, c.irqs if c is not None else "include") | (parent < 0)
    ok |= (parent >= 0) & p.pseudo_roots[np.maximum(parent, 0)]
    drawn = ok.copy()
    for rows in p.levels[1:]:  # parents first
        drawn[rows] &= drawn[parent[rows]]
    return drawn


def corrected_offcpu(p: Profile, off_x: np.ndarray) -> np.ndarray:
    """The [off-CPU] frame's corrected width: 0 where the correction removed
    off-CPU time (or it is unknown), else at most the path's corrected self
    time (it is inside it)."""
    c = p.corrected
    if c is None or c.offcpu is not OffCpu.KEPT_ASKED:
        return np.zeros_like(off_x)
    return np.minimum(off_x, np.maximum(np.asarray(c.excl, dtype=np.float64), 0.0))


def subtree_sizes(parent: np.ndarray, levels) -> np.ndarray:
    size = np.ones(len(parent), dtype=np.int64)
    for rows in levels:
        r = rows[parent[rows] >= 0]
        np.add.at(size, parent[r], size[r])
    return size


def exclusive_offcpu(p: Profile) -> np.ndarray:
    """Off-CPU ns of each path not already inside one of its children."""
    off = p.col("offcpu").astype(np.float64)
    if p.nrows == 0 or not off.any():
        return np.zeros(p.nrows)
    parent = p.col("parent")
    has = parent >= 0
    inner = np.zeros(p.nrows)
    np.add.at(inner, parent[has], off[has])
    return np.maximum(off - inner, 0.0)


def build(p: Profile, min_fraction: float = DEFAULT_MIN_FRACTION,
          max_frames: int = DEFAULT_MAX_FRAMES) -> FlameTree:
    n = p.nrows
    corr = p.corrected_or_raw
    applied = p.calibration.applied
    parent = np.ascontiguousarray(p.col("parent"))
    levels = _levels(p) if n else []
    incl = p.col("incl").astype(np.float64)
    incl_c = np.asarray(corr.incl, dtype=np.float64)
    off_x = exclusive_offcpu(p)
    w = layout_widths(p, incl, levels, off_x)
    off_c = corrected_offcpu(p, off_x) if applied else off_x
    drawn = drawn_corrected(p) if applied else np.ones(n, dtype=bool)
    wc = layout_widths(p, incl_c, levels, off_c, drawn) if applied else w
    total = float(w[parent < 0].sum()) if n else 0.0
    total_c = float(wc[parent < 0].sum()) if n else 0.0
    thr = total * min_fraction
    if n and max_frames and int((w >= thr).sum()) > max_frames:
        # the max_frames-th widest path sets the bar (ties may add a few)
        thr = float(np.partition(w, n - max_frames)[n - max_frames])
    keep = (w >= thr) & (w > 0) if n else np.zeros(0, dtype=bool)
    t = FlameTree([], [], [], [], [], [], [], [], [], [], [], [], [], thr, n, int(keep.sum()))
    t.add(-1, KIND_ROOT, -1, -1, 0, total, total_c, 0, total, total_c, 0.0, 0.0, 0)
    if n == 0:
        return t

    func, flags, calls = p.col("func"), p.col("flags"), p.col("calls")
    excl = p.col("excl").astype(np.float64)
    excl_c = np.asarray(corr.excl, dtype=np.float64)
    size = subtree_sizes(parent, levels)
    # what the small frames hold: per kept parent (index n = the root "all"),
    # the paths below it that are not kept themselves
    slot = np.where(parent >= 0, parent, n)
    merged = ~keep & ((w > 0) | (wc > 0)) & np.append(keep, True)[slot]
    off_small = keep & (off_x > 0) & (off_x < thr)
    off_small_c = keep & (off_c > 0) & (off_x < thr)
    sm_n = np.zeros(n + 1, dtype=np.int64)
    sm_calls = np.zeros(n + 1, dtype=np.int64)
    sm_w = np.zeros(n + 1)
    sm_wc = np.zeros(n + 1)
    sm_flags = np.full(n + 1, 0xFF, dtype=np.int64)
    m = np.flatnonzero(merged)
    np.add.at(sm_n, slot[m], size[m])
    np.add.at(sm_calls, slot[m], calls[m])
    np.add.at(sm_w, slot[m], w[m])
    np.add.at(sm_wc, slot[m], wc[m])
    np.bitwise_and.at(sm_flags, slot[m], flags[m])
    o = np.flatnonzero(off_small)
    np.add.at(sm_w, o, off_x[o])
    oc = np.flatnonzero(off_small_c)
    np.add.at(sm_wc, oc, off_c[oc])

    # kept children per kept parent, widest first
    k = np.flatnonzero(keep)
    order = k[np.lexsort((k, -w[k], slot[k]))]
    kids = {}
    for r, par in zip(order.tolist(), slot[order].tolist()):
        kids.setdefault(par, []).append(r)
    L = {name: arr.tolist() for name, arr in (
        ("func", func), ("flags", flags), ("calls", calls), ("w", w), ("wc", wc), ("incl", incl),
        ("incl_c", incl_c), ("excl", excl), ("excl_c", excl_c), ("off", off_x), ("off_c", off_c),
        ("drawn", drawn), ("pseudo", calls == 0))}
    # depth-first pre-order: a frame's subtree follows it directly; roots
    # in interrupt context go under their [irq] / [softirq] frame
    ctx = context_frames(p)
    tops = [r for r in kids.get(n, ()) if r not in ctx]
    groups = {}
    for r in kids.get(n, ()):
        if r in ctx:
            groups.setdefault(ctx[r], []).append(r)
    stack = [(KIND_CONTEXT, label, 0) for label in sorted(groups, reverse=True)]
    stack += [(KIND_FRAME, r, 0) for r in reversed(tops)]
    if sm_w[n] > 0 or sm_wc[n] > 0:
        stack.insert(0, (KIND_SMALL, n, 0))
    while stack:
        kind, row, par = stack.pop()
        if kind == KIND_SMALL:
            t.add(par, KIND_SMALL, -1, -1, int(sm_n[row]), float(sm_w[row]), float(sm_wc[row]),
                  int(sm_calls[row]), float(sm_w[row]), float(sm_wc[row]), float(sm_w[row]),
                  float(sm_wc[row]), int(sm_flags[row]) if sm_n[row] else 0)
            continue
        if kind == KIND_CONTEXT:
            rows = groups[row]
            i = t.add(par, KIND_CONTEXT, -1, -1, 0, *(sum(L[k][r] for r in rows) for k in (
                "w", "wc", "calls", "w", "wc")), 0.0, 0.0, NODE_IRQ)
            t.context[i] = row
            stack.extend((KIND_FRAME, r, i) for r in reversed(rows))
            continue
        if kind == KIND_OFFCPU:
            x, xc = L["off"][row], L["off_c"][row]
            t.add(par, KIND_OFFCPU, -1, -1, 0, x, xc, 0, x, xc, x, xc, L["flags"][row] & NODE_IRQ)
            continue
        # corrected: the frame's figure is its width (a path not drawn has
        # none); a path without a completed call (the (partial) pseudo-root,
        # a call whose exit was lost) states the calls under it
        inc_c = L["wc"][row] if applied and (L["drawn"][row] or L["pseudo"][row]) else L["incl_c"][row]
        inc = L["w"][row] if L["pseudo"][row] else L["incl"][row]
        i = t.add(par, KIND_FRAME, L["func"][row], row, 0, L["w"][row], L["wc"][row],
                  L["calls"][row], inc, inc_c, L["excl"][row],
                  L["excl_c"][row], L["flags"][row])
        if sm_w[row] > 0 or sm_wc[row] > 0:
            stack.append((KIND_SMALL, row, i))
        if L["off"][row] >= thr and L["off"][row] > 0:
            stack.append((KIND_OFFCPU, row, i))
        stack.extend((KIND_FRAME, r, i) for r in reversed(kids.get(row, ())))
    return t
