"""The statistics of `ftflame diff`, as small pure functions over arrays.

The method (docs/diff.md says the same, and every output names it):

* The runs are the replicates: what differs between two recordings of one
  workload is the run (page cache, timer phase, host load), so the
  evidence for a change comes from the runs. Each run gives an item's
  estimate: its median corrected time per call in that run (exact for
  root calls; from the histograms elsewhere, interpolated inside the
  bucket: ftflame.diff.model).
* The change is the ratio of the sides' mean log estimates, minus 1; its
  95% interval and p-value come from a t-test over the runs' log
  estimates, the item's run-to-run variance moderated by the prior of all
  functions' variances (interval_tests, variance_prior: Smyth 2004), at
  least a histogram bucket's. One run a side measures no run-to-run
  variation: the interval is then the calls' (Welch, n = the root calls
  that called the item) and no verdict is given, unless the user takes
  the calls as independent (--runs-identical).
* The p-values are adjusted over the items that could be called: Holm
  over the root functions and operations (the primary claims),
  Benjamini-Hochberg over the functions and call paths.
* With a drift (ftflame.diff.model.run_effects, global_drift) each run's
  estimates are taken relative to the run's effect on the typical
  function, and the verdict is on that change.
* A verdict (faster/slower) needs the adjusted p-value under 5% and a
  change of at least the minimum change (--min-change, options.MIN_CHANGE
  by default); items with medians under MIN_TIME_NS (within the
  calibration's error), fewer than MIN_CALLS_JUDGED independent calls or
  called in one run of a side of several are described, not judged.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

ALPHA = 0.05  # false discovery rate and interval level (95%)
Z95 = 1.959963984540054

METHOD_ESTIMATE = ("change = ratio AFTER / BEFORE of the median corrected time per call - 1 "
                   "(each run's median, interpolated inside its histogram bucket, averaged in log over the "
                   "side's runs)")
METHOD_INTERVAL = {
    "runs": ("95% interval and p-value from a t-test on the runs' log medians: the runs are the replicates, "
             "so the interval's width is the run-to-run variation, each item's variance moderated by the "
             "spread of all functions' (Smyth's limma: prior df and variance printed in the JSON) and at least "
             "a histogram bucket's; with one run on a side, the other side's runs give the spread; when the "
             "root and most functions moved together (a drift), each run's medians are taken relative to the "
             "run's effect on the typical function and the verdict is on the change against the drift"),
    "one run": ("one run a side cannot measure how much runs differ: the 95% interval and p-value are "
                "Welch's t on the medians of the calls of the two runs (the root calls that called an item as "
                "its independent observations) and leave run-to-run variation out, so no item is called "
                "faster or slower (record 3 runs a side, or --runs-identical)"),
    "calls": ("--runs-identical: the runs are taken to be the same (no run-to-run variation): 95% interval "
              "and p-value from Welch's t on the medians of the pooled calls, the root calls that called an "
              "item counted as its independent observations"),
}
METHOD = ("{estimate}; {interval}; p-values adjusted over the items that could be called (both sides, "
          "medians of at least 0.1 us per call, at least 10 independent calls a side, in two runs of a "
          "side of several): Holm (family-wise 5%) "
          "over the root functions and operations, the primary claims, and Benjamini-Hochberg (FDR 5%) over "
          "the functions and call paths, which say where a change sits; faster/slower needs adjusted "
          "p < 0.05 and |change| >= {min:g}%; the mean is shown beside the verdict")
# A median per call under this, on either side, is not judged: corrected
# times that small are what is left after subtracting a hook cost of about
# 1 us per call, and are within the calibration's own error.
MIN_TIME_NS = 100.0
UNRESOLVED = "under 0.1 us per call (within the calibration's error)"
# An item with fewer independent calls (root calls that called it) on a
# side is described, not judged: a few calls are the work of a few
# requests (an RCU callback batch, a page reclaim), not of the side.
MIN_CALLS_JUDGED = 10
FEW_CALLS = f"fewer than {MIN_CALLS_JUDGED} independent calls on a side"
# Global drift (ftflame.diff.model.global_drift): the median change of the
# functions with at least DRIFT_MIN_CALLS independent calls a side, when at
# least DRIFT_MIN_FUNCTIONS are compared, is a drift when at least DRIFT_MIN
# away from 0 with DRIFT_SHARE of the functions moving its way.
DRIFT_MIN = 0.01
DRIFT_SHARE = 2.0 / 3.0
DRIFT_MIN_FUNCTIONS = 20
DRIFT_MIN_CALLS = 10
# The mean and the typical call disagree when they move in opposite
# directions, each by at least this much.
MEAN_MEDIAN_APART = 0.01


def method_text(min_change: float, mode: str = "runs", focus: tuple = ()) -> str:
    """The method line: what the estimate and the interval are made of
    (mode: "runs", "one run", "calls"; ftflame.diff.model.mode; focus: the
    functions named with --focus)."""
    text = METHOD.format(estimate=METHOD_ESTIMATE, interval=METHOD_INTERVAL[mode], min=min_change * 100)
    if focus:
        text += ("; the functions named with --focus (" + ", ".join(focus) + ") are questions of their own: "
                 "Holm (family-wise 5%) over them alone, not among every function")
    return text


def moments_mean_var(n, s1, s2):
    """Mean and (unbiased) variance from count, sum and sum of squares;
    variance inf where fewer than 2 calls (nothing to say about noise)."""
    n = np.asarray(n, dtype=np.float64)
    mean = np.divide(s1, n, out=np.zeros(len(n)), where=n > 0)
    ex2 = np.divide(s2, n, out=np.zeros(len(n)), where=n > 0)
    var = np.maximum(ex2 - mean * mean, 0.0) * np.divide(n, n - 1, out=np.zeros(len(n)), where=n > 1)
    return mean, np.where(n > 1, var, np.inf)


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


def weighted_medians(keys: np.ndarray, values: np.ndarray, weights: np.ndarray, nkeys: int,
                     widths: np.ndarray | None = None) -> np.ndarray:
    """Per key, the weighted median of its values; 0 for a key without
    values. An entry with a width (a histogram bucket's, ns) stands for
    calls spread evenly over it: the median is interpolated inside the
    bucket where the running weight reaches half (the grouped-data
    median), so that it moves smoothly with the calls instead of a whole
    bucket (3 to 6%) at once; entries of width 0 are exact values (the
    lower weighted median). One sort for all keys."""
    out = np.zeros(nkeys)
    if not len(keys):
        return out
    order = np.lexsort((values, keys))
    k, v, w = keys[order], values[order], np.asarray(weights, dtype=np.float64)[order]
    wd = np.asarray(widths, dtype=np.float64)[order] if widths is not None and len(widths) else np.zeros(len(k))
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    cw = np.cumsum(w)
    base = np.repeat(np.r_[0.0, cw[starts[1:] - 1]], np.diff(np.r_[starts, len(k)]))
    within = cw - base
    total = np.repeat(within[np.r_[starts[1:] - 1, len(k) - 1]], np.diff(np.r_[starts, len(k)]))
    reached = within >= total / 2.0
    # first reaching entry per key: among reached entries, the first of each key
    idx = np.flatnonzero(reached)
    first = idx[np.r_[True, k[idx][1:] != k[idx][:-1]]]
    frac = np.divide(total[first] / 2.0 - (within[first] - w[first]), w[first], out=np.full(len(first), 0.5),
                     where=w[first] > 0)
    out[k[first]] = np.maximum(v[first] + (np.clip(frac, 0.0, 1.0) - 0.5) * wd[first], 0.0)
    return out


# ---- the run-level test (the default): runs are the replicates ---------------

# Times under this are compared as this: a corrected time of a few ns is
# the calibration's residue, and its log would weigh as much as a real
# factor of 100.
LOG_MIN_NS = 10.0
# How the interval of an item was made (Table.basis, in every output).
BASIS_RUNS = "runs"  # t over the runs' estimates (several runs on a side)
# A value read from the histograms is known to its 1/16-octave bucket: the
# log of a value uniform in the bucket varies by (ln 2 / 16)^2 / 12. Added
# to the calls' variance of such items, so that calls all in one bucket on
# each side do not make an interval of zero width around a change of a
# whole bucket.
BUCKET_VAR = (math.log(2.0) / 16.0) ** 2 / 12.0
# The sampling variance of a median of n calls is about pi/2 times that of
# their mean (exactly so for normal values; the log times are near enough).
MEDIAN_VAR = math.pi / 2.0
BASIS_CALLS = "calls"  # calls taken as independent (one run a side, or --runs-identical)
BASIS_NONE = ""  # not compared (a side without calls, or too few)


def log_moments(item, value, weight, m: int):
    """Per item 0..m-1: (calls, mean, variance) of the log of its calls'
    times (weighted by calls; values floored at LOG_MIN_NS): the
    variance sets the sampling error of a median of them (MEDIAN_VAR)."""
    item = np.asarray(item, dtype=np.int64)
    w = np.asarray(weight, dtype=np.float64)
    lv = np.log(np.maximum(np.asarray(value, dtype=np.float64), LOG_MIN_NS))
    n = np.bincount(item, weights=w, minlength=m)
    s1 = np.bincount(item, weights=w * lv, minlength=m)
    mean = np.divide(s1, n, out=np.full(m, np.nan), where=n > 0)
    dev = lv - np.nan_to_num(mean)[item] if len(item) else lv
    ss = np.bincount(item, weights=w * dev * dev, minlength=m)
    var = np.divide(ss, n - 1.0, out=np.zeros(m), where=n > 1)
    return n, mean, var


def _betacf(a, b, x, iters: int = 300):
    """The continued fraction of the regularized incomplete beta function
    (modified Lentz), elementwise."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = 1.0 - qab * x / qap
    d = np.where(np.abs(d) < tiny, tiny, d)
    d = 1.0 / d
    h = d.copy()
    for k in range(1, iters + 1):
        m2 = 2.0 * k
        aa = k * (b - k) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = np.where(np.abs(d) < tiny, tiny, d)
        c = 1.0 + aa / c
        c = np.where(np.abs(c) < tiny, tiny, c)
        d = 1.0 / d
        h *= d * c
        aa = -(a + k) * (qab + k) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = np.where(np.abs(d) < tiny, tiny, d)
        c = 1.0 + aa / c
        c = np.where(np.abs(c) < tiny, tiny, c)
        d = 1.0 / d
        delta = d * c
        h *= delta
        if np.all(np.abs(delta - 1.0) < 1e-15):
            break
    return h


def _betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b), elementwise."""
    a, b, x = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (a, b, x)))
    out = np.where(x <= 0, 0.0, 1.0)
    inside = (x > 0) & (x < 1)
    if not inside.any():
        return out
    a, b, x = a[inside], b[inside], x[inside]
    lg = np.vectorize(math.lgamma, otypes=[float])
    front = np.exp(lg(a + b) - lg(a) - lg(b) + a * np.log(x) + b * np.log1p(-x))
    flip = x > (a + 1.0) / (a + b + 2.0)
    aa, bb, xx = np.where(flip, b, a), np.where(flip, a, b), np.where(flip, 1.0 - x, x)
    cf = front * _betacf(aa, bb, xx) / aa
    out[inside] = np.where(flip, 1.0 - cf, cf)
    return out


def t_two_sided_p(t, df):
    """P(|T| >= |t|) for Student's t with df degrees of freedom (df may be
    fractional, Welch's), elementwise; df inf: the normal's."""
    t, df = np.broadcast_arrays(np.abs(np.asarray(t, dtype=np.float64)), np.asarray(df, dtype=np.float64))
    out = np.ones(t.shape)
    big = ~np.isfinite(df) | (df > 1e6)
    norm = big & np.isfinite(t)
    out[norm] = [math.erfc(v / math.sqrt(2.0)) for v in t[norm].tolist()]
    out[big & np.isinf(t)] = 0.0
    small = ~big & (df > 0)
    if small.any():
        tt, dd = t[small], df[small]
        x = np.where(np.isinf(tt), 0.0, dd / (dd + np.where(np.isinf(tt), 0.0, tt) ** 2))
        out[small] = _betainc(dd / 2.0, np.full(len(dd), 0.5), x)
    return np.clip(out, 0.0, 1.0)


def t_quantile_975(df):
    """The 97.5% point of Student's t (the half-width of a 95% interval in
    standard errors), elementwise. Under 30 df by bisection over the
    distinct df (rounded down to 0.01: a little wider, never narrower);
    from 30 df the Cornish-Fisher expansion (Abramowitz and Stegun 26.7.5,
    within 1e-6 there), so that thousands of distinct Welch df cost no
    bisection each."""
    df = np.asarray(df, dtype=np.float64)
    out = np.full(df.shape, Z95)
    fin = np.isfinite(df) & (df <= 1e6)
    big = fin & (df >= 30)
    if big.any():
        z, v = Z95, df[big]
        g1 = (z ** 3 + z) / 4
        g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
        g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
        g4 = (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160
        out[big] = z + g1 / v + g2 / v ** 2 + g3 / v ** 3 + g4 / v ** 4
    small = fin & ~big
    if not small.any():
        return out
    d = np.maximum(np.floor(df[small] * 100.0) / 100.0, 0.01)
    uniq, inv = np.unique(d, return_inverse=True)
    lo, hi = np.full(len(uniq), Z95 - 1e-9), np.full(len(uniq), 1e7)
    for _ in range(90):
        mid = np.sqrt(lo * hi)  # geometric bisection: the bracket spans 1.96 .. 1e7
        tail = t_two_sided_p(mid, uniq)
        above = tail > ALPHA  # mid is not far enough out
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    out[small] = hi[inv]
    return out


def holm(p) -> np.ndarray:
    """Holm's step-down adjusted p-values: family-wise error controlled
    (the primary claims: root functions and operations)."""
    p = np.asarray(p, dtype=np.float64)
    m = len(p)
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


def p_text(q: float) -> str:
    """A p-value as every output prints it (two significant digits); the
    JSON's number is float() of this, the HTML prints it as is."""
    if q is None or not math.isfinite(q):
        return "-"
    return f"{q:.2g}"


