"""The correction's passes over the call tree in C (ftflame/native/tree_pass.c)
give, to the bit, what the numpy passes a level at a time gave (kept here as
the reference): the interrupt subtrees summed up (irq_roots_inside) and the
top-down clamp (_clamp_top_down), with and without detached calls and
switch work, on random trees with NaN, negative and zero figures."""
from __future__ import annotations

import numpy as np
import pytest

import ftflame._model as _model

ROOT_BIT, IRQ_BIT = 2, 1


def random_tree(rng, n: int):
    """(parent int32, depth): each row's parent an earlier row, or none."""
    parent = np.full(n, -1, dtype=np.int32)
    depth = np.zeros(n, dtype=np.int64)
    for r in range(1, n):
        if rng.random() < 0.9:
            parent[r] = rng.integers(0, r)
            depth[r] = depth[parent[r]] + 1
    return parent, depth


def levels_of(depth):
    order = np.argsort(depth, kind="stable").astype(np.int32)
    bounds = np.searchsorted(depth[order], np.arange(int(depth.max()) + 2)).astype(np.int64)
    return order, bounds, [order[bounds[d]:bounds[d + 1]] for d in range(len(bounds) - 1)]


def irq_reference(levels, parent, flags, calls, det):
    R = np.zeros(len(parent))
    is_root, is_irq = (flags & ROOT_BIT) != 0, (flags & IRQ_BIT) != 0
    for rows in reversed(levels[1:]):
        task, own = R[rows], calls[rows]
        if det is not None:
            task = task - det[1][rows]
            own = own - det[0][rows]
        np.add.at(R, parent[rows].astype(np.int64), np.where(is_root[rows], own, np.where(is_irq[rows], 0.0, task)))
    return R


def clamp_reference(levels, parent, counted, want, det_want, kid_want, switch_ns, ci, clamp_ns):
    scale = np.ones(len(parent))
    parent = parent.astype(np.int64)
    for rows in levels:
        r_c = rows[counted[rows]]
        if det_want is None:
            ci[r_c] = want[r_c] * scale[parent[r_c]]
        else:
            ci[r_c] = (want[r_c] - det_want[r_c]) * scale[parent[r_c]] + det_want[r_c]
        over = (kid_want[rows] > ci[rows]) & (kid_want[rows] > 0)
        scale[rows] = np.where(over, ci[rows] / np.where(over, kid_want[rows], 1.0), 1.0)
        excess = kid_want[rows] - ci[rows]
        if switch_ns is not None:
            excess -= np.maximum(switch_ns[rows], 0.0)
        clamp_ns[rows] += np.where(over, np.maximum(excess, 0.0), 0.0)


def figures(rng, n: int) -> np.ndarray:
    v = rng.choice([0.0, -0.0, 1.0, 3.0, 1e9 / 7], n) * rng.integers(-1, 40, n)
    v[rng.random(n) < 0.03] = np.nan
    return v


@pytest.mark.parametrize("seed", range(6))
def test_irq_roots_up_is_the_numpy_pass(seed):
    rng = np.random.default_rng(seed)
    parent, depth = random_tree(rng, 3000)
    order, bounds, levels = levels_of(depth)
    flags = rng.choice([0, IRQ_BIT, IRQ_BIT | ROOT_BIT], len(parent), p=[0.8, 0.1, 0.1]).astype(np.int32)
    calls = rng.integers(0, 50, len(parent)).astype(np.float64)
    for det in (None, (rng.integers(0, 5, len(parent)).astype(np.int32),
                       rng.integers(0, 5, len(parent)).astype(np.int32))):
        R = np.zeros(len(parent))
        _model.irq_roots_up(order, bounds, parent, flags, ROOT_BIT, IRQ_BIT, calls,
                            None if det is None else det[0], None if det is None else det[1], R)
        assert R.tobytes() == irq_reference(levels, parent, flags, calls, det).tobytes()


