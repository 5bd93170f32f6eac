"""What makes two sides hard to compare, said as one warning line each;
sides with nothing in common refused."""
from __future__ import annotations

import numpy as np

from ftflame.model.depthcut import depth_cut
from ftflame.model.errors import InputError
from ftflame.model.profile import depth_limit_words

from . import stats
from .model import SideInfo, root_call_count


def _distinct(values) -> list:
    out = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def _say(values) -> str:
    return " + ".join(str(v) if v != "" else "(unknown)" for v in values)


def recording(run) -> dict:
    """How a run was recorded, as far as its trace tells."""
    p = run.profile
    t = p.trace
    desc_calls = int(p.col("desc").sum()) if p.nrows else 0
    return {
        "kernel": t.kernel, "clock": t.clock,
        "graph functions": tuple(sorted({p.name(r) for r in p.roots if not p.pseudo_roots[r]})),
        "tracer options": (("format", t.format), ("graph", "full" if desc_calls else "root-only"),
                           ("sched_switch", int(p.counters.get("switches", 0)) > 0),
                           ("per task", t.per_task), ("retval", t.has_retval)),
    }


def warnings(before, after, info_b: SideInfo, info_a: SideInfo, tables: dict | None = None) -> list:
    """One line per difference between the sides' recordings, then the
    lost events of each side. Calibrations that differ are said only when
    the difference matters (calibration_moves: tables of a corrected diff)."""
    out = []
    rec_b = [recording(r) for r in before]
    rec_a = [recording(r) for r in after]
    for what in ("kernel", "clock", "graph functions", "tracer options"):
        vb = _distinct(r[what] for r in rec_b)
        va = _distinct(r[what] for r in rec_a)
        show = (lambda v: ", ".join(f"{k} {x}" for k, x in v)) if what == "tracer options" else \
            (lambda v: " ".join(v)) if what == "graph functions" else str
        if vb != va:
            out.append(f"different {what}: before {_say(show(v) for v in vb)}; after {_say(show(v) for v in va)}")
        for side, vals in (("before", vb), ("after", va)):
            if len(vals) > 1:
                out.append(f"runs of {side} differ in {what}: {_say(show(v) for v in vals)}")
    out += depth_warnings(before, after)
    cb, ca = info_b.calibrations, info_a.calibrations
    moved = calibration_moves(info_b, info_a, tables) if cb != ca and tables is not None else None
    if moved:
        def cal(c):
            return f"{c[0]} (O_in {c[1]} ns, O_out {c[2]} ns)"
        count, name, shift = moved
        out.append(f"different calibrations: before {_say(cal(c) for c in cb)}; after {_say(cal(c) for c in ca)}"
                   f": BEFORE corrected with AFTER's hook cost would move {count:,} item"
                   f"{'s by more than their' if count != 1 else ' by more than its'} interval "
                   f"({name} {shift * 100:+.1f}%)")
    for info in (info_b, info_a):
        if info.lost_events or info.lost_gaps_unknown:
            out.append(f"{info.label}: {info.lost_events:,} events lost, {info.lost_gaps_unknown:,} gaps of "
                       f"unknown size ({info.gap_calls:,} calls left out of the corrected figures)")
    for side, runs in (("before", before), ("after", after)):
        for run in runs:
            if root_call_count(run.profile) == 0:
                out.append(f"{run.label} ({side}): no complete root call: nothing to compare per root call")
    return out


def _hook_cost(calibrations) -> float:
    """O_in + O_out of a side (the mean of its runs' distinct calibrations)."""
    return float(np.mean([c[1] + c[2] for c in calibrations])) if calibrations else 0.0


def calibration_moves(info_b: SideInfo, info_a: SideInfo, tables: dict):
    """Does the sides' calibration difference matter? BEFORE's hook cost
    per call of each item scaled to AFTER's calibration moves its
    corrected time per call by hook_per_call * (cost_a / cost_b - 1); it
    matters for an item with an interval when that moves the estimate by
    more than the interval's half-width (in log), among the items that
    could be judged whose hook cost is under half their measured time (the
    report marks the others unreliable: any calibration moves them). (items moved, the item
    moved most, its move as a fraction) or None when none moves so far."""
    cost_b, cost_a = _hook_cost(info_b.calibrations), _hook_cost(info_a.calibrations)
    if cost_b <= 0 or cost_b == cost_a:
        return None
    count, worst = 0, (0.0, "", 0.0)
    for level in ("roots", "operations", "functions", "paths"):
        t = tables[level]
        with np.errstate(all="ignore"):
            shift = t.before.hook_per_call * (cost_a / cost_b - 1.0)
            # corrected = raw - hook, and the verdict is on the typical call
            rel = np.log1p(np.clip(-shift / t.before.median, -0.999, None))
            half = (np.log1p(t.ci_hi) - np.log1p(t.ci_lo)) / 2.0
        # the items that could be judged (medians of at least 0.1 us: below,
        # the corrected time is within the calibration's error anyway)
        ok = np.isfinite(rel) & np.isfinite(half) & (t.before.calls > 0) & (t.after.calls > 0) & \
            (np.minimum(t.before.median, t.after.median) >= stats.MIN_TIME_NS) & \
            (np.minimum(t.before.neff, t.after.neff) >= stats.MIN_CALLS_JUDGED) & \
            (t.before.hook_per_call < t.before.mean)  # reliable: hook cost under half the measured time
        over = ok & (np.abs(rel) > half)
        count += int(over.sum())
        for i in np.flatnonzero(over).tolist():
            if abs(rel[i]) - half[i] > worst[0]:
                worst = (abs(rel[i]) - half[i], t.keys[i].split(";")[-1], float(np.expm1(rel[i])))
    return (count, worst[1], worst[2]) if count else None


def depth_warnings(before, after) -> list:
    """A run that seems cut by max_graph_depth (ftflame/model/depthcut.py:
    said only when the trace's shape shows it), and sides cut differently."""
    out = []
    limits = {}
    for side, runs in (("before", before), ("after", after)):
        for run in runs:
            cut = depth_cut(run.profile)
            limits.setdefault(side, []).append(cut.limit if cut else None)
            if cut:
                out.append(f"{run.label} ({side}) seems cut at max_graph_depth {cut.limit}: {cut.evidence()}; "
                           "deeper calls were not recorded, their time is in their callers' self time")
            if depth_limit_words(run.profile.counters):
                out.append(f"{run.label} ({side}): {depth_limit_words(run.profile.counters)}")
    vb, va = _distinct(limits.get("before", [])), _distinct(limits.get("after", []))
    if vb != va:
        out.append(f"different graph depth: before {_say_depths(vb)}; after {_say_depths(va)} (paths below "
                   "the cut are missing on one side: compare the cut side's paths above it only)")
    return out


def _say_depths(limits) -> str:
    return _say(f"seems cut at max_graph_depth {v}" if v else "no sign of a depth limit" for v in limits)


def refuse_disjoint(before, after, tables) -> None:
    """Exit 2 (InputError) when the sides share no function."""
    f = tables["functions"]
    common = ((f.before.calls > 0) & (f.after.calls > 0)).any()
    if not common:
        raise InputError(f"{before[0].label} vs {after[0].label}", "the two sides have no function in common",
                         "compare traces of the same workload")
