"""Outputs in small cases (one test or more per numbered situation, each
failing before its fix): every output says where the hook cost came from (1), one name per
frame across the flame-graph outputs (2), the balance sheet sums with a
clamped root (3), a depth-limited side in ftflame diff (4), the negative
self times that stay explained (5), and the HTML page's size (6)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

TRACECMD = os.path.join(ROOT, "tests", "data", "text", "tracecmd.txt")  # too small for an in-trace estimate


def ftflame(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ftflame.cli", *args], capture_output=True, text=True,
                          cwd=ROOT)


# ---- 1: where O_in and O_out came from, in every output -------------------------
def _outputs(tmp_path, *args: str) -> dict:
    out = {}
    for fmt in ("txt", "json", "html", "svg", "speedscope"):
        path = tmp_path / f"r.{fmt}"
        proc = ftflame("report", TRACECMD, "-F", fmt, "-o", str(path), "-q", *args)
        assert proc.returncode == 0, proc.stderr
        out[fmt] = path.read_text()
    return out


def test_1_values_given_on_the_command_line_are_said_to_be_applied(tmp_path):
    out = _outputs(tmp_path, "--overhead-in", "50", "--overhead-out", "30")
    # the trace has no in-trace estimate: the given values are the correction
    head = out["txt"].split("\n\n")[0]
    assert "not corrected" not in head and "equal raw" not in head
    assert "O_in 50.0 ns, O_out 30.0 ns (command line)" in head
    cal = json.loads(out["json"])["calibration"]
    assert cal["applied"] and "not corrected" not in cal["method"]
    assert cal["details"]["value_sources"] == {"o_in": "command line", "o_out": "command line"}
    assert "not corrected" not in out["html"]
    assert "O_in 50.0 ns, O_out 30.0 ns (command line)" in out["svg"]
    assert "O_in 50.0 ns, O_out 30.0 ns (command line)" in json.loads(out["speedscope"])["name"]


def test_1_each_value_says_its_own_source(tmp_path):
    # only O_in given, nothing else to take O_out from: it is 0, and says why
    out = _outputs(tmp_path, "--overhead-in", "50")
    want = "O_in 50.0 ns (command line), O_out 0.0 ns (not given, and no calibration file or in-trace estimate)"
    assert want in re.sub(r"\s+", " ", out["txt"].split("\n\n")[0])
    assert json.loads(out["json"])["calibration"]["details"]["value_sources"]["o_out"].startswith("not given")
    assert "O<sub>in</sub> command line, O<sub>out</sub> not given" in out["html"]
    assert want in out["svg"] and want in json.loads(out["speedscope"])["name"]


def test_1_mixed_with_the_in_trace_estimate(tmp_path):
    from conftest import fixture

    proc = ftflame("report", fixture("k6.1/s01-v3-write4k/trace.dat"), "-F", "txt", "--sections", "header",
                   "--overhead-out", "300")
    assert proc.returncode == 0, proc.stderr
    head = re.sub(r"\s+", " ", proc.stdout)
    assert re.search(r"O_in \d+\.\d ns \(in-trace estimate\), O_out 300\.0 ns \(command line\)", head)


# ---- 2: a root entered in task and in interrupt context reads as two ------------
def test_2_irq_root_stands_under_its_context_frame_everywhere():
    from ftflame.correct.corrections import correct
    from ftflame.model.profile import Calibration
    from ftflame.report import flametree, folded, html, speedscope, svg
    from ftflame.report.options import RenderOptions
    from helpers.events import load

    # svc_process in a task and in an interrupt (softirq flags; the frame is named as irq_kind names it)
    p = load("irq-root-both-ways")
    q = correct(p, Calibration(50.0, 20.0, "command line"))
    for prof, opts in ((p, RenderOptions()), (q, RenderOptions(folded_weights="corrected"))):
        lines = dict(ln.rsplit(" ", 1) for ln in folded.render(prof, opts).splitlines())
        # two stacks that read as two; the sums are the tree's exclusive times
        assert set(lines) == {"svc_process", "svc_process;svc_send",
                              "[irq];svc_process", "[irq];svc_process;svc_send"}
    raw = dict(ln.rsplit(" ", 1) for ln in folded.render(p).splitlines())
    assert (raw["svc_process"], raw["[irq];svc_process"]) == ("1400", "350")
    # HTML and SVG: the same [irq] frame above the interrupt-context root
    for prof in (p, q):
        t = flametree.build(prof)
        ctx = [i for i in range(len(t)) if t.kind[i] == flametree.KIND_CONTEXT]
        assert [t.label(i, prof.funcs) for i in ctx] == ["[irq]"]
        below = [i for i in range(len(t)) if t.parent[i] == ctx[0]]
        assert [t.node[i] for i in below] == [2]  # the irq-context root row
        assert t.width[ctx[0]] == t.width[below[0]] and t.width_corr[ctx[0]] == t.width_corr[below[0]]
        assert sum(t.width[i] for i in range(len(t)) if t.parent[i] == 0) == t.width[0]
        assert html.flame_data(prof, t)["context"] == [[ctx[0], "[irq]"]]
        assert ">[irq]<" in svg.render(prof)
        # speedscope: the frame opens around the interrupt-context root only
        d = speedscope.document(prof)
        names = [f["name"] for f in d["shared"]["frames"]]
        for pr in d["profiles"]:
            if "(call tree" not in pr["name"]:
                continue
            opened = [names[e["frame"]] for e in pr["events"] if e["type"] == "O"]
            assert opened == ["svc_process", "svc_send", "[irq]", "svc_process", "svc_send"]


# ---- 3: a clamped root's balance sheet sums ---------------------------------------
def test_3_balance_sheet_sums_when_the_root_is_clamped():
    """s15's full trace with O_out 1500 ns (O_in from the in-trace estimate):
    the root's formula is below 0 and its children's corrected times are
    positive. The sheet said 38.4 ns unaccounted: it subtracted the ns the
    children were scaled down by (inside the components) as if they were
    part of the root's clamp."""
    from conftest import fixture, profile_of
    from ftflame.correct import calibration
    from ftflame.correct.balance import sheet
    from ftflame.correct.corrections import correct
    from ftflame.report import text

    path = fixture("k6.1/s15-icount-calib/trace-full.dat")
    p = profile_of(path)
    q = correct(p, calibration.choose(p, path, None, None, 1500.0, strict=True))  # a misfit, kept on purpose
    b, = sheet(q)
    formula = (b["measured_raw_mean_ns"] - b["overhead_mean_ns"] - b["irq_mean_ns"] - b["offcpu_mean_ns"]
               - b["switch_work_mean_ns"])  # the scheduler's work around s15's 26 switches
    assert formula < 0 and b["corrected_mean_ns"] == 0.0
    assert b["clamped_mean_ns"] == pytest.approx(-formula, abs=0.2)
    assert b["unaccounted_mean_ns"] == 0.0
    assert b["children_scaled_mean_ns"] == pytest.approx(38.4, abs=0.5)  # its own line, not a term
    parts = (b["corrected_mean_ns"] + b["overhead_mean_ns"] + b["irq_mean_ns"] + b["offcpu_mean_ns"]
             + b["switch_work_mean_ns"] - b["clamped_mean_ns"] + b["unaccounted_mean_ns"])
    assert parts == pytest.approx(b["measured_raw_mean_ns"], abs=0.3)
    from ftflame.correct.balance import attach
    sheet_text = "\n".join(text.balance_lines(attach(q)))
    assert "(children scaled down by)               0.038" in sheet_text
    assert re.search(r"\+ unaccounted\s+0\.000", sheet_text)


