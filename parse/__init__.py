"""ftflame.parse: read a trace into a Profile.

The C core (``_core``) does all per-event work: it reads the trace, rebuilds
per-task call stacks and aggregates completed calls into the call-path tree.
``reading`` only detects the input, calls the core once and wraps the
columnar result into a Profile.

This package module stays light (no numpy): ``read_meanwhile`` can set the
C core reading a trace.dat before the rest of ftflame is imported, which is
imported on another thread meanwhile, so that the imports cost no wall time.
"""
from __future__ import annotations

import threading
from typing import Callable, Optional

from .dat import is_plain_dat, read_dat
from .detect import check_readable

__all__ = ["read", "read_meanwhile", "from_core_result", "build_events"]


def __getattr__(name: str):
    # read(), build_events() ... live in .reading, which imports numpy
    if name in ("read", "from_core_result", "build_events"):
        from . import reading

        return getattr(reading, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def read_meanwhile(path: str, meanwhile: Callable[[], None],
                   progress: Optional[Callable[[int], None]] = None, reader: Optional[str] = None):
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
        if path != "-" and is_plain_dat(path):
            res = read_dat(path, path, progress, reader)
    finally:
        side.join()
    from . import reading

    if res is None:  # text, compressed, stdin: read now
        return reading.read(path, progress=progress, reader=reader)
    return reading._dat_profile(res, path, "")


class _Meanwhile(threading.Thread):
    def __init__(self, work: Callable[[], None]):
        super().__init__(name="ftflame-meanwhile", daemon=True)
        self.work = work
        self.exc: Optional[BaseException] = None
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
