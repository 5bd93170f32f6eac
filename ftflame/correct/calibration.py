"""Tracer hook cost: empty-call calibration, in-trace estimate, calibration.json.

The overhead model (docs/design.md) needs O_in (hook cost inside a call's own window)
and O_out (hook cost outside it, in the caller's window). Best first:

1. Empty calls (``calibrate_from_traces``), three recordings of NFS NULL RPCs
   with the same kernel and tracer options (``collect/calibrate.sh``):
   NULL.dat (the NULL procedure alone), ROOT.dat (the dispatcher alone) and
   FULL.dat (the dispatcher with its whole graph). The NULL procedure's body
   is empty, so its duration is O_in; the dispatcher's duration with its
   graph minus its duration alone, per recorded descendant, is O_in + O_out.
2. The in-trace estimate (``estimate_in_trace``): low percentiles of leaf
   durations (O_in) and of gaps between consecutive siblings (O_out).
3. Values given on the command line.

Recording mode matters: a function hooked alone (``trace-cmd -l``) goes
through a different hook path than a full graph, so the NULL procedure is
timed in both recordings where it appears: inside FULL.dat (a leaf of the
dispatcher) for O_in of full-graph traces, and alone in NULL.dat for O_in
of root-only traces (every call a root without recorded descendants).
"""
from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ftflame.correct import hooklevel, subbuf
from ftflame.model.errors import InputError
from ftflame.model.profile import NODE_IRQ, SAMPLE_GAP, SAMPLE_IRQ, Calibration, Profile, hist_lower, hist_upper
from ftflame.output import write_atomic
from ftflame.rundir import CALIB_META_FILE, CALIBRATION_FILE
from ftflame.rundir import kind as json_kind

SCHEMA = "ftflame-calibration/1"
BOOTSTRAP = 2000
SEED = 20240501  # fixed: the same traces give the same file

# in-trace estimate
IN_TRACE_PERCENTILE = 1.0  # robust floor: the hook cost without the callee's body / caller's glue
IN_TRACE_MIN_SAMPLES = 200


# ---- helpers ---------------------------------------------------------------

def _read(trace) -> Profile:
    if isinstance(trace, Profile):
        return trace
    import ftflame.parse as parse

    return parse.read(trace)


def _bootstrap(values: np.ndarray, stat=np.median, n: int = BOOTSTRAP, rng=None) -> np.ndarray:
    rng = rng if rng is not None else np.random.default_rng(SEED)
    idx = rng.integers(0, len(values), size=(n, len(values)))
    return stat(values[idx], axis=1)


def _ci(boot: np.ndarray, within=None) -> list:
    """95% percentile interval of bootstrap estimates; `within` (lo, hi): the
    range of the samples the estimate is a mean of, which it cannot leave."""
    lo, hi = np.percentile(boot, [2.5, 97.5])
    if within is not None:
        lo, hi = np.clip([lo, hi], within[0], within[1])
    return [round(float(lo), 1), round(float(hi), 1)]


# Far-out samples: beyond both OUTLIER_FACTOR x the median (or 1/OUTLIER_FACTOR
# of it) and 3 interquartile ranges past the quartiles. Hook costs vary by
# small factors (a ring-buffer page switch adds about a third); an interrupt
# or a sleep inside an empty call adds many times its duration.
OUTLIER_FACTOR = 3.0


def _outliers(v: np.ndarray) -> np.ndarray:
    """Mask of the far-out samples of v."""
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    iqr = q3 - q1
    hi = max(q3 + 3 * iqr, OUTLIER_FACTOR * med)
    lo = min(q1 - 3 * iqr, med / OUTLIER_FACTOR)
    return (v < lo) | (v > hi)


def _robust_mean(v: np.ndarray, what: str, checks: list, rng=None, exact_mean=None):
    """The mean of the samples without far-out ones (corrections subtract
    mean costs, rare ring-buffer costs included; an interrupt in an empty
    call is no hook cost), its 95% bootstrap interval (inside the kept
    samples' range), and a check on `checks` when samples were left out or
    the tail is heavy. exact_mean: the mean known exactly, for v known only
    approximately (histogram values): used when no sample is left out (it
    cannot leave them out). Returns (summary dict, bootstrap)."""
    v = np.asarray(v, dtype=np.float64)
    out = _outliers(v) if len(v) > 1 else np.zeros(len(v), dtype=bool)
    kept = v[~out]
    mean = float(kept.mean()) if out.any() or exact_mean is None else float(exact_mean)
    # approximate values (histogram buckets) carry the exact mean's offset, and
    # so does the range the interval is kept inside: unshifted, a mean 10 ns
    # under its values' bucket (6.12's O_in 709.7 ns, every leaf in the 719.5
    # bucket) got the interval [719.5, 719.5], which does not hold the value
    shift = mean - float(kept.mean())
    boot = _bootstrap(kept, np.mean, rng=rng) + shift if len(kept) > 1 \
        else np.array([mean])
    med = float(np.median(v))
    obj = {"samples": int(len(v)), "mean_ns": round(mean, 1), "median_ns": round(med, 1),
           "min_ns": int(round(v.min())), "max_ns": int(round(v.max())),
           "ci95_ns": _ci(boot, (kept.min() + shift, kept.max() + shift)),
           "outliers": int(out.sum())}
    if out.any():
        far = v[out]
        worst = float(far[np.argmax(np.abs(far - med))])
        checks.append(f"{what}: {int(out.sum())} of {len(v)} samples are far outliers (up to "
                      f"{worst:,.0f} ns, median {med:,.0f} ns), left out of the mean: heavy tail "
                      "(interrupts, off-CPU time, a noisy machine?); record again to confirm")
        obj["outliers_max_ns"] = int(round(far.max()))
    if med and abs(mean - med) > 0.1 * med:
        checks.append(f"{what}: mean {mean:.1f} ns and median {med:.1f} ns differ by more than "
                      "10%: heavy tail or outliers (a noisy machine, cold caches, interrupts?)")
    return obj, boot


