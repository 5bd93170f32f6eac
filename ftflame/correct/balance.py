"""Balance sheet: do the corrected parts add up to what was measured?

Per root (graph) function, over its clean calls, as means per call:

    measured raw mean = corrected components (the root's own time and its
                        children's corrected inclusive times)
                      + tracer overhead removed
                      + irq subtrees + off-CPU time
                      - clamped (ns that raised the root's corrected time
                        from below 0 to 0; what its children were scaled
                        down by to fit is inside the components, no term)
                      + unaccounted

Against the trace itself this balances by construction; it shows where the
raw time went. The real check is against a total measured some other way:
a baseline recording with only the roots hooked (``--baseline``, the same
workload recorded by ``collect.sh --baseline``: corrected with the same
calibration, its mean is the measured total), or a number the user gives
(``--measured FUNC=TIME``), as in the "synthetic vs measured" tables of nfsd path-length write-ups.
Accounted % = corrected / measured, and only then: without an independent
total the sheet says that none was given and how to get one (NO_TOTAL),
since a percentage of the trace against itself cannot fail.
"""
from __future__ import annotations

import functools
import operator
import re
from collections.abc import Iterable

import numpy as np

from ftflame.model.errors import InputError
from ftflame.model.profile import NODE_IRQ, NODE_IRQ_ROOT, SAMPLE_GAP, OffCpu, Profile, note_warning

TOP_COMPONENTS = 6
# Root functions itemised: the busiest, by raw time (those named by a
# baseline or --measured always). A trace with 100k distinct roots would
# otherwise print 100k sheets; the rest are counted in a note.
TOP_ROOTS = 50
# Said (JSON `accounted_note`, text, HTML) where no independent total exists.
NO_TOTAL = ("no independent total given, so no accounted %: record the same workload with only "
            "the root functions hooked (collect.sh --baseline) and pass --baseline BASELINE.dat, "
            "or give --measured FUNC=TIME")
_UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}


def independent_total(source: str, mean_ns: float, corrected_mean_ns: float) -> dict:
    """One total measured outside this trace, against the corrected mean:
    the difference in ns and in % of the independent figure."""
    diff = corrected_mean_ns - mean_ns
    return {"source": source, "mean_ns": round(float(mean_ns), 1), "difference_ns": round(diff, 1),
            "difference_pct": round(100.0 * diff / mean_ns, 2) if mean_ns else None}


def parse_measured(spec: str) -> tuple:
    """'FUNC=TIME' -> (func, ns). TIME takes ns, us, ms or s; a bare number is
    microseconds, the unit function_graph prints."""
    m = re.fullmatch(r"\s*([^=\s]+)\s*=\s*([0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)\s*(ns|us|µs|ms|s)?\s*", spec)
    if not m:
        raise InputError("--measured", f"cannot read {spec!r}",
                         "use FUNC=TIME, e.g. nfsd3_proc_write=124us (units ns, us, ms, s; bare = us)")
    return m.group(1), float(m.group(2)) * _UNITS[m.group(3) or "us"]


def _clean(p: Profile, name: str, rows=slice(None)) -> np.ndarray:
    """The clean calls' sum (all minus gap calls) per row, in place: one
    whole-tree column at a time, not three."""
    out = p.col(name, rows, np.float64)
    out -= p.col("gap_" + name, rows, np.float64)
    return out


def root_rows(p: Profile) -> dict:
    """Function name -> its task-context root rows (real roots, not '(partial)')."""
    names, flat, at = _root_groups(p)
    rows = flat.tolist()
    bounds = at.tolist()
    return {name: rows[a:b] for name, a, b in zip(names, bounds[:-1], bounds[1:])}


