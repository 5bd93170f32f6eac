"""The JSON written by format_rows (tree, functions, root calls) is
byte for byte what the dict and per-node Python renderer wrote
(tests/helpers/jsonref.py), corrected or not, including the values that take the
Python fallbacks; and the faster histogram merge and percentiles give what
the general code gives."""
from __future__ import annotations

import json
import os
import tempfile

import numpy as np
import pytest

from conftest import SAMPLE, fixture, profile_of
from ftflame.cli import build_parser, correction_options
from ftflame.correct.stage import correct_for_report
from ftflame.model import profile as profile_mod
from ftflame.model.profile import Corrected
from ftflame.parse import build_events
from ftflame.report import RENDERERS, common, jsonout
from ftflame.report.common import RowsToFile
from helpers import jsonref, jsontree, leafroots
from helpers.events import HERE, load

CASES = sorted(f[: -len(".events")] for f in os.listdir(HERE) if f.endswith(".events"))
SMALL_FIXTURES = ["k6.1/s09-depth3/trace.dat", "k6.1/s13-calib-null/trace-dispatch-full.dat",
                  "k6.1/s06-calib-pair/trace-root.dat",
                  # negative raw self-time minimums: "-0.0" corrected minimums
                  "k6.1/s15-icount-calib/trace-full-nosleep.dat"]


def corrected(p, path, *opts):
    args = build_parser().parse_args(["report", path, "-F", "json", *opts])
    return correct_for_report(p, path, correction_options(args))


def written(p) -> str:
    """The document as jsonout.write streams it into a file."""
    with tempfile.TemporaryFile() as f:
        RENDERERS["json"].write(p, None, f)
        f.flush()
        f.seek(0)
        return f.read().decode("utf-8")


def same_tree(p):
    """The tree and the whole document as the reference writes them, as a
    string and streamed into a file."""
    fast = jsontree.tree_json(p)
    assert fast == jsonref.tree_json(p)
    doc = RENDERERS["json"].render(p)
    assert doc == jsonref.render(p, jsonref.head_of(doc))  # trace, calibration: test_binding.py
    assert written(p) == doc
    return fast


@pytest.mark.parametrize("case", CASES)
def test_hand_made_inputs(case):
    p = load(case)
    same_tree(p)
    same_tree(corrected(p, case, "--overhead-in", "150", "--overhead-out", "90"))


@pytest.mark.parametrize("rel", SMALL_FIXTURES)
def test_fixtures_raw_and_corrected(rel):
    p = profile_of(fixture(rel))
    same_tree(p)
    c = corrected(p, fixture(rel))
    assert c.corrected is not None
    same_tree(c)
    same_tree(corrected(p, fixture(rel), "--irqs", "include", "--overhead-in", "400"))


def test_exact_root_rows_are_not_approx():
    """Root paths whose every call has a corrected duration carry exact
    figures (no "approx"), as before."""
    p = corrected(profile_of(SAMPLE), SAMPLE)
    tree = json.loads(same_tree(p))
    assert any("approx" not in root["incl_corr_ns"] for root in tree)


def test_whole_document_parses_and_keeps_its_members():
    p = corrected(profile_of(SAMPLE), SAMPLE)
    text = RENDERERS["json"].render(p)
    assert text.endswith("\n")
    doc = json.loads(text)
    assert list(doc) == ["schema", "tool", "trace", "calibration", "functions", "tree", "root_calls",
                         "operations", "root_latency", "slowest", "hot", "balance"]
    assert doc["tree"] == json.loads(jsontree.tree_json(p))


