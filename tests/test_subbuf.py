"""Sub-buffer moves charged at each root call's own count
(ftflame/correct/subbuf.py; docs/overhead.md "Sub-buffer moves"), on the
curated icount recordings: 6.12's s20 and s31 boots record the same write
calls to 26 ns raw, and their calibrations' NULL calls met 16 and 28 moves."""
from __future__ import annotations

import numpy as np
import pytest

from ftflame.correct import subbuf
from ftflame.correct.calibration import for_profile
from ftflame.correct.corrections import correct
from ftflame.model.profile import Calibration
from ftflame.parse import read
from helpers import truthpairs as tp

S20, S31 = "k6.12/s20-icount-volume", "k6.12/s31-icount-truth"


def calibration(folder: str, moves: bool = True) -> Calibration:
    cal, paths = tp.calibration(folder, [])
    if cal is None:
        pytest.skip(f"{folder}: its calibration trio is not here ({paths})")
    if not moves:  # a calibration.json written before the sub-buffer moves
        cal = Calibration(cal.o_in_ns, cal.o_out_ns, cal.source, cal.method,
                          {k: v for k, v in cal.details.items() if k != "subbuf"})
    return cal


def quiet_writes(folder: str, moves: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(corrected, raw) of the 234-descendant write calls without an
    interrupt or a switch of the folder's first whole graph."""
    p = read(tp.locate(folder, "full-1", []))
    q = correct(p, for_profile(calibration(folder, moves), p))
    ok = (q.scol("desc") == 234) & (q.scol("irq_roots") == 0) & (q.scol("offcpu") == 0)
    assert ok.sum() >= 50
    return q.corrected.sample_dur[ok], p.scol("dur")[ok]


def test_the_calibration_measures_the_move_and_its_rate():
    a, b = calibration(S20).details["subbuf"], calibration(S31).details["subbuf"]
    assert a["cost_ns"] == b["cost_ns"] == 273.0
    assert (a["calls_with_one"], b["calls_with_one"]) == (15, 27)
    assert a["per_descendant"] == pytest.approx(0.01447, abs=1e-5)
    assert b["per_descendant"] == pytest.approx(0.02532, abs=1e-5)
    # the NULL procedure alone: 4 of s31's 100 calls met a move (its own cost),
    # 1 of s20's (the graph's cost)
    assert b["root_only"]["cost_ns"] == 261.0 and b["root_only"]["per_call"] == 0.04
    assert a["root_only"]["cost_ns"] == 273.0 and a["root_only"]["per_call"] == 0.01


def test_two_boots_of_the_same_writes_correct_alike():
    """The quiet write calls of s20 and s31 (same kernel, same workload,
    another boot) are the same raw; with the calibration's rate they
    corrected 5.2% apart (its O_in + O_out 1411.9 against 1414.9 ns), with
    each call's own moves 0.1%."""
    (a, ra), (b, rb) = quiet_writes(S20), quiet_writes(S31)
    assert abs(np.median(rb) / np.median(ra) - 1) < 0.0002
    assert abs(np.median(b) / np.median(a) - 1) < 0.005
    (a0, _), (b0, _) = quiet_writes(S20, moves=False), quiet_writes(S31, moves=False)
    assert np.median(b0) / np.median(a0) - 1 < -0.05


def test_each_root_call_counts_its_moves():
    """From its entry record (a root-only call whose entry began a
    sub-buffer) to before its exit record; both trace.dat readers alike
    (tests/test_reader_parity.py)."""
    p = read(tp.locate("k6.1/s31-icount-truth", "root-2", []))
    order = np.argsort(p.scol("calltime"))
    assert np.flatnonzero(p.scol("subbufs")[order]).tolist() == [11, 83, 106]
    assert p.counters["subbuf_starts"] >= 3
    q = read(tp.locate(S31, "dispatch-full", []))
    assert int((q.scol("subbufs") == 1).sum()) == 28 and q.scol("subbufs").max() == 1


def test_no_moves_charged_without_what_they_need():
    """A calibration without ``subbuf``, or values given on the command
    line: the rate stays in O_in + O_out, nothing per call."""
    p = read(tp.locate(S31, "full-1", []))
    assert subbuf.sample_ns(p, calibration(S31, moves=False)) is None
    given = calibration(S31)
    given = Calibration(given.o_in_ns, given.o_out_ns, "command line", given.method,
                        dict(given.details, command_line={"o_in": 700.0}))
    assert subbuf.sample_ns(p, given) is None
    per_call = subbuf.sample_ns(p, calibration(S31))
    assert per_call is not None and len(per_call) == len(p.samples)