def _root_values(p: Profile, what: str):
    """(function, per-call values dur - irq - off, descendants, sub-buffer
    moves: ftflame/correct/subbuf.py) of the clean task-context root calls of
    the trace's most common root."""
    s = p.samples
    if len(s) == 0:
        raise InputError(p.trace.source, f"no completed root calls ({what})",
                         "was the calibration workload running while recording?")
    ok = ((p.scol("flags") & (SAMPLE_GAP | SAMPLE_IRQ)) == 0)
    funcs = [p.funcs[f] for f in p.col("func")[p.scol("node")].tolist()]
    counts = Counter(f for f, k in zip(funcs, ok.tolist()) if k)
    if not counts:
        raise InputError(p.trace.source, f"every root call spans lost events ({what})",
                         "record again with a bigger buffer (trace-cmd record -b)")
    func = counts.most_common(1)[0][0]
    sel = ok & np.array([f == func for f in funcs])
    v = (p.scol("dur") - p.scol("irq") - p.scol("offcpu"))[sel].astype(np.float64)
    return func, v, p.scol("desc", sel).astype(np.float64), p.scol("subbufs", sel).astype(np.float64)


def _leaf_in_graph(p: Profile, func: str, checks: list, rng):
    """Duration of `func` as a leaf inside a full-graph recording (its clean
    calls without recorded descendants): (summary, bootstrap) as
    _robust_mean's, median from the node histograms (to 1/32 of the value,
    exact where all calls share one value); None when it is no leaf there."""
    from ftflame.correct.corrections import clean

    if func not in p.funcs:
        return None
    fid = p.funcs.index(func)
    # a leaf: no recorded descendants (interrupts taken inside it are not
    # descendants; their time is taken out below)
    rows = np.nonzero((p.col("func") == fid) & ((p.col("flags") & NODE_IRQ) == 0)
                      & (p.col("desc") == 0))[0]
    calls = clean(p, "calls")[rows]
    if len(rows) == 0 or calls.sum() == 0:
        return None
    total = (clean(p, "incl") - clean(p, "irq") - clean(p, "offcpu"))[rows].sum()
    buckets, counts = [], []
    for r in rows.tolist():
        b, c = p.hist_incl.row(r)
        buckets.append(b)
        counts.append(c)
    b = np.concatenate(buckets)
    c = np.concatenate(counts).astype(np.int64)
    lo = int(p.col("incl_min")[rows].min())
    hi = int(p.col("incl_max")[rows].max())
    mid = np.clip((hist_lower(b) + hist_upper(b) - 1) / 2.0, lo, hi)
    order = np.argsort(mid)
    mid, c = mid[order], c[order]
    n = int(calls.sum())
    # per-call values from the histograms (to 1/32; every call, interrupts
    # inside included): they find far outliers and give the spread; the mean
    # is exact (clean calls, interrupts and off-CPU time out) unless some
    # calls had to be left out
    vals = np.repeat(mid, c)
    obj, boot = _robust_mean(vals, f"O_in ({func} as a leaf)", checks, rng=rng,
                             exact_mean=total / n)
    obj.update(samples=n, min_ns=lo, max_ns=hi)
    return obj, boot


def _tracer_options(p: Profile) -> dict:
    t = p.trace
    return {"trace_clock": t.clock, "trace_cmd": t.tracer_version, "file_version": t.file_version,
            "retval_field": t.has_retval, "args_field": t.has_args,
            "sched_switch_events": bool(p.counters.get("switches")),
            "graph": "root-only" if _root_only(p) else "full"}


def _root_only(p: Profile) -> bool:
    """Every call a root without recorded descendants (trace-cmd -l FUNC -g FUNC)."""
    return p.nrows > 0 and int(p.col("desc").sum()) == 0 and int(p.col("irq_calls").sum()) == 0


# ---- 1. empty calls ----------------------------------------------------------

