"""Input detection: magic bytes first, then headers, then line shape.

Returns a format name or raises InputError listing what was tried.
"""
from __future__ import annotations

import os

from ftflame.errors import InputError

TRACE_DAT_MAGIC = b"\x17\x08\x44tracing"
COMPRESSED_MAGIC = {
    b"\x1f\x8b": "gzip",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
}
TRIED = "trace.dat (magic \\x17\\x08Dtracing)"


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


def sniff(path: str) -> str:
    """Return 'trace.dat', or raise InputError naming the formats tried."""
    check_readable(path)
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror}") from None
    if head.startswith(TRACE_DAT_MAGIC):
        return "trace.dat"
    if len(head) < len(TRACE_DAT_MAGIC) and TRACE_DAT_MAGIC.startswith(head):
        raise InputError(path, "truncated trace.dat (file ends inside the header)")
    for magic, name in COMPRESSED_MAGIC.items():
        if head.startswith(magic):
            raise InputError(path, f"{name}-compressed input is not supported yet",
                             f"decompress it first; tried: {TRIED}")
    text = head.decode("utf-8", "replace")
    if "function_graph" in text or "funcgraph_" in text or "|  " in text:
        raise InputError(path, "function_graph text input is not supported yet",
                         "record a trace.dat with 'trace-cmd record -p function_graph'")
    raise InputError(path, "not a function_graph trace", f"tried: {TRIED}")
