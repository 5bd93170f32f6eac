"""Hot lists, computed once beside the Profile: where the corrected self
time went (functions, call paths) and where the tasks were switched out
(off-CPU time per call path). Renderers print these rows."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ftflame.model.profile import NODE_IRQ, Profile, top_rows

HOT_TOP = 10


@dataclass(frozen=True)
class HotRow:
    row: int       # function index of p.functions, or node row
    name: str      # function name, or the path "a > b > c"
    calls: int     # calls the figure covers
    ns: float      # corrected self time, or off-CPU time
    share: float   # of the total over every row
    path: tuple = ()  # call paths: the names from the root down


def hot_functions(p: Profile, top: int = HOT_TOP) -> list:
    """Functions by corrected self time (raw without corrections), over all
    their call paths."""
    ft = p.functions
    self_ns = np.asarray(ft.excl_corr, dtype=np.float64)
    total = float(np.maximum(self_ns, 0).sum()) or 1.0
    if np.isnan(self_ns).any():  # (Python's sort of NaN keys, as it was)
        order = sorted(range(len(ft)), key=lambda i: (-self_ns[i], ft.names[i]))[:top]
    else:  # by name among equals: one lexsort (a trace may have 100k functions)
        order = np.lexsort((p.name_ranks()[ft.func_ids], -self_ns))[:top].tolist()
    return [HotRow(i, ft.names[i], int(ft.calls_corr[i]), float(self_ns[i]), float(self_ns[i]) / total)
            for i in order if self_ns[i] > 0]


def irq_context(p: Profile) -> np.ndarray:
    """Per row of p.functions: "irq" when every call ran in interrupt
    context (hard or soft), "mixed" when some did, "" when none: the tables
    mark them, an interrupt handler is not work of the traced task."""
    ft = p.functions
    calls = p.col("calls").astype(np.int64)
    in_irq = (p.nodes.stored("flags") & NODE_IRQ) != 0
    irq_calls = np.bincount(p.col("func"), weights=np.where(in_irq, calls, 0),
                            minlength=len(p.funcs))[ft.func_ids] if p.nrows else np.zeros(len(ft))
    return np.where(irq_calls <= 0, "", np.where(irq_calls >= ft.calls, "irq", "mixed"))


def path_in_irq(p: Profile, row: int) -> bool:
    """A call path that runs in interrupt context."""
    return bool(p.nodes.stored("flags")[row] & NODE_IRQ)


def _path_name(p: Profile, row: int) -> str:
    return " > ".join(p.path(row))


def hot_paths(p: Profile, top: int = HOT_TOP) -> list:
    """Call paths by corrected self time."""
    c = p.corrected_or_raw
    self_ns = np.asarray(c.excl, dtype=np.float64)
    total = float(np.maximum(self_ns, 0).sum()) or 1.0
    rows = top_rows(self_ns, top)
    return [HotRow(int(r), _path_name(p, int(r)), int(c.calls[r]), float(self_ns[r]), float(self_ns[r]) / total,
                   tuple(p.path(int(r)))) for r in rows.tolist() if self_ns[r] > 0]


def offcpu_paths(p: Profile, top: int = HOT_TOP):
    """Call paths that were switched out, by their own off-CPU time: the
    path's off-CPU time minus its children's (a switch is charged to every
    frame open on the task's stack; the deepest one is where it happened).
    None when the trace has no sched_switch events (off-CPU time unknown)."""
    if not p.offcpu_known or not p.nrows:
        return None
    off = p.col("offcpu").astype(np.float64)
    parent = p.col("parent")
    has = parent >= 0
    own = off - np.bincount(parent[has], weights=off[has], minlength=p.nrows)
    total = float(np.maximum(own, 0).sum()) or 1.0
    rows = top_rows(own, top)
    return [HotRow(int(r), _path_name(p, int(r)), int(p.col("calls")[r]), float(own[r]), float(own[r]) / total,
                   tuple(p.path(int(r)))) for r in rows.tolist() if own[r] > 0]
