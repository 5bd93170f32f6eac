"""The JSON call tree as report/jsonout.py wrote it before the C row
formatter (report._rowfmt.format_rows): one Python %-format per node. Kept as the
reference the fast renderer must match byte for byte (tests/test_jsonout.py).

It imports none of the functions that compute what the JSON shows (node
flags, statistics objects, exact corrected values of root calls, the
correction's per-function extras): those are written here again from the
Profile's columns. Only the `trace` and `calibration` objects, which are
copies of the trace's metadata and the calibration, are taken from the
document under test (render(p, head=...)); their figures are checked
against the independent reference in tests/test_binding.py."""
from __future__ import annotations

import json

import numpy as np

from ftflame import __version__
from ftflame.model import profile as profile_mod
from ftflame.model.profile import Histograms, Profile
from ftflame.report import jsonout

# bits of the node and sample flag columns (parse/core/builder.h)
NODE_IRQ, NODE_IRQ_ROOT, NODE_PARTIAL = 1, 2, 4
SAMPLE_GAP, SAMPLE_PARTIAL, SAMPLE_IRQ = 1, 2, 4
SCHEMA = "ftflame/1"


def _offcpu_known(p: Profile) -> bool:
    """Off-CPU time is known only when sched_switch events were seen (the
    counter the reader keeps), else the JSON says null."""
    return bool(p.counters.get("switches", 0))


def node_flags(flags: int) -> list:
    return [name for bit, name in ((NODE_IRQ, "irq"), (NODE_IRQ_ROOT, "irq_root"),
                                   (NODE_PARTIAL, "partial")) if flags & bit]


def stats_objects(sums, calls, mins, maxs, pcts) -> list:
    out = []
    for s, c, lo, hi, p in zip(sums.tolist(), calls.tolist(), mins.tolist(), maxs.tolist(),
                               pcts.tolist()):
        out.append({"sum": s, "min": lo if c else 0, "max": hi if c else 0,
                    "mean": round(s / c, 1) if c else 0.0, "p50": p[0], "p90": p[1], "p99": p[2]})
    return out


def _exact_object(vals, s: float, c: int) -> dict:
    """Corrected statistics from the per-call values (nearest rank)."""
    v = np.sort(np.asarray(vals, dtype=np.float64))
    pick = [float(v[max(int(np.ceil(len(v) * q / 100.0)) - 1, 0)]) for q in (50, 90, 99)]
    return {"sum": round(s, 1), "min": round(float(v[0]), 1), "max": round(float(v[-1]), 1),
            "mean": round(s / c, 1), "p50": round(pick[0], 1), "p90": round(pick[1], 1),
            "p99": round(pick[2], 1), "calls": c}


def corrected_objects(raw_objs, corr_sums, corr_calls, applied: bool, exact=None) -> list:
    """Corrected statistics: exact where per-call values exist, else the raw
    ones scaled by corrected/raw mean and marked approx."""
    if not applied:
        return [dict(o) for o in raw_objs]
    exact = exact or {}
    out = []
    for i, (o, s, c) in enumerate(zip(raw_objs, corr_sums.tolist(), corr_calls.tolist())):
        vals = exact.get(i)
        if vals is not None and len(vals) == c and c:
            out.append(_exact_object(vals, s, c))
            continue
        mean = s / c if c else 0.0
        f = (mean / o["mean"]) if (c and o["mean"] > 0) else 0.0
        obj = {"sum": round(s, 1)}
        for k in ("min", "max"):
            obj[k] = round(max(o[k] * f, 0.0), 1)
        obj["mean"] = round(mean, 1)
        for k in ("p50", "p90", "p99"):
            obj[k] = round(max(o[k] * f, 0.0), 1)
        obj.update({"calls": c, "approx": True})
        out.append(obj)
    return out


def exact_corrected_values(p: Profile):
    """The clean root calls' corrected durations, per node row and per
    function (index into p.functions)."""
    c = p.corrected
    if c is None or len(p.samples) == 0:
        return {}, {}
    by_node = {}
    for node, flags, dur in zip(p.scol("node").tolist(), p.scol("flags").tolist(), c.sample_dur.tolist()):
        if not flags & SAMPLE_GAP:
            by_node.setdefault(node, []).append(dur)
    func = p.col("func")
    index = {int(f): i for i, f in enumerate(p.functions.func_ids.tolist())}
    by_func = {}
    for node in sorted(by_node):
        i = index.get(int(func[node]))
        if i is not None:
            by_func.setdefault(i, []).extend(by_node[node])
    return ({r: np.asarray(v) for r, v in by_node.items()},
            {i: np.asarray(v) for i, v in by_func.items()})


