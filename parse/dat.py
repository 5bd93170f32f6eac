"""A plain trace.dat: recognised by its magic, read by the C core
(libtracecmd) in place. Below both the package module and ``reading``,
which call it, so that neither imports the other's way back."""
from __future__ import annotations

import os

from ftflame.errors import InputError

from .detect import TRACE_DAT_MAGIC


def core_read_dat(path: str, name: str, progress, slowest: int = 20) -> dict:
    """The C core's read of a trace.dat file; its errors name `name`."""
    from . import _core  # the extension alone: no numpy

    try:
        return _core.read_dat(os.fsencode(path), progress=progress, slowest=slowest)
    except ValueError as e:
        raise InputError(name, str(e)) from None


def is_plain_dat(path: str) -> bool:
    """An uncompressed trace.dat, read by libtracecmd in place."""
    try:
        with open(path, "rb") as f:
            return f.read(len(TRACE_DAT_MAGIC)) == TRACE_DAT_MAGIC
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror}") from None
