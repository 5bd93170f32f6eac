"""The model's own error, measured on the truth pairs (docs/overhead.md
"Uncertainty" and "Accuracy on every truth pair").

A truth pair is one workload recorded twice in one deterministic (icount)
boot: root-only (the truth) and with the whole graph, beside the boot's
empty-call calibration. The relative error of the corrected mean, p50 and
p90 of the whole graph against the truth is what the model misses on that
kernel, calibration sampling included. model_error.json beside this file
holds every pair with its figures; it is written by
`make model-error` (tests/helpers/truthpairs.py) from the recordings, never by hand.

The model's error of a kernel family (major.minor) is the largest miss
over its pairs, per statistic, as a share of the corrected figure
(|corrected - truth| / corrected: the interval is laid around the corrected
figure, so a miss below the truth needs its share of the smaller figure): with a handful of pairs a
95% spread cannot be estimated, the largest miss seen is the honest bound
(and leave-one-pair-out checks that it holds the pair it was not set on:
tests/test_truth_pairs.py). Every corrected figure's interval adds it,
times the figure, to the calibration's sampling half-width
(ftflame/correct/uncertainty.py): sums and means the mean's, min and p50
the p50's, p90, p99 and max the p90's (the furthest tail measured).
"""
from __future__ import annotations

import functools
import json
import os
import re

SCHEMA = "ftflame-model-error/1"
FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "model_error.json")
STATS = ("mean", "p50", "p90")
# corrections.STAT_NAMES -> the measured statistic whose error it takes
OF_STAT = {"sum": "mean", "min": "p50", "max": "p90", "mean": "mean", "p50": "p50", "p90": "p90",
           "p99": "p90"}


def family(kernel: str | None) -> str | None:
    """A kernel's family, major.minor, from its release or a uname line
    ("Linux host 6.12.117+deb12-amd64 x86_64" -> "6.12"); None if none."""
    if not kernel:
        return None
    m = re.search(r"(?<![\w.])(\d+)\.(\d+)(?:\.\d+)?[-+.\w]*", kernel)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def document(pairs: list) -> dict:
    """model_error.json from the pairs' figures (tests/helpers/truthpairs.py)."""
    fams: dict = {}
    for pr in pairs:
        fams.setdefault(family(pr["kernel"]), []).append(pr)
    return {
        "schema": SCHEMA,
        "written_by": "make model-error (tests/helpers/truthpairs.py, from the recordings; do not edit)",
        "rule": "per kernel family and statistic: the largest |corrected - truth| / corrected over its pairs",
        "families": {f: bound(ps) for f, ps in sorted(fams.items())},
        "pairs": pairs,
    }


def bound(pairs: list, leave_out: str | None = None) -> dict | None:
    """{"pairs": names, "mean": r, "p50": r, "p90": r} over the pairs (but
    leave_out); None when none is left."""
    kept = [pr for pr in pairs if pr["name"] != leave_out]
    if not kept:
        return None
    return {"pairs": [pr["name"] for pr in kept],
            **{k: round(max(miss(pr, k) for pr in kept), 5) for k in STATS}}


def miss(pr: dict, k: str) -> float:
    """A pair's |corrected - truth| / corrected of statistic k."""
    c, t = pr["corrected_ns"][k], pr["truth_ns"][k]
    return abs(c - t) / abs(c) if c else float("inf")


@functools.lru_cache(maxsize=4)
def table(path: str = FILE) -> dict:
    """model_error.json (empty when missing or unreadable: every interval
    then says the model's error is not in it)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) and doc.get("schema") == SCHEMA else {}


def for_kernel(kernel: str | None, leave_out: str | None = None, path: str = FILE) -> dict | None:
    """The model's error for a trace of this kernel: {"family", "pairs",
    "mean", "p50", "p90"} (relative), None when no truth pair of its
    family was recorded. leave_out: a pair's name, left out (the
    leave-one-pair-out check)."""
    fam = family(kernel)
    doc = table(path)
    pairs = [pr for pr in doc.get("pairs", ()) if family(pr.get("kernel")) == fam] if fam else []
    b = bound(pairs, leave_out)
    return dict(b, family=fam) if b else None
