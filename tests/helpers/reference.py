"""An independent reference: per-function calls and raw inclusive sums
computed from `trace-cmd report -R` text, one exit line at a time.

It shares no code with ftflame: trace-cmd decodes the file, and every
funcgraph_exit line contributes `rettime - calltime` to its function. That
is exactly what ftflame's raw `incl_ns.sum` must equal, to the nanosecond.
"""
from __future__ import annotations

import collections
import re
import subprocess

# The fields by name: kernels order them differently (5.10: func, overrun,
# calltime, rettime, depth; 6.x and 7.x: func, depth, overrun, calltime, rettime)
EXIT_RE = re.compile(rb"funcgraph_exit:\s+func=(\S+) ")
TIMES_RE = re.compile(rb" calltime=([0-9a-f]+) rettime=([0-9a-f]+)")


def reference_exits(path: str):
    """Return {function: (calls, sum of rettime - calltime)} from trace-cmd."""
    proc = subprocess.Popen(["trace-cmd", "report", "-R", path], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    calls = collections.Counter()
    total = collections.Counter()
    for line in proc.stdout:
        if b"funcgraph_exit" not in line:
            continue
        m, t = EXIT_RE.search(line), TIMES_RE.search(line)
        if not m or not t:
            raise AssertionError(f"unparsed exit line: {line!r}")
        name = m.group(1).decode()
        calltime, rettime = int(t.group(1), 16), int(t.group(2), 16)
        calls[name] += 1
        total[name] += max(rettime - calltime, 0)
    if proc.wait() != 0:
        raise AssertionError(f"trace-cmd report -R {path} failed")
    return {name: (calls[name], total[name]) for name in calls}
