"""State is kept in types, not in sentences: no production code decides
anything by looking inside a prose field (docs/design.md "State in types").

The prose fields are the sentences the model carries for the outputs to
print: a warning's text, the correction's notes and its off-CPU reason.
What a caller branches on has a type of its own (OffCpu, WarningKind,
corrections.Summary); a substring test on a sentence breaks silently the
day its words change."""
from __future__ import annotations

import ast
import glob
import os

from conftest import ROOT as REPO

# the fields that hold sentences (TraceWarning.text, Corrected.notes,
# Corrected.offcpu_reason, Profile.warnings, Corrected.offcpu as it was)
PROSE_FIELDS = frozenset(("offcpu", "offcpu_reason", "notes", "warnings", "text"))
# the fields' element-wise prose: the items of these sequences are sentences
PROSE_SEQUENCES = frozenset(("notes", "warnings"))
STRING_TESTS = frozenset(("startswith", "endswith", "find", "rfind", "index", "rindex", "count", "split",
                          "partition", "lower", "upper"))
PRODUCTION = ("ftflame", "parse", "report", "collect")


def _prose(node: ast.AST, names: frozenset) -> bool:
    """node reads a prose field (x.offcpu, ...) or a name bound to one item
    of a prose sequence (w in `for w in p.warnings`)."""
    return (isinstance(node, ast.Attribute) and node.attr in PROSE_FIELDS) or \
        (isinstance(node, ast.Name) and node.id in names)


def _item_names(tree: ast.AST) -> frozenset:
    """Names bound to the items of a prose sequence, anywhere in tree."""
    out = set()
    for n in ast.walk(tree):
        loops = [(n.target, n.iter)] if isinstance(n, (ast.For, ast.comprehension)) else []
        for target, it in loops:
            seq = it.attr if isinstance(it, ast.Attribute) else it.id if isinstance(it, ast.Name) else None
            if seq in PROSE_SEQUENCES and isinstance(target, ast.Name):
                out.add(target.id)
    return frozenset(out)


def substring_tests(source: str) -> list:
    """(line, what) of each substring test on a prose field in source."""
    tree = ast.parse(source)
    names = _item_names(tree)
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare):
            for op, right in zip(n.ops, n.comparators):
                if isinstance(op, (ast.In, ast.NotIn)) and _prose(right, names) and \
                        isinstance(n.left, ast.Constant) and isinstance(n.left.value, str):
                    found.append((n.lineno, f"{n.left.value!r} in {ast.unparse(right)}"))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in STRING_TESTS:
            recv = n.func.value
            if isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name) and recv.func.id == "str" and recv.args:
                recv = recv.args[0]  # str(c.offcpu).startswith(...)
            if _prose(recv, names):
                found.append((n.lineno, ast.unparse(n)))
    return found


def test_no_substring_test_on_a_prose_field():
    """Every Python file of ftflame's stages: none tests a warning, a note
    or the off-CPU reason for words (a test on the words of one sentence is
    how the off-CPU mode and a warning's loudness were once decided)."""
    bad = []
    for top in PRODUCTION:
        for path in sorted(glob.glob(os.path.join(REPO, top, "**", "*.py"), recursive=True)):
            with open(path, encoding="utf-8") as f:
                for line, what in substring_tests(f.read()):
                    bad.append(f"{os.path.relpath(path, REPO)}:{line}: {what}")
    assert not bad, "substring tests on prose fields (branch on a type instead):\n" + "\n".join(bad)


def test_the_check_sees_each_form():
    """The forms the check must catch, each in one line of code."""
    for code in ('x = "asked" in c.offcpu',
                 'x = str(c.offcpu).startswith("kept (asked")',
                 'x = p.corrected.offcpu.startswith("removed")',
                 'x = [w for w in p.warnings if w.startswith("PART")]',
                 'x = [w for w in warnings if w.startswith(NOT_UNDERSTOOD)]',
                 'x = any("gap" in n for n in c.notes)',
                 'x = w.text.startswith("balance")'):
        assert substring_tests(code), code
    for code in ('x = c.offcpu is OffCpu.REMOVED',
                 'x = [w for w in p.warnings if w.kind is WarningKind.NOT_UNDERSTOOD]',
                 'x = "abc".startswith("a")'):
        assert not substring_tests(code), code
