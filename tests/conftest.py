"""Shared test fixtures: where the real traces are (tests/helpers/corpus.py: the
curated set in tests/data/fixtures, and the optional full corpus), and parsed
profiles cached per session (parsing is the expensive part; tests only read
Profiles)."""
from __future__ import annotations

import functools
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest

from helpers import corpus

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")

# `python -m pytest` run from the repository puts it first on sys.path, and its
# top-level folders become importable under their bare names (`report`,
# `parse`) beside the installed ftflame.report and ftflame.parse: a second
# copy of each module, with classes of its own (two RenderOptions). Out with
# it: the tests import the package only (tests/test_layout.py).
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != os.path.realpath(ROOT)]

CORPUS = corpus.CORPUS
# every trace.dat: the curated copies, and the full corpus's when it is here
FIXTURE_DATS = corpus.files(corpus.CURATED, "*.dat") + corpus.files(CORPUS, "*.dat")
SAMPLE = os.path.join(DATA, "sample", "trace.dat")


def pytest_configure(config):
    if corpus.problem():
        raise pytest.UsageError(corpus.problem())


def fixture_id(path: str) -> str:
    return corpus.label(path)


def require_fixtures():
    if not corpus.files(corpus.CURATED, "*.dat"):
        pytest.fail(f"no trace.dat under {corpus.CURATED}: the curated fixtures are missing")


def sigint_as_default() -> None:
    """preexec_fn of a child a test sends SIGINT: SIGINT at its default
    disposition, whatever the suite's. A suite run as a background job (`cmd
    &` in a script) has SIGINT ignored, and Python keeps an ignored SIGINT
    ignored (as ftflame means to: tests/test_damaged_dat.py), so such a run
    failed every test of Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def holds_open(pid: int, path) -> bool:
    """Whether process pid has path open (its /proc fd links name it)."""
    want = os.path.realpath(path)
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == want:
                return True
        except OSError:
            pass
    return False


@functools.cache
def profile_of(path: str):
    from ftflame.parse import read

    return read(path)


def fixture(rel: str) -> str:
    """A trace of the curated set (tests/data/fixtures/REL)."""
    return corpus.curated(rel)


def corpus_fixture(rel: str) -> str:
    """A trace of the full corpus, or skip the test (with the reason) when absent."""
    path = corpus.in_corpus(rel)
    if path is None:
        pytest.skip(corpus.missing_reason(rel))
    return path


def corpus_param(rel: str, *more, id: str | None = None):  # noqa: A002 (pytest.param's own name)
    """A parametrize value (the path, then MORE) for a trace of the full
    corpus: skipped, with the reason, when absent."""
    path = corpus.in_corpus(rel)
    return pytest.param(path or rel, *more, id=id or "corpus/" + rel,
                        marks=pytest.mark.skipif(path is None, reason=corpus.missing_reason(rel)))




def fixture_params(paths, pending: dict, sample: str | None = None):
    """pytest.params of fixture paths; those of PENDING ({fixture_id: reason}),
    and a full corpus's traces of the same kernel and scenario, xfail. Known
    failures of the newest recordings (tests/data/fixtures/README.md), each
    waiting for its fix: xfail(strict) on the curated copy, so that the fix shows
    (XPASS fails) and its author removes the entry; on a corpus recorded again
    (make fixtures) the same kernels' traces, in unknown numbers: not strict."""
    out = []
    for path in paths:
        fid = fixture_id(path) if path != sample else "sample"
        reason = pending.get(fid)
        if reason:
            out.append(pytest.param(path, id=fid, marks=pytest.mark.xfail(strict=True, reason=reason)))
            continue
        twin = [r for k, r in pending.items() if k.startswith("data/") and fid == "corpus/" + k[len("data/"):]]
        marks = [pytest.mark.xfail(strict=False, reason=twin[0])] if twin else []
        out.append(pytest.param(path, id=fid, marks=marks))
    return out


@pytest.fixture
def work(request):
    """A world-readable scratch folder for the collectors' tests (pytest's
    tmp_path is 0700 under root, which the unprivileged user of the not-root
    test could not enter), named after the test module."""
    name = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_collect_")
    d = Path(tempfile.mkdtemp(prefix=f"ftflame-{name}-", dir="/tmp"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)
