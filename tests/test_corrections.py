"""Corrections (ftflame/correct/corrections.py): the formulas of docs/design.md on hand-made
call trees, exact algebra on every fixture, raw sums untouched."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import FIXTURE_DATS, SAMPLE, fixture, fixture_id, profile_of
from ftflame.correct.calibration import estimate_in_trace
from ftflame.correct.corrections import correct, counted_children, detect_nosleep, function_extras, summary
from ftflame.model.profile import NO_CALIBRATION, Calibration, OffCpu
from ftflame.parse import build_events
from helpers import leafroots
from helpers.events import parse_events

CAL = Calibration(100.0, 50.0, "command line")  # O_in 100 ns, O_out 50 ns


def build(text: str):
    return build_events(parse_events(text), source="test")


def row(p, *path):
    for r in range(p.nrows):
        if tuple(p.path(r)) == path:
            return r
    raise AssertionError(f"no path {path}")


def ci(q, *path):
    return float(q.corrected.incl[row(q, *path)])


def cx(q, *path):
    return float(q.corrected.excl[row(q, *path)])


TREE = """
entry 0 100 root 0
entry 0 100 a 1
entry 0 100 a1 2
exit 0 100 a1 2 1100 1300
exit 0 100 a 1 1000 1600
entry 0 100 b 1
exit 0 100 b 1 1700 1900
exit 0 100 root 0 900 2100
"""


def test_design_formulas_on_a_small_tree():
    """corr_incl = meas_incl - O_in - D*(O_in+O_out); corr_excl = meas_excl -
    O_in - n*O_out; and corr_incl = corr_excl + children."""
    q = correct(build(TREE), CAL)
    assert ci(q, "root") == 1200 - 100 - 3 * 150  # D = 3
    assert ci(q, "root", "a") == 600 - 100 - 1 * 150
    assert ci(q, "root", "a", "a1") == 200 - 100
    assert ci(q, "root", "b") == 200 - 100
    assert cx(q, "root") == (1200 - 600 - 200) - 100 - 2 * 50  # n = 2
    assert cx(q, "root", "a") == (600 - 200) - 100 - 1 * 50
    assert cx(q, "root") == ci(q, "root") - ci(q, "root", "a") - ci(q, "root", "b")
    # the root sample gets the same correction, per call
    assert q.corrected.sample_dur.tolist() == [650.0]
    assert summary(q).overhead_removed_ns == 550.0
    # raw figures untouched
    p = build(TREE)
    assert q.nodes.equals(p.nodes) and np.array_equal(q.samples, p.samples)


IRQ = """
entry 0 100 root 0
entry 0 100 a 1
exit 0 100 a 1 1000 1300
entry 0 100 __sysvec_apic_timer_interrupt 1 flags=0x08
entry 0 100 hrtimer_interrupt 2 flags=0x08
exit 0 100 hrtimer_interrupt 2 1500 1700 flags=0x08
exit 0 100 __sysvec_apic_timer_interrupt 1 1400 1900 flags=0x08
exit 0 100 root 0 900 2100
"""


def test_irq_subtree_excluded_by_default():
    q = correct(build(IRQ), CAL)
    # root: 1200 measured, 500 of them an interrupt subtree (2 calls, not in
    # D); the interrupt's own O_out (its hook before its calltime) goes too
    assert ci(q, "root") == 1200 - 500 - 100 - 1 * 150 - 1 * 50
    assert cx(q, "root") == ci(q, "root") - ci(q, "root", "a")
    assert cx(q, "root") == (1200 - 300 - 500) - 100 - 1 * 50 - 50
    irq = ("root", "__sysvec_apic_timer_interrupt")
    assert ci(q, *irq) == 500 - 100 - 1 * 150  # corrected on its own
    assert cx(q, *irq) == ci(q, *irq) - ci(q, *irq, "hrtimer_interrupt")
    assert q.corrected.irq_removed[row(q, "root")] == 500
    assert q.corrected.sample_dur.tolist() == [ci(q, "root")]
    assert not counted_children(q, "exclude")[row(q, *irq)]


def test_irq_subtree_included_on_request():
    q = correct(build(IRQ), CAL, irqs="include")
    assert ci(q, "root") == 1200 - 100 - 3 * 150  # the irq calls count in D
    kids = ci(q, "root", "a") + ci(q, "root", "__sysvec_apic_timer_interrupt")
    assert cx(q, "root") == ci(q, "root") - kids == (1200 - 300 - 500) - 100 - 2 * 50
    assert q.corrected.irq_removed[row(q, "root")] == 0
    assert q.corrected.sample_dur.tolist() == [ci(q, "root")]


# The task switches out inside schedule(), records the tail of __schedule
# (switch_mm) after its sched_switch event, then another task switches it in.
OFFCPU = """
entry 0 100 root 0 ts=10
entry 0 100 schedule 1 ts=20
switch 0 100 0 30
entry 0 100 switch_mm 2 ts=31
exit 0 100 switch_mm 2 1040 1060 ts=32
switch 0 0 100 530
exit 0 100 schedule 1 1010 1800 ts=540
exit 0 100 root 0 900 2000 ts=550
"""


def test_offcpu_time_survives_the_schedule_tail():
    p = build(OFFCPU)
    off = p.col("offcpu")
    assert off[row(p, "root")] == 500 and off[row(p, "root", "schedule")] == 500
    assert off[row(p, "root", "schedule", "switch_mm")] == 0
    q = correct(p, NO_CALIBRATION, offcpu="keep")
    assert ci(q, "root") == 1100 and ci(q, "root", "schedule") == 790
    q = correct(p, NO_CALIBRATION)
    # schedule() was the switch frame: its 290 ns on the CPU (switch_mm's
    # 20 among them: the tail, after the switch-out, is inside the 500 ns
    # off-CPU) are the scheduler's work, taken out with the off-CPU time
    assert p.col("sched")[row(p, "root")] == 790 - 500
    assert ci(q, "root") == 1100 - 500 - 290
    assert ci(q, "root", "schedule") == 0.0
    assert cx(q, "root") == 1100 - 790


def test_missed_switch_in_charges_nothing():
    """Another task runs on the CPU, then ours records again without a
    switch-in event: its switch-in was lost; no off-CPU time is invented."""
    p = build("""
