"""report._rowfmt.format_rows, the row-template formatter behind the JSON tree: each
kind against Python's own formatting, and bad arguments raise, never crash."""
from __future__ import annotations

import errno
import os
import tempfile

import numpy as np
import pytest

from ftflame.report._rowfmt import format_rows


def to_fd(template, nrows) -> str:
    """format_rows streamed into a file (format_rows(..., fd)), read back."""
    with tempfile.TemporaryFile() as f:
        n = format_rows(template, nrows, f.fileno())
        f.seek(0)
        data = f.read()
    assert n == len(data)
    return data.decode("utf-8")


def f1(values) -> list:
    col = np.asarray(values, dtype=np.float64)
    return format_rows([("f1", col), "\n"], len(col)).splitlines()


def test_int_column():
    vals = [0, 1, -1, 9, 10, 99, 100, 12345, -12345, 10**18, 2**63 - 1, -2**63]
    vals += [10**k + d for k in range(19) for d in (-1, 0, 1)]
    col = np.array(vals, dtype=np.int64)
    assert format_rows([("i", col), ","], len(col)) == "".join(f"{v}," for v in vals)
    col32 = np.array([0, -1, 2**31 - 1, -2**31], dtype=np.int32)
    assert format_rows([("i", col32), ","], 4) == "0,-1,2147483647,-2147483648,"


EDGES = [0.0, -0.0, 0.05, 0.15, 0.25, 0.35, 0.45, -0.25, -0.35, -0.04, -0.05, 0.04999999999999999,
         1e15 + 0.05, 1e15 + 0.3, 2.5e14 + 0.05, 2**52 + 0.5, 2**53, 2**53 + 2, 2.0**59, 2.0**60, 2.0**63,
         -2.0**64, 1e16, 1e17 + 0.5, 1e22, 1.7976931348623157e308, 5e-324, -5e-324, 2.2250738585072014e-308,
         1e-5, 0.1, 0.95, 9.95, 99.95, 999.95, 123456.75, 123456.85, 0.5, 1.5, 2.5, -0.5,
         float("inf"), float("-inf"), float("nan"), -float("nan")]


def test_f1_edges_match_python():
    assert f1(EDGES) == ["%.1f" % x for x in EDGES]


def test_f1_random_values_match_python():
    rng = np.random.default_rng(1)
    # random bit patterns (every exponent), plain magnitudes, values near
    # k.k5 and the only exact ties of "%.1f" (odd multiples of 0.25)
    bits = rng.integers(0, 2**63, 20000, dtype=np.int64).view(np.float64)
    sign = np.where(rng.random(20000) < 0.5, -1.0, 1.0)
    mags = [sign * rng.random(20000) * 10.0 ** k for k in (-3, 0, 3, 6, 9, 12, 15, 17, 19)]
    halves = rng.integers(-10**9, 10**9, 20000) / 20.0
    ties = rng.integers(-2**52, 2**52, 20000) * 0.25
    small_ties = rng.integers(-4000, 4000, 2000) * 0.25
    for vals in (bits, *mags, halves, ties, small_ties):
        assert f1(vals) == ["%.1f" % x for x in vals.tolist()]


def test_f1_matches_repr_of_round_below_1e14():
    """The raw JSON mean is repr(round(x, 1)): the same text as "%.1f" % x
    below 1e14 (the renderer falls back to Python beyond)."""
    rng = np.random.default_rng(2)
    vals = np.concatenate([rng.random(20000) * 10.0 ** k for k in range(15)] +
                          [-rng.random(2000) * 1e13, np.array(EDGES[:14]), rng.integers(0, 10**13, 2000) / 20.0])
    vals = vals[np.abs(vals) < 1e14]
    assert f1(vals) == [repr(round(x, 1)) for x in vals.tolist()]


def test_f1n_writes_nan_as_null():
    """f1n: "%.1f" as f1, NaN (a figure the trace does not give) as null,
    what json.dumps writes for None; both paths, and the exact sizing a
    NaN makes the size pass take."""
    vals = np.array([1.25, float("nan"), -0.04, 7e13, -float("nan"), 0.0, float("inf")])
    want = ",".join("null" if x != x else "%.1f" % x for x in vals.tolist())
    assert format_rows([("f1n", vals), ","], len(vals))[:-1] == want
    assert to_fd([("f1n", vals), ","], len(vals))[:-1] == want
    assert format_rows([("f1n", np.full(3, np.nan))], 3) == "nullnullnull"
    assert format_rows([("f1n", np.zeros(0))], 0) == ""


