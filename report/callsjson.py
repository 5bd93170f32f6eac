"""JSON `operations[]` and `slowest[]` (docs/design.md, the JSON contract):
the figures of ftflame/correct/operations.py, printed."""
from __future__ import annotations

import json

import numpy as np

from ftflame.correct.operations import (
    KEPT_BY_NAMES,
    dominant_steps,
    operation_nodes,
    operation_table,
    root_columns,
    root_table,
    slow_call_tree,
    slowest_batches,
    slowest_calls,
    slowest_columns,
)
from ftflame.model.profile import Profile, distinct

from .common import arg_text, format_rows, retval_text

# "%.1f" % x == repr(round(x, 1)) below this (report/jsonout.py, REPR_SAFE)
_F1_SAFE = 1e14


def ns_or_null(x: float):
    """ns to one decimal; None (null) for NaN: a figure the trace does not give."""
    return None if x != x else round(float(x), 1)


def _stats(d: dict) -> dict:
    return {k: ns_or_null(d[k]) for k in ("p50", "p90", "p99", "max", "mean")}


def operations_json(p: Profile) -> list:
    """One object per (root function, operation); [] when the trace's root
    calls reached no procedure below them (rooted at one procedure)."""
    return [{"root": r.root, "operation": r.operation, "recognised_by": r.how, "calls": r.calls,
             "gap_calls": r.gap_calls, "dur_ns": _stats(r.raw), "dur_corr_ns": _stats(r.corr),
             "share": round(r.share, 6), "share_corr": round(r.corr_share, 6),
             "flame": operation_flame_json(p, r.op)}
            for r in operation_table(p) or ()]


def root_latency_json(p: Profile) -> list:
    """The latency of every root call, per root function (per operation
    under a dispatcher, the root calls entered in interrupt context apart):
    the rows of the text report's first table (operations.root_table)."""
    return [{"root": r.root, "operation": r.operation or None, "irq": bool(r.irq_calls),
             "calls": r.calls, "gap_calls": r.gap_calls, "dur_ns": _stats(r.raw), "dur_corr_ns": _stats(r.corr),
             "share": round(r.share, 6), "share_corr": round(r.corr_share, 6)}
            for r in root_table(p)]


def root_latency_text(p: Profile) -> str:
    """json.dumps(root_latency_json(p)) (compact), formatted in C
    (format_rows) from root_table's columns: a trace may have 100,000s of
    root functions, and a row's dicts and rounding cost more than the rest
    of its report."""
    cols = root_columns(p)
    if cols is None or not len(cols["root"]):
        return "[]"
    n = len(cols["root"])
    ops, op_index = np.unique(np.array(cols["operation"], dtype=object), return_inverse=True)
    items = [',{"root":', ("e", np.arange(n), list(map(_ENC_STR, cols["root"]))),
             ',"operation":', ("e", op_index.reshape(-1).astype(np.int64), [_ENC_STR(o) if o else "null" for o in ops]),
             ',"irq":', ("e", (cols["irq_calls"] > 0).astype(np.int64), ["false", "true"]),
             ',"calls":', ("i", cols["calls"].astype(np.int64)),
             ',"gap_calls":', ("i", cols["gap_calls"].astype(np.int64))]
    for key, stats in (("dur_ns", cols["raw"]), ("dur_corr_ns", cols["corr"])):
        for k, name in enumerate(_STATS):
            items.append(',"%s":{"%s":' % (key, name) if k == 0 else ',"%s":' % name)
            items.append(_r1_or_null_item(np.ascontiguousarray(stats[name], dtype=np.float64)))
        items.append("}")
    for key in ("share", "share_corr"):
        # the shares' texts made once per value (many rows share one)
        vals, at = np.unique(cols["corr_share" if key == "share_corr" else "share"], return_inverse=True)
        items += [',"%s":' % key, ("e", at.reshape(-1).astype(np.int64),
                                   [_float_text(round(x, 6)) for x in vals.tolist()])]
    items.append("}")
    return "[" + format_rows(items, n)[1:] + "]"


_STATS = ("p50", "p90", "p99", "max", "mean")
_ENC_STR = json.encoder.encode_basestring_ascii  # json.dumps of a str


def _float_text(x: float) -> str:
    """json.dumps(x) of a float."""
    return repr(x) if x - x == 0 else json.dumps(x)


def _f1_safe(a: np.ndarray) -> bool:
    """Whether every value of a that is not NaN prints as "%.1f" (finite,
    below _F1_SAFE): NaN itself is written "null" by format_rows' f1n."""
    return not len(a) or bool(np.abs(a[a == a]).max(initial=0.0) < _F1_SAFE)