def calibrate_from_traces(null, root, full) -> dict:
    """The calibration dict (calibration.json) from the three empty-call
    recordings: paths or Profiles."""
    pn, pr, pf = _read(null), _read(root), _read(full)
    checks = []
    null_func, vn, _, sbn = _root_values(pn, "NULL procedure trace")
    disp, vr, dr, _ = _root_values(pr, "dispatcher root-only trace")
    if dr.sum():
        checks.append(f"{pr.trace.source}: the dispatcher {disp} has recorded descendants; "
                      "expected it hooked alone (trace-cmd -g F -l F)")
    vf, df, level, sb = _dispatcher_with_graph(pf, disp, pr.trace.source)
    # one generator, drawn in this order: the same traces give the same file
    rng = np.random.default_rng(SEED)
    both = _o_in_plus_o_out(disp, vr, vf, df, checks, rng)
    null_alone, boot_null = _robust_mean(vn, "O_in root-only", checks, rng=rng)
    null_alone["source"] = (f"{null_func} alone ({os.path.basename(pn.trace.source)}): "
                            "mean duration of the clean calls")
    leaf = _leaf_in_graph(pf, null_func, checks, rng)
    est = estimate_in_trace(pf)
    o_in, o_in_obj, boot_in = _o_in(pf, null_func, disp, leaf, est, (null_alone, boot_null),
                                    len(both.vf), checks)
    o_out, o_out_obj = _o_out(both, o_in, o_in_obj, boot_in, disp, est, checks)
    _same_conditions(pn, pr, pf, checks)
    # the sub-buffer moves over the calls the mean kept (far outliers out)
    kept = ~_outliers(vf) if len(vf) > 1 else np.ones(len(vf), dtype=bool)
    alone = (vn, sbn, os.path.basename(pn.trace.source)) if pn.counters.get("subbuf_starts", 0) else None
    moves = (subbuf.calibration_object(vf[kept], df[kept], sb[kept], os.path.basename(pf.trace.source), checks,
                                       alone) if pf.counters.get("subbuf_starts", 0) else None)
    return {
        "schema": SCHEMA,
        "o_in_ns": round(float(o_in), 1),
        "o_out_ns": round(float(o_out), 1),
        "method": "empty-calls",
        "o_in": o_in_obj,
        "o_out": o_out_obj,
        "o_in_plus_o_out": _o_sum_object(both, pf, pr),
        "o_in_root_only": null_alone,
        "hook_level": level,
        **({"subbuf": moves} if moves else {}),
        "null_procedure": null_func,
        "dispatcher": disp,
        "kernel": pf.trace.kernel,
        "clock": pf.trace.clock,
        "tracer_options": _recorded_options(pf),
        "traces": {"null": pn.trace.source, "dispatch_root": pr.trace.source,
                   "dispatch_full": pf.trace.source},
        "in_trace_estimate": ({"o_in_ns": est.o_in_ns, "o_out_ns": est.o_out_ns,
                               "of": os.path.basename(pf.trace.source)} if est else None),
        "checks": checks,
    }


def _dispatcher_with_graph(pf: Profile, disp: str, root_source: str):
    """(per-call values dur - irq - off, recorded descendants, hook level:
    ftflame/correct/hooklevel.py, sub-buffer moves: ftflame/correct/subbuf.py)
    of the dispatcher's clean root calls with
    descendants in the full-graph trace; the quiet ones (no interrupt, no
    switch) when there are enough."""
    s = pf.samples
    if len(s) == 0:
        raise InputError(pf.trace.source, "no completed root calls (dispatcher full-graph trace)")
    funcs = [pf.funcs[f] for f in pf.col("func")[pf.scol("node")].tolist()]
    sel = ((pf.scol("flags") & (SAMPLE_GAP | SAMPLE_IRQ)) == 0) & np.array([f == disp for f in funcs])
    sel &= pf.scol("desc") > 0
    if not sel.any():
        raise InputError(pf.trace.source, f"the dispatcher {disp} (the root of {root_source}) "
                         "has no complete root calls with descendants here",
                         "give NULL.dat ROOT.dat FULL.dat in this order, from one calibration run")
    # calls the tracer saw no interrupt or switch in are cleanest; use them
    # when there are enough (an irq's own O_out would otherwise stay in)
    quiet = sel & (pf.scol("irq_roots") == 0) & (pf.scol("offcpu") == 0)
    if quiet.sum() >= 10:
        sel = quiet
    vf = (pf.scol("dur") - pf.scol("irq") - pf.scol("offcpu"))[sel].astype(np.float64)
    level = hooklevel.calibration_level(pf.scol("leaf_min", sel), pf.scol("leaves", sel),
                                        os.path.basename(pf.trace.source))
    return vf, pf.scol("desc", sel).astype(np.float64), level, pf.scol("subbufs", sel).astype(np.float64)


