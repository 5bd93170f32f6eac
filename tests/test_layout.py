"""The stages are top-level folders (collect, parse, report, templates),
installed as one package: ftflame.collect, ftflame.parse... (pyproject.toml).
From the tests they are importable under the package's names only: a folder
importable under its bare name as well would be a second copy of its
modules, with classes of their own, and a test importing `report.text`
would check another RenderOptions than the one `ftflame.report.text` reads."""
from __future__ import annotations

import ast
import collections
import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
STAGES = ("collect", "parse", "report", "templates")


@pytest.mark.parametrize("name", STAGES)
def test_a_stage_folder_is_not_importable_under_its_bare_name(name):
    assert (REPO / name / "__init__.py").is_file()
    spec = importlib.util.find_spec(name)
    assert spec is None, f"`import {name}` finds {spec.origin}: import ftflame.{name}"
    assert importlib.util.find_spec(f"ftflame.{name}") is not None


def bare_stage_imports(root: Path) -> list:
    """Every `import STAGE...` or `from STAGE... import` in root's Python files."""
    found = []
    for f in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            found += [f"{f.relative_to(REPO)}:{node.lineno}: {n}" for n in names if n.split(".")[0] in STAGES]
    return found


def test_tests_import_the_stages_through_the_package():
    found = bare_stage_imports(REPO / "tests") + bare_stage_imports(REPO / "bench")
    assert not found, "import them as ftflame.STAGE:\n" + "\n".join(found)


def test_make_clean_removes_every_built_extension():
    """Each extension setup.py builds lands beside its package's code (make
    build, in place); make clean removes every one of them."""
    import fnmatch
    import importlib
    import shlex
    import subprocess

    built = [Path(importlib.import_module(m).__file__).resolve().relative_to(REPO).as_posix()
             for m in ("ftflame.parse._core", "ftflame.report._rowfmt", "ftflame._model")]
    setup_py = (REPO / "setup.py").read_text()
    assert all(f'"{m}"' in setup_py for m in ("ftflame.parse._core", "ftflame.report._rowfmt", "ftflame._model"))
    assert setup_py.count("extension(\"ftflame.") == len(built), "an extension setup.py builds is not listed here"
    clean = subprocess.run(["make", "-n", "clean"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    rm = next(shlex.split(line) for line in clean.splitlines() if line.startswith("rm "))
    missed = [f for f in built if not any(fnmatch.fnmatch(f, pattern) for pattern in rm[1:])]
    assert not missed, f"make clean leaves {missed}"


PRODUCTION = ("ftflame", "parse", "report", "collect", "templates")


def used_by_tests_only(root: Path) -> list:
    """The public top-level functions and classes of the production modules
    that no production code (nor bench/) names beyond their definition: a
    test's helper living in production belongs in tests/helpers."""
    sources = {p: p.read_text() for d in PRODUCTION for p in sorted((root / d).rglob("*.py"))}
    users = "\n".join(sources.values()) + "\n".join(p.read_text() for p in sorted((root / "bench").rglob("*.py")))
    named = collections.Counter(re.findall(r"\w+", users))
    found = []
    for path, text in sources.items():
        for node in ast.parse(text, str(path)).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                if named[node.name] <= 1:
                    found.append(f"{path.relative_to(root)}: {node.name}")
    return found


def test_production_holds_no_helper_of_the_tests_alone():
    found = used_by_tests_only(REPO)
    assert not found, "used by no production code (a test's helper? move it to tests/helpers):\n" + "\n".join(found)