def _r1_or_null_item(a: np.ndarray):
    """A format_rows item printing json.dumps(ns_or_null(x)) of each value:
    "%.1f" (NaN: null) in C where that is the same text."""
    if _f1_safe(a):
        return ("f1n", a)
    return ("e", np.arange(len(a)), [json.dumps(ns_or_null(x)) for x in a.tolist()])


def operation_flame_json(p: Profile, op: int):
    """The call paths of the flame graph that belong to operation `op`
    (ftflame/correct/operations.py, operation_nodes): each naming function's
    path from the root down (its subtree and ancestors go with it), and their
    summed inclusive time; null for (no procedure)."""
    n = operation_nodes(p).get(op)
    if n is None:
        return None
    corr = np.asarray(p.corrected_or_raw.incl, dtype=np.float64)
    # the tops' own figures: not an int64 copy of a whole column per path
    calls, incl = p.col("calls", n.tops).tolist(), p.col("incl", n.tops).tolist()
    return {"paths": [{"path": p.path(r), "calls": c, "incl_ns": i, "incl_corr_ns": ns_or_null(corr[r])}
                      for r, c, i in zip(n.tops.tolist(), calls, incl)],
            "incl_ns": n.incl, "incl_corr_ns": ns_or_null(n.incl_corr), "shared": n.shared}


def _r1_list(a) -> list:
    return [None if x != x else round(x, 1) for x in np.asarray(a, dtype=np.float64).tolist()]


def _tree_funcs(p: Profile, calls: dict):
    """A kept tree's function table: (names in order of first appearance,
    each call's index into them)."""
    n = len(calls["func"])
    ids, func = np.unique(calls["func"], return_inverse=True)
    first = np.full(len(ids), n, dtype=np.int64)
    np.minimum.at(first, func, np.arange(n))
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids))
    return [p.funcs[int(f)] for f in ids[order].tolist()], rank[func]


def call_tree_json(p: Profile, calls: dict, start_ns: int):
    """One kept root call's tree as columns, one value per call in entry
    order (row 0 is the root; a call's children follow it in call order):
    no key repeated per call, function names once per tree (`funcs`, indexed
    by `func`), start times relative to the root call's (`at_ns`)."""
    n = len(calls["parent"])
    if not n:
        return None
    names, func = _tree_funcs(p, calls)
    return {"calls": n, "funcs": names, "func": func.tolist(), "parent": calls["parent"].tolist(),
            "at_ns": (calls["calltime"] - start_ns).tolist(), "cpu": calls["cpu"].tolist(),
            "incl_ns": calls["incl"].tolist(), "excl_ns": calls["excl"].tolist(),
            "incl_corr_ns": _r1_list(calls["corr_incl"]), "excl_corr_ns": _r1_list(calls["corr_excl"]),
            "irq_ns": calls["irq"].tolist(), "offcpu_ns": calls["offcpu"].tolist() if p.offcpu_known else None,
            "irq": calls["is_irq"].astype(np.int64).tolist(), "gap": calls["gap"].astype(np.int64).tolist(),
            **values_json(p, calls, 0, n)}


def values_json(p: Profile, calls: dict, a: int = 0, b: int | None = None) -> dict:
    """Calls a..b's recorded values, only where the trace has them: `ret`
    (the return value as the kernel prints it, null where the exit had
    none), `args` (the entry's argument values in hex, null where it had
    none)."""
    out = {}
    if p.trace.has_retval:
        out["ret"] = [retval_text(v) if h else None
                      for v, h in zip(calls["retval"][a:b].tolist(), calls["has_ret"][a:b].tolist())]
    if p.call_args:
        out["args"] = [[arg_text(x) for x in v[:p.call_args]] if h else None
                       for v, h in zip(calls["args"][a:b].tolist(), calls["has_args"][a:b].tolist())]
    return out


def slowest_json(p: Profile) -> list:
    return [_slow_call_json(p, s) for s in slowest_calls(p)]


def _slow_call_json(p: Profile, s, tree: bool = True) -> dict:
    out = {"root": s.root, "operation": s.operation, "start_ns": s.start_ns, "pid": s.pid, "cpu": s.cpu,
           "dur_ns": s.dur, "dur_corr_ns": ns_or_null(s.corr), "gap": s.gap, "kept_by": s.kept_by,
           "dominant_path": list(s.dominant)}
    if tree:
        out["tree"] = call_tree_json(p, slow_call_tree(p, s), s.start_ns) if s.tree is not None else None
    return out


def _ints_text(a) -> str:
    """json.dumps(list(a)) (compact) of an integer column, formatted in C."""
    a = np.ascontiguousarray(a, dtype=np.int64)
    return "[" + format_rows([",", ("i", a)], len(a))[1:] + "]" if len(a) else "[]"