# ---- 4: ftflame diff says when a side seems cut by max_graph_depth ------------------
def test_4_depth_cut_is_detected_only_where_the_trace_shows_it():
    from conftest import fixture, profile_of
    from ftflame.model.depthcut import depth_cut

    cut = depth_cut(profile_of(fixture("k6.1/s09-depth3/trace.dat")))  # --max-graph-depth 3
    assert (cut.limit, cut.calls, cut.calls_above) == (3, 6981, 1551) and cut.share > 0.9
    assert depth_cut(profile_of(fixture("k6.1/s17-mixed-ops/trace.dat"))).limit == 8  # --max-graph-depth 8
    # full graphs, also shallow ones (a NULL procedure's graph is 3 levels deep), and root-only traces
    for rel in ("k6.1/s10-lost/trace.dat", "k6.1/s15-icount-calib/trace-dispatch-full.dat",
                "k6.1/s15-icount-calib/trace-full.dat", "k6.1/s15-icount-calib/trace-root.dat",
                "k6.12/s01-v3-write4k/trace.dat"):
        assert depth_cut(profile_of(fixture(rel))) is None, rel
    # the report says the same (its note was a guess from the depth alone, and
    # also named the 3-level NULL-procedure graph, which is not cut)
    from ftflame.report.common import report_notes

    assert any("seems cut at max_graph_depth 3" in n
               for n in report_notes(profile_of(fixture("k6.1/s09-depth3/trace.dat"))))
    assert not any("max_graph_depth" in n for n in report_notes(
        profile_of(fixture("k6.1/s15-icount-calib/trace-dispatch-full.dat"))))


