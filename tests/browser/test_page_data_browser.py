"""The page ships its data smaller than report_data builds it (report/html.py
page_data: widths equal to the inclusive time left out, corrected widths and
percentiles in whole ns, runs of indices); templates/core.js unpacks it. In
headless Chromium the unpacked data is report_data's, at the precision the
page shows."""
from __future__ import annotations

import pytest

from ftflame.report import html
from helpers.htmlfix import ICOUNT, WRITE4K, corrected, load

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("trace", [WRITE4K, ICOUNT], ids=["write4k", "icount"])
def test_unpacked_flame_data_is_report_data(browser_page, tmp_path, trace):
    p = corrected(load(trace), 700.0, 300.0)
    want = html.report_data(p)["flame"]
    page_file = tmp_path / "r.html"
    page_file.write_text(html.render(p), encoding="utf-8")
    bp = browser_page()
    page = bp.open(page_file)
    got = page.evaluate("(function () { var f = FT.data.flame; return {w: f.w, wc: f.wc, corr: f.corr}; })()")
    bp.assert_clean()
    assert got["w"] == want["w"]  # exact
    assert len(got["wc"]) == len(want["wc"]) and all(abs(a - b) <= 0.5 for a, b in zip(got["wc"], want["wc"]))
    for k in ("p50", "p99"):
        assert all(abs(a - b) <= 0.5 for a, b in zip(got["corr"][k], want["corr"][k]))
    assert got["corr"]["approx"] == want["corr"]["approx"]


@pytest.mark.parametrize("trace", [WRITE4K, ICOUNT], ids=["write4k", "icount"])
def test_unpacked_slowest_trees_are_report_data(browser_page, tmp_path, trace):
    """The slowest calls' trees ship packed (callers as distances, starts from
    the caller's, interrupt calls as runs, off-CPU where not 0): unpacked,
    every column is report_data's (the corrected time to the whole ns)."""
    p = corrected(load(trace), 700.0, 300.0)
    want = [c["tree"] for c in html.report_data(p)["slowest"]]
    assert any(t is not None for t in want)
    page_file = tmp_path / "r.html"
    page_file.write_text(html.render(p), encoding="utf-8")
    bp = browser_page()
    page = bp.open(page_file)
    got = page.evaluate("FT.data.slowest.map(function (c) { return c.tree; })")
    bp.assert_clean()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if w is None:
            assert g is None
            continue
        assert {k: g[k] for k in w if k != "incl_corr"} == {k: v for k, v in w.items() if k != "incl_corr"}
        if w["incl_corr"] is None:  # a gap call: no corrected time
            assert g["incl_corr"] is None
        else:
            assert len(g["incl_corr"]) == len(w["incl_corr"])
            assert all(abs(a - b) <= 0.5 for a, b in zip(g["incl_corr"], w["incl_corr"]))


def test_irq_context_root_is_drawn_under_its_frame(browser_page, tmp_path):
    """tests/data/events/irq-root-both-ways: svc_process in a task and in an
    interrupt; the page draws the interrupt one under an [irq] frame, as the
    folded stacks, SVG and speedscope do."""
    from helpers.events import load as load_events

    page_file = tmp_path / "r.html"
    page_file.write_text(html.render(load_events("irq-root-both-ways")), encoding="utf-8")
    bp = browser_page()
    page = bp.open(page_file)
    frames = page.evaluate("""(function () {
      var F = FT.flame, out = [];
      for (var j = 1; j < F.N; j++) out.push([F.names[j], F.names[F.parent[j]], F.kind[j]]);
      return out;
    })()""")
    bp.assert_clean()
    assert sorted(frames) == sorted([["svc_process", "all", 1], ["svc_send", "svc_process", 1],
                                     ["[irq]", "all", 4], ["svc_process", "[irq]", 1],
                                     ["svc_send", "svc_process", 1]])