def _r1_text(a) -> str:
    """json.dumps(_r1_list(a)) (compact), in C where "%.1f" is the same text."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    if len(a) and _f1_safe(a):
        return "[" + format_rows([",", ("f1n", a)], len(a))[1:] + "]"
    return json.dumps(_r1_list(a), separators=(",", ":"))


def slowest_json_parts(p: Profile):
    """The pieces of json.dumps(slowest_json(p)) (compact), made one batch
    of calls at a time as they are asked for (slowest_batches), formatted in
    C (format_rows) from the slowest calls' columns, each tree decoded once
    for its dominant path and its columns, those of the whole batch at once
    (_trees_text): a trace may keep a call per root function, 100,000s of
    them."""
    yield "["
    cols = slowest_columns(p)
    if cols is not None:
        names = json_names(p)
        roots = list(map(_ENC_STR, cols["root"]))
        ops = ["null" if o is None else _ENC_STR(o) for o in cols["operations"]]
        for a, b, dec, first, kept in slowest_batches(p):
            n = b - a
            has = cols["kept"][a:b]
            comma = np.zeros(n, dtype=np.int64)
            comma[0] = a == 0  # the array's first call: no comma before it
            items = [("e", comma, [",", ""]), '{"root":', ("e", np.arange(n), roots[a:b]),
                     ',"operation":', ("e", cols["operation_of"][a:b], ops)]
            for key in ("start_ns", "pid", "cpu", "dur"):
                items += [',"%s_ns":' % key if key == "dur" else ',"%s":' % key, ("i", cols[key][a:b])]
            items += [',"dur_corr_ns":', _r1_or_null_item(cols["corr"][a:b]),
                      ',"gap":', ("e", cols["gap"][a:b].astype(np.int64), ["false", "true"]),
                      ',"kept_by":', ("e", cols["kept_by"][a:b].astype(np.int64), _KEPT_BY_JSON),
                      ',"dominant_path":[', _dominant_item(dec, first, kept, has, names), "]",
                      ',"tree":', *_tree_items(p, cols["start_ns"][a:b][has], dec, first, kept, has), "}"]
            yield format_rows(items, n)
    yield "]"


_KEPT_BY_JSON = [json.dumps(k) for k in KEPT_BY_NAMES]


def json_names(p: Profile) -> list:
    """Each function name's JSON (json.dumps), by function id."""
    return p.views.get("json_names", lambda: list(map(_ENC_STR, p.funcs)))


def _dominant_item(dec: dict | None, first: np.ndarray, kept: np.ndarray, has: np.ndarray, names: list):
    """A format_rows item writing the body of json.dumps(dominant_path) of
    each call of a batch (has: whether its tree was kept; dec, first and
    kept: call_trees' columns of the kept ones): the names of its path's
    functions, a run of the paths' steps (none without a kept tree), not
    a text per path."""
    start = np.zeros(len(has), dtype=np.int64)
    count = np.zeros(len(has), dtype=np.int64)
    func = np.zeros(0, dtype=np.int64)
    if dec is not None:
        tree, row = dominant_steps(dec, first, kept)  # tree after tree, each from its root down
        steps = np.bincount(tree, minlength=len(kept))
        at = np.zeros(len(kept), dtype=np.int64)
        np.cumsum(steps[:-1], out=at[1:])
        start[has], count[has] = at, steps  # the kept trees: the batch's calls in has, in order
        func = np.asarray(dec["func"][row], dtype=np.int64)
    return _names_run(start, count, func, names)


def _names_run(start: np.ndarray, count: np.ndarray, funcs: np.ndarray, names: list):
    """A format_rows item writing, at row r, the names of funcs[start[r]:
    start[r] + count[r]] comma-separated: its fragments the names funcs use
    only (a trace may name millions)."""
    used = distinct(funcs)
    return ("se", start, count, np.searchsorted(used, funcs), [names[f] for f in used.tolist()])


