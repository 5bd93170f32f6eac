"""`ftflame diff` as one self-contained HTML page (no network): a
differential flame graph (the AFTER tree, frames coloured by verdict), a
sortable delta table, both sides' latency over time overlaid, and both
calibrations. The page prints the model's figures (ftflame.diff.model);
it computes none: colours follow the verdicts computed there."""
from __future__ import annotations

import numpy as np

from ftflame import __version__
from ftflame.diff.model import slowest_points

from .common import us
from .html import data_json, environment

MAX_FRAMES = 20000
MIN_FRACTION = 1e-4  # frames narrower than this share of the graph are left out (counted)
MAX_POINTS = 20000  # latency points per side, the slowest kept when thinned
VERDICT_CODE = {"no change": 0, "slower": 1, "faster": 2, "new": 3, "gone": 4, "no verdict": 5}


def _f(a, nd: int = 1) -> list:
    """Floats rounded, NaN as null."""
    return [None if not np.isfinite(x) else round(float(x), nd) for x in np.asarray(a, dtype=np.float64)]


def flame_data(d) -> dict:
    """The AFTER tree's frames (call paths with AFTER calls, parents first);
    frames narrower than MIN_FRACTION of the graph, or beyond the
    MAX_FRAMES widest, are left out with their subtrees (counted)."""
    t = d.table("paths")
    w = t.after.per_root_time
    have = np.flatnonzero(t.after.calls > 0).tolist()
    total = float(sum(w[i] for i in have if ";" not in t.keys[i]))
    if d.irqs == "exclude":  # interrupt subtrees are not in their parents' corrected time: not drawn
        have = [i for i in have if not t.after.irq_root[i]]
    wide = {i for i in sorted(have, key=lambda i: -w[i])[:MAX_FRAMES] if w[i] >= total * MIN_FRACTION}
    rows, index, parent = [], {}, []
    for i in sorted(wide, key=lambda i: t.keys[i]):  # by key: a parent before its children
        key = t.keys[i]
        up = key.rsplit(";", 1)[0] if ";" in key else None
        if up is not None and up not in index and not up.startswith("(partial)"):
            continue  # its parent was left out
        index[key] = len(rows)
        parent.append(index.get(up, -1) if up is not None else -1)
        rows.append(i)
    return {
        "name": [t.keys[i].rsplit(";", 1)[-1] for i in rows], "path": [t.keys[i] for i in rows],
        "parent": parent, "w": _f(w[rows]), "wb": _f(t.before.per_root_time[rows]),
        "verdict": [VERDICT_CODE[t.verdict[i]] for i in rows],
        "change": _f(t.change[rows], 4), "lo": _f(t.ci_lo[rows], 4), "hi": _f(t.ci_hi[rows], 4),
        "q": [t.q_text[i] for i in rows], "mb": _f(t.before.median[rows]), "ma": _f(t.after.median[rows]),
        "left_out": len(have) - len(rows), "total": round(total, 1),
        "irq_left_out": int(sum(1 for i in np.flatnonzero(t.after.calls > 0).tolist() if t.after.irq_root[i]))
        if d.irqs == "exclude" else 0,
    }


def _called(side, values):
    """values where the side called the item, NaN (shown as a dash) where not."""
    return np.where(side.calls > 0, values, np.nan)


def table_data(d) -> dict:
    """The functions, then the operations of the dispatchers (kind says
    which: the page shows the kind column only when there are operations)."""
    parts = [("function", d.table("functions")), ("operation", d.table("operations"))]

    def cat(get, nd=None):
        return [x for _, t in parts for x in (_f(get(t), nd) if nd is not None else get(t))]

    return {
        "name": cat(lambda t: list(t.keys)), "kind": [k for k, t in parts for _ in t.keys],
        "verdict": cat(lambda t: [VERDICT_CODE[v] for v in t.verdict]), "why": cat(lambda t: list(t.why)),
        "change": cat(lambda t: t.change, 4), "lo": cat(lambda t: t.ci_lo, 4), "hi": cat(lambda t: t.ci_hi, 4),
        # the adjusted p as the model prints it (stats.p_text), and its number to sort by
        "q": cat(lambda t: list(t.q_text)), "qn": cat(lambda t: t.q, 12),
        "mb": cat(lambda t: _called(t.before, t.before.median), 1),
        "ma": cat(lambda t: _called(t.after, t.after.median), 1),
        "meanb": cat(lambda t: _called(t.before, t.before.mean), 1),
        "meana": cat(lambda t: _called(t.after, t.after.mean), 1),
        "prb": cat(lambda t: t.before.per_root, 4), "pra": cat(lambda t: t.after.per_root, 4),
        "delta": cat(lambda t: t.delta_per_root, 1),
        "disagree": cat(lambda t: [bool(x) for x in t.disagree]),
        "vsd": cat(lambda t: t.vs_drift, 4), "vslo": cat(lambda t: t.vs_lo, 4), "vshi": cat(lambda t: t.vs_hi, 4),
        "drift": d.drift is not None,
    }


