"""ftflame diff's figures keep their promises whatever the data: the
estimate inside its interval, an interval of zero width only between
identical samples, the same p-value in every output, the drift measured
over functions with enough calls on both sides."""
from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import fixture

S20 = "k6.12/s20-icount-volume/trace-full-{}.dat"  # two recordings of one workload, one boot


def _intervals(d):
    for level in ("roots", "operations", "functions", "paths"):
        t = d.table(level)
        for i in range(len(t)):
            if np.isfinite(t.ci_lo[i]) and np.isfinite(t.ci_hi[i]):
                yield level, t, i


@pytest.fixture(scope="module")
def s20_runs():
    from ftflame.diff import DiffOptions, load

    runs, _ = load.load_sides([fixture(S20.format(1)), fixture(S20.format(2))], [], DiffOptions())
    return runs


def _build(before, after, **kw):
    from ftflame.diff import model

    return model.build(tuple(before), tuple(after), **kw)


@pytest.mark.parametrize("sides", ["1v1", "2v2", "1v1-identical"])
def test_the_estimate_lies_inside_its_interval(s20_runs, sides):
    """Every item of every table, one run a side, two (the same two runs
    each side, crossed) and the calls as independent: lo <= change <= hi,
    and so printed (the interval at the change's precision)."""
    from ftflame.report.diff_text import interval, pct

    r1, r2 = s20_runs
    d = {"1v1": lambda: _build([r1], [r2]), "2v2": lambda: _build([r1, r1], [r2, r2]),
         "1v1-identical": lambda: _build([r1], [r2], runs_identical=True)}[sides]()
    n = 0
    for level, t, i in _intervals(d):
        assert t.ci_lo[i] <= t.change[i] <= t.ci_hi[i], (level, t.keys[i], t.change[i], t.ci_lo[i], t.ci_hi[i])
        if t.ci_hi[i] < 9:
            lo, hi = (float(x) for x in re.findall(r"[-+][\d.]+", interval(t.ci_lo[i], t.ci_hi[i]))[:2])
            assert lo <= float(pct(t.change[i])[:-1]) <= hi, (t.keys[i], pct(t.change[i]), lo, hi)
        n += 1
    assert n > 500


def test_zero_width_only_between_identical_samples(s20_runs):
    """Two different recordings: an interval of zero width only where both
    sides' values are the same (calls all in one histogram bucket a side
    still differ by a bucket's width); the same recording against itself:
    the change is 0."""
    r1, r2 = s20_runs
    for d in (_build([r1], [r2]), _build([r1, r1], [r2, r2]), _build([r1], [r2], runs_identical=True)):
        for _, t, i in _intervals(d):
            if t.ci_lo[i] == t.ci_hi[i]:
                b, a = t.before, t.after
                assert t.change[i] == 0 and b.sd[i] == a.sd[i] == 0 and b.median[i] == a.median[i] \
                    and b.exact[i] and a.exact[i], (t.level, t.keys[i], t.change[i])
    same = _build([r1, r2], [r2, r1])
    for _, t, i in _intervals(same):
        assert t.change[i] == 0 and t.ci_lo[i] < 0 < t.ci_hi[i]


