"""The C core's columnar result wrapped into a Profile, for every input
kind (parse/dat.py, parse/text.py, hand-made events). Imports numpy.

Importing this module checks the core's column names against the Profile's
(ftflame/model/profile.py): a column added or moved on one side only fails
here, not as a wrong figure."""
from __future__ import annotations

import dataclasses

import numpy as np

from ftflame.model.names import printable
from ftflame.model.profile import (
    CALL_EXTRA_DTYPE,
    CALL_RECORD_DTYPE,
    NO_KEPT_TREES,
    Histograms,
    KeptTrees,
    NodeTable,
    Profile,
    Retvals,
    RootCalls,
    TraceInfo,
    check_core_columns,
    note_warning,
)

from . import _core

__all__ = ["from_core_result", "build_events"]

check_core_columns(_core)  # the core's tables are read by these names
# TraceInfo's strings that come from the trace itself (printable(): a
# trace's bytes never reach a terminal raw)
TRACE_STRINGS = ("kernel", "clock", "tracer_version", "compression")


def from_core_result(res: dict, info: TraceInfo) -> Profile:
    # column after column in C, each in its width: views of the core's blocks
    nodes = NodeTable.from_core(res["nodes"], res["nrows"])
    samples = RootCalls.from_core(res["samples"])  # the core's columns, not copied
    counters = dict(res["counters"])
    warnings = []
    if counters.get("entries", 0) == 0 and counters.get("exits", 0) > 0:
        warnings.append(note_warning("exit-only trace (tracing_thresh?): no call tree, every call is a "
                                     "(partial) root; per-function figures are exact"))
    info = dataclasses.replace(info, **{k: printable(getattr(info, k)) for k in TRACE_STRINGS})
    retvals = None if res.get("retvals") is None else Retvals.from_core(res["retvals"], len(res["funcs"]))
    if retvals is not None:
        info = dataclasses.replace(info, has_retval=True)  # text says so only by printing them
    return Profile(
        trace=info, funcs=tuple(map(printable, res["funcs"])), nodes=nodes,
        hist_incl=Histograms.from_core(res["hist_incl"]),
        hist_excl=None if res["hist_excl"] is None else Histograms.from_core(res["hist_excl"]),
        samples=samples, counters=counters,
        lost_per_cpu={cpu: n for cpu, (n, _) in res["lost_per_cpu"].items()},
        lost_gaps_unknown_per_cpu={cpu: u for cpu, (_, u) in res["lost_per_cpu"].items() if u},
        warnings=tuple(warnings),
        overhead_samples=_overhead_samples(res.get("estimates", ())),
        operations=tuple(map(printable, res.get("ops", ()))), op_how=tuple(map(printable, res.get("op_how", ()))),
        slowest_trees=_kept_trees(res.get("slowest"), int(res.get("slowest_n", 0))),
        retvals=retvals, call_args=int(res.get("call_args", 0)))


def _kept_trees(slow: dict | None, n: int = 0) -> KeptTrees:
    """The core's kept slowest calls (its blocks, not copied); n: how many
    it keeps per (root path, operation) and measure."""
    if not slow:
        return NO_KEPT_TREES
    return KeptTrees(np.frombuffer(slow["table"], dtype=np.int64).reshape(-1, 7),
                     np.frombuffer(slow["recs"], dtype=CALL_RECORD_DTYPE),
                     np.frombuffer(slow["extras"], dtype=CALL_EXTRA_DTYPE), n)


_EST_KIND = ("leaf", "gap")
_EST_CTX = ("task", "softirq", "hardirq")


def _overhead_samples(estimates) -> dict:
    """The core's 1-ns histograms for the in-trace overhead estimate."""
    out = {}
    for kind, ctx, cpu, counts, over in estimates:
        out[(_EST_KIND[kind], _EST_CTX[ctx], cpu)] = (np.frombuffer(counts, dtype=np.uint32), int(over))
    return out


def build_events(events, source: str = "<events>", slowest: int = 20) -> Profile:
    """Build a Profile from hand-made events (tests: one situation each).

    Each event: (kind, cpu, pid, flags, func, depth, ts, calltime, rettime,
    overrun, next_pid, lost[, retval]), kind in entry/exit/switch/lost/leaf;
    retval (exit, leaf): the call's return value, -5 or 0xfffffffb alike."""
    res = _core.build_events(list(events), slowest)
    return from_core_result(res, TraceInfo(source=source, format="events"))
