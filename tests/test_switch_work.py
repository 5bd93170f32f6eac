"""Switch work (docs/overhead.md "Switch work"): the scheduler's on-CPU work
around each switch, measured by the builder in the switch frame (the
scheduler entry on top of the task's stack when it is switched back in) and
taken out with the off-CPU time. Exact figures on the hand-made traces of
tests/data/events/, one situation each, with O_in 150 ns and O_out 90 ns
(the golden files' costs): every expected figure is worked out by hand in
the comment beside it."""
from __future__ import annotations

import numpy as np

from ftflame.correct import balance
from ftflame.correct.corrections import correct, function_extras
from ftflame.model.profile import Calibration
from helpers.events import load

O_IN, O_OUT = 150.0, 90.0
CAL = Calibration(O_IN, O_OUT, "command line")


def corrected(name: str, offcpu: str = "auto"):
    return correct(load(name), CAL, offcpu=offcpu)


def row(p, name: str) -> int:
    return next(r for r in range(p.nrows) if p.name(r) == name)


def sample(p, col: str) -> list:
    return p.scol(col).tolist()


def test_switch_frame_work_is_taken_out_with_the_off_cpu_time():
    """switch-work: outer (19,000 ns) holds __cond_resched (14,000 ns), 10,000 ns
    switched out. Its on-CPU 4,000 ns (pick_next_task_fair before the switch,
    finish_task_switch after it, the scheduler's own code between) are switch
    work, less the hooks of __cond_resched and those two (3 x O_in + 2 x O_out):
    3,370 ns. switch_mm_irqs_off, recorded after the sched_switch event, ran
    inside the 10,000 ns switched out, hooks included: its O_in + O_out is not
    taken out again. outer is then its own 3,000 ns and work's 2,000, less
    outer's O_in, __cond_resched's O_out and work's O_in + O_out: 4,520 ns."""
    q = corrected("switch-work")
    outer = sample(q, "node").index(row(q, "outer"))
    assert [sample(q, c)[outer] for c in ("dur", "offcpu", "desc", "sched", "sched_calls", "sched_outs",
                                          "offcpu_calls", "switches")] == [19000, 10000, 5, 4000, 3, 2, 1, 1]
    assert q.corrected.sample_dur[outer] == 4520.0
    r = row(q, "outer")
    assert q.corrected.sched_removed[r] == 4000 - 3 * O_IN - 2 * O_OUT
    # the hook cost left in the sheet: outer's O_in and 4 of its 5 descendants' O_in + O_out
    assert q.corrected.overhead[r] == O_IN + 4 * (O_IN + O_OUT)
    # __cond_resched is all scheduler's work: 0, and its children fit in it (no clamp)
    assert q.corrected.incl[row(q, "__cond_resched")] == 0.0
    assert q.corrected.clamp_ns.sum() == 0.0
    # raw sums untouched
    assert q.col("incl")[r] == 19000


def test_balance_sheet_reconciles_with_the_switch_work():
    """raw = corrected + hook cost + irq + off-CPU + switch work - clamped."""
    q = balance.attach(corrected("switch-work"))
    b = next(e for e in q.balance if e["function"] == "outer")
    assert b["switch_work_mean_ns"] == 3370.0 and b["switches"] == 1
    total = (b["corrected_mean_ns"] + b["overhead_mean_ns"] + b["irq_mean_ns"] + b["offcpu_mean_ns"]
             + b["switch_work_mean_ns"] - b["clamped_mean_ns"])
    assert total == b["measured_raw_mean_ns"] == 19000.0 and b["unaccounted_mean_ns"] == 0.0


def test_nested_and_repeated_switches_count_once():
    """switch-work-nested: three switches in outer (23,000 ns, 12,000 off-CPU):
    __cond_resched 7,000 - 5,000 = 2,000 ns on-CPU; schedule 12,000 - 7,000 =
    5,000 ns, holding preempt_schedule (5,000 - 3,000 = 2,000), which is inside
    schedule's and not added again: 7,000 ns of switch work, less 3 x O_in
    (__cond_resched, schedule, preempt_schedule) and 1 x O_out (preempt_schedule
    in schedule). outer: its own 4,000 ns less its O_in and the two frames'
    O_out: 3,670 ns."""
    q = corrected("switch-work-nested")
    assert [sample(q, c)[0] for c in ("sched", "sched_calls", "sched_outs", "switches")] == [7000, 3, 1, 3]
    assert q.corrected.sample_dur[0] == 3670.0
    assert q.col("sched")[row(q, "schedule")] == 5000 and q.col("sched")[row(q, "preempt_schedule")] == 2000


