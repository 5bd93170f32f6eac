"""`ftflame diff` as text for a mail: under 80 columns, the significant
changes first, then the root functions with their intervals and the
operations of the dispatchers, then the rest collapsed. Prints the figures of ftflame.diff.model; computes none."""
from __future__ import annotations

import math
import textwrap

import numpy as np

from .common import us

WIDTH = 80
CUT = "..."
TOP_SIGNIFICANT = 30
TOP_OTHER = 12
TOP_PATHS = 10


def pct(x: float) -> str:
    """A change: +12.5%, or x37 for a ratio of 10 and more."""
    if x is None or not math.isfinite(x):
        return "-"
    return f"x{x + 1:,.0f}" if x >= 9 else f"{x * 100:+.1f}%"


def interval(lo: float, hi: float) -> str:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "-"
    if hi >= 9:
        return f"[x{lo + 1:,.1f}, x{hi + 1:,.0f}]"
    return f"[{lo * 100:+.0f}, {hi * 100:+.0f}]%"


def short_path(key: str, width: int) -> str:
    """A call path in `width` columns: its last functions, "..." for the
    ones left out, never the leaf cut."""
    parts = key.split(";")
    out = parts[-1]
    for name in reversed(parts[:-1]):
        cand = name + ";" + out
        if len(CUT) + 1 + len(cand) > width:
            return CUT + ";" + out if len(parts) > 1 else out
        out = cand
    return out


def _wrap(text: str, indent: str = "") -> list:
    return textwrap.wrap(text, WIDTH - 1, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_on_hyphens=False, break_long_words=True)


def header(d) -> list:
    lines = [f"ftflame diff: {'corrected' if d.corrected else 'raw'} time per call, "
             f"BEFORE vs AFTER"]
    for side in (d.before, d.after):
        runs = len(side.runs)
        lines += _wrap(f"{side.label.upper()}: {runs} run{'s' if runs != 1 else ''}, "
                       f"{side.root_calls:,} root calls; lost events {side.lost_events:,}, "
                       f"calls left out {side.gap_calls:,}")
        for r in side.runs:
            c = r["calibration"]
            lines += _wrap(f"{r['label']}: {r['kernel'] or 'kernel unknown'}, clock {r['clock'] or '?'}, "
                           f"{r['root_calls']:,} root calls; calibration {c['source']} "
                           f"(O_in {c['o_in_ns']:g} ns, O_out {c['o_out_ns']:g} ns)", "  ")
    for w in d.warnings:
        lines += _wrap("warning: " + w)
    lines += _wrap("method: " + d.method)
    return lines


def _ordered(t, mask) -> np.ndarray:
    idx = np.flatnonzero(mask)
    return idx[np.argsort(-np.abs(np.nan_to_num(t.delta_per_root[idx])), kind="stable")]


ROW = "{v:<6} {c:>7} {ci:>13} {b:>10} {a:>10}  {n}"


def significant(d) -> list:
    lines = ["", "Significant changes (us per call, median; change: Hodges-Lehmann ratio; the",
             "largest effect per root call first)"]
    total = sum(len(t) for t in d.tables.values())
    found = 0
    for level, title, top in (("functions", "functions", TOP_SIGNIFICANT), ("paths", "call paths", TOP_PATHS)):
        t = d.table(level)
        idx = _ordered(t, np.isin(np.array(t.verdict), ("slower", "faster")))
        found += len(idx)
        if not len(idx):
            continue
        lines.append(ROW.format(v="", c="change", ci="95% interval", b="before", a="after", n=title))
        for i in idx[:top]:
            head = ROW.format(v=t.verdict[i], c=pct(t.change[i]), ci=interval(t.ci_lo[i], t.ci_hi[i]),
                              b=us(t.before.median[i], 10, 1), a=us(t.after.median[i], 10, 1), n="")
            room = WIDTH - 1 - len(head)
            name = short_path(t.keys[i], room) if level == "paths" else t.keys[i]
            if len(name) <= room:
                lines.append(head + name)
            else:  # a long name on a line of its own
                lines.append(head.rstrip())
                lines.append("    " + short_path(t.keys[i], WIDTH - 5)[:WIDTH - 5])
        if len(idx) > top:
            lines.append(f"  ... and {len(idx) - top:,} more {title} (the JSON output lists every item)")
    if not found:
        lines.append(f"  none: no significant change among {total:,} items compared")
    return lines


