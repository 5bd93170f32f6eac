"""How far the calibration's own uncertainty moves a corrected figure
(docs/overhead.md "Uncertainty").

A corrected inclusive sum is linear in the hook costs: a call path's clean
calls, D recorded descendants and R interrupt subtrees take out
calls*O_in + D*(O_in + O_out) + R*O_out (less what the switch work and the
calls recorded while switched out give back: they go with the off-CPU time). Each cost has a 95% interval in
calibration.json (bootstrap over the calibration's calls); its half-width,
times what it multiplies, summed, is the half-width of the corrected sum's
interval (added, not in quadrature: the three estimates share their samples,
so their errors need not be independent). The hook level (ftflame/correct/hooklevel.py)
is read in whole nanoseconds from the trace and adds nothing here.

To that sampling half-width each corrected statistic adds the model's own
error, measured on the truth pairs of the trace's kernel family
(ftflame/correct/modelerror.py): the largest relative miss seen, times the
figure. Where no pair of that family exists the interval is the sampling
one alone and says so (made_of): it is then too narrow by an unknown amount.

Without intervals (the in-trace estimate, values given on the command line,
no calibration) a figure has none: None, and the outputs print none, saying
why (made_of).
"""
from __future__ import annotations

import numpy as np

from ftflame.model.profile import SAMPLE_GAP, SAMPLE_IRQ, Calibration, OffCpu, Profile


def _half_width(details: dict, key: str) -> float | None:
    obj = details.get(key)
    ci = obj.get("ci95_ns") if isinstance(obj, dict) else None
    try:
        lo, hi = float(ci[0]), float(ci[1])  # type: ignore[index]  # (None: the TypeError below)
    except (TypeError, ValueError, IndexError):
        return None
    return (hi - lo) / 2.0 if np.isfinite(lo) and np.isfinite(hi) and hi >= lo else None


def cost_half_widths(cal: Calibration) -> tuple | None:
    """(O_in, O_in + O_out, O_out) 95% half-widths, ns, or None when the
    calibration has no intervals for them (or values were replaced)."""
    d = cal.details if isinstance(cal.details, dict) else {}
    if not cal.applied or "command_line" in d:
        return None
    from ftflame.correct.calibration import intervals

    # the intervals of the values used (the root-only O_in's on a root-only
    # trace, scaled with the values): none where a value lies outside its
    # file's interval (edited, or set to a fallback)
    ci, _ = intervals(cal)
    if "o_in" not in ci or "o_out" not in ci:
        return None
    h_in, h_out = ((ci[k][1] - ci[k][0]) / 2.0 for k in ("o_in", "o_out"))
    h_sum = _half_width(d, "o_in_plus_o_out")
    if h_sum is None:
        return None
    fit = cal.fit if isinstance(cal.fit, dict) else {}
    h_sum *= float(fit.get("scale", 1.0))
    if fit.get("carried"):
        # made in another recording session: the hook cost moves between
        # sessions by up to this share of itself (ftflame/correct/fit.py)
        k = float(fit.get("carry_fraction", 0.0))
        h_in, h_out = h_in + k * cal.o_in_ns, h_out + k * cal.o_out_ns
        h_sum += k * (cal.o_in_ns + cal.o_out_ns)
    return h_in, h_sum, h_out


def root_half_widths(p: Profile) -> np.ndarray | None:
    """Per root call (the sample table): the 95% half-width, ns, of its
    corrected duration; None without calibration intervals."""
    c = p.corrected
    hw = cost_half_widths(p.calibration) if c is not None else None
    if hw is None:
        return None
    h_in, h_sum, h_out = hw
    desc = p.scol("desc").astype(np.float64)
    ones = np.ones(len(desc))
    ones, desc = _less_switch_hooks(c, ones, desc, *(p.scol(k) for k in ("sched_calls", "sched_outs", "offcpu_calls")))
    if c.irqs == "include":
        return np.abs(ones) * h_in + (desc + p.scol("irq_calls")) * h_sum
    return np.abs(ones) * h_in + desc * h_sum + p.scol("irq_roots") * h_out


def _less_switch_hooks(c, calls, desc, sched_calls, sched_outs, offcpu_calls):
    """(the calls charged O_in alone, the descendants charged O_in + O_out)
    once the switch work and the calls recorded while switched out are out
    with the off-CPU time (corrections.switch_work): the switch work gives
    back sched_calls x O_in + sched_outs x O_out = sched_outs x (O_in + O_out)
    + (sched_calls - sched_outs) x O_in, the switched-out calls their O_in + O_out."""
    if c.offcpu is not OffCpu.REMOVED:
        return calls, desc
    sc, so, oc = (np.asarray(x, dtype=np.float64) for x in (sched_calls, sched_outs, offcpu_calls))
    return calls - (sc - so), desc - so - oc


# ---- every corrected figure's interval, computed once beside the Profile ----


