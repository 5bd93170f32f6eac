#!/usr/bin/env python3
"""The Perfetto output on a long trace.dat against the text report's
(make bench): wall and CPU time and peak RSS of `ftflame report T -o
x.perfetto-trace` and `-o x.txt`, on a trace of about --mb MB and on one
half as long (bench/longer.py: a curated trace's pages repeated later in
time, v7 zstd as trace-cmd 3.x records). Targets: the Perfetto trace's peak RSS within 1.2x of the text
report's, the same at both lengths (the call stream is read back a batch at
a time), a few seconds for 100 MB.

    bench/perfetto_long.py [--mb N] [--reps N] [--source REL]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from run import PY, measure  # noqa: E402

FIXTURES = os.path.join(ROOT, "tests", "data", "fixtures")
RSS_RATIO = 1.2


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=100, help="the long trace's size (default 100)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--source", default="k6.12/s16-icount-calib/trace-full.dat",
                    help="the curated trace repeated (default: a full-depth nfsd trace with sched_switch)")
    args = ap.parse_args()
    source = os.path.join(FIXTURES, args.source)
    times = max(2, round(args.mb * 2**20 / os.path.getsize(source)))
    rows = []
    with tempfile.TemporaryDirectory(prefix="ftflame-bench-") as tmp:
        for n in (times // 2, times):
            trace = os.path.join(tmp, f"x{n}.dat")
            subprocess.run([PY, os.path.join(ROOT, "bench", "longer.py"), source, str(n), trace, "--zstd"], check=True,
                           stdout=subprocess.DEVNULL)
            size = os.path.getsize(trace) / 2**20
            best = {}
            for _ in range(args.reps):  # interleaved: the machine's load stretches wall times, not peaks
                for fmt in ("txt", "perfetto-trace"):
                    out = os.path.join(tmp, f"x.{fmt}")
                    got = measure([PY, "-m", "ftflame.cli", "report", "-q", trace, "-o", out])
                    best[fmt] = tuple(map(min, best.get(fmt, (float("inf"),) * 3), got))
                    if fmt != "txt":
                        best["out"] = (os.path.getsize(out) / 2**20,)
                    os.unlink(out)
            os.unlink(trace)
            rows.append((size, best))
    print("| trace.dat MB | output | wall s | CPU s | peak RSS MiB | Perfetto / text peak RSS | output MB |")
    print("|---|---|---|---|---|---|---|")
    ok = True
    for size, best in rows:
        ratio = best["perfetto-trace"][1] / best["txt"][1]
        ok &= ratio <= RSS_RATIO
        for fmt in ("txt", "perfetto-trace"):
            wall, rss, cpu = best[fmt]
            vs = f"{ratio:.2f} (target {RSS_RATIO})" if fmt != "txt" else ""
            out = f"{best['out'][0]:.0f}" if fmt != "txt" else ""
            print(f"| {size:.0f} | {fmt} | {wall:.2f} | {cpu:.2f} | {rss:.0f} | {vs} | {out} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
