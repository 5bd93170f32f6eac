#!/usr/bin/env python3
"""ftflame batch's rows of make bench: the curated corpus (tests/data/fixtures,
every *.dat and *.txt.gz) into a new Parquet dataset with 1 and with 2 local
workers: traces/s, MB/s of trace read, peak RSS per worker; and the
dataset's bytes against the JSON reports' of the same traces.

    bench/batch.py [--reps N] [--dask] [DIR...]

DIR: folders of traces instead (every *.dat below them, e.g. the full
corpus ../shared/fixtures).

--dask: the 2-worker row again on a Dask LocalCluster (2 worker processes).
Best of --reps runs each (the machine is shared: the spread is the load's).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from ftflame import batch  # noqa: E402
from helpers import corpus  # noqa: E402

CURATED = corpus.files(corpus.CURATED, "*.dat") + corpus.files(corpus.CURATED, "*.txt.gz")
INPUTS: list = []


def du(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def one_run(jobs: int, client=None) -> tuple:
    work = tempfile.mkdtemp(prefix="ftflame-bench-batch-")
    try:
        t0 = time.monotonic()
        tally = batch.run_batch(INPUTS, os.path.join(work, "ds"), {"bench": "b"}, jobs=jobs, client=client, quiet=True)
        dt = time.monotonic() - t0
        assert tally.counts["failed"] == 0, tally.counts
        n = tally.counts["written"]
        peak = max(tally.rss.values()) if tally.rss else 0
        return dt, n, tally.bytes_in, peak, du(os.path.join(work, "ds"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def json_bytes() -> int:
    """The JSON reports' bytes of the same traces (one each, as ftflame report -o x.json)."""
    from ftflame.cli import main

    work = tempfile.mkdtemp(prefix="ftflame-bench-json-")
    try:
        seen = set()
        for i, p in enumerate(INPUTS):
            rid = batch.trace_id(p)
            if rid in seen:
                continue
            seen.add(rid)
            assert main(["report", p, "-o", os.path.join(work, f"{i}.json"), "-q"]) == 0
        return du(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--dask", action="store_true")
    ap.add_argument("dirs", nargs="*")
    args = ap.parse_args()
    INPUTS[:] = batch.expand_inputs(args.dirs) if args.dirs else CURATED
    print(f"{len(INPUTS)} traces, {sum(os.path.getsize(p) for p in INPUTS) / 1e6:.1f} MB "
          f"({', '.join(args.dirs) or 'curated corpus'}); best of {args.reps}")
    print("| workers | s | traces/s | MB/s | peak RSS per worker | dataset bytes |")
    print("|---|---|---|---|---|---|")
    rows = [("local 1", 1, None), ("local 2", 2, None)]
    cluster = client = None
    if args.dask:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
        rows.append(("dask 2", 2, client))
    size = 0
    for name, jobs, cl in rows:
        best = min((one_run(jobs, cl) for _ in range(args.reps)), key=lambda r: r[0])
        dt, n, bytes_in, peak, size = best
        print(f"| {name} | {dt:.1f} | {n / dt:.2f} | {bytes_in / dt / 1e6:.2f} | {peak / 2**20:.0f} MiB | {size:,} |")
    if client is not None:
        client.close()
        cluster.close()
    js = json_bytes()
    print(f"dataset {size:,} bytes against the JSON reports' {js:,} bytes ({size / js:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
