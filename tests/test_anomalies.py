"""One hand-made input per named situation, and how each is counted."""
from __future__ import annotations

import os

import pytest

from conftest import SAMPLE
from ftflame.model.profile import NODE_IRQ, NODE_IRQ_ROOT, NODE_PARTIAL
from helpers import readers
from helpers.events import load
from helpers.invariants import check_profile


def row(p, *path):
    for r in range(p.nrows):
        if tuple(p.path(r)) == path:
            return r
    raise AssertionError(f"no path {path}; have {[p.path(r) for r in range(p.nrows)]}")


def val(p, col, *path):
    return int(p.col(col)[row(p, *path)])


def func(p, name):
    ft = p.functions
    i = ft.index(name)
    return {"calls": int(ft.calls[i]), "incl": int(ft.incl[i]), "excl": int(ft.excl[i])}


ALL = ["lost-events", "orphan-exit-at-start", "open-at-end", "nested-hardirq", "migration",
       "exit-only", "max-depth", "off-cpu", "lost-exit", "idle-pid0", "irq-after-return",
       "irq-before-entry", "irq-in-pop-window", "missing-entry", "nested-irq-in-hook-window",
       "return-stack-full", "entry-in-return-window", "missing-entry-after-lost", "irq-before-exit-tail",
       "hardirq-in-softirq-pop-window"]


@pytest.mark.parametrize("name", ALL)
def test_invariants_hold(name):
    check_profile(load(name))


def test_lost_events():
    p = load("lost-events")
    c = p.counters
    assert c["lost_events"] == 7 and c["lost_records"] == 1
    assert p.lost_per_cpu == {0: 7}
    # raw: every exit counts, with the tracer's own duration
    assert func(p, "outer") == {"calls": 1, "incl": 2100, "excl": 2100 - 500 - 400}
    assert func(p, "inner")["calls"] == 2
    # outer spans the gap: left out of corrected statistics, counted; its
    # complete children stay in, detached (their caller is left out)
    assert val(p, "gap_calls", "outer") == 1
    assert val(p, "gap_calls", "outer", "inner") == 0
    assert val(p, "det_calls", "outer", "inner") == 2
    assert c["gap_calls"] == 1 and c["detached_calls"] == 2
    assert p.samples[0][3] & 1  # the root sample is marked as gap


def test_return_stack_full_cuts_the_graph_and_loses_nothing():
    """return-stack-full: the kernel refused 3 pushes below depth 49 (the
    overrun counter went 0 -> 3); the 50 frames above are complete, kept in
    corrected figures, and every output says where the graph was cut."""
    from ftflame.correct.corrections import correct
    from ftflame.model.profile import Calibration
    from ftflame.report.common import report_notes

    p = load("return-stack-full")
    c = p.counters
    assert c["overrun_growth"] == 1 and c["depth_limit_calls"] == 3 and c["depth_limit"] == 50
    assert c["gap_calls"] == 0 and c["detached_calls"] == 0
    assert not (p.scol("flags") & 1).any()  # no root call spans a gap
    cp = correct(p, Calibration(10.0, 5.0, "test"))
    assert int(cp.corrected.calls.sum()) == int(p.col("calls").sum()) == 52
    # only the recorded calls' hook cost: f49 is a leaf as recorded
    r = row(p, *[f"f{d}" for d in range(50)])
    assert cp.corrected.incl[r] == p.col("incl")[r] - 10.0
    assert any("the kernel cut the call graph at depth 50" in n and "3 calls below not recorded" in n
               for n in report_notes(cp))


def test_orphan_exit_at_start():
    p = load("orphan-exit-at-start")
    c = p.counters
    assert c["orphan_exits"] == 2 and c["partial_entries"] == 1
    # orphan exits are complete calls with known durations
    assert func(p, "middle") == {"calls": 1, "incl": 250, "excl": 250}
    assert func(p, "top")["calls"] == 2 and func(p, "top")["incl"] == 390 + 400
    assert val(p, "calls", "(partial)", "leaf") == 1
    assert p.col("flags")[row(p, "(partial)", "leaf")] & NODE_PARTIAL
    assert val(p, "calls", "top") == 1  # the complete one is a real root
    assert val(p, "gap_calls", "(partial)", "middle") == 1