def test_strided_columns():
    """Columns of a row-major table are read in place, any stride."""
    table = np.arange(24, dtype=np.int64).reshape(6, 4) * 11 - 40
    floats = table / 4.0
    tmpl = [("i", table[:, 1]), ",", ("f1", floats[:, 3]), ",", ("i", table[::-1, 0]), ",",
            ("e", table[:, 2] % 3, ["a", "b", "c"]), ";"]
    want = "".join("%d,%.1f,%d,%s;" % (table[r, 1], floats[r, 3], table[5 - r, 0], "abc"[table[r, 2] % 3])
                   for r in range(6))
    assert format_rows(tmpl, 6) == want
    assert format_rows([("i", np.arange(8, dtype=np.int32)[::3])], 3) == "036"


def test_enum_and_rep():
    idx = np.array([2, 0, 1, 1], dtype=np.int64)
    cnt = np.array([0, 3, 1, 0], dtype=np.int64)
    out = format_rows(["<", ("e", idx, ["a", "", "ccc"]), ("rep", cnt, "]}"), ">"], 4)
    assert out == "<ccc><a]}]}]}><]}><>"
    assert format_rows([("e", idx.astype(np.int32), [b"x", b"y", b"z"])], 4) == "zxyy"


def test_unicode_fragments_and_literals():
    names = ["caf\u00e9", "\u65e5\u672c", "\U0001f600", "plain"]
    idx = np.array([0, 1, 2, 3, 2], dtype=np.int64)
    out = format_rows(["\u00bb", ("e", idx, names), b"|"], 5)
    assert out == "".join("\u00bb" + names[i] + "|" for i in idx)
    assert isinstance(out, str)


def test_empty():
    z = np.zeros(0, dtype=np.int64)
    assert format_rows([], 0) == ""
    assert format_rows(["x", ("i", z), ("f1", z.astype(float)), ("e", z, []), ("rep", z, "y")], 0) == ""
    assert format_rows([], 5) == ""
    assert format_rows(("a", "b"), 2) == "abab"


def test_large_output_grows_the_buffer():
    n = 200_000
    col = np.arange(n, dtype=np.int64) * 1_000_003
    rep = np.full(n, 3, dtype=np.int64)
    tmpl = ['{"v":', ("i", col), ("rep", rep, "]}"), ("f1", col / 7.0), ","]
    out = format_rows(tmpl, n)
    assert out == "".join('{"v":%d]}]}]}%.1f,' % (v, v / 7.0) for v in col.tolist())
    assert to_fd(tmpl, n) == out  # 6 MB: many 1 MiB chunks


def test_fd_rows_longer_than_a_chunk():
    """A row bigger than the 1 MiB chunk (a deep run of closing brackets)
    gets a buffer of its own, before and after ordinary rows."""
    cnt = np.array([1, 700_000, 2, 0, 1_500_000, 3], dtype=np.int64)
    tmpl = ["<", ("i", np.arange(6)), ("rep", cnt, "]}"), ">"]
    assert to_fd(tmpl, 6) == format_rows(tmpl, 6)


def test_runs_of_values_longer_than_a_chunk():
    """A row's run of values bigger than the 1 MiB chunk (a kept call tree
    of 300k calls) likewise, each kind of run, written as Python would."""
    counts = np.array([3, 300_000, 0, 2], dtype=np.int64)
    starts = np.array([0, 3, 300_003, 300_003], dtype=np.int64)
    n = int(counts.sum())
    ints = np.arange(n, dtype=np.int64) * 7919 - 10**6
    floats = np.where(np.arange(n) % 5 == 0, np.nan, ints / 3.0)
    tmpl = ["[", ("si", starts, counts, ints), "][", ("sf1n", starts, counts, floats), "][",
            ("se", starts, counts, np.arange(n) % 3, ['"a"', '"\u00e9"', '"ccc"']), "]\n"]
    assert to_fd(tmpl, 4) == format_rows(tmpl, 4) == reference(tmpl, 4)


