"""The correction stage's memory, in whole-tree columns (8 bytes a call path):
what correct() and the balance sheet keep and their peaks, measured with
tracemalloc (numpy reports its arrays to it) on a curated fixture. Peak RSS
of a report is O(call paths), and these stages' columns are most of what
comes after the read (docs/performance.md, "Where the memory goes"): a
temporary added back to them fails here, not only on a long trace nobody
reports in `make test`. The bounds leave about one column of room; before
the columns were made in place, correct() kept 9 and peaked at 13.6, the
balance sheet peaked at 5.4 (now 2-3.2 on the fixtures and on s14)."""
from __future__ import annotations

import os
import tracemalloc

import pytest

from ftflame import parse
from ftflame.correct import balance, calibration, corrections, operations
from helpers import leafroots
from helpers.corpus import curated

TRACE = "k6.1/s10-lost/trace.dat"  # 6,142 call paths, lost events, irq subtrees


@pytest.fixture(scope="module")
def profile():
    path = curated(TRACE)
    p = parse.read(path)
    make_shape_views(p)
    return p, calibration.choose(p, path, None, None, None)


def make_shape_views(p) -> None:
    """The tree's shape views are the Profile's, made once and shared by
    every stage: made before, so that only a stage's own columns count."""
    for view in ("level_order", "levels", "children", "tree_tops", "pseudo_roots"):
        getattr(p, view)


def columns_of(fn, nrows: int) -> tuple:
    """(kept, peak) of fn() in whole-tree float64 columns, the second time
    (the first imports modules and fills caches the Profile keeps)."""
    fn()
    tracemalloc.start()
    try:
        result = fn()
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return kept / (8 * nrows), peak / (8 * nrows)


@pytest.mark.parametrize("irqs", corrections.IRQ_MODES)
def test_correct_keeps_its_columns_only(profile, irqs):
    p, cal = profile
    assert p.nrows > 5000  # columns big enough to dwarf the stage's small objects
    kept, peak = columns_of(lambda: corrections.correct(p, cal, irqs=irqs), p.nrows)
    # kept: corrected incl and excl, calls, hook cost, irq removed, clamp
    # ns (6.3 with the flags and small objects); off-CPU removed is one
    # shared zero when nothing is removed
    assert kept < 7.5, f"correct() keeps {kept:.1f} columns"
    assert peak < 11.5, f"correct() peaks at {peak:.1f} columns"


def test_balance_sheet_reads_the_root_rows_only(profile):
    p, cal = profile
    p = corrections.correct(p, cal)
    make_shape_views(p)
    kept, peak = columns_of(lambda: balance.attach(p), p.nrows)
    assert kept < 1.0, f"the balance sheet keeps {kept:.1f} columns"
    assert peak < 4.0, f"the balance sheet peaks at {peak:.1f} columns"


def test_the_report_does_not_keep_the_corrections_own_views():
    """levels (and level_order, whose views they are) and tree_tops (a
    whole-tree column each) serve the correction only: the renderers' peak
    comes after it, without them."""
    from ftflame.correct.stage import CorrectionOptions, correct_for_report

    path = curated(TRACE)
    p = correct_for_report(parse.read(path), path, CorrectionOptions())
    assert not {"level_order", "levels", "tree_tops"} & p.__dict__.keys()
    assert len(p.levels) > 1  # made again when a renderer asks (the flame graph's tree)


def test_operation_nodes_let_go_of_the_levels_they_made():
    """The operations' call paths read the levels (views of level_order) and
    let go of them after, when the Profile had not kept them: level_order
    too, or the levels' rows stay alive under the renderer's peak."""
    path = curated(TRACE)
    p = parse.read(path)
    assert operations.operation_table(p)  # a trace with operations: the levels are walked
    operations.operation_nodes(p)
    assert not {"level_order", "levels", "tree_tops"} & p.__dict__.keys()


# ---- text traces of many root calls, and long text traces ------------------

