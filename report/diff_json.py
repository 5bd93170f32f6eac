"""`ftflame diff` as JSON, schema "ftflame-diff/1" (docs/diff.md). Prints
the figures of ftflame.diff.model; computes none."""
from __future__ import annotations

import json
import math

from ftflame import __version__

SCHEMA = "ftflame-diff/1"


def _num(x, nd: int = 1):
    """A finite float rounded, else null (a figure the data does not give)."""
    x = float(x)
    return round(x, nd) if math.isfinite(x) else None


def _side(f, i: int) -> dict:
    runs = [_num(v) for v in f.run_medians[:, i].tolist()]
    return {
        "calls": int(f.calls[i]), "calls_per_root_call": _num(f.per_root[i], 4),
        "mean_ns": _num(f.mean[i]), "median_ns": _num(f.median[i]), "median_exact": bool(f.exact[i]),
        "sd_ns": _num(f.sd[i]), "n_effective": int(f.neff[i]),
        "ns_per_root_call": _num(f.per_root_time[i]), "run_median_ns": runs,
    }


def rows(t) -> list:
    out = []
    for i, key in enumerate(t.keys):
        if t.level == "paths":
            row = {"path": key.split(";")}
        elif t.level == "operations":
            root, operation = key.split(": ", 1)
            row = {"function": root, "operation": operation}
        else:
            row = {"function": key}
        row.update({
            "verdict": t.verdict[i], "why": t.why[i] or None,
            "change": _num(t.change[i], 4), "ci95": [_num(t.ci_lo[i], 4), _num(t.ci_hi[i], 4)],
            "change_vs_drift": _num(t.vs_drift[i], 4), "mean_change": _num(t.mean_change[i], 4),
            "mean_median_disagree": bool(t.disagree[i]),
            **({"raw_change": _num(t.raw_change[i], 4), "raw_vs_corrected": t.raw_why[i] or None}
               if t.raw_change is not None else {}),
            "p": _num(t.p[i], 6), "p_adjusted": _num(t.q[i], 6),
            "delta_ns_per_root_call": _num(t.delta_per_root[i]),
            "before": _side(t.before, i), "after": _side(t.after, i),
        })
        out.append(row)
    return out


def side(info) -> dict:
    return {"runs": list(info.runs), "root_calls": info.root_calls, "lost_events": info.lost_events,
            "lost_gaps_unknown": info.lost_gaps_unknown, "gap_calls": info.gap_calls}


def document(d) -> dict:
    return {
        "schema": SCHEMA, "tool": f"ftflame {__version__}",
        "figures": "corrected" if d.corrected else "raw",
        "method": d.method, "alpha": d.alpha, "min_change": d.min_change,
        "verdict_on": "the typical call: the Hodges-Lehmann change of the time per call",
        "drift": None if d.drift is None else {"change": _num(d.drift.change, 4), "functions": d.drift.functions,
                                               "along": d.drift.along, "text": d.drift.sentence()},
        "before": side(d.before), "after": side(d.after), "warnings": list(d.warnings),
        "roots": rows(d.table("roots")), "operations": rows(d.table("operations")),
        "functions": rows(d.table("functions")),
        "paths": rows(d.table("paths")),
    }


def render(d, opts=None) -> str:
    return json.dumps(document(d), indent=1, allow_nan=False) + "\n"
