"""The Parquet tables (report/parquet.py, docs/design.md "Parquet") hold the
JSON's figures: on every curated fixture, DuckDB over `report -o
NAME.parquet/` gives the same per-function calls and raw/corrected sums,
per-operation counts and root-call percentiles as the JSON, exactly (equal
doubles, not within a tolerance)."""
from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
import test_retvals

from conftest import fixture, fixture_id, profile_of
from ftflame.cli import main
from ftflame.correct.stage import CorrectionOptions, correct_for_report
from ftflame.model.errors import InputError
from ftflame.parse import build_events
from ftflame.report import jsonout, parquet
from helpers import corpus
from helpers import datwriter as dw

duckdb = pytest.importorskip("duckdb", reason="duckdb is in the test extras (pip install -e '.[test]')")

CURATED_TRACES = corpus.files(corpus.CURATED, "*.dat") + corpus.files(corpus.CURATED, "*.txt.gz")


def _both(path, tmp_path):
    """(the JSON document, a DuckDB connection with a view per table) of one
    corrected Profile, as `ftflame report` corrects it."""
    p = correct_for_report(profile_of(path), path, CorrectionOptions())
    doc = json.loads(jsonout.render(p))
    folder = str(tmp_path / "t.parquet")
    parquet.write_folder(folder, p)
    con = duckdb.connect()
    for t in parquet.TABLES:
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{folder}/{t}.parquet')")
    return doc, con


def _rows(con, sql):
    return con.execute(sql).fetchall()


def _null(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


@pytest.mark.parametrize("path", CURATED_TRACES, ids=fixture_id)
def test_duckdb_gives_the_json_figures(path, tmp_path):
    doc, con = _both(path, tmp_path)
    # per function: calls, raw and corrected sums and means, corrected calls
    want = [(f["name"], f["calls"], f["incl_ns"]["sum"], f["excl_ns"]["sum"], f["incl_corr_ns"]["sum"],
             f["excl_corr_ns"]["sum"], f["incl_corr_ns"]["mean"], f["incl_ns"]["p99"]) for f in doc["functions"]]
    got = _rows(con, "SELECT function, calls, incl_sum_ns, excl_sum_ns, incl_corr_sum_ns, excl_corr_sum_ns, "
                     "incl_corr_mean_ns, incl_p99_ns FROM functions")
    assert got == want
    # the whole run's totals, summed by DuckDB from the tables
    assert _rows(con, "SELECT sum(calls), sum(excl_sum_ns) FROM functions")[0] == \
        (sum(f["calls"] for f in doc["functions"]) or None, sum(f["excl_ns"]["sum"] for f in doc["functions"]) or None)
    # per operation: counts, and the percentiles of the JSON's tables
    want = [(o["root"], o["operation"], o["calls"], o["gap_calls"], o["dur_ns"]["p50"], o["dur_ns"]["p99"],
             o["dur_corr_ns"]["p99"]) for o in doc["operations"]]
    assert _rows(con, "SELECT root, operation, calls, gap_calls, dur_p50_ns, dur_p99_ns, dur_corr_p99_ns "
                      "FROM operations") == want
    # root calls: one row each, and DuckDB's nearest-rank percentiles over
    # them per root function, operation and context are the JSON's
    assert _rows(con, "SELECT count(*) FROM root_calls")[0][0] == len(doc["root_calls"])
    assert _rows(con, "SELECT start_ns, dur_ns, dur_corr_ns FROM root_calls ORDER BY root_call") == \
        [(r["start_ns"], r["dur_ns"], r["dur_corr_ns"]) for r in doc["root_calls"]]
    got = {(r, o, i): v for r, o, i, *v in _rows(con, """
        SELECT function, operation, irq, count(*), count(*) FILTER (WHERE NOT clean),
               quantile_disc(dur_ns, 0.5), quantile_disc(dur_ns, 0.9), quantile_disc(dur_ns, 0.99), max(dur_ns),
               quantile_disc(dur_corr_ns, 0.5), quantile_disc(dur_corr_ns, 0.99)
        FROM root_calls GROUP BY ALL""")}
    for row in doc["root_latency"]:
        op = None if row["operation"] in (None, "(no procedure)") else row["operation"]
        calls, gaps, p50, p90, p99, mx, c50, c99 = got[row["root"], op, row["irq"]]
        d, c = row["dur_ns"], row["dur_corr_ns"]
        assert (calls, gaps) == (row["calls"], row["gap_calls"])
        assert (p50, p90, p99, mx) == (d["p50"], d["p90"], d["p99"], d["max"])
        assert (_null(c50), _null(c99)) == (c["p50"], c["p99"])
    # call paths: one row per node of the JSON's tree, the same sums
    assert _rows(con, "SELECT count(*), sum(calls), sum(excl_sum_ns) FROM paths")[0][:2] == \
        (_tree_count(doc), sum(_tree_calls(doc)) or None)
    # the trace's row
    t = _rows(con, "SELECT source, kernel, events, lost_events, calibration_source, o_in_ns FROM trace")[0]
    assert t == (doc["trace"]["source"], doc["trace"]["kernel"], doc["trace"]["events"], doc["trace"]["lost_events"],
                 doc["calibration"]["source"], float(doc["calibration"]["o_in_ns"]))
    # the slowest calls and their trees' calls
    assert _rows(con, "SELECT root, start_ns, dur_ns, dur_corr_ns FROM slowest ORDER BY rank") == \
        [(s["root"], s["start_ns"], s["dur_ns"], s["dur_corr_ns"]) for s in doc["slowest"]]
    assert _rows(con, "SELECT count(*) FROM slowest_calls")[0][0] == \
        sum(s["tree"]["calls"] for s in doc["slowest"] if s["tree"])


def _nodes(doc):
    stack = list(doc["tree"]) + [n for arr in doc.get("tree_continued", []) for n in arr]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n["children"] or [])


