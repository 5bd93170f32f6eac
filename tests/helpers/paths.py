"""Call paths of a Profile named as the independent references name them
(tests/helpers/callref.py, textparse_py.py): the functions from the root
down, " [irq]" on the function where interrupt context starts."""
from __future__ import annotations

from ftflame.model.profile import NODE_IRQ


def context_path(p, row, irq=None, parent=None) -> tuple:
    """The reference's name of the path ending at node `row`; `irq` and
    `parent` (the flags' irq bit and the parent column) may be given once for
    many rows."""
    if irq is None:
        irq = (p.col("flags") & NODE_IRQ) != 0
    if parent is None:
        parent = p.col("parent")
    names = []
    while row >= 0:
        starts = irq[row] and (parent[row] < 0 or not irq[parent[row]])
        names.append(p.name(row) + (" [irq]" if starts else ""))
        row = int(parent[row])
    return tuple(names[::-1])
