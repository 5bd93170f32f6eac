"""`ftflame report` run in the test's own process (ftflame.cli.main): no
interpreter and numpy start per call, so a test can afford hundreds of runs
(tests/test_rundir_fuzz.py). The output goes to a file beside the input
folder, as a user's -o would."""
from __future__ import annotations

import contextlib
import io

from ftflame import cli

# A calibration.json by hand, in the shape `ftflame calibrate` writes, that
# fits k6.1/s15-icount-calib/trace-root.dat (root-only: its o_in_root_only
# applies) and was made on its kernel.
CALIBRATION = {
    "schema": "ftflame-calibration/1", "o_in_ns": 700.0, "o_out_ns": 700.0, "method": "empty-calls",
    "o_in": {"samples": 300, "mean_ns": 700.0, "median_ns": 690.0, "ci95_ns": [690.5, 710.2]},
    "o_out": {"samples": 291, "mean_ns": 700.0, "median_ns": 705.0, "ci95_ns": [650.0, 750.0]},
    "o_in_plus_o_out": {"samples": 291, "mean_ns": 1400.0, "ci95_ns": [1350.0, 1450.0]},
    "o_in_root_only": {"samples": 300, "mean_ns": 900.0, "median_ns": 880.0, "ci95_ns": [850.0, 950.0]},
    "hook_level": {"leaf_min_ns": 650.0, "samples": 291},
    "kernel": "Linux (none) 6.1.0-56-amd64 x86_64", "clock": "global",
    "tracer_options": {"buffer_percent": 50}, "checks": [],
}


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
