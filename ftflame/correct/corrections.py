"""Corrections: pure transforms Profile -> Profile (the overhead model in docs/design.md).

Raw sums are never changed. ``correct`` adds a ``Corrected`` view computed
from the linear sums of each call path's *clean* calls (all minus ``gap_*``:
the C core leaves out the calls whose own interval holds a lost-event gap,
a lost exit or a missing entry; those are closed upwards, so the clean calls
form whole call trees, some of them *detached*: under a caller that is left
out or never completed, summed apart per path in ``det_*``). A detached
call's corrected time is in no kept caller's: its path's figures keep it,
its parent path's self time does not subtract it, and the parent's clamp
does not scale it (_clamp_top_down). For a clean call c with D recorded
descendants, n direct children, R interrupt subtrees inside it, I its
measured inclusive time, irq the time of those subtrees and off the time the
task was switched out:

    corr_incl(c) = I - off - sw - irq - O_in - D*(O_in + O_out) - R*O_out
    corr_excl(c) = corr_incl(c) - sum of corr_incl(children)

(with ``irqs="include"`` the irq subtrees stay in: their calls count in D and
nothing else is removed). Because D(c) = n(c) + sum D(children), corr_excl is
DESIGN's ``meas_excl - O_in - n*O_out`` minus the call's own off-CPU time, and
the identity corr_incl = corr_excl + sum corr_incl(children) holds exactly
per call path and, summed, per function. A negative corrected exclusive time
is clamped at zero by raising the path's corrected inclusive time to its
children's total; every clamp is counted with the ns it added.

sw is the switch work inside c: the on-CPU time of the scheduler's frames a
switched-out task came back in (``sched``), less their hook cost
(``sched_calls`` x O_in + ``sched_outs`` x O_out), taken out whenever the
off-CPU time is (docs/overhead.md "Switch work"). The calls the task records
while switched out (``offcpu_calls``: the tail of __schedule(), after its
sched_switch event) ran inside the off-CPU time, hooks and all: their
O_in + O_out is not taken out a second time.

An interrupt subtree's own O_out lands in the interrupted call (the hook of
its first function runs before its calltime is read): with irqs excluded,
R*O_out removes it with the subtree.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

import ftflame._model as _model
from ftflame.correct import hooklevel
from ftflame.model.profile import (
    NODE_IRQ,
    NODE_IRQ_ROOT,
    SAMPLE_GAP,
    SAMPLE_IRQ,
    Calibration,
    Corrected,
    OffCpu,
    Profile,
    distinct,
    means,
)

IRQ_MODES = ("exclude", "include")
UNRELIABLE_FRACTION = 0.5  # hook-cost correction above this share of the measured time

# Functions that start a softirq subtree (the rest of the irq roots are hardirqs).
SOFTIRQ_ROOTS = frozenset(("__do_softirq", "do_softirq", "handle_softirqs", "run_ksoftirqd",
                           "__local_bh_enable_ip", "local_bh_enable", "net_rx_action",
                           "tasklet_action", "run_timer_softirq", "rcu_core_si"))

# Off-CPU time larger than a call path's inclusive time cannot happen when
# durations are wall time (sleep-time, the default). With nosleep-time the
# tracer already took the time switched out from the durations.
NOSLEEP_SLACK_NS = 2000
NOSLEEP_SLACK = 1.01


def clean(p: Profile, name: str) -> np.ndarray:
    """Per-node sum over the clean calls (all calls minus gap calls)."""
    out = p.col(name, dtype=np.float64)
    out -= p.col("gap_" + name, dtype=np.float64)
    return out


def detached(p: Profile, name: str) -> np.ndarray:
    """Per-node sum over the detached calls (kept, their caller's call left out)."""
    return p.col("det_" + name, dtype=np.float64)


def has_detached(p: Profile) -> bool:
    return bool(p.counters.get("detached_calls", 0))


def _zeros(n: int) -> np.ndarray:
    """n zeros as a read-only float64 array that holds one value: a column
    the correction removes nothing in, costing no memory per row."""
    return np.broadcast_to(np.float64(0.0), (n,))


def pseudo_roots(p: Profile) -> np.ndarray:
    """The '(partial)' pseudo-root: a node that is no call (ancestors unknown)."""
    return p.pseudo_roots


def counted_children(p: Profile, irqs: str) -> np.ndarray:
    """Per node: does its corrected inclusive time count in its parent's?"""
    parent = p.col("parent")
    counted = parent >= 0
    pseudo = pseudo_roots(p)
    counted &= ~pseudo[np.maximum(parent, 0)]
    if irqs == "exclude":
        counted &= (p.col("flags") & NODE_IRQ_ROOT) == 0
    return counted


def irq_roots_inside(p: Profile, calls: np.ndarray | None = None) -> np.ndarray:
    """R per node: interrupt subtrees inside its clean calls (the tree's
    irq-root children, summed up through task-context descendants). calls:
    clean(p, "calls"), when the caller has it (not made twice). A level at
    a time from the deepest, each row adding to its parent: its clean calls
    for an irq root, 0 for another irq path, else its own R (in C: numpy
    steps per level were 6-15 ms on 220k paths in 60 levels)."""
    calls = clean(p, "calls") if calls is None else calls
    R = np.zeros(p.nrows)
    # a detached call is inside no kept call of its parent path
    # (as stored: 32-bit, zero on most rows)
    detached = has_detached(p)
    order, level_at = p.level_order
    _model.irq_roots_up(order, level_at, _int32(p, "parent"), _int32(p, "flags"), NODE_IRQ_ROOT, NODE_IRQ,
                        np.ascontiguousarray(calls, dtype=np.float64),
                        _int32(p, "det_calls") if detached else None,
                        _int32(p, "det_irq_roots") if detached else None, R)
    return R


def _int32(p: Profile, name: str) -> np.ndarray:
    """A 32-bit node column as stored, for the passes in C (a copy only
    when a hand-made table holds it otherwise)."""
    return np.ascontiguousarray(p.nodes.stored(name), dtype=np.int32)


def detect_nosleep(p: Profile):
    """Was the trace recorded with nosleep-time while sched_switch events
    were on? Then off-CPU time is already out of the durations. Returns a
    reason string, or None."""
    if not p.counters.get("switches"):
        return None
    off = clean(p, "offcpu")
    incl = clean(p, "incl")
    bad = np.nonzero(off > incl * NOSLEEP_SLACK + NOSLEEP_SLACK_NS)[0]
    if len(bad) == 0:
        return None
    r = int(bad[np.argmax(off[bad] - incl[bad])])
    return (f"{len(bad):,} call paths were switched out longer than they lasted (e.g. "
            f"{p.name(r)}: {off[r] / 1e3:,.1f} us off-CPU in {incl[r] / 1e3:,.1f} us): durations "
            "exclude off-CPU time (nosleep-time), so it is not subtracted again")


def correct(p: Profile, cal: Calibration, irqs: str = "exclude", offcpu: str = "auto") -> Profile:
    """Return a copy of p with calibration and corrected figures set.

    irqs: "exclude" (irq subtrees leave the interrupted calls' corrected
    time, reported apart) or "include". offcpu: "auto" (remove the
    sched_switch off-CPU time unless the durations already exclude it),
    "remove" or "keep"."""
    if irqs not in IRQ_MODES:
        raise ValueError(f"irqs must be one of {IRQ_MODES}")
    off_mode, why = offcpu_mode(p, offcpu)
    nodes = _corrected_nodes(p, cal, irqs, off_mode)
    # per root call: a root call's figures are its row's
    if len(p.samples):
        o_in, o_out = float(cal.o_in_ns), float(cal.o_out_ns)
        sample_dur, sample_clamped = _sample_corrected(p, irqs, off_mode, o_in, o_out, o_in + o_out,
                                                       nodes.level_samples)
    else:
        sample_dur = np.zeros(0)
        sample_clamped = 0
    corrected = Corrected(
        incl=nodes.incl, excl=nodes.excl, calls=nodes.calls, clamped=nodes.clamped, sample_dur=sample_dur,
        notes=correction_notes(p, off_mode, why, nodes), overhead=nodes.overhead,
        irq_removed=nodes.irq_removed, offcpu_removed=nodes.offcpu_removed, clamp_ns=nodes.clamp_ns,
        unreliable=nodes.unreliable, sample_clamped=sample_clamped, irqs=irqs, offcpu=off_mode,
        offcpu_reason=why, sched_removed=nodes.sched_removed, det_incl=nodes.det_incl)
    # (the new Profile starts without the old one's views of its figures)
    return p.replace(calibration=cal, corrected=corrected)


def offcpu_mode(p: Profile, offcpu: str) -> tuple:
    """(OffCpu, the reason when the durations already exclude the off-CPU
    time, else ""): what the correction does with the off-CPU time when
    asked for `offcpu` ("auto", "remove" or "keep")."""
    if offcpu == "keep":
        return OffCpu.KEPT_ASKED, ""
    why = detect_nosleep(p) if offcpu == "auto" else None
    if why:
        return OffCpu.KEPT_NOSLEEP, why
    if not p.counters.get("switches"):
        return OffCpu.UNKNOWN, ""
    return OffCpu.REMOVED, ""


class _Nodes(NamedTuple):
    """The per-node results of the correction (Corrected's columns)."""
    incl: np.ndarray
    excl: np.ndarray
    calls: np.ndarray
    clamped: np.ndarray
    clamp_ns: np.ndarray
    overhead: np.ndarray
    irq_removed: np.ndarray
    offcpu_removed: np.ndarray
    sched_removed: np.ndarray | None
    unreliable: np.ndarray
    level_samples: np.ndarray | None  # the hook level's adjustment per root call, None without
    det_incl: np.ndarray | None  # the part of incl over the detached calls, None: none


def _corrected_nodes(p: Profile, cal: Calibration, irqs: str, off_mode: OffCpu) -> _Nodes:
    """The corrected inclusive and exclusive sums per node, with what was
    taken out of them: over the clean calls, and the same formula over the
    detached calls (kept calls whose caller is left out) on their rows.
    Each whole-tree column lives only as long as it is needed (a column of
    the stage's peak each): the formula's terms are made in helpers and
    given up on their return."""
    o_in, o_out = float(cal.o_in_ns), float(cal.o_out_ns)
    is_irq = (p.nodes.stored("flags") & NODE_IRQ) != 0
    calls = clean(p, "calls")
    off = clean(p, "offcpu")
    if off_mode.kept or not off.any():
        # nothing removed (kept, or no off-CPU time on any path): one zero
        # for every row, not a whole-tree column of them
        off = _zeros(p.nrows)
    sw = switch_work(p, o_in, o_out) if off_mode is OffCpu.REMOVED else None
    ci_formula, over, irq_removed, level_samples, unreliable = _formula(
        p, cal, irqs, is_irq, calls, clean(p, "incl"), clean(p, "desc"), off, sw, irq_roots_inside(p, calls),
        lambda n: clean(p, n))
    det = _detached_formula(p, cal, irqs, is_irq, bool(off.any()), sw is not None)
    ci, cx, clamp_ns, det_incl = _clamp_top_down(p, ci_formula, counted_children(p, irqs), sw, det)
    return _Nodes(incl=ci, excl=cx, calls=calls.astype(np.int64), clamped=clamp_ns > 0.5, clamp_ns=clamp_ns,
                  overhead=over, irq_removed=irq_removed, offcpu_removed=off, sched_removed=sw,
                  unreliable=unreliable, level_samples=level_samples, det_incl=det_incl)


def _detached_formula(p: Profile, cal: Calibration, irqs: str, is_irq: np.ndarray, off_removed: bool,
                      switched: bool) -> np.ndarray | None:
    """Per node, _formula's corrected inclusive sum over the detached calls
    (kept calls whose caller's call is left out: a tree of their own), on
    their rows only; None when the trace has none."""
    rows = np.flatnonzero(p.nodes.stored("det_calls")) if has_detached(p) else ()
    if not len(rows):
        return None

    def dget(name):
        return p.col("det_" + name, rows, np.float64)

    o_in, o_out = float(cal.o_in_ns), float(cal.o_out_ns)
    d_off = dget("offcpu") if off_removed else np.zeros(len(rows))
    d_sw = net_switch_work(dget("sched"), dget("sched_calls"), dget("sched_outs"), o_in, o_out) if switched else None
    det = np.zeros(p.nrows)
    det[rows] = _formula(p, cal, irqs, is_irq[rows], dget("calls"), dget("incl"), dget("desc"), d_off, d_sw,
                         p.col("det_irq_roots", rows, np.float64), dget, rows)[0]
    return det


def _formula(p: Profile, cal: Calibration, irqs: str, is_irq, calls, incl, desc, off, sw, R, get,
             rows=None) -> tuple:
    """(corrected inclusive sum per node before any clamp, the hook cost
    taken out, the irq time taken out, the per-sample hook-level shift,
    unreliable per node) of the calls whose per-node sums are calls, incl,
    desc, off (off-CPU time to take out), sw (switch work, None: none), R
    (interrupt subtrees inside) and get(name) for the others: the clean
    calls, or the detached ones; of every node, or of the node rows `rows`
    (every array then of those rows). incl becomes the result, R is used up."""
    o_in, o_out = float(cal.o_in_ns), float(cal.o_out_ns)
    o_sum = o_in + o_out
    # over: the hook cost per node, in place (each whole-tree temporary is a
    # column of the stage's peak); the same operations in the same order as
    # calls * o_in + desc * o_sum + R * o_out, so the same doubles
    over = calls * o_in
    if irqs == "exclude":
        over += desc * o_sum
        R *= o_out
        np.add(over, R, out=over, where=~is_irq)  # an irq path's own subtree is no R
        del R
        irq_removed = get("irq")
        irq_removed[is_irq] = 0.0
    else:
        task = desc + get("irq_calls")
        task *= o_sum
        task += over
        over += desc * o_sum
        over[~is_irq] = task[~is_irq]
        del task
        irq_removed = _zeros(len(calls))
    if sw is not None:
        # the calls recorded while the task was switched out (the tail of
        # __schedule()) ran inside the off-CPU time, their hooks too
        tail = get("offcpu_calls")
        tail *= o_sum
        over -= tail
        del tail
    level = hooklevel.adjustments(p, cal, desc, calls, rows)
    del desc
    if level is not None:
        over += level[0]
    unreliable = (over > UNRELIABLE_FRACTION * incl) & (calls > 0)
    ci_formula = incl  # incl - off - irq_removed - over (- switch work), in place
    ci_formula -= off
    ci_formula -= irq_removed
    ci_formula -= over
    if sw is not None:
        ci_formula -= sw
    del incl
    level_samples = None if level is None else level[1]
    del level
    return ci_formula, over, irq_removed, level_samples, unreliable


def correction_notes(p: Profile, off_mode: OffCpu, why: str, nodes: _Nodes) -> tuple:
    """What the correction says of itself, in every output's notes."""
    notes = []
    if off_mode is OffCpu.KEPT_NOSLEEP:
        notes.append(why)
    if off_mode is OffCpu.UNKNOWN:
        notes.append("no sched_switch events: time switched out stays in the durations "
                     "(record with -e sched:sched_switch to split it off)")
    if nodes.sched_removed is not None:
        sched_note = switch_work_words(p, nodes.sched_removed, sample_switches(p))
        if sched_note:
            notes.append(sched_note)
    gap = p.counters.get("gap_calls", 0)
    if gap:
        notes.append(f"{gap:,} call{'s' if gap != 1 else ''} left out of corrected figures "
                     f"({'it spans' if gap == 1 else 'they span'} {p.gap_causes or 'a gap'})")
    if nodes.clamped.any():
        notes.append(f"{int(nodes.clamped.sum()):,} call paths clamped at zero corrected self time "
                     f"({nodes.clamp_ns.sum() / 1e3:,.1f} us added back)")
    return tuple(notes)


def _sample_corrected(p: Profile, irqs: str, off_mode: OffCpu, o_in: float, o_out: float, o_sum: float,
                      level_samples) -> tuple:
    """(corrected duration per root call, NaN for a gap one; how many were
    clamped at 0): dur - off-CPU - irq - hook cost, an irq root call's
    without the irq term (its own time is interrupt time)."""
    # in place on one float column, the mostly-zero figures subtracted where
    # they are not zero (the root calls' own columns, RootCalls): x - 0.0 is
    # x, so the values are those of the whole-column formula, in its order
    rc = p.samples
    n = len(rc)
    stored_dur = rc.stored("dur")
    corr = (stored_dur if stored_dur is not None else p.scol("dur")).astype(np.float64)
    s_off = None
    if off_mode is OffCpu.REMOVED:  # the switch work and the calls switched out go with the off-CPU time
        s_off = p.scol("offcpu").astype(np.float64)
        sw = net_switch_work(p.scol("sched").astype(np.float64), p.scol("sched_calls"), p.scol("sched_outs"),
                             o_in, o_out)
        s_off += sw
        del sw
        s_off -= p.scol("offcpu_calls") * o_sum
        corr -= s_off
    desc = rc.stored("desc")
    if desc is None and "desc" in rc._extras:
        desc = p.scol("desc")
    if irqs == "exclude":
        rows, vals = rc.nonzero("irq")
        corr[rows] -= vals
        corr -= o_in
        if desc is not None:
            corr -= desc * o_sum
        rows, vals = rc.nonzero("irq_roots")
        corr[rows] -= vals * o_out
    else:
        corr -= o_in
        rows, vals = rc.nonzero("irq_calls")
        if desc is not None or len(rows):
            both = np.zeros(n) if desc is None else desc.astype(np.float64)
            both[rows] += vals
            corr -= both * o_sum
            del both
    flags = rc.stored("flags")
    flags = p.scol("flags") if flags is None else flags
    s_irq = np.flatnonzero(flags & SAMPLE_IRQ)
    if len(s_irq):  # an irq root call: its own time is interrupt time
        own = p.scol("dur", s_irq).astype(np.float64)
        if s_off is not None:
            own -= s_off[s_irq]
        corr[s_irq] = own - o_in - (desc[s_irq] if desc is not None else np.zeros(len(s_irq))) * o_sum
    del s_off, desc
    if level_samples is not None:
        corr -= level_samples
    s_gap = (flags & SAMPLE_GAP) != 0
    del flags
    clamped = int(np.count_nonzero((corr < 0) & ~s_gap))
    # a gap root call's descendants are incomplete: it has no corrected
    # duration (NaN: every output prints "no figure", never 0)
    np.maximum(corr, 0.0, out=corr)
    corr[s_gap] = np.nan
    return corr, clamped


def switch_work(p: Profile, o_in: float, o_out: float) -> np.ndarray | None:
    """Per node: the scheduler's work around the switches inside its clean
    calls (the switch frames' on-CPU time), their hook cost taken out
    (docs/overhead.md "Switch work"); None when the trace has no switch
    frame (no column made: most traces)."""
    if not p.counters.get("switches") or not (p.col("sched_calls") - p.col("gap_sched_calls")).any():
        return None
    return net_switch_work(clean(p, "sched"), clean(p, "sched_calls"), clean(p, "sched_outs"), o_in, o_out)


def net_switch_work(sched: np.ndarray, sched_calls, sched_outs, o_in: float, o_out: float) -> np.ndarray:
    """The switch frames' on-CPU time less their own hook cost: the one
    formula of switch work, per node, per root call and per call. sched (a
    float64 array the caller owns) becomes the result."""
    sched -= sched_calls * o_in
    sched -= sched_outs * o_out
    return sched


def sample_switches(p: Profile) -> int:
    """Switches with a scheduler frame inside the clean root calls."""
    if not len(p.samples):
        return 0
    return int(p.scol("switches", (p.scol("flags") & SAMPLE_GAP) == 0).sum())


def _tops(p: Profile) -> np.ndarray:
    """The rows at the top of each tree (nested paths are inside them)."""
    parent = p.col("parent")
    top = (parent < 0) | pseudo_roots(p)[np.maximum(parent, 0)]
    return top & ~pseudo_roots(p)


def switch_work_words(p: Profile, sw: np.ndarray, switches: int) -> str:
    """What the correction says of the switch work, only where the trace has
    switch frames: the same words in every output."""
    if not switches or not sw.any():
        return ""
    total = float(sw[_tops(p)].sum())
    return (f"the scheduler's work around {switches:,} switch{'es' if switches != 1 else ''}, "
            f"{total / 1e3:,.1f} us, taken out with the off-CPU time")


def _clamp_top_down(p: Profile, ci_formula: np.ndarray, counted: np.ndarray,
                    switch_ns: np.ndarray | None = None, det: np.ndarray | None = None):
    """corr_excl = corr_incl - sum of counted children's corr_incl, >= 0.
    ci_formula is overwritten (its memory becomes the wanted values).

    A path keeps its own formula value (its measured time minus what the
    model removes), clamped at 0; where its children's corrected times add
    up to more than that, they are scaled down to fit, so the exclusive
    time is 0 and nothing above changes. The roots' figures thus equal the
    per-call formula (and the corrected root samples); the ns taken from the
    children is the clamp amount, less the switch work taken out of the path
    (switch_ns): a switch frame's children are the scheduler's work, taken out
    with it, not a clamp. Parents first: they have lower rows.

    det: the part of ci_formula over the detached calls (their caller's
    call left out), None: none. That part is clamped at 0 on its own,
    neither scaled with the parent path nor subtracted from its self time.
    Returns (ci, cx, clamp_ns, the detached part of ci or None)."""
    parent = p.col("parent")
    pseudo = pseudo_roots(p)
    det_want = None
    clamp_ns = np.where(pseudo, 0.0, np.maximum(-ci_formula, 0.0))  # leaves below 0
    if det is not None:
        ci_formula -= det  # the attached calls' part
        np.maximum(-ci_formula, 0.0, out=clamp_ns)
        clamp_ns -= np.minimum(det, 0.0)  # (det is used up)
        clamp_ns[pseudo] = 0.0
        det_want = np.maximum(det, 0.0, out=det)
        det_want[pseudo] = 0.0
    want = np.maximum(ci_formula, 0.0, out=ci_formula)  # ci_formula is used up
    want[pseudo] = 0.0
    has_parent = counted
    kid_want = np.bincount(parent[has_parent], weights=want[has_parent], minlength=p.nrows)
    if det_want is not None:
        want += det_want
    ci = want.copy()
    # parents first, a level at a time (in C: numpy steps per level were
    # 14-20 ms on 220k paths in 60 levels): a counted child takes its
    # parent's scale (the parent is final), its detached calls keep their
    # own value; a path whose children want more than it has scales them
    # to fit, the excess (less its switch work) clamped
    order, level_at = p.level_order
    sw = None if switch_ns is None else np.ascontiguousarray(switch_ns, dtype=np.float64)
    # (kid_want: bincount's int64 zeros when no row is counted)
    _model.clamp_down(order, level_at, _int32(p, "parent"), np.ascontiguousarray(has_parent, dtype=bool), want,
                      det_want, np.ascontiguousarray(kid_want, dtype=np.float64), sw, ci, clamp_ns)
    del want, kid_want
    w = ci[has_parent]
    if det_want is not None:
        w -= det_want[has_parent]
    kids = np.bincount(parent[has_parent], weights=w, minlength=p.nrows)
    del w
    cx = ci - kids  # in place from here: no whole-tree temporaries
    neg = cx < 0
    np.maximum(cx, 0.0, out=cx)
    cx[pseudo] = 0.0
    # where scaling made ci - kids a hair negative, the identity must still
    # hold exactly: take the rounding from the exclusive time's 0
    ci[neg] = kids[neg]
    ci[pseudo] = kids[pseudo]
    return ci, cx, clamp_ns, det_want


def function_extras(p: Profile) -> dict:
    """Per function, aligned with p.functions: what the corrections removed
    and whether the result is unreliable. Empty without corrections.
    Computed once per Profile (a report asks twice: its notes and its
    function table); read-only."""
    return p.views.get("function_extras", lambda: _function_extras(p))


def _function_extras(p: Profile) -> dict:
    c = p.corrected
    if c is None or c.overhead is None:
        return {}
    ft = p.functions
    nf = len(p.funcs)
    func = p.col("func")

    def total(col):
        return np.bincount(func, weights=col, minlength=nf)[ft.func_ids]

    over = total(c.overhead)
    incl = total(clean(p, "incl"))
    return {
        "overhead": over, "irq": total(c.irq_removed), "offcpu": total(c.offcpu_removed),
        "clamp": total(c.clamp_ns), "clamped": total(c.clamped),
        "clean_incl": incl,
        "unreliable": (over > UNRELIABLE_FRACTION * incl) & (ft.calls_corr > 0),
    }


def irq_kind(name: str) -> str:
    """'[softirq]' or '[irq]': the frame an irq subtree is shown under."""
    return "[softirq]" if name in SOFTIRQ_ROOTS else "[irq]"


@dataclass(frozen=True)
class Summary:
    """Totals of the corrections (JSON `calibration.corrections`, the text
    header), over the top of each tree (nested paths are inside them)."""

    irqs: str  # IRQ_MODES
    offcpu: OffCpu
    offcpu_reason: str  # Corrected.offcpu_reason
    clean_calls: int
    gap_calls: int
    overhead_removed_ns: float
    irq_removed_ns: float
    offcpu_removed_ns: float
    # the scheduler's work taken out with the off-CPU time and the switches
    # it is around: None where the trace has no switch frame
    switch_work_removed_ns: float | None
    switches: int | None
    clamped_paths: int
    clamped_ns: float
    clamped_root_calls: int
    unreliable_paths: int


def summary(p: Profile) -> Summary | None:
    """Totals of the corrections, None without them."""
    c = p.corrected
    if c is None or c.overhead is None:
        return None
    top = _tops(p)
    sched_ns, switches = None, None
    if c.sched_removed is not None:
        sched_ns, switches = round(float(c.sched_removed[top].sum()), 1), sample_switches(p)
    return Summary(
        irqs=c.irqs, offcpu=c.offcpu, offcpu_reason=c.offcpu_reason,
        clean_calls=int(c.calls.sum()), gap_calls=int(p.counters.get("gap_calls", 0)),
        overhead_removed_ns=round(float(c.overhead[top].sum()), 1),
        # (set with c.overhead, as every column of the correction)
        irq_removed_ns=round(float(c.irq_removed[top].sum()), 1),  # type: ignore[index]
        offcpu_removed_ns=round(float(c.offcpu_removed[top].sum()), 1),  # type: ignore[index]
        switch_work_removed_ns=sched_ns, switches=switches,
        clamped_paths=int(c.clamped.sum()), clamped_ns=round(float(c.clamp_ns.sum()), 1),
        clamped_root_calls=int(c.sample_clamped),
        unreliable_paths=int(c.unreliable.sum()),
    )


# ---- corrected statistics: computed once, printed by every renderer ------
STAT_NAMES = ("sum", "min", "max", "mean", "p50", "p90", "p99")
# The words docs/overhead.md, docs/html.md, `ftflame report --help` and the
# HTML page use (tests/test_outputs_agree.py checks they stay the same).
HOW_CORRECTED = (
    "How corrected figures are computed: sums and means are exact, the corrected sums over the "
    "clean calls (gap calls left out) and their count; min, max and percentiles are exact where "
    "every clean call's corrected time is known (root calls), elsewhere estimates: the raw ones "
    "scaled by corrected mean / raw mean, marked approx (\u2248 in the HTML, \"approx\": true in "
    "the JSON).")


class Groups:
    """Values grouped by key, as columns: the distinct keys (sorted), where
    each key's values start in `vals` (one more at the end: their count),
    the values, key after key. What exact_values gives: a trace with 100k
    distinct root functions has 100k groups, and an array and a dict entry
    each cost more than their values."""

    __slots__ = ("keys", "at", "vals", "ends")

    def __init__(self, keys: np.ndarray, at: np.ndarray, vals: np.ndarray, ends: np.ndarray | None = None):
        # ends: where each key's values end, when the groups are not one
        # after the other in key order (exact_values' by function, sharing
        # the by-node values): at[:-1] are then their starts only
        self.keys, self.at, self.vals = keys, at, vals
        self.ends = at[1:] if ends is None else ends

    def __len__(self) -> int:
        return len(self.keys)

    def __contains__(self, key) -> bool:
        k = int(np.searchsorted(self.keys, key))
        return k < len(self.keys) and self.keys[k] == key

    def __getitem__(self, key) -> np.ndarray:
        """key's values."""
        k = int(np.searchsorted(self.keys, key))
        if k >= len(self.keys) or self.keys[k] != key:
            raise KeyError(key)
        return self.vals[self.at[k]:self.ends[k]]

    def starts(self) -> np.ndarray:
        return self.at[:-1]

    def sizes(self) -> np.ndarray:
        return self.ends - self.at[:-1]

    def with_vals(self, vals: np.ndarray) -> Groups:
        """The same groups of other values (one per value of these)."""
        return Groups(self.keys, self.at, vals, self.ends)

    def at_rows(self, rows: np.ndarray) -> Groups:
        """The groups of the keys in rows, keyed by their position in rows."""
        if len(rows) == len(self.keys) and np.array_equal(rows, self.keys):
            # every group, in order (the JSON tree's exact rows): the same
            # values, not gathered again (8 bytes a root call and the gather's)
            return Groups(np.arange(len(rows), dtype=np.int64), self.at, self.vals, self.ends)
        k = np.minimum(np.searchsorted(self.keys, rows), max(len(self.keys) - 1, 0))
        found = np.flatnonzero(self.keys[k] == rows) if len(self.keys) else np.zeros(0, np.int64)
        k = k[found]
        # the same values, not gathered (a chunk of the JSON tree holding
        # every root path gathered every root call's: 8 bytes a root call
        # and the gather's index, 16)
        return Groups(found.astype(np.int64), np.r_[self.at[k], len(self.vals)].astype(np.int64), self.vals,
                      self.ends[k])


NO_GROUPS = Groups(np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(0))


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The positions starts[k]..starts[k] + sizes[k] of every k, one range
    after the other."""
    first = np.cumsum(sizes) - sizes
    return np.repeat(starts - first, sizes) + np.arange(int(sizes.sum()), dtype=np.int64)


def _exact_stats(corr, corr_calls, exact: Groups) -> tuple:
    """(rows, their [sum, min, max, mean, p50, p90, p99] as a (rows, 7)
    array), rows sorted, for the rows whose per-call corrected values are
    all known (root calls; exact: exact_values' groups): exact, not
    estimated. Percentiles by nearest rank (the ceil(n * q / 100)-th
    smallest value). All rows at once (one sort of every value by row,
    then by value): a trace with 100k distinct root functions has 100k such
    rows."""
    if not len(exact):
        return np.zeros(0, np.int64), np.zeros((0, len(STAT_NAMES)))
    rows, lens = exact.keys, exact.sizes()
    calls = np.asarray(corr_calls)[rows].astype(np.int64)
    keep = (lens == calls) & (calls > 0)
    rows, lens = rows[keep], lens[keep]
    if not len(rows):
        return np.zeros(0, np.int64), np.zeros((0, len(STAT_NAMES)))
    s = np.asarray(corr, dtype=np.float64)[rows]
    ranks = [np.maximum(np.ceil(lens * q / 100.0).astype(np.int64) - 1, 0) for q in (50, 90, 99)]
    if len(rows) <= EXACT_LEAN_ROWS:
        # a row at a time, its values sorted in one scratch array: the
        # figures of the sort of all of them at once (the same values),
        # without its five whole columns (40 bytes a root call)
        first, last = np.empty(len(rows)), np.empty(len(rows))
        picks = [np.empty(len(rows)) for _ in ranks]
        for i, (st, ln) in enumerate(zip(exact.starts()[keep].tolist(), lens.tolist())):
            g = np.array(exact.vals[st:st + ln], dtype=np.float64)
            g.sort()
            first[i], last[i] = g[0], g[-1]
            for pk, rk in zip(picks, ranks):
                pk[i] = g[rk[i]]
            del g
        return rows, np.stack([s, first, last, s / lens, *picks], axis=1)
    flat = np.asarray(exact.vals[_ranges(exact.starts()[keep], lens)], dtype=np.float64)
    group = np.repeat(np.arange(len(rows)), lens)
    v = flat[np.lexsort((flat, group))]  # by row, then by value
    start = np.cumsum(lens) - lens
    picks = [v[start + rk] for rk in ranks]
    return rows, np.stack([s, v[start], v[start + lens - 1], s / lens, *picks], axis=1)


# Up to this many rows with exact statistics, _exact_stats sorts their values
# a row at a time (a Python step per row); more (100k distinct root
# functions): all at once, at about 40 bytes a root call more.
EXACT_LEAN_ROWS = 4096


def scaled_stats(sums, calls, mins, maxs, pcts, corr, corr_calls, exact: Groups,
                 rounded_mean: bool = False, raw_mean=None):
    """Corrected {sum, min, max, mean, p50, p90, p99} per row, the one
    computation every output prints (docs/overhead.md "corrected statistics"):

    * sum and mean are exact: the corrected linear sums over the clean calls;
    * min, max and percentiles are exact where every clean call's corrected
      time is known (root calls); elsewhere they are ESTIMATES, the raw ones
      scaled by (corrected mean / raw mean), clamped at 0, marked approx.

    Returns (cols: 7 float arrays in STAT_NAMES order, approx: int array,
    the exact rows (sorted), their stats (a row each, STAT_NAMES order)). rounded_mean: scale by the raw
    mean as the JSON writes it (0.1 ns), as the function table always has. raw_mean:
    means(sums, calls), when the caller has it (the JSON's tree rows print it too)."""
    sums = np.asarray(sums)
    calls = np.asarray(calls)
    has = calls != 0
    if raw_mean is None:
        raw_mean = means(sums, calls)  # the model's, as every output prints it
    if rounded_mean:
        # round() called in C (map), not a Python loop per row: a trace may have 100k functions
        raw_mean = np.fromiter(map(round, raw_mean.tolist(), itertools.repeat(1)), dtype=np.float64,
                               count=len(raw_mean))
    cc = np.asarray(corr_calls).astype(np.float64)
    mean = means(corr, corr_calls)
    f = np.divide(mean, raw_mean, out=np.zeros(len(mean)), where=(cc != 0) & (raw_mean > 0))

    if rounded_mean:
        def scaled(x):  # Python's max(x, 0.0): -0.0 and NaN stay
            y = np.where(has, x, 0) * f
            return np.where(y < 0, 0.0, y)
    else:
        def scaled(x):
            y = np.multiply(np.where(has, x, 0), f)
            return np.maximum(y, 0.0, out=y)

    cols = [np.array(corr, dtype=np.float64), scaled(mins), scaled(maxs), mean,
            scaled(pcts[:, 0]), scaled(pcts[:, 1]), scaled(pcts[:, 2])]
    approx = np.ones(len(cols[0]), dtype=np.int64)
    ex, vals = _exact_stats(corr, corr_calls, exact)
    if len(ex):
        for k, c in enumerate(cols):
            c[ex] = vals[:, k]
        approx[ex] = 0
    return cols, approx, ex, vals


def exact_values(p: Profile, per_call: np.ndarray | None = None) -> tuple:
    """Per-call corrected inclusive times where they are known: the root
    calls. Returns (per node row, per function index of p.functions), each
    Groups of the clean calls' corrected durations by row (or of per_call,
    one value per root call, grouped the same way)."""
    if per_call is None:
        return p.views.get("exact_values", lambda: _exact_values(p, None))
    return _exact_values(p, per_call)


def _exact_values(p: Profile, per_call: np.ndarray | None) -> tuple:
    c = p.corrected
    if c is None or len(p.samples) == 0:
        return NO_GROUPS, NO_GROUPS
    rc = p.samples
    flags = rc.stored("flags")
    ok = ((flags if flags is not None else p.scol("flags")) & SAMPLE_GAP) == 0
    every = bool(ok.all())
    node = rc.stored("node")
    node = p.scol("node").astype(np.int32) if node is None else node  # node ids fit (the core checks)
    dur = c.sample_dur if per_call is None else per_call
    if not every:
        node, dur = node[ok], dur[ok]
    del ok
    if not len(node):
        return NO_GROUPS, NO_GROUPS
    # grouped by node, then by function: no per-group numpy call (a trace
    # may have 100k distinct root functions); temporaries let go as soon as
    # used (a row per root call: a trace of many short root calls has
    # millions)
    by_node = _grouped_by_node(node, dur, p.nrows)
    del dur
    ft = p.functions
    ids = np.asarray(ft.func_ids, dtype=np.int64)
    pos = np.argsort(ids, kind="stable")
    shared = _by_func_of_nodes(p, by_node, ids, pos)
    if shared is not None:
        return by_node, shared
    dur = by_node.vals
    node = np.repeat(by_node.keys.astype(np.int32), by_node.sizes())
    func = p.col("func")[node].astype(np.int64)
    del node
    j = np.minimum(np.searchsorted(ids[pos], func), max(len(ids) - 1, 0))
    known = (ids[pos][j] == func) if len(ids) else np.zeros(len(func), bool)
    del func
    fi = pos[j][known]
    del j
    order = np.argsort(fi, kind="stable")
    by_func = _groups(fi[order], dur[known][order])
    return by_node, by_func


# Root calls placed by node a chunk at a time (_grouped_by_node): the
# chunk's sort index, not the whole column's (8 bytes a root call).
GROUP_CHUNK_ROWS = 1 << 13


def _grouped_by_node(node: np.ndarray, vals: np.ndarray, nrows: int) -> Groups:
    """Groups of vals by node, each node's values in row order (what a
    stable sort by node gives), made by counting: each node's place from
    the counts, the rows put there a chunk at a time in row order. The
    values' copy is the only whole column made."""
    counts = np.bincount(node, minlength=nrows)
    keys = np.flatnonzero(counts)
    at = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum(counts[keys], out=at[1:])
    nxt = np.zeros(len(counts), dtype=np.int64)  # where each node's next value goes
    nxt[keys] = at[:-1]
    del counts
    out = np.empty(len(vals), dtype=vals.dtype)
    for lo in range(0, len(vals), GROUP_CHUNK_ROWS):
        hi = min(lo + GROUP_CHUNK_ROWS, len(vals))
        nc = node[lo:hi]
        order = np.argsort(nc, kind="stable")
        ns = nc[order]
        idx = np.arange(hi - lo)
        first = np.ones(hi - lo, dtype=bool)
        first[1:] = ns[1:] != ns[:-1]
        run_start = np.maximum.accumulate(np.where(first, idx, 0))
        out[nxt[ns] + idx - run_start] = vals[lo:hi][order]
        heads = ns[first]
        nxt[heads] += np.diff(np.r_[np.flatnonzero(first), hi - lo])
    return Groups(keys.astype(np.int64), at, out)


def _by_func_of_nodes(p: Profile, by_node: Groups, ids: np.ndarray, pos: np.ndarray) -> Groups | None:
    """exact_values' groups by function when no two root paths are of one
    function (then a function's values are its path's, in that order):
    the by-node values shared, not sorted again (8 bytes a root call and the
    sort's), or None when a function has more than one root path."""
    func = p.col("func")[by_node.keys].astype(np.int64)
    j = np.minimum(np.searchsorted(ids[pos], func), max(len(ids) - 1, 0))
    known = (ids[pos][j] == func) if len(ids) else np.zeros(len(func), bool)
    fi = pos[j]
    if len(distinct(fi[known])) != int(known.sum()):
        return None
    g = np.flatnonzero(known)
    g = g[np.argsort(fi[g], kind="stable")]
    if not len(g):
        return NO_GROUPS
    starts = by_node.starts()[g]
    return Groups(fi[g].astype(np.int64), np.r_[starts, len(by_node.vals)].astype(np.int64), by_node.vals,
                  by_node.ends[g])


def _groups(keys: np.ndarray, vals: np.ndarray) -> Groups:
    """Groups of vals by keys, keys sorted (equal keys adjacent)."""
    if not len(keys):
        return NO_GROUPS
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return Groups(keys[starts].astype(np.int64), np.r_[starts, len(keys)].astype(np.int64), vals)


def corrected_stats(p: Profile) -> dict:
    """{("functions"|"nodes", "incl"|"excl"): scaled_stats(...)} for a
    corrected Profile (rows of p.functions, rows of the node table), None
    without corrections (corrected figures then equal the raw ones).

    Computed once per Profile and kept with it, like its other cached views
    (every output prints these figures); kept here rather than as a Profile
    property so that the model does not import the correction stage."""
    return p.views.get("corrected_stats", lambda: _compute_corrected_stats(p))


def node_stats(p: Profile, kind: str, rows: np.ndarray | None = None, by_node: Groups | None = None,
               pct: np.ndarray | None = None, raw: tuple | None = None, raw_mean=None, corr_calls=None):
    """scaled_stats of the node table's rows `rows` (all when None), in
    that order: corrected_stats(p)["nodes", kind] of those rows, the same
    figures row by row (every one depends on its own row only), with the
    exact rows' stats keyed by position in `rows`. The JSON writer takes
    them a chunk of the tree at a time: the whole table's are 14 whole-tree
    columns. by_node: exact_values(p)[0], when known; pct: the
    rows' percentiles (Profile.node_percentiles_at), when known; raw: the
    rows' (kind, calls, kind_min, kind_max) columns as int64, when the
    caller has them (not gathered twice); raw_mean: their raw means
    (Profile.node_means), corr_calls: their corrected calls, likewise."""
    c = p.corrected
    if by_node is None:
        by_node = exact_values(p)[0] if kind == "incl" else NO_GROUPS
    if pct is None:
        pct = p.node_percentiles_at(rows, (kind,))[0]
    if raw is None:
        raw = (p.col(kind, rows), p.col("calls", rows), p.col(kind + "_min", rows), p.col(kind + "_max", rows))
    sums, calls, mins, maxs = raw
    corr = np.asarray(getattr(c, kind), dtype=np.float64)
    if rows is None:
        corr_calls = c.calls
    else:
        corr, corr_calls = corr[rows], (c.calls[rows] if corr_calls is None else corr_calls)
    exact = by_node if kind == "incl" else NO_GROUPS
    if rows is not None and len(exact):  # keyed by position in rows
        exact = exact.at_rows(np.asarray(rows, dtype=np.int64))
    return scaled_stats(sums, calls, mins, maxs, pct, corr, corr_calls, exact, raw_mean=raw_mean)


def _compute_corrected_stats(p: Profile):
    if p.corrected is None:
        return None
    return _CorrectedStats(p)


class _CorrectedStats:
    """corrected_stats' mapping, each level's tables computed on its first
    look-up: the node table's (whole-tree columns and percentiles) only for
    the outputs that print call paths (the text report prints functions
    only)."""

    def __init__(self, p: Profile):
        self._p = p
        self._exact: tuple | None = None
        self._levels: dict = {}

    def __getitem__(self, key):
        # each (level, kind) on its first look-up: the text report asks for
        # the functions' inclusive figures only (its Profile may have no
        # exclusive histograms: parse.read(excl_hist=False))
        if key not in self._levels:
            self._levels[key] = self._table(*key)
        return self._levels[key]

    def _table(self, level: str, kind: str):
        p = self._p
        if kind not in ("incl", "excl"):
            raise KeyError(kind)
        by_node, by_func = self._exact = self._exact or exact_values(p)
        if level == "nodes":
            return node_stats(p, kind, by_node=by_node)
        if level == "functions":
            ft = p.functions
            if getattr(ft, kind + "_pct") is None:  # read with excl_hist=False: the caller's bug
                raise ValueError("this Profile was read without exclusive-time histograms (excl_hist=False)")
            return scaled_stats(
                getattr(ft, kind), ft.calls, getattr(ft, kind + "_min"), getattr(ft, kind + "_max"),
                getattr(ft, kind + "_pct"), getattr(ft, kind + "_corr"), ft.calls_corr,
                by_func if kind == "incl" else NO_GROUPS, rounded_mean=True)
        raise KeyError(level)
