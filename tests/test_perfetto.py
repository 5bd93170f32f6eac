"""The Perfetto trace (report/perfetto.py), parsed back with Perfetto's own
protos (the perfetto package's perfetto_trace_pb2): on every curated
trace, every call is a slice nested in its caller's, the slices' durations
sum per function to the Profile's raw inclusive sums, every root call is a
slice, and the call stream the core writes holds every completed call."""
from __future__ import annotations

import collections
import os
import subprocess
import sys

import numpy as np
import pytest

from ftflame import parse
from ftflame.correct.stage import CorrectionOptions, correct_for_report
from ftflame.model.profile import SAMPLE_IRQ
from ftflame.report import perfetto
from ftflame.report._rowfmt import nest_calls, pack_rows
from helpers import corpus

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2",
                         reason="the perfetto package (make setup installs it) parses the output back")

TRACES = corpus.files(corpus.CURATED, "*.dat") + corpus.files(corpus.CURATED, "*.txt.gz")


def convert(path: str, out: str):
    """The Profile of path (corrected as the report does) and its Perfetto
    trace in out; the writer's counts."""
    with perfetto.CallStream() as cs:
        p = parse.read(path, call_stream=cs.fds)
        p = correct_for_report(p, path, CorrectionOptions())
        with open(out, "wb") as f:
            counts = perfetto.write_calls(p, cs, f)
    return p, counts


Slice = collections.namedtuple("Slice", "track name depth begin end args cat")


def read_back(out: str) -> tuple:
    """The file parsed with Perfetto's protos: (slices, instants, tracks by
    uuid). Each track's events must come in time order, every end closing
    the last open slice of its track: then the slices nest as written."""
    trace = pb.Trace()
    with open(out, "rb") as f:
        trace.ParseFromString(f.read())
    names, anns, cats, tracks = {}, {}, {}, {}
    open_: dict = collections.defaultdict(list)
    last_ts: dict = {}
    slices, instants = [], []
    for pk in trace.packet:
        if pk.HasField("interned_data"):
            names.update({e.iid: e.name for e in pk.interned_data.event_names})
            anns.update({e.iid: e.name for e in pk.interned_data.debug_annotation_names})
            cats.update({e.iid: e.name for e in pk.interned_data.event_categories})
        if pk.HasField("track_descriptor"):
            tracks[pk.track_descriptor.uuid] = pk.track_descriptor
        if not pk.HasField("track_event"):
            continue
        te = pk.track_event
        assert te.track_uuid in tracks, "an event on a track not described before it"
        tr = te.track_uuid
        assert pk.timestamp >= last_ts.get(tr, 0), f"track {tr}: time goes back at {pk.timestamp}"
        last_ts[tr] = pk.timestamp
        if te.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            args = {anns[a.name_iid]: (a.int_value if a.HasField("int_value") else a.uint_value if a.HasField("uint_value")
                                       else a.double_value if a.HasField("double_value") else a.bool_value
                                       if a.HasField("bool_value") else a.string_value) for a in te.debug_annotations}
            open_[tr].append(Slice(tr, names[te.name_iid], len(open_[tr]), pk.timestamp, None, args,
                                   cats[te.category_iids[0]]))
        elif te.type == pb.TrackEvent.TYPE_SLICE_END:
            assert open_[tr], f"track {tr}: an end without a begin at {pk.timestamp}"
            s = open_[tr].pop()
            slices.append(s._replace(end=pk.timestamp))
        else:
            instants.append((tr, pk.timestamp, te.name, {anns[a.name_iid]: a.int_value for a in te.debug_annotations}))
    assert not any(open_.values()), "slices never closed"
    return slices, instants, tracks


