"""Reading the two sides of a diff: every trace once, in parallel.

Each trace goes through the pipeline `ftflame report` uses (the same reader,
calibration choice and corrections: ftflame.correct.stage), so a
side's figures are the ones its own report prints. The C core reads with the
GIL released, so a thread per core reads that many traces at once; the
Python around each read is per call path, never per event.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ftflame.model.profile import Profile

from .options import DiffOptions


@dataclass(frozen=True)
class Run:
    """One trace of a side, read and corrected."""

    label: str  # what the user gave (a trace or a run directory)
    path: str  # the trace read
    profile: Profile


def load_run(given: str, opts: DiffOptions) -> Run:
    """One trace through report's pipeline: read, calibration, corrections
    (raw figures with opts.raw: nothing taken out)."""
    from ftflame import parse
    from ftflame.correct.stage import CorrectionOptions, correct_for_report
    from ftflame.rundir import resolve_input

    path = resolve_input(given)
    profile = parse.read(path)
    if not opts.raw:
        profile = correct_for_report(profile, path, CorrectionOptions(calibration=opts.calibration, irqs=opts.irqs))
    return Run(given, path, profile)


def refuse_repeated_runs(side: str, given: Sequence[str], traces: Sequence[str]) -> None:
    """InputError when one side names the same trace twice (the same file
    by device and inode: a second name, a link; or the same bytes: a
    copy): pooled, it would count as independent runs and narrow every
    interval with nothing measured twice. The two sides may share a trace
    (a trace against itself is a check of the method)."""
    import hashlib

    seen: dict = {}
    by_size: dict = {}
    for g, t in zip(given, traces):
        try:
            st = os.stat(t)
        except OSError:
            continue  # (the read says what is wrong with it)
        key = (st.st_dev, st.st_ino)
        if key in seen:
            _repeated(side, g, seen[key], "the same file")
        seen[key] = g
        by_size.setdefault(st.st_size, []).append((g, t))
    for same_size in by_size.values():
        if len(same_size) < 2:
            continue  # (different sizes: different bytes, nothing to hash)
        digests: dict = {}
        for g, t in same_size:
            try:
                with open(t, "rb") as f:
                    d = hashlib.file_digest(f, "sha256").digest()
            except OSError:
                continue
            if d in digests:
                _repeated(side, g, digests[d], "the same content")
            digests[d] = g


def _repeated(side: str, given: str, first: str, how: str) -> None:
    from ftflame.model.errors import InputError

    raise InputError(given, f"is {how} as {first}, given before it on the {side} side: one run "
                     "counted twice would pass for two independent runs", "give each run once")


def workers(n: int) -> int:
    """Threads to read n traces with: one per core, no more than traces."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(n, cores))


def load_sides(before: Sequence[str], after: Sequence[str], opts: DiffOptions):
    """(runs before, runs after): each trace read once, all at once on the
    machine's cores. A bad input raises its InputError (the first given)."""
    given = list(before) + list(after)
    with ThreadPoolExecutor(max_workers=workers(len(given)),
                            thread_name_prefix="ftflame-diff-read") as pool:
        futures = [pool.submit(load_run, g, opts) for g in given]
        runs = [f.result() for f in futures]
    return tuple(runs[:len(before)]), tuple(runs[len(before):])
