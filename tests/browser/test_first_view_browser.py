"""What a reader sees first, at 1400 x 1000 px in headless Chromium, on
reports of real fixtures (raw, and corrected by the real correction): the
latency plot's highest points open their call's tree, in view; the flame
graph's root is in view after its section link; nothing is wider than the
window; the slowest-calls table lists the slowest first, its header over no
row. Screenshots of the whole page go to build/screenshots/."""
from __future__ import annotations

import pytest

from ftflame.report import html
from helpers.htmlfix import CURATED, ICOUNT, LOST, MIXED_OPS, NULLCALLS, REPO, WRITE4K, WRITE4K_WHOLE, corrected, load

pytestmark = pytest.mark.browser

SHOTS = REPO / "build" / "screenshots"
WIDTH, HEIGHT = 1400, 1000
NAV = 37  # the sticky section bar's height: what is under it is not in view
# the write recording (whole when the full corpus is here), operations under a
# dispatcher, a dispatcher's calls, lost events (depth 49: a tall flame graph)
TRACES = {"write4k": WRITE4K_WHOLE or WRITE4K, "ops": MIXED_OPS, "dispatch": NULLCALLS, "lost": LOST}
# sched_switch recorded: the corrected durations' highest points are not the
# raw ones' (off-CPU time out), their trees kept by on-CPU time
SCHED = {"icount": ICOUNT, "sched-6.12": CURATED / "k6.12" / "s16-icount-calib" / "trace-full.dat",
         "sched-5.10": CURATED / "k5.10" / "s21-v4-write-sched" / "trace.dat"}


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """name-mode -> report file, rendered once."""
    d = tmp_path_factory.mktemp("first-view")
    out = {}
    for name, trace in {**TRACES, **SCHED}.items():
        p = load(trace)
        for mode, prof in (("raw", p), ("corr", corrected(p, 700.0, 300.0))):
            f = d / f"{name}-{mode}.html"
            f.write_text(html.render(prof), encoding="utf-8")
            out[f"{name}-{mode}"] = f
    return out


def open_page(browser_page, pages, key):
    bp = browser_page(width=WIDTH, height=HEIGHT)
    return bp, bp.open(pages[key])


def in_view(box, height=HEIGHT) -> bool:
    return box is not None and box["y"] >= NAV - 0.5 and box["y"] + box["height"] <= height + 0.5


def highest_points(page, n=5) -> list:
    """The n highest points drawn (smallest y), as [x, y, k] in canvas pixels."""
    return page.evaluate(f"""FT.latency.points().slice().sort(function (a, b) {{ return a[1] - b[1] || a[2] - b[2]; }})
        .filter(function (q, i, all) {{ return !i || all[i - 1][2] !== q[2]; }}).slice(0, {n})""")


@pytest.mark.parametrize("key", [f"{n}-{m}" for n in {**TRACES, **SCHED} for m in ("raw", "corr")])
def test_the_highest_points_open_their_tree_in_view(browser_page, pages, key):
    """In the view the plot opens on and in every root function's, each of the
    5 highest points, clicked, draws that root call's own tree, its root row
    on screen without scrolling: the points drawn above the bulk are the
    ones whose trees the page carries (report/html.py tree_order)."""
    bp, page = open_page(browser_page, pages, key)
    S = page.evaluate("FT.data.samples")
    views = [None] + (["-1"] if len(S["roots"]) > 1 else [])
    for view in views:
        if view is not None:
            page.select_option("#lat-root", view)
        points = highest_points(page)
        assert points
        for x, y, k in points:
            page.evaluate("document.getElementById('lat-canvas').scrollIntoView({block: 'center'})")
            box = page.locator("#lat-canvas").bounding_box()
            page.mouse.click(box["x"] + x, box["y"] + y)
            canvas = page.locator("#call-canvas")
            assert canvas.get_attribute("data-sample") == str(S["sample"][k]), (view, k, S["dur"][k])
            assert int(canvas.get_attribute("data-calls")) >= 1
            tree = canvas.bounding_box()
            root_row = {"y": tree["y"], "height": 16}
            assert in_view(root_row), f"the tree's root row is at y={tree['y']:.0f}, not in view"
            assert in_view(page.locator("#call-note").bounding_box())
    bp.assert_clean()


