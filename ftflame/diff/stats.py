"""The statistics of `ftflame diff`, as small pure functions over arrays.

The method (docs/diff.md says the same, and every output names it):

* Each compared item (a root function, a function, a call path) has, per
  side, its calls' corrected times: exact for root calls (every corrected
  duration is known), elsewhere the log-bucket histogram's values (1/16
  bucket resolution) scaled by corrected mean / raw mean, as every report's
  estimates are. Means are exact either way (corrected sums over calls).
* The change is the Hodges-Lehmann estimate of the ratio AFTER / BEFORE of
  the time per call: the median of the ratios of every AFTER call to every
  BEFORE call, minus 1. Its 95% interval comes from the same pairs (the
  ratios at the ranks the Mann-Whitney test leaves open), and the two-sided
  p-value is the Mann-Whitney rank-sum test's (normal approximation) of the
  same comparison: the interval excludes 0 when p < 0.05. Ranks make one
  outlier count as one call, not as its 50x duration.
* Calls inside one root call are not independent: each side counts as at
  most one observation per root call (n = min(calls, root calls)).
* The p-values are adjusted for the number of items compared
  (Benjamini-Hochberg, false discovery rate 5%, over every item with calls
  on both sides).
* A verdict (faster/slower) needs: the adjusted p-value under 5%, a change
  of at least MIN_CHANGE, and, when a side has several runs, every run of
  AFTER beyond every run of BEFORE (its median time per call): a single noisy
  run cannot pass as a change.
"""
from __future__ import annotations

import math

import numpy as np

ALPHA = 0.05  # false discovery rate and interval level (95%)
Z95 = 1.959963984540054
MIN_CHANGE = 0.05  # changes smaller than this are not called, whatever their p-value

METHOD = ("change = Hodges-Lehmann ratio of time per call AFTER / BEFORE - 1 (median "
          "of the ratios of all pairs of calls), 95% interval from the same pairs; p-value "
          "from the Mann-Whitney rank-sum test, at most one call per root call counted as "
          "independent; p-values adjusted by Benjamini-Hochberg (FDR 5%) over every item "
          "compared; faster/slower needs adjusted p < 0.05, |change| >= {min:g}% and, with "
          "several runs on a side, no overlap of the runs' median times per call")
LOG_FLOOR_NS = 1.0  # a corrected time of 0 (clamped) compares as 1 ns
PAIR_CAP = 400  # values per side beyond this are merged into 1/256-wide log bins


def method_text(min_change: float) -> str:
    return METHOD.format(min=min_change * 100)


def moments_mean_var(n, s1, s2):
    """Mean and (unbiased) variance from count, sum and sum of squares;
    variance inf where fewer than 2 calls (nothing to say about noise)."""
    n = np.asarray(n, dtype=np.float64)
    mean = np.divide(s1, n, out=np.zeros(len(n)), where=n > 0)
    ex2 = np.divide(s2, n, out=np.zeros(len(n)), where=n > 0)
    var = np.maximum(ex2 - mean * mean, 0.0) * np.divide(n, n - 1, out=np.zeros(len(n)), where=n > 1)
    return mean, np.where(n > 1, var, np.inf)


def _compact(lv: np.ndarray, w: np.ndarray):
    """Values (logs) and weights, equal values merged; more than PAIR_CAP
    distinct values merged into log bins 1/256 wide (0.4%: well inside the
    histograms' own 1/16)."""
    if len(lv) > PAIR_CAP:
        lv = np.round(lv * 256.0) / 256.0
    u, inv = np.unique(lv, return_inverse=True)
    return u, np.bincount(inv.ravel(), weights=w, minlength=len(u))


def pair_test(lv_b, w_b, neff_b, lv_a, w_a, neff_a):
    """(ratio - 1, lo - 1, hi - 1, p) of one item from its calls' log
    times on both sides (weights: calls per value). Mann-Whitney with
    n = neff per side; the interval is the Hodges-Lehmann one at the ranks
    the test's 95% bounds give, read off the weighted pairs."""
    lv_b, w_b = _compact(lv_b, w_b)
    lv_a, w_a = _compact(lv_a, w_a)
    d = (lv_a[:, None] - lv_b[None, :]).ravel()
    w = (w_a[:, None] * w_b[None, :]).ravel()
    w = w / w.sum()
    auc = float(w[d > 0].sum() + 0.5 * w[d == 0].sum())
    se = math.sqrt((neff_a + neff_b + 1.0) / (12.0 * neff_a * neff_b))
    p = math.erfc(abs(auc - 0.5) / se / math.sqrt(2.0))
    order = np.argsort(d, kind="stable")
    d, cw = d[order], np.cumsum(w[order])

    def at(frac: float) -> float:
        i = int(np.searchsorted(cw, min(max(frac, 0.0), 1.0) - 1e-12, side="left"))
        return float(d[min(i, len(d) - 1)])

    return (math.expm1(at(0.5)), math.expm1(at(0.5 - Z95 * se)), math.expm1(at(0.5 + Z95 * se)), p)


