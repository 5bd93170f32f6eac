"""Corrected times against the truth (docs/overhead.md "Hook level"
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
from ftflame.model.profile import SAMPLE_GAP, Calibration

S15 = "k6.1/s15-icount-calib/"


def calibration_of(d: str, drop_level: bool = False) -> Calibration:
    doc = calibrate_from_traces(*(profile_of(fixture(d + n)) for n in (
        "trace-null.dat", "trace-dispatch-root.dat", "trace-dispatch-full.dat")))
    if drop_level:  # a calibration.json written before the hook level (and the sub-buffer moves)
        doc = {k: v for k, v in doc.items() if k not in ("hook_level", "subbuf")}
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


def icount_recording(d: str):
    """(calibration, truth, full, corrected profile) of an icount recording
    folder: nfsd3_proc_write's corrected durations root-only and in the whole
    graph, both from the folder's own empty-call calibration."""
    cal = calibration_of(d)
    truth, _ = corrected_calls(fixture(d + "trace-root.dat"), "nfsd3_proc_write", cal)
    full, q = corrected_calls(fixture(d + "trace-full.dat"), "nfsd3_proc_write", cal)
    return cal, truth, full, q


@pytest.fixture(scope="module")
def s15():
    return icount_recording(S15)


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
    "Accuracy, call by call"): p50 within 10% of the truth, the mean within
    5% of it without the truth's largest call (68 us), which has no
    counterpart among the full trace's clean calls (its two gap calls,
    events lost inside, are left out). p90 (-13.4%; -14.9% before the
    sub-buffer moves were charged per call, -12.0% before the switch
    work was taken out, which brought the switched calls down from where the
    truth's slow group sits) is pinned and explained there: the truth's slow
    group, task work the whole-graph recording does not run (not
    interrupts: s19 below)."""
    _, truth, full, _ = s15
    t, f = figures(truth), figures(full)
    assert len(truth) == 128 and len(full) == 116
    assert abs(f["p50"] / t["p50"] - 1) < 0.10
    assert abs(f["mean"] / t["mean"] - 1) < 0.10
    assert abs(f["mean"] / truth[:-1].mean() - 1) < 0.05
    # the figures quoted in docs/overhead.md
    assert (round(t["mean"]), round(t["p50"]), round(t["p90"])) == (10209, 8916, 12578)
    assert (round(f["mean"]), round(f["p50"]), round(f["p90"])) == (9562, 8922, 10898)


def test_old_calibration_files_keep_the_single_cost(s15):
    """A calibration.json without hook_level: one O_in/O_out for every call,
    as before (the figures docs/overhead.md quotes for it)."""
    cal = calibration_of(S15, drop_level=True)
    assert hooklevel.reference(cal) is None
    full, _ = corrected_calls(fixture(S15 + "trace-full.dat"), "nfsd3_proc_write", cal)
    f = figures(full)
    assert (round(f["mean"]), round(f["p50"]), round(f["p90"])) == (11070, 11089, 11804)


def test_no_level_from_a_floor_that_is_a_body():
    """A root call whose shortest leaf is far above the calibration's (no
    trivial leaf), or with few leaves, gets no level."""
    from types import SimpleNamespace

    import ftflame.model.profile as prof

    cols = prof.SAMPLE_COLUMNS
    rows = np.zeros((4, len(cols)), dtype=np.int64)
    lm, lv = cols.index("leaf_min"), cols.index("leaves")
    rows[:, lm] = (661, 5000, 661, 653)
    rows[:, lv] = (50, 50, 3, 50)
    fake = SimpleNamespace(samples=rows, scol=lambda n, at=None: rows[:, cols.index(n)] if at is None
                           else rows[at, cols.index(n)])
    assert hooklevel.sample_shift(fake, 656.0).tolist() == [5.0, 0.0, 0.0, 0.0]


def test_a_leaf_below_the_floor_is_no_lower_level(s15):
    """A shortest leaf under the calibration's (653 ns against 656) is a
    body shorter than the NULL procedure's, not a cheaper hook: s15's second
    call, 235 descendants and no interrupt, corrects with the plain writes
    (it came to 10.31 us when its 471 commits were charged -3 ns each), and
    the first call to 12.49 us against the truth's 12.57 (13.21 before)."""
    _, truth, _, q = s15
    order = np.argsort(q.scol("calltime"))
    clean = (q.scol("flags")[order] & SAMPLE_GAP) == 0
    first, second = q.corrected.sample_dur[order][clean][:2]
    assert q.scol("leaf_min")[order][1] == 653 and q.scol("desc")[order][1] == 235
    assert 8700 < second < 9000
    assert abs(first / 12570.0 - 1) < 0.01


