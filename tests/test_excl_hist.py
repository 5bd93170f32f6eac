"""The text report's read keeps no exclusive-time histograms (issue 41):
the text prints no exclusive percentiles, and the second histogram update
per call was 5% of the read's CPU. The text is the same without them; an
output that needs them cannot get silently wrong figures from such a read."""
from __future__ import annotations

import pytest

from conftest import fixture
from ftflame import cli, parse
from ftflame.correct import corrections
from ftflame.correct.stage import CorrectionOptions, correct_for_report
from ftflame.report import RENDERERS
from ftflame.report.options import render_options

# a real trace with lost events, interrupts and gap calls; and a text trace
TRACES = ["k6.1/s10-lost/trace.dat", "k6.1/s07-tracefs-text/trace-proc-abstime-tail.txt.gz"]


def text_of(path: str, excl_hist: bool) -> str:
    p = correct_for_report(parse.read(path, excl_hist=excl_hist), path, CorrectionOptions())
    return RENDERERS["txt"].render(p, render_options("txt", None, None, None))


@pytest.mark.parametrize("rel", TRACES)
def test_the_text_is_the_same_without_exclusive_histograms(rel):
    path = fixture(rel)
    without = parse.read(path, excl_hist=False)
    assert without.hist_excl is None and without.functions.excl_pct is None
    assert text_of(path, False) == text_of(path, True)


def test_exclusive_figures_of_such_a_read_are_refused_not_made_up():
    path = fixture(TRACES[0])
    p = correct_for_report(parse.read(path, excl_hist=False), path, CorrectionOptions())
    corrections.corrected_stats(p)["functions", "incl"]  # what the text prints
    with pytest.raises(ValueError):
        corrections.corrected_stats(p)["functions", "excl"]
    with pytest.raises(ValueError):
        p.node_percentiles_at(None, ("excl",))


@pytest.mark.parametrize("fmt, wanted", [("txt", False), ("json", True), ("html", True)])
def test_only_the_text_report_reads_without_them(fmt, wanted, tmp_path, monkeypatch):
    seen = []
    real = parse.read_meanwhile

    def spy(*args, **kw):
        seen.append(kw.get("excl_hist", True))
        return real(*args, **kw)

    monkeypatch.setattr(parse, "read_meanwhile", spy)
    assert cli.main(["report", "-q", fixture(TRACES[0]), "-o", str(tmp_path / f"r.{fmt}")]) == 0
    assert seen == [wanted]


def test_a_calibrated_text_with_intervals_is_the_same_without_them(tmp_path, monkeypatch, capsys):
    """A calibration file with its spread makes the text print intervals
    (uncertainty.stat_half_widths): those must not reach for the exclusive
    statistics such a read cannot give (an internal error before)."""
    icount = "k6.1/s15-icount-calib/"
    cal = tmp_path / "calibration.json"
    assert cli.main(["calibrate", "-q", "--from-traces", *(fixture(icount + n) for n in (
        "trace-null.dat", "trace-dispatch-root.dat", "trace-dispatch-full.dat")), "-o", str(cal)]) == 0
    args = ["report", "-q", fixture(icount + "trace-full.dat"), "--calibration", str(cal),
            "--baseline", fixture(icount + "trace-root.dat")]
    real = parse.read_meanwhile
    texts = []
    for forced in (None, True):
        def read(*a, forced=forced, **kw):
            if forced is not None:
                kw["excl_hist"] = forced
            return real(*a, **kw)

        monkeypatch.setattr(parse, "read_meanwhile", read)
        capsys.readouterr()
        assert cli.main(args) == 0
        texts.append(capsys.readouterr().out)
    assert "95%" in texts[0] and texts[0] == texts[1]
