"""The HTML report and the SVG flame graph in a real browser (headless Debian
Chromium), on the report of a real fixture: no console error, no network
request, and the interactions a reader relies on. Screenshots go to
tests/artifacts/ (gitignored)."""
from __future__ import annotations

import re

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # conftest skips (or fails in CI) before any test runs
    expect = None

from ftflame.report import flametree, html, svg
from helpers.htmlfix import BIG, DEPTH3, ICOUNT, LOST, MIXED_OPS, WRITE4K, WRITE4K_WHOLE, corrected, load

pytestmark = pytest.mark.browser


# the whole write recording when the full corpus is here, else the curated window
# (23 calls): the latency plot's points are its root calls
MIN_POINTS = 500 if WRITE4K_WHOLE else 20


@pytest.fixture(scope="module")
def profile():
    return load(WRITE4K_WHOLE or WRITE4K)


@pytest.fixture(scope="module")
def reports(profile, tmp_path_factory):
    d = tmp_path_factory.mktemp("html")
    raw = d / "raw.html"
    raw.write_text(html.render(profile), encoding="utf-8")
    corr = d / "corrected.html"
    # the real correction and balance sheet, against a given measured mean
    from ftflame.correct.balance import attach

    corr.write_text(html.render(attach(corrected(profile, 700.0, 300.0),
                                       measured=[("nfsd3_proc_write", 500_000.0)])), encoding="utf-8")
    image = d / "flame.svg"
    image.write_text(svg.render(profile), encoding="utf-8")
    return {"raw": raw, "corr": corr, "svg": image}


def canvas_point(page, selector, x, y):
    """Viewport coordinates of (x, y) inside an element, scrolled into view."""
    box = page.locator(selector).bounding_box()
    page.evaluate(f"window.scrollBy(0, {box['y'] + y - 400})")
    box = page.locator(selector).bounding_box()
    return box["x"] + x, box["y"] + y


def canvas_click(page, selector, x, y, **kw):
    page.mouse.click(*canvas_point(page, selector, x, y), **kw)


def test_loads_clean_and_offline(browser_page, reports):
    bp = browser_page()
    page = bp.open(reports["raw"])
    assert page.title().startswith("ftflame: ")
    # header: raw figures, clearly labelled; anomaly banner present
    assert page.locator("#mode-badge").inner_text() == "RAW"
    assert "no calibration" in page.locator("#calibration").inner_text()
    assert page.locator("#mode-corr").is_disabled()
    assert "anomal" in page.locator("#anomalies").inner_text()
    # every part drew something
    assert page.evaluate("ftflame.flame.N") > 100
    assert int(page.locator("#fn-table").get_attribute("data-rows")) > 50
    assert int(page.locator("#lat-canvas").get_attribute("data-points")) > min(100, MIN_POINTS)
    assert page.locator("#balance-none").count() == 1
    # the page and the SVG colour a function alike (FNV-1a of the name)
    for name in ("nfsd_write", "irq_exit_rcu", "été"):
        assert page.evaluate("n => ftflame.hash(n)", name) == svg.fnv1a(name)
        for kind in ("task", "irq", "partial"):
            assert page.evaluate("([n, k]) => ftflame.color(n, k)", [name, kind]) == svg.color(name, kind)
    bp.shot("report-top")
    bp.shot("report-full", full_page=True)
    bp.assert_clean()