# The resident size of a sanitized run is ASan's (redzones, a quarantine of
# freed blocks): `make test ASAN=1` checks memory errors, `make test` the footprint.
rss_bound = pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                               reason="peak RSS under ASan measures its allocator, not ftflame")

def roots_text(n: int) -> bytes:
    """A function_graph text trace of n short root calls (leaves at depth 0,
    50 functions on 2 CPUs): a row per root call is all the memory that grows
    with it."""
    return leafroots.trace(leafroots.line(i % 2, f"{1 + i % 97}.000", f"f_{i % 50}") for i in range(n)).encode()


_READ_HIGH_WATER = r"""
import sys
from ftflame import parse
from ftflame.correct import corrections  # noqa: F401  (imports before the mark)
def status(key):
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(key + ":"))
before = status("VmRSS")
open("/proc/self/clear_refs", "w").write("5")  # the high-water mark from here
p = parse.read(sys.argv[1])
print(len(p.samples), (status("VmHWM") - before) * 1024)
"""


@rss_bound
def test_the_read_of_many_root_calls_holds_one_row_each(tmp_path):
    """The read's high-water mark per root call: the exported table's row
    (160 bytes) and the builder's (144) were both whole at its end (then
    given back as they were copied: 180); now the builder's columns are
    handed over, 25 bytes a root call grown a quarter at a time (about 43
    with the reader's and the allocator's own)."""
    import subprocess
    import sys

    if not os.access("/proc/self/clear_refs", os.W_OK):
        pytest.skip("no /proc/self/clear_refs here: the high-water mark cannot be reset")
    trace = tmp_path / "roots.txt"
    trace.write_bytes(roots_text(400_000))
    out = subprocess.run([sys.executable, "-c", _READ_HIGH_WATER, str(trace)], check=True,
                         capture_output=True, text=True).stdout.split()
    roots, grew = int(out[0]), int(out[1])
    assert roots == 400_000
    assert grew / roots < 64, f"the read peaks at {grew / roots:.0f} bytes a root call"


def test_correct_per_root_call_makes_no_whole_column_temporaries(tmp_path):
    """The corrected durations of the root calls, computed in place: before,
    nine float columns and the formula's temporaries (over 100 bytes a root
    call at the peak); now the result and about three columns at a time."""
    trace = tmp_path / "roots.txt"
    trace.write_bytes(roots_text(200_000))
    p = parse.read(str(trace))
    make_shape_views(p)
    cal = calibration.choose(p, str(trace), None, None, None)
    corrections.correct(p, cal)
    tracemalloc.start()
    try:
        result = corrections.correct(p, cal)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    n = len(p.samples)
    assert kept / n < 12, f"correct() keeps {kept / n:.0f} bytes a root call"
    assert peak / n < 48, f"correct() peaks at {peak / n:.0f} bytes a root call"


def test_root_latency_table_peaks_at_a_few_columns_per_root_call(tmp_path):
    """The root calls' latency rows (what every report leads with) group the
    root calls by one sort: before, of an (n, 3) array of (root function,
    operation, interrupt context) through np.unique(axis=0), over 100 bytes
    a root call at the peak (the text report's highest point); now of one
    int64 key a root call."""
    trace = tmp_path / "roots.txt"
    trace.write_bytes(roots_text(200_000))
    p = parse.read(str(trace))
    make_shape_views(p)
    p = corrections.correct(p, calibration.choose(p, str(trace), None, None, None))
    tracemalloc.start()
    try:
        cols = operations._root_columns(p)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(cols["calls"]) == len(p.samples) == 200_000
    assert peak / len(p.samples) < 100, f"the root latency table peaks at {peak / len(p.samples):.0f} bytes a root call"


_REPORT_HIGH_WATER = r"""
import sys
from ftflame.cli import main
rc = main(["report", "-q", sys.argv[1], "-o", sys.argv[2]])
print(next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")))
sys.exit(rc)
"""


