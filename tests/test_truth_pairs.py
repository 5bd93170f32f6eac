"""Every truth pair against its root-only truth, and the printed 95%
intervals against the truth (issue 38; docs/overhead.md "Accuracy on every
truth pair" and "Uncertainty").

A truth pair: one workload recorded root-only (the truth) and with the whole
graph in one deterministic (icount) boot, with the boot's empty-call
calibration trio (tests/helpers/truthpairs.py). These are measurements, not
timings: the icount clock counts instructions, the same on every machine.

Acceptance (issue 38): the corrected mean within 5% of the truth, p50 within
10%, p90 within 15%, with at least 95% of the root calls clean. The truth is
a sample of the workload too: where the corrected figure misses the bound,
the pair passes only if the bound around it reaches into the truth's own 95%
interval (truthpairs.verdict: "undecided", this truth cannot tell) and the
pair and figure are named in UNDECIDED with why; a figure outside every
value its truth allows ("misses") fails, and so does an UNDECIDED entry that
meets (strict: the list stays true). The bounds are never loosened. The p90
of a 128-call truth is its 13th call from the top and moves with the truth's
own slow calls; the s32 pairs, whose truths have 1,024 calls, measure p90.
"""
from __future__ import annotations

import functools

import pytest

from ftflame.correct import modelerror
from helpers import truthpairs as tp

BOUNDS = tp.BOUNDS

# Where the corrected figure is outside the bound of the truth's figure but
# within it of a value inside the truth's own 95% interval (verdict
# "undecided"): {pair: {figure: why, with the figures (corrected / truth - 1)}}.
UNDECIDED = {
    "k6.1/s15": {"mean": "-6.3%, the truth's own interval -6.9 to +24.4%: the plain truth's one 68 us call (a timer "
                         "tick's interrupt, about 59 us, kept in a truth that hooks no interrupt entry and split off in "
                         "the whole graph) is 0.46 us of its mean; without it -1.9%"},
    "k6.12/s16": {"p90": "-24.0%, the truth's own interval -29.5 to +39.1%: the plain truth has 17 calls above the "
                         "plain level where the whole graph has 12, so its p90 (13th from the top) is a slow call"},
    "k5.10/s31-1": {"p90": "-24.7%, the truth's own interval -26.0 to +0.4%: its p90 21.80 us where its two twin "
                           "truths' are 18.18 and 16.23 (test_a_p90_miss_is_the_truths_own_spread)"},
    "k6.1/s31-2": {"p90": "-18.8%, the truth's own interval -19.4 to +6.3%: its p90 20.49 us where its two twin "
                          "truths' are 16.60 and 16.91 (test_a_p90_miss_is_the_truths_own_spread)"},
}
# The printed interval with the pair left out of the model's error
# (leave-one-pair-out) that does not hold the truth's figure, but agrees
# with it within the 95% interval of their difference (truthpairs.covered).
COVERED_WITH_OWN_SPREAD = {
    "k6.1/s15": {"mean": "0.65 us off against +-0.56 us printed (the other 6.1 pairs miss by 1.3% at most); "
                         "the truth's own half-width below it 0.70 us: 0.89 us together"},
}


@functools.cache
def measured(name: str, model_error: bool = False, leave_out: bool = False):
    return tp.measure(name, model_error=model_error, leave_out=leave_out)


def recorded(name: str):
    pr = measured(name)
    if pr is None:
        pytest.skip(f"{name}: its recordings are neither in tests/data/fixtures nor in a full corpus "
                    "(make fixtures)")
    return pr


@pytest.mark.parametrize("name", list(tp.PAIRS))
def test_corrected_root_against_its_truth(name):
    """Corrected mean, p50 and p90 of the root function's clean calls (the
    figures every output prints) against the root-only recording: within
    the bounds, or, named in UNDECIDED, within them of a value the truth's
    own 95% interval holds."""
    pr = recorded(name)
    assert pr.clean >= 0.95, f"{name}: {pr.clean:.1%} of the root calls clean"
    named = UNDECIDED.get(name, {})
    for k, bound in BOUNDS.items():
        v = tp.verdict(pr.corrected[k], pr.truth[k], pr.own[k], bound)
        lo, hi = (x / pr.truth[k] - 1 for x in pr.own[k])
        said = f"{name} {k}: {pr.error[k]:+.2%}, the truth's own 95% interval {lo:+.1%} to {hi:+.1%}"
        assert v != "misses", said
        assert (v == "undecided") == (k in named), said + (" (undecided: name it in UNDECIDED)" if v == "undecided"
                                                          else " (meets: take it out of UNDECIDED)")