@dataclass(frozen=True, eq=False, repr=False)
class _PerDescendant:
    """O_in + O_out: (dispatcher with its graph - dispatcher alone) per
    recorded descendant, with what it was computed from."""
    mean: float
    median: float
    boot: np.ndarray  # bootstrap means
    per_call: np.ndarray  # each full-graph call's own figure
    vf: np.ndarray  # full-graph calls kept (far outliers out)
    df: np.ndarray  # their recorded descendants
    root_mean: float
    root_samples: int
    outliers: int


def _o_in_plus_o_out(disp: str, vr, vf, df, checks: list, rng) -> _PerDescendant:
    # Means, not medians: corrections subtract D x (O_in + O_out) from sums,
    # so they need the mean hook cost, including rare costs such as the ring
    # buffer's switch to a new sub-buffer (about every hundred events). Far
    # outliers (an interrupt or sleep the flags did not show, a noisy host)
    # are left out and reported: see _robust_mean.
    root_obj, boot_root = _robust_mean(vr, f"{disp} alone", checks, rng=rng)
    root_mean = root_obj["mean_ns"]
    full_out = _outliers(vf) if len(vf) > 1 else np.zeros(len(vf), dtype=bool)
    if full_out.any():
        checks.append(f"{disp} with its graph: {int(full_out.sum())} of {len(vf)} calls are far "
                      f"outliers (up to {vf[full_out].max():,.0f} ns, median {np.median(vf):,.0f} "
                      "ns), left out: heavy tail (interrupts, off-CPU time, a noisy machine?)")
        vf, df = vf[~full_out], df[~full_out]
    o_sum = (float(vf.mean()) - root_mean) / float(df.mean())
    idx = rng.integers(0, len(vf), size=(BOOTSTRAP, len(vf)))
    boot_sum = (vf[idx].mean(axis=1) - boot_root) / df[idx].mean(axis=1)
    o_sum_median = float(np.median((vf - float(np.median(vr))) / df))
    if o_sum_median and abs(o_sum - o_sum_median) > 0.1 * abs(o_sum_median):
        checks.append(f"O_in + O_out: mean {o_sum:.1f} ns and median {o_sum_median:.1f} ns differ "
                      "by more than 10%: heavy tail or outliers (a noisy machine, cold caches, "
                      "interrupts?)")
    # o_sum is a weighted mean of the per-call figures: inside their range
    return _PerDescendant(mean=o_sum, median=o_sum_median, boot=boot_sum, per_call=(vf - root_mean) / df,
                          vf=vf, df=df, root_mean=root_mean, root_samples=len(vr),
                          outliers=int(full_out.sum()) + root_obj["outliers"])


def _o_in(pf: Profile, null_func: str, disp: str, leaf, est, alone, full_calls: int, checks: list):
    """(O_in, its calibration.json object, its bootstrap) for full-graph
    traces: the NULL procedure as a leaf of the full graph, else the
    in-trace estimate of that recording, else the NULL procedure alone."""
    if leaf:
        in_graph, boot_in = leaf
        return in_graph["mean_ns"], dict(in_graph, source=(
            f"{null_func} as a leaf of {disp} in the full-graph recording "
            f"({os.path.basename(pf.trace.source)}): mean duration of the clean calls")), boot_in
    if est is not None and est.o_in_ns > 0:
        # Same recording conditions as the graph: better than the NULL
        # procedure hooked alone, whose hook path differs (under emulation it
        # measured 5x the nested cost, and made O_out negative).
        checks.append(f"{null_func} does not appear as a leaf in {pf.trace.source}: O_in taken "
                      "from the in-trace estimate of that recording (1st percentile of leaves)")
        o_in = float(est.o_in_ns)
        return o_in, {"samples": int(full_calls), "mean_ns": round(o_in, 1), "median_ns": round(o_in, 1),
                      "ci95_ns": [round(o_in, 1), round(o_in, 1)],
                      "source": f"in-trace estimate of {os.path.basename(pf.trace.source)}"}, o_in
    checks.append(f"{null_func} does not appear as a leaf in {pf.trace.source}: O_in of "
                  "full-graph traces taken from the NULL procedure recorded alone")
    null_alone, boot_null = alone
    return null_alone["mean_ns"], dict(null_alone), boot_null


def _o_out(both: _PerDescendant, o_in: float, o_in_obj: dict, boot_in, disp: str, est, checks: list):
    """(O_out, its calibration.json object): O_in + O_out minus O_in; a
    negative result is replaced by the in-trace estimate (or 0), loudly."""
    o_out = both.mean - o_in
    obj = {"samples": int(len(both.vf)), "mean_ns": round(o_out, 1),
           "median_ns": round(both.median - o_in_obj.get("median_ns", o_in), 1),
           "ci95_ns": _ci(both.boot - boot_in),
           "source": f"({disp} with its graph - {disp} alone) / recorded descendants "
                     f"(means over {len(both.vf)} and {both.root_samples} calls), minus O_in"}
    if o_in > both.mean:
        checks.append("O_in exceeds O_in + O_out: the recordings disagree")
    if o_out < 0:
        # A negative hook cost cannot be applied: keep the file usable (the
        # report reads it) and say loudly what was done instead.
        fallback = float(est.o_out_ns) if est is not None and est.o_out_ns > 0 else 0.0
        checks.append(f"O_out came out negative ({o_out:.0f} ns): the recordings disagree "
                      "(noisy machine or different tracer options); O_out set to "
                      + (f"the in-trace estimate ({fallback:.0f} ns)" if fallback else "0")
                      + ": do not trust this calibration")
        obj["negative_ns"] = round(o_out, 1)
        o_out = fallback
        obj["mean_ns"] = round(o_out, 1)
    return o_out, obj


