"""The flame graph's frames (report/flametree.py: what the HTML and SVG flame
graphs draw) against the independent per-call reference: every frame that
stands for a call path has that path's calls, raw and corrected inclusive
and exclusive sums and flags (irq, irq root, partial)."""
from __future__ import annotations

import pytest
from test_binding import TRACES, trace_path, twin_path

from conftest import require_fixtures
from ftflame.cli import build_parser, correction_options
from ftflame.correct.stage import correct_for_report
from ftflame.parse import read
from ftflame.report import flametree
from helpers import callref

IDS = [t[0].split("/")[1] for t in TRACES]
IRQ, IRQ_ROOT, PARTIAL = 1, 2, 4  # the node flag bits (docs/design.md, JSON "flags")



def reference_and_profile(rel: str, o_in: float, o_out: float):
    """The independent per-call reference of a TRACES trace and the Profile
    ftflame reports for it, corrected with the same hook cost as the CLI
    would (--overhead-in/--overhead-out)."""
    require_fixtures()
    path = trace_path(rel)
    ref = callref.Reference(callref.calls_of(callref.trace_events(path)), o_in, o_out)
    args = build_parser().parse_args(["report", path, "--overhead-in", str(o_in),
                                      "--overhead-out", str(o_out)])
    return ref, correct_for_report(read(path), path, correction_options(args))

@pytest.mark.parametrize("rel,o_in,o_out", TRACES, ids=IDS)
def test_flame_frames_equal_reference(rel, o_in, o_out):
    ref, p = reference_and_profile(rel, o_in, o_out)
    tree = flametree.build(p)
    seen = irq_seen = 0
    for i, node in enumerate(tree.node):
        if node < 0:
            continue
        e = ref.paths[twin_path(p, node)]
        want = (IRQ if e["irq"] else 0) | (IRQ_ROOT if e["irq_root"] else 0) | (PARTIAL if e["partial"] else 0)
        what = "/".join(p.path(node))
        assert tree.flags[i] & 7 == want, what
        assert tree.calls[i] == e["calls"], what
        assert tree.incl[i] == e["incl"]["sum"] and tree.excl[i] == e["excl"]["sum"], what
        assert tree.incl_corr[i] == pytest.approx(e["corr_incl_sum"], abs=0.01), what
        assert tree.excl_corr[i] == pytest.approx(e["corr_excl_sum"], abs=0.01), what
        seen += 1
        irq_seen += bool(want & IRQ)
    assert seen >= 5 and irq_seen >= 1


@pytest.mark.parametrize("rel,o_in,o_out", TRACES[:2], ids=IDS[:2])
def test_folded_weights_equal_reference(rel, o_in, o_out):
    """Folded stacks, raw and corrected (report.folded.folded_lines): each
    task-context path weighs its exclusive time; interrupt subtrees stand
    apart under [irq]/[softirq] frames in the corrected output."""
    from ftflame.correct.corrections import irq_kind
    from ftflame.report.folded import folded_lines

    ref, p = reference_and_profile(rel, o_in, o_out)
    def stack(k):  # folded stacks name functions only: the twin's irq mark goes
        return ";".join(name.removesuffix(" [irq]") for name in k)

    def raw_stack(k):  # raw: an interrupt inside a task call under its [irq] / [softirq] frame
        out = []
        for i, name in enumerate(k):
            if i and name.endswith(" [irq]") and not k[i - 1].endswith(" [irq]"):
                out.append(irq_kind(name.removesuffix(" [irq]")))
            out.append(name.removesuffix(" [irq]"))
        return ";".join(out)

    raw = dict(folded_lines(p))
    want_raw = {}
    for k, e in ref.paths.items():
        if e["excl"]["sum"] > 0:
            want_raw[raw_stack(k)] = want_raw.get(raw_stack(k), 0) + e["excl"]["sum"]
    assert raw == want_raw
    corr = dict(folded_lines(p, corrected=True))
    task = {k: e for k, e in ref.paths.items() if not e["irq"]}
    want = {stack(k): int(e["corr_excl_sum"]) for k, e in task.items() if int(e["corr_excl_sum"]) > 0}
    assert {k: v for k, v in corr.items() if not k.startswith("[")} == want
    irq_total = sum(e["corr_excl_sum"] for e in ref.paths.values() if e["irq"] and e["corr_excl_sum"] > 0)
    got_irq = sum(v for k, v in corr.items() if k.startswith("["))
    n_irq = sum(1 for k in corr if k.startswith("["))
    assert abs(got_irq - irq_total) <= n_irq  # each weight truncated to whole ns


@pytest.mark.parametrize("rel,o_in,o_out", TRACES[:2], ids=IDS[:2])
def test_speedscope_call_trees_equal_reference(rel, o_in, o_out):
    """speedscope's call-tree profiles, raw and corrected: one per root
    function, as long as that root's summed (corrected) inclusive time."""
    from ftflame.report import speedscope

    ref, p = reference_and_profile(rel, o_in, o_out)
    doc = speedscope.document(p)
    length = {pr["name"]: pr["endValue"] - pr["startValue"] for pr in doc["profiles"]}
    roots = [(k[0], e) for k, e in ref.paths.items() if e["root"]]
    assert roots
    for name, e in roots:
        assert length[f"{name} (call tree, raw ns)"] == e["incl"]["sum"], name
        assert length[f"{name} (call tree, corrected ns)"] == pytest.approx(e["corr_incl_sum"], abs=1), name
