#!/usr/bin/env python3
"""The read's instructions and cache misses, revision against revision,
counted by a simulated CPU (valgrind's cachegrind): figures that do not move
with the machine's load, for changes too small for CPU seconds to show on a
shared machine (a 3% cut is inside the run-to-run noise of bench/revs.py
here, and this VM exposes no hardware counters to `perf stat`).

    bench/read_counts.py [--top N] [--keep DIR] REV_A REV_B [TRACE ...]

Each REV is built as bench/revs.py builds it (`.`: this checkout). For each
trace, each revision's C read runs once on one thread (FTFLAME_THREADS=1,
the decoding and the builder on the calling thread; the text report's read:
no exclusive histograms) under `valgrind --tool=cachegrind --cache-sim=yes`;
the interpreter's start and the core's import are in every column alike.
Printed per revision: instructions (Ir), L1 data misses (reads + writes) and
last-level data misses, and their ratios to the first revision's; with
--top N, the N functions whose L1 misses or instructions moved most. With
--keep DIR, cachegrind's files stay in DIR for cg_annotate (per line).

What it does not show: time. The simulated caches are not this machine's
(no prefetcher: a line the hardware fetches beside its neighbour counts as
a miss here), so a cut in misses is a reason to measure, and bench/revs.py
or bench/phases.py on a quiet machine says what it is worth. A revision
takes 30-60x its read's CPU time (about 1 min for a 3 M-event trace).
Needs valgrind (Debian's `valgrind` package; `apt-get install valgrind`):
without it, it says so and exits 2.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import revs  # noqa: E402  (each revision's tree, built, and its PYTHONPATH)

PY = sys.executable
READ = ("import os, sys\n"
        "from ftflame.parse import _core\n"
        "_core.read_dat_builtin(os.fsencode(sys.argv[1]), excl_hist=0)\n")
EVENTS = ("Ir", "D1mr", "D1mw", "DLmr", "DLmw")


def load(path: str) -> tuple[dict[str, int], dict[str, list[int]]]:
    """(the totals, per file:function) of a cachegrind output file."""
    names: list[str] = []
    per: dict[str, list[int]] = collections.defaultdict(lambda: [0] * len(EVENTS))
    fl = fn = "?"
    for line in open(path, encoding="utf-8", errors="replace"):
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith("fl="):
            fl = os.path.basename(line[3:].strip())
        elif line.startswith("fn="):
            fn = line[3:].strip()
        elif line[:1].isdigit():
            vals = line.split()[1:]
            row = per[f"{fl}:{fn}"]
            for k, ev in enumerate(EVENTS):
                i = names.index(ev)
                if i < len(vals):
                    row[k] += int(vals[i])
    totals = {ev: sum(r[k] for r in per.values()) for k, ev in enumerate(EVENTS)}
    return totals, per


def counts(env: dict[str, str], trace: str, out: str) -> tuple[dict[str, int], dict[str, list[int]]]:
    # the read as a script beside the output, not `-c`: cachegrind writes the
    # command into its file's `cmd:` line, which cg_annotate reads as one line;
    # and from the output's folder, not a checkout (the script's folder comes
    # first on sys.path: from a checkout it would import the checkout's ftflame)
    script = os.path.join(os.path.dirname(out), "read_counts_read.py")
    with open(script, "w", encoding="utf-8") as f:
        f.write(READ)
    subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--cachegrind-out-file={out}",
                    PY, script, os.path.abspath(trace)], env={**env, "FTFLAME_THREADS": "1"}, check=True,
                   cwd=os.path.dirname(out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return load(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--top", type=int, default=0, help="the N functions that moved most (default none)")
    ap.add_argument("--keep", metavar="DIR", help="keep cachegrind's files in DIR (cg_annotate reads them)")
    ap.add_argument("revs", nargs="+", help="two revisions or more (`.`: this checkout), then traces")
    args = ap.parse_args()
    if not shutil.which("valgrind"):
        print("read_counts: valgrind is not installed: apt-get install valgrind, then rerun", file=sys.stderr)
        return 2
    rev_names = [r for r in args.revs if not os.path.isfile(r)]
    traces = [t for t in args.revs if os.path.isfile(t)] or [revs.DEFAULT_TRACE]
    if len(rev_names) < 2:
        ap.error("give two revisions or more (e.g. main .)")
    tmp = tempfile.mkdtemp(prefix="ftflame-counts-")
    try:
        try:
            trees = [revs.tree_of(r, tmp) for r in rev_names]
        except subprocess.CalledProcessError as e:
            print(f"read_counts: cannot resolve or build {' '.join(map(str, e.cmd))}", file=sys.stderr)
            return 2
        envs = [{**os.environ, "PYTHONPATH": revs.shim(tree, os.path.join(tmp, f"shim{i}"))}
                for i, (_, tree) in enumerate(trees)]
        for trace in traces:
            print(f"\n{trace}: the read on one thread, cachegrind's counts")
            print(f"{'revision':32s} {'Ir':>15s} {'L1 d misses':>13s} {'LL d misses':>12s}  ratios to the first")
            got = []
            for i, ((label, _), env) in enumerate(zip(trees, envs)):
                out = os.path.join(tmp, f"cg{i}.out")
                try:
                    got.append(counts(env, trace, out))
                except subprocess.CalledProcessError as e:
                    print(f"read_counts: {label} on {trace} failed: {e.stderr.decode(errors='replace')[-300:]}",
                          file=sys.stderr)
                    return 2
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    where = os.path.basename(os.path.dirname(os.path.abspath(trace)))
                    name = "-".join(re.sub(r"[^\w.-]+", "_", w).strip("_") for w in (label, where))
                    kept = os.path.join(args.keep, f"{name}.cg.out")
                    shutil.copyfile(out, kept)
                    print(f"read_counts: kept {kept}", file=sys.stderr)
            base = None
            for (label, _), (tot, _per) in zip(trees, got):
                fig = (tot["Ir"], tot["D1mr"] + tot["D1mw"], tot["DLmr"] + tot["DLmw"])
                base = base or fig
                ratios = " ".join(f"{f / b:.3f}" if b else "-" for f, b in zip(fig, base))
                print(f"{label:32s} {fig[0]:15,d} {fig[1]:13,d} {fig[2]:12,d}  {ratios}")
            if args.top and len(got) >= 2:
                (_, a), (_, b) = got[0], got[-1]
                moved = []
                for k in set(a) | set(b):
                    ra, rb = a.get(k, [0] * len(EVENTS)), b.get(k, [0] * len(EVENTS))
                    d_ir, d_l1 = rb[0] - ra[0], (rb[1] + rb[2]) - (ra[1] + ra[2])
                    moved.append((abs(d_l1) + abs(d_ir) / 50, d_ir, d_l1, k))
                moved.sort(reverse=True)
                print(f"  most moved, {trees[-1][0]} against {trees[0][0]}: Ir, L1 d misses, function")
                for _, d_ir, d_l1, k in moved[:args.top]:
                    print(f"  {d_ir:+15,d} {d_l1:+12,d}  {k}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