def _tree_count(doc) -> int:
    return sum(1 for _ in _nodes(doc))


def _tree_calls(doc) -> list:
    return [n["calls"] for n in _nodes(doc)]


def test_slowest_trees_match_the_json(tmp_path):
    """A kept tree's calls, row by row, with the return values (funcgraph-retval)."""
    path = fixture("k7.x/s24-funcgraph-args/trace.dat")
    doc, con = _both(path, tmp_path)
    s = next(s for s in doc["slowest"] if s["tree"])
    rank = doc["slowest"].index(s)
    rows = _rows(con, f"SELECT function, parent, at_ns, incl_ns, excl_corr_ns, ret FROM slowest_calls "
                      f"WHERE rank = {rank} ORDER BY call")
    t = s["tree"]
    assert rows == [(t["funcs"][f], None if par < 0 else par, at, incl, xc, r) for f, par, at, incl, xc, r in
                    zip(t["func"], t["parent"], t["at_ns"], t["incl_ns"], t["excl_corr_ns"], t.get("ret") or [None] * t["calls"])]
    assert _rows(con, f"SELECT dominant_path FROM slowest WHERE rank = {rank}")[0][0] == s["dominant_path"]


def test_cli_writes_a_folder_atomically_and_refuses_others(tmp_path, capsys):
    path = fixture("k6.1/s09-depth3/trace.dat")
    out = tmp_path / "r.parquet"
    assert main(["report", path, "-o", str(out) + "/", "-q"]) == 0
    assert sorted(os.listdir(out)) == sorted(t + ".parquet" for t in parquet.TABLES)
    assert main(["report", path, "-o", str(out), "-F", "parquet", "-q"]) == 0  # replaced: ours
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".ftflame-")]  # no temporary left
    (out / "mine.txt").write_text("x")
    assert main(["report", path, "-o", str(out), "-F", "parquet", "-q"]) == 2
    assert "other files than ftflame's tables" in capsys.readouterr().err
    assert main(["report", path, "-F", "parquet", "-q"]) == 2  # stdout: no folder
    assert "Parquet output is a folder" in capsys.readouterr().err


