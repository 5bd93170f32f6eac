"""What makes two sides hard to compare, said as one warning line each;
sides with nothing in common refused."""
from __future__ import annotations

from ftflame.model.depthcut import depth_cut
from ftflame.model.errors import InputError
from ftflame.model.profile import depth_limit_words

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


def warnings(before, after, info_b: SideInfo, info_a: SideInfo) -> list:
    """One line per difference between the sides' recordings, then the
    lost events of each side."""
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
    if cb != ca:
        def cal(c):
            return f"{c[0]} (O_in {c[1]} ns, O_out {c[2]} ns)"
        out.append(f"different calibrations: before {_say(cal(c) for c in cb)}; after {_say(cal(c) for c in ca)}"
                   " (corrected times of short calls follow the calibration)")
    for info in (info_b, info_a):
        if info.lost_events or info.lost_gaps_unknown:
            out.append(f"{info.label}: {info.lost_events:,} events lost, {info.lost_gaps_unknown:,} gaps of "
                       f"unknown size ({info.gap_calls:,} calls left out of the corrected figures)")
    for side, runs in (("before", before), ("after", after)):
        for run in runs:
            if root_call_count(run.profile) == 0:
                out.append(f"{run.label} ({side}): no complete root call: nothing to compare per root call")
    return out


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