def _o_sum_object(both: _PerDescendant, pf: Profile, pr: Profile) -> dict:
    return {"samples": int(len(both.vf)), "mean_ns": round(both.mean, 1),
            "ci95_ns": _ci(both.boot, (both.per_call.min(), both.per_call.max())),
            "median_ns": round(both.median, 1),
            "descendants_mean": round(float(both.df.mean()), 2),
            "full_mean_ns": round(float(both.vf.mean()), 1),
            "root_only_mean_ns": round(both.root_mean, 1), "root_only_samples": both.root_samples,
            "outliers": both.outliers,
            "source": f"{os.path.basename(pf.trace.source)} minus "
                      f"{os.path.basename(pr.trace.source)}, per recorded descendant"}


def _same_conditions(pn: Profile, pr: Profile, pf: Profile, checks: list) -> None:
    """The three recordings should share a kernel and a trace clock."""
    kernels = {p.trace.kernel for p in (pn, pr, pf)}
    if len(kernels) > 1:
        checks.append("the three traces come from different kernels: " + ", ".join(sorted(kernels)))
    clocks = {k: _tracer_options(p)["trace_clock"] for k, p in (("null", pn), ("root", pr), ("full", pf))}
    if len(set(clocks.values())) > 1:
        checks.append(f"the three traces use different trace clocks: {clocks}")


def _recorded_options(pf: Profile) -> dict:
    """The full-graph recording's tracer options; calibrate.sh's record of
    them (calib-meta.json) first where it has them."""
    options = _tracer_options(pf)
    meta = _calib_meta(pf.trace.source)
    if isinstance(meta.get("tracer_options"), dict):
        options = dict(meta["tracer_options"], **{k: v for k, v in options.items()
                                                  if k not in meta["tracer_options"]})
    return options


def _calib_meta(trace_path: str) -> dict:
    """calib-meta.json that collect/calibrate.sh writes beside the traces."""
    path = os.path.join(os.path.dirname(os.path.abspath(trace_path)), CALIB_META_FILE)
    from ftflame.rundir import bad_numbers, load_json

    try:
        doc = load_json(path)
    except (OSError, ValueError):
        return {}
    # (its options are copied into calibration.json: no NaN may go with them)
    return doc if isinstance(doc, dict) and not bad_numbers(doc) else {}


# ---- 2. in-trace estimate ----------------------------------------------------

def _percentile(hist: np.ndarray, q: float) -> int:
    cum = np.cumsum(hist.astype(np.int64))
    if cum[-1] == 0:
        return 0
    return int(np.searchsorted(cum, max(1, int(np.ceil(cum[-1] * q / 100.0))), side="left"))


def estimate_in_trace(p: Profile, context: str = "task") -> Calibration | None:
    """O_in from the p1 of leaf durations, O_out from the p1 of sibling gaps,
    task context pooled over CPUs (per CPU and context in the details).
    None when the trace has too few of either (e.g. a root-only trace)."""
    est = p.overhead_samples
    if not est:
        return None
    per = {}
    pooled: dict = {}
    for (kind, ctx, cpu), (hist, over) in sorted(est.items()):
        n = int(hist.sum()) if len(hist) else 0
        if n:
            per[f"{kind} {ctx} cpu{cpu}"] = {
                "samples": n, "over_range": over,
                "p1_ns": _percentile(hist, 1), "p5_ns": _percentile(hist, 5),
                "p50_ns": _percentile(hist, 50)}
        if ctx == context and n:
            acc = pooled.setdefault(kind, np.zeros(len(hist), dtype=np.int64))
            acc += hist
    if any(int(pooled.get(k, np.zeros(1)).sum()) < IN_TRACE_MIN_SAMPLES for k in ("leaf", "gap")):
        return None
    leaf, gap = pooled["leaf"], pooled["gap"]
    o_in = _percentile(leaf, IN_TRACE_PERCENTILE)
    o_out = _percentile(gap, IN_TRACE_PERCENTILE)
    details = {
        "o_in": {"samples": int(leaf.sum()), "p1_ns": o_in, "p5_ns": _percentile(leaf, 5),
                 "p50_ns": _percentile(leaf, 50),
                 "source": f"p{IN_TRACE_PERCENTILE:g} of leaf durations ({context} context, all CPUs)"},
        "o_out": {"samples": int(gap.sum()), "p1_ns": o_out, "p5_ns": _percentile(gap, 5),
                  "p50_ns": _percentile(gap, 50),
                  "source": f"p{IN_TRACE_PERCENTILE:g} of calltime(B) - rettime(A) over consecutive "
                            f"siblings A, B ({context} context, all CPUs)"},
        "per_cpu_context": per,
    }
    return Calibration(float(o_in), float(o_out), "in-trace", "in-trace estimate", details)