def test_fd_utf8_and_empty():
    names = ["caf\u00e9", "\u65e5\u672c", "\U0001f600"]
    tmpl = ["\u00bb", ("e", np.array([0, 1, 2, 1]), names), b"|"]
    assert to_fd(tmpl, 4) == format_rows(tmpl, 4)
    assert to_fd(["x"], 0) == ""
    assert to_fd([], 3) == ""


def test_fd_bad_value_raises_like_the_str_path():
    with pytest.raises(ValueError, match=r"item 1, row 2: index 7 out of range \(2 fragments\)"):
        to_fd(["x", ("e", np.array([0, 1, 7]), ["a", "b"])], 3)
    with pytest.raises(ValueError, match="negative repeat count"):
        to_fd([("rep", np.array([1, -1]), "x")], 2)


def test_fd_write_errors_raise_oserror():
    tmpl = ["row ", ("i", np.arange(300_000)), "\n"]  # several chunks
    r, w = os.pipe()
    os.close(r)
    try:
        with pytest.raises(BrokenPipeError):
            format_rows(tmpl, 300_000, w)
    finally:
        os.close(w)
    with open(os.devnull, "rb") as ro:
        with pytest.raises(OSError) as e:
            format_rows(tmpl, 300_000, ro.fileno())
    assert e.value.errno == errno.EBADF
    if os.path.exists("/dev/full"):
        with open("/dev/full", "wb") as full:
            with pytest.raises(OSError) as e:
                format_rows(tmpl, 300_000, full.fileno())
        assert e.value.errno == errno.ENOSPC


@pytest.mark.parametrize("template, nrows, exc", [
    ([("i", np.zeros(3, dtype=np.int64))], 4, ValueError),      # length != nrows
    ([("i", np.zeros(4, dtype=np.float64))], 4, ValueError),    # dtype
    ([("i", np.zeros(4, dtype=np.uint64))], 4, ValueError),
    ([("i", np.zeros(4, dtype=np.int16))], 4, ValueError),
    ([("f1", np.zeros(4, dtype=np.int64))], 4, ValueError),
    ([("f1", np.zeros(4, dtype=np.float32))], 4, ValueError),
    ([("i", np.zeros((2, 2), dtype=np.int64))], 4, ValueError),  # 2-d
    ([("i", np.zeros(4, dtype=">i8"))], 4, ValueError),          # byte order
    ([("i", [0, 0, 0, 0])], 4, TypeError),                       # no buffer
    ([("i", b"\0" * 32)], 4, ValueError),                        # bytes: format B
    ([("x", np.zeros(4, dtype=np.int64))], 4, ValueError),       # kind
    ([(1, np.zeros(4, dtype=np.int64))], 4, TypeError),
    ([()], 4, TypeError),
    ([("i",)], 4, ValueError),
    ([("i", np.zeros(4, dtype=np.int64), "extra")], 4, ValueError),
    ([("e", np.zeros(4, dtype=np.int64))], 4, ValueError),
    ([("e", np.zeros(4, dtype=np.int64), "ab")], 4, TypeError),  # fragments: a str
    ([("e", np.zeros(4, dtype=np.int64), [1])], 4, TypeError),
    ([("e", np.zeros(4, dtype=np.int64), 5)], 4, TypeError),
    ([("e", np.array([0, 1, 2, 3]), ["a", "b"])], 4, ValueError),  # index out of range
    ([("e", np.array([0, -1, 0, 0]), ["a", "b"])], 4, ValueError),
    ([("e", np.zeros(4, dtype=np.int64), [])], 4, ValueError),
    ([("rep", np.array([1, -1, 0, 0]), "x")], 4, ValueError),    # negative count
    ([("rep", np.zeros(4, dtype=np.int64), 3)], 4, TypeError),
    ([("si", np.array([0, 0, 0, 3]), np.array([1, 2, 3, 2]), np.arange(4))], 4, ValueError),  # past the values
    ([("si", np.array([0, -1, 0, 0]), np.zeros(4, dtype=np.int64), np.arange(4))], 4, ValueError),
    ([("si", np.zeros(4, dtype=np.int64), np.array([0, -1, 0, 0]), np.arange(4))], 4, ValueError),
    ([("si", np.zeros(4, dtype=np.int64), np.zeros(3, dtype=np.int64), np.arange(4))], 4, ValueError),
    ([("si", np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.int64), np.zeros(4))], 4, ValueError),  # float values
    ([("sf1n", np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.int64), np.arange(4))], 4, ValueError),
    ([("si", np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.int64), np.zeros((2, 2), dtype=np.int64))], 4,
     ValueError),
    ([("si", np.zeros(4, dtype=np.int64), np.zeros(4, dtype=np.int64))], 4, ValueError),  # no values
    ([("se", np.zeros(4, dtype=np.int64), np.ones(4, dtype=np.int64), np.array([0, 2]), ["a", "b"])], 4,
     ValueError),  # a value past the fragments
    ([("se", np.zeros(4, dtype=np.int64), np.ones(4, dtype=np.int64), np.array([0, 1]))], 4, ValueError),
    ([3], 1, TypeError),                                         # literal type
    (["\ud800"], 1, UnicodeEncodeError),                          # lone surrogate
    ([b"\xff"], 1, UnicodeDecodeError),                           # bytes not UTF-8
    (["x"], -1, ValueError),
    (5, 1, TypeError),
])
def test_bad_arguments_raise(template, nrows, exc):
    with pytest.raises(exc):
        format_rows(template, nrows)


