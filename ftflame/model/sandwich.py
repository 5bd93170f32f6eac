"""A function's sandwich: its callers and its callees, each merged over every
call path the function is on (the view speedscope calls "sandwich").

* callees: the subtrees under the function's calls, merged by the functions
  along them (the function at the root): where its time goes, whoever
  called it.
* callers: the chains of callers above its calls, merged from the function
  up (the function at the root, its callers as children): who spends the
  time in it.

A recursive function counts at its outermost call on each path only (the
calls under it are inside that one's time already). Every figure is a sum
over call paths of the Profile's node table, raw and, with a calibration,
corrected (Profile.corrected_or_raw): printed by the HTML report, never
computed there.
"""
from __future__ import annotations

import numpy as np

from .profile import Profile


def _preorder(parent: np.ndarray) -> tuple:
    """(rows in pre-order, each row's position in it, each row's subtree end
    position, each row's depth): a subtree is a run of positions. Siblings
    in row order; one vectorised step per level."""
    n = len(parent)
    depth = np.zeros(n, dtype=np.int64)
    has = parent >= 0
    for _ in range(n):
        nd = np.where(has, depth[np.where(has, parent, 0)] + 1, 0)
        if np.array_equal(nd, depth):
            break
        depth = nd
    by_depth = np.argsort(depth, kind="stable")
    levels = np.split(by_depth, np.flatnonzero(np.diff(depth[by_depth])) + 1) if n else []
    size = np.ones(n, dtype=np.int64)
    for rows in levels[:0:-1]:  # deepest first; the roots have no caller to add to
        np.add.at(size, parent[rows], size[rows])
    # each row's offset among its siblings: the sizes of those before it
    order = np.argsort(parent, kind="stable")
    cs = np.cumsum(size[order]) - size[order]
    first = np.searchsorted(parent[order], parent[order])
    offset = np.empty(n, dtype=np.int64)
    offset[order] = cs - cs[first]
    pos = np.empty(n, dtype=np.int64)
    for k, rows in enumerate(levels):
        pos[rows] = offset[rows] if k == 0 else pos[parent[rows]] + 1 + offset[rows]
    po = np.empty(n, dtype=np.int64)
    po[pos] = np.arange(n)
    return po, pos, pos + size, depth