def test_field_numbers_are_perfettos():
    """The writer's field numbers and enum values are those of Perfetto's protos."""
    def num(msg, field):
        return msg.DESCRIPTOR.fields_by_name[field].number

    P, E, D, Id = pb.TracePacket, pb.TrackEvent, pb.DebugAnnotation, pb.InternedData
    assert (perfetto.F_TIMESTAMP, perfetto.F_SEQ_ID, perfetto.F_TRACK_EVENT, perfetto.F_INTERNED,
            perfetto.F_SEQ_FLAGS, perfetto.F_TRACK_DESCRIPTOR) == \
        tuple(num(P, f) for f in ("timestamp", "trusted_packet_sequence_id", "track_event", "interned_data",
                                  "sequence_flags", "track_descriptor"))
    assert (perfetto.F_TE_CATEGORY_IIDS, perfetto.F_TE_ANNOTATIONS, perfetto.F_TE_TYPE, perfetto.F_TE_NAME_IID,
            perfetto.F_TE_TRACK_UUID, perfetto.F_TE_NAME) == \
        tuple(num(E, f) for f in ("category_iids", "debug_annotations", "type", "name_iid", "track_uuid", "name"))
    assert (perfetto.F_DA_NAME_IID, perfetto.F_DA_BOOL, perfetto.F_DA_UINT, perfetto.F_DA_INT, perfetto.F_DA_DOUBLE,
            perfetto.F_DA_STRING) == \
        tuple(num(D, f) for f in ("name_iid", "bool_value", "uint_value", "int_value", "double_value", "string_value"))
    assert (perfetto.F_ID_CATEGORIES, perfetto.F_ID_EVENT_NAMES, perfetto.F_ID_ANNOTATION_NAMES) == \
        tuple(num(Id, f) for f in ("event_categories", "event_names", "debug_annotation_names"))
    T = pb.TrackDescriptor
    assert (perfetto.F_TD_UUID, perfetto.F_TD_NAME, perfetto.F_TD_PROCESS, perfetto.F_TD_THREAD, perfetto.F_TD_PARENT) == \
        tuple(num(T, f) for f in ("uuid", "name", "process", "thread", "parent_uuid"))
    assert (perfetto.SLICE_BEGIN, perfetto.SLICE_END, perfetto.INSTANT) == \
        (E.TYPE_SLICE_BEGIN, E.TYPE_SLICE_END, E.TYPE_INSTANT)
    assert (perfetto.SEQ_CLEARED, perfetto.SEQ_NEEDS) == \
        (P.SEQ_INCREMENTAL_STATE_CLEARED, P.SEQ_NEEDS_INCREMENTAL_STATE)


def test_pack_rows_is_protobuf():
    """pack_rows's messages parse as Perfetto's: varints (a negative int64
    in 10 bytes), doubles, fragments, nested lengths past 127 bytes, and a
    skipped group."""
    n = 3
    ts = np.array([1, 300, 1 << 40], dtype=np.int64)
    val = np.array([-5, 0, 1 << 62], dtype=np.int64)
    d = np.array([1.5, -2.25, 1e300], dtype=np.float64)
    has = np.array([1, 0, 1], dtype=np.int64)
    long_name = [perfetto._sfield(perfetto.F_TE_NAME, "x" * 200)]
    out = pack_rows([b"\x0a", "(", b"\x40", ("v", ts), b"\x5a", "(", ("e", np.array([0, -1, 0], dtype=np.int64), long_name),
                     ("?", has), b"\x22", "(", b"\x20", ("v", val), ")", "/",
                     b"\x22", "(", b"\x29", ("d", d), ")", ")", ")"], n)
    tr = pb.Trace()
    tr.ParseFromString(out)
    assert [p.timestamp for p in tr.packet] == ts.tolist()
    assert [p.track_event.name for p in tr.packet] == ["x" * 200, "", "x" * 200]
    ints = [[a.int_value for a in p.track_event.debug_annotations if a.HasField("int_value")] for p in tr.packet]
    assert ints == [[-5], [], [1 << 62]]
    assert [p.track_event.debug_annotations[-1].double_value for p in tr.packet] == d.tolist()


