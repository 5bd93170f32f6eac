"""Does a calibration fit the trace it corrects? (docs/overhead.md "Fit check")

The hook cost moves between boots, machines, CPU frequencies and kernel
configurations, and a calibration.json travels with its user. The trace
itself bounds the hook cost its calls can have carried:

* O_in: a leaf's duration is its hook cost inside its window plus its body.
  A mean O_in above the median leaf duration would take most leaves below
  zero. The median, not a low quantile: the calibration's O_in is a mean
  over the NULL procedure's calls, and where the hook cost is spread
  (emulated machines), the same session's mean sits far above the shortest
  leaves yet at their median (figures in docs/overhead.md).
* O_out: the gap between two consecutive siblings holds the first one's
  exit hook after its rettime and the second one's entry hook before its
  calltime: one O_out, with the caller's glue between. The same median.
* O_in + O_out: a root call's corrected duration, its measured one less
  the hook cost of its D descendants (and its own O_in, its interrupt
  subtrees' O_out), cannot be below zero. Counted exactly over the clean
  root calls with descendants (those without are leaves), with the formula
  of ftflame/correct/corrections.py (the hook level's per-call adjustment
  aside); one call's hook cost may sit FIT_SLACK below the mean.

Values past a bound by more than FIT_SLACK (or root calls below zero past
ROOT_FRACTION of them) make a misfit. The report then uses a calibration
that fits: the in-trace estimate (measured on this trace), else the
calibration scaled down until it fits; --strict-calibration keeps the
misfit and says every corrected figure rests on it.
"""
from __future__ import annotations

import os
import re
from typing import Callable

import numpy as np

from ftflame.model.profile import SAMPLE_GAP, SAMPLE_IRQ, Calibration, Profile

FIT_SLACK = 0.05  # a mean hook cost may sit this far above the median leaf / gap
ROOT_FRACTION = 0.001  # root calls below zero tolerated (a lone odd call in a long trace)
MIN_SAMPLES = 50  # fewer leaves (gaps) than this: that bound is not checked
# How far O_in and O_out move between recording sessions of the same kernel
# (docs/overhead.md "Fit check"): added to the intervals of a calibration
# made in another session than the trace.
CARRY_FRACTION = 0.05


def kernel_release(uname) -> str | None:
    """The release in a uname line ("Linux host 6.12.117+deb12-amd64 x86_64"),
    or the release itself ("6.1")."""
    m = re.search(r"(?<![\w.])(\d+\.\d+\S*)", uname) if isinstance(uname, str) else None
    return m.group(1) if m else None


def other_kernel(cal: Calibration, p: Profile) -> dict | None:
    """{calibration, trace: kernel release} when a calibration file was made
    on another kernel than the trace's (None when the same, or unknown): the
    hook cost is the kernel's code, and moves with its version and build."""
    d = cal.details if isinstance(cal.details, dict) else {}
    if not cal.source.startswith("file:"):
        return None
    theirs, ours = kernel_release(d.get("kernel")), kernel_release(p.trace.kernel)
    if theirs is None or ours is None or theirs == ours:
        return None
    return {"calibration": theirs, "trace": ours}



def _median(kind: str, p: Profile):
    """(median, samples) of the task-context leaf durations or sibling gaps
    (the core's exact 1-ns histograms, pooled over CPUs; samples past the
    histogram's range count above it), (None, n) with too few."""
    acc, over = None, 0
    for (k, ctx, _cpu), (hist, o) in sorted(p.overhead_samples.items()):
        if k == kind and ctx == "task" and len(hist):
            h = hist.astype(np.int64)
            if acc is None:
                acc = h.copy()
            elif len(h) > len(acc):
                h[:len(acc)] += acc
                acc = h
            else:
                acc[:len(h)] += h
            over += int(o)
    n = (int(acc.sum()) if acc is not None else 0) + over
    if acc is None or n < MIN_SAMPLES:
        return None, n
    cum = np.cumsum(acc)
    rank = int(np.ceil(n * 0.5))
    if rank > cum[-1]:  # the median is past the histogram's range: no bound worth the name
        return None, n
    return int(np.searchsorted(cum, rank, side="left")), n


def bounds(p: Profile, irqs: str = "exclude") -> dict:
    """The trace's bounds on the hook cost, computed once per Profile:
    leaf and gap medians and, per clean root call, its corrected duration
    as X - a*O_in - b*O_out."""
    return p.views.get(("fit_bounds", irqs), lambda: _bounds(p, irqs))