class Sandwiches:
    """The node table's shape, worked out once for any number of functions."""

    def __init__(self, p: Profile):
        self.p = p
        self.parent = np.asarray(p.col("parent"), dtype=np.int64)
        self.func = np.asarray(p.col("func"), dtype=np.int64)
        self.values = {"incl": np.asarray(p.col("incl"), dtype=np.float64),
                       "calls": np.asarray(p.col("calls"), dtype=np.float64)}
        if p.calibration.applied:
            self.values["inclc"] = np.asarray(p.corrected_or_raw.incl, dtype=np.float64)
        self.po, self.pos, self.end, self.depth = _preorder(self.parent)

    def outermost(self, f: int) -> np.ndarray:
        """Rows of f's calls with no call of f above them."""
        rows = np.flatnonzero(self.func == f)
        cover = np.zeros(len(self.parent) + 1, dtype=np.int64)
        np.add.at(cover, self.pos[rows] + 1, 1)
        np.add.at(cover, self.end[rows], -1)
        return rows[np.cumsum(cover)[self.pos[rows]] == 0]

    def subtree_rows(self, tops: np.ndarray) -> int:
        """Call paths under the calls of rows `tops` (theirs included)."""
        return int((self.end[tops] - self.pos[tops]).sum())

    def callees(self, f: int, tops: np.ndarray) -> dict:
        """Merged subtrees under rows `tops` (f's outermost calls: their
        subtrees are disjoint runs of the pre-order)."""
        lens = self.end[tops] - self.pos[tops]
        starts = np.repeat(self.pos[tops] - np.concatenate(([0], np.cumsum(lens)[:-1])), lens)
        rows = self.po[starts + np.arange(int(lens.sum()))]
        # by depth below their top: the same chain of names, at whatever
        # depth f was called, is one merged row
        rel = self.depth[rows] - np.repeat(self.depth[tops], lens)
        by = np.argsort(rel, kind="stable")
        rows = rows[by]
        merged = np.full(len(self.parent), -1, dtype=np.int64)
        merged[tops] = 0
        nf = len(self.p.funcs) + 1
        parents, funcs, count = [np.array([-1])], [np.array([f])], 1
        d = rel[by]
        for level in np.split(rows, np.flatnonzero(np.diff(d)) + 1):
            level = level[merged[level] < 0]  # the tops themselves are row 0
            if not len(level):
                continue
            key = merged[self.parent[level]] * nf + self.func[level]
            uniq, inv = np.unique(key, return_inverse=True)
            merged[level] = count + inv
            count += len(uniq)
            parents.append(uniq // nf)
            funcs.append(uniq % nf)
        return self._sums(np.concatenate(parents), np.concatenate(funcs), merged[rows], rows)

    def callers(self, f: int, tops: np.ndarray) -> dict:
        """Merged caller chains above rows `tops`, each weighted by its top's figures."""
        nf = len(self.p.funcs) + 1
        parents, funcs, count = [np.array([-1])], [np.array([f])], 1
        ids = [np.zeros(len(tops), dtype=np.int64)]
        srcs = [tops]
        cur, mid, src = self.parent[tops], np.zeros(len(tops), dtype=np.int64), tops
        while True:
            has = cur >= 0
            cur, mid, src = cur[has], mid[has], src[has]
            if not len(cur):
                break
            key = mid * nf + self.func[cur]
            uniq, inv = np.unique(key, return_inverse=True)
            mid = count + inv
            count += len(uniq)
            parents.append(uniq // nf)
            funcs.append(uniq % nf)
            ids.append(mid)
            srcs.append(src)
            cur = self.parent[cur]
        return self._sums(np.concatenate(parents), np.concatenate(funcs), np.concatenate(ids), np.concatenate(srcs))

    def _sums(self, parents: np.ndarray, funcs: np.ndarray, ids: np.ndarray, rows: np.ndarray) -> dict:
        out = {"parent": parents, "func": funcs}
        for name, v in self.values.items():
            out[name] = np.bincount(ids, weights=v[rows], minlength=len(parents))
        return out

    def of(self, f: int) -> dict:
        """{"callers": tree, "callees": tree}: columns parent (-1: the
        function itself, row 0), func, incl, calls (and inclc), parents
        before children."""
        tops = self.outermost(f)
        return {"callers": self.callers(f, tops), "callees": self.callees(f, tops)}


def call_edges(p: Profile) -> tuple:
    """Every (caller, callee) pair of functions, summed over the call paths
    where the callee is called straight from the caller: (caller function
    id, -1 for a root; callee function id; calls; inclusive ns; corrected
    inclusive ns; the clean calls those cover), one array each, the pairs
    with a completed call only, by (caller, callee). The sums are float64
    (np.bincount's), exact below 2**53 ns."""
    parent = p.col("parent")
    func = p.col("func")
    nf = len(p.funcs)
    caller = np.where(parent >= 0, func[np.maximum(parent, 0)], -1)
    key = (caller + 1) * (nf + 1) + func
    uniq, inv = np.unique(key, return_inverse=True)
    c = p.corrected_or_raw

    def total(col):
        return np.bincount(inv, weights=col, minlength=len(uniq))

    calls = total(p.col("calls"))
    incl = total(p.col("incl"))
    inclc = total(np.asarray(c.incl, np.float64))
    callsc = total(np.asarray(c.calls, np.float64))
    keep = calls > 0
    return (uniq[keep] // (nf + 1) - 1, uniq[keep] % (nf + 1), calls[keep], incl[keep], inclc[keep], callsc[keep])