def test_open_call_at_end():
    p = load("open-at-end")
    assert p.counters["open_at_end"] == 1
    assert "outer" not in p.functions.names  # calls = completed calls
    assert val(p, "open_end", "outer") == 1
    assert val(p, "unowned_child_incl", "outer") == 100
    assert func(p, "inner") == {"calls": 1, "incl": 100, "excl": 100}


def test_nested_hardirq():
    p = load("nested-hardirq")
    assert p.counters["irq_roots"] == 1
    r = row(p, "task_fn")
    assert int(p.col("irq")[r]) == 110  # the whole softirq subtree
    assert int(p.col("desc")[r]) == 1  # irq calls are not descendants
    assert int(p.col("nchild")[r]) == 1
    assert int(p.col("irq_calls")[r]) == 3
    sirq = row(p, "task_fn", "__do_softirq")
    assert p.col("flags")[sirq] & NODE_IRQ_ROOT
    hard = row(p, "task_fn", "__do_softirq", "net_rx_action", "__sysvec_apic_timer_interrupt")
    assert p.col("flags")[hard] & NODE_IRQ and not p.col("flags")[hard] & NODE_IRQ_ROOT
    assert int(p.col("desc")[sirq]) == 2


def test_migration_mid_call():
    p = load("migration")
    assert p.counters["migrations"] == 1
    assert p.counters["depth_mismatch"] == 0 and p.counters["orphan_exits"] == 0
    assert func(p, "work") == {"calls": 1, "incl": 210, "excl": 210 - 50 - 50}
    assert val(p, "migrated", "work") == 1
    assert val(p, "desc", "work") == 2
    assert val(p, "calls", "other") == 1


def test_exit_only_tracing_thresh():
    p = load("exit-only")
    assert p.counters["entries"] == 0 and p.counters["exits"] == 3
    assert any("exit-only" in w.text for w in p.warnings)
    assert func(p, "slow_a") == {"calls": 2, "incl": 40000, "excl": 40000}
    assert func(p, "slow_b") == {"calls": 1, "incl": 30000, "excl": 30000}


def test_max_graph_depth_hint():
    from ftflame.parse import build_events
    from ftflame.report.common import max_depth_hint
    from helpers.events import HERE, parse_events

    p = load("max-depth")
    assert p.counters["max_depth"] == 1
    assert max_depth_hint(p) is None  # too small a trace to tell
    # the same root call 100 times: its cut level holds 200 calls and 70% of the time
    with open(os.path.join(HERE, "max-depth.events")) as f:
        big = build_events(parse_events(f.read() * 100), source="max-depth x100")
    assert "seems cut at max_graph_depth 2: no call deeper than depth 1" in max_depth_hint(big)
    assert val(p, "excl", "top") == 100 - 40 - 30


def test_off_cpu_charged_to_every_open_frame():
    p = load("off-cpu")
    assert val(p, "offcpu", "outer") == 500
    assert val(p, "offcpu", "outer", "inner") == 500
    assert p.samples[0][8] == 500  # root sample's off-CPU time


def test_lost_exit():
    p = load("lost-exit")
    c = p.counters
    assert c["unterminated"] == 1 and c["depth_mismatch"] == 1
    assert val(p, "unterminated", "outer", "a") == 1
    assert val(p, "gap_calls", "outer") == 1  # its children are incomplete
    assert func(p, "b")["calls"] == 1


def test_missing_entry_without_a_lost_event_mark():
    """A depth jump is the only sign: the gap call is counted as such, and
    nothing says events were lost."""
    p = load("missing-entry")
    c = p.counters
    assert c["missing_entries"] == 1 and c["depth_mismatch"] == 1
    assert c["lost_records"] == 0 and c["unterminated"] == 0 and c["orphan_exits"] == 0
    assert val(p, "gap_calls", "outer") == 1
    assert p.gap_causes == "a missing entry (a depth jump with no lost-event mark)"