def function_extras(p: Profile) -> dict:
    """Per function: what the correction removed (sums of its rows)."""
    c = p.corrected
    if c is None or c.overhead is None:
        return {}
    ft = p.functions
    func = p.col("func")

    def total(col):
        return np.bincount(func, weights=np.asarray(col, dtype=np.float64),
                           minlength=len(p.funcs))[ft.func_ids]

    over = total(c.overhead)
    clean_incl = total(p.col("incl").astype(np.float64) - p.col("gap_incl"))
    return {"overhead": over, "irq": total(c.irq_removed), "offcpu": total(c.offcpu_removed),
            "clamp": total(c.clamp_ns), "clamped": total(c.clamped),
            "unreliable": (over > 0.5 * clean_incl) & (ft.calls_corr > 0)}


_STATS = '{"sum":%d,"min":%d,"max":%d,"mean":%r,"p50":%d,"p90":%d,"p99":%d}'


def _stats_json(sums, calls, mins, maxs, pcts) -> list:
    """The stats objects of stats_objects(), rendered straight to JSON text:
    100k call paths must not cost 500k dicts."""
    out = []
    for s, c, lo, hi, (p50, p90, p99) in zip(sums.tolist(), calls.tolist(), mins.tolist(),
                                             maxs.tolist(), pcts.tolist()):
        out.append(_STATS % (s, lo if c else 0, hi if c else 0, round(s / c, 1) if c else 0.0,
                             p50, p90, p99))
    return out


_CSTATS = ('{"sum":%.1f,"min":%.1f,"max":%.1f,"mean":%.1f,"p50":%.1f,"p90":%.1f,"p99":%.1f,'
           '"calls":%d%s}')


def _corr_stats_json(sums, calls, mins, maxs, pcts, corr, corr_calls, exact) -> list:
    """corrected_objects() for every node, vectorised and straight to JSON
    text: scaled raw statistics, exact ones where per-call values exist."""
    calls = calls.astype(np.float64)
    raw_mean = np.divide(sums, calls, out=np.zeros(len(sums)), where=calls > 0)
    cc = corr_calls.astype(np.float64)
    mean = np.divide(corr, cc, out=np.zeros(len(corr)), where=cc > 0)
    f = np.divide(mean, raw_mean, out=np.zeros(len(mean)), where=(raw_mean > 0) & (cc > 0))
    cols = [np.maximum(np.where(calls > 0, x, 0) * f, 0.0)
            for x in (mins, maxs, pcts[:, 0], pcts[:, 1], pcts[:, 2])]
    out = [_CSTATS % (s, lo, hi, m, a, b, c, n, ',"approx":true')
           for s, lo, hi, m, a, b, c, n in zip(corr.tolist(), *(x.tolist() for x in cols[:2]),
                                               mean.tolist(), *(x.tolist() for x in cols[2:]),
                                               corr_calls.tolist())]
    rows = sorted(exact)
    if rows:
        objs = corrected_objects([{"mean": 0.0}] * len(rows), corr[rows], corr_calls[rows], True,
                                 {j: exact[r] for j, r in enumerate(rows)})
        for r, o in zip(rows, objs):
            if "approx" not in o:
                out[r] = json.dumps(o, separators=(",", ":"))
    return out


