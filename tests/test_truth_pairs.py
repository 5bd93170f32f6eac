"""Every truth pair against its root-only truth, and the printed 95%
intervals against the truth (issue 38; docs/overhead.md "Accuracy on every
truth pair" and "Uncertainty").

A truth pair: one workload recorded root-only (the truth) and with the whole
graph in one deterministic (icount) boot, with the boot's empty-call
calibration trio (tests/helpers/truthpairs.py). These are measurements, not
timings: the icount clock counts instructions, the same on every machine.

Acceptance (issue 38): the corrected mean within 5% of the truth, p50 within
10%, p90 within 15%, with at least 95% of the root calls clean. A pair that
misses today is xfail (strict: the fix shows) with its figures in the reason;
the bounds are never loosened for it. The p90 of a 128-call truth is its
13th call from the top and moves with the truth's own slow calls (the s31
misses); the s32 pairs, whose truths have 1,024 calls, measure p90."""
from __future__ import annotations

import functools

import pytest

from ftflame.correct import modelerror
from helpers import truthpairs as tp

BOUNDS = {"mean": 0.05, "p50": 0.10, "p90": 0.15}

# What misses the acceptance today, with the figures (corrected / truth - 1).
MISSES = {
    "k6.1/s15": "mean -6.3% (the plain truth's one 68 us call: a timer tick's interrupt, about 59 us, kept "
                "in a truth that hooks no interrupt entry and split off in the whole graph; without it "
                "-1.9%; p90 -13.3%)",
    "k6.12/s16": "p90 -24.0%: the plain truth has 17 calls above the plain level where the whole graph "
                 "has 12, so its p90 (13th from the top) is a slow call, 19.69 us (s19, the same workload "
                 "in another boot: plain truth 19.68, split truth 13.92 us)",
    "k5.10/s31-1": "p90 -24.7% (mean -2.6%, p50 +0.4%): the truth's own spread, its p90 21.80 us where its "
                   "two twin truths' are 18.18 and 16.23 and the three corrected p90s 16.22-16.41 "
                   "(test_a_p90_miss_is_the_truths_own_spread)",
    "k6.1/s31-2": "p90 -18.8% (mean -1.5%, p50 -0.1%): the truth's own spread, its p90 20.49 us where its "
                  "two twin truths' are 16.60 and 16.91 and the three corrected p90s 16.54-16.66 "
                  "(test_a_p90_miss_is_the_truths_own_spread)",
}
# The printed interval with the pair left out of the model's error
# (leave-one-pair-out) that does not hold the truth today.
NOT_COVERED = {
    "k6.1/s15": "mean: -6.3% off, the other 6.1 pairs miss by 1.3% at most: +-0.56 us against 0.65 us off",
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


def pair_params(reasons: dict):
    return [pytest.param(n, marks=pytest.mark.xfail(reason=reasons[n], strict=True)) if n in reasons else n
            for n in tp.PAIRS]


@pytest.mark.parametrize("name", pair_params(MISSES))
def test_corrected_root_against_its_truth(name):
    """Corrected mean, p50 and p90 of the root function's clean calls (the
    figures every output prints) against the root-only recording."""
    pr = recorded(name)
    assert pr.clean >= 0.95, f"{name}: {pr.clean:.1%} of the root calls clean"
    for k, bound in BOUNDS.items():
        assert abs(pr.error[k]) <= bound, f"{name} {k}: {pr.error[k]:+.2%}"


@pytest.mark.parametrize("name", pair_params(NOT_COVERED))
def test_the_printed_interval_holds_the_truth_on_a_pair_it_was_not_set_on(name):
    """The truth inside the printed 95% interval of the corrected mean and
    p50 (the calibration's sampling spread plus the model's error of the
    kernel family), the model's error measured on the OTHER pairs of the
    family (leave-one-pair-out). A family with one pair has no error left
    to measure: its interval says the model's error is not in it."""
    pr = recorded(name)
    fam = modelerror.for_kernel(pr.kernel, leave_out=name)
    if fam is None:
        pytest.skip(f"{name}: the only truth pair of its kernel family")
    got = measured(name, model_error=True, leave_out=True)
    for k in ("mean", "p50"):
        off = abs(got.corrected[k] - got.truth[k])
        assert off <= got.half_widths[k], f"{name} {k}: {off:.0f} ns off, +-{got.half_widths[k]:.0f} ns"


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


P90_MISSES = [n for n, why in MISSES.items() if why.startswith("p90")]


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