entry 0 100 root 0 ts=10
switch 0 100 200 30
entry 0 200 other 0 ts=40
exit 0 200 other 0 2000 2100 ts=50
exit 0 100 root 0 900 3000 ts=60
""")
    assert p.col("offcpu")[row(p, "root")] == 0


def test_nosleep_time_is_not_subtracted_twice():
    """With nosleep-time, durations already exclude the time switched out:
    a call cannot last less than it was switched out with sleep-time."""
    p = build("""
entry 0 100 root 0 ts=10
switch 0 100 0 100
switch 0 0 100 100000
exit 0 100 root 0 99500 100300 ts=100010
""")
    assert detect_nosleep(p)
    q = correct(p, NO_CALIBRATION)
    assert q.corrected.offcpu is OffCpu.KEPT_NOSLEEP and q.corrected.offcpu_reason == detect_nosleep(p)
    assert ci(q, "root") == 800
    assert detect_nosleep(build(OFFCPU)) is None
    # no sched_switch events (as in trace-full-nosleep.dat): nothing to subtract
    p = profile_of(fixture("k6.1/s15-icount-calib/trace-full-nosleep.dat"))
    assert p.counters["switches"] == 0 and p.col("offcpu").sum() == 0
    # every other fixture records wall time
    for path in FIXTURE_DATS:
        assert detect_nosleep(profile_of(path)) is None, path


def test_clamps_keep_the_identity():
    """A leaf shorter than O_in clamps at 0; children whose corrected times
    exceed their parent's are scaled to fit; both counted."""
    p = build("""
entry 0 100 root 0
entry 0 100 tiny 1
exit 0 100 tiny 1 1000 1060
entry 0 100 b 1
exit 0 100 b 1 1100 1500
exit 0 100 root 0 990 1520
""")
    cal = Calibration(100.0, 80.0, "command line")
    q = correct(p, cal)
    c = q.corrected
    assert ci(q, "root", "tiny") == 0 and c.clamp_ns[row(q, "root", "tiny")] == 40
    # root: 530 - 100 - 2*180 = 70, children want 0 + 300: scaled to 70
    assert ci(q, "root") == 70 and cx(q, "root") == 0
    assert ci(q, "root", "b") == pytest.approx(70)
    assert c.clamp_ns[row(q, "root")] == pytest.approx(230)
    assert summary(q).clamped_paths == 2
    ex = function_extras(q)
    unreliable = {n: bool(u) for n, u in zip(q.functions.names, ex["unreliable"])}
    assert unreliable == {"root": True, "tiny": True, "b": False}  # hook cost > half