def test_bad_value_message_names_row_and_item():
    with pytest.raises(ValueError, match=r"item 1, row 2: index 7 out of range \(2 fragments\)"):
        format_rows(["x", ("e", np.array([0, 1, 7]), ["a", "b"])], 3)


def test_rep_count_too_large_is_memory_error():
    with pytest.raises(MemoryError):
        format_rows([("rep", np.array([2**62], dtype=np.int64), "abcd")], 1)


def reference(template, nrows) -> str:
    """format_rows in Python, for the randomised comparison."""
    out = []
    for r in range(nrows):
        for it in template:
            if isinstance(it, (str, bytes)):
                out.append(it.decode() if isinstance(it, bytes) else it)
            elif it[0] == "i":
                out.append("%d" % it[1][r])
            elif it[0] == "f1":
                out.append("%.1f" % it[1][r])
            elif it[0] == "f1n":
                out.append("null" if it[1][r] != it[1][r] else "%.1f" % it[1][r])
            elif it[0] == "e":
                out.append(it[2][it[1][r]])
            elif it[0] == "rep":
                out.append(it[2] * int(it[1][r]))
            else:  # a run of values: si, sf1n, se
                a, k = int(it[1][r]), int(it[2][r])
                run = it[3][a:a + k].tolist()
                if it[0] == "si":
                    out.append(",".join("%d" % v for v in run))
                elif it[0] == "sf1n":
                    out.append(",".join("null" if v != v else "%.1f" % v for v in run))
                else:
                    out.append(",".join(it[4][v] for v in run))
    return "".join(out)


def _runs(rng, nrows, nvalues):
    """Random (starts, counts) of nrows runs inside nvalues values."""
    starts = rng.integers(0, nvalues + 1, nrows)
    counts = np.array([rng.integers(0, nvalues - a + 1) for a in starts.tolist()], dtype=np.int64)
    return starts, counts