# ---- calibration.json ------------------------------------------------------------

def write(path: str, cal: dict) -> str:
    text = json.dumps(cal, indent=2, sort_keys=False) + "\n"
    write_atomic(path, text)
    return text


# The figures of calibration.json that corrections, intervals and notes read:
# the objects, each with whether its mean may be below 0. A hook cost is at most this (1 s: far above any
# machine's, emulated ones included); the spread of a figure may be negative
# where the figure may.
MAX_HOOK_NS = 1e9
_COSTS = ("o_in_ns", "o_out_ns")
_OBJECTS = {"o_in": False, "o_out": False, "o_in_root_only": False, "o_in_plus_o_out": True}
# (O_out's interval may reach below 0: a difference of two recordings'; O_in's are of durations)
_SIGNED_CI = ("o_out", "o_in_plus_o_out")


def load(path: str) -> Calibration:
    """A Calibration from a calibration.json (ours or collect/calibrate.sh's),
    every figure read checked here (finite, in range, a number and not true
    or false): a bad one is one line naming the field (InputError, exit 2)."""
    from ftflame.rundir import bad_numbers, field_name, load_json

    hint = "write it with: ftflame calibrate"
    try:
        doc = load_json(path)
    except OSError as e:
        raise InputError(path, f"cannot read calibration file: {e.strerror}") from None
    except ValueError as e:
        raise InputError(path, f"not valid JSON ({e})", hint) from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise InputError(path, f"not a calibration file (schema is not {SCHEMA!r})", hint)
    bad = bad_numbers(doc)
    if bad:  # anywhere: the file is copied whole into the JSON report
        at, text = bad[0]
        raise InputError(path, f"{field_name(at)}: {text} is not a number JSON has", hint)
    for key in _COSTS:
        if key not in doc:
            raise InputError(path, "o_in_ns and o_out_ns must be numbers (ns)", hint)
        _check(path, (key,), doc[key])
    _check_objects(path, doc)
    return Calibration(float(doc["o_in_ns"]), float(doc["o_out_ns"]), f"file:{path}",
                       str(doc.get("method", "")), doc)


def _check_objects(path: str, doc: dict) -> None:
    """The spread, root-only O_in, hook level and kernel of calibration.json."""
    from ftflame.rundir import number_problem

    hint = "write it with: ftflame calibrate"
    for key, signed in _OBJECTS.items():
        obj = doc.get(key)
        if obj is None:
            continue
        if not isinstance(obj, dict):
            raise InputError(path, f"{key}: {json_kind(obj)}, not an object", hint)
        if key == "o_in_root_only" and "mean_ns" not in obj and "median_ns" not in obj:
            raise InputError(path, f"{key}: no mean_ns (the O_in applied to root-only traces)", hint)
        if "samples" in obj and number_problem(obj["samples"], integer=True):
            raise InputError(path, f"{key}.samples: {number_problem(obj['samples'], integer=True)}", hint)
        for k in ("mean_ns", "median_ns"):
            if k in obj:  # (a median is applied only as the root-only O_in's stand-in)
                _check(path, (key, k), obj[k], signed=signed or (k == "median_ns" and key != "o_in_root_only"))
        if "ci95_ns" in obj:
            _check_interval(path, key, obj["ci95_ns"])
    level = doc.get("hook_level")
    if level is not None:
        if not isinstance(level, dict):
            raise InputError(path, f"hook_level: {json_kind(level)}, not an object", hint)
        if "leaf_min_ns" in level:
            _check(path, ("hook_level", "leaf_min_ns"), level["leaf_min_ns"])
    _check_subbuf(path, doc.get("subbuf"), hint)
    if doc.get("kernel") is not None and not isinstance(doc["kernel"], str):
        raise InputError(path, f"kernel: {json_kind(doc['kernel'])}, not a string", hint)


def _check_subbuf(path: str, moves, hint: str) -> None:
    """calibration.json's ``subbuf`` (ftflame/correct/subbuf.py), when there:
    an object with the move's cost and rate, its root_only likewise."""
    if moves is None:
        return
    root_only = moves.get("root_only") if isinstance(moves, dict) else None
    for at, obj, keys in ((("subbuf",), moves, ("cost_ns", "per_descendant")),
                          (("subbuf", "root_only"), root_only, ("cost_ns", "per_call"))):
        if obj is None and len(at) > 1:
            continue
        if not isinstance(obj, dict):
            raise InputError(path, f"{'.'.join(at)}: {json_kind(obj)}, not an object", hint)
        for k in keys:
            if k not in obj:
                raise InputError(path, f"{'.'.join(at)}: no {k}", hint)
            _check(path, (*at, k), obj[k])


