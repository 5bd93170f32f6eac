"""ftflame batch: many traces into one Parquet dataset (docs/design.md,
"Parquet dataset"), each trace's work on a local process pool or an
existing Dask cluster.

The dataset is a folder of folders, one per trace, hive-partitioned:

    DATASET/kernel=K/[LABEL=V/...]trace_id=ID/TABLE.parquet

one file per table of report/parquet.py, each row keyed by `trace_id` (the
trace file's content hash) with `kernel` and the labels as columns too. A
trace's folder is written whole under DATASET/.staging/ and renamed into
place last: one rename, so that a worker killed mid-trace leaves no row
behind in the tables (only a staging folder, which no query's glob
`DATASET/kernel=*/**/TABLE.parquet` reaches, removed by the next batch).
A trace whose id has a folder already (any kernel, any label values) is
skipped: a batch run again adds only what is missing.
"""
from __future__ import annotations

import contextlib
import glob
import os
import re
import resource
import shutil
import signal
import sys
import time

from ftflame.model.errors import InputError
from ftflame.model.names import printable
from ftflame.output import say

STAGING = ".staging"
# trace id: the first 128 bits of the trace file's SHA-256, in hex
ID_HEX = 32
# what a partition value may hold as it is (a kernel release, a label);
# anything else becomes "_" in the folder's name and the column
_SAFE = re.compile(r"[^A-Za-z0-9._+-]")
_LABEL_KEY = re.compile(r"^[a-z][a-z0-9_]*$")
NO_KERNEL = "unknown"  # text traces carry no kernel release


def partition_value(text: str) -> str:
    return _SAFE.sub("_", text) or NO_KERNEL


_RELEASE = re.compile(r"(?:^|\s)(\d+\.\d+\S*)")


def kernel_release(kernel: str) -> str:
    """The release of a trace's kernel string (a trace.dat's uname line,
    "Linux HOST 6.1.0-27-amd64 x86_64 ..."), the partition's value: the
    whole string (made safe) when no release is in it."""
    m = _RELEASE.search(kernel)
    return partition_value(m.group(1) if m else kernel)


def parse_labels(items) -> dict:
    """--label key=value (repeatable) -> {key: value}, in the order given."""
    out: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not _LABEL_KEY.match(key) or not value or _SAFE.search(value):
            raise InputError(f"--label {item}", "not KEY=VALUE (key: lower-case letters, digits, _; value: "
                             "letters, digits, . _ + -)", "e.g. --label patch=v2")
        if key in RESERVED_LABELS or key in out:
            raise InputError(f"--label {item}", f"{key!r} is a column of the tables or given twice",
                             "choose another key")
        out[key] = value
    return out


# a label is a column of every table: no name a table has already
RESERVED_LABELS = {"trace_id", "kernel", "input", "input_bytes", "function", "root", "operation", "calls", "rank",
                   "call", "path", "source", "format", "clock", "cpus", "irq", "gap", "clean", "depth", "flags",
                   "events", "notes", "warnings", "schema", "pid", "cpu", "parent", "path_id", "parent_id"}


def trace_id(path: str) -> str:
    import hashlib  # here: build_parser imports this module for every command

    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()[:ID_HEX]


def expand_inputs(items) -> list:
    """Each argument: a trace file, a collect.sh run directory (its
    trace.dat), or a directory of them (every trace.dat and *.dat below it,
    in name order). Duplicates (by real path) once."""
    out: list = []
    for item in items:
        if os.path.isdir(item):
            if os.path.isfile(os.path.join(item, "trace.dat")):
                out.append(os.path.join(item, "trace.dat"))
                continue
            found = sorted(os.path.join(d, f) for d, _, fs in os.walk(item) for f in fs if f.endswith(".dat"))
            if not found:
                raise InputError(item, "directory holds no trace.dat or *.dat file",
                                 "give traces, collect.sh run directories, or folders of them")
            out.extend(found)
        elif os.path.isfile(item):
            out.append(item)
        else:
            raise InputError(item, "no such file or directory")
    seen: set = set()
    unique = []
    for p in out:
        real = os.path.realpath(p)
        if real not in seen:
            seen.add(real)
            unique.append(p)
    return unique


