"""The C check `make lint` runs (tests/c_lint.py): each rule catches its
mistake in a small folder of C files, and our own C files pass."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
LINT = os.path.join(ROOT, "tests", "c_lint.py")
NATIVE_DIRS = ["parse/core", "report/native", "ftflame/native"]

GOOD = "/* a unit */\n#include \"a.h\"\n\nint a_one(int x)\n{\n\tif (x) {\n\t\treturn 1;\n\t} else {\n\t\treturn 2;\n\t}\n}\n"


def lint(folder, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, LINT, *args, str(folder)], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)


def folder_with(tmp_path, files: dict):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_clean_unit_passes(tmp_path):
    proc = lint(folder_with(tmp_path, {"a.c": GOOD, "a.h": "int a_one(int x);\n"}))
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("bad,says", [
    ("int a_one(int x)\n{\n    return x;\n}\n", "indented with spaces"),
    ("int a_one(int x)\n{\n\treturn x; \n}\n", "trailing whitespace"),
    ("int a_one(int x)\n{\n\treturn x; // why\n}\n", "// comment"),
    ("int a_one(int x)\n{\n\tif(x)\n\t\treturn 1;\n\treturn 0;\n}\n", "keyword and '('"),
    ("int a_one(int x) {\n\treturn x;\n}\n", "opening brace"),
    ("int a_one(int x)\n{\n\tif (x){\n\t\treturn 1;\n\t}\n\treturn 0;\n}\n", "no space in"),
    ("int a_one(int x)\n{\n\tif (x) {\n\t\treturn 1;\n\t}\n\telse {\n\t\treturn 0;\n\t}\n}\n", "'else' on separate"),
    ("int a_one(int x)\n{\n\treturn x" + " + x" * 40 + ";\n}\n", "columns"),
    ("int a_one(int x)\n{\n\treturn x;\n}", "no newline at the end"),
    ("int a_one(int x)\r\n{\r\n\treturn x;\r\n}\r\n", "carriage returns"),
])
def test_each_style_rule_catches_its_mistake(tmp_path, bad, says):
    proc = lint(folder_with(tmp_path, {"a.c": bad}), "--style")
    assert proc.returncode == 1 and says in proc.stderr, proc.stderr


def test_comments_and_strings_are_not_code(tmp_path):
    text = ('/* if(x){ see http://x // not code */\nconst char *a_s = "if(x){ // no";\n'
            'int a_one(int x)\n{\n\treturn x;\n}\n')
    proc = lint(folder_with(tmp_path, {"a.c": text}), "--style")
    assert proc.returncode == 0, proc.stderr


def test_a_unit_calling_back_into_its_caller_is_a_circle(tmp_path):
    """a.c calls b.c's function (declared in a.h, as calls.c's were in
    builder.h), and b.c includes a.h to call back: a circle."""
    proc = lint(folder_with(tmp_path, {
        "a.h": "int a_one(int x);\nint b_two(int x);\n",
        "a.c": '#include "a.h"\n\nint a_one(int x)\n{\n\treturn b_two(x);\n}\n',
        "b.c": '#include "a.h"\n\nint b_two(int x)\n{\n\treturn x ? a_one(x - 1) : 0;\n}\n',
    }), "--circles")
    assert proc.returncode == 1 and "a -> b -> a" in proc.stderr, proc.stderr


def test_a_unit_with_its_own_header_used_one_way_is_no_circle(tmp_path):
    proc = lint(folder_with(tmp_path, {
        "a.h": "int a_one(int x);\n",
        "a.c": '#include "a.h"\n#include "b.h"\n\nint a_one(int x)\n{\n\treturn b_two(x);\n}\n',
        "b.h": "int b_two(int x);\n",
        "b.c": '#include "b.h"\n\nint b_two(int x)\n{\n\treturn x;\n}\n',
    }), "--circles")
    assert proc.returncode == 0, proc.stderr


def test_our_c_files_keep_the_style_and_have_no_circle():
    proc = subprocess.run([sys.executable, LINT, *NATIVE_DIRS], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
