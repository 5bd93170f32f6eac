"""Plain-text report for mailing lists: fits 80 columns and one mail.

Modelled on uftrace's `report` and `graph`: fixed-width columns with units,
`====` rules, an ASCII `+-` tree. Times in microseconds, as function_graph
prints them.
"""
from __future__ import annotations

from ftflame.profile import NODE_IRQ_ROOT, Profile

from .common import anomaly_lines, count, max_depth_hint, us

WIDTH = 80
TOP_FUNCTIONS = 40
TREE_MIN_FRACTION = 0.01  # show paths holding at least 1% of their root's time
TREE_MAX_LINES = 150


def _clip(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - 1] + "~"


def header(p: Profile) -> list:
    t, c = p.trace, p.counters
    src = t.source if len(t.source) <= WIDTH - 16 else "..." + t.source[-(WIDTH - 19):]
    lines = [f"ftflame report: {src}"]
    bits = []
    if t.kernel:
        bits.append(f"kernel {t.kernel.split()[2] if len(t.kernel.split()) > 2 else t.kernel}")
    if t.cpus:
        bits.append(f"{t.cpus} CPUs")
    if t.clock:
        bits.append(f"clock {t.clock}")
    bits.append(f"{count(c.get('events', 0))} events")
    if t.tracer_version:
        bits.append(f"trace-cmd {t.tracer_version.split()[0]}")
    lines.extend(_wrap(", ".join(bits), ""))
    lines.append(f"calls: {count(c.get('exits', 0))} completed, {len(p.samples):,} root calls, "
                 f"{p.nrows:,} call paths, max depth {c.get('max_depth', -1)}")
    cal = p.calibration
    if cal.applied:
        lines.append(f"calibration: O_in {cal.o_in_ns:.1f} ns, O_out {cal.o_out_ns:.1f} ns ({cal.source})")
    else:
        lines.append("calibration: none - figures are raw (tracer overhead included)")
    notes = anomaly_lines(p)
    hint = max_depth_hint(p)
    if hint:
        notes.append(hint)
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
    lead = text[: len(text) - len(text.lstrip(" "))]
    out, line = [], lead
    for word in text.split():
        if line.strip() and len(line) + 1 + len(word) > WIDTH:
            out.append(line)
            line = indent + word
        else:
            line = f"{line} {word}" if line.strip() else line + word
    if line.strip():
        out.append(line)
    return out


def function_table(p: Profile, top: int = TOP_FUNCTIONS) -> list:
    ft = p.functions
    n = min(top, len(ft))
    lines = [f"Functions by total inclusive time (top {n} of {len(ft)}; times in us)",
             "",
             f"{'Calls':>9} {'Total':>12} {'Self':>11} {'Avg':>9} {'p99':>9}  Function",
             f"{'=' * 9} {'=' * 12} {'=' * 11} {'=' * 9} {'=' * 9}  {'=' * 23}"]
    for i in range(n):
        calls = int(ft.calls[i])
        avg = ft.incl[i] / calls if calls else 0
        lines.append(f"{count(calls, 9)} {us(ft.incl[i], 12)} {us(ft.excl[i], 11)} "
                     f"{us(avg, 9)} {us(ft.incl_pct[i][2], 9)}  {_clip(ft.names[i], 24)}")
    return lines


def call_tree(p: Profile) -> list:
    lines = ["Call tree, aggregated per path (us; paths under "
             f"{TREE_MIN_FRACTION:.0%} of their root not shown)",
             "",
             f"{'Calls':>9} {'Total':>12} {'Self':>11} {'Avg':>9}  Function",
             f"{'=' * 9} {'=' * 12} {'=' * 11} {'=' * 9}  {'=' * 23}"]
    calls, incl, excl, flags = (p.col(c).tolist() for c in ("calls", "incl", "excl", "flags"))
    kids = p.children
    hidden = 0

    def order(rows):
        return sorted(rows, key=lambda r: (-incl[r], p.name(r)))

    budget = [TREE_MAX_LINES]

    def walk(r, prefix, last, root_total, is_root):
        nonlocal hidden
        if budget[0] <= 0:
            hidden += 1
            return
        budget[0] -= 1
        c = calls[r]
        branch = "" if is_root else prefix + ("`-" if last else "+-")
        name = p.name(r) + (" [irq]" if flags[r] & NODE_IRQ_ROOT else "")
        label = _clip(branch + name, WIDTH - 46)
        lines.append(f"{count(c, 9)} {us(incl[r], 12)} {us(excl[r], 11)} "
                     f"{us(incl[r] / c if c else 0, 9)}  {label}")
        shown = [k for k in order(kids[r]) if incl[k] >= TREE_MIN_FRACTION * root_total]
        hidden += len(kids[r]) - len(shown)
        child_prefix = "" if is_root else prefix + ("  " if last else "| ")
        for i, k in enumerate(shown):
            walk(k, child_prefix, i == len(shown) - 1, root_total, False)

    for r in order(kids[-1]):
        walk(r, "", True, incl[r], True)
        lines.append("")
    if hidden:
        lines.append(f"({hidden:,} smaller or deeper paths not shown: see the JSON or HTML report)")
    return lines


def render(p: Profile, opts=None) -> str:
    out = header(p)
    out.append("")
    out.extend(function_table(p))
    out.append("")
    out.extend(call_tree(p))
    return "\n".join(line.rstrip() for line in out).rstrip() + "\n"