def test_click_frame_zooms_and_breadcrumb_zooms_out(browser_page, reports):
    bp = browser_page()
    page = bp.open(reports["raw"])
    width = page.evaluate("ftflame.flame.canvas.getBoundingClientRect().width")
    # the widest frame two levels below the root function
    j = page.evaluate("""() => { const f = ftflame.flame, L = f.layout(ftflame.mode);
        let best = -1; for (let i = 1; i < f.N; i++)
          if (f.kind[i] === 1 && f.parent[i] > 0 && f.parent[f.parent[i]] > 0 && f.parent[f.parent[f.parent[i]]] === 0
              && (best < 0 || L.W[i] > L.W[best])) best = i;
        return best; }""")
    name = page.evaluate(f"ftflame.flame.names[{j}]")
    before = page.evaluate(f"ftflame.flame.rectOf({j})")
    assert 0 < before["w"] < width * 0.9
    canvas_click(page, "#flame-canvas", before["x"] + before["w"] / 2, before["y"] + before["h"] / 2)
    assert page.evaluate("ftflame.flame.zoomed()") == j
    assert page.locator("#flame-canvas").get_attribute("data-zoom") == str(j)
    assert page.locator("#flame-crumbs .here").inner_text() == name
    after = page.evaluate(f"ftflame.flame.rectOf({j})")
    assert after["x"] == pytest.approx(0, abs=0.5) and after["w"] == pytest.approx(width, rel=1e-3)
    # what is under the mouse now is still the zoomed frame, drawn full width
    assert page.evaluate(f"ftflame.flame.frameAt(5, {after['y'] + 3})") == j
    # a child became wider by the zoom factor
    child = page.evaluate(f"""() => {{ const f = ftflame.flame; for (let i = {j} + 1; i < f.N; i++)
        if (f.parent[i] === {j}) return i; return -1; }}""")
    if child > 0:
        cw0 = page.evaluate(f"ftflame.flame.layout(ftflame.mode).W[{child}] / ftflame.flame.layout(ftflame.mode).W[0]")
        cw = page.evaluate(f"ftflame.flame.rectOf({child})")
        if cw:
            assert cw["w"] > cw0 * width * 1.5
    # hovering shows the tooltip with the figures
    page.mouse.move(*canvas_point(page, "#flame-canvas", 30, after["y"] + 5))
    tip = page.locator("#tip")
    assert tip.is_visible()
    assert name in tip.inner_text() and "calls" in tip.inner_text() and "p99" in tip.inner_text()
    bp.shot("flame-zoomed", "#flame-section")
    # the breadcrumb's first item zooms back out
    page.locator("#flame-crumbs a").first.click()
    assert page.evaluate("ftflame.flame.zoomed()") == 0
    assert page.locator("#flame-crumbs .here").inner_text() == "all"
    bp.assert_clean()


def test_search_highlights_and_counts(browser_page, reports, profile):
    term = "shmem"
    tree = flametree.build(profile)
    want = [i for i in range(len(tree)) if tree.kind[i] == flametree.KIND_FRAME
            and term in profile.funcs[tree.func[i]].lower()]
    assert want, "the fixture should have shmem frames"
    # expected share: matched frames not inside another matched frame
    inside = set()
    for i in want:
        a = tree.parent[i]
        while a > 0:
            if a in set(want):
                inside.add(i)
                break
            a = tree.parent[a]
    share = 100.0 * sum(tree.width[i] for i in want if i not in inside) / tree.width[0]

    bp = browser_page()
    page = bp.open(reports["raw"])
    page.fill("#flame-search", term)
    page.press("#flame-search", "Enter")
    count = page.locator("#flame-search-count")
    assert int(count.get_attribute("data-frames")) == len(want)
    assert float(count.get_attribute("data-percent")) == pytest.approx(share, abs=1e-3)
    assert f"{len(want):,} frames" in count.inner_text() and "% of raw time" in count.inner_text()
    # the highlight colour is really on the canvas
    magenta = page.evaluate("""() => { const c = document.getElementById('flame-canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] === 224 && d[i+1] === 64 && d[i+2] === 251) n++;
        return n; }""")
    assert magenta > 50
    bp.shot("flame-search", "#flame-section")
    # a /regex/ matches exactly; clearing removes the highlight
    page.fill("#flame-search", "/^shmem_write_begin$/")
    page.press("#flame-search", "Enter")
    exact = [i for i in want if profile.funcs[tree.func[i]] == "shmem_write_begin"]
    assert int(count.get_attribute("data-frames")) == len(exact)
    page.fill("#flame-search", "")
    page.press("#flame-search", "Enter")
    assert count.get_attribute("data-frames") is None
    bp.assert_clean()


def _column(page, index):
    return page.eval_on_selector_all(f"#fn-table tbody tr td:nth-child({index + 1})",
                                     "tds => tds.map(td => td.textContent)")


def _num(text):
    return float(text.replace(",", "").replace("\u2248", ""))


