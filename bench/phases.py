#!/usr/bin/env python3
"""Where the CPU of `ftflame report` goes, phase by phase, against the
machine's floor (issue 41): the file's zstd chunks through `zstd -d`
(bench/zstd_floor.py).

    bench/phases.py [--reps N] [--rev REV ...] TRACE.dat ...

Per trace, interleaved rounds of:
  * the floor (zstd -d of the chunks, a process per CPU stream, both cores);
  * `ftflame report` text and JSON, the whole command (user+sys of the process);
  * the same stages run one after the other in one process, each timed with
    getrusage (user+sys of every thread): start-up (the interpreter and
    ftflame's light modules), imports (numpy, the correction, the renderer:
    the command runs them on a side thread during the read), the read (the
    C core: decoding on the calling thread, the builder on a second one),
    the export (the core's tables into the Profile), the correction, the
    rendering (text to a string, JSON written to a file as the command
    writes it: a temporary file renamed over the previous one. A truncating
    open instead frees the old file's page cache just before the new text
    is written, and on a VM that hands free memory back to its host those
    just-freed pages are the only ones that cost no host fault: 0.03 against
    0.3-0.45 s of CPU for 147 MB here, docs/performance.md);
  * the read taken apart: decoding alone (FTFLAME_BENCH_DECODE_ONLY=1: the
    batches dropped unbuilt) and decoding + builder on one thread
    (FTFLAME_THREADS=1); the builder alone is the difference;
  * `python -c "import numpy"`: the interpreter and numpy alone, what any
    report made in Python with numpy pays before it reads a byte.
CPU seconds, the median of the rounds; the ratio to the floor's median of
the same run. On a shared machine compare within one run only.

Then, per output, the room the bound (text 2x the floor's CPU, JSON 2.5x)
leaves the builder: the bound less the command's CPU without the builder's.
The builder's share is the stages' read for that output (two threads;
the text's keeps no exclusive-time histograms) less decoding alone: the
two threads' hand-over is counted as the builder's, so the rest is not
overstated. Negative: the bound is out of reach even with a builder that
cost nothing.

--rev REV (repeatable): the ftflame of that revision (built as bench/revs.py
builds it, in a temporary folder; `.`: this checkout, the default), each a
column pair of the table, all timed in the same rounds: before and after.
Each tree's modules are compiled to .pyc first, as an installed ftflame has
them (PYTHONDONTWRITEBYTECODE=1 would otherwise make every run compile
them: 0.08 s of CPU).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import revs  # noqa: E402  (each revision's tree, built, and its PYTHONPATH)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable

# the CPU bounds the report is judged by, as multiples of the floor's CPU
BOUNDS = {"txt": 2.0, "json": 2.5}


def room_for_builder(floor: float, command: float, builder: float, bound: float) -> float:
    """CPU seconds the bound (bound x floor) leaves the builder, once
    everything else the command does (command - builder) is paid: negative
    when the rest alone is over the bound."""
    return bound * floor - (command - builder)


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def child(fmt: str, trace: str, out: str) -> None:
    """The report's stages one after the other, their CPU as JSON on stdout."""
    t = {"start": _cpu()}
    from ftflame.cli import build_parser, correction_options
    from ftflame.parse import dat
    from ftflame.report import RENDERERS
    from ftflame.report.options import render_options

    try:  # as the command builds it: the report's parser alone
        parser = build_parser("report")
    except TypeError:  # a revision that built every command's
        parser = build_parser()
    args = parser.parse_args(["report", "-q", trace, "-o", out])
    t["light imports"] = _cpu()
    RENDERERS[fmt].render  # noqa: B018  (the renderer's import, as the command's)
    import ftflame.correct.stage as stage
    import ftflame.parse.tables  # noqa: F401
    t["imports"] = _cpu()
    try:  # as the command reads for this output (no exclusive histograms for the text)
        res = dat.read_core(trace, trace, None, slowest=args.slowest, excl_hist=fmt != "txt")
    except TypeError:  # a revision before that choice
        res = dat.read_core(trace, trace, None, slowest=args.slowest)
    t["read (decode + build)"] = _cpu()
    profile = dat.to_profile(res, trace, "")
    del res
    t["export"] = _cpu()
    profile = stage.correct_for_report(profile, trace, correction_options(args))
    t["correct"] = _cpu()
    opts = render_options(fmt, None, None, None)
    if fmt == "txt":
        RENDERERS[fmt].render(profile, opts)
    else:  # as the command writes it: a temporary file renamed over the last one
        from ftflame.output import write_atomic

        write_atomic(out, lambda f: RENDERERS[fmt].write(profile, opts, f))
    t["render " + fmt] = _cpu()
    keys = list(t)
    print(json.dumps({"start": t["start"], **{k: t[k] - t[p] for p, k in zip(keys, keys[1:])}}))
    sys.stdout.flush()
    os._exit(0)  # as the command does (cli.run): no teardown


def read_child(trace: str) -> None:
    t0 = _cpu()
    from ftflame.parse import _core
    _core.read_dat_builtin(os.fsencode(trace))
    print(json.dumps({"read": _cpu() - t0}))
    sys.stdout.flush()
    os._exit(0)