def tree_json(p: Profile) -> str:
    """The `tree` array as JSON text, children sorted by inclusive time."""
    if p.nrows == 0:
        return "[]"
    calls = p.col("calls")
    incl_pct, excl_pct = p.node_percentiles
    incl = _stats_json(p.col("incl"), calls, p.col("incl_min"), p.col("incl_max"), incl_pct)
    excl = _stats_json(p.col("excl"), calls, p.col("excl_min"), p.col("excl_max"), excl_pct)
    if p.corrected is not None:
        cr = p.corrected_or_raw
        exact_nodes, _ = exact_corrected_values(p)
        incl_c = _corr_stats_json(p.col("incl"), calls, p.col("incl_min"), p.col("incl_max"), incl_pct,
                                  cr.incl, cr.calls, exact_nodes)
        excl_c = _corr_stats_json(p.col("excl"), calls, p.col("excl_min"), p.col("excl_max"), excl_pct,
                                  cr.excl, cr.calls, {})
    else:
        incl_c, excl_c = incl, excl
    names = [json.dumps(n) for n in p.funcs]
    func = p.col("func").tolist()
    flags = [json.dumps(node_flags(f)) for f in range(8)]
    flag = p.col("flags").tolist()
    irq, off, desc, unowned, gap = (p.col(c).tolist() for c in ("irq", "offcpu", "desc", "unowned_child_incl",
                                                                 "gap_calls"))
    offcpu_known = _offcpu_known(p)
    if not offcpu_known:
        off = ["null"] * p.nrows
    ncalls = calls.tolist()
    if p.corrected is not None and p.corrected.unreliable is not None:
        extra = ['"clamped":%s,"unreliable":%s,' % ("true" if c else "false", "true" if u else "false")
                 for c, u in zip(p.corrected.clamped.tolist(), p.corrected.unreliable.tolist())]
    else:
        extra = [""] * p.nrows
    # siblings by inclusive time (desc), then name: one global sort
    name_rank = np.argsort(np.argsort(np.array(p.funcs, dtype=object)))
    order = np.lexsort((name_rank[p.col("func")], -p.col("incl"), p.col("parent")))
    kids = [[] for _ in range(p.nrows + 1)]
    for r, par in zip(order.tolist(), p.col("parent")[order].tolist()):
        kids[par].append(r)
    # pre-order walk writing pieces once: nesting strings inside their
    # parents' strings would copy the text once per level of depth
    parts = ["["]
    stack = [(r, i > 0) for i, r in enumerate(kids[-1])][::-1]
    while stack:
        r, comma = stack.pop()
        if r < 0:
            parts.append("]}")
            continue
        parts.append(('%s{"name":%s,"calls":%d,"incl_ns":%s,"excl_ns":%s,"incl_corr_ns":%s,'
                      '"excl_corr_ns":%s,"irq_ns":%d,"offcpu_ns":%s,"descendants":%d,'
                      '"unowned_child_incl_ns":%d,'
                      '"gap_calls":%d,%s"flags":%s,"children":[') % (
            "," if comma else "", names[func[r]], ncalls[r], incl[r], excl[r], incl_c[r],
            excl_c[r], irq[r], off[r], desc[r], unowned[r], gap[r], extra[r], flags[flag[r] & 7]))
        stack.append((-1, False))
        stack.extend([(k, i > 0) for i, k in enumerate(kids[r])][::-1])
    parts.append("]")
    return "".join(parts)


def document(p: Profile, head: dict) -> dict:
    """The document, the tree as a placeholder; `trace` and `calibration`
    from head (the document under test)."""
    applied = p.corrected is not None
    ex = function_extras(p)
    ft = p.functions
    f_incl = stats_objects(ft.incl, ft.calls, ft.incl_min, ft.incl_max, ft.incl_pct)
    f_excl = stats_objects(ft.excl, ft.calls, ft.excl_min, ft.excl_max, ft.excl_pct)
    _, exact_funcs = exact_corrected_values(p)
    f_incl_c = corrected_objects(f_incl, ft.incl_corr, ft.calls_corr, applied, exact_funcs)
    f_excl_c = corrected_objects(f_excl, ft.excl_corr, ft.calls_corr, applied)
    functions = []
    for i, name in enumerate(ft.names):
        functions.append({
            "name": name, "calls": int(ft.calls[i]),
            "incl_ns": f_incl[i], "excl_ns": f_excl[i],
            "incl_corr_ns": f_incl_c[i], "excl_corr_ns": f_excl_c[i],
            "irq_ns": int(ft.irq[i]), "offcpu_ns": int(ft.offcpu[i]) if _offcpu_known(p) else None,
            "gap_calls": int(ft.gap_calls[i]),
        })
        if ex:
            functions[-1].update({
                "hook_cost_removed_ns": round(float(ex["overhead"][i]), 1),
                "irq_removed_ns": round(float(ex["irq"][i]), 1),
                "offcpu_removed_ns": round(float(ex["offcpu"][i]), 1),
                "clamped_ns": round(float(ex["clamp"][i]), 1),
                "clamped": bool(ex["clamped"][i]), "unreliable": bool(ex["unreliable"][i]),
            })
    if p.retvals is not None:
        for f, ret in zip(functions, returns_objects(p)):
            f["returns"] = ret
    return {
        "schema": SCHEMA,
        "tool": {"name": "ftflame", "version": __version__},
        "trace": head["trace"],
        "calibration": head["calibration"],
        "functions": functions,
        "tree": TREE_PLACEHOLDER,
        "root_calls": root_call_objects(p),
        # printed by Python from ftflame/correct/operations.py and hotlists.py (tests/test_operations.py;
        # root_latency: tests/test_jsonout.py recomputes it from root_calls)
        "operations": head["operations"], "root_latency": head["root_latency"],
        "slowest": head["slowest"], "hot": head["hot"],
        "balance": list(p.balance),
        # printed by Python from ftflame/correct/uncertainty.py (tests/test_correction_accuracy.py)
        **({"intervals": head["intervals"]} if "intervals" in head else {}),
    }


