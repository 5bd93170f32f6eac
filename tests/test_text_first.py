"""What a reader sees first: the text report leads with its root calls'
latency (every trace, not only a dispatcher's), marks interrupt context in
every table, keeps names of up to 40 characters whole within 80 columns;
--help fits the terminal and names what the report writes; the progress
line fits the terminal."""
from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

from conftest import DATA, fixture, profile_of
from ftflame.cli import build_parser, correction_options
from ftflame.correct.operations import root_table
from ftflame.correct.stage import correct_for_report
from ftflame.model.profile import SAMPLE_GAP
from ftflame.parse import build_events
from ftflame.report import text
from ftflame.report.options import RenderOptions
from helpers import corpus
from helpers.events import load, parse_events

GOLDEN_TEXT = sorted(glob.glob(os.path.join(DATA, "*", "expected", "*.txt")))


def corrected(path: str):
    args = build_parser().parse_args(["report", path])
    return correct_for_report(profile_of(path), path, correction_options(args))


def nearest_rank(vals, q) -> float:
    """The q-th percentile by nearest rank, written again here."""
    v = sorted(vals)
    return float(v[max(-(-len(v) * q // 100) - 1, 0)])


@pytest.mark.parametrize("path", GOLDEN_TEXT, ids=os.path.basename)
def test_every_golden_text_report_fits_80_columns(path):
    with open(path) as f:
        long = [line for line in f.read().splitlines() if len(line) > 80]
    assert long == []


CURATED_DATS = corpus.files(corpus.CURATED, "*.dat")


@pytest.mark.parametrize("path", CURATED_DATS, ids=corpus.label)
def test_corrected_text_report_fits_80_columns(path):
    """tests/test_renderers.py checks the raw report; this, the corrected
    one (wider figures: N+G calls, the root table's corrected rows)."""
    out = text.render(corrected(path))
    assert [line for line in out.splitlines() if len(line) > 80] == []


TEXT_INPUTS = sorted(glob.glob(os.path.join(DATA, "text", "*.txt")))


@pytest.mark.parametrize("path", TEXT_INPUTS, ids=os.path.basename)
def test_text_inputs_report_within_80_columns(path):
    """The hand-made text traces, durations of seconds among them: a figure
    too wide for its column in us is written in ms, the line never longer."""
    for q in (profile_of(path), corrected(path)):
        out = text.render(q)
        assert [line for line in out.splitlines() if len(line) > 80] == []


def test_root_latency_of_seconds_in_ms():
    out = text.render(profile_of(os.path.join(DATA, "text", "units.txt")), RenderOptions(sections=("operations",)))
    assert out.startswith("Latency per root call (ms")
    row = next(line for line in out.splitlines() if line.startswith("outer "))
    assert row.split()[3] == "2,000.00"  # its one call: 2.000001 s


def test_goldens_are_there():
    assert len(GOLDEN_TEXT) > 40


def test_procedure_rooted_trace_leads_with_its_root_latency():
    """-g nfsd3_proc_write: the first table is the root calls' latency, raw
    and corrected, with the figures of the root calls themselves."""
    path = fixture("k6.1/s01-v3-write4k/trace.dat")
    p = corrected(path)
    out = text.render(p)
    body = out.split("\n\n", 1)[1]
    first_table = body[body.index("\n\n") + 2:] if body.startswith("Anomalies") else body
    assert first_table.startswith("Latency per root call"), first_table[:200]
    row = next(line for line in out.splitlines() if line.startswith("nfsd3_proc_write "))
    corr_row = out.splitlines()[out.splitlines().index(row) + 1]
    dur = p.scol("dur")
    clean = (p.scol("flags") & SAMPLE_GAP) == 0
    cd = p.corrected.sample_dur[clean]
    figures = row.split()[3:]  # after name, calls, share
    assert int(row.split()[1]) == len(dur)
    for tok, q in zip(figures, (50, 90, 99)):
        assert float(tok.replace(",", "")) == pytest.approx(nearest_rank(dur, q) / 1e3, abs=0.01)
    assert float(figures[3].replace(",", "")) == pytest.approx(dur.max() / 1e3, abs=0.01)
    assert corr_row.startswith("  corrected *")
    ctoks = corr_row.split()[4:]
    assert int(corr_row.split()[2]) == int(clean.sum())
    for tok, q in zip(ctoks, (50, 90, 99)):
        assert float(tok.replace(",", "")) == pytest.approx(nearest_rank(cd, q) / 1e3, abs=0.01)
    # the same figures as the Profile's root table (computed once, beside it)
    r, = [r for r in root_table(p) if r.root == "nfsd3_proc_write"]
    assert r.calls == len(dur) and r.corr["p99"] == nearest_rank(cd, 99)


def test_sections_operations_of_a_procedure_rooted_trace_is_not_empty():
    p = profile_of(fixture("k6.1/s01-v3-write4k/trace.dat"))
    out = text.render(p, RenderOptions(sections=("operations",)))
    assert out.startswith("Latency per root call") and "nfsd3_proc_write" in out


def test_a_small_root_is_summed_up_not_listed():
    """A lost-event gap leaves dozens of one-call roots: one line says them."""
    out = text.render(profile_of(os.path.join(DATA, "sample", "trace.dat")),
                      RenderOptions(sections=("operations",)))
    assert "more root functions" in out and len(out.splitlines()) < 20


def test_irq_context_is_marked_in_every_table():
    p = load("many-calls")
    out = text.render(p)
    funcs = out.split("Functions by", 1)[1].split("\n\n")[1]
    assert "__sysvec_apic_timer_interrupt [irq]" in funcs and "hrtimer_interrupt [irq]" in funcs
    assert "svc_process [irq]" not in funcs
    hot = out.split("Hot functions by", 1)[1].split("\n\n")[1]
    assert "__sysvec_apic_timer_interrupt [irq]" in hot
    paths = out.split("Hot call paths by", 1)[1].split("\n\n")[1]
    assert "_dispatch > __sysvec_apic_timer_interrupt [irq]" in paths
    assert "svc_process > nfsd_dispatch\n" in paths + "\n"
    assert "[irq]: every call in interrupt context" in " ".join(out.split())


def test_root_calls_in_interrupt_context_have_their_own_row():
    """svc_process entered by a task twice and from an interrupt once: a
    handler's latency is not the task's, so two rows, the irq one marked."""
    out = text.render(load("irq-root-both-ways"), RenderOptions(sections=("operations",)))
    rows = {line.split()[0] + (" [irq]" if "[irq]" in line else ""): line.split()
            for line in out.splitlines() if line.startswith("svc_process")}
    assert rows["svc_process"][1] == "2" and rows["svc_process [irq]"][2] == "1"
    assert rows["svc_process [irq]"][-1] == "0.500"  # its one call's duration, us


def test_irq_context_is_marked_in_the_raw_function_table():
    out = text.render(profile_of(fixture("k6.1/s01-v3-write4k/trace.dat")))
    funcs = out.split("Functions by", 1)[1].split("\n\n")[1]
    assert "try_to_wake_up [irq]" in funcs


NAME40 = "nfs4_preprocess_stateid_op_with_40_chars"


def test_names_of_40_characters_are_whole_within_80_columns():
    assert len(NAME40) == 40
    events = "\n".join([
        f"entry 0 100 {NAME40} 0", "entry 0 100 child 1",
        "exit 0 100 child 1 1000 9000", f"exit 0 100 {NAME40} 0 500 20000"])
    p = build_events(parse_events(events), source="names.events")
    for q in (p, corrected_events(p)):
        out = text.render(q)
        assert all(len(line) <= 80 for line in out.splitlines())
        funcs = out.split("Functions by", 1)[1].split("\n\n")[1]
        row = next(line for line in funcs.splitlines() if NAME40 in line)
        assert row.split()[0] == "1", row  # on its row, with its figures
        tree = out.split("Call tree", 1)[1]
        assert f"{NAME40}\n" in tree and "name cut" not in tree


def corrected_events(p):
    from ftflame.correct.corrections import correct
    from ftflame.model.profile import Calibration

    return correct(p, Calibration(150.0, 90.0, "command line"))


def test_calls_and_clean_calls_share_one_column():
    """Calls* repeated Calls; now one column, N+G where gap calls were left out."""
    # s10-lost: calls that span its lost-event gaps are left out of the corrected figures
    out = text.render(corrected(fixture("k6.1/s10-lost/trace.dat")))
    funcs = out.split("Functions by", 1)[1].split("\n\n")[1]
    assert "Calls*" not in funcs
    assert any(line.split()[0] == "2+3" for line in funcs.splitlines()[2:])
    assert "N+G: N clean calls" in " ".join(out.split())


def test_header_keeps_each_fact_on_one_line():
    """A header line too long for 80 columns breaks between facts, never
    inside one ("trace-cmd" above "3.1.6")."""
    import dataclasses

    p = profile_of(fixture("k6.1/s01-v3-write4k/trace.dat"))
    p = dataclasses.replace(p, trace=dataclasses.replace(
        p.trace, kernel="Linux (none) 6.12.12-cloud-amd64 x86_64", cpus=128))
    head = text.header(p)
    assert not any(line.startswith("3.1.6") for line in head)
    assert any("trace-cmd 3.1.6" in line for line in head)


def test_text_trace_without_calibration_does_not_blame_the_calibration():
    path = fixture("k6.1/s11-perf-ftrace/perf-ftrace.txt.gz")
    out = " ".join(text.render(corrected(path), RenderOptions(sections=("header",))).split())
    assert "hook cost not subtracted" in out
    assert "calibration overestimates" not in out
    assert "paths unreliable" not in out


def test_accounted_note_said_once_for_every_root():
    from test_golden import profile as golden_profile

    p = golden_profile("operations", "corr")
    assert len(p.balance) > 1
    out = text.render(p, RenderOptions(sections=("balance",)))
    assert " ".join(out.split()).count("no independent total given") == 1


# ---- first contact: README, --help and the progress line --------------------

def test_readme_starts_with_the_two_commands_and_shows_the_real_report():
    root = os.path.dirname(os.path.dirname(DATA))
    readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    lines = readme.splitlines()
    assert lines[3].startswith("make demo ") and lines[4].startswith("make test ")
    # the text report pasted there is what make demo writes (every line but the elisions)
    pasted = readme.split("Its first screen:\n\n```\n", 1)[1].split("```", 1)[0].splitlines()
    path = os.path.join(DATA, "sample", "trace.dat")
    args = build_parser().parse_args(["report", path])
    report = text.render(correct_for_report(profile_of(path), path, correction_options(args))).splitlines()
    shown = [line for line in pasted if line.strip() and "..." not in line and not line.startswith("ftflame report:")]
    assert len(shown) > 20
    assert [line for line in shown if line not in report] == []
    # the Use block runs ftflame where make demo put it
    use = readme.split("## Use", 1)[1].split("```", 2)[1]
    assert ". .venv/bin/activate" in use.splitlines()[1]



def help_text(*args, columns=80) -> str:
    env = dict(os.environ, COLUMNS=str(columns))
    r = subprocess.run([sys.executable, "-m", "ftflame.cli", *args, "--help"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("columns", [80, 100])
@pytest.mark.parametrize("command", [[], ["report"], ["calibrate"]])
def test_help_fits_the_terminal(command, columns):
    out = help_text(*command, columns=columns)
    long = [line for line in out.splitlines() if len(line) > columns]
    assert long == []


def test_help_names_every_section_and_output():
    from ftflame.report.text import SECTIONS

    out = " ".join(help_text("report").split())
    listed = out.split("--sections A,B,...", 1)[1].split("(default: all):", 1)[1]
    for name in SECTIONS:
        assert name in listed, name
    top = " ".join(help_text().split())
    for fmt in ("text", "JSON", "HTML", "SVG", "folded", "speedscope"):
        assert fmt in top.split("report", 1)[1].split("calibrate")[0], fmt


def test_progress_line_fits_the_terminal(monkeypatch, capsys):
    from ftflame import output

    monkeypatch.setenv("COLUMNS", "80")
    label = "reading /very/long/path/" + "x" * 120 + "/trace.dat"
    line = output.Progress._fit(label, "[" + "#" * 24 + "] ~ 50% ", "12.3 M events (4.5 M/s)")
    assert len(line) < 80 and line.endswith("(4.5 M/s)") and "~ 50%" in line
    assert line.startswith("...") and line.split(" [")[0].endswith("/trace.dat")
    short = output.Progress._fit("reading t.dat", "[##] ~ 50% ", "1.0 M events (1.0 M/s)")
    assert short == "reading t.dat [##] ~ 50% 1.0 M events (1.0 M/s)"
    monkeypatch.setenv("COLUMNS", "40")
    assert len(output.Progress._fit(label, "[" + "#" * 24 + "] ~ 50% ", "12.3 M events (4.5 M/s)")) < 40


def test_make_help_aligns_its_targets():
    root = os.path.dirname(os.path.dirname(DATA))
    r = subprocess.run(["make", "-s", "help"], cwd=root, capture_output=True, text=True, timeout=60)
    lines = r.stdout.splitlines()
    rows = [line for line in lines if line.startswith("  ")]
    assert len(rows) > 10 and all(len(line) <= 80 for line in lines)
    # every description (and its continuation) starts in one column
    assert {len(line) - len(line[7:].split(" ", 1)[1].lstrip()) if line.startswith("  make ") else
            len(line) - len(line.lstrip()) for line in rows} == {27}
