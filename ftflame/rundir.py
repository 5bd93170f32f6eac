"""A collect.sh run directory (collect/README.md): the names of its files,
and what a directory given on the command line stands for.

Kept apart from ftflame.correct.calibration so that the CLI's --help, which
names them, does not import numpy."""
from __future__ import annotations

import json
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


# ---- the numbers of a run directory's files, checked where they are read ----

# Deeper than any file collect.sh or `ftflame calibrate` writes (meta.json is 7
# levels at most): a deeper one is not ours, and a very deep one would take
# every recursive reader after the parser (json.dumps of the report included)
# to Python's recursion limit.
MAX_JSON_DEPTH = 32
# No count, time or rate a run directory holds comes near this: a bigger
# figure is a damaged file, and would overflow (to inf) once scaled to ns.
MAX_NUMBER = 1e15


class BadNumber:
    """A number JSON has no value for (NaN, Infinity, 1e400), where it was:
    the loader keeps its place so that the checks can name the field."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _float(text: str):
    v = float(text)
    return v if v not in (float("inf"), float("-inf")) else BadNumber(text)


def load_json(path: str):
    """A run directory's JSON file, strictly: NaN, Infinity and numbers out of
    a double's range stay BadNumber (not JSON: RFC 8259), nesting deeper than
    MAX_JSON_DEPTH is refused. OSError when it cannot be read, ValueError
    (the message says what is wrong) when it is not such JSON."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        doc = json.loads(data.decode("utf-8"), parse_constant=BadNumber, parse_float=_float)
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    except RecursionError:
        raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep") from None
    # (ValueError: json's own message, with line and column)
    stack = [(doc, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep")
        if isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in v)
    return doc


def field_name(path: tuple) -> str:
    """A field's place in a JSON document: measured.main.nfsd, rows[2]."""
    out = ""
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else ("." if out else "") + str(k)
    return out or "(the document)"


def bad_numbers(doc, path: tuple = ()) -> list:
    """(field path, text) of every BadNumber in doc."""
    out = []
    stack = [(doc, path)]
    while stack:
        v, at = stack.pop()
        if isinstance(v, BadNumber):
            out.append((at, v.text))
        elif isinstance(v, dict):
            stack.extend((x, (*at, k)) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((x, (*at, i)) for i, x in enumerate(v))
    return sorted(out, key=lambda e: [str(k) for k in e[0]])


def kind(v) -> str:
    """What a JSON value is, in a message (never the value itself: it may be
    long, or hold escapes meant for the terminal)."""
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, str):
        return "a string"
    if isinstance(v, (list, dict)):
        return "a list" if isinstance(v, list) else "an object"
    return "a number"


def number_problem(v, *, integer: bool = False, minimum: float = 0.0, maximum: float = MAX_NUMBER,
                   above: bool = False) -> str | None:
    """What is wrong with v as a figure (None: nothing): a number (true and
    false are not), finite, >= minimum (> with above), <= maximum; an integer
    with integer."""
    if isinstance(v, BadNumber):
        return f"{v.text} is not a number JSON has"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return f"{kind(v)} is not a number"
    if integer and not isinstance(v, int):
        return f"{v!r} is not a whole number"
    if v != v or abs(v) > maximum:
        return f"{v!r} is out of range"
    if v < minimum or (above and v == minimum):
        return f"{v!r} is {'not above' if above else 'below'} {minimum:g}"
    return None