def test_table_sorts_on_every_column_and_filters(browser_page, reports):
    bp = browser_page()
    page = bp.open(reports["raw"])
    headers = page.locator("#fn-table th.sortable")
    n = headers.count()
    assert n >= 10
    for k in range(n):
        key = headers.nth(k).get_attribute("data-key")
        headers.nth(k).click()
        first = headers.nth(k).get_attribute("aria-sort")
        vals = _column(page, k)
        if key == "off" and page.evaluate("ftflame.data.functions.off === null"):
            # no sched_switch events: off-CPU time unknown, "–" on every row
            assert set(vals) == {"\u2013"}
            continue
        conv = (lambda s: s) if key == "name" else _num
        seq = [conv(v) for v in vals]
        if first == "descending":
            assert seq == sorted(seq, reverse=True), key
        else:
            assert first == "ascending" and seq == sorted(seq), key
        headers.nth(k).click()
        second = headers.nth(k).get_attribute("aria-sort")
        assert second != first
        seq = [conv(v) for v in _column(page, k)]
        assert seq == sorted(seq, reverse=(second == "descending")), key
    # Calls: check against the data, not only the order
    page.locator("#fn-table th[data-key=calls]").click()
    if page.locator("#fn-table th[data-key=calls]").get_attribute("aria-sort") != "descending":
        page.locator("#fn-table th[data-key=calls]").click()
    top_calls = page.evaluate("Math.max(...ftflame.data.functions.calls)")
    assert _num(_column(page, 1)[0]) == top_calls
    # filter
    page.fill("#fn-filter", "nfsd")
    expect(page.locator("#fn-count")).to_contain_text(" of ")
    names = _column(page, 0)
    assert names and all("nfsd" in x.lower() for x in names)
    bp.shot("function-table", "#functions-section", timeout=20000)
    bp.assert_clean()


def test_toggle_raw_corrected_changes_figures(browser_page, reports):
    bp = browser_page()
    page = bp.open(reports["corr"])
    assert page.locator("#mode-badge").inner_text() == "CORRECTED"
    assert "O" in page.locator("#calibration").inner_text() and "700.0 ns" in page.locator("#calibration").inner_text()
    first_name = _column(page, 0)[0]
    corr_total = _column(page, 2)[0]
    corr_header = page.locator("#fn-table th[data-key=incl]").inner_text()
    page.click("#mode-raw")
    assert page.locator("#mode-badge").inner_text() == "RAW"
    # same row (sorted by total) now shows the raw total, which is larger
    row = page.locator(f"#fn-table tbody tr:has(td.name:text-is('{first_name}'))").first
    raw_total = row.locator("td").nth(2).inner_text()
    assert raw_total != corr_total and _num(raw_total) > _num(corr_total)
    assert "raw" in page.locator("#fn-table th[data-key=incl]").inner_text() and "corrected" in corr_header
    # the flame graph widths follow the switch too
    w_raw = page.evaluate("ftflame.flame.layout('raw').W[0]")
    w_corr = page.evaluate("ftflame.flame.layout('corr').W[0]")
    assert w_corr < w_raw
    page.click("#mode-corr")
    assert _column(page, 2)[0] == corr_total
    bp.shot("report-corrected")
    # the balance sheet, when the Profile has one
    table = page.locator("#balance-table")
    assert table.locator(".balance-root").count() == 1
    text = table.inner_text()
    assert "nfsd3_proc_write" in text and "accounted %" in text and "given (--measured)" in text
    assert "500.00" in text  # the measured mean, in microseconds
    # readable: no JSON in a cell, the sheet fits a 1400 px window
    assert "{" not in text and "[" not in text
    assert page.evaluate("document.getElementById('balance-section').scrollWidth") <= 1400
    bp.shot("balance-sheet", "#balance-section")
    bp.assert_clean()


def test_function_detail(browser_page, reports, profile):
    bp = browser_page()
    page = bp.open(reports["corr"])
    page.locator("#fn-table tbody tr:has(td.name:text-is('nfsd_vfs_write'))").first.click()
    panel = page.locator("#detail")
    assert panel.is_visible()
    assert panel.locator("h2").inner_text() == "nfsd_vfs_write"
    stats = panel.locator("#detail-stats").inner_text()
    assert "raw" in stats and "corrected" in stats and "p99" in stats
    callers = panel.locator("#detail-callers tr")
    callees = panel.locator("#detail-callees tr")
    assert callers.count() >= 2 and callees.count() >= 2
    assert "nfsd_write" in panel.locator("#detail-callers").inner_text()
    # the histogram drew bars
    painted = page.evaluate("""() => { const c = document.getElementById('detail-hist');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] === 79 && d[i+1] === 118 && d[i+2] === 163) n++;
        return n; }""")
    assert painted > 100
    bp.shot("function-detail", "#detail")
    # a callee link opens that function
    link = panel.locator("#detail-callees a").first
    callee = link.inner_text()
    link.click()
    assert panel.locator("h2").inner_text() == callee
    page.keyboard.press("Escape")
    assert not panel.is_visible()
    bp.assert_clean()