@pytest.mark.parametrize("key", [f"{n}-{m}" for n in ("write4k", "lost") for m in ("raw", "corr")])
def test_flame_graph_root_in_view_after_its_link(browser_page, pages, key):
    """After "Flame graph" in the section bar the root frame is on screen, and
    the canvas is no taller than what it draws: in corrected mode removed time
    is not drawn, and takes no row."""
    bp, page = open_page(browser_page, pages, key)
    page.click("nav.sections a[href='#flame']")
    page.wait_for_timeout(100)
    root = page.evaluate("ftflame.flame.rectOf(0)")
    canvas = page.locator("#flame-canvas").bounding_box()
    frame = {"y": canvas["y"] + root["y"], "height": root["h"]}
    assert in_view(frame), f"root frame at y={frame['y']:.0f}"
    box = page.locator("#flame-box").bounding_box()  # and not scrolled out of its box
    assert box["y"] - 0.5 <= frame["y"] and frame["y"] + frame["height"] <= box["y"] + box["height"] + 0.5
    # every row holds a drawn frame: the top row is not empty
    top = page.evaluate("""(function () { var f = ftflame.flame, c = f.canvas, best = -1;
        for (var j = 0; j < f.N; j++) { var r = f.rectOf(j); if (r && (best < 0 || r.y < best)) best = r.y; }
        return best; })()""")
    assert top <= 2 + 0.5, f"the top {top:.0f} px of the flame graph are empty"
    bp.assert_clean()


@pytest.mark.parametrize("key", [f"{n}-{m}" for n in TRACES for m in ("raw", "corr")])
def test_nothing_wider_than_the_window_and_screenshot(browser_page, pages, key):
    """No element of the page reaches past a 1400 px window (a horizontal
    scroll bar hides the mode switch and half the tables); the page as
    loaded, and with the slowest call's tree open, shot whole."""
    bp, page = open_page(browser_page, pages, key)
    wide = """(function () { var out = [];
        document.querySelectorAll('body *').forEach(function (e) {
          var r = e.getBoundingClientRect();
          if (r.width && r.right > window.innerWidth + 0.5)
            out.push(e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(r.right));
        });
        return {scroll: document.documentElement.scrollWidth, wide: out.slice(0, 10)}; })()"""
    got = page.evaluate(wide)
    assert got["scroll"] <= WIDTH and got["wide"] == [], got
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"report-{key}.png"), full_page=True)
    if page.locator("#slowest tbody tr").count():
        page.locator("#slowest tbody tr").first.click()
        got = page.evaluate(wide)
        assert got["scroll"] <= WIDTH and got["wide"] == [], got
        page.screenshot(path=str(SHOTS / f"report-{key}-tree.png"))
    bp.assert_clean()


@pytest.mark.parametrize("key", ["ops-raw", "ops-corr", "write4k-raw"])
def test_slowest_table_lists_the_slowest_first_under_a_header_that_covers_no_row(browser_page, pages, key):
    """The slowest-calls table, as the page opens: rows by raw duration, the
    slowest first, and a click on the first row draws the slowest call's
    tree; its sticky header (in its own scroll box) covers no row."""
    bp, page = open_page(browser_page, pages, key)
    L = page.evaluate("FT.data.slowest")
    dur = {c["sample"]: c["dur"] for c in L}
    rows = page.locator("#slowest tbody tr")
    order = [dur[int(s)] for s in rows.evaluate_all("rs => rs.map(r => r.getAttribute('data-sample'))")]
    assert order == sorted(order, reverse=True) and order[0] == max(dur.values())
    page.locator("#slow-table").scroll_into_view_if_needed()
    head = page.locator("#slowest thead").bounding_box()
    first = rows.first.bounding_box()
    assert head["y"] + head["height"] <= first["y"] + 0.5, (head, first)
    # what is drawn at the first row's middle is that row
    hit = page.evaluate("""([x, y]) => { const e = document.elementFromPoint(x, y);
        return e && e.closest('tr') ? e.closest('tr').getAttribute('data-sample') : null; }""",
                        [first["x"] + 20, first["y"] + first["height"] / 2])
    assert hit == rows.first.get_attribute("data-sample")
    rows.first.click()
    slowest = max(L, key=lambda c: (c["dur"], -c["sample"]))
    if slowest["tree"] is not None:
        assert page.locator("#call-canvas").get_attribute("data-sample") == str(slowest["sample"])
    bp.assert_clean()