def _root_groups(p: Profile) -> tuple:
    """root_rows as columns: (the function names, in order of their first
    root row; every root row, name after name, each name's in row order;
    where each name's rows start, and their end). A trace may have 100k
    root functions: no Python per row."""
    stored = p.nodes.stored  # as stored (32-bit): no whole-tree int64 copies
    parent, flags, calls = stored("parent"), stored("flags"), stored("calls")
    rows = np.flatnonzero((parent < 0) & ((flags & NODE_IRQ) == 0) & (calls > 0))
    if not len(rows):
        return [], rows, np.zeros(1, dtype=np.int64)
    funcs = p.funcs
    # a name's first function id (two ids may print as one name)
    first = dict(zip(reversed(funcs), range(len(funcs) - 1, -1, -1)))
    canon = np.fromiter(map(first.__getitem__, funcs), dtype=np.int64, count=len(funcs))
    key = canon[stored("func")[rows]]
    ids, first_at, group = np.unique(key, return_index=True, return_inverse=True)
    by_first = np.argsort(first_at, kind="stable")
    rank = np.empty(len(ids), dtype=np.int64)
    rank[by_first] = np.arange(len(ids))
    group = rank[group.reshape(-1)]
    order = np.lexsort((rows, group))
    at = np.searchsorted(group[order], np.arange(len(ids) + 1))
    return list(map(funcs.__getitem__, ids[by_first].tolist())), rows[order].astype(np.int64), at


def root_means(p: Profile) -> dict:
    """Function -> (clean calls, corrected mean ns) of its root calls."""
    c = p.corrected_or_raw
    out = {}
    for name, rows in root_rows(p).items():
        n = float(c.calls[rows].sum())
        if n:
            out[name] = (int(n), float(c.incl[rows].sum()) / n)
    return out


def sheet(p: Profile, baseline: Profile | None = None, measured: Iterable = ()) -> tuple:
    """The balance sheet: one dict per root function (busiest first), the
    TOP_ROOTS busiest and those with an independent total."""
    return _sheet(p, baseline, measured)[0]


