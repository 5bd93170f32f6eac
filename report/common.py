"""Helpers shared by renderers: statistics objects and number formatting."""
from __future__ import annotations

import numpy as np

from ftflame.profile import NODE_IRQ, NODE_IRQ_ROOT, NODE_PARTIAL, Profile


def stats_objects(sums, calls, mins, maxs, pcts):
    """Vectorised {sum,min,max,mean,p50,p90,p99} objects, one per row."""
    sums_l = sums.tolist()
    calls_l = calls.tolist()
    mins_l = mins.tolist()
    maxs_l = maxs.tolist()
    pcts_l = pcts.tolist()
    out = []
    for s, c, lo, hi, p in zip(sums_l, calls_l, mins_l, maxs_l, pcts_l):
        out.append({"sum": s, "min": lo if c else 0, "max": hi if c else 0,
                    "mean": round(s / c, 1) if c else 0.0,
                    "p50": p[0], "p90": p[1], "p99": p[2]})
    return out


def corrected_objects(raw_objs, corr_sums, corr_calls, applied: bool):
    """Corrected statistics. Without a calibration they equal the raw ones.
    With one, sums and means are exact corrections of linear sums; min, max
    and percentiles are shifted by the mean per-call correction (marked)."""
    if not applied:
        return [dict(o) for o in raw_objs]
    out = []
    for o, s, c in zip(raw_objs, corr_sums.tolist(), corr_calls.tolist()):
        mean = s / c if c else 0.0
        shift = (o["mean"] - mean) if c else 0.0
        out.append({"sum": round(s, 1), "min": max(round(o["min"] - shift, 1), 0.0),
                    "max": max(round(o["max"] - shift, 1), 0.0), "mean": round(mean, 1),
                    "p50": max(round(o["p50"] - shift, 1), 0.0),
                    "p90": max(round(o["p90"] - shift, 1), 0.0),
                    "p99": max(round(o["p99"] - shift, 1), 0.0), "calls": c})
    return out


def node_flags(flags: int) -> list:
    out = []
    if flags & NODE_IRQ:
        out.append("irq")
    if flags & NODE_IRQ_ROOT:
        out.append("irq_root")
    if flags & NODE_PARTIAL:
        out.append("partial")
    return out


def us(ns: float, width: int = 0, decimals: int = 3) -> str:
    """Nanoseconds as microseconds, the unit function_graph prints. With a
    width, decimals are dropped until the number fits (never truncated)."""
    for d in range(decimals, -1, -1):
        s = f"{ns / 1000.0:,.{d}f}"
        if not width or len(s) <= width:
            break
    return s.rjust(width) if width else s


def count(n: int, width: int = 0) -> str:
    s = f"{int(n):,}"
    return s.rjust(width) if width else s


def anomaly_lines(p: Profile) -> list:
    """Everything the tool could not account for, as short sentences."""
    c = p.counters
    out = []
    if p.lost_per_cpu:
        unk = p.lost_gaps_unknown_per_cpu
        per = ", ".join(f"CPU{cpu}: {n:,}" + (f" + {unk[cpu]} gaps of unknown size" if cpu in unk else "")
                        for cpu, n in sorted(p.lost_per_cpu.items()))
        out.append(f"LOST EVENTS ({c.get('lost_events', 0):,} in {c.get('lost_records', 0):,} gaps; "
                   f"{per}): calls spanning a gap are counted but left out of corrected figures")
    if c.get("overrun_growth"):
        out.append(f"shadow-stack overrun grew {c['overrun_growth']:,} times (frames dropped by the tracer)")
    if c.get("gap_calls"):
        out.append(f"{c['gap_calls']:,} calls span a lost-event gap, overrun or lost exit "
                   "(raw sums include them; corrected figures leave them out)")
    if c.get("orphan_exits"):
        out.append(f"{c['orphan_exits']:,} exits without an entry (trace began mid-call or entries "
                   "lost): complete calls, shown under their parent or (partial)")
    if c.get("unterminated"):
        out.append(f"{c['unterminated']:,} entries whose exit never came (lost exits)")
    if c.get("open_at_end"):
        out.append(f"{c['open_at_end']:,} calls still open when the trace ended (not counted)")
    if c.get("partial_entries"):
        out.append(f"{c['partial_entries']:,} calls began with their callers unknown: under (partial)")
    if c.get("depth_mismatch"):
        out.append(f"{c['depth_mismatch']:,} depth mismatches between events and the rebuilt stack")
    if c.get("migrations"):
        out.append(f"{c['migrations']:,} calls migrated to another CPU mid-call (handled: stacks are per task)")
    if c.get("irq_outside_window"):
        out.append(f"{c['irq_outside_window']:,} interrupts hit a tracer push/pop window "
                   "(attributed by depth)")
    if c.get("other_events"):
        out.append(f"{c['other_events']:,} other events passed over")
    out.extend(p.warnings)
    return out


def max_depth_hint(p: Profile):
    """A trace cut by max_graph_depth has every leaf at one shallow depth
    (only said of traces big enough for that to be telling)."""
    d = p.counters.get("max_depth", -1)
    if 0 <= d < 8 and p.counters.get("exits", 0) >= 1000:
        return (f"deepest call at depth {d}: if max_graph_depth was {d + 1}, deeper calls were "
                "hooked but not recorded; their time is in their callers' self time")
    return None
