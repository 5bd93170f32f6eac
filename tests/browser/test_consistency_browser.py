"""One truth in the browser (issue 11): the HTML's function table and detail
panel, read from the DOM in raw and in corrected mode, print the JSON's
figures (after the page's documented rounding) on every trace available;
and in corrected mode every flame-graph frame is as wide as the figure its
tooltip states, with its children inside it. Corrections are the real ones
(ftflame.correct.corrections), from the trace's own estimate or a calibration
made by `ftflame calibrate --from-traces` from the fixtures' recordings."""
from __future__ import annotations

import json
import re

import pytest

from conftest import FIXTURE_DATS, SAMPLE, fixture, fixture_id, profile_of
from ftflame.correct.balance import attach
from ftflame.correct.calibration import calibrate_from_traces, estimate_in_trace, for_profile
from ftflame.correct.corrections import correct
from ftflame.model.profile import Calibration
from ftflame.report import html, jsonout

pytestmark = pytest.mark.browser

FIXED = Calibration(700.0, 300.0, "command line", "fixed values given on the command line (test)")
BIG = "k6.1/s14-v3-write-big/trace.dat"
TRACES = [SAMPLE] + [p for p in FIXTURE_DATS if not p.endswith(BIG)]
UNITS = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9}


def tid(path):
    return "sample" if path == SAMPLE else fixture_id(path)


def us_close(cell: str, exact: float) -> bool:
    """A table cell (µs, FT.us: 3/2/1/0 decimals by size) equals a JSON ns figure."""
    cell = cell.strip()
    if cell == "0":
        return abs(exact) < 0.5
    num = cell.replace(",", "")
    dec = len(num.split(".")[1]) if "." in num else 0
    return abs(float(num) * 1e3 - exact) <= 0.5 * 1e3 * 10.0 ** -dec + 0.06


def time_close(cell: str, exact: float) -> bool:
    """A detail cell (FT.time: '1.234 ms') equals a JSON ns figure."""
    m = re.fullmatch(r"([-0-9,.]+) (ns|µs|ms|s)", cell.strip())
    assert m, cell
    num = m.group(1).replace(",", "")
    dec = len(num.split(".")[1]) if "." in num else 0
    scale = UNITS[m.group(2)]
    return abs(float(num) * scale - exact) <= 0.5 * scale * 10.0 ** -dec + 0.06


def report(path, tmp_path):
    p = profile_of(path)
    q = attach(correct(p, estimate_in_trace(p) or FIXED))
    out = tmp_path / "r.html"
    out.write_text(html.render(q), encoding="utf-8")
    return out, json.loads(jsonout.render(q))


ROWS_JS = """() => Array.from(document.querySelectorAll('#fn-table tbody tr')).slice(0, 12).map(tr =>
  Array.from(tr.cells).map(td => [td.innerText, td.className]))"""


def check_table(page, doc, mode):
    jf = {f["name"]: f for f in doc["functions"]}
    rows = page.evaluate(ROWS_JS)
    assert rows
    for cells in rows:
        name = cells[0][0].replace("\u26a0", "").strip()
        j = jf[name]
        calls, total, self_, avg, p50, p99, mx, _irq, off = (c[0] for c in cells[1:10])
        if mode == "raw":
            s, x = j["incl_ns"], j["excl_ns"]
            assert calls.replace(",", "") == str(j["calls"])
        else:
            s, x = j["incl_corr_ns"], j["excl_corr_ns"]
            # fewer clean calls than calls: the cell says "N of M"
            want = f"{s['calls']:,}" + (f" of {j['calls']:,}" if s["calls"] != j["calls"] else "")
            assert calls == want, (name, calls, want)
            for k, c in zip(("p50", "p99", "max"), cells[5:8]):
                assert ("approx" in c[1]) == bool(s.get("approx")), (name, k)
        for cell, exact in ((total, s["sum"]), (self_, x["sum"]), (avg, s["mean"]), (p50, s["p50"]),
                            (p99, s["p99"]), (mx, s["max"])):
            assert us_close(cell, exact), (mode, name, cell, exact)
        if j["offcpu_ns"] is None:
            assert off == "\u2013"
        else:
            assert us_close(off, j["offcpu_ns"])


def check_detail(page, doc, fid, name):
    j = next(f for f in doc["functions"] if f["name"] == name)
    page.evaluate(f"ftflame.functions.open({fid})")
    stats = page.evaluate("""() => Object.fromEntries(Array.from(document.querySelectorAll('#detail-stats tr[data-stat]'))
      .map(tr => [tr.getAttribute('data-stat'), Array.from(tr.cells).slice(1).map(td => td.innerText)]))""")
    raw, cor = j["incl_ns"], j["incl_corr_ns"]
    assert stats["calls"][0].replace(",", "") == str(j["calls"])
    assert stats["calls"][1].replace(",", "") == str(cor["calls"])
    for label, key in (("total (inclusive)", "sum"), ("mean", "mean"), ("min", "min"), ("p50", "p50"),
                       ("p90", "p90"), ("p99", "p99"), ("max", "max")):
        assert time_close(stats[label][0], raw[key]), (name, label, stats[label][0], raw[key])
        assert time_close(stats[label][1], cor[key]), (name, label, stats[label][1], cor[key])
    assert time_close(stats["self (exclusive)"][1], j["excl_corr_ns"]["sum"])
    if j["offcpu_ns"] is None:
        assert stats["off-CPU"][0] == "\u2013"
    page.evaluate("ftflame.functions.close()")