@pytest.mark.parametrize("name", list(tp.PAIRS))
def test_the_printed_interval_holds_the_truth_on_a_pair_it_was_not_set_on(name):
    """The truth inside the printed 95% interval of the corrected mean and
    p50 (the calibration's sampling spread plus the model's error of the
    kernel family), the model's error measured on the OTHER pairs of the
    family (leave-one-pair-out); where it is not (named in
    COVERED_WITH_OWN_SPREAD), the two figures agree within the 95% interval
    of their difference (the truth's own spread added). A family with one
    pair has no error left to measure: its interval says the model's error
    is not in it."""
    pr = recorded(name)
    fam = modelerror.for_kernel(pr.kernel, leave_out=name)
    if fam is None:
        pytest.skip(f"{name}: the only truth pair of its kernel family")
    got = measured(name, model_error=True, leave_out=True)
    named = COVERED_WITH_OWN_SPREAD.get(name, {})
    for k in ("mean", "p50"):
        off = abs(got.corrected[k] - got.truth[k])
        cov = tp.covered(got.corrected[k], got.truth[k], got.half_widths[k], got.own[k])
        said = f"{name} {k}: {off:.0f} ns off, +-{got.half_widths[k]:.0f} ns printed: {cov}"
        assert cov != "no", said
        assert (cov != "yes") == (k in named), said


@pytest.mark.parametrize("name", list(tp.PAIRS))
def test_the_printed_interval_holds_the_truth_with_its_whole_boot_left_out(name):
    """As the leave-one-pair-out test, with every pair of the pair's boot
    left out of the model's error (the twins of s20, s31 and s32 share a
    boot and its calibration): the interval made of the calibration's
    sampling spread and the model's error measured on the family's OTHER
    boots holds the truth, mean and p50 (s15's mean with the truth's own
    spread, as named). 7.3's s31 pairs are checked against its s32 boot
    alone and the other way round."""
    pr = recorded(name)
    fam, boot = modelerror.family(pr.kernel), tp.PAIRS[name][0]
    others = [q for q in modelerror.table()["pairs"]
              if modelerror.family(q["kernel"]) == fam and tp.PAIRS[q["name"]][0] != boot]
    if not others:
        pytest.skip(f"{name}: no other boot of kernel family {fam} in the model's error")
    b = modelerror.bound(others)
    named = COVERED_WITH_OWN_SPREAD.get(name, {})
    for k in ("mean", "p50"):
        hw = pr.half_widths[k] + b[k] * abs(pr.corrected[k])
        cov = tp.covered(pr.corrected[k], pr.truth[k], hw, pr.own[k])
        said = f"{name} {k}: {abs(pr.corrected[k] - pr.truth[k]):.0f} ns off, +-{hw:.0f} ns: {cov}"
        assert cov != "no", said
        assert (cov != "yes") == (k in named), said


@pytest.mark.parametrize("name", list(tp.PAIRS))
def test_the_printed_interval_holds_every_pair_it_was_set_on(name):
    """With every pair of the family in the model's error (as printed), the
    interval holds each pair's truth: the table is the recordings', not
    typed (the pair's figures in model_error.json are those measured here)."""
    pr = recorded(name)
    if name in tp.HELD_OUT:
        pytest.skip(f"{name}: held out of the model's error (truthpairs.HELD_OUT)")
    doc = {p["name"]: p for p in modelerror.table()["pairs"]}
    assert name in doc, f"{name} is recorded but not in model_error.json: run make model-error"
    for k in ("mean", "p50", "p90"):
        assert doc[name]["corrected_ns"][k] == pytest.approx(pr.corrected[k], abs=0.1)
        assert doc[name]["truth_ns"][k] == pytest.approx(pr.truth[k], abs=0.1)
    got = measured(name, model_error=True)
    for k in ("mean", "p50"):
        assert abs(got.corrected[k] - got.truth[k]) <= got.half_widths[k], k


@pytest.mark.parametrize("name", tp.HELD_OUT)
def test_the_printed_interval_holds_the_pairs_held_out(name):
    """6.1's s31 and s32 boots, never in model_error.json: the interval
    every output prints (sampling plus the 6.1 family's model error from
    the other pairs) holds its truth, mean and p50."""
    pr = recorded(name)
    assert name not in {p["name"] for p in modelerror.table()["pairs"]}
    got = measured(name, model_error=True)
    for k in ("mean", "p50"):
        off = abs(got.corrected[k] - got.truth[k])
        assert off <= got.half_widths[k], f"{name} {k}: {off:.0f} ns off, +-{got.half_widths[k]:.0f} ns"
    assert pr.clean >= 0.95


