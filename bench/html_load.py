#!/usr/bin/env python3
"""Benchmark: the HTML report of the largest fixture in headless Chromium.

Measures, for s14-v3-write-big (124k call paths) by default:
  * Python: parse time, render time, HTML size (raw and with a correction);
  * Chromium (Debian's /usr/bin/chromium, headless, fresh profile, no
    network): time from navigation to the page being ready (data parsed,
    flame graph, table and latency plot drawn), as seen by the test driver
    and as performance.now() inside the page; then the cost of the things a
    reader does: zoom (redraw), search, sort the table, switch raw/corrected.
Median of --runs page loads. Writes bench/results/html_load.json and prints a
table. Usage: .venv/bin/python bench/html_load.py [TRACE] [--runs N]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "fixtures" / "k6.1" / "s14-v3-write-big" / "trace.dat"
CHROMIUM = os.environ.get("FTFLAME_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

INTERACT = """() => {
  const t = {}, now = () => performance.now();
  let s = now(); ftflame.flame.zoomTo(1); ftflame.flame.zoomTo(0); t.flame_redraw_ms = (now() - s) / 2;
  s = now(); ftflame.flame.search('spin_lock'); t.search_ms = now() - s;
  ftflame.flame.search('');
  const th = document.querySelector('#fn-table th[data-key=calls]');
  s = now(); th.click(); t.table_sort_ms = now() - s;
  s = now(); ftflame.functions.open(ftflame.data.functions.func[0]); t.detail_open_ms = now() - s;
  ftflame.functions.close();
  if (ftflame.calibrated) { s = now(); ftflame.setMode('raw'); ftflame.setMode('corr'); t.mode_toggle_ms = (now() - s) / 2; }
  const nav = performance.getEntriesByType('navigation')[0];
  t.dom_content_loaded_ms = nav.domContentLoadedEventEnd;
  t.ready_in_page_ms = ftflame.readyMs;
  t.frames = ftflame.flame.N;
  return t;
}"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace", nargs="?", default=str(DEFAULT))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "html_load.json"))
    a = ap.parse_args()

    from ftflame import parse
    from ftflame.correct.balance import attach
    from ftflame.correct.corrections import correct
    from ftflame.model.profile import Calibration
    from ftflame.report import html

    t0 = time.perf_counter()
    prof = parse.read(a.trace)
    t_parse = time.perf_counter() - t0
    t0 = time.perf_counter()
    page = html.render(prof)
    t_render = time.perf_counter() - t0
    # a fixed hook cost, as --overhead-in 700 --overhead-out 300 gives
    corrected = attach(correct(prof, Calibration(700.0, 300.0, "command line", "fixed values (bench)")))
    t0 = time.perf_counter()
    page_c = html.render(corrected)
    t_render_c = time.perf_counter() - t0
    tmp = Path(tempfile.mkdtemp(prefix="ftflame-bench-"))
    files = {"raw": tmp / "raw.html", "corrected": tmp / "corrected.html"}
    files["raw"].write_text(page, encoding="utf-8")
    files["corrected"].write_text(page_c, encoding="utf-8")
    result = {
        "trace": a.trace, "call_paths": prof.nrows, "functions": len(prof.functions),
        "root_calls": len(prof.samples), "parse_s": round(t_parse, 3),
        "render_s": round(t_render, 3), "render_corrected_s": round(t_render_c, 3),
        "html_bytes": len(page.encode()), "html_corrected_bytes": len(page_c.encode()),
        "runs": a.runs, "browser": {},
    }

    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        for label, path in files.items():
            loads, inner = [], []
            for _ in range(a.runs):
                profile = tempfile.mkdtemp(prefix="ftflame-chromium-")
                ctx = pw.chromium.launch_persistent_context(
                    profile, executable_path=CHROMIUM, headless=True, args=ARGS,
                    viewport={"width": 1400, "height": 1000})
                blocked = []
                ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "about:", "data:"))
                          else (blocked.append(r.request.url), r.abort()))  # noqa: B023 (called within this iteration)
                pg = ctx.pages[0] if ctx.pages else ctx.new_page()
                t0 = time.perf_counter()
                pg.goto(path.as_uri())
                pg.wait_for_selector("html[data-ready]", timeout=30000)
                loads.append((time.perf_counter() - t0) * 1000)
                inner.append(pg.evaluate(INTERACT))
                ctx.close()
                assert not blocked, blocked
            keys = inner[0].keys()
            result["browser"][label] = {
                "load_to_ready_ms_median": round(statistics.median(loads), 1),
                "load_to_ready_ms_all": [round(x, 1) for x in loads],
                **{k: round(statistics.median(r[k] for r in inner), 2) for k in keys},
            }
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{Path(a.trace).parent.name}: {result['call_paths']:,} call paths, "
          f"{result['functions']:,} functions, {result['root_calls']:,} root calls")
    print(f"  parse {t_parse:.2f} s, render {t_render:.2f} s ({result['html_bytes']:,} bytes), "
          f"with corrections {t_render_c:.2f} s ({result['html_corrected_bytes']:,} bytes)")
    for label, b in result["browser"].items():
        extra = "".join(f", {k} {v}" for k, v in b.items()
                        if k.endswith("_ms") and k not in ("load_to_ready_ms_median",))
        print(f"  chromium {label}: navigation to ready {b['load_to_ready_ms_median']} ms (median of "
              f"{a.runs}){extra}, {b['frames']} frames")
    print(f"  wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