def test_corrected_mean_carries_the_calibration_interval(s15):
    """The balance sheet's corrected mean has a 95% half-width propagated
    from the calibration's intervals (ftflame/correct/uncertainty.py): on s15,
    9.469 +- 0.424 us (about 250 descendants x 1.7 ns, less the switch work's
    hooks, which go with the off-CPU time); none without intervals."""
    from ftflame.correct.balance import sheet
    from ftflame.correct.uncertainty import model_error, stat_half_widths

    cal, _, _, q = s15
    b, = sheet(q)
    # the calibration's sampling spread, and the model's own error on 6.1 on top
    i = q.functions.index("nfsd3_proc_write")
    assert stat_half_widths(q, model=False)["functions", "incl"][3][i] == pytest.approx(424.0, abs=1.0)
    m = model_error(q)
    assert m["family"] == "6.1" and "k6.1/s15" in m["pairs"]
    assert b["corrected_mean_pm_ns"] == pytest.approx(424.2 + m["mean"] * b["corrected_mean_ns"], abs=1.0)
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
    return icount_recording(S16_612)


def test_612_corrected_root_against_the_truth(s16_612):
    """Issue 17's acceptance on the 6.12 kernel: the corrected mean of the
    root within 5% of the root-only recording, p50 within 10%; with one hook
    cost for every call they are +7.9% and +16.4% (+10.4% and +16.4% before
    the switch work was taken out). p90 (-24.0%; -22.9% before the sub-buffer
    moves were charged per call, -16.7% before the switch work was taken out) is pinned
    and explained in docs/overhead.md ("Accuracy, call by call"; against a
    truth with its interrupts split off: s19 below)."""
    cal, truth, full, _ = s16_612
    assert "6.12" in cal.details["kernel"] and cal.details["hook_level"]["leaf_min_ns"] == 707.0
    t, f = figures(truth), figures(full)
    assert len(truth) == 128 and len(full) == 128
    assert abs(f["mean"] / t["mean"] - 1) < 0.05
    assert abs(f["p50"] / t["p50"] - 1) < 0.10
    assert (round(t["mean"]), round(t["p50"]), round(t["p90"])) == (14913, 13690, 19693)
    assert (round(f["mean"]), round(f["p50"]), round(f["p90"])) == (14429, 13939, 14970)
    old, _ = corrected_calls(fixture(S16_612 + "trace-full.dat"), "nfsd3_proc_write",
                             calibration_of(S16_612, drop_level=True))
    o = figures(old)
    assert o["mean"] / t["mean"] - 1 > 0.07 and o["p50"] / t["p50"] - 1 > 0.16