def returns_objects(p: Profile) -> list:
    """Per function (functions' order), its calls with a return value from
    the core's per-function-id table (Profile.retvals), errors apart."""
    rv, ids = p.retvals, p.functions.func_ids
    col = {name: rv.table[ids, k] for k, name in enumerate(profile_mod.RETVAL_COLUMNS)}
    sides = {}
    for side, h in (("err", rv.hist_err), ("ok", rv.hist_ok)):
        starts, ends = h.offsets[ids], h.offsets[ids + 1]
        rows = [np.arange(a, b) for a, b in zip(starts.tolist(), ends.tolist())]
        idx = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        sub = Histograms(np.concatenate(([0], np.cumsum(ends - starts))).astype(np.int64), h.buckets[idx],
                         h.counts[idx])
        lo, hi = col[side + "_min"], col[side + "_max"]
        sides[side] = stats_objects(col[side + "_incl"], col[side + "_calls"], lo, hi,
                                    percentiles_np(sub, (50, 90, 99), lo, hi))
    return [{"calls": int(e + o), "errors": int(e), "error_incl_ns": sides["err"][i], "ok_incl_ns": sides["ok"][i]}
            for i, (e, o) in enumerate(zip(col["err_calls"].tolist(), col["ok_calls"].tolist()))]


def root_call_objects(p: Profile) -> list:
    s = p.samples
    if len(s) == 0:
        return []
    cr = p.corrected_or_raw
    names = [p.funcs[f] for f in p.col("func")[s[:, 0]].tolist()]
    ops = p.scol("op").tolist()
    out = []
    for i, row in enumerate(s.tolist()):
        node, pid, cpu, flags, calltime, dur, desc, irq, off = row[:9]
        out.append({"name": names[i], "pid": pid, "cpu": cpu, "start_ns": calltime, "dur_ns": dur,
                    # a gap root call is left out of corrected figures: none
                    "dur_corr_ns": None if flags & SAMPLE_GAP else round(float(cr.sample_dur[i]), 1),
                    "operation": p.operations[ops[i]] if ops[i] >= 0 else None, "descendants": desc,
                    "irq_ns": irq, "offcpu_ns": off if _offcpu_known(p) else None, "gap": bool(flags & SAMPLE_GAP),
                    "partial": bool(flags & SAMPLE_PARTIAL), "irq": bool(flags & SAMPLE_IRQ)})
    return out


TREE_PLACEHOLDER = "@@FTFLAME_TREE@@"


def head_of(doc: str) -> dict:
    """The `trace` and `calibration` objects of a rendered document (they
    come before the rows, which need not be JSON a parser takes: values past
    the fast paths), and `operations`, `root_latency`, `slowest` and `hot` (after them)."""
    dec = json.JSONDecoder()
    out, pos = {}, 0
    for key in ("trace", "calibration", "operations", "root_latency", "slowest", "hot"):
        pos = doc.index('"%s":' % key, pos) + len(key) + 3
        out[key], pos = dec.raw_decode(doc, pos)
    if '"intervals":' in doc[pos:]:
        pos = doc.index('"intervals":', pos) + len("intervals") + 3
        out["intervals"], pos = dec.raw_decode(doc, pos)
    return out


def render(p: Profile, head: dict) -> str:
    text = json.dumps(document(p, head), separators=(",", ":"))
    return text.replace(json.dumps(TREE_PLACEHOLDER), tree_json(p), 1) + "\n"


