"""The HTML report's callers/callees and latency plot, and the SVG's frame
colours, against the independent per-call reference (tests/helpers/callref.py), raw
and corrected (the real correction, a hook cost given on the command line).

tests/test_outputs_agree.py compares every output with the JSON; these parts
of the HTML and SVG have no JSON counterpart, so they are checked against
the events themselves (issue 18: the mutations html-edges-excl,
html-latency-raw and svg-irq-colour survived every other test)."""
from __future__ import annotations

import collections
import html as htmllib
import os
import re

import pytest
from test_binding import TRACES, trace_path

from conftest import require_fixtures
from ftflame.cli import build_parser, correction_options
from ftflame.correct import corrections
from ftflame.correct.stage import correct_for_report
from ftflame.parse import read
from ftflame.report import html, svg
from helpers import callref, events

IDS = [t[0].split("/")[1] for t in TRACES]
IRQ_MARK = " [irq]"  # the twin's mark where interrupt context starts


@pytest.fixture(scope="module", params=TRACES, ids=IDS)
def case(request):
    require_fixtures()
    rel, o_in, o_out = request.param
    path = trace_path(rel)
    calls = callref.calls_of(callref.trace_events(path))
    args = build_parser().parse_args(["report", path, "--overhead-in", str(o_in),
                                      "--overhead-out", str(o_out)])
    p = correct_for_report(read(path), path, correction_options(args))
    c = corrections.summary(p)
    # the conditions under which the reference is the whole model (as tests/test_binding.py)
    assert c.gap_calls == 0 and c.clamped_paths == 0 and c.offcpu_removed_ns == 0
    return {"p": p, "calls": calls, "ref": callref.Reference(calls, o_in, o_out)}


def bare(name: str) -> str:
    return name.removesuffix(IRQ_MARK)


def test_html_callers_and_callees_equal_reference(case):
    """Each (caller, callee) pair: calls, raw and corrected inclusive sums
    and the clean calls they cover, summed over every path it occurs on."""
    d = html.report_data(case["p"])
    names = d["funcs"]
    want = collections.defaultdict(lambda: [0, 0, 0.0, 0])
    for path, e in case["ref"].paths.items():
        caller = bare(path[-2]) if len(path) > 1 else None
        w = want[caller, bare(path[-1])]
        w[0] += e["calls"]
        w[1] += e["incl"]["sum"]
        w[2] += e["corr_incl_sum"]
        w[3] += e["calls"]  # no gap calls: every call is clean
    got = {}
    for caller, callee, calls, incl, inclc, callsc in d["edges"]:
        got[names[caller] if caller >= 0 else None, names[callee]] = (calls, incl, inclc, callsc)
    assert set(got) == set(want)
    distinct = 0
    for key, (calls, incl, inclc, callsc) in got.items():
        w = want[key]
        assert (calls, incl, callsc) == (w[0], w[1], w[3]), key
        assert abs(inclc - w[2]) <= 0.5 + 1e-6, (key, inclc, w[2])  # printed as whole ns
        distinct += incl != inclc
    assert distinct  # corrected and raw sums differ: a column taken for the other shows


def test_html_latency_plot_equals_reference(case):
    """Every plotted root call is one of the trace's root calls, with its raw
    and its corrected duration (task calls: minus interrupt subtrees, O_in,
    D*(O_in+O_out), R*O_out; never below 0)."""
    s = html.report_data(case["p"])["samples"]
    want = collections.defaultdict(collections.Counter)
    for path, e in case["ref"].paths.items():
        if not e["root"] or e["partial"]:
            continue
        durs = [c.dur for c in case["calls"] if c.path == path]
        label = bare(path[0]) + (IRQ_MARK if e["irq"] else "")
        for dur, corr in zip(durs, e["corr_values"]):
            want[label][dur, int(round(max(corr, 0.0)))] += 1
    assert s["total"] == sum(sum(v.values()) for v in want.values())
    shown = 0
    for g, dur, durc in zip(s["root"], s["dur"], s["durc"]):
        label = s["roots"][g].split(": ", 1)[0]  # a dispatcher's groups are per operation
        assert want[label][dur, durc] > 0, (label, dur, durc)
        want[label][dur, durc] -= 1
        shown += dur != durc
    assert shown  # corrected durations differ from the raw ones somewhere


SVG_FRAME = re.compile(r'<g class="f" id="f(\d+)" data-depth="\d+" data-x="[-0-9.]+" data-w="[-0-9.]+" '
                       r'data-parent="(-?\d+)"><title>([^<]*)</title><rect [^>]*? fill="([^"]*)"')


def svg_colour_kinds(p, ref) -> collections.Counter:
    """Frames of interrupt-context paths are drawn in the irq palette (a
    blue hue, hsl 205-255) and say so in their tooltip; task frames are
    not (reds and browns, hue under 60). Returns how many frames of each
    (True: irq) were checked."""
    irq_of = collections.defaultdict(set)  # names from the root -> irq or not
    for path, e in ref.paths.items():
        irq_of[tuple(bare(n) for n in path)].add(e["irq"])
    frames = {int(m.group(1)): (int(m.group(2)), htmllib.unescape(m.group(3)), m.group(4))
              for m in SVG_FRAME.finditer(svg.render(p))}
    assert frames
    seen = collections.Counter()
    for fid, (_parent, tip, fill) in frames.items():
        if fid == 0 or "calls " not in tip:
            continue  # the root, merged small paths, off-CPU time
        names, a = [], fid
        while a > 0:
            names.append(frames[a][1].split(" | ")[0])
            a = frames[a][0]
        irq = irq_of.get(tuple(reversed(names)), set())
        if len(irq) != 1:
            continue  # task and irq paths of one name: not told apart by names
        irq = irq.pop()
        hue = float(re.fullmatch(r"hsl\(([0-9.]+),.*", fill).group(1))
        assert (hue >= 200) == irq and ("[irq] interrupt context" in tip) == irq, (names, fill, tip)
        seen[irq] += 1
    return seen


def test_svg_colours_task_frames_as_task(case):
    assert svg_colour_kinds(case["p"], case["ref"])[False] >= 5


@pytest.mark.parametrize("name", ["nested-hardirq", "irq-before-entry", "irq-after-return"])
def test_svg_colours_irq_frames_apart(name):
    """Hand-made interrupts inside task calls (tests/data/events), raw."""
    with open(os.path.join(events.HERE, name + ".events")) as f:
        calls = callref.calls_of(callref.handmade_events(events.parse_events(f.read())))
    seen = svg_colour_kinds(events.load(name), callref.Reference(calls))
    assert seen[True] >= 1 and seen[False] >= 1