def _check_interval(path: str, key: str, ci) -> None:
    if not isinstance(ci, list) or len(ci) != 2:
        raise InputError(path, f"{key}.ci95_ns: {json_kind(ci)}, not a list [low, high]",
                         "write it with: ftflame calibrate")
    for i in (0, 1):
        _check(path, (key, "ci95_ns", i), ci[i], signed=key in _SIGNED_CI)
    if ci[0] > ci[1]:
        raise InputError(path, f"{key}.ci95_ns: low {ci[0]} above high {ci[1]}", "write it with: ftflame calibrate")


def _check(path: str, at: tuple, v, signed: bool = False) -> None:
    from ftflame.rundir import field_name, number_problem

    problem = number_problem(v, minimum=-MAX_HOOK_NS if signed else 0.0, maximum=MAX_HOOK_NS)
    if problem:
        raise InputError(path, f"{field_name(at)}: {problem} (hook costs are numbers of ns, finite"
                         + ("" if signed else " and >= 0") + ")", "recalibrate: ftflame calibrate")


def beside(trace_path: str) -> str | None:
    """calibration.json next to the trace (a collect.sh run directory)."""
    cand = os.path.join(os.path.dirname(os.path.abspath(trace_path)), CALIBRATION_FILE)
    return cand if os.path.isfile(cand) else None


def for_profile(cal: Calibration, p: Profile) -> Calibration:
    """The calibration to apply to this trace: a calibration file measured
    O_in both in full-graph and root-only mode; a root-only trace gets the
    latter."""
    ro = cal.details.get("o_in_root_only") if isinstance(cal.details, dict) else None
    val = ro.get("mean_ns", ro.get("median_ns")) if isinstance(ro, dict) else None
    if val is not None and _root_only(p):
        d = dict(cal.details, applied_o_in="o_in_root_only (root-only trace)")
        return Calibration(float(val), cal.o_out_ns, cal.source, cal.method, d)
    return cal


def choose(p: Profile, trace_path: str, cal_file: str | None = None,
           o_in: float | None = None, o_out: float | None = None, strict: bool = False,
           irqs: str = "exclude") -> Calibration:
    """The calibration, best first: --calibration FILE ('none': raw), else
    calibration.json beside the trace, else the in-trace estimate; values
    given on the command line replace the matching value (and are the only
    source when nothing else exists). Checked against the trace's own
    bounds (ftflame/correct/fit.py): a misfit gives way to a calibration
    that fits, unless strict."""
    from ftflame.correct import fit

    return fit.fitted(p, _chosen(p, trace_path, cal_file, o_in, o_out), trace_path, strict, irqs,
                      estimate_in_trace)


def _chosen(p: Profile, trace_path: str, cal_file: str | None, o_in: float | None,
            o_out: float | None) -> Calibration:
    from ftflame.model.profile import NO_CALIBRATION

    if cal_file == "none":
        base = NO_CALIBRATION
    elif cal_file:
        base = for_profile(load(cal_file), p)
    elif (found := beside(trace_path)):
        base = for_profile(load(found), p)
    else:
        base = estimate_in_trace(p) or NO_CALIBRATION
    if o_in is None and o_out is None:
        return base
    given = {k: v for k, v in (("o_in", o_in), ("o_out", o_out)) if v is not None}
    new_in = o_in if o_in is not None else (base.o_in_ns if base.applied else 0.0)
    new_out = o_out if o_out is not None else (base.o_out_ns if base.applied else 0.0)
    src = "command line" if not base.applied or len(given) == 2 else f"command line + {base.source}"
    details = dict(base.details) if isinstance(base.details, dict) else {}
    details["command_line"] = given
    details["value_sources"] = {k: "command line" if k in given else _base_label(base)
                                for k in ("o_in", "o_out")}
    # NO_CALIBRATION's method says "not corrected": never carry it onto given values
    method = base.method if base.applied else "given on the command line"
    return Calibration(float(new_in), float(new_out), src, method, details)


def buffer_percent_note(cal: Calibration, meta: dict | None) -> str | None:
    """A note when the calibration's recordings and the trace ran with
    different tracefs buffer_percent values (collect.sh --buffer-percent):
    while trace-cmd's reader is to be woken every ring-buffer commit costs a
    few ns more, so the hook cost measured in one mode is off in the other
    (docs/overhead.md "Figures: like for like at volume"). None unless both
    the calibration (its calib-meta.json) and the trace's meta.json say."""
    opts = cal.details.get("tracer_options") if cal.applied and isinstance(cal.details, dict) else None
    trace_opts = (meta or {}).get("tracer_options")
    pcts = [o.get("buffer_percent") if isinstance(o, dict) else None for o in (opts, trace_opts)]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in pcts) or pcts[0] == pcts[1]:
        return None
    return (f"the calibration was recorded with buffer_percent {pcts[0]}, the trace with {pcts[1]}: "
            "ring-buffer commits cost a few ns more while trace-cmd's reader is to be woken, so the "
            "corrected times can be off by a few percent; calibrate in the trace's mode "
            "(collect.sh --buffer-percent passes it on to calibrate.sh)")