def _nearest_rank(values) -> dict:
    v = sorted(values)
    return {**{f"p{q}": v[max(-(-len(v) * q // 100) - 1, 0)] for q in (50, 90, 99)}, "max": v[-1]}


@pytest.mark.parametrize("rel,opts", [("k6.1/s17-mixed-ops/trace.dat", ()),  # a dispatcher's operations
                                      ("k6.1/s10-lost/trace.dat", ()),  # gap root calls
                                      ("k6.1/s01-v3-write4k/trace.dat", ("--irqs", "include"))])
def test_root_latency_rows_are_the_root_calls_grouped(rel, opts):
    """The text report's first table (latency per root function, per operation under a
    dispatcher) is in the JSON too (root_latency, once only in the text), and its rows are
    root_calls[] grouped: calls, gap calls and the nearest-rank figures of the raw and the
    corrected durations, recomputed here from the root calls alone."""
    doc = json.loads(RENDERERS["json"].render(corrected(profile_of(fixture(rel)), fixture(rel), *opts)))
    rows, calls = doc["root_latency"], doc["root_calls"]
    assert rows and sum(r["calls"] for r in rows) == len(calls)
    for r in rows:
        mine = [c for c in calls if c["name"] == r["root"] and c["irq"] == r["irq"]
                and (r["operation"] is None or c["operation"] == r["operation"]
                     or (c["operation"] is None and r["operation"] == "(no procedure)"))]
        assert len(mine) == r["calls"], r
        assert sum(c["gap"] for c in mine) == r["gap_calls"]
        assert {k: r["dur_ns"][k] for k in ("p50", "p90", "p99", "max")} == _nearest_rank(c["dur_ns"] for c in mine)
        clean = [c["dur_corr_ns"] for c in mine if not c["gap"]]
        if clean:
            want = _nearest_rank(clean)
            assert all(abs(r["dur_corr_ns"][k] - want[k]) <= 0.051 for k in want), (r, want)
        else:
            assert set(r["dur_corr_ns"].values()) == {None}


def test_gap_root_calls_nulls_written_in_c(monkeypatch):
    """A trace with gap root calls writes their missing corrected figures
    (null) with the others in C (format_rows' f1n), in the root calls, the
    slowest calls and their trees: no json.dumps per root call, per slowest
    call or per kept tree (the root calls' operation names apart). The text
    is what the per-value Python wrote."""
    from ftflame.report import callsjson

    path = fixture("k6.1/s10-lost/trace.dat")
    p = corrected(profile_of(path), path)
    gap = (p.scol("flags") & profile_mod.SAMPLE_GAP) != 0
    assert gap.any() and (~gap).any()
    doc = json.loads(written(p))
    corr = np.asarray(p.corrected.sample_dur, dtype=np.float64)
    assert [c["dur_corr_ns"] for c in doc["root_calls"]] == \
        [None if g else round(x, 1) for g, x in zip(gap.tolist(), corr.tolist())]
    assert any(s["dur_corr_ns"] is None for s in doc["slowest"])
    assert any(None in s["tree"]["incl_corr_ns"] for s in doc["slowest"] if s["tree"])
    dumps, calls = json.dumps, []

    def counted(*a, **k):
        calls.append(a)
        return dumps(*a, **k)

    monkeypatch.setattr(json, "dumps", counted)
    with tempfile.TemporaryFile() as f, RowsToFile(f) as out:
        jsonout._write_root_calls(out, p, jsonout.ROOT_CALLS_CHUNK_ROWS)
    assert len(calls) <= len(p.operations)
    calls.clear()
    assert json.loads("".join(callsjson.slowest_json_parts(p))) == doc["slowest"]
    assert calls == []


def test_empty_profile():
    empty = build_events([])
    assert empty.nrows == 0
    same_tree(empty)
    doc = json.loads(RENDERERS["json"].render(empty))
    assert doc["tree"] == doc["functions"] == doc["root_calls"] == []


def extreme(p):
    """Sums past 2**53, means past REPR_SAFE, NaN and infinite corrected
    figures and root call durations: what the C formatter cannot write
    like Python."""
    incl, excl = p.col("incl").copy(), p.col("excl").copy()
    incl[0] = 2**60 + 12345
    excl[0] = -(2**55) - 3
    incl[-1] = 10**15 * max(int(p.col("calls")[-1]), 1)
    q = p.replace(nodes=p.nodes.replaced(incl=incl, excl=excl))
    c = p.corrected
    incl = c.incl.copy()
    incl[0] = np.nan
    incl[-1] = 3e17
    excl = c.excl.copy()
    excl[len(excl) // 2] = -np.inf
    dur = c.sample_dur.copy()
    dur[0], dur[-1] = np.nan, 2e15
    overhead = c.overhead.copy()
    overhead[1] = np.inf
    return q.replace(corrected=Corrected(**{**c.__dict__, "incl": incl, "excl": excl, "sample_dur": dur,
                                             "overhead": overhead}))


def test_values_past_the_fast_paths():
    p = corrected(profile_of(SAMPLE), SAMPLE)
    same_tree(extreme(p))


def test_python_fallback_columns(monkeypatch):
    """REPR_SAFE 0: every mean and exact figure takes the Python path, and
    the text is still the same."""
    p = corrected(profile_of(SAMPLE), SAMPLE)
    want = same_tree(p), RENDERERS["json"].render(p)
    monkeypatch.setattr(jsonout, "REPR_SAFE", 0.0)
    assert (jsontree.tree_json(p), RENDERERS["json"].render(p)) == want


@pytest.mark.parametrize("path", [SAMPLE] + [fixture(r) for r in SMALL_FIXTURES])
def test_histogram_group_in_c_equals_numpy(path):
    """Histograms.group (C) gives what a sort of every entry gives, for the
    node histograms (uint32 counts) and for groups of groups (uint64)."""
    p = profile_of(path)
    for h in (p.hist_incl, p.hist_excl):
        func = p.col("func")
        got = h.group(func, len(p.funcs))
        want = jsonref.group_np(h, func, len(p.funcs))
        regroup = got.group(np.arange(len(p.funcs)) % 3, 3)
        for g, w in ((got, want), (regroup, jsonref.group_np(want, np.arange(len(p.funcs)) % 3, 3))):
            for a, b in zip((g.offsets, g.buckets, g.counts), (w.offsets, w.buckets, w.counts)):
                assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("groups", [3, 50000])
def test_histogram_group_table_and_keyed_passes_equal_numpy(groups):
    """Both ways of Histograms.group, a (key x bucket) table when it is
    small (up to 2**19 cells) and a key at a time beyond, give what the sort
    gives, with counts of 0 and wide counts."""
    rng = np.random.default_rng(groups)
    rows = 60000
    lens = rng.integers(0, 6, rows)
    offsets = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    buckets = np.concatenate([np.sort(rng.choice(np.arange(40, 200), k, replace=False)) for k in lens])
    counts = rng.integers(0, 1000, int(offsets[-1]))
    keys = rng.integers(0, groups, rows)
    for cnt in (counts.astype(np.uint32), counts.astype(np.uint64) << 33):
        h = profile_mod.Histograms(offsets, buckets.astype(np.int32), cnt)
        got, want = h.group(keys, groups), jsonref.group_np(h, keys, groups)
        for a, b in zip((got.offsets, got.buckets, got.counts), (want.offsets, want.buckets, want.counts)):
            assert a.dtype == b.dtype and np.array_equal(a, b)


def test_histogram_group_keeps_zero_counts_and_refuses_bad_keys():
    """A bucket a key's rows have with a count of 0 stays an entry (as the
    sort did); a key outside 0..ngroups-1 is refused, not written past."""
    h = profile_mod.Histograms(np.array([0, 2, 3, 3], dtype=np.int64), np.array([5, 9, 5], dtype=np.int32),
                               np.array([0, 4, 7], dtype=np.uint32))
    g = h.group(np.array([1, 1, 0]), 2)
    assert g.offsets.tolist() == [0, 0, 2] and g.buckets.tolist() == [5, 9] and g.counts.tolist() == [7, 4]
    with pytest.raises(ValueError, match="key"):
        h.group(np.array([0, 2, 0]), 2)


def test_bucket_midpoints_table():
    b = np.arange(profile_mod.HIST_SUB + 44 * profile_mod.HIST_SUB)
    lower = profile_mod.hist_lower(b)
    want = np.where(b < profile_mod.HIST_SUB, lower, (lower + profile_mod.hist_upper(b) - 1) // 2)
    assert np.array_equal(profile_mod.bucket_mids(len(b)), want)


QS = (0, 1, 50, 90, 99, 99.9, 100)


@pytest.mark.parametrize("path", [SAMPLE] + [fixture(r) for r in SMALL_FIXTURES])
def test_percentiles_in_c_equal_numpy(path):
    """Histograms.percentiles (C, _model.hist_percentiles) gives what the
    vectorised numpy version gives: per path (uint32 counts) and per
    function (merged, uint64 counts), clamped to the exact min/max."""
    p = profile_of(path)
    for h, lo, hi in ((p.hist_incl, p.col("incl_min"), p.col("incl_max")),
                      (p.hist_excl, np.maximum(p.col("excl_min"), 0), np.maximum(p.col("excl_max"), 0))):
        assert np.array_equal(h.percentiles(QS, lo, hi), jsonref.percentiles_np(h, QS, lo, hi))
        g = h.group(p.col("func"), len(p.funcs))
        glo, ghi = np.zeros(g.rows, dtype=np.int64), np.full(g.rows, 1 << 40, dtype=np.int64)
        assert g.counts.dtype == np.uint64
        assert np.array_equal(g.percentiles(QS, glo, ghi), jsonref.percentiles_np(g, QS, glo, ghi))


def test_percentiles_edge_rows():
    """Empty rows give 0; lo > hi gives hi (numpy's clip); one entry."""
    h = profile_mod.Histograms(np.array([0, 0, 1, 4], dtype=np.int64), np.array([20, 3, 40, 41], dtype=np.int32),
                               np.array([5, 1, 2, 7], dtype=np.uint32))
    lo = np.array([0, 0, 0], dtype=np.int64)
    for hi in (np.array([10**9] * 3, dtype=np.int64), np.array([0, 100, 50], dtype=np.int64)):
        assert np.array_equal(h.percentiles(QS, lo, hi), jsonref.percentiles_np(h, QS, lo, hi))
    lo_big = np.array([10**6] * 3, dtype=np.int64)
    assert np.array_equal(h.percentiles(QS, lo_big, lo), jsonref.percentiles_np(h, QS, lo_big, lo))
    assert h.percentiles(QS, lo, lo)[0].tolist() == [0] * len(QS)


def test_percentiles_bad_arguments_raise():
    from ftflame._model import hist_percentiles

    offs, bks = np.array([0, 2], dtype=np.int64), np.array([1, 2], dtype=np.int32)
    cnt, mids = np.array([1, 1], dtype=np.uint32), np.arange(4, dtype=np.int64)
    one = np.zeros(1, dtype=np.int64)
    assert np.frombuffer(hist_percentiles(offs, bks, cnt, mids, one, one + 9, (50,)), dtype=np.int64).tolist() == [1]
    for args in ((offs, bks, cnt, mids[:2], one, one, (50,)),          # bucket past the table
                 (offs[::-1].copy(), bks, cnt, mids, one, one, (50,)),  # offsets
                 (offs, bks, cnt.astype(np.int64), mids, one, one, (50,)),
                 (offs, bks, cnt, mids, np.zeros(2, dtype=np.int64), one, (50,))):
        with pytest.raises(ValueError):
            hist_percentiles(*args)
    with pytest.raises(TypeError):
        hist_percentiles(offs, bks, cnt, mids, one, one, ("x",))


def test_percentiles_of_rows_read_in_place():
    """Histograms.percentiles(rows=...) gives the percentiles of those rows,
    in that order (repeats too), as the table of just those rows gives them,
    reading the whole table's entries in place; a chunk's rows are checked
    (a row past the table, its offsets, its buckets), the other rows not
    looked at."""
    rng = np.random.default_rng(7)
    lens = rng.integers(0, 6, 300)
    offs = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    bks = np.concatenate([np.sort(rng.choice(60, k, replace=False)) for k in lens]).astype(np.int32)
    h = profile_mod.Histograms(offs, bks, rng.integers(1, 50, len(bks)).astype(np.uint32))
    lo = rng.integers(0, 40, h.rows).astype(np.int64)
    hi = lo + rng.integers(0, 10**6, h.rows)
    for rows in (rng.permutation(h.rows)[:97], np.array([5, 5, 0, h.rows - 1]), np.zeros(0, dtype=np.int64)):
        sub = profile_mod.Histograms(*profile_mod._take_rows(h, rows))
        want = jsonref.percentiles_np(sub, QS, lo[rows], hi[rows])
        assert np.array_equal(h.percentiles(QS, lo[rows], hi[rows], rows), want)
        assert np.array_equal(h.percentiles(QS, lo[rows], hi[rows], rows.astype(np.int32)), want)
        # fractions out of order: a row's entries walked again from its start
        qs = (99, 50, 50, 90, 0, 100)
        assert np.array_equal(h.percentiles(qs, lo[rows], hi[rows], rows),
                              jsonref.percentiles_np(sub, qs, lo[rows], hi[rows]))
    from ftflame._model import hist_percentiles

    mids, one = np.arange(64, dtype=np.int64), np.zeros(1, dtype=np.int64)
    full = next(r for r in range(h.rows) if lens[r])
    bad_bucket = bks.copy()
    bad_bucket[offs[full]] = 99
    bad_offs = offs.copy()
    bad_offs[full + 1] = len(bks) + 1
    for table, row in (((offs, bks), h.rows), ((offs, bks), -1), ((offs, bad_bucket), full), ((bad_offs, bks), full)):
        with pytest.raises(ValueError):
            hist_percentiles(*table, h.counts, mids, one, one, (50,), np.array([row], dtype=np.int64))
    other = (full + 1) % h.rows  # a bad entry in a row not asked for is not read
    hist_percentiles(offs, bad_bucket, h.counts, mids, one, one, (50,), np.array([other], dtype=np.int64))
    with pytest.raises(ValueError):  # lo and hi: one per row asked for
        hist_percentiles(offs, bks, h.counts, mids, lo[:2], hi[:2], (50,), np.array([1], dtype=np.int64))


@pytest.mark.parametrize("path", [SAMPLE] + [fixture(r) for r in SMALL_FIXTURES] +
                         [fixture("k6.1/s10-lost/trace.dat")])
def test_tree_order_in_c_equals_numpy(path):
    """_model.tree_preorder (C) orders the tree as the numpy preorder of
    sibling_order (tests/helpers/jsonref.py) does: pre-order, siblings by incl
    desc, name, row."""
    p = profile_of(path)
    pre, depth = jsonout.tree_order(p)
    want_pre, want_depth = jsonref.preorder(p.col("parent"), jsonref.sibling_order(p))
    assert np.array_equal(pre, want_pre) and np.array_equal(depth, want_depth)
    assert np.array_equal(depth, p.col("depth"))


def test_tree_order_hand_made_forest():
    """Ties broken by name then row, roots sorted too, parents after their
    children in row order, and a cycle is an error, not a hang."""
    from ftflame._model import tree_preorder

    parent = np.array([3, -1, 1, -1, 1, 1, 3], dtype=np.int64)
    incl = np.array([5, 10, 7, 20, 7, 9, 5], dtype=np.int64)
    name = np.array([2, 0, 4, 1, 3, 5, 2], dtype=np.int64)
    pre, depth = (np.frombuffer(b, dtype=np.int64) for b in tree_preorder(parent, incl, name))
    assert pre.tolist() == [3, 0, 6, 1, 5, 4, 2]
    assert depth.tolist() == [1, 0, 1, 0, 1, 1, 1]
    with pytest.raises(ValueError, match="forest"):
        tree_preorder(np.array([1, 0], dtype=np.int64), np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="out of range"):
        tree_preorder(np.array([5], dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64))
    empty = np.zeros(0, dtype=np.int64)
    assert tree_preorder(empty, empty, empty) == (b"", b"")


@pytest.mark.parametrize("rel", [None] + SMALL_FIXTURES)
def test_tree_written_in_chunks_is_the_whole_document(rel, monkeypatch):
    """jsonout.write formats the `tree` rows a chunk at a time (its gathered
    columns bounded, not 50 per call path), and the functions' and the root
    calls' (their text is not held whole: 80 MB for 100k functions): with
    chunks of 3 rows the file is byte for byte the document render() makes
    at once, including the per-column choices (means, exact rows past the
    fast paths) that a chunk must make as the whole column does."""
    path = SAMPLE if rel is None else fixture(rel)
    p = corrected(profile_of(path), path)
    chunks = []
    real = common.format_rows

    def counting(template, nrows, *fd):
        if fd:
            chunks.append(nrows)
        return real(template, nrows, *fd)

    # the chunks go through RowsToFile (report/common.py), formatted on its thread
    monkeypatch.setattr(common, "format_rows", counting)
    monkeypatch.setattr(jsonout, "TREE_CHUNK_ROWS", 3)
    monkeypatch.setattr(jsonout, "ROOT_CALLS_CHUNK_ROWS", 2)
    monkeypatch.setattr(jsonout, "FUNCTIONS_CHUNK_ROWS", 1)
    for q in ([p, extreme(p)] if rel is None else [p, profile_of(path)]):
        chunks.clear()
        assert written(q) == RENDERERS["json"].render(q)
        # the functions one at a time, the tree's rows 3 at a time, then the root calls' 2 at a time
        assert chunks[:len(q.functions)] == [1] * len(q.functions)
        chunks[:len(q.functions)] = []
        assert sum(chunks) == q.nrows + len(q.samples) and max(chunks) <= 3
        if len(q.samples) > 2:
            assert chunks[-1] <= 2 and chunks.count(2) >= len(q.samples) // 2
        if q.nrows > 3:
            assert len(chunks) > 1


@pytest.mark.parametrize("rel", SMALL_FIXTURES)
def test_tree_corrected_stats_are_made_a_chunk_at_a_time(rel, monkeypatch):
    """The tree's corrected statistics (7 float columns per kind: 14 MB for
    125k call paths) are computed for each chunk's rows as it is written,
    never for the whole node table at once; each chunk's are the whole
    table's rows (corrections.node_stats against corrected_stats)."""
    from ftflame.correct import corrections

    path = fixture(rel)
    p = corrected(profile_of(path), path)
    whole = {kind: corrections.corrected_stats(p)["nodes", kind] for kind in ("incl", "excl")}
    rows = np.random.default_rng(1).permutation(p.nrows)[: max(p.nrows // 2, 1)]
    for kind, (cols, approx, ex, vals) in whole.items():
        part, part_approx, part_ex, part_vals = corrections.node_stats(p, kind, rows)
        for a, b in zip(part, cols):
            assert np.array_equal(a, b[rows], equal_nan=True)
        assert np.array_equal(part_approx, approx[rows])
        at = {int(r): i for i, r in enumerate(rows)}
        want = {at[r]: v for r, v in zip(ex.tolist(), vals.tolist()) if r in at}
        assert dict(zip(part_ex.tolist(), part_vals.tolist())) == want and part_ex.tolist() == sorted(want)

    q = corrected(profile_of(path), path)

    def whole_table(self, level):
        raise AssertionError(f"the {level} level's corrected statistics computed whole")

    monkeypatch.setattr(jsonout, "TREE_CHUNK_ROWS", 3)
    monkeypatch.setattr(corrections._CorrectedStats, "_table",
                        lambda self, level, kind, real=corrections._CorrectedStats._table:
                        whole_table(self, level) if level == "nodes" else real(self, level, kind))
    assert written(q) == written(p)


def test_histogram_group_keeps_no_entry_long_column():
    """Histograms.group merges a key at a time (C): beside its result only
    the rows' order, no entry-long column (the numpy version's keyed
    entries and float weights were 16 bytes an entry: 11 MiB for 178k call
    paths) and no (key x bucket) table."""
    import tracemalloc

    rows, per_row, nb = 20000, 16, 16
    h = profile_mod.Histograms(np.arange(rows + 1, dtype=np.int64) * per_row,
                               np.tile(np.arange(nb, dtype=np.int32), rows),
                               np.ones(rows * per_row, dtype=np.uint32))
    keys = np.arange(rows, dtype=np.int64) % 4
    want = jsonref.group_np(h, keys, 4)
    tracemalloc.start()
    try:
        got = h.group(keys, 4)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert all(np.array_equal(getattr(want, k), getattr(got, k)) for k in ("offsets", "buckets", "counts"))
    assert int(got.counts.sum()) == rows * per_row
    # the rows' order: 8 bytes a row, half a byte an entry here
    assert peak / (rows * per_row) < 1


@pytest.mark.parametrize("rel", SMALL_FIXTURES)
def test_tree_percentiles_are_made_a_chunk_at_a_time(rel):
    """The tree's percentiles (6 int64 columns: 8 MiB for 178k call paths)
    are computed for each chunk's rows as it is written, not for the whole
    node table; a chunk's are the whole table's rows."""
    path = fixture(rel)
    q = corrected(profile_of(path), path)
    q.__dict__.pop("node_percentiles", None)  # the session's shared Profile may hold them
    written(q)
    assert "node_percentiles" not in q.__dict__
    rows = np.random.default_rng(2).permutation(q.nrows)[: max(q.nrows // 2, 1)]
    part = q.node_percentiles_at(rows)
    assert "node_percentiles" not in q.__dict__
    for a, b in zip(part, q.node_percentiles):
        assert np.array_equal(a, b[rows])
    for a, b in zip(q.node_percentiles_at(rows, ("excl",)), (q.node_percentiles[1],)):
        assert np.array_equal(a, b[rows])


def test_tree_rows_kept_while_written_are_32_bit(monkeypatch):
    """What the tree writer keeps for every row while its chunks are
    written (the pre-order and the brackets each row closes) is 4 bytes a
    call path each, not 8, and the text the same."""
    path = fixture(SMALL_FIXTURES[0])
    p = corrected(profile_of(path), path)
    want = written(p)
    seen = []
    real = jsonout._tree_rows

    def spy(p, pre, closes, *args):
        seen.append((pre.dtype, closes.dtype))
        return real(p, pre, closes, *args)

    monkeypatch.setattr(jsonout, "_tree_rows", spy)
    assert written(p) == want
    assert seen and set(seen) == {(np.dtype(np.int32), np.dtype(np.int32))}


# ---- trees deeper than the JSON readers' nesting ------------------------

def deep_text(depth: int, branches: bool = True) -> str:
    """A function_graph text trace whose tree is `depth` calls deep along
    two chains that part at depth 70 (two `tree_continued` arrays from one
    band) and meet a branching path at each band's last level."""
    lines = ["# tracer: function_graph", "#", "# CPU  DURATION                  FUNCTION CALLS",
             "# |     |   |                     |   |   |   |"]

    def call(names: list, level: int) -> None:
        """The lines of a chain of calls from `level` down, a leaf at its end."""
        for i, name in enumerate(names):
            lines.append(" 0)               |  " + "  " * (level + i) + name + "() {")
        lines.append(" 0)   0.250 us    |  " + "  " * (level + len(names)) + "leaf();")
        for i in reversed(range(len(names))):
            lines.append(" 0) %8.3f us  |  %s}" % (len(names) - i + 0.25, "  " * (level + i)))

    chain = [f"f_{i}" for i in range(depth)]
    call(chain, 0)
    if not branches:
        return "\n".join(lines) + "\n"
    call(chain[:70] + [f"g_{i}" for i in range(70, depth - 10)], 0)
    call(chain[:64] + ["h_64", "h_65"], 0)  # a second child of the first cut path
    return "\n".join(lines) + "\n"


def test_a_deep_tree_reads_back(tmp_path):
    """4,096 levels of call paths as nested JSON were more than jq and
    Python's json read: the tree is cut every TREE_NEST_LEVELS levels and
    continues by reference; joined back it is the nested tree."""
    import shutil
    import subprocess
    import sys

    from ftflame import parse

    path = tmp_path / "deep.txt"
    path.write_text(deep_text(4090))
    p = corrected(parse.read(str(path)), str(path))
    text = written(p)
    assert text == RENDERERS["json"].render(p)
    doc = json.loads(text)  # at the default recursion limit
    # a continued array per path at each band's last level with children:
    # f's 63 (depth 63 to 4031) and g's 62 (from 127)
    assert jsonout.TREE_NEST_LEVELS == 64 and len(doc["tree_continued"]) == 63 + 62
    assert [c["name"] for c in doc["tree_continued"][0]] in (["f_64", "h_64"], ["h_64", "f_64"])
    assert list(doc)[list(doc).index("tree") + 1] == "tree_continued"
    if shutil.which("jq"):
        out = subprocess.run(["jq", "-c", "[(.tree | length), (.tree_continued | length)]"], input=text,
                             capture_output=True, text=True, check=True).stdout
        assert json.loads(out) == [1, len(doc["tree_continued"])]
    # joined back, the tree is what the nested writer gives
    todo = list(doc["tree"])
    while todo:
        node = todo.pop()
        if "continued" in node:
            assert node["children"] is None
            node["children"] = doc["tree_continued"][node.pop("continued")]
        todo.extend(node["children"])
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        assert doc["tree"] == json.loads(jsonref.tree_json(p))
    finally:
        sys.setrecursionlimit(limit)


def test_a_tree_within_the_nesting_is_not_cut(tmp_path):
    from ftflame import parse

    path = tmp_path / "deep.txt"
    path.write_text(deep_text(jsonout.TREE_NEST_LEVELS - 1, branches=False))  # its leaf on the last level
    p = parse.read(str(path))
    assert "tree_continued" not in json.loads(RENDERERS["json"].render(p))
    same_tree(p)


def roots_trace(tmp_path, n: int) -> str:
    """A text trace of n one-call root functions (bench/run.py --roots)."""
    path = tmp_path / "roots.txt"
    path.write_text(leafroots.trace(leafroots.line(0, f"{1 + i % 997}.000", f"f_{i}") for i in range(n)))
    return str(path)


def counting(monkeypatch, module, name: str) -> dict:
    """Counts the calls of module.name from now on."""
    calls = {"n": 0}
    real = getattr(module, name)

    def counted(*a, **k):
        calls["n"] += 1
        return real(*a, **k)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_many_kept_slowest_calls_are_written_from_columns(tmp_path, monkeypatch):
    """100k distinct root functions keep a slowest call each: a SlowCall
    object made per call, and each tree decoded twice (for its dominant
    path, then for its JSON), were a third of the JSON report
    (docs/performance.md). Counted, not timed: the JSON makes no SlowCall
    and decodes each batch of trees once."""
    from ftflame import parse
    from ftflame.correct import operations

    n = 5000
    path = roots_trace(tmp_path, n)
    p = corrected(parse.read(path), path)
    made = counting(monkeypatch, operations, "SlowCall")
    decoded = counting(monkeypatch, operations, "call_trees")
    doc = json.loads(written(p))
    assert len(doc["slowest"]) == n and doc["slowest"][-1]["dominant_path"] == [doc["slowest"][-1]["root"]]
    assert made["n"] == 0, f"{made['n']} SlowCalls for the JSON of {n} kept calls"
    assert decoded["n"] <= n // operations.BATCH_CALLS + 1, f"{decoded['n']} decodings of {n} one-call trees"


def test_the_text_report_makes_only_the_slowest_calls_it_prints(tmp_path, monkeypatch):
    """The text prints the few slowest of the kept calls (SLOWEST_TOP):
    only those are made (and their trees decoded), not one per root
    function."""
    from ftflame import parse
    from ftflame.correct import operations

    n = 5000
    path = roots_trace(tmp_path, n)
    p = corrected(parse.read(path), path)
    from ftflame.report.textcalls import SLOWEST_TOP

    made = counting(monkeypatch, operations, "SlowCall")
    text = RENDERERS["txt"].render(p)
    assert f"the {SLOWEST_TOP} slowest of {n} kept" in text
    assert made["n"] == SLOWEST_TOP, f"{made['n']} SlowCalls for the {SLOWEST_TOP} the text prints"


def test_exact_statistics_of_many_root_functions_are_computed_as_columns(tmp_path, monkeypatch):
    """Each distinct root function's path and function has exact corrected
    statistics (every root call's corrected time is known): 100k groups of
    values, each kept as an array in a dict and made into another for its
    statistics, per table and per chunk of the tree (corrections.
    exact_values, _exact_stats). Counted, not timed: np.asarray calls while
    the JSON is written, a few per column, not one per group."""
    from ftflame import parse

    n = 5000
    path = roots_trace(tmp_path, n)
    p = corrected(parse.read(path), path)
    made = counting(monkeypatch, np, "asarray")
    doc = json.loads(written(p))
    assert doc["functions"][0]["incl_corr_ns"].get("approx") is None  # exact
    assert made["n"] < 500, f"{made['n']} np.asarray calls for {n} root functions"


def test_the_head_and_tail_are_fragments_of_the_end_chunks_only():
    """format_rows sizes a chunk's buffers by the longest row its template
    can write: the document's head (everything before the tree, the
    functions array with it: 68 MB for 100k root functions) in every
    chunk's fragments cost two such buffers per chunk, their pages faulted
    in anew each time."""
    p = load("many-calls")
    head, tail = "h" * 100_000, "t" * 100_000
    chunks = [t for t, _ in jsonout.tree_templates(p, head, tail, 1)]
    assert len(chunks) >= 3

    def longest(template) -> int:
        return max(max(map(len, it[2])) if not isinstance(it, str) and it[0] == "e" else 0 for it in template)

    assert longest(chunks[0]) > len(head) and longest(chunks[-1]) > len(tail)
    assert all(longest(t) < 1000 for t in chunks[1:-1]), [longest(t) for t in chunks]


def test_many_small_kept_trees_are_decoded_and_written_in_batches(tmp_path, monkeypatch):
    """100k distinct root functions keep 100k one-call trees: each decoded
    and formatted on its own (a dozen numpy calls each, twice) took most of
    the report's time (docs/performance.md). Counted in np.unique calls, two
    per tree before (its dominant path, its function table), now two per
    batch of BATCH_CALLS calls: a count, not a time, so that load does not
    move it."""
    from ftflame import parse
    from ftflame.correct import operations

    n = 5000
    path = roots_trace(tmp_path, n)
    p = corrected(parse.read(path), path)
    calls = {"n": 0}
    unique = np.unique

    def counted(*a, **k):
        calls["n"] += 1
        return unique(*a, **k)

    monkeypatch.setattr(np, "unique", counted)
    doc = json.loads(written(p))
    assert len(doc["slowest"]) == n and doc["slowest"][0]["tree"]["calls"] == 1
    assert calls["n"] <= 2 * (n // operations.BATCH_CALLS + 1) + 10, f"{calls['n']} np.unique calls for {n} trees"


def test_chunks_are_given_the_names_they_write_not_every_name(tmp_path, monkeypatch):
    """Every chunk of the `functions`, `tree` and `root_calls` rows handed
    the native formatter the list of every function name, which it took
    whole (a copy, each name's text) on each call: chunks x functions, most
    of the JSON report's time at 2 M distinct root functions. Counted in
    fragments taken, at chunks of 256 rows: 4,000 distinct roots took
    266,667 (47 chunks x 4,000 names, and the whole-array calls' 22 per
    function); now 86,667, the chunks' own names. The document is the same."""
    from ftflame import parse
    from ftflame.report import _rowfmt, callsjson, jsonout

    n = 4000
    path = roots_trace(tmp_path, n)
    p = corrected(parse.read(path), path)
    whole = written(p)
    for name in ("TREE_CHUNK_ROWS", "FUNCTIONS_CHUNK_ROWS", "ROOT_CALLS_CHUNK_ROWS"):
        monkeypatch.setattr(jsonout, name, 256)
    taken = {"fragments": 0}
    native = _rowfmt.format_rows

    def counted(items, nrows, *fd):
        taken["fragments"] += sum(len(it[2]) for it in items if not isinstance(it, str) and it[0] == "e")
        return native(items, nrows, *fd)

    monkeypatch.setattr(_rowfmt, "format_rows", counted)
    for module in (jsonout, callsjson):  # (a renderer that bound the native function itself)
        if module.format_rows is native:
            monkeypatch.setattr(module, "format_rows", counted)
    assert written(p) == whole
    assert taken["fragments"] < 30 * n, f"{taken['fragments']:,} fragments taken for {n:,} functions"
