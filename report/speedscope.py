"""speedscope file format ("evented" profiles), for https://www.speedscope.app
or a local `speedscope` install.

Two kinds of evented profile are written:

1. One profile per root function, "<root> (call tree, raw ns)": a synthetic
   timeline of the aggregated call tree (the Profile keeps sums per call
   path). Each call path is one frame lasting its total inclusive time;
   children follow one another from their parent's start, widest first, and
   the parent's self time comes last. speedscope's "Left Heavy" and
   "Sandwich" views then show the exact per-path and per-function totals,
   which is what the other ftflame outputs report. (With a calibration, a
   second profile per root carries the corrected times.) The time axis of
   this profile is not wall-clock time.
2. One profile per task, "calls of pid N (wall clock, ...)": every call of
   the task at its real start with its raw duration, nested in its caller,
   so the "Time Order" view is the task's timeline call by call; interrupts
   under an "[irq]"/"[softirq]" frame where they ran. These come from the
   call stream the C core writes while reading (report/perfetto.py
   CallStream; the CLI always makes one for this format): write_calls lays
   the calls out with the Perfetto writer's nesting and writes their events
   with report._rowfmt.evented_json, a batch at a time, into a spool file
   from which each task's profile is then copied: memory stays flat.
   document(p)/render(p) without a call stream (the Python API) write each
   task's root calls only ("root calls of pid N"), the one thing the Profile
   knows per call.

All values are integer nanoseconds (unit "nanoseconds").
"""
from __future__ import annotations

import json
import tempfile

import numpy as np

from ftflame import __version__
from ftflame.correct.calibration import provenance
from ftflame.correct.corrections import irq_kind
from ftflame.model.profile import SAMPLE_IRQ, SAMPLE_PARTIAL, Profile

from ._rowfmt import evented_json
from .flametree import context_frames
from .options import DEFAULT, RenderOptions

SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"


def _tree_events(p: Profile, roots: list, incl: np.ndarray, frame_of: list, drawn=None,
                 context=None) -> tuple:
    """O/C events laying out the subtrees of `roots` one after the other.
    A frame lasts max(its time, its children's total) so children always
    nest inside it (the "(partial)" pseudo-root has no time of its own).
    drawn: paths to show (corrected: the rule of the flame graphs,
    report/flametree.drawn_corrected); the others and their time are left out.
    context: root row -> frame index of its [irq] / [softirq] frame, opened
    around a root that ran in interrupt context."""
    full = p.children
    if drawn is None:
        kids = full
    else:
        kids = {r: [k for k in full[r] if drawn[k]] for r in _subtree_rows(full, roots)}
    events = []
    # durations bottom-up over the subtrees
    dur = {}
    order = []
    stack = list(roots)
    while stack:
        r = stack.pop()
        order.append(r)
        stack.extend(kids[r])
    for r in reversed(order):
        dur[r] = max(int(round(incl[r])), sum(dur[k] for k in kids[r]))
    t = 0
    for root in sorted(roots, key=lambda r: (-dur[r], r)):
        if dur[root] <= 0:
            continue
        wrap = (context or {}).get(root)
        if wrap is not None:
            events.append({"type": "O", "frame": wrap, "at": t})
        stack = [(root, t, False)]
        while stack:
            r, at, closing = stack.pop()
            if closing:
                events.append({"type": "C", "frame": frame_of[r], "at": at + dur[r]})
                continue
            events.append({"type": "O", "frame": frame_of[r], "at": at})
            stack.append((r, at, True))
            start = at
            placed = []
            for k in sorted(kids[r], key=lambda k: (-dur[k], p.name(k), k)):
                if dur[k] > 0:
                    placed.append((k, start, False))
                    start += dur[k]
            stack.extend(reversed(placed))
        if wrap is not None:
            events.append({"type": "C", "frame": wrap, "at": t + dur[root]})
        t += dur[root]
    return events, t


def _subtree_rows(kids, roots) -> list:
    out, stack = [], list(roots)
    while stack:
        r = stack.pop()
        out.append(r)
        stack.extend(kids[r])
    return out


