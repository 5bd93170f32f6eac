"""Standalone interactive flame graph as one SVG file (like flamegraph.pl's,
written for ftflame): click a frame to zoom, "Reset zoom" to go back, "Search"
to highlight matching frames with the share of time they hold; a tooltip
(<title>) on every frame. Widths are time; with a calibration applied they
are the corrected times (the title says which). The same aggregated tree as
the HTML report, with a coarser cut to keep the file small.
"""
from __future__ import annotations

from ftflame.correct.calibration import provenance
from ftflame.model.profile import NODE_IRQ, NODE_PARTIAL, Profile

from . import flametree
from .common import plural, report_notes
from .options import DEFAULT, RenderOptions

WIDTH = 1200
ROW = 16
TOP = 54  # title, controls
BOTTOM = 24
MIN_FRACTION = 5e-4  # 0.05% of the graph: 0.6 px at 1200 px
MAX_FRAMES = 2500


def fnv1a(s: str) -> int:
    """32-bit FNV-1a over UTF-16 code units, as the HTML page's JS hashes names."""
    h = 2166136261
    data = s.encode("utf-16-le")
    for i in range(0, len(data), 2):
        h ^= data[i] | (data[i + 1] << 8)
        h = (h * 16777619) & 0xFFFFFFFF
    return h


def color(name: str, kind: str) -> str:
    """Deterministic colour by name hash; the same scheme as templates/core.js."""
    h = fnv1a(name)
    r1, r2, r3 = (h & 0xFF) / 255, ((h >> 8) & 0xFF) / 255, ((h >> 16) & 0xFF) / 255
    if kind == "irq":
        return f"hsl({205 + 50 * r1:.0f},{45 + 25 * r2:.0f}%,{62 + 10 * r3:.0f}%)"
    if kind == "offcpu":
        return "url(#offcpu)"
    if kind == "small":
        return "#d6dadf"
    if kind == "partial":
        return f"hsl({20 + 30 * r1:.0f},{12 + 18 * r2:.0f}%,{60 + 14 * r3:.0f}%)"
    if kind == "root":
        return "#c3c8cf"
    return f"hsl({4 + 50 * r1:.0f},{70 + 25 * r2:.0f}%,{52 + 12 * r3:.0f}%)"


def _time(ns: float) -> str:
    a = abs(ns)
    if a < 1e3:
        return f"{ns:,.0f} ns"
    if a < 1e6:
        return f"{ns / 1e3:,.3f} us"
    if a < 1e9:
        return f"{ns / 1e6:,.3f} ms"
    return f"{ns / 1e9:,.3f} s"


def frames(p: Profile, tree: flametree.FlameTree, corrected: bool) -> list:
    """One dict per frame, with its position in ns and its tooltip text."""
    width = tree.width_corr if corrected else tree.width
    n = len(tree)
    kids = [[] for _ in range(n)]
    for i in range(1, n):
        kids[tree.parent[i]].append(i)
    x = [0.0] * n
    depth = [0] * n
    for i in range(n):  # pre-order: parents first; children already widest first
        off = x[i]
        for k in sorted(kids[i], key=lambda k: (tree.kind[k] == flametree.KIND_SMALL,
                                                 tree.kind[k] == flametree.KIND_OFFCPU, -width[k], k)):
            x[k] = off
            depth[k] = depth[i] + 1
            off += width[k]
    total = width[0] or 1.0
    applied = p.calibration.applied
    out = []
    for i in range(n):
        if width[i] <= 0:
            continue
        kind = tree.kind[i]
        name = tree.label(i, p.funcs)
        if kind == flametree.KIND_ROOT:
            ck = "root"
        elif kind == flametree.KIND_SMALL:
            ck = "small"
        elif kind == flametree.KIND_OFFCPU:
            ck = "offcpu"
        elif tree.flags[i] & NODE_IRQ:
            ck = "irq"
        elif tree.flags[i] & NODE_PARTIAL:
            ck = "partial"
        else:
            ck = "task"
        tip = [name]
        if kind == flametree.KIND_FRAME:
            tip.append(f"calls {tree.calls[i]:,}")
        tip.append(f"inclusive {_time(tree.incl[i])} raw" +
                   (f", {_time(tree.incl_corr[i])} corrected" if applied else ""))
        if kind == flametree.KIND_FRAME:
            tip.append(f"self {_time(tree.excl[i])} raw" +
                       (f", {_time(tree.excl_corr[i])} corrected" if applied else ""))
        if ck == "irq":
            tip.append("[irq] interrupt context")
        if kind == flametree.KIND_SMALL:
            tip.append(f"{tree.nmerged[i]:,} call paths under {_time(tree.threshold_ns)} merged")
        tip.append(f"{100.0 * width[i] / total:.2f}% of all {'corrected' if corrected else 'raw'} time")
        out.append({"id": i, "depth": depth[i], "x": x[i], "w": width[i], "name": name,
                    "fill": color(name if ck != "root" else "", ck), "tip": " | ".join(tip),
                    "parent": tree.parent[i]})
    return out


def render(p: Profile, opts: RenderOptions = DEFAULT) -> str:
    from .html import environment

    tree = flametree.build(p, MIN_FRACTION, MAX_FRAMES)
    corrected = p.calibration.applied
    fr = frames(p, tree, corrected)
    maxdepth = max((f["depth"] for f in fr), default=0)
    height = TOP + (maxdepth + 1) * ROW + BOTTOM
    total = fr[0]["w"] if fr else 1.0
    for f in fr:
        f["px"] = f["x"] / total * WIDTH if total else 0
        f["pw"] = f["w"] / total * WIDTH if total else 0
        f["py"] = TOP + (maxdepth - f["depth"]) * ROW
        chars = int((f["pw"] - 6) // 7)
        f["label"] = "" if chars < 3 else (f["name"] if len(f["name"]) <= chars else f["name"][: chars - 2] + "..")
    anomalies = report_notes(p)
    title = f"ftflame: {p.trace.source}"
    sub = (f"corrected times: tracer overhead subtracted: {provenance(p.calibration)}"
           if corrected else "RAW times: no calibration, tracer hook cost included")
    if anomalies:
        sub += f" | {plural(len(anomalies), 'anomaly', 'anomalies')} (see the HTML or text report)"
    tpl = environment().get_template("flamegraph.svg")
    return tpl.render(frames=fr, width=WIDTH, height=height, row=ROW, title=title, subtitle=sub,
                      shown=tree.paths_shown, paths=tree.paths_total, top=TOP)