def test_latency_plot_zoom(browser_page, reports):
    bp = browser_page()
    page = bp.open(reports["raw"])
    canvas = page.locator("#lat-canvas")
    canvas.scroll_into_view_if_needed()
    total = int(canvas.get_attribute("data-points"))
    assert total > MIN_POINTS
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + 100, box["y"] + 20)
    page.mouse.down()
    page.mouse.move(box["x"] + 300, box["y"] + 200, steps=4)
    page.mouse.up()
    zoomed = int(canvas.get_attribute("data-points"))
    assert 0 < zoomed < total
    assert "plotted in view" in page.locator("#lat-stats").inner_text()
    bp.shot("latency-zoomed", "#latency-section")
    canvas.dblclick(position={"x": 200, "y": 100})
    assert int(canvas.get_attribute("data-points")) == total
    bp.assert_clean()


def test_slowest_call_opens_from_its_latency_point_and_its_row(browser_page, tmp_path):
    """Operations under svc_process: the plot's slowest point, clicked, draws
    that root call's own tree (the JSON's slowest call, the latency
    maximum); so does the first row of the slowest calls; an operation row
    selects its group in the plot."""
    p = load(MIXED_OPS)
    page_file = tmp_path / "ops.html"
    page_file.write_text(html.render(p), encoding="utf-8")
    bp = browser_page()
    page = bp.open(page_file)
    S = page.evaluate("FT.data.samples")
    page.select_option("#lat-root", "-1")  # every operation's points
    k = max(range(len(S["dur"])), key=lambda i: S["dur"][i])
    assert S["dur"][k] == int(p.scol("dur").max())
    x, y = page.evaluate(f"FT.latency.points().filter(function (q) {{ return q[2] === {k}; }})[0].slice(0, 2)")
    canvas_click(page, "#lat-canvas", x, y)
    canvas = page.locator("#call-canvas")
    assert int(canvas.get_attribute("data-sample")) == S["sample"][k]
    assert int(canvas.get_attribute("data-calls")) > 10
    assert "svc_process: " in page.locator("#call-note").inner_text()
    bp.shot("slowest-call-tree", "#calls-section")
    page.locator("#slowest tbody tr").first.click()
    assert int(canvas.get_attribute("data-sample")) == S["sample"][k]  # the slowest row: the same call
    op = page.locator("#ops tbody tr").nth(1)
    label = op.get_attribute("data-operation")
    op.click()
    assert page.evaluate("FT.data.samples.roots[+document.getElementById('lat-root').value]") == "svc_process: " + label
    bp.assert_clean()


def test_icicle_orientation(browser_page, reports):
    bp = browser_page()
    page = bp.open(reports["raw"])
    root_flame = page.evaluate("ftflame.flame.rectOf(0)")
    page.click("#orient-icicle")
    root_icicle = page.evaluate("ftflame.flame.rectOf(0)")
    assert root_icicle["y"] < root_flame["y"]
    bp.assert_clean()


def test_svg_flame_graph_standalone(browser_page, reports):
    bp = browser_page()
    page = bp.page
    page.goto(reports["svg"].resolve().as_uri())
    expect(page.locator("svg")).to_have_attribute("data-ready", "1")
    n = page.locator("g.f").count()
    assert n > 50
    # click a frame holding between 10% and 60% of the graph: it zooms to full width
    target = page.evaluate("""() => { const total = +document.querySelector('#f0 rect').getAttribute('width');
        let best = null, bw = 0;
        document.querySelectorAll('g.f').forEach(g => { const w = +g.querySelector('rect').getAttribute('width');
          if (w > bw && w < 0.6 * total && w > 0.1 * total) { bw = w; best = g; } });
        return best.id; }""")
    page.locator(f"#{target} rect").click()
    width = float(page.evaluate(f"document.querySelector('#{target} rect').getAttribute('width')"))
    total = float(page.evaluate("document.querySelector('#f0 rect').getAttribute('width')"))
    assert width == pytest.approx(total, rel=1e-3)
    assert page.evaluate("document.documentElement.getAttribute('data-zoom')") == target
    bp.shot("svg-zoomed")
    page.evaluate("ftflameSearch('shmem')")
    assert int(page.evaluate("document.documentElement.getAttribute('data-matches')")) > 0
    bp.assert_clean()