def document(p: Profile, root_calls: bool = True) -> dict:
    frames = [{"name": n} for n in p.funcs]
    frame_of = p.col("func").tolist()
    # [irq] / [softirq] frames above the roots that ran in interrupt context
    context = {}
    for r, label in context_frames(p).items():
        if not any(f["name"] == label for f in frames[len(p.funcs):]):
            frames.append({"name": label})
        context[r] = next(i for i in range(len(p.funcs), len(frames)) if frames[i]["name"] == label)
    profiles = []
    roots_by_func = {}
    for r in p.roots:
        roots_by_func.setdefault(p.name(r), []).append(r)
    applied = p.calibration.applied
    variants = [("raw", p.col("incl").astype(np.float64), None)]
    if applied:
        from .flametree import drawn_corrected

        variants.append(("corrected", np.asarray(p.corrected_or_raw.incl, dtype=np.float64),
                         drawn_corrected(p)))
    incl = p.col("incl")
    busy = {name: int(incl[rows].sum()) for name, rows in roots_by_func.items()}
    # busiest root function first: speedscope opens on profile 0
    for name in sorted(roots_by_func, key=lambda n: (n == "(partial)", -busy[n], n)):
        for label, values, drawn in variants:
            events, end = _tree_events(p, roots_by_func[name], values, frame_of, drawn, context)
            if events:
                profiles.append({"type": "evented", "name": f"{name} (call tree, {label} ns)",
                                 "unit": "nanoseconds", "startValue": 0, "endValue": end,
                                 "events": events})
    if root_calls:
        profiles.extend(_root_call_profiles(p, frames))
    source = p.trace.source
    return {
        "$schema": SCHEMA_URL,
        # the corrected profiles' hook cost and where each value came from
        "name": f"ftflame: {source}" + (f" (corrected: {provenance(p.calibration)})" if applied else ""),
        "exporter": f"ftflame {__version__}",
        "activeProfileIndex": 0,
        "shared": {"frames": frames},
        "profiles": profiles,
    }


def _root_call_profiles(p: Profile, frames: list) -> list:
    """Per task, its root calls at their real times. Calls of one task do not
    overlap; if clock skew makes two touch, the later one starts when the
    earlier ended (counted in the profile name)."""
    s = p.samples
    if len(s) == 0:
        return []
    func = p.col("func")
    node, pid, flags = p.scol("node"), p.scol("pid"), p.scol("flags")
    start, dur = p.scol("calltime"), p.scol("dur")
    t0 = int(start.min())
    out = []
    extra = {}  # "(partial)" / "[irq]" variants of a root's frame
    for task in sorted(set(pid.tolist())):
        idx = np.flatnonzero(pid == task)
        idx = idx[np.lexsort((idx, start[idx]))]
        events, last, shifted = [], 0, 0
        for i in idx.tolist():
            at = int(start[i]) - t0
            if at < last:
                at, shifted = last, shifted + 1
            end = at + int(dur[i])
            fr = int(func[node[i]])
            if flags[i] & (SAMPLE_PARTIAL | SAMPLE_IRQ):
                name = frames[fr]["name"] + (" (partial)" if flags[i] & SAMPLE_PARTIAL else "") + \
                    (" [irq]" if flags[i] & SAMPLE_IRQ else "")
                if name not in extra:
                    frames.append({"name": name})
                    extra[name] = len(frames) - 1
                fr = extra[name]
            events.append({"type": "O", "frame": fr, "at": at})
            events.append({"type": "C", "frame": fr, "at": end})
            last = end
        name = f"root calls of pid {task} (wall clock, raw ns)"
        if shifted:
            name += f" ({shifted} overlapping starts moved)"
        out.append({"type": "evented", "name": name, "unit": "nanoseconds",
                    "startValue": 0, "endValue": last, "events": events})
    return out


def render(p: Profile, opts: RenderOptions = DEFAULT) -> str:
    return json.dumps(document(p), separators=(",", ":")) + "\n"


# ---- every call, from the core's call stream ------------------------------

