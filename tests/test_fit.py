"""The fit check (ftflame/correct/fit.py, docs/overhead.md "Fit check"): a
calibration carried from another VM boot is found out by the trace's own
bounds and gives way to one that fits; a calibration from the trace's own
recording session is never called a misfit."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import corpus_param, fixture, profile_of
from ftflame.correct import calibration, fit, uncertainty
from ftflame.correct.calibration import calibrate_from_traces
from ftflame.correct.stage import CorrectionOptions, correct_for_report
from helpers import corpus

FTFLAME = [sys.executable, "-m", "ftflame.cli"]
TCG_CAL = "k6.1/s13-calib-null/"
CALIB_NAMES = ("trace-null.dat", "trace-dispatch-root.dat", "trace-dispatch-full.dat")
# another boot of the same kernel (TCG), read with the s13 calibration
OTHER_BOOT = "k6.1/s01-v3-write4k/trace.dat"


def calib_paths(d: str):
    return [os.path.join(d, n) for n in CALIB_NAMES]


@pytest.fixture(scope="module")
def s13_file(tmp_path_factory):
    """calibration.json made by `ftflame calibrate` from the s13 boot's recordings."""
    out = tmp_path_factory.mktemp("cal") / "calibration.json"
    calibration.write(str(out), calibrate_from_traces(*calib_paths(fixture(TCG_CAL))))
    return str(out)


def report(path: str, cal: str, strict: bool = False):
    return correct_for_report(profile_of(path), path, CorrectionOptions(calibration=cal,
                                                                        strict_calibration=strict))


def test_calibration_from_another_boot_is_a_misfit_and_gives_way(s13_file):
    path = fixture(OTHER_BOOT)
    p = report(path, s13_file)
    f = p.calibration.fit
    assert f["ok"] is False and f["checked"] == "file calibration.json"
    assert f["checked_o_in_ns"] == pytest.approx(1231.3, abs=0.1)
    assert any("O_in 1,231.3 ns is above the median" in r for r in f["reasons"])
    assert any("root calls with descendants would take less than no time" in r for r in f["reasons"])
    # the fitting calibration is used: the trace's own estimate
    assert p.calibration.source == "in-trace" and "in-trace estimate" in f["used"]
    assert fit.check(p, p.calibration.o_in_ns, p.calibration.o_out_ns)["ok"]
    # no root call below zero, none clamped there
    assert p.corrected.sample_clamped == 0
    assert np.nanmin(p.corrected.sample_dur) > 0
    # the same s13 calibration applied as given clamps root calls at zero
    kept = report(path, s13_file, strict=True)
    assert kept.corrected.sample_clamped > 0 and kept.calibration.fit["kept"] is True