@pytest.mark.parametrize("seed", range(12))
def test_random_templates_match_python(seed):
    """Literals and fragments of every length (short ones are copied in
    fixed-size blocks), repeats, and row counts small enough that every row
    is among the last ones written through the scratch row."""
    rng = np.random.default_rng(seed)

    def text():
        n = int(rng.choice([0, 1, 2, 31, 32, 33, 64, 200]))
        return "".join(rng.choice(list("abc{}[],:\"\u00e9xyz"), n))

    for nrows in (0, 1, 2, 3, 7, 40):
        tmpl = []
        for _ in range(int(rng.integers(1, 12))):
            kind = rng.integers(0, 9)
            if kind == 0:
                tmpl.append(text())
            elif kind == 1:
                tmpl.append(("i", rng.integers(-10**18, 10**18, nrows)))
            elif kind == 2:
                tmpl.append(("f1", rng.standard_normal(nrows) * 10.0 ** rng.integers(-3, 20)))
            elif kind == 3:
                frags = [text() for _ in range(int(rng.integers(1, 5)))]
                tmpl.append(("e", rng.integers(0, len(frags), nrows), frags))
            elif kind == 4:
                tmpl.append(("rep", rng.integers(0, 6, nrows), text()))
            elif kind == 5:
                v = rng.standard_normal(nrows) * 10.0 ** rng.integers(-3, 20)
                tmpl.append(("f1n", np.where(rng.random(nrows) < 0.3, np.nan, v)))
            elif kind == 6:
                nv = int(rng.integers(0, 50))
                tmpl.append(("si", *_runs(rng, nrows, nv), rng.integers(-10**18, 10**18, nv)))
            elif kind == 7:
                nv = int(rng.integers(0, 50))
                v = rng.standard_normal(nv) * 10.0 ** rng.integers(-3, 22)
                v = np.where(rng.random(nv) < 0.2, np.nan, v)
                if nv and rng.random() < 0.3:
                    v[0] = rng.choice([np.inf, -np.inf, 2.0 ** 70])
                tmpl.append(("sf1n", *_runs(rng, nrows, nv), v))
            else:
                nv = int(rng.integers(0, 50))
                frags = [text() for _ in range(int(rng.integers(1, 5)))]
                tmpl.append(("se", *_runs(rng, nrows, nv), rng.integers(0, len(frags), nv), frags))
        assert format_rows(tmpl, nrows) == reference(tmpl, nrows)
        assert to_fd(tmpl, nrows) == reference(tmpl, nrows)


# ---- report.common.RowsToFile: chunks formatted on a side thread, in order ----

def _rows_to_file(steps) -> bytes:
    """steps: ("w", bytes) or ("r", template, nrows), through RowsToFile into
    a file, read back."""
    from ftflame.report.common import RowsToFile

    with tempfile.TemporaryFile() as f:
        with RowsToFile(f) as out:
            for step in steps:
                if step[0] == "w":
                    out.write(step[1])
                else:
                    out.rows(step[1], step[2])
        f.flush()
        f.seek(0)
        return f.read()


def test_rows_to_file_keeps_the_order_of_chunks_and_writes():
    """The caller's bytes and the chunks land in the order given, though each
    chunk is formatted on another thread while the next is made."""
    rng = np.random.default_rng(7)
    steps, want = [("w", b"[")], "["
    for k in range(40):
        col = rng.integers(-10**6, 10**6, size=int(rng.integers(0, 3000)))
        tmpl = [",", ("i", col), ("f1", col / 7.0)]
        steps.append(("r", tmpl, len(col)))
        want += format_rows(tmpl, len(col))
        if k % 3 == 0:
            steps.append(("w", b"|%d|" % k))
            want += "|%d|" % k
    steps.append(("w", b"]"))
    assert _rows_to_file(steps) == (want + "]").encode()


def test_rows_to_file_raises_a_chunks_error_and_leaves_no_thread():
    """A chunk's error (here a bad index) is raised on the caller's thread,
    at its next write or at the end, and the side thread is gone after."""
    import threading

    bad = ["x", ("e", np.array([0, 1, 7]), ["a", "b"])]
    for steps in ([("r", bad, 3), ("w", b"after")], [("w", b"a"), ("r", bad, 3)]):
        with pytest.raises(ValueError, match=r"item 1, row 2: index 7 out of range"):
            _rows_to_file(steps)
        assert not [t for t in threading.enumerate() if t.name == "ftflame-rows"]


def test_rows_to_file_waits_for_the_chunk_in_flight_when_the_caller_fails():
    """The caller fails (Ctrl-C, an error) while a chunk is being written:
    the exit waits for that chunk, so the file is not closed under it."""
    import threading

    from ftflame.report.common import RowsToFile

    tmpl = ["row ", ("i", np.arange(200_000)), "\n"]
    with tempfile.TemporaryFile() as f:
        with pytest.raises(KeyboardInterrupt):
            with RowsToFile(f) as out:
                out.rows(tmpl, 200_000)
                raise KeyboardInterrupt
        assert not [t for t in threading.enumerate() if t.name == "ftflame-rows"]
        f.seek(0)
        assert f.read() == format_rows(tmpl, 200_000).encode()