@rss_bound
def test_a_400_mb_text_trace_is_read_in_flat_memory(tmp_path):
    """Text is tokenized a chunk at a time and a call path is kept once,
    however often it repeats: 400 MB of a real tracefs trace (the bundled
    fixture's records 290 times over, streamed through a pipe, never on disk)
    peak where the fixture alone does (about 40 MiB), far under 300 MiB."""
    import subprocess
    import sys
    import threading

    from helpers.corpus import ROOT
    from helpers.longtext import repeated

    src = os.path.join(ROOT, "tests", "data", "fixtures", "k6.1", "s07-tracefs-text", "trace-default.txt.gz")
    out = tmp_path / "report.txt"
    # the peak read by the command itself (VmHWM, its own memory since exec):
    # a child's ru_maxrss counts the forking process's pages too
    proc = subprocess.Popen([sys.executable, "-c", _REPORT_HIGH_WATER, "-", str(out)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    size = 0

    def feed():
        nonlocal size
        try:
            for chunk in repeated(src, 400 << 20):
                proc.stdin.write(chunk)
                size += len(chunk)
        finally:
            proc.stdin.close()

    writer = threading.Thread(target=feed)
    writer.start()
    peak = proc.stdout.read()  # the child's one line, at its end
    writer.join()
    err = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    assert proc.wait() == 0, err.decode()
    assert size >= 400 << 20
    head = out.read_text().splitlines()[1]
    assert int(head.split()[2].replace(",", "")) > 7_000_000, head  # "2 CPUs, N events": all of it read
    peak_mib = int(peak) / 1024
    assert peak_mib < 150, f"{size >> 20} MiB of text peaked at {peak_mib:.0f} MiB"


@rss_bound
def test_the_read_of_many_distinct_root_functions_keeps_small_slowest_trees(tmp_path):
    """A root function per call (100k distinct names, each call kept as its
    function's slowest): each root path's heap of kept calls had room for
    --slowest (20) calls at once, 1.3 KB, and a kept one-call tree held the
    task's first 64-call buffer, 1.5 KB: the read peaked at 3.2 KB a root
    function (2 M of them: 6.6 GB). The heap now grows as calls come and a
    small tree is copied to a block of its size: under 1 KB."""
    import subprocess
    import sys

    if not os.access("/proc/self/clear_refs", os.W_OK):
        pytest.skip("no /proc/self/clear_refs here: the high-water mark cannot be reset")
    n = 100_000
    trace = tmp_path / "distinct.txt"
    trace.write_bytes(leafroots.trace(leafroots.line(0, f"{1 + i % 997}.000", f"f_{i}") for i in range(n)).encode())
    out = subprocess.run([sys.executable, "-c", _READ_HIGH_WATER, str(trace)], check=True,
                         capture_output=True, text=True).stdout.split()
    roots, grew = int(out[0]), int(out[1])
    assert roots == n
    assert grew / n < 1200, f"the read peaks at {grew / n:.0f} bytes a distinct root function"


# The bytes a one-line root call costs through a whole report, counted: the
# root-call columns the core keeps (its own accounting, outside tracemalloc)
# plus the high-water mark of what the correction and the renderer allocate
# after the read (tracemalloc: numpy reports its arrays to it), per root call
# added (between two trace lengths: the report's fixed costs, chunk buffers,
# the slowest trees, are no root call's). Before the columns (branch
# rootcols) the core's rows and the Profile's int64 table were 144 and 160
# bytes a root call, and a text report of them peaked at about 230 bytes a
# root call above its base (docs/performance.md).
ROOT_COLUMN_BYTES = 25  # calltime 8, node 4, dur 4, pid 4, cpu 2, op 2, flags 1
ROOT_CALL_BOUND = 48


def _report_bytes(path: str, fmt: str) -> tuple:
    """(root calls, bytes the columns keep, the core's columns' peak while
    it read, the columns plus the report's peak after the read)."""
    from ftflame.correct.stage import CorrectionOptions, correct_for_report
    from ftflame.report import RENDERERS
    from ftflame.report.options import render_options

    p = parse.read(path)
    core_peak = getattr(p.samples, "peak_bytes", p.samples.nbytes)
    tracemalloc.start()
    try:
        q = correct_for_report(p, path, CorrectionOptions())
        with open(os.devnull, "wb") as f:
            RENDERERS[fmt].write(q, render_options(fmt), f)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return len(p.samples), p.samples.nbytes, core_peak, p.samples.nbytes + peak


@pytest.mark.parametrize("fmt", ["txt", "json", "html"])
def test_a_root_call_costs_at_most_48_bytes_through_every_report(tmp_path, fmt):
    """100,000 and 300,000 one-line root calls (50 functions on 2 CPUs):
    the columns hold 25 bytes a root call, the core's growing them at most
    a quarter more, and each root call added costs the whole report at
    most 48 bytes at its peak (about 46 as text, 41 as JSON, 37 as HTML)."""
    warm = tmp_path / "warm.txt"  # imports and caches first: not a root call's
    warm.write_bytes(roots_text(2_000))
    _report_bytes(str(warm), fmt)
    runs = []
    for n in (100_000, 300_000):
        trace = tmp_path / f"roots-{n}.txt"
        trace.write_bytes(roots_text(n))
        runs.append(_report_bytes(str(trace), fmt))
        trace.unlink()
    (n0, kept0, _, peak0), (n1, kept1, core1, peak1) = runs
    assert (n0, n1) == (100_000, 300_000)
    assert kept1 / n1 <= ROOT_COLUMN_BYTES, f"the root calls' columns hold {kept1 / n1:.0f} bytes a root call"
    assert core1 / n1 <= ROOT_COLUMN_BYTES * 1.25 + 1, f"the core's columns peaked at {core1 / n1:.0f} bytes a root call"
    per_root = (peak1 - peak0) / (n1 - n0)
    assert per_root <= ROOT_CALL_BOUND, f"the {fmt} report peaks at {per_root:.0f} bytes a root call"


# ---- ftflame diff ------------------------------------------------------------

def _diff_bytes(paths: tuple, fmts: tuple) -> tuple:
    """(root calls of both sides, the columns plus the peak of what the
    diff allocates after the reads: both sides' corrections, the model
    and its outputs in fmts, one after the other)."""
    from ftflame.correct.stage import CorrectionOptions, correct_for_report
    from ftflame.diff import DiffOptions, compare_runs
    from ftflame.diff.load import Run
    from ftflame.report import DIFF_RENDERERS

    read = [parse.read(path) for path in paths]
    kept = sum(p.samples.nbytes for p in read)
    roots = sum(len(p.samples) for p in read)
    opts = DiffOptions()
    tracemalloc.start()
    try:
        runs = [Run(path, path, correct_for_report(p, path, CorrectionOptions())) for path, p in zip(paths, read)]
        del read
        d = compare_runs(tuple(runs[:1]), tuple(runs[1:]), opts)
        del runs
        for fmt in fmts:
            with open(os.devnull, "wb") as f:
                DIFF_RENDERERS[fmt].write(d, opts, f)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return roots, kept + peak


def _diff_pair(tmp_path, n: int) -> tuple:
    """Two traces of n one-line root calls, AFTER's durations shifted."""
    paths = []
    for side, shift in (("before", 0), ("after", 3)):
        trace = tmp_path / f"{side}-{n}.txt"
        trace.write_bytes(leafroots.trace(leafroots.line(i % 2, f"{1 + (i + shift) % 97}.000", f"f_{i % 50}")
                                          for i in range(n)).encode())
        paths.append(str(trace))
    return tuple(paths)


@pytest.mark.parametrize("fmts", [("txt", "json"), ("html",)], ids="+".join)
def test_a_root_call_costs_a_diff_at_most_48_bytes(tmp_path, fmts):
    """`ftflame diff` of 100,000 and of 300,000 one-line root calls a side:
    each root call added (of either side) costs the diff and its output at
    most 48 bytes at the peak (about 36: its 25 bytes of columns, its
    corrected duration, a byte saying its group of items). Before, the
    model made its root calls' value entries whole, per level (item,
    value, weight and width, 8 bytes each) and their sorts: about 220;
    and the HTML's latency plot made a name, a start and a duration a
    root call as Python lists before thinning them to the slowest: 69
    (now about 33: two passes over the columns, a chunk at a time)."""
    _diff_bytes(_diff_pair(tmp_path, 2_000), fmts)  # imports and caches first
    runs = []
    for n in (100_000, 300_000):
        paths = _diff_pair(tmp_path, n)
        runs.append(_diff_bytes(paths, fmts))
        for path in paths:
            os.unlink(path)
    (n0, peak0), (n1, peak1) = runs
    assert (n0, n1) == (200_000, 600_000)
    per_root = (peak1 - peak0) / (n1 - n0)
    assert per_root <= ROOT_CALL_BOUND, f"the diff's {'+'.join(fmts)} peaks at {per_root:.1f} bytes a root call"


@pytest.mark.parametrize("runs", [("k6.12/s30-repeat/run1/trace.dat", "k6.12/s30-repeat/run2/trace.dat",
                                   "k6.12/s30-repeat/run3/trace.dat"), ("k6.1/s17-mixed-ops/trace.dat",), "one"])
def test_the_diff_takes_its_medians_a_group_at_a_time_to_the_last_bit(tmp_path, monkeypatch, runs):
    """A side's medians and log moments, made a group of items at a time
    from the root calls' columns (model._entry_stats), are the floats that
    stats.weighted_medians and stats.log_moments give over every entry at
    once (the diff's figures before, and every output, unchanged): with
    groups of 64 entries and chunks of 1,000 root calls, on repeated real
    runs, on the operations of an nfsd trace and on one root function of
    20,000 root calls (its own group: the partition's median)."""
    import numpy as np

    from ftflame.correct.stage import CorrectionOptions, correct_for_report
    from ftflame.diff import model, stats

    if runs == "one":
        trace = tmp_path / "one.txt"
        trace.write_bytes(leafroots.trace(leafroots.line(i % 2, f"{1 + i * 7 % 97}.{i % 1000:03d}", "f_0" if i % 5 else "g")
                                          for i in range(20_000)).encode())
        paths = [str(trace)]
    else:
        paths = [curated(r) for r in runs]
    profiles = [correct_for_report(parse.read(p), p, CorrectionOptions()) for p in paths]
    monkeypatch.setattr(model, "GROUP_ENTRIES", 64)
    monkeypatch.setattr(model, "CHUNK", 1_000)
    checked = 0
    for level in model.LEVELS:
        items = [model._run_items(p)[level] for p in profiles]
        keys = tuple(sorted(set().union(*(ri.keys for ri in items))))
        index = {k: i for i, k in enumerate(keys)}
        ats = [np.array([index[k] for k in ri.keys], dtype=np.int64) for ri in items]
        per_run, median, pvar = model._entry_stats(items, ats, len(keys))
        whole = []
        for ri, at, (med, cn, lvar) in zip(items, ats, per_run):
            roots = list(ri.roots.chunks()) if ri.roots is not None else []
            e = (np.concatenate([ri.entry_item] + [it for it, _ in roots]),
                 np.concatenate([ri.entry_value] + [v for _, v in roots]),
                 np.concatenate([ri.entry_weight] + [np.ones(len(v)) for _, v in roots]))
            wd = np.concatenate([ri.entry_width] + [np.zeros(len(v)) for _, v in roots])
            assert np.array_equal(stats.weighted_medians(*e, len(at), wd), med[at])
            n, _, var = stats.log_moments(*e, len(at))
            assert np.array_equal(n, cn[at]) and np.array_equal(var, lvar[at])
            whole.append((at[e[0]], e[1], e[2], wd))
            checked += len(e[0])
        e = tuple(np.concatenate(x) for x in zip(*whole))
        assert np.array_equal(stats.weighted_medians(*e[:3], len(keys), e[3]), median)
        assert np.array_equal(stats.log_moments(*e[:3], len(keys))[2], pvar)
    assert checked > 10_000
