"""JSON output, schema "ftflame/1" (the contract in docs/design.md).

Raw figures are exact sums of the tracer's own durations. Corrected figures
(`*_corr_ns`, ftflame/correct/corrections.py) equal raw ones when no corrections were
applied; `calibration` says which calibration was used, its spread and what
the corrections removed.
"""
from __future__ import annotations

import json

import numpy as np

from ftflame import __version__, _model
from ftflame.correct import calibration, corrections, uncertainty
from ftflame.correct.operations import root_table
from ftflame.model.profile import SAMPLE_GAP, SAMPLE_IRQ, SAMPLE_PARTIAL, OffCpu, Profile
from ftflame.parse._core import give_back_freed_memory

from .callsjson import hot_json, ns_or_null, operations_json, root_latency_text, slowest_json_parts
from .common import RowsToFile, context_lines, format_rows, node_flags, report_notes
from .options import DEFAULT, RenderOptions

SCHEMA = "ftflame/1"
_json_str = json.encoder.encode_basestring_ascii  # json.dumps of a str, without its call's setup


def document(p: Profile) -> dict:
    """The document; `functions`, `tree` and `root_calls`, rows by the
    thousand, are placeholders written by render() (format_rows)."""
    return {
        "schema": SCHEMA,
        "tool": {"name": "ftflame", "version": __version__},
        "trace": trace_object(p),
        "calibration": calibration_object(p),
        "functions": PLACEHOLDERS["functions"],
        "tree": PLACEHOLDERS["tree"],
        "root_calls": PLACEHOLDERS["root_calls"],
        "operations": operations_json(p),
        "root_latency": PLACEHOLDERS["root_latency"],
        "slowest": PLACEHOLDERS["slowest"],  # written by _head_tail, a tree at a time
        "hot": hot_json(p),
        "balance": list(p.balance),
        # a collect.sh run directory's totals measured outside the tracer
        **({"measured": p.measured} if p.measured is not None else {}),
        # the server's CPU time measured outside the tracer (cpu-main.txt)
        **({"cpu": p.cpu} if p.cpu is not None else {}),
        # 95% half-widths of the corrected figures, when the calibration has intervals
        **({"intervals": iv} if (iv := intervals_object(p)) is not None else {}),
    }


def intervals_object(p: Profile):
    """The `intervals` member (docs/design.md): every corrected figure's 95%
    half-width from ftflame/correct/uncertainty.py, aligned with the arrays
    it belongs to; None without calibration intervals."""
    h = uncertainty.stat_half_widths(p)
    if h is None:
        return None
    h_in, h_sum, h_out = uncertainty.cost_half_widths(p.calibration)
    pre, _ = tree_order(p) if p.nrows else (np.zeros(0, dtype=np.int64), None)
    calls = uncertainty.root_half_widths(p) if len(p.samples) else np.zeros(0)
    ops = uncertainty.operation_half_widths(p) or []
    roots = uncertainty.operation_half_widths(p, root_table(p)) or []

    def objs(cols, rows) -> list:
        picked = [np.round(np.asarray(c, dtype=np.float64)[rows], 1).tolist() for c in cols]
        return [dict(zip(corrections.STAT_NAMES, v)) for v in zip(*picked)]

    def both(level, rows) -> list:  # beside incl_corr_ns and excl_corr_ns
        return [{"incl_corr_ns": i, "excl_corr_ns": x}
                for i, x in zip(objs(h[level, "incl"], rows), objs(h[level, "excl"], rows))]

    return {
        "level": 0.95,
        # what every half-width below holds: the calibration's sampling spread, the
        # model's own error measured on truth pairs, or a word that it is not in it
        "made_of": uncertainty.made_of(p),
        "cost_half_widths_ns": {"o_in": round(h_in, 2), "o_in_plus_o_out": round(h_sum, 2),
                                "o_out": round(h_out, 2)},
        "functions": both("functions", np.arange(len(p.functions))),
        "tree": both("nodes", pre),
        # a gap root call has no corrected duration (null), so no interval either
        "root_calls": [None if g else v for g, v in zip(
            ((p.scol("flags") & SAMPLE_GAP) != 0).tolist(), np.round(calls, 1).tolist())],
        "operations": [{k: ns_or_null(v) for k, v in o.items()} for o in ops],  # null: no clean call
        "root_latency": [{k: ns_or_null(v) for k, v in o.items()} for o in roots],
    }


