"""The other graphical outputs: speedscope (validated against the schema in
speedscope's npm package), the standalone SVG, and the folded output rendered
by inferno-flamegraph."""
from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from ftflame.report import folded, speedscope, svg
from helpers.htmlfix import DEPTH3, NULLCALLS, WRITE4K, corrected, inferno_flamegraph, load, speedscope_schema
from helpers.rerender import render_in_fresh_process


@pytest.fixture(scope="module")
def write4k():
    return load(WRITE4K)


def check_evented(prof: dict, nframes: int):
    """What the schema cannot say: events balance and nest, time never goes back."""
    stack, last = [], prof["startValue"]
    for e in prof["events"]:
        assert 0 <= e["frame"] < nframes
        assert e["at"] >= last, "events in time order"
        last = e["at"]
        if e["type"] == "O":
            stack.append(e["frame"])
        else:
            assert stack and stack.pop() == e["frame"], "close matches the innermost open frame"
    assert stack == []
    assert last <= prof["endValue"]


@pytest.mark.parametrize("trace", [NULLCALLS, DEPTH3], ids=["nullcalls", "depth3"])
def test_speedscope_validates_against_schema(trace):
    """Validation is slow in pure Python (anyOf per event), so it runs on two
    small real traces; the structure checks below run on a bigger one."""
    import jsonschema

    schema = json.loads(speedscope_schema().read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    p = load(trace)
    for q in (p, corrected(p, 700.0, 300.0)):
        doc = json.loads(speedscope.render(q))
        jsonschema.validate(doc, schema)
        n = len(doc["shared"]["frames"])
        for prof in doc["profiles"]:
            check_evented(prof, n)


def test_speedscope_events_nest(write4k):
    for q in (write4k, corrected(write4k, 700.0, 300.0)):
        doc = json.loads(speedscope.render(q))
        assert doc["$schema"] == speedscope.SCHEMA_URL
        n = len(doc["shared"]["frames"])
        for prof in doc["profiles"]:
            assert prof["type"] == "evented" and prof["unit"] == "nanoseconds"
            check_evented(prof, n)


def test_speedscope_call_tree_totals(write4k):
    doc = speedscope.document(write4k)
    tree = [pr for pr in doc["profiles"] if pr["name"] == "nfsd3_proc_write (call tree, raw ns)"]
    assert len(tree) == 1
    ev = tree[0]["events"]
    # the root frame lasts the root's total inclusive time
    root = [r for r in write4k.roots if write4k.name(r) == "nfsd3_proc_write"][0]
    assert ev[0]["type"] == "O" and ev[-1]["type"] == "C"
    assert ev[-1]["at"] - ev[0]["at"] == write4k.col("incl")[root]
    # per function, summed open time (outermost only) = exact per-function sum
    # over this root's paths when the function is not recursive
    frames = doc["shared"]["frames"]
    fid = [f["name"] for f in frames].index("nfsd_vfs_write")
    opened, total = [], 0
    for e in ev:
        if e["frame"] == fid:
            if e["type"] == "O":
                opened.append(e["at"])
            else:
                total += e["at"] - opened.pop()
    want = int(write4k.col("incl")[write4k.col("func") == write4k.funcs.index("nfsd_vfs_write")].sum())
    assert total == want
    # one wall-clock profile per task, with every root call
    walls = [pr for pr in doc["profiles"] if "wall clock" in pr["name"]]
    assert sum(len(pr["events"]) // 2 for pr in walls) == len(write4k.samples)
    assert len(walls) == len(np.unique(write4k.scol("pid")))


def test_svg_is_wellformed_and_interactive(write4k):
    text = svg.render(write4k)
    root = ET.fromstring(text.encode())
    ns = "{http://www.w3.org/2000/svg}"
    frames = root.findall(f".//{ns}g[@class='f']")
    assert 50 < len(frames) <= svg.MAX_FRAMES * 2 + 10
    assert root.find(f".//{ns}script") is not None
    assert all(f.find(f"{ns}title") is not None for f in frames)
    assert "RAW times" in text
    widths = {f.get("id"): float(f.find(f"{ns}rect").get("width")) for f in frames}
    assert widths["f0"] == pytest.approx(svg.WIDTH)
    assert render_in_fresh_process("svg", WRITE4K) == text  # deterministic across processes
    assert "corrected times" in svg.render(corrected(write4k, 700.0, 300.0))


def test_svg_colours_match_page_scheme():
    # the same FNV-1a as templates/core.js FT.hash (over UTF-16 code units)
    assert svg.fnv1a("") == 2166136261
    assert svg.fnv1a("a") == 0xE40C292C
    assert svg.color("vfs_write", "task") == svg.color("vfs_write", "task")
    assert svg.color("vfs_write", "irq") != svg.color("vfs_write", "task")


def test_folded_renders_with_inferno(write4k, tmp_path):
    tool = inferno_flamegraph()
    src = tmp_path / "x.folded"
    src.write_text(folded.render(write4k))
    out = subprocess.run([str(tool), "--title", "ftflame folded", str(src)], capture_output=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    image = out.stdout.decode()
    assert image.startswith("<?xml") and "<svg" in image
    assert "nfsd3_proc_write" in image and "nfsd_vfs_write" in image
    # inferno's total = the sum of the folded weights (integer ns)
    total = sum(int(line.rsplit(" ", 1)[1]) for line in src.read_text().splitlines())
    assert f"{total:,}".replace(",", "") in image.replace(",", "")


def test_speedscope_schema_check_is_real():
    """The schema rejects what speedscope would not load."""
    import jsonschema

    schema = json.loads(speedscope_schema().read_text())
    doc = {"$schema": speedscope.SCHEMA_URL, "shared": {"frames": [{"name": "f"}]},
           "profiles": [{"type": "evented", "name": "x", "unit": "ns", "startValue": 0,
                         "endValue": 1, "events": [{"type": "O", "frame": 0, "at": 0}]}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)
    doc["profiles"][0]["unit"] = "nanoseconds"
    jsonschema.validate(doc, schema)


def test_tiny_hand_made_profile_renders_everywhere():
    """Two functions, two root calls: nothing to merge, nothing to thin."""
    from ftflame.parse import build_events
    from ftflame.report import html

    def ev(kind, func, depth, ts, calltime=0, rettime=0):
        return (kind, 0, 10, 0, func, depth, ts, calltime, rettime, 0, 0, 0)

    p = build_events([ev("entry", "a", 0, 1000), ev("entry", "b", 1, 1100),
                      ev("exit", "b", 1, 1300, 1100, 1300), ev("exit", "a", 0, 2000, 1000, 2000),
                      ev("entry", "a", 0, 5000), ev("exit", "a", 0, 5600, 5000, 5600)])
    assert "<!DOCTYPE html>" in html.render(p)
    ET.fromstring(svg.render(p).encode())
    doc = json.loads(speedscope.render(p))
    for prof in doc["profiles"]:
        check_evented(prof, len(doc["shared"]["frames"]))
    tree = [pr for pr in doc["profiles"] if "call tree" in pr["name"]][0]
    assert [(e["type"], doc["shared"]["frames"][e["frame"]]["name"], e["at"]) for e in tree["events"]] == [
        ("O", "a", 0), ("O", "b", 0), ("C", "b", 200), ("C", "a", 1600)]
