"""`ftflame report` with the graphical outputs: formats from extensions,
--open, and the progress bar that shows only on a terminal."""
from __future__ import annotations

import io
import json
import re

import pytest

from ftflame import cli, output
from helpers.htmlfix import DEPTH3, fixture


@pytest.fixture
def trace():
    return str(fixture(DEPTH3))


@pytest.mark.parametrize("name,marker", [("r.html", "<!DOCTYPE html>"), ("r.svg", "<?xml"),
                                         ("r.speedscope.json", '"$schema"')])
def test_report_writes_each_format(trace, tmp_path, capsys, name, marker):
    out = tmp_path / name
    assert cli.main(["report", trace, "-o", str(out)]) == 0
    text = out.read_text()
    assert text.startswith(marker) or marker in text[:200]
    err = capsys.readouterr().err
    assert f"wrote {out}" in err and "\r" not in err  # no progress bar off a terminal
    if name.endswith(".json"):
        assert json.loads(text)["profiles"]


def test_open_in_browser_when_interactive(trace, tmp_path, monkeypatch):
    opened = []
    monkeypatch.setattr(output, "interactive", lambda: True)
    monkeypatch.setattr("webbrowser.open", lambda uri: opened.append(uri) or True)
    out = tmp_path / "r.html"
    assert cli.main(["report", trace, "-o", str(out), "--open"]) == 0
    assert opened == [out.resolve().as_uri()]


def test_open_without_output_uses_a_temporary_html(trace, monkeypatch):
    opened = []
    monkeypatch.setattr(output, "interactive", lambda: True)
    monkeypatch.setattr("webbrowser.open", lambda uri: opened.append(uri) or True)
    assert cli.main(["report", trace, "--open", "-q"]) == 0
    assert len(opened) == 1 and opened[0].endswith("/trace.html")


def test_open_is_skipped_when_not_interactive(trace, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(output, "interactive", lambda: False)
    monkeypatch.setattr("webbrowser.open", lambda uri: pytest.fail("must not open"))
    assert cli.main(["report", trace, "-o", str(tmp_path / "r.html"), "--open"]) == 0
    assert "not an interactive session" in capsys.readouterr().err


def test_open_needs_a_page(trace, tmp_path, capsys):
    out = tmp_path / "r.txt"
    assert cli.main(["report", trace, "-o", str(out), "--open"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--open shows an HTML or SVG report" in err
    assert not out.exists()


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_only_on_a_terminal(trace, monkeypatch):
    tty = FakeTTY()
    monkeypatch.setattr("sys.stderr", tty)
    p = output.Progress("reading x", True, trace)
    assert p.estimate > 0
    p(p.estimate // 2)
    p.stage("rendering html...")
    p.done()
    shown = tty.getvalue()
    assert re.search(r"reading x \[#{11,12}\.{12,13}\] ~ 50% ", shown) and "rendering html..." in shown
    assert shown.endswith("\r\033[K")  # the line is cleared afterwards
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    p = output.Progress("reading x", True, trace)
    p(10**6)
    p.stage("rendering")
    p.done()
    assert pipe.getvalue() == ""
