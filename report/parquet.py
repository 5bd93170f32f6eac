"""Parquet output, schema "ftflame-parquet/1" (the contract in docs/design.md,
"Parquet"): the Profile's tables for DuckDB, Polars, pandas, Spark.

The figures are the JSON's (report/jsonout.py, report/callsjson.py), read
from the same places in the model and the correction stage, never computed
here: integers to the nanosecond, and every corrected (float) figure
rounded to 0.1 ns exactly as the JSON prints it (`_r1`), so that a query
over these tables and a reader of the JSON get the same numbers, equal as
doubles. Built from numpy columns into Arrow arrays: a trace's root calls
can be millions, and an object per row would cost more than the read.

`tables(p)` gives {name: pyarrow.Table}; `write_folder` writes them into a
folder atomically (ftflame report -o NAME.parquet/); ftflame/batch.py writes
them into a dataset, a folder per trace.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ftflame import __version__
from ftflame.correct import corrections
from ftflame.correct.operations import (
    dominant_steps,
    operation_table,
    root_columns,
    slowest_batches,
    slowest_columns,
)
from ftflame.model.errors import InputError
from ftflame.model.profile import SAMPLE_GAP, SAMPLE_IRQ, SAMPLE_PARTIAL, Profile
from ftflame.output import TERMINATING

from .common import node_flags, report_notes, retval_text
from .jsonout import calibration_object, tree_order
from .options import DEFAULT, RenderOptions

SCHEMA = "ftflame-parquet/1"
# the files of a Parquet folder, one per table, in this order
TABLES = ("trace", "functions", "paths", "root_calls", "operations", "root_latency", "slowest", "slowest_calls")
SUFFIX = ".parquet"
# "%.1f" % x == repr(round(x, 1)) for finite |x| below this (jsonout.REPR_SAFE)
_F1_SAFE = 1e14
# zstd: about a third of snappy's bytes on these columns (sorted ids, small
# integers, repeated names), at a write cost well below the read's
COMPRESSION = "zstd"


def _r1(values) -> np.ndarray:
    """Each value rounded to 0.1 ns as the JSON prints it (json.dumps(round(x,
    1)), "%.1f" in C below _F1_SAFE): the double nearest that decimal, NaN
    kept (null in the tables), infinities too. rint(x * 10) / 10 is that
    double (an integer k < 2**53 divided by 10, correctly rounded) whenever
    x * 10, off by half an ulp at most, is not within a few ulps of a
    half: the rows that are (x.x5 exactly, or near it) go through Python's
    round, which rounds the double's exact decimal value."""
    a = np.ascontiguousarray(values, dtype=np.float64)
    if not len(a):
        return a
    with np.errstate(invalid="ignore", over="ignore"):
        y = a * 10.0
        out = np.rint(y) / 10.0
        frac = np.abs(y - np.trunc(y))
        near = np.abs(frac - 0.5) <= np.abs(y) * 2.0 ** -50 + 2.0 ** -60
    finite = np.isfinite(a)
    slow = finite & (near | ~(np.abs(a) < _F1_SAFE))
    if slow.any():
        out[slow] = [round(x, 1) for x in a[slow].tolist()]
    out[~finite] = a[~finite]  # infinities as they are (the JSON's Infinity), NaN null
    return out


def _f(values, null=None) -> pa.Array:
    """A float64 column of _r1 figures; NaN (and the rows of `null`) null."""
    v = _r1(values)
    mask = np.isnan(v) if null is None else (np.isnan(v) | np.asarray(null, dtype=bool))
    return pa.array(v, type=pa.float64(), mask=mask if mask.any() else None)


def _i(values, null=None) -> pa.Array:
    v = np.ascontiguousarray(values, dtype=np.int64)
    if null is None:
        return pa.array(v, type=pa.int64())
    return pa.array(v, type=pa.int64(), mask=np.asarray(null, dtype=bool))


