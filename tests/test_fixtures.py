"""Every real trace.dat fixture (the curated set, and the full corpus when it
is here): exact agreement with an independent reference (trace-cmd report
-R), and the Profile invariants."""
from __future__ import annotations

import re
import subprocess

import pytest

from conftest import (
    FIXTURE_DATS,
    corpus_fixture,
    corpus_param,
    fixture,
    fixture_id,
    fixture_params,
    profile_of,
    require_fixtures,
)
from helpers.invariants import check_profile, negative_self_explained
from helpers.reference import reference_exits


def test_fixtures_present():
    require_fixtures()
    assert len(FIXTURE_DATS) >= 10


@pytest.mark.parametrize("path", FIXTURE_DATS, ids=fixture_id)
def test_calls_and_incl_sums_equal_tracecmd(path):
    """Per function: completed calls and the sum of rettime - calltime over
    its exits, to the nanosecond."""
    ref = reference_exits(path)
    ft = profile_of(path).functions
    ours = {name: (int(ft.calls[i]), int(ft.incl[i])) for i, name in enumerate(ft.names)}
    assert ours == ref


@pytest.mark.parametrize("path", FIXTURE_DATS, ids=fixture_id)
def test_invariants(path):
    check_profile(profile_of(path))


# Paths with negative self time the builder's counters do not explain, as
# measured (2026-11-22): none but two on the 6.12 write trace. The bound is
# what is seen, not a share of the paths (that allowed 62 where 0 occur).
# s17's one (2026-11-23), an interrupt in lock_sock_nested's pop window before
# its rettime counted twice in tcp_sock_set_cork, is gone: the builder moves
# such an irq into the call (tests/test_output_cases.py test_5).
# 6.12's two and 7.x's ten (k7.x/s21, s23, s24, 2026-11-27), an interrupt
# taken after a call's rettime and written under it with its task-context
# exit work, are gone: the builder gives them to the caller
# (tests/test_anomalies.py, irq-before-exit-tail).
UNEXPLAINED_NEGATIVE_SELF: dict[str, int] = {}


@pytest.mark.parametrize("path", FIXTURE_DATS, ids=fixture_id)
def test_negative_self_time_is_rare_and_explained(path):
    """Self time < 0 needs children outside the parent's window. What the
    builder cannot place is counted; what is left must not grow."""
    p = profile_of(path)
    unexplained = negative_self_explained(p)
    allowed = UNEXPLAINED_NEGATIVE_SELF.get(fixture_id(path), 0)
    assert len(unexplained) <= allowed, [p.path(r)[-3:] for r in unexplained[:5]]


# Fixtures where a call is left out of the corrected figures though nothing was
# lost (conftest.py: each waits for its fix; strict, so that the fix shows).
# (the 7.x return windows and trace-cmd 3.4's CPU data sizes are read right now;
# k7.x/s24's 2 depth mismatches were a record the cut wrote twice, below)
CLEAN_PENDING: dict[str, str] = {}


@pytest.mark.parametrize("path", fixture_params(FIXTURE_DATS, CLEAN_PENDING))
def test_clean_recordings_leave_no_call_out(path):
    """A trace that lost no event and whose kernel dropped no frame (no
    shadow-stack overrun: 5.10 stops at depth 50) has every call whole: no
    missing entry, no depth mismatch, no call left out of the corrected
    figures (the calls of a root call a window's end leaves open are whole:
    kept, as detached calls)."""
    p = profile_of(path)
    c = p.counters
    if c["lost_records"] or c["lost_events"] or c["overrun_growth"]:
        pytest.skip(f"lost events ({c['lost_events']}) or a shadow-stack overrun ({c['overrun_growth']})")
    assert (c["missing_entries"], c["depth_mismatch"], c["orphan_exits"], c["unterminated"]) == (0, 0, 0, 0)
    assert c["gap_calls"] == 0