# ---- numpy versions of what is now done in C --------------------------

def percentiles_np(h: Histograms, qs, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Histograms.percentiles as it was in numpy (the C version must match)."""
    n = h.rows
    out = np.zeros((n, len(qs)), dtype=np.int64)
    if n == 0 or len(h.counts) == 0:
        return out
    cum = np.cumsum(h.counts.astype(np.int64))
    before = np.concatenate(([0], cum))[h.offsets[:-1]]
    total = np.concatenate(([0], cum))[h.offsets[1:]] - before
    mid = profile_mod.bucket_mids(int(h.buckets.max()) + 1)[h.buckets]
    for j, q in enumerate(qs):
        rank = np.maximum(np.ceil(total * (q / 100.0)).astype(np.int64), 1)
        idx = np.searchsorted(cum, before + rank, side="left")
        idx = np.minimum(idx, len(cum) - 1)
        val = np.clip(mid[idx], lo, hi)
        out[:, j] = np.where(total > 0, val, 0)
    return out


def group_np(h: Histograms, keys: np.ndarray, ngroups: int) -> Histograms:
    """Histograms.group (C, _model.hist_group) in numpy, the way it was
    computed before: a sort of every entry by (key, bucket)."""
    gkey = np.repeat(np.asarray(keys, dtype=np.int64), np.diff(h.offsets)) * (1 << 16) + h.buckets
    uniq, inv = np.unique(gkey, return_inverse=True)
    counts = np.zeros(len(uniq), dtype=np.uint64)
    np.add.at(counts, inv.ravel(), h.counts.astype(np.uint64))
    offsets = np.searchsorted(uniq >> 16, np.arange(ngroups + 1), side="left").astype(np.int64)
    return Histograms(offsets, (uniq & 0xFFFF).astype(np.int32), counts)


def sibling_order(p: Profile) -> np.ndarray:
    """Rows sorted by parent, then siblings by inclusive time (desc), then
    name, then row: np.lexsort((name rank, -incl, parent)), in two int64
    argsorts where the keys fit (twice as fast)."""
    parent, incl = p.col("parent"), p.col("incl")
    name_rank = jsonout._name_rank(p)
    n, nf = p.nrows, max(len(p.funcs), 1)
    if incl.min() < 0 or incl.max() >= (1 << 62) // nf:
        return np.lexsort((name_rank, -incl, parent))
    by_key = np.argsort(-incl * nf + name_rank, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[by_key] = np.arange(n)
    return np.argsort(parent * n + rank)  # unique keys: any sort


def preorder(parent: np.ndarray, order: np.ndarray):
    """(pre, depth): the rows in pre-order, siblings in the order they have
    in `order` (rows sorted by parent, then by sibling rank), and each
    row's depth. Vectorised: a few passes per depth level."""
    n = len(parent)
    nkids = np.bincount(parent + 1, minlength=n + 1)  # [0]: the roots
    first = np.zeros(n + 1, dtype=np.int64)  # where x's children start in order: first[x + 1]
    np.cumsum(nkids[:-1], out=first[1:])
    levels = []
    cur = order[:nkids[0]]
    while len(cur):  # breadth first: the children of a level, siblings together
        levels.append(cur)
        lens = nkids[cur + 1]
        ends = np.cumsum(lens)
        if ends[-1] == 0:
            break
        cur = order[np.arange(ends[-1]) + np.repeat(first[cur + 1] - (ends - lens), lens)]
    depth = np.empty(n, dtype=np.int64)
    for d, rows in enumerate(levels):
        depth[rows] = d
    size = np.ones(n, dtype=np.int64)  # subtree sizes, deepest level first
    for rows in levels[:0:-1]:
        np.add.at(size, parent[rows], size[rows])
    # each row's offset among its siblings: the sizes of those before it
    sz = size[order]
    before = np.cumsum(sz) - sz
    off = np.empty(n, dtype=np.int64)
    off[order] = before - before[first[parent[order] + 1]]
    pos = np.empty(n, dtype=np.int64)
    pos[levels[0]] = off[levels[0]]
    for rows in levels[1:]:
        pos[rows] = pos[parent[rows]] + 1 + off[rows]
    pre = np.empty(n, dtype=np.int64)
    pre[pos] = np.arange(n)
    return pre, depth
