"""The C core's tables as they reach the Profile (issue 19, memory and
speed): the node table handed over without a copy, column after column, and
the builder's child-lookup hints giving the same call paths as the node map
in the situations where a hint could mislead it."""
from __future__ import annotations

import os

import numpy as np
import pytest

from conftest import fixture
from ftflame.model.profile import NODE_COLUMNS, NODE_IRQ
from ftflame.parse import _core, build_events
from helpers import leafroots
from helpers.events import parse_events

# Under one parent the children come in a different order each call, the
# same function is entered in task and in interrupt context (two paths with
# one name: a hint naming the function must still match the context), and
# a grandchild path repeats under a sibling of its parent.
SIBLINGS = """
entry 0 100 parent 0
entry 0 100 a 1
exit 0 100 a 1 110 120
entry 0 100 b 1
entry 0 100 c 2
exit 0 100 c 2 135 140
exit 0 100 b 1 130 150
exit 0 100 parent 0 100 200
entry 0 100 parent 0
entry 0 100 b 1
exit 0 100 b 1 310 320
entry 0 100 a 1
entry 0 100 c 2
exit 0 100 c 2 335 340
exit 0 100 a 1 330 350
exit 0 100 parent 0 300 400
entry 0 100 parent 0
entry 0 100 a 1 flags=0x08
exit 0 100 a 1 510 520 flags=0x08
entry 0 100 a 1
exit 0 100 a 1 530 540
entry 0 100 a 1 flags=0x08
exit 0 100 a 1 550 560 flags=0x08
exit 0 100 parent 0 500 600
"""


def paths(p) -> dict:
    """{(path, irq): (calls, inclusive ns)} of every call path."""
    flags, calls, incl = p.col("flags"), p.col("calls"), p.col("incl")
    return {(tuple(p.path(r)), bool(flags[r] & NODE_IRQ)): (int(calls[r]), int(incl[r]))
            for r in range(p.nrows)}


def test_child_paths_whatever_the_order_and_context_of_siblings():
    p = build_events(parse_events(SIBLINGS), source="siblings")
    assert paths(p) == {
        (("parent",), False): (3, 300),
        (("parent", "a"), False): (3, 10 + 20 + 10),
        (("parent", "b"), False): (2, 20 + 10),
        (("parent", "b", "c"), False): (1, 5),
        (("parent", "a", "c"), False): (1, 5),
        (("parent", "a"), True): (2, 20),
    }
    # one row per path: the hints never made a second node for a path
    assert p.nrows == 6


def test_node_table_arrives_column_after_column():
    """Each column a contiguous array (numpy gathers a strided column of a
    125k-row table over the whole table: 0.1 s of a report)."""
    p = build_events(parse_events(SIBLINGS), source="siblings")
    assert len(p.nodes) == 6
    for name in NODE_COLUMNS:
        assert p.nodes.stored(name).flags.c_contiguous, name
        assert p.col(name).flags.c_contiguous and p.col(name).dtype == np.int64, name
    # depth, the last column, is filled from the parents after the rest
    assert sorted(p.col("depth").tolist()) == [0, 1, 1, 1, 2, 2]