def node_half_widths(p: Profile, detached: bool = False) -> np.ndarray | None:
    """Per node row: the 95% half-width of its corrected inclusive sum over
    its clean calls (what correct() takes out, with each cost replaced by
    its half-width), None without calibration intervals. detached: over
    the detached calls only (corrections.detached)."""
    from ftflame.correct import corrections
    from ftflame.model.profile import NODE_IRQ

    c = p.corrected
    hw = cost_half_widths(p.calibration) if c is not None else None
    if hw is None:
        return None
    h_in, h_sum, h_out = hw
    get = corrections.detached if detached else corrections.clean
    calls, desc = get(p, "calls"), get(p, "desc")
    calls, desc = _less_switch_hooks(c, calls, desc, *(get(p, k) for k in ("sched_calls", "sched_outs",
                                                                           "offcpu_calls")))
    own = np.abs(calls) * h_in + desc * h_sum
    if c.irqs == "exclude":
        R = p.col("det_irq_roots", dtype=np.float64) if detached else corrections.irq_roots_inside(p)
        task = own + R * h_out
    else:
        task = own + get(p, "irq_calls") * h_sum
    return np.where((p.col("flags") & NODE_IRQ) != 0, own, task)


def model_error(p: Profile, leave_out: str | None = None) -> dict | None:
    """The model's error measured on the truth pairs of the trace's kernel
    family (ftflame/correct/modelerror.py), None where none was measured."""
    from ftflame.correct import modelerror

    return modelerror.for_kernel(p.trace.kernel, leave_out)


def made_of(p: Profile) -> dict | None:
    """What every corrected figure's 95% interval is made of, the one label
    every output prints (text legend, JSON intervals.made_of, HTML
    tooltips): {"calibration_sampling": bool, "model_error": {family, pairs,
    mean, p50, p90} or None, "text": the sentence}; None for a trace not
    corrected."""
    return p.views.get("interval_made_of", lambda: _made_of(p))


def _made_of(p: Profile) -> dict | None:
    c = p.corrected
    if c is None or not p.calibration.applied:
        return None
    from ftflame.correct import modelerror

    fam = modelerror.family(p.trace.kernel)
    if cost_half_widths(p.calibration) is None:
        why = ("the in-trace estimate has" if p.calibration.source == "in-trace"
               else "values given on the command line have" if "command_line" in (p.calibration.details or {})
               else "a calibration without intervals has")
        return {"calibration_sampling": False, "model_error": None, "kernel_family": fam,
                "text": f"no 95% intervals: {why} no sampling spread, and the model's error "
                        "was measured only with empty-call calibrations (docs/overhead.md \"Uncertainty\")"}
    m = model_error(p)
    if m is None:
        text = ("95% intervals = the calibration's sampling spread ONLY: no truth pair of kernel "
                + (fam or "(unknown)") + " measured the model's own error, so they are too narrow "
                "by an unknown amount (docs/overhead.md \"Uncertainty\")")
    else:
        text = (f"95% intervals = the calibration's sampling spread + the model's own error on "
                f"kernel {m['family']}, the largest miss over {len(m['pairs'])} truth pairs "
                f"(mean {m['mean'] * 100:.1f}%, p50 {m['p50'] * 100:.1f}%, p90 {m['p90'] * 100:.1f}% "
                "of the figure; sums as the mean, min as p50, p99 and max as p90; "
                "docs/overhead.md \"Uncertainty\")")
    return {"calibration_sampling": True, "kernel_family": fam,
            "model_error": None if m is None else {k: m[k] for k in ("family", "pairs", "mean", "p50", "p90")},
            "text": text}


def _add_model(vals, half: list, m: dict | None) -> list:
    """half (corrections.STAT_NAMES order) with the model's error times each
    figure added (modelerror.OF_STAT says which measured statistic's)."""
    if m is None:
        return half
    from ftflame.correct import corrections, modelerror

    return [np.asarray(h, dtype=np.float64) + m[modelerror.OF_STAT[name]] * np.abs(np.asarray(v, dtype=np.float64))
            for name, h, v in zip(corrections.STAT_NAMES, half, vals)]


def stat_half_widths(p: Profile, model: bool = True, leave_out: str | None = None) -> dict | None:
    """{(level, kind): 7 arrays, corrections.STAT_NAMES order}, level
    "nodes" or "functions", kind "incl" or "excl": the 95% half-width of
    each corrected statistic, aligned with corrected_stats(p)[level, kind];
    None without intervals.

    Sums and means are linear in the hook costs: the half-width of the sum
    (node_half_widths; a path's self time: its own minus its counted
    children's, calls x O_in + n x O_out + its own R x O_out), and that
    over the clean calls. Exact rows (root calls, every call's corrected
    time known): each statistic computed again from the calls' values moved
    by their own half-widths, all down and all up (the costs move together),
    half the distance between the two. Estimated rows (the raw ones scaled
    by corrected mean / raw mean): the mean's relative half-width, which the
    scale carries.

    model: with the model's own error added (made_of says what is in it);
    leave_out: a truth pair's name left out of it (leave-one-pair-out)."""
    if leave_out is not None:
        return _stat_half_widths(p, model, leave_out)
    return p.views.get(("stat_half_widths", model), lambda: _stat_half_widths(p, model))