def test_gap_root_keeps_its_complete_calls():
    p = build("""
entry 0 100 outer 0
entry 0 100 inner 1
exit 0 100 inner 1 1000 1500
lost 0 7
entry 0 100 inner 1
exit 0 100 inner 1 2000 2400
exit 0 100 outer 0 900 3000
entry 0 100 outer 0
exit 0 100 outer 0 4000 4300
""")
    q = correct(p, CAL)
    assert q.corrected.calls[row(q, "outer")] == 1  # the second, clean one
    # the inner calls are complete: kept, detached from the outer call left out
    assert q.corrected.calls[row(q, "outer", "inner")] == 2
    assert ci(q, "outer", "inner") == (500 - 100) + (400 - 100)
    assert q.corrected.det_incl[row(q, "outer", "inner")] == 700
    # ...so the clean outer call's self time does not lose their time
    assert ci(q, "outer") == cx(q, "outer") == 300 - 100
    assert q.functions.calls_corr.tolist() == [1, 2]  # outer, inner


def assert_exact_algebra(q, p):
    c = q.corrected
    parent = q.col("parent")
    counted = counted_children(q, c.irqs)
    kids = np.zeros(q.nrows)
    # a detached call's corrected time is in no kept caller's
    attached = c.incl if c.det_incl is None else c.incl - c.det_incl
    np.add.at(kids, parent[counted], attached[counted])
    tol = 1e-9 * np.maximum(np.abs(c.incl), 1.0)
    real = q.col("calls") > 0  # the (partial) pseudo-root is no call
    bad = np.nonzero(real & (np.abs(c.incl - (c.excl + kids)) > tol))[0]
    assert len(bad) == 0, [(q.path(r)[-3:], c.incl[r], c.excl[r], kids[r]) for r in bad[:3]]
    assert (c.excl >= 0).all() and (c.incl >= 0).all() and (c.clamp_ns >= 0).all()
    # per function: the sums of the per-path identities
    nf = len(q.funcs)
    f_in, f_ex, f_kids = np.zeros(nf), np.zeros(nf), np.zeros(nf)
    func = q.col("func")
    np.add.at(f_in, func[real], c.incl[real])
    np.add.at(f_ex, func[real], c.excl[real])
    np.add.at(f_kids, func[real], kids[real])
    assert np.allclose(f_in, f_ex + f_kids, rtol=1e-9, atol=1e-6)
    ft = q.functions
    assert np.allclose(ft.incl_corr, f_in[ft.func_ids], rtol=1e-12, atol=1e-6)
    # raw figures unchanged by the transform
    assert q.nodes.equals(p.nodes) and np.array_equal(q.samples, p.samples)
    rf = p.functions
    assert ft.names == rf.names and np.array_equal(ft.incl, rf.incl)
    assert np.array_equal(ft.excl, rf.excl) and np.array_equal(ft.calls, rf.calls)
    # corrected calls are the clean calls
    assert np.array_equal(c.calls, q.col("calls") - q.col("gap_calls"))