def test_a_switch_inside_an_interrupt_subtree_is_taken_out_once():
    """switch-in-irq: a softirq (9,000 ns) inside outer (14,000 ns) is switched
    out 5,000 ns in its __cond_resched. No switch frame (the subtree leaves
    outer whole); outer loses the off-CPU 5,000 ns and the softirq's 4,000 ns
    on-CPU, once each (the irq time was the subtree's whole 9,000 ns, so the
    5,000 went twice and outer was clamped at 0): its own 3,000 ns and work's
    2,000, less outer's O_in, work's O_in + O_out and the softirq's O_out: 4,520."""
    q = corrected("switch-in-irq")
    assert [sample(q, c)[0] for c in ("offcpu", "irq", "sched", "switches")] == [5000, 4000, 0, 0]
    assert q.corrected.sample_dur[0] == 4520.0
    assert q.corrected.clamp_ns.sum() == 0.0


def test_a_switch_frame_that_never_returns_charges_nothing():
    """switch-open-at-end: the trace ends inside __cond_resched, back from its
    switch: neither it nor its root call completes; no switch work anywhere,
    both counted open at the end."""
    q = corrected("switch-open-at-end")
    assert q.counters["open_at_end"] == 2
    assert q.col("sched").sum() == 0 and sample(q, "sched") == [0] and sample(q, "switches") == [0]
    assert q.corrected.sched_removed is None


def test_switch_work_stays_in_when_the_off_cpu_time_does():
    """offcpu "keep": the off-CPU time stays, and the switch work with it."""
    q = corrected("switch-work", offcpu="keep")
    assert q.corrected.sched_removed is None
    outer = sample(q, "node").index(row(q, "outer"))
    # 19,000 less outer's O_in and its 5 descendants' O_in + O_out
    assert q.corrected.sample_dur[outer] == 19000 - O_IN - 5 * (O_IN + O_OUT)


def test_no_switch_frame_without_a_scheduler_function_on_top():
    """The off-cpu trace's task is switched back in under `inner`, no scheduler
    entry (a root-only truth's root is the same): its off-CPU time is taken
    out, no work of it is called the scheduler's."""
    q = corrected("off-cpu")
    assert sample(q, "offcpu") == [500] and sample(q, "sched") == [0] and sample(q, "switches") == [0]
    assert function_extras(q)["offcpu"].sum() > 0
    assert not np.any(q.col("sched"))


def test_a_switch_without_a_scheduler_frame_at_an_interrupts_exit():
    """switch-at-irq-exit (7.x): preempted on the interrupt's way out, the
    task has no scheduler entry on top; __schedule()'s traced callees sit
    under `work`. The interrupt (irq_enter_rcu 100, the handler 1,000,
    irq_exit_rcu 100) and its exit check in task context
    (raw_irqentry_exit_cond_resched, 100) are 4 interrupt subtrees: 1,300 ns.
    rcu_note_context_switch (100), pick_task_fair (500) and
    finish_task_switch (200) are switch frames: 800 ns of switch work, less
    their 3 x O_in = 350 ns; their O_out is in work's window, with the
    descendants' hook cost. outer: 11,000 - 6,000 off-CPU - 1,300 irq - O_in
    - 5 descendants (work, the three, tail) x (O_in + O_out) - 4 irq roots x
    O_out - 350 = 1,640 ns. Before: no switch work, the exit check a task
    call (8 descendants), 2.3 us more."""
    q = corrected("switch-at-irq-exit")
    outer = sample(q, "node").index(row(q, "outer"))
    assert [sample(q, c)[outer] for c in ("dur", "offcpu", "irq", "irq_roots", "desc", "sched",
                                          "sched_calls", "sched_outs", "switches")] == \
        [11000, 6000, 1300, 4, 5, 800, 3, 0, 1]
    assert q.corrected.sample_dur[outer] == 1640.0
    assert q.corrected.sched_removed[row(q, "outer")] == 800 - 3 * O_IN
    # the scheduler's calls correct to 0, `tail` keeps its own 500 less its hook
    assert q.corrected.incl[row(q, "pick_task_fair")] == 0.0
    assert q.corrected.incl[row(q, "tail")] == 500 - O_IN
    b = next(e for e in balance.attach(q).balance if e["function"] == "outer")
    total = (b["corrected_mean_ns"] + b["overhead_mean_ns"] + b["irq_mean_ns"] + b["offcpu_mean_ns"]
             + b["switch_work_mean_ns"] - b["clamped_mean_ns"])
    assert total == b["measured_raw_mean_ns"] == 11000.0
