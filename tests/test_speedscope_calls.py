"""speedscope's per-task timelines (report/speedscope.py write_calls): every
call of a task, from the core's call stream, on its task's evented profile.
Parsed back on every curated trace: the events nest (each close closes the
last frame opened, times never go back), every call is there once (per
function, the calls and the summed durations are the Profile's raw
inclusive figures), every root call is on top of its task's timeline, and
interrupt subtrees stand under an "[irq]"/"[softirq]" frame."""
from __future__ import annotations

import collections
import json
import subprocess
import sys

import numpy as np
import pytest

from ftflame import parse
from ftflame.correct.stage import CorrectionOptions, correct_for_report
from ftflame.model.profile import SAMPLE_IRQ
from ftflame.report import perfetto, speedscope
from helpers import corpus

TRACES = corpus.files(corpus.CURATED, "*.dat") + corpus.files(corpus.CURATED, "*.txt.gz")
CONTEXT = ("[irq]", "[softirq]")


def convert(path: str, out: str):
    with perfetto.CallStream() as cs:
        p = parse.read(path, call_stream=cs.fds)
        p = correct_for_report(p, path, CorrectionOptions())
        with open(out, "wb") as f:
            counts = speedscope.write_calls(p, cs, f)
    return p, counts


Call = collections.namedtuple("Call", "profile frame depth begin end under_irq")


def timeline_calls(doc: dict) -> list:
    """The calls of the per-task profiles, checked to nest as speedscope
    requires (it refuses a file whose close is not of the frame on top)."""
    names = [f["name"] for f in doc["shared"]["frames"]]
    out = []
    for prof in doc["profiles"]:
        if "(call tree," in prof["name"]:
            continue
        stack: list = []
        last = prof["startValue"]
        for e in prof["events"]:
            assert e["at"] >= last, f"{prof['name']}: time goes back at {e}"
            last = e["at"]
            if e["type"] == "O":
                stack.append(e)
            else:
                assert stack and stack[-1]["frame"] == e["frame"], f"{prof['name']}: {e} closes no open frame"
                o = stack.pop()
                name = names[e["frame"]]
                if name not in CONTEXT:
                    out.append(Call(prof["name"], name, len(stack), o["at"], e["at"],
                                    any(names[s["frame"]] in CONTEXT for s in stack)))
        assert not stack, f"{prof['name']}: frames never closed"
        assert last <= prof["endValue"]
    return out


def func_of(name: str) -> str:
    return name[: -len(" (partial)")] if name.endswith(" (partial)") else name


@pytest.mark.parametrize("path", TRACES, ids=corpus.label)
def test_every_call_on_its_tasks_timeline(path, tmp_path):
    out = tmp_path / "t.speedscope.json"
    p, counts = convert(path, str(out))
    doc = json.loads(out.read_text())
    calls = timeline_calls(doc)
    funcs = p.funcs
    index = {f: i for i, f in enumerate(funcs)}
    f = np.array([index[func_of(c.frame)] for c in calls], dtype=np.int64)
    # every call once: per function, as many calls as the Profile counts
    assert np.array_equal(np.bincount(f, minlength=len(funcs)),
                          np.bincount(p.col("func"), weights=p.col("calls"), minlength=len(funcs)))
    d = np.array([c.end - c.begin for c in calls], dtype=np.int64)
    sums = np.bincount(f, weights=d, minlength=len(funcs))
    raw = np.bincount(p.col("func"), weights=p.col("incl"), minlength=len(funcs))
    # the durations, with what nesting cut off them (a trace's times that do
    # not all nest: laid out as in the Perfetto trace), are the raw sums
    assert np.array_equal(sums + counts["cut_ns"], raw)
    if counts["clamped"] == 0:
        assert not counts["cut_ns"].any()
    else:  # moved calls are few
        assert counts["clamped"] <= 0.25 * len(calls)
    # every root call on top of its task's timeline (under its [irq] frame
    # when it ran in interrupt context), with its duration where none moved
    tops = collections.Counter((c.profile, func_of(c.frame)) + ((c.end - c.begin,) if not counts["clamped"] else ())
                               for c in calls if c.depth == (1 if c.under_irq else 0))
    keys = perfetto.task_keys(p.scol("pid"), p.scol("cpu"))
    fn = p.col("func")[p.scol("node")]

    def who(k):
        return f"idle, CPU {k - perfetto.IDLE_KEY}" if k >= perfetto.IDLE_KEY else f"pid {k}"

    prof_of = {}
    for prof in doc["profiles"]:
        if prof["name"].startswith("calls of "):
            prof_of[prof["name"].split(" (wall clock")[0][len("calls of "):]] = prof["name"]
    roots = collections.Counter((prof_of[who(k)], funcs[fi]) + ((dur,) if not counts["clamped"] else ())
                                for k, fi, dur in zip(keys.tolist(), fn.tolist(), p.scol("dur").tolist()))
    assert not roots - tops, "root calls missing from their task's timeline"
    # the root calls entered in interrupt context, and only those, under an [irq] frame at the top
    n_irq = sum(1 for c in calls if c.depth == 1 and c.under_irq)
    assert n_irq >= int(((p.scol("flags") & SAMPLE_IRQ) != 0).sum())


