#!/usr/bin/env python3
"""Two (or more) git revisions of ftflame timed on the same trace in one run
(issue 41): a regression shows as a ratio, measured side by side.

    bench/revs.py [--reps N] [--formats txt,json] [--no-floor] REV_A REV_B [TRACE ...]

Each REV is a commit (main, HEAD~1, a hash...) or `.` for this checkout as it
is, uncommitted changes included. A commit is exported (`git archive`) into a
temporary folder and its C extensions built there with this venv's Python
(`setup.py build_ext --inplace`, its own build folder); each tree's modules
are compiled to .pyc first (as an installed ftflame has them: without them
every run compiles its source, 0.08 s of CPU). Every command then runs the
tree's `ftflame report -q TRACE -o OUT` from a folder that maps the package
onto that tree (PYTHONPATH), so one venv serves all revisions.

Runs are interleaved (A B A B ...), --reps rounds; the figure is the median
CPU time (user + sys: the machine is shared, wall times stretch with the
load) and the ratio of each revision's median to the first's; the median
wall time beside it (the command runs the reader and the builder on two
threads, the JSON's formatting beside the making of its rows: on two
cores its wall time is less than its CPU). With zstd
and a zstd trace.dat, the machine's floor (bench/zstd_floor.py) is
timed in the same rounds and each median, CPU and wall, is also given as a
ratio to the floor's CPU, and the user CPU as a ratio to the floor's user
CPU (the unit of the performance issue's table).
The outputs of the revisions are compared too (identical or not).
With the text among the formats, each CPU median is also given in ns per
event of the trace (the count the text report prints), the floor's too: a
ratio to the floor moves with the recording (each session records the long
traces again) and the host, and the two figures per event say which moved.

It never fails on noise: it prints figures, it judges nothing. Its exit
code is 2 only when it cannot run (a revision that does not resolve or
build, a command that fails); .ci/run ignores even that (a shallow clone
may lack the previous commit).
"""
from __future__ import annotations

import argparse
import filecmp
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
# the package's folders (pyproject.toml's package-dir): ftflame's own
# entries, and the stages that live at the top level
STAGES = {"parse": "parse", "report": "report", "collect": "collect", "templates": "templates"}
BUILD_FILES = ("setup.py", "pyproject.toml", "README.md", "ftflame", *STAGES.values())
DEFAULT_TRACE = os.path.join(ROOT, "tests", "data", "fixtures", "k6.12", "s30-repeat", "run1", "trace.dat")


