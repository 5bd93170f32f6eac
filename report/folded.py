"""FlameGraph folded stacks: `a;b;c N`, N = exclusive nanoseconds of the path.

Integer nanoseconds (inferno truncates fractions). Paths whose exclusive time
is zero or negative (clock skew, documented in anomalies) are left out, so
the total is the sum of positive exclusive times. Raw exclusive time by
default; --folded-weights corrected writes the corrected one (the same paths
as the corrected flame graph: interrupt subtrees apart under [irq]/[softirq]
when irqs are excluded). A root that ran in interrupt context stands under
an [irq] / [softirq] frame in both modes, so a function entered both in a task
and in an interrupt gives two stacks that read as two. In raw weights an
interrupt subtree stays inside the call it interrupted (its time is that
call's), its top under an [irq] / [softirq] frame too: in flamegraph.pl it
reads as an interrupt, not as an ordinary callee.
"""
from __future__ import annotations

from ftflame.correct.corrections import irq_kind
from ftflame.model.errors import InputError
from ftflame.model.profile import NODE_IRQ_ROOT, Profile

from .flametree import context_frames
from .options import DEFAULT, RenderOptions


def folded_lines(p: Profile, corrected: bool = False):
    """(path, weight) for every call path with positive exclusive time."""
    if p.nrows == 0:
        return
    parent = p.col("parent").tolist()
    func = p.col("func").tolist()
    weight = (p.corrected_or_raw.excl if corrected else p.col("excl")).tolist()
    # corrected, irqs excluded: interrupt subtrees are not part of the
    # interrupted path's time; they stand apart under [irq] / [softirq]
    reroot = corrected and p.corrected is not None and p.corrected.irqs == "exclude"
    flags = p.col("flags").tolist()
    # roots in interrupt context stand under [irq] / [softirq], as the flame graphs draw them
    context = context_frames(p)
    paths = [None] * p.nrows
    for r in range(p.nrows):  # parents get lower row numbers than children
        name = p.funcs[func[r]].replace(";", ":").replace(" ", "_")
        if reroot and flags[r] & NODE_IRQ_ROOT:
            paths[r] = irq_kind(name) + ";" + name
        elif flags[r] & NODE_IRQ_ROOT and parent[r] >= 0:  # raw: inside the interrupted call, marked
            paths[r] = paths[parent[r]] + ";" + irq_kind(name) + ";" + name
        elif r in context:
            paths[r] = context[r] + ";" + name
        else:
            paths[r] = name if parent[r] < 0 else paths[parent[r]] + ";" + name
    merged = {}
    for r in range(p.nrows):
        w = weight[r]
        if w > 0:
            merged[paths[r]] = merged.get(paths[r], 0) + w
    for path in sorted(merged):
        w = int(merged[path])
        if w > 0:
            yield path, w


def render(p: Profile, opts: RenderOptions = DEFAULT) -> str:
    corrected = (opts or DEFAULT).folded_weights == "corrected"
    if corrected and not p.calibration.applied:
        # corrected weights would be the raw ones: a file that says nothing
        # of it must not claim them
        raise InputError("--folded-weights corrected", "no hook-cost correction applied to this trace "
                         "(calibration: none)", "give a calibration, or use --folded-weights raw")
    return "".join(f"{path} {w}\n" for path, w in folded_lines(p, corrected))