def _digamma(x):
    x = np.asarray(x, dtype=np.float64).copy()
    out = np.zeros_like(x)
    while np.any(x < 6):
        small = x < 6
        out[small] -= 1.0 / x[small]
        x[small] += 1.0
    inv = 1.0 / (x * x)
    return out + np.log(x) - 0.5 / x - inv * (1.0 / 12 - inv * (1.0 / 120 - inv / 252))


def _trigamma(x):
    x = np.asarray(x, dtype=np.float64).copy()
    out = np.zeros_like(x)
    while np.any(x < 6):
        small = x < 6
        out[small] += 1.0 / (x[small] * x[small])
        x[small] += 1.0
    inv = 1.0 / (x * x)
    return out + 1.0 / x + inv / 2.0 + inv / x * (1.0 / 6 - inv * (1.0 / 30 - inv / 42))


def _tetragamma(x):
    x = np.asarray(x, dtype=np.float64).copy()
    out = np.zeros_like(x)
    while np.any(x < 6):
        small = x < 6
        out[small] -= 2.0 / x[small] ** 3
        x[small] += 1.0
    inv = 1.0 / (x * x)
    return out - inv - inv / x - inv * inv * (0.5 - inv * (1.0 / 6 - inv / 6))


def _trigamma_inverse(y: float) -> float:
    """x with trigamma(x) = y (Newton, as Smyth's limma does)."""
    if y > 1e7:
        return 1.0 / math.sqrt(y)
    if y < 1e-6:
        return 1.0 / y
    x = 0.5 + 1.0 / y
    for _ in range(50):
        tri = float(_trigamma(np.array([x]))[0])
        step = tri * (1.0 - tri / y) / float(_tetragamma(np.array([x]))[0])
        x += step
        if -step / x < 1e-8:
            break
    return x