def _bounds(p: Profile, irqs: str) -> dict:
    from ftflame.correct.corrections import detect_nosleep

    leaf, n_leaf = _median("leaf", p)
    gap, n_gap = _median("gap", p)
    s = p.samples
    if len(s):
        col = {k: p.scol(k).astype(np.float64) for k in
               ("dur", "desc", "irq", "offcpu", "irq_calls", "irq_roots", "sched", "sched_calls",
                "sched_outs", "offcpu_calls")}
        flags = p.scol("flags")
        # calls without descendants are leaves: the leaf bound judges them
        keep = ((flags & SAMPLE_GAP) == 0) & (col["desc"] > 0)
        s_irq = ((flags & SAMPLE_IRQ) != 0)[keep]
        c = {k: v[keep] for k, v in col.items()}
        x, a, b = c["dur"].copy(), np.ones(int(keep.sum())), np.zeros(int(keep.sum()))
        if p.counters.get("switches") and detect_nosleep(p) is None:
            # the off-CPU time, the switch work and the calls switched out go
            # out together (corrections.correct)
            x -= c["offcpu"] + c["sched"]
            a -= c["sched_calls"] + c["offcpu_calls"]
            b -= c["sched_outs"] + c["offcpu_calls"]
        task_desc = c["desc"] + (c["irq_calls"] if irqs == "include" else 0.0)
        a_task, b_task = a + task_desc, b + task_desc
        if irqs == "exclude":
            x_task = x - c["irq"]
            b_task = b_task + c["irq_roots"]
        else:
            x_task = x
        roots = (np.where(s_irq, x, x_task), np.where(s_irq, a + c["desc"], a_task),
                 np.where(s_irq, b + c["desc"], b_task))
    else:
        roots = (np.zeros(0), np.zeros(0), np.zeros(0))
    return {"leaf_median_ns": leaf, "leaves": n_leaf, "gap_median_ns": gap, "gaps": n_gap,
            "roots": roots}


def _below_zero(b: dict, o_in: float, o_out: float) -> int:
    x, a, c = b["roots"]
    hooks = a * o_in + c * o_out
    # the hook cost is a mean: one call's own may be FIT_SLACK below it
    return int(np.count_nonzero(x - hooks < -FIT_SLACK * np.abs(hooks) - 0.5))


def _root_limit(n: int) -> int:
    """Root calls below zero a fitting calibration may leave."""
    return int(np.floor(n * ROOT_FRACTION))


def check(p: Profile, o_in: float, o_out: float, irqs: str = "exclude") -> dict:
    """The fit of hook costs (o_in, o_out) to p: ok, the reasons when not,
    and the bounds' figures."""
    b = bounds(p, irqs)
    reasons: list = []
    out = {"ok": True, "reasons": reasons}
    for name, val, key, n_key, what in (
            ("O_in", o_in, "leaf_median_ns", "leaves", "leaf calls"),
            ("O_out", o_out, "gap_median_ns", "gaps", "sibling gaps")):
        bound = b[key]
        label = name.lower() + "_max_ns"
        out[label] = None if bound is None else round(bound * (1 + FIT_SLACK), 1)
        out[n_key] = b[n_key]
        if bound is not None and val > bound * (1 + FIT_SLACK):
            reasons.append(f"{name} {val:,.1f} ns is above the median of the trace's {b[n_key]:,} "
                           f"{what} ({bound:,} ns, +{FIT_SLACK:.0%}: {bound * (1 + FIT_SLACK):,.1f} ns)")
    n_roots = len(b["roots"][0])
    neg = _below_zero(b, o_in, o_out)
    out["root_calls"] = n_roots
    out["root_calls_below_zero"] = neg
    if neg > _root_limit(n_roots):
        reasons.append(f"{neg:,} of {n_roots:,} clean root calls with descendants would take less than "
                       f"no time (by more than {FIT_SLACK:.0%} of their hook cost)")
    out["ok"] = not reasons
    return out


def _scaled_to_fit(p: Profile, o_in: float, o_out: float, irqs: str) -> float:
    """The largest k in [0, 1] for which (k O_in, k O_out) fits p."""
    if check(p, 0.0, 0.0, irqs)["reasons"]:
        return 0.0
    lo, hi = 0.0, 1.0
    for _ in range(40):  # to 1e-12 of the values
        mid = (lo + hi) / 2
        if check(p, o_in * mid, o_out * mid, irqs)["ok"]:
            lo = mid
        else:
            hi = mid
    return lo