def trace_object(p: Profile) -> dict:
    t, c = p.trace, p.counters
    return {
        "source": t.source, "format": t.format, "kernel": t.kernel, "clock": t.clock,
        "cpus": t.cpus, "tracer_version": t.tracer_version, "file_version": t.file_version,
        "compression": t.compression, "per_task_stacks": t.per_task, "irq_source": t.irq_source,
        "has_sched_switch": p.offcpu_known,
        "events": c.get("events", 0), "events_per_cpu": {str(k): v for k, v in t.events_per_cpu.items()},
        "entries": c.get("entries", 0), "exits": c.get("exits", 0),
        "lost_events": c.get("lost_events", 0),
        "lost_events_per_cpu": {str(k): v for k, v in sorted(p.lost_per_cpu.items())},
        "lost_gaps_unknown_size_per_cpu": {str(k): v for k, v in sorted(p.lost_gaps_unknown_per_cpu.items())},
        "incomplete_calls": {"open_at_end": c.get("open_at_end", 0),
                             "unterminated": c.get("unterminated", 0),
                             "orphan_exits": c.get("orphan_exits", 0),
                             "gap_calls": c.get("gap_calls", 0)},
        "counters": dict(c),
        "notes": report_notes(p),
        # text inputs: how stacks and irq context were worked out
        **({"context": ctx} if (ctx := context_lines(p)) else {}),
    }


def calibration_object(p: Profile) -> dict:
    cal = p.calibration
    d = dict(cal.details) if isinstance(cal.details, dict) else {}
    spread = {}
    ci, ci_note = calibration.intervals(cal)  # (those of the values used only)
    for k in ("o_in", "o_out"):
        obj = d.get(k) if isinstance(d.get(k), dict) else {}
        if k in ci:
            of = d.get("o_in_root_only") if k == "o_in" and d.get("applied_o_in") else obj
            spread[k] = {"ci95_ns": ci[k], "samples": of.get("samples") if isinstance(of, dict) else None}
        elif "p1_ns" in obj:
            spread[k] = {"p1_p5_ns": [obj["p1_ns"], obj.get("p5_ns")], "samples": obj.get("samples")}
    return {"source": cal.source, "applied": cal.applied, "o_in_ns": cal.o_in_ns,
            "o_out_ns": cal.o_out_ns, "method": cal.method, "spread": spread,
            "fit": dict(cal.fit) if cal.fit else None,  # (its kernel_note: calibration.kernel_note)
            **({"spread_note": ci_note} if ci_note else {}),
            # what the corrected figures' 95% intervals hold, or why there are none
            # (ftflame/correct/uncertainty.py made_of; null when not corrected)
            "intervals_made_of": uncertainty.made_of(p),
            "corrections": corrections_object(corrections.summary(p)), "details": d}


# The JSON's words for what the correction did with the off-CPU time.
OFFCPU_WORDS = {OffCpu.REMOVED: "removed", OffCpu.KEPT_ASKED: "kept (asked for)", OffCpu.KEPT_NOSLEEP: "kept: ",
                OffCpu.UNKNOWN: "unknown: no sched_switch events"}


def corrections_object(sm: corrections.Summary | None) -> dict | None:
    """The JSON `calibration.corrections` object: the totals of the corrections."""
    if sm is None:
        return None
    sched = {}
    if sm.switches is not None:
        sched = {"switch_work_removed_ns": sm.switch_work_removed_ns, "switches": sm.switches}
    return {
        "irqs": sm.irqs, "offcpu": OFFCPU_WORDS[sm.offcpu] + sm.offcpu_reason,
        "clean_calls": sm.clean_calls, "gap_calls": sm.gap_calls,
        "overhead_removed_ns": sm.overhead_removed_ns, "irq_removed_ns": sm.irq_removed_ns,
        "offcpu_removed_ns": sm.offcpu_removed_ns, **sched,
        "clamped_paths": sm.clamped_paths, "clamped_ns": sm.clamped_ns,
        "clamped_root_calls": sm.clamped_root_calls, "unreliable_paths": sm.unreliable_paths,
    }


# ---- the row arrays: tree, functions, root_calls ------------------------
# 100k+ call paths of ~45 figures each: the rows are laid out as numpy
# columns (the tree's in pre-order) and written by format_rows (report/native), the
# tree in one call that also writes the rest of the document around it. The
# text is byte for byte what json.dumps of dicts and per-node "%d", "%.1f"
# and repr(round(x, 1)) formatting wrote before (tests/helpers/jsonref.py).

