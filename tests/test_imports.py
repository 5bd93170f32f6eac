"""The package's imports: no import cycle among its modules, and no stage
reaches back up into the command line (docs/design.md "Layout")."""
from __future__ import annotations

import ast
import importlib.util
import os

import pytest

from conftest import ROOT

# the package's folders and the module name each stands for (pyproject's package-dir)
PACKAGES = {"ftflame": "ftflame", "parse": "ftflame.parse", "report": "ftflame.report"}


def _modules() -> dict:
    """Module name -> its source file, for every module of the package."""
    out = {}
    for folder, package in PACKAGES.items():
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, folder)):
            dirnames[:] = [d for d in dirnames if os.path.isfile(os.path.join(dirpath, d, "__init__.py"))]
            sub = os.path.relpath(dirpath, os.path.join(ROOT, folder))
            prefix = package if sub == "." else f"{package}.{sub.replace(os.sep, '.')}"
            for name in filenames:
                if name.endswith(".py"):
                    mod = prefix if name == "__init__.py" else f"{prefix}.{name[:-3]}"
                    out[mod] = os.path.join(dirpath, name)
    return out


def _is_module(name: str) -> bool:
    """`from package import name` names a module (the C core's _core
    included), not something defined in the package's __init__."""
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


def _imports(module: str, path: str, known: dict) -> set:
    """The package's modules that `module` imports, at any level of its code."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    is_package = path.endswith("__init__.py")
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join(parts + ([base] if base else []))
            names = [f"{base}.{a.name}" if _is_module(f"{base}.{a.name}") else base for a in node.names]
        else:
            continue
        found.update(n for n in names if n in known and n != module)
    return found


def test_no_import_cycle_in_the_package():
    known = _modules()
    graph = {m: _imports(m, p, known) for m, p in known.items()}
    assert graph["ftflame.cli"], "the walk found no imports: it is broken"
    # every module of the subpackages (model, correct, ...) is walked too
    assert {"ftflame.model.profile", "ftflame.correct.corrections"} <= set(graph)
    # the command line is the top: no stage reaches back up into it
    assert not sorted(m for m, deps in graph.items() if "ftflame.cli" in deps)
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                cycle = stack[stack.index(n):] + [n]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m)
