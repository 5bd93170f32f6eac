"""`ftflame diff` as text for a mail: under 80 columns, the verdict first
(each root function's and the busiest operations', what the verdict is on,
a global drift, the biggest changes), then the sides and warnings, the
significant changes, the root functions with their intervals and the
operations of the dispatchers, the rest collapsed, and the method last.
Prints the figures of ftflame.diff.model; computes none."""
from __future__ import annotations

import math
import textwrap

import numpy as np

from ftflame.model.names import printable

from .common import us

WIDTH = 80
CUT = "..."
TOP_SIGNIFICANT = 30
TOP_OTHER = 12
TOP_PATHS = 10
HEAD_ROOTS = 4  # root functions in the headline (the busiest); the rest below
HEAD_OPS = 4
HEAD_CHANGES = 3


def pct(x: float) -> str:
    """A change: +12.5%, or x37 for a ratio of 10 and more."""
    if x is None or not math.isfinite(x):
        return "-"
    return f"x{x + 1:,.0f}" if x >= 9 else f"{x * 100:+.1f}%"


def interval(lo: float, hi: float) -> str:
    """[lo, hi] at pct()'s precision (one decimal): an estimate printed
    inside its interval stays inside it printed."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "-"
    if hi >= 9:
        return f"[x{lo + 1:,.1f}, x{hi + 1:,.0f}]"
    return f"[{lo * 100:+.1f}, {hi * 100:+.1f}]%"


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


def _verdict(t, i) -> str:
    """`slower +13.3% [+8.1, +17.0]%`, `no change (below 5%)`, `new`."""
    v = t.verdict[i]
    if v in ("new", "gone"):
        return v
    out = f"{v} {pct(t.change[i])} {interval(t.ci_lo[i], t.ci_hi[i])}"
    if t.vs_lo is not None and math.isfinite(t.vs_lo[i]):  # a drift: the verdict is on this
        out += f" ({pct(t.vs_drift[i])} {interval(t.vs_lo[i], t.vs_hi[i])} against the drift)"
    return out + (f" ({t.why[i]})" if t.why[i] else "")


def _busiest(t) -> np.ndarray:
    return np.argsort(-np.maximum(t.before.per_root_time, t.after.per_root_time), kind="stable")


def _mean_median(t, i) -> list:
    """The medians and means of an item on both sides, and a flag when the
    mean moved the other way."""
    if not (t.before.calls[i] and t.after.calls[i]):
        return []
    out = [f"  median {us(t.before.median[i], 0, 1)} -> {us(t.after.median[i], 0, 1)} us, "
           f"mean {us(t.before.mean[i], 0, 1)} -> {us(t.after.mean[i], 0, 1)} us ({pct(t.mean_change[i])})"]
    if t.disagree[i]:
        out.append(f"  note: mean and typical call moved in opposite directions (mean {pct(t.mean_change[i])}, "
                   f"typical call {pct(t.change[i])}): a few long calls came or went; the verdict is on "
                   "the typical call")
    return out


def verdict_basis(d) -> str:
    """What the verdicts stand on, said before any of them."""
    nb, na = len(d.before.runs), len(d.after.runs)
    if d.runs_identical:
        return ("Calls taken as independent (--runs-identical): the intervals leave out how much runs of the "
                "same workload differ; the change is of the median time per call, 95% interval.")
    if max(nb, na) < 2:
        return ("One run a side: how much two runs of the same workload differ is not measured, so no verdict "
                "is given; the change (median time per call) and its interval are the calls' of one "
                "run.")
    return (f"The runs are the replicates ({nb} vs {na}): the change is of the median time per call (the "
            "typical call), its 95% interval from the run-to-run variation (a t-test over the runs' medians).")


def headline(d) -> list:
    """The verdict first: what it is on, a drift, each root function's and
    the busiest operations' verdicts, the biggest changes."""
    b, a = d.before, d.after
    lines = [f"ftflame diff: {'corrected' if d.corrected else 'raw'} time per call, BEFORE "
             f"({len(b.runs)} run{'s' if len(b.runs) != 1 else ''}, {b.root_calls:,} root calls) vs AFTER "
             f"({len(a.runs)} run{'s' if len(a.runs) != 1 else ''}, {a.root_calls:,} root calls)"]
    lines += _wrap(verdict_basis(d))
    if d.drift is not None:
        lines += _wrap("Drift: " + d.drift.sentence() + ".")
    t = d.table("roots")
    order = _busiest(t)
    for i in order[:HEAD_ROOTS]:
        lines += _wrap(f"{t.keys[i]}: {_verdict(t, i)}")
        lines += [x for m in _mean_median(t, i) for x in _wrap(m.strip(), "  ")]
        if t.raw_why and t.raw_why[i]:
            lines += _wrap("note: " + t.raw_why[i], "  ")
    if len(order) > HEAD_ROOTS:
        lines.append(f"  ... and {len(order) - HEAD_ROOTS:,} more root functions (below)")
    o = d.table("operations")
    if len(o):
        ops = _busiest(o)
        lines.append("Operations (busiest first):")
        for i in ops[:HEAD_OPS]:
            lines += _wrap(f"{o.keys[i]}: {_verdict(o, i)}", "  ")
        if len(ops) > HEAD_OPS:
            lines.append(f"  ... and {len(ops) - HEAD_OPS:,} more (below)")
    f = d.table("functions")
    changed = _ordered(f, np.isin(np.array(f.verdict), ("slower", "faster")))
    if f.verdict and set(f.verdict) <= {"no verdict", "new", "gone"}:
        lines.append("No verdict on any function (one run a side).")
    elif len(changed):
        lines.append(f"Biggest changes ({len(changed):,} function{'s' if len(changed) != 1 else ''} "
                     "faster or slower; largest time per root call first):")
        for i in changed[:HEAD_CHANGES]:
            lines += _wrap(f"{f.keys[i]}: {_verdict(f, i)}, {us(f.delta_per_root[i], 0, 1)} us per root call",
                           "  ")
    else:
        lines.append("No function faster or slower.")
    if d.warnings:
        lines.append(f"{len(d.warnings)} warning{'s' if len(d.warnings) != 1 else ''} about the comparison "
                     "below.")
    return lines


