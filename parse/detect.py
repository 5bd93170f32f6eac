"""Input detection: magic bytes first, then headers, then line shape.

``classify(head)`` looks at the first bytes of the (decompressed) input and
returns a Detected, or raises InputError listing everything it tried.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ftflame.model.errors import InputError

TRACE_DAT_MAGIC = b"\x17\x08\x44tracing"
COMPRESSED_MAGIC = {
    b"\x1f\x8b": "gzip",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
}
TRIED = ("trace.dat (magic \\x17\\x08Dtracing); gzip/xz/zstd (magic, then the same inside); "
         "header '# tracer: function_graph'; trace-cmd report lines 'funcgraph_entry:'; "
         "function_graph lines ' N) DURATION |  func() {'; the same re-flowed in a mail")

# line shapes (bytes regexes on the head only: the C tokenizer does the real work)
_KERNEL_LINE = re.compile(rb"^\s*(?:\d+\.\d+\s*\|\s*)?\d{1,4}\)\s[^\n|]*\|", re.M)
_TRACECMD_LINE = re.compile(rb"^\s*\S.*?-\d+\s+(?:\[\d+\]|\d+\S*)\s.*?\d+\.\d+:\s+"
                            rb"(?:funcgraph_entry|funcgraph_exit|fgraph_retaddr_entry):", re.M)
_RECORD = re.compile(rb"(?:^|\s)\d{1,4}\)\s+(?:\S+-\d+\s+\|\s+)?(?:[+!#*@$]\s+)?"
                     rb"(?:\d+(?:\.\d+)?\s+[mun]?s\s+)?\|\s+(?:\}|[^\s(|]+(?:\s\[\w+\])?\(.*?\)\s*[{;])")
_TRACER = re.compile(rb"^# tracer: (\S+)", re.M)


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
    m = _TRACER.search(text)
    if m and m.group(1) != b"function_graph":
        tracer = m.group(1).decode("utf-8", "replace")
        raise InputError(name, f"a '{tracer}' tracer trace, not function_graph",
                         "record with 'echo function_graph > current_tracer' or "
                         "'trace-cmd record -p function_graph'")
    tracecmd = len(_TRACECMD_LINE.findall(text))
    kernel = len(_KERNEL_LINE.findall(text))
    records = len(_RECORD.findall(text))
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