def test_612_nested_function_against_its_truth(s16_612):
    """nfsd_vfs_write hooked alone (the truth for a nested function) against
    its corrected mean inside the full graph: within 10% (+0.1%; +0.8% before
    the sub-buffer moves were charged per call, +2.5%
    before the switch work was taken out, +9.7% with one hook cost). Its percentiles inside the graph are approximations
    (marked approx), not compared."""
    from ftflame.correct.corrections import corrected_stats

    cal, _, _, q = s16_612
    truth, _ = corrected_calls(fixture(S16_612 + "trace-vfs-root.dat"), "nfsd_vfs_write", cal)
    cols, approx, _, _ = corrected_stats(q)["functions", "incl"]
    i = q.functions.index("nfsd_vfs_write")
    mean = cols[3][i]
    assert approx[i] == 1 and q.functions.calls_corr[i] == 128
    assert abs(mean / truth.mean() - 1) < 0.10
    assert (round(truth.mean()), round(mean)) == (10040, 10049)


def test_61_s16_against_the_truth_when_recorded():
    """k6.1/s16-icount-calib (make fixtures; not in the repository): the same
    figures on 6.1, from a corpus that has it (skipped otherwise)."""
    _, truth, full, _ = corpus_comparison("k6.1/s16-icount-calib/", "root", "full")
    t, f = figures(truth), figures(full)
    assert abs(f["mean"] / t["mean"] - 1) < 0.05 and abs(f["p50"] / t["p50"] - 1) < 0.10


# Groups of calls that run the same code (docs/overhead.md "Accuracy, call by
# call"): in the full trace by descendant count among the quiet calls (no
# interrupt, no switch inside), in the truth by duration (its groups recur
# every 15th or 31st call, as the full trace's LRU batches do).
# name: (full descendants, truth range us, tolerance)
GROUPS = {
    S15: {"plain write": ((233, 244), (8.7, 9.3), 0.03),
          "LRU batch": ((390, 398), (14.2, 14.5), 0.07),
          "per-CPU page refill": ((304, 308), (21.4, 21.6), 0.03)},
    S16_612: {"plain write": ((229, 245), (13.5, 14.2), 0.03)},
}


@pytest.mark.parametrize("d", [S15, S16_612])
def test_groups_of_the_same_code_against_the_truth(d, request):
    """Matched call by call, each group's median corrected duration within
    3% of the truth's (s15's LRU batch: -6.2%, the one group the hook model
    leaves 1 ns per commit off); the first call (cold) within 3%."""
    cal, truth, _, q = request.getfixturevalue("s15" if d == S15 else "s16_612")
    clean = (q.scol("flags") & SAMPLE_GAP) == 0
    quiet = clean & (q.scol("irq_roots") == 0) & (q.scol("offcpu") == 0)
    desc, corr = q.scol("desc"), q.corrected.sample_dur
    for name, ((lo, hi), (t_lo, t_hi), tol) in GROUPS[d].items():
        f = corr[quiet & (desc >= lo) & (desc <= hi)]
        t = truth[(truth >= t_lo * 1e3) & (truth <= t_hi * 1e3)]
        assert len(f) >= 2 and len(t) >= 2, name
        assert abs(np.median(f) / np.median(t) - 1) < tol, name
    t_root = profile_of(fixture(d + "trace-root.dat"))
    t_first = correct(t_root, for_profile(cal, t_root)).corrected.sample_dur[np.argmin(t_root.scol("calltime"))]
    f_first = corr[np.argmin(q.scol("calltime"))]
    assert abs(f_first / t_first - 1) < 0.03