def test_nested_hardirq_in_a_hook_window_is_not_a_missing_entry():
    """6.12 on deep stacks (k6.12/s18-long: all 1,770 of its depth jumps): a
    hardirq nested in a softirq shows two levels under the softirq's top
    frame, the hook window of a call pushed and not yet written (or written
    and not yet popped). The call tree is whole: no gap, and the irq that
    began inside tcp_ack's call is tcp_ack's, the other net_rx_action's."""
    p = load("nested-irq-in-hook-window")
    c = p.counters
    assert c["missing_entries"] == 0 and c["depth_mismatch"] == 0 and c["gap_calls"] == 0
    assert c["irq_outside_window"] == 6  # one per irq subtree
    assert p.gap_causes == ""
    rx = ("task_fn", "__do_softirq", "net_rx_action")
    irq_b = 2 + 16 + 2
    assert val(p, "excl", *rx, "tcp_ack") == 40 - irq_b
    assert val(p, "unowned_child_incl", *rx, "tcp_ack") == -irq_b
    assert val(p, "excl", *rx) == 100 - (4 + 4 + 24 + 40)  # irq A is net_rx_action's child
    assert val(p, "unowned_child_incl", *rx) == irq_b
    assert val(p, "irq_early", *rx) == 1  # irq A: early, but not inside the next call
    assert val(p, "irq", "task_fn") == 106  # the whole softirq, once


def test_entry_in_a_return_window_is_not_a_missing_entry():
    """7.x (k7.x/s23, s21: hundreds of depth jumps, no event lost): an
    interrupt's exit tail and a preemption that run after a call's exit event,
    while the kernel still holds that call's depth, enter one level deeper
    than the caller's children. Nothing is missing: no gap, the work is the
    caller's."""
    p = load("entry-in-return-window")
    c = p.counters
    assert c["missing_entries"] == 0 and c["depth_mismatch"] == 0 and c["gap_calls"] == 0
    assert p.gap_causes == ""
    assert val(p, "calls", "parent", "raw_irqentry_exit_cond_resched") == 1
    assert val(p, "incl", "parent", "__hrtimer_rearm_deferred", "tick_program_event") == 7
    assert val(p, "calls", "parent", "pick_task_fair", "update_curr") == 1
    assert val(p, "excl", "parent", "child") == 40  # the irq began after child's rettime


def test_missing_entry_after_lost_events_still_counts():
    """The same jump after a lost-event mark: entries may be in the gap."""
    p = load("missing-entry-after-lost")
    c = p.counters
    assert c["missing_entries"] == 1 and c["depth_mismatch"] == 1
    assert val(p, "gap_calls", "parent") == 1


@pytest.mark.parametrize("name, causes", [
    ("lost-events", "a lost-event gap"),
    ("lost-exit", "a lost exit"),
    ("orphan-exit-at-start", "an exit without its entry"),
    ("migration", ""),
])
def test_gap_causes_name_only_what_the_trace_shows(name, causes):
    assert load(name).gap_causes == causes


def test_pid0_is_per_cpu():
    p = load("idle-pid0")
    assert p.counters["depth_mismatch"] == 0 and p.counters["orphan_exits"] == 0
    assert func(p, "idle_fn") == {"calls": 2, "incl": 210, "excl": 210}


def test_irq_after_return_belongs_to_caller():
    p = load("irq-after-return")
    assert p.counters["irq_outside_window"] == 1
    assert val(p, "excl", "parent", "child") == 90
    assert val(p, "irq", "parent", "child") == 0
    assert val(p, "irq", "parent") == 50
    assert val(p, "excl", "parent") == 300 - 90 - 50
    assert val(p, "calls", "parent", "__sysvec_apic_timer_interrupt") == 1