def _b(values) -> pa.Array:
    return pa.array(np.asarray(values) != 0, type=pa.bool_())


def _names(index, names, null=None) -> pa.Array:
    """Strings by index into names, dictionary-encoded (a function's name
    once per file, not once per row); null where `null` is set."""
    idx = np.ascontiguousarray(index, dtype=np.int32)
    mask = None if null is None else np.asarray(null, dtype=bool)
    if mask is not None:
        idx = np.where(mask, 0, idx).astype(np.int32)
    return pa.DictionaryArray.from_arrays(pa.array(idx, type=pa.int32(), mask=mask),
                                          pa.array(list(names) or [""], type=pa.string()))


def _lists(offsets: np.ndarray, values: pa.Array) -> pa.Array:
    return pa.ListArray.from_arrays(pa.array(np.ascontiguousarray(offsets, dtype=np.int32), type=pa.int32()),
                                    values)


def _raw_stats(out: dict, prefix: str, sums, calls, mean, mins, maxs, pcts) -> None:
    """The columns of a JSON raw statistics object (jsonout._raw_stats):
    {prefix}_{sum,min,max,mean,p50,p90,p99}_ns; min and max 0 without calls."""
    has = np.asarray(calls) != 0
    out[prefix + "_sum_ns"] = _i(sums)
    out[prefix + "_min_ns"] = _i(np.where(has, mins, 0))
    out[prefix + "_max_ns"] = _i(np.where(has, maxs, 0))
    out[prefix + "_mean_ns"] = _f(mean)
    for q, name in enumerate(("p50", "p90", "p99")):
        out["%s_%s_ns" % (prefix, name)] = _i(np.asarray(pcts)[:, q])


def _corr_stats(out: dict, prefix: str, stats, calls) -> None:
    """The columns of a JSON corrected statistics object (jsonout._corr_stats):
    the 7 figures, the clean calls they cover, approx."""
    cols, approx, _, _ = stats
    for k, name in enumerate(corrections.STAT_NAMES):
        out["%s_%s_ns" % (prefix, name)] = _f(cols[k])
    out[prefix + "_calls"] = _i(calls)
    out[prefix + "_approx"] = _b(approx)


def _corr_as_raw(out: dict, prefix: str, raw_prefix: str, calls) -> None:
    """No correction: the corrected figures are the raw ones (as the JSON
    writes them), over every call, none approximate."""
    for name in corrections.STAT_NAMES:
        col = out["%s_%s_ns" % (raw_prefix, name)]
        out["%s_%s_ns" % (prefix, name)] = col.cast(pa.float64()) if name != "mean" else col
    out[prefix + "_calls"] = _i(calls)
    out[prefix + "_approx"] = pa.array(np.zeros(len(calls), dtype=bool))


