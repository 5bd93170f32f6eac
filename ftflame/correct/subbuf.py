"""Sub-buffer switches: charged at the trace's own count, not the
calibration's rate (docs/overhead.md "Sub-buffer switches").

The ring buffer moves to a new sub-buffer (a page) every ~4 KB of events;
the record that does not fit pays for the move, a few hundred ns (256 ns on
the 6.1 icount VM, 273 on 6.12). The calibration's O_in + O_out is a mean
over the dispatcher's empty calls, so it carries the move at the rate those
calls happened to meet it: 100 calls of 11 descendants meet 15 to 30 moves,
where the events' sizes say about 23, and the per-descendant cost comes out
up to 1.5 ns off (6.12: 1411.9 ns on one boot, 1414.9 on another, for write
calls that cost 1413.3 in both). Over the 234 descendants of a write call
that is 5% of its corrected time.

A trace.dat says which record began a sub-buffer; the C core counts, per
root call, the task-context records from its entry (included) to its exit
(not included: written after its rettime) that did (sample column
``subbufs``). The calibration measures the move's cost (``subbuf`` in
calibration.json: the median of the dispatcher's calls that met one move
minus the median of those that met none, among the calls with the usual
number of descendants) and the rate its mean carries (moves per recorded
descendant). Each root call with descendants is then charged its own moves
in place of the calibration's rate:

    corr_incl(root call) -= cost * (subbufs - rate * D)

A root-only trace (every call a root without recorded descendants, corrected
with the NULL procedure hooked alone: ``o_in_root_only``) is charged the same
way from the NULL-alone recording (``root_only`` in ``subbuf``: its own move
cost, 261 ns on 6.12 against 273 in the graph, and moves per call): a root
call whose entry record began a sub-buffer (s16's first truth call: 273 ns
above its twin of another boot) loses the move, the others keep the rate's
share.

through the hook level's per-call adjustment (ftflame/correct/hooklevel.py:
a call path inside the tree gets its tree's share per commit). No charge
without a ``subbuf`` object (older calibrations, the in-trace estimate,
values given on the command line), or on a trace whose records carry no
sub-buffer starts (text, or a reader that does not say).
"""
from __future__ import annotations

import numpy as np

from ftflame.model.profile import Calibration, Profile

MIN_CALLS = 5  # calls that met one move and calls that met none, each, to measure its cost
MIN_CALLS_ROOT_ONLY = 3  # the same, of the NULL procedure alone (3-4 of 100 calls meet one)


def _cost(v: np.ndarray, sb: np.ndarray, usual: np.ndarray, need: int, what: str,
          checks: list) -> float | None:
    """The median of the usual calls with one move minus that of those with
    none, or None (said in checks)."""
    none, one = usual & (sb == 0), usual & (sb == 1)
    if one.sum() < need or none.sum() < need:
        if sb.sum():
            checks.append(f"sub-buffer moves: {int(one.sum())} of {what} met one and {int(none.sum())} "
                          f"none (at least {need} of each needed): their cost not measured, the mean's "
                          "rate kept")
        return None
    cost = float(np.median(v[one]) - np.median(v[none]))
    if not cost > 0:
        checks.append(f"sub-buffer moves: {what} that met one are not slower ({cost:+.1f} ns): "
                      "their cost not measured, the mean's rate kept")
        return None
    return cost


def root_only_object(vn: np.ndarray, sb: np.ndarray, source: str, graph_cost: float) -> dict | None:
    """``subbuf.root_only`` from the NULL procedure's calls hooked alone
    (durations, moves inside: their entry's): their own move cost where at
    least MIN_CALLS_ROOT_ONLY calls met one (and as many none), else the
    graph's (the same ring-buffer code: 261 against 273 ns on 6.12)."""
    if not len(vn):
        return None
    own = _cost(vn, sb, np.ones(len(vn), dtype=bool), MIN_CALLS_ROOT_ONLY, "", [])
    return {"cost_ns": round(own if own is not None else graph_cost, 1), "per_call": round(float(sb.mean()), 6),
            "calls_with_one": int((sb == 1).sum()), "calls_with_none": int((sb == 0).sum()),
            "source": f"{source}: " + ("the same, of the NULL procedure hooked alone" if own is not None else
                                       f"the graph's cost (fewer than {MIN_CALLS_ROOT_ONLY} NULL calls alone "
                                       "met a move)") +
                      "; per_call: the moves the NULL procedure's calls alone met, the rate o_in_root_only "
                      "carries"}


def calibration_object(vf: np.ndarray, df: np.ndarray, sb: np.ndarray, source: str,
                       checks: list, alone: tuple | None = None) -> dict | None:
    """calibration.json's ``subbuf`` from the dispatcher's full-graph calls
    (values dur - irq - off, recorded descendants, sub-buffer moves inside)
    and the NULL procedure's calls alone (alone: values, moves, source), or
    None when the cost cannot be measured (said in checks)."""
    if not len(vf) or not df.sum():
        return None
    usual = df == np.bincount(df.astype(np.int64)).argmax()
    cost = _cost(vf, sb, usual, MIN_CALLS, "the dispatcher's calls", checks)
    if cost is None:
        return None
    none, one = usual & (sb == 0), usual & (sb == 1)
    root_only = root_only_object(alone[0], alone[1], alone[2], cost) if alone is not None else None
    return {"cost_ns": round(cost, 1), "per_descendant": round(float(sb.sum() / df.sum()), 6),
            "calls_with_one": int(one.sum()), "calls_with_none": int(none.sum()),
            **({"root_only": root_only} if root_only else {}),
            "source": f"{source}: median of the dispatcher's calls with one sub-buffer move minus median "
                      "of those with none (the usual descendant count); per_descendant: the moves inside "
                      "the calls over their recorded descendants, the rate O_in + O_out carries"}


def reference(cal: Calibration) -> tuple[float, float, bool] | None:
    """(cost ns, moves per descendant or, root_only, per call, root_only)
    of the calibration as applied to this trace, or None."""
    d = cal.details if isinstance(cal.details, dict) else {}
    obj = d.get("subbuf")
    if not isinstance(obj, dict) or "command_line" in d:
        return None
    root_only = "applied_o_in" in d  # calibration.for_profile: a root-only trace
    if root_only:
        obj = obj.get("root_only")
        if not isinstance(obj, dict):
            return None
    try:
        cost, rate = float(obj["cost_ns"]), float(obj["per_call" if root_only else "per_descendant"])
    except (KeyError, TypeError, ValueError):
        return None
    ok = np.isfinite(cost) and np.isfinite(rate) and cost > 0 and rate >= 0
    return (cost, rate, root_only) if ok else None


def sample_ns(p: Profile, cal: Calibration) -> np.ndarray | None:
    """Per root call, the sub-buffer cost to take out beyond what the
    calibration's O_in + O_out takes (ns; negative where the call met fewer
    moves than the calibration's rate), or None when none applies."""
    ref = reference(cal)
    if ref is None or not len(p.samples) or not p.counters.get("subbuf_starts", 0):
        return None
    cost, rate, root_only = ref
    desc = p.scol("desc").astype(np.float64)
    moves = p.scol("subbufs").astype(np.float64)
    if root_only:
        return np.where(desc == 0, cost * (moves - rate), 0.0)
    return np.where(desc > 0, cost * (moves - rate * desc), 0.0)