def test_misfit_said_at_the_top_of_every_output(s13_file, tmp_path):
    path = fixture(OTHER_BOOT)
    outs = {}
    for ext in ("txt", "json", "html", "svg"):
        out = tmp_path / f"r.{ext}"
        r = subprocess.run([*FTFLAME, "report", path, "--calibration", s13_file, "-o", str(out)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        outs[ext] = out.read_text()
    header = outs["txt"].split("\n\n")[0]
    assert "MISFIT: file calibration.json (O_in 1,231.3, O_out 883.9 ns) does not fit" in header
    assert header.index("MISFIT") < header.index("calibration: O_in 771.0 ns")
    doc = json.loads(outs["json"])
    assert doc["calibration"]["fit"]["ok"] is False and doc["calibration"]["source"] == "in-trace"
    assert doc["calibration"]["fit"]["o_in_max_ns"] == pytest.approx(977.6)
    assert 'id="calibration-fit" role="alert"' in outs["html"]
    assert outs["html"].index("calibration-fit") < outs["html"].index('id="calibration"')
    assert "MISFIT: file calibration.json does not fit this trace" in outs["svg"]


def test_calibration_json_copied_beside_a_trace_of_another_boot(s13_file, tmp_path):
    """A run directory's calibration.json is checked too; copied there from
    another session, its own recordings say it was made elsewhere."""
    trace = tmp_path / "trace.dat"
    trace.write_bytes(open(fixture(OTHER_BOOT), "rb").read())
    (tmp_path / "calibration.json").write_text(open(s13_file).read())
    p = correct_for_report(profile_of(str(trace)), str(trace), CorrectionOptions())
    assert p.calibration.fit["ok"] is False and p.calibration.fit["carried"] is True
    assert p.calibration.source == "in-trace"


def test_strict_calibration_keeps_the_misfit_and_says_so(s13_file):
    p = report(fixture(OTHER_BOOT), s13_file, strict=True)
    assert p.calibration.source.startswith("file:") and p.calibration.o_in_ns == pytest.approx(1231.3)
    assert "every corrected figure rests on it" in fit.words(p.calibration)


def test_carried_calibration_widens_the_intervals(s13_file):
    """Made in another session: its intervals grow by the hook cost's move
    between sessions; beside its own recordings they are its own."""
    own = report(fixture(OTHER_BOOT), s13_file, strict=True)
    assert own.calibration.fit["carried"] is True
    c = own.calibration
    h_in, h_sum, h_out = uncertainty.cost_half_widths(c)
    here = calibration.Calibration(c.o_in_ns, c.o_out_ns, c.source, c.method, c.details)
    b_in, b_sum, b_out = uncertainty.cost_half_widths(here)
    assert h_in == pytest.approx(b_in + fit.CARRY_FRACTION * c.o_in_ns)
    assert h_sum == pytest.approx(b_sum + fit.CARRY_FRACTION * (c.o_in_ns + c.o_out_ns))
    assert h_out == pytest.approx(b_out + fit.CARRY_FRACTION * c.o_out_ns)
    # the calibration's own recordings name the trace's folder: same session
    assert fit.same_session(c, fixture(TCG_CAL + "trace-dispatch-full.dat"))


def _own_calibrations():
    """Every fixture folder that holds its own calibration recordings."""
    out = []
    for base in (corpus.CURATED, corpus.CORPUS):
        for d in sorted(glob.glob(os.path.join(base or "/nonexistent", "k*", "*"))):
            if all(os.path.isfile(p) for p in calib_paths(d)):
                out.append(pytest.param(d, id=corpus.label(d)))
    return out


@pytest.mark.parametrize("folder", _own_calibrations())
def test_calibration_from_the_same_session_fits_every_trace_there(folder, tmp_path):
    cal_file = tmp_path / "calibration.json"
    calibration.write(str(cal_file), calibrate_from_traces(*calib_paths(folder)))
    for path in sorted(glob.glob(os.path.join(folder, "*.dat"))):
        p = profile_of(path)
        cal = fit.fitted(p, calibration.for_profile(calibration.load(str(cal_file)), p), path,
                         estimate=calibration.estimate_in_trace)
        assert cal.fit["ok"], (path, cal.fit["reasons"])
        assert not cal.fit["carried"]


@pytest.mark.parametrize("path", [corpus_param("k6.1/s03-v3-getattr/trace.dat")])
def test_getattr_trace_with_another_boots_calibration(path, s13_file):
    """The situation first reported: a -g svc_process trace read with a
    calibration from another boot of the same kernel."""
    p = report(path, s13_file)
    assert p.calibration.fit["ok"] is False and p.calibration.source == "in-trace"
    assert p.corrected.sample_clamped == 0


def test_a_calibration_from_another_kernel_is_noted_in_every_output(tmp_path):
    """Issue 37: a calibration whose `kernel` says 6.12 applied to a 6.1
    trace (it fits: nothing else would say so) is noted, from one place
    (the fit check's kernel_note), in every output that shows the
    calibration; its intervals widen as a carried calibration's."""
    import copy
    import shutil

    from helpers import inproc

    doc = copy.deepcopy(inproc.CALIBRATION)
    doc["kernel"] = "Linux (none) 6.12.117+deb12-amd64 x86_64"
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(fixture("k6.1/s15-icount-calib/trace-root.dat"), d / "trace.dat")
    (d / "calibration.json").write_text(json.dumps(doc))
    note = "calibration.json was made on kernel 6.12.117+deb12-amd64, the trace on 6.1.0-56-amd64"
    out = {}
    for fmt in ("txt", "json", "html", "svg", "speedscope"):
        rc, err, out[fmt] = inproc.report(d, fmt)
        assert rc == 0, err
    assert note in " ".join(out["txt"].split("\n\n")[0].split())
    f = inproc.strict_loads(out["json"])["calibration"]["fit"]
    assert f["ok"] and f["carried"] and note in f["kernel_note"]
    assert f["other_kernel"] == {"calibration": "6.12.117+deb12-amd64", "trace": "6.1.0-56-amd64"}
    for fmt in ("html", "svg", "speedscope"):
        assert note in out[fmt], fmt
    # the same kernel: no note
    (d / "calibration.json").write_text(json.dumps(inproc.CALIBRATION))
    rc, err, text = inproc.report(d)
    assert "kernel_note" not in inproc.strict_loads(text)["calibration"]["fit"]


@pytest.mark.parametrize("uname,release", [
    ("Linux (none) 6.1.0-56-amd64 x86_64", "6.1.0-56-amd64"), ("6.1", "6.1"),
    ("Linux host 7.3.0-rc1+ #1 SMP", "7.3.0-rc1+"), ("", None), (None, None), (5, None)])
def test_kernel_release(uname, release):
    assert fit.kernel_release(uname) == release