def test_interval_tests_properties_on_random_runs():
    """stats.interval_tests on seeded random run estimates (1 to 5 runs a
    side, spreads from 0 to 1 in log): the estimate inside, zero width
    only where both sides' values are all equal."""
    from ftflame.diff import stats

    rng = np.random.default_rng(39)
    m = 400
    for kb, ka in ((1, 1), (1, 3), (3, 3), (5, 2)):
        sd = rng.uniform(0, 1, m)
        sd[:20] = 0.0  # runs that agree to the digit
        eb = rng.normal(7, 1, m) + rng.normal(0, 1, (kb, m)) * sd
        ea = eb.mean(axis=0) + rng.normal(0, 0.3, m) + rng.normal(0, 1, (ka, m)) * sd
        within = rng.uniform(1e-9, 1e-3, m)
        pooled = (eb.mean(axis=0), within * 50, np.full(m, 50.0))
        pooled_a = (ea.mean(axis=0), within * 50, np.full(m, 50.0))
        ch, lo, hi, p, df, basis = stats.interval_tests(
            eb, ea, np.full(m, kb), np.full(m, ka), within, within, pooled, pooled_a, False, (4.0, 0.01))
        ok = np.isfinite(lo)
        assert ok.sum() > m // 2
        assert np.all(lo[ok] <= ch[ok]) and np.all(ch[ok] <= hi[ok])
        assert not np.any(ok & (lo == hi))  # every side's values vary a little
        # identical sides whose values do not vary at all: 0, of zero width
        same = stats.interval_tests(eb[:, :20], eb[:, :20], np.full(20, kb), np.full(20, kb), np.zeros(20),
                                    np.zeros(20), (pooled[0][:20], np.zeros(20), np.full(20, 50.0)),
                                    (pooled[0][:20], np.zeros(20), np.full(20, 50.0)), False, (4.0, 0.01))
        assert np.all(same[0] == 0)


@pytest.fixture(scope="module")
def tiny_p():
    """A change so clear its adjusted p is far under 1e-6 (one operation of
    a hand-made dispatcher 1.5x slower, 300 root calls a side, the calls
    as independent)."""
    from ftflame.diff.load import Run
    from ftflame.parse import build_events
    from helpers import diffsynth

    calls = {"v3 WRITE": 300, "v3 GETATTR": 300}

    def run(label, seed, factor=None):
        return Run(label, label, build_events(diffsynth.dispatcher_events(seed, calls, factor), source=label))

    return _build([run("b", 1)], [run("a", 2, {"v3 WRITE": 1.5})], corrected=False, runs_identical=True)


def test_the_same_p_value_prints_the_same_in_every_output(tiny_p):
    """The adjusted p of the text (root functions, operations), the JSON
    and the HTML (headline and table data) are one figure: the model's."""
    from ftflame.report import diff_html, diff_json, diff_text

    d = tiny_p
    o = d.table("operations")
    i = o.keys.index("svc_process: v3 WRITE")
    assert 0 < o.q[i] < 1e-6 and o.verdict[i] == "slower"
    text = diff_text.render(d)
    doc = json.loads(diff_json.render(d))
    html = diff_html.render(d)
    data = diff_html.page_data(d)
    flat = " ".join(line.strip() for line in text.splitlines())
    text_roots = re.findall(r"95% interval \[[^\]]*\]%?, adjusted p (\S+)", flat)
    assert [float(x) for x in text_roots] == [r["p_adjusted"] for r in doc["roots"]]
    json_op = next(x for x in doc["operations"] if x["operation"] == "v3 WRITE")
    html_op = data["table"]["q"][data["table"]["name"].index("svc_process: v3 WRITE")]
    assert float(html_op) == json_op["p_adjusted"] == float(o.q_text[i])
    assert json_op["p_adjusted"] == pytest.approx(o.q[i], rel=0.05)
    for level in ("functions",):
        t = d.table(level)
        for k, row in enumerate(doc[level]):
            h = data["table"]["q"][k]
            assert (row["p_adjusted"] is None) == (h == "-")
            if row["p_adjusted"] is not None:
                assert float(h) == row["p_adjusted"], t.keys[k]
    head = diff_html.headline(d)
    for row in head["roots"] + head["ops"]:
        if row["q"]:
            name = row["name"]
            want = next(x["p_adjusted"] for x in doc["roots"] + doc["operations"]
                        if (x["function"] if "operation" not in x else f"{x['function']}: {x['operation']}") == name)
            assert float(row["q"]) == want
            assert row["q"] in html


def _side(neff, median):
    return SimpleNamespace(neff=np.asarray(neff, dtype=float), median=np.asarray(median, dtype=float))