class _EventedWriter:
    """speedscope's per-task timelines of the call stream's batches: the
    slices report/perfetto.py's writer lays out (the same nesting, the same
    moves where a trace's times do not nest), written as evented JSON by
    report._rowfmt.evented_json into a spool file, a chunk per task and
    batch; the profiles are then each task's chunks, in order. Memory is
    that of a batch (and a list of the chunks)."""

    def __init__(self, p: Profile, frames: list, spool, t0: int):
        self.p, self.frames, self.spool, self.t0 = p, frames, spool, t0
        self.nfuncs = len(p.funcs)
        self.label_frame: dict = {f["name"]: i for i, f in enumerate(frames) if i >= self.nfuncs}
        # each function's interrupt frame, "[irq]" or "[softirq]", made when first used
        self.wrap_of = np.full(max(self.nfuncs, 1), -1, dtype=np.int64)
        self.chunks: dict = {}  # track -> [(offset, length)] in the spool
        self.cut_ns = np.zeros(self.nfuncs, dtype=np.int64)
        self.track_end: dict = {}  # track -> the end of its last call, less t0
        self.track_start: dict = {}  # track -> the start of its first call, less t0, if before t0

    def _frame(self, name: str) -> int:
        i = self.label_frame.get(name)
        if i is None:
            self.frames.append({"name": name})
            i = self.label_frame[name] = len(self.frames) - 1
        return i

    def write_slices(self, events: np.ndarray, c: dict) -> None:
        name = np.asarray(c["name"], dtype=np.int64) - 1
        irq_top = name >= self.nfuncs  # perfetto's "[irq] f": an interrupt's first call
        func = np.where(irq_top, name - self.nfuncs, name)
        for f in np.unique(func[irq_top]).tolist():
            if self.wrap_of[f] < 0:
                self.wrap_of[f] = self._frame(irq_kind(self.p.funcs[f]))
        wrap = np.where(irq_top, self.wrap_of[func], -1).astype(np.int64)
        frame = func.copy()
        if "clamped" in c:  # what nesting cut off the calls' durations, per function
            self.cut_ns += np.bincount(func, weights=c["clamped"], minlength=len(self.cut_ns)).astype(np.int64)
        partial = np.asarray(c["partial"], dtype=bool)
        for f in np.unique(func[partial]).tolist():  # a root call whose entry came before the trace
            frame[partial & (func == f)] = self._frame(self.p.funcs[f] + " (partial)")
        track = np.asarray(c["track"])
        ev_track = track[np.where(events >= 0, events, -1 - events)]
        order = np.argsort(ev_track, kind="stable")
        ev_track = ev_track[order]
        bounds = np.flatnonzero(np.diff(ev_track)) + 1
        start, end = np.ascontiguousarray(c["start"], np.int64), np.ascontiguousarray(c["end"], np.int64)
        for a, b in zip([0, *bounds.tolist()], [*bounds.tolist(), len(order)]):
            if a == b:
                continue
            ev = np.ascontiguousarray(events[order[a:b]])
            text = evented_json(ev, frame, wrap, start, end, self.t0)
            tr = int(ev_track[a])
            self.track_end[tr] = max(self.track_end.get(tr, 0), int(end[-1 - ev[ev < 0]].max()) - self.t0)
            # a call may begin before its root's recorded start (a root entered before the trace)
            self.track_start[tr] = min(self.track_start.get(tr, 0), int(start[ev[ev >= 0]].min()) - self.t0)
            self.chunks.setdefault(tr, []).append((self.spool.tell(), len(text)))
            self.spool.write(text)