def _sheet(p: Profile, baseline: Profile | None, measured: Iterable) -> tuple:
    """(the sheet, (root functions, clean calls, raw ns) not itemised)."""
    c = p.corrected_or_raw
    if c is None:
        return (), (0, 0, 0.0)
    measured = dict(measured)
    base = root_means(baseline) if baseline is not None else {}
    kids = p.children
    names, flat, row_at = _root_groups(p)
    # the sheet reads the root rows only: its columns are taken there, not
    # made whole-tree and then summed over a few hundred rows
    group = np.repeat(np.arange(len(names)), np.diff(row_at))

    def sum_at(at) -> np.ndarray:  # a column at the root rows summed per function, in row order
        return np.bincount(group, weights=np.asarray(at, np.float64), minlength=len(names))
    incl = _clean(p, "incl", flat)
    removed = (c.overhead, c.irq_removed, c.offcpu_removed, c.clamp_ns)
    zero = np.zeros(len(flat)) if any(x is None for x in removed) else None  # raw: nothing removed
    over, irq, off, clamp = (zero if x is None else np.asarray(x)[flat] for x in removed)
    sw = getattr(c, "sched_removed", None)
    sw = np.zeros(len(flat)) if sw is None else np.asarray(sw)[flat]
    # a clamp at a root is two amounts (corrections._clamp_top_down): the ns
    # that raised the root's own corrected time from below 0 to 0, a term of
    # the sheet, and the ns its children were scaled down by to fit inside
    # it, already out of the components and no term of the sheet
    # (each an array: None ones became zero above)
    own_clamp = over + irq  # type: ignore[operator]  # (over + irq + off - incl) clipped at 0, in place
    own_clamp += off  # type: ignore[operator]
    own_clamp += sw
    own_clamp -= incl
    np.maximum(own_clamp, 0.0, out=own_clamp)
    from ftflame.correct.corrections import counted_children

    counted = counted_children(p, c.irqs) if p.nrows else np.zeros(0, bool)
    top = _tree_tops(p)
    irq_root = np.nonzero((p.nodes.stored("flags") & NODE_IRQ_ROOT) != 0)[0]
    # interrupt subtrees summed onto the top row of the tree they interrupted
    # (a root row), once: per root function a lookup, not a scan of every
    # irq root (O(paths)); in irq-root order per row, as a whole-tree bincount
    at, hit = _positions(flat, top[irq_root])
    irq_root = irq_root[hit]
    det_incl = getattr(c, "det_incl", None)
    att_incl = np.asarray(c.incl, dtype=np.float64) if det_incl is None else c.incl - det_incl
    if p.counters.get("detached_calls"):
        irq_incl, irq_calls = _irq_in_clean_roots(p, c, irq_root)
    else:
        irq_incl, irq_calls = c.incl[irq_root], _clean(p, "calls", irq_root)
    irq_incl_at_top = np.bincount(at, weights=irq_incl, minlength=len(flat))
    irq_calls_at_top = np.bincount(at, weights=irq_calls, minlength=len(flat))
    gap_calls = p.nodes.stored("gap_calls")[flat]  # 32-bit, as stored: only summed as weights
    pm_at = _pm_per_row(p)
    # every per-function sum at once (one bincount per column): a sum per root
    # function in the loop costs a numpy call each, 100k roots made it seconds
    incl_f, own_f, over_f, irq_f, off_f, clamp_f, sw_f = (sum_at(v) for v in (incl, own_clamp, over, irq, off,
                                                                              clamp, sw))
    calls_f, corr_f, excl_f = (sum_at(np.asarray(v)[flat]) for v in (c.calls, c.incl, c.excl))
    switches_f = sum_at(_switches_per_row(p)[flat])
    irq_incl_f, irq_calls_f, gap_calls_f = (sum_at(v) for v in (irq_incl_at_top, irq_calls_at_top, gap_calls))
    pm_f = sum_at(pm_at[flat]) if pm_at is not None else None
    index = dict(zip(names, range(len(names))))
    shown, not_shown = _itemised(incl_f, calls_f, [index[x] for x in {*measured, *base} & index.keys()])
    (incl_f, own_f, over_f, irq_f, off_f, clamp_f, sw_f, calls_f, corr_f, excl_f, switches_f, irq_incl_f,
     irq_calls_f, gap_calls_f) = (v.tolist() for v in (incl_f, own_f, over_f, irq_f, off_f, clamp_f, sw_f,
                                                        calls_f, corr_f, excl_f, switches_f, irq_incl_f,
                                                        irq_calls_f, gap_calls_f))
    pm_f = pm_f.tolist() if pm_f is not None else None
    # the model's own error on this kernel family, times the corrected mean
    # (ftflame/correct/uncertainty.py made_of says what the interval holds)
    from ftflame.correct.uncertainty import model_error

    m_mean = (model_error(p) or {}).get("mean", 0.0) if pm_f is not None else 0.0
    offcpu_known = p.offcpu_known
    out: list = []
    for g in shown.tolist():
        name = names[g]
        rows = flat[row_at[g]:row_at[g + 1]].tolist()
        n = calls_f[g]
        raw = incl_f[g] / n
        corr = corr_f[g] / n
        comp: dict = {}
        self_ns = excl_f[g] / n
        for r in rows:
            for k in kids[r]:
                if counted[k]:
                    comp[p.name(k)] = comp.get(p.name(k), 0.0) + float(att_incl[k]) / n
        ranked = sorted(comp.items(), key=lambda kv: -kv[1])
        components = [{"name": f"{name} (self)", "mean_ns": round(self_ns, 1)}]
        components += [{"name": k, "mean_ns": round(v, 1)} for k, v in ranked[:TOP_COMPONENTS]]
        rest = ranked[TOP_COMPONENTS:]
        if rest:
            components.append({"name": f"{len(rest)} other children",
                               "mean_ns": round(sum(v for _, v in rest), 1)})
        o = over_f[g] / n
        i = irq_f[g] / n
        i_corr = irq_incl_f[g] / n if c.irqs == "exclude" else None
        f = off_f[g] / n
        w = sw_f[g] / n
        cl = own_f[g] / n
        scaled = max(clamp_f[g] - own_f[g], 0.0) / n
        unacc = raw - (corr + o + i + f + w - cl)
        unacc = 0.0 if abs(unacc) < 0.05 else unacc  # float rounding, not time
        entry = {
            "function": name, "calls": int(n),
            "gap_calls": int(gap_calls_f[g]),
            "measured_raw_mean_ns": round(raw, 1),
            "corrected_mean_ns": round(corr, 1),
            # 95% half-width: the calibration's intervals and the model's own
            # error (ftflame/correct/uncertainty.py)
            "corrected_mean_pm_ns": None if pm_f is None else round(pm_f[g] / n + m_mean * abs(corr), 1),
            "components": components,
            "overhead_mean_ns": round(o, 1),
            "irq_mean_ns": round(i, 1),
            "irq_corrected_mean_ns": None if i_corr is None else round(i_corr, 1),
            "irq_per_call": round(irq_calls_f[g] / n, 3),
            # unknown without sched_switch events, not 0
            "offcpu_mean_ns": round(f, 1) if offcpu_known else None,
            # the scheduler's work around the switches, taken out with the
            # off-CPU time (only where the calls hold switch frames)
            **({"switch_work_mean_ns": round(w, 1), "switches": int(switches_f[g])} if switches_f[g] else {}),
            "clamped_mean_ns": round(cl, 1),
            "children_scaled_mean_ns": round(scaled, 1),
            "unaccounted_mean_ns": round(unacc, 1),
            # against an independent total only (external), else None and why
            "accounted_pct": None,
            "accounted_note": NO_TOTAL,
            "external": None,
        }
        ext = None
        if name in measured:
            ext = {"source": "given (--measured)", "calls": None, "mean_ns": measured[name]}
        elif name in base:
            bn, bm = base[name]
            ext = {"source": f"baseline {baseline.trace.source}", "calls": bn, "mean_ns": round(bm, 1)}
        if ext:
            m = ext["mean_ns"]
            ext["difference_ns"] = round(corr - m, 1)
            ext["accounted_pct"] = round(100.0 * corr / m, 2) if m else None
            entry["external"] = ext
            entry["accounted_pct"] = ext["accounted_pct"]
            entry["accounted_note"] = f"corrected mean against the measured total ({ext['source']})"
        entry["independent"] = [independent_total(ext["source"], ext["mean_ns"], corr)] if ext else []
        out.append(entry)
    for name in measured:
        if name not in index:
            raise InputError("--measured", f"{name} is not a root function of {p.trace.source}",
                             "roots: " + ", ".join(sorted(names)[:8]))
    return tuple(out), not_shown