def roots(d) -> list:
    t = d.table("roots")
    lines = ["", "Root functions (us per call: mean, median; run-to-run range of the medians)"]
    if not len(t):
        return lines + ["  none"]
    for i in np.argsort(-np.maximum(t.before.per_root_time, t.after.per_root_time), kind="stable"):
        lines.append(f"{t.keys[i]}: {t.verdict[i]}" + (f" ({t.why[i]})" if t.why[i] else ""))
        for side, f in (("before", t.before), ("after", t.after)):
            if f.calls[i] == 0:
                lines.append(f"  {side:<6} not called")
                continue
            spread = "" if f.run_medians.shape[0] < 2 else \
                f", runs {us(f.run_lo[i], 0, 1)}..{us(f.run_hi[i], 0, 1)}"
            lines.append(f"  {side:<6} {int(f.calls[i]):>7,} calls  mean {us(f.mean[i], 10, 1)}  "
                         f"median {us(f.median[i], 10, 1)}{spread}")
        if t.before.calls[i] and t.after.calls[i]:
            lines.append(f"  change {pct(t.change[i])}, 95% interval {interval(t.ci_lo[i], t.ci_hi[i])}, "
                         f"adjusted p {t.q[i]:.2g}")
    return lines


OP_ROW = "{v:<9} {c:>7} {ci:>13} {b:>9} {a:>9} {n:>13}"


def operations(d) -> list:
    """One line per (root function, operation), the busiest first; nothing
    for traces whose roots are no dispatchers."""
    t = d.table("operations")
    if not len(t):
        return []
    lines = ["", "Operations (us per call, median; root calls before/after)",
             OP_ROW.format(v="", c="change", ci="95% interval", b="before", a="after", n="calls").rstrip()]
    for i in np.argsort(-np.maximum(t.before.per_root_time, t.after.per_root_time), kind="stable"):
        both = t.before.calls[i] and t.after.calls[i]
        lines.append(OP_ROW.format(
            v=t.verdict[i], c=pct(t.change[i]) if both else "-",
            ci=interval(t.ci_lo[i], t.ci_hi[i]) if both else "-",
            b=us(t.before.median[i], 9, 1) if t.before.calls[i] else "-",
            a=us(t.after.median[i], 9, 1) if t.after.calls[i] else "-",
            n=f"{int(t.before.calls[i]):,}/{int(t.after.calls[i]):,}"))
        lines.append("    " + t.keys[i] + (f" ({t.why[i]})" if t.why[i] else ""))
    return lines


def new_gone(d) -> list:
    t = d.table("functions")
    lines = []
    for verdict, side, title in (("new", "after", "New functions (AFTER only)"),
                                 ("gone", "before", "Gone functions (BEFORE only)")):
        f = getattr(t, side)
        idx = np.flatnonzero(np.array(t.verdict) == verdict)
        if not len(idx):
            continue
        idx = idx[np.argsort(-f.per_root_time[idx], kind="stable")]
        lines += ["", f"{title}: {len(idx):,}",
                  f"  {'us/root call':>12} {'calls/root':>10} {'us/call':>10}  function"]
        for i in idx[:TOP_OTHER]:
            lines.append(f"  {us(f.per_root_time[i], 12, 1)} {f.per_root[i]:>10.2f} {us(f.mean[i], 10, 1)}  "
                         f"{t.keys[i][:WIDTH - 35]}")
        if len(idx) > TOP_OTHER:
            lines.append(f"  ... and {len(idx) - TOP_OTHER:,} more")
    return lines


def rest(d) -> list:
    t = d.table("functions")
    same = np.array(t.verdict) == "no change"
    idx = _ordered(t, same)
    if not len(idx):
        return []
    lines = ["", f"No significant change: {int(same.sum()):,} functions, "
             f"{sum(v == 'no change' for v in d.table('paths').verdict):,} call paths; "
             "largest differences:",
             "  calls/root call  us per call (median)"]
    lines.append("{:>8} {:>8} {:>9} {:>9} {:>7}  {}".format("before", "after", "before", "after", "change",
                                                           "function"))
    for i in idx[:TOP_OTHER]:
        lines.append("{:>8.1f} {:>8.1f} {:>9} {:>9} {:>7}  {}".format(
            t.before.per_root[i], t.after.per_root[i], us(t.before.median[i], 9, 1), us(t.after.median[i], 9, 1),
            pct(t.change[i]), t.keys[i][:WIDTH - 49]))
    if len(idx) > TOP_OTHER:
        lines.append(f"  ... and {len(idx) - TOP_OTHER:,} more (the JSON output lists every item)")
    return lines


def fit(lines: list) -> list:
    """Every line under WIDTH columns: a longer one (a long name, a large
    count) goes on indented continuation lines, never cut."""
    out = []
    for line in lines:
        line = line.rstrip()
        if len(line) < WIDTH:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip()) + 4)
        out += textwrap.wrap(line, WIDTH - 1, subsequent_indent=indent, break_on_hyphens=False,
                             break_long_words=True) or [""]
    return out


def render(d, opts=None) -> str:
    lines = header(d) + significant(d) + roots(d) + operations(d) + new_gone(d) + rest(d)
    return "\n".join(fit(lines)) + "\n"
