"""speedscope file format ("evented" profiles), for https://www.speedscope.app
or a local `speedscope` install.

A Profile keeps sums per call path, not the individual calls (memory is
O(call paths), never O(events)), so the exact order of calls inside a root
call is not known. Two kinds of evented profile are written:

1. One profile per root function, "<root> (call tree, raw ns)": a synthetic
   timeline of the aggregated call tree. Each call path is one frame lasting
   its total inclusive time; children follow one another from their parent's
   start, widest first, and the parent's self time comes last. speedscope's
   "Left Heavy" and "Sandwich" views then show the exact per-path and
   per-function totals, which is what the other ftflame outputs report. (With
   a calibration, a second profile per root carries the corrected times.)
   The time axis of this profile is not wall-clock time.
2. One profile per task, "root calls of pid N (wall clock)": each root call
   at its real start time with its real duration (from the Profile's
   per-root-call samples), so the "Time Order" view shows when the calls ran,
   their gaps and stalls, as a timeline. Their insides are not known per call
   and are not invented.

Why not only (2) filled with the tree? Putting the aggregated tree inside
every root call would fabricate per-call structure; keeping (1) and (2)
apart says exactly what is known. Paths are never merged here: speedscope
handles 100k frames, and the sums stay exact.

All values are integer nanoseconds (unit "nanoseconds").
"""
from __future__ import annotations

import json

import numpy as np

from ftflame import __version__
from ftflame.correct.calibration import provenance
from ftflame.model.profile import SAMPLE_IRQ, SAMPLE_PARTIAL, Profile

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


def document(p: Profile) -> dict:
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
