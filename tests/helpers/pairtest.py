"""ftflame diff's rank test (ftflame/diff/stats.py rank_tests) on one item
given by its values: what a test of the statistics feeds it."""
from __future__ import annotations

import numpy as np

from ftflame.diff.stats import rank_tests


def pair_test(lv_b, w_b, neff_b, lv_a, w_a, neff_a):
    """rank_tests of one item given its log values: (change, lo, hi, p)."""
    def side(lv, w):
        return np.zeros(len(lv), np.int64), np.exp(np.asarray(lv, dtype=np.float64)), w
    out = rank_tests(side(lv_b, w_b), side(lv_a, w_a), [neff_b], [neff_a], 1)
    return tuple(float(x[0]) for x in out[:4])
