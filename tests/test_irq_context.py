"""Issue 11 item 5: a path is interrupt context only for calls that ran in
interrupt context (tests/data/events/irq-root-both-ways.events). The same
invariant is checked on every fixture by invariants.check_irq_context."""
from __future__ import annotations

from ftflame.model.profile import NODE_IRQ
from helpers.events import load
from helpers.invariants import check_irq_context, check_profile


def rows(p):
    """{(path, irq): calls} of every path."""
    flags, calls = p.col("flags"), p.col("calls")
    return {(tuple(p.path(r)), bool(flags[r] & NODE_IRQ)): int(calls[r]) for r in range(p.nrows)}


def test_root_called_in_task_and_irq_context_is_two_paths():
    p = load("irq-root-both-ways")
    assert rows(p) == {
        (("svc_process",), False): 2,
        (("svc_process", "svc_send"), False): 2,
        (("svc_process",), True): 1,
        # nested in the irq call: irq work, whatever its own flags say
        (("svc_process", "svc_send"), True): 1,
    }
    # the lost events taint the open task call only
    gap = {(tuple(p.path(r)), bool(p.col("flags")[r] & NODE_IRQ)): int(p.col("gap_calls")[r])
           for r in range(p.nrows)}
    assert gap[(("svc_process",), False)] == 1 and gap[(("svc_process",), True)] == 0
    check_profile(p)
    check_irq_context(p)


def test_balance_sheet_keeps_a_root_also_entered_in_irq_context():
    """The balance sheet is per task-context root function: an irq call of
    the same function no longer hides it (balance was [] on such traces)."""
    from ftflame.correct.balance import attach
    from ftflame.correct.corrections import correct
    from ftflame.model.profile import Calibration

    q = attach(correct(load("irq-root-both-ways"), Calibration(50.0, 20.0, "command line")))
    assert [b["function"] for b in q.balance] == ["svc_process"]
    assert (q.balance[0]["calls"], q.balance[0]["gap_calls"]) == (1, 1)  # the lost events