def test_model_error_is_the_largest_miss_of_the_family():
    doc = modelerror.table()
    assert doc["schema"] == modelerror.SCHEMA and doc["pairs"]
    for fam, row in doc["families"].items():
        pairs = [p for p in doc["pairs"] if modelerror.family(p["kernel"]) == fam]
        assert row["pairs"] == [p["name"] for p in pairs]
        for k in ("mean", "p50", "p90"):
            assert row[k] == pytest.approx(max(modelerror.miss(p, k) for p in pairs), abs=1e-5)
    assert modelerror.family("Linux virtme-ng 6.12.117+deb12-amd64 x86_64") == "6.12"
    assert modelerror.family("7.3.4+deb13-amd64") == "7.3"
    assert modelerror.family("") is None and modelerror.family("x86_64") is None


def test_an_interval_says_what_it_is_made_of(monkeypatch):
    """Every output's interval label comes from uncertainty.made_of: with
    the model's error where a truth pair of the kernel family exists; where
    none does, that it is the sampling spread alone; with the in-trace
    estimate, that there is none and why."""
    from conftest import fixture, profile_of
    from ftflame.correct import uncertainty
    from ftflame.correct.calibration import estimate_in_trace, for_profile
    from ftflame.correct.corrections import correct

    cal, _ = tp.calibration("k6.1/s15-icount-calib", [])
    p = profile_of(fixture("k6.1/s15-icount-calib/trace-full.dat"))
    q = correct(p, for_profile(cal, p))
    made = uncertainty.made_of(q)
    assert made["calibration_sampling"] and made["model_error"]["family"] == "6.1"
    assert "model's own error on kernel 6.1" in made["text"]
    i = q.functions.index("nfsd3_proc_write")
    with_model = uncertainty.stat_half_widths(q)["functions", "incl"]
    alone = uncertainty.stat_half_widths(q, model=False)["functions", "incl"]
    assert with_model[3][i] > alone[3][i] and with_model[4][i] > alone[4][i]

    # no pair of this kernel's family: the sampling spread alone, said
    doc = dict(modelerror.table())
    doc["pairs"] = [pr for pr in doc["pairs"] if modelerror.family(pr["kernel"]) != "6.1"]
    monkeypatch.setattr(modelerror, "table", lambda path=modelerror.FILE: doc)
    q2 = correct(p, for_profile(cal, p))
    made = uncertainty.made_of(q2)
    assert made["model_error"] is None and "ONLY" in made["text"] and "kernel 6.1" in made["text"]
    assert uncertainty.stat_half_widths(q2)["functions", "incl"][3][i] == pytest.approx(alone[3][i])

    est = correct(p, estimate_in_trace(p))
    made = uncertainty.made_of(est)
    assert uncertainty.stat_half_widths(est) is None
    assert made["text"].startswith("no 95% intervals: the in-trace estimate has no sampling spread")


def test_an_interval_of_histogram_values_holds_the_value():
    """6.12's O_in (s20: the NULL procedure as a leaf, 709.7 ns exact, every
    leaf in the 719.5 ns bucket of the histogram) got the interval [719.5,
    719.5], which does not hold it: the interval was then left out of every
    output (calibration.intervals). It is kept around the exact mean."""
    cal, _ = tp.calibration("k6.12/s20-icount-volume", [])
    lo, hi = cal.details["o_in"]["ci95_ns"]
    assert lo <= cal.o_in_ns <= hi


def pooled(boot: str, twins=tp.TWINS, which: str = "three write pairs"):
    got = tp.pooled(twins[boot])
    if got is None:
        pytest.skip(f"{boot}: its {which} are neither in tests/data/fixtures nor in a full corpus")
    return got


@pytest.mark.parametrize("boot", list(tp.TWINS))
def test_a_boots_three_runs_pooled_meet_the_bounds(boot):
    """The three identical write pairs of one boot pooled (384 calls a side):
    the corrected mean, p50 and p90 against the three truths' (issue 38's
    bounds, unchanged). One run's p90 is the 13th value from the top of 128,
    and the truth's slow calls come 0 to 7 to a run (docs/overhead.md "The
    truth's own spread"): pooled, a run's luck weighs a third."""
    got = pooled(boot)
    assert got["calls"] == (384, 384)
    for k, bound in BOUNDS.items():
        assert abs(got["error"][k]) <= bound, f"{boot} {k}: {got['error'][k]:+.2%}"


P90_MISSES = [n for n, why in UNDECIDED.items() if "p90" in why]