def test_every_corrected_figure_carries_an_interval(s15):
    """ftflame/correct/uncertainty.py: the root function's figures are exact,
    so their intervals are the figures recomputed from every call moved by
    its own half-width (h_in + D h_sum + R h_out), down and up; a nested
    function's (estimated, the raw ones scaled) carry its mean's relative
    half-width; none with costs given without intervals."""
    from ftflame.correct.corrections import STAT_NAMES, corrected_stats
    from ftflame.correct.uncertainty import root_half_widths, stat_half_widths

    cal, _, full, q = s15
    h = stat_half_widths(q, model=False)["functions", "incl"]
    cols, approx, _, _ = corrected_stats(q)["functions", "incl"]
    i = q.functions.index("nfsd3_proc_write")
    ok = ((q.scol("flags") & SAMPLE_GAP) == 0) & (q.scol("node") == q.scol("node")[0])
    v, w = q.corrected.sample_dur[ok], root_half_widths(q)[ok]
    assert np.array_equal(np.sort(v), full)
    for k, pct in ((4, 50), (5, 90)):
        want = (nearest_rank(np.sort(v + w), pct) - nearest_rank(np.sort(v - w), pct)) / 2
        assert h[k][i] == pytest.approx(want)
    assert h[3][i] == pytest.approx(w.mean()) and h[0][i] == pytest.approx(w.sum())
    assert round(h[3][i]) == 424 and round(h[4][i]) == 406 and round(h[5][i]) == 427
    j = q.functions.index("nfsd_vfs_write")
    assert approx[j] == 1
    rel = h[3][j] / cols[3][j]
    assert [h[k][j] for k in (4, 5, 6)] == pytest.approx([cols[k][j] * rel for k in (4, 5, 6)])
    assert len(STAT_NAMES) == len(h)
    given = Calibration(656.0, 657.1, "command line", "given", {"command_line": {"o_in": 656.0}})
    p = profile_of(fixture(S15 + "trace-full.dat"))
    assert stat_half_widths(correct(p, given)) is None


def test_self_times_carry_their_intervals_too(s15):
    """A path's corrected self time is its inclusive time minus its counted
    children's: its half-width is calls x h_in + (its task children's and
    interrupt subtrees' calls) x h_out, the inclusive one's minus theirs."""
    from ftflame.correct.corrections import clean, counted_children
    from ftflame.correct.uncertainty import cost_half_widths, node_half_widths, stat_half_widths
    from ftflame.model.profile import NODE_IRQ_ROOT

    cal, _, _, q = s15
    h_in, _, h_out = cost_half_widths(q.calibration)
    incl, excl = node_half_widths(q), stat_half_widths(q, model=False)["nodes", "excl"][0]
    parent, calls = q.col("parent"), clean(q, "calls")
    r = int(q.scol("node")[0])  # nfsd3_proc_write, a root
    kids = np.flatnonzero(parent == r)
    counted = counted_children(q, "exclude")
    assert excl[r] == pytest.approx(incl[r] - incl[kids[counted[kids]]].sum())
    irq_kids = kids[(q.col("flags")[kids] & NODE_IRQ_ROOT) != 0]
    # (a child's detached calls, complete under a call of r left out, are in none of r's clean calls)
    inside = calls - q.col("det_calls")
    want = calls[r] * h_in + (inside[kids[counted[kids]]].sum() + inside[irq_kids].sum()) * h_out
    assert excl[r] == pytest.approx(want) and 0 < excl[r] < incl[r]
    leaves = np.bincount(parent[parent >= 0], minlength=q.nrows) == 0
    assert np.allclose(excl[leaves], incl[leaves])


# ---- s19-icount-irq: the truth recorded again with the interrupt entry
# functions hooked beside the root (irq_enter_rcu, __sysvec_*, irq_exit_rcu, the
# softirq actions: what collect.sh --baseline hooks), all in one boot
# (tests/vm/fixtures/k*/s19-icount-irq; docs/overhead.md "Figures: the truth
# with its interrupts split off")
S19_612 = "k6.12/s19-icount-irq/"
S19_61 = "k6.1/s19-icount-irq/"