def clear_staging(dataset: str) -> None:
    """Leftovers of workers killed mid-trace (never read: out of the
    queries' globs)."""
    shutil.rmtree(os.path.join(dataset, STAGING), ignore_errors=True)


def _rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def in_dataset(dataset: str, nlabels: int, rid: str) -> bool:
    """Whether the trace `rid` has a folder in the dataset, whatever its
    kernel and label values: a look at one path per kernel, not a walk of
    the dataset (each worker asks for each trace)."""
    return bool(glob.glob(os.path.join(glob.escape(dataset), "kernel=*", *["*"] * nlabels, f"trace_id={rid}")))


def process_trace(path: str, dataset: str, labels: dict, slowest: int = 20) -> dict:
    """One trace into the dataset (runs in a worker): read, corrected as
    `ftflame report` does, its tables written into a staging folder, renamed
    into place last. Returns what happened (status written, skipped or
    failed, the reason, sizes, the worker's pid and peak RSS)."""
    result = {"path": path, "pid": os.getpid(), "bytes_in": 0, "bytes_out": 0}
    staging = None
    try:
        result["bytes_in"] = os.path.getsize(path)
        rid = result["id"] = trace_id(path)
        if in_dataset(dataset, len(labels), rid):
            return {**result, "status": "skipped", "rss": _rss_bytes()}
        from ftflame import parse
        from ftflame.correct.stage import CorrectionOptions, correct_for_report
        from ftflame.report import parquet

        profile = correct_for_report(parse.read(path, slowest=slowest), path, CorrectionOptions())
        kernel = kernel_release(profile.trace.kernel)
        parts = [f"kernel={kernel}", *(f"{k}={v}" for k, v in labels.items()), f"trace_id={rid}"]
        final = os.path.join(dataset, *parts)
        if os.path.isdir(final):  # done meanwhile (the same trace twice, another batch)
            return {**result, "status": "skipped", "rss": _rss_bytes()}
        keys = {"trace_id": rid, "kernel": kernel, **labels}

        def keyed(name, t):
            if name == "trace":  # its own kernel string (the JSON's trace.kernel) beside the partition's release
                t = t.rename_columns(["uname" if c == "kernel" else c for c in t.column_names])
                t = t.append_column("input", _one(path)).append_column("input_bytes", _one(result["bytes_in"], int))
            return parquet.with_columns(t, keys)

        staging = os.path.join(dataset, STAGING, f"{rid}-{os.getpid()}-{os.urandom(4).hex()}")
        os.makedirs(staging)
        result["bytes_out"] = parquet.write_tables(staging, parquet.table_stream(profile), keyed)
        os.makedirs(os.path.dirname(final), exist_ok=True)
        try:
            os.rename(staging, final)
        except OSError:
            if os.path.isdir(final):  # another worker's rename came first
                return {**result, "status": "skipped", "rss": _rss_bytes()}
            raise
        staging = None
        return {**result, "status": "written", "kernel": kernel, "rss": _rss_bytes()}
    except InputError as e:
        return {**result, "status": "failed", "reason": e.line(), "bad_input": True, "rss": _rss_bytes()}
    except MemoryError:
        return {**result, "status": "failed", "reason": f"{path}: out of memory", "rss": _rss_bytes()}
    except OSError as e:
        return {**result, "status": "failed", "reason": f"{e.filename or path}: {e.strerror or e}", "rss": _rss_bytes()}
    except Exception as e:  # an ftflame bug: this trace fails, the batch goes on
        return {**result, "status": "failed", "reason": f"{path}: internal error: {type(e).__name__}: {e}",
                "rss": _rss_bytes()}
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


def _one(value, kind=str):
    import pyarrow as pa

    return pa.array([value], type=pa.string() if kind is str else pa.int64())