def test_interrupts_under_their_frame(tmp_path):
    """An interrupt taken inside a task's call: its subtree sits under an
    [irq] frame where it ran, its calls named by function."""
    out = tmp_path / "t.speedscope.json"
    convert(corpus.curated("k7.x/s24-funcgraph-args/trace.dat"), str(out))
    calls = timeline_calls(json.loads(out.read_text()))
    nested = [c for c in calls if c.under_irq and c.depth >= 2]
    assert nested
    assert not any(c.frame.startswith("[irq] ") for c in calls)


def test_cli_file_and_stdout_agree_and_validate(tmp_path):
    """-o x.speedscope.json and -F speedscope on stdout write the same
    document, valid for speedscope's schema; the call stream's files gone."""
    jsonschema = pytest.importorskip("jsonschema")
    from helpers.htmlfix import speedscope_schema

    path = corpus.curated("k6.1/s01-v3-write4k/trace.dat")
    out = tmp_path / "x.speedscope.json"
    run = subprocess.run([sys.executable, "-m", "ftflame.cli", "report", path, "-o", str(out), "-q"],
                         capture_output=True)
    assert run.returncode == 0, run.stderr
    assert [x.name for x in tmp_path.iterdir()] == ["x.speedscope.json"]
    run = subprocess.run([sys.executable, "-m", "ftflame.cli", "report", path, "-F", "speedscope", "-q"],
                         capture_output=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout == out.read_bytes()
    doc = json.loads(run.stdout)
    jsonschema.validate(doc, json.loads(speedscope_schema().read_text()))
    assert any(pr["name"].startswith("calls of pid ") and len(pr["events"]) > 1000 for pr in doc["profiles"])


def test_the_timeline_is_the_perfetto_traces(tmp_path):
    """The same layout as the Perfetto trace's thread tracks: on a task's
    timeline the same calls, each at the same time (from the task's first)
    with the same duration."""
    pb = pytest.importorskip("test_perfetto", reason="needs the perfetto package")
    path = corpus.curated("k6.1/s01-v3-write4k/trace.dat")
    pb.convert(path, str(tmp_path / "t.perfetto-trace"))
    slices, _, _ = pb.read_back(str(tmp_path / "t.perfetto-trace"))
    convert(path, str(tmp_path / "t.speedscope.json"))
    calls = timeline_calls(json.loads((tmp_path / "t.speedscope.json").read_text()))
    for pid in {s.track >> 4 for s in slices if s.track & 0xF == perfetto.TK_THREAD}:
        # an interrupt's first call: "[irq] f" there, f under an [irq] frame here
        pf = [(s.begin, s.end, s.name.removeprefix("[irq] ")) for s in slices
              if s.track == pid << 4 | perfetto.TK_THREAD]
        ss = [(c.begin, c.end, c.frame) for c in calls if c.profile.startswith(f"calls of pid {pid} ")]
        assert len(pf) == len(ss) > 0
        p0, s0 = min(pf)[0], min(ss)[0]
        assert collections.Counter((b - p0, e - b, n) for b, e, n in pf) == \
            collections.Counter((b - s0, e - b, n) for b, e, n in ss)
