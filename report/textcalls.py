"""Text report sections for per-operation latency, the slowest calls and the
hot lists (report/text.py puts them in order). Every figure comes from
ftflame/correct/operations.py and ftflame/correct/hotlists.py; these only lay them out in
80 columns."""
from __future__ import annotations

import functools
import operator

import numpy as np

from ftflame.correct import hotlists
from ftflame.correct.operations import (
    NO_OPERATION,
    root_columns,
    root_table,
    rows_of_columns,
    slowest_calls,
    slowest_count,
)
from ftflame.correct.uncertainty import cost_half_widths, made_of, operation_half_widths
from ftflame.model.profile import Profile

from .common import call_text, count, fit_decimals, plural, retval_text, us, wrap

WIDTH = 80
NAME_W = 20
SLOWEST_TOP = 10
ROOT_MIN_SHARE = 0.01  # of the root calls' raw time: a smaller plain root is summed up in one line
HOW = ("Operations: the NFS procedure each root call reached below it (nfsd3_proc_*, "
       "nfsd_proc_*, nfsd4_proc_null, NFSACL, NLM), or the NFSv4 operations "
       "nfsd4_proc_compound called, in order: COMPOUND(PUTFH,WRITE). "
       f"{NO_OPERATION}: reached none (e.g. cut by --max-graph-depth, or lost events).")


def _wrap(text: str, indent: str = "", lead: str = "") -> list:
    return wrap(text, indent, lead, width=WIDTH)


def _clip(text: str, width: int) -> str:
    """A name cut at its end to fit ("..."; the JSON has it whole)."""
    return text if len(text) <= width else text[:width - 3] + "..."


def _cut_left(text: str, width: int) -> str:
    """A path cut at its start ("... > b > c"): its end says most."""
    return text if len(text) <= width else "..." + text[len(text) - width + 3:]


def operations_lines(p: Profile) -> list:
    """The latency of the root calls, the report's first table: per root
    function, split by operation under a dispatcher. From root_columns:
    a row object only for the rows printed (a trace may have 100k root
    functions, most summed up in one line)."""
    cols = root_columns(p)
    if cols is None or not len(cols["root"]):
        return []
    n = len(cols["root"])
    corrected = p.corrected is not None
    roots = set(cols["root"])
    is_op = np.fromiter(map(bool, cols["how"]), dtype=bool, count=n)  # a dispatcher's rows
    vals = np.concatenate([cols[d][k] for d in ("raw", "corr") for k in ("p50", "max", "mean")])
    # in ms where a figure would not fit its 8 columns in us (calls of seconds);
    # under 99,999 ms none can be that long
    x = vals / 1e3
    wide = x[np.abs(x) >= 99999].tolist()
    div, unit = (1000.0, "ms") if any(len(f"{v:,.0f}") > 8 for v in wide) else (1.0, "us")
    dec = fit_decimals(vals / div, 8)
    star = "; * = corrected, over the clean calls)" if corrected else ")"
    only_ops = bool(is_op.all()) and len(roots) == 1
    title = (f"Operations under {min(roots)} (latency per root call, {unit}" if only_ops else
             f"Latency per root call ({unit}") + star
    out = _wrap(title) + ["",
                          f"{'Operation' if only_ops else 'Root call':<{NAME_W}} {'Calls':>6} {'Share':>6} "
                          f"{'p50':>8} {'p90':>8} {'p99':>8} {'max':>8} {'mean':>8}",
                          f"{'=' * NAME_W} {'=' * 6} {'=' * 6} {'=' * 8} {'=' * 8} {'=' * 8} {'=' * 8} {'=' * 8}"]

    def figures(calls, share, d):  # NaN: no call to give the figure ("-")
        return (f"{count(calls, 6)} {share * 100:5.1f}% " +
                " ".join("-".rjust(8) if d[k] != d[k] else us(d[k] / div, 8, dec)
                         for k in ("p50", "p90", "p99", "max", "mean")))

    # (the intervals' rows, only with intervals)
    pm = operation_half_widths(p, root_table(p)) if corrected and cost_half_widths(p.calibration) else None
    irq = False
    # a plain root under ROOT_MIN_SHARE of the time is left out (a lost-event
    # gap leaves dozens of one-call roots); a dispatcher's operations never are
    keep = is_op | (cols["share"] >= ROOT_MIN_SHARE)
    keep[0] = True
    shown = np.flatnonzero(keep).tolist()
    hidden = np.flatnonzero(~keep)
    rows = dict(zip(shown, rows_of_columns(cols, shown)))
    # a dispatcher's operations together under its name, where the busiest of them stood
    first = {}
    for i in shown:
        first.setdefault(rows[i].root, i)
    shown.sort(key=lambda i: (first[rows[i].root], i))
    indent = "" if only_ops else "  "
    for i in shown:
        r = rows[i]
        if r.how and not only_ops and first[r.root] == i:
            out.append(f"{r.root}, per operation:")
        name = (indent + r.operation) if r.how else r.root
        if r.irq_calls:
            name += " [irq]"
            irq = True
        if len(name) > NAME_W:
            out.append(_clip(name, WIDTH))
            name = ""
        sub = indent if r.how else ""
        out.append(f"{name:<{NAME_W}} {figures(r.calls, r.share, r.raw)}")
        if corrected:
            out.append(f"{sub + '  corrected *':<{NAME_W}} {figures(r.calls - r.gap_calls, r.corr_share, r.corr)}")
        if pm is not None:
            out.append(f"{sub + '  +-95% *':<{NAME_W}} {'':6} {'':6} "
                       + " ".join("-".rjust(8) if pm[i][k] != pm[i][k] else us(pm[i][k] / div, 8, dec)
                                  for k in ("p50", "p90", "p99", "max", "mean")))
    if len(hidden):
        share = functools.reduce(operator.add, cols["share"][hidden].tolist(), 0)  # added in row order
        out.extend(_wrap(f"({plural(len(hidden), 'more root function')}, "
                         f"{plural(int(cols['calls'][hidden].sum()), 'call')}, {share * 100:.1f}% "
                         "of the time, not shown)"))
    out.append("")
    if pm is not None:
        out.extend(_wrap("+-95% *: the corrected figures' 95% half-widths. " + made_of(p)["text"] + "."))
    total = int(cols["calls"].sum())
    text = f"{plural(total, 'root call')}"
    ops = bool(is_op.any())
    if ops:
        none = is_op & np.fromiter((o == NO_OPERATION for o in cols["operation"]), dtype=bool, count=n)
        text += f", {int(cols['calls'][none].sum()):,} with no operation"
    text += (". Share: of the root calls' time. Percentiles by nearest rank over the calls' own "
             "durations (exact).")
    if irq:
        text += " [irq]: root calls entered in interrupt context."
    out.extend(_wrap(text + (" " + HOW if ops else "")))
    return out


