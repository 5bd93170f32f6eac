"""The `ftflame diff` HTML page in a real browser (headless Debian
Chromium): no console error, no network request, zoom and search work, and
every drawn frame's colour follows its verdict. Pages of the real
comparisons (two kernels; root-only vs full graph) and of a synthetic
change (one function scaled x1.5: tests/helpers/diffsynth.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ftflame.diff import DiffOptions, compare
from ftflame.report import diff_html
from helpers import diffsynth
from helpers.corpus import curated as fixture

pytestmark = pytest.mark.browser
BUILD = Path(__file__).resolve().parents[2] / "build"

# one run a side: the calls taken as independent (--runs-identical), so that
# the pages have verdicts to colour; one run a side without it: "no verdict"
OPTS = DiffOptions(runs_identical=True)
TEXT = "k6.1/s07-tracefs-text/trace-default.txt.gz"


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    d = tmp_path_factory.mktemp("diffhtml")
    src = fixture(TEXT)
    same = diffsynth.scaled(src, str(d / "same.txt.gz"), "shmem_write_begin", 1.0)
    scaled = diffsynth.scaled(src, str(d / "scaled.txt.gz"), "shmem_write_begin", 1.5)
    out = {}
    for name, before, after in (
            ("synthetic", same, scaled),
            ("kernels", fixture("k6.1/s01-v3-write4k/trace.dat"), fixture("k6.12/s01-v3-write4k/trace.dat")),
            ("calib-pair", fixture("k6.1/s06-calib-pair/trace-root.dat"),
             fixture("k6.1/s06-calib-pair/trace-full.dat"))):
        path = d / f"{name}.html"
        path.write_text(diff_html.render(compare([before], [after], OPTS)), encoding="utf-8")
        out[name] = path
    return out


def pixel(page, x, y):
    return page.evaluate(f"""() => {{
        const c = document.getElementById('flame-canvas'), r = window.devicePixelRatio || 1;
        return Array.from(c.getContext('2d').getImageData(Math.round({x} * r), Math.round({y} * r), 1, 1).data);
    }}""")


def frames(page):
    """Every drawn frame wide enough to sample: (index, verdict, rect)."""
    return page.evaluate("""() => {
        const F = ftdiff.data.flame, out = [];
        for (let j = 0; j < F.name.length; j++) {
            const r = ftdiff.flame.rect(j);
            if (r.w >= 4) out.push([j, F.verdict[j], r]);
        }
        return out;
    }""")


def follows(verdict, rgb):
    r, g, b = rgb[:3]
    if verdict == 1:  # slower: red
        return r > 200 and b < r - 50 and g < r - 30
    if verdict == 2:  # faster: blue
        return b > 200 and r < b - 50
    if verdict in (0, 5):  # no significant change, no verdict: near white
        return min(r, g, b) >= 225 and max(r, g, b) - min(r, g, b) < 12
    if verdict == 3:  # AFTER only: hatched yellow-grey
        return r >= b + 25 and g >= b + 10
    return False


@pytest.mark.parametrize("name", ["synthetic", "kernels", "calib-pair"])
def test_diff_page_is_clean_and_coloured_by_verdict(browser_page, pages, name):
    pg = browser_page()
    page = pg.open(pages[name])
    drawn = frames(page)
    assert drawn, "no frame drawn"
    wrong = []
    for j, verdict, r in drawn:
        rgb = pixel(page, r["x"] + r["w"] / 2, r["y"] + 0.2)  # the top row: above any label
        if not follows(verdict, rgb):
            wrong.append((j, verdict, rgb))
    assert wrong == [], [(j, v, rgb, page.evaluate(f"ftdiff.data.flame.path[{j}]")) for j, v, rgb in wrong]
    verdicts = {v for _, v, _ in drawn}
    if name == "synthetic":
        assert 1 in verdicts and 2 not in verdicts and 3 not in verdicts
    if name == "calib-pair":
        assert 3 in verdicts  # the full graph's frames are AFTER only: hatched
    pg.shot(f"diff-{name}", "#flame-box")
    pg.assert_clean()


def test_diff_page_zoom_search_and_sorting(browser_page, pages):
    pg = browser_page()
    page = pg.open(pages["synthetic"])
    j, r = page.evaluate("""() => {
        const F = ftdiff.data.flame;
        const j = F.name.indexOf('shmem_write_begin');
        return [j, ftdiff.flame.rect(j)];
    }""")
    assert j >= 0
    box = page.locator("#flame-canvas").bounding_box()
    page.evaluate(f"window.scrollBy(0, {box['y'] + r['y'] - 300})")
    box = page.locator("#flame-canvas").bounding_box()
    page.mouse.click(box["x"] + r["x"] + r["w"] / 2, box["y"] + r["y"] + 8)
    assert page.evaluate("ftdiff.flame.zoomed()") == j
    assert "shmem_write_begin" in page.locator("#flame-crumbs .here").inner_text()
    wide = page.evaluate(f"ftdiff.flame.rect({j}).w")
    assert wide > box["width"] - 4  # the zoomed frame spans the graph
    page.click("#flame-reset")
    assert page.evaluate("ftdiff.flame.zoomed()") == -1
    page.fill("#flame-search", "shmem_write_begin")
    count = page.locator("#flame-search-count").inner_text()
    assert count.startswith("1 frame,") and "% of time matched" in count
    page.fill("#flame-search", "/^nfsd/")
    assert page.locator("#flame-search-count").inner_text().split()[0] != "0"
    # the delta table: the slower functions first when sorted by change
    page.locator("#fn-table th", has_text="change").first.click()
    first = page.locator("#fn-table tbody tr").first.locator("td").nth(1).inner_text()
    assert first == "slower"
    rows = page.locator("#fn-table tbody tr").count()
    page.fill("#fn-filter", "shmem_write")
    assert page.locator("#fn-table tbody tr").count() < rows
    pg.assert_clean()


def test_diff_page_lists_the_operations_with_their_kind(browser_page, tmp_path):
    """Root calls of svc_process, one operation (v3 WRITE) made 1.5x slower
    (tests/helpers/diffsynth.py's dispatcher_events): the operations are rows
    of the delta table, of kind "operation", sortable by kind."""
    from ftflame.diff import model
    from ftflame.diff.load import Run
    from ftflame.parse import build_events

    calls = {"v3 WRITE": 150, "v3 GETATTR": 150, "v3 READ": 150}
    before = Run("b", "b", build_events(diffsynth.dispatcher_events(1, calls), source="b"))
    after = Run("a", "a", build_events(diffsynth.dispatcher_events(2, calls, {"v3 WRITE": 1.5}), source="a"))
    path = tmp_path / "operations.html"
    path.write_text(diff_html.render(model.build((before,), (after,), corrected=False, runs_identical=True)),
                    encoding="utf-8")
    pg = browser_page()
    page = pg.open(path)
    page.locator("#fn-table th", has_text="kind").first.click()  # ascending: functions first
    page.locator("#fn-table th", has_text="kind").first.click()  # descending: operations first
    cells = [page.locator("#fn-table tbody tr").nth(r).locator("td") for r in range(3)]
    rows = {c.nth(0).inner_text(): (c.nth(1).inner_text(), c.nth(8).inner_text()) for c in cells}
    assert rows == {"svc_process: v3 WRITE": ("slower", "operation"),
                    "svc_process: v3 GETATTR": ("no change", "operation"),
                    "svc_process: v3 READ": ("no change", "operation")}
    assert "functions and operations" in page.locator("#fn-count").inner_text()
    pg.assert_clean()


def test_a_long_trace_path_wraps_within_1400_px(browser_page, tmp_path):
    """The sides table names each run by its trace's path, which can be as
    long as the folders it lives in (a clone in a deeper folder overflowed
    the 1400 px page by 5 px): the path wraps, the page does not scroll
    sideways."""
    from ftflame.diff import model
    from ftflame.diff.load import Run
    from ftflame.parse import build_events

    calls = {"v3 WRITE": 50, "v3 GETATTR": 50}
    deep = "/" + "/".join(f"folder-{i:02d}-of-a-deep-checkout" for i in range(12))
    before = Run(f"{deep}/before/trace.dat", "b", build_events(diffsynth.dispatcher_events(1, calls), source="b"))
    after = Run(f"{deep}/after/trace.dat", "a", build_events(diffsynth.dispatcher_events(2, calls), source="a"))
    path = tmp_path / "deep.html"
    path.write_text(diff_html.render(model.build((before,), (after,), corrected=False, runs_identical=True)),
                    encoding="utf-8")
    pg = browser_page(width=1400, height=1000)
    page = pg.open(path)
    assert deep in page.locator("#sides").inner_text().replace("\n", "")
    width = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert width[0] <= width[1] == 1400, width
    pg.assert_clean()


def test_diff_page_fits_1400_px_leads_with_the_verdict_and_pages_its_rows(browser_page, pages):
    """At 1400 px (6.1 against 6.12: 486 functions): no element wider than
    the viewport, the root function's verdict near the top, names
    left-aligned, 50 rows and a way to see all, and "no change" rows
    without a percent or p-value. The screenshot: build/diff-page-1400.png."""
    pg = browser_page(width=1400, height=1000)
    page = pg.open(pages["kernels"])
    wide = page.evaluate("""() => {
        const W = document.documentElement.clientWidth, out = [];
        for (const e of document.querySelectorAll('body *')) {
            const r = e.getBoundingClientRect();
            if (r.width && (r.right > W + 0.5 || r.left < -0.5)) out.push(e.tagName + '#' + e.id + ' ' + Math.round(r.right));
        }
        return [document.documentElement.scrollWidth, W, out.slice(0, 5)];
    }""")
    assert wide[0] <= 1400 and wide[2] == [], wide
    first = page.locator("#root-verdicts tbody tr").first
    assert first.locator("td").nth(0).inner_text() == "nfsd3_proc_write"
    assert first.locator("td").nth(1).inner_text().startswith(("faster", "slower", "no change", "no verdict"))
    assert first.bounding_box()["y"] < 400  # above the fold, before the sides and warnings
    assert page.locator("#verdict").bounding_box()["y"] < page.locator("#sides").bounding_box()["y"]
    assert page.locator("#method").bounding_box()["y"] > page.locator("#fn-table").bounding_box()["y"]
    rows = page.locator("#fn-table tbody tr")
    n = page.evaluate("ftdiff.data.table.name.length")
    assert n > 100 and rows.count() == 50
    assert page.evaluate("getComputedStyle(document.querySelector('#fn-table tbody td')).textAlign") == "left"
    pg.shot("diff-page-1400")
    page.screenshot(path=str(BUILD / "diff-page-1400.png"))
    page.click("#fn-more")
    assert rows.count() == 100
    page.click("#fn-all")
    assert rows.count() == n and not page.locator("#fn-all").is_visible()
    cells = page.evaluate("""() => Array.from(document.querySelectorAll('#fn-table tbody tr')).map(
        r => Array.from(r.cells).slice(1, 4).map(c => c.firstChild.textContent))""")
    same = [c for c in cells if c[0] == "no change"]
    assert same and all(c[1] == "\u2013" and c[2] == "\u2013" for c in same), same[:3]
    judged = [c for c in cells if c[0] in ("slower", "faster")]
    assert judged and all(c[1].endswith("]") and c[2] != "\u2013" for c in judged)
    pg.assert_clean()
