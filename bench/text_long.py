#!/usr/bin/env python3
"""Peak RSS of `ftflame report` on long text traces (make bench's text table).

    bench/text_long.py [--mb N] [--roots N] [--reps N]

* a real tracefs trace made --mb MB long (tests/helpers/longtext.py: the
  bundled fixture's records repeated, each copy later in time by the trace's
  span), written under /tmp and removed after: text and JSON reports, peak RSS
  against the 300 MiB target (memory must not grow with the text);
* a generated trace of --roots short root calls (one leaf per line at depth
  0): the one shape whose memory grows with the text, a row per root call
  (docs/design.md, "Root calls"); its bytes per root call above the run on
  the real trace;
* the same root calls as a trace.dat (tests/helpers/datwriter.py, v7 zstd:
  the same CPUs and durations, 3 function names instead of 50): the peak
  is the root calls', not the text reader's (--no-dat: not this row; the
  file takes about a minute to write).
Best of --reps runs each.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from run import PY, measure  # noqa: E402

from helpers import datwriter  # noqa: E402
from helpers.longtext import repeated  # noqa: E402

SOURCE = os.path.join(ROOT, "tests", "data", "fixtures", "k6.1", "s07-tracefs-text",
                      "trace-proc-abstime-tail.txt.gz")
TARGET_MIB = 300


def roots_text(path: str, n: int, wide: bool = False) -> None:
    """n one-line root calls on 2 CPUs, 1-97 us, 50 functions; wide: with
    the time and task columns and longer names (about 90 bytes a line: 4.4 M
    root calls in 396 MB, the shape of docs/performance.md's "Root calls as
    columns")."""
    with open(path, "w") as f:
        if not wide:
            f.write("# tracer: function_graph\n#\n# CPU  DURATION                  FUNCTION CALLS\n"
                    "# |     |   |                     |   |   |   |\n")
            for lo in range(0, n, 100_000):
                f.writelines(f" {i % 2})   {1 + i % 97}.000 us    |  f_{i % 50}();\n"
                             for i in range(lo, min(lo + 100_000, n)))
            return
        f.write("# tracer: function_graph\n#\n#     TIME        CPU  TASK/PID         DURATION                  "
                "FUNCTION CALLS\n#      |          |     |    |           |   |                     |   |   |   |\n")
        names = [f"nfsd_cache_lookup_{k:02d}_ok [nfsd]" for k in range(50)]
        t = [14_000_000, 14_000_000]  # per CPU, us
        for lo in range(0, n, 100_000):
            rows = []
            for i in range(lo, min(lo + 100_000, n)):
                c, d = i % 2, 1 + i % 97
                us, t[c] = t[c], t[c] + d + 3
                rows.append(f"{us // 1_000_000:>6d}.{us % 1_000_000:06d} |   {c})    nfsd-{143 + c}    |  "
                            f"{d:>3d}.000 us    |  {names[i % 50]}();\n")
            f.writelines(rows)


def roots_dat(path: str, n: int) -> None:
    """roots_text's root calls as a trace.dat: root call i on CPU i % 2,
    1 + i % 97 us long, one of the writer's three functions."""
    funcs = sorted(datwriter.FUNCS)

    def events(cpu):
        t = 1_000_000
        for i in range(cpu, n, 2):
            func, dur = funcs[i % 3], 1000 * (1 + i % 97)
            yield t, datwriter.entry(100 + cpu, func, 0)
            yield t + dur, datwriter.exit_(100 + cpu, func, 0, t, t + dur)
            t += dur + 500

    cpus = [(page for page, _ in datwriter.pages(events(cpu), datwriter.PagePlan())) for cpu in (0, 1)]
    datwriter.write_v7(path, cpus, compression="zstd", pages_per_chunk=64)


def report_rows(tmp: str, path: str, label: str, reps: int, note=None) -> float:
    """The table's rows of `ftflame report` of path as text and JSON (best of
    reps; note(rss): words after the peak), path removed after; the text
    report's peak RSS."""
    size = os.path.getsize(path) / 1e6
    peaks = {}
    for fmt in ("txt", "json"):
        cmd = [PY, "-m", "ftflame.cli", "report", "-q", path, "-o", os.path.join(tmp, "r." + fmt)]
        wall, rss, cpu = min(measure(cmd) for _ in range(reps))
        peaks[fmt] = rss
        print(f"| {label} | {size:,.0f} | ftflame report --format {fmt} | "
              f"{wall:.1f} | {cpu:.1f} | {rss:.0f}{note(rss) if note else ''} | "
              f"{'yes' if rss < TARGET_MIB else 'NO'} |")
    os.unlink(path)
    return peaks["txt"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=1024, help="MB of real text (0: no such rows)")
    ap.add_argument("--roots", type=int, default=1_000_000, help="short root calls (0: no such rows)")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--no-dat", action="store_true", help="no trace.dat row of the same root calls")
    ap.add_argument("--wide", action="store_true",
                    help="the root calls' text with time and task columns (about 90 bytes a line)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ftflame-bench-text-")
    try:
        print("| text trace | size MB | command | wall s | CPU s | peak RSS MiB | under %d MiB |" % TARGET_MIB)
        print("|---|---:|---|---:|---:|---:|---|")
        base = None
        if args.mb:
            path = os.path.join(tmp, "long.txt")
            with open(path, "wb") as f:
                for chunk in repeated(SOURCE, args.mb * 1_000_000):
                    f.write(chunk)
            base = report_rows(tmp, path, "s07 trace-proc-abstime-tail repeated", args.reps)
        if args.roots:
            path = os.path.join(tmp, "roots.txt")
            roots_text(path, args.roots, args.wide)
            per_root = (lambda rss: f" ({(rss - base) * 1048576 / args.roots:.0f} B a root call)") if base else None
            report_rows(tmp, path, f"{args.roots:,} root calls, one line each", args.reps, per_root)
            if not args.no_dat:
                path = os.path.join(tmp, "roots.dat")
                roots_dat(path, args.roots)
                report_rows(tmp, path, f"the same {args.roots:,} root calls as trace.dat", args.reps)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
