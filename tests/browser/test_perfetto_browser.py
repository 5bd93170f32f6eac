"""The Perfetto trace in a real viewer, offline. Neither Perfetto's UI nor
its trace processor can be had here (checked 2026-11-28): the npm registry
has no package "perfetto" (404) and no UI build; the PyPI perfetto
package's TraceProcessor runs trace_processor_shell, which its wheel does
not carry (only a manifest of URLs and SHA-256s: prebuilts/manifests/
trace_processor_shell.py), fetched with curl on first use from Google's
artifact storage, which fails offline (curl exit 6); Debian 12 has no
perfetto package. So the file is parsed back with Perfetto's own protos
(tests/test_perfetto.py's read_back), turned into Chrome trace-event JSON
(complete events, the same slices) and imported by the speedscope app
(its release build from npm, from file://), whose Time Order view is a
thread's timeline: the screenshot build/screenshots/perfetto-timeline.png
shows one nfsd thread's calls, nested, over time."""
from __future__ import annotations

import json
import shutil

import pytest
from playwright.sync_api import expect

from ftflame.report import perfetto
from helpers import corpus
from helpers.htmlfix import REPO, speedscope_schema

pytestmark = pytest.mark.browser


def chrome_json(slices, tracks) -> dict:
    """Chrome trace events of the slices of the busiest thread track: "X"
    events (microseconds), its calls in the order they began."""
    busiest = max((s.track for s in slices if s.track & 0xF == perfetto.TK_THREAD),
                  key=lambda tr: sum(s.end - s.begin for s in slices if s.track == tr and s.depth == 0))
    pid = busiest >> 4
    own = sorted((s for s in slices if s.track == busiest), key=lambda s: (s.begin, s.depth))
    t0 = own[0].begin
    return {"traceEvents": [{"name": s.name, "cat": s.cat, "ph": "X", "pid": pid, "tid": pid,
                             "ts": (s.begin - t0) / 1000, "dur": (s.end - s.begin) / 1000}
                            for s in own],
            "displayTimeUnit": "ns", "otherData": {"name": tracks[busiest].name}}


def test_timeline_in_a_viewer(browser_page, tmp_path):
    pb = pytest.importorskip("test_perfetto", reason="needs the perfetto package")
    out = tmp_path / "write4k.perfetto-trace"
    p, _ = pb.convert(corpus.curated("k6.1/s01-v3-write4k/trace.dat"), str(out))
    slices, _, tracks = pb.read_back(str(out))
    doc = chrome_json(slices, tracks)
    assert any(e["name"] == "nfsd3_proc_write" for e in doc["traceEvents"])
    js = tmp_path / "write4k-timeline.json"
    js.write_text(json.dumps(doc))
    bp = browser_page()
    page = bp.page
    page.goto((speedscope_schema().parent / "index.html").as_uri())
    page.set_input_files("input[type=file]", str(js))
    pid = doc["traceEvents"][0]["pid"]
    # the toolbar names the thread on show
    expect(page.locator("body")).to_contain_text(f"pid {pid}, tid {pid}", timeout=20000)
    page.wait_for_timeout(500)
    shot = bp.shot("perfetto-timeline")
    shots = REPO / "build" / "screenshots"  # beside the page's screenshots, where a reviewer looks
    shots.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, shots / shot.name)
    bp.assert_clean()