def _itemised(incl: np.ndarray, calls: np.ndarray, wanted: list) -> tuple:
    """The root functions the sheet itemises, busiest first (a stable
    sort): the TOP_ROOTS busiest with calls, and those with an independent
    total (wanted); and (how many others with calls, their calls, their
    raw ns) counted in a note. Per function: arrays."""
    if np.isnan(incl).any():  # (Python's sort of NaN keys, as it was)
        order = np.array(sorted(range(len(incl)), key=lambda g: -incl[g]), dtype=np.int64)
    else:
        order = np.argsort(-incl, kind="stable")
    some = calls[order] != 0
    shown = some & (np.cumsum(some) <= TOP_ROOTS)
    pos = np.empty(len(order), dtype=np.int64)
    pos[order] = np.arange(len(order))
    shown[pos[wanted]] = some[pos[wanted]]
    rest = order[some & ~shown]
    return order[shown], (len(rest), int(np.trunc(calls[rest]).astype(np.int64).sum()),
                          functools.reduce(operator.add, incl[rest].tolist(), 0.0))  # added in this order


def _switches_per_row(p: Profile) -> np.ndarray:
    """Per node row: the switches with a scheduler frame inside its clean root calls."""
    if not len(p.samples):
        return np.zeros(p.nrows)
    # where switches is not 0 only (a root call's own columns, RootCalls):
    # the same sums, zeros added or not
    rows, vals = p.samples.nonzero("switches")
    clean = (p.samples.take("flags", rows) & SAMPLE_GAP) == 0 if len(rows) else np.zeros(0, bool)
    return np.bincount(p.samples.take("node", rows[clean]) if len(rows) else np.zeros(0, np.int64),
                       weights=vals[clean].astype(np.float64), minlength=p.nrows)


