"""The statistics of `ftflame diff`, as small pure functions over arrays.

The method (docs/diff.md says the same, and every output names it):

* Each compared item (a root function, a function, a call path) has, per
  side, its corrected time per call: n calls, their exact corrected sum s1
  and sum of squares s2 (exact for root calls, whose every corrected
  duration is known; elsewhere from the log-bucket histogram, 1/16 bucket
  resolution, scaled by corrected mean / raw mean as every report's
  estimates are).
* The change is the ratio of the mean times per call, AFTER / BEFORE - 1.
  Its 95% interval comes from the log of that ratio, normal approximation,
  with the standard error of each mean taken over an effective sample of
  min(calls, root calls): calls inside one root call are not independent,
  so no more than one observation per root call is counted.
* The two-sided p-value of the same statistic is adjusted for the number of
  items compared (Benjamini-Hochberg, false discovery rate 5%).
* A verdict (faster/slower) needs: the adjusted p-value under 5%, a change
  of at least MIN_CHANGE, and, when a side has several runs, every run of
  AFTER beyond every run of BEFORE (a single noisy run cannot pass).
"""
from __future__ import annotations

import math

import numpy as np

ALPHA = 0.05  # false discovery rate and interval level (95%)
Z95 = 1.959963984540054
MIN_CHANGE = 0.05  # changes smaller than this are not called, whatever their p-value

METHOD = ("change = mean time per call AFTER / BEFORE - 1; 95% interval and p-value from "
          "the log of that ratio (normal approximation, standard errors over at most one "
          "call per root call); p-values adjusted by Benjamini-Hochberg (FDR 5%) over every "
          "item compared; faster/slower needs adjusted p < 0.05, |change| >= {min:g}% and, "
          "with several runs on a side, no overlap of the runs' means")


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


def log_ratio_test(mean_b, var_b, neff_b, mean_a, var_a, neff_a):
    """(change, ci_lo, ci_hi, p) per item for the ratio of means a/b.
    Items without a positive mean on both sides, or with fewer than two
    calls on a side, get NaN change bounds' and p = 1 (not testable)."""
    mean_b, mean_a = np.asarray(mean_b, float), np.asarray(mean_a, float)
    ok = (mean_b > 0) & (mean_a > 0) & np.isfinite(var_a) & np.isfinite(var_b) & (neff_a > 0) & (neff_b > 0)
    lr = np.log(np.divide(mean_a, mean_b, out=np.ones(len(mean_a)), where=ok))
    rel = (np.divide(var_b, np.maximum(neff_b, 1) * mean_b ** 2, out=np.zeros(len(lr)), where=ok)
           + np.divide(var_a, np.maximum(neff_a, 1) * mean_a ** 2, out=np.zeros(len(lr)), where=ok))
    se = np.sqrt(rel)
    change = np.where(mean_b > 0, np.divide(mean_a, mean_b, out=np.ones(len(lr)), where=mean_b > 0) - 1, np.nan)
    lo = np.where(ok, np.expm1(lr - Z95 * se), np.nan)
    hi = np.where(ok, np.expm1(lr + Z95 * se), np.nan)
    z = np.divide(np.abs(lr), se, out=np.where(lr == 0, 0.0, np.inf), where=se > 0)
    p = np.array([math.erfc(v / math.sqrt(2)) for v in z.tolist()], dtype=np.float64)
    return change, lo, hi, np.where(ok, p, 1.0)


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
    """Per item: do the runs' means keep apart in the direction of the
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
