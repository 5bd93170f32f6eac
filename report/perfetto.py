"""Perfetto trace (protobuf TrackEvent packets), for ui.perfetto.dev or
trace_processor: every call on its task's timeline.

The Profile keeps sums per call path, not the calls; this output needs every
call, in order. The C core writes them out as it builds them (the call
stream, parse/core/root_calls.h `ftf_spool`: every root call's tree in the
records the slowest calls keep, 20 bytes a call, the task's off-CPU
stretches, lost-event marks and exits without their entry) into three
anonymous temporary files (CallStream), read back here a batch of trees at
a time once the Profile and its corrections are made, each batch decoded
into columns (operations.call_trees, as the slowest calls' trees are) and
written as packets by report._rowfmt.pack_rows in a thread of its own
(Pipeline) while the next batch is decoded: memory is that of two batches,
flat in the trace's length, and no Python runs per call.

What the file holds:
* a process per traced task (nfsd threads are kernel threads: a task is
  its own process; trace.dat records no thread groups), "pid N", with
  - a thread track: the root calls in task context, each call a slice
    nested in its caller's, named by its function; an interrupt subtree
    entered under a call is nested where it ran, its top named "[irq] f"
    and all its calls in category "irq" (the others: "call");
  - "interrupts on top": root calls entered in interrupt context;
  - "off-CPU": the task's stretches from its sched_switch out to back in
    (record timestamps), slices named "off-CPU";
  - "exits without their entry": calls whose entry the trace lost;
  the idle task (pid 0) a track per CPU;
* "lost events": an instant per lost-event mark, on its CPU's timestamp.

Each call's slice carries its figures as arguments: dur_ns (raw),
self_ns (raw), dur_corr_ns (the per-call model of the slowest calls'
trees; absent where the correction leaves the call out: gap calls, root
calls that never completed), cpu (where a root call ended, and a call
that ended on another CPU than its caller), and where they apply irq, gap,
partial (a root call whose entry came before the trace), operation (the
NFS operation of a root call), ret and arg0... (funcgraph-retval,
funcgraph-args), never_completed (a root call whose exit the trace lost:
its completed calls stand on their own), clamped_ns. Times are the trace
clock's nanoseconds (the calltimes every other output prints). A trace's
times mostly nest; where they do not (text timestamps of a microsecond, a
calltime read a few ns before its caller's), a slice is moved inside its
caller or after its previous sibling and says by how much it was
shortened (clamped_ns): dur_ns stays the raw duration.
"""
from __future__ import annotations

import os
import queue
import tempfile
import threading

import numpy as np

from ftflame.correct.operations import _call_columns, _correction_of, call_trees
from ftflame.model.errors import InputError
from ftflame.model.profile import (
    CALL_EXTRA_DTYPE,
    CALL_RECORD_DTYPE,
    SAMPLE_PARTIAL,
    Profile,
    retval_signed,
)

from ._rowfmt import nest_calls, pack_rows
from .options import DEFAULT, RenderOptions

# the call stream's header columns and kinds (parse/core/root_calls.h)
SPOOL_COLS = 10
KIND, PID, CPU, SAMPLE, FUNC, T0, T1, NRECS, NEXTRAS, FLAGS = range(SPOOL_COLS)
SPK_TREE, SPK_OFFCPU, SPK_LOST, SPK_ORPHAN = 1, 2, 3, 4

# calls decoded and written at once: a batch's columns take about 600 bytes
# a call, its packets 100; 8k, not 16k: while one batch is packed in the
# Pipeline's thread the next is made (two in memory, the peak RSS within
# 1.2x of the text report's; 16k: 1.27x)
BATCH_CALLS = 1 << 13
HEAD_ROWS = 1 << 14