def trace_table(p: Profile) -> pa.Table:
    """One row: the input, the counters, the calibration and its fit, the notes."""
    t, c = p.trace, p.counters
    cal = calibration_object(p)
    fit = cal["fit"] if isinstance(cal["fit"], dict) else None

    def int_map(d) -> pa.Array:
        return pa.array([[(int(k), int(v)) for k, v in sorted(d.items())]], type=pa.map_(pa.int32(), pa.int64()))

    row = {
        "schema": pa.array([SCHEMA]), "tool_version": pa.array([__version__]),
        "source": pa.array([t.source]), "format": pa.array([t.format]), "kernel": pa.array([t.kernel]),
        "clock": pa.array([t.clock]), "cpus": _i([t.cpus]), "tracer_version": pa.array([t.tracer_version]),
        "file_version": _i([t.file_version]), "compression": pa.array([t.compression]),
        "per_task_stacks": pa.array([bool(t.per_task)]), "irq_source": pa.array([t.irq_source]),
        "has_sched_switch": pa.array([bool(p.offcpu_known)]),
        "events": _i([c.get("events", 0)]), "entries": _i([c.get("entries", 0)]), "exits": _i([c.get("exits", 0)]),
        "lost_events": _i([c.get("lost_events", 0)]),
        **{k: _i([c.get(k, 0)]) for k in ("open_at_end", "unterminated", "orphan_exits", "gap_calls")},
        "events_per_cpu": int_map(t.events_per_cpu), "lost_events_per_cpu": int_map(p.lost_per_cpu),
        "lost_gaps_unknown_size_per_cpu": int_map(p.lost_gaps_unknown_per_cpu),
        "counters": pa.array([[(str(k), int(v)) for k, v in c.items()]], type=pa.map_(pa.string(), pa.int64())),
        "notes": pa.array([report_notes(p)], type=pa.list_(pa.string())),
        "warnings": pa.array([[str(w) for w in p.warnings]], type=pa.list_(pa.string())),
        "functions": _i([len(p.functions)]), "paths": _i([p.nrows]), "root_calls": _i([len(p.samples)]),
        "calibration_source": pa.array([cal["source"]]), "calibration_applied": pa.array([bool(cal["applied"])]),
        "o_in_ns": pa.array([float(cal["o_in_ns"])]), "o_out_ns": pa.array([float(cal["o_out_ns"])]),
        "calibration_method": pa.array([cal["method"]]),
        "fit_ok": pa.array([None if fit is None else bool(fit.get("ok"))], type=pa.bool_()),
        "fit_reasons": pa.array([None if fit is None else [str(r) for r in fit.get("reasons") or ()]],
                                type=pa.list_(pa.string())),
        # the whole JSON `calibration` object (spread, corrections, fit,
        # details): nested and varying by calibration source, so as text
        # (DuckDB: json_extract(calibration_json, '$.fit.o_in_max_ns'))
        "calibration_json": pa.array([json.dumps(cal, separators=(",", ":"))]),
    }
    return pa.table(row)


def functions_table(p: Profile) -> pa.Table:
    """The JSON's `functions[]`, one row per function, same order."""
    ft = p.functions
    out: dict = {"function": pa.array(list(ft.names), type=pa.string()), "calls": _i(ft.calls)}
    for kind in ("incl", "excl"):
        _raw_stats(out, kind, getattr(ft, kind), ft.calls, getattr(ft, kind + "_mean"), getattr(ft, kind + "_min"),
                   getattr(ft, kind + "_max"), getattr(ft, kind + "_pct"))
    for kind in ("incl", "excl"):
        if p.corrected is None:
            _corr_as_raw(out, kind + "_corr", kind, ft.calls)
        else:
            _corr_stats(out, kind + "_corr", corrections.corrected_stats(p)["functions", kind], ft.calls_corr)
    n = len(ft)
    out["irq_ns"] = _i(ft.irq)
    out["offcpu_ns"] = _i(ft.offcpu, None if p.offcpu_known else np.ones(n, bool))  # null: no sched_switch
    out["gap_calls"] = _i(ft.gap_calls)
    ex = corrections.function_extras(p)
    none = np.ones(n, bool)
    for key, name in (("hook_cost_removed_ns", "overhead"), ("irq_removed_ns", "irq"),
                      ("offcpu_removed_ns", "offcpu"), ("clamped_ns", "clamp")):
        out[key] = _f(ex[name]) if ex else _f(np.zeros(n), none)
    out["clamped"] = _b(ex["clamped"]) if ex else pa.nulls(n, pa.bool_())
    out["unreliable"] = _b(ex["unreliable"]) if ex else pa.nulls(n, pa.bool_())
    rs = ft.returns
    no = None if rs is not None else none
    out["returns_calls"] = _i(rs.calls if rs is not None else np.zeros(n), no)
    out["returns_errors"] = _i(rs.err.calls if rs is not None else np.zeros(n), no)
    for prefix, side in (("error_incl", rs.err if rs is not None else None), ("ok_incl", rs.ok if rs is not None else None)):
        if side is None:
            for name in corrections.STAT_NAMES:
                out["%s_%s_ns" % (prefix, name)] = pa.nulls(n, pa.float64() if name == "mean" else pa.int64())
        else:
            _raw_stats(out, prefix, side.incl, side.calls, side.incl_mean, side.incl_min, side.incl_max, side.incl_pct)
    return pa.table(out)


