"""Every real trace.dat fixture: exact agreement with an independent
reference (trace-cmd report -R), and the Profile invariants."""
from __future__ import annotations

import pytest

from conftest import FIXTURE_DATS, fixture, fixture_id, profile_of, require_fixtures
from invariants import check_profile, negative_self_explained
from reference import reference_exits


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
UNEXPLAINED_NEGATIVE_SELF = {"k6.12/s01-v3-write4k/trace.dat": 2}


@pytest.mark.parametrize("path", FIXTURE_DATS, ids=fixture_id)
def test_negative_self_time_is_rare_and_explained(path):
    """Self time < 0 needs children outside the parent's window. What the
    builder cannot place is counted; what is left must not grow."""
    p = profile_of(path)
    unexplained = negative_self_explained(p)
    allowed = UNEXPLAINED_NEGATIVE_SELF.get(fixture_id(path), 0)
    assert len(unexplained) <= allowed, [p.path(r)[-3:] for r in unexplained[:5]]


def test_lost_events_are_counted():
    p = profile_of(fixture("k6.1/s10-lost/trace.dat"))
    assert p.counters["lost_records"] > 100
    assert set(p.lost_per_cpu) == {0, 1}
    assert p.counters["gap_calls"] > 0
    clean = profile_of(fixture("k6.1/s01-v3-write4k/trace.dat"))
    assert clean.counters["lost_records"] == 0 and clean.lost_per_cpu == {}


def test_kernel_612_layout():
    p = profile_of(fixture("k6.12/s01-v3-write4k/trace.dat"))
    assert "6.12" in p.trace.kernel
    assert p.functions.calls[p.functions.index("nfsd3_proc_write")] > 900


def test_sched_switch_gives_offcpu_time():
    p = profile_of(fixture("k6.1/s15-icount-calib/trace-full.dat"))
    assert p.trace.has_sched_switch and p.counters["switches"] > 0
    ft = p.functions
    assert ft.offcpu[ft.index("nfsd3_proc_write")] > 0


def test_max_graph_depth_trace():
    p = profile_of(fixture("k6.1/s09-depth3/trace.dat"))
    assert p.counters["max_depth"] == 2


@pytest.mark.parametrize("name", [fixture_id(p) for p in FIXTURE_DATS])  # every fixture (README)
def test_reader_thread_changes_nothing(name, monkeypatch):
    """The trace.dat read runs libtracecmd on a second thread, feeding the
    builder in batches; FTFLAME_THREADS=1 runs both inline. Same aggregate."""
    import os

    from ftflame.parse import _core

    require_fixtures()
    path = os.fsencode(fixture(name))
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

    with pytest.raises(KeyboardInterrupt):
        _core.read_dat(os.fsencode(fixture("k6.1/s14-v3-write-big/trace.dat")), progress=progress)
    assert len(seen) == 1