def _writer_class():
    """perfetto's writer, its slices turned into speedscope events: the
    trees of a task and the root calls it ran in interrupt context on one
    timeline (interrupts under their "[irq]" frame), the exits without their
    entry on another; no off-CPU stretches or lost-event marks (speedscope
    has no place for them)."""
    from ftflame.report import perfetto

    class Writer(perfetto._Writer):
        def tree_tracks(self, t, irq_first):
            return perfetto.row_keys(self.p, t) << 4 | perfetto.TK_THREAD

        def _write_slices(self, events, c):
            self.out.write_slices(events, c)

        def cut_roots(self, t):
            s = t[:, perfetto.SAMPLE]
            s = s[s >= 0]
            if not len(s):
                return
            p = self.p
            start = np.ascontiguousarray(p.scol("calltime")[s], np.int64)
            end = start + np.ascontiguousarray(p.scol("dur")[s], np.int64)
            track = perfetto.task_keys(p.scol("pid")[s], p.scol("cpu")[s]) << 4 | perfetto.TK_THREAD
            n = len(s)
            events = np.stack([np.arange(n), -1 - np.arange(n)], axis=1).reshape(-1).astype(np.int64)
            self.out.write_slices(events, {"name": p.col("func")[p.scol("node")[s]].astype(np.int64) + 1,
                                           "partial": np.zeros(n, bool), "track": track, "start": start,
                                           "end": end})

        def others(self, head):
            orph = head[head[:, perfetto.KIND] == perfetto.SPK_ORPHAN]
            if len(orph):
                self.orphans(orph)

    return Writer


def write_calls(p: Profile, stream, f) -> dict:
    """The speedscope file of p with every call of the call stream (the
    CLI's; report/perfetto.py CallStream) on its task's timeline, into the
    binary file f: the counts of calls written and of calls moved to nest,
    and per function the nanoseconds nesting cut off its calls (cut_ns)."""
    from ftflame.report import perfetto

    doc = document(p, root_calls=False)
    t0 = None
    for head in stream.heads():
        calls = head[(head[:, perfetto.KIND] == perfetto.SPK_TREE) | (head[:, perfetto.KIND] == perfetto.SPK_ORPHAN)]
        if len(calls):
            lo = int(calls[:, perfetto.T0].min())
            t0 = lo if t0 is None else min(t0, lo)
    frames = doc["shared"]["frames"]
    # the events, as big as the file: beside the call stream's (beside the
    # output: the temporary directory may be a small tmpfs)
    with tempfile.TemporaryFile(prefix="ftflame-speedscope-", dir=getattr(stream, "directory", None)) as spool:
        out = _EventedWriter(p, frames, spool, t0 or 0)
        w = _writer_class()(p, f)
        w.out = out
        for head, recs, extras in stream.batches():
            w.trees(head, recs, extras)
            w.others(head)
        dumps = json.dumps
        f.write(("{" + ",".join(f"{dumps(k)}:{dumps(doc[k], separators=(',', ':'))}"
                                for k in ("$schema", "name", "exporter", "activeProfileIndex")) +
                 ',"profiles":[').encode())
        f.write(",".join(dumps(prof, separators=(",", ":")) for prof in doc["profiles"]).encode())
        sep = "," if doc["profiles"] else ""
        clock = f"{(t0 or 0) / 1e9:.6f} s"
        for tr in sorted(out.chunks, key=lambda tr: (tr >> 4, tr & 0xF)):
            key, kind = tr >> 4, tr & 0xF
            who = f"idle, CPU {key - perfetto.IDLE_KEY}" if key >= perfetto.IDLE_KEY else f"pid {key}"
            name = (f"calls of {who} (wall clock, raw ns from {clock} trace clock)" if kind == perfetto.TK_THREAD
                    else f"exits without their entry, {who} (wall clock, raw ns from {clock} trace clock)")
            f.write(f'{sep}{{"type":"evented","name":{dumps(name)},"unit":"nanoseconds",'
                    f'"startValue":{out.track_start[tr]},'
                    f'"events":['.encode())
            sep = ","
            for k, (off, length) in enumerate(out.chunks[tr]):
                spool.seek(off)
                text = spool.read(length)
                f.write(text[1:] if k == 0 else text)  # each event has its comma before it
            f.write(f'],"endValue":{out.track_end[tr]}}}'.encode())
        f.write(b'],"shared":' + dumps({"frames": frames}, separators=(",", ":")).encode() + b"}\n")
    return {"calls": w.calls, "clamped": w.clamped, "cut_ns": out.cut_ns}
