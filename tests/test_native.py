"""The C extensions are named for what they do: the reader extension
(parse._core) only reads and builds, the JSON row formatter sits beside the
JSON renderer, the Profile's percentiles, groups and tree order and the
correction's tree passes beside the model, the allocator tuning apart; and
every folder of C is built and linted."""
from __future__ import annotations

import importlib
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# extension -> the functions it exports (its whole Python face)
EXTENSIONS = {
    "ftflame.parse._core": {"read_dat", "read_dat_builtin", "read_text_chunks", "build_events", "hist_lower",
                            "give_back_freed_memory",
                            "dat_decoder"},  # the fields a reader decodes (tests/test_record_decode.py)
    "ftflame.report._rowfmt": {"format_rows", "pack_rows", "nest_calls", "evented_json"},  # JSON, Perfetto, speedscope rows
    "ftflame._model": {"hist_group", "hist_percentiles", "tree_preorder", "irq_roots_up", "clamp_down", "bits_down_up",
                       "group_reduce"},
}


def test_each_extension_holds_only_its_own_functions():
    for name, functions in EXTENSIONS.items():
        mod = importlib.import_module(name)
        exported = {k for k, v in vars(mod).items() if callable(v) and not k.startswith("_")}
        assert exported == functions, name


def c_folders() -> set:
    """Folders of the repository holding C files of the package (not the
    benchmark's standalone program, not build products)."""
    skip = {".venv", "build", ".cache", ".git", "bench", "tests", "node_modules"}
    found = set()
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in skip]
        if any(f.endswith(".c") for f in files):
            found.add(os.path.relpath(top, ROOT))
    return found


def test_every_folder_of_c_is_built_and_linted():
    """The Makefile's NATIVE_DIRS (the build stamp, lint with -Werror) names
    every folder of C: a unit in a new folder cannot go unrebuilt or
    unlinted (setup.py builds the same folders: see the test above)."""
    makefile = open(os.path.join(ROOT, "Makefile"), encoding="utf-8").read()
    native_dirs = set(re.search(r"^NATIVE_DIRS\s*:=\s*(.*)$", makefile, re.M).group(1).split())
    assert native_dirs == c_folders()
