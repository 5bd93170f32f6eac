"""`ftflame report` run in the test's own process (ftflame.cli.main): no
interpreter and numpy start per call, so a test can afford hundreds of runs
(tests/test_rundir_fuzz.py). The output goes to a file beside the input
folder, as a user's -o would."""
from __future__ import annotations

import contextlib
import io

from ftflame import cli


def report(d, fmt: str = "json", *extra: str) -> tuple:
    """(exit code, stderr, the report's text or None) of
    `ftflame report D -o D/../report.FMT -F FMT -q --slowest 0 EXTRA...`."""
    out = d.parent / f"report.{fmt}"
    if out.exists():
        out.unlink()
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = cli.main(["report", str(d), "-o", str(out), "-F", fmt, "-q", "--slowest", "0", *extra])
    return rc, err.getvalue(), out.read_text() if out.exists() else None


def strict_loads(text: str):
    """A JSON report, refusing NaN and Infinity (not JSON: RFC 8259)."""
    import json

    def refuse(token):
        raise ValueError(f"{token} in the report")
    return json.loads(text, parse_constant=refuse)
