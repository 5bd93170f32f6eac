"""The flame graph of one operation (docs/html.md), in headless Chromium on
k6.1/s17-mixed-ops: choosing an operation shows only the frames of its
paths (the naming function's subtree and its ancestors), the total shown is
the JSON's operations[].flame figure, and the operation table's rows choose
it too."""
from __future__ import annotations

import json

import pytest

from ftflame.report import RENDERERS, html
from helpers.htmlfix import MIXED_OPS, corrected, load

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def ops_page(tmp_path_factory):
    p = corrected(load(MIXED_OPS), 700.0, 300.0)
    out = tmp_path_factory.mktemp("opflame") / "ops.html"
    out.write_text(html.render(p), encoding="utf-8")
    doc = json.loads(RENDERERS["json"].render(p))
    return out, {r["operation"]: r for r in doc["operations"]}


DRAWN = """(function () {
  var L = FT.flame.layout(FT.mode), F = FT.flame, out = [];
  for (var j = 0; j < F.N; j++) if (L.W[j] > 0) out.push([j, F.parent[j], F.names[j], L.W[j]]);
  return out;
})()"""


def _check_drawn(drawn, tops):
    """Every drawn frame is a top, below one, or above one; every top is drawn."""
    parent = {j: pj for j, pj, _, _ in drawn}
    name = {j: n for j, _, n, _ in drawn}
    top_frames = [j for j in parent if name[j] in tops and name.get(parent[j]) not in tops]
    assert top_frames
    above = set()
    for t in top_frames:
        a = parent[t]
        while a >= 0:
            above.add(a)
            a = parent[a]
    for j in parent:
        a, under = j, False
        while a >= 0 and not under:
            under = a in top_frames
            a = parent.get(a, -1)
        assert under or j in above, name[j]
    return top_frames


@pytest.mark.parametrize("mode", ["raw", "corr"])
def test_choosing_an_operation_shows_only_its_frames(browser_page, ops_page, mode):
    page_file, ops = ops_page
    bp = browser_page()
    page = bp.open(page_file)
    page.click("#mode-" + mode)
    key = "incl_ns" if mode == "raw" else "incl_corr_ns"
    for label in ("v3 WRITE", "COMPOUND(SEQUENCE,PUTFH,WRITE,GETATTR)"):
        k = page.evaluate(f"FT.data.flame.ops.map(function (o) {{ return o.op; }}).indexOf({json.dumps(label)})")
        page.select_option("#flame-op", str(k))
        drawn = page.evaluate(DRAWN)
        names = {n for _, _, n, _ in drawn}
        want = ops[label]["flame"]
        tops = {x["path"][-1] for x in want["paths"]}
        top_frames = _check_drawn(drawn, tops)
        procs = {n for n in names if n.startswith(("nfsd3_proc_", "nfsd4_"))} - tops
        if label.startswith("v3"):
            assert not {n for n in procs if n.startswith("nfsd3_proc_")}, procs
        else:  # under nfsd4_proc_compound only its own op functions
            compound = [j for j, _, n, _ in drawn if n == "nfsd4_proc_compound"]
            assert {n for j, pj, n, _ in drawn if pj in compound} == tops
        note = page.locator("#flame-op-note")
        assert note.get_attribute("data-op") == label
        assert float(note.get_attribute("data-total")) == pytest.approx(want[key], abs=0.05)
        assert "not attributable to one operation" in note.inner_text()
        root_w = [w for j, _, _, w in drawn if j == 0][0]
        top_w = sum(w for j, _, _, w in drawn if j in top_frames)
        assert root_w == pytest.approx(top_w, rel=1e-9)
        assert top_w == pytest.approx(want[key], rel=0.01)  # widths: max(incl, children), clock skew aside
    page.select_option("#flame-op", "")
    assert page.evaluate("FT.flame.op()") is None
    assert len(page.evaluate(DRAWN)) > 100
    bp.assert_clean()


def test_an_operation_row_chooses_its_flame_graph(browser_page, ops_page):
    page_file, ops = ops_page
    bp = browser_page()
    page = bp.open(page_file)
    row = page.locator("#ops tbody tr[data-operation='v3 GETATTR']")
    row.click()
    assert page.evaluate("FT.flame.op()") == "v3 GETATTR"
    assert page.locator("#flame-op-note").get_attribute("data-op") == "v3 GETATTR"
    names = {n for _, _, n, _ in page.evaluate(DRAWN)}
    assert "nfsd3_proc_getattr" in names and "nfsd3_proc_write" not in names
    bp.assert_clean()