def slowest_lines(p: Profile, top: int = SLOWEST_TOP) -> list:
    kept = slowest_count(p)
    if not kept:
        return []
    shown = slowest_calls(p, top)  # only these decoded: a trace may keep a call per root function
    corrected = p.corrected is not None
    dec = fit_decimals([s.dur for s in shown] + [s.corr for s in shown if s.corr == s.corr], 10)
    out = _wrap(f"Slowest root calls (the {len(shown)} slowest of {kept} kept: the slowest "
                "per root function and operation, by raw and by "
                + ("corrected duration" if p.calibration.applied else "on-CPU time") + "; us"
                + ("; * = corrected)" if corrected else ")")) + [
        "",
        f"{'Duration':>10} {'Corr *' if corrected else '':>10} {'Start (s)':>14} {'PID':>7} {'CPU':>3}  Operation (or root)",
        f"{'=' * 10} {'=' * 10} {'=' * 14} {'=' * 7} {'=' * 3}  {'=' * 29}"]
    for s in shown:
        what = s.root if s.operation is None else \
            f"{s.root} {s.operation}" if s.operation == NO_OPERATION else s.operation
        if s.gap:
            what += " (gap)"
        corr = ("-" if s.corr != s.corr else us(s.corr, 10, dec)) if corrected else ""  # NaN: a gap call
        fits = len(what) <= WIDTH - 50
        out.append(f"{us(s.dur, 10, dec)} {corr:>10} {s.start_ns / 1e9:14.6f} {s.pid:7d} {s.cpu:3d}  "
                   f"{what if fits else ''}")
        if not fits:
            out.append("  " + _clip(what, WIDTH - 2))
        if s.dominant:
            out.extend(_wrap("path: " + " > ".join(_clip(n, WIDTH - 10) for n in s.dominant), "    ", "  "))
        elif s.tree is None:
            out.append("  (its call tree was too big to keep)")
        out.extend(_call_values_lines(p, s))
    out.append("")
    gap = (f" (gap): the call spans {p.gap_causes or 'a gap'}; its descendants may be "
           "incomplete, so corrected figures leave it out" + (" (-)." if corrected else ".")
           if any(s.gap for s in shown) else "")
    out.extend(_wrap("path: the dominant path, from the root down the child that took most of the "
                     "time while it took at least half of its caller's. Each call's whole tree is "
                     "in the JSON (slowest[]) and the HTML report." + gap + _values_legend(shown)))
    return out