def test_irq_and_its_task_tail_after_return_belong_to_caller():
    """7.x writes an interrupt taken between a call's rettime and its exit
    event one level under the call, and the interrupt's exit work in task
    context after it (k7.x/s21, s23, s24: up_write's self time was
    -13.7 ms). Everything from the first interrupt that began after the
    rettime is the caller's: time, calls and irq figures. The exit work
    (raw_irqentry_exit_cond_resched) is the interrupt's, by its name: irq
    time, not the caller's own (docs/overhead.md "What the model misses on
    7.x")."""
    p = load("irq-before-exit-tail")
    irq, tail = 5 + 30 + 5, 3
    assert val(p, "excl", "parent", "child") == 40 - 5
    assert val(p, "desc", "parent", "child") == 1  # the leaf, not the tail
    assert val(p, "irq", "parent", "child") == 0
    assert val(p, "excl", "parent") == 300 - 40 - irq - tail
    assert val(p, "irq", "parent") == irq + tail
    assert val(p, "desc", "parent") == 2  # child, leaf: the tail is irq work
    # the nodes stay where the events put them; the tree still adds up
    assert val(p, "unowned_child_incl", "parent", "child") == irq + tail
    assert val(p, "unowned_child_incl", "parent") == -(irq + tail)
    assert p.counters["irq_outside_window"] == 1  # one interrupt, its exit work in the same run


def test_hardirq_in_a_softirq_calls_pop_window_is_no_lost_exit():
    """5.10 lowers the depth at the pop: a hardirq taken while a softirq
    call returns is written at that call's depth, before its exit (k5.10/s21:
    put_cred_rcu under rcu_core, read as lost exits: a depth mismatch and 12
    gap calls in a recording that lost nothing). It is the caller's."""
    p = load("hardirq-in-softirq-pop-window")
    c = p.counters
    assert (c["depth_mismatch"], c["unterminated"], c["orphan_exits"], c["gap_calls"]) == (0, 0, 0, 0)
    rcu = ("task_fn", "__do_softirq", "rcu_core")
    assert val(p, "calls", *rcu, "__sysvec_apic_timer_interrupt") == 1
    assert val(p, "excl", *rcu) == 90 - 20 - (5 + 25 + 4)
    assert val(p, "desc", *rcu, "put_cred_rcu") == 1  # kfree, not the hardirq
    assert val(p, "excl", *rcu, "put_cred_rcu") == 15


def test_irq_in_pop_window_before_rettime_moves_into_the_call():
    """The irq's events have child's depth (the depth was lowered at the pop)
    but came before child's exit, and began before child's rettime: child's
    duration holds it, so it is child's, not a second child of parent's."""
    p = load("irq-in-pop-window")
    irq = 10 + 48 + 8  # irq_enter_rcu, __sysvec_apic_timer_interrupt, irq_exit_rcu
    assert val(p, "incl", "parent", "child") == 130
    assert val(p, "irq", "parent", "child") == irq
    assert val(p, "irq_calls", "parent", "child") == 4
    assert val(p, "excl", "parent", "child") == 130 - 20 - irq
    assert val(p, "excl", "parent") == 150 - 130  # was 150 - 130 - 66: the irq twice
    assert val(p, "irq", "parent") == irq
    # the irq nodes stay where the events put them; the tree still adds up
    assert val(p, "unowned_child_incl", "parent") == irq
    assert val(p, "unowned_child_incl", "parent", "child") == -irq
    assert p.counters["irq_outside_window"] == 3  # one per irq subtree, as before


def test_irq_before_entry_moves_into_the_call():
    p = load("irq-before-entry")
    assert val(p, "irq", "parent", "child") == 10 + 50
    assert val(p, "excl", "parent", "child") == 100 - 60
    assert val(p, "excl", "parent") == 300 - 100
    assert val(p, "irq", "parent") == 60
    # the irq nodes stay where the events put them; the tree still adds up
    assert val(p, "unowned_child_incl", "parent") == 60
    assert val(p, "unowned_child_incl", "parent", "child") == -60


@pytest.mark.parametrize("reader", readers.params())
def test_lost_events_are_not_stalled_stamps(reader):
    """A lost-events marker takes the stamp of the record after it: it is
    not a record the clock stamped twice. The sample has both readers'
    810 lost events and no stalled stamp; without the builder's
    `ev->kind != FTF_EV_LOST` it got 4, and a false "stalled" anomaly, on
    every trace with lost events (issue 37, "Tests that bind")."""
    from ftflame.parse import dat, read
    from ftflame.report.common import report_notes

    with dat.reader_used(reader):
        p = read(SAMPLE)
    assert p.counters["lost_events"] == 810
    assert p.counters.get("stalled_stamps", 0) == 0 and p.counters.get("times_stalled", 0) == 0
    assert not [n for n in report_notes(p) if "previous record's timestamp" in n]
