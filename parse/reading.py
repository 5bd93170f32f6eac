"""Read a trace into a Profile: detect the input, call the C core once,
wrap its columnar result (see ftflame/parse/__init__.py)."""
from __future__ import annotations

import os
from typing import Callable, Optional

import numpy as np

from ftflame.errors import InputError
from ftflame.profile import NODE_COLUMNS, SAMPLE_COLUMNS, Histograms, Profile, TraceInfo, check_core_columns

from . import _core, text
from .dat import damage_warnings, is_plain_dat, read_dat
from .detect import check_readable, classify

__all__ = ["read", "from_core_result", "build_events"]

check_core_columns(_core)  # the core's tables are read by these names


def read(path: str, progress: Optional[Callable[[int], None]] = None, reader: Optional[str] = None) -> Profile:
    """Read a function_graph trace into a Profile: a trace.dat, or any text
    form (tracefs, perf ftrace, trace-cmd report, a mail), plain or gzip/xz/
    zstd-compressed; '-' reads stdin. reader: the trace.dat reader (parse.dat.READERS;
    None: parse.dat's default)."""
    check_readable(path)
    if path != "-" and is_plain_dat(path):
        return _read_dat(path, path, "", progress, reader)
    src = text.open_input(path)
    try:
        det = classify(src.head, src.name, src.compression)
    except BaseException:
        src.close()
        raise
    if det.kind == "trace.dat":
        # libtracecmd needs a file: spool what came compressed or piped
        try:
            tmp = text.spool(src)
        finally:
            src.close()
        try:
            return _read_dat(tmp, src.name, src.compression, progress, reader)
        finally:
            os.unlink(tmp)
    res = text.read_text(src, det.dialect, progress)
    info = text.text_info(res, src, det.dialect)
    prof = from_core_result(res, info)
    st = res["text"]
    if prof.counters["exits"] == 0:
        raise InputError(src.name, f"no function_graph calls in this {text.DIALECT_NAMES[det.dialect]} "
                         f"({st['lines']:,} lines, {st['unparsed']:,} not understood)",
                         "is it a function_graph trace with durations?")
    counters = dict(prof.counters)
    counters.update({"text_" + k: st[k] for k in text.TEXT_COUNTERS})
    return prof.replace(counters=counters, warnings=prof.warnings + tuple(text.text_warnings(st)))


def _read_dat(path: str, name: str, compression: str, progress, reader: Optional[str]) -> Profile:
    return _dat_profile(read_dat(path, name, progress, reader), name, compression)


def _dat_profile(res: dict, name: str, compression: str) -> Profile:
    meta = res["meta"]
    info = TraceInfo(
        source=name, format="trace.dat", kernel=meta["kernel"], clock=meta["clock"],
        cpus=meta["cpus"], tracer_version=meta["tracer_version"],
        file_version=meta["file_version"], compression=meta["compression"] or compression,
        events_per_cpu=dict(meta["events_per_cpu"]), has_sched_switch=meta["has_switch_event"],
        has_retval=meta["has_retval"], has_args=meta["has_args"])
    prof = from_core_result(res, info)
    damage = damage_warnings(meta)
    if damage:
        prof = prof.replace(warnings=prof.warnings + tuple(damage))
    if prof.counters["events"] == 0 and damage:
        raise InputError(name, f"no events could be read: {damage[0]}",
                         "the file is damaged or truncated: record it again, or copy it whole")
    if prof.counters["events"] == 0:
        raise InputError(name, "no events at all in this trace.dat (function_graph or other): "
                         "the recording is empty",
                         "was the tracer on and the workload running while trace-cmd recorded?")
    if prof.counters["exits"] == 0:
        raise InputError(name, "no function_graph calls in this trace.dat",
                         "check set_graph_function: did the traced functions run?")
    return prof


def from_core_result(res: dict, info: TraceInfo) -> Profile:
    nodes = np.frombuffer(res["nodes"], dtype=np.int64).reshape(-1, len(NODE_COLUMNS))
    samples = np.frombuffer(res["samples"], dtype=np.int64).reshape(-1, len(SAMPLE_COLUMNS))
    counters = dict(res["counters"])
    warnings = []
    if counters.get("entries", 0) == 0 and counters.get("exits", 0) > 0:
        warnings.append("exit-only trace (tracing_thresh?): no call tree, every call is a "
                        "(partial) root; per-function figures are exact")
    return Profile(
        trace=info, funcs=tuple(res["funcs"]), nodes=nodes,
        hist_incl=Histograms.from_core(res["hist_incl"]),
        hist_excl=Histograms.from_core(res["hist_excl"]), samples=samples, counters=counters,
        lost_per_cpu={cpu: n for cpu, (n, _) in res["lost_per_cpu"].items()},
        lost_gaps_unknown_per_cpu={cpu: u for cpu, (_, u) in res["lost_per_cpu"].items() if u},
        warnings=tuple(warnings),
        overhead_samples=_overhead_samples(res.get("estimates", ())))


_EST_KIND = ("leaf", "gap")
_EST_CTX = ("task", "softirq", "hardirq")


def _overhead_samples(estimates) -> dict:
    """The core's 1-ns histograms for the in-trace overhead estimate."""
    out = {}
    for kind, ctx, cpu, counts, over in estimates:
        out[(_EST_KIND[kind], _EST_CTX[ctx], cpu)] = (np.frombuffer(counts, dtype=np.uint32), int(over))
    return out


def build_events(events, source: str = "<events>") -> Profile:
    """Build a Profile from hand-made events (tests: one situation each).

    Each event: (kind, cpu, pid, flags, func, depth, ts, calltime, rettime,
    overrun, next_pid, lost), kind in entry/exit/switch/lost/leaf."""
    res = _core.build_events(list(events))
    return from_core_result(res, TraceInfo(source=source, format="events"))
