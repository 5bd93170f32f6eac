"""The trace.dat readers a test can run `ftflame report` with (issue 19):
the builtin streaming reader and libtracecmd. A reader that is not built in
this tree is skipped with the reason, so the same tests run before and after
the builtin reader lands:

- no `--reader` option in `ftflame report`: libtracecmd is the only reader
  and runs without the option; builtin is skipped;
- the option but no `_core.read_dat_builtin`: builtin is skipped.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FTFLAME = [sys.executable, "-m", "ftflame.cli"]
READERS = ("builtin", "libtracecmd")


@functools.cache
def has_reader_option() -> bool:
    out = subprocess.run([*FTFLAME, "report", "--help"], capture_output=True, text=True,
                         timeout=60, cwd=ROOT).stdout
    return "--reader" in out


@functools.cache
def core_has_builtin() -> bool:
    from ftflame.parse import _core

    return hasattr(_core, "read_dat_builtin")


def missing(reader: str) -> str | None:
    """Why `reader` cannot run here, or None when it can."""
    if reader == "libtracecmd":
        return None
    if not has_reader_option():
        return "builtin reader not built yet: `ftflame report` has no --reader option"
    if not core_has_builtin():
        return "builtin reader not built yet: ftflame.parse._core has no read_dat_builtin"
    return None


def reader_args(reader: str) -> list[str]:
    """The `ftflame report` arguments that select `reader`."""
    if reader == "libtracecmd" and not has_reader_option():
        return []
    return ["--reader", reader]


def params(libtracecmd_marks=()) -> list:
    """pytest parameters, one per reader, skipped with the reason when the
    reader is not built; `libtracecmd_marks` (e.g. an xfail for what it is
    known to get wrong) go on the libtracecmd one."""
    out = []
    for r in READERS:
        marks = list(libtracecmd_marks) if r == "libtracecmd" else []
        why = _missing_at_collection(r)
        if why:
            marks.append(pytest.mark.skip(reason=why))
        out.append(pytest.param(r, id=r, marks=marks))
    return out


def _missing_at_collection(reader: str) -> str | None:
    try:
        return missing(reader)
    except Exception as e:  # a broken build is the tests' finding, not a skip
        return None if reader == "libtracecmd" else f"cannot tell whether {reader} is built: {e}"


def report(path: str, reader: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    """`ftflame report PATH` with `reader`, killed (SIGKILL) after `timeout` s:
    subprocess.TimeoutExpired then says it hung."""
    return subprocess.run([*FTFLAME, "report", path, *reader_args(reader), *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)