def test_figures_rounded_as_the_json_prints_them():
    """0.1 ns as json.dumps(round(x, 1)): halves that np.round (x * 10)
    rounds the other way (6996426.35), past the C formatter's range, NaN null, infinities kept."""
    xs = [0.05, 0.15, 0.25, 2.675, 6996426.35, 5936284.55, 1.0000000000000002, -0.05, 123456789.45,
          1e14 + 0.25, 3e17, 2.0 ** 60 + 0.5, float("nan"), float("inf"), -float("inf")]
    rng = np.random.default_rng(42)
    # halves and near-halves of every size, and plain doubles
    xs += (rng.integers(0, 10**12, 20000) / 100 + 0.05).tolist()
    xs += (rng.random(20000) * 10.0 ** rng.integers(-3, 16, 20000)).tolist()
    xs += np.nextafter(np.array(xs[-40000:]), np.inf).tolist()
    got = parquet._r1(xs).tolist()
    want = [json.loads(json.dumps(round(x, 1)).replace("NaN", "null")) for x in xs]
    assert [None if g != g else g for g in got] == [None if w is None else w for w in want]


def test_empty_and_uncorrected_profiles(tmp_path):
    """No call at all: every table there, with no row; no correction: the
    corrected columns are the raw figures, as in the JSON."""
    tabs = parquet.tables(build_events([]))
    assert sorted(tabs) == sorted(parquet.TABLES)
    assert all(t.num_rows == 0 for name, t in tabs.items() if name != "trace")
    p = profile_of(fixture("k6.1/s09-depth3/trace.dat"))
    assert p.corrected is None
    doc = json.loads(jsonout.render(p))
    f = parquet.functions_table(p).to_pydict()
    assert f["incl_corr_sum_ns"] == [x["incl_corr_ns"]["sum"] for x in doc["functions"]] == f["incl_sum_ns"]
    assert f["excl_corr_mean_ns"] == [x["excl_corr_ns"]["mean"] for x in doc["functions"]]


def test_a_failed_write_leaves_the_old_folder_and_no_temporary(tmp_path, monkeypatch):
    """Writing fails half-way (a full disk): the folder written before is
    there as it was, and nothing else is left beside it."""
    p = correct_for_report(profile_of(fixture("k6.1/s09-depth3/trace.dat")), fixture("k6.1/s09-depth3/trace.dat"),
                           CorrectionOptions())
    out = str(tmp_path / "r.parquet")
    parquet.write_folder(out, p)
    before = {n: os.path.getmtime(os.path.join(out, n)) for n in os.listdir(out)}
    real = parquet.pq.ParquetWriter

    class Full(real):
        def write_table(self, t, *a, **k):
            if self.where.endswith("paths.parquet"):
                raise OSError(28, "No space left on device")
            return super().write_table(t, *a, **k)

    monkeypatch.setattr(parquet.pq, "ParquetWriter", Full)
    with pytest.raises(InputError, match="No space left"):
        parquet.write_folder(out, p)
    assert {n: os.path.getmtime(os.path.join(out, n)) for n in os.listdir(out)} == before
    assert os.listdir(tmp_path) == ["r.parquet"]


# Root calls that each return one of these (the recorded long): 0, a count,
# an int's -EIO (upper half clear), -EIO as a long, -4096 (no error code) and
# a pointer; the Parquet `ret` holds them as the kernel prints them, signed.
ROOT_RETS = [(0, 0), (4096, 4096), (test_retvals.INT_MINUS_5, -5), (-5, -5), (-4096, -4096),
             (test_retvals.POINTER, test_retvals.POINTER - 2 ** 64)]


def _root_rets(path, tmp_path, *extra) -> list:
    out = tmp_path / "r.parquet"
    assert main(["report", str(path), "-o", str(out) + "/", "-q", *extra]) == 0
    return duckdb.connect().execute(
        f"SELECT ret FROM read_parquet('{out}/root_calls.parquet') ORDER BY root_call").fetchall()


