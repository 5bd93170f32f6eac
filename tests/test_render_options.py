"""Renderers are told what the command line asked through one typed object
(report/options.py RenderOptions): every field of it is a flag of
`ftflame report`, and the folded output's corrected weights are one of them."""
from __future__ import annotations

import dataclasses
import subprocess
import sys

from conftest import SAMPLE
from ftflame.cli import build_parser, correction_options
from ftflame.correct.stage import correct_for_report
from ftflame.parse import read
from ftflame.report.folded import folded_lines
from ftflame.report.options import RenderOptions, render_options


def report_flags() -> dict:
    """dest -> argparse action of every `ftflame report` option."""
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return {a.dest: a for a in sub.choices["report"]._actions}


def test_every_render_option_is_set_from_a_report_flag():
    flags = report_flags()
    for field in dataclasses.fields(RenderOptions):
        assert field.name in flags, f"RenderOptions.{field.name} has no flag of its own"
        action = flags[field.name]
        value = next(c for c in action.choices if c != field.default)
        args = build_parser().parse_args(["report", "t.folded", action.option_strings[0], value])
        opts = render_options("folded", **{field.name: getattr(args, field.name)})
        assert getattr(opts, field.name) == value
    assert render_options("folded") == RenderOptions()


def ftflame(*args):
    return subprocess.run([sys.executable, "-m", "ftflame.cli", "report", *args],
                          capture_output=True, text=True, timeout=300)


def test_folded_weights_corrected_writes_the_corrected_stacks():
    proc = ftflame(SAMPLE, "-F", "folded", "--folded-weights", "corrected", "-q")
    assert proc.returncode == 0, proc.stderr
    args = build_parser().parse_args(["report", SAMPLE])
    p = correct_for_report(read(SAMPLE), SAMPLE, correction_options(args))
    assert p.calibration.applied
    want = "".join(f"{path} {w}\n" for path, w in folded_lines(p, corrected=True))
    assert proc.stdout == want
    assert want != "".join(f"{path} {w}\n" for path, w in folded_lines(p))  # not the raw ones
    assert ftflame(SAMPLE, "-F", "folded", "-q").stdout == ftflame(SAMPLE, "-F", "folded", "-q",
                                                                     "--folded-weights", "raw").stdout


def test_corrected_weights_without_a_correction_are_refused(tmp_path):
    out = tmp_path / "r.folded"
    proc = ftflame(SAMPLE, "-o", str(out), "--calibration", "none", "--folded-weights", "corrected")
    assert proc.returncode == 2 and not out.exists()
    assert proc.stderr.count("\n") == 1 and "no hook-cost correction" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_folded_weights_for_another_format_is_refused():
    proc = ftflame(SAMPLE, "-F", "json", "--folded-weights", "raw")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("ftflame: --folded-weights raw: applies to the folded output")