def _pm_per_row(p: Profile):
    """Per node row: the summed 95% half-widths of its clean root calls'
    corrected durations (ftflame/correct/uncertainty.py), None without intervals."""
    from ftflame.correct.uncertainty import root_half_widths

    hw = root_half_widths(p) if len(p.samples) else None
    if hw is None:
        return None
    clean = (p.scol("flags") & SAMPLE_GAP) == 0
    return np.bincount(p.scol("node", clean), weights=hw[clean], minlength=p.nrows)


def _irq_in_clean_roots(p: Profile, c, irq_root: np.ndarray) -> tuple:
    """(corrected inclusive time, calls) of the interrupt-subtree rows
    irq_root, over their calls inside clean root calls only: on a trace with
    detached calls an irq-root path may also hold kept calls inside a root
    call left out (the core's groot_* sums), which no clean root call holds.
    The corrected time is the correction's own formula over those calls."""
    from ftflame.correct import corrections

    def get(name):
        out = _clean(p, name, irq_root)
        out -= p.col("groot_" + name, irq_root, np.float64)
        return out

    calls = get("calls")
    cal = p.calibration
    if p.corrected is None or not cal.applied:
        return get("incl"), calls
    off = get("offcpu") if c.offcpu is OffCpu.REMOVED else np.zeros(len(irq_root))
    sw = None
    if c.sched_removed is not None:
        sw = corrections.net_switch_work(get("sched"), get("sched_calls"), get("sched_outs"),
                                         float(cal.o_in_ns), float(cal.o_out_ns))
    is_irq = np.ones(len(irq_root), dtype=bool)  # an interrupt subtree's paths run in irq context
    ci = corrections._formula(p, cal, c.irqs, is_irq, calls, get("incl"), get("desc"), off, sw,
                              np.zeros(len(irq_root)), get, irq_root)[0]
    # (a path whose calls are all in clean root calls keeps the correction's own figure, clamps included)
    whole = p.col("groot_calls", irq_root) == 0
    ci = np.where(whole, np.asarray(c.incl, dtype=np.float64)[irq_root], np.maximum(ci, 0.0))
    return ci, calls


def _positions(rows: np.ndarray, wanted: np.ndarray) -> tuple:
    """(positions in rows of the wanted rows found there, which were found);
    rows are distinct."""
    order = np.argsort(rows, kind="stable")
    j = np.searchsorted(rows[order], wanted)
    hit = j < len(rows)
    hit[hit] = rows[order][j[hit]] == wanted[hit]
    return order[j[hit]], hit


def _tree_tops(p: Profile) -> np.ndarray:
    """The top row of every node's tree (parents have lower rows)."""
    return p.tree_tops


def attach(p: Profile, baseline: Profile | None = None, measured: Iterable = ()) -> Profile:
    entries, (funcs, calls, raw_ns) = _sheet(p, baseline, measured)
    if not funcs:
        return p.replace(balance=entries)
    note = (f"balance sheet: the {len(entries):,} busiest root functions itemised; {funcs:,} more "
            f"({calls:,} clean calls, {raw_ns / 1e3:,.1f} us raw) are in the function table")
    return p.replace(balance=entries, warnings=tuple(p.warnings) + (note_warning(note),))