def _tree_items(p: Profile, starts: np.ndarray, cols, first, kept, has) -> list:
    """format_rows items writing json.dumps(call_tree_json(...)) (compact)
    of each call of a batch (slowest_batches; has: whether its tree was
    kept; starts: the kept ones' start_ns; cols, first, kept: call_trees'
    columns of the kept trees), null for a call without one: each column
    of a tree its run of the batch's calls, written in C into the batch's
    own text (no text per tree or column made first; a tree's columns as
    Python numbers would take many times their text and leave the heap
    fragmented: a higher peak RSS), as a trace may keep a tree of a call
    or two per distinct root function."""
    n = len(has)
    on = np.zeros(n, dtype=np.int64)  # the batch's calls whose tree has calls
    if cols is None or not (kept > 0).any():
        return ["null"]
    some = kept > 0
    at_row = np.flatnonzero(has)[some]  # each such tree's call in the batch
    on[at_row] = 1

    def per_call(values) -> np.ndarray:  # a tree's figure at its call of the batch, 0 at the others
        out = np.zeros(n, dtype=np.int64)
        out[at_row] = values
        return out

    tree_of = np.repeat(np.arange(len(kept)), kept)
    # each call's function: its rank in its tree's functions by first call
    nf = max(len(p.funcs), 1)
    key = tree_of * nf + cols["func"].astype(np.int64)
    ukey, at, inv = np.unique(key, return_index=True, return_inverse=True)
    order = np.lexsort((at, ukey // nf))
    pos = np.empty(len(ukey), dtype=np.int64)
    pos[order] = np.arange(len(ukey))
    per_tree = np.bincount(ukey // nf, minlength=len(kept))
    ustart = np.zeros(len(kept), dtype=np.int64)
    np.cumsum(per_tree[:-1], out=ustart[1:])
    func = (pos - ustart[ukey // nf])[inv.reshape(-1)]
    funcs = ukey[order] % nf
    par = cols["parent"]
    # each tree's calls: a run of the batch's kept calls (format_rows'
    # "si", "sf1n", "se"), none at a call without a tree
    run_at, cnt = per_call(first[some]), per_call(kept[some])
    idx = np.where(on > 0, np.cumsum(on) - 1, int(on.sum()))  # a tree's texts by its call; "" after them

    def lit(text: str):  # a literal of the tree's object: at the calls with one only
        return ("e", on, ["", text])

    def ints(a) -> list:
        return [lit("["), ("si", run_at, cnt, np.ascontiguousarray(a, dtype=np.int64)), lit("]")]

    def r1(a) -> list:
        a = np.ascontiguousarray(a, dtype=np.float64)
        # NaN (no corrected figure: a gap) is written null in C; a tree
        # with an infinity or a huge value by _r1_text's fallback, every
        # tree's text then made apart
        if _f1_safe(a):
            return [lit("["), ("sf1n", run_at, cnt, a), lit("]")]
        return [("e", idx, [_r1_text(a[f:f + k]) for f, k in zip(first[some].tolist(), kept[some].tolist())]
                 + [""])]

    columns = [("func", ints(func)), ("parent", ints(np.where(par >= 0, par - first[tree_of], -1))),
               ("at_ns", ints(cols["calltime"] - starts[tree_of])), ("cpu", ints(cols["cpu"])),
               ("incl_ns", ints(cols["incl"])), ("excl_ns", ints(cols["excl"])),
               ("incl_corr_ns", r1(cols["corr_incl"])), ("excl_corr_ns", r1(cols["corr_excl"])),
               ("irq_ns", ints(cols["irq"])),
               ("offcpu_ns", ints(cols["offcpu"]) if p.offcpu_known else None),
               ("irq", ints(cols["is_irq"])), ("gap", ints(cols["gap"]))]
    if p.trace.has_retval or p.call_args:  # the recorded values, per tree (only traces that have them)
        per = [values_json(p, cols, a, a + m) for a, m in zip(first[some].tolist(), kept[some].tolist())]
        for key in per[0] if per else ():
            columns.append((key, [("e", idx, [json.dumps(v[key], separators=(",", ":")) for v in per] + [""])]))
    # each tree's function names, in the order of its `funcs`
    items = [("e", on, ["null", '{"calls":']), ("si", np.arange(n), on, per_call(kept[some])), lit(',"funcs":['),
             _names_run(per_call(ustart[some]), per_call(per_tree[some]), funcs, json_names(p)), lit("]")]
    for key, col in columns:
        items += [lit(',"%s":' % key), *([lit("null")] if col is None else col)]
    items.append(lit("}"))
    return items


def hot_json(p: Profile) -> dict:
    """The hot lists (ftflame/correct/hotlists.py): `functions` and `paths` by
    corrected self time, `offcpu` paths by their own off-CPU time (null
    without sched_switch events)."""
    from ftflame.correct import hotlists

    def rows(items, key):
        return [{("path" if r.path else "name"): list(r.path) if r.path else r.name, "calls": r.calls,
                 key: ns_or_null(r.ns), "share": round(r.share, 6)} for r in items]

    off = hotlists.offcpu_paths(p)
    return {"functions": rows(hotlists.hot_functions(p), "self_corr_ns"),
            "paths": rows(hotlists.hot_paths(p), "self_corr_ns"),
            "offcpu": None if off is None else rows(off, "offcpu_ns")}
