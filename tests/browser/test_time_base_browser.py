"""One time base: the latency plot's tooltip gives a root call's start on
the trace clock, as the slowest-calls table (and the text, the JSON and the
Perfetto trace) print it, with the time after the first event beside it."""
from __future__ import annotations

import pytest

from ftflame.report import html
from helpers.htmlfix import ICOUNT, corrected, load

pytestmark = pytest.mark.browser


def test_tooltip_start_is_the_tables(browser_page, tmp_path):
    f = tmp_path / "icount.html"
    f.write_text(html.render(corrected(load(ICOUNT), 700.0, 300.0)), encoding="utf-8")
    bp = browser_page()
    page = bp.open(f)
    slow = page.evaluate("ftflame.data.slowest[0]")
    row = page.locator(f"#slowest tr[data-sample='{slow['sample']}']").inner_text()
    shown = f"{slow['start_ns'] / 1e9:.6f} s"
    assert shown in row
    x, y = page.evaluate(f"""(function () {{ var S = FT.data.samples;
        var p = FT.latency.points().filter(function (q) {{ return S.sample[q[2]] === {slow['sample']}; }})[0];
        return [p[0], p[1]]; }})()""")
    page.evaluate("document.getElementById('lat-canvas').scrollIntoView({block: 'center'})")
    box = page.locator("#lat-canvas").bounding_box()
    page.mouse.move(box["x"] + x, box["y"] + y)
    tip = page.locator("#tip").inner_text()
    assert shown + " (trace clock)" in tip, tip
    assert "after the first event" in tip
    bp.assert_clean()


def test_function_detail_leaves_the_mode_switch_in_reach(browser_page, tmp_path):
    """The function detail panel opens below the section bar: the
    Raw/Corrected switch is not under it, and works while it is open."""
    f = tmp_path / "icount.html"
    f.write_text(html.render(corrected(load(ICOUNT), 700.0, 300.0)), encoding="utf-8")
    bp = browser_page()
    page = bp.open(f)
    page.locator("#fn-table tbody tr").first.click()
    assert page.locator("#detail").is_visible()
    for b in ("#mode-raw", "#mode-corr"):
        box = page.locator(b).bounding_box()
        hit = page.evaluate(f"document.elementFromPoint({box['x'] + box['width'] / 2}, {box['y'] + box['height'] / 2}).id")
        assert hit == b[1:], hit
    page.click("#mode-raw")
    assert page.evaluate("FT.mode") == "raw"
    bp.assert_clean()


def test_a_calls_tree_zooms_on_a_click(browser_page, tmp_path):
    """A single call's flame chart zooms: a click on a call draws its time
    across the canvas; a double-click goes back to the whole call."""
    f = tmp_path / "icount.html"
    f.write_text(html.render(corrected(load(ICOUNT), 700.0, 300.0)), encoding="utf-8")
    bp = browser_page()
    page = bp.open(f)
    sample, t, incl, whole = page.evaluate("""(function () {
        var c = ftflame.data.slowest.filter(function (c) { return c.tree; })[0], T = c.tree, best = -1;
        for (var i = 1; i < T.func.length; i++) if (T.parent[i] === 0 && (best < 0 || T.incl[i] > T.incl[best])) best = i;
        return [c.sample, T.t[best], T.incl[best], T.incl[0]]; })()""")
    page.evaluate(f"FT.calls.open({sample})")
    canvas = page.locator("#call-canvas")
    assert canvas.get_attribute("data-zoom") == "0"
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    page.mouse.click(box["x"] + (t + incl / 2) / whole * box["width"], box["y"] + 16 + 8)
    assert canvas.get_attribute("data-zoom") not in ("0", None)
    assert "double-click for the whole call" in page.locator("#call-note").inner_text()
    page.mouse.dblclick(box["x"] + 5, box["y"] + 8)
    assert canvas.get_attribute("data-zoom") == "0"
    bp.assert_clean()
