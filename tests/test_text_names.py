"""Issue 11 item 7: a name is never lost in the text report's call tree;
a name cut to fit and a clamped figure have distinct, explained marks."""
from __future__ import annotations

from ftflame.correct.corrections import correct
from ftflame.model.profile import Calibration
from ftflame.parse import build_events
from ftflame.report import text
from helpers.events import parse_events

CUT = "..."  # report.text.CUT

DEPTH = 30


def deep_chain() -> str:
    """One call chain DEPTH deep, every function with a long name, every
    call 1 us shorter than its parent's (so corrected self times clamp)."""
    names = [f"f{d:02d}_function_with_a_long_name_in_a_chain" for d in range(DEPTH)]
    lines = [f"entry 0 100 {n} {d}" for d, n in enumerate(names)]
    for d in reversed(range(DEPTH)):
        lines.append(f"exit 0 100 {names[d]} {d} {10_000 + d * 100} {200_000 - d * 100}")
    return "\n".join(lines)


def tree_rows(report: str) -> list:
    """The label column of the call tree's rows (after the last number)."""
    rows = report.split("Call tree", 1)[1].splitlines()
    return [r for r in rows if r[:9].strip().replace(",", "").isdigit()]


def check_names_kept(report: str, marks: str):
    rows = tree_rows(report)
    assert len(rows) == DEPTH
    for d, row in enumerate(rows):
        # every row shows the start of its name, whatever the depth
        assert f"f{d:02d}_function_with" in row, row
        assert not row.rstrip().endswith("~"), row
    legend = " ".join(report.split())
    assert f"{CUT}: name cut to fit" in legend
    assert "[+N]: N more levels of the tree" in legend
    return rows


def test_raw_tree_keeps_every_name():
    p = build_events(parse_events(deep_chain()), source="deep.events")
    check_names_kept(text.render(p), marks="")


def test_corrected_tree_clamp_and_cut_marks_are_distinct():
    p = correct(build_events(parse_events(deep_chain()), source="deep.events"),
                Calibration(200.0, 50.0, "command line"))
    out = text.render(p)
    rows = check_names_kept(out, marks="~")
    # clamped rows carry "~" in the flag column, before the label, only there:
    # Calls, Avg, Avg*, Self* (7, 9, 9, 9 wide) then the flag
    flag = 7 + 1 + 9 + 1 + 9 + 1 + 9 + 1
    clamped = [r for r in rows if r[flag] == "~"]
    assert clamped, "the chain's corrected self times should clamp"
    assert all("~" not in r[flag + 1:] for r in rows)
    assert "~: clamped at zero self time" in " ".join(out.split())


def test_tree_label_marks():
    from ftflame.report.text import CUT as cut
    from ftflame.report.text import tree_label
    assert cut == CUT
    marks = set()
    assert tree_label("| " * 3 + "`-", "short", 40, marks) == "| | | `-short"
    assert marks == set()
    deep = tree_label("| " * 25 + "`-", "a_rather_long_function_name_here", 39, marks, " [irq]")
    assert len(deep) <= 39 and deep.startswith("[+") and deep.endswith(CUT + " [irq]")
    assert "a_rather_long" in deep and marks == {"deep", "cut"}