HEAD_ROOTS = 6
HEAD_OPS = 6
HEAD_CHANGES = 5


def _verdict_row(t, i) -> dict:
    """One item of the headline: its verdict, change and interval (and
    against the drift, when there is one), adjusted p, medians and means,
    the mean/median flag."""
    from .diff_text import interval, pct

    both = bool(t.before.calls[i] and t.after.calls[i])
    return {
        "name": t.keys[i], "verdict": t.verdict[i], "why": t.why[i],
        # estimate and interval wherever both sides have calls, verdict or not
        "change": f"{pct(t.change[i])} {interval(t.ci_lo[i], t.ci_hi[i])}" + (
            f" ({pct(t.vs_drift[i])} {interval(t.vs_lo[i], t.vs_hi[i])} against the drift)"
            if t.vs_lo is not None and np.isfinite(t.vs_lo[i]) else "") if both else "",
        "q": t.q_text[i] if both and t.q_text[i] != "-" else "",
        "median": f"{us(t.before.median[i], 0, 1)} \u2192 {us(t.after.median[i], 0, 1)}" if both else "",
        "mean": f"{us(t.before.mean[i], 0, 1)} \u2192 {us(t.after.mean[i], 0, 1)} ({pct(t.mean_change[i])})"
        if both else "",
        "disagree": bool(t.disagree[i]),
        "raw_why": t.raw_why[i] if t.raw_why else "",
        "delta": us(t.delta_per_root[i], 0, 1),
    }


def headline(d) -> dict:
    """The page's first section: the root functions' and the busiest
    operations' verdicts, the drift, the biggest changes."""
    def busiest(t):
        return np.argsort(-np.maximum(t.before.per_root_time, t.after.per_root_time), kind="stable")

    r, o, f = d.table("roots"), d.table("operations"), d.table("functions")
    changed = np.flatnonzero(np.isin(np.array(f.verdict, dtype=object), ("slower", "faster")))
    changed = changed[np.argsort(-np.abs(f.delta_per_root[changed]), kind="stable")]
    return {
        "drift": d.drift.sentence() if d.drift is not None else "",
        "roots": [_verdict_row(r, i) for i in busiest(r)[:HEAD_ROOTS]], "roots_more": max(len(r) - HEAD_ROOTS, 0),
        "ops": [_verdict_row(o, i) for i in busiest(o)[:HEAD_OPS]], "ops_more": max(len(o) - HEAD_OPS, 0),
        "changes": [_verdict_row(f, i) for i in changed[:HEAD_CHANGES]], "changed": len(changed),
    }


def latency_data(side) -> dict:
    """The side's latency points, the MAX_POINTS slowest when there are more
    (the outliers are what one looks for), as the model keeps them."""
    pts = slowest_points(side.latency, MAX_POINTS)
    return {"names": list(pts.names), "func": pts.func.tolist(), "run": pts.run.tolist(), "t": _f(pts.t, 6),
            "d": _f(pts.dur), "thinned": pts.thinned}


def page_data(d) -> dict:
    return {
        "schema": "ftflame-diff-html/1", "corrected": d.corrected,
        "verdicts": list(VERDICT_CODE), "flame": flame_data(d), "table": table_data(d),
        "latency": {"before": latency_data(d.before), "after": latency_data(d.after)},
    }


def render(d, opts=None) -> str:
    data = page_data(d)
    tpl = environment().get_template("diff.html")
    return tpl.render(d=d, head=headline(d), version=__version__, data_json=data_json(data))