# "%.1f" % x == repr(round(x, 1)) for finite |x| below this (at most 15
# significant digits: the decimal survives the trip through a double);
# beyond it, and for sums past 2**53, those columns are formatted in Python.
REPR_SAFE = 1e14
EXACT_INT = 2.0 ** 53


class _Template:
    """A format_rows template; adjacent literals merged."""

    def __init__(self):
        self.items = []

    def lit(self, s: str):
        if self.items and isinstance(self.items[-1], str):
            self.items[-1] += s
        else:
            self.items.append(s)

    def col(self, kind: str, values, *extra):
        self.items.append((kind, values, *extra))

    def enum(self, index, frags: list):
        if len(frags) == 1:
            self.lit(frags[0])
        else:
            self.col("e", index, frags)

    def extend(self, items: list):
        for item in items:
            if isinstance(item, str):
                self.lit(item)
            else:
                self.items.append(item)

    def text(self, fragments: list):
        """One Python-formatted string per row."""
        self.col("e", np.arange(len(fragments), dtype=np.int64), fragments)


def _name_rank(p: Profile) -> np.ndarray:
    """Per row: its function name's rank in sorted order."""
    return np.argsort(np.argsort(np.array(p.funcs, dtype=object)))[p.col("func")]


def tree_order(p: Profile):
    """(pre, depth): the rows in pre-order, siblings by inclusive time
    (descending), then name, then row; and each row's depth. In C
    (_model.tree_preorder, faster than the numpy version in
    tests/helpers/jsonref.py it is compared with)."""
    pre, depth = _model.tree_preorder(np.ascontiguousarray(p.col("parent")), np.ascontiguousarray(p.col("incl")),
                                     np.ascontiguousarray(_name_rank(p), dtype=np.int64))
    return np.frombuffer(pre, dtype=np.int64), np.frombuffer(depth, dtype=np.int64)


def _raw_stats(t: _Template, sums, calls, mean, mins, maxs, pcts, exact_mean=None):
    """{sum,min,max,mean,p50,p90,p99} of stats_objects(), in row order;
    mean: the model's means of these rows. exact_mean: whether every mean
    of the whole column (these rows may be a chunk of it) prints as "%.1f"
    (_means_fit), decided once per column so that a chunk writes its means
    as the whole column would."""
    has = calls != 0
    t.lit('{"sum":')
    t.col("i", sums)
    t.lit(',"min":')
    t.col("i", np.where(has, mins, 0))
    t.lit(',"max":')
    t.col("i", np.where(has, maxs, 0))
    t.lit(',"mean":')
    if not (_means_fit(sums, mean) if exact_mean is None else exact_mean):
        t.text(["%r" % round(m, 1) for m in mean.tolist()])
    else:
        t.col("f1", mean)
    for q, name in enumerate(("p50", "p90", "p99")):
        t.lit(',"%s":' % name)
        t.col("i", pcts[:, q])
    t.lit("}")


def _means_fit(sums, mean) -> bool:
    """Whether the means of these sums all print exactly as "%.1f" (the
    sums below 2**53, the means below REPR_SAFE)."""
    if not len(sums):
        return True
    return not (sums.max() >= EXACT_INT or sums.min() <= -EXACT_INT or
                max(mean.max(), -mean.min()) >= REPR_SAFE)


def _exact_unsafe(stats) -> np.ndarray:
    """Per statistic: whether an exact row's value may not print as "%.1f"
    (exact rows were json.dumps(round(x, 1))), from scaled_stats' result
    over every exact row."""
    cols, _, ex, vals = stats
    if len(ex):
        return ~(np.abs(vals) < REPR_SAFE).all(axis=0)
    return np.zeros(len(cols), dtype=bool)


def _corr_stats(t: _Template, stats, calls, repr_round: bool = False, unsafe=None):
    """The corrected statistics objects of ftflame.correct.corrections.scaled_stats
    (computed beside the Profile; calls: the clean calls they cover), in
    their row order. repr_round: every value as json.dumps(round(x, 1))
    (the functions' rows). unsafe: _exact_unsafe over the whole column when
    these rows are a chunk of it (a chunk then writes as the whole would)."""
    cols, approx, ex, vals = stats
    if unsafe is None:
        unsafe = _exact_unsafe(stats)
    for k, name in enumerate(corrections.STAT_NAMES):
        t.lit(('{"%s":' if k == 0 else ',"%s":') % name)
        if repr_round:
            _repr_round(t, cols[k])
        elif unsafe[k]:
            ex_rows = set(ex.tolist())
            t.text([json.dumps(round(x, 1)) if r in ex_rows else "%.1f" % x
                    for r, x in enumerate(cols[k].tolist())])
        else:
            t.col("f1", cols[k])
    t.lit(',"calls":')
    t.col("i", np.asarray(calls).astype(np.int64))
    t.enum(approx, ["", ',"approx":true'])
    t.lit("}")


