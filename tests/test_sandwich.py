"""A function's sandwich (ftflame/model/sandwich.py): its callers and callees
merged over every call path, against a reference that walks each call
path's chain of names one at a time, on a real fixture."""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from ftflame.model.sandwich import Sandwiches, _preorder
from ftflame.report import html
from helpers.htmlfix import WRITE4K, corrected, load


def reference(p, f: int) -> tuple:
    """({callee chain: [incl, calls]}, {caller chain: incl}) by walking every
    row's path: a row of f with no f above it starts a chain."""
    parent, func = p.col("parent").tolist(), p.col("func").tolist()
    incl, calls = p.col("incl").tolist(), p.col("calls").tolist()

    def path(r):
        out = []
        while r >= 0:
            out.append(func[r])
            r = parent[r]
        return out[::-1]

    callees, callers = defaultdict(lambda: [0, 0]), defaultdict(int)
    for r in range(p.nrows):
        names = path(r)
        if f not in names:
            continue
        k = names.index(f)  # the outermost call of f on this path
        chain = tuple(names[k:])
        callees[chain][0] += incl[r]
        callees[chain][1] += calls[r]
        if len(chain) == 1:  # f's outermost call: its callers, from f up
            for j in range(k + 1):
                callers[tuple(names[k - j:k + 1][::-1])] += incl[r]
    return dict(callees), dict(callers)


def chains(t: dict) -> dict:
    """A merged tree's rows by their chain of names from row 0."""
    out = {}
    for i in range(len(t["func"])):
        c, r = [], i
        while r >= 0:
            c.append(int(t["func"][r]))
            r = int(t["parent"][r])
        out[tuple(c[::-1])] = i
    return out


@pytest.fixture(scope="module")
def profile():
    return load(WRITE4K)


def test_preorder_runs_are_subtrees(profile):
    parent = np.asarray(profile.col("parent"), dtype=np.int64)
    po, pos, end, depth = _preorder(parent)
    assert sorted(po.tolist()) == list(range(profile.nrows))
    for r in range(profile.nrows):
        if parent[r] >= 0:
            assert pos[parent[r]] < pos[r] < end[r] <= end[parent[r]] and depth[r] == depth[parent[r]] + 1


def test_sandwiches_equal_the_chain_by_chain_reference(profile):
    """Every merged row of every function's sandwich: the callee chain's
    summed inclusive time and calls, the caller chain's summed time of the
    function's outermost calls; no chain missing or extra."""
    sw = Sandwiches(profile)
    for f in sorted(set(profile.col("func").tolist())):
        want_ce, want_ca = reference(profile, f)
        got = sw.of(f)
        ce, ca = got["callees"], got["callers"]
        rows = chains(ce)
        assert set(rows) == set(want_ce), profile.funcs[f]
        for c, (incl, calls) in want_ce.items():
            assert ce["incl"][rows[c]] == incl and ce["calls"][rows[c]] == calls
        rows = chains(ca)
        assert set(rows) == set(want_ca), profile.funcs[f]
        for c, incl in want_ca.items():
            assert ca["incl"][rows[c]] == incl


def test_page_sandwiches_are_pruned_sums(profile):
    """The page's copy: row 0 is the function's whole time; a row is kept
    only at 1% of it or more, its caller row kept before it; the corrected
    column is the corrected paths' sum."""
    p = corrected(profile, 700.0, 300.0)
    data = html.sandwich_data(p)
    assert data
    sw = Sandwiches(p)
    for e in data:
        full = sw.of(e["func"])
        for side in ("callers", "callees"):
            t, ref = e[side], full[side]
            par = [i - u if i else -1 for i, u in enumerate(t["up"])]
            assert all(q < i for i, q in enumerate(par))
            assert t["incl"][0] == round(ref["incl"][0]) and t["inclc"][0] == round(ref["inclc"][0])
            assert min(t["incl"]) >= t["incl"][0] * html.SANDWICH_MIN_FRACTION - 1
            assert t["undrawn"] == len(ref["func"]) - len(t["func"])
