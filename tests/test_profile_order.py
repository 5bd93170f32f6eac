"""The Profile's faster orderings (issue 19: Python after the read) give
exactly the order of the numpy sorts they replace: stable_order for integer
keys (depths, parents, function ids), top_rows for the hot lists (ties kept
in row order, -0.0 equal to 0.0, NaN last)."""
from __future__ import annotations

import numpy as np
import pytest

from ftflame.model.profile import distinct, stable_order, top_rows


@pytest.mark.parametrize("seed", range(5))
def test_top_rows_is_the_head_of_the_stable_descending_sort(seed):
    rng = np.random.default_rng(seed)
    for trial in range(200):
        n, top = int(rng.integers(0, 300)), int(rng.integers(0, 40))
        v = rng.integers(-5, 5, n).astype(np.float64) * rng.choice([1.0, 0.5])
        if trial % 3 == 0:
            v[rng.random(n) < 0.3] = 0.0  # many ties at the cut
        if trial % 7 == 0 and n:
            v[rng.integers(0, n)] = -0.0
        if trial % 11 == 0 and n:
            v[rng.integers(0, n)] = np.nan
        assert top_rows(v, top).tolist() == np.argsort(-v, kind="stable")[:top].tolist(), (seed, trial)


@pytest.mark.parametrize("high", [3, 50, 1 << 16, (1 << 16) + 1, 1 << 20, 1 << 32, 1 << 40])
def test_stable_order_is_the_stable_sort(high):
    rng = np.random.default_rng(high)
    for n in (0, 1, 17, 5000):
        keys = rng.integers(0, high, n).astype(np.int64)
        assert stable_order(keys).tolist() == np.argsort(keys, kind="stable").tolist()
    keys = np.array([3, -1, 2, -1, 3], dtype=np.int64)  # negative keys: the plain sort
    assert stable_order(keys).tolist() == np.argsort(keys, kind="stable").tolist()


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint32])
def test_distinct_is_numpys_unique(dtype):
    rng = np.random.default_rng(7)
    low = 0 if np.dtype(dtype).kind == "u" else -9
    for n in (0, 1, 2, 17, 5000):
        v = rng.integers(low, 40, n).astype(dtype)
        got, want = distinct(v), np.unique(v)
        assert got.dtype == want.dtype and got.tolist() == want.tolist()


def test_shape_views_are_32_bit_rows_in_the_same_order():
    """The tree's shape views the Profile keeps (levels, children, tree_tops)
    hold rows in 32 bits, as the core's parent column does (4 bytes a call
    path each, not 8: they live until the report is written), and the same
    rows as the int64 sorts they come from."""
    from conftest import SAMPLE, profile_of

    p = profile_of(SAMPLE)
    parent, depth = p.col("parent"), p.col("depth")
    order = np.argsort(depth, kind="stable")
    assert all(rows.dtype == np.int32 for rows in p.levels)
    assert np.concatenate(p.levels).tolist() == order.tolist()
    kids = p.children
    assert kids._order.dtype == np.int32 and kids._start.dtype == np.int32
    assert kids[-1] == np.flatnonzero(parent < 0).tolist()
    assert all(kids[r] == np.flatnonzero(parent == r).tolist() for r in range(0, p.nrows, 97))
    top = p.tree_tops
    assert top.dtype == np.int32
    assert all(parent[top] < 0) and all(depth[top] == 0)
