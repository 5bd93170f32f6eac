"""The hook-cost level of each root call (docs/overhead.md "Hook level").

The tracer's hook cost is not one constant: each recorded call commits two
ring-buffer events (its entry, inside its own window, and its exit, in its
caller's), and on the deterministic icount VM every commit costs 5 ns more
inside some root calls than in others (the ring buffer's reader state: the
same leaf functions take 661 instead of 656 ns, the gap after an exit event
420 instead of 415 ns; leaves and calls with children alike). Over the 237
descendants of an nfsd3_proc_write call that is 2.4 us, a quarter of the
call's corrected time.

A root call's level is read from its own events: its shortest task-context
leaf (``leaf_min``, from the C core), against the same figure of the
calibration's dispatcher calls (``hook_level`` in calibration.json). Each of
the call's 2 D + 1 commits inside its window (its descendants' entries and
exits, its own entry) is charged the difference:

    corr_incl(root call) -= (2 D + 1) * (leaf_min - calibration leaf_min)

Per root call this is exact in the model; a call path inside the tree gets
its tree's level (the root calls' adjustments summed over their commits),
an approximation like every per-path corrected statistic.

No level is applied (and none is counted as applied) to a root call with
fewer than MIN_LEAVES leaves, or whose shortest leaf is more than
MAX_FRACTION above the calibration's (no trivial leaf: its floor is the
function's body, not the hook), nor with a calibration without
``hook_level`` (older files, the in-trace estimate, values given on the
command line). A shortest leaf *below* the calibration's is no lower hook
level either: the calibration's calls are all at the low level, so a
shorter leaf is a body shorter than the NULL procedure's (one leaf, not
every commit of the call); charging its 1-3 ns to each of the call's ~500
commits raised such calls by up to 1.4 us (docs/overhead.md "Accuracy").
"""
from __future__ import annotations

import numpy as np

from ftflame.correct import subbuf
from ftflame.model.profile import SAMPLE_GAP, Calibration, Profile

COMMITS_PER_DESCENDANT = 2  # an entry and an exit event per recorded call
MIN_LEAVES = 10  # a floor over fewer leaves is a body's, not the hook's
MAX_FRACTION = 0.05  # a floor this far above the calibration's: no trivial leaf


def calibration_level(leaf_min: np.ndarray, leaves: np.ndarray, source: str) -> dict | None:
    """calibration.json's ``hook_level``: the median shortest leaf of the
    dispatcher's full-graph calls (their leaves are as trivial as the NULL
    procedure), or None without enough leaves."""
    ok = (leaves >= 1) & (leaf_min > 0)
    if not ok.any():
        return None
    v = leaf_min[ok].astype(np.float64)
    return {"leaf_min_ns": round(float(np.median(v)), 1), "samples": int(ok.sum()),
            "min_ns": int(v.min()), "max_ns": int(v.max()),
            "commits_per_descendant": COMMITS_PER_DESCENDANT,
            "source": f"median over the dispatcher's calls of their shortest leaf ({source})"}


def reference(cal: Calibration) -> float | None:
    """The calibration's leaf floor, or None when no level applies."""
    d = cal.details if isinstance(cal.details, dict) else {}
    lvl = d.get("hook_level")
    if not isinstance(lvl, dict) or "command_line" in d:
        return None
    try:
        ref = float(lvl["leaf_min_ns"])
    except (KeyError, TypeError, ValueError):
        return None
    return ref if np.isfinite(ref) and ref > 0 else None


def sample_shift(p: Profile, ref: float) -> np.ndarray:
    """Per root call, its hook level above the calibration's, ns per
    commit (0 where it cannot be read, and never below 0: see above)."""
    if not len(p.samples):
        return np.zeros(0)
    lm = p.scol("leaf_min").astype(np.float64)
    readable = (p.scol("leaves") >= MIN_LEAVES) & (lm > 0) & (lm <= ref * (1 + MAX_FRACTION))
    return np.where(readable, np.maximum(lm - ref, 0.0), 0.0)


def commits(desc: np.ndarray, calls: np.ndarray | float) -> np.ndarray:
    """Ring-buffer commits inside the windows: 2 per descendant, 1 per call."""
    return COMMITS_PER_DESCENDANT * desc + calls


def adjustments(p: Profile, cal: Calibration, desc: np.ndarray, calls: np.ndarray, rows=None):
    """(per node ns, per sample ns, root calls levelled): the hook cost to
    take out beyond the calibration's, for the clean per-node sums desc and
    calls (of the node rows `rows` only, when given): the level, and the
    sub-buffer moves at the call's own count (ftflame/correct/subbuf.py).
    None without either."""
    ref = reference(cal)
    moves = subbuf.sample_ns(p, cal) if len(p.samples) else None
    if (ref is None and moves is None) or not len(p.samples):
        return None
    shift = sample_shift(p, ref) if ref is not None else np.zeros(len(p.samples))
    s_desc = p.scol("desc").astype(np.float64)
    per_sample = commits(s_desc, 1.0) * shift
    if moves is not None:
        per_sample += moves
    clean = (p.scol("flags") & SAMPLE_GAP) == 0
    node = p.scol("node")
    # per tree: its level, the root calls' adjustments over their commits
    top = p.tree_tops
    n = p.nrows
    adj = np.bincount(top[node[clean]], weights=per_sample[clean], minlength=n)
    com = np.bincount(top[node[clean]], weights=commits(s_desc, 1.0)[clean], minlength=n)
    level = np.divide(adj, com, out=np.zeros(n), where=com > 0)
    per_node = commits(desc, calls) * level[top if rows is None else top[rows]]
    return per_node, per_sample, int((clean & (shift != 0)).sum())
