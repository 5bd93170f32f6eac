"""ftflame diff: no change where there is none, the change where one was
made, readable real comparisons, the outputs' formats, refusals."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import fixture
from helpers import diffsynth

FTFLAME = [sys.executable, "-m", "ftflame.cli"]
TEXT = "k6.1/s07-tracefs-text/trace-default.txt.gz"
SCALED = "shmem_write_begin"
# its ancestors in every call path of TEXT (nfsd3_proc_write ... shmem_write_begin)
ANCESTORS = ("nfsd3_proc_write", "nfsd_write", "nfsd_vfs_write", "vfs_iter_write", "do_iter_write",
             "do_iter_readv_writev", "generic_file_write_iter", "__generic_file_write_iter",
             "generic_perform_write")
CHANGED = ("slower", "faster")
BURST = "rcu_cb_burst"  # a function the fixture never calls
DRIFT = 1.04


def opts(**kw):
    from ftflame.diff import DiffOptions

    return DiffOptions(**kw)


def compare(before, after, **kw):
    from ftflame.diff import compare as cmp

    return cmp(list(before), list(after), opts(**kw))


def run(*args):
    return subprocess.run([*FTFLAME, *args], capture_output=True, text=True)


def flagged(d, level):
    t = d.table(level)
    return {k for k, v in zip(t.keys, t.verdict) if v in CHANGED}


def assert_nothing_flagged(d):
    for level in ("roots", "functions", "paths"):
        assert flagged(d, level) == set(), level


# the ancestors nearest SCALED gain most of their time from it: found with it
NEAR = ("generic_perform_write", "__generic_file_write_iter")


def assert_only_scaled_flagged(d, near=NEAR):
    """SCALED and its nearest ancestors (`near`) slower, as functions and call
    paths (the far ones, whose time grew by a smaller share of theirs,
    may be left out: a verdict needs their interval to clear 0); nothing
    else faster or slower."""
    assert {SCALED, *near} <= flagged(d, "functions") <= {SCALED, *ANCESTORS}
    assert flagged(d, "roots") <= {"nfsd3_proc_write"}
    paths = flagged(d, "paths")
    assert {SCALED} <= {p.split(";")[-1] for p in paths} <= {SCALED, *ANCESTORS}
    assert all(";".join(ANCESTORS).startswith(p) or p.endswith(SCALED) for p in paths), paths
    for level in ("roots", "functions", "paths"):
        t = d.table(level)
        assert {v for v in t.verdict if v in CHANGED} == {"slower"}


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    """The text fixture rewritten: as is (root calls only), SCALED x1.5,
    halves, and 3 + 3 resampled runs, unchanged and scaled."""
    d = tmp_path_factory.mktemp("diff")
    src = fixture(TEXT)
    out = {"same": diffsynth.scaled(src, str(d / "same.txt.gz"), SCALED, 1.0),
           "scaled": diffsynth.scaled(src, str(d / "scaled.txt.gz"), SCALED, 1.5)}
    out["h1"], out["h2"] = diffsynth.halves(src, str(d / "h1.txt.gz"), str(d / "h2.txt.gz"))
    out["runs"] = [diffsynth.resampled(src, str(d / f"r{i}.txt.gz"), i) for i in range(6)]
    out["scaled_runs"] = [diffsynth.resampled(src, str(d / f"s{i}.txt.gz"), i, SCALED, 1.5)
                          for i in range(3, 6)]
    # the same six runs, one root call of one run per side with a burst of
    # BURST calls (16 before, 32 after, 42% slower): an RCU callback batch
    out["burst_runs"] = [diffsynth.resampled(src, str(d / f"b{i}.txt.gz"), i,
                                             burst=(BURST, 16, 2000.0) if i == 0 else
                                             (BURST, 32, 2840.0) if i == 3 else ()) for i in range(6)]
    # one run per side with 2 calls of BURST in every root call (42% slower
    # after): called in one of three runs a side
    out["one_run_each"] = [diffsynth.resampled(src, str(d / f"o{i}.txt.gz"), i,
                                               burst=(BURST, 2, 2000.0) if i == 0 else
                                               (BURST, 2, 2840.0) if i == 3 else (), burst_every=True)
                           for i in range(6)]
    # the root calls dealt into six disjoint runs: 0, 2, 4 BEFORE, 1, 3, 5
    # AFTER, as they are, on a machine 4% slower everywhere, and with SCALED
    # x1.5 too
    for name, kw in (("split", {}), ("drift", {"drift": DRIFT}), ("drift_scaled", {"drift": DRIFT, "func": SCALED,
                                                                                  "factor": 1.5})):
        runs = diffsynth.split(src, [str(d / f"{name}{i}.txt.gz") for i in range(6)], which=(1, 3, 5), **kw)
        out[name] = (runs[0::2], runs[1::2])
    return out


def test_synth_helper_keeps_the_trace(synth):
    """The rewrite with factor 1 reads as the fixture does (root calls only)."""
    from ftflame import parse

    a, b = parse.read(fixture(TEXT)), parse.read(synth["same"])
    assert a.counters["exits"] == b.counters["exits"]
    assert a.col("incl").sum() == b.col("incl").sum()


def test_synth_helper_scales_one_function_and_its_ancestors(synth):
    from ftflame import parse

    a, b = parse.read(synth["same"]), parse.read(synth["scaled"])
    fa, fb = a.functions, b.functions
    for name in fa.names:
        ia, ib = fa.index(name), fb.index(name)
        if name == SCALED:
            assert fb.incl[ib] == pytest.approx(1.5 * fa.incl[ia], rel=1e-4)
        elif name in ANCESTORS:
            assert fb.incl[ib] > fa.incl[ia]
        else:
            assert fb.incl[ib] == fa.incl[ia], name


@pytest.mark.parametrize("rel", [TEXT, "k6.1/s01-v3-write4k/trace.dat"])
def test_a_trace_against_itself_changes_nothing(rel):
    d = compare([fixture(rel)], [fixture(rel)])
    assert_nothing_flagged(d)
    for level in ("roots", "functions"):
        t = d.table(level)
        both = (t.before.calls > 0) & (t.after.calls > 0)
        assert np.all(t.change[both & np.isfinite(t.change)] == 0)
        # one run a side: how much runs differ is unmeasured, no verdict
        assert set(t.verdict) == {"no verdict"}
    d = compare([fixture(rel)], [fixture(rel)], runs_identical=True)
    assert_nothing_flagged(d)
    assert set(d.table("roots").verdict) == {"no change"}


def test_two_halves_of_one_trace_change_nothing(synth):
    d = compare([synth["h1"]], [synth["h2"]])
    assert_nothing_flagged(d)


def test_resampled_runs_change_nothing(synth):
    d = compare(synth["runs"][:3], synth["runs"][3:])
    assert_nothing_flagged(d)
    assert d.table("roots").before.run_medians.shape[0] == 3


def test_a_scaled_function_is_found_with_its_ancestors(synth):
    """One run a side: no verdict, the change and its interval said; with
    --runs-identical (the calls as independent) the change is found."""
    d = compare([synth["same"]], [synth["scaled"]])
    assert_nothing_flagged(d)
    f = d.table("functions")
    i = f.keys.index(SCALED)
    assert f.verdict[i] == "no verdict" and f.ci_lo[i] <= 0.5 <= f.ci_hi[i]
    d = compare([synth["same"]], [synth["scaled"]], runs_identical=True)
    f = d.table("functions")
    assert f.basis[i] == "calls" and 0 < f.ci_lo[i] <= 0.5 <= f.ci_hi[i]
    assert flagged(d, "functions") <= {SCALED, *ANCESTORS} and flagged(d, "roots") <= {"nfsd3_proc_write"}
    f = d.table("functions")
    i = f.keys.index(SCALED)
    assert f.ci_lo[i] <= 0.5 <= f.ci_hi[i] + 0.02  # x1.5, within a histogram bucket
    assert f.change[i] == pytest.approx(0.5, abs=0.07)


def test_a_scaled_function_is_found_in_three_runs_per_side(synth):
    from ftflame.report import diff_text

    d = compare(synth["runs"][:3], synth["scaled_runs"])
    assert_only_scaled_flagged(d)
    text = diff_text.render(d)
    assert max(len(line) for line in text.splitlines()) < 80
    assert "runs " in text  # the run-to-run range of each root function


def test_text_never_cuts_a_long_line():
    from ftflame.report.diff_text import fit

    long = "  " + " ".join(f"word{i}" for i in range(40))
    out = fit(["short", long])
    assert out[0] == "short" and all(len(x) < 80 for x in out)
    assert " ".join(x.strip() for x in out[1:]) == long.strip()


def test_calls_inside_one_root_call_count_once(synth):
    """A function called many times per root call is tested with n = root
    calls, not its calls (they are not independent)."""
    d = compare([synth["h1"]], [synth["h2"]])
    t = d.table("functions")
    i = t.keys.index("__rcu_read_lock")
    assert t.before.calls[i] > 5 * d.before.root_calls
    assert t.before.neff[i] == d.before.root_calls and t.after.neff[i] == d.after.root_calls
    r = d.table("roots")
    assert r.before.neff.tolist() == r.before.calls.tolist()


def test_runs_that_disagree_give_no_verdict(synth):
    """AFTER: two scaled runs and one unchanged: the pooled calls differ
    (adjusted p < 0.05), but one AFTER run sits among the BEFORE runs, so
    the change is not called; with the three scaled runs it is."""
    d = compare(synth["runs"][:3], synth["scaled_runs"][:2] + synth["runs"][5:6])
    t = d.table("functions")
    i = t.keys.index(SCALED)
    assert t.change[i] > 0.05 and t.q[i] > 0.05  # the run among BEFORE's widens the interval
    assert t.verdict[i] == "no change"
    assert flagged(d, "functions") == set()


def test_a_burst_in_one_root_call_per_side_gets_no_verdict(synth):
    """16 calls in one root call of one BEFORE run, 32 in one of one AFTER
    run, 42% slower: one independent observation a side (the root call
    that made them), seen in one run of three: no verdict."""
    d = compare(synth["burst_runs"][:3], synth["burst_runs"][3:])
    for level in ("functions", "paths"):
        t = d.table(level)
        i = next(k for k, key in enumerate(t.keys) if key.split(";")[-1] == BURST)
        assert (t.before.calls[i], t.after.calls[i]) == (16, 32)
        assert (t.before.neff[i], t.after.neff[i]) == (1, 1)
        assert t.verdict[i] == "no change", (level, t.change[i], t.q[i])
    assert_nothing_flagged(d)


def test_an_item_in_one_run_of_three_per_side_gets_no_verdict(synth):
    """BURST in every root call of one run of three a side (42% slower
    after, hundreds of independent calls): that run's, not the side's."""
    d = compare(synth["one_run_each"][:3], synth["one_run_each"][3:])
    t = d.table("functions")
    i = t.keys.index(BURST)
    assert t.before.neff[i] > 50 and t.change[i] > 0.3
    assert t.verdict[i] == "no change" and t.why[i] == "called in 1 of 3 BEFORE runs only"
    assert flagged(d, "functions") == set()


def test_independent_calls_are_the_root_calls_that_made_them(synth):
    """n per side: the root calls in which the item was called (a path
    counted once per root call, a function once whatever its paths)."""
    d = compare([synth["same"]], [synth["same"]])
    from ftflame import parse

    p = parse.read(synth["same"])
    t = d.table("paths")
    for key, neff, calls in zip(t.keys, t.before.neff, t.before.calls):
        assert 1 <= neff <= min(calls, d.before.root_calls), key
    f = d.table("functions")
    i = f.keys.index("__rcu_read_lock")
    assert f.before.neff[i] == d.before.root_calls  # every request takes the RCU lock
    assert p.col("roots").max() <= d.before.root_calls


def test_one_before_run_against_three_after_runs_one_among_them(synth):
    """1 BEFORE run against 3 AFTER runs, two with SCALED x1.5 and one the
    BEFORE run itself: the pooled calls differ, but one AFTER run sits on
    the BEFORE figures: within run-to-run spread, no verdict."""
    before = synth["runs"][:1]
    d = compare(before, synth["scaled_runs"][:2] + before)
    t = d.table("functions")
    i = t.keys.index(SCALED)
    assert t.change[i] > 0.05 and t.basis[i] == "runs"
    assert t.verdict[i] == "no change"
    d = compare(before, synth["scaled_runs"])
    t = d.table("functions")
    assert t.basis[i] == "runs" and t.ci_lo[i] > 0.1 and t.ci_lo[i] <= 0.5 <= t.ci_hi[i]


def test_a_global_drift_is_named_not_taken_for_regressions(synth):
    """AFTER's runs 4% slower in every call: one drift, said, and no
    function called slower for it."""
    d = compare(*synth["drift"])
    assert d.drift is not None and d.drift.change == pytest.approx(DRIFT - 1, abs=0.015)
    assert d.drift.along > 0.7 * d.drift.functions
    assert_nothing_flagged(d)
    from ftflame.report import diff_json, diff_text

    text = diff_text.render(d)
    assert "global drift" in " ".join(text.splitlines()[:15])
    assert json.loads(diff_json.render(d))["drift"]["change"] == pytest.approx(d.drift.change, abs=1e-4)
    proc = run("diff", *synth["drift"][0], "--", *synth["drift"][1], "-o", str(Path(synth["same"]).parent / "d.json"))
    assert proc.returncode == 0 and "ftflame: note: global drift: the typical function is " in proc.stderr


def test_json_written_a_few_rows_at_a_time_is_the_rendered_document(synth, monkeypatch, tmp_path):
    """The JSON diff of two long traces has 100,000s of path rows: made and
    written a chunk at a time (write), the file is render()'s text byte for
    byte, chunk edges included; the CLI writes files so."""
    import io

    from ftflame.report import diff_json

    d = compare(*synth["drift"])
    monkeypatch.setattr(diff_json, "CHUNK_ROWS", 3)
    assert len(d.table("paths").keys) > 3 * 3
    f = io.BytesIO()
    diff_json.write(d, opts(), f)
    assert f.getvalue() == diff_json.render(d).encode("utf-8")
    empty = d.__class__(**{**d.__dict__, "drift": None})
    f = io.BytesIO()
    diff_json.write(empty, opts(), f)
    assert f.getvalue() == diff_json.render(empty).encode("utf-8")


def test_a_change_on_top_of_a_drift_is_found_against_it(synth):
    """SCALED x1.5 on a machine 4% slower: SCALED slower, its change
    against the drift +50%; no drift between unchanged runs."""
    d = compare(*synth["drift_scaled"])
    assert d.drift is not None
    t = d.table("functions")
    i = t.keys.index(SCALED)
    assert t.verdict[i] == "slower"
    # the interval, net of the drift, covers the change made (x1.5)
    assert (1 + t.ci_lo[i]) / (1 + d.drift.change) - 1 <= 0.5 <= (1 + t.ci_hi[i]) / (1 + d.drift.change) - 1
    from ftflame.report import diff_text

    assert f"({t.vs_drift[i] * 100:+.1f}% [{t.vs_lo[i] * 100:+.1f}, {t.vs_hi[i] * 100:+.1f}]% against the drift)" \
        in " ".join(diff_text.render(d).split())
    assert flagged(d, "functions") <= {SCALED, *ANCESTORS}
    # (not the halves of one trace, nor its root calls dealt into runs: the
    # second half is 2-3% faster in most functions, and disjoint sets of
    # requests differ by 1%: the functions of one request move together)
    for pair in ((synth["runs"][:3], synth["runs"][3:]), ([synth["same"]], [synth["scaled"]])):
        assert compare(*pair).drift is None


@pytest.fixture(scope="module")
def typical_up_mean_down(tmp_path_factory):
    """BEFORE: the fixture's root calls; AFTER: each 12% slower (the root's
    own time), without the eight slowest (over 0.9 ms, one of 4.4 ms)."""
    d = tmp_path_factory.mktemp("meanmedian")
    header, calls = diffsynth.root_calls(diffsynth.read_lines(fixture(TEXT)))
    ns = [float(diffsynth.LINE.match(c[-1]).group(3)) for c in calls]
    after = [diffsynth.scale_function(c, "nfsd3_proc_write", 1.12) for c, x in zip(calls, ns) if x < 900]
    return (diffsynth.write(str(d / "b.txt.gz"), header, calls),
            diffsynth.write(str(d / "a.txt.gz"), header, after))


@pytest.fixture(scope="module")
def slower_but_less_interrupted(tmp_path_factory):
    """BEFORE: the fixture's root calls, each with a 150 us timer interrupt
    taken inside it (an irq entry function: out of the corrected time);
    AFTER: the same root calls 15% slower (the root's own time), no
    interrupt."""
    d = tmp_path_factory.mktemp("rawcorr")
    header, calls = diffsynth.root_calls(diffsynth.read_lines(fixture(TEXT)))
    rng = __import__("random").Random(7)
    before = [diffsynth.with_burst(c, "__sysvec_apic_timer_interrupt", 1, 150e3, rng) for c in calls]
    after = [diffsynth.scale_function(c, "nfsd3_proc_write", 1.15) for c in calls]
    return (diffsynth.write(str(d / "b.txt.gz"), header, before),
            diffsynth.write(str(d / "a.txt.gz"), header, after))


def test_raw_and_corrected_going_opposite_ways_is_explained(slower_but_less_interrupted):
    """Raw: faster (the interrupts are gone); corrected: slower. The
    corrected verdict says the raw one went the other way and names what
    the correction took out that changed: interrupt time."""
    from ftflame.report import diff_json, diff_text

    sides = [[x] for x in slower_but_less_interrupted]
    d = compare(*sides, runs_identical=True)
    t = d.table("roots")
    i = t.keys.index("nfsd3_proc_write")
    assert t.verdict[i] == "slower" and t.raw_change[i] < -0.05
    assert "interrupt time -1" in t.raw_why[i] and t.raw_why[i].startswith("raw time per call -")
    assert compare(*sides, raw=True, runs_identical=True).table("roots").change[i] < -0.05
    head = " ".join(x.strip() for x in diff_text.render(d).splitlines()[:15])
    assert "the correction took out what changed: interrupt time" in head
    row = json.loads(diff_json.render(d))["roots"][0]
    assert row["raw_change"] < -0.05 and "interrupt time" in row["raw_vs_corrected"]
    same = compare(sides[0], sides[0]).table("roots")
    assert same.raw_why == ("",)


def test_mean_and_median_in_opposite_directions_are_flagged(typical_up_mean_down):
    from ftflame.report import diff_json, diff_text

    d = compare([typical_up_mean_down[0]], [typical_up_mean_down[1]])
    t = d.table("roots")
    i = t.keys.index("nfsd3_proc_write")
    assert t.change[i] > 0.05  # flagged whatever the verdict (here none: one run a side)
    assert t.mean_change[i] < -0.01 and t.disagree[i]
    text = diff_text.render(d)
    head = " ".join(x.strip() for x in text.splitlines()[:15])
    assert "nfsd3_proc_write: no verdict" in head and "typical call" in head
    assert "mean" in head and "opposite" in head
    row = json.loads(diff_json.render(d))["roots"][0]
    assert row["mean_change"] < 0 and row["mean_median_disagree"] is True
    same = typical_up_mean_down[0]
    assert not compare([same], [same]).table("roots").disagree.any()


@pytest.mark.parametrize("before,after,warned", [
    ("k6.1/s01-v3-write4k/trace.dat", "k6.12/s01-v3-write4k/trace.dat", ("different kernel", "different clock")),
    ("k6.1/s06-calib-pair/trace-root.dat", "k6.1/s06-calib-pair/trace-full.dat",
     ("different tracer options", "after: 8,607 events lost")),
])
def test_real_comparisons_read_in_80_columns(before, after, warned):
    proc = run("diff", fixture(before), fixture(after))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(x) for x in lines) < 80
    text = proc.stdout
    assert "Significant changes" in text and "Root functions" in text and "nfsd3_proc_write" in text
    joined = " ".join(x.strip() for x in lines)
    for w in warned:
        assert w in joined


def test_json_schema_and_figures(tmp_path):
    out = tmp_path / "d.json"
    proc = run("diff", fixture("k6.1/s01-v3-write4k/trace.dat"), fixture("k6.12/s01-v3-write4k/trace.dat"),
               "-o", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "ftflame-diff/1"
    assert doc["method"].startswith("change = ratio AFTER / BEFORE of the median")
    assert {"roots", "functions", "paths", "before", "after", "warnings"} <= doc.keys()
    row = next(r for r in doc["roots"] if r["function"] == "nfsd3_proc_write")
    assert row["verdict"] == "no verdict"  # one run a side
    for side in ("before", "after"):
        assert row[side]["calls"] == doc[side]["root_calls"]
        assert row[side]["calls_per_root_call"] == 1.0
        assert row[side]["median_exact"] is True
    assert {r["verdict"] for r in doc["functions"]} >= {"new", "gone"}
    # corrected medians under 0.1 us per call (hook cost subtracted down to
    # the calibration's error) are never judged, however small their p
    rows = doc["roots"] + doc["functions"] + doc["paths"]
    for r in rows:
        if r["verdict"] in ("slower", "faster"):
            assert min(r["before"]["median_ns"], r["after"]["median_ns"]) >= 100, r
    both = [r for r in rows if r["verdict"] not in ("new", "gone")]
    assert both and all(r["verdict"] == "no verdict" and r["why"].startswith("one run a side") for r in both)
    assert all(r["interval_from"] == "calls" for r in both if r["ci95"][0] is not None)


def test_folded_pairs_are_what_inferno_diff_folded_writes(tmp_path):
    """The difffolded lines equal inferno-diff-folded's merge of the two
    sides' folded files, and inferno-flamegraph renders them."""
    from helpers.htmlfix import inferno_flamegraph

    flamegraph = inferno_flamegraph()
    difffolded = flamegraph.parent / "inferno-diff-folded"
    out = tmp_path / "d.folded"
    proc = run("diff", fixture("k6.1/s01-v3-write4k/trace.dat"), fixture("k6.12/s01-v3-write4k/trace.dat"),
               "-o", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    rows = [line.rsplit(" ", 2) for line in out.read_text().splitlines()]
    assert rows and all(b.isdigit() and a.isdigit() for _, b, a in rows)
    for col, name in ((1, "b.folded"), (2, "a.folded")):
        (tmp_path / name).write_text("".join(f"{r[0]} {r[col]}\n" for r in rows if r[col] != "0"))
    merged = subprocess.run([str(difffolded), str(tmp_path / "b.folded"), str(tmp_path / "a.folded")],
                            capture_output=True, text=True, check=True).stdout
    assert sorted(merged.splitlines()) == sorted(out.read_text().splitlines())
    svg = subprocess.run([str(flamegraph), str(out)], capture_output=True, text=True, check=True).stdout
    assert svg.lstrip().startswith("<?xml") and "nfsd3_proc_write" in svg


def test_sides_with_nothing_in_common_are_refused(tmp_path):
    out = tmp_path / "d.txt"
    proc = run("diff", fixture("k6.1/s04-null/trace.dat"), fixture("k6.1/s06-calib-pair/trace-root.dat"),
               "-o", str(out))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no function in common" in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("args,word", [
    (("a.dat",), "without '--'"),
    (("x.dat", "y.dat", "z.dat"), "without '--'"),
    (("--",), "a side is empty"),
    (("nonexistent.dat", "--", "other.dat"), "nonexistent.dat: no such file"),
])
def test_bad_command_lines(args, word):
    proc = run("diff", *args)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and word in proc.stderr and "Traceback" not in proc.stderr


