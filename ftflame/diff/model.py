"""The diff model: every figure of `ftflame diff`, computed once.

Built from the runs of both sides (ftflame.diff.load), each a corrected
Profile. Four tables compare the same figures per item: root functions,
operations (the root calls of a dispatcher grouped by the NFS operation
below them, "svc_process: v3 WRITE"; none for a trace rooted at one
procedure), functions (every call path of a function pooled) and call paths
("a;b;c").
The renderers (report/diff_*.py) print these arrays and compute nothing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ftflame.correct import operations
from ftflame.model.profile import (
    NODE_IRQ_ROOT,
    SAMPLE_GAP,
    SAMPLE_IRQ,
    SAMPLE_PARTIAL,
    Profile,
    bucket_mids,
    hist_lower,
    hist_upper,
)

from . import stats
from .options import MIN_CHANGE

LEVELS = ("roots", "operations", "functions", "paths")
SEP = ";"  # between the functions of a call path, as in folded stacks
NO_VERDICT = "no verdict"  # one run a side: run-to-run variation unmeasured
VERDICTS = ("slower", "faster", "no change", "new", "gone", NO_VERDICT)
ONE_RUN = ("one run a side cannot measure how much runs differ: the interval is the calls' of one run; "
           "record 3 runs a side (docs/diff.md), or --runs-identical")


# ---- one run: per item sums ------------------------------------------------

# Root calls are read this many rows at a time: a level's entries, a run's
# sums over its root calls, are made from the stored columns a chunk at a
# time, never as an int64 or float64 column per root call (docs/performance.md,
# "diff's root calls as columns").
CHUNK = 1 << 16


class RootEntries:
    """A run's root calls as one level's value entries (each a call of
    weight 1 and width 0: its exact corrected ns), without a column per
    root call: the item of a root call from its call path (item_of_node,
    -1: not an entry) or from (root function, operation) codes, its value
    the corrected duration, read from the stored columns a chunk of rows at
    a time. count: entries per item. Holds the columns, not the Profile (a
    Profile's views hold this: no reference cycle)."""

    def __init__(self, samples, dur, count: np.ndarray, item_of_node: np.ndarray | None = None,
                 usable: int = SAMPLE_GAP, codes: np.ndarray | None = None, code_of=None,
                 rank: np.ndarray | None = None):
        self.samples = samples
        self.dur = dur  # the corrected durations (float64 per root call), None: the raw dur column
        self.count = count
        self.item_of_node = item_of_node
        self.usable = usable  # flags that leave a root call out
        # operations: the sorted codes, rows -> codes (-1: none), each code's item
        self.codes, self.code_of, self.rank = codes, code_of, rank

    @property
    def rows(self) -> int:
        return len(self.samples)

    def _col(self, name: str, rows) -> np.ndarray:
        """A column at rows (a slice or an index array) as int64."""
        if isinstance(rows, slice):
            return self.samples.col(name, rows.start, rows.stop)
        return self.samples.take(name, rows)

    def items(self, rows) -> np.ndarray:
        """The item of rows (a slice or an index array; int64, -1: not an entry)."""
        if self.code_of is not None:
            code = self.code_of(rows)
            it = self.rank[np.minimum(np.searchsorted(self.codes, code), len(self.codes) - 1)]
            it[code < 0] = -1
            return it
        it = self.item_of_node[self._col("node", rows)]
        it[(self._col("flags", rows) & self.usable) != 0] = -1
        return it

    def values(self, rows) -> np.ndarray:
        """The corrected ns of rows (float64; raw: the duration, NaN for a
        gap root call, as Profile.corrected_or_raw)."""
        if self.dur is not None:
            return np.asarray(self.dur[rows], dtype=np.float64)
        flags = self._col("flags", rows)
        return np.where(flags & SAMPLE_GAP, np.nan, self._col("dur", rows).astype(np.float64))

    def chunks(self):
        """(items, values) of the entries, a chunk of rows at a time, in row order."""
        for lo in range(0, self.rows, CHUNK):
            rows = slice(lo, min(lo + CHUNK, self.rows))
            it = self.items(rows)
            sel = it >= 0
            if sel.any():
                yield it[sel], self.values(rows)[sel]

    def groups(self, group_of_item: np.ndarray, dtype) -> np.ndarray:
        """Per row the group of its item (group_of_item, its last value for
        a row that is not an entry), in dtype: a byte or two a root call."""
        out = np.empty(self.rows, dtype)
        for lo in range(0, self.rows, CHUNK):
            rows = slice(lo, min(lo + CHUNK, self.rows))
            out[rows] = group_of_item[self.items(rows)]
        return out


def _sample_dur(p: Profile):
    """The corrected durations as stored (no copy), None when raw (made a
    chunk at a time: RootEntries.values)."""
    return p.corrected.sample_dur if p.corrected is not None else None


@dataclass(frozen=True)
class RunItems:
    """One run's figures for one level: keys, calls, sum and sum of squares
    of the corrected time per call, and the per-call value entries (value,
    weight) the medians are taken from: the histograms' (entry_*) first,
    then the root calls' (roots: read from the columns when needed)."""

    keys: tuple
    n: np.ndarray
    s1: np.ndarray
    s2: np.ndarray
    entry_item: np.ndarray  # item of each entry
    entry_value: np.ndarray  # corrected ns
    entry_weight: np.ndarray  # calls
    exact: np.ndarray  # bool per item: every call's value known (root calls)
    excl: np.ndarray  # corrected exclusive time, summed
    irq_root: np.ndarray  # bool per item: an interrupt subtree's top (NODE_IRQ_ROOT)
    # independent observations: the complete root calls that called the
    # item (calls inside one root call move together: one slow request makes
    # its 30 __rcu_read_lock calls slow at once); a root item's calls
    indep: np.ndarray
    # the hook cost the correction took out, summed (ns): what another
    # calibration would move (checks.calibration_warning)
    hook: np.ndarray = None
    # the width (ns) of each entry's histogram bucket, 0 for exact values:
    # a median inside a bucket is interpolated (stats.weighted_medians)
    entry_width: np.ndarray = None
    # the root calls' entries, after the histograms' (None: none)
    roots: RootEntries | None = None


def path_keys(p: Profile) -> list:
    """'a;b;c' per node row (parents have lower rows: one pass)."""
    parent = p.col("parent").tolist()
    func = p.col("func").tolist()
    keys = [""] * p.nrows
    for row in range(p.nrows):
        name = p.funcs[func[row]]
        keys[row] = name if parent[row] < 0 else keys[parent[row]] + SEP + name
    return keys


def root_call_count(p: Profile) -> int:
    """Root calls of the trace's graph functions: completed task-context
    root calls whose start was recorded, without those spanning a
    lost-event gap (the calls the corrected root figures cover)."""
    flags = p.samples.values("flags")
    return int(np.count_nonzero((flags & (SAMPLE_GAP | SAMPLE_IRQ | SAMPLE_PARTIAL)) == 0))


def _node_sums(p: Profile):
    """Per node: corrected calls, corrected sum, corrected sum of squares,
    value entries, exact flags; and per node the root calls that are its
    entries (those of a node whose every call is a root call, no gap)."""
    c = p.corrected_or_raw
    n = np.asarray(c.calls, dtype=np.float64)
    s1 = np.asarray(c.incl, dtype=np.float64)
    # Per-call values (medians, rank tests): the histogram's, minus the
    # mean hook cost per call. Not scaled by corrected/raw mean: interrupt
    # and off-CPU time come out of the few calls that had them, and scaling
    # every call by their share would shift the whole distribution.
    hook = np.zeros(p.nrows)
    if c.overhead is not None:
        hook = np.divide(np.asarray(c.overhead, dtype=np.float64), n, out=hook, where=n > 0)
    h = p.hist_incl
    row_of_entry = np.repeat(np.arange(h.rows), np.diff(h.offsets))
    mids = bucket_mids(int(h.buckets.max()) + 1)[h.buckets].astype(np.float64) if len(h.buckets) \
        else np.zeros(0)
    cnt = h.counts.astype(np.float64)
    values = np.maximum(mids - hook[row_of_entry], 0.0)
    widths = (hist_upper(h.buckets.astype(np.int64)) - hist_lower(h.buckets.astype(np.int64))).astype(np.float64) \
        if len(h.buckets) else np.zeros(0)
    widths = np.where(h.buckets < 16, 0.0, widths) if len(h.buckets) else widths  # exact below HIST_SUB ns
    hn = np.bincount(row_of_entry, weights=cnt, minlength=p.nrows)
    hm2 = np.bincount(row_of_entry, weights=cnt * values * values, minlength=p.nrows)
    s2 = np.divide(hm2 * n, hn, out=np.zeros(p.nrows), where=hn > 0)
    exact = np.zeros(p.nrows, dtype=bool)
    # root calls: every corrected duration is known; counted and summed a
    # chunk of rows at a time (np.add.at adds in row order, as one bincount
    # would: the same sums to the last bit)
    samples = p.samples
    sd = _sample_dur(p)
    per = np.zeros(p.nrows, np.int64)
    for lo in range(0, len(samples), CHUNK):
        hi = min(lo + CHUNK, len(samples))
        node = samples.col("node", lo, hi)
        per += np.bincount(node[(samples.col("flags", lo, hi) & SAMPLE_GAP) == 0], minlength=p.nrows)
    known = np.zeros(p.nrows, dtype=bool)
    if per.any():
        known = (per == n) & (per > 0)
        exact[known] = True
        sq = np.zeros(p.nrows)
        entries = RootEntries(samples, sd, per, np.where(known, np.arange(p.nrows), -1))
        for it, v in entries.chunks():
            np.add.at(sq, it, v * v)
        s2 = np.where(known, sq, s2)
        drop = known[row_of_entry]
        row_of_entry, values, cnt, widths = row_of_entry[~drop], values[~drop], cnt[~drop], widths[~drop]
    hook_sum = np.asarray(c.overhead, dtype=np.float64) if c.overhead is not None else np.zeros(p.nrows)
    return (n, s1, s2, row_of_entry, values, cnt, exact, np.asarray(c.excl, dtype=np.float64), hook_sum, widths,
            np.where(known, per, 0))


def run_items(p: Profile) -> dict:
    """{level: RunItems} for one run: a view of its Profile, computed once
    (a run compared twice, as every split of repeated runs compares it, or
    a trace against itself, is summed once)."""
    return p.views.get("diff_run_items", lambda: _run_items(p))


def _run_items(p: Profile) -> dict:
    n, s1, s2, erow, evalue, ecount, exact, excl, hook, ewidth, root_per = _node_sums(p)
    sd = _sample_dur(p)
    live = n > 0
    out = {}
    pkeys = path_keys(p)
    parent = p.col("parent")
    pseudo = p.pseudo_roots
    func = p.col("func")
    irq_top = (p.col("flags") & NODE_IRQ_ROOT) != 0
    # root calls containing each path (the core's journal: a path once per
    # root call), and per function its paths' first-of-the-function counts,
    # which add up to the root calls that called the function; a root path's
    # own calls are its root calls
    top = parent < 0
    in_roots_path = np.where(top, n, p.col("roots").astype(np.float64))
    in_roots_func = np.where(top, n, p.col("func_roots").astype(np.float64))

    def grouped(keys_of_row, rows, indep_of_row):
        names = sorted({keys_of_row[r] for r in rows.tolist()})
        index = {k: i for i, k in enumerate(names)}
        item_of_row = np.full(p.nrows, -1, dtype=np.int64)
        for r in rows.tolist():
            item_of_row[r] = index[keys_of_row[r]]
        m = len(names)
        sel = item_of_row >= 0
        it = item_of_row[sel]
        ent = item_of_row[erow] >= 0
        # the root calls of the nodes whose every call is one (root_per > 0)
        rooted = root_per > 0
        roots = None
        if rooted.any():
            on = rooted & (item_of_row >= 0)
            roots = RootEntries(p.samples, sd, np.bincount(item_of_row[on], weights=root_per[on], minlength=m)
                                .astype(np.int64), np.where(rooted, item_of_row, -1))
        all_exact = np.bincount(it, weights=(~exact[sel]).astype(float), minlength=m) == 0
        return RunItems(
            keys=tuple(names), n=np.bincount(it, weights=n[sel], minlength=m),
            s1=np.bincount(it, weights=s1[sel], minlength=m), s2=np.bincount(it, weights=s2[sel], minlength=m),
            entry_item=item_of_row[erow][ent], entry_value=evalue[ent], entry_weight=ecount[ent],
            entry_width=ewidth[ent], roots=roots,
            exact=all_exact, excl=np.bincount(it, weights=excl[sel], minlength=m),
            irq_root=np.bincount(it, weights=irq_top[sel].astype(float), minlength=m) > 0,
            indep=np.bincount(it, weights=indep_of_row[sel], minlength=m),
            hook=np.bincount(it, weights=hook[sel], minlength=m))

    rows = np.flatnonzero(live)
    out["paths"] = grouped(pkeys, rows, in_roots_path)
    names = [p.funcs[i] for i in func.tolist()]
    out["functions"] = grouped(names, rows, in_roots_func)
    out["roots"] = grouped(names, np.flatnonzero(live & (parent < 0) & ~pseudo), n)
    out["operations"] = operation_items(p)
    return out


def operation_key(root: str, operation: str) -> str:
    """An operation item's name: its root function and its label."""
    return f"{root}: {operation}"


def operation_items(p: Profile) -> RunItems:
    """The root calls of the dispatchers (the root functions whose calls
    ftflame.correct.operations labelled) grouped by (root function,
    operation): the figures of the root functions, exact (every root call's
    corrected duration is known), over the same root calls (no lost-event
    gap, no interrupt or partial pseudo root). No item when no root call
    reached a procedure below it. Read a chunk of root calls at a time."""
    rows = operations.operation_table(p) or ()
    dispatchers = np.array(sorted({p.funcs.index(r.root) for r in rows}), dtype=np.int64)
    width = len(p.operations) + 1
    func, pseudo, samples = p.col("func"), p.pseudo_roots, p.samples

    def col(name: str, rows) -> np.ndarray:
        return samples.col(name, rows.start, rows.stop) if isinstance(rows, slice) else samples.take(name, rows)

    def code_of(rows) -> np.ndarray:
        """One code per (root function, operation) of rows (a slice or an
        index array), -1 for a root call not counted."""
        node = col("node", rows)
        root = func[node]
        ok = ((col("flags", rows) & SAMPLE_GAP) == 0) & np.isin(root, dispatchers) & ~pseudo[node]
        code = root * width + (col("op", rows) + 1)
        code[~ok] = -1
        return code

    found = [np.zeros(0, np.int64)]
    if len(rows):
        for lo in range(0, len(samples), CHUNK):
            code = code_of(slice(lo, min(lo + CHUNK, len(samples))))
            found.append(np.unique(code[code >= 0]))
    codes = np.unique(np.concatenate(found))
    keys = [operation_key(p.funcs[c // width],
                          p.operations[c % width - 1] if c % width else operations.NO_OPERATION)
            for c in codes.tolist()]
    order = np.argsort(np.array(keys, dtype=object), kind="stable") if keys else np.zeros(0, np.int64)
    rank = np.empty(len(keys), dtype=np.int64)
    rank[order] = np.arange(len(keys))
    names = [keys[i] for i in order.tolist()]
    m = len(names)
    entries = RootEntries(samples, _sample_dur(p), np.zeros(m, np.int64), codes=codes,
                          code_of=code_of if len(codes) else None, rank=rank)
    n, s1, s2 = np.zeros(m, np.int64), np.zeros(m), np.zeros(m)
    if len(codes):
        for it, dur in entries.chunks():  # np.add.at: row order, the sums one bincount made
            n += np.bincount(it, minlength=m)
            np.add.at(s1, it, dur)
            np.add.at(s2, it, dur * dur)
    entries.count = n
    return RunItems(
        keys=tuple(names), n=n.astype(np.float64), s1=s1, s2=s2,
        entry_item=np.zeros(0, np.int64), entry_value=np.zeros(0), entry_weight=np.zeros(0),
        exact=np.ones(m, dtype=bool), excl=np.zeros(m), irq_root=np.zeros(m, dtype=bool),
        indep=n.astype(np.float64), hook=np.zeros(m), entry_width=np.zeros(0),
        roots=entries if len(codes) else None)


# ---- a side: its runs pooled -----------------------------------------------

@dataclass(frozen=True)
class SideFigures:
    """One side's figures for one level, aligned with the level's items."""

    calls: np.ndarray  # corrected calls, all runs
    per_root: np.ndarray  # calls per root call
    mean: np.ndarray  # corrected ns per call (exact)
    median: np.ndarray  # ns per call (exact where `exact`, else from histograms)
    exact: np.ndarray  # bool: every call's value known
    sd: np.ndarray  # standard deviation of the time per call
    neff: np.ndarray  # independent observations: root calls that called the item (at most its calls)
    runs_present: np.ndarray  # runs of the side that called the item
    per_root_time: np.ndarray  # corrected ns per root call
    run_medians: np.ndarray  # (runs, items) median ns per call per run, NaN where absent
    run_lo: np.ndarray
    run_hi: np.ndarray
    excl_per_root_time: np.ndarray  # corrected exclusive ns per root call
    irq_root: np.ndarray  # bool per item: the top of an interrupt subtree
    # per run and item: the run's estimate, its median time per call (ns;
    # NaN where the run lacks the item): the replicates of the test
    run_estimate: np.ndarray = None
    hook_per_call: np.ndarray = None  # ns of hook cost taken out per call


@dataclass(frozen=True)
class Table:
    level: str
    keys: tuple
    before: SideFigures
    after: SideFigures
    change: np.ndarray  # mean after / mean before - 1 (NaN: one side lacks it)
    ci_lo: np.ndarray
    ci_hi: np.ndarray
    p: np.ndarray
    q: np.ndarray  # Benjamini-Hochberg adjusted p
    verdict: tuple  # one of VERDICTS per item
    why: tuple  # for "no change" of a significant p: what held it back, else ""
    delta_per_root: np.ndarray  # ns per root call, after - before (the impact)
    # mean after / mean before - 1: the verdict is on the typical call (the
    # Hodges-Lehmann change), the mean moves with a few long calls too
    mean_change: np.ndarray
    # the mean and the typical call moved in opposite directions (each by
    # at least MEAN_MEDIAN_APART): a few long calls came or went
    disagree: np.ndarray
    # the change relative to the global drift: each run's estimates taken
    # relative to its run effect (model.run_effects); the change itself
    # when there is no drift; vs_lo, vs_hi its interval (NaN: no drift)
    vs_drift: np.ndarray
    vs_lo: np.ndarray = None
    vs_hi: np.ndarray = None
    # root functions of a corrected diff: the raw change of the typical
    # call, and where raw and corrected changes go opposite ways, what the
    # correction took out that changed (else "")
    raw_change: np.ndarray = None
    raw_why: tuple = ()
    # how the interval was made, per item (stats.BASIS_*), its degrees of
    # freedom, and the p-values as every output prints them (stats.p_text)
    basis: tuple = ()
    df: np.ndarray = None
    p_text: tuple = ()
    q_text: tuple = ()

    def __len__(self) -> int:
        return len(self.keys)


@dataclass(frozen=True)
class SideInfo:
    """What a side is: its runs, how they were recorded, what was lost."""

    label: str  # "before" / "after"
    runs: tuple  # of dicts: label, path, kernel, clock, format, root_calls, lost..., calibration
    root_calls: int
    lost_events: int
    lost_gaps_unknown: int
    gap_calls: int
    calibrations: tuple  # distinct (source, o_in, o_out)
    # latency over time, per run (Latency): its counted root calls' root
    # functions, starts and corrected durations, read from the columns when
    # asked (slowest_points)
    latency: tuple = ()


@dataclass(frozen=True)
class Drift:
    """Every function a little slower (or faster) on AFTER: the machine,
    not the code (frequency, thermal state, other load). The typical
    function's change, how many functions were compared and how many moved
    its way. Items are judged against it."""

    change: float  # AFTER's run effects against BEFORE's (model.run_effects), as a fraction
    functions: int  # functions compared
    along: int  # of those, moved in the drift's direction
    # each run's effect on the typical function, as a fraction (before, after)
    run_effects: tuple = ((), ())

    def sentence(self) -> str:
        way = "slower" if self.change > 0 else "faster"
        runs = ""
        if self.run_effects[0] and self.run_effects[1]:
            def say(effects):
                return ", ".join(f"{x * 100:+.1f}%" for x in effects)
            runs = f"; each run's effect: BEFORE {say(self.run_effects[0])}, AFTER {say(self.run_effects[1])}"
        return (f"global drift: the typical function is {abs(self.change) * 100:.1f}% {way} on AFTER "
                f"({self.along:,} of {self.functions:,} functions compared moved that way{runs}): the whole "
                "system changed (machine, frequency, thermal state, load, kernel build), not one function; items are "
                "judged against it, each run's figures taken relative to its effect")


@dataclass(frozen=True)
class Diff:
    before: SideInfo
    after: SideInfo
    tables: dict  # level -> Table
    warnings: tuple
    corrected: bool
    method: str
    irqs: str  # "exclude": interrupt subtrees are out of the interrupted calls' corrected time
    min_change: float
    alpha: float = stats.ALPHA
    notes: tuple = field(default_factory=tuple)
    drift: Drift | None = None
    # --runs-identical: calls taken as independent across runs (the user
    # vouches that the runs do not differ); every output says so
    runs_identical: bool = False
    # the prior of the run-to-run variances (stats.variance_prior): its df
    # d0 and its variance s0^2 of the log time per call (0, nan: none)
    prior: tuple = (0.0, float("nan"))
    # --focus: the functions named as questions of their own (a family of
    # their own, Holm); their rows carry the adjusted p of that family
    focus: tuple = ()

    def table(self, level: str) -> Table:
        return self.tables[level]

    @property
    def folded(self) -> Folded:
        t = self.tables["paths"]
        return Folded(t.keys, t.before.excl_per_root_time, t.after.excl_per_root_time)


@dataclass(frozen=True)
class Folded:
    """Per call path, each side's corrected exclusive ns per root call."""

    keys: tuple
    before: np.ndarray
    after: np.ndarray


# A side's value entries are taken a group of items at a time, the items of
# a group holding together about this many entries (or a side's 250th: a
# byte a root call says its group), an item with more alone.
GROUP_ENTRIES = 1 << 14


def _groups(count: np.ndarray, cap: int) -> list:
    """(first, end) item ranges of about cap entries each (count: per
    item), an item of more than cap entries a range of its own."""
    m = len(count)
    if not m:
        return []
    start = np.cumsum(count) - count
    cut = np.zeros(m + 1, dtype=bool)
    cut[0] = cut[m] = True
    cut[1:m] |= (start[1:] // cap) != (start[:-1] // cap)
    big = np.flatnonzero(count > cap)
    cut[big] = True
    cut[big + 1] = True
    at = np.flatnonzero(cut)
    return list(zip(at[:-1].tolist(), at[1:].tolist()))


def _median_of_calls(v: np.ndarray) -> float:
    """stats.weighted_medians of values of weight 1 and width 0 (root
    calls): the lower median, by a partition of v (in place) instead of a
    sort, with the same arithmetic."""
    total = float(len(v))
    j = int(math.ceil(total / 2.0)) - 1
    while j + 1 < total / 2.0:  # the first position whose running count reaches half
        j += 1
    v.partition(j)
    frac = np.float64((total / 2.0 - j) / 1.0)
    return float(np.maximum(v[j] + (np.clip(frac, 0.0, 1.0) - 0.5) * 0.0, 0.0))


def _calls_log_moments(v: np.ndarray) -> tuple:
    """stats.log_moments of one item's calls of weight 1 (calls, mean,
    variance), its sums added in order (np.add.at, a chunk at a time): the
    same floats as one bincount over them, without its whole-length
    temporaries."""
    n, s1, ss = float(len(v)), np.zeros(1), np.zeros(1)
    zero = np.zeros(min(CHUNK, len(v)), np.int64)
    for lo in range(0, len(v), CHUNK):
        part = v[lo:lo + CHUNK]
        np.add.at(s1, zero[:len(part)], 1.0 * np.log(np.maximum(part, stats.LOG_MIN_NS)))
    mean = s1[0] / n if n > 0 else float("nan")
    for lo in range(0, len(v), CHUNK):
        part = v[lo:lo + CHUNK]
        dev = np.log(np.maximum(part, stats.LOG_MIN_NS)) - (mean if n > 0 else 0.0)
        np.add.at(ss, zero[:len(part)], 1.0 * dev * dev)
    var = ss[0] / (n - 1.0) if n > 1 else 0.0
    return n, mean, var


def _gather(runs_items, ats, gids, root_n, g: int, span: tuple, size: int, calls_only: bool) -> tuple:
    """Group g's entries (its items a..b), run after run, each run's
    histogram entries before its root calls', in order: (item - a, value,
    weight, width, each run's first entry and the end); calls_only: the
    values only (the item's root calls)."""
    a, b = span
    item = np.empty(0 if calls_only else size, np.int64)
    value = np.empty(size)
    weight = np.ones(0 if calls_only else size)
    width = np.zeros(0 if calls_only else size)
    bounds = [0]
    pos = 0
    for r, (ri, at) in enumerate(zip(runs_items, ats)):
        if len(ri.entry_item):
            it = at[ri.entry_item]
            sel = (it >= a) & (it < b)
            k = int(np.count_nonzero(sel))
            item[pos:pos + k] = it[sel] - a
            value[pos:pos + k] = ri.entry_value[sel]
            weight[pos:pos + k] = ri.entry_weight[sel]
            width[pos:pos + k] = ri.entry_width[sel]
            pos += k
        if ri.roots is not None and root_n[r][a:b].any():
            gid = gids[r]
            for lo in range(0, len(gid), CHUNK):  # a chunk's rows at a time: no index per root call
                rows = np.flatnonzero(gid[lo:lo + CHUNK] == g)
                if len(rows):
                    rows += lo
                    k = len(rows)
                    if not calls_only:
                        item[pos:pos + k] = at[ri.roots.items(rows)] - a
                    value[pos:pos + k] = ri.roots.values(rows)
                    pos += k
        bounds.append(pos)
    assert pos == size, (pos, size)
    return item, value, weight, width, bounds


def _entry_stats(runs_items: list, ats: list, m: int) -> tuple:
    """Per run and pooled, the weighted medians and log moments of the
    calls' value entries (stats.weighted_medians, stats.log_moments), in
    the side's item space: ([(median, calls, log variance) per run],
    pooled median, pooled log variance). The same figures as over the
    entries concatenated (run after run, the histograms' before the root
    calls'), made a group of items at a time: each item's entries in their
    order, the medians' running weights whole numbers (exact in any
    grouping), so only a group's entries are ever copied, never an array
    per root call of the side."""
    dense_n = np.zeros(m, np.int64)
    root_n = [np.zeros(m, np.int64) for _ in runs_items]
    for r, (ri, at) in enumerate(zip(runs_items, ats)):
        dense_n += np.bincount(at[ri.entry_item], minlength=m) if len(ri.entry_item) else 0
        if ri.roots is not None:
            root_n[r][at] += ri.roots.count
    count = dense_n + sum(root_n, np.zeros(m, np.int64))
    runs = [(np.zeros(m), np.zeros(m), np.zeros(m)) for _ in runs_items]
    med, pvar = np.zeros(m), np.zeros(m)
    cap = max(GROUP_ENTRIES, int(count.sum()) // 250)
    groups = _groups(count, cap)
    group_of = np.full(m + 1, len(groups), np.int64)  # (m: not an entry)
    for g, (a, b) in enumerate(groups):
        group_of[a:b] = g
    dtype = np.uint8 if len(groups) < 255 else np.uint16 if len(groups) < 65535 else np.int64
    # per root call its group, a byte; a group's rows found from it
    gids = [None if ri.roots is None else ri.roots.groups(group_of[np.append(at, m)], dtype)
            for ri, at in zip(runs_items, ats)]
    for g, (a, b) in enumerate(groups):
        size = int(count[a:b].sum())
        if not size:
            continue
        calls_only = b - a == 1 and size > cap and not dense_n[a]
        item, value, weight, width, bounds = _gather(runs_items, ats, gids, root_n, g, (a, b), size, calls_only)
        if calls_only:
            # one item's root calls, more than a group's: moments in order
            # first (the partition reorders), then each run's median, then all
            for r, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
                if hi > lo:
                    cn, _, lvar = _calls_log_moments(value[lo:hi])
                    runs[r][1][a], runs[r][2][a] = cn, lvar
            pvar[a] = _calls_log_moments(value)[2]
            for r, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
                if hi > lo:
                    runs[r][0][a] = _median_of_calls(value[lo:hi])
            med[a] = _median_of_calls(value)
            continue
        for r, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
            if hi > lo:
                s = slice(lo, hi)
                runs[r][0][a:b] = stats.weighted_medians(item[s], value[s], weight[s], b - a, width[s])
                cn, _, lvar = stats.log_moments(item[s], value[s], weight[s], b - a)
                runs[r][1][a:b], runs[r][2][a:b] = cn, lvar
        med[a:b] = stats.weighted_medians(item, value, weight, b - a, width)
        pvar[a:b] = stats.log_moments(item, value, weight, b - a)[2]
    return runs, med, pvar


def _pool(level: str, runs_items: list, keys: tuple, root_calls: int) -> tuple:
    """A side's sums per item of `keys`, its runs pooled; returns
    (SideFigures, the calls' (item, value, weight) entries)."""
    m = len(keys)
    index = {k: i for i, k in enumerate(keys)}
    n, s1, s2, excl, indep = np.zeros(m), np.zeros(m), np.zeros(m), np.zeros(m), np.zeros(m)
    hook = np.zeros(m)
    run_medians = np.full((len(runs_items), m), np.nan)
    run_log = np.full((len(runs_items), m), np.nan)  # each run's log median time per call
    within = np.zeros(m)  # summed over runs: variance of the log times / independent calls
    within_runs = np.zeros(m)
    exact = np.ones(m, dtype=bool)
    irq_root = np.zeros(m, dtype=bool)
    ats = [np.fromiter((index[k] for k in ri.keys), dtype=np.int64, count=len(ri.keys)) for ri in runs_items]
    per_run, median, pvar = _entry_stats(runs_items, ats, m)
    for r, (ri, at) in enumerate(zip(runs_items, ats)):
        n[at] += ri.n
        s1[at] += ri.s1
        s2[at] += ri.s2
        excl[at] += ri.excl
        indep[at] += ri.indep
        irq_root[at] |= ri.irq_root
        exact[at] &= ri.exact
        if ri.hook is not None:
            hook[at] += ri.hook
        med, cn, lvar = (x[at] for x in per_run[r])
        run_medians[r, at] = np.where(ri.n > 0, med, np.nan)
        live = (ri.n > 0) & (cn > 0)
        run_log[r, at] = np.where(live, np.log(np.maximum(med, stats.LOG_MIN_NS)), np.nan)
        # a run's median has the sampling error of its independent calls
        # (pi/2 times a mean's, for calls near log-normal)
        ind = np.maximum(np.minimum(ri.n, ri.indep), 1.0)
        within[at] += np.where(live, stats.MEDIAN_VAR * lvar / ind, 0.0)  # one call: its bucket's width alone
        within_runs[at] += live
    mean, var = stats.moments_mean_var(n, s1, s2)
    neff = np.minimum(n, indep)
    # the pooled calls' log moments, each item's n its independent calls
    # (for the calls-as-independent interval: one run a side, --runs-identical)
    pooled_log = (np.log(np.maximum(median, stats.LOG_MIN_NS)), stats.MEDIAN_VAR * pvar, neff)
    within = np.divide(within, within_runs, out=np.full(m, np.nan), where=within_runs > 0)
    with np.errstate(all="ignore"):
        lo = np.where(np.isfinite(run_medians).any(axis=0),
                      np.nanmin(np.where(np.isfinite(run_medians), run_medians, np.inf), axis=0), np.nan)
        hi = np.where(np.isfinite(run_medians).any(axis=0),
                      np.nanmax(np.where(np.isfinite(run_medians), run_medians, -np.inf), axis=0), np.nan)
    rc = max(root_calls, 1)
    fig = SideFigures(calls=n, per_root=n / rc, mean=mean, median=median, exact=exact & (n > 0),
                      sd=np.sqrt(np.where(np.isfinite(var), var, np.nan)), neff=neff,
                      runs_present=np.isfinite(run_medians).sum(axis=0),
                      per_root_time=s1 / rc, run_medians=run_medians, run_lo=lo, run_hi=hi,
                      excl_per_root_time=excl / rc, irq_root=irq_root,
                      run_estimate=np.exp(run_log),
                      hook_per_call=np.divide(hook, n, out=np.zeros(m), where=n > 0))
    return fig, (run_log, within, pooled_log)


class Latency:
    """A run's latency over time, read from its root-call columns a chunk
    at a time when a renderer asks (the HTML's plot; the text and the JSON
    never do). Made whole, a name, a float start and a float duration a
    root call (the Diff's whole life, then the plot's lists), they cost the
    diff's HTML 69 bytes a root call at its peak (docs/performance.md,
    "diff's HTML")."""

    __slots__ = ("profile",)

    def __init__(self, profile: Profile):
        self.profile = profile

    @property
    def funcs(self) -> list:
        """The function names, by function id."""
        return self.profile.funcs

    def chunks(self):
        """(function id, start ns, corrected ns) of the root calls counted
        in root_call_count, CHUNK rows at a time, in row order."""
        p = self.profile
        s, sd = p.samples, _sample_dur(p)
        func = p.col("func")  # per call path
        for lo in range(0, len(s), CHUNK):
            hi = min(lo + CHUNK, len(s))
            ok = (s.col("flags", lo, hi) & (SAMPLE_GAP | SAMPLE_IRQ | SAMPLE_PARTIAL)) == 0
            # raw: the dur column (the NaN of a gap root call is never counted)
            dur = np.asarray(sd[lo:hi], dtype=np.float64) if sd is not None else s.col("dur", lo, hi).astype(np.float64)
            yield func[s.col("node", lo, hi)[ok]], s.col("calltime", lo, hi)[ok], dur[ok]


@dataclass(frozen=True)
class LatencyPoints:
    """A side's latency points, its runs' in run order, each run's in row
    order: names (the root functions in the order they first appear among
    all the points, kept or not), func (index into names), run (index into
    the side's runs), t (s since the run's first counted root call), dur
    (corrected ns), thinned (points left out)."""

    names: tuple
    func: np.ndarray
    run: np.ndarray
    t: np.ndarray
    dur: np.ndarray
    thinned: int


def _scan_points(latency: tuple, limit: int) -> tuple:
    """slowest_points' first pass: (names in order of first appearance,
    each run's first start, points, points with a duration, the `limit`
    largest durations as a multiset)."""
    names: dict = {}
    t0 = []
    total = finite = 0
    top = np.zeros(0, np.float64)
    for lat in latency:
        first: dict = {}  # function id -> its first point's number
        lo = None
        for func, start, dur in lat.chunks():
            if len(start):
                lo = int(start.min()) if lo is None else min(lo, int(start.min()))
            ids, at = np.unique(func, return_index=True)
            for f, i in zip(ids.tolist(), (at + total).tolist()):
                first.setdefault(f, i)
            num = dur[~np.isnan(dur)]
            total += len(dur)
            finite += len(num)
            top = np.concatenate((top, num))
            if len(top) > limit:
                top = np.partition(top, len(top) - limit)[len(top) - limit:] if limit else top[:0]
        t0.append(0 if lo is None else lo)
        for f in sorted(first, key=first.__getitem__):
            names.setdefault(lat.funcs[f], len(names))
    return names, t0, total, finite, top


def slowest_points(latency: tuple, limit: int) -> LatencyPoints:
    """The side's points (its runs' Latency), thinned to the `limit`
    slowest when there are more (ties: the first in run, then row, order;
    NaN after every number): the points a stable sort of all of them by
    decreasing duration would keep first. Two passes over the columns, a
    chunk at a time, holding at most `limit` durations: no sort, and no
    value or object per root call."""
    names, t0, total, finite, top = _scan_points(latency, limit)
    if total <= limit:  # all of them
        budget = 0
        def kept(d): return np.ones(len(d), bool)
        def tied(d): return np.zeros(len(d), bool)
    elif finite >= limit:  # those above the limit-th largest, then the first of its ties
        thr = top.min() if len(top) else np.inf  # a limit of 0: none
        budget = limit - int(np.count_nonzero(top > thr))
        def kept(d): return d > thr
        def tied(d): return d == thr
    else:  # every number, then the first NaNs
        budget = limit - finite
        def kept(d): return ~np.isnan(d)
        def tied(d): return np.isnan(d)
    out: dict = {"func": [], "run": [], "t": [], "dur": []}
    for r, lat in enumerate(latency):
        code = np.array([names.get(name, -1) for name in lat.funcs], np.int64)  # this run's ids -> names'
        for func, start, dur in lat.chunks():
            keep = kept(dur)
            if budget:
                ties = np.flatnonzero(tied(dur))[:budget]
                keep[ties] = True
                budget -= len(ties)
            out["func"].append(code[func[keep]])
            out["run"].append(np.full(int(np.count_nonzero(keep)), r, np.int64))
            out["t"].append((start[keep] - t0[r]) / 1e9)
            out["dur"].append(dur[keep])
    cols = {k: np.concatenate(v) if v else np.zeros(0, np.float64 if k in ("t", "dur") else np.int64)
            for k, v in out.items()}
    return LatencyPoints(names=tuple(names), thinned=total - len(cols["dur"]), **cols)


def _side_info(label: str, runs) -> SideInfo:
    infos = []
    cals = []
    for run in runs:
        p = run.profile
        cal = p.calibration
        key = (cal.source, round(float(cal.o_in_ns), 1), round(float(cal.o_out_ns), 1))
        if key not in cals:
            cals.append(key)
        infos.append({
            "label": run.label, "path": run.path, "kernel": p.trace.kernel, "clock": p.trace.clock,
            "format": p.trace.format, "root_calls": root_call_count(p),
            "lost_events": int(sum(p.lost_per_cpu.values())),
            "lost_gaps_unknown": int(sum(p.lost_gaps_unknown_per_cpu.values())),
            "gap_calls": int(p.counters.get("gap_calls", 0)),
            "calibration": {"source": cal.source, "o_in_ns": round(float(cal.o_in_ns), 1),
                            "o_out_ns": round(float(cal.o_out_ns), 1), "method": cal.method},
        })
    return SideInfo(
        label=label, runs=tuple(infos), latency=tuple(Latency(r.profile) for r in runs),
        root_calls=sum(i["root_calls"] for i in infos),
        lost_events=sum(i["lost_events"] for i in infos),
        lost_gaps_unknown=sum(i["lost_gaps_unknown"] for i in infos),
        gap_calls=sum(i["gap_calls"] for i in infos), calibrations=tuple(cals))


PRIMARY = ("roots", "operations")  # the question: did the requests change (Holm)
SECONDARY = ("functions", "paths")  # where a change sits (Benjamini-Hochberg)


def build(before_runs, after_runs, corrected: bool = True,
          min_change: float = MIN_CHANGE, warnings: tuple = (), irqs: str = "exclude",
          runs_identical: bool = False, focus: tuple = ()) -> Diff:
    """The diff of two sides (tuples of ftflame.diff.load.Run); focus: the
    functions named before looking (--focus), each judged in a family of
    its own instead of among every function."""
    items_b = [run_items(r.profile) for r in before_runs]
    items_a = [run_items(r.profile) for r in after_runs]
    info_b, info_a = _side_info("before", before_runs), _side_info("after", after_runs)
    nruns = (len(items_b), len(items_a))
    tables = {}
    sides = {}
    for level in LEVELS:
        keys = tuple(sorted(set().union(*(ri[level].keys for ri in items_b + items_a))))
        sides[level] = (keys, _pool(level, [ri[level] for ri in items_b], keys, info_b.root_calls),
                        _pool(level, [ri[level] for ri in items_a], keys, info_a.root_calls))
    # each run's effect on every function at once (the machine's speed in
    # that run: frequency, host load, cache state), from the functions
    # measured in every run
    keys, (fb, (lb, wb, _)), (fa, (la, wa, _)) = sides["functions"]
    u_b, u_a = run_effects(lb, la, fb, fa, nruns)
    raw = _tests(sides, nruns, runs_identical)
    keys, fb, fa, change = raw["functions"][:4]
    r = raw["roots"]
    busiest = int(np.argmax(np.maximum(r[1].per_root_time, r[2].per_root_time))) if len(r[0]) else -1
    drift = global_drift(fb, fa, change, np.flatnonzero(np.isfinite(change)),
                         root_change=float(r[3][busiest]) if busiest >= 0 else float("nan"))
    judged = raw
    if drift is not None and len(u_b) and len(u_a):
        # a drift: every item is judged against it, each run's estimates
        # taken relative to the run's effect: what runs share (the machine)
        # is out of both the change and its run-to-run variation
        drift = Drift(change=float(np.expm1(np.mean(u_a) - np.mean(u_b))), functions=drift.functions,
                      along=drift.along, run_effects=(tuple(np.expm1(u_b).tolist()), tuple(np.expm1(u_a).tolist())))
        judged = _tests(sides, nruns, runs_identical, (u_b, u_a))
    qs = _adjusted(judged, nruns, focus)
    for level in LEVELS:
        keys, fb, fa, change, lo, hi, p, df, basis, prior = raw[level]
        rel = judged[level]
        tables[level] = _table(level, keys, fb, fa, change, lo, hi, rel[6], qs[level], min_change,
                               drift.change if drift else 0.0, nruns, rel[8], rel[7], runs_identical,
                               vs=(rel[3], rel[4], rel[5]) if drift else None)
    prior = judged["functions"][9]
    if corrected:
        t = tables["roots"]
        raw_change, raw_why = raw_against_corrected(before_runs, after_runs, t.keys, t.change)
        tables["roots"] = t.__class__(**{**t.__dict__, "raw_change": raw_change, "raw_why": raw_why})
    return Diff(before=info_b, after=info_a, tables=tables, warnings=tuple(warnings),
                corrected=corrected, method=stats.method_text(min_change, mode(nruns, runs_identical), tuple(focus)),
                min_change=min_change, irqs=irqs if corrected else "include", drift=drift,
                runs_identical=runs_identical, prior=prior, focus=tuple(focus))


def run_effects(lb, la, fb, fa, nruns) -> tuple:
    """Each run's effect, in log: the median over the reference functions
    (measured in every run of both sides, at least DRIFT_MIN_CALLS
    independent calls a side, medians resolved) of the run's estimate less
    the function's mean over all runs. Empty arrays when fewer than
    DRIFT_MIN_FUNCTIONS such functions."""
    est = np.vstack((lb, la))
    ref = np.isfinite(est).all(axis=0) & _judgeable(fb, fa, np.full(est.shape[1], stats.BASIS_RUNS), nruns)
    ref &= np.minimum(fb.neff, fa.neff) >= stats.DRIFT_MIN_CALLS
    if ref.sum() < stats.DRIFT_MIN_FUNCTIONS:
        return np.zeros(0), np.zeros(0)
    e = est[:, ref]
    u = np.median(e - e.mean(axis=0), axis=1)
    return u[:lb.shape[0]], u[lb.shape[0]:]


def _tests(sides, nruns, runs_identical, effects=None) -> dict:
    """Per level (keys, fb, fa, change, lo, hi, p, df, basis, prior) of
    stats.interval_tests, the runs' log estimates less their run effects
    when given (u_b, u_a). The prior of the run-to-run variances is fitted
    over the functions that could be called and used by every level (a
    root function is a function)."""
    def shifted(lb, la, pb, pa):
        if effects is None:
            return lb, la, pb, pa
        u_b, u_a = effects
        return (lb - u_b[:, None], la - u_a[:, None], (pb[0] - np.mean(u_b),) + tuple(pb[1:]),
                (pa[0] - np.mean(u_a),) + tuple(pa[1:]))

    keys, (fb, (lb, wb, pb)), (fa, (la, wa, pa)) = sides["functions"]
    lb, la, _, _ = shifted(lb, la, pb, pa)
    s2, dfree = stats.run_variance(lb, la, fb.runs_present, fa.runs_present)
    s2 = np.fmax(s2, _resolution(fb, fa))
    fit = _judgeable(fb, fa, np.full(len(keys), stats.BASIS_RUNS), nruns)
    prior = stats.variance_prior(s2[fit], dfree[fit]) if not runs_identical else (0.0, float("nan"))
    out = {}
    for level in LEVELS:
        keys, (fb, (lb, wb, pb)), (fa, (la, wa, pa)) = sides[level]
        lb, la, pb, pa = shifted(lb, la, pb, pa)
        change, lo, hi, p, df, basis = stats.interval_tests(
            lb, la, fb.runs_present, fa.runs_present, wb, wa, pb, pa, runs_identical, prior, _resolution(fb, fa))
        out[level] = (keys, fb, fa, change, lo, hi, p, df, basis, prior)
    return out


def _resolution(fb, fa) -> np.ndarray:
    """Per item, the least variance of a run's log median: a histogram
    bucket's (stats.BUCKET_VAR) unless every call's value is known."""
    return np.where(fb.exact & fa.exact, 0.0, stats.BUCKET_VAR)


def _adjusted(tests, nruns, focus: tuple = ()) -> dict:
    """Per level the adjusted p-values: an item is in a family when it
    could get a verdict (both sides, an interval, medians resolved, in
    enough runs); the primary claims (root functions, operations) by Holm,
    the functions named with --focus by Holm among themselves (the
    questions asked before looking: adjusting them over thousands of
    functions would hide the change a patch is about), the rest by
    Benjamini-Hochberg; NaN outside the families."""
    family = {lv: np.flatnonzero(_judgeable(tests[lv][1], tests[lv][2], tests[lv][8], nruns)) for lv in LEVELS}
    named = set(focus)
    fkeys = tests["functions"][0]
    is_named = np.array([fkeys[i] in named for i in family["functions"]], dtype=bool)
    named_family = family["functions"][is_named]
    family["functions"] = family["functions"][~is_named]
    qs = {}
    for levels, adjust in ((PRIMARY, stats.holm), (SECONDARY, stats.benjamini_hochberg)):
        allq = adjust(np.concatenate([tests[lv][6][family[lv]] for lv in levels]))
        at = 0
        for lv in levels:
            q = np.full(len(tests[lv][0]), np.nan)
            q[family[lv]] = allq[at:at + len(family[lv])]
            at += len(family[lv])
            qs[lv] = q
    if len(named_family):
        qs["functions"][named_family] = stats.holm(tests["functions"][6][named_family])
    return qs


def mode(nruns, runs_identical: bool) -> str:
    """What the intervals are made of (stats.method_text): "calls" when the
    calls are taken as independent (--runs-identical), "one run" when one
    run a side (run-to-run variation unmeasured: no verdict), else "runs"."""
    if runs_identical:
        return "calls"
    return "one run" if max(nruns) < 2 else "runs"


def _judgeable(fb, fa, basis, nruns) -> np.ndarray:
    """Items that could get a verdict: called on both sides, with an
    interval, medians of at least MIN_TIME_NS and at least MIN_CALLS_JUDGED
    independent calls on both, and on a side of several runs called in at
    least two of them. Leaving the others out of
    the multiple-comparison families (they cannot be called whatever their
    p) is the independent filtering of Bourgon et al. (2010): the filter
    does not look at the change."""
    need_b, need_a = min(2, nruns[0]), min(2, nruns[1])
    return ((fb.calls > 0) & (fa.calls > 0) & (np.asarray(basis) != stats.BASIS_NONE)
            & (np.minimum(fb.median, fa.median) >= stats.MIN_TIME_NS)
            & (np.minimum(fb.neff, fa.neff) >= stats.MIN_CALLS_JUDGED)
            & (fb.runs_present >= need_b) & (fa.runs_present >= need_a))


REMOVED = (("overhead", "hook cost"), ("irq_removed", "interrupt time"), ("offcpu_removed", "off-CPU time"),
           ("sched_removed", "scheduler switch work"))


def _root_raw(runs, keys) -> tuple:
    """Per root function of `keys`, a side's raw durations of its clean
    root calls (a RunItems-like view of each run's: its root calls read
    from the columns a chunk at a time) and, per call, the ns the
    correction took out of them, by kind (REMOVED)."""
    from types import SimpleNamespace

    index = {k: i for i, k in enumerate(keys)}
    m = len(keys)
    parts = []
    nb = np.zeros(m, np.int64)
    calls = np.zeros(m)
    removed = {name: np.zeros(m) for name, _ in REMOVED}
    for run in runs:
        p = run.profile
        c = p.corrected
        if c is None:
            continue
        item_of_func = np.array([index.get(name, -1) for name in p.funcs], dtype=np.int64)
        entries = RootEntries(p.samples, None, np.zeros(m, np.int64), item_of_func[p.col("func")],
                              usable=SAMPLE_GAP | SAMPLE_IRQ | SAMPLE_PARTIAL)
        for it, _ in entries.chunks():
            entries.count += np.bincount(it, minlength=m)
        nb += entries.count
        parts.append(SimpleNamespace(entry_item=np.zeros(0, np.int64), roots=entries))
        tops = np.flatnonzero((p.col("parent") < 0) & ~p.pseudo_roots)
        at = item_of_func[p.col("func")[tops]]
        sel = at >= 0
        np.add.at(calls, at[sel], np.asarray(c.calls, dtype=np.float64)[tops][sel])
        for name, _ in REMOVED:
            col = getattr(c, name)
            if col is not None:
                np.add.at(removed[name], at[sel], np.asarray(col, dtype=np.float64)[tops][sel])
    per_call = {name: np.divide(v, calls, out=np.zeros(m), where=calls > 0) for name, v in removed.items()}
    median = _entry_stats(parts, [np.arange(m)] * len(parts), m)[1]
    return median, nb.astype(np.float64), per_call


def raw_against_corrected(before_runs, after_runs, keys, change) -> tuple:
    """Per root function: the raw change of the typical call (Hodges-
    Lehmann on the raw durations of the same root calls), and, where raw
    and corrected changes go opposite ways (each by at least
    MEAN_MEDIAN_APART), a sentence naming what the correction took out
    that changed most between the sides, per call."""
    eb, nb, rb = _root_raw(before_runs, keys)
    ea, na, ra = _root_raw(after_runs, keys)
    with np.errstate(all="ignore"):
        raw_change = np.where((nb > 0) & (na > 0), ea / eb - 1.0, np.nan)
    apart = stats.MEAN_MEDIAN_APART
    why = []
    for i in range(len(keys)):
        r, c = raw_change[i], change[i]
        if not (np.isfinite(r) and np.isfinite(c) and abs(r) >= apart and abs(c) >= apart and np.sign(r) != np.sign(c)):
            why.append("")
            continue
        moved = sorted(((ra[name][i] - rb[name][i], what) for name, what in REMOVED), key=lambda x: -abs(x[0]))
        moved = [(ns, what) for ns, what in moved if ns * r > 0 and abs(ns) >= 1.0][:2]
        named = " and ".join(f"{what} {ns / 1000.0:+,.1f} us per call" for ns, what in moved) or \
            "no one kind of time (the removed time per call hardly changed)"
        why.append(f"raw time per call {r * 100:+.1f}% (typical call), corrected {c * 100:+.1f}%: the correction "
                   f"took out what changed: {named} on AFTER")
    return raw_change, tuple(why)


def global_drift(fb, fa, change, tested, root_change: float = float("nan")):
    """The Drift when the functions moved together, else None: the median
    of the changes of the functions compared (at least DRIFT_MIN_CALLS
    independent calls on BOTH sides, medians resolved) is at least
    DRIFT_MIN away from 0 and at least DRIFT_SHARE of them moved its way,
    or more than half of them did and the busiest root function moved that
    way by at least DRIFT_MIN too (the root and most functions together).
    A change of one function moves its callers by the same nanoseconds, a
    smaller share of theirs: a handful of functions, never most of them."""
    ok = np.zeros(len(change), dtype=bool)
    ok[tested] = True
    ok &= (np.minimum(fb.neff, fa.neff) >= stats.DRIFT_MIN_CALLS) & np.isfinite(change)
    ok &= np.minimum(fb.median, fa.median) >= stats.MIN_TIME_NS
    ch = change[ok]
    if len(ch) < stats.DRIFT_MIN_FUNCTIONS:
        return None
    mid = float(np.median(ch))
    along = int(np.count_nonzero(np.sign(ch) == np.sign(mid)))
    if abs(mid) < stats.DRIFT_MIN:
        return None
    with_root = math.isfinite(root_change) and root_change * mid > 0 and abs(root_change) >= stats.DRIFT_MIN
    if along < stats.DRIFT_SHARE * len(ch) and not (with_root and 2 * along > len(ch)):
        return None
    return Drift(change=mid, functions=len(ch), along=along)


def _table(level, keys, fb, fa, change, lo, hi, p, q, min_change, drift=0.0, nruns=(1, 1),
           basis=None, df=None, runs_identical: bool = False, vs=None) -> Table:
    """One level's table. change, lo, hi: the change and its interval;
    p, q, basis, df: the test the verdict stands on; vs: with a drift,
    (change, lo, hi) against it (the runs taken relative to their run
    effects), which the verdict is on."""
    m = len(keys)
    basis = tuple(basis) if basis is not None else (stats.BASIS_NONE,) * m
    present_b, present_a = fb.calls > 0, fa.calls > 0
    with np.errstate(all="ignore"):
        rel, rel_lo, rel_hi = vs if vs is not None else (change, lo, hi)
        mean_change = np.where(present_b & present_a & (fb.mean > 0), fa.mean / fb.mean - 1.0, np.nan)
    slower = rel > 0
    significant = np.nan_to_num(q, nan=1.0) <= stats.ALPHA
    # against a drift, the interval has to leave the drift out, not only 0
    beyond_drift = (rel_lo > 0) | (rel_hi < 0) if vs is not None else np.ones(m, dtype=bool)
    big = np.abs(np.nan_to_num(rel)) >= min_change
    resolved = np.minimum(fb.median, fa.median) >= stats.MIN_TIME_NS
    # a side of several runs: the item called in at least two of them (a
    # burst in one run is that run's, not the side's)
    need_b, need_a = min(2, nruns[0]), min(2, nruns[1])
    seen = (fb.runs_present >= need_b) & (fa.runs_present >= need_a)
    enough = np.minimum(fb.neff, fa.neff) >= stats.MIN_CALLS_JUDGED
    # one run a side: the interval is the calls' of one run; how much two
    # runs of the same workload differ is not in it: no verdict
    unmeasured = max(nruns) < 2 and not runs_identical
    verdict, why = [], []
    for i in range(m):
        if not present_b[i]:
            verdict.append("new"), why.append("")
        elif not present_a[i]:
            verdict.append("gone"), why.append("")
        elif unmeasured:
            verdict.append(NO_VERDICT), why.append(ONE_RUN)
        elif significant[i] and beyond_drift[i] and big[i] and resolved[i] and seen[i] and enough[i]:
            verdict.append("slower" if slower[i] else "faster"), why.append("")
        else:
            verdict.append("no change")
            why.append(_few_runs(fb.runs_present[i], fa.runs_present[i], nruns) if not seen[i] else
                       stats.UNRESOLVED if not resolved[i] else
                       stats.FEW_CALLS if not enough[i] else
                       "" if not significant[i] else
                       f"below {min_change * 100:g}%" + (" against the drift" if vs is not None else ""))
    apart_mm = stats.MEAN_MEDIAN_APART
    disagree = (np.abs(np.nan_to_num(mean_change)) >= apart_mm) & (np.abs(np.nan_to_num(change)) >= apart_mm) & \
        (np.sign(np.nan_to_num(mean_change)) != np.sign(np.nan_to_num(change)))
    return Table(level=level, keys=keys, before=fb, after=fa, change=change, ci_lo=lo, ci_hi=hi,
                 p=p, q=q, verdict=tuple(verdict), why=tuple(why),
                 delta_per_root=fa.per_root_time - fb.per_root_time,
                 mean_change=mean_change, disagree=disagree, vs_drift=rel,
                 vs_lo=rel_lo if vs is not None else np.full(m, np.nan),
                 vs_hi=rel_hi if vs is not None else np.full(m, np.nan), basis=basis,
                 df=df if df is not None else np.full(m, np.nan),
                 p_text=tuple(stats.p_text(x) for x in np.asarray(p, dtype=float).tolist()),
                 q_text=tuple(stats.p_text(x) for x in np.asarray(q, dtype=float).tolist()))


def _few_runs(runs_b, runs_a, nruns) -> str:
    """Why an item seen in too few runs has no verdict."""
    side, seen, of = ("BEFORE", runs_b, nruns[0]) if nruns[0] > 1 and runs_b < 2 else ("AFTER", runs_a, nruns[1])
    return f"called in {int(seen)} of {of} {side} runs only"