def test_4_diff_warns_of_a_side_cut_by_max_graph_depth():
    from ftflame.diff import compare
    from ftflame.report import diff_html, diff_json, diff_text

    d = compare([fixture_path("k6.1/s10-lost/trace.dat")], [fixture_path("k6.1/s09-depth3/trace.dat")])
    cut = [w for w in d.warnings if "seems cut at max_graph_depth 3:" in w]
    assert len(cut) == 1 and cut[0].startswith(fixture_path("k6.1/s09-depth3/trace.dat") + " (after)")
    assert any(w.startswith("different graph depth: before no sign of a depth limit; after seems cut at "
                            "max_graph_depth 3") for w in d.warnings)
    flat = " ".join(line.strip() for line in diff_text.render(d).splitlines())
    assert "(after) seems cut at max_graph_depth 3" in flat
    assert cut[0] in json.loads(diff_json.render(d))["warnings"]
    assert "seems cut at max_graph_depth 3" in diff_html.render(d)
    # two full graphs: nothing said of depth
    d = compare([fixture_path("k6.1/s01-v3-write4k/trace.dat")], [fixture_path("k6.12/s01-v3-write4k/trace.dat")])
    assert not [w for w in d.warnings if "depth" in w]


def fixture_path(rel: str) -> str:
    from conftest import fixture

    return fixture(rel)


# ---- 5: s17's interrupt in a pop window is counted once, inside the call ----------
def test_5_s17_irq_in_pop_window_is_counted_once():
    """A timer interrupt taken in lock_sock_nested's pop window before its
    rettime (trace-cmd report: 304.100971-304.108984 s) is written at
    lock_sock_nested's depth, before its exit; lock_sock_nested's duration
    holds it. The builder moves it inside (it was also counted beside it,
    and tcp_sock_set_cork's self time was -393.6 us)."""
    from conftest import fixture, profile_of
    from ftflame.model.profile import NODE_IRQ_ROOT
    from helpers.invariants import negative_self_explained

    p = profile_of(fixture("k6.1/s17-mixed-ops/trace.dat"))
    assert negative_self_explained(p) == []
    cork = ["svc_process", "svc_send", "svc_tcp_sendto", "tcp_sock_set_cork"]
    r, = (k for k in range(p.nrows) if p.path(k) == cork)
    lock, = (k for k in p.children[r] if p.name(k) == "lock_sock_nested")
    # the interrupt's nodes stay where its events put them, beside lock_sock_nested
    irq = {p.name(k): int(p.col("incl")[k]) for k in p.children[r] if p.col("flags")[k] & NODE_IRQ_ROOT}
    assert irq == {"irq_enter_rcu": 30066, "__sysvec_apic_timer_interrupt": 366706, "irq_exit_rcu": 8306}
    held = sum(irq.values())
    # ...but its time is lock_sock_nested's: once in the caller's children
    assert int(p.col("unowned_child_incl")[r]) == held
    assert int(p.col("unowned_child_incl")[lock]) == -held
    assert int(p.col("excl_min")[r]) > 0  # was -393,596 ns: the irq twice
    children = sum(int(p.col("incl")[k]) for k in p.children[r]) - held
    assert int(p.col("incl")[r]) - children == int(p.col("excl")[r]) > 0
    # and its time and calls are among lock_sock_nested's irq figures
    roots = [k for k in p.children[r] if p.col("flags")[k] & NODE_IRQ_ROOT]
    assert int(p.col("irq")[lock]) >= held
    assert int(p.col("irq_calls")[lock]) >= sum(int(p.col("calls")[k] + p.col("desc")[k]) for k in roots)


# ---- 6: the HTML page of the largest fixture, corrected, well under 1 MB ------------
@pytest.mark.slow
def test_6_big_corrected_page_ships_its_flame_data_packed():
    from ftflame.report import html
    from helpers.htmlfix import BIG, corrected, load

    q = corrected(load(BIG), 700.0, 300.0)  # skips without the full corpus
    full = html.report_data(q)["flame"]
    shipped = html.page_flame(full)
    # the flame block alone: the page around it grew with the slowest calls'
    # trees and the sandwiches; the packing saved 98 KB of a 998 KB page
    saved = len(html.data_json(full)) - len(html.data_json(shipped))
    assert saved > 95_000, f"{saved:,} bytes saved"
    assert len(html.render(q).encode()) < 1_000_000
    # the packing keeps every figure: w exactly, the corrected widths and
    # percentiles to the ns the page shows (tests/browser/test_page_data_browser.py
    # checks the page's own unpacking)
    w = list(full["incl"])
    for i, v in shipped["w"]["except"]:
        w[i] = v
    assert w == [int(x) if x == int(x) else x for x in full["w"]]
    assert shipped["w"]["zero"] == [] and len(shipped["w"]["except"]) < 10
