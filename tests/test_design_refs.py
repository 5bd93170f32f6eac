"""The repository is read without anything beside it: code, comments and
docs cite the design in docs/ (design.md, trace-formats.md), never design
files that live outside the repository (the original plan and the reference
notes it was written from); the files, modules and extensions docs/design.md
names are the code's."""
from __future__ import annotations

import fnmatch
import importlib
import importlib.util
import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Design files outside the repository, as code and docs cited them. Built
# from parts so that this file does not match itself.
OUTSIDE = re.compile("|".join((
    r"\bDESIGN" + r"\.md\b",                       # the plan (docs/design.md is lowercase)
    r"\breference" + r"/[\w.-]+\.md\b",            # the reference notes (trace formats, peers)
    r"\b(?:peers|code-style-models)" + r"\.md\b",
    r"\bshared" + r"/(?:reference|DESIGN)",
)))

# Not the repository's text: build products, environments, trace data.
SKIP_DIRS = {".git", ".venv", ".cache", "build", "out", "node_modules", "__pycache__", ".pytest_cache"}
SKIP_PATHS = {Path("tests", "data"), Path("CHANGELOG.md")}  # trace inputs; history may name old files
MAX_BYTES = 4 << 20


def text_files(root: Path):
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        dirnames[:] = [d for d in dirnames
                       if d not in SKIP_DIRS and not d.endswith(".egg-info") and rel_dir / d not in SKIP_PATHS]
        for name in filenames:
            path = Path(dirpath, name)
            if rel_dir / name in SKIP_PATHS or path.stat().st_size > MAX_BYTES:
                continue
            data = path.read_bytes()
            if b"\0" in data[:8192]:  # binary: the built extension, images
                continue
            yield path.relative_to(root), data.decode("utf-8", "replace")


def references_outside(root: Path) -> list:
    return [f"{rel}:{n}: {line.strip()}"
            for rel, text in text_files(root)
            for n, line in enumerate(text.splitlines(), 1) if OUTSIDE.search(line)]


def test_no_reference_to_design_files_outside_the_repository():
    found = references_outside(REPO)
    assert not found, "cite docs/design.md or docs/trace-formats.md instead:\n" + "\n".join(found)


def test_the_check_finds_such_references(tmp_path):
    (tmp_path / "a.py").write_text("# see DESIGN" + ".md, overhead model\nx = 1\n")
    (tmp_path / "b.c").write_text("/* reference" + "/trace-formats.md section 2 */\n")
    (tmp_path / "c.md").write_text("[design](docs/design.md) and [formats](docs/trace-formats.md)\n")
    assert [f.split(":")[0] for f in sorted(references_outside(tmp_path))] == ["a.py", "b.c"]


def test_the_design_docs_are_in_the_repository():
    for name in ("design.md", "trace-formats.md"):
        assert (REPO / "docs" / name).is_file()


# A repository file named in code, comments or docs: a path under one of the
# project's folders, ending in one of its source suffixes.
NAMED_FILE = re.compile(
    r"(?<![\w/.-])((?:ftflame|parse|report|collect|templates|tests|docs|bench)/[\w/.-]*[\w-]\.(?:py|c|h|sh|md|js|html))\b")


def named_files_missing(root: Path) -> list:
    """Every 'folder/file.ext' the repository's text names that does not
    exist: a comment that still points at a file's old place after a move."""
    missing = []
    for rel, text in text_files(root):
        if rel.parts[:2] == ("tests", "artifacts"):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for name in NAMED_FILE.findall(line):
                if "*" not in name and not (root / name).exists():
                    missing.append(f"{rel}:{n}: {name}")
    return missing


def test_files_named_in_the_repository_exist():
    found = named_files_missing(REPO)
    assert not found, "files named but not in the repository (moved? name the new place):\n" + "\n".join(found)


# docs/design.md describes the code as it is: every file it names, by its path
# or by its bare name (`builder.h`, the `dat_*.c` units), is in the
# repository; every module it names imports; the C extensions it lists are the
# ones setup.py builds, from the C units it lists.
DESIGN = REPO / "docs" / "design.md"
BARE_FILE = re.compile(r"(?<![\w/.*-])([\w*-]+\.(?:py|c|h|sh|md|js|css))\b")
NOT_OURS = {"Python.h"}  # CPython's
MODULE = re.compile(r"\bftflame(?:\.[A-Za-z_]\w*)+")
EXTENSION_ROW = re.compile(r"^\| `(ftflame\.[\w.]+)` \| `([\w/]+)/`: (.*?) \|", re.M)
NUMBERS = ("one", "two", "three", "four", "five", "six")


def design_names_missing(root: Path, doc: Path) -> list:
    """The file names doc gives (bare or in a path) that no file of root has."""
    have = {Path(rel).name for rel, _ in text_files(root)} | {p.name for p in root.rglob("*.so")}
    names = set(BARE_FILE.findall(doc.read_text())) - NOT_OURS
    return sorted(n for n in names if not any(fnmatch.fnmatch(h, n) for h in have))


def test_every_file_design_md_names_exists():
    missing = design_names_missing(REPO, DESIGN)
    assert not missing, f"docs/design.md names files the repository does not have: {missing}"


def test_the_design_check_finds_a_file_that_is_gone(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "d.md").write_text("`here.c` and `dat_*.c` beside `gone.h` and Python.h\n")
    (tmp_path / "here.c").write_text("int x;\n")
    (tmp_path / "dat_a.c").write_text("int y;\n")
    assert design_names_missing(tmp_path, tmp_path / "docs" / "d.md") == ["gone.h"]


def test_every_module_design_md_names_imports():
    for name in sorted(set(MODULE.findall(DESIGN.read_text()))):
        assert importlib.util.find_spec(name) is not None, f"docs/design.md names {name}, which is no module"


def test_the_extensions_design_md_lists_are_the_ones_built():
    text = DESIGN.read_text()
    rows = EXTENSION_ROW.findall(text)
    built = re.findall(r'extension\("(ftflame\.[\w.]+)"', (REPO / "setup.py").read_text())
    assert sorted(name for name, _, _ in rows) == sorted(built)
    count = re.search(r"(\w+) CPython extensions", text).group(1).lower()
    assert NUMBERS.index(count) + 1 == len(built), f"docs/design.md says {count} extensions, setup.py builds {len(built)}"
    for name, folder, sources in rows:
        importlib.import_module(name)  # built (make build)
        listed = re.findall(r"`([\w*]+\.c)`", sources)
        units = sorted(p.name for p in (REPO / folder).glob("*.c") if not p.name.startswith("fuzz_"))
        assert all(fnmatch.filter(units, f) for f in listed), f"{name}: {listed} against {folder}: {units}"
        assert [u for u in units if not any(fnmatch.fnmatch(u, f) for f in listed)] == [], \
            f"{name}: docs/design.md leaves out C units of {folder}"