def test_page_contains_no_remote_reference(reports):
    text = reports["raw"].read_text(encoding="utf-8")
    # the only URL-like strings allowed are XML namespaces used by createElementNS
    urls = set(re.findall(r"https?://[^\s\"')<>]+", text))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", text)


@pytest.mark.parametrize("trace", [BIG, LOST, ICOUNT, DEPTH3], ids=["big", "lost", "icount", "depth3"])
def test_smoke_on_other_fixtures(browser_page, tmp_path, trace):
    """Each kind of trace loads clean and reacts: the largest (124k call paths,
    must stay fast), lost events, off-CPU frames, a depth-limited trace."""
    p = load(trace)
    page_file = tmp_path / "r.html"
    text = html.render(p)
    page_file.write_text(text, encoding="utf-8")
    assert len(text.encode()) < 1_000_000
    bp = browser_page()
    page = bp.open(page_file)
    ready_ms = page.evaluate("ftflame.readyMs")
    assert ready_ms < 10_000, f"page took {ready_ms:.0f} ms to get ready"
    # zoom into the widest frame under the root, search, open a detail, all root functions
    j = page.evaluate("ftflame.flame.parent.indexOf(0, 1)")
    if j > 0:
        page.evaluate(f"ftflame.flame.zoomTo({j})")
        assert page.locator("#flame-crumbs .here").inner_text() == page.evaluate(f"ftflame.flame.names[{j}]")
    page.fill("#flame-search", "irq")
    page.press("#flame-search", "Enter")
    page.locator("#fn-table tbody tr").first.click()
    assert page.locator("#detail").is_visible()
    page.keyboard.press("Escape")
    if page.locator("#lat-root option").count() > 1:
        page.select_option("#lat-root", "-1")
        assert int(page.locator("#lat-canvas").get_attribute("data-points")) > 0
    if trace == ICOUNT:
        assert page.evaluate("ftflame.data.flame.offcpu.length") > 0
    if trace == LOST:
        assert "LOST EVENTS" in page.locator("#anomalies").inner_text()
    bp.shot(f"smoke-{trace.parent.name}")
    bp.assert_clean()


def test_speedscope_app_opens_our_file(browser_page, tmp_path):
    """Beyond the schema: the speedscope app itself (the release build in its
    npm package, opened from file://, offline) imports the file and draws the
    call-tree profile."""
    from ftflame.report import speedscope
    from helpers.htmlfix import speedscope_schema

    app = speedscope_schema().parent / "index.html"
    out = tmp_path / "write4k.speedscope.json"
    out.write_text(speedscope.render(load(WRITE4K)))
    bp = browser_page()
    page = bp.page
    page.goto(app.as_uri())
    page.set_input_files("input[type=file]", str(out))
    # the toolbar names the profile on show: the first, our call tree
    expect(page.locator("body")).to_contain_text("nfsd3_proc_write (call tree, raw ns) (1/", timeout=20000)
    assert "ftflame: " in page.title()
    bp.shot("speedscope-app")
    # speedscope logs its progress and WebGL notes; errors would fail here
    bp.assert_clean()


def test_speedscope_app_shows_a_tasks_calls(browser_page, tmp_path):
    """The CLI's speedscope file (every call on its task's timeline, from
    the call stream) in the speedscope app: a task's profile opens in its
    Time Order view with the calls nested under the root calls. The file is
    the CLI's with only activeProfileIndex set to the busiest task's."""
    import json
    import subprocess
    import sys

    from helpers.htmlfix import speedscope_schema

    out = tmp_path / "write4k.speedscope.json"
    run = subprocess.run([sys.executable, "-m", "ftflame.cli", "report", str(WRITE4K), "-o", str(out), "-q"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    doc = json.loads(out.read_text())
    tasks = [i for i, pr in enumerate(doc["profiles"]) if pr["name"].startswith("calls of pid ")]
    busiest = max(tasks, key=lambda i: len(doc["profiles"][i]["events"]))
    doc["activeProfileIndex"] = busiest
    out.write_text(json.dumps(doc))
    bp = browser_page()
    page = bp.page
    page.goto((speedscope_schema().parent / "index.html").as_uri())
    page.set_input_files("input[type=file]", str(out))
    title = doc["profiles"][busiest]["name"]
    expect(page.locator("body")).to_contain_text(f"{title} ({busiest + 1}/", timeout=20000)
    page.wait_for_timeout(500)
    bp.shot("speedscope-task-timeline")
    bp.assert_clean()