def run(cmd, env=None, capture=False, cwd=None):
    """(CPU seconds user+sys of cmd and its children, wall, stdout); run
    from cwd (not this checkout: `-m ftflame.cli` would import its ftflame)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env, cwd=cwd)
    out = proc.stdout.read() if capture else b""
    err = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"phases: {' '.join(cmd)} failed: {err.decode(errors='replace').strip()}")
    return ru.ru_utime + ru.ru_stime, time.perf_counter() - t0, out


def env_for(path: str, **extra) -> dict:
    return {**os.environ, **extra, "PYTHONPATH": path}


def table(trace: str, reps: int, paths: list, tmp: str) -> None:
    """The phase table of each revision (label, PYTHONPATH), all in the same rounds."""
    me = os.path.abspath(__file__)
    zdir = tempfile.mkdtemp(dir=tmp)
    floor = subprocess.run([PY, os.path.join(ROOT, "bench", "zstd_floor.py"), trace, zdir],
                           check=True, capture_output=True, text=True).stdout.strip()
    cmds = {}
    if floor != "not zstd":
        cmds[(0, "floor")] = (shlex.split(floor), None, False)
    for i, (_, path) in enumerate(paths):
        env = env_for(path)
        for fmt in ("txt", "json"):
            cmds[(i, f"command {fmt}")] = ([PY, "-m", "ftflame.cli", "report", "-q", trace, "-o",
                                            os.path.join(tmp, "r." + fmt)], env, False)
            cmds[(i, f"stages {fmt}")] = ([PY, me, "--child", fmt, trace, os.path.join(tmp, "s." + fmt)], env, True)
        cmds[(i, "decode only")] = ([PY, me, "--read-child", trace],
                                    env_for(path, FTFLAME_BENCH_DECODE_ONLY="1"), True)
        cmds[(i, "read, one thread")] = ([PY, me, "--read-child", trace], env_for(path, FTFLAME_THREADS="1"), True)
        cmds[(i, "read, two threads")] = ([PY, me, "--read-child", trace], env, True)
    # (one OpenBLAS thread, as ftflame's cli.py asks: its spinning threads would be 0.05 s more)
    cmds[(0, "interpreter and numpy")] = ([PY, "-c", "import numpy"], {**os.environ, "OPENBLAS_NUM_THREADS": "1"},
                                          False)
    got: dict = {}
    for _ in range(reps):
        for (i, name), (cmd, e, capture) in cmds.items():
            cpu, wall, out = run(cmd, e, capture, tmp)
            got.setdefault((i, name), []).append(cpu)
            if capture:
                for k, v in json.loads(out).items():
                    got.setdefault((i, f"{name}: {k}"), []).append(v)
    med = {k: statistics.median(v) for k, v in got.items()}
    fl = med.get((0, "floor"))
    print(f"\n{trace}: {reps} interleaved rounds, medians, CPU s (user+sys); load "
          f"{os.getloadavg()[0]:.1f}")
    print("| phase | " + " | ".join(f"{label} CPU s | / floor" for label, _ in paths) + " |")
    print("|---|" + "---:|---:|" * len(paths))

    def row(label, values):
        cells = [f"{v:.3f} | {v / fl:.2f}" if fl else f"{v:.3f} | " for v in values]
        print(f"| {label} | " + " | ".join(cells) + " |")

    n = range(len(paths))
    if fl:
        row("floor: zstd -d of the chunks (both cores)", [fl] * len(paths))
    row("read: decoding alone (one thread, no builder)", [med[(i, "decode only: read")] for i in n])
    row("read: builder alone (one thread minus decoding)",
        [med[(i, "read, one thread: read")] - med[(i, "decode only: read")] for i in n])
    row("read: decoding + builder, one thread", [med[(i, "read, one thread: read")] for i in n])
    row("read: decoding + builder, two threads", [med[(i, "read, two threads: read")] for i in n])
    for fmt in ("txt", "json"):
        s = f"stages {fmt}: "
        parts = [k[1][len(s):] for k in med if k[0] == 0 and k[1].startswith(s)]
        for p in parts:
            row(f"{fmt}: {p}", [med[(i, s + p)] for i in n])
        row(f"{fmt}: stages' sum + the interpreter's start", [med[(i, f"stages {fmt}")] for i in n])
        row(f"**ftflame report, {fmt} (the command)**", [med[(i, f"command {fmt}")] for i in n])
    row("the interpreter and numpy alone (`python -c 'import numpy'`)", [med[(0, "interpreter and numpy")]] * len(paths))
    if not fl:
        return
    for fmt, bound in BOUNDS.items():
        for label, i in zip((lb for lb, _ in paths), n):
            read = med.get((i, f"stages {fmt}: read (decode + build)"), med[(i, "read, two threads: read")])
            builder = read - med[(i, "decode only: read")]
            room = room_for_builder(fl, med[(i, f"command {fmt}")], builder, bound)
            verdict = (f"{room:.3f} s, {room / builder:.0%} of the builder's {builder:.3f} s (two threads)"
                       if room > 0 else
                       f"none: the rest alone is {(med[(i, f'command {fmt}')] - builder) / fl:.2f}x the floor")
            print(f"{label}, {fmt}: the bound ({bound:g}x the floor, {bound * fl:.3f} s) leaves the builder {verdict}")


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        child(*sys.argv[2:5])
    if sys.argv[1:2] == ["--read-child"]:
        read_child(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rev", action="append",
                    help="a revision to time (repeatable: side by side, in the same rounds); default `.`: this checkout")
    ap.add_argument("traces", nargs="+")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ftflame-phases-") as tmp:
        paths = []
        for i, rev in enumerate(args.rev or ["."]):
            label, tree = revs.tree_of(rev, tmp)
            paths.append((label, revs.shim(tree, os.path.join(tmp, f"shim{i}"))))
        for trace in args.traces:
            table(os.path.abspath(trace), args.reps, paths, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