def _values_legend(shown: list) -> str:
    out = ""
    if any(s.call_args is not None for s in shown):
        out += (" call(...): the root call's argument values as its entry recorded them "
                "(funcgraph-args: the argument registers, whatever the function takes; no names or "
                "types in a trace.dat).")
    if any(s.call_ret is not None for s in shown):
        out += (" = X: its return value, an error code (-4095..-1) in decimal, else hex. errors: the calls "
                "in its tree that returned one.")
    return out


def _call_values_lines(p: Profile, s) -> list:
    """What the trace recorded of a slowest call: its root's arguments and
    return value, its tree's calls that returned an error code."""
    out = []
    if s.call_args is not None or s.call_ret is not None:
        name = p.funcs[int(p.col("func")[int(p.scol("node")[s.sample])])]  # (s.root has its marks)
        out.extend(_wrap("call: " + call_text(name, s.call_args, s.call_ret), "    ", "  "))
    if s.error_calls:
        named = ", ".join(f"{f} = {retval_text(v)}" for f, v in s.errors)
        more = f", ... ({s.error_calls - len(s.errors):,} more)" if s.error_calls > len(s.errors) else ""
        out.extend(_wrap(f"errors: {plural(s.error_calls, 'call')} returned an error code: {named}{more}",
                         "    ", "  "))
    return out


def _hot_table(title: str, rows: list, what: str, calls_head: str, marks=None) -> list:
    """marks: per row, a suffix for its name (" [irq]")."""
    dec = fit_decimals([r.ns for r in rows], 10)
    out = _wrap(title) + ["",
                          f"{what:>10} {'Share':>6} {calls_head:>8}  Where",
                          f"{'=' * 10} {'=' * 6} {'=' * 8}  {'=' * 52}"]
    for i, r in enumerate(rows):
        mark = marks[i] if marks else ""
        out.append(f"{us(r.ns, 10, dec)} {r.share * 100:5.1f}% {count(r.calls, 8)}  "
                   f"{_cut_left(r.name, WIDTH - 28 - len(mark))}{mark}")
    return out


IRQ_MARKS = {"irq": " [irq]", "mixed": " [irq+task]"}


def _path_marks(p: Profile, rows: list) -> list:
    return [" [irq]" if hotlists.path_in_irq(p, r.row) else "" for r in rows]


def hot_lines(p: Profile, top: int = hotlists.HOT_TOP) -> list:
    star = " *" if p.corrected is not None else ""
    fn = hotlists.hot_functions(p, top)
    paths = hotlists.hot_paths(p, top)
    kinds = hotlists.irq_context(p)
    fmarks = [IRQ_MARKS.get(str(kinds[r.row]), "") for r in fn]
    pmarks = _path_marks(p, paths)
    out = _hot_table(f"Hot functions by{' corrected' if star else ''} self time (top {len(fn)}; us)",
                     fn, "Self" + star, "Calls" + star, fmarks)
    out.append("")
    out += _hot_table(f"Hot call paths by{' corrected' if star else ''} self time (top {len(paths)}; us; "
                      "long paths cut at their start)", paths, "Self" + star, "Calls" + star, pmarks)
    used = set(fmarks) | set(pmarks)
    if used - {""}:
        out.append("")
        out.extend(_wrap(" ".join(filter(None, (
            "[irq]: in interrupt context (hard or soft irq): every call of the function, or the path."
            if " [irq]" in used else "",
            "[irq+task]: some calls in interrupt context, some in task context."
            if " [irq+task]" in used else "")))))
    return out


def offcpu_lines(p: Profile, top: int = hotlists.HOT_TOP) -> list:
    rows = hotlists.offcpu_paths(p, top)
    if rows is None:
        return ["Off-CPU: unknown (no sched_switch events; record with -e sched:sched_switch)"]
    if not rows:
        return ["Off-CPU: none (no traced call was switched out)"]
    out = _hot_table(f"Where the tasks were switched out (off-CPU time per call path, top {len(rows)}; us)",
                     rows, "Off-CPU", "Calls", _path_marks(p, rows))
    out.append("")
    out.extend(_wrap("Off-CPU: time switched out (sched_switch) while this path was the deepest "
                     "open call; Calls: the path's calls (raw), how often it ran."))
    return out