@pytest.mark.parametrize("d, cal_dir", [(S19_612, S19_612), (S19_61, S15)])
def test_an_interrupt_in_a_root_only_truth_is_split_off(d, cal_dir):
    """A tick inside a root-only nfsd_vfs_write call records as
    irq_enter_rcu, __sysvec_apic_timer_interrupt and irq_exit_rcu (with the
    softirqs nested in it): three interrupt subtrees, which the correction
    takes out as in a whole-graph trace; the call then corrects to within
    0.15 us of the quiet calls' median (19-25 us raw, 12-13 us of
    interrupts). With them kept in (--irqs include: the subtrees' calls
    then count as descendants, their hook cost taken out) it is 2.4-5.5 us
    above. 6.1's calibration is s15's (the same kernel in another boot: its
    root-only hook cost differs by 0.1 ns)."""
    cal = calibration_of(cal_dir)
    p = profile_of(fixture(d + "trace-vfs-root-irq.dat"))
    for irqs, lo, hi in (("exclude", 0, 150), ("include", 2000, 13000)):
        q = correct(p, for_profile(cal, p), irqs=irqs)
        roots, c = q.scol("irq_roots"), q.corrected.sample_dur
        quiet = np.median(c[(roots == 0) & (q.scol("offcpu") == 0)])
        hit = c[roots > 0] - quiet
        assert len(hit) >= 1 and (roots[roots > 0] == 3).all()
        assert ((hit > lo) & (hit < hi)).all(), (irqs, hit)


@pytest.fixture(scope="module")
def s19_612():
    """(plain truth, split truth, full: sorted corrected durations of the
    clean root calls; the three corrected profiles), the folder's own
    calibration."""
    cal = calibration_of(S19_612)
    got = [corrected_calls(fixture(S19_612 + n), "nfsd3_proc_write", cal)
           for n in ("trace-root.dat", "trace-root-irq.dat", "trace-full.dat")]
    return [v for v, _ in got], [q for _, q in got]


def test_612_the_truths_slow_group_is_no_interrupt(s19_612):
    """With the interrupt entries hooked, none of the truth's 128 calls holds
    an interrupt (a tick every 4 ms, 14 us of each 125 us write cycle in the
    root call), and the plain truth's slow group (20.45-20.50 us raw: 6.0 us
    above the plain calls, the same to the ns) is still there, once instead
    of 7 times (1 and 8 in a second boot): task work whose frequency varies between recordings, not
    the interrupts the last round took it for."""
    _, (plain, split, _) = s19_612
    assert (split.scol("irq_roots") == 0).all() and (plain.scol("irq_roots") == 0).all()

    def slow(q):
        return int(((q.scol("dur") >= 20_440) & (q.scol("dur") <= 20_510)).sum())
    assert (slow(plain), slow(split)) == (7, 1)


def test_612_corrected_root_against_the_split_truth(s19_612):
    """Issue 17's acceptance against the truth with its interrupts split off
    (docs/overhead.md "Figures: the truth with its interrupts split off"):
    the mean within 5% (+0.6%), p50 and p90 within 10% (+1.7%, +2.8%; +3.6,
    +4.8, +5.7% before the sub-buffer moves were charged per call). Before
    the switch work was taken out with the off-CPU time the mean (+5.0%) and
    p90 (+17.6%) missed it: p90 fell on the calls that hold a switch, the
    scheduler's work in the task left in; what remains above the quiet calls
    is the tracer's wake-ups (the ring buffer's irq_work). Its 96 quiet calls (no interrupt subtree, no switch)
    are within 5% of the split truth at the mean, p50 and p90 (+3.3, +4.7,
    +4.6%), and their p90 is 26% below the plain truth's, whose p90 is its
    slow group."""
    (plain, split, full), (_, _, q) = s19_612
    t, p, f = figures(split), figures(plain), figures(full)
    assert len(split) == len(plain) == len(full) == 128
    assert (round(p["mean"]), round(p["p50"]), round(p["p90"])) == (14886, 13690, 19688)
    assert (round(t["mean"]), round(t["p50"]), round(t["p90"])) == (14296, 13682, 13919)
    assert (round(f["mean"]), round(f["p50"]), round(f["p90"])) == (14379, 13908, 14306)
    assert abs(f["mean"] / t["mean"] - 1) < 0.05
    assert abs(f["p50"] / t["p50"] - 1) < 0.10 and abs(f["p90"] / t["p90"] - 1) < 0.10
    clean = (q.scol("flags") & SAMPLE_GAP) == 0
    quiet = np.sort(q.corrected.sample_dur[clean & (q.scol("irq_roots") == 0) & (q.scol("offcpu") == 0)])
    fq = figures(quiet)
    assert len(quiet) == 96
    for k in ("mean", "p50", "p90"):
        assert abs(fq[k] / t[k] - 1) < 0.05, k
    assert fq["p90"] / p["p90"] - 1 < -0.25