def _stat_half_widths(p: Profile, model: bool = True, leave_out: str | None = None) -> dict | None:
    from ftflame.correct import corrections

    hw_incl = node_half_widths(p)
    stats = corrections.corrected_stats(p)
    if hw_incl is None or stats is None:
        return None
    c = p.corrected
    parent = p.col("parent")
    counted = corrections.counted_children(p, c.irqs)
    # a detached call's interval is in no kept caller's (corrections._clamp_top_down)
    attached = hw_incl - node_half_widths(p, True) if corrections.has_detached(p) else hw_incl
    kids = np.bincount(parent[counted], weights=attached[counted], minlength=p.nrows)
    del attached
    hw_excl = np.maximum(hw_incl - kids, 0.0)
    hw_call = root_half_widths(p)
    ft = p.functions

    def per_function(hw):
        return np.bincount(p.col("func"), weights=hw, minlength=len(p.funcs))[ft.func_ids]

    none = (corrections.NO_GROUPS, corrections.NO_GROUPS)
    ex_v = corrections.exact_values(p) if hw_call is not None else none
    ex_h = corrections.exact_values(p, hw_call) if hw_call is not None else none
    out = {}
    for level, calls, k in (("nodes", c.calls, 0), ("functions", ft.calls_corr, 1)):
        for kind, hw in (("incl", hw_incl), ("excl", hw_excl)):
            if kind == "excl" and p.hist_excl is None:
                continue  # read without exclusive histograms (the text report): no exclusive statistics
            hw_sum = hw if level == "nodes" else per_function(hw)
            out[level, kind] = _half_widths(stats[level, kind], hw_sum, calls, ex_v[k], ex_h[k])
    m = model_error(p, leave_out) if model else None
    return {key: _add_model(stats[key][0], half, m) for key, half in out.items()}


def _half_widths(stats, hw_sum, calls, ex_vals, ex_hws) -> list:
    """stat_half_widths for one table (see there); ex_vals, ex_hws:
    exact_values' Groups of the same rows, of the values and of their
    half-widths."""
    from ftflame.correct import corrections

    cols, _, ex, _ = stats
    n = np.asarray(calls, dtype=np.float64)
    hw_mean = np.divide(hw_sum, n, out=np.zeros(len(n)), where=n > 0)
    rel = np.divide(hw_mean, cols[3], out=np.zeros(len(n)), where=cols[3] > 0)
    half = [hw_sum] + [cols[j] * rel for j in (1, 2)] + [hw_mean] + [cols[j] * rel for j in (4, 5, 6)]
    if len(ex) and len(ex_vals):
        # the rows of ex are the groups _exact_stats keeps (every clean call's value known)
        corr = np.asarray(cols[0], dtype=np.float64)
        rows, up = corrections._exact_stats(corr + hw_sum, calls, ex_vals.with_vals(ex_vals.vals + ex_hws.vals))
        _, down = corrections._exact_stats(np.maximum(corr - hw_sum, 0.0), calls,
                                           ex_vals.with_vals(np.maximum(ex_vals.vals - ex_hws.vals, 0.0)))
        if len(rows):
            spread = (up - down) / 2.0
            for j in (1, 2, 4, 5, 6):  # min, max, percentiles; sum and mean are linear
                half[j] = half[j].copy()
                half[j][rows] = spread[:, j]
    return [np.asarray(h, dtype=np.float64) for h in half]


def operation_half_widths(p: Profile, rows=None) -> list | None:
    """Per row of operations.operation_table(p) (or of rows, e.g.
    operations.root_table(p)): {"mean", "p50", "p90", "p99", "max"} 95%
    half-widths over its clean calls (as stat_half_widths does for exact
    rows), None without intervals or rows."""
    from ftflame.correct.operations import operation_table, sample_roots, spread_of

    rows = operation_table(p) if rows is None else (rows or None)
    hw = root_half_widths(p) if len(p.samples) else None
    if rows is None or hw is None:
        return None
    clean = (p.scol("flags") & SAMPLE_GAP) == 0
    root, op = sample_roots(p), p.scol("op")
    corr = p.corrected.sample_dur
    index = {name: i for i, name in enumerate(p.funcs)}
    irq = (p.scol("flags") & SAMPLE_IRQ) != 0
    model = model_error(p)
    out = []
    for r in rows:
        m = clean & (root == index[r.root]) & (op == r.op)
        if r.irq_calls and r.irq_calls == r.calls:  # a row of irq root calls alone (root_table)
            m &= irq
        elif r.irq_calls == 0 and (m & irq).any():  # the task calls of a root also entered in irq context
            m &= ~irq
        out.append(_model_added(spread_of(corr[m], hw[m]), corr[m], model))
    return out


def _model_added(spread: dict, vals: np.ndarray, m: dict | None) -> dict:
    """An operation row's half-widths with the model's error times each figure added."""
    if m is None or not len(vals):
        return spread
    from ftflame.correct import modelerror
    from ftflame.correct.operations import _nearest_rank

    figs = _nearest_rank(np.sort(vals))
    return {k: v + m[modelerror.OF_STAT[k]] * abs(figs[k]) for k, v in spread.items()}
