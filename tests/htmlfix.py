"""Helpers shared by the HTML/SVG/speedscope tests and the browser tests."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ftflame.profile import Calibration, Corrected, Profile

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures"
BIG = FIXTURES / "k6.1" / "s14-v3-write-big" / "trace.dat"  # 124k call paths
WRITE4K = FIXTURES / "k6.1" / "s01-v3-write4k" / "trace.dat"
LOST = FIXTURES / "k6.1" / "s10-lost" / "trace.dat"
ICOUNT = FIXTURES / "k6.1" / "s15-icount-calib" / "trace-full.dat"  # sched_switch recorded
ARTIFACTS = REPO / "tests" / "artifacts"


def fixture(path: Path):
    """A real trace from ../shared/fixtures, or skip (in CI: fail) when absent."""
    import pytest

    if not path.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"fixture missing: {path} (CI needs ../shared/fixtures beside the repo)")
        pytest.skip(f"fixture missing: {path}")
    return path


def with_overhead(p: Profile, o_in: float, o_out: float) -> Profile:
    """A Profile corrected with a fixed hook cost, by the DESIGN.md model
    (what `--overhead-in/--overhead-out` will do; built here so the HTML can
    be tested with corrected figures before the overhead issue lands):

        corr_incl = incl - O_in - D*(O_in + O_out)     per call, summed
        corr_excl = excl - O_in - n*O_out

    over the clean calls (gap calls left out), clamped at zero."""
    c = p.col
    calls = c("calls") - c("gap_calls")
    incl = (c("incl") - c("gap_incl")) - calls * o_in - (c("desc") - c("gap_desc")) * (o_in + o_out)
    excl = (c("excl") - c("gap_excl")) - calls * o_in - (c("nchild") - c("gap_nchild")) * o_out
    clamped = ((incl < 0) | (excl < 0)).astype(np.int64)
    s = p.samples
    sdur = (p.scol("dur") - o_in - p.scol("desc") * (o_in + o_out)).astype(np.float64) if len(s) else np.zeros(0)
    corr = Corrected(incl=np.maximum(incl, 0).astype(np.float64), excl=np.maximum(excl, 0).astype(np.float64),
                     calls=calls, clamped=clamped, sample_dur=np.maximum(sdur, 0),
                     notes=(f"test correction: O_in {o_in} ns, O_out {o_out} ns",))
    cal = Calibration(o_in, o_out, "command line", "fixed values given on the command line (test)")
    return p.replace(corrected=corr, calibration=cal)
