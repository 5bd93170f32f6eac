"""The Profile: the one model every renderer reads.

A Profile is built once from a trace (``ftflame.parse.read``) and then only
read, or replaced by transforms that return a new Profile (corrections). It
holds, in columnar numpy arrays so that 100k call paths cost milliseconds:

* the call-path tree: one row per distinct path (a function under its
  ancestors), with raw linear sums over its completed calls and log-bucket
  histograms of inclusive and exclusive time;
* one sample per root call (start, duration, descendants, irq, off-CPU);
* what the tool could not account for, counted (``counters``);
* trace metadata.

Sums are linear, so per-function figures and overhead corrections are
computed from these sums afterwards, never from events.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, TypeVar

import numpy as np

# Column layout of the node and sample tables exported by the C core
# (parse/core/module.c), which writes them by position: check_core_columns
# compares these names with the ones the core exports.
SUM_FIELDS = ("calls", "incl", "excl", "desc", "nchild", "irq", "irq_calls", "offcpu",
              "sched", "sched_calls", "sched_outs", "offcpu_calls")
NODE_COLUMNS = (
    ("parent", "func", "flags")
    + SUM_FIELDS
    + tuple("gap_" + f for f in SUM_FIELDS)
    + tuple("det_" + f for f in SUM_FIELDS)
    + tuple("groot_" + f for f in SUM_FIELDS)
    + ("incl_min", "incl_max", "excl_min", "excl_max", "det_irq_roots", "migrated", "open_end", "unterminated",
       "unowned_child_incl", "irq_early", "roots", "func_roots", "depth")
)
# Node columns stored in 32 bits (the rest in 64): identifiers and counts.
# A count is at most the trace's calls, and the core refuses a trace whose
# count would not fit (an error naming it, never a wrapped value); every
# nanosecond figure keeps 64 bits. Profile.col reads each as int64, so the
# arithmetic on them is the same as on 64-bit columns (a sum over paths of
# 32-bit counts may well pass 2^31). Half the memory for these columns.
NODE_NARROW = frozenset(("parent", "func", "flags", "calls", "desc", "nchild", "irq_calls", "gap_calls",
                         "gap_desc", "gap_nchild", "gap_irq_calls", "migrated", "open_end", "unterminated",
                         "sched_calls", "sched_outs", "gap_sched_calls", "gap_sched_outs", "offcpu_calls",
                         "gap_offcpu_calls", "det_calls", "det_desc", "det_nchild", "det_irq_calls",
                         "det_sched_calls", "det_sched_outs", "det_offcpu_calls", "det_irq_roots",
                         "groot_calls", "groot_desc", "groot_nchild", "groot_irq_calls",
                         "groot_sched_calls", "groot_sched_outs", "groot_offcpu_calls",
                         "irq_early", "roots", "func_roots", "depth"))
# Node columns mostly zero on real traces (interrupts, off-CPU time,
# anomalies): kept sparse when that is smaller (NodeTable).
NODE_SPARSE = frozenset(("irq", "irq_calls", "offcpu", "gap_irq", "gap_irq_calls", "gap_offcpu", "migrated",
                         "sched", "sched_calls", "sched_outs", "gap_sched", "gap_sched_calls", "gap_sched_outs",
                         "offcpu_calls", "gap_offcpu_calls",
                         *("det_" + f for f in SUM_FIELDS), *("groot_" + f for f in SUM_FIELDS), "det_irq_roots",
                         "open_end", "unterminated", "unowned_child_incl", "irq_early"))
NODE_DTYPES = tuple(np.dtype("<i4") if c in NODE_NARROW else np.dtype("<i8") for c in NODE_COLUMNS)
SAMPLE_COLUMNS = ("node", "pid", "cpu", "flags", "calltime", "dur", "desc", "irq", "offcpu",
                  "irq_calls", "irq_roots", "leaf_min", "leaves", "op", "sched", "sched_calls", "sched_outs",
                  "offcpu_calls", "switches", "retval", "subbufs")
# The calls of a kept slowest root call (parse/core/root_calls.c), entry order:
# they cross from the core as 20-byte records of these 32-bit fields
# (ftf_rec) and, for the figures a record does not hold, extras (record,
# field id, value; ftf_rec_extra) whose field ids name these; decoded into
# CALL_COLUMNS (ftflame/correct/operations.py, call_columns) only for the
# trees an output prints.
CALL_RECORD = ("func", "parent", "start", "dur", "desc_flags")
CALL_ARGS = ("arg0", "arg1", "arg2", "arg3", "arg4", "arg5")  # funcgraph-args: the values an entry carried
CALL_EXTRAS = ("start", "dur", "desc", "irq", "offcpu", "irq_roots", "cpu", "sched", "sched_calls", "sched_outs",
               "offcpu_calls", "retval", *CALL_ARGS)
CALL_COLUMNS = ("func", "parent", "flags", "cpu", "calltime", "dur", "desc", "irq", "offcpu", "irq_roots",
                "sched", "sched_calls", "sched_outs", "offcpu_calls", "retval", *CALL_ARGS)
# A root call with more calls (or more extras) keeps no tree: it stays among
# the slowest with its figures, counted (counter slowest_without_tree) and
# shown (parse/core/builder.h, FTF_TREE_MAX_RECS; the core's TREE_MAX_CALLS).
TREE_MAX_CALLS = 1 << 18
# Return values per function id (ftf_retvals, parse/core/builder.h): its calls with a
# return value that returned no error code (ok_*), and those that did (err_*)
RETVAL_COLUMNS = ("ok_calls", "ok_incl", "ok_min", "ok_max", "err_calls", "err_incl", "err_min", "err_max")


def check_core_columns(core) -> None:
    """Raise ImportError unless the C core's column names (its NODE_COLUMNS
    and SAMPLE_COLUMNS) are these, in this order: a column added or moved on
    one side only would silently read one figure as another."""
    for table, ours, theirs in (("node", NODE_COLUMNS, core.NODE_COLUMNS),
                                ("node dtype", tuple(d.str for d in NODE_DTYPES), core.NODE_DTYPES),
                                ("sparse node", tuple(c for c in NODE_COLUMNS if c in NODE_SPARSE), core.NODE_SPARSE),
                                ("sample", SAMPLE_COLUMNS, core.SAMPLE_COLUMNS),
                                ("call record", CALL_RECORD, core.CALL_RECORD),
                                ("call extra", CALL_EXTRAS, core.CALL_EXTRAS),
                                ("return value", RETVAL_COLUMNS, core.RETVAL_COLUMNS)):
        if tuple(theirs) != ours:
            diff = [f"{i}: {a!r} in C, {b!r} in profile.py"
                    for i, (a, b) in enumerate(zip(theirs, ours)) if a != b]
            if len(theirs) != len(ours):
                diff.append(f"{len(theirs)} columns in C, {len(ours)} in profile.py")
            raise ImportError(f"ftflame: the C core's {table} columns differ from ftflame/model/profile.py's "
                              f"({'; '.join(diff)}): rebuild the C core (make build), or name the columns "
                              f"the same on both sides")


NODE_IRQ = 1
NODE_IRQ_ROOT = 2
NODE_PARTIAL = 4
SAMPLE_GAP = 1
SAMPLE_PARTIAL = 2
SAMPLE_IRQ = 4
SAMPLE_RET = 8  # the root call's exit recorded a return value: sample column "retval" holds it
KEPT_BY_RAW = 1  # KeptTrees.by: kept among the slowest by raw duration
KEPT_BY_CORRECTED = 2  # ...by on-CPU task time (duration less off-CPU, irq and switch work)
CALL_DONE = 1  # CALL_COLUMNS flags (parse/core/builder.h ftf_rec_flags)
CALL_IRQ = 2
CALL_GAP = 4
CALL_RET = 8  # the call's exit carried a return value (column retval)
CALL_WITH_ARGS = 16  # its entry carried argument values (columns arg0...)
CALL_RECORD_DTYPE = np.dtype([(n, "<i4" if n == "start" else "<u4") for n in CALL_RECORD])
CALL_EXTRA_DTYPE = np.dtype([("rec", "<u4"), ("field", "<u4"), ("value", "<u8")])


class NodeTable:
    """The node table: one array per column (NODE_COLUMNS), in its own
    width (NODE_DTYPES), one row per call path. col() reads a column as
    int64 whatever its width. A column that is mostly zeros (NODE_SPARSE:
    interrupts, off-CPU time, anomalies: nearly all zeros on real traces)
    is kept as its non-zero rows and values when that is under a quarter
    of its dense size."""

    __slots__ = ("_cols", "_n")

    def __init__(self, columns: Mapping[str, np.ndarray]):
        missing = [c for c in NODE_COLUMNS if c not in columns]
        if missing:
            raise ValueError(f"node table without columns {missing}")
        lens = {v.n if isinstance(v, _Sparse) else len(v) for v in (columns[c] for c in NODE_COLUMNS)}
        if len(lens) > 1:
            raise ValueError(f"node table columns of different lengths {sorted(lens)}")
        self._n = lens.pop()
        self._cols = {}
        for c, d in zip(NODE_COLUMNS, NODE_DTYPES):
            v = columns[c]
            if isinstance(v, _Sparse):
                self._cols[c] = v
                continue
            v = _narrowed(c, v, d)
            self._cols[c] = _Sparse.of(v) if c in NODE_SPARSE else v
        for v in self._cols.values():  # the Profile is immutable: so are its columns
            for a in ((v.rows, v.values) if isinstance(v, _Sparse) else (v,)):
                a.flags.writeable = False

    @classmethod
    def from_core(cls, table, nrows: int) -> NodeTable:
        """The core's table (parse/core/module.c, nodes_table): a block of
        the columns but the NODE_SPARSE ones, one after another, each 8-byte
        aligned (views of it: no copy), and the NODE_SPARSE ones as their
        non-zero rows and values, a pair of blocks each, kept so when that
        is smaller (_Sparse.of's rule), else made dense."""
        block, sparse = table
        cols, off = {}, 0
        pairs = iter(sparse)
        for c, d in zip(NODE_COLUMNS, NODE_DTYPES):
            if c in NODE_SPARSE:
                rows, values = next(pairs)
                cols[c] = _Sparse.of_rows(nrows, np.frombuffer(rows, dtype=np.int32), np.frombuffer(values, dtype=d))
            else:
                cols[c] = np.frombuffer(block, dtype=d, count=nrows, offset=off)
                off += (nrows * d.itemsize + 7) & ~7
        return cls(cols)

    @classmethod
    def from_array(cls, table: np.ndarray) -> NodeTable:
        """From an int64 (rows, len(NODE_COLUMNS)) array; narrow columns
        checked to fit."""
        return cls({c: table[:, i] for i, c in enumerate(NODE_COLUMNS)})

    def __len__(self) -> int:
        return self._n

    def col(self, name: str, rows=None, dtype=np.int64) -> np.ndarray:
        """The column as int64 (or dtype), or its `rows` only: gathered,
        then converted once (no whole-column temporary)."""
        v = self._cols[name]
        if isinstance(v, _Sparse):
            return v.dense(dtype, rows)
        v = v if rows is None else v[rows]
        return v if v.dtype == dtype else v.astype(dtype)

    def stored(self, name: str) -> np.ndarray:
        """The column in its own width (a sparse one made dense)."""
        v = self._cols[name]
        return v.dense(NODE_DTYPES[NODE_COLUMNS.index(name)]) if isinstance(v, _Sparse) else v

    def is_sparse(self, name: str) -> bool:
        return isinstance(self._cols[name], _Sparse)

    def as_array(self) -> np.ndarray:
        """The whole table as int64 (rows, len(NODE_COLUMNS)): for tests."""
        return np.stack([self.col(c) for c in NODE_COLUMNS], axis=1) if self._n else \
            np.zeros((0, len(NODE_COLUMNS)), dtype=np.int64)

    def replaced(self, **columns) -> NodeTable:
        """A table with these columns replaced (narrow ones checked to fit)."""
        return NodeTable({**self._cols, **columns})

    def equals(self, other: NodeTable) -> bool:
        return len(self) == len(other) and all(np.array_equal(self.stored(c), other.stored(c))
                                               for c in NODE_COLUMNS)

    def __eq__(self, other) -> bool:
        return isinstance(other, NodeTable) and self.equals(other)

    __hash__ = None  # type: ignore[assignment]  # equal tables are not one key

    @property
    def nbytes(self) -> int:
        return sum(v.nbytes for v in self._cols.values())


class _Sparse(NamedTuple):
    """A mostly-zero column of n rows: its non-zero rows (ascending) and values."""
    n: int
    rows: np.ndarray  # int32
    values: np.ndarray

    @staticmethod
    def of(v: np.ndarray):
        """v compacted when its non-zero rows and values take under a
        quarter of its size, else v (a copy: not a view of the core's block)."""
        # counted first: the non-zero rows are only listed for a column kept
        # sparse; listed from a boolean mask (numpy's nonzero of an integer
        # array is 8 times slower than of a boolean one: 17 ms of the export
        # on 220k call paths)
        if not _Sparse.smaller(int(np.count_nonzero(v)), len(v), v.itemsize):
            return np.array(v)
        nz = np.flatnonzero(v != 0)
        return _Sparse(len(v), nz.astype(np.int32), v[nz].copy())

    @staticmethod
    def smaller(nonzero: int, n: int, itemsize: int) -> bool:
        """Whether a column of n values with `nonzero` non-zero ones is kept
        sparse: its rows (4 bytes) and values under a quarter of its size."""
        return nonzero * (4 + itemsize) * 4 < max(n * itemsize, 1)

    @staticmethod
    def of_rows(n: int, rows: np.ndarray, values: np.ndarray):
        """A column of n rows given as its non-zero rows (ascending) and
        values: kept so by of()'s rule, else made dense."""
        if not _Sparse.smaller(len(rows), n, values.itemsize):
            out = np.zeros(n, dtype=values.dtype)
            out[rows] = values
            return out
        return _Sparse(n, rows, values)

    def dense(self, dtype, rows=None) -> np.ndarray:
        if isinstance(rows, np.ndarray) and rows.dtype.kind in "iu":
            # a chunk's rows looked up among the non-zero ones: not a whole
            # column made per chunk (the JSON writer asks 4096 rows at a time)
            out = np.zeros(len(rows), dtype=dtype)
            if len(self.rows) and len(rows):
                r = np.where(rows < 0, rows + self.n, rows)  # numpy's negative indices
                pos = np.minimum(np.searchsorted(self.rows, r), len(self.rows) - 1)
                hit = self.rows[pos] == r
                out[hit] = self.values[pos[hit]]
            return out
        out = np.zeros(self.n, dtype=dtype)
        out[self.rows] = self.values
        return out if rows is None else out[rows]

    @property
    def nbytes(self) -> int:
        return self.rows.nbytes + self.values.nbytes


def _narrowed(name: str, values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """values as dtype; ValueError when one does not fit."""
    values = np.asarray(values)
    if values.dtype == dtype:
        return np.ascontiguousarray(values)
    if len(values) and dtype.kind == "i":
        info = np.iinfo(dtype)
        if values.min() < info.min or values.max() > info.max:
            raise ValueError(f"node column {name}: values {values.min()}..{values.max()} do not fit {dtype}")
    return np.ascontiguousarray(values, dtype=dtype)


class KeptTree(NamedTuple):
    """One kept slowest root call's tree as the core holds it (CALL_RECORD)."""
    base: int            # the calltime each record's start is relative to
    cpu: int             # the CPU of every call without a "cpu" extra
    recs: np.ndarray     # CALL_RECORD_DTYPE, entry order
    extras: np.ndarray   # CALL_EXTRA_DTYPE

    @property
    def nbytes(self) -> int:
        return self.recs.nbytes + self.extras.nbytes

# The root calls' columns as the core stores them (parse/core/builder.h,
# ftf_roots): fixed widths, a figure too wide for its column held as an
# extra (the column holds the escape); the lazy columns absent when every
# value is 0; the mostly-zero figures kept only where non-zero.
ROOT_DENSE: dict[str, np.dtype] = {"calltime": np.dtype("<i8"), "node": np.dtype("<u4"), "dur": np.dtype("<u4"),
              "pid": np.dtype("<i4"), "cpu": np.dtype("<i2"), "op": np.dtype("<i2"), "flags": np.dtype("u1")}
ROOT_LAZY = ("desc", "leaf_min", "leaves")  # <u4, None when all 0
ROOT_EXTRA_SHIFT = 5  # an extra's row << 5 | its SAMPLE_COLUMNS index


class RootCalls:
    """The completed root calls, a row each (SAMPLE_COLUMNS), kept as the
    core's columns of fixed-width fields (25 bytes a root call, 4 more per
    lazy column present, 16 per non-zero mostly-zero figure), not copied:
    an int64 (n, 20) table was 160 bytes a root call. col(name) is a column
    as int64 (made when asked: a copy but for calltime); stored(name) and
    nonzero(name) read what is kept, without a whole int64 column."""

    def __init__(self, n: int, dense: dict, extras: dict, peak_bytes: int = 0):
        self.n = n
        self.peak_bytes = peak_bytes  # the core's columns at their largest while it read (capacity included)
        self._dense = dense    # name -> stored column (ROOT_DENSE, ROOT_LAZY), None: all 0
        self._extras = extras  # name -> (rows int64, values int64), ascending rows

    @classmethod
    def from_core(cls, d: dict) -> RootCalls:
        n = int(d["n"])
        dense: dict[str, np.ndarray | None] = {c: np.frombuffer(d[c], dtype=t, count=n) for c, t in ROOT_DENSE.items()}
        dense.update({c: None if d[c] is None else np.frombuffer(d[c], dtype="<u4", count=n) for c in ROOT_LAZY})
        ex = np.frombuffer(d["extras"], dtype="<u8").reshape(-1, 2)
        extras = {}
        if len(ex):
            field = (ex[:, 0] & ((1 << ROOT_EXTRA_SHIFT) - 1)).astype(np.int64)
            for f in distinct(field).tolist():
                sel = np.flatnonzero(field == f)
                extras[SAMPLE_COLUMNS[f]] = ((ex[sel, 0] >> ROOT_EXTRA_SHIFT).astype(np.int64),
                                             ex[sel, 1].view(np.int64))
        return cls(n, dense, extras, int(d.get("peak_bytes", 0)))

    @classmethod
    def from_array(cls, table: np.ndarray) -> RootCalls:
        """From an int64 (rows, len(SAMPLE_COLUMNS)) array (hand-made
        profiles): each column in its stored width, checked to fit."""
        n = len(table)
        dense: dict[str, np.ndarray | None] = {}
        extras: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for i, c in enumerate(SAMPLE_COLUMNS):
            v = table[:, i] if n else np.zeros(0, np.int64)
            t = ROOT_DENSE.get(c, np.dtype("<u4") if c in ROOT_LAZY else None)
            if t is None or (c in ROOT_LAZY and not v.any()):
                rows = np.flatnonzero(v)
                if len(rows):
                    extras[c] = (rows.astype(np.int64), v[rows].astype(np.int64))
                if c in ROOT_LAZY:
                    dense[c] = None
                continue
            info = np.iinfo(t)
            esc = (v < info.min) | (v > info.max) if c == "calltime" else (
                (v >= info.max) if t.kind == "u" else ((v <= info.min) | (v > info.max)))
            s = v.astype(t)
            rows = np.flatnonzero(esc)
            if len(rows):
                s[rows] = info.max if t.kind == "u" else info.min
                extras[c] = (rows.astype(np.int64), v[rows].astype(np.int64))
            dense[c] = s
        return cls(n, dense, extras)

    def __len__(self) -> int:
        return self.n

    def __eq__(self, other) -> bool:
        """The same root calls, figure by figure (two reads compared)."""
        if not isinstance(other, RootCalls):
            return NotImplemented
        return self.n == other.n and all(np.array_equal(self.col(c), other.col(c)) for c in SAMPLE_COLUMNS)

    # compared by value: no hash (as numpy arrays have none)
    __hash__ = None  # type: ignore[assignment]

    @property
    def nbytes(self) -> int:
        """What the columns and extras hold, in bytes."""
        return (sum(v.nbytes for v in self._dense.values() if v is not None)
                + sum(r.nbytes + v.nbytes for r, v in self._extras.values()))

    def stored(self, name: str) -> np.ndarray | None:
        """The column as kept (ROOT_DENSE or <u4 lazy), None for a lazy one
        that is all zeros, or for a mostly-zero figure; only where the
        column has no escaped rows (exact as is), else None too."""
        if name in self._extras and name in self._dense:
            return None
        return self._dense.get(name)

    def values(self, name: str) -> np.ndarray:
        """The column as kept when that is exact (no copy), else as int64:
        for reads that take any integer width (indexing, comparing)."""
        v = self.stored(name)
        return self.col(name) if v is None else v

    def nonzero(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, values) where a mostly-zero figure (no column) is not 0."""
        assert name not in self._dense, name
        return self._extras.get(name, (np.zeros(0, np.int64), np.zeros(0, np.int64)))

    def col(self, name: str, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """The column (rows lo..hi) as int64, the same values as the core's
        int64 table had (a copy, but calltime's: a view)."""
        hi = self.n if hi is None else min(hi, self.n)
        v = self._dense.get(name)
        if v is None:
            out = np.zeros(max(hi - lo, 0), np.int64)
        elif v.dtype == np.int64:
            if name not in self._extras:
                return v[lo:hi]
            out = v[lo:hi].copy()
        else:
            out = v[lo:hi].astype(np.int64)
        if name in self._extras:
            rows, vals = self._extras[name]
            a, b = np.searchsorted(rows, (lo, hi))
            out[rows[a:b] - lo] = vals[a:b]
        return out

    def take(self, name: str, rows) -> np.ndarray:
        """col(name)[rows] (int64), made from those rows only (rows: an
        index array, a mask or an index)."""
        v = self._dense.get(name)
        if name in self._extras or v is None:
            return self.col(name)[rows]
        return v[rows].astype(np.int64)

    # an int64 (n, 20) table's reads, for tests and hand checks
    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        table = np.zeros((self.n, len(SAMPLE_COLUMNS)), np.int64)
        for i, c in enumerate(SAMPLE_COLUMNS):
            table[:, i] = self.col(c)
        return table if dtype is None else table.astype(dtype)

    def __getitem__(self, key):
        if isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], (int, np.integer)):
            return self.col(SAMPLE_COLUMNS[key[1]])[key[0]]
        return np.asarray(self)[key]

    def tolist(self) -> list:
        return np.asarray(self).tolist()


NO_ROOT_CALLS = RootCalls.from_array(np.zeros((0, len(SAMPLE_COLUMNS)), np.int64))


class KeptTrees:
    """The kept slowest root calls as the core gives them, as columns: per
    call its sample row, its tree's base calltime (its 64 bits, as int64)
    and CPU, whether its tree was kept (too big: not), and where its records
    and extras lie in the blocks of every kept tree's, one tree after the
    other. A trace may keep a tree per distinct root function: an object per
    tree cost more than its calls."""

    __slots__ = ("sample", "base", "cpu", "kept", "rec_at", "ext_at", "recs", "extras", "by", "on_cpu", "n")

    def __init__(self, table: np.ndarray, recs: np.ndarray, extras: np.ndarray, n: int = 0):
        """table: int64 rows (sample, base, cpu, records (-1: not kept),
        extras[, kept by: KEPT_BY_RAW | KEPT_BY_CORRECTED, the on-CPU time
        it was kept by or -1]); n: the calls
        kept per (root path, operation) and measure (--slowest; 0: not
        known). The core keeps more by on-CPU time than n, the candidates
        for the slowest by corrected duration (ranked_slowest picks those)."""
        self.n = n
        self.sample, self.base, self.cpu = table[:, 0], table[:, 1], table[:, 2]
        # why the core kept each: among the slowest by raw duration, by
        # on-CPU time (the corrected figures' ranking), or both
        self.by = table[:, 5] if table.shape[1] > 5 else np.full(len(table), KEPT_BY_RAW, dtype=np.int64)
        # the on-CPU time a call was kept by (-1: by raw duration only)
        self.on_cpu = table[:, 6] if table.shape[1] > 6 else np.full(len(table), -1, dtype=np.int64)
        self.kept = table[:, 3] >= 0
        self.rec_at = np.zeros(len(table) + 1, dtype=np.int64)
        np.cumsum(np.maximum(table[:, 3], 0), out=self.rec_at[1:])
        self.ext_at = np.zeros(len(table) + 1, dtype=np.int64)
        np.cumsum(table[:, 4], out=self.ext_at[1:])
        self.recs, self.extras = recs, extras

    def __len__(self) -> int:
        return len(self.sample)

    def sizes(self, k: np.ndarray) -> np.ndarray:
        """The records of trees k (0 for one not kept)."""
        return self.rec_at[k + 1] - self.rec_at[k]

    def tree(self, k: int) -> KeptTree | None:
        """Tree k (None: not kept), views of the blocks."""
        if not self.kept[k]:
            return None
        return KeptTree(int(self.base[k].astype(np.uint64)), int(self.cpu[k]),
                        self.recs[self.rec_at[k]:self.rec_at[k + 1]], self.extras[self.ext_at[k]:self.ext_at[k + 1]])


NO_KEPT_TREES = KeptTrees(np.zeros((0, 7), dtype=np.int64), np.zeros(0, dtype=CALL_RECORD_DTYPE),
                          np.zeros(0, dtype=CALL_EXTRA_DTYPE))


# Histogram geometry (parse/core/builder.h): values below HIST_SUB ns are exact;
# above, each power of two is split into HIST_SUB equal buckets.
HIST_SUB = 16
HIST_RESOLUTION = 1.0 / HIST_SUB  # worst-case bucket width relative to its value


def stable_order(keys: np.ndarray) -> np.ndarray:
    """np.argsort(keys, kind="stable") of integer keys, the same order: keys
    that fit 16 bits (depths, function ids) are sorted as such, by radix in
    numpy (several times faster than a 64-bit sort); keys that fit 32 bits
    (rows: the child lists' parents) by two such passes, the low half, then
    the high half of that order (a pass keeps the order of equal keys:
    2.6 ms against 4.3 for 220k parents, 2 against 16 for random keys)."""
    if len(keys) and keys.min() >= 0:
        top = int(keys.max())
        if top < 1 << 16:
            return np.argsort(keys.astype(np.uint16), kind="stable")
        if top < 1 << 32:
            low = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
            return low[np.argsort((keys[low] >> 16).astype(np.uint16), kind="stable")]
    return np.argsort(keys, kind="stable")


def distinct(values: np.ndarray) -> np.ndarray:
    """np.unique(values) of a 1-d integer array: its distinct values,
    ascending, in its dtype. Not np.unique itself: that form asks
    np.ma.is_masked, whose first use imports numpy.ma (6-9 ms of CPU in
    every report that calls it)."""
    s = np.sort(values)
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if len(s) else s


def top_rows(values: np.ndarray, top: int) -> np.ndarray:
    """np.argsort(-values, kind="stable")[:top], the same rows in the same
    order, without sorting every value: only those not below the top-th
    largest are sorted (hot lists of 125k call paths)."""
    if top <= 0 or len(values) <= top or np.isnan(values).any():
        return np.argsort(-values, kind="stable")[:max(top, 0)]
    floor = np.partition(values, len(values) - top)[len(values) - top]
    cand = np.flatnonzero(values >= floor)  # row order: ties stay in it
    return cand[np.argsort(-values[cand], kind="stable")[:top]]


def hist_lower(bucket: np.ndarray) -> np.ndarray:
    """Lower bound in ns of histogram buckets (vectorised ftf_hist_lower)."""
    b = np.asarray(bucket, dtype=np.int64)
    k = (b - HIST_SUB) // HIST_SUB + 4
    sub = (b - HIST_SUB) % HIST_SUB
    big = (np.int64(1) << np.maximum(k, 4)) + (sub << np.maximum(k - 4, 0))
    return np.where(b < HIST_SUB, b, big)


def hist_upper(bucket: np.ndarray) -> np.ndarray:
    """Exclusive upper bound in ns of histogram buckets."""
    return hist_lower(np.asarray(bucket, dtype=np.int64) + 1)


@functools.cache
def bucket_mids(nbuckets: int) -> np.ndarray:
    """The value a percentile in each bucket is taken as: the bucket's
    midpoint (exact below HIST_SUB). A table: buckets are few, entries many."""
    b = np.arange(nbuckets, dtype=np.int64)
    lower = hist_lower(b)
    mids = np.where(b < HIST_SUB, lower, (lower + hist_upper(b) - 1) // 2)
    mids.flags.writeable = False
    return mids


@dataclass(frozen=True, eq=False, repr=False)
class Histograms:
    """Per-row histograms in CSR form: row i owns entries offsets[i]:offsets[i+1]."""

    offsets: np.ndarray  # int64, len rows+1
    buckets: np.ndarray  # int32, sorted within a row
    counts: np.ndarray  # uint32

    @classmethod
    def from_core(cls, triple) -> Histograms:
        offs, bks, cnts = triple
        return cls(np.frombuffer(offs, dtype=np.int64), np.frombuffer(bks, dtype=np.int32),
                   np.frombuffer(cnts, dtype=np.uint32))

    @property
    def rows(self) -> int:
        return len(self.offsets) - 1

    def row(self, i: int):
        s, e = self.offsets[i], self.offsets[i + 1]
        return self.buckets[s:e], self.counts[s:e]

    def group(self, keys: np.ndarray, ngroups: int) -> Histograms:
        """Merge rows that share a key (e.g. all paths of one function): one
        entry per bucket any of a key's rows has, buckets ascending, counts
        summed (uint64). In C, a key at a time (_model.hist_group): beside
        the result only the rows' order, not an entry-long key column and a
        (key x bucket) table as numpy would need."""
        import ftflame._model as _model

        offsets, buckets, counts = _model.hist_group(self.offsets, self.buckets, self.counts,
                                                     np.ascontiguousarray(keys, dtype=np.int64), ngroups)
        return Histograms(np.frombuffer(offsets, dtype=np.int64), np.frombuffer(buckets, dtype=np.int32),
                          np.frombuffer(counts, dtype=np.uint64))

    def percentiles(self, qs, lo: np.ndarray, hi: np.ndarray, rows=None) -> np.ndarray:
        """Percentiles (0..100) per row from the buckets, as bucket midpoints
        clamped to the row's exact [lo, hi]. Accurate to HIST_RESOLUTION/2.
        Each is the midpoint of the first bucket whose running count reaches
        ceil(total * q / 100) (at least 1); 0 for an empty row. In C (one
        pass per row, faster than the numpy version in
        tests/helpers/jsonref.py it is compared with). rows: only those rows
        (indices), in that order, lo and hi one per row given: read in place,
        their entries not gathered (a chunk of the tree at a time)."""
        import ftflame._model as _model

        if rows is not None:
            rows = np.ascontiguousarray(rows, dtype=np.int64)
        n = self.rows if rows is None else len(rows)
        if n == 0 or len(self.counts) == 0:
            return np.zeros((n, len(qs)), dtype=np.int64)
        out = _model.hist_percentiles(self.offsets, self.buckets, self.counts, self._mids,
                                      np.ascontiguousarray(lo, dtype=np.int64),
                                      np.ascontiguousarray(hi, dtype=np.int64), tuple(qs), rows)
        return np.frombuffer(out, dtype=np.int64).reshape(n, len(qs))

    @functools.cached_property
    def _mids(self) -> np.ndarray:
        """bucket_mids of every bucket the table holds: its largest found
        once, not once per chunk of rows asked for."""
        return bucket_mids(int(self.buckets.max()) + 1)


def retval_signed(v: np.ndarray) -> np.ndarray:
    """Return values (int64 bits of the recorded long) as the kernel's
    printer reads them: a value with its upper 32 bits clear and bit 31 set
    is an int's, sign-extended (parse/core/builder.h, ftf_retval_is_error)."""
    v = np.asarray(v, dtype=np.int64)
    low = ((v >> 32) == 0) & ((v & 0x80000000) != 0)
    return np.where(low, v - (1 << 32), v)


def retval_is_error(v: np.ndarray) -> np.ndarray:
    """Whether each return value is an error code (-4095..-1: IS_ERR_VALUE)."""
    s = retval_signed(v)
    return (s >= -4095) & (s <= -1)


@dataclass(frozen=True, eq=False, repr=False)
class Retvals:
    """The calls that returned a value, per function id (ftf_retvals, parse/core/builder.h):
    those that returned an error code (-4095..-1 as a signed long, an int's
    sign-extended from its low 32 bits: the kernel's printer's rule) apart
    from the others, each with its inclusive times' sum, extremes and
    histogram (the node histograms' buckets). Raw figures: every completed
    call with a return value, gap calls included, as the raw sums."""

    table: np.ndarray  # int64 (functions, len(RETVAL_COLUMNS))
    hist_ok: Histograms  # a row per function id
    hist_err: Histograms

    @classmethod
    def from_core(cls, res, nfuncs: int) -> Retvals:
        tab, ok, err = res
        table = np.frombuffer(tab, dtype=np.int64).reshape(nfuncs, len(RETVAL_COLUMNS))

        def rows(triple):  # the core's rows end at the last function with a return value
            h = Histograms.from_core(triple)
            pad = np.full(nfuncs - h.rows, h.offsets[-1], dtype=np.int64)
            return Histograms(np.concatenate([h.offsets, pad]), h.buckets, h.counts)

        return cls(table, rows(ok), rows(err))

    def col(self, name: str) -> np.ndarray:
        return self.table[:, RETVAL_COLUMNS.index(name)]


@dataclass(frozen=True)
class TraceInfo:
    """What the input was and how it was recorded."""

    source: str
    format: str  # "trace.dat", later the text dialects
    kernel: str = ""
    clock: str = ""
    cpus: int = 0
    tracer_version: str = ""
    file_version: int = 0
    compression: str = ""
    events_per_cpu: Mapping[int, int] = field(default_factory=dict)
    has_sched_switch: bool = False
    has_retval: bool = False
    has_args: bool = False
    per_task: bool = True  # stacks per task (trace.dat) or per CPU (some text)
    irq_source: str = "common_flags"  # how irq context was recognised


@dataclass(frozen=True)
class Calibration:
    """Tracer hook cost used for corrections (the overhead model in docs/design.md)."""

    o_in_ns: float
    o_out_ns: float
    source: str  # "none", "file:PATH", "in-trace", "command line"
    method: str = ""
    details: Mapping = field(default_factory=dict)
    # How the trace's own bounds judged the calibration (ftflame/correct/fit.py):
    # None where it was not checked
    fit: Mapping | None = None

    @property
    def applied(self) -> bool:
        return self.source != "none"


NO_CALIBRATION = Calibration(0.0, 0.0, "none", "not corrected: corrected figures equal raw ones")


class OffCpu(enum.Enum):
    """What the correction did with the time the traced task was switched
    out (sched_switch events): the state outputs print in their own words."""

    REMOVED = "removed"
    KEPT_ASKED = "kept-asked"  # correct(offcpu="keep")
    KEPT_NOSLEEP = "kept-nosleep"  # durations already exclude it (nosleep-time): Corrected.offcpu_reason says why
    UNKNOWN = "unknown"  # no sched_switch events: it stays in the durations

    @property
    def kept(self) -> bool:
        return self in (OffCpu.KEPT_ASKED, OffCpu.KEPT_NOSLEEP)


class WarningKind(enum.Enum):
    """How loud a warning is: every one is printed in the outputs' notes;
    NOT_UNDERSTOOD ones (part of the input passed over) are said on stderr
    too, since folded and speedscope files have no place for notes."""

    NOTE = "note"
    NOT_UNDERSTOOD = "not-understood"


@dataclass(frozen=True)
class TraceWarning:
    """One warning about the trace or its report: its kind, and its
    sentence as every output prints it."""

    kind: WarningKind
    text: str

    def __str__(self) -> str:
        return self.text


def note_warning(text: str) -> TraceWarning:
    """A warning printed in the outputs' notes only."""
    return TraceWarning(WarningKind.NOTE, text)


def loud_warnings(warnings) -> list:
    """The warnings said on stderr too (WarningKind.NOT_UNDERSTOOD)."""
    return [w for w in warnings if w.kind is WarningKind.NOT_UNDERSTOOD]


# Sums at or beyond this are not exact as a float64: their mean is divided
# as integers (Python's int / int is the correctly rounded quotient).
EXACT_SUM = 1 << 53


def means(sums, calls) -> np.ndarray:
    """The mean per call of each row (float64; 0.0 where a row has no
    calls): the one division behind every mean an output prints, which
    rounds it and never divides again. Integer sums are divided exactly,
    also beyond 2**53 where float64(sum) / calls would round the sum first."""
    s = np.asarray(sums)
    c = np.asarray(calls)
    out = np.divide(s, c, out=np.zeros(len(s)), where=c != 0)
    if s.dtype.kind in "iu" and len(s):
        for r in np.flatnonzero(((s >= EXACT_SUM) | (s <= -EXACT_SUM)) & (c != 0)).tolist():
            out[r] = int(s[r]) / int(c[r])
    return out


@dataclass(frozen=True, eq=False, repr=False)
class Corrected:
    """Corrected sums per node (same row order as the node table)."""

    incl: np.ndarray  # float64 sums over the node's clean calls
    excl: np.ndarray
    calls: np.ndarray  # calls the corrected sums cover (gap calls left out)
    clamped: np.ndarray  # per node: 1 when a corrected sum was clamped at 0
    sample_dur: np.ndarray  # corrected duration per root sample, NaN for a gap root call (left out)
    notes: tuple = ()
    # What was taken out of the clean calls' raw inclusive sums, per node
    # (ftflame/correct/corrections.py): hook cost, irq subtrees, off-CPU time; the
    # ns added back by clamping; 1 where the hook-cost correction exceeds
    # half the measured time (unreliable).
    overhead: np.ndarray | None = None
    irq_removed: np.ndarray | None = None
    offcpu_removed: np.ndarray | None = None
    clamp_ns: np.ndarray | None = None
    unreliable: np.ndarray | None = None
    sample_clamped: int = 0
    irqs: str = "exclude"  # irq subtrees left out of the interrupted calls, or "include"
    offcpu: OffCpu = OffCpu.REMOVED
    offcpu_reason: str = ""  # OffCpu.KEPT_NOSLEEP: the evidence, as the notes say it
    # Per node: the scheduler's work around the switches inside the clean
    # calls (the switch frames' on-CPU time less their hook cost), taken out
    # with the off-CPU time (docs/overhead.md "Switch work"); None: none.
    sched_removed: np.ndarray | None = None
    # Per node: the part of incl over the detached calls (kept calls whose
    # caller's call is left out: a tree of their own, in no kept caller's
    # time); None: no such call.
    det_incl: np.ndarray | None = None

    def means(self, kind: str, rows=None) -> np.ndarray:
        """The corrected mean per clean call of each node ("incl" or
        "excl"), or of its `rows` only (a slice or indices)."""
        sums, calls = getattr(self, kind), self.calls
        return means(sums if rows is None else sums[rows], calls if rows is None else calls[rows])


def missing_entries_unmarked(counters: Mapping[str, int]) -> str:
    """" with no lost-event mark" when the trace has none: its missing
    entries were dropped without the ring buffer saying so."""
    return "" if counters.get("lost_records") else " with no lost-event mark"


def depth_limit_words(counters: Mapping[str, int]) -> str:
    """What every output says of a graph the kernel cut at its return-stack
    limit (the overrun counter grew: parse/core/builder.c), "" when not."""
    n = counters.get("depth_limit_calls", 0)
    if not n:
        return ""
    return (f"the kernel cut the call graph at depth {counters.get('depth_limit', 0)}: its return stack was "
            f"full, {n:,} call{'s' if n != 1 else ''} below not recorded; the calls above are complete and "
            "kept, their time includes the unrecorded calls' (only the recorded calls' hook cost is taken out)")


def lost_share(counters: Mapping[str, int]) -> float | None:
    """The share of the events the ring buffer was given that it dropped
    (lost events of known count against those written and those lost),
    None when it lost none of known count."""
    lost = int(counters.get("lost_events", 0))
    if not lost:
        return None
    return lost / (lost + int(counters.get("events", 0)))


def gap_causes(counters: Mapping[str, int]) -> str:
    """The events that make a call a gap call (parse/core/builder.c marks
    the frames open at each), those this trace's counters show, joined with
    "or"; "" when none."""
    c = counters
    causes = []
    if c.get("lost_records"):
        causes.append("a lost-event gap")
    if c.get("missing_entries"):
        causes.append(f"a missing entry (a depth jump{missing_entries_unmarked(c)})")
    if c.get("unterminated"):
        causes.append("a lost exit")
    if c.get("orphan_exits"):
        causes.append("an exit without its entry")
    if len(causes) > 1:
        return ", ".join(causes[:-1]) + " or " + causes[-1]
    return causes[0] if causes else ""


_T = TypeVar("_T")


class Views:
    """The derived views of one Profile that the later stages compute (the
    corrected statistics, the operations' latency rows, the intervals, the
    fit bounds): each computed once, on first use, and kept with the
    Profile it was computed from. The one place a stage keeps what it
    derives from an immutable Profile; a new Profile (Profile.replace)
    starts with none, so a view of old figures never reaches new ones."""

    __slots__ = ("_done",)

    def __init__(self) -> None:
        self._done: dict = {}

    def get(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """The view named key, computed by compute() the first time."""
        if key not in self._done:
            self._done[key] = compute()
        return self._done[key]

    def __contains__(self, key: Hashable) -> bool:
        return key in self._done


@dataclass(frozen=True, eq=False, repr=False)
class Profile:
    trace: TraceInfo
    funcs: tuple  # function names; node column "func" indexes it
    nodes: NodeTable  # a column per NODE_COLUMNS, one row per call path
    hist_incl: Histograms
    # None: read without them (parse.read(excl_hist=False): the text report
    # prints no exclusive percentiles); FunctionTable.excl_pct is None then
    hist_excl: Histograms | None
    samples: RootCalls  # a row per completed root call (SAMPLE_COLUMNS)
    counters: Mapping[str, int]
    lost_per_cpu: Mapping[int, int]  # cpu -> lost events of known count
    lost_gaps_unknown_per_cpu: Mapping[int, int] = field(default_factory=dict)  # gaps of unknown size
    calibration: Calibration = NO_CALIBRATION
    corrected: Corrected | None = None
    balance: tuple = ()
    warnings: tuple = ()  # TraceWarning each
    # totals measured outside the tracer (ftflame/correct/measured.py), or None
    measured: dict | None = None
    # the server's CPU time measured outside the tracer (ftflame/correct/cpu.py), or None
    cpu: dict | None = None
    # In-trace overhead estimate (ftflame/correct/calibration.py): {(kind, context,
    # cpu): (1-ns histogram, count over range)}, kind "leaf" or "gap",
    # context "task", "softirq" or "hardirq".
    overhead_samples: Mapping = field(default_factory=dict)
    # Operations (parse/core/root_calls.c): sample column "op" indexes these
    # labels (-1: none), op_how says which function(s) named each.
    operations: tuple = ()
    op_how: tuple = ()
    # The slowest root calls kept by the core, with their trees (KeptTrees)
    slowest_trees: KeptTrees = NO_KEPT_TREES
    # Return values per function, None when no call had one
    retvals: Retvals | None = None
    # the most argument values an entry of a kept slowest call carried
    # (funcgraph-args; 0: none)
    call_args: int = 0
    # what the later stages derive from this Profile (Views); not copied
    # by replace()
    views: Views = field(default_factory=Views, init=False, repr=False, compare=False)

    # ---- columns -------------------------------------------------------
    def col(self, name: str, rows=None, dtype=np.int64) -> np.ndarray:
        """A node column as int64 (or dtype), or its values at `rows`
        (stored narrower or sparse for some: NodeTable)."""
        return self.nodes.col(name, rows, dtype)

    def scol(self, name: str, rows=None) -> np.ndarray:
        """A root-call column as int64 (RootCalls.col), or its values at rows
        (RootCalls.take: no whole column made for a few rows)."""
        return self.samples.col(name) if rows is None else self.samples.take(name, rows)

    def root_returns(self, lo: int = 0, hi: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(return value, whether its exit recorded one) of root calls lo..hi:
        the value signed as the kernel's printer reads it (retval_signed: an
        int's -EIO recorded as 0xfffffffb is -5), 0 where none. Rows at a
        time: a table written in chunks makes no whole column for it."""
        flags, raw = self.samples.col("flags", lo, hi), self.samples.col("retval", lo, hi)
        return retval_signed(raw), (flags & SAMPLE_RET) != 0

    @property
    def offcpu_known(self) -> bool:
        """Whether off-CPU time was measured: sched_switch events were seen
        (an event format in the file without one event says nothing)."""
        return int(self.counters.get("switches", 0)) > 0

    @property
    def gap_causes(self) -> str:
        """What this trace's gap calls span, named from the counters that
        made them ("a lost-event gap or a lost exit"): an output that says
        "lost events" of a trace without any would claim what it does not show."""
        return gap_causes(self.counters)

    @property
    def nrows(self) -> int:
        return len(self.nodes)

    def name(self, row: int) -> str:
        return self.funcs[int(self.nodes.stored("func")[row])]

    def name_ranks(self) -> np.ndarray:
        """Per function id: its name's rank in Python's order of the names
        (equal names, equal ranks): sorting by these is sorting by name,
        in numpy (a trace may have 100k functions)."""
        return self.views.get("name_ranks", lambda: np.unique(
            np.array(self.funcs, dtype=object), return_inverse=True)[1].reshape(-1).astype(np.int64))

    def replace(self, **changes) -> Profile:
        out = dataclasses.replace(self, **changes)
        # views of the tree's shape stay valid while the nodes do
        if not {"nodes", "hist_incl", "hist_excl"} & changes.keys():
            for k in _SHAPE_VIEWS:
                if k in self.__dict__:
                    out.__dict__[k] = self.__dict__[k]
        return out

    def forget(self, *views: str) -> None:
        """Let go of the named cached views of the tree's shape (the
        properties below): a whole-tree column each, that a later stage
        makes again if it needs it."""
        for view in views:
            self.__dict__.pop(view, None)

    # ---- derived views (cached: the Profile is immutable) ---------------
    @functools.cached_property
    def children(self) -> Children:
        """children[i] = rows whose parent is i; index -1 (last) = roots."""
        return Children(self.col("parent"))

    @functools.cached_property
    def levels(self) -> tuple:
        """Rows grouped by depth (roots first): a top-down or bottom-up pass
        over the tree is one vectorised step per level. Rows in 32 bits, as
        the core's parent column: kept with the Profile (the tree's shape
        views are 8 bytes a call path in all, not 16). Views of level_order's."""
        order, bounds = self.level_order
        return tuple(order[bounds[d]:bounds[d + 1]] for d in range(len(bounds) - 1))

    @functools.cached_property
    def level_order(self) -> tuple:
        """(the rows by depth, roots first, each depth's rows ascending, as
        int32; where each depth starts in them, int64, and their end): the
        levels as one array, for the passes over them in C."""
        depth = self.col("depth")
        order = _rows32(stable_order(depth))
        bounds = np.searchsorted(depth[order], np.arange(int(depth.max()) + 2 if self.nrows else 0))
        return order, bounds.astype(np.int64)

    @functools.cached_property
    def pseudo_roots(self) -> np.ndarray:
        """The '(partial)' pseudo-root: a node that is no call (ancestors unknown)."""
        return (self.col("parent") < 0) & ((self.col("flags") & NODE_PARTIAL) != 0) & (self.col("calls") == 0)

    @functools.cached_property
    def tree_tops(self) -> np.ndarray:
        """The top row (root) of every node's tree."""
        parent = self.col("parent")
        top = _rows32(np.arange(self.nrows, dtype=np.int64))
        for rows in self.levels[1:]:
            rows = rows.astype(np.intp)  # numpy's index type: its fast path
            top[rows] = top[parent[rows]]
        return top

    @property
    def roots(self) -> list:
        return self.children[-1]

    @functools.cached_property
    def node_percentiles(self) -> tuple:
        """(incl, excl) percentiles p50/p90/p99 per node."""
        return tuple(self._percentiles_of(kind, None) for kind in ("incl", "excl"))

    def node_percentiles_at(self, rows, kinds=("incl", "excl"), bounds=None) -> tuple:
        """node_percentiles of the rows `rows` (all when None), of each of
        kinds, computed for those rows only unless the whole table's are
        made: the JSON writer takes them a chunk of the tree at a time (the
        whole table's would add a whole-tree array per percentile). bounds:
        {kind: (kind_min, kind_max) of those rows as int64}, when the caller
        has gathered them (not gathered twice)."""
        if "node_percentiles" in self.__dict__ or (rows is None and self.hist_excl is not None):
            whole = self.node_percentiles
            return tuple(whole[("incl", "excl").index(k)][slice(None) if rows is None else rows]
                         for k in kinds)
        if rows is None:  # read without exclusive histograms: the whole table of the kinds asked, each once
            made = self.__dict__.setdefault("_whole_percentiles", {})
            return tuple(made[k] if k in made else made.setdefault(k, self._percentiles_of(k, None))
                         for k in kinds)
        return tuple(self._percentiles_of(kind, rows, None if bounds is None else bounds[kind]) for kind in kinds)

    def _percentiles_of(self, kind: str, rows, bounds=None) -> np.ndarray:
        h = self.hist_incl if kind == "incl" else self.hist_excl
        if h is None:  # read with excl_hist=False: a bug of the caller, not bad input
            raise ValueError("this Profile was read without exclusive-time histograms (excl_hist=False)")
        if isinstance(rows, slice) or (rows is not None and np.asarray(rows).dtype == bool):
            rows = np.arange(self.nrows)[rows]  # as indices, in the order numpy takes them
        lo, hi = bounds if bounds is not None else (self.col(kind + "_min", rows), self.col(kind + "_max", rows))
        if kind == "excl":
            lo, hi = np.maximum(lo, 0), np.maximum(hi, 0)
        return h.percentiles(PERCENTILES, lo, hi, rows)

    def node_means(self, kind: str, rows=None, raw=None) -> np.ndarray:
        """The raw mean per call of each call path ("incl" or "excl"), or
        of its `rows` only (a slice or indices): computed for those rows,
        not kept (the JSON writer takes a chunk of the tree at a time).
        raw: those rows' (kind, calls) columns, when the caller has
        gathered them (not gathered twice)."""
        if raw is not None:
            return means(*raw)
        calls = self.nodes.stored("calls") if rows is None else self.col("calls", rows)
        return means(self.col(kind, rows), calls)

    @functools.cached_property
    def corrected_or_raw(self) -> Corrected:
        """Corrected sums when a correction was applied, else the raw ones."""
        if self.corrected is not None:
            return self.corrected
        return Corrected(
            incl=self.col("incl").astype(np.float64), excl=self.col("excl").astype(np.float64),
            calls=self.col("calls"), clamped=np.zeros(self.nrows, dtype=np.int64),
            # a gap root call has no corrected figure, raw or not (NaN)
            sample_dur=np.where(self.scol("flags") & SAMPLE_GAP, np.nan, self.scol("dur").astype(np.float64)),
            notes=("no calibration: corrected figures equal raw ones",))

    @functools.cached_property
    def functions(self) -> FunctionTable:
        return FunctionTable.build(self)

    def path(self, row: int) -> list:
        """The function names of call path `row`, from its root down."""
        names = []
        parent = self.nodes.stored("parent")  # as stored: a path reads a few rows, not an int64 copy
        while row >= 0:
            names.append(self.name(row))
            row = int(parent[row])
        return names[::-1]


PERCENTILES = (50, 90, 99)
@dataclass(frozen=True, eq=False, repr=False)
class FunctionTable:
    """Per-function aggregates over every call path the function appears in.

    Sums include recursive calls (a function under itself counts each call),
    so incl sum equals the sum of the tracer's own durations over its exits."""

    names: tuple
    func_ids: np.ndarray  # function id per row
    calls: np.ndarray
    incl: np.ndarray
    excl: np.ndarray
    incl_min: np.ndarray
    incl_max: np.ndarray
    excl_min: np.ndarray
    excl_max: np.ndarray
    incl_pct: np.ndarray  # (rows, 3) p50 p90 p99
    excl_pct: np.ndarray | None  # None: the Profile has no exclusive histograms
    incl_corr: np.ndarray
    excl_corr: np.ndarray
    calls_corr: np.ndarray
    irq: np.ndarray
    offcpu: np.ndarray
    gap_calls: np.ndarray
    hist_incl: Histograms
    returns: ReturnStats | None = None  # None: the trace has no return values

    @classmethod
    def build(cls, p: Profile) -> FunctionTable:
        import ftflame._model as _model

        nf = len(p.funcs)
        func = p.col("func")
        func32 = np.ascontiguousarray(p.nodes.stored("func"))

        def total(values: np.ndarray, op: int = 0, init: int = 0, calls=None) -> np.ndarray:
            """An integer column's sum per function (op 0; or its least, 1, or
            greatest, 2, over the paths with calls), in C from the column as
            stored: no int64 copy, gather and reduceat per column (0.7-1.3 ms
            each on 220k call paths)."""
            out = np.full(nf, init, dtype=np.int64)
            _model.group_reduce(func32, np.ascontiguousarray(values), calls, op, out)
            return out

        def column(name: str) -> np.ndarray:
            return total(p.nodes.stored(name))

        calls32 = np.ascontiguousarray(p.nodes.stored("calls"))

        def extreme(name, op, init):
            return total(p.nodes.stored(name), op, init, calls32)

        ncalls = column("calls")
        keep = np.nonzero(ncalls > 0)[0]
        incl_s = column("incl")
        excl_s = column("excl")
        # busiest first; ties by name for a stable order (one lexsort by the
        # names' ranks: a trace may have 100k functions)
        if len(keep) and incl_s[keep].min() > np.iinfo(np.int64).min:
            ids = keep[np.lexsort((p.name_ranks()[keep], -incl_s[keep]))].astype(np.int64)
        else:
            ids = np.array(sorted(keep.tolist(), key=lambda f: (-int(incl_s[f]), p.funcs[f])), dtype=np.int64)
        order = ids.tolist()
        big = np.iinfo(np.int64).max
        imin, imax = extreme("incl_min", 1, big), extreme("incl_max", 2, -big)
        xmin, xmax = extreme("excl_min", 1, big), extreme("excl_max", 2, -big)
        hi = p.hist_incl.group(func, nf)
        ipct = hi.percentiles(PERCENTILES, imin, imax)
        xpct = None
        if p.hist_excl is not None:
            xpct = p.hist_excl.group(func, nf).percentiles(PERCENTILES, np.maximum(xmin, 0), np.maximum(xmax, 0))
        c = p.corrected_or_raw
        g = Grouping(func, nf)  # float sums: numpy's reduceat, its own order of adding
        icorr = g.sum(c.incl)
        xcorr = g.sum(c.excl)
        ccorr = total(c.calls.astype(np.int64))
        hsub = Histograms(*_take_rows(hi, ids))
        return cls(
            names=tuple(map(p.funcs.__getitem__, order)), func_ids=ids, calls=ncalls[ids],
            incl=incl_s[ids], excl=excl_s[ids], incl_min=imin[ids], incl_max=imax[ids],
            excl_min=xmin[ids], excl_max=xmax[ids], incl_pct=ipct[ids], excl_pct=None if xpct is None else xpct[ids],
            incl_corr=icorr[ids], excl_corr=xcorr[ids], calls_corr=ccorr[ids],
            irq=column("irq")[ids], offcpu=column("offcpu")[ids],
            gap_calls=column("gap_calls")[ids], hist_incl=hsub,
            returns=None if p.retvals is None else ReturnStats.build(p.retvals, ids))

    @functools.cached_property
    def incl_mean(self) -> np.ndarray:
        """Raw inclusive mean per call (means)."""
        return means(self.incl, self.calls)

    @functools.cached_property
    def excl_mean(self) -> np.ndarray:
        """Raw exclusive (self) mean per call (means)."""
        return means(self.excl, self.calls)

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        return self.names.index(name)


@dataclass(frozen=True, eq=False, repr=False)
class ReturnSide:
    """Raw inclusive times of one kind of return (FunctionTable rows)."""

    calls: np.ndarray
    incl: np.ndarray  # sum
    incl_min: np.ndarray
    incl_max: np.ndarray
    incl_pct: np.ndarray  # (rows, 3) p50 p90 p99

    @functools.cached_property
    def incl_mean(self) -> np.ndarray:
        """Raw inclusive mean per call of this kind of return (means)."""
        return means(self.incl, self.calls)


@dataclass(frozen=True, eq=False, repr=False)
class ReturnStats:
    """Per function (FunctionTable's rows): its calls that returned an
    error code (`err`) and those that returned something else (`ok`), from
    Profile.retvals. A call whose exit printed no return value (text) is in
    neither: ok.calls + err.calls may be below the function's calls."""

    ok: ReturnSide
    err: ReturnSide

    @classmethod
    def build(cls, rv: Retvals, ids: np.ndarray) -> ReturnStats:
        def side(kind: str, hist: Histograms) -> ReturnSide:
            calls = rv.col(kind + "_calls")[ids]
            lo, hi = rv.col(kind + "_min")[ids], rv.col(kind + "_max")[ids]
            return ReturnSide(calls, rv.col(kind + "_incl")[ids], np.where(calls > 0, lo, 0),
                              np.where(calls > 0, hi, 0), hist.percentiles(PERCENTILES, lo, hi, ids))

        return cls(ok=side("ok", rv.hist_ok), err=side("err", rv.hist_err))

    @property
    def calls(self) -> np.ndarray:
        """Calls with a return value."""
        return self.ok.calls + self.err.calls

    @property
    def total_calls(self) -> int:
        """Calls with a return value, all functions together."""
        return int(self.ok.calls.sum() + self.err.calls.sum())


class Children:
    """The call-path tree's child lists in CSR form: children[i] is the list
    of rows whose parent is i (row order), children[-1] the roots. 100k
    Python lists would cost more than the rest of a report."""

    def __init__(self, parent: np.ndarray):
        n = len(parent)
        key = np.where(parent < 0, n, parent)
        self._order = _rows32(stable_order(key))
        self._start = _rows32(np.concatenate(([0], np.cumsum(np.bincount(key, minlength=n + 1)))))
        self._n = n

    def __len__(self) -> int:
        return self._n + 1

    def __getitem__(self, i: int) -> list:
        if i < 0:
            i += self._n + 1
        return self._order[self._start[i]:self._start[i + 1]].tolist()


class Grouping:
    """Reductions of node columns per key (e.g. per function), exact for
    integers: sort once, then reduceat (np.add.at is ten times slower)."""

    def __init__(self, keys: np.ndarray, ngroups: int):
        self.order = stable_order(keys)
        sk = keys[self.order]
        lo = np.searchsorted(sk, np.arange(ngroups), side="left")
        hi = np.searchsorted(sk, np.arange(ngroups), side="right")
        self.nonempty = lo < hi
        self.starts = lo[self.nonempty]
        self.ngroups = ngroups

    def reduce(self, op, values: np.ndarray, empty=0) -> np.ndarray:
        out = np.full(self.ngroups, empty, dtype=values.dtype)
        if len(self.starts):
            out[self.nonempty] = op.reduceat(values[self.order], self.starts)
        return out

    def sum(self, values: np.ndarray) -> np.ndarray:
        return self.reduce(np.add, values)


def _rows32(rows: np.ndarray) -> np.ndarray:
    """Row numbers kept with the Profile in 32 bits (the node table's own
    parent column is 32-bit: its rows fit)."""
    return rows.astype(np.int32) if len(rows) < 1 << 31 else rows


def _take_rows(h: Histograms, rows: np.ndarray):
    starts, ends = h.offsets[rows], h.offsets[rows + 1]
    lens = ends - starts
    offsets = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    # entry indices of the rows, concatenated: arange shifted per row
    idx = np.arange(int(offsets[-1]), dtype=np.int64) + np.repeat(starts - offsets[:-1], lens)
    return offsets, h.buckets[idx], h.counts[idx]


_SHAPE_VIEWS = ("children", "level_order", "levels", "tree_tops", "pseudo_roots", "node_percentiles")
_SAMPLE_INDEX = {n: i for i, n in enumerate(SAMPLE_COLUMNS)}