def sh(cmd, **kw) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def tree_of(rev: str, tmp: str) -> tuple[str, str]:
    """(label, the folder holding that revision's source, built)."""
    if rev == ".":
        label, tree = "this checkout", ROOT
    else:
        commit = sh(["git", "-C", ROOT, "rev-parse", "--verify", "--quiet", rev + "^{commit}"]).strip()
        label = f"{rev} ({commit[:9]})"
        tree = os.path.join(tmp, "tree-" + commit[:12])
        if not os.path.isdir(tree):
            os.makedirs(tree)
            # the package and what its build reads, not the test data
            archive = subprocess.Popen(["git", "-C", ROOT, "archive", commit, "--", *BUILD_FILES],
                                       stdout=subprocess.PIPE)
            subprocess.run(["tar", "-x", "-C", tree], stdin=archive.stdout, check=True)
            if archive.wait() != 0:
                raise SystemExit(f"revs: git archive {rev} failed")
            t0 = time.perf_counter()
            subprocess.run([PY, "setup.py", "-q", "build_ext", "--inplace", "--build-temp",
                            os.path.join(tmp, "build-" + commit[:12])],
                           cwd=tree, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            print(f"revs: built {label} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    subprocess.run([PY, "-m", "compileall", "-q", *(os.path.join(tree, d) for d in ("ftflame", *STAGES.values()))],
                   check=True, stdout=subprocess.DEVNULL)
    return label, tree


def shim(tree: str, where: str) -> str:
    """A folder whose `ftflame` package is tree's (its entries and the
    top-level stages linked in): PYTHONPATH for that revision."""
    pkg = os.path.join(where, "ftflame")
    os.makedirs(pkg)
    for name in os.listdir(os.path.join(tree, "ftflame")):
        if name != "__pycache__":
            os.symlink(os.path.join(tree, "ftflame", name), os.path.join(pkg, name))
    os.symlink(os.path.join(tree, "ftflame", "__pycache__"), os.path.join(pkg, "__pycache__"))
    for name, folder in STAGES.items():
        os.symlink(os.path.join(tree, folder), os.path.join(pkg, name))
    return where


def cpu_of(cmd, env, cwd) -> tuple[float, float, float]:
    """The command's CPU seconds (user + sys of all its threads), its wall time and its user CPU."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    err = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"revs: {' '.join(cmd)} failed: {err.decode(errors='replace').strip()}")
    return ru.ru_utime + ru.ru_stime, wall, ru.ru_utime


def floor_cmd(trace: str, tmp: str):
    if not shutil.which("zstd"):
        return None
    zdir = tempfile.mkdtemp(dir=tmp)
    out = sh([PY, os.path.join(ROOT, "bench", "zstd_floor.py"), trace, zdir]).strip()
    return None if out == "not zstd" else shlex.split(out)


def events_in(text_report: str) -> int | None:
    """The trace's event count, as the text report's header gives it."""
    try:
        with open(text_report, encoding="utf-8") as f:
            head = f.read(4096)
    except OSError:
        return None
    m = re.search(r"([\d,]+) events", head)
    return int(m.group(1).replace(",", "")) if m else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--formats", default="txt,json")
    ap.add_argument("--no-floor", action="store_true", help="no zstd floor row")
    ap.add_argument("revs", nargs="+", help="two or more revisions (`.`: this checkout), then traces")
    args = ap.parse_args()
    revs = [r for r in args.revs if not os.path.isfile(r)]
    traces = [t for t in args.revs if os.path.isfile(t)] or [DEFAULT_TRACE]
    if len(revs) < 2:
        ap.error("give two revisions or more (e.g. HEAD~1 HEAD, or main .)")
    fmts = [f for f in args.formats.split(",") if f]
    tmp = tempfile.mkdtemp(prefix="ftflame-revs-")
    try:
        try:
            trees = [tree_of(r, tmp) for r in revs]
        except subprocess.CalledProcessError as e:
            err = e.stderr if isinstance(e.stderr, str) else (e.stderr or b"").decode(errors="replace")
            print(f"revs: cannot resolve or build {' '.join(map(str, e.cmd))}: {err.strip()[-300:]}", file=sys.stderr)
            return 2
        envs = []
        for i, (_, tree) in enumerate(trees):
            envs.append({**os.environ, "PYTHONPATH": shim(tree, os.path.join(tmp, f"shim{i}"))})
        for trace in traces:
            floor = None if args.no_floor else floor_cmd(trace, tmp)
            cmds = {}
            for fmt in fmts:
                for i in range(len(trees)):
                    out = os.path.join(tmp, f"out{i}.{fmt}")
                    cmds[(fmt, i)] = ([PY, "-m", "ftflame.cli", "report", "-q", os.path.abspath(trace), "-o", out],
                                      envs[i], out)
            if floor:
                cmds[("floor", 0)] = (floor, None, None)
            got: dict = {k: [] for k in cmds}
            for _ in range(args.reps):
                for k, (cmd, env, _) in cmds.items():
                    got[k].append(cpu_of(cmd, env, tmp))
            med = {k: statistics.median(c for c, _, _ in v) for k, v in got.items()}
            wall = {k: statistics.median(w for _, w, _ in v) for k, v in got.items()}
            user = {k: statistics.median(u for _, _, u in v) for k, v in got.items()}
            fl, fl_user = med.get(("floor", 0)), user.get(("floor", 0))
            events = events_in(cmds[("txt", 0)][2]) if "txt" in fmts else None
            print(f"\n{trace}: {args.reps} interleaved rounds, median CPU s (user+sys), "
                  f"load {os.getloadavg()[0]:.1f}" + (f"; floor (zstd -d of its chunks) {fl:.3f} s" if fl else "")
                  + (f"; {events:,} events" + (f", the floor {fl * 1e9 / events:.0f} ns an event" if fl else "")
                     if events else ""))
            # user / floor's user: the issue's own unit (user CPU seconds); the
            # floor, with synchronous I/O, has next to no system time
            print("| output | revision | CPU s | / first revision |" + (" / floor |" if fl else "")
                  + (" user / floor's user |" if fl_user else "")
                  + " wall s |" + (" wall / floor's CPU |" if fl else "") + (" CPU ns / event |" if events else ""))
            print("|---|---|---:|---:|" + ("---:|" if fl else "") + ("---:|" if fl_user else "") + "---:|"
                  + ("---:|" if fl else "") + ("---:|" if events else ""))
            for fmt in fmts:
                base = med[(fmt, 0)]
                for i, (label, _) in enumerate(trees):
                    v, w = med[(fmt, i)], wall[(fmt, i)]
                    print(f"| {fmt} | {label} | {v:.3f} | {v / base:.2f} |" + (f" {v / fl:.2f} |" if fl else "")
                          + (f" {user[(fmt, i)] / fl_user:.2f} |" if fl_user else "")
                          + f" {w:.3f} |" + (f" {w / fl:.2f} |" if fl else "")
                          + (f" {v * 1e9 / events:.0f} |" if events else ""))
                same = all(filecmp.cmp(cmds[(fmt, 0)][2], cmds[(fmt, i)][2], shallow=False)
                           for i in range(1, len(trees)))
                print(f"| {fmt} | outputs | {'identical' if same else 'DIFFER'} | | " + ("|" if fl else "")
                      + (" |" if fl_user else "") + " |" + (" |" if fl else "") + (" |" if events else ""))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