# Rows of the `tree` array formatted at a time when written to a file: the
# template's columns (about 50 of them) then cost 50 x 8 bytes a row for
# these rows only, not for every call path.
TREE_CHUNK_ROWS = 4096
# levels of call paths nested in one JSON array before the rest continues
# by reference (`tree_continued`): a level is an object and an array, and jq
# 1.6 reads at most 256 levels, counting an object as two (85 call paths);
# Python's json stops at its recursion limit (1000 by default)
TREE_NEST_LEVELS = 64


def tree_templates(p: Profile, head: str = "", tail: str = "", chunk: int = 0):
    """The format_rows templates writing head, the `tree` array (children
    sorted by inclusive time, then name) and tail, for p.nrows > 0 rows:
    (template, rows) for each chunk of `chunk` rows in pre-order (all at
    once if 0), their text in a row the whole array's. A tree deeper than
    TREE_NEST_LEVELS is cut there (_nest_cuts): `tree_continued` follows
    the `tree` array."""
    pre, depth = tree_order(p)
    n = p.nrows
    chunk = chunk or n
    # what each row writes depends on its own columns, on the next row's
    # depth (the brackets it closes) and on per-column choices made once
    d = depth[pre]
    del depth  # kept while the rows are written: only what they need, in 32 bits
    cuts = None
    if d.max() >= TREE_NEST_LEVELS:
        pre, closes, cuts = _nest_cuts(p, pre, d)
    else:
        pre = pre.astype(np.int32)
        closes = np.empty(n, dtype=np.int32)
        closes[:-1] = np.maximum(d[:-1] - d[1:] + 1, 0)
        closes[-1] = d[-1] + 1
    del d
    means_fit = {kind: _means_fit(p.col(kind), p.node_means(kind)) for kind in ("incl", "excl")}
    names = list(map(_json_str, p.funcs))
    corr = None
    if p.corrected is not None:
        # the corrected statistics a chunk at a time (corrections.node_stats),
        # the choices that depend on the whole column made over its exact rows
        by_node = corrections.exact_values(p)[0]
        corr = (by_node, {kind: _exact_unsafe(corrections.node_stats(p, kind, by_node.keys, by_node))
                          for kind in ("incl", "excl")})
    # the sparse columns a row prints made whole once, in their stored width:
    # a chunk's rows looked up among their non-zero ones cost a binary search
    # each, several times a gather
    whole = {name: p.nodes.stored(name) for name in ("irq", "offcpu", "unowned_child_incl")
             if p.nodes.is_sparse(name)}
    for lo in range(0, n, chunk):
        hi = min(lo + chunk, n)
        cut = None if cuts is None else (cuts[0][lo:hi], cuts[1][lo:hi], cuts[2])
        # head and tail only in the chunks that write them: a fragment's
        # length sizes the buffers of every chunk it is in (format_rows)
        yield _tree_rows(p, pre[lo:hi], closes[lo:hi], lo == 0, hi == n, head if lo == 0 else "",
                         tail if hi == n else "", names, means_fit, corr, cut, whole), hi - lo


def _nest_cuts(p: Profile, pre: np.ndarray, d: np.ndarray) -> tuple:
    """A tree deeper than TREE_NEST_LEVELS as nested arrays of at most that
    many levels: the rows of depth below it in pre-order (the `tree` array),
    then, band after band of TREE_NEST_LEVELS levels, the children of each
    path at the last level of the band before (a `tree_continued` entry each,
    in that order: the path says `"children":null,"continued":k`).
    Returns (rows in that order, the brackets each closes, (continuation
    code per row: 0 none, k + 1 for `continued` k; what follows each row:
    an index into the fragments of _tree_rows; their count))."""
    n = len(pre)
    band = d // TREE_NEST_LEVELS
    rel = d - band * TREE_NEST_LEVELS
    has_kids = np.zeros(n, bool)
    has_kids[:-1] = d[1:] > d[:-1]
    cut = (rel == TREE_NEST_LEVELS - 1) & has_kids
    order = np.argsort(band, kind="stable")  # band after band, each in pre-order
    seq, band, rel, cut = pre[order], band[order], rel[order], cut[order]
    del order
    # a band's rows are grouped by the path they continue (their top rows' caller)
    last_top = np.maximum.accumulate(np.where(rel == 0, np.arange(n), 0))
    key = np.where(band > 0, p.col("parent")[seq[last_top]], -1)
    end = np.ones(n, bool)
    end[:-1] = key[1:] != key[:-1]
    closes = np.where(end, rel + 1, 0)
    closes[:-1] = np.where(end[:-1], closes[:-1], np.maximum(rel[:-1] - rel[1:] + 1, 0))
    code = np.where(cut, np.cumsum(cut), 0)
    # after a row: "" (its children follow), "," (a row of the same array),
    # "],[" (the next continued array), the end of `tree` and the first
    # continued array, the end of both
    after = np.where(closes > 0, 1, 0)
    after[end & (key >= 0)] = 2
    after[end & (key < 0)] = 3
    after[-1] = 4
    return seq.astype(np.int32), closes.astype(np.int32), (code.astype(np.int32), after, int(cut.sum()))


