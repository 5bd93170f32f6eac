"""Repeated runs of one unchanged workload, compared every way
(docs/diff.md's null and sensitivity tables; tests/test_diff_runs.py).

Every split of N runs into k BEFORE and k AFTER (10 for 3 + 3 of 6) and
every pair (15 for 1 + 1): how many comparisons gave any faster/slower
verdict, per table. The runs are read once (ftflame.diff.load) and each
comparison is ftflame.diff.model.build over them, what `ftflame diff`
does.

    python -m helpers.repeats RUN.dat... [--runs-identical]   (from tests/)
    python -m helpers.repeats RUN.txt... --inject=FUNC:0.2 ...  (the runs'
        `trace-cmd report` text: FUNC slowed in the AFTER runs of every split)
"""
from __future__ import annotations

import itertools
import sys

from ftflame.diff import DiffOptions, load, model

LEVELS = ("roots", "operations", "functions", "paths")


def read(paths, opts: DiffOptions | None = None):
    """The runs, each read and corrected once."""
    before, _ = load.load_sides(list(paths), [], opts or DiffOptions())
    return before


def called(d) -> dict:
    """{level: [items called faster or slower]}."""
    return {lv: [k for k, v in zip(d.table(lv).keys, d.table(lv).verdict) if v in ("slower", "faster")]
            for lv in LEVELS}


def comparisons(runs, k: int):
    """(before indices, after indices) of every split of the runs into k
    BEFORE and k AFTER runs, each unordered split once (3 + 3 of 6: 10;
    1 + 1: 15 pairs)."""
    n = len(runs)
    for b in itertools.combinations(range(n), k):
        rest = [i for i in range(n) if i not in b]
        for a in itertools.combinations(rest, k):
            if k * 2 == n and b > a:
                continue  # the same split with the sides swapped
            if k * 2 < n and b > a:
                continue
            yield b, a


def null_table(runs, k: int, runs_identical: bool = False, min_change: float = 0.05):
    """Per comparison: (before, after, {level: called items}, drift)."""
    out = []
    for b, a in comparisons(runs, k):
        d = model.build(tuple(runs[i] for i in b), tuple(runs[i] for i in a), min_change=min_change,
                        runs_identical=runs_identical)
        out.append((b, a, called(d), d.drift.change if d.drift else None))
    return out


def summary(rows) -> dict:
    """{level: comparisons with any verdict, "any": ..., "total": ...}."""
    s = {lv: sum(1 for r in rows if r[2][lv]) for lv in LEVELS}
    s["any"] = sum(1 for r in rows if any(r[2][lv] for lv in LEVELS))
    s["total"] = len(rows)
    s["drift"] = sum(1 for r in rows if r[3] is not None)
    return s


def main(argv) -> int:
    identical = "--runs-identical" in argv
    paths = [a for a in argv if not a.startswith("--")]
    injects = [a.split("=", 1)[1] for a in argv if a.startswith("--inject=")]
    runs = read(paths)
    if injects:  # the sensitivity table: the runs given as `trace-cmd report` text
        import tempfile

        with tempfile.TemporaryDirectory() as work:
            for spec in injects:
                func, frac = spec.rsplit(":", 1)
                add, rows = sensitivity(paths, func, float(frac), work, runs=runs)
                for b, a, verdict, change, ci, vs, vsci, drift, q, _ in rows:
                    lo, hi = vsci if drift is not None else ci
                    est = vs if drift is not None else change
                    print(f"{func} +{float(frac):.0%} {[i + 1 for i in b]} vs {[i + 1 for i in a]}: {verdict} "
                          f"{est:+.3f} [{lo:+.3f}, {hi:+.3f}] drift {drift} adjusted p {q:.2g}")
                found = sum(r[2] == "slower" for r in rows)
                above = sum((r[6][0] if r[7] is not None else r[4][0]) > 0 for r in rows)
                cover = sum((r[6] if r[7] is not None else r[4])[0] <= float(frac) <= (r[6] if r[7] is not None
                                                                                     else r[4])[1] for r in rows)
                print(f"{func} +{float(frac):.0%} ({add:.0f} ns a call): slower in {found}, interval above 0 in "
                      f"{above}, covering the change in {cover} of {len(rows)}")
        return 0
    for k in (3, 1):
        rows = null_table(runs, k, identical)
        for b, a, c, drift in rows:
            n = {lv: len(c[lv]) for lv in LEVELS}
            print(f"{k}v{k} {[i + 1 for i in b]} vs {[i + 1 for i in a]}: {n} drift {drift}")
            for lv in LEVELS:
                for key in c[lv][:5]:
                    print(f"    {lv}: {key}")
        print(f"{k}v{k} summary: {summary(rows)}")
    return 0



def median_ns(runs, func: str) -> float:
    """func's median corrected time per call over the runs pooled."""
    d = model.build(tuple(runs), tuple(runs))
    t = d.table("functions")
    return float(t.before.median[t.keys.index(func)])


def sensitivity(texts, func: str, frac: float, workdir: str, k: int = 3, runs=None):
    """Every split of the runs' `trace-cmd report` texts into k BEFORE and
    k AFTER, func slowed in the AFTER runs by frac of its median corrected
    time per call (helpers.inject): per split (before, after, verdict,
    change, interval, against the drift and its interval, drift), the
    truth being +frac."""
    import os

    from helpers import inject

    runs = runs if runs is not None else read(texts)
    add = frac * median_ns(runs, func)
    slowed = []
    for i, src in enumerate(texts):
        dst = os.path.join(workdir, f"inj-{func}-{frac:g}-{i}.txt")
        if not os.path.exists(dst):
            inject.inject_file(src, dst, func, add)
        slowed.append(dst)
    slow_runs = read(slowed)
    out = []
    for b, a in comparisons(runs, k):
        d = model.build(tuple(runs[i] for i in b), tuple(slow_runs[i] for i in a))
        t = d.table("functions")
        i = t.keys.index(func)
        out.append((b, a, t.verdict[i], t.change[i], (t.ci_lo[i], t.ci_hi[i]), t.vs_drift[i],
                    (t.vs_lo[i], t.vs_hi[i]), d.drift.change if d.drift else None, t.q[i],
                    called(d)["functions"]))
    return add, out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