class Tally:
    """The batch's progress and totals: a status line on stderr (a terminal:
    rewritten in place; else a line per trace), failures a line each."""

    def __init__(self, total: int, quiet: bool):
        self.total = total
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.start = time.monotonic()
        self.counts = {"written": 0, "skipped": 0, "failed": 0}
        self.bad_input = 0
        self.bytes_in = 0
        self.bytes_out = 0
        self.rss: dict = {}  # worker pid -> its peak RSS

    @property
    def done(self) -> int:
        return sum(self.counts.values())

    def rates(self) -> str:
        dt = max(time.monotonic() - self.start, 1e-6)
        n = self.counts["written"]
        return f"{n / dt:.2f} traces/s, {self.bytes_in / dt / 1e6:.1f} MB/s"

    def add(self, r: dict) -> None:
        self.counts[r["status"]] += 1
        if r["status"] == "written":
            self.bytes_in += r["bytes_in"]
            self.bytes_out += r["bytes_out"]
        if r.get("rss"):
            self.rss[r["pid"]] = max(self.rss.get(r["pid"], 0), r["rss"])
        if r["status"] == "failed":
            self.bad_input += bool(r.get("bad_input"))
            self._clear()
            say(f"batch: failed: {r['reason']}")
        if self.quiet:
            return
        # a path shown, not sent (output.say's rule for every line on stderr)
        line = printable(f"ftflame: batch: {self.done}/{self.total} done ({self.rates()}): {r['status']} {r['path']}")
        if self.tty:
            sys.stderr.write("\r\033[K" + line[:shutil.get_terminal_size().columns - 1])
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def _clear(self) -> None:
        if self.tty and not self.quiet:
            sys.stderr.write("\r\033[K")

    def summary(self, dataset: str) -> str:
        dt = time.monotonic() - self.start
        c = self.counts
        peak = max(self.rss.values()) / 2**20 if self.rss else 0.0
        return (f"ftflame: batch: {self.total} traces: {c['written']} written, {c['skipped']} already in {dataset}, "
                f"{c['failed']} failed; {dt:.1f} s ({self.rates()}); {self.bytes_out:,} bytes of Parquet; "
                f"peak RSS per worker {peak:.0f} MiB ({len(self.rss)} workers)")