def test_node_table_block_reads_like_bytes():
    """The table is the core's own memory (no bytes copy): it has a length,
    a read-only buffer and compares by content, as bytes did."""
    events = parse_events(SIBLINGS)
    (one, _), (two, _) = _core.build_events(events, 20)["nodes"], _core.build_events(events, 20)["nodes"]
    assert not isinstance(one, bytes)
    # 6 rows of the dense columns: a 32-bit column 24 bytes, padded to 8-byte alignment
    dense = [d for c, d in zip(_core.NODE_COLUMNS, _core.NODE_DTYPES) if c not in _core.NODE_SPARSE]
    assert len(one) == sum((6 * np.dtype(d).itemsize + 7) // 8 * 8 for d in dense)
    assert one == two and one == bytes(two) and not (one != two)
    view = memoryview(one)
    assert view.readonly and view.nbytes == len(one)
    assert np.frombuffer(one, dtype=np.uint8).sum() == np.frombuffer(bytes(two), dtype=np.uint8).sum()
    empty, sparse = _core.build_events([], 20)["nodes"]
    assert len(empty) == 0 and empty == b""
    assert len(sparse) == len(_core.NODE_SPARSE) and all(len(r) == len(v) == 0 for r, v in sparse)


def test_sparse_node_columns_cross_as_their_non_zero_rows():
    """A NODE_SPARSE column crosses from the core as its non-zero rows
    (ascending) and values, nothing for its zeros; the Profile reads the
    same column as a dense one would give (its rows of a lost-event
    trace's gap figures: several per path, the core lists them backwards)."""
    from ftflame import parse

    path = fixture("k6.1/s10-lost/trace.dat")
    res = _core.read_dat_builtin(os.fsencode(path))
    _, sparse = res["nodes"]
    n = res["nrows"]
    names = list(_core.NODE_SPARSE)
    p = parse.read(path)
    seen = 0
    for name, (rows, values) in zip(names, sparse):
        d = np.dtype(_core.NODE_DTYPES[list(_core.NODE_COLUMNS).index(name)])
        r, v = np.frombuffer(rows, dtype=np.int32), np.frombuffer(values, dtype=d)
        assert len(r) == len(v) and np.all(v != 0) and np.all(np.diff(r) > 0) and (len(r) == 0 or r[-1] < n)
        dense = np.zeros(n, dtype=np.int64)
        dense[r] = v
        assert np.array_equal(p.col(name), dense), name
        seen += len(r) > 1
    assert seen >= 3  # columns with several non-zero rows were compared


@pytest.mark.parametrize("rel", ["k6.1/s09-depth3/trace.dat", "k6.1/s07-tracefs-text/trace-default.txt.gz"])
def test_count_too_big_for_its_32_bit_column_is_refused(rel):
    """Counts and identifiers are 32-bit node columns (NODE_DTYPES): a value
    that does not fit is an error naming the path and the column, never a
    wrapped figure. Shown with the limit lowered to 3 (2^31 calls are not
    made in a test): every trace with a path called more often is refused."""
    from ftflame import parse
    from ftflame.model.errors import InputError

    assert set(_core.NODE_DTYPES) == {"<i4", "<i8"}
    before = _core._set_narrow_max(3)
    try:
        with pytest.raises(InputError, match=r"call path \d+: \w+ = \d+ does not fit the node table's 32-bit column"):
            parse.read(fixture(rel))
        with pytest.raises(ValueError, match="calls = 4 does not fit"):
            _core.build_events([("leaf", 0, 1, 0, "f", 0, 10 * i, 10 * i, 10 * i + 5, 0, 0, 0) for i in range(4)])
    finally:
        assert _core._set_narrow_max(before) == 3
    assert parse.read(fixture(rel)).nrows > 0


def test_node_table_refuses_narrow_values_that_do_not_fit():
    """A node table made in Python (NodeTable) checks its 32-bit columns too."""
    from ftflame.model.profile import NodeTable

    p = build_events(parse_events(SIBLINGS), source="siblings")
    calls = p.col("calls")
    calls[0] = 2**31
    with pytest.raises(ValueError, match="node column calls"):
        p.nodes.replaced(calls=calls)
    assert NodeTable.from_array(p.nodes.as_array()).equals(p.nodes)


def test_mostly_zero_node_columns_are_kept_sparse():
    """The node columns that are mostly zeros on real traces (NODE_SPARSE:
    interrupts, off-CPU time, anomalies) are kept as their non-zero rows
    when that is smaller, and read back the same; the table is read-only."""
    from ftflame import parse
    from ftflame.model.profile import NODE_SPARSE, NodeTable

    p = parse.read(fixture("k6.1/s10-lost/trace.dat"))
    t = p.nodes
    dense_bytes = sum(len(t) * np.dtype(d).itemsize for d in _core.NODE_DTYPES)
    assert t.is_sparse("open_end") and t.is_sparse("irq_early")
    assert t.nbytes < dense_bytes
    whole = NodeTable.from_array(t.as_array())
    assert whole.equals(t) and whole == t
    for name in NODE_SPARSE:
        v = t.col(name)
        assert v.dtype == np.int64 and len(v) == len(t)
        rows = np.arange(0, len(t), 3)
        assert np.array_equal(t.col(name, rows), v[rows])
        assert np.array_equal(t.col(name, dtype=np.float64), v.astype(np.float64))
    # a column with as many non-zero rows as zeros is kept dense
    busy = np.arange(len(t)) % 2
    assert not t.replaced(irq=busy).is_sparse("irq")
    assert np.array_equal(t.replaced(irq=busy).col("irq"), busy)
    with pytest.raises(ValueError):
        t.stored("calls")[0] = 1


def test_a_few_rows_of_a_sparse_column_cost_those_rows_only():
    """A sparse column's rows (the JSON tree asks 4096 at a time, in
    pre-order) are looked up among its non-zero rows: the same values as
    the whole column's, in the order asked (repeats, negative rows, 32-bit
    row numbers, rows with nothing stored), without a whole column made
    each time: 8 bytes a call path per chunk of the tree, 54 chunks on the
    long bench trace. Hand-made: 1 M rows, 3 of them non-zero."""
    import tracemalloc

    from ftflame.model.profile import _Sparse

    n = 1 << 20
    v = np.zeros(n, dtype=np.int64)
    v[[5, 70_000, n - 1]] = [7, -3, 11]
    col = _Sparse.of(v)
    assert isinstance(col, _Sparse)
    for rows in (np.array([n - 1, 5, 6, 70_000, 5, -1, -n, 0]), np.array([70_000, 4], dtype=np.int32),
                 np.zeros(0, dtype=np.int64), np.arange(0, n, 4096)):
        got = col.dense(np.int64, rows)
        assert got.dtype == np.int64 and np.array_equal(got, v[rows])
        assert np.array_equal(col.dense(np.float64, rows), v[rows].astype(np.float64))
    rows = np.arange(0, 4096, dtype=np.int64)
    tracemalloc.start()
    try:
        col.dense(np.int64, rows)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < n * 8 // 8, f"{peak} bytes for 4096 rows of a {n}-row column"


@pytest.mark.parametrize("inline_max", [1, 2, 3, (1 << 22) - 1])
def test_histogram_counts_survive_moving_out_of_the_node(inline_max):
    """A node keeps its first 4 histogram buckets inside itself, each count
    in 22 bits (ftf_hist): a fifth bucket, or a count reaching the word's
    limit, moves them out. Shown with the limit lowered (4 M calls of one
    path are not made in a test): the counts are the same either way."""
    durations = [3] * 5 + [7] * 3 + [1, 2, 4, 9] + [3] * 2 + list(range(16)) * 3
    events = [("leaf", 0, 1, 0, "f", 0, 100 * i, 100 * i, 100 * i + d, 0, 0, 0) for i, d in enumerate(durations)]
    before = _core._set_hist_inline_max(inline_max)
    try:
        p = build_events(events, source="buckets")
    finally:
        assert _core._set_hist_inline_max(before) == inline_max
    buckets, counts = p.hist_incl.row(0)
    expected = {d: durations.count(d) for d in set(durations)}  # durations under 16 ns have exact buckets
    assert dict(zip(buckets.tolist(), counts.tolist())) == expected
    assert p.col("calls")[0] == len(durations)


def test_root_calls_per_path_and_per_function():
    """`roots`: the root calls in which a path was called (each once,
    however often); `func_roots`: summed over a function's paths, the root
    calls that called the function (c under a and under b in one root call
    counts one). Root paths: 0 (their calls are their root calls)."""
    p = build_events(parse_events(SIBLINGS + """
entry 0 100 parent 0
entry 0 100 b 1
entry 0 100 c 2
exit 0 100 c 2 705 710
entry 0 100 c 2
exit 0 100 c 2 715 720
exit 0 100 b 1 700 730
entry 0 100 a 1
entry 0 100 c 2
exit 0 100 c 2 745 750
exit 0 100 a 1 740 760
exit 0 100 parent 0 700 800
"""), source="siblings")
    flags, roots, froots = p.col("flags"), p.col("roots"), p.col("func_roots")
    got = {(tuple(p.path(r)), bool(flags[r] & NODE_IRQ)): int(roots[r]) for r in range(p.nrows)}
    assert got == {(("parent",), False): 0, (("parent", "a"), False): 4, (("parent", "b"), False): 3,
                   (("parent", "b", "c"), False): 2, (("parent", "a", "c"), False): 2,
                   (("parent", "a"), True): 1}
    per_func = {}
    for r in range(p.nrows):
        per_func[p.name(r)] = per_func.get(p.name(r), 0) + int(froots[r])
    # c: root calls 1, 2 and 4 (twice under b and once under a in the 4th)
    assert per_func == {"parent": 0, "a": 4, "b": 3, "c": 3}


def test_kept_trees_reach_the_profile_as_blocks(tmp_path, monkeypatch):
    """A trace of 100k distinct root functions keeps 100k one-call trees:
    an object and two arrays made per tree were most of the read's own
    Python time. The core hands them over as one block of records, one of
    extras and a table: counted in np.frombuffer calls, not timed."""
    from ftflame import parse

    n = 5000
    path = tmp_path / "roots.txt"
    path.write_text(leafroots.trace(leafroots.line(0, f"{1 + i % 997}.000", f"f_{i}") for i in range(n)))
    calls = {"n": 0}
    real = np.frombuffer

    def counted(*a, **k):
        calls["n"] += 1
        return real(*a, **k)

    monkeypatch.setattr(np, "frombuffer", counted)
    p = parse.read(str(path))
    # a few per table column (the node table's sparse ones cross as two
    # blocks each), none per tree
    assert calls["n"] < 250, f"{calls['n']} np.frombuffer calls for {n} kept trees"
    assert len(p.slowest_trees) == n and p.slowest_trees.kept.all()
    t = p.slowest_trees.tree(n - 1)
    assert len(t.recs) == 1 and p.funcs[int(t.recs["func"][0])] == p.funcs[p.col("func")[p.scol("node")][
        int(p.slowest_trees.sample[n - 1])]]