def tree_template(p: Profile, head: str = "", tail: str = "") -> list:
    """The one format_rows template of the whole `tree` array (tree_templates)."""
    return next(tree_templates(p, head, tail))[0]


def _tree_rows(p: Profile, pre, closes, first_chunk: bool, last_chunk: bool, head: str, tail: str,
               names: list, means_fit: dict, corr, cut=None, whole=None) -> list:
    """The template of the tree rows `pre` (a run of the pre-order); corr:
    (exact values by node, _exact_unsafe by kind) when corrected; cut: the
    rows' (continuation codes, what follows each, continuations) of a tree
    cut by _nest_cuts."""
    n = len(pre)
    # the chunk's rows as numpy's own index type: gathering ~50 columns by an
    # int32 index takes numpy's general (casting) path, several times slower
    pre = pre.astype(np.intp)

    def col(name):  # in pre-order, one column at a time: not the whole node table copied
        if whole and name in whole:
            return whole[name][pre].astype(np.int64, copy=False)
        return p.col(name, pre)

    calls = col("calls")
    # each column gathered once for the chunk: the statistics below (the
    # model's means and percentiles, the corrected ones) take them as given
    raw = {kind: (col(kind), col(kind + "_min"), col(kind + "_max")) for kind in ("incl", "excl")}
    incl_pct, excl_pct = p.node_percentiles_at(pre, bounds={k: v[1:] for k, v in raw.items()})
    corr_calls = None if corr is None else p.corrected.calls[pre]
    t = _Template()
    first = np.zeros(n, dtype=np.int64)
    first[0] = first_chunk
    t.enum(first, ["", head + "["])
    t.lit('{"name":')
    t.col("e", col("func"), names)
    t.lit(',"calls":')
    t.col("i", calls)
    parts = {}
    for kind in ("incl", "excl"):
        pct = incl_pct if kind == "incl" else excl_pct
        tr = _Template()
        sums, mins, maxs = raw[kind]
        # the means the model gives (Profile.node_means), not computed here
        mean = p.node_means(kind, pre, (sums, calls))
        _raw_stats(tr, sums, calls, mean, mins, maxs, pct, means_fit[kind])
        parts[kind] = tr.items
        if corr is not None:
            by_node, unsafe = corr
            tc = _Template()
            _corr_stats(tc, corrections.node_stats(p, kind, pre, by_node, pct, (sums, calls, mins, maxs), mean,
                                                   corr_calls),
                        corr_calls,
                        unsafe=unsafe[kind])
            parts[kind + "_corr"] = tc.items
        else:
            parts[kind + "_corr"] = tr.items
    for key in ("incl", "excl", "incl_corr", "excl_corr"):
        t.lit(',"%s_ns":' % key)
        t.extend(parts[key])
    # unowned_child_incl_ns: the children's time under this path that none
    # of its completed calls owns (a caller whose exit was lost, an adopted
    # orphan): incl + unowned_child_incl_ns == excl + sum of children's incl
    for key, name in (("irq_ns", "irq"), ("offcpu_ns", "offcpu"), ("descendants", "desc"),
                      ("unowned_child_incl_ns", "unowned_child_incl"), ("gap_calls", "gap_calls")):
        t.lit(',"%s":' % key)
        if name == "offcpu" and not p.offcpu_known:
            t.lit("null")  # no sched_switch events: unknown, not 0
        else:
            t.col("i", col(name))
    t.lit(",")
    c = p.corrected
    if c is not None and c.unreliable is not None:
        t.col("e", (c.clamped[pre] != 0) * 2 + (c.unreliable[pre] != 0), _CLAMPED_UNRELIABLE)
    t.lit('"flags":')
    t.col("e", col("flags") & 7, _FLAG_WORDS)
    if cut is not None:
        code, after, ncut = cut
        t.col("e", code, [',"children":['] + [',"children":null,"continued":%d' % k for k in range(ncut)])
        # a continued path has no children array of its own to close
        t.col("e", (code > 0).astype(np.int64), ["", "}"])
        t.col("rep", closes - (code > 0), "]}")
        t.col("e", after, ["", ",", "],[", '],"tree_continued":[[', "]]" + tail])
        return t.items
    t.lit(',"children":[')
    # after a row: close the rows the next one is not inside, then a comma;
    # after the last one, close them all and the array
    t.col("rep", closes, "]}")
    after = (closes > 0).astype(np.int64)
    if last_chunk:
        after[-1] = 2
    t.col("e", after, ["", ",", "]" + tail])
    return t.items