def header(d) -> list:
    lines = ["", "Sides"]
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
    return lines


def method(d) -> list:
    return [""] + _wrap("Method: " + d.method + ".")


def _ordered(t, mask) -> np.ndarray:
    idx = np.flatnonzero(mask)
    return idx[np.argsort(-np.abs(np.nan_to_num(t.delta_per_root[idx])), kind="stable")]


ROW = "{v:<6} {c:>7} {ci:>17} {b:>9} {a:>9}  {n}"


def significant(d) -> list:
    lines = ["", "Significant changes (us per call, median; change: ratio of the medians; the",
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
                              b=us(t.before.median[i], 9, 1), a=us(t.after.median[i], 9, 1), n="")
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
    lines = ["", "Root functions (us per call: mean, median; run-to-run range of the runs' medians)"]
    if not len(t):
        return lines + ["  none"]
    for i in _busiest(t):
        lines.append(f"{t.keys[i]}: {t.verdict[i]}" + (f" ({t.why[i]})" if t.why[i] else ""))
        for side, f in (("before", t.before), ("after", t.after)):
            if f.calls[i] == 0:
                lines.append(f"  {side:<6} not called")
                continue
            est = f.run_estimate[:, i]
            est = est[np.isfinite(est)]
            spread = "" if len(est) < 2 else f", runs {us(est.min(), 0, 1)}..{us(est.max(), 0, 1)}"
            lines.append(f"  {side:<6} {int(f.calls[i]):>7,} calls  mean {us(f.mean[i], 10, 1)}  "
                         f"median {us(f.median[i], 10, 1)}{spread}")
        if t.before.calls[i] and t.after.calls[i]:
            lines.append(f"  change {pct(t.change[i])} (typical call), 95% interval "
                         f"{interval(t.ci_lo[i], t.ci_hi[i])}, adjusted p {t.q_text[i]}")
            if t.disagree[i]:
                lines.append(f"  the mean moved the other way ({pct(t.mean_change[i])}): a few long calls")
    return lines


OP_ROW = "{v:<10} {c:>7} {ci:>17} {b:>9} {a:>9} {n:>13}"


def operations(d) -> list:
    """One line per (root function, operation), the busiest first; nothing
    for traces whose roots are no dispatchers."""
    t = d.table("operations")
    if not len(t):
        return []
    lines = ["", "Operations (us per call, median; root calls before/after)",
             OP_ROW.format(v="", c="change", ci="95% interval", b="before", a="after", n="calls").rstrip()]
    for i in _busiest(t):
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
    """The functions not called faster or slower, the largest differences
    of time per root call first, each with its change and interval (against
    the drift when there is one: what its verdict was on), its name on the
    next line."""
    t = d.table("functions")
    same = np.isin(np.array(t.verdict), ("no change", "no verdict"))
    idx = _ordered(t, same)
    if not len(idx):
        return []
    drift = d.drift is not None
    lines = ["", f"Not called faster or slower: {int(same.sum()):,} functions, "
             f"{sum(v in ('no change', 'no verdict') for v in d.table('paths').verdict):,} call paths; "
             "largest differences:",
             "  calls/root call  us per call (median)  change" + (" against the drift" if drift else ""),
             "{:>8} {:>8} {:>9} {:>9} {:>7} {:>17}".format("before", "after", "before", "after", "change",
                                                        "95% interval")]
    for i in idx[:TOP_OTHER]:
        ch, lo, hi = (t.vs_drift[i], t.vs_lo[i], t.vs_hi[i]) if drift else (t.change[i], t.ci_lo[i], t.ci_hi[i])
        lines.append(f"{t.before.per_root[i]:>8.1f} {t.after.per_root[i]:>8.1f} "
                     f"{us(t.before.median[i], 9, 1):>9} {us(t.after.median[i], 9, 1):>9} "
                     f"{pct(ch):>7} {interval(lo, hi):>17}")
        lines.append("    " + t.keys[i] + (f" ({t.why[i]})" if t.why[i] and t.verdict[i] != "no verdict" else ""))
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
    lines = headline(d) + header(d) + significant(d) + roots(d) + operations(d) + new_gone(d) + rest(d) + method(d)
    return "\n".join(map(printable, fit(lines))) + "\n"  # shown, not sent (report/text.py render)
