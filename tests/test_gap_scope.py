"""Which calls the corrected figures leave out on traces that lost events,
against the independent reference (tests/helpers/callref.py: the twin
builder applies the gap rules of docs/design.md to the events itself):
per call path, the calls the core sums in its gap set (exactly the calls
whose own interval holds a gap) and in its detached set (kept calls whose
caller's call is left out or never completed)."""
from __future__ import annotations

import os

import pytest

from conftest import fixture, profile_of
from ftflame.correct.corrections import correct
from ftflame.model.profile import NODE_IRQ, Calibration
from helpers import callref
from helpers.paths import context_path

HERE = os.path.dirname(__file__)
LOST = [fixture("k6.1/s15-icount-calib/trace-full.dat"),
        fixture("k6.1/s15-icount-calib/trace-full-nosleep.dat"),
        os.path.join(HERE, "data", "text", "lost.txt")]


@pytest.mark.parametrize("path", [pytest.param(x, id=os.path.basename(os.path.dirname(x)) + "/" + os.path.basename(x))
                                  for x in LOST])
def test_calls_left_out_are_the_reference_gap_calls(path):
    """Per path, the calls left out of the corrected figures are exactly the
    calls whose own interval holds a gap; the complete calls of a root call
    that spans one are kept, those right under a left-out caller summed
    apart as detached."""
    p = profile_of(path)
    ref = callref.gap_counts(callref.gap_calls_of(path))
    assert p.counters.get("lost_records"), "the trace must have lost events"
    irq, parent = (p.col("flags") & NODE_IRQ) != 0, p.col("parent")
    calls, gap, det = p.col("calls"), p.col("gap_calls"), p.col("det_calls")
    core = {}
    for r in range(p.nrows):
        if calls[r]:
            core[context_path(p, r, irq, parent)] = (int(calls[r]), int(gap[r]), int(det[r]))
    assert core == {k: (v[0], v[1], v[3]) for k, v in ref.items()}
    assert p.counters["gap_calls"] == sum(v[1] for v in ref.values()) > 0
    assert p.counters["detached_calls"] == sum(v[3] for v in ref.values())
    # the corrected figures cover every other call
    c = correct(p, Calibration(100.0, 80.0, "test"))
    assert int(c.corrected.calls.sum()) == int(calls.sum()) - p.counters["gap_calls"]


def test_reference_says_which_calls_span_the_gap():
    """data/text/lost.txt: outer() is open when 12 events are lost (its
    interval holds the gap), lost_entry's entry is among them (an exit
    without its entry); first() returned before the gap: complete, but its
    caller's call is left out, so its time is in no kept caller's; again()
    began after it, a root call of its own."""
    calls = callref.gap_calls_of(os.path.join(HERE, "data", "text", "lost.txt"))
    flags = {c.path[-1]: (c.gap, c.in_gap_root, not c.gap and c.parent_out) for c in calls}
    assert flags == {"first": (False, True, True), "lost_entry": (True, False, False),
                     "outer": (True, False, False), "again": (False, False, False)}