def test_drift_is_measured_over_functions_with_enough_calls_on_both_sides():
    """45 functions with 40 independent calls BEFORE but 3 AFTER, all 20%
    slower, and 20 with 40 a side, unchanged: no drift (the 45 are not
    measured on AFTER). Counted over functions with enough calls on
    either side (np.maximum for np.minimum), 45 of 65 moved: a drift."""
    from ftflame.diff import model

    few = 45
    neff_b = [40] * (few + 20)
    neff_a = [3] * few + [40] * 20
    change = np.array([0.2] * few + list(np.linspace(-0.01, 0.01, 20)))
    fb, fa = _side(neff_b, [5000] * 65), _side(neff_a, [5000] * 65)
    assert model.global_drift(fb, fa, change, np.arange(65)) is None
    # the same functions all measured on both sides: that is a drift
    both = model.global_drift(fb, _side([40] * 65, [5000] * 65), change, np.arange(65))
    assert both is not None and both.change == pytest.approx(0.2) and both.functions == 65
    # and the same the other way round (enough AFTER, too few BEFORE)
    assert model.global_drift(fa, fb, change, np.arange(65)) is None


def test_a_drift_is_named_when_the_root_and_most_functions_moved_together():
    """60% of the functions 6% slower, the root too: a drift (under the two
    thirds that suffice without the root); the root unmoved: none."""
    from ftflame.diff import model

    n = 40
    change = np.array([0.06] * 24 + [-0.01] * 16)
    fb = fa = _side([50] * n, [5000] * n)
    d = model.global_drift(fb, fa, change, np.arange(n), root_change=0.05)
    assert d is not None and d.change == pytest.approx(0.06) and d.along == 24
    assert model.global_drift(fb, fa, change, np.arange(n), root_change=0.0) is None
    assert model.global_drift(fb, fa, change, np.arange(n)) is None


def test_different_calibrations_are_said_only_when_they_move_a_figure():
    """A 6.12 trace against itself, AFTER's calibration told 5 ns higher (as
    two runs' in-trace estimates differ): no corrected figure of an item
    that could be judged moves by more than its interval, no warning.
    AFTER's hook cost doubled: a warning naming how many items."""
    import dataclasses

    from ftflame.diff import DiffOptions, checks, load

    (run,), _ = load.load_sides([fixture("k6.12/s01-v3-write4k/trace.dat")], [], DiffOptions())
    d = _build([run], [run])
    b = d.before.calibrations[0]
    near = dataclasses.replace(d.after, calibrations=((b[0], b[1] + 5.0, b[2] + 5.0),))
    far = dataclasses.replace(d.after, calibrations=((b[0], b[1] * 2, b[2] * 2),))
    said = [w for w in checks.warnings([run], [run], d.before, near, d.tables) if w.startswith("different calib")]
    assert said == []
    said = [w for w in checks.warnings([run], [run], d.before, far, d.tables) if w.startswith("different calib")]
    assert len(said) == 1 and "would move" in said[0] and "items by more than their interval" in said[0]


def test_t_distribution_and_holm_known_values():
    """Student's t (tables: 97.5% points) and Holm's adjusted p-values."""
    from ftflame.diff import stats

    q = stats.t_quantile_975(np.array([1, 2, 4, 10, 29.5, 30, 120, np.inf]))
    assert q == pytest.approx([12.706, 4.303, 2.776, 2.228, 2.044, 2.042, 1.980, 1.960], abs=1e-3)
    assert stats.t_two_sided_p(q, np.array([1, 2, 4, 10, 29.5, 30, 120, np.inf])) == pytest.approx([0.05] * 8, abs=1e-4)
    assert stats.holm([0.01, 0.04, 0.03, 0.005]).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])


# ---- the HTML's latency points ------------------------------------------------