@pytest.mark.parametrize("path", FIXTURE_DATS + [SAMPLE], ids=lambda p: fixture_id(p) if "fixtures" in p else "sample")
def test_exact_algebra_on_every_fixture(path):
    p = profile_of(path)
    cal = estimate_in_trace(p) or Calibration(700.0, 650.0, "command line")
    for irqs in ("exclude", "include"):
        assert_exact_algebra(correct(p, cal, irqs=irqs), p)


def test_without_hook_cost_irq_or_offcpu_corrected_equals_clean_raw():
    p = profile_of(fixture("k6.1/s13-calib-null/trace-dispatch-full.dat"))  # no sched_switch
    q = correct(p, Calibration(0.0, 0.0, "command line"), irqs="include")
    clean = (p.col("incl") - p.col("gap_incl")).astype(float)
    ok = q.corrected.clamp_ns == 0
    assert ok.mean() > 0.99
    assert np.array_equal(q.corrected.incl[ok], clean[ok])


def test_root_samples_average_to_the_root_figure():
    p = profile_of(fixture("k6.1/s15-icount-calib/trace-full.dat"))
    q = correct(p, estimate_in_trace(p))
    s = q.samples
    r = row(q, "nfsd3_proc_write")
    sel = (s[:, 0] == r) & ((s[:, 3] & 1) == 0)
    assert sel.sum() == q.corrected.calls[r]
    assert q.corrected.sample_dur[sel].sum() == pytest.approx(q.corrected.incl[r], rel=1e-9)


@pytest.mark.parametrize("path", FIXTURE_DATS, ids=fixture_id)
def test_corrected_text_fits_80_columns_and_a_mail(path):
    """What `ftflame report` prints by default: corrected (in-trace estimate
    where there is one), with the balance sheet."""
    from ftflame.correct.balance import attach
    from ftflame.report import RENDERERS

    p = profile_of(path)
    q = attach(correct(p, estimate_in_trace(p) or NO_CALIBRATION))
    text = RENDERERS["txt"].render(q)
    assert [line for line in text.splitlines() if len(line) > 80] == []
    assert len(text.encode()) < 60_000 and text.isascii()
    assert "calibration:" in text and ("Balance sheet" in text or not q.balance)


def test_correct_holds_few_whole_tree_temporaries():
    """correct() frees the formula's columns before the clamp makes its own
    and clamps in place: its peak is a dozen per-node float columns (9 of
    them the result, 10 with the switch work of a trace with switch frames,
    as this one has), not 20 (s14: 125k call paths, 1 MB a column)."""
    import tracemalloc

    from ftflame.parse import read

    p = read(SAMPLE)
    cal = Calibration(o_in_ns=150.0, o_out_ns=90.0, source="test")
    correct(p, cal)  # the Profile's cached views (levels, children) made before
    tracemalloc.start()
    try:
        correct(p, cal)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert p.col("sched").any()
    assert peak / (8 * p.nrows) < 15


def test_the_functions_rounded_raw_means_are_not_a_python_loop(tmp_path):
    """The function table's corrected estimates scale by the raw mean as
    the JSON prints it (round(s / c, 1)): with 100k functions a Python loop
    calling round() per function was a tenth of the text report. Counted:
    round() called from Python code while the statistics are made (map calls
    it from C)."""
    import sys

    from ftflame import parse
    from ftflame.correct import corrections

    n = 5000
    path = tmp_path / "roots.txt"
    path.write_text(leafroots.trace(leafroots.line(0, f"{1 + i % 997}.{i % 1000:03d}", f"f_{i}") for i in range(n)))
    p = correct(parse.read(str(path)), Calibration(10.0, 20.0, "test", "fixed values (test)"))
    calls = {"n": 0}

    def profiler(frame, event, arg):
        if event == "c_call" and arg is round:
            calls["n"] += 1

    sys.setprofile(profiler)
    try:
        corrections.corrected_stats(p)["functions", "incl"]
    finally:
        sys.setprofile(None)
    assert calls["n"] < 100, f"{calls['n']} round() calls from Python for {n} functions"