# a tree row's flags (its low 3 bits) as the JSON writes them: made once, not per chunk
_FLAG_WORDS = [json.dumps(node_flags(f)) for f in range(8)]
_BOOLS = ("false", "true")
_CLAMPED_UNRELIABLE = ['"clamped":%s,"unreliable":%s,' % (a, b) for a in _BOOLS for b in _BOOLS]


def _rows_json(template: list, n: int) -> str:
    """A JSON array of n objects, each row of the template one, written
    with a leading comma."""
    return "[" + format_rows(template, n)[1:] + "]" if n else "[]"


def _bools(*cols) -> tuple:
    """An index column and fragments for booleans written together."""
    idx = np.zeros(len(cols[0]), dtype=np.int64)
    for c in cols:
        idx = idx * 2 + (np.asarray(c) != 0)
    return idx, [tuple("true" if (k >> (len(cols) - 1 - j)) & 1 else "false" for j in range(len(cols)))
                 for k in range(1 << len(cols))]


def functions_json(p: Profile) -> str:
    """The `functions` array: per function sums, raw and corrected
    statistics, what the corrections removed."""
    n = len(p.functions)
    return _rows_json(_functions_template(p), n) if n else "[]"


# Functions formatted at a time when written to a file (jsonout.write): a
# trace may have 100k functions, 80 MB of text not held whole.
FUNCTIONS_CHUNK_ROWS = 16384


def _functions_template(p: Profile) -> list:
    """The format_rows template of the `functions` rows, each with a
    leading comma (p has functions)."""
    ft = p.functions
    t = _Template()
    t.lit(',{"name":')
    t.text(list(map(_json_str, ft.names)))
    t.lit(',"calls":')
    t.col("i", ft.calls)
    raw = {}
    for kind in ("incl", "excl"):
        r = _Template()
        _raw_stats(r, getattr(ft, kind), ft.calls, getattr(ft, kind + "_mean"), getattr(ft, kind + "_min"),
                   getattr(ft, kind + "_max"), getattr(ft, kind + "_pct"))
        raw[kind] = r.items
        t.lit(',"%s_ns":' % kind)
        t.extend(r.items)
    for kind in ("incl", "excl"):
        t.lit(',"%s_corr_ns":' % kind)
        if p.corrected is None:
            t.extend(raw[kind])
        else:
            _corr_stats(t, corrections.corrected_stats(p)["functions", kind], ft.calls_corr, repr_round=True)
    for key, col in (("irq_ns", ft.irq), ("offcpu_ns", ft.offcpu if p.offcpu_known else None),
                     ("gap_calls", ft.gap_calls)):
        t.lit(',"%s":' % key)
        if col is None:
            t.lit("null")  # no sched_switch events: unknown, not 0
        else:
            t.col("i", col)
    ex = corrections.function_extras(p)
    if ex:
        for key, name in (("hook_cost_removed_ns", "overhead"), ("irq_removed_ns", "irq"),
                          ("offcpu_removed_ns", "offcpu"), ("clamped_ns", "clamp")):
            t.lit(',"%s":' % key)
            _repr_round(t, np.asarray(ex[name], dtype=np.float64))
        idx, pairs = _bools(ex["clamped"], ex["unreliable"])
        t.col("e", idx, [',"clamped":%s,"unreliable":%s' % pair for pair in pairs])
    rs = ft.returns
    if rs is not None:  # only a trace with return values has the key
        t.lit(',"returns":{"calls":')
        t.col("i", rs.calls)
        t.lit(',"errors":')
        t.col("i", rs.err.calls)
        for key, side in (("error_incl_ns", rs.err), ("ok_incl_ns", rs.ok)):
            t.lit(',"%s":' % key)
            _raw_stats(t, side.incl, side.calls, side.incl_mean, side.incl_min, side.incl_max, side.incl_pct)
        t.lit("}")
    t.lit("}")
    return t.items