@pytest.mark.parametrize("reader", ["builtin", "libtracecmd"])
def test_root_calls_carry_their_return_values(tmp_path, reader):
    """A hand-made trace.dat with the 6.5 exit layout (a retval field), its
    root calls returning a value each: `ret` of every root call is the value
    written, from both readers (a child's return value is not its root's)."""
    path = tmp_path / "retval.dat"
    roots = [("svc_process", 9000 + 100 * k, raw, [("nfsd_dispatch", 8000, 1, [])])
             for k, (raw, _) in enumerate(ROOT_RETS)]
    test_retvals.dat_trace(path, roots=roots)
    assert _root_rets(path, tmp_path, "--reader", reader) == [(want,) for _, want in ROOT_RETS]


def test_root_calls_return_values_from_text(tmp_path):
    """The text reader's forms: `} /* f = -5 */`, `} /* f ret=0x10 */`, a
    leaf's `/* = -13 */`; a root whose `}` prints no value has none (null)."""
    path = tmp_path / "retval.txt"
    lines = ["# tracer: function_graph", "#", "# CPU  DURATION                  FUNCTION CALLS",
             "# |     |   |                     |   |   |   |",
             " 0)               |  svc_process() {", " 0)   0.200 us    |    nfsd_dispatch(); /* = 0x1 */",
             " 0)   1.000 us    |  } /* svc_process = -5 */",
             " 0)               |  svc_process() {", " 0)   0.200 us    |    nfsd_dispatch(); /* = 0x1 */",
             " 0)   1.100 us    |  } /* svc_process ret=0x10 */",
             " 0)   0.300 us    |  inode_permission(); /* = -13 */",
             " 0)               |  svc_process() {", " 0)   0.200 us    |    nfsd_dispatch(); /* = 0x1 */",
             " 0)   1.200 us    |  }"]
    path.write_text("\n".join(lines) + "\n")
    assert _root_rets(path, tmp_path) == [(-5,), (0x10,), (-13,), (None,)]


def test_root_calls_without_return_values_are_null(tmp_path):
    """A 6.1 layout (no retval field): a `ret` column of nulls, typed int64
    as in every other trace's table (a dataset's files share one schema)."""
    path = tmp_path / "plain.dat"
    dw.write_v6(str(path), [dw.nested_call_pages()])
    rets = _root_rets(path, tmp_path)
    assert rets and rets == [(None,)] * len(rets)
    import pyarrow.parquet as pq

    assert str(pq.read_schema(str(tmp_path / "r.parquet" / "root_calls.parquet")).field("ret").type) == "int64"


def test_root_calls_are_written_in_row_groups_of_64k_rows(tmp_path):
    """root_calls is made and written a chunk of rows at a time, each a
    row group of at most 65,536 rows: a chunk's int64 and pyarrow columns
    (about 250 bytes a row) are the writer's high-water mark above pyarrow's
    import, 64 MB at 262,144 rows a chunk (the 1 M-root-call text peaked at
    240 MiB, 183 with these). The rows read back are those of the whole
    table, made at once."""
    import pyarrow.parquet as pq

    from helpers import leafroots

    trace = tmp_path / "roots.txt"
    trace.write_bytes(leafroots.trace(leafroots.line(i % 2, f"{1 + i % 97}.000", f"f_{i % 50}")
                                      for i in range(150_000)).encode())
    p = correct_for_report(profile_of(str(trace)), str(trace), CorrectionOptions())
    folder = str(tmp_path / "t.parquet")
    parquet.write_folder(folder, p)
    f = pq.ParquetFile(os.path.join(folder, "root_calls.parquet"))
    groups = [f.metadata.row_group(i).num_rows for i in range(f.num_row_groups)]
    assert sum(groups) == 150_000 and max(groups) <= 65_536, groups
    assert f.read().equals(parquet.root_calls_table(p))
