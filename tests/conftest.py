"""Shared test fixtures: where the real traces are, and parsed profiles cached
per session (parsing is the expensive part; tests only read Profiles)."""
from __future__ import annotations

import functools
import glob
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
sys.path.insert(0, os.path.join(ROOT, "tests"))


def shared_dir() -> str:
    """shared/ sits beside the repository (CI clones main next to it)."""
    return os.environ.get("FTFLAME_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))


FIXTURES = os.path.join(shared_dir(), "fixtures")
FIXTURE_DATS = sorted(glob.glob(os.path.join(FIXTURES, "*", "*", "*.dat")))
SAMPLE = os.path.join(DATA, "sample", "trace.dat")


def fixture_id(path: str) -> str:
    return os.path.relpath(path, FIXTURES)


def require_fixtures():
    if not FIXTURE_DATS:
        pytest.fail(f"no fixtures found under {FIXTURES}: set FTFLAME_SHARED to the shared/ folder")


@functools.lru_cache(maxsize=None)
def profile_of(path: str):
    from ftflame.parse import read

    return read(path)


def fixture(rel: str) -> str:
    return os.path.join(FIXTURES, rel)