def test_612_nested_function_against_its_split_truth(s19_612):
    """nfsd_vfs_write hooked alone with the interrupt entries: its truth
    (one call holds a tick, split off) against its corrected mean in the
    same boot's full graph: within 10% (-0.2%; +1.8% before the sub-buffer
    moves were charged per call, +2.8% before the switch work
    was taken out)."""
    from ftflame.correct.corrections import corrected_stats

    _, (_, _, q) = s19_612
    truth, _ = corrected_calls(fixture(S19_612 + "trace-vfs-root-irq.dat"), "nfsd_vfs_write",
                               calibration_of(S19_612))
    cols, _, _, _ = corrected_stats(q)["functions", "incl"]
    mean = cols[3][q.functions.index("nfsd_vfs_write")]
    assert abs(mean / truth.mean() - 1) < 0.10
    assert (round(truth.mean()), round(mean)) == (10035, 10012)


def corpus_comparison(d: str, truth_name: str, full_name: str):
    """(calibration document, truth, full, corrected full profile) of a
    recording folder of the corpus (skipped when absent): nfsd3_proc_write's
    corrected durations in trace-TRUTH_NAME.dat and trace-FULL_NAME.dat,
    both from the folder's own empty-call calibration."""
    from conftest import corpus_fixture

    paths = {n: corpus_fixture(d + "trace-" + n + ".dat")
             for n in ("null", "dispatch-root", "dispatch-full", truth_name, full_name)}
    doc = calibrate_from_traces(*(profile_of(paths[n]) for n in ("null", "dispatch-root", "dispatch-full")))
    cal = Calibration(doc["o_in_ns"], doc["o_out_ns"], "file:test", doc["method"], doc)
    truth, _ = corrected_calls(paths[truth_name], "nfsd3_proc_write", cal)
    full, q = corrected_calls(paths[full_name], "nfsd3_proc_write", cal)
    return doc, truth, full, q


def test_61_s19_against_the_split_truth_when_recorded():
    """k6.1/s19-icount-irq's comparison (the full trace and calibration only
    in a corpus that has them; skipped otherwise): mean and p50 within 5%
    of the split truth (-1.2%, -0.1%), p90 -10.9% (the truth's slow group,
    3 calls, which the whole-graph recording does not run)."""
    _, truth, full, _ = corpus_comparison(S19_61, "root-irq", "full")
    t, f = figures(truth), figures(full)
    assert abs(f["mean"] / t["mean"] - 1) < 0.05 and abs(f["p50"] / t["p50"] - 1) < 0.05
    assert -0.12 < f["p90"] / t["p90"] - 1 < -0.09


def test_612_reader_asleep_against_the_split_truth_when_recorded():
    """k6.12/s19-icount-irq's trace-full-quiet.dat (a corpus that has it;
    skipped otherwise): the whole graph recorded with trace-cmd's reader left
    asleep (buffer_percent 100, 32 MB buffer): no ring-buffer wake-up inside
    the calls, every call at the calibration's hook level; against the
    same boot's split truth issue 17's acceptance holds: mean -3.7%, p50
    -4.0%, p90 +2.1%."""
    doc, truth, full, q = corpus_comparison(S19_612, "root-irq", "full-quiet")
    t, f = figures(truth), figures(full)
    assert (q.scol("leaf_min") <= doc["hook_level"]["leaf_min_ns"]).all()
    assert abs(f["mean"] / t["mean"] - 1) < 0.05 and abs(f["p50"] / t["p50"] - 1) < 0.05
    assert abs(f["p90"] / t["p90"] - 1) < 0.10