# Below this many items with a run-to-run variance the prior is not fitted
# (each item keeps its own variance and df).
PRIOR_MIN_ITEMS = 10


def _nanmean(a, axis=0):
    """np.nanmean without its warning for a column of NaN only (an item a
    side lacks: NaN is the answer)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(a, axis=axis)


def run_variance(est_b, est_a, k_b, k_a):
    """Per item, the runs' pooled variance of their log estimates around
    their side's mean, and its degrees of freedom (k_b - 1 + k_a - 1; a
    side of one run adds none). NaN, 0 where no side has two runs."""
    with np.errstate(all="ignore"):
        ss = np.zeros(est_b.shape[1])
        for est in (est_b, est_a):
            if est.shape[0]:
                mean = _nanmean(np.where(np.isfinite(est), est, np.nan))
                ss += np.nansum((est - mean) ** 2, axis=0)
        d = np.maximum(np.asarray(k_b, dtype=np.float64) - 1, 0) + np.maximum(np.asarray(k_a, dtype=np.float64) - 1, 0)
        s2 = np.where(d > 0, ss / np.maximum(d, 1), np.nan)
    return s2, d


def variance_prior(s2, d):
    """The prior of the items' run-to-run variances (Smyth 2004, limma's
    fitFDist): s2 ~ s0^2 F(d, d0), d0 and s0^2 by the moments of log s2.
    (d0, s0^2); (0, nan) when too few items: no moderation."""
    s2, d = np.asarray(s2, dtype=np.float64), np.asarray(d, dtype=np.float64)
    ok = np.isfinite(s2) & (s2 > 0) & (d > 0)
    if ok.sum() < PRIOR_MIN_ITEMS:
        return 0.0, float("nan")
    z = np.log(s2[ok])
    half = d[ok] / 2.0
    e = z - _digamma(half) + np.log(half)
    emean = float(e.mean())
    evar = float(((e - emean) ** 2).sum() / (len(e) - 1) - _trigamma(half).mean())
    if evar <= 0:
        return float("inf"), math.exp(emean)
    d0 = 2.0 * _trigamma_inverse(evar)
    s0 = math.exp(emean + float(_digamma(np.array([d0 / 2.0]))[0]) - math.log(d0 / 2.0))
    return d0, s0


def interval_tests(est_b, est_a, k_b, k_a, within_b, within_a, pooled_b, pooled_a, runs_identical: bool,
                   prior=(0.0, float("nan")), resolution=None):
    """Per item: (change, lo, hi, p, df, basis) of AFTER against BEFORE.

    est_*: (runs, items) each run's log median time per call (NaN where the
    run lacks the item); k_*: runs with the item; within_*: per item the
    mean over its runs of (variance of the log times / independent calls):
    the sampling variance of one run's estimate; pooled_*: (mean log,
    variance of log, independent calls) over the side's calls pooled;
    prior: (d0, s0^2) of variance_prior; resolution: per item the least
    variance a run's estimate can have (BUCKET_VAR for values read from
    the histograms: a run's median is known to its bucket, and runs whose
    medians fall in one bucket have not shown that they agree closer).

    A side of several runs (the default): Student's t on the runs'
    estimates with the item's run-to-run variance moderated by the prior
    of all functions' variances (Smyth 2004: (d0 s0^2 + d s^2) / (d0 + d),
    df d0 + d): with 3 runs a side an item's own variance has 4 df, too
    few to tell thousands of items apart, and the functions of one pair of
    machines share part of their run-to-run variation. One run on one side
    adds no df (the other side's spread stands for both). Runs that agree
    to the last digit have not shown a zero spread: then the runs'
    within-run sampling error stands for it. One run a side (or
    runs_identical): the calls as independent observations (n = root calls
    that called the item), Welch's t on the medians (a median's variance
    pi/2 times a mean's), basis "calls". change = ratio of the
    estimates - 1; the interval is symmetric around it in log: the
    estimate lies inside, and its width is 0 only when neither side's
    values vary at all."""
    m = est_b.shape[1]
    change, lo, hi, p, df = (np.full(m, np.nan) for _ in range(5))
    p[:] = 1.0
    basis = np.array([BASIS_NONE] * m, dtype=object)
    k_b, k_a = np.asarray(k_b, dtype=np.float64), np.asarray(k_a, dtype=np.float64)
    with np.errstate(all="ignore"):
        def side_mean(est):
            if not est.shape[0]:
                return np.full(m, np.nan)
            return _nanmean(np.where(np.isfinite(est), est, np.nan))
        gb, ga = side_mean(est_b), side_mean(est_a)
        both = (k_b >= 1) & (k_a >= 1)
        runs = both & (not runs_identical) & ((k_b >= 2) | (k_a >= 2))
        calls = both & ~runs
        s2, d = run_variance(est_b, est_a, k_b, k_a)
        if resolution is not None:
            s2 = np.where(d > 0, np.fmax(s2, resolution), s2)
        d0, s0 = prior
        if d0 == float("inf"):
            mod, dft = np.full(m, s0), np.full(m, np.inf)
        elif d0 > 0:
            mod, dft = (d0 * s0 + d * np.nan_to_num(s2)) / (d0 + d), d0 + d
        else:
            mod, dft = s2, d
        delta = np.full(m, np.nan)
        se2 = np.full(m, np.nan)
        delta[runs] = (ga - gb)[runs]
        floor = np.nan_to_num(within_b) / np.maximum(k_b, 1) + np.nan_to_num(within_a) / np.maximum(k_a, 1)
        # runs that agree to the last digit on both sides have not shown a
        # zero spread: then the calls' own scatter stands for it
        v = mod * (1.0 / np.maximum(k_b, 1) + 1.0 / np.maximum(k_a, 1))
        se2[runs] = np.where(np.nan_to_num(v) > 0, v, floor)[runs]
        df[runs] = dft[runs]
        # calls as independent: the pooled calls' log times
        mb, varb, nb = pooled_b
        ma, vara, na = pooled_a
        ok = calls & (nb >= 2) & (na >= 2)
        delta[calls] = (ma - mb)[calls]
        eb, ea = (varb / nb)[ok], (vara / na)[ok]
        if resolution is not None:  # each side's median is known to its bucket's width
            eb, ea = eb + resolution[ok], ea + resolution[ok]
        se2[ok] = eb + ea
        df[ok] = np.where(eb + ea > 0, (eb + ea) ** 2 / (eb * eb / (nb[ok] - 1) + ea * ea / (na[ok] - 1)), np.inf)
        have = np.isfinite(se2) & np.isfinite(delta) & (df > 0)
        se = np.sqrt(se2)
        tq = t_quantile_975(df)
        change[both] = np.expm1(delta[both])
        lo[have] = np.expm1(delta[have] - tq[have] * se[have])
        hi[have] = np.expm1(delta[have] + tq[have] * se[have])
        zero = have & (se == 0)
        tstat = np.where(zero, np.where(delta == 0, 0.0, np.inf), np.abs(delta) / np.where(se > 0, se, 1.0))
        p[have] = t_two_sided_p(tstat[have], df[have])
    basis[runs & have] = BASIS_RUNS
    basis[calls & have] = BASIS_CALLS
    return change, lo, hi, p, df, basis
