"""Where the tests find real traces.

Two sets, with the same layout (<kernel>/<scenario>/<file>):

- the curated set, tests/data/fixtures in the repository: small copies of the
  corpus's traces (tests/data/fixtures/README.md says how each was made). The
  whole suite runs on it, on a fresh clone with nothing beside it.
- the full corpus, optional: the directory FTFLAME_FIXTURES names, else
  ../shared/fixtures beside the repository when it is there (as in CI),
  else none. `make fixtures` records one. Tests of what only the full traces
  show (the 2.6 M-event trace, figures pinned on whole recordings) run when it
  is there and are skipped, with the reason, when it is not.
"""
from __future__ import annotations

import functools
import glob
import hashlib
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CURATED = os.path.join(ROOT, "tests", "data", "fixtures")
SEEDS = os.path.join(ROOT, "tests", "data", "seeds")
NO_CORPUS = "no full fixture corpus (FTFLAME_FIXTURES=DIR, or ../shared/fixtures; make fixtures)"


def corpus_dir() -> str | None:
    """The full corpus, or None (FTFLAME_FIXTURES is taken as given: problem()
    refuses it when it is no directory)."""
    given = os.environ.get("FTFLAME_FIXTURES")
    if given:
        return os.path.abspath(given)
    shared = os.environ.get("FTFLAME_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
    beside = os.path.join(shared, "fixtures")
    return beside if os.path.isdir(beside) else None


CORPUS = corpus_dir()


def problem() -> str | None:
    """Why the test run must not start: a FTFLAME_FIXTURES that names no
    directory (a typo would silently skip the tests it was set for)."""
    given = os.environ.get("FTFLAME_FIXTURES")
    if given and not os.path.isdir(given):
        return f"FTFLAME_FIXTURES={given}: no such directory (unset it to run without the full corpus)"
    return None


# Scenarios read only by the tests made for them, not by every test "on every
# fixture": the truth pairs (s31: 11-16 icount recordings a kernel, s32: 7-9, read by
# tests/test_truth_pairs.py through helpers/truthpairs.py) are recordings of the
# kind of s16/s20 on kernels whose layouts other curated traces already show; run
# through every invariant they cost CI about 1.5 minutes, twice that under ASan, for
# no code path of their own. (The repeated runs, s30-repeat/runN/, sit a level
# deeper and are not globbed either: tests/test_diff_runs.py reads them.)
OWN_TESTS_ONLY = ("s31-icount-truth", "s32-icount-truth-1k")


def files(base: str | None, pattern: str) -> list[str]:
    if not base:
        return []
    return sorted(p for p in glob.glob(os.path.join(base, "*", "*", pattern))
                  if os.path.basename(os.path.dirname(p)) not in OWN_TESTS_ONLY)


def label(path: str) -> str:
    """A test id: which set, then the path inside it."""
    for name, base in (("data", CURATED), ("corpus", CORPUS)):
        if base and path.startswith(base + os.sep):
            return f"{name}/{os.path.relpath(path, base)}"
    return os.path.basename(path)


def is_curated(path: str) -> bool:
    return path.startswith(CURATED + os.sep)


def curated(rel: str) -> str:
    """A trace of the curated set (always in the repository)."""
    path = os.path.join(CURATED, rel)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: not in the curated set (tests/data/fixtures/README.md)")
    return path


def in_corpus(rel: str) -> str | None:
    """A trace of the full corpus, or None when the corpus or the file is absent."""
    path = os.path.join(CORPUS, rel) if CORPUS else None
    return path if path and os.path.exists(path) else None


def missing_reason(rel: str) -> str:
    return f"needs the full corpus's {rel}: {NO_CORPUS}" if not CORPUS else \
        f"needs {rel}: not in the corpus at {CORPUS}"


@functools.cache
def _sources() -> dict:
    """rel -> sha256 of the recording each curated copy was cut from (make.sh)."""
    with open(os.path.join(CURATED, "sources.sha256")) as f:
        return {rel: digest for digest, rel in (line.split() for line in f if line.strip())}


def source_of(rel: str) -> tuple[str | None, str]:
    """The corpus's recording the curated copy REL was cut from, or None and
    why not: no corpus, or a corpus recorded again (make fixtures), whose
    traces are other recordings."""
    path = in_corpus(rel)
    if path is None:
        return None, missing_reason(rel)
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != _sources().get(rel):
        return None, f"{path} is not the recording the curated copy was cut from (sources.sha256)"
    return path, ""