# ---- s20-icount-volume: like for like at volume, in the mode a user should
# record for accuracy (collect.sh --buffer-percent 100): one boot per kernel,
# every recording with trace-cmd's reader asleep (buffer_percent 100, 32 MB
# buffer, nothing lost): the calibration, the split truths over 4,096 writes
# and 8 whole-graph recordings of 128 writes, of which the repository keeps
# the first 2 (docs/overhead.md "Figures: like for like at volume")
S20 = {"6.1": "k6.1/s20-icount-volume/", "6.12": "k6.12/s20-icount-volume/"}
S20_FULL = ("full-1", "full-2")


def pooled_comparison(d: str, full_names, locate=fixture):
    """(truth, pooled full, the full traces' corrected profiles): nfsd3_proc_write's
    corrected durations in the split truth over 4,096 writes and in the whole-graph
    recordings pooled, all from the folder's own empty-call calibration; locate:
    fixture (the curated copies) or corpus_fixture (skips when absent)."""
    doc = calibrate_from_traces(*(profile_of(locate(d + "trace-" + n + ".dat"))
                                  for n in ("null", "dispatch-root", "dispatch-full")))
    cal = Calibration(doc["o_in_ns"], doc["o_out_ns"], "file:test", doc["method"], doc)
    truth, _ = corrected_calls(locate(d + "trace-root-irq-long.dat"), "nfsd3_proc_write", cal)
    got = [corrected_calls(locate(d + "trace-" + n + ".dat"), "nfsd3_proc_write", cal) for n in full_names]
    return truth, np.sort(np.concatenate([v for v, _ in got])), [q for _, q in got]


@pytest.fixture(scope="module", params=sorted(S20))
def s20(request):
    return request.param, pooled_comparison(S20[request.param], S20_FULL)


# (mean, p50, p90) of the split truth and of the 2 whole-graph recordings pooled, ns
S20_FIGURES = {
    "6.1": ((16986, 16448, 16727), (16763, 16413, 16758)),
    "6.12": ((14325, 13743, 13895), (14144, 13656, 13975)),
}


def test_s20_corrected_root_against_the_split_truth_at_volume(s20):
    """Issue 17's acceptance like for like at volume: every call of the split
    truth and of the whole graph recorded with trace-cmd's reader asleep, the
    switch work taken out with the off-CPU time. On 6.1 mean, p50 and p90 hold
    (-1.3%, -0.2%, +0.2% with the sub-buffer moves charged per call; -2.2%,
    -1.0%, -0.1% before; all 8 recordings pooled -2.2%, -1.1%, -0.9% then). On
    6.12 too, with a margin: -1.3%, -0.6%, +0.6% (before: +1.7%, +2.6%,
    +4.0%; all 8 pooled +1.5%, +2.6%, +3.6%); before the switch work was taken out its p90 was +11.1% (+10.0%
    pooled): 11% of the whole graph's calls hold a switch (the truth's 0.4%),
    and p90 fell on them (the next test)."""
    kernel, (truth, full, _) = s20
    t, f = figures(truth), figures(full)
    assert (len(truth), len(full)) == (4096, 256)
    want_t, want_f = S20_FIGURES[kernel]
    assert tuple(round(t[k]) for k in ("mean", "p50", "p90")) == want_t
    assert tuple(round(f[k]) for k in ("mean", "p50", "p90")) == want_f
    assert abs(f["mean"] / t["mean"] - 1) < 0.05 and abs(f["p50"] / t["p50"] - 1) < 0.05
    assert abs(f["p90"] / t["p90"] - 1) < 0.10
    assert abs(f["p90"] / t["p90"] - 1) < 0.05  # the margin