def _path_lists(p: Profile, pre: np.ndarray, depth: np.ndarray) -> pa.Array:
    """Each row's path (names from the root down), rows in `pre` order: the
    names filled level by level, each level a step up from every row still
    that deep (work: the total length of the lists, not rows x max depth)."""
    d = depth[pre]
    lens = d + 1
    offsets = np.zeros(len(pre) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    vals = np.empty(int(offsets[-1]), dtype=np.int64)
    func, parent = p.col("func"), p.col("parent")
    at = pre.astype(np.int64)
    idx = np.arange(len(pre))
    slot = offsets[1:] - 1  # each list's last place: the row's own function
    while len(idx):
        vals[slot] = func[at]
        at = parent[at]
        keep = at >= 0
        idx, at, slot = idx[keep], at[keep], slot[keep] - 1
    # the names by index (a dictionary): a path repeats its callers' names,
    # 52 MB of strings for s14's 125k paths against 20 MB of indices
    return _lists(offsets, _names(vals, p.funcs))


# Rows of the paths and root_calls tables made and written at a time (a
# Parquet row group each): the whole paths table of s14 (125k call paths)
# is 60 MB of columns, a root call's row 100 bytes, and a trace may have
# millions; the JSON writes its rows in chunks too. A root_calls chunk's
# int64 and pyarrow columns are the writer's high-water mark above
# pyarrow's import: 65,536 rows (16 MB) rather than 262,144 (64 MB).
PATHS_CHUNK_ROWS = 32768
ROOT_CALLS_CHUNK_ROWS = 1 << 16


def _tree_order(p: Profile) -> tuple:
    if not p.nrows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    pre, depth = tree_order(p)
    return np.asarray(pre, dtype=np.int64), depth


def paths_chunks(p: Profile, chunk: int = PATHS_CHUNK_ROWS):
    """The paths table, `chunk` rows at a time (tables of one schema)."""
    pre, depth = _tree_order(p)
    for lo in range(0, max(len(pre), 1), chunk):
        yield paths_table(p, pre[lo:lo + chunk], depth)


def paths_table(p: Profile, pre=None, depth=None) -> pa.Table:
    """The call-path tree (the JSON's `tree`, flat): a row per path in the
    JSON's order (depth first, children by inclusive time, then name), each
    with its id (the model's row), its parent's id (null at a root), depth,
    and its path as a list; the rows `pre` of that order (all when None;
    depth: tree_order's, by row)."""
    if pre is None:
        pre, depth = _tree_order(p)
    n = len(pre)

    def col(name):
        return p.col(name, pre)

    parent = col("parent")
    calls = col("calls")
    out: dict = {"path_id": _i(pre), "parent_id": _i(np.maximum(parent, 0), parent < 0),
                 "function": _names(col("func"), p.funcs), "depth": _i(depth[pre] if n else pre),
                 "path": _path_lists(p, pre, depth) if n else _lists(np.zeros(1), _names([], p.funcs)),
                 "calls": _i(calls)}
    incl_pct, excl_pct = p.node_percentiles_at(pre) if n else (np.zeros((0, 3), np.int64),) * 2
    pcts = {"incl": incl_pct, "excl": excl_pct}
    for kind in ("incl", "excl"):
        _raw_stats(out, kind, col(kind), calls, p.node_means(kind, pre), col(kind + "_min"), col(kind + "_max"),
                   pcts[kind])
    by_node = corrections.exact_values(p)[0] if p.corrected is not None and n else None
    for kind in ("incl", "excl"):
        if p.corrected is None or not n:
            _corr_as_raw(out, kind + "_corr", kind, calls)
        else:
            _corr_stats(out, kind + "_corr", corrections.node_stats(p, kind, pre, by_node, pcts[kind]),
                        p.corrected.calls[pre])
    out["irq_ns"] = _i(col("irq"))
    out["offcpu_ns"] = _i(col("offcpu"), None if p.offcpu_known else np.ones(n, bool))
    out["descendants"] = _i(col("desc"))
    out["unowned_child_incl_ns"] = _i(col("unowned_child_incl"))
    out["gap_calls"] = _i(col("gap_calls"))
    c = p.corrected
    if c is not None and c.unreliable is not None and n:
        out["clamped"] = _b(c.clamped[pre])
        out["unreliable"] = _b(c.unreliable[pre])
    else:
        out["clamped"] = pa.nulls(n, pa.bool_())
        out["unreliable"] = pa.nulls(n, pa.bool_())
    flags = col("flags") & 7
    words = [node_flags(f) for f in range(8)]
    wl = np.array([len(w) for w in words], dtype=np.int64)[flags]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(wl, out=offsets[1:])
    allw = [w for f in flags.tolist() for w in words[f]]
    out["flags"] = _lists(offsets, pa.array(allw, type=pa.string()))
    return pa.table(out)


def root_calls_chunks(p: Profile, chunk: int = ROOT_CALLS_CHUNK_ROWS):
    """The root_calls table, `chunk` rows at a time (tables of one schema)."""
    for lo in range(0, max(len(p.samples), 1), chunk):
        yield root_calls_table(p, lo, lo + chunk)


def root_calls_table(p: Profile, lo: int = 0, hi: int | None = None) -> pa.Table:
    """The JSON's `root_calls[]`, one row per root call in its order (rows
    lo..hi of it): start on the trace's clock, task, CPU, operation, raw and
    corrected duration (null for a gap call: left out of the correction),
    clean (not across a gap), return value (null where none was recorded)."""
    total = len(p.samples)
    hi = total if hi is None else min(hi, total)
    lo = min(lo, hi)
    n = hi - lo

    def col(name):
        return p.samples.col(name, lo, hi) if total else np.zeros(0, np.int64)

    flags = col("flags")
    gap = (flags & SAMPLE_GAP) != 0
    func = p.col("func")[col("node")] if n else np.zeros(0, np.int64)
    op = col("op")
    corr = np.asarray(p.corrected_or_raw.sample_dur, dtype=np.float64)[lo:hi] if total else np.zeros(0)
    ret, has_ret = p.root_returns(lo, hi)
    return pa.table({
        "root_call": _i(np.arange(lo, hi)), "function": _names(func, p.funcs),
        "pid": _i(col("pid")), "cpu": _i(col("cpu")), "start_ns": _i(col("calltime")), "dur_ns": _i(col("dur")),
        "dur_corr_ns": _f(corr, gap), "clean": pa.array(~gap, type=pa.bool_()),
        "operation": _names(np.maximum(op, 0), p.operations, op < 0),
        "descendants": _i(col("desc")), "irq_ns": _i(col("irq")),
        "offcpu_ns": _i(col("offcpu"), None if p.offcpu_known else np.ones(n, bool)),
        "gap": _b(gap), "partial": _b(flags & SAMPLE_PARTIAL), "irq": _b(flags & SAMPLE_IRQ),
        "ret": _i(ret, ~has_ret),
    })


_DUR_STATS = ("p50", "p90", "p99", "max", "mean")


def operations_table(p: Profile) -> pa.Table:
    """The JSON's `operations[]` (busiest first), the flame's totals but not
    its list of paths (the `paths` table has every path)."""
    rows = operation_table(p) or ()
    out: dict = {"root": pa.array([r.root for r in rows], type=pa.string()),
                 "operation": pa.array([r.operation for r in rows], type=pa.string()),
                 "recognised_by": pa.array([r.how for r in rows], type=pa.string()),
                 "calls": _i([r.calls for r in rows]), "gap_calls": _i([r.gap_calls for r in rows])}
    for key, side in (("dur", "raw"), ("dur_corr", "corr")):
        for name in _DUR_STATS:
            out["%s_%s_ns" % (key, name)] = _f([getattr(r, side)[name] for r in rows])
    out["share"] = pa.array([round(r.share, 6) for r in rows], type=pa.float64())
    out["share_corr"] = pa.array([round(r.corr_share, 6) for r in rows], type=pa.float64())
    return pa.table(out)


def root_latency_table(p: Profile) -> pa.Table:
    """The JSON's `root_latency[]`: the latency of every root call per root
    function, operation and context (operations.root_table's columns)."""
    cols = root_columns(p)
    if cols is None or not len(cols["root"]):
        cols = {"root": [], "operation": [], "irq_calls": np.zeros(0), "calls": np.zeros(0), "gap_calls": np.zeros(0),
                "raw": {k: np.zeros(0) for k in _DUR_STATS}, "corr": {k: np.zeros(0) for k in _DUR_STATS},
                "share": np.zeros(0), "corr_share": np.zeros(0)}
    out: dict = {"root": pa.array(list(cols["root"]), type=pa.string()),
                 "operation": pa.array([o or None for o in cols["operation"]], type=pa.string()),
                 "irq": _b(np.asarray(cols["irq_calls"]) > 0), "calls": _i(cols["calls"]),
                 "gap_calls": _i(cols["gap_calls"])}
    for key, side in (("dur", "raw"), ("dur_corr", "corr")):
        for name in _DUR_STATS:
            out["%s_%s_ns" % (key, name)] = _f(cols[side][name])
    for key, name in (("share", "share"), ("share_corr", "corr_share")):
        out[key] = pa.array(np.round(np.asarray(cols[name], dtype=np.float64), 6) if len(cols[name]) else np.zeros(0),
                            type=pa.float64())
    return pa.table(out)


def slowest_tables(p: Profile) -> tuple:
    """The JSON's `slowest[]`: a row per kept slowest root call (`slowest`,
    `rank` 0 the slowest), and a row per call of the trees kept
    (`slowest_calls`, by rank then entry order; `call` 0 the root call)."""
    cols = slowest_columns(p)
    if cols is None:
        return _slowest_table(p, None, [], []), _calls_table(p, [])
    dom_rows: list = []
    calls_parts: list = []
    for a, b, dec, first, kept in slowest_batches(p):
        if dec is None:
            continue
        ranks = np.arange(a, b)[cols["kept"][a:b]]
        tree, row = dominant_steps(dec, first, kept)
        dom_rows.append((ranks[tree], dec["func"][row]))
        some = kept > 0
        tree_of = np.repeat(np.arange(len(kept)), kept)
        rank = ranks[tree_of]
        start = cols["start_ns"][ranks][tree_of]
        par = dec["parent"]
        part = {"rank": rank, "call": np.arange(len(par)) - first[tree_of],
                "func": dec["func"], "parent": np.where(par >= 0, par - first[tree_of], -1),
                "at_ns": dec["calltime"] - start, "cpu": dec["cpu"], "incl_ns": dec["incl"], "excl_ns": dec["excl"],
                "incl_corr_ns": dec["corr_incl"], "excl_corr_ns": dec["corr_excl"], "irq_ns": dec["irq"],
                "offcpu_ns": dec["offcpu"], "irq": dec["is_irq"], "gap": dec["gap"]}
        if p.trace.has_retval:
            part["ret"] = [retval_text(v) if h else None
                           for v, h in zip(dec["retval"].tolist(), dec["has_ret"].tolist())]
        del some
        calls_parts.append(part)
    return _slowest_table(p, cols, dom_rows, calls_parts), _calls_table(p, calls_parts)


def _slowest_table(p: Profile, cols, dom_rows: list, calls_parts: list) -> pa.Table:
    n = 0 if cols is None else len(cols["tree"])
    if cols is None:
        cols = {"root": [], "operation_of": np.zeros(0, np.int64), "operations": [None], "start_ns": np.zeros(0),
                "pid": np.zeros(0), "cpu": np.zeros(0), "dur": np.zeros(0), "corr": np.zeros(0),
                "gap": np.zeros(0, bool), "kept": np.zeros(0, bool)}
    ops = cols["operations"]
    op_of = np.asarray(cols["operation_of"], dtype=np.int64)
    # the dominant paths' names, rank after rank (each tree's from its root down)
    rank = np.concatenate([r for r, _ in dom_rows]) if dom_rows else np.zeros(0, np.int64)
    func = np.concatenate([f for _, f in dom_rows]) if dom_rows else np.zeros(0, np.int64)
    order = np.argsort(rank, kind="stable")
    rank, func = rank[order], func[order]
    offsets = np.searchsorted(rank, np.arange(n + 1))
    names = pa.array(list(p.funcs), type=pa.string())
    ncalls = np.zeros(n, dtype=np.int64)
    for part in calls_parts:
        np.add.at(ncalls, part["rank"], 1)
    return pa.table({
        "rank": _i(np.arange(n)), "root": pa.array(list(cols["root"]), type=pa.string()),
        "operation": pa.array([ops[k] for k in op_of.tolist()], type=pa.string()),
        "start_ns": _i(cols["start_ns"]), "pid": _i(cols["pid"]), "cpu": _i(cols["cpu"]), "dur_ns": _i(cols["dur"]),
        "dur_corr_ns": _f(cols["corr"]), "gap": _b(cols["gap"]),
        "dominant_path": _lists(offsets, names.take(pa.array(func, type=pa.int64()))),
        "tree_kept": _b(cols["kept"]), "tree_calls": _i(ncalls),
    })


def _calls_table(p: Profile, parts: list) -> pa.Table:
    def cat(key, dtype=np.int64):
        return np.concatenate([np.asarray(x[key], dtype=dtype) for x in parts]) if parts else np.zeros(0, dtype)

    gap = cat("gap") != 0
    par = cat("parent")
    n = len(par)
    out = {"rank": _i(cat("rank")), "call": _i(cat("call")), "function": _names(cat("func"), p.funcs),
           "parent": _i(np.maximum(par, 0), par < 0), "at_ns": _i(cat("at_ns")), "cpu": _i(cat("cpu")),
           "incl_ns": _i(cat("incl_ns")), "excl_ns": _i(cat("excl_ns")),
           # null in every call of a gap root call, as the JSON
           "incl_corr_ns": _f(cat("incl_corr_ns", np.float64), gap),
           "excl_corr_ns": _f(cat("excl_corr_ns", np.float64), gap),
           "irq_ns": _i(cat("irq_ns")),
           "offcpu_ns": _i(cat("offcpu_ns"), None if p.offcpu_known else np.ones(n, bool)),
           "irq": _b(cat("irq")), "gap": pa.array(gap, type=pa.bool_()),
           "ret": pa.array([v for x in parts for v in x.get("ret", [None] * len(x["rank"]))], type=pa.string())}
    return pa.table(out)


def table_stream(p: Profile):
    """(name, its tables: an iterator of pyarrow.Tables, one schema, the
    table's rows in order) of every table (TABLES order), each made as it
    is asked for: written and let go a chunk at a time, the peak is a
    chunk's, not the tables' together."""
    yield "trace", iter([trace_table(p)])
    yield "functions", iter([functions_table(p)])
    yield "paths", paths_chunks(p)
    yield "root_calls", root_calls_chunks(p)
    yield "operations", iter([operations_table(p)])
    yield "root_latency", iter([root_latency_table(p)])
    slowest, slowest_calls = slowest_tables(p)
    yield "slowest", iter([slowest])
    del slowest
    yield "slowest_calls", iter([slowest_calls])


def tables(p: Profile) -> dict:
    """{name: pyarrow.Table} of every table (TABLES), whole."""
    return {name: pa.concat_tables(list(chunks)) for name, chunks in table_stream(p)}


def with_columns(table: pa.Table, first: dict) -> pa.Table:
    """The table with constant columns in front (a dataset's trace id, kernel, labels)."""
    n = table.num_rows
    for k, (name, value) in enumerate(first.items()):
        table = table.add_column(k, name, pa.array([value] * n, type=pa.string()))
    return table


def write_tables(folder: str, stream, adjust=None) -> int:
    """Each table of table_stream() into folder/NAME.parquet, a chunk at a
    time (a row group each); adjust(name, table) -> table first, when given.
    The bytes written."""
    size = 0
    for name, chunks in stream:
        path = os.path.join(folder, name + SUFFIX)
        writer = None
        try:
            for t in chunks:
                if adjust is not None:
                    t = adjust(name, t)
                if writer is None:
                    writer = pq.ParquetWriter(path, t.schema, compression=COMPRESSION)
                writer.write_table(t)
                del t
        finally:
            if writer is not None:
                writer.close()
        size += os.path.getsize(path)
    return size


def render(p: Profile, opts: RenderOptions = DEFAULT) -> str:
    raise InputError("-", "Parquet output is a folder of files, not a stream",
                     "give -o NAME.parquet/ (a folder)")


def write_folder(path: str, p: Profile) -> int:
    """The tables into the folder `path`, atomically: written into a new
    folder beside it, then renamed to it. A folder that is there already is
    replaced only when it holds nothing but an earlier output's tables (the
    old one moved aside, the new one renamed in, the old removed): a
    reader sees the old tables or the new ones. Returns the bytes written."""
    path = path.rstrip("/") or "/"
    _refuse_to_replace(path)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise InputError(path, "output directory does not exist")
    try:
        tmp = tempfile.mkdtemp(prefix=".ftflame-", dir=parent)
    except OSError as e:
        raise InputError(path, f"cannot write: {e.strerror}", "check the directory's permissions") from None
    old = None
    try:
        os.chmod(tmp, 0o777 & ~_umask())
        size = write_tables(tmp, table_stream(p))
        # the old folder moved aside and the new one in with the terminating
        # signals held: one between the two would leave neither
        held = signal.pthread_sigmask(signal.SIG_BLOCK, (*TERMINATING, signal.SIGINT))
        try:
            if os.path.isdir(path):
                old = tempfile.mkdtemp(prefix=".ftflame-old-", dir=parent)
                os.rename(path, os.path.join(old, "x"))
            os.rename(tmp, path)
            tmp = None
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        return size
    except OSError as e:
        if old is not None and not os.path.exists(path):  # put the old tables back
            with contextlib.suppress(OSError):
                os.rename(os.path.join(old, "x"), path)
        raise InputError(path, f"cannot write: {e.strerror or e}", "nothing was written") from None
    finally:
        for d in (tmp, old):
            if d is not None:
                shutil.rmtree(d, ignore_errors=True)


def _refuse_to_replace(path: str) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise InputError(path, f"cannot write: {e.strerror}") from None
    import stat

    if not stat.S_ISDIR(st.st_mode):
        raise InputError(path, "is there and is not a folder: Parquet output is a folder of tables",
                         "give a new name, or remove it")
    ours = {t + SUFFIX for t in TABLES}
    other = sorted(set(os.listdir(path)) - ours)
    if other:
        raise InputError(path, f"is a folder holding other files than ftflame's tables ({other[0]}...): not replaced",
                         "give a new or empty folder name")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
