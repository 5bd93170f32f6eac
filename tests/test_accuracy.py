"""Corrected times against the truth (issue 17, docs/overhead.md "Hook level"
and "Accuracy"): deterministic icount recordings where the same fio writes
were recorded with only the root hooked (the truth) and with the whole graph,
corrected with the empty-call calibration of the same recording alone.

The figures are the exact per-root-call corrected durations
(corrections.exact_values): mean, and p50/p90 by nearest rank."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import fixture, profile_of
from ftflame.correct import hooklevel
from ftflame.correct.calibration import calibrate_from_traces, for_profile
from ftflame.correct.corrections import correct, exact_values
from ftflame.model.profile import Calibration

S15 = "k6.1/s15-icount-calib/"


def calibration_of(d: str, drop_level: bool = False) -> Calibration:
    doc = calibrate_from_traces(*(profile_of(fixture(d + n)) for n in (
        "trace-null.dat", "trace-dispatch-root.dat", "trace-dispatch-full.dat")))
    if drop_level:  # a calibration.json written before the hook level
        doc = {k: v for k, v in doc.items() if k != "hook_level"}
    return Calibration(doc["o_in_ns"], doc["o_out_ns"], "file:test", doc["method"], doc)


def corrected_calls(path: str, func: str, cal: Calibration):
    """(sorted corrected durations of func's clean root calls, their profile)."""
    p = profile_of(path)
    q = correct(p, for_profile(cal, p))
    _, by_func = exact_values(q)
    return np.sort(by_func[q.functions.index(func)]), q


def nearest_rank(v: np.ndarray, q: float) -> float:
    return float(v[max(int(np.ceil(len(v) * q / 100.0)) - 1, 0)])


def figures(v: np.ndarray) -> dict:
    return {"mean": float(v.mean()), "p50": nearest_rank(v, 50), "p90": nearest_rank(v, 90)}


@pytest.fixture(scope="module")
def s15():
    cal = calibration_of(S15)
    truth, _ = corrected_calls(fixture(S15 + "trace-root.dat"), "nfsd3_proc_write", cal)
    full, q = corrected_calls(fixture(S15 + "trace-full.dat"), "nfsd3_proc_write", cal)
    return cal, truth, full, q


def test_calibration_records_the_hook_level(s15):
    cal, _, _, _ = s15
    lvl = cal.details["hook_level"]
    # every dispatcher call's shortest leaf (the NULL procedure) takes 656 ns
    assert lvl["leaf_min_ns"] == 656.0 and lvl["samples"] == 100
    assert lvl["min_ns"] == lvl["max_ns"] == 656 and lvl["commits_per_descendant"] == 2
    assert hooklevel.reference(cal) == 656.0


def test_hook_level_brings_the_two_groups_together(s15):
    """The 237-descendant calls of s15 run the same code; without the hook
    level they correct to two groups 2.3 us apart (8.8 and 11.1 us: every
    ring-buffer commit 5 ns dearer in the second); with it, one group."""
    _, _, _, q = s15
    ok = (q.scol("desc") == 237) & (q.scol("irq_roots") == 0) & (q.scol("offcpu") == 0)
    assert ok.sum() == 53
    with_level = q.corrected.sample_dur[ok]
    assert with_level.max() / with_level.min() - 1 < 0.06
    p = profile_of(fixture(S15 + "trace-full.dat"))
    old = correct(p, for_profile(calibration_of(S15, drop_level=True), p)).corrected.sample_dur[ok]
    assert old.max() / old.min() - 1 > 0.25


def test_s15_corrected_root_against_the_truth(s15):
    """Issue 17's acceptance on k6.1/s15-icount-calib (docs/overhead.md
    "Accuracy"): p50 within 10% of the truth. The mean and p90 are pinned
    and explained there: the truth's largest call (68 us) is a gap call of
    the full trace (events lost inside it), left out; without it the truth's
    mean is 9.75 us."""
    _, truth, full, _ = s15
    t, f = figures(truth), figures(full)
    assert len(truth) == 128 and len(full) == 116
    assert abs(f["p50"] / t["p50"] - 1) < 0.10
    assert abs(f["mean"] / t["mean"] - 1) < 0.10
    assert abs(f["mean"] / truth[:-1].mean() - 1) < 0.05
    # the figures quoted in docs/overhead.md
    assert (round(t["mean"]), round(t["p50"]), round(t["p90"])) == (10207, 8909, 12571)
    assert (round(f["mean"]), round(f["p50"]), round(f["p90"])) == (9520, 8824, 11064)


def test_old_calibration_files_keep_the_single_cost(s15):
    """A calibration.json without hook_level: one O_in/O_out for every call,
    as before (the figures docs/overhead.md quotes for it)."""
    cal = calibration_of(S15, drop_level=True)
    assert hooklevel.reference(cal) is None
    full, _ = corrected_calls(fixture(S15 + "trace-full.dat"), "nfsd3_proc_write", cal)
    f = figures(full)
    assert (round(f["mean"]), round(f["p50"]), round(f["p90"])) == (11083, 11089, 12531)


def test_no_level_from_a_floor_that_is_a_body():
    """A root call whose shortest leaf is far above the calibration's (no
    trivial leaf), or with few leaves, gets no level."""
    from types import SimpleNamespace

    import ftflame.model.profile as prof

    cols = prof.SAMPLE_COLUMNS
    rows = np.zeros((3, len(cols)), dtype=np.int64)
    lm, lv = cols.index("leaf_min"), cols.index("leaves")
    rows[:, lm] = (661, 5000, 661)
    rows[:, lv] = (50, 50, 3)
    fake = SimpleNamespace(samples=rows, scol=lambda n: rows[:, cols.index(n)])
    assert hooklevel.sample_shift(fake, 656.0).tolist() == [5.0, 0.0, 0.0]


def test_corrected_mean_carries_the_calibration_interval(s15):
    """The balance sheet's corrected mean has a 95% half-width propagated
    from the calibration's intervals (ftflame/correct/uncertainty.py): on s15,
    9.520 +- 0.434 us (254 descendants x 1.7 ns); none without intervals."""
    from ftflame.correct.balance import sheet

    cal, _, _, q = s15
    b, = sheet(q)
    assert b["corrected_mean_pm_ns"] == pytest.approx(434.0, abs=1.0)
    h_in, h_sum, h_out = (cal.details[k]["ci95_ns"][1] - cal.details[k]["ci95_ns"][0]
                          for k in ("o_in", "o_in_plus_o_out", "o_out"))
    assert h_in == 0 and 0 < h_sum < 5
    given = Calibration(656.0, 657.1, "command line", "given", {"command_line": {"o_in": 656.0}})
    p = profile_of(fixture(S15 + "trace-full.dat"))
    b, = sheet(correct(p, given))
    assert b["corrected_mean_pm_ns"] is None


# ---- k6.12/s16-icount-calib: s15's recording made again on the 6.12 kernel,
# every trace in one boot, plus nfsd_vfs_write hooked alone (tests/vm/fixtures)
S16_612 = "k6.12/s16-icount-calib/"


@pytest.fixture(scope="module")
def s16_612():
    cal = calibration_of(S16_612)
    truth, _ = corrected_calls(fixture(S16_612 + "trace-root.dat"), "nfsd3_proc_write", cal)
    full, q = corrected_calls(fixture(S16_612 + "trace-full.dat"), "nfsd3_proc_write", cal)
    return cal, truth, full, q


def test_612_corrected_root_against_the_truth(s16_612):
    """Issue 17's acceptance on the 6.12 kernel: the corrected mean of the
    root within 5% of the root-only recording, p50 within 10%; with one hook
    cost for every call they were +10.4% and +16.4%. p90 is pinned and
    explained in docs/overhead.md ("Accuracy")."""
    cal, truth, full, _ = s16_612
    assert "6.12" in cal.details["kernel"] and cal.details["hook_level"]["leaf_min_ns"] == 707.0
    t, f = figures(truth), figures(full)
    assert len(truth) == 128 and len(full) == 127
    assert abs(f["mean"] / t["mean"] - 1) < 0.05
    assert abs(f["p50"] / t["p50"] - 1) < 0.10
    assert (round(t["mean"]), round(t["p50"]), round(t["p90"])) == (14913, 13687, 19690)
    assert (round(f["mean"]), round(f["p50"]), round(f["p90"])) == (15060, 14223, 16585)
    old, _ = corrected_calls(fixture(S16_612 + "trace-full.dat"), "nfsd3_proc_write",
                             calibration_of(S16_612, drop_level=True))
    o = figures(old)
    assert o["mean"] / t["mean"] - 1 > 0.10 and o["p50"] / t["p50"] - 1 > 0.16


def test_612_nested_function_against_its_truth(s16_612):
    """nfsd_vfs_write hooked alone (the truth for a nested function) against
    its corrected mean inside the full graph: within 10% (+3.0%; +9.7% with
    one hook cost). Its percentiles inside the graph are approximations
    (marked approx), not compared."""
    from ftflame.correct.corrections import corrected_stats

    cal, _, _, q = s16_612
    truth, _ = corrected_calls(fixture(S16_612 + "trace-vfs-root.dat"), "nfsd_vfs_write", cal)
    cols, approx, _, _ = corrected_stats(q)["functions", "incl"]
    i = q.functions.index("nfsd_vfs_write")
    mean = cols[3][i]
    assert approx[i] == 1 and q.functions.calls_corr[i] == 127
    assert abs(mean / truth.mean() - 1) < 0.10
    assert (round(truth.mean()), round(mean)) == (10040, 10346)


def test_61_s16_against_the_truth_when_recorded():
    """k6.1/s16-icount-calib (make fixtures; not in the repository): the same
    figures on 6.1, from a corpus that has it (skipped otherwise)."""
    from conftest import corpus_fixture

    paths = {n: corpus_fixture("k6.1/s16-icount-calib/trace-" + n + ".dat")
             for n in ("null", "dispatch-root", "dispatch-full", "root", "full", "vfs-root")}
    doc = calibrate_from_traces(*(profile_of(paths[n]) for n in ("null", "dispatch-root", "dispatch-full")))
    cal = Calibration(doc["o_in_ns"], doc["o_out_ns"], "file:test", doc["method"], doc)
    truth, _ = corrected_calls(paths["root"], "nfsd3_proc_write", cal)
    full, _ = corrected_calls(paths["full"], "nfsd3_proc_write", cal)
    t, f = figures(truth), figures(full)
    assert abs(f["mean"] / t["mean"] - 1) < 0.05 and abs(f["p50"] / t["p50"] - 1) < 0.10
