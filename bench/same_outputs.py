#!/usr/bin/env python3
"""Whether two revisions of ftflame write the same reports, byte for byte:
`ftflame report` as text and as JSON (--formats) of every trace under
tests/data/fixtures (and of any TRACE given), with REV_A and with REV_B
(built as bench/revs.py builds them; `.`: this checkout as it is).

    bench/same_outputs.py [--formats txt,json] REV_A REV_B [TRACE ...]

Prints each pair that differs (or that one side refuses: the exit codes
and the first line of stderr are compared too) and a count; exit 1 when
any differs. A speed change must not change a byte (issue 41).
"""
from __future__ import annotations

import argparse
import filecmp
import glob
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import revs  # noqa: E402

FIXTURES = os.path.join(revs.ROOT, "tests", "data", "fixtures")


def traces() -> list:
    found = []
    for pat in ("**/*.dat", "**/*.txt.gz"):
        found += glob.glob(os.path.join(FIXTURES, pat), recursive=True)
    return sorted(set(found))


def report(env: dict, trace: str, out: str, cwd: str) -> tuple:
    proc = subprocess.run([revs.PY, "-m", "ftflame.cli", "report", "-q", trace, "-o", out],
                          env=env, cwd=cwd, capture_output=True, text=True)
    return proc.returncode, (proc.stderr.splitlines() or [""])[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--formats", default="txt,json")
    ap.add_argument("rev_a")
    ap.add_argument("rev_b")
    ap.add_argument("traces", nargs="*")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ftflame-same-")
    try:
        envs = []
        for i, rev in enumerate((args.rev_a, args.rev_b)):
            _, tree = revs.tree_of(rev, tmp)
            envs.append({**os.environ, "PYTHONPATH": revs.shim(tree, os.path.join(tmp, f"shim{i}"))})
        n = bad = 0
        for trace in [*traces(), *map(os.path.abspath, args.traces)]:
            for fmt in args.formats.split(","):
                outs = [os.path.join(tmp, f"{side}.{fmt}") for side in "ab"]
                got = [report(env, trace, out, tmp) for env, out in zip(envs, outs)]
                n += 1
                same = got[0] == got[1] and (got[0][0] != 0 or filecmp.cmp(*outs, shallow=False))
                if not same:
                    bad += 1
                    print(f"DIFFER: {os.path.relpath(trace, revs.ROOT)} {fmt}: {got[0]} / {got[1]}")
                for out in outs:
                    if os.path.exists(out):
                        os.unlink(out)
        print(f"{n - bad} of {n} reports identical ({args.rev_a} against {args.rev_b})")
        return 1 if bad else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