def test_pack_rows_events():
    """With events, a row per begin (e) or end (-1-e) of slice e: the
    begin's or the end's time, the begin-only items at a begin."""
    start = np.array([5, 7], dtype=np.int64)
    end = np.array([9, 8], dtype=np.int64)
    name = [perfetto._sfield(perfetto.F_TE_NAME, "f"), perfetto._sfield(perfetto.F_TE_NAME, "g")]
    out = pack_rows([b"\x0a", "(", b"\x40", ("t", start, end), b"\x5a", "(", "B",
                     ("e", np.arange(2, dtype=np.int64), name), "/", ")", ")"], 2, np.array([0, 1, -2, -1], dtype=np.int64))
    tr = pb.Trace()
    tr.ParseFromString(out)
    assert [(p.timestamp, p.track_event.name) for p in tr.packet] == [(5, "f"), (7, "g"), (8, ""), (9, "")]
    with pytest.raises(ValueError):
        pack_rows([b"\x0a"], 2, np.array([2], dtype=np.int64))


def test_nest_calls_moves_then_cuts():
    """A call that starts before its previous sibling ended is moved after
    it with its duration, and cut only where it no longer fits its caller;
    the events come depth first."""
    parent = np.array([-1, 0, 0, 0], dtype=np.int64)
    start = np.array([0, 10, 15, 90], dtype=np.int64)
    end = np.array([100, 20, 30, 110], dtype=np.int64)
    order = np.arange(4, dtype=np.int64)
    ev = np.frombuffer(nest_calls(parent, start, end, order), dtype=np.int64)
    assert ev.tolist() == [0, 1, -2, 2, -3, 3, -4, -1]
    assert start.tolist() == [0, 10, 20, 80] and end.tolist() == [100, 20, 35, 100]


def _slice_sums(slices, funcs) -> tuple:
    """Per function: the slices' durations, and the durations plus what
    nesting cut off them (clamped_ns)."""
    index = {f: i for i, f in enumerate(funcs)}
    calls = [s for s in slices if "self_ns" in s.args]  # calls, not off-CPU stretches
    f = np.array([index[s.name[6:] if s.name.startswith("[irq] ") else s.name] for s in calls], dtype=np.int64)
    d = np.array([s.end - s.begin for s in calls], dtype=np.int64)
    c = np.array([s.args.get("clamped_ns", 0) for s in calls], dtype=np.int64)
    return np.bincount(f, weights=d, minlength=len(funcs)), np.bincount(f, weights=d + c, minlength=len(funcs)), len(calls)


@pytest.mark.parametrize("path", TRACES, ids=corpus.label)
def test_every_call_a_nested_slice(path, tmp_path):
    out = str(tmp_path / "t.perfetto-trace")
    p, counts = convert(path, out)
    slices, instants, tracks = read_back(out)
    funcs = p.funcs
    raw = np.bincount(p.col("func"), weights=p.col("incl"), minlength=len(funcs))
    ncalls = int(p.col("calls").sum())
    sums, uncut, n = _slice_sums(slices, funcs)
    assert n == ncalls == counts["calls"] + sum(1 for s in slices if s.track & 0xF == perfetto.TK_ORPHAN)
    # each slice says its raw duration, and how much nesting cut off it
    assert all(s.args["dur_ns"] == s.end - s.begin + s.args.get("clamped_ns", 0) for s in slices if "self_ns" in s.args)
    assert np.array_equal(uncut, raw)
    if counts["clamped"] == 0:  # times that nest: the slices are the calls' own
        assert np.array_equal(sums, raw)
    else:  # a trace's times that do not nest (a gap, a stale calltime, microsecond text) are few
        assert counts["clamped"] <= 0.25 * ncalls
    # every root call is a slice on top of its task's track (its duration, its task)
    tops = collections.Counter((s.track >> 4, s.args["dur_ns"]) for s in slices
                               if s.depth == 0 and s.track & 0xF in (perfetto.TK_THREAD, perfetto.TK_IRQ)
                               and "never_completed" not in s.args)
    keys = perfetto.task_keys(p.scol("pid"), p.scol("cpu"))
    roots = collections.Counter(zip(keys.tolist(), p.scol("dur").tolist()))
    assert tops == roots
    # root calls entered in interrupt context stand apart, on their own track
    on_irq = sum(1 for s in slices if s.depth == 0 and s.track & 0xF == perfetto.TK_IRQ and "never_completed" not in s.args)
    assert on_irq == int(((p.scol("flags") & SAMPLE_IRQ) != 0).sum())
    # an operation on the root calls that had one
    ops = collections.Counter(s.args["operation"] for s in slices if "operation" in s.args)
    want = collections.Counter(p.operations[o] for o in p.scol("op").tolist() if o >= 0)
    assert ops == want
    # lost-event marks, each an instant
    assert len(instants) == p.counters.get("lost_records", 0)
    # off-CPU stretches on their track, only with sched_switch events
    off = [s for s in slices if s.track & 0xF == perfetto.TK_OFFCPU]
    assert all(s.name == "off-CPU" and s.cat == "sched" for s in off)
    if not p.offcpu_known:
        assert not off


