"""A slowdown injected into one function of a `trace-cmd report` text.

Every call of the function gets `add_ns` more: its printed duration, the
durations of every call open around it (its callers, up to the root call),
and the timestamps of its task's later lines until the root call ends (the
time goes by later in that request; the idle time before the next one
absorbs it, so nothing after the request moves). The lines of other tasks
stay as they are, except a `sched_switch` into the task within the shifted
window, which moves with it (the task's off-CPU time keeps its length).

A fixed add per call makes the change of the function's median exactly
add_ns / median (the median of x + c is the median of x plus c), whatever
the calibration takes out of each call.

Works on the plain text of `trace-cmd report` (comm-pid [CPU] timestamp:
event: then the function-graph plugin's text), as the s30-repeat runs print.
"""
from __future__ import annotations

import re

HEAD = re.compile(r"^(?P<pre>\s*(?P<comm>.+)-(?P<pid>\d+)\s+\[\d+\]\s+)(?P<ts>\d+\.\d+)"
                  r"(?P<post>:\s+(?P<event>\S+):)(?P<rest>.*)$")
DUR = re.compile(r"^(?P<lead>\s*)(?P<mark>[+!#*@$]\s)?\s*(?P<dur>\d+\.\d+) us(?P<pad>\s*)\|(?P<body>.*)$")
NODUR = re.compile(r"^\s*\|(?P<body>.*)$")
SWITCH_NEXT = re.compile(r"==> .*:(\d+) \[\d+\]")
MARKS = ((1e9, "$"), (1e8, "@"), (1e7, "*"), (1e6, "#"), (1e5, "!"), (1e4, "+"))


def mark(ns: float) -> str:
    """trace-cmd's duration mark: + over 10 us, ! over 100 us, ..."""
    for limit, m in MARKS:
        if ns > limit:
            return m
    return ""


def _name(body: str) -> str:
    return body.strip().split("(")[0].strip()


def _with_duration(rest: str, ns: float) -> str:
    """The event's text with its duration set to ns, the `|` kept in its
    column while the number fits."""
    m = DUR.match(rest)
    bar = rest.index("|")
    mk = mark(ns)
    field = (mk + " " if mk else "  ") + f"{ns / 1000.0:.3f} us"
    start = len(m.group("lead"))
    text = rest[:start] + field
    return text.ljust(bar - 1) + " " + rest[bar:] if len(text) < bar else text + " " + rest[bar:]


def _shift_ts(ts: str, ns: float) -> str:
    digits = len(ts.split(".")[1])
    return f"{float(ts) + ns / 1e9:.{digits}f}"


def inject(lines: list, func: str, add_ns: float) -> tuple:
    """(new lines, calls slowed) with `add_ns` more in every call of func."""
    out = []
    stack: dict = {}  # pid -> [(name, shift when entered)]
    shift: dict = {}  # pid -> ns the task is running late in this root call
    calls = 0
    for line in lines:
        m = HEAD.match(line)
        if not m:
            out.append(line)
            continue
        pid, event, rest = m.group("pid"), m.group("event"), m.group("rest")
        late = shift.get(pid, 0.0)
        if event == "sched_switch":
            nxt = SWITCH_NEXT.search(rest)
            late = max(late, shift.get(nxt.group(1), 0.0) if nxt else 0.0)
            out.append(_line(m, late, rest) if late else line)
            continue
        if event not in ("funcgraph_entry", "funcgraph_exit"):
            out.append(_line(m, late, rest) if late else line)
            continue
        frames = stack.setdefault(pid, [])
        d = DUR.match(rest)
        body = (d or NODUR.match(rest)).group("body")
        if event == "funcgraph_entry" and body.rstrip().endswith("{"):
            frames.append((_name(body), late))
            out.append(_line(m, late, rest) if late else line)
            continue
        if event == "funcgraph_entry":  # a leaf: entry and exit in one line
            ts_late = late
            dur = float(d.group("dur")) * 1000.0
            if _name(body) == func:
                dur += add_ns
                shift[pid] = late + add_ns
                calls += 1
                rest = _with_duration(rest, dur)
            out.append(_line(m, ts_late, rest) if ts_late or _name(body) == func else line)
            continue
        # an exit: the call grew by what its descendants grew, and by add_ns
        # when it is func
        name, entered = frames.pop() if frames else ("", late)
        if d is None:
            out.append(_line(m, late, rest) if late else line)
            continue
        grown = late - entered
        if name == func:
            grown += add_ns
            shift[pid] = late + add_ns
            calls += 1
        new_late = shift.get(pid, 0.0)
        if grown:
            rest = _with_duration(rest, float(d.group("dur")) * 1000.0 + grown)
        out.append(_line(m, new_late, rest) if new_late or grown else line)
        if not frames:
            shift[pid] = 0.0  # the root call is over: the next request starts on time
    return out, calls


def _line(m, late: float, rest: str) -> str:
    return m.group("pre") + _shift_ts(m.group("ts"), late) + m.group("post") + rest


def inject_file(src: str, dst: str, func: str, add_ns: float) -> int:
    """inject() from the text file src into dst; returns the calls slowed."""
    with open(src) as f:
        lines = f.read().splitlines()
    new, calls = inject(lines, func, add_ns)
    with open(dst, "w") as f:
        f.write("\n".join(new) + "\n")
    return calls
