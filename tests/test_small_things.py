"""The small things a user trips on (each failed before its fix)."""
from __future__ import annotations

from ftflame import parse
from ftflame.parse.tables import build_events
from ftflame.report import folded, html
from helpers import corpus


def test_raw_folded_marks_interrupt_frames():
    """An interrupt subtree inside a task call: in raw weights it stays under
    the call it interrupted, under an [irq] frame, never as an ordinary
    callee (flamegraph.pl would draw it as one)."""
    FLAG_HARDIRQ = 0x08
    ev = [("entry", 0, 7, 0, "nfsd_write", 0, 1000, 0, 0, 0, 0, 0),
          ("entry", 0, 7, FLAG_HARDIRQ, "irq_handler", 1, 2000, 0, 0, 0, 0, 0),
          ("exit", 0, 7, FLAG_HARDIRQ, "irq_handler", 1, 3000, 2000, 3000, 0, 0, 0),
          ("exit", 0, 7, 0, "nfsd_write", 0, 9000, 1000, 9000, 0, 0, 0)]
    p = build_events(ev)
    lines = dict(folded.folded_lines(p))
    assert lines == {"nfsd_write": 7000, "nfsd_write;[irq];irq_handler": 1000}


def test_function_args_said_only_when_recorded():
    """A 7.x trace recorded without funcgraph-args: its event format has the
    args field, no entry filled it; the page does not say "yes"."""
    def option(p):
        return dict(html.header_data(p)["options"])["function args"]

    without = parse.read(corpus.curated("k7.x/s23-v3-mixed-svc/trace.dat"))
    assert without.trace.has_args and not without.call_args
    assert option(without).startswith("not recorded")
    with_args = parse.read(corpus.curated("k7.x/s24-funcgraph-args/trace.dat"))
    assert option(with_args).startswith("recorded (funcgraph-args)")


def test_stalled_stamps_note_names_the_global_clock_only_on_it():
    """The stalled-stamp note explains the 'global' clock's stall on a trace
    of that clock, not on a 'local'-clock one."""
    import dataclasses

    from ftflame.report.common import anomaly_lines

    p = build_events([("leaf", 0, 7, 0, "f", 0, 10, 10, 20, 0, 0, 0)])
    p = p.replace(counters={**p.counters, "stalled_stamps": 3})
    for clock, says in (("local", False), ("global", True)):
        q = p.replace(trace=dataclasses.replace(p.trace, clock=clock))
        note = next(line for line in anomaly_lines(q) if "previous record's timestamp" in line)
        assert ("'global' trace clock" in note) == says, (clock, note)


def test_lost_events_give_their_share_and_the_advice():
    """A trace that lost events says which share of them, and what keeps
    them (a bigger ring buffer: -b)."""
    from ftflame.report.common import anomaly_lines

    p = parse.read(corpus.curated("k6.1/s10-lost/trace.dat"))
    line = next(line for line in anomaly_lines(p) if line.startswith("LOST EVENTS"))
    c = p.counters
    share = c["lost_events"] / (c["lost_events"] + c["events"])
    assert f"{share:.1%} of the events written and lost" in line
    assert "trace-cmd record -b" in line
