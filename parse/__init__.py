"""ftflame.parse: read a trace into a Profile.

The C core (``_core``) does all per-event work: it reads the trace, rebuilds
per-task call stacks and aggregates completed calls into the call-path tree.
The way in, module by module:

    detect.py   what the input is; read() hands it to the reader of its kind
    dat.py      trace.dat (libtracecmd, in C)
    text.py     every text form (opened, decompressed, tokenized in C)
    tables.py   the core's columnar result -> Profile (numpy)

This module only hands the names on, and stays light (no numpy):
``read_meanwhile`` can set the C core reading a trace.dat before the rest of
ftflame is imported, which is imported on another thread meanwhile.
"""
from __future__ import annotations

from .detect import read, read_meanwhile

__all__ = ["read", "read_meanwhile", "from_core_result", "build_events"]


def __getattr__(name: str):
    # from_core_result() and build_events() import numpy: on first use
    if name in ("from_core_result", "build_events"):
        from . import tables

        return getattr(tables, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
