"""ftflame.parse: read a trace into a Profile.

The C core (``_core``) does all per-event work: it reads the trace, rebuilds
per-task call stacks and aggregates completed calls into the call-path tree.
``reading`` only detects the input, calls the core once and wraps the
columnar result into a Profile.

This package module stays light (no numpy): ``start_read`` can set the C
core reading a trace.dat on its own thread before the rest of ftflame is
imported, so that the imports cost no wall time.
"""
from __future__ import annotations

import os
import threading
from typing import Callable, Optional

from ftflame.errors import InputError

from .detect import TRACE_DAT_MAGIC, check_readable

__all__ = ["read", "start_read", "from_core_result", "build_events", "PendingRead"]


def __getattr__(name: str):
    # read(), build_events() ... live in .reading, which imports numpy
    if name in ("read", "from_core_result", "build_events"):
        from . import reading

        return getattr(reading, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class PendingRead:
    """A read under way; result() waits for it and returns the Profile."""

    def __init__(self, path: str, progress: Optional[Callable[[int], None]]):
        self.path = path
        self.progress = progress
        self.cancelled = False
        self._res = None
        self._exc: Optional[BaseException] = None
        self._thread: Optional[threading.Thread] = None

    def _run(self) -> None:
        from . import _core  # the extension alone: no numpy

        try:
            self._res = _core.read_dat(os.fsencode(self.path), progress=self._progress)
        except BaseException as e:  # handed to the caller's thread
            self._exc = e

    def _progress(self, events: int) -> None:
        if self.cancelled:
            raise KeyboardInterrupt
        if self.progress is not None:
            self.progress(events)

    def start(self) -> "PendingRead":
        if self.path != "-" and _is_plain_dat(self.path):
            self._thread = threading.Thread(target=self._run, name="ftflame-read", daemon=True)
            self._thread.start()
        return self

    def result(self):
        from . import reading

        if self._thread is None:
            return reading.read(self.path, progress=self.progress)
        try:
            while self._thread.is_alive():
                self._thread.join(0.25)
        except KeyboardInterrupt:
            # the core stops at its next progress call (every 2**20 events)
            self.cancelled = True
            self._thread.join()
            raise
        if isinstance(self._exc, ValueError):
            raise InputError(self.path, str(self._exc)) from None
        if self._exc is not None:
            raise self._exc
        return reading._dat_profile(self._res, self.path, "")


def start_read(path: str, progress: Optional[Callable[[int], None]] = None) -> PendingRead:
    """Begin reading path. A plain trace.dat is read by the C core on a
    thread (it releases the GIL) while the caller goes on; anything else is
    read when result() is called."""
    check_readable(path)
    return PendingRead(path, progress).start()


def _is_plain_dat(path: str) -> bool:
    """An uncompressed trace.dat, read by libtracecmd in place."""
    try:
        with open(path, "rb") as f:
            return f.read(len(TRACE_DAT_MAGIC)) == TRACE_DAT_MAGIC
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror}") from None