@pytest.mark.parametrize("path", FIXTURE_DATS, ids=fixture_id)
def test_no_cpu_begins_with_a_record_twice(path):
    """trace-cmd 3.1's split, given a start at or before a CPU's first
    record, writes that record twice (slim.py avoids it): a copy holding
    such a record shows an entry at its own depth again, a depth mismatch
    and a lost exit that no kernel wrote."""
    proc = subprocess.Popen(["trace-cmd", "report", "-R", path], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    first: dict[bytes, bytes] = {}
    seen = set()
    try:
        for line in proc.stdout:
            m = re.search(rb"\[(\d+)\]", line)
            if not m or m[1] in seen:
                continue
            if m[1] in first:
                seen.add(m[1])
                assert line != first[m[1]], line
            else:
                first[m[1]] = line
            if len(seen) > 8:  # enough CPUs
                break
    finally:
        proc.kill()
        proc.wait()


def test_lost_events_are_counted():
    p = profile_of(fixture("k6.1/s10-lost/trace.dat"))  # a window of 20000 events
    assert p.counters["lost_records"] >= 5
    assert set(p.lost_per_cpu) == {0, 1}
    assert p.counters["gap_calls"] > 0
    clean = profile_of(fixture("k6.1/s01-v3-write4k/trace.dat"))
    assert clean.counters["lost_records"] == 0 and clean.lost_per_cpu == {}


def test_lost_events_are_counted_in_the_whole_recording():
    p = profile_of(corpus_fixture("k6.1/s10-lost/trace.dat"))
    assert p.counters["lost_records"] > 100
    assert set(p.lost_per_cpu) == {0, 1}


def test_migrations_are_counted():
    """The curated write window was chosen for its tasks moving between CPUs."""
    assert profile_of(fixture("k6.1/s01-v3-write4k/trace.dat")).counters["migrations"] == 10


@pytest.mark.parametrize("path,calls", [pytest.param(fixture("k6.12/s01-v3-write4k/trace.dat"), 20, id="data"),
                                        corpus_param("k6.12/s01-v3-write4k/trace.dat", 900, id="corpus")])
def test_kernel_612_layout(path, calls):
    p = profile_of(path)
    assert "6.12" in p.trace.kernel
    assert p.functions.calls[p.functions.index("nfsd3_proc_write")] > calls


def test_sched_switch_gives_offcpu_time():
    p = profile_of(fixture("k6.1/s15-icount-calib/trace-full.dat"))
    assert p.trace.has_sched_switch and p.counters["switches"] > 0
    ft = p.functions
    assert ft.offcpu[ft.index("nfsd3_proc_write")] > 0


def test_max_graph_depth_trace():
    p = profile_of(fixture("k6.1/s09-depth3/trace.dat"))
    assert p.counters["max_depth"] == 2


@pytest.mark.parametrize("path", FIXTURE_DATS, ids=fixture_id)  # every fixture (README)
def test_reader_thread_changes_nothing(path, monkeypatch):
    """The trace.dat read runs libtracecmd on a second thread, feeding the
    builder in batches; FTFLAME_THREADS=1 runs both inline. Same aggregate."""
    import os

    from ftflame.parse import _core

    require_fixtures()
    path = os.fsencode(path)
    piped = _core.read_dat(path)
    monkeypatch.setenv("FTFLAME_THREADS", "1")
    inline = _core.read_dat(path)
    assert piped.keys() == inline.keys()
    for key in piped:
        assert piped[key] == inline[key], key


@pytest.mark.parametrize("threads", ["1", ""])
def test_progress_callback_can_stop_the_read(threads, monkeypatch):
    """Ctrl-C reaches the read through the progress callback: it stops the
    reader thread too, and the exception comes through."""
    import os

    from ftflame.parse import _core

    require_fixtures()
    monkeypatch.setenv("FTFLAME_THREADS", threads)
    seen = []

    def progress(events):
        seen.append(events)
        raise KeyboardInterrupt

    big = corpus_fixture("k6.1/s14-v3-write-big/trace.dat")  # progress comes every 1 M events
    with pytest.raises(KeyboardInterrupt):
        _core.read_dat(os.fsencode(big), progress=progress)
    assert len(seen) == 1


def source_of(rel: str) -> str:
    """The recording the curated copy REL was cut from, or skip (with the reason)."""
    from helpers import corpus

    path, why = corpus.source_of(rel)
    if path is None:
        pytest.skip(why)
    return path


# the curated copies with every event (tests/data/fixtures/README.md)
WHOLE_COPIES = ["k6.1/s09-depth3/trace.dat", "k6.1/s06-calib-pair/trace-root.dat"] + \
    [f"k6.1/s13-calib-null/trace-{n}.dat" for n in ("null", "dispatch-root", "dispatch-full")] + \
    [f"k6.1/s15-icount-calib/trace-{n}.dat" for n in ("null", "dispatch-root", "dispatch-full", "root", "full",
                                                      "full-nosleep")]


@pytest.mark.parametrize("rel", WHOLE_COPIES)
def test_whole_curated_copy_equals_the_recording(rel):
    """slim.py keeps only the kallsyms the trace names: the same Profile,
    every column, counter and name, as the corpus's recording."""
    a, b = profile_of(fixture(rel)), profile_of(source_of(rel))
    assert a.counters == b.counters and a.funcs == b.funcs
    assert a.nodes.equals(b.nodes)
    assert a.trace.kernel == b.trace.kernel and a.trace.clock == b.trace.clock


@pytest.mark.parametrize("rel", ["k6.1/s01-v3-write4k/trace.dat", "k6.12/s01-v3-write4k/trace.dat",
                                 "k6.1/s10-lost/trace.dat", "k6.1/s06-calib-pair/trace-full.dat",
                                 "k6.1/s04-null/trace.dat"])
def test_curated_window_keeps_the_recording_facts(rel):
    """A window cut by trace-cmd split gets back the kernel and clock that
    split leaves out (slim.py)."""
    a, b = profile_of(fixture(rel)), profile_of(source_of(rel))
    assert a.trace.kernel == b.trace.kernel != "" and a.trace.clock == b.trace.clock
    assert 0 < a.counters["events"] < b.counters["events"]
