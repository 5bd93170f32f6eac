"""Input detection, and the choice of reader it makes: magic bytes first,
then headers, then line shape.

``read(path)`` opens the input, ``classify(head)`` looks at its first
(decompressed) bytes and returns a Detected (or raises InputError listing
everything it tried), and the input goes to the reader of its kind:
parse/dat.py (trace.dat) or parse/text.py (every text form).
"""
from __future__ import annotations

import functools
import os
import re
import threading
from dataclasses import dataclass
from typing import Callable

from ftflame.model.errors import InputError

from . import dat
from .dat import TRACE_DAT_MAGIC

# parse/text.py (with gzip, lzma, queue) and the line shapes below are
# imported and compiled by the first input that is not a plain trace.dat:
# most reports never need them (2-3 ms of start-up, before the read starts)

TRIED = ("trace.dat (magic \\x17\\x08Dtracing); gzip/xz/zstd (magic, then the same inside); "
         "header '# tracer: function_graph'; trace-cmd report lines 'funcgraph_entry:'; "
         "function_graph lines ' N) DURATION |  func() {'; the same re-flowed in a mail")


@functools.cache
def _line_shapes() -> tuple:
    """(the tracer header, trace-cmd report lines, kernel printer lines,
    function_graph records): bytes regexes on the head only (the C
    tokenizer does the real work)."""
    return (re.compile(rb"^# tracer: (\S+)", re.M),
            re.compile(rb"^\s*\S.*?-\d+\s+(?:\[\d+\]|\d+\S*)\s.*?\d+\.\d+:\s+"
                       rb"(?:funcgraph_entry|funcgraph_exit|fgraph_retaddr_entry):", re.M),
            re.compile(rb"^\s*(?:\d+\.\d+\s*\|\s*)?\d{1,4}\)\s[^\n|]*\|", re.M),
            re.compile(rb"(?:^|\s)\d{1,4}\)\s+(?:\S+-\d+\s+\|\s+)?(?:[+!#*@$]\s+)?"
                       rb"(?:\d+(?:\.\d+)?\s+[mun]?s\s+)?\|\s+(?:\}|[^\s(|]+(?:\s\[\w+\])?\(.*?\)\s*[{;])"))


@dataclass(frozen=True)
class Detected:
    kind: str  # "trace.dat" or "text"
    dialect: str = ""  # text: "tracefs" (kernel printer, perf ftrace), "trace-cmd", "mail"
    compression: str = ""
    why: str = ""


def check_readable(path: str) -> None:
    """Fail early, with one clear line, on what no reader could open."""
    if path == "-":
        return
    try:
        os.stat(path)
    except FileNotFoundError:
        raise InputError(path, "no such file", "check the path") from None
    except PermissionError:
        raise InputError(path, "permission denied (on the file or a directory above it)",
                         "run as a user who can read it") from None
    except OSError as e:
        raise InputError(path, f"cannot open: {e.strerror}") from None
    if os.path.isdir(path):
        raise InputError(path, "is a directory without a trace.dat",
                         "give a trace.dat or a collect.sh output directory")
    if not os.path.isfile(path):
        raise InputError(path, "not a regular file")
    if not os.access(path, os.R_OK):
        raise InputError(path, "permission denied", "run as a user who can read it")
    if os.path.getsize(path) == 0:
        raise InputError(path, "empty file", "the recording produced no data")


