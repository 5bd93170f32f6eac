"""Hand-made changes of a real function_graph text trace, for the diff tests.

Works on the tracefs text of the default options (per-CPU lines: ` 1)  dur us
|  name() {`), as in tests/data/fixtures/k6.1/s07-tracefs-text/trace-default
.txt.gz. The trace is cut into root calls (each root call's lines: one CPU,
from the root's entry to its closing brace); a new trace is made of root
calls, whole and in order, with:

* ``scaled``: one function's durations scaled by a factor, its ancestors'
  durations grown by the same ns, so every call still lasts its children
  plus its own time (the text has no timestamps to move);
* ``halves``: the first and second half of the root calls;
* ``resampled``: root calls drawn with replacement (a seeded run of the
  same workload), optionally with every duration times a drift (the whole
  machine a little slower) or a burst of calls in one root call;
* ``scale_all``, ``with_burst``: one root call's lines changed so.
"""
from __future__ import annotations

import gzip
import random
import re

LINE = re.compile(r"^(\s*\d+\)\s)([ +!#*@$])\s*(?:([\d.]+) us)?\s*\|(\s*)(.*)$")
MARKS = ((1e9, "$"), (1e8, "@"), (1e7, "*"), (1e6, "#"), (1e5, "!"), (1e4, "+"))


def mark(ns: float) -> str:
    """The tracer's duration mark: + over 10 us, ! over 100 us, ..."""
    for limit, m in MARKS:
        if ns > limit:
            return m
    return " "


def read_lines(path: str) -> list:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return f.read().splitlines()


def root_calls(lines: list) -> tuple:
    """(header lines, [root call: list of its lines]) in order of their ends;
    lines outside any complete root call are left out."""
    header = [x for x in lines if x.startswith("#")]
    depth, current, calls = {}, {}, []
    for x in lines:
        m = LINE.match(x)
        if not m:
            continue
        cpu = m.group(1).strip()
        body = m.group(5)
        d = depth.get(cpu, 0)
        if d == 0 and not body.endswith("{"):
            continue  # a leaf or exit outside a root call (a cut at the start)
        current.setdefault(cpu, []).append(x)
        if body.endswith("{"):
            depth[cpu] = d + 1
        elif body.startswith("}"):
            depth[cpu] = d - 1
        if depth.get(cpu, 0) == 0:
            calls.append(current.pop(cpu))
    return header, calls


def _name(body: str) -> str:
    return body.split("(")[0].split(" [")[0].strip()


def _with_duration(x: str, ns: float) -> str:
    m = LINE.match(x)
    bar = x.index("|")
    head = f"{m.group(1)}{mark(ns)} {ns / 1000.0:.3f} us"
    return head.ljust(bar - 1) + " " + x[bar:]


def scale_function(call: list, func: str, factor: float) -> list:
    """A root call's lines with `func`'s durations times `factor` and every
    ancestor's grown by what its descendants grew."""
    out = []
    stack = []  # per open call: [name, line index in out, ns added below]
    for x in call:
        m = LINE.match(x)
        body = m.group(5)
        if body.endswith("{"):
            stack.append([_name(body), len(out), 0.0])
            out.append(x)
            continue
        dur = float(m.group(3)) * 1000.0 if m.group(3) else None
        if body.startswith("}"):
            name, _, added = stack.pop()
        else:
            name, added = _name(body), 0.0
        if dur is None:
            out.append(x)
            continue
        if name == func:
            added += dur * (factor - 1.0)
        out.append(_with_duration(x, dur + added) if added else x)
        if stack:
            stack[-1][2] += added
    return out


def scale_all(call: list, factor: float) -> list:
    """A root call's lines with every duration times `factor` (children
    still add up: each call and its children scale alike)."""
    out = []
    for x in call:
        m = LINE.match(x)
        out.append(_with_duration(x, float(m.group(3)) * 1000.0 * factor) if m.group(3) else x)
    return out


