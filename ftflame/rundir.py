"""A collect.sh run directory (collect/README.md): the names of its files,
and what a directory given on the command line stands for.

Kept apart from ftflame.correct.calibration so that the CLI's --help, which
names them, does not import numpy."""
from __future__ import annotations

import os
from collections.abc import Sequence

from ftflame.model.errors import InputError

CALIBRATION_FILE = "calibration.json"
META_FILE = "meta.json"
CALIB_META_FILE = "calib-meta.json"
# the server's CPU time around each recording's workload (collect/cpusnap.sh)
CPU_FILES = {"main": "cpu-main.txt", "baseline": "cpu-baseline.txt"}
# calibrate.sh's three recordings: the NULL procedure alone, then the
# dispatcher hooked alone and with its whole graph
CALIBRATION_TRACES = ("calib-null.dat", "calib-dispatch-root.dat", "calib-dispatch-full.dat")


def resolve_input(path: str) -> str:
    """A collect.sh output directory stands for the trace.dat inside it."""
    if os.path.isdir(path):
        cand = os.path.join(path, "trace.dat")
        if os.path.isfile(cand):
            return cand
        raise InputError(path, "directory has no trace.dat",
                         "give a trace.dat or a collect.sh output directory")
    return path


def read_beside(trace: str, calibrating: bool = False) -> list:
    """The files a command reads beside a trace when they are there (a run
    directory's): inputs as much as the trace, never to be written over.
    `ftflame calibrate` writes calibration.json and reads calib-meta.json."""
    if trace in (None, "-"):
        return []
    d = os.path.dirname(os.path.abspath(trace))
    names = (CALIB_META_FILE,) if calibrating else (CALIBRATION_FILE, META_FILE, *CPU_FILES.values())
    return [os.path.join(d, n) for n in names]


def calibration_inputs(rundir: str | None, from_traces: Sequence[str] | None,
                       output: str | None) -> tuple[list, str]:
    """The three recordings `ftflame calibrate` reads and where it writes
    calibration.json: a calibrate.sh run directory (its recordings, its
    calibration.json) or the three traces named (stdout)."""
    if from_traces and rundir:
        raise InputError(rundir, "give a run directory or --from-traces, not both")
    if from_traces:
        traces, out = list(from_traces), output or "-"
    elif rundir:
        if not os.path.isdir(rundir):
            raise InputError(rundir, "not a directory", "give a calibrate.sh output directory, "
                             "or --from-traces NULL.dat ROOT.dat FULL.dat")
        traces = [os.path.join(rundir, n) for n in CALIBRATION_TRACES]
        missing = [t for t in traces if not os.path.isfile(t)]
        if missing:
            raise InputError(rundir, "missing " + ", ".join(os.path.basename(m) for m in missing),
                             "record them with collect/calibrate.sh, or use --from-traces")
        out = output or os.path.join(rundir, CALIBRATION_FILE)
    else:
        raise InputError("calibrate", "no input",
                         "give a calibrate.sh run directory or --from-traces NULL.dat ROOT.dat FULL.dat")
    for t in traces:
        if not os.path.isfile(t):
            raise InputError(t, "no such file")
    return traces, out