def test_recorded_values_are_arguments(tmp_path):
    """A funcgraph-args trace: the calls' argument values are the slices'
    arguments, and interrupt subtrees are marked; a text trace's return
    values (tests/data/text/retval.txt) too."""
    out = str(tmp_path / "t.perfetto-trace")
    p, _ = convert(corpus.curated("k7.x/s24-funcgraph-args/trace.dat"), out)
    slices, _, _ = read_back(out)
    assert p.call_args
    assert sum(1 for s in slices if "arg0" in s.args) > 1000
    irq = [s for s in slices if s.cat == "irq"]
    assert irq and all(s.args.get("irq") for s in irq)
    assert any(s.name.startswith("[irq] ") for s in irq)
    p, _ = convert(os.path.join(os.path.dirname(__file__), "data", "text", "retval.txt"), out)
    slices, _, _ = read_back(out)
    assert p.trace.has_retval
    assert -22 in {s.args.get("ret") for s in slices}


def test_lost_events_marked(tmp_path):
    out = str(tmp_path / "t.perfetto-trace")
    p, _ = convert(corpus.curated("k6.1/s10-lost/trace.dat"), out)
    slices, instants, tracks = read_back(out)
    assert instants and all(tracks[tr].name == "lost events" for tr, *_ in instants)
    assert sum(i[3]["events"] for i in instants if i[3]["events"] > 0) == p.counters["lost_events"]
    assert any(s.args.get("gap") for s in slices)


def test_cli_writes_it_and_refuses_stdout(tmp_path):
    out = tmp_path / "x.perfetto-trace"
    path = corpus.curated("k6.1/s01-v3-write4k/trace.dat")
    run = subprocess.run([sys.executable, "-m", "ftflame.cli", "report", path, "-o", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    slices, _, _ = read_back(str(out))
    assert slices
    assert os.listdir(tmp_path) == ["x.perfetto-trace"]  # the call stream's files gone
    run = subprocess.run([sys.executable, "-m", "ftflame.cli", "report", path, "-F", "perfetto"], capture_output=True, text=True)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "-o NAME.perfetto-trace" in run.stderr


def test_batches_change_nothing(tmp_path, monkeypatch):
    """The calls are read, laid out and packed a batch at a time (in a
    thread of their own, Pipeline): the file is the same whatever the
    batch size, on a text trace whose microsecond times make top calls
    overlap (a top call that starts before the last one on its track ended
    is moved after it with its duration, across batches as within one)."""
    path = corpus.curated("k6.1/s07-tracefs-text/trace-default.txt.gz")
    _, counts = convert(path, str(tmp_path / "a.perfetto-trace"))
    monkeypatch.setattr(perfetto, "BATCH_CALLS", 1 << 8)
    _, small = convert(path, str(tmp_path / "b.perfetto-trace"))
    assert (tmp_path / "a.perfetto-trace").read_bytes() == (tmp_path / "b.perfetto-trace").read_bytes()
    assert small == counts and counts["clamped"] <= 0.01 * counts["calls"]