def rank_tests(side_b, side_a, neff_b, neff_a, m: int):
    """pair_test for every item 0..m-1 with at least 2 effective calls on
    both sides; (change, lo, hi, p) arrays, NaN and p = 1 elsewhere. A
    side is (item, value ns, weight) arrays of its calls' values."""
    change, lo, hi = np.full(m, np.nan), np.full(m, np.nan), np.full(m, np.nan)
    p = np.ones(m)
    slices = [_by_item(*side, m) for side in (side_b, side_a)]
    testable = np.flatnonzero((np.asarray(neff_b) >= 2) & (np.asarray(neff_a) >= 2))
    for i in testable.tolist():
        (vb, wb), (va, wa) = (sl(i) for sl in slices)
        if not len(vb) or not len(va):
            continue
        change[i], lo[i], hi[i], p[i] = pair_test(vb, wb, float(neff_b[i]), va, wa, float(neff_a[i]))
    return change, lo, hi, p, testable


def _by_item(item, value, weight, m: int):
    """i -> (log values, weights) of item i: one sort, then slices."""
    order = np.argsort(item, kind="stable")
    item = np.asarray(item)[order]
    lv = np.log(np.maximum(np.asarray(value, dtype=np.float64)[order], LOG_FLOOR_NS))
    w = np.asarray(weight, dtype=np.float64)[order]
    bounds = np.searchsorted(item, np.arange(m + 1))

    def sl(i: int):
        a, b = bounds[i], bounds[i + 1]
        return lv[a:b], w[a:b]
    return sl


def benjamini_hochberg(p) -> np.ndarray:
    """Adjusted p-values (q-values) of the Benjamini-Hochberg step-up
    procedure: item i is a discovery at FDR alpha when q[i] <= alpha."""
    p = np.asarray(p, dtype=np.float64)
    m = len(p)
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    ranked = p[order] * m / np.arange(1, m + 1)
    q = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(q, 1.0)
    return out


def runs_separated(before_runs: np.ndarray, after_runs: np.ndarray, slower: np.ndarray) -> np.ndarray:
    """Per item: do the runs' medians keep apart in the direction of the
    change (every AFTER run above every BEFORE run when slower, below when
    faster)? Arrays (runs, items), NaN where a run lacks the item; an item
    with one run per side passes (its spread is unknown: the interval has
    to speak for it)."""
    nb = np.sum(np.isfinite(before_runs), axis=0)
    na = np.sum(np.isfinite(after_runs), axis=0)
    with np.errstate(all="ignore"):
        b_hi = np.nanmax(np.where(np.isfinite(before_runs), before_runs, -np.inf), axis=0)
        b_lo = np.nanmin(np.where(np.isfinite(before_runs), before_runs, np.inf), axis=0)
        a_hi = np.nanmax(np.where(np.isfinite(after_runs), after_runs, -np.inf), axis=0)
        a_lo = np.nanmin(np.where(np.isfinite(after_runs), after_runs, np.inf), axis=0)
    apart = np.where(slower, a_lo > b_hi, a_hi < b_lo)
    return np.where((nb > 1) | (na > 1), apart, True)


def weighted_medians(keys: np.ndarray, values: np.ndarray, weights: np.ndarray, nkeys: int) -> np.ndarray:
    """Per key, the lower weighted median of its values (the value where
    the running weight first reaches half); 0 for a key without values.
    One sort for all keys."""
    out = np.zeros(nkeys)
    if not len(keys):
        return out
    order = np.lexsort((values, keys))
    k, v, w = keys[order], values[order], np.asarray(weights, dtype=np.float64)[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    cw = np.cumsum(w)
    base = np.repeat(np.r_[0.0, cw[starts[1:] - 1]], np.diff(np.r_[starts, len(k)]))
    within = cw - base
    total = np.repeat(within[np.r_[starts[1:] - 1, len(k) - 1]], np.diff(np.r_[starts, len(k)]))
    reached = within >= total / 2.0
    # first reaching entry per key: among reached entries, the first of each key
    idx = np.flatnonzero(reached)
    first = idx[np.r_[True, k[idx][1:] != k[idx][:-1]]]
    out[k[first]] = v[first]
    return out
