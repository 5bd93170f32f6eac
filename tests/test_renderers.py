"""Renderer contracts: text fits 80 columns and a mail, folded is
FlameGraph's format, JSON carries the ftflame/1 fields and matches the tree."""
from __future__ import annotations

import json

import pytest

from conftest import FIXTURE_DATS, SAMPLE, fixture, fixture_id, profile_of
from ftflame.report import RENDERERS, format_for_path


@pytest.mark.parametrize("path", FIXTURE_DATS + [SAMPLE], ids=lambda p: fixture_id(p) if "fixtures" in p else "sample")
def test_text_fits_80_columns_and_a_mail(path):
    text = RENDERERS["txt"].render(profile_of(path))
    long = [line for line in text.splitlines() if len(line) > 80]
    assert long == []
    assert len(text.encode()) < 60_000
    assert text.isascii()


def test_text_names_anomalies():
    text = RENDERERS["txt"].render(profile_of(fixture("k6.1/s10-lost/trace.dat")))
    assert "LOST EVENTS" in text and "CPU0" in text


def test_folded_format_and_total():
    p = profile_of(SAMPLE)
    lines = RENDERERS["folded"].render(p).splitlines()
    total = 0
    for line in lines:
        stack, n = line.rsplit(" ", 1)
        assert n.isdigit() and int(n) > 0
        assert " " not in stack and stack
        total += int(n)
    excl = p.col("excl")
    assert total == int(excl[excl > 0].sum())


def test_json_contract():
    p = profile_of(SAMPLE)
    doc = json.loads(RENDERERS["json"].render(p))
    assert doc["schema"] == "ftflame/1"
    f = doc["functions"][0]
    for key in ("name", "calls", "incl_ns", "excl_ns", "incl_corr_ns", "excl_corr_ns"):
        assert key in f
    for key in ("sum", "min", "max", "mean", "p50", "p90", "p99"):
        assert key in f["incl_ns"] and key in f["excl_ns"]
    st = f["incl_ns"]
    assert st["min"] <= st["p50"] <= st["p90"] <= st["p99"] <= st["max"]
    assert doc["calibration"]["applied"] is False
    assert doc["trace"]["kernel"] and doc["trace"]["clock"] in ("local", "global")
    assert "lost_events_per_cpu" in doc["trace"] and "incomplete_calls" in doc["trace"]

    def walk(n):
        kids = n["children"]
        assert n["incl_ns"]["sum"] >= 0
        return n["calls"] + sum(walk(k) for k in kids)

    assert sum(walk(n) for n in doc["tree"]) == p.counters["exits"]
    assert sum(f["calls"] for f in doc["functions"]) == p.counters["exits"]
    assert len(doc["root_calls"]) == len(p.samples)


def test_percentiles_within_stated_resolution():
    """Histogram percentiles are bucket midpoints: within 1/32 of the truth."""
    import numpy as np

    from ftflame.model.profile import HIST_RESOLUTION

    p = profile_of(SAMPLE)
    root = max(p.roots, key=lambda r: p.col("calls")[r])
    durs = np.sort(p.scol("dur")[p.scol("node") == root])
    assert len(durs) == p.col("calls")[root] > 100
    pct = p.node_percentiles[0][root]
    for j, q in enumerate((50, 90, 99)):
        exact = durs[max(int(np.ceil(len(durs) * q / 100)) - 1, 0)]
        assert abs(pct[j] - exact) <= exact * HIST_RESOLUTION / 2 + 1


def test_format_for_path():
    assert format_for_path("a.json") == "json"
    assert format_for_path("a.TXT") == "txt"
    assert format_for_path("a.folded") == "folded"
    assert format_for_path("a.zzz") is None


def test_text_report_computes_no_call_path_statistics():
    """The text report prints functions, not call paths: the node table's
    corrected statistics and percentiles (22 MB for 125k call paths) are
    computed only when an output asks for them, and then the same."""
    from ftflame.cli import build_parser, correction_options
    from ftflame.correct import corrections
    from ftflame.correct.stage import correct_for_report
    from ftflame.parse import read

    args = build_parser().parse_args(["report", SAMPLE])
    # read afresh: profile_of's shared Profile may hold views other tests made
    p = correct_for_report(read(SAMPLE), SAMPLE, correction_options(args))
    assert p.corrected is not None
    RENDERERS["txt"].render(p)
    assert "node_percentiles" not in p.__dict__
    nodes = corrections.corrected_stats(p)["nodes", "incl"]  # asked for: computed now
    assert len(nodes[0][0]) == p.nrows and "node_percentiles" in p.__dict__


def test_text_call_tree_makes_no_whole_tree_columns():
    """The text report's call tree shows ~100 of the call paths: its means
    are computed for the rows it shows (their extremes, for the column's
    precision, a chunk at a time) and the node columns read as stored, no
    whole-tree int64 copies or mean columns (6 of them, 8 MiB for 178k call
    paths, kept alive by the walk's closure until the next garbage
    collection). Before: kept 5.4 columns, peaked at 7.4 on this trace."""
    import tracemalloc

    from ftflame.cli import build_parser, correction_options
    from ftflame.correct.stage import correct_for_report
    from ftflame.parse import read
    from ftflame.report import text

    path = fixture("k6.1/s10-lost/trace.dat")  # 6,142 call paths
    args = build_parser().parse_args(["report", path])
    p = correct_for_report(read(path), path, correction_options(args))
    want = text.call_tree(p)  # the Profile's cached views made before
    tracemalloc.start()
    try:
        got = text.call_tree(p)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == want
    kept, peak = kept / (8 * p.nrows), peak / (8 * p.nrows)
    assert kept < 1.5, f"the call tree keeps {kept:.1f} whole-tree columns"
    assert peak < 5.0, f"the call tree peaks at {peak:.1f} whole-tree columns"