# Perfetto's field numbers (protos/perfetto/trace/: trace_packet.proto,
# track_event/track_event.proto, debug_annotation.proto,
# track_descriptor.proto); tests/test_perfetto.py checks them against the
# perfetto package's compiled protos.
F_TRACE_PACKET = 1
F_TIMESTAMP = 8
F_SEQ_ID = 10
F_TRACK_EVENT = 11
F_INTERNED = 12
F_SEQ_FLAGS = 13
F_TRACK_DESCRIPTOR = 60
F_TE_CATEGORY_IIDS = 3
F_TE_ANNOTATIONS = 4
F_TE_TYPE = 9
F_TE_NAME_IID = 10
F_TE_TRACK_UUID = 11
F_TE_NAME = 23
F_DA_NAME_IID = 1
F_DA_BOOL = 2
F_DA_UINT = 3
F_DA_INT = 4
F_DA_DOUBLE = 5
F_DA_STRING = 6
F_ID_CATEGORIES = 1
F_ID_EVENT_NAMES = 2
F_ID_ANNOTATION_NAMES = 3
F_TD_UUID = 1
F_TD_NAME = 2
F_TD_PROCESS = 3
F_TD_THREAD = 4
F_TD_PARENT = 5
F_PD_PID = 1
F_PD_NAME = 6
F_THD_PID = 1
F_THD_TID = 2
F_THD_NAME = 5
SLICE_BEGIN, SLICE_END, INSTANT = 1, 2, 3
SEQ_CLEARED, SEQ_NEEDS = 1, 2
SEQ_ID = 1  # the one writer sequence

CATEGORIES = ("call", "irq", "sched", "lost")
CAT_CALL, CAT_IRQ, CAT_SCHED, CAT_LOST = 1, 2, 3, 4
ANNOTATIONS = ("dur_ns", "self_ns", "dur_corr_ns", "cpu", "irq", "gap", "partial",
               "operation", "ret", "never_completed", "clamped_ns", "tree_not_recorded", "events",
               "arg0", "arg1", "arg2", "arg3", "arg4", "arg5")
_A = {name: i + 1 for i, name in enumerate(ANNOTATIONS)}

# track kinds, under a task's process (uuid = task key << 4 | kind)
TK_PROCESS, TK_THREAD, TK_IRQ, TK_OFFCPU, TK_ORPHAN = 1, 2, 3, 4, 5
LOST_TRACK = 7
IDLE_KEY = 1 << 40  # the idle task's key on CPU c: IDLE_KEY + c (pid 0 is every CPU's)
IDLE_PROCESS = (IDLE_KEY - 1) << 4 | TK_PROCESS


class CallStream:
    """Where the core writes every call as it builds them: three anonymous
    temporary files (headers, records, extras), gone when closed. `fds` is
    what parse.read(call_stream=...) takes."""

    def __init__(self, directory: str | None = None):
        self.directory = directory  # where a writer's own spool goes too (speedscope's)
        self.files = [tempfile.TemporaryFile(prefix="ftflame-calls-", dir=directory) for _ in range(3)]

    @property
    def fds(self) -> tuple:
        return tuple(f.fileno() for f in self.files)

    def close(self) -> None:
        for f in self.files:
            f.close()

    def __enter__(self) -> CallStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def heads(self):
        """The header rows, HEAD_ROWS at a time (int64 arrays of SPOOL_COLS)."""
        f = self.files[0]
        f.seek(0)
        while True:
            b = f.read(HEAD_ROWS * SPOOL_COLS * 8)
            if not b:
                return
            yield np.frombuffer(b, dtype="<i8").reshape(-1, SPOOL_COLS)

    def batches(self):
        """(header rows, their trees' records, their extras), the records
        of about BATCH_CALLS calls (or one bigger tree) at a time, in the
        order the core wrote them."""
        recs, extras = self.files[1], self.files[2]
        recs.seek(0)
        extras.seek(0)
        for head in self.heads():
            tree = head[:, KIND] == SPK_TREE
            nrec = np.where(tree, np.maximum(head[:, NRECS], 0), 0)
            nex = np.where(tree, head[:, NEXTRAS], 0)
            ends = np.cumsum(nrec)
            a = 0
            while a < len(head):
                # up to BATCH_CALLS calls from row a, at least one row
                base = int(ends[a - 1]) if a else 0
                b = max(int(np.searchsorted(ends, base + BATCH_CALLS, side="right")), a + 1)
                r = np.frombuffer(recs.read(int(nrec[a:b].sum()) * CALL_RECORD_DTYPE.itemsize), dtype=CALL_RECORD_DTYPE)
                e = np.frombuffer(extras.read(int(nex[a:b].sum()) * CALL_EXTRA_DTYPE.itemsize), dtype=CALL_EXTRA_DTYPE)
                yield head[a:b], r, e
                a = b


# ---- protobuf pieces ------------------------------------------------------

def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _vfield(field: int, v: int) -> bytes:
    return _key(field, 0) + _varint(v)


def _lfield(field: int, body: bytes) -> bytes:
    return _key(field, 2) + _varint(len(body)) + body


