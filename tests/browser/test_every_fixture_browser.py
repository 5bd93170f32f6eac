"""Every curated fixture's report (corrected as `ftflame report` corrects
it), one page load each, at 1400 x 1000 px: in both plot modes (Corrected,
the page's first, and Raw) and in the plot's first view and its "all root
functions" view, each of the 5 highest latency points, clicked, opens that
root call's own tree with its root row in view; and every function the
function table lists opens a sandwich. The clicks and the checks run in
the page (one evaluate a fixture: a mousedown on the point where it is
drawn and the mouseup the plot listens for, as a real click sends them;
test_first_view_browser.py clicks with the mouse on a few traces), so the
55 fixtures cost about a second each. s10-lost (lost events) and s14 (124k
call paths, the full corpus only) are named."""
from __future__ import annotations

import pytest

from ftflame.correct.stage import CorrectionOptions, correct_for_report
from ftflame.report import html
from helpers import corpus
from helpers.htmlfix import BIG, LOST, corrected, fixture, load

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 1400, 1000
NAV = 37  # the sticky section bar's height: what is under it is not in view
NAMED = [pytest.param(str(LOST), id="s10-lost"), pytest.param(str(BIG), id="s14-write-big")]
OTHERS = [pytest.param(p, id=corpus.label(p)) for p in
          corpus.files(corpus.CURATED, "*.dat") + corpus.files(corpus.CURATED, "*.txt.gz") if p != str(LOST)]

# In the page: for each mode and plot view, the 5 highest points (one per
# sample), each clicked; what is wrong, as strings.
CLICK_HIGHEST = """([NAV, HEIGHT]) => {
  const S = FT.data.samples, bad = [], seen = {modes: [], points: 0};
  const canvas = document.getElementById("lat-canvas"), sel = document.getElementById("lat-root");
  const inView = (r) => r.top >= NAV - 0.5 && r.top + Math.min(r.height, 16) <= HEIGHT + 0.5;
  const modes = FT.calibrated ? ["corr", "raw"] : ["raw"];
  for (const mode of modes) {
    document.getElementById("mode-" + mode).click();
    seen.modes.push(FT.mode);
    const views = [sel.value].concat(S.roots.length > 1 ? ["-1"] : []);
    for (const view of views) {
      if (sel.value !== view) { sel.value = view; sel.dispatchEvent(new Event("change")); }
      const all = FT.latency.points(), pts = all.slice().sort((a, b) => a[1] - b[1] || a[2] - b[2])
        .filter((q, i, all) => !i || all[i - 1][2] !== q[2]).slice(0, 5);
      if (!pts.length) bad.push(`${mode} view ${view}: no point drawn`);
      for (const [x, y, k] of pts) {
        canvas.scrollIntoView({block: "center"});
        document.getElementById("call-canvas").removeAttribute("data-sample");  // what this click opens, nothing else
        const box = canvas.getBoundingClientRect(), at = {clientX: box.left + x, clientY: box.top + y, bubbles: true};
        canvas.dispatchEvent(new MouseEvent("mousedown", at));
        window.dispatchEvent(new MouseEvent("mouseup", at));
        seen.points++;
        const tree = document.getElementById("call-canvas"), what = `${mode} view ${view} point ${k} ` +
          `(raw ${S.dur[k]} ns${S.durc ? ", corrected " + S.durc[k] + " ns" : ""})`;
        const attr = tree.getAttribute("data-sample"), opened = attr === null ? -1 : S.sample.indexOf(+attr);
        const dur = mode === "corr" ? S.durc : S.dur, kept = FT.latency.clickable(k);
        /* a point whose duration others share (a null call's 702 ns, a
         * thousand times): the core keeps some of them, the page rings
         * those, and a click there opens one of them */
        const tied = !kept && S.sample.some((s, j) => j !== k && FT.latency.clickable(j) && dur[j] === dur[k]);
        if (!kept && !tied) bad.push(`${what}: its tree is not in the page`);
        if (tied) continue;  // its twins are ringed: a click on it opens one within reach, or says why not
        /* a twin drawn within reach, or a kept call drawn on the same pixel, picked first */
        const hit = all.find((q) => q[2] === opened);
        const same = opened >= 0 && (dur[opened] === dur[k] || (hit && Math.hypot(hit[0] - x, hit[1] - y) < 1.5));
        if (opened < 0 || (opened !== k && !same)) {
          bad.push(`${what}: ` + (opened < 0 ? `no tree (${document.getElementById("lat-click").textContent.slice(0, 40)})`
            : `the tree of point ${opened} (raw ${S.dur[opened]} ns${S.durc ? ", corrected " + S.durc[opened] + " ns" : ""})`));
          continue;
        }
        if (!(+tree.getAttribute("data-calls") >= 1)) bad.push(`${what}: an empty tree`);
        const r = tree.getBoundingClientRect();
        if (!inView(r)) bad.push(`${what}: the tree's root row is not in view (y ${Math.round(r.top)})`);
        if (!inView(document.getElementById("call-note").getBoundingClientRect())) bad.push(`${what}: its note is not in view`);
      }
    }
  }
  return {bad, seen};
}"""

# every listed function's sandwich: the page's own, from the flame graph's
# paths, or from the call edges, one of the three
OPEN_SANDWICHES = """() => {
  const own = new Set(FT.data.sandwich.map((e) => e.func)), bad = [];
  const funcs = FT.data.functions.func;
  for (const f of funcs) {
    FT.functions.open(f);
    const c = document.getElementById("sandwich-canvas");
    const kinds = (own.has(f) ? 1 : 0) + document.querySelectorAll("#sandwich-from-flame").length +
      document.querySelectorAll("#sandwich-from-edges").length;
    if (!c || c.getAttribute("data-func") !== String(f) || !(+c.getAttribute("data-rows") >= 1) || kinds !== 1)
      bad.push(`${FT.data.functions.name ? FT.data.functions.name[f] : f}: no sandwich (${kinds} sources)`);
  }
  return {bad, n: funcs.length};
}"""


@pytest.mark.parametrize("path", NAMED + OTHERS)
def test_highest_points_and_every_sandwich_open(browser_page, tmp_path, path):
    trace = fixture(__import__("pathlib").Path(path))
    p = correct_for_report(load(trace), str(trace), CorrectionOptions())
    if not p.calibration.applied:  # no hook cost from this trace: a fixed one, so that both modes are there
        p = corrected(p, 700.0, 300.0)
    if not len(p.samples):
        pytest.skip("no root call completed: no latency plot, no slowest-calls table")
    out = tmp_path / "r.html"
    out.write_text(html.render(p), encoding="utf-8")
    bp = browser_page(width=WIDTH, height=HEIGHT)
    page = bp.open(out)
    assert page.evaluate("FT.data.slowest.length") > 0
    got = page.evaluate(CLICK_HIGHEST, [NAV, HEIGHT])
    assert got["seen"]["modes"] == ["corr", "raw"]
    assert not got["bad"], got["bad"]
    got = page.evaluate(OPEN_SANDWICHES)
    assert got["n"] > 0 and not got["bad"], got["bad"][:10]
    bp.assert_clean()
