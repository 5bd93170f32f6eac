"""Plain-text report for mailing lists: fits 80 columns and one mail.

Modelled on uftrace's `report` and `graph`: fixed-width columns with units,
`====` rules, an ASCII `+-` tree. Times in microseconds, as function_graph
prints them.
"""
from __future__ import annotations

import functools
import os

import numpy as np

from ftflame.correct import calibration, corrections, fit, hotlists, uncertainty
from ftflame.model.names import printable
from ftflame.model.profile import NODE_IRQ, NODE_IRQ_ROOT, OffCpu, Profile

from . import textcalls, textcpu
from .common import context_lines, count, fit_decimals, plural, report_notes, us, wrap
from .options import DEFAULT, RenderOptions

WIDTH = 80
UNKNOWN = "-"  # a figure the trace does not give (off-CPU without sched_switch); ASCII for mail
TOP_FUNCTIONS = 40
TREE_MIN_FRACTION = 0.01  # show paths holding at least 1% of their root's time
TREE_MAX_LINES = 150


CUT = "..."  # a name or line cut to fit: never "~", which marks a clamped figure


def _clip(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - len(CUT)] + CUT


def tree_label(branch: str, name: str, width: int, marks: set, suffix: str = "") -> str:
    """A call-tree row's branch and name in `width` columns, the name never
    lost: a branch too long for the name keeps its last levels after "[+N]"
    (N levels not drawn) and at least a third of the width, then a name that
    still does not fit is cut at its end, marked "..." (suffix, e.g. " [irq]",
    is kept). `marks` collects the marks used, for the legend under the tree."""
    if len(branch) + len(name) + len(suffix) <= width:
        return branch + name + suffix
    room = max(width - len(name) - len(suffix), width // 3)
    if len(branch) > room:
        levels = len(branch) // 2
        keep = room - len(f"[+{levels}]")
        keep = max(keep - keep % 2, 2)  # whole levels; the elbow always
        branch = f"[+{levels - keep // 2}]" + branch[-keep:]
        marks.add("deep")
    room = width - len(branch) - len(suffix)
    if len(name) > room:
        name = name[: room - len(CUT)] + CUT
        marks.add("cut")
    return branch + name + suffix


def mark_legend(marks: set) -> str:
    """What the tree's marks mean, only those used."""
    out = []
    if "unreliable" in marks:
        out.append("?: the hook-cost correction exceeds half the measured time (unreliable).")
    if "clamped" in marks:
        out.append("~: clamped at zero self time.")
    if "deep" in marks:
        out.append("[+N]: N more levels of the tree to the left, not drawn.")
    if "cut" in marks:
        out.append(f"{CUT}: name cut to fit 80 columns (full names in the JSON).")
    return " ".join(out)


def header(p: Profile) -> list:
    t, c = p.trace, p.counters
    src = t.source if len(t.source) <= WIDTH - 16 else "..." + t.source[-(WIDTH - 19):]
    lines = [f"ftflame report: {src}"]
    bits = []
    if t.kernel:
        bits.append(f"kernel {t.kernel.split()[2] if len(t.kernel.split()) > 2 else t.kernel}")
    if t.cpus:
        bits.append(f"{t.cpus} CPU{'' if t.cpus == 1 else 's'}")
    if t.clock:
        bits.append(f"clock {t.clock}")
    bits.append(f"{count(c.get('events', 0))} events")
    if t.tracer_version:
        bits.append(f"trace-cmd {t.tracer_version.split()[0]}")
    # a bit is never broken across lines ("trace-cmd" above "3.1.6")
    lines.extend(line.replace("\0", " ") for line in _wrap(", ".join(b.replace(" ", "\0") for b in bits), ""))
    lines.append(f"calls: {count(c.get('exits', 0))} completed, {len(p.samples):,} root calls, "
                 f"{p.nrows:,} call paths, max depth {c.get('max_depth', -1)}")
    for line in context_lines(p):
        lines.extend(_wrap(line, "  "))
    lines.extend(calibration_lines(p))
    notes = report_notes(p)
    if notes:
        lines.append("")
        lines.append("Anomalies (counted, never dropped):")
        for n in notes:
            lines.extend(_wrap("  ! " + n, "    "))
    else:
        lines.append("anomalies: none (no lost events, no partial or open calls)")
    return lines


def _wrap(text: str, indent: str) -> list:
    """Wrap at WIDTH; continuation lines start with indent."""
    return wrap(text, indent, width=WIDTH)


def _spread(cal) -> tuple:
    """("; 95%: [..], [..]" of the O_in and O_out used, or ""; the note on
    an interval of the file that is not of the value used, or None)."""
    ci, note = calibration.intervals(cal)  # (those of the values used only)
    if "o_in" in ci and "o_out" in ci:
        return (f"; 95%: [{ci['o_in'][0]:.0f}, {ci['o_in'][1]:.0f}], "
                f"[{ci['o_out'][0]:.0f}, {ci['o_out'][1]:.0f}]"), note
    return "", note


def calibration_lines(p: Profile) -> list:
    """The calibration used and what the corrections did (the header)."""
    cal = p.calibration
    c = p.corrected
    if c is None:
        if cal.applied:
            return [f"calibration: {calibration.provenance(cal)}"]
        return ["calibration: none - figures are raw (tracer overhead included)"]
    out = []
    if cal.applied:
        src = cal.source
        if src.startswith("file:"):
            src = "file " + os.path.basename(src[5:])
        d = cal.details if isinstance(cal.details, dict) else {}
        spread, ci_note = _spread(cal)
        how = {"empty-calls": "empty calls", "in-trace estimate": "in-trace estimate"}.get(cal.method, cal.method)
        where = "" if src == "in-trace" else f", {src}"
        text = (f"calibration: O_in {cal.o_in_ns:.1f} ns, O_out {cal.o_out_ns:.1f} ns per traced "
                f"call ({how}{where}{spread})")
        if "command_line" in d:  # values given on the command line: where each one came from
            text = f"calibration: {calibration.provenance(cal, misfit=False)} per traced call"  # MISFIT said above
        if d.get("applied_o_in"):
            text += "; root-only trace: O_in of the NULL procedure hooked alone"
        for note in (ci_note, calibration.kernel_note(cal)):
            text += f"; {note}" if note else ""
        misfit = fit.words(cal)
        if misfit and not cal.fit["ok"]:  # first: every corrected figure depends on it
            out.extend(_wrap(misfit, "  "))
        out.extend(_wrap(text, "  "))
        if misfit and cal.fit["ok"]:
            out.extend(_wrap(misfit, "  "))
    else:
        out.extend(_wrap("calibration: none - hook cost not subtracted (no calibration.json, no "
                         "in-trace estimate: give --calibration or --overhead-in/--overhead-out)", "  "))
    sm = corrections.summary(p)
    irq = ("interrupt subtrees left out of the interrupted calls ([irq] frames)"
           if c.irqs == "exclude" else "interrupt subtrees kept in the interrupted calls")
    off = OFFCPU_HEADER[c.offcpu]
    if sm.switches is not None:  # only where the trace has switch frames
        off += (f", with the scheduler's work around {plural(sm.switches, 'switch', 'switches')} "
                f"({sm.switch_work_removed_ns / 1e3:,.1f} us)")
    bits = [f"corrected (*): {irq}; {off}"]
    if sm.gap_calls:
        bits.append(f"{plural(sm.gap_calls, 'gap call')} left out")
    bits.append(f"{plural(sm.clamped_paths, 'path')} clamped ({sm.clamped_ns / 1e3:,.1f} us)")
    if sm.clamped_root_calls:
        bits.append(f"{plural(sm.clamped_root_calls, 'root call')} clamped at 0")
    if cal.applied:  # no hook cost subtracted: none can be over half the time
        bits.append(f"{sm.unreliable_paths:,} of {p.nrows:,} paths unreliable (?: hook cost over "
                    "half the measured time)")
    made = uncertainty.made_of(p)
    if made is not None:  # what the intervals hold, or why there are none (the model's words)
        bits.append(made["text"] + ("" if uncertainty.stat_half_widths(p) is None else
                    ": the table \"Corrected figures with their 95% intervals\", the balance sheet, "
                    "the JSON's \"intervals\", the HTML's tooltips"))
    out.extend(_wrap("; ".join(bits), "  "))
    return out


# The header's words for what the correction did with the off-CPU time, and
# the balance sheet's note beside the off-CPU row.
OFFCPU_HEADER = {OffCpu.REMOVED: "off-CPU time removed", OffCpu.KEPT_ASKED: "off-CPU time kept (asked for)",
                 OffCpu.KEPT_NOSLEEP: "off-CPU time kept (the durations exclude it: nosleep-time)",
                 OffCpu.UNKNOWN: "off-CPU time unknown (no sched_switch events)"}
OFFCPU_BALANCE_NOTE = {OffCpu.KEPT_ASKED: "kept in (asked for)", OffCpu.KEPT_NOSLEEP: "already out (nosleep-time)",
                       OffCpu.UNKNOWN: "unknown: no sched_switch"}


def _decimals(columns) -> list:
    """One precision per time column, the same on every row: the most
    decimals with which all of a (values, width) column fits."""
    return [fit_decimals(v, w) for v, w in columns]


# Rows of a per-path column taken at a time where a table needs a figure of
# the whole column (its extremes for fit_decimals): not a whole-tree
# temporary per column.
EXTREMES_CHUNK_ROWS = 16384


def _mean_extremes(mean_of, n: int) -> np.ndarray:
    """The smallest and largest of the n means mean_of(rows) gives (the
    model's: Profile.node_means, Corrected.means), a chunk of rows at a
    time: all that fit_decimals reads of the column."""
    if not n:
        return np.zeros(0)
    parts = [mean_of(slice(a, a + EXTREMES_CHUNK_ROWS)) for a in range(0, n, EXTREMES_CHUNK_ROWS)]
    # np.min of the parts' extremes: a NaN stays NaN, as in the whole column
    return np.array([np.min([m.min() for m in parts]), np.max([m.max() for m in parts])])


def _mean_cell(mean: float, calls: int, decimals: int) -> str:
    """A mean in a 9-wide column; "-" over no call (a mean of nothing is no 0)."""
    return us(mean, 9, decimals) if calls else UNKNOWN.rjust(9)


def _flag(unreliable, clamped) -> str:
    return "?" if unreliable else ("~" if clamped else " ")


IRQ_MARKS = textcalls.IRQ_MARKS


def _irq_mark(kinds, i: int) -> str:
    return IRQ_MARKS.get(str(kinds[i]), "")


def irq_legend(used: set) -> str:
    out = []
    if "irq" in used:
        out.append("[irq]: every call in interrupt context (hard or soft irq).")
    if "mixed" in used:
        out.append("[irq+task]: some calls in interrupt context, some in task context.")
    return " ".join(out)


def named_row(figures: str, name: str, width: int = WIDTH) -> list:
    """A table row whose last column is a name: a name too long for the
    row goes on its own line above the figures, ending at the last column
    (cut only when it is wider than the whole line)."""
    if len(figures) + len(name) <= width:
        return [figures + name]
    name = _clip(name, width)
    return [" " * (width - len(name)) + name, figures]


def calls_cell(calls: int, clean: int, width: int) -> str:
    """Completed calls, as "clean+gap" where gap calls were left out of the
    corrected figures (which are over the clean ones)."""
    calls, clean = int(calls), int(clean)
    return (count(calls) if clean == calls else f"{clean:,}+{calls - clean:,}").rjust(width)


CALLS_LEGEND = ("Calls: completed calls; N+G: N clean calls, which the corrected figures cover, "
                "and G gap calls left out of them.")
ALL_GAP_LEGEND = "0+G and -: every call is a gap call, so there is no corrected figure."


def corrected_function_table(p: Profile, top: int = TOP_FUNCTIONS) -> list:
    """Corrected figures with their percentiles, busiest (corrected) first;
    self time has its own table (hot)."""
    ft = p.functions
    ex = corrections.function_extras(p)
    kinds = hotlists.irq_context(p)
    cols, approx, _, _ = corrections.corrected_stats(p)["functions", "incl"]
    p50, p99 = cols[4], cols[6]
    order = sorted(range(len(ft)), key=lambda i: (-ft.incl_corr[i], ft.names[i]))[:top]
    cw = max([7] + [len(calls_cell(ft.calls[i], ft.calls_corr[i], 0)) for i in order])
    lines = [f"Functions by corrected inclusive time (top {len(order)} of {len(ft)}; us; "
             "* = corrected)",
             "",
             f"{'Calls':>{cw}} {'p50*':>9} {'p99*':>9} {'Total*':>10}  Function",
             f"{'=' * cw} {'=' * 9} {'=' * 9} {'=' * 10}  {'=' * (47 - cw)}"]
    d = _decimals([(p50[order], 9), (p99[order], 9), (ft.incl_corr[order], 10)])
    marks, used = set(), set()
    gaps = all_gap = False
    for i in order:
        flag = _flag(ex["unreliable"][i], ex["clamped"][i]) if ex else " "
        marks.add({"?": "unreliable", "~": "clamped"}.get(flag, ""))
        used.add(str(kinds[i]))
        gaps |= int(ft.calls[i]) != int(ft.calls_corr[i])
        if ft.calls_corr[i]:
            figures = f"{us(p50[i], 9, d[0])} {us(p99[i], 9, d[1])} {us(ft.incl_corr[i], 10, d[2])}"
        else:  # every call a gap call: no corrected figure, not a 0
            all_gap = True
            figures = f"{UNKNOWN:>9} {UNKNOWN:>9} {UNKNOWN:>10}"
        lines.extend(named_row(f"{calls_cell(ft.calls[i], ft.calls_corr[i], cw)} {figures} {flag}",
                               ft.names[i] + _irq_mark(kinds, i)))
    lines.append("")
    est = " p50*, p99*: exact for root functions (every call's corrected time is known), " \
          "elsewhere estimates (the raw ones scaled by corrected mean / raw mean)." if approx[order].any() else ""
    lines.extend(_wrap(" ".join(filter(None, (
        CALLS_LEGEND if gaps else "", ALL_GAP_LEGEND if all_gap else "",
        "p50*, p99*, Total*: corrected, over the clean calls (means: Total* / Calls; self time: the "
        "hot lists below; raw figures: the JSON, the HTML's Raw switch)." + est,
        mark_legend(marks), irq_legend(used)))), ""))
    return lines


def interval_table(p: Profile, top: int = TOP_FUNCTIONS) -> list:
    """The corrected mean, p50 and p90 of the busiest functions with their
    95% half-widths (ftflame/correct/uncertainty.py); none without intervals."""
    h = uncertainty.stat_half_widths(p)
    if h is None:
        return []
    ft = p.functions
    cols, _, _, _ = corrections.corrected_stats(p)["functions", "incl"]
    hw = h["functions", "incl"]
    order = sorted(range(len(ft)), key=lambda i: (-ft.incl_corr[i], ft.names[i]))[:top]
    picks = [(3, 10), (4, 9), (5, 9)]  # mean, p50, p90 (corrections.STAT_NAMES) and widths
    lines = [f"Corrected figures with their 95% intervals (top {len(order)}; us)", "",
             "     Mean*   +-95%      p50*   +-95%      p90*   +-95%  Function",
             f"{'=' * 10} {'=' * 7} {'=' * 9} {'=' * 7} {'=' * 9} {'=' * 7}  {'=' * 22}"]
    d = _decimals([(cols[k][order], w) for k, w in picks] + [(hw[k][order], 7) for k, _ in picks])
    kinds = hotlists.irq_context(p)
    for i in order:
        cells = [f"{us(cols[k][i], w, d[j])} {us(hw[k][i], 7, d[3 + j])}" for j, (k, w) in enumerate(picks)]
        lines.extend(named_row(" ".join(cells) + "  ", ft.names[i] + _irq_mark(kinds, i)))
    lines.append("")
    lines.extend(_wrap("+-95%: half-width of the 95% interval. " + uncertainty.made_of(p)["text"]
                       + "; p99 and every call path's in the JSON (\"intervals\") and "
                       "the HTML. " + irq_legend({str(kinds[i]) for i in order}), ""))
    return lines


def _walk_tree(p: Profile, order_key, keep, row_lines, root_keys=None) -> tuple:
    """The aggregated call tree, depth first from the roots: children in
    order_key order, shown when keep(child, its root) holds, at most
    TREE_MAX_LINES rows, a blank line after each root's tree, then how many
    paths were not shown. row_lines(rows, branches) writes the rows shown,
    one line each, all at once (their figures looked up together, not row
    by row). root_keys: order_key's figures (its name last, not given) as
    arrays of the rows given, to sort the roots by in numpy (a trace may
    have 100k)."""
    kids = p.children
    lines: list = []  # a shown row's place in rows, or a line's text
    rows: list = []
    branches: list = []
    hidden = 0
    budget = [TREE_MAX_LINES]

    def order(rows):
        return sorted(rows, key=order_key)

    def root_order():
        roots = np.asarray(kids[-1], dtype=np.int64)
        keys = root_keys(roots) if root_keys is not None and len(roots) else None
        if keys is None or any(k.dtype.kind == "f" and np.isnan(k).any() for k in keys):
            return order(roots.tolist())  # (Python's sort of NaN keys, as it was)
        # equal names rank equal, in Python's order of them
        _, name = np.unique(np.array([p.funcs[f] for f in p.col("func", roots).tolist()], dtype=object),
                            return_inverse=True)
        return roots[np.lexsort((name.reshape(-1), *reversed(keys)))].tolist()

    def walk(r, prefix, last, root, is_root):
        nonlocal hidden
        if budget[0] <= 0:
            hidden += 1
            return
        budget[0] -= 1
        lines.append(len(rows))
        rows.append(r)
        branches.append("" if is_root else prefix + ("`-" if last else "+-"))
        shown = order([k for k in kids[r] if keep(k, root)])  # (keys made for the shown only)
        hidden += len(kids[r]) - len(shown)
        child_prefix = "" if is_root else prefix + ("  " if last else "| ")
        for i, k in enumerate(shown):
            walk(k, child_prefix, i == len(shown) - 1, root, False)

    roots = root_order()
    for k, r in enumerate(roots):
        if budget[0] <= 0:  # the rest hidden, counted in the note below
            hidden += len(roots) - k
            break
        walk(r, "", True, r, True)
        lines.append("")
    if hidden:
        lines.append(f"({hidden:,} smaller or deeper paths not shown: see the JSON or HTML report)")
    shown = row_lines(rows, branches) if rows else []
    return [line if isinstance(line, str) else shown[line] for line in lines]


def corrected_call_tree(p: Profile) -> list:
    c = p.corrected
    # numpy columns indexed per shown row: the walk shows ~100 of 100k paths;
    # the columns as stored and the means per shown row, no whole-tree copies
    calls, incl, flags = (p.nodes.stored(k) for k in ("calls", "incl", "flags"))
    ci, cc = c.incl, c.calls
    gap = int(np.max(calls - cc)) if p.nrows else 0
    # the widest Calls cell a row can have: "N+G" where gap calls were left out
    cw = max(7, len(count(int(calls.max()) if p.nrows else 0)) + (len(f"+{gap:,}") if gap else 0))
    lines = [f"Call tree per path (us; * = corrected; paths under {TREE_MIN_FRACTION:.0%} of "
             "their root not shown)",
             "",
             f"{'Calls':>{cw}} {'Avg':>9} {'Avg*':>9} {'Self*':>9}  Function",
             f"{'=' * cw} {'=' * 9} {'=' * 9} {'=' * 9}  {'=' * (46 - cw)}"]
    unrel = c.unreliable if c.unreliable is not None else np.zeros(p.nrows, dtype=np.int64)
    clamped = c.clamped
    label_w = WIDTH - cw - 32  # the figures, the flag
    raw_mean = functools.partial(p.node_means, "incl")
    corr_mean, self_mean = functools.partial(c.means, "incl"), functools.partial(c.means, "excl")
    d = _decimals([(_mean_extremes(m, p.nrows), 9) for m in (raw_mean, corr_mean, self_mean)])

    irq_start = _irq_starts(p)
    marks, all_gap = set(), set()

    def row_line(r, branch, avg, avg_corr, self_corr):
        name, suffix = p.name(r), ""
        if flags[r] & NODE_IRQ_ROOT and c.irqs == "exclude":
            name = corrections.irq_kind(name) + " " + name
        elif irq_start[r]:
            suffix = " [irq]"
        label = tree_label(branch, name, label_w, marks, suffix)
        flag = _flag(unrel[r], clamped[r])
        marks.add({"?": "unreliable", "~": "clamped"}.get(flag, ""))
        all_gap.add(bool(calls[r]) and not cc[r])
        return (f"{calls_cell(calls[r], cc[r], cw)} {_mean_cell(avg, calls[r], d[0])} "
                f"{_mean_cell(avg_corr, cc[r], d[1])} "
                f"{_mean_cell(self_corr, cc[r], d[2])} {flag}{label}")

    def row_lines(rows, branches):  # the model's means of the shown rows, one call per column
        at = np.asarray(rows, dtype=np.int64)
        return list(map(row_line, rows, branches, raw_mean(at).tolist(), corr_mean(at).tolist(),
                        self_mean(at).tolist()))

    tree = _walk_tree(p, lambda r: (-ci[r], -incl[r], p.name(r)),
                              lambda k, root: ci[k] >= TREE_MIN_FRACTION * ci[root] and ci[k] > 0,
                              row_lines, lambda rows: (-np.asarray(ci)[rows], -incl[rows]))
    lines += tree
    legend = ((CALLS_LEGEND + " " if gap else "") + (ALL_GAP_LEGEND + " " if True in all_gap else "") +
              "Avg: raw mean over all calls. Avg*, Self*: corrected means over the clean calls."
              + (" [irq]/[softirq]: interrupt subtrees, not counted in the interrupted path's "
                 "corrected time." if c.irqs == "exclude" else ""))
    lines.extend(_wrap(" ".join(filter(None, (legend, mark_legend(marks)))), ""))
    return lines


def _irq_starts(p: Profile) -> np.ndarray:
    """Paths where interrupt context starts (marked [irq]): under a task
    path, or at the bottom of the stack. A function entered in task and in
    irq context is two paths; the mark tells them apart."""
    irq = (p.nodes.stored("flags") & NODE_IRQ) != 0  # as stored: no int64 copies
    parent = p.nodes.stored("parent")
    return irq & ((parent < 0) | ~irq[np.maximum(parent, 0)])


# a row per term of the sheet, each shown only where the trace has it: the
# sheet's layout reads top to bottom as the printed table does
def balance_lines(p: Profile) -> list:  # noqa: C901
    """The balance sheet: where each root function's measured time went."""
    if not p.balance:
        return []
    out = ["Balance sheet per root function (mean per clean call, us)", ""]
    notes = {b["accounted_note"] for b in p.balance if not b.get("external")}
    # the same note under every root says it once, under the last
    same_note = len(p.balance) > 1 and len(notes) == 1 and not any(b.get("external") for b in p.balance)
    for b in p.balance:
        out.append(f"{_clip(b['function'], 44)} ({plural(b['calls'], 'call')}"
                   + (f", {plural(b['gap_calls'], 'gap call')} left out)" if b["gap_calls"] else ")"))
        rows = [("measured (raw mean)", b["measured_raw_mean_ns"], "")]
        pm = b.get("corrected_mean_pm_ns")
        rows.append(("= corrected components", b["corrected_mean_ns"],
                     f"+- {us(pm)} (95%)" if pm is not None else ""))
        for comp in b["components"]:
            rows.append(("    " + comp["name"], comp["mean_ns"], ""))
        if b.get("children_scaled_mean_ns"):
            rows.append(("    (children scaled down by)", b["children_scaled_mean_ns"],
                         "to fit the root; no term"))
        rows.append(("+ tracer hook cost removed", b["overhead_mean_ns"], ""))
        irq_note = f"{b['irq_per_call']:.2f}/call"
        if p.corrected.irqs == "include":
            irq_note += ", kept in (--irqs include)"
        elif b.get("irq_corrected_mean_ns") is not None and b["irq_mean_ns"]:
            irq_note += f", own work {us(b['irq_corrected_mean_ns'])}"
        rows.append(("+ interrupt subtrees", b["irq_mean_ns"], irq_note))
        off_note = OFFCPU_BALANCE_NOTE.get(p.corrected.offcpu, "")
        rows.append(("+ off-CPU (sched_switch)", b["offcpu_mean_ns"], off_note))
        if "switch_work_mean_ns" in b:
            rows.append(("+ scheduler's work around switches", b["switch_work_mean_ns"],
                         plural(b["switches"], "switch", "switches")))
        if b["clamped_mean_ns"]:
            rows.append(("- clamped", b["clamped_mean_ns"], "root below 0, set to 0"))
        rows.append(("+ unaccounted", b["unaccounted_mean_ns"], ""))
        for label, v, note in rows:
            line = f"  {_clip(label, 36):<36} {us(v, 12) if v is not None else UNKNOWN.rjust(12)}"
            if note:
                line += "  " + note
            out.append(_clip(line, WIDTH))
        e = b.get("external")
        if e:
            src = e["source"]
            if src.startswith("baseline "):
                src = os.path.basename(src[9:]) + (f", {e['calls']:,} calls" if e["calls"] else "")
            diff = e["difference_ns"]
            acc = f"{e['accounted_pct']:.1f}%" if e["accounted_pct"] is not None else "-"
            for label, v, note in (("vs measured: baseline" if e["calls"] else "vs measured (given)",
                                    us(e["mean_ns"], 12), src if e["calls"] else ""),
                                   ("difference (corrected - measured)",
                                    ("+" if diff >= 0 else "-") + us(abs(diff)), f"accounted {acc}")):
                out.append(_clip(f"  {label:<36} {v:>12}  {note}", WIDTH))
        elif not same_note:
            out.extend(_wrap("  accounted %: " + b["accounted_note"], "    "))
        client = [t for t in b.get("independent", ()) if not (e and t["source"] == e["source"])]
        for t in client:  # totals measured outside the tracer (a collect.sh run's meta.json)
            pct = f"{t['difference_pct']:+.1f}%" if t["difference_pct"] is not None else "-"
            out.extend(_wrap(f"  vs {t['source']}: {us(t['mean_ns'])}; corrected - it: "
                             f"{'+' if t['difference_ns'] >= 0 else '-'}{us(abs(t['difference_ns']))} ({pct})",
                             "    "))
        out.append("")
    if same_note:
        out.extend(_wrap("accounted % (every root function): " + notes.pop(), "  "))
    return out


def measured_lines(p: Profile) -> list:
    """Totals measured outside the tracer (ftflame/correct/measured.py)."""
    m = p.measured
    if not m:
        return []
    out = [f"Measured outside the tracer ({m['source']}, {m['run'] or 'this'} recording)", ""]
    if m.get("server_rpc_calls") is not None:
        out.append(f"  server RPC calls during the recording: {m['server_rpc_calls']:,}")
    for c in m.get("server_counts") or ():
        out.append(_clip(f"  {c['function']}: server {c['counter']} {c['server_calls']:,}, "
                         f"trace {c['trace_calls']:,} calls: {c['status']}", WIDTH))
        if c["status"] == "explained":  # (a warning's note is in the WARNING below)
            out.extend(_wrap("    " + c["note"], "    "))
    for c in m.get("client") or ():
        share = f"{c['server_share_pct']:.1f}%" if c["server_share_pct"] is not None else "-"
        srv = us(c["server_corrected_mean_ns"]) if c["server_corrected_mean_ns"] is not None else "-"
        out.append(_clip(f"  client {c['op']} on {c['mount']}: {c['client_ops']:,} ops", WIDTH))
        out.append(_clip(f"    mean execute {us(c['client_execute_mean_ns'])} us, RTT {us(c['client_rtt_mean_ns'])} us", WIDTH))
        out.append(_clip(f"    server {c['function']} corrected {srv} us: {share} of the execute time", WIDTH))
    rows = m.get("iozone") or ()
    if rows:
        out.append(_clip(f"  iozone: {m.get('iozone_command_line') or ''}", WIDTH))
        for r in rows:
            t = us(r["time_per_op_ns"]) if r["time_per_op_ns"] is not None else "-"
            out.append(_clip(f"    {r['test']:<14} {r['throughput']:>10,} {r['units']:<5} "
                             f"{r['record_kb']} kB records: {t} us/op", WIDTH))
    for name, lat in sorted((m.get("iozone_latency") or {}).items()):
        out.append(_clip(f"    {name} latency (-Q): {lat['count']:,} ops, mean {lat['mean_us']:.1f} us, "
                         f"max {lat['max_us']} us", WIDTH))
    for w in m.get("warnings") or ():
        out.extend(_wrap("  WARNING: " + w, "    "))
    return out


def error_table(p: Profile, top: int = TOP_FUNCTIONS) -> list:
    """The functions whose calls returned error codes, most errors first
    (FunctionTable.returns); none when the trace has no return values."""
    ft = p.functions
    rs = ft.returns
    if rs is None:
        return []
    err, ok = rs.err, rs.ok
    with_ret = rs.total_calls
    if not err.calls.any():
        return _wrap(f"Return values: none of the {plural(with_ret, 'call')} with a return value "
                     "returned an error code (-4095..-1).", "")
    failing = np.nonzero(err.calls)[0]
    order = sorted(failing.tolist(), key=lambda i: (-int(err.calls[i]), ft.names[i]))[:top]
    err_mean, ok_mean = err.incl_mean, ok.incl_mean
    lines = [f"Functions that returned errors (top {len(order)} of {len(failing)}; raw inclusive "
             "time per call, us)",
             "",
             f"{'Errors':>7} {'Calls':>8} {'Err mean':>9} {'Err max':>9} {'OK mean':>9}  Function",
             f"{'=' * 7} {'=' * 8} {'=' * 9} {'=' * 9} {'=' * 9}  {'=' * 32}"]
    d = _decimals([(err_mean[order], 9), (err.incl_max[order], 9), (ok_mean[order], 9)])
    kinds = hotlists.irq_context(p)
    for i in order:
        okm = us(ok_mean[i], 9, d[2]) if ok.calls[i] else UNKNOWN.rjust(9)
        lines.extend(named_row(f"{count(err.calls[i], 7)} {count(rs.calls[i], 8)} {us(err_mean[i], 9, d[0])} "
                               f"{us(err.incl_max[i], 9, d[1])} {okm}  ", ft.names[i] + _irq_mark(kinds, i)))
    lines.append("")
    lines.extend(_wrap(" ".join(filter(None, (
        "Errors: calls that returned an error code (-4095..-1; a value in the low 32 bits "
        "read as an int's, as the kernel prints it); Calls: the calls with a return value; OK: the others. "
        "Raw times (no hook cost taken out); sums and percentiles: the JSON (functions[].returns). "
        "trace.dat does not say which functions return nothing: theirs is a leftover register.",
        irq_legend({str(kinds[i]) for i in order})))), ""))
    return lines


def function_table(p: Profile, top: int = TOP_FUNCTIONS) -> list:
    errors = error_table(p, top)
    return _function_table(p, top) + ([""] + errors if errors else [])


def _function_table(p: Profile, top: int = TOP_FUNCTIONS) -> list:
    if p.corrected is not None:
        iv = interval_table(p, top)
        return corrected_function_table(p, top) + ([""] + iv if iv else [])
    ft = p.functions
    n = min(top, len(ft))
    lines = [f"Functions by total inclusive time (top {n} of {len(ft)}; times in us)",
             "",
             f"{'Calls':>7} {'p50':>9} {'p99':>9} {'Total':>10}  Function",
             f"{'=' * 7} {'=' * 9} {'=' * 9} {'=' * 10}  {'=' * 40}"]
    d = _decimals([(ft.incl[:n], 10), (ft.incl_pct[:n, 2], 9), (ft.incl_pct[:n, 0], 9)])
    kinds = hotlists.irq_context(p)
    for i in range(n):
        lines.extend(named_row(f"{count(ft.calls[i], 7)} {us(ft.incl_pct[i][0], 9, d[2])} "
                               f"{us(ft.incl_pct[i][2], 9, d[1])} {us(ft.incl[i], 10, d[0])}  ",
                               ft.names[i] + _irq_mark(kinds, i)))
    lines.append("")  # the legend is not a row of the table
    lines.extend(_wrap(" ".join(filter(None, (
        "Self time: the hot lists below; means and every figure: the JSON.",
        irq_legend({str(kinds[i]) for i in range(n)})))), ""))
    return lines


def call_tree(p: Profile) -> list:
    if p.corrected is not None:
        return corrected_call_tree(p)
    lines = ["Call tree, aggregated per path (us; paths under "
             f"{TREE_MIN_FRACTION:.0%} of their root not shown)",
             "",
             f"{'Calls':>7} {'Total':>10} {'Self':>9} {'Avg':>9}  Function",
             f"{'=' * 7} {'=' * 10} {'=' * 9} {'=' * 9}  {'=' * 40}"]
    calls, incl, excl = (p.col(c) for c in ("calls", "incl", "excl"))
    avg = p.node_means("incl")
    d = _decimals([(incl, 10), (excl, 9), (avg, 9)])
    irq_start = _irq_starts(p)
    marks = set()

    def row_line(r, branch):
        label = tree_label(branch, p.name(r), WIDTH - 40, marks, " [irq]" if irq_start[r] else "")
        return (f"{count(calls[r], 7)} {us(incl[r], 10, d[0])} {us(excl[r], 9, d[1])} "
                f"{_mean_cell(avg[r], calls[r], d[2])}  {label}")

    tree = _walk_tree(p, lambda r: (-incl[r], p.name(r)),
                              lambda k, root: incl[k] >= TREE_MIN_FRACTION * incl[root],
                              lambda rows, branches: list(map(row_line, rows, branches)),
                              lambda rows: (-incl[rows],))
    lines += tree
    if marks:
        lines.extend(_wrap(mark_legend(marks), ""))
    return lines


# The sections of the report, in their default order (--sections picks some).
SECTIONS = ("header", "operations", "functions", "hot", "offcpu", "slowest", "tree", "balance", "measured")


def section_lines(p: Profile, name: str, top=None) -> list:
    """One section's lines; [] when the trace has nothing for it. top: rows
    per table (None: each table's default)."""
    if name == "header":
        return header(p)
    if name == "operations":
        return textcalls.operations_lines(p)
    if name == "functions":
        return function_table(p, TOP_FUNCTIONS if top is None else top)
    if name == "hot":
        return textcalls.hot_lines(p, *(() if top is None else (top,)))
    if name == "offcpu":
        return textcalls.offcpu_lines(p, *(() if top is None else (top,)))
    if name == "slowest":
        return textcalls.slowest_lines(p, *(() if top is None else (top,)))
    if name == "tree":
        return call_tree(p)
    if name == "balance":
        return balance_lines(p) + textcpu.cpu_lines(p)
    if name == "measured":
        return measured_lines(p)
    raise ValueError(f"unknown section {name!r}")


def render(p: Profile, opts: RenderOptions = DEFAULT) -> str:
    opts = opts or DEFAULT
    names = opts.sections or SECTIONS
    top = opts.top
    out = []
    for name in names:
        lines = section_lines(p, name, top)
        if lines:
            if out:
                out.append("")
            out.extend(lines)
    # every line shown, not sent: a run folder's strings (meta.json's mount
    # points, iozone's command line and test names) and the input's path
    # reach this text raw, and it is read at a terminal (names.printable,
    # the helper stderr's lines go through too)
    return "\n".join(printable(line.rstrip()) for line in out).rstrip() + "\n"