def _slowest_by_sorting(runs, limit):
    """The definition slowest_points keeps: every run's points made whole
    (names in order of first appearance), concatenated, and the first
    `limit` of a stable sort by decreasing duration, in their order."""
    names, func, run, t, dur = [], [], [], [], []
    for r, (fn, start, ns) in enumerate(runs):
        for name in fn:
            if name not in names:
                names.append(name)
        func += [names.index(x) for x in fn]
        run += [r] * len(ns)
        t0 = int(np.min(start)) if len(start) else 0
        t.append((np.asarray(start, np.int64) - t0) / 1e9)
        dur.append(np.asarray(ns, np.float64))
    func, run = np.array(func, np.int64), np.array(run, np.int64)
    t, dur = (np.concatenate(x) if x else np.zeros(0) for x in (t, dur))
    keep = np.sort(np.argsort(-dur, kind="stable")[:limit])
    return names, func[keep], run[keep], t[keep], dur[keep], len(dur) - len(keep)


class _ChunkedRun:
    """A Latency of hand-made points, given a few at a time (chunk boundaries
    inside runs of ties)."""

    def __init__(self, funcs, fid, start, dur, chunk=3):
        self.funcs, self.points, self.chunk = funcs, (np.array(fid), np.array(start), np.array(dur, float)), chunk

    def chunks(self):
        for lo in range(0, len(self.points[2]), self.chunk):
            yield tuple(x[lo:lo + self.chunk] for x in self.points)

    def whole(self):
        fid, start, dur = self.points
        return [self.funcs[f] for f in fid.tolist()], start, dur


def _same_points(runs, whole, limit):
    from ftflame.diff.model import slowest_points

    got = slowest_points(tuple(runs), limit)
    names, func, run, t, dur, thinned = _slowest_by_sorting(whole, limit)
    assert list(got.names) == names
    assert got.func.tolist() == func.tolist() and got.run.tolist() == run.tolist()
    assert got.t.tobytes() == t.tobytes() and got.dur.tobytes() == dur.tobytes()  # to the last bit
    assert got.thinned == thinned


@pytest.mark.parametrize("limit", range(13))
def test_the_latency_plot_keeps_the_slowest_points_ties_in_order(limit):
    """Thinned a chunk at a time (no sort, nothing per root call), the
    diff's latency points are the ones a stable sort of all of them keeps:
    the slowest, ties to the first in run then row order, NaN after every
    number (as argsort puts it), names in order of first appearance, a
    function's id per run mapped by its name."""
    nan = float("nan")
    runs = [_ChunkedRun(["a", "b", "c"], [2, 0, 2, 1, 0, 0, 2], [50, 10, 20, 30, 40, 60, 70],
                        [5, 7, 7, 3, 7, nan, 9]),
            _ChunkedRun(["c", "d", "a"], [1, 0, 2, 1], [9, 5, 7, 6], [7, nan, 7, 1], chunk=2),
            _ChunkedRun(["x"], [], [], [])]
    _same_points(runs, [r.whole() for r in runs], limit)


@pytest.mark.parametrize("raw", [False, True])
def test_the_latency_plot_thins_real_runs_as_a_sort_would(raw):
    """Two repeated nfsd runs as one side, thinned to 300 of their
    counted root calls (raw: whole nanoseconds, many ties), corrected or
    not: the points a stable sort of the whole columns keeps."""
    from ftflame.diff import DiffOptions, load
    from ftflame.diff.model import Latency
    from ftflame.model.profile import SAMPLE_GAP, SAMPLE_IRQ, SAMPLE_PARTIAL

    runs, _ = load.load_sides([fixture(f"k6.12/s30-repeat/run{i}") for i in (1, 2)], [], DiffOptions(raw=raw))
    whole = []
    for run in runs:
        p = run.profile
        ok = (p.scol("flags") & (SAMPLE_GAP | SAMPLE_IRQ | SAMPLE_PARTIAL)) == 0
        func = p.col("func")[p.scol("node")[ok]]
        whole.append(([p.funcs[f] for f in func.tolist()], p.scol("calltime")[ok],
                      np.asarray(p.corrected_or_raw.sample_dur, np.float64)[ok]))
    assert sum(len(w[2]) for w in whole) > 300
    _same_points([Latency(r.profile) for r in runs], whole, 300)
