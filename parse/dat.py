"""trace.dat: recognised by its magic, read by the C core (libtracecmd) in
place. ``read_core`` is the one place that chooses how a trace.dat is read.

Light (no numpy) up to ``to_profile``: ``ftflame.parse.read_meanwhile``
starts the core's read before numpy is imported."""
from __future__ import annotations

import os

from ftflame.model.errors import InputError

TRACE_DAT_MAGIC = b"\x17\x08\x44tracing"


def is_plain_dat(path: str) -> bool:
    """An uncompressed trace.dat, read by libtracecmd in place."""
    try:
        with open(path, "rb") as f:
            return f.read(len(TRACE_DAT_MAGIC)) == TRACE_DAT_MAGIC
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror}") from None


def read_core(path: str, name: str, progress, slowest: int = 20) -> dict:
    """The C core's read of a trace.dat file; its errors name `name`."""
    from . import _core  # the extension alone: no numpy

    try:
        return _core.read_dat(os.fsencode(path), progress=progress, slowest=slowest)
    except ValueError as e:
        raise InputError(name, str(e)) from None


def to_profile(res: dict, name: str, compression: str):
    """The Profile of the core's read of a trace.dat; an empty recording or
    one without function_graph calls is bad input."""
    from ftflame.model.profile import TraceInfo

    from .tables import from_core_result

    meta = res["meta"]
    info = TraceInfo(
        source=name, format="trace.dat", kernel=meta["kernel"], clock=meta["clock"],
        cpus=meta["cpus"], tracer_version=meta["tracer_version"],
        file_version=meta["file_version"], compression=meta["compression"] or compression,
        events_per_cpu=dict(meta["events_per_cpu"]), has_sched_switch=meta["has_switch_event"],
        has_retval=meta["has_retval"], has_args=meta["has_args"])
    prof = from_core_result(res, info)
    if prof.counters["events"] == 0:
        raise InputError(name, "no events at all in this trace.dat (function_graph or other): "
                         "the recording is empty",
                         "was the tracer on and the workload running while trace-cmd recorded?")
    if prof.counters["exits"] == 0:
        raise InputError(name, "no function_graph calls in this trace.dat",
                         "check set_graph_function: did the traced functions run?")
    return prof


def read(path: str, name: str, compression: str, progress, slowest: int = 20):
    """A trace.dat file (`name` is what errors call it) into a Profile."""
    return to_profile(read_core(path, name, progress, slowest), name, compression)
