"""JSON output, schema "ftflame/1" (the contract in DESIGN.md).

Raw figures are exact sums of the tracer's own durations. Corrected figures
(`*_corr_ns`) equal raw ones until a calibration is applied; `calibration`
says which.
"""
from __future__ import annotations

import json

import numpy as np

from ftflame import __version__
from ftflame.profile import SAMPLE_GAP, SAMPLE_IRQ, SAMPLE_PARTIAL, Profile

from .common import anomaly_lines, corrected_objects, max_depth_hint, node_flags, stats_objects

SCHEMA = "ftflame/1"


def document(p: Profile) -> dict:
    applied = p.calibration.applied
    ft = p.functions
    f_incl = stats_objects(ft.incl, ft.calls, ft.incl_min, ft.incl_max, ft.incl_pct)
    f_excl = stats_objects(ft.excl, ft.calls, ft.excl_min, ft.excl_max, ft.excl_pct)
    f_incl_c = corrected_objects(f_incl, ft.incl_corr, ft.calls_corr, applied)
    f_excl_c = corrected_objects(f_excl, ft.excl_corr, ft.calls_corr, applied)
    functions = []
    for i, name in enumerate(ft.names):
        functions.append({
            "name": name, "calls": int(ft.calls[i]),
            "incl_ns": f_incl[i], "excl_ns": f_excl[i],
            "incl_corr_ns": f_incl_c[i], "excl_corr_ns": f_excl_c[i],
            "irq_ns": int(ft.irq[i]), "offcpu_ns": int(ft.offcpu[i]),
            "gap_calls": int(ft.gap_calls[i]),
        })
    return {
        "schema": SCHEMA,
        "tool": {"name": "ftflame", "version": __version__},
        "trace": trace_object(p),
        "calibration": calibration_object(p),
        "functions": functions,
        "tree": TREE_PLACEHOLDER,
        "root_calls": root_call_objects(p),
        "balance": list(p.balance),
    }


def trace_object(p: Profile) -> dict:
    t, c = p.trace, p.counters
    return {
        "source": t.source, "format": t.format, "kernel": t.kernel, "clock": t.clock,
        "cpus": t.cpus, "tracer_version": t.tracer_version, "file_version": t.file_version,
        "compression": t.compression, "per_task_stacks": t.per_task, "irq_source": t.irq_source,
        "has_sched_switch": t.has_sched_switch,
        "events": c.get("events", 0), "events_per_cpu": {str(k): v for k, v in t.events_per_cpu.items()},
        "entries": c.get("entries", 0), "exits": c.get("exits", 0),
        "lost_events": c.get("lost_events", 0),
        "lost_events_per_cpu": {str(k): v for k, v in sorted(p.lost_per_cpu.items())},
        "lost_gaps_unknown_size_per_cpu": {str(k): v for k, v in sorted(p.lost_gaps_unknown_per_cpu.items())},
        "incomplete_calls": {"open_at_end": c.get("open_at_end", 0),
                             "unterminated": c.get("unterminated", 0),
                             "orphan_exits": c.get("orphan_exits", 0),
                             "gap_calls": c.get("gap_calls", 0)},
        "counters": dict(c),
        "notes": anomaly_lines(p) + ([h] if (h := max_depth_hint(p)) else []),
    }


def calibration_object(p: Profile) -> dict:
    cal = p.calibration
    return {"source": cal.source, "applied": cal.applied, "o_in_ns": cal.o_in_ns,
            "o_out_ns": cal.o_out_ns, "method": cal.method, "details": dict(cal.details)}


_STATS = '{"sum":%d,"min":%d,"max":%d,"mean":%r,"p50":%d,"p90":%d,"p99":%d}'


def _stats_json(sums, calls, mins, maxs, pcts) -> list:
    """The stats objects of stats_objects(), rendered straight to JSON text:
    100k call paths must not cost 500k dicts."""
    out = []
    for s, c, lo, hi, (p50, p90, p99) in zip(sums.tolist(), calls.tolist(), mins.tolist(),
                                             maxs.tolist(), pcts.tolist()):
        out.append(_STATS % (s, lo if c else 0, hi if c else 0, round(s / c, 1) if c else 0.0,
                             p50, p90, p99))
    return out