def _repr_round(t: _Template, values: np.ndarray):
    """json.dumps(round(x, 1)) of each value: "%.1f" where that is the same
    text (finite, below REPR_SAFE), else in Python."""
    if len(values) and not (np.abs(values) < REPR_SAFE).all():
        t.text([json.dumps(round(x, 1)) for x in values.tolist()])
    else:
        t.col("f1", values)


def root_calls_json(p: Profile) -> str:
    """The `root_calls` array: one object per root call."""
    n = len(p.samples)
    return _rows_json(_root_calls_template(p), n) if n else "[]"


# Root calls formatted at a time when written to a file (jsonout.write): a
# trace's root calls grow with its length, and their text (about 250 bytes
# each) is not held whole.
ROOT_CALLS_CHUNK_ROWS = 8192


def _root_calls_template(p: Profile, lo: int = 0, hi: int | None = None) -> list:
    """The format_rows template of the `root_calls` rows lo..hi, each with a
    leading comma (p has root calls): columns of those rows only, made from
    the root calls' stored columns (RootCalls), so that a chunk of them
    costs a chunk's columns, not the whole table's."""
    hi = len(p.samples) if hi is None else min(hi, len(p.samples))
    rc = p.samples
    t = _Template()
    t.lit(',{"name":')
    t.col("e", p.col("func")[rc.col("node", lo, hi)], list(map(_json_str, p.funcs)))
    for key, name in (("pid", "pid"), ("cpu", "cpu"), ("start_ns", "calltime"), ("dur_ns", "dur")):
        t.lit(',"%s":' % key)
        t.col("i", rc.col(name, lo, hi))
    t.lit(',"dur_corr_ns":')
    flags = rc.col("flags", lo, hi)
    gap = (flags & SAMPLE_GAP) != 0
    corr = np.asarray(p.corrected_or_raw.sample_dur, dtype=np.float64)[lo:hi]
    if not _any_gap(p):
        _repr_round(t, corr)
    elif np.abs(corr[~gap]).max(initial=0.0) < REPR_SAFE:  # (NaN fails this)
        # a gap root call, left out of the correction, has no figure: null,
        # written in C (f1n: NaN as null), not a Python step per root call
        t.col("f1n", np.where(gap, np.nan, corr))
    else:
        t.text(["null" if g else json.dumps(round(x, 1)) for x, g in zip(corr.tolist(), gap.tolist())])
    t.lit(',"operation":')
    t.col("e", rc.col("op", lo, hi) + 1, ["null"] + [json.dumps(name) for name in p.operations])
    for key, name in (("descendants", "desc"), ("irq_ns", "irq"), ("offcpu_ns", "offcpu")):
        t.lit(',"%s":' % key)
        if name == "offcpu" and not p.offcpu_known:
            t.lit("null")
        else:
            t.col("i", rc.col(name, lo, hi))
    idx, triples = _bools(flags & SAMPLE_GAP, flags & SAMPLE_PARTIAL, flags & SAMPLE_IRQ)
    t.col("e", idx, [',"gap":%s,"partial":%s,"irq":%s}' % tr for tr in triples])
    return t.items


def _any_gap(p: Profile) -> bool:
    """Whether a root call spans a gap (then the corrected figures are
    written one by one, null for those): one answer for every chunk."""
    flags = p.samples.stored("flags")
    return p.views.get("any_gap_root", lambda: bool(np.any((p.scol("flags") if flags is None else flags) & SAMPLE_GAP)))


def _write_root_calls(out: RowsToFile, p: Profile, chunk: int) -> None:
    """The `root_calls` array into out, `chunk` rows at a time, each chunk's
    template made from its rows (no whole-table column)."""
    _write_chunks(out, len(p.samples), chunk, lambda lo, hi: _root_calls_template(p, lo, hi))


def _write_rows(out: RowsToFile, template: list, n: int, chunk: int) -> None:
    """A JSON array of the template's n rows (each with a leading comma)
    into out, `chunk` rows at a time: each column item's values sliced."""
    _write_chunks(out, n, chunk, lambda lo, hi: [it if isinstance(it, str) else (it[0], it[1][lo:hi], *it[2:])
                                                 for it in template])