@pytest.mark.parametrize("path", TRACES, ids=tid)
def test_table_and_detail_print_the_json_figures(browser_page, tmp_path, path):
    out, doc = report(path, tmp_path)
    bp = browser_page()
    page = bp.open(out)
    assert page.locator("#mode-badge").inner_text() == "CORRECTED"
    check_table(page, doc, "corr")
    names = page.evaluate("ftflame.data.funcs")
    for fid in page.evaluate("ftflame.data.functions.func.slice(0, 3)"):
        check_detail(page, doc, fid, names[fid])
    page.click("#mode-raw")
    check_table(page, doc, "raw")
    bp.assert_clean()


FLAME_JS = """() => {
  const f = ftflame.flame, L = f.layout('corr'), W = L.W, X = L.X, out = [];
  for (let j = 1; j < f.N; j++) {
    const p = f.parent[j];
    if (W[j] > 0 && (X[j] < X[p] - 1e-6 || X[j] + W[j] > X[p] + W[p] + 1)) out.push([j, p, X[j], W[j], X[p], W[p]]);
  }
  return out;
}"""


def calibrated_write(tmp_path_factory):
    """k6.1/s01-v3-write4k corrected with a calibration from the NULL-RPC
    recordings (what `ftflame calibrate --from-traces` writes)."""
    names = ("trace-null.dat", "trace-dispatch-root.dat", "trace-dispatch-full.dat")
    doc = calibrate_from_traces(*(profile_of(fixture("k6.1/s13-calib-null/" + n)) for n in names))
    cal = Calibration(doc["o_in_ns"], doc["o_out_ns"], "file:calibration.json", doc["method"], doc)
    p = profile_of(fixture("k6.1/s01-v3-write4k/trace.dat"))
    return attach(correct(p, for_profile(cal, p)))


def test_corrected_flame_frames_are_as_wide_as_their_tooltips(browser_page, tmp_path_factory):
    q = calibrated_write(tmp_path_factory)
    out = tmp_path_factory.mktemp("flame") / "corrected.html"
    out.write_text(html.render(q), encoding="utf-8")
    bp = browser_page()
    page = bp.open(out)
    assert page.locator("#mode-badge").inner_text() == "CORRECTED"
    # children never overflow their parent (what is drawn on a frame fits inside it)
    assert page.evaluate(FLAME_JS) == []
    # hover frames wide enough to hit: the tooltip's corrected inclusive time
    # is the frame's width, in pixels, at the canvas' scale
    frames = page.evaluate("""() => { const f = ftflame.flame, out = [];
      for (let j = 1; j < f.N; j++) { const r = f.rectOf(j); if (r && r.w > 6 && f.kind[j] === 1) out.push([j, r]); }
      return out; }""")
    assert len(frames) > 20
    total = page.evaluate("ftflame.flame.layout('corr').W[0]")
    width_px = page.evaluate("ftflame.flame.rectOf(0).w")
    page.evaluate("window.scrollTo(0, 0)")
    box = page.locator("#flame-canvas").bounding_box()  # at scroll 0: page coordinates
    checked = 0
    for j, r in frames[:: max(len(frames) // 40, 1)]:
        page.evaluate(f"window.scrollTo(0, {box['y'] + r['y'] - 300})")
        b = page.locator("#flame-canvas").bounding_box()
        page.mouse.move(b["x"] + r["x"] + r["w"] / 2, b["y"] + r["y"] + 5)
        tip = page.locator("#tip")
        assert tip.is_visible(), (j, r, b, box, page.evaluate("window.scrollY"),
                                  page.evaluate(f"ftflame.flame.frameAt({r['x'] + r['w'] / 2}, {r['y'] + 5})"))
        cells = page.evaluate("""() => Array.from(document.querySelectorAll('#tip tr')).map(tr =>
          Array.from(tr.cells).map(td => td.innerText))""")
        incl = next(c for c in cells if c[0] == "inclusive")[2]
        m = re.fullmatch(r"([-0-9,.]+) (ns|µs|ms|s)", incl)
        ns = float(m.group(1).replace(",", "")) * UNITS[m.group(2)]
        px_per_ns = width_px / total
        # the drawn rectangle (CSS px) against the stated figure: within the
        # figure's printed precision and half a pixel
        num = m.group(1).replace(",", "")
        dec = len(num.split(".")[1]) if "." in num else 0
        slack = 0.5 * UNITS[m.group(2)] * 10.0 ** -dec * px_per_ns + 0.6
        assert abs(r["w"] - ns * px_per_ns) <= slack, (j, incl, r)
        checked += 1
    assert checked > 20
    bp.shot("flame-corrected", "#flame-section")
    bp.assert_clean()