@pytest.mark.parametrize("name", P90_MISSES)
def test_a_p90_miss_is_the_truths_own_spread(name):
    """Where one pair misses at p90, its truth's p90 is more than 15% away
    from a twin truth's (the same 128 writes, same boot, recorded the same
    way), while the three corrected p90s agree within 2%: the miss is the
    truth's run-to-run spread, which no correction of the other recording
    can follow, not the model's."""
    boot = name.rsplit("-", 1)[0]
    if boot not in tp.TWINS:
        pytest.skip(f"{name}: no twin truth in its boot (docs/overhead.md: s19's plain and split truths, "
                    "6.12, p90 19.68 against 13.92 us in one boot)")
    runs = pooled(boot)["runs"]
    truth = {n: r[0]["p90"] for n, r in runs.items()}
    corr = [r[1]["p90"] for r in runs.values()]
    assert max(corr) / min(corr) - 1 < 0.02, corr
    twins = [t for n, t in truth.items() if n != name]
    assert max(abs(truth[name] / t - 1) for t in twins) > BOUNDS["p90"], truth
    # and the corrected p90 is within the bound of a twin truth of its own boot
    assert min(abs(runs[name][1]["p90"] / t - 1) for t in twins) <= BOUNDS["p90"]


def test_the_pooled_figures_are_the_printed_ones():
    """tp.calls/figures (what the pooled tests use) give, on one pair, the
    figures every output prints (measure: corrections.corrected_stats)."""
    name = "k7.x/s31-1"
    pr = recorded(name)
    t, c = tp.calls(name)
    ft, fc = tp.figures(t), tp.figures(c)
    for k in tp.STATS:
        assert fc[k] == pytest.approx(pr.corrected[k], abs=0.05) and ft[k] == pytest.approx(pr.truth[k], abs=0.05), k


def truths_1k(boot: str):
    return pooled(boot, tp.TWINS_1K, "two 1,024-write pairs")


@pytest.mark.parametrize("boot", list(tp.TWINS_1K))
def test_a_truth_over_1024_calls_has_a_stable_p90(boot):
    """s32: the same 1,024 root-only writes twice in one boot. Their p90s
    (the 103rd call from the top) agree within 3%, where s31's three truths
    over 128 writes differed by up to 34% (docs/overhead.md "The truth's own
    spread"): at this size the truth's p90 is a measurement, and the pairs'
    p90 bound tests the correction."""
    runs = truths_1k(boot)["runs"]
    for name in runs:
        assert measured(name).truth_calls == 1024, name
    t = [r[0]["p90"] for r in runs.values()]
    assert max(t) / min(t) - 1 < 0.03, t


@pytest.mark.parametrize("tick", [0.0, 0.003])
def test_the_truths_own_interval_holds_the_workloads_figure_95_times_in_100(tick):
    """truthpairs.own_interval on 128-call samples of a known workload shaped
    like a plain write truth (icount: a plain level of whole nanoseconds, a
    slow group 6 us up in 3% of the calls, and a timer tick of 59 us in 0.3%
    or in none): over 400 samples, the order-statistic intervals of p50 and
    p90 hold the workload's own at least 95 times in 100 (exact, whatever
    the distribution); the mean's studentized bootstrap at least 93 without
    the tick and 88 with it (over 2,000 samples: 95.4 and 91.5; a plain
    percentile bootstrap held it 89 and 70 times: the samples without a tick
    miss the tick's share of the mean). Short, the interval makes a truth's
    "undecided" stricter, never laxer. The workload's figures come from 4 M
    calls of it."""
    import numpy as np

    rng = np.random.default_rng(38)

    def draw(n):
        x = np.round(rng.normal(16_400, 250, n))
        return x + 6_000 * (rng.random(n) < 0.03) + 59_000 * (rng.random(n) < tick)

    big = draw(4_000_000)
    truth = {"mean": big.mean(), "p50": np.quantile(big, 0.5), "p90": np.quantile(big, 0.9)}
    held = dict.fromkeys(truth, 0)
    trials = 400
    for _ in range(trials):
        x = draw(128)
        for k in truth:
            lo, hi = tp.own_interval(x, k, resamples=500, seed=int(rng.integers(1 << 31)))
            held[k] += lo <= truth[k] <= hi
    assert held["p50"] >= 0.95 * trials and held["p90"] >= 0.95 * trials, held
    assert held["mean"] >= (0.88 if tick else 0.93) * trials, held


def test_order_ranks_are_the_textbook_ones():
    """The distribution-free interval of the median of 10 is the 2nd to the
    9th value (97.9%); of 100, the 40th to the 61st."""
    assert tp.order_ranks(10, 0.5) == (2, 9)
    assert tp.order_ranks(100, 0.5) == (40, 61)