def _sfield(field: int, s: str) -> bytes:
    return _lfield(field, s.encode("utf-8", "surrogateescape"))


def _packet(body: bytes) -> bytes:
    return _lfield(F_TRACE_PACKET, body)


_SEQ = _vfield(F_SEQ_ID, SEQ_ID)


def _interned(p: Profile) -> bytes:
    """The first packet: the sequence's interned names (every function's,
    and its "[irq] f" at nfuncs + its id), categories, argument names."""
    body = bytearray()
    for i, c in enumerate(CATEGORIES):
        body += _lfield(F_ID_CATEGORIES, _vfield(1, i + 1) + _sfield(2, c))
    n = len(p.funcs)
    for prefix, at in (("", 0), ("[irq] ", n)):
        for i, f in enumerate(p.funcs):
            body += _lfield(F_ID_EVENT_NAMES, _vfield(1, at + i + 1) + _sfield(2, prefix + f))
    body += _lfield(F_ID_EVENT_NAMES, _vfield(1, 2 * n + 1) + _sfield(2, "off-CPU"))
    for name, iid in _A.items():
        body += _lfield(F_ID_ANNOTATION_NAMES, _vfield(1, iid) + _sfield(2, name))
    return _packet(_vfield(F_TIMESTAMP, 0) + _SEQ + _vfield(F_SEQ_FLAGS, SEQ_CLEARED) + _lfield(F_INTERNED, bytes(body)))


def _track(uuid: int, name: str, parent: int = 0, process: int | None = None, thread: int | None = None) -> bytes:
    body = _vfield(F_TD_UUID, uuid) + _sfield(F_TD_NAME, name)
    if parent:
        body += _vfield(F_TD_PARENT, parent)
    if process is not None:
        body += _lfield(F_TD_PROCESS, _vfield(F_PD_PID, process) + _sfield(F_PD_NAME, name))
    if thread is not None:
        body += _lfield(F_TD_THREAD, _vfield(F_THD_PID, thread) + _vfield(F_THD_TID, thread) + _sfield(F_THD_NAME, name))
    return _packet(_SEQ + _lfield(F_TRACK_DESCRIPTOR, body))


def task_keys(pid: np.ndarray, cpu: np.ndarray) -> np.ndarray:
    """A task's key: its pid, the idle task's IDLE_KEY + its CPU."""
    return np.where(pid > 0, pid, IDLE_KEY + np.maximum(cpu, 0))


def row_keys(p: Profile, head: np.ndarray) -> np.ndarray:
    """The task key of each header row: a completed root call's its
    sample's (a text trace may name a task's pid after its first calls: the
    core renames the samples then, not the rows written before), the
    others' their own."""
    k = task_keys(head[:, PID], head[:, CPU])
    s = head[:, SAMPLE]
    sampled = np.flatnonzero((head[:, KIND] == SPK_TREE) & (s >= 0) & (s < len(p.samples)))
    if len(sampled):
        k[sampled] = task_keys(p.scol("pid")[s[sampled]], p.scol("cpu")[s[sampled]])
    return k


def _tracks(p: Profile, stream: CallStream) -> bytes:
    """Every task's process and tracks, and the lost events' track: all
    written before any event (a pass over the headers only)."""
    keys: dict = {}
    lost = False
    for head in stream.heads():
        k = row_keys(p, head)
        kinds = head[:, KIND]
        lost |= bool((kinds == SPK_LOST).any())
        for kind, tk in ((SPK_OFFCPU, TK_OFFCPU), (SPK_ORPHAN, TK_ORPHAN)):
            for key in np.unique(k[kinds == kind]).tolist():
                keys.setdefault(key, set()).add(tk)
        for key in np.unique(k[kinds == SPK_TREE]).tolist():
            keys.setdefault(key, set()).add(TK_THREAD)
    out = bytearray()
    if any(key >= IDLE_KEY for key in keys):
        out += _track(IDLE_PROCESS, "idle (pid 0)", process=0)
    for key in sorted(keys):
        idle = key >= IDLE_KEY
        name = f"idle, CPU {key - IDLE_KEY}" if idle else f"pid {key}"
        proc = IDLE_PROCESS if idle else key << 4 | TK_PROCESS
        if not idle:
            out += _track(proc, name, process=key)
        out += _track(key << 4 | TK_THREAD, name, parent=proc, thread=None if idle else key)
        out += _track(key << 4 | TK_IRQ, f"{name}: interrupts on top", parent=proc)
        if TK_OFFCPU in keys[key]:
            out += _track(key << 4 | TK_OFFCPU, f"{name}: off-CPU", parent=proc)
        if TK_ORPHAN in keys[key]:
            out += _track(key << 4 | TK_ORPHAN, f"{name}: exits without their entry", parent=proc)
    if lost:
        out += _track(LOST_TRACK, "lost events")
    return bytes(out)