def run_local(paths, dataset, labels, slowest, jobs, tally) -> None:
    """Each trace on a process pool of `jobs` workers. A worker that dies
    (killed, out of memory) breaks the pool: its trace and those not done
    yet are reported failed; the next batch does them."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    # forkserver: workers forked from a clean process, not from this one
    # (whose threads, a test's or a library's, a fork would copy half-way)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["ftflame.batch", "ftflame.report.parquet", "ftflame.correct.stage"])
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)
    try:
        futures = {pool.submit(process_trace, p, dataset, labels, slowest): p for p in paths}
        for fut in as_completed(futures):
            try:
                tally.add(fut.result())
            except BrokenProcessPool:
                tally.add({"path": futures[fut], "status": "failed", "pid": 0,
                           "reason": f"{futures[fut]}: a worker process died (killed, or out of memory): "
                                     "not written; run the batch again"})
    except BaseException:
        # Ctrl-C, SIGTERM: the traces not started are dropped and the
        # workers ended now, not after every queued trace (shutdown's
        # default); a trace cut short leaves only its staging folder
        workers = list(getattr(pool, "_processes", None) or ())
        pool.shutdown(wait=False, cancel_futures=True)
        for pid in workers:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        raise
    pool.shutdown(wait=True)


def dask_client(address: str):
    try:
        from distributed import Client
    except ImportError:
        raise InputError(f"--dask {address}", "needs dask.distributed, not installed",
                         "pip install 'ftflame[dask]'") from None
    try:
        if "://" in address:
            return Client(address, timeout="20s")
        if os.path.isfile(address):
            return Client(scheduler_file=address, timeout="20s")
    except (OSError, TimeoutError) as e:
        raise InputError(f"--dask {address}", f"cannot reach the Dask scheduler: {e}",
                         "start it (dask scheduler) or give its address") from None
    raise InputError(f"--dask {address}", "neither a scheduler address (tcp://HOST:PORT) nor a scheduler file")


def run_dask(client, paths, dataset, labels, slowest, tally) -> None:
    """Each trace a task of the Dask cluster `client` reaches; the dataset's
    folder must be the same path on every worker (a shared file system)."""
    from distributed import as_completed

    futures = {client.submit(process_trace, p, dataset, labels, slowest, pure=False): p for p in paths}
    try:
        for fut in as_completed(list(futures)):
            try:
                tally.add(fut.result())
            except Exception as e:  # the task itself never raises: a worker lost (KilledWorker), a cancellation
                tally.add({"path": futures[fut], "status": "failed", "pid": 0,
                           "reason": f"{futures[fut]}: the Dask task failed ({type(e).__name__}: {e}): not written; "
                                     "run the batch again"})
    except BaseException:  # Ctrl-C, SIGTERM: the cluster's queued traces dropped
        client.cancel(list(futures))
        raise


def run_batch(inputs, dataset: str, labels: dict | None = None, jobs: int | None = None, client=None,
              slowest: int = 20, quiet: bool = False) -> Tally:
    """The batch (the CLI's, and a library call: `client`, a
    distributed.Client, runs it on that cluster)."""
    # absolute: a Dask worker's working directory is its own
    paths = [os.path.abspath(p) for p in expand_inputs(inputs)]
    dataset = os.path.abspath(dataset)
    labels = labels or {}
    if os.path.exists(dataset) and not os.path.isdir(dataset):
        raise InputError(dataset, "is there and is not a folder", "give a dataset folder")
    parent = os.path.dirname(os.path.abspath(dataset))
    if not os.path.isdir(parent):
        raise InputError(dataset, "output directory does not exist")
    os.makedirs(dataset, exist_ok=True)
    clear_staging(dataset)
    tally = Tally(len(paths), quiet)
    if client is not None:
        run_dask(client, paths, dataset, labels, slowest, tally)
    else:
        run_local(paths, dataset, labels, slowest, jobs or os.cpu_count() or 1, tally)
    tally._clear()
    return tally


def add_parser(sub, formatter, count_arg=int) -> None:
    """`ftflame batch`'s arguments; count_arg: the type of --slowest (the
    CLI's, bounded as report's)."""
    b = sub.add_parser(
        "batch", help="many traces into one Parquet dataset (local process pool or a Dask cluster)",
        description="Report every trace given into one Parquet dataset (docs/design.md, \"Parquet dataset\"): "
                    "a folder per trace, hive-partitioned by kernel and by the labels, every table keyed "
                    "by trace_id (the trace file's content hash). Traces already in the dataset are skipped.",
        epilog=BATCH_EPILOG, formatter_class=formatter)
    b.add_argument("inputs", nargs="+", metavar="TRACE_OR_RUN_DIR",
                   help="trace.dat or text traces, collect.sh run directories, or folders of them")
    b.add_argument("-o", "--output", metavar="DATASET", required=True, help="the dataset's folder (made if new)")
    b.add_argument("--label", metavar="KEY=VALUE", action="append", default=[],
                   help="a column and partition for every trace of this batch, e.g. patch=v2 (repeatable; "
                        "use the same keys for every batch into one dataset)")
    b.add_argument("-j", "--jobs", metavar="N", type=int, default=None,
                   help="local worker processes (default: one per core)")
    b.add_argument("--dask", metavar="ADDRESS",
                   help="run each trace on an existing Dask cluster: its scheduler's address "
                        "(tcp://HOST:PORT) or scheduler file (needs pip install 'ftflame[dask]')")
    b.add_argument("--slowest", metavar="N", type=count_arg, default=20,
                   help="keep the N slowest root calls per root function and operation, with their trees")
    b.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr (failures still)")
    b.set_defaults(func=cmd_batch)


BATCH_EPILOG = """\
examples:
  ftflame batch runs/*/ -o nightly/ --label patch=v2
  ftflame batch traces/ -o nightly/ --dask tcp://scheduler:8786
  duckdb -c "SELECT kernel, patch, operation,
               quantile_disc(dur_ns, 0.99) AS p99_ns
             FROM read_parquet('nightly/kernel=*/**/root_calls.parquet')
             GROUP BY ALL ORDER BY ALL"

exit status: 0 when every trace was written or already there; 2 when some
  were bad input (each said on one line, the rest written); 1 when a worker
  died or failed otherwise (run the batch again: what was written stays).
"""


def cmd_batch(args) -> int:
    labels = parse_labels(args.label)
    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"--jobs {args.jobs}", "must be 1 or more")
    client = dask_client(args.dask) if args.dask else None
    try:
        tally = run_batch(args.inputs, args.output, labels, args.jobs, client, args.slowest, args.quiet)
    finally:
        if client is not None:
            client.close()
    if not args.quiet:
        say(tally.summary(args.output).removeprefix("ftflame: "))
    failed = tally.counts["failed"]
    if not failed:
        return 0
    return 2 if tally.bad_input == failed else 1