def test_options_after_the_after_traces_still_work(tmp_path):
    """README's example: `ftflame diff b1 b2 b3 -- a1 a2 a3 -o diff.html`
    writes diff.html (the options after '--' are options, not traces)."""
    # three runs a side, each its own trace (one given three times is refused)
    before = [fixture(r) for r in ("k6.1/s01-v3-write4k/trace.dat", "k6.1/s10-lost/trace.dat",
                                   "k6.1/s06-calib-pair/trace-full.dat")]
    after = [fixture(r) for r in ("k6.12/s01-v3-write4k/trace.dat", "k6.1/s15-icount-calib/trace-full.dat",
                                  "k6.1/s09-depth3/trace.dat")]
    out = tmp_path / "diff.html"
    proc = run("diff", *before, "--", *after, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("<!DOCTYPE html>")
    for args in (("--output=" + str(tmp_path / "d.json"), "-q"), ("-o" + str(tmp_path / "d.json"), "--raw"),
                 ("--min-change", "10", "-o", str(tmp_path / "d.json"))):
        proc = run("diff", before[0], "--", after[0], *args)
        assert proc.returncode == 0, (args, proc.stderr)
        doc = json.loads((tmp_path / "d.json").read_text())
        assert len(doc["after"]["runs"]) == 1
    assert doc["min_change"] == 0.1


def test_the_verdict_leads_the_text():
    """The root function's verdict in the first 15 lines; the method last."""
    proc = run("diff", fixture("k6.1/s01-v3-write4k/trace.dat"), fixture("k6.12/s01-v3-write4k/trace.dat"))
    lines = proc.stdout.splitlines()
    assert any(x.startswith("nfsd3_proc_write: ") for x in lines[:15]), lines[:15]
    assert "median time per call" in " ".join(lines[:15]) and "One run a side" in " ".join(lines[:15])
    method = [k for k, x in enumerate(lines) if x.startswith("Method:")]
    assert method and method[0] > max(k for k, x in enumerate(lines) if not x.startswith(" ") and k < method[0])
    assert method[0] > lines.index(next(x for x in lines if x.startswith("Not called faster or slower")))


def test_each_trace_is_read_once_in_parallel(monkeypatch, synth):
    """N traces: N reads, on several threads at once when there are cores."""
    import threading

    from ftflame import parse
    from ftflame.diff import load

    seen = []
    real = parse.read

    def counting(path, *a, **k):
        seen.append((path, threading.current_thread().name))
        return real(path, *a, **k)

    monkeypatch.setattr(parse, "read", counting)
    monkeypatch.setattr(load, "workers", lambda n: max(1, min(n, 4)))
    runs = synth["runs"]
    compare(runs[:3], runs[3:])
    assert sorted(p for p, _ in seen) == sorted(runs)
    assert len({t for _, t in seen}) > 1
    assert all(t.startswith("ftflame-diff-read") for _, t in seen)


def test_parallel_reads_give_stderr_back():
    """Reads on several threads at once (each trace.dat quiets libtracecmd's
    stderr while it runs) leave fd 2 where it was: the one-line messages
    after them must reach the user."""
    from ftflame.diff import load

    dats = [fixture(r) for r in ("k6.1/s01-v3-write4k/trace.dat", "k6.12/s01-v3-write4k/trace.dat",
                                 "k6.1/s10-lost/trace.dat", "k6.1/s09-depth3/trace.dat",
                                 "k6.1/s04-null/trace.dat", "k6.1/s06-calib-pair/trace-full.dat")]
    before = os.fstat(2)
    for _ in range(3):
        orig = load.workers
        load.workers = lambda n: n
        try:
            load.load_sides(dats[:3], dats[3:], opts(raw=True))
        finally:
            load.workers = orig
        now = os.fstat(2)
        assert (now.st_dev, now.st_ino) == (before.st_dev, before.st_ino)


def test_help_teaches_the_method():
    proc = run("diff", "--help")
    assert proc.returncode == 0
    for words in ("median time per call", "t-test over the runs", "Welch", "Holm", "Benjamini-Hochberg",
                  "--runs-identical", "BEFORE... -- AFTER...", "examples:", "root call"):
        assert words in proc.stdout


def diff_flags() -> dict:
    """dest -> argparse action of every `ftflame diff` option."""
    from ftflame.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return {a.dest: a for a in sub.choices["diff"]._actions}


def test_every_diff_option_is_set_from_a_diff_flag():
    """diff reads its knobs from one typed object (DiffOptions), every field
    of it set from a flag of `ftflame diff`, the defaults when none is given."""
    import dataclasses

    from ftflame.cli import build_parser
    from ftflame.diff import DiffOptions
    from ftflame.diff.cli import diff_options

    examples = {"raw": (["--raw"], True), "min_change": (["--min-change", "2"], 0.02),
                "calibration": (["--calibration", "none"], "none"), "irqs": (["--irqs", "include"], "include"),
                "runs_identical": (["--runs-identical"], True),
                "focus": (["--focus", "f", "--focus", "g", "--focus", "f"], ("f", "g"))}
    flags = diff_flags()
    for field in dataclasses.fields(DiffOptions):
        assert field.name in flags, f"DiffOptions.{field.name} has no flag of its own"
        argv, want = examples[field.name]
        args = build_parser().parse_args(["diff", "b.dat", "a.dat", *argv])
        assert getattr(diff_options(args), field.name) == want
    assert diff_options(build_parser().parse_args(["diff", "b.dat", "a.dat"])) == DiffOptions()


def test_diff_formats_come_from_the_report_registry(monkeypatch, tmp_path, synth):
    """diff keeps no format table of its own: a renderer registered in
    ftflame.report.DIFF_RENDERERS is a -F choice and an output extension."""
    from ftflame.cli import main
    from ftflame.report import DIFF_RENDERERS, Renderer

    assert sorted(diff_flags()["format"].choices) == sorted(DIFF_RENDERERS) == ["folded", "html", "json", "txt"]
    monkeypatch.setitem(DIFF_RENDERERS, "probe", Renderer("probe", "diff_folded", (".dprobe",), "a test's"))
    assert diff_flags()["format"].choices == sorted(DIFF_RENDERERS)
    out = tmp_path / "d.dprobe"
    assert main(["diff", synth["same"], synth["scaled"], "-q", "-o", str(out)]) == 0
    assert main(["diff", synth["same"], synth["scaled"], "-q", "-F", "folded", "-o", str(tmp_path / "d.f")]) == 0
    assert out.read_text() == (tmp_path / "d.f").read_text() != ""


def test_diff_uses_no_private_name_of_another_module():
    """diff and its renderers use the model's and the correction stage's
    public names only: a private one may change under them unannounced."""
    import ast

    root = Path(__file__).resolve().parent.parent
    found = []
    for f in sorted((root / "ftflame" / "diff").glob("*.py")) + sorted((root / "report").glob("diff_*.py")):
        tree = ast.parse(f.read_text())
        modules = set()
        for node in ast.walk(tree):
            names = node.names if isinstance(node, (ast.Import, ast.ImportFrom)) else ()
            for a in names:
                if isinstance(node, ast.ImportFrom) and a.name.startswith("_") and not a.name.startswith("__"):
                    found.append(f"{f.name}: from {node.module} import {a.name}")
                modules.add((a.asname or a.name).split(".")[0])
        found += [f"{f.name}: {node.value.id}.{node.attr}" for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and node.value.id in modules and node.attr.startswith("_") and not node.attr.startswith("__")]
    assert not found


def test_raw_compares_the_raw_times():
    rel = "k6.1/s01-v3-write4k/trace.dat"
    d = compare([fixture(rel)], [fixture(rel)], raw=True)
    assert not d.corrected
    t = d.table("roots")
    assert t.before.mean[0] > compare([fixture(rel)], [fixture(rel)]).table("roots").before.mean[0]


def test_benjamini_hochberg_known_values():
    from ftflame.diff.stats import benjamini_hochberg

    q = benjamini_hochberg([0.01, 0.04, 0.03, 0.005])
    assert q.tolist() == pytest.approx([0.02, 0.04, 0.04, 0.02])


# ---- operations: the root calls of a dispatcher, per NFS operation ----------

def _dispatcher_run(label, seed, calls, factor=None):
    from ftflame.diff.load import Run
    from ftflame.parse import build_events

    return Run(label, label, build_events(diffsynth.dispatcher_events(seed, calls, factor), source=label))


def _dispatcher_diff(before, after):
    """One hand-made run a side, its calls taken as independent (the runs
    are made to be identical: --runs-identical)."""
    from ftflame.diff import model

    return model.build(tuple(before), tuple(after), corrected=False, runs_identical=True)


def test_mixed_operations_against_themselves_change_nothing():
    trace = fixture("k6.1/s17-mixed-ops/trace.dat")
    d = compare([trace], [trace])
    t = d.table("operations")
    assert "svc_process: v3 GETATTR" in t.keys and "svc_process: COMPOUND(SEQUENCE,PUTFH,READ)" in t.keys
    # every root call of svc_process is in one operation: the same calls as the root function's
    assert t.before.calls.sum() == d.table("roots").before.calls.sum()
    assert t.before.calls.sum() * t.before.mean @ (t.before.calls / t.before.calls.sum()) == \
        pytest.approx(float(d.table("roots").before.calls[0] * d.table("roots").before.mean[0]))
    assert set(t.verdict) == {"no verdict"}
    assert_nothing_flagged(d)


def test_one_slower_operation_is_flagged_alone():
    calls = {"v3 WRITE": 150, "v3 GETATTR": 150, "v3 READ": 150}
    before = [_dispatcher_run("b", 1, calls)]
    after = [_dispatcher_run("a", 2, calls, {"v3 WRITE": 1.5})]
    d = _dispatcher_diff(before, after)
    t = d.table("operations")
    assert dict(zip(t.keys, t.verdict)) == {"svc_process: v3 WRITE": "slower",
                                            "svc_process: v3 GETATTR": "no change",
                                            "svc_process: v3 READ": "no change"}
    assert flagged(d, "functions") >= {"nfsd3_proc_write"}
    assert not flagged(d, "functions") & {"nfsd3_proc_getattr", "nfsd3_proc_read"}


def test_an_operation_on_one_side_only_is_new_or_gone(tmp_path):
    from ftflame.report import diff_json, diff_text

    before = [_dispatcher_run("b", 1, {"v3 WRITE": 40, "v3 GETATTR": 40})]
    after = [_dispatcher_run("a", 2, {"v3 WRITE": 40, "v3 READ": 40})]
    d = _dispatcher_diff(before, after)
    t = d.table("operations")
    assert dict(zip(t.keys, t.verdict)) == {"svc_process: v3 WRITE": "no change",
                                            "svc_process: v3 GETATTR": "gone", "svc_process: v3 READ": "new"}
    text = diff_text.render(d)
    assert "\nOperations (" in text and "    svc_process: v3 GETATTR" in text
    assert [line for line in text.splitlines() if len(line) >= 80] == []
    ops = {(o["function"], o["operation"]): o for o in json.loads(diff_json.render(d))["operations"]}
    assert ops[("svc_process", "v3 READ")]["verdict"] == "new"
    assert ops[("svc_process", "v3 GETATTR")]["before"]["calls"] == 40


def test_a_trace_rooted_at_one_procedure_has_no_operations(synth):
    from ftflame.report import diff_html, diff_json, diff_text

    d = compare([synth["same"]], [synth["scaled"]])
    assert len(d.table("operations")) == 0
    assert "Operations" not in diff_text.render(d)
    assert json.loads(diff_json.render(d))["operations"] == []
    assert set(diff_html.table_data(d)["kind"]) == {"function"}


@pytest.mark.parametrize("how", ["name", "symlink", "hardlink", "copy"])
def test_one_run_given_twice_on_a_side_is_refused(synth, tmp_path, how):
    """Issue 37 item 7: `diff a a a -- b b b` pooled one file as three
    independent runs (narrower intervals, more verdicts). The same file by
    any name, or the same bytes, twice on a side is one line and exit 2;
    the two sides may share a trace."""
    a, b = synth["runs"][0], synth["runs"][1]
    twin = str(tmp_path / "twin.txt.gz")
    if how == "symlink":
        os.symlink(a, twin)
    elif how == "hardlink":
        os.link(a, twin)
    elif how == "copy":
        Path(twin).write_bytes(Path(a).read_bytes())
    else:
        twin = a
    for argv in ([a, twin, "--", b], [b, "--", a, b, twin]):
        r = subprocess.run([*FTFLAME, "diff", *argv], capture_output=True, text=True)
        assert r.returncode == 2, r.stderr
        line, = r.stderr.strip().splitlines()
        assert f"{twin}: is the same {'content' if how == 'copy' else 'file'} as {a}" in line
    r = subprocess.run([*FTFLAME, "diff", a, "--", a, b, "-q"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_a_named_function_is_a_question_of_its_own(synth):
    """--focus FUNC takes FUNC out of the functions' Benjamini-Hochberg
    family into a Holm family of the named ones alone: its adjusted p is
    its own p (one named), the others' are adjusted without it, and the
    method line and the JSON say which were named."""
    import math

    from ftflame.report import diff_json

    plain = compare(synth["runs"][:3], synth["scaled_runs"])
    named = compare(synth["runs"][:3], synth["scaled_runs"], focus=(SCALED,))
    t, u = plain.table("functions"), named.table("functions")
    i = u.keys.index(SCALED)
    assert math.isclose(u.q[i], min(1.0, u.p[i]), rel_tol=1e-12) and not math.isclose(t.q[i], u.q[i])
    assert "--focus (" + SCALED in named.method and "--focus" not in plain.method
    assert diff_json.document(named)["focus"] == [SCALED] and diff_json.document(plain)["focus"] == []


def test_an_unknown_named_function_is_one_line_and_exit_2(synth):
    r = run("diff", synth["h1"], synth["h2"], "--focus", "no_such_function_here")
    assert r.returncode == 2 and r.stdout == "", r
    assert len(r.stderr.strip().splitlines()) == 1 and "no_such_function_here" in r.stderr