def with_burst(call: list, func: str, count: int, ns: float, rng: random.Random) -> list:
    """A root call with `count` more leaf calls of `func` (about `ns` each,
    +-10%, seeded) just under the root, before its closing line; the root
    grown by their time (an RCU callback batch run inside one request)."""
    cpu = LINE.match(call[0]).group(1)
    durs = [ns * rng.uniform(0.9, 1.1) for _ in range(count)]
    leaves = [f"{cpu}  {d / 1000.0:.3f} us    |    {func}();" for d in durs]
    last = LINE.match(call[-1])
    root = float(last.group(3)) * 1000.0
    return call[:-1] + [_with_duration(x, d) for x, d in zip(leaves, durs)] + \
        [_with_duration(call[-1], root + sum(durs))]


def write(path: str, header: list, calls: list) -> str:
    with gzip.open(path, "wt") as f:
        f.write("\n".join(header + [x for c in calls for x in c]) + "\n")
    return path


def scaled(src: str, dst: str, func: str, factor: float = 1.5) -> str:
    header, calls = root_calls(read_lines(src))
    return write(dst, header, [scale_function(c, func, factor) for c in calls])


def split(src: str, dsts: list, func: str = "", factor: float = 1.0, drift: float = 1.0,
          which: tuple = ()) -> list:
    """The root calls dealt in turn into len(dsts) runs (disjoint: runs of
    one workload, no root call twice); the runs numbered in `which` (all
    when empty) with `func` scaled and every duration times `drift`."""
    header, calls = root_calls(read_lines(src))
    out = []
    for k, dst in enumerate(dsts):
        mine = calls[k::len(dsts)]
        if not which or k in which:
            if func:
                mine = [scale_function(c, func, factor) for c in mine]
            if drift != 1.0:
                mine = [scale_all(c, drift) for c in mine]
        out.append(write(dst, header, mine))
    return out


def halves(src: str, first: str, second: str) -> tuple:
    header, calls = root_calls(read_lines(src))
    mid = len(calls) // 2
    return write(first, header, calls[:mid]), write(second, header, calls[mid:])


def resampled(src: str, dst: str, seed: int, func: str = "", factor: float = 1.0, drift: float = 1.0,
              burst: tuple = (), burst_every: bool = False) -> str:
    """Root calls drawn with replacement (as many as the trace has), then
    optionally one function scaled, every duration times `drift`, and
    `burst` = (function, calls, ns) added to the first root call (to every
    one with burst_every)."""
    header, calls = root_calls(read_lines(src))
    rng = random.Random(seed)
    pick = [calls[rng.randrange(len(calls))] for _ in calls]
    if func:
        pick = [scale_function(c, func, factor) for c in pick]
    if drift != 1.0:
        pick = [scale_all(c, drift) for c in pick]
    for k in range(len(pick) if burst_every else 1) if burst else ():
        pick[k] = with_burst(pick[k], *burst, rng)
    return write(dst, header, pick)


PROCEDURES = {"v3 WRITE": "nfsd3_proc_write", "v3 GETATTR": "nfsd3_proc_getattr", "v3 READ": "nfsd3_proc_read"}


def dispatcher_events(seed: int, calls: dict, factor: dict = None) -> list:
    """Hand-made events (ftflame.parse.build_events) of an nfsd thread:
    `calls[op]` root calls of svc_process > nfsd_dispatch > the procedure of
    each operation (PROCEDURES), shuffled, the procedure's time drawn
    log-normally around 20 us (seeded), times `factor[op]` for the scaled
    operations (its ancestors grown by the same ns)."""
    rng = random.Random(seed)
    factor = factor or {}
    order = [op for op, n in calls.items() for _ in range(n)]
    rng.shuffle(order)
    events, t = [], 1_000_000
    for op in order:
        proc = rng.lognormvariate(9.9, 0.3) * factor.get(op, 1.0)  # ns
        chain = [("svc_process", 2000.0), ("nfsd_dispatch", 500.0), (PROCEDURES[op], proc)]
        start, total = [], 0.0
        for depth, (name, _) in enumerate(chain):
            start.append(t + depth * 100)
            events.append(("entry", 0, 100, 0, name, depth, start[-1], 0, 0, 0, 0, 0))
        for depth in reversed(range(len(chain))):
            total += chain[depth][1]
            end = start[depth] + int(total) + 100 * (len(chain) - depth)
            events.append(("exit", 0, 100, 0, chain[depth][0], depth, end, start[depth], end, 0, 0, 0))
        t = end + 10_000
    return events