def _write_chunks(out: RowsToFile, n: int, chunk: int, items_of) -> None:
    """A JSON array of n rows into out, `chunk` rows at a time, items_of(lo,
    hi) giving rows lo..hi's template (each row with a leading comma: the
    array's first row's comma is taken off here)."""
    out.write(b"[")
    for lo in range(0, n, chunk):
        hi = min(lo + chunk, n)
        items = items_of(lo, hi)
        if lo == 0:  # the array's first row: no comma before it
            first = np.zeros(hi - lo, dtype=np.int64)
            first[0] = 1
            items[:1] = [("e", first, [",", ""]), items[0][1:]]
        out.rows(items, hi - lo)
    out.write(b"]")


PLACEHOLDERS = {k: "@@FTFLAME_%s@@" % k.upper()
                for k in ("functions", "tree", "root_calls", "root_latency", "slowest")}


def _head_tail(p: Profile) -> tuple:
    """The document's text before and after the `tree` array."""
    head, tail, after = _head_tail_parts(p)
    return head, "".join([tail, *slowest_json_parts(p), after])


def _head_tail_parts(p: Profile) -> tuple:
    """The document's text before the `tree` array, after it up to the
    `slowest` array's, and after that."""
    head, before_rc, after_rc, after = _parts(p)
    return head, before_rc + root_calls_json(p) + after_rc, after


def _parts(p: Profile) -> tuple:
    """The document's text before the `tree` array, after it up to the
    `root_calls` array's, after that up to the `slowest` array's, and
    after that."""
    before_f, after_f, before_rc, after_rc, after = _pieces(p)
    return before_f + functions_json(p) + after_f, before_rc, after_rc, after


def _pieces(p: Profile) -> tuple:
    """The document's text before the `functions` array, after it up to
    the `tree` array's, then as _parts."""
    text = json.dumps(document(p), separators=(",", ":"))
    text = text.replace(json.dumps(PLACEHOLDERS["root_latency"]), root_latency_text(p), 1)
    # the row arrays are written apart (format_rows), the tree around the rest
    parts = []
    for key in ("functions", "tree", "root_calls"):
        mark = '"%s":%s' % (key, json.dumps(PLACEHOLDERS[key]))
        before, _, text = text.partition(mark)
        parts.append(before + mark[:len(key) + 3])
    mark = '"slowest":%s' % json.dumps(PLACEHOLDERS["slowest"])
    before, _, after = text.partition(mark)
    return parts[0], parts[1], parts[2], before + mark[:len("slowest") + 3], after + "\n"


def render(p: Profile, opts: RenderOptions = DEFAULT) -> str:
    head, tail = _head_tail(p)
    if p.nrows == 0:
        return head + "[]" + tail
    return format_rows(tree_template(p, head, tail), p.nrows)


def write(p: Profile, opts: RenderOptions, f) -> None:
    """render() into f, a binary file with a file descriptor: the text
    (tens of MB for a big trace) goes to the file in chunks, never whole in
    memory: each chunk's rows made on this thread while the chunk before
    is formatted and written on others (RowsToFile). The
    slowest calls' trees (MBs of text) are written after the rows, a call at
    a time: made before, their freed memory would sit under the rows' buffers.
    The root calls too are written after the tree's rows, in chunks; the
    functions before it, in chunks (100k functions are 80 MB of text)."""
    before_f, head, before_rc, after_rc, after = _pieces(p)
    # the head's temporaries (the function table's, the document's) freed:
    # their pages back before the rows' own (lowers the peak RSS)
    give_back_freed_memory()
    with RowsToFile(f) as out:
        out.write(before_f.encode("utf-8"))
        if len(p.functions):  # written a chunk at a time, as the rows below
            _write_rows(out, _functions_template(p), len(p.functions), FUNCTIONS_CHUNK_ROWS)
        else:
            out.write(b"[]")
        if p.nrows == 0:
            out.write((head + "[]" + before_rc).encode("utf-8"))
        else:
            for template, rows in tree_templates(p, head, before_rc, TREE_CHUNK_ROWS):
                out.rows(template, rows)
        if len(p.samples):
            _write_root_calls(out, p, ROOT_CALLS_CHUNK_ROWS)
        else:
            out.write(b"[]")
        out.write(after_rc.encode("utf-8"))
        for piece in slowest_json_parts(p):
            out.write(piece.encode("utf-8"))
        out.write(after.encode("utf-8"))