def classify(head: bytes, name: str, compression: str = "") -> Detected:
    """What the input is, from its first (decompressed) bytes."""
    if head.startswith(TRACE_DAT_MAGIC):
        return Detected("trace.dat", compression=compression, why="magic")
    if not head:
        raise InputError(name, "empty input", "the recording produced no data")
    if len(head) < len(TRACE_DAT_MAGIC) and TRACE_DAT_MAGIC.startswith(head):
        raise InputError(name, "truncated trace.dat (file ends inside the header)")
    from .text import COMPRESSED_MAGIC

    for magic, kind in COMPRESSED_MAGIC.items():
        if head.startswith(magic):
            raise InputError(name, f"{kind} inside {compression or 'the input'}: compressed twice?",
                             "decompress it once first")
    if b"\0" in head[:4096]:
        raise InputError(name, "binary data, not a function_graph trace", f"tried: {TRIED}")
    text = head
    # the last line may be cut by the head's end
    if len(head) >= 4096 and b"\n" in head:
        text = head[: head.rindex(b"\n")]
    tracer_re, tracecmd_re, kernel_re, record_re = _line_shapes()
    m = tracer_re.search(text)
    if m and m.group(1) != b"function_graph":
        tracer = m.group(1).decode("utf-8", "replace")
        raise InputError(name, f"a '{tracer}' tracer trace, not function_graph",
                         "record with 'echo function_graph > current_tracer' or "
                         "'trace-cmd record -p function_graph'")
    tracecmd = len(tracecmd_re.findall(text))
    kernel = len(kernel_re.findall(text))
    records = len(record_re.findall(text))
    if tracecmd and tracecmd >= kernel:
        return Detected("text", "trace-cmd", compression, f"{tracecmd} trace-cmd funcgraph lines")
    if kernel and records <= kernel * 1.5 + 2:
        why = "header '# tracer: function_graph'" if m else f"{kernel} function_graph lines"
        return Detected("text", "tracefs", compression, why)
    if records >= 2:
        nlines = text.count(b"\n") + 1
        return Detected("text", "mail", compression,
                        f"{records} function_graph records on {nlines} lines")
    if m:
        # the header alone (e.g. an empty buffer, or a long preamble)
        return Detected("text", "tracefs", compression, "header '# tracer: function_graph'")
    if head.lstrip().startswith(b"cpus="):
        return Detected("text", "trace-cmd", compression, "trace-cmd report header 'cpus='")
    raise InputError(name, "not a function_graph trace", f"tried: {TRIED}")


def read(path: str, progress: Callable[[int], None] | None = None, slowest: int = 20, call_stream=None,
         excl_hist: bool = True):
    """Read a function_graph trace into a Profile: a trace.dat, or any text
    form (tracefs, perf ftrace, trace-cmd report, a mail), plain or gzip/xz/
    zstd-compressed; '-' reads stdin. slowest: root calls kept with their
    call trees per (root path, operation) (Profile.slowest_trees).
    call_stream: every call written out as it is built (three file
    descriptors: report/perfetto.py's CallStream), None. excl_hist=False:
    no exclusive-time histograms, for an output that prints no exclusive
    percentiles (Profile.hist_excl None: the text report)."""
    check_readable(path)
    if path != "-" and dat.is_plain_dat(path):
        return dat.read(path, path, "", progress, slowest, call_stream, excl_hist)
    from . import text

    src = text.open_input(path)
    try:
        det = classify(src.head, src.name, src.compression)
    except BaseException:
        src.close()
        raise
    if det.kind == "text":
        return text.read(src, det.dialect, progress, slowest, call_stream, excl_hist)
    # a trace.dat that came compressed or piped: libtracecmd needs a file
    try:
        tmp = text.spool(src)
    finally:
        src.close()
    try:
        return dat.read(tmp, src.name, src.compression, progress, slowest, call_stream, excl_hist)
    finally:
        os.unlink(tmp)


def read_meanwhile(path: str, meanwhile: Callable[[], None],
                   progress: Callable[[int], None] | None = None, slowest: int = 20, call_stream=None,
                   excl_hist: bool = True):
    """read(path), with meanwhile() run on another thread while the C core
    reads (the CLI imports numpy and the renderers then: 0.1-0.2 s that
    cost no wall time). A plain trace.dat is read on *this* thread, with
    the GIL released: libtracecmd allocates and frees a record per event,
    which glibc does fastest in the main thread's arena (0.1-0.2 s on a
    3 M-event trace). An exception of meanwhile() is raised here after the
    read."""
    check_readable(path)
    side = _Meanwhile(meanwhile)
    try:
        res = None
        if path != "-" and dat.is_plain_dat(path):
            res = dat.read_core(path, path, progress, slowest=slowest, before_fork=side.join,
                                call_stream=call_stream, excl_hist=excl_hist)
    except KeyboardInterrupt:
        # Ctrl-C: the side thread (a daemon) is not waited for. Interrupted
        # inside an import, this thread can leave the interpreter's import
        # lock held, and the side thread's imports would wait on it for ever
        raise
    except BaseException:
        side.join()
        raise
    side.join()
    if res is None:  # text, compressed, stdin: read now
        return read(path, progress=progress, slowest=slowest, call_stream=call_stream, excl_hist=excl_hist)
    return dat.to_profile(res, path, "")


class _Meanwhile(threading.Thread):
    def __init__(self, work: Callable[[], None]):
        super().__init__(name="ftflame-meanwhile", daemon=True)
        self.work = work
        self.exc: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.work()
        except BaseException as e:  # handed to the reading thread
            self.exc = e

    def join(self, timeout=None) -> None:
        super().join(timeout)
        if self.exc is not None:
            raise self.exc