def _flag(name: str) -> bytes:
    """A `name: true` argument, whole."""
    return _lfield(F_TE_ANNOTATIONS, _vfield(F_DA_NAME_IID, _A[name]) + _vfield(F_DA_BOOL, 1))


def _int_arg(name: str, col_kind: str, col, field: int = F_DA_INT) -> list:
    return [_key(F_TE_ANNOTATIONS, 2), "(", _vfield(F_DA_NAME_IID, _A[name]) + _key(field, 0), (col_kind, col), ")"]


def _double_arg(name: str, col) -> list:
    return [_key(F_TE_ANNOTATIONS, 2), "(", _vfield(F_DA_NAME_IID, _A[name]) + _key(F_DA_DOUBLE, 1), ("d", col), ")"]


def _i64(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


class _Writer:
    """The slices of the call stream's batches, into f (a Pipeline: f.later
    takes a function making the bytes)."""

    def __init__(self, p: Profile, f):
        self.p, self.f = p, f
        self.cal, self.irqs, self.offcpu_removed = _correction_of(p)
        self.sample_corr = np.asarray(p.corrected_or_raw.sample_dur, dtype=np.float64)
        self.sflags = p.scol("flags")
        self.sop = p.scol("op")
        self.nfuncs = len(p.funcs)
        # each operation's argument, whole ("operation": label)
        self.op_frags = [_lfield(F_TE_ANNOTATIONS, _vfield(F_DA_NAME_IID, _A["operation"]) + _sfield(F_DA_STRING, o))
                         for o in p.operations]
        self.last_end: dict = {}  # track -> the end of its last top call written (batches follow in time per task)
        self.calls = self.clamped = 0

    def tree_tracks(self, t: np.ndarray, irq_first: np.ndarray) -> np.ndarray:
        """The track of each tree (header rows t): its task's thread track,
        or the task's interrupts track for a root entered in interrupt context."""
        return row_keys(self.p, t) << 4 | np.where(irq_first, TK_IRQ, TK_THREAD)

    # -- trees ----------------------------------------------------------
    def trees(self, head: np.ndarray, recs: np.ndarray, extras: np.ndarray) -> None:
        t = head[head[:, KIND] == SPK_TREE]
        cut = t[:, NRECS] < 0
        if cut.any():
            self.cut_roots(t[cut])
        t = t[~cut]
        if not len(t):
            return
        sizes = t[:, NRECS]
        raw = _call_columns(recs, sizes, t[:, CPU], t[:, T0], extras, t[:, NEXTRAS])
        sample = t[:, SAMPLE]
        root_corr = np.where(sample >= 0, self.sample_corr[np.maximum(sample, 0)] if len(self.sample_corr) else np.nan,
                             np.nan)
        cols, first, kept = call_trees(raw, sizes, self.cal, self.irqs, self.offcpu_removed, root_corr)
        del raw
        n = len(cols["parent"])
        if not n:
            return
        tree_of = np.repeat(np.arange(len(kept)), kept)
        par = cols["parent"]
        is_irq = cols["is_irq"]
        top = par < 0
        # a tree's track: its task's, apart for a root call entered in
        # interrupt context (a tree that never completed: its first call's)
        tree_track = self.tree_tracks(t, is_irq[np.minimum(first, n - 1)])
        track = tree_track[tree_of]
        start = _i64(cols["calltime"]).copy()
        dur = _i64(cols["incl"])
        end = start + dur
        # a task's first top call of this batch starts after its last one before
        utr, tr_code = np.unique(track, return_inverse=True)
        tr_code = tr_code.reshape(-1)
        for j, tr in enumerate(utr.tolist()):
            last = self.last_end.get(tr)
            if last is not None:
                # moved after it with its duration, as nest_calls moves a
                # top call within a batch (its calls follow it there): a
                # batch's bounds change nothing
                sel = top & (tr_code == j) & (start < last)
                end[sel] += last - start[sel]
                start[sel] = last
        parent_code = np.where(top, -1 - tr_code, par).astype(np.int64)
        # in the rows' order, which is entry order (a caller's row before its
        # callees'): calls nest by the task's event order, a calltime may be
        # off (a gap, sleep-time)
        events = np.frombuffer(nest_calls(parent_code, start, end), dtype=np.int64)
        for j, tr in enumerate(utr.tolist()):
            sel = top & (tr_code == j)
            self.last_end[tr] = int(end[sel].max())
        clamped = dur - (end - start)
        self.calls += n
        self.clamped += int((clamped != 0).sum())
        irq_top = is_irq & (top | ~is_irq[np.maximum(par, 0)])
        name = cols["func"].astype(np.int64) + 1 + np.where(irq_top, self.nfuncs, 0)
        flags = self.sflags[np.maximum(sample, 0)] if len(self.sflags) else np.zeros(len(sample), np.int64)
        root_row = np.zeros(n, bool)
        root_row[first[kept > 0]] = True
        root_row &= top
        is_root = root_row & (sample[tree_of] >= 0)
        partial = is_root & ((flags[tree_of] & SAMPLE_PARTIAL) != 0)
        op = np.where(is_root, self.sop[np.maximum(sample, 0)][tree_of] if len(self.sop) else -1, -1)
        never = top & (sample[tree_of] < 0)
        self._write_slices(events, {
            "start": start, "end": end, "track": track, "name": name, "cat": np.where(is_irq, CAT_IRQ, CAT_CALL),
            "dur": dur, "self": _i64(cols["excl"]), "corr": cols["corr_incl"],
            # the CPU where the root call, and a call that moved, ended
            "cpu": _i64(cols["cpu"]), "cpu_shown": top | (cols["cpu"] != cols["cpu"][np.maximum(par, 0)]),
            "irq": is_irq, "gap": cols["gap"], "partial": partial, "op": op,
            "never": never, "clamped": clamped, "has_ret": cols["has_ret"],
            "ret": retval_signed(_i64(cols["retval"])), "has_args": cols["has_args"], "args": cols["args"]})

    def _write_slices(self, events: np.ndarray, c: dict) -> None:
        """A begin and an end packet per call, in the order of events (a
        call's row for its begin, -1-row for its end); the columns one
        value per call, read where the events say (pack_rows)."""
        n = len(c["start"])

        def col(a, dtype=np.int64):
            return np.ascontiguousarray(a, dtype=dtype)

        corr = col(c["corr"], np.float64)
        clamped = col(c["clamped"])
        tmpl = [_key(F_TRACE_PACKET, 2), "(", _key(F_TIMESTAMP, 0), ("t", col(c["start"]), col(c["end"])),
                _SEQ + _vfield(F_SEQ_FLAGS, SEQ_NEEDS), _key(F_TRACK_EVENT, 2), "(",
                _vfield(F_TE_TYPE, SLICE_END), "B", _vfield(F_TE_TYPE, SLICE_BEGIN), "/",
                _key(F_TE_TRACK_UUID, 0), ("v", col(c["track"])),
                "B", _key(F_TE_NAME_IID, 0), ("v", col(c["name"])), _key(F_TE_CATEGORY_IIDS, 0), ("v", col(c["cat"])),
                *_int_arg("dur_ns", "v", col(c["dur"])), *_int_arg("self_ns", "v", col(c["self"])),
                ("?", col(~np.isnan(corr))), *_double_arg("dur_corr_ns", corr), "/",
                ("?", col(c["cpu_shown"])), *_int_arg("cpu", "v", col(c["cpu"])), "/",
                ("e", col(c["irq"]) - 1, [_flag("irq")]), ("e", col(c["gap"]) - 1, [_flag("gap")]),
                ("e", col(c["partial"]) - 1, [_flag("partial")]), ("e", col(c["op"]), self.op_frags),
                ("e", col(c["never"]) - 1, [_flag("never_completed")]),
                ("?", col(clamped != 0)), *_int_arg("clamped_ns", "v", clamped), "/"]
        has_ret = col(c["has_ret"])
        if has_ret.any():
            tmpl += [("?", has_ret), *_int_arg("ret", "v", col(c["ret"])), "/"]
        args = np.asarray(c["args"])
        if self.p.call_args and args.shape[1]:
            has_args = col(c["has_args"])
            for k in range(min(self.p.call_args, args.shape[1])):
                tmpl += [("?", has_args), *_int_arg(f"arg{k}", "v", col(args[:, k]), F_DA_UINT), "/"]
        tmpl += ["/", ")", ")"]
        events = col(events)
        self.f.later(lambda: pack_rows(tmpl, n, events))

    def cut_roots(self, t: np.ndarray) -> None:
        """Root calls of more than the core's tree cap: the root's slice
        only, from its sample, said (tree_not_recorded)."""
        s = t[:, SAMPLE]
        s = s[s >= 0]
        if not len(s):
            return
        p = self.p
        start = _i64(p.scol("calltime")[s])
        dur = _i64(p.scol("dur")[s])
        key = task_keys(p.scol("pid")[s], p.scol("cpu")[s])
        name = _i64(p.col("func")[p.scol("node")[s]]) + 1
        tmpl = _pair(start, start + dur, key << 4 | TK_THREAD, name, CAT_CALL,
                     [*_int_arg("dur_ns", "v", dur), _flag("tree_not_recorded")])
        self.f.later(lambda: pack_rows(tmpl, len(s)))

    def orphans(self, orph: np.ndarray) -> None:
        """Exits without their entry, on their task's track of them, each
        inside the one before it that contains it (a trace that began
        mid-call ends the calls open then innermost first)."""
        n = len(orph)
        track = task_keys(orph[:, PID], orph[:, CPU]) << 4 | TK_ORPHAN
        start = _i64(orph[:, T0]).copy()
        dur = _i64(orph[:, T1])
        end = start + dur
        utr, code = np.unique(track, return_inverse=True)
        code = code.reshape(-1)
        for j, tr in enumerate(utr.tolist()):  # after what this task's track had before
            last = self.last_end.get(tr)
            if last is not None:
                sel = (code == j) & (start < last)
                end[sel] += last - start[sel]
                start[sel] = last
        by_time = np.lexsort((np.arange(n), -end, start, code))
        parent = np.empty(n, dtype=np.int64)
        depth = np.zeros(n, dtype=np.int64)
        stack: list = []
        for i in by_time.tolist():  # a row per exit without entry: rare, a Python step each
            while stack and (code[stack[-1]] != code[i] or end[stack[-1]] <= start[i]):
                stack.pop()
            parent[i] = stack[-1] if stack else -1 - code[i]
            depth[i] = len(stack)
            stack.append(i)
        order = np.lexsort((start, depth)).astype(np.int64)  # by time, callers first
        events = np.frombuffer(nest_calls(parent, start, end, order), dtype=np.int64)
        for j, tr in enumerate(utr.tolist()):
            self.last_end[tr] = int(end[code == j].max())
        clamped = dur - (end - start)
        nothing = np.zeros(n, np.int64)
        self._write_slices(events, {
            "start": start, "end": end, "track": track, "name": _i64(orph[:, FUNC] + 1),
            "cat": np.where(orph[:, FLAGS] & 1, CAT_IRQ, CAT_CALL), "dur": dur, "self": dur,  # the Profile's
            "corr": np.full(n, np.nan), "cpu": _i64(orph[:, CPU]), "cpu_shown": np.ones(n, np.int64),
            "irq": _i64(orph[:, FLAGS] & 1), "gap": np.ones(n, np.int64), "partial": nothing, "op": nothing - 1,
            "never": nothing, "clamped": clamped, "has_ret": nothing, "ret": nothing, "has_args": nothing,
            "args": np.zeros((n, 0), np.int64)})

    # -- the rest of the stream ------------------------------------------
    def others(self, head: np.ndarray) -> None:
        kind = head[:, KIND]
        off = head[kind == SPK_OFFCPU]
        if len(off):
            key = task_keys(off[:, PID], off[:, CPU])
            d = _i64(off[:, T1] - off[:, T0])
            tmpl = _pair(_i64(off[:, T0]), _i64(off[:, T1]), key << 4 | TK_OFFCPU,
                         np.full(len(off), 2 * self.nfuncs + 1, np.int64), CAT_SCHED,
                         [*_int_arg("dur_ns", "v", d), *_int_arg("cpu", "v", _i64(off[:, CPU]))])
            self.f.later(lambda: pack_rows(tmpl, len(off)))
        orph = head[kind == SPK_ORPHAN]
        if len(orph):
            self.orphans(orph)
        lost = head[kind == SPK_LOST]
        if len(lost):
            names = [_sfield(F_TE_NAME, (f"lost {n:,} events" if n > 0 else "lost events (count unknown)") +
                             f" on CPU {c}") for n, c in zip(lost[:, T1].tolist(), lost[:, CPU].tolist())]
            lost_tmpl = (
                [_key(F_TRACE_PACKET, 2), "(", _key(F_TIMESTAMP, 0), ("v", _i64(lost[:, T0])),
                 _SEQ + _vfield(F_SEQ_FLAGS, SEQ_NEEDS), _key(F_TRACK_EVENT, 2), "(",
                 _vfield(F_TE_TYPE, INSTANT) + _vfield(F_TE_TRACK_UUID, LOST_TRACK) + _vfield(F_TE_CATEGORY_IIDS, CAT_LOST),
                 ("e", np.arange(len(lost), dtype=np.int64), names),
                 *_int_arg("events", "v", _i64(lost[:, T1])), *_int_arg("cpu", "v", _i64(lost[:, CPU])), ")", ")"]
            )
            self.f.later(lambda: pack_rows(lost_tmpl, len(lost)))


def _pair(start, end, track, name, cat, args: list) -> list:
    """A begin and an end packet per row: a slice with nothing inside."""
    track, name = _i64(track), _i64(name)
    cat = _i64(np.broadcast_to(cat, track.shape))
    head = [_SEQ + _vfield(F_SEQ_FLAGS, SEQ_NEEDS), _key(F_TRACK_EVENT, 2), "("]
    return [_key(F_TRACE_PACKET, 2), "(", _key(F_TIMESTAMP, 0), ("v", _i64(start)), *head,
            _vfield(F_TE_TYPE, SLICE_BEGIN) + _key(F_TE_TRACK_UUID, 0), ("v", track),
            _key(F_TE_NAME_IID, 0), ("v", name), _key(F_TE_CATEGORY_IIDS, 0), ("v", cat), *args, ")", ")",
            _key(F_TRACE_PACKET, 2), "(", _key(F_TIMESTAMP, 0), ("v", _i64(end)), *head,
            _vfield(F_TE_TYPE, SLICE_END) + _key(F_TE_TRACK_UUID, 0), ("v", track), ")", ")"]


class Pipeline:
    """The packets packed and written in a thread of their own while the
    next batch's columns are made: pack_rows and the file's write run
    without the GIL, numpy mostly with it, so on two cores the two halves
    (each about half the work) overlap. At most one batch waits (its
    columns and packets: a few MB). later(fn): fn() -> bytes, written in
    order; an error in the thread is raised by the next later() or by
    close()."""

    def __init__(self, f):
        self.f, self.error = f, None
        self.queue: queue.Queue = queue.Queue(maxsize=1)
        self.thread = threading.Thread(target=self._run, name="ftflame-packets", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            fn = self.queue.get()
            if fn is None:
                return
            if self.error is None:
                try:
                    self.f.write(fn())
                except BaseException as e:  # raised in the main thread
                    self.error = e

    def later(self, fn) -> None:
        if self.error is not None:
            raise self.error
        self.queue.put(fn)

    def close(self) -> None:
        """Every packet written (or the thread's error raised)."""
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()
        if self.error is not None:
            raise self.error


def write_calls(p: Profile, stream: CallStream, f) -> dict:
    """The Perfetto trace of p's call stream into the binary file f: the
    counts of calls written and of slices moved to nest (clamped)."""
    f.write(_interned(p))
    f.write(_tracks(p, stream))
    out = Pipeline(f)
    try:
        w = _Writer(p, out)
        for head, recs, extras in stream.batches():
            w.trees(head, recs, extras)
            w.others(head)
    finally:
        out.close()
    return {"calls": w.calls, "clamped": w.clamped}


def render(p: Profile, opts: RenderOptions = DEFAULT) -> str:
    raise InputError("-", "the Perfetto trace is binary and made while the trace is read",
                      "write it to a file: -o NAME.perfetto-trace")


def write(p: Profile, opts: RenderOptions, f) -> None:
    raise InputError(getattr(f, "name", "-"), "the Perfetto trace needs the calls streamed while the trace is read",
                     "use `ftflame report TRACE -o NAME.perfetto-trace`")


def stream_directory(output: str) -> str | None:
    """Where the call stream's files go: beside the output (the temporary
    directory may be a small tmpfs), else the default."""
    d = os.path.dirname(os.path.abspath(output))
    return d if os.access(d, os.W_OK) else None