@pytest.mark.parametrize("seed", range(6))
def test_clamp_down_is_the_numpy_pass(seed):
    rng = np.random.default_rng(seed)
    parent, depth = random_tree(rng, 3000)
    order, bounds, levels = levels_of(depth)
    n = len(parent)
    counted = (parent >= 0) & (rng.random(n) < 0.9)
    want = np.abs(figures(rng, n))
    kid_want = np.bincount(parent[counted], weights=want[counted], minlength=n)
    for det_want in (None, np.abs(figures(rng, n))):
        for switch_ns in (None, figures(rng, n)):
            ci, clamp_ns = want.copy(), figures(rng, n)
            ref_ci, ref_clamp = ci.copy(), clamp_ns.copy()
            _model.clamp_down(order, bounds, parent, counted, want, det_want, kid_want, switch_ns, ci, clamp_ns)
            clamp_reference(levels, parent, counted, want, det_want, kid_want, switch_ns, ref_ci, ref_clamp)
            assert ci.tobytes() == ref_ci.tobytes()
            assert clamp_ns.tobytes() == ref_clamp.tobytes()


def test_bad_levels_are_refused():
    parent = np.array([-1, 0, 5], dtype=np.int32)  # row 2's parent is no row
    order, bounds = np.array([0, 1, 2], dtype=np.int32), np.array([0, 1, 3], dtype=np.int64)
    flags, calls = np.zeros(3, dtype=np.int32), np.ones(3)
    with pytest.raises(ValueError, match="parent"):
        _model.irq_roots_up(order, bounds, parent, flags, ROOT_BIT, IRQ_BIT, calls, None, None, np.zeros(3))
    with pytest.raises(ValueError, match="levels"):
        _model.irq_roots_up(order, np.array([0, 2], dtype=np.int64), parent, flags, ROOT_BIT, IRQ_BIT, calls,
                            None, None, np.zeros(3))
    counted = np.array([False, True, True])
    with pytest.raises(ValueError, match="parent"):
        _model.clamp_down(order, bounds, parent, counted, calls, None, calls, None, np.ones(3), np.zeros(3))


def bits_reference(levels, parent, top):
    """_operation_nodes' numpy passes: inside and outer down the levels,
    holds back up."""
    parent = parent.astype(np.int64)
    inside, outer = np.zeros(len(top), dtype=np.uint64), np.zeros(len(top), dtype=np.uint64)
    for rows in levels:
        par = parent[rows]
        above = np.where(par >= 0, inside[np.maximum(par, 0)], np.uint64(0))
        outer[rows] = top[rows] & ~above
        inside[rows] = top[rows] | above
    holds = inside.copy()
    for rows in reversed(levels):
        par = parent[rows]
        some = (par >= 0) & (holds[rows] != 0)
        np.bitwise_or.at(holds, par[some], holds[rows[some]])
    return inside, outer, holds


@pytest.mark.parametrize("seed", range(6))
def test_bits_down_up_is_the_numpy_pass(seed):
    rng = np.random.default_rng(seed)
    parent, depth = random_tree(rng, int(rng.integers(1, 400)))
    order, bounds, levels = levels_of(depth)
    top = rng.integers(0, 1 << 63, len(parent), dtype=np.uint64) * (rng.random(len(parent)) < 0.2)
    top[rng.random(len(parent)) < 0.05] |= np.uint64(1) << np.uint64(63)
    got = [np.zeros(len(parent), dtype=np.uint64) for _ in range(3)]
    _model.bits_down_up(order, bounds, parent, top, *got)
    for g, want in zip(got, bits_reference(levels, parent, top)):
        assert np.array_equal(g, want)


def test_bits_down_up_refuses_bad_levels():
    parent = np.array([-1, 0, 5], dtype=np.int32)
    order, bounds = np.array([0, 1, 2], dtype=np.int32), np.array([0, 1, 3], dtype=np.int64)
    top, out = np.zeros(3, dtype=np.uint64), [np.zeros(3, dtype=np.uint64) for _ in range(3)]
    with pytest.raises(ValueError, match="parent"):
        _model.bits_down_up(order, bounds, parent, top, *out)
    with pytest.raises(ValueError, match="levels"):
        _model.bits_down_up(order, np.array([0, 2], dtype=np.int64), parent, top, *out)
    with pytest.raises(ValueError, match="wrong type or length"):
        _model.bits_down_up(order, bounds, np.array([-1, 0, 1], dtype=np.int32), top, *out[:2], np.zeros(2))
