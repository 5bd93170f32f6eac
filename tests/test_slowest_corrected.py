"""The slowest root calls by corrected duration keep their trees too: the
core keeps, per (root path, operation), the N slowest by raw duration and
the N slowest by on-CPU task time (the corrected figures' ranking; the hook
cost is known only after the read), and the JSON says which measure kept
each (slowest[].kept_by)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from ftflame import parse
from ftflame.correct.stage import CorrectionOptions, correct_for_report
from ftflame.parse.tables import build_events
from ftflame.report import jsonout
from helpers import corpus

TRACES = corpus.files(corpus.CURATED, "*.dat") + corpus.files(corpus.CURATED, "*.txt.gz")


def _kept_values(values: np.ndarray, p) -> set:
    kt = p.slowest_trees
    return set(values[kt.sample[kt.kept]].tolist())


@pytest.mark.parametrize("path", TRACES, ids=corpus.label)
def test_the_five_highest_of_both_measures_keep_their_tree(path):
    """The 5 highest root-call durations, raw and corrected (as the report
    corrects them), are durations of calls whose tree was kept: the plot's
    5 highest points in both views can open a tree (of calls of equal
    duration, the core keeps some)."""
    p = correct_for_report(parse.read(path), path, CorrectionOptions())
    for values in (p.scol("dur").astype(np.float64), np.asarray(p.corrected_or_raw.sample_dur, dtype=np.float64)):
        ok = values[~np.isnan(values)]
        highest = set(np.sort(ok)[::-1][:5].tolist())
        assert highest <= _kept_values(values, p), sorted(highest - _kept_values(values, p))


def _call(pid, func, start, dur, off=0):
    """A root call of pid, switched out for `off` ns in its middle."""
    ev = [("entry", 0, pid, 0, func, 0, start, 0, 0, 0, 0, 0)]
    if off:
        mid = start + (dur - off) // 2
        ev += [("switch", 0, pid, 0, "", 0, mid, 0, 0, 0, 99, 0),
               ("switch", 0, 99, 0, "", 0, mid + off, 0, 0, 0, pid, 0)]
    ev.append(("exit", 0, pid, 0, func, 0, start + dur, start, start + dur, 0, 0, 0))
    return ev


def test_kept_by_each_measure():
    """With one call kept per group: the long call that slept is the raw
    duration's, the short busy one the on-CPU time's, each kept with its
    tree and said so in the JSON."""
    events = _call(7, "f", 1000, 100_000, off=90_000) + _call(7, "f", 200_000, 50_000)
    p = build_events(events, slowest=1)
    doc = json.loads(jsonout.render(p))
    got = {(s["dur_ns"], s["kept_by"]) for s in doc["slowest"]}
    assert got == {(100_000, "raw"), (50_000, "corrected")}
    assert all(s["tree"] is not None for s in doc["slowest"])
    # one call both measures keep is one entry
    p = build_events(_call(7, "f", 1000, 100_000) + _call(7, "f", 200_000, 50_000), slowest=1)
    doc = json.loads(jsonout.render(p))
    assert [(s["dur_ns"], s["kept_by"]) for s in doc["slowest"]] == [(100_000, "both")]
