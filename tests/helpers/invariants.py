"""Invariants every Profile must satisfy; asserted on every real fixture and
every hand-made input."""
from __future__ import annotations

import numpy as np

from ftflame.model.profile import NODE_IRQ, NODE_IRQ_ROOT, NODE_PARTIAL, SAMPLE_IRQ, Profile


def check_profile(p: Profile) -> None:
    incl, excl, parent = p.col("incl"), p.col("excl"), p.col("parent")
    child_incl = np.zeros(p.nrows + 1, dtype=np.int64)
    np.add.at(child_incl, parent, incl)
    pseudo = np.array([p.name(r) == "(partial)" for r in range(p.nrows)], dtype=bool)
    # inclusive = exclusive + children's inclusive, exactly, per call path
    # (unowned_child_incl: children of calls that never completed, and
    # interrupts moved between a call and its caller; see builder.c)
    lhs = incl + p.col("unowned_child_incl")
    rhs = excl + child_incl[:-1]
    bad = np.nonzero((lhs != rhs) & ~pseudo)[0]
    assert len(bad) == 0, f"incl != excl + children at {[p.path(r) for r in bad[:3]]}"
    # parents come before children (the C core's creation order)
    assert np.all(parent < np.arange(p.nrows)), "a node's parent has a higher row"
    # depth (exported by the core) is the parent's plus one
    depth = p.col("depth")
    assert np.all(depth == np.where(parent >= 0, depth[np.maximum(parent, 0)] + 1, 0))
    # the CSR child lists hold every row once, under its parent
    kids = p.children
    assert sorted(r for i in range(-1, p.nrows) for r in kids[i]) == list(range(p.nrows))
    assert all(parent[r] == -1 for r in kids[-1])
    # the (partial) pseudo-root has no calls of its own
    assert np.all(p.col("calls")[pseudo] == 0)
    assert np.all(p.col("flags")[pseudo] & NODE_PARTIAL)
    # the gap subset is a subset
    for f in ("calls", "incl", "desc", "nchild", "irq", "offcpu"):
        assert np.all(p.col("gap_" + f) <= p.col(f)), f
    # min <= mean <= max for inclusive times
    calls = p.col("calls")
    has = calls > 0
    assert np.all(p.col("incl_min")[has] * calls[has] <= incl[has])
    assert np.all(p.col("incl_max")[has] * calls[has] >= incl[has])
    # calls consistent between the tree and the function table
    ft = p.functions
    per_func = np.zeros(len(p.funcs), dtype=np.int64)
    np.add.at(per_func, p.col("func"), calls)
    assert ft.calls.tolist() == per_func[ft.func_ids].tolist()
    assert int(ft.calls.sum()) == int(calls.sum()) == p.counters["exits"]
    # histogram counts equal call counts per path (a 0 appended: the last
    # paths may have no bins, and reduceat takes no index past the end)
    counts = np.add.reduceat(np.append(p.hist_incl.counts.astype(np.int64), 0), p.hist_incl.offsets[:-1])
    empty = np.diff(p.hist_incl.offsets) == 0
    assert np.all(np.where(empty, 0, counts) == calls)
    # root samples: one per completed call at the bottom of a stack
    if len(p.samples):
        assert np.all(p.scol("dur") >= 0)
    check_irq_context(p)


def check_irq_context(p: Profile) -> None:
    """A path is interrupt context only for calls that ran in interrupt
    context: the same function entered in task and in irq context is two
    paths, and interrupt context is inherited by everything nested in it."""
    flags, parent = p.col("flags"), p.col("parent")
    irq = (flags & NODE_IRQ) != 0
    pseudo = np.array([p.name(r) == "(partial)" for r in range(p.nrows)] + [False], dtype=bool)
    has_parent = parent >= 0
    parent_irq = np.where(has_parent, irq[np.maximum(parent, 0)], False)
    inherited_lost = np.nonzero(has_parent & parent_irq & ~irq)[0]
    assert len(inherited_lost) == 0, f"task path under an irq path: {p.path(int(inherited_lost[0]))}"
    # an interrupt under a task call starts an irq subtree there
    starts = irq & has_parent & ~parent_irq & ~pseudo[parent]
    assert np.array_equal(starts, (flags & NODE_IRQ_ROOT) != 0)
    # every root call ran in the context its path says
    if len(p.samples):
        node = p.scol("node")
        mixed = np.nonzero(((p.scol("flags") & SAMPLE_IRQ) != 0) != irq[node])[0]
        assert len(mixed) == 0, f"root call in another context than its path {p.path(int(node[mixed[0]]))}"


def negative_self_explained(p: Profile) -> list:
    """Paths with a call of negative self time that no counter explains.

    Negative self time happens when children's windows exceed the parent's:
    calls spanning lost events (gap), irqs whose window could not be decided
    (irq_early), and nosleep-time traces (calltime shifted by the tracer)."""
    neg = np.nonzero(p.col("excl_min") < 0)[0]
    return [r for r in neg if p.col("gap_calls")[r] == 0 and p.col("irq_early")[r] == 0]
