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


def _ptext(text: str):
    """A p-value printed by the model (stats.p_text) as a JSON number."""
    return None if text == "-" else float(text)


def _side(f, i: int) -> dict:
    runs = [_num(v) for v in f.run_medians[:, i].tolist()]
    return {
        "calls": int(f.calls[i]), "calls_per_root_call": _num(f.per_root[i], 4),
        "mean_ns": _num(f.mean[i]), "median_ns": _num(f.median[i]), "median_exact": bool(f.exact[i]),
        "sd_ns": _num(f.sd[i]), "n_effective": int(f.neff[i]),
        "ns_per_root_call": _num(f.per_root_time[i]), "run_median_ns": runs,
    }


def rows(t, start: int = 0, stop: int | None = None) -> list:
    """The table's rows start..stop (all by default)."""
    out = []
    for i in range(start, len(t.keys) if stop is None else min(stop, len(t.keys))):
        key = t.keys[i]
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
            "change_vs_drift": _num(t.vs_drift[i], 4),
            "ci95_vs_drift": [_num(t.vs_lo[i], 4), _num(t.vs_hi[i], 4)],
            "mean_change": _num(t.mean_change[i], 4),
            "mean_median_disagree": bool(t.disagree[i]),
            **({"raw_change": _num(t.raw_change[i], 4), "raw_vs_corrected": t.raw_why[i] or None}
               if t.raw_change is not None else {}),
            # the p-values as the text and the HTML print them (the model's p_text)
            "p": _ptext(t.p_text[i]), "p_adjusted": _ptext(t.q_text[i]),
            "interval_from": t.basis[i] or None, "df": _num(t.df[i], 2),
            "delta_ns_per_root_call": _num(t.delta_per_root[i]),
            "before": _side(t.before, i), "after": _side(t.after, i),
        })
        out.append(row)
    return out


def side(info) -> dict:
    return {"runs": list(info.runs), "root_calls": info.root_calls, "lost_events": info.lost_events,
            "lost_gaps_unknown": info.lost_gaps_unknown, "gap_calls": info.gap_calls}


TABLES = ("roots", "operations", "functions", "paths")
CHUNK_ROWS = 2048  # rows made and written at a time by write()


def document(d) -> dict:
    return {**document_head(d), **{key: rows(d.table(key)) for key in TABLES}}


def document_head(d) -> dict:
    """The document less its tables (which come last)."""
    return {
        "schema": SCHEMA, "tool": f"ftflame {__version__}",
        "figures": "corrected" if d.corrected else "raw",
        "method": d.method, "alpha": d.alpha, "min_change": d.min_change,
        "verdict_on": "the median time per call, each run's, the runs as the replicates"
        if not d.runs_identical else "the median time per call, the calls taken as independent "
        "(--runs-identical)",
        "runs_identical": d.runs_identical,
        "focus": list(d.focus),
        "drift": None if d.drift is None else {"change": _num(d.drift.change, 4), "functions": d.drift.functions,
                                               "along": d.drift.along, "text": d.drift.sentence(),
                                               "run_effects": {"before": [_num(x, 4) for x in d.drift.run_effects[0]],
                                                               "after": [_num(x, 4) for x in d.drift.run_effects[1]]}},
        "prior": {"df": _num(d.prior[0], 2), "run_variance": _num(d.prior[1], 6)},
        "before": side(d.before), "after": side(d.after), "warnings": list(d.warnings),
    }


def render(d, opts=None) -> str:
    return json.dumps(document(d), indent=1, allow_nan=False) + "\n"


def _at_level(text: str, level: int) -> str:
    """json.dumps(..., indent=1) text as it reads nested `level` deep (JSON
    strings hold no raw newline: every newline is the layout's)."""
    return text.replace("\n", "\n" + " " * level)


def write(d, opts, f) -> None:
    """render()'s bytes, written a few thousand rows at a time: a diff of
    two long traces has 100,000s of call paths, whose rows and text made at
    once were most of its peak memory."""
    head = document_head(d)
    f.write(b"{")
    first = True
    for key in (*head, *TABLES):
        f.write((("" if first else ",") + "\n " + json.dumps(key) + ": ").encode())
        first = False
        if key in head:
            f.write(_at_level(json.dumps(head[key], indent=1, allow_nan=False), 1).encode("utf-8"))
            continue
        t = d.table(key)
        if not len(t.keys):
            f.write(b"[]")
            continue
        f.write(b"[")
        for start in range(0, len(t.keys), CHUNK_ROWS):
            # the chunk as a list, less its brackets: its rows one level in
            text = json.dumps(rows(t, start, start + CHUNK_ROWS), indent=1, allow_nan=False)[1:-2]
            f.write((("," if start else "") + _at_level(text, 1)).encode("utf-8"))
        f.write(b"\n ]")
    f.write(b"\n}\n")
