#!/usr/bin/env python3
"""What each thread of `ftflame report` does, over time: which phases run on
both cores and which on one (issue 41: "say what the second core does").

    bench/timeline.py [--format txt|json] [--bin MS] [--freq HZ] TRACE.dat

Runs `ftflame report -q TRACE -o OUT` (this checkout) under `perf record -e
cpu-clock` (a software clock: this VM has no hardware counters) and prints,
from perf's samples:
  * per kind of thread: its name (the C core names its threads:
    ftflame-build, the builder; ftflame-write, the JSON's writer, one a
    chunk; Python's threads carry the process's name, the first being the
    main thread), how many, their CPU seconds, and when they ran (ms from
    the first sample);
  * a line per --bin ms: each kind's share of a core in that bin, and the
    sum (2.00: both cores busy);
  * how much of the wall time had one core busy and how much two.
The sampling adds a few % of CPU; the figures are perf's counts, not
getrusage's: compare them within one run. Needs perf (Debian's
linux-perf) and the permission to sample (root, or a low
kernel.perf_event_paranoid); without them it says so and exits 2.
"""
from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def samples(perf: str, data: str) -> list[tuple[str, int, float]]:
    """(thread name, tid, time s) of each sample."""
    out = subprocess.run([perf, "script", "-i", data, "-F", "comm,tid,time"], capture_output=True,
                         text=True, check=True).stdout
    got = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        try:  # the name may hold spaces: tid and time are the last two fields
            got.append((" ".join(parts[:-2]), int(parts[-2]), float(parts[-1].rstrip(":"))))
        except ValueError:
            continue
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--format", default="txt", help="the report's output format (txt, json, html...)")
    ap.add_argument("--bin", type=float, default=20.0, help="ms a line (default 20)")
    ap.add_argument("--freq", type=int, default=2000, help="samples a second and a thread (default 2000)")
    ap.add_argument("trace")
    args = ap.parse_args()
    perf = shutil.which("perf")
    if not perf:
        print("timeline: needs perf (apt-get install linux-perf)", file=sys.stderr)
        return 2
    ftflame = os.path.join(ROOT, ".venv", "bin", "ftflame")
    if not os.path.exists(ftflame):
        ftflame = shutil.which("ftflame") or ftflame
    with tempfile.TemporaryDirectory(prefix="ftflame-timeline-") as tmp:
        data = os.path.join(tmp, "perf.data")
        out = os.path.join(tmp, "out." + args.format)
        rec = subprocess.run([perf, "record", "-q", "-e", "cpu-clock", "-F", str(args.freq), "-o", data,
                              ftflame, "report", "-q", args.trace, "-o", out], capture_output=True, text=True)
        if rec.returncode != 0:
            print(f"timeline: perf record failed: {rec.stderr.strip()[-300:]}", file=sys.stderr)
            return 2
        got = samples(perf, data)
    if not got:
        print("timeline: perf recorded no samples", file=sys.stderr)
        return 2
    t0 = min(t for _, _, t in got)
    main_tid = min(tid for _, tid, _ in got)  # the process's first thread
    per = args.bin / 1000 * args.freq  # samples in a bin of a thread that ran all through it
    proc_name = next(name for name, tid, _ in got if tid == main_tid)
    # a column per kind of thread (the JSON starts a writer thread a chunk)
    count, first, last, tids = collections.Counter(), {}, {}, collections.defaultdict(set)
    bins: dict = collections.defaultdict(collections.Counter)
    for name, tid, t in got:
        # Python's threads keep the process's name: the first is the main one
        kind = name if name != proc_name else "main" if tid == main_tid else "a Python thread"
        tids[kind].add(tid)
        count[kind] += 1
        first.setdefault(kind, t)
        last[kind] = t
        bins[int((t - t0) * 1000 / args.bin)][kind] += 1
    kinds = sorted(count, key=lambda k: first[k])
    print(f"{args.trace}, {args.format}: {len(got)} samples at {args.freq} Hz, "
          f"{(max(last.values()) - t0) * 1000:.0f} ms from the first to the last")
    print("| column | thread | threads | CPU s | from ms | to ms |")
    print("|---|---|---:|---:|---:|---:|")
    for k, kind in enumerate(kinds):
        print(f"| T{k} | {kind} | {len(tids[kind])} | {count[kind] / args.freq:.3f} | "
              f"{(first[kind] - t0) * 1000:.0f} | {(last[kind] - t0) * 1000:.0f} |")
    print()
    print("ms    " + " ".join(f"{'T%d' % k:>5}" for k in range(len(kinds))) + "   cores")
    one = two = 0
    for b in range(max(bins) + 1):
        shares = [bins[b][kind] / per for kind in kinds]
        busy = sum(shares)
        one += 0.5 <= busy < 1.5
        two += busy >= 1.5
        print(f"{b * args.bin:5.0f} " + " ".join(f"{s:5.2f}" if s else "    ." for s in shares) + f"   {busy:5.2f}")
    nb = max(bins) + 1
    print(f"\n{args.bin:g} ms bins with about one core busy: {one} of {nb}; about two: {two} of {nb}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
