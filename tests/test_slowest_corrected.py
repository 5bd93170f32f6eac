"""The slowest root calls by corrected duration keep their trees too: the
core keeps, per (root path, operation), the N slowest by raw duration and
the N slowest by corrected duration (picked from 4N candidates by on-CPU time; the hook
cost is known only after the read), and the JSON says which measure kept
each (slowest[].kept_by)."""
from __future__ import annotations

import collections
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


def _n_slowest_by_group(p, values: np.ndarray, n: int) -> dict:
    """Per (root path, operation): the n-th largest known value among its
    root calls (-inf when it has fewer), the bar the kept set must reach."""
    node, op = p.scol("node"), p.scol("op")
    bars: dict = {}
    for key in set(zip(node.tolist(), op.tolist())):
        v = values[(node == key[0]) & (op == key[1])]
        v = np.sort(v[~np.isnan(v)])[::-1]
        bars[key] = v[n - 1] if len(v) >= n else -np.inf
    return bars


@pytest.mark.parametrize("path", TRACES, ids=corpus.label)
def test_kept_by_corrected_are_the_n_slowest_by_corrected_duration(path):
    """Per (root path, operation), the calls the JSON says were kept by
    "corrected" are exactly the N slowest by corrected duration (ties at
    the N-th: any of them), not by the on-CPU time the core ranks by: the
    core keeps 4N candidates by on-CPU time and the corrected ranking
    picks N (ranked_slowest), with no slower call left without a tree."""
    from ftflame.correct.operations import slowest_columns

    p = correct_for_report(parse.read(path), path, CorrectionOptions())
    if not p.calibration.applied:
        pytest.skip("no hook cost from this trace: no corrected durations")
    n = getattr(p.slowest_trees, "n", 20) or 20
    corr = np.asarray(p.corrected_or_raw.sample_dur, dtype=np.float64)
    cols = slowest_columns(p)
    kept = cols["sample"][(cols["kept_by"] & 2) != 0]
    bars = _n_slowest_by_group(p, corr, n)
    node, op = p.scol("node"), p.scol("op")
    per_group = collections.Counter(zip(node[kept].tolist(), op[kept].tolist()))
    for s in kept.tolist():  # each kept one reaches its group's bar (a gap call: only in a group of fewer)
        key = (int(node[s]), int(op[s]))
        assert np.isnan(corr[s]) and bars[key] == -np.inf or corr[s] >= bars[key], (s, corr[s], bars[key])
    for key, bar in bars.items():  # and every call above the bar is kept
        above = np.flatnonzero((node == key[0]) & (op == key[1]) & (corr > bar))
        assert set(above.tolist()) <= set(kept.tolist()), key
        assert per_group[key] == min(n, int(((node == key[0]) & (op == key[1])).sum()))


def test_the_two_orders_differ_on_a_traced_recording():
    """On 6.12 s16 (sched_switch recorded) the N slowest by on-CPU time and
    by corrected duration are not the same calls: the test above is one
    that ranking by on-CPU time fails."""
    from ftflame.correct.operations import ranked_slowest

    path = corpus.curated("k6.12/s16-icount-calib/trace-full.dat")
    p = correct_for_report(parse.read(path), path, CorrectionOptions())
    kt, r = p.slowest_trees, ranked_slowest(p)
    cand = np.flatnonzero(kt.by & 2)
    by_cpu = set(cand[np.argsort(-kt.on_cpu[cand], kind="stable")][:kt.n].tolist())
    by_corr = set(np.flatnonzero(r.by & 2).tolist())
    assert len(by_corr) == kt.n == 20 and len(by_corr - by_cpu) >= 3
    assert r.slower_left_out == 0
