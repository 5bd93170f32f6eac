"""Hand-made event lists, one named situation per file (tests/data/events/).

Format, one event per line (# comments, blank lines ignored):
  entry CPU PID FUNC DEPTH [flags=0x08] [ts=N] [args=A,B,...]
  exit  CPU PID FUNC DEPTH CALLTIME RETTIME [overrun=N] [flags=0x08] [ts=N] [ret=V]
  switch CPU PREV_PID NEXT_PID TS
  lost CPU COUNT        (COUNT -1: unknown)
Timestamps (ts) default to the line number, so per-CPU order is file order.
"""
from __future__ import annotations

import os

from ftflame.parse import build_events

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "events")


def parse_events(text: str):
    events = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        opts = dict(w.split("=", 1) for w in words if "=" in w)
        words = [w for w in words if "=" not in w]
        flags = int(opts.get("flags", "0"), 0)
        ts = int(opts.get("ts", lineno))
        kind = words[0]
        if kind == "entry":
            _, cpu, pid, func, depth = words
            # args=0x10,0: the values a funcgraph-args entry recorded
            args = tuple(int(a, 0) for a in opts["args"].split(",")) if "args" in opts else None
            events.append(("entry", int(cpu), int(pid), flags, func, int(depth), ts, 0, 0, 0, 0, 0, None, args))
        elif kind == "exit":
            _, cpu, pid, func, depth, calltime, rettime = words
            ret = int(opts["ret"], 0) if "ret" in opts else None  # ret=-5: the return value recorded
            events.append(("exit", int(cpu), int(pid), flags, func, int(depth), ts, int(calltime),
                           int(rettime), int(opts.get("overrun", 0)), 0, 0, ret))
        elif kind == "switch":
            _, cpu, prev, nxt, ts = words
            events.append(("switch", int(cpu), int(prev), 0, "", 0, int(ts), 0, 0, 0, int(nxt), 0))
        elif kind == "lost":
            _, cpu, n = words
            events.append(("lost", int(cpu), 0, 0, "", 0, ts, 0, 0, 0, 0, int(n)))
        else:
            raise ValueError(f"line {lineno}: unknown event kind {kind!r}")
    return events


def load(name: str):
    """The Profile of tests/data/events/NAME.events."""
    with open(os.path.join(HERE, name + ".events")) as f:
        return build_events(parse_events(f.read()), source=name + ".events")
