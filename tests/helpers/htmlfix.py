"""Helpers shared by the HTML/SVG/speedscope tests and the browser tests."""
from __future__ import annotations

import functools
import os
from pathlib import Path

from ftflame.model.profile import Calibration, Profile

from . import corpus

REPO = Path(__file__).resolve().parents[2]

CURATED = Path(corpus.CURATED)
BIG_REL = "k6.1/s14-v3-write-big/trace.dat"  # 124k call paths: only in the full corpus
BIG = Path(corpus.in_corpus(BIG_REL) or Path(corpus.CORPUS or CURATED) / BIG_REL)
WRITE4K = CURATED / "k6.1" / "s01-v3-write4k" / "trace.dat"  # a window: 23 calls
# the whole recording (1024 calls) when the full corpus is here, else None
_whole = corpus.in_corpus("k6.1/s01-v3-write4k/trace.dat")
WRITE4K_WHOLE = Path(_whole) if _whole else None
LOST = CURATED / "k6.1" / "s10-lost" / "trace.dat"
MIXED_OPS = CURATED / "k6.1" / "s17-mixed-ops" / "trace.dat"  # operations under svc_process
NULLCALLS = CURATED / "k6.1" / "s13-calib-null" / "trace-dispatch-full.dat"  # 610 paths
DEPTH3 = CURATED / "k6.1" / "s09-depth3" / "trace.dat"
ICOUNT = CURATED / "k6.1" / "s15-icount-calib" / "trace-full.dat"  # sched_switch recorded
ARTIFACTS = REPO / "tests" / "artifacts"


def fixture(path: Path):
    """A real trace: the curated ones are always here; skip (with the reason)
    when a trace of the full corpus is absent."""
    import pytest

    if not path.is_file():
        if path == BIG:
            pytest.skip(corpus.missing_reason(BIG_REL))
        pytest.fail(f"fixture missing: {path} (tests/data/fixtures/README.md)")
    return path


@functools.lru_cache(maxsize=8)
def load(path: Path) -> Profile:
    """A fixture parsed once per test session (Profiles are immutable)."""
    fixture(path)
    try:  # share the suite-wide cache of tests/conftest.py when there is one
        from conftest import profile_of
    except ImportError:
        from ftflame.parse import read as profile_of
    return profile_of(str(path))


def corrected(p: Profile, o_in: float, o_out: float) -> Profile:
    """A Profile corrected with a fixed hook cost by the real correction
    (ftflame.correct.corrections.correct, what --overhead-in/--overhead-out do),
    with its balance sheet."""
    from ftflame.correct.balance import attach
    from ftflame.correct.corrections import correct

    cal = Calibration(o_in, o_out, "command line", "fixed values given on the command line (test)")
    return attach(correct(p, cal))


def render_tool(env: str, default: Path, what: str) -> Path:
    """A tool `make setup-render-tools` installs: skip when it is genuinely
    missing on a developer machine, fail in CI where it must run."""
    import pytest

    path = Path(os.environ.get(env) or default)
    if not path.exists():
        msg = f"{what} not installed at {path} (run `make setup-render-tools`)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return path


def speedscope_schema() -> Path:
    return render_tool("FTFLAME_SPEEDSCOPE_SCHEMA",
                       REPO / ".cache/npm/node_modules/speedscope/dist/release/file-format-schema.json",
                       "speedscope's file-format-schema.json (npm package speedscope)")


def inferno_flamegraph() -> Path:
    import shutil

    root = os.environ.get("FTFLAME_INFERNO_ROOT")
    default = Path(root) / "bin" / "inferno-flamegraph" if root else \
        Path(shutil.which("inferno-flamegraph") or
             Path.home() / ".cache/ftflame/inferno-0.12.8/bin/inferno-flamegraph")
    return render_tool("FTFLAME_INFERNO", default, "inferno-flamegraph (cargo install inferno)")
