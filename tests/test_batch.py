"""ftflame batch (ftflame/batch.py): the curated corpus into one Parquet
dataset, the same row for row from the local process pool and from a
2-worker Dask LocalCluster; a run again adds nothing; a damaged trace is
reported and skipped; a worker SIGKILLed mid-trace leaves no row of that
trace, and a run again completes the dataset without a duplicate.

Marked `batch`: process pools and a Dask cluster under the ASan rerun (libasan
preloaded into every worker) cost minutes and test no C of ours that
tests/test_parquet.py does not: `make test ASAN=1` leaves them out."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from ftflame import batch
from ftflame.cli import main
from ftflame.report.parquet import TABLES
from helpers import corpus

pq = pytest.importorskip("pyarrow.parquet")
duckdb = pytest.importorskip("duckdb", reason="duckdb is in the test extras (pip install -e '.[test]')")

pytestmark = pytest.mark.batch

INPUTS = corpus.files(corpus.CURATED, "*.dat") + corpus.files(corpus.CURATED, "*.txt.gz")
LABELS = {"patch": "t1"}


def folders(ds) -> dict:
    """trace_id -> its folder, of every trace in the dataset (staging left out)."""
    out = {}
    for d, dirs, _ in os.walk(ds):
        if d == str(ds) and batch.STAGING in dirs:
            dirs.remove(batch.STAGING)
        for name in list(dirs):
            if name.startswith("trace_id="):
                out[name[len("trace_id="):]] = os.path.join(d, name)
                dirs.remove(name)
    return out


def contents(ds) -> dict:
    """{(trace_id, table): pyarrow.Table} of the whole dataset."""
    out = {}
    for rid, d in folders(ds).items():
        assert sorted(os.listdir(d)) == sorted(t + ".parquet" for t in TABLES), d  # every table, nothing else
        for t in TABLES:
            out[rid, t] = pq.read_table(os.path.join(d, t + ".parquet"))
    return out


def assert_same(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for key in a:
        assert a[key].equals(b[key]), key


def query(ds, sql: str) -> list:
    con = duckdb.connect()
    for t in TABLES:
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{ds}/kernel=*/**/{t}.parquet')")
    return con.execute(sql).fetchall()


@pytest.fixture(scope="module")
def local_ds(tmp_path_factory):
    ds = tmp_path_factory.mktemp("batch") / "local"
    tally = batch.run_batch(INPUTS, str(ds), LABELS, jobs=2, quiet=True)
    assert tally.counts["failed"] == 0
    return ds


def test_one_row_per_trace_keyed_and_partitioned(local_ds):
    ids = {batch.trace_id(p) for p in INPUTS}
    assert len(folders(local_ds)) == len(ids)  # traces of equal content once
    rows = query(local_ds, "SELECT trace_id, kernel, patch, count(*) FROM trace GROUP BY ALL")
    assert {r[0] for r in rows} == ids and all(r[3] == 1 and r[2] == "t1" for r in rows)
    assert len({r[1] for r in rows}) >= 4  # the curated corpus's kernels, each a partition
    # every table keyed: its rows' trace ids are the trace table's
    for t in TABLES:
        assert {r[0] for r in query(local_ds, f"SELECT DISTINCT trace_id FROM {t}")} <= ids


def test_dask_local_cluster_writes_the_same_dataset(local_ds, tmp_path):
    distributed = pytest.importorskip("distributed", reason="dask[distributed] is in the test extras")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        tally = batch.run_batch(INPUTS, str(tmp_path / "dask"), LABELS, client=client, quiet=True)
    assert tally.counts["failed"] == 0
    assert_same(contents(local_ds), contents(tmp_path / "dask"))


def test_run_again_adds_nothing(local_ds):
    before = contents(local_ds)
    tally = batch.run_batch(INPUTS, str(local_ds), LABELS, jobs=2, quiet=True)
    assert tally.counts["written"] == 0 and tally.counts["skipped"] == len(INPUTS)
    assert_same(before, contents(local_ds))


def test_a_damaged_trace_is_reported_and_skipped(tmp_path, capsys):
    good = [corpus.curated("k6.1/s09-depth3/trace.dat"), corpus.curated("k6.1/s04-null/trace.dat")]
    bad = tmp_path / "cut.dat"
    with open(good[0], "rb") as f:
        bad.write_bytes(f.read(300))  # the header cut short
    rc = main(["batch", good[0], str(bad), good[1], "-o", str(tmp_path / "ds"), "-j", "1"])
    err = capsys.readouterr().err
    assert rc == 2
    failed = [line for line in err.splitlines() if "failed:" in line]
    assert len(failed) == 1 and str(bad) in failed[0]
    assert "2 written" in err and "1 failed" in err
    assert len(folders(tmp_path / "ds")) == 2


# the kill test's traces: a dozen (a few written before the kill, the rest after)
KILL_INPUTS = INPUTS[::4]


def _batch_cmd(ds) -> list:
    return [sys.executable, "-c", "import sys; from ftflame.cli import main; sys.exit(main(sys.argv[1:]))",
            "batch", *KILL_INPUTS, "-o", str(ds), "--label", "patch=t1", "-j", "1", "-q"]


def _kill_a_worker_mid_trace(ds, proc) -> int:
    """SIGKILL the worker whose staging folder has a table written (its pid
    is in the folder's name): mid-trace, some files written, not renamed;
    once a few traces are in, so that the dataset is read with the
    leftover beside them."""
    staging = os.path.join(ds, batch.STAGING)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            names = os.listdir(staging)
        except FileNotFoundError:
            names = []
        for name in names if len(folders(ds)) >= 3 else ():
            try:
                if os.listdir(os.path.join(staging, name)):
                    pid = int(name.split("-")[1])
                    os.kill(pid, signal.SIGKILL)
                    return pid
            except (FileNotFoundError, ProcessLookupError):
                pass
        time.sleep(0.002)
    return 0


def test_a_worker_killed_mid_trace_leaves_no_partial_rows(local_ds, tmp_path):
    ds = tmp_path / "killed"
    proc = subprocess.Popen(_batch_cmd(ds), stderr=subprocess.PIPE, text=True)
    killed = _kill_a_worker_mid_trace(ds, proc)
    _, err = proc.communicate(timeout=300)
    assert killed, "no worker was caught mid-trace"
    assert proc.returncode == 1 and "worker process died" in err
    assert os.listdir(os.path.join(ds, batch.STAGING))  # the killed trace's files, part written
    ids = {batch.trace_id(p) for p in KILL_INPUTS}
    clean = {k: v for k, v in contents(local_ds).items() if k[0] in ids}
    partial = contents(ds)  # every folder there is whole (contents() checks) and as the clean run's
    assert len(partial) < len(clean)
    for key, table in partial.items():
        assert table.equals(clean[key]), key
    # the queries' glob reads no staged file: the rows are the written traces'
    assert query(ds, "SELECT count(DISTINCT trace_id) FROM root_calls")[0][0] <= len(folders(ds))
    # run again: the rest written, nothing twice
    assert subprocess.run(_batch_cmd(ds), stderr=subprocess.PIPE, timeout=300).returncode == 0
    assert_same(clean, contents(ds))
    assert not os.path.exists(os.path.join(ds, batch.STAGING)) or not os.listdir(os.path.join(ds, batch.STAGING))
    assert query(ds, "SELECT count(*), count(DISTINCT trace_id) FROM trace")[0] == (len(folders(ds)),) * 2


def test_sigterm_stops_the_batch_and_its_workers(tmp_path):
    """The batch stopped (SIGTERM) ends its workers too: no trace is written
    after it exits (the queued ones are dropped, not run), and every trace
    folder there is whole."""
    ds = tmp_path / "stopped"
    proc = subprocess.Popen(_batch_cmd(ds), stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while proc.poll() is None and len(folders(ds)) < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM and "stopped by SIGTERM" in err
    there = set(folders(ds))
    assert len(there) < len(KILL_INPUTS)
    time.sleep(1.5)  # a worker left running would write its trace meanwhile
    assert set(folders(ds)) == there
    contents(ds)  # each folder whole


def test_labels_and_dask_address_refused_with_one_line(tmp_path, capsys):
    path = corpus.curated("k6.1/s09-depth3/trace.dat")
    assert main(["batch", path, "-o", str(tmp_path / "ds"), "--label", "calls=3"]) == 2
    assert main(["batch", path, "-o", str(tmp_path / "ds"), "--label", "patch"]) == 2
    assert main(["batch", path, "-o", str(tmp_path / "ds"), "--dask", "no-such-file"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("ftflame: ") for line in err)


def test_the_readme_queries_run_on_a_dataset(local_ds):
    """README's DuckDB queries (Use), as printed, on a batch's dataset."""
    readme = open(os.path.join(corpus.ROOT, "README.md"), encoding="utf-8").read()
    block = readme.split("```sql\n", 1)[1].split("```", 1)[0].replace("nightly/", f"{local_ds}/")
    con = duckdb.connect()
    statements = [q for q in block.split(";") if any(ln.strip() and not ln.startswith("--") for ln in q.splitlines())]
    results = [con.execute(q).fetchall() for q in statements]
    assert len(results) == 3
    assert results[0] and results[1]  # p50/p99 per operation; nfsd_vfs_write's corrected mean per run
    assert all(r[1] == "t1" for res in results for r in res)  # the label's column


def test_cli_dask_address(tmp_path, capsys):
    """`ftflame batch --dask ADDRESS`: the traces go to the scheduler at that address."""
    distributed = pytest.importorskip("distributed", reason="dask[distributed] is in the test extras")
    two = [corpus.curated("k6.1/s09-depth3/trace.dat"), corpus.curated("k6.1/s04-null/trace.dat")]
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        assert main(["batch", *two, "-o", str(tmp_path / "ds"), "--dask", cluster.scheduler_address]) == 0
        tasks = cluster.scheduler.task_prefixes
    assert "2 written" in capsys.readouterr().err
    assert len(folders(tmp_path / "ds")) == 2
    assert "process_trace" in tasks  # run as the cluster's tasks