def tree_json(p: Profile) -> str:
    """The `tree` array as JSON text, children sorted by inclusive time."""
    if p.nrows == 0:
        return "[]"
    calls = p.col("calls")
    incl_pct, excl_pct = p.node_percentiles
    incl = _stats_json(p.col("incl"), calls, p.col("incl_min"), p.col("incl_max"), incl_pct)
    excl = _stats_json(p.col("excl"), calls, p.col("excl_min"), p.col("excl_max"), excl_pct)
    if p.calibration.applied:
        cr = p.corrected_or_raw
        raw_i = stats_objects(p.col("incl"), calls, p.col("incl_min"), p.col("incl_max"), incl_pct)
        raw_x = stats_objects(p.col("excl"), calls, p.col("excl_min"), p.col("excl_max"), excl_pct)
        incl_c = [json.dumps(o, separators=(",", ":")) for o in corrected_objects(raw_i, cr.incl, cr.calls, True)]
        excl_c = [json.dumps(o, separators=(",", ":")) for o in corrected_objects(raw_x, cr.excl, cr.calls, True)]
    else:
        incl_c, excl_c = incl, excl
    names = [json.dumps(n) for n in p.funcs]
    func = p.col("func").tolist()
    flags = [json.dumps(node_flags(f)) for f in range(8)]
    flag = p.col("flags").tolist()
    irq, off, desc, gap = (p.col(c).tolist() for c in ("irq", "offcpu", "desc", "gap_calls"))
    ncalls = calls.tolist()
    # siblings by inclusive time (desc), then name: one global sort
    name_rank = np.argsort(np.argsort(np.array(p.funcs, dtype=object)))
    order = np.lexsort((name_rank[p.col("func")], -p.col("incl"), p.col("parent")))
    kids = [[] for _ in range(p.nrows + 1)]
    for r, par in zip(order.tolist(), p.col("parent")[order].tolist()):
        kids[par].append(r)
    # pre-order walk writing pieces once: nesting strings inside their
    # parents' strings would copy the text once per level of depth
    parts = ["["]
    stack = [(r, i > 0) for i, r in enumerate(kids[-1])][::-1]
    while stack:
        r, comma = stack.pop()
        if r < 0:
            parts.append("]}")
            continue
        parts.append(('%s{"name":%s,"calls":%d,"incl_ns":%s,"excl_ns":%s,"incl_corr_ns":%s,'
                      '"excl_corr_ns":%s,"irq_ns":%d,"offcpu_ns":%d,"descendants":%d,'
                      '"gap_calls":%d,"flags":%s,"children":[') % (
            "," if comma else "", names[func[r]], ncalls[r], incl[r], excl[r], incl_c[r],
            excl_c[r], irq[r], off[r], desc[r], gap[r], flags[flag[r] & 7]))
        stack.append((-1, False))
        stack.extend([(k, i > 0) for i, k in enumerate(kids[r])][::-1])
    parts.append("]")
    return "".join(parts)


def root_call_objects(p: Profile) -> list:
    s = p.samples
    if len(s) == 0:
        return []
    cr = p.corrected_or_raw
    names = [p.funcs[int(p.nodes[n, 1])] for n in s[:, 0].tolist()]
    out = []
    for i, row in enumerate(s.tolist()):
        node, pid, cpu, flags, calltime, dur, desc, irq, off = row[:9]
        out.append({"name": names[i], "pid": pid, "cpu": cpu, "start_ns": calltime, "dur_ns": dur,
                    "dur_corr_ns": round(float(cr.sample_dur[i]), 1), "descendants": desc,
                    "irq_ns": irq, "offcpu_ns": off, "gap": bool(flags & SAMPLE_GAP),
                    "partial": bool(flags & SAMPLE_PARTIAL), "irq": bool(flags & SAMPLE_IRQ)})
    return out


TREE_PLACEHOLDER = "@@FTFLAME_TREE@@"


def render(p: Profile, opts=None) -> str:
    text = json.dumps(document(p), separators=(",", ":"))
    # the tree is rendered as text on its own (see tree_json)
    return text.replace(json.dumps(TREE_PLACEHOLDER), tree_json(p), 1) + "\n"