def _base_label(base: Calibration) -> str:
    """Where a value not given on the command line came from."""
    if not base.applied:
        return "not given, and no calibration file or in-trace estimate"
    if base.source.startswith("file:"):
        return "file " + os.path.basename(base.source[5:])
    return {"in-trace": "in-trace estimate"}.get(base.source, base.source)


def value_sources(cal: Calibration) -> dict:
    """Where O_in and O_out each came from: the calibration's source, or per
    value when some were given on the command line (``choose``)."""
    d = cal.details if isinstance(cal.details, dict) else {}
    if isinstance(d.get("value_sources"), dict):
        return dict(d["value_sources"])
    return {k: _base_label(cal) if cal.applied else "none" for k in ("o_in", "o_out")}


def kernel_note(cal: Calibration) -> str | None:
    """What every output that shows the calibration says when a calibration
    file made on another kernel is applied (its fit check found it:
    ftflame/correct/fit.py); None otherwise (or when the values used are the
    in-trace estimate's, measured on the trace)."""
    f = cal.fit if isinstance(cal.fit, dict) else {}
    note = f.get("kernel_note")
    return note if isinstance(note, str) and cal.source.startswith("file:") else None


def intervals(cal: Calibration) -> tuple:
    """({"o_in": [low, high], "o_out": [...]}: the 95% intervals of the
    O_in and O_out used, those of the values applied (the root-only O_in's
    on a root-only trace; scaled with the values when the fit check scaled
    them); a note (or None) naming an interval of the file left out because
    the value used lies outside it (an edited value, an O_out set to a
    fallback): an interval is printed only beside the value it is of."""
    d = cal.details if isinstance(cal.details, dict) else {}
    if not cal.applied or "command_line" in d:
        return {}, None
    scale = float((cal.fit or {}).get("scale", 1.0)) if isinstance(cal.fit, dict) else 1.0
    out, off = {}, []
    keys = (("o_in", "o_in_root_only" if d.get("applied_o_in") else "o_in", cal.o_in_ns),
            ("o_out", "o_out", cal.o_out_ns))
    for name, key, used in keys:
        obj = d.get(key)
        ci = obj.get("ci95_ns") if isinstance(obj, dict) else None
        if not isinstance(ci, list) or len(ci) != 2:
            continue
        lo, hi = ci[0] * scale, ci[1] * scale
        # (the file rounds to 0.1 ns)
        if lo - 0.05 * max(scale, 1.0) <= used <= hi + 0.05 * max(scale, 1.0):
            out[name] = [round(lo, 1), round(hi, 1)]
        else:
            off.append(f"{name[0].upper()}{name[1:]} {used:.1f} ns is outside {key}.ci95_ns "
                       f"[{ci[0]:.1f}, {ci[1]:.1f}]")
    note = ("; ".join(off) + " of the file: an interval of another value, not printed") if off else None
    return out, note


def provenance(cal: Calibration, misfit: bool = True) -> str:
    """One line every output prints: the hook cost used and where each value
    came from; with ``misfit``, what the fit check found against it (False for
    an output that says the misfit on a line of its own)."""
    if not cal.applied:
        return "no calibration: raw figures, tracer hook cost included"
    vs = value_sources(cal)
    if vs["o_in"] == vs["o_out"]:
        text = f"O_in {cal.o_in_ns:.1f} ns, O_out {cal.o_out_ns:.1f} ns ({vs['o_in']})"
    else:
        text = f"O_in {cal.o_in_ns:.1f} ns ({vs['o_in']}), O_out {cal.o_out_ns:.1f} ns ({vs['o_out']})"
    f = cal.fit if isinstance(cal.fit, dict) else None
    if misfit and f is not None and not f["ok"]:
        text += f"; MISFIT: {f['checked']} does not fit this trace, used: {f['used']}"
    note = kernel_note(cal)
    if note:
        text += "; " + note
    return text


def summary(doc: dict) -> str:
    """What `ftflame calibrate` says about a calibration.json it computed."""
    s = doc["o_in_plus_o_out"]
    return (f"O_in {doc['o_in_ns']:.1f} ns {doc['o_in']['ci95_ns']}, O_out "
            f"{doc['o_out_ns']:.1f} ns {doc['o_out']['ci95_ns']} (95% intervals; O_in+O_out "
            f"{s['mean_ns']:.1f} ns over {s['samples']} calls; root-only O_in "
            f"{doc['o_in_root_only']['mean_ns']:.1f} ns)")
