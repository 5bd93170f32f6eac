#!/usr/bin/env python3
"""Where the function_graph hook cost goes, per class of call (docs/overhead.md
"Hook cost per class of call"): a research tool, not part of ftflame.

    bench/hook_classes.py TRACE.dat ROOT_FUNCTION [REFERENCE_NS]

Reads `trace-cmd report -R -t` (each funcgraph event's own ring-buffer time
stamp next to the calltime/rettime the hook read) and prints, per class of
recorded call, the median and mean of the hook's timed pieces:

  E-C   entry event time stamp - calltime   (inside the call's window)
  X-R   exit event time stamp - rettime     (after it: the caller's window)
  gap   calltime(B) - rettime(A), consecutive siblings A, B, by A's class
  leaf  duration of a leaf (hook + body)

classes: leaf / with children; root calls whose shortest leaf is within 2 ns
of REFERENCE_NS (default 656: the calibration's hook_level.leaf_min_ns on the
icount VM; "low" hook level) or above it ("high"); and the per-root-call
figures (descendants, leaves, shortest leaf, switches). Needs trace-cmd.
"""
from __future__ import annotations

import collections
import re
import statistics
import subprocess
import sys

LINE = re.compile(r"^\s*(\S.*?)-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+): (\w+):\s+(.*)$")


def events(path: str):
    """(pid, ts ns, event name, fields) of every event, in file order."""
    out = subprocess.run(["trace-cmd", "report", "-R", "-t", path], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            _, pid, _, sec, ns, name, rest = m.groups()
            yield (int(pid), int(sec) * 10**9 + int(ns.ljust(9, "0")), name,
                   dict(kv.split("=", 1) for kv in rest.split() if "=" in kv))


def root_calls(path: str, root: str):
    """Per completed root call of `root`: its calls as [func, E, C, R, X,
    children] (completion order, the root last) and its sched_switch count."""
    stacks, open_ = {}, {}
    for pid, ts, name, f in events(path):
        if name == "sched_switch":
            for r in open_.values():
                r["switches"] += 1
        elif name == "funcgraph_entry":
            if f["func"] == root and f["depth"] == "0":
                stacks[pid], open_[pid] = [], {"calls": [], "switches": 0}
            if pid in open_:
                stacks[pid].append([f["func"], ts, None, None, None, 0])
        elif name == "funcgraph_exit" and pid in open_:
            st = stacks[pid]
            if not st or st[-1][0] != f["func"]:
                del open_[pid]  # lost events: leave the call out
                continue
            c = st.pop()
            c[2:5] = int(f["calltime"], 16), int(f["rettime"], 16), ts
            if st:
                st[-1][5] += 1
            open_[pid]["calls"].append(c)
            if not st:
                yield open_.pop(pid)


def summary(values) -> str:
    return (f"n {len(values):6d}  median {statistics.median(values):7.1f}  "
            f"mean {statistics.fmean(values):7.1f} ns") if values else "n      0"


def main(path: str, root: str, reference: float = 656.0) -> None:
    calls = list(root_calls(path, root))
    floors = [min((c[3] - c[2] for c in r["calls"][:-1] if c[5] == 0), default=0) for r in calls]
    agg = collections.defaultdict(list)
    print(f"{len(calls)} root calls of {root}; reference leaf floor {reference:g} ns")
    for r, lo in zip(calls, floors):
        level = "low" if lo <= reference + 2 else "high"
        cs = r["calls"]
        for c in cs[:-1]:
            kind = "leaf" if c[5] == 0 else "with children"
            agg[level, kind, "E-C"].append(c[1] - c[2])
            agg[level, kind, "X-R"].append(c[4] - c[3])
            if c[5] == 0:
                agg[level, "leaf", "duration"].append(c[3] - c[2])
        # consecutive siblings: an exit followed by an entry at the same depth
        times = sorted([(c[2], 1, id(c), c) for c in cs] + [(c[3], 0, id(c), c) for c in cs])
        depth, d = {}, 0
        for _, is_entry, _, c in times:
            if is_entry:
                depth[id(c)] = d
                d += 1
            else:
                d -= 1
        for (_, e1, _, a), (t2, e2, _, b) in zip(times, times[1:]):
            if not e1 and e2 and depth[id(a)] == depth[id(b)]:
                kind = "leaf" if a[5] == 0 else "with children"
                agg[level, kind, "gap after"].append(t2 - a[3])
        print(f"  root call: {len(cs) - 1} descendants, "
              f"{sum(1 for c in cs[:-1] if c[5] == 0)} leaves, shortest leaf {lo} ns ({level}), "
              f"{r['switches']} switches, duration {cs[-1][3] - cs[-1][2]} ns")
    for key in sorted(agg):
        print(f"{' / '.join(key):36s} {summary(agg[key])}")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], *(float(a) for a in sys.argv[3:]))
