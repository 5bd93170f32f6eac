"""A plain trace.dat: recognised by its magic, read by the C core in place,
with the builtin reader (parse/core/dat_*.c) or libtracecmd. Below both the
package module and ``reading``, which call it, so that neither imports the
other's way back."""
from __future__ import annotations

import contextlib
import os

from ftflame.errors import InputError

from .detect import TRACE_DAT_MAGIC

READERS = ("builtin", "libtracecmd")
# The reader a trace.dat is read with unless the caller names one: the CLI's
# --reader sets it (reader_used) for everything the command reads (report,
# baseline, calibrate). builtin: parity with libtracecmd on every fixture
# (tests/test_reader_parity.py).
_default_reader = "builtin"


@contextlib.contextmanager
def reader_used(reader: str):
    """The default reader is `reader` inside the block (the CLI's --reader)."""
    if reader not in READERS:
        raise InputError(f"--reader {reader}", "unknown reader", f"one of {', '.join(READERS)}")
    global _default_reader
    before, _default_reader = _default_reader, reader
    try:
        yield
    finally:
        _default_reader = before


def default_reader() -> str:
    return _default_reader


def read_dat(path: str, name: str, progress, reader: str | None = None) -> dict:
    """The C core's read of a trace.dat file; its errors name `name`."""
    from . import _core  # the extension alone: no numpy

    reader = reader or _default_reader
    read = _core.read_dat_builtin if reader == "builtin" else _core.read_dat
    try:
        return read(os.fsencode(path), progress=progress)
    except ValueError as e:
        raise InputError(name, str(e)) from None


# the name the callers knew it by
core_read_dat = read_dat


def damage_warnings(meta: dict) -> list:
    """The builtin reader's count of what it skipped, in words (anomalies)."""
    d = meta.get("damage")
    if not d:
        return []
    out = []
    if d["bad_pages"]:
        out.append(f"{d['bad_pages']:,} trace.dat pages with records that do not fit the page: "
                   "the rest of each page skipped (a lost-events gap)")
    if d["bad_chunks"]:
        out.append(f"{d['bad_chunks']:,} compressed chunks that do not decompress: their pages "
                   "skipped (a lost-events gap)")
    if d["cut_streams"]:
        cpus = "1 CPU" if d["cut_streams"] == 1 else f"{d['cut_streams']:,} CPUs"
        out.append(f"the data of {cpus} cut short ({d['lost_bytes']:,} bytes missing "
                   "or unreadable): a truncated or damaged trace.dat")
    if d["partial_page_bytes"]:
        out.append(f"{d['partial_page_bytes']:,} bytes of CPU data that do not fill a page: skipped")
    if d["zero_pages"]:
        out.append(f"{d['zero_pages']:,} trace.dat pages of zeros (timestamp and commit 0): "
                   "not pages the kernel wrote; overwritten data?")
    if d["kallsyms_bad_lines"]:
        out.append(f"{d['kallsyms_bad_lines']:,} kallsyms lines not understood: their functions "
                   "shown as addresses")
    if out and d["first"]:
        out[0] += f" (first: {d['first']})"
    return out


def is_plain_dat(path: str) -> bool:
    """An uncompressed trace.dat, read in place."""
    try:
        with open(path, "rb") as f:
            return f.read(len(TRACE_DAT_MAGIC)) == TRACE_DAT_MAGIC
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror}") from None