def same_session(cal: Calibration, trace_path: str | None) -> bool:
    """Was the calibration made in the trace's recording session? Made from
    recordings in the trace's folder (the folder of its own file where it
    does not say, or names them relative to where it was made)."""
    if not cal.source.startswith("file:") or not trace_path:
        return True  # measured on this trace, or given: nothing carried
    folder = os.path.dirname(os.path.abspath(trace_path))
    traces = cal.details.get("traces") if isinstance(cal.details, dict) else None
    if isinstance(traces, dict) and traces and all(os.path.isabs(str(t)) for t in traces.values()):
        return {os.path.dirname(str(t)) for t in traces.values()} == {folder}
    return os.path.dirname(os.path.abspath(cal.source[5:])) == folder


def fitted(p: Profile, cal: Calibration, trace_path: str | None = None, strict: bool = False,
           irqs: str = "exclude",
           estimate: Callable[[Profile], Calibration | None] | None = None) -> Calibration:
    """The calibration the report applies, with its fit (Calibration.fit):
    cal when it fits the trace (or strict), else one that fits: the
    in-trace estimate (``estimate``, given by calibration.choose, which
    imports this module) when it fits, else cal scaled down."""
    from dataclasses import replace

    if not cal.applied:
        return cal
    kernels = other_kernel(cal, p)
    # (another kernel is another session: its intervals widen as carried ones)
    carried = not same_session(cal, trace_path) or kernels is not None
    fit = dict(check(p, cal.o_in_ns, cal.o_out_ns, irqs), checked=_label(cal),
               checked_o_in_ns=round(cal.o_in_ns, 1), checked_o_out_ns=round(cal.o_out_ns, 1),
               carried=carried)
    if kernels is not None:
        fit["other_kernel"] = kernels
        fit["kernel_note"] = (f"{_label(cal)} was made on kernel {kernels['calibration']}, the trace on "
                              f"{kernels['trace']}: the hook cost moves with the kernel's version and "
                              "build; calibrate on the trace's kernel (collect/calibrate.sh)")
    if carried:
        fit["carry_fraction"] = CARRY_FRACTION
    if fit["ok"]:
        fit["used"] = "the calibration checked"
        return replace(cal, fit=fit)
    if strict:
        fit["used"] = "the calibration checked, kept (--strict-calibration): every corrected figure rests on it"
        fit["kept"] = True
        return replace(cal, fit=fit)
    est = estimate(p) if estimate is not None else None
    if est is not None and cal.source != "in-trace" and check(p, est.o_in_ns, est.o_out_ns, irqs)["ok"]:
        fit["used"] = "the in-trace estimate (measured on this trace; it fits)"
        return replace(est, fit=fit)
    k = _scaled_to_fit(p, cal.o_in_ns, cal.o_out_ns, irqs)
    fit["used"] = f"the calibration checked, scaled by {k:.3f} to fit (no in-trace estimate fits)"
    fit["scale"] = round(k, 4)
    details = dict(cal.details) if isinstance(cal.details, dict) else {}
    return replace(cal, o_in_ns=cal.o_in_ns * k, o_out_ns=cal.o_out_ns * k,
                   method=cal.method + ", scaled to fit", details=details, fit=fit)


def _label(cal: Calibration) -> str:
    if cal.source.startswith("file:"):
        return "file " + os.path.basename(cal.source[5:])
    return {"in-trace": "in-trace estimate"}.get(cal.source, cal.source)


def words(cal: Calibration) -> str | None:
    """The one line every output prints about the fit (None: not checked)."""
    f = cal.fit if isinstance(getattr(cal, "fit", None), dict) else None
    if f is None:
        return None
    bits = []
    for name, key, what in (("O_in", "o_in_max_ns", "leaf calls"), ("O_out", "o_out_max_ns", "sibling gaps")):
        if f.get(key) is not None:
            bits.append(f"{name} <= {f[key]:,.1f} ns (median of {what} +{FIT_SLACK:.0%})")
        else:
            bits.append(f"{name} unbounded (too few {what})")
    bits.append(f"{f['root_calls_below_zero']:,} of {f['root_calls']:,} root calls with descendants "
                "below zero")
    if f["ok"]:
        return f"fit: the trace allows {', '.join(bits[:2])}; {bits[2]}: the calibration fits"
    why = "; ".join(f["reasons"])
    return (f"MISFIT: {f['checked']} (O_in {f['checked_o_in_ns']:,.1f}, O_out "
            f"{f['checked_o_out_ns']:,.1f} ns) does not fit this trace: {why}; used: {f['used']}")