def test_s20_612_switched_calls_join_the_quiet_ones():
    """Where 6.12's p90 fell before (docs/overhead.md "Switch work"): the calls
    that hold a switch are 11% of the whole graph's calls even with the reader
    asleep. With only their off-CPU time taken out they corrected 1.3 us
    above the quiet ones (8 recordings pooled: 15.40 against 14.08 us median;
    p90 fell among them); with the scheduler's work around each switch taken
    out too, 0.38 us (14.47 against 14.08 in the 2 kept here; 14.42 pooled;
    0.28 us, 13.92 against 13.64, with the sub-buffer moves charged per call),
    and the quiet calls alone stay within 5% of the split truth."""
    truth, _, qs = pooled_comparison(S20["6.12"], S20_FULL)
    t = figures(truth)
    quiet, switched, work = [], [], []
    for q in qs:
        clean = (q.scol("flags") & SAMPLE_GAP) == 0
        sw = clean & (q.scol("switches") > 0)
        switched.append(q.corrected.sample_dur[sw])
        work.append(q.scol("sched")[sw])
        assert ((q.scol("offcpu") > 0) == (q.scol("switches") > 0)).all()  # every switch in a scheduler frame
        quiet.append(q.corrected.sample_dur[clean & ~sw & (q.scol("irq_roots") == 0)])
    quiet, switched = np.concatenate(quiet), np.concatenate(switched)
    assert len(switched) / 256 > 0.09
    assert round(float(np.median(switched))) == 13920 and round(float(np.median(quiet))) == 13643
    assert np.median(switched) / np.median(quiet) - 1 < 0.03
    assert (np.concatenate(work) > 0).all()
    fq = figures(np.sort(quiet))
    for k in ("mean", "p50", "p90"):
        assert abs(fq[k] / t[k] - 1) < 0.05, k


@pytest.mark.parametrize("kernel", sorted(S20))
def test_s20_nested_function_against_its_split_truth_at_volume(kernel):
    """nfsd_vfs_write hooked alone with the interrupt entries over 4,096
    writes against its corrected mean inside the whole graph (the 2
    recordings' calls together): within 10% (6.1 -3.0%, 6.12 +0.8%)."""
    from ftflame.correct.corrections import corrected_stats

    d = S20[kernel]
    cal = calibration_of(d)
    truth, _ = corrected_calls(fixture(d + "trace-vfs-root-irq-long.dat"), "nfsd_vfs_write", cal)
    total = calls = 0.0
    for n in S20_FULL:
        _, q = corrected_calls(fixture(d + "trace-" + n + ".dat"), "nfsd3_proc_write", cal)
        cols, _, _, _ = corrected_stats(q)["functions", "incl"]
        i = q.functions.index("nfsd_vfs_write")
        total += cols[0][i]
        calls += cols[0][i] / cols[3][i]
    assert abs(total / calls / truth.mean() - 1) < 0.10


@pytest.mark.parametrize("kernel", sorted(S20))
def test_s20_all_eight_recordings_pooled_when_recorded(kernel):
    """The 8 whole-graph recordings of s20 pooled (1,024 calls; a corpus
    that has them, skipped otherwise), the switch work taken out: 6.1 -2.2%,
    -1.1%, -0.9%; 6.12 +1.5%, +2.6%, +3.6% (before: +2.2%, +2.6%, +10.0%, p90
    on the limit)."""
    from conftest import corpus_fixture

    truth, full, _ = pooled_comparison(S20[kernel], [f"full-{k}" for k in range(1, 9)], corpus_fixture)
    t, f = figures(truth), figures(full)
    assert len(full) == 1024
    assert abs(f["mean"] / t["mean"] - 1) < 0.05 and abs(f["p50"] / t["p50"] - 1) < 0.05
    assert abs(f["p90"] / t["p90"] - 1) < 0.05