def test_no_operation_box_without_operations(browser_page, pages):
    """A trace with no operations has no `operation` drop-down (an empty one
    was shown: a display rule beat the hidden attribute)."""
    bp, page = open_page(browser_page, pages, "write4k-raw")
    assert page.evaluate("FT.data.flame.ops.length") == 0
    assert not page.locator("#flame-op-box").is_visible()
    bp, page = open_page(browser_page, pages, "ops-raw")
    assert page.locator("#flame-op-box").is_visible()
    bp.assert_clean()


def test_sandwich_draws_the_merged_callers_and_callees(browser_page, pages):
    """A function's detail draws its sandwich: its callers above it and its
    callees below, each box's tooltip the merged figure computed beside the
    Profile (report_data's sandwich); a click on a callee opens its detail."""
    bp, page = open_page(browser_page, pages, "write4k-corr")
    S = page.evaluate("FT.data.sandwich")
    assert S
    e = max(S, key=lambda x: len(x["callees"]["func"]))
    page.evaluate(f"FT.functions.open({e['func']})")
    canvas = page.locator("#sandwich-canvas")
    assert canvas.get_attribute("data-func") == str(e["func"])
    n = len(e["callers"]["func"]) + len(e["callees"]["func"]) - 1
    assert int(canvas.get_attribute("data-rows")) == n
    # the callee box of the largest callee: below the function's row, as wide as its share
    ce = e["callees"]
    k = max(range(1, len(ce["func"])), key=lambda i: (ce["incl"][i], -i) if ce["up"][i] == i else (-1, 0))
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    up = e["callers"]["up"]  # the callers' rows above the function's
    d = [0]
    for i in range(1, len(up)):
        d.append(d[i - up[i]] + 1)
    up_rows = max(d)
    y = box["y"] + 2 + (up_rows + 1) * 17 + 8
    x = box["x"] + 3
    page.mouse.move(x, y)
    tip = page.locator("#tip")
    assert tip.is_visible()
    text = tip.inner_text()
    name = page.evaluate(f"FT.data.funcs[{ce['func'][k]}]")
    assert name in text
    assert page.evaluate(f"FT.time({ce['incl'][k]})") in text and page.evaluate(f"FT.time({ce['inclc'][k]})") in text
    page.mouse.click(x, y)
    assert page.locator("#detail").get_attribute("data-func") == str(ce["func"][k])
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.evaluate(f"FT.functions.open({e['func']})")
    page.evaluate("document.getElementById('sandwich-canvas').scrollIntoView({block: 'center'})")
    page.screenshot(path=str(SHOTS / "sandwich.png"))
    bp.assert_clean()


@pytest.mark.parametrize("key", ["ops-corr", "sched-5.10-raw"])
def test_every_listed_function_has_a_sandwich(browser_page, pages, key):
    """Every function the function table lists opens a sandwich: the page's
    own (the busiest functions'), else one merged from the flame graph's
    call paths, else (every path of the function under the flame graph's
    drawing threshold) its direct callers and callees, each side one level,
    a note saying which."""
    bp, page = open_page(browser_page, pages, key)
    # each function opened and checked inside the page: a round trip per
    # function cost 20 s a trace
    got = page.evaluate("""() => {
      const own = new Set(FT.data.sandwich.map((e) => e.func)), kinds = {own: 0, flame: 0, edges: 0}, bad = [];
      for (const f of FT.data.functions.func) {
        FT.functions.open(f);
        const c = document.getElementById("sandwich-canvas");
        const flame = document.querySelectorAll("#sandwich-from-flame").length;
        const edges = document.querySelectorAll("#sandwich-from-edges").length;
        if (!c || c.getAttribute("data-func") !== String(f) || !(+c.getAttribute("data-rows") >= 1) ||
            (own.has(f) ? 1 : 0) + flame + edges !== 1) bad.push(f);
        kinds[own.has(f) ? "own" : flame ? "flame" : "edges"]++;
      }
      return {kinds, bad};
    }""")
    assert not got["bad"], got["bad"]
    assert got["kinds"]["flame"] > 0, got["kinds"]
    bp.assert_clean()
