"""The function table's integer sums and extremes in C (_model.group_reduce,
ftflame/native/group_reduce.c) equal numpy's reductions per key that they
replace (Grouping: sort once, then reduceat): sums wrapping as int64 does,
least and greatest over the rows with calls, each group's starting value
where it has none."""
from __future__ import annotations

import numpy as np
import pytest

import ftflame._model as _model
from ftflame.model.profile import Grouping


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kdt,vdt", [(np.int32, np.int32), (np.int32, np.int64), (np.int64, np.int64)])
def test_group_reduce_is_numpys_reduction(seed, kdt, vdt):
    rng = np.random.default_rng(seed)
    n, ngroups = 5000, 60
    keys = rng.integers(0, ngroups - 3, n).astype(kdt)  # the last groups have no row
    big = np.iinfo(np.int64).max
    values = rng.integers(-(1 << 31), 1 << 31, n).astype(vdt)
    if vdt is np.int64:
        values[::7] = big  # sums wrap
    calls = rng.integers(-1, 3, n).astype(np.int32)
    g = Grouping(keys.astype(np.int64), ngroups)
    for op, uf, init in ((0, np.add, 0), (1, np.minimum, big), (2, np.maximum, -big)):
        out = np.full(ngroups, init, dtype=np.int64)
        _model.group_reduce(keys, values, None if op == 0 else calls, op, out)
        v = values.astype(np.int64)
        want = g.reduce(uf, v if op == 0 else np.where(calls > 0, v, init), init)
        assert out.tolist() == want.tolist(), op


def test_group_reduce_refuses_a_key_out_of_range():
    with pytest.raises(ValueError, match="key"):
        _model.group_reduce(np.array([0, 3], dtype=np.int32), np.ones(2, dtype=np.int64), None, 0,
                            np.zeros(3, dtype=np.int64))
