"""C style and include-circle check for our C files (`make lint`).

    python tests/c_lint.py [--style | --circles] DIR...
        (each DIR: a folder of .c/.h files; both checks unless one is named)

Style: rules the code follows (the Linux kernel's, as checkpatch has them),
checked line by line so that nothing is reformatted wholesale:
  - indentation with tabs: leading whitespace is tabs, then at most 7 spaces
    of alignment (spaces alone, or more of them, only before a comment's
    continuing '*');
  - no trailing whitespace, no carriage return, a newline at the end;
  - lines of at most MAX_COLUMNS columns (a tab counts to the next multiple of 8);
  - no // comments;
  - a space between if/for/while/switch and its '(';
  - braces: a function's opening brace alone in column 0 (not after its
    signature), '} else' on one line, no '){'.

Circles: every C file belongs to a unit, named by its base name (builder.c
and builder.h are the unit "builder"). Unit A depends on unit B when a file
of A includes B's header ("b.h", quoted includes only), or when A's .c files
call a function that B's .c file defines (not static). A circle of such
dependencies (builder.c calling into calls.c, calls.c calling back into
builder.c) fails: a unit that another one calls into must not call back.
Files named fuzz_* (libFuzzer harnesses, not in the extensions) are left out.
"""
from __future__ import annotations

import os
import re
import sys

MAX_COLUMNS = 120
KEYWORD_PAREN = re.compile(r"\b(if|for|while|switch)\(")
FUNC_SIGNATURE_BRACE = re.compile(r"^[A-Za-z_][\w \*]*\b\w+\(.*\)\s*\{\s*$")
QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# a function defined at file scope: its name and '(' on the line that starts
# in column 0, the body's brace on a following line
FUNC_DEF = re.compile(r"^(?!static\b)(?![ \t#/*}])[A-Za-z_][\w \*]*?\b(\w+)\([^;]*$", re.M)


def columns(line: str) -> int:
    n = 0
    for ch in line:
        n = (n // 8 + 1) * 8 if ch == "\t" else n + 1
    return n


def strip_comments_and_strings(text: str) -> str:
    """The code with comments and string/char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def style_problems(path: str, text: str) -> list[str]:
    problems = []
    name = path
    if "\r" in text:
        problems.append(f"{name}: carriage returns (CRLF line ends)")
    if text and not text.endswith("\n"):
        problems.append(f"{name}: no newline at the end")
    code_lines = strip_comments_and_strings(text).split("\n")
    for no, line in enumerate(text.split("\n"), 1):
        code = code_lines[no - 1] if no <= len(code_lines) else ""
        where = f"{name}:{no}"
        if line != line.rstrip():
            problems.append(f"{where}: trailing whitespace")
        lead = re.match(r"[ \t]*", line).group(0)
        if " \t" in lead:
            problems.append(f"{where}: a space before a tab in the indentation")
        elif re.match(r" +[^ *]", line) or re.match(r"\t* {8,}[^ *]", line):
            problems.append(f"{where}: indented with spaces, not tabs")
        if columns(line) > MAX_COLUMNS:
            problems.append(f"{where}: {columns(line)} columns (at most {MAX_COLUMNS})")
        if "//" in code:
            problems.append(f"{where}: a // comment (use /* */)")
        if KEYWORD_PAREN.search(code):
            problems.append(f"{where}: no space between the keyword and '('")
        if re.search(r"\)\{\s*$", code):
            problems.append(f"{where}: no space in '){{'")
        if re.match(r"^\s*else\b", code) and no > 1 and code_lines[no - 2].strip() == "}":
            problems.append(f"{where}: '}}' and 'else' on separate lines")
        if FUNC_SIGNATURE_BRACE.match(code) and not re.match(r"^(struct|enum|union|typedef|static const)\b", code) \
                and "=" not in code:
            problems.append(f"{where}: a function's opening brace goes on a line of its own")
    return problems


def units(dirs: list[str]) -> dict[str, list[str]]:
    """{unit: [its files]} over the folders (fuzz_* left out)."""
    out: dict[str, list[str]] = {}
    for d in dirs:
        for f in sorted(os.listdir(d)):
            if f.endswith((".c", ".h")) and not f.startswith("fuzz_"):
                out.setdefault(os.path.join(d, f[:-2]), []).append(os.path.join(d, f))
    return out


def dependencies(dirs: list[str]) -> dict[str, set[str]]:
    """{unit: units it depends on} (module docstring: what counts)."""
    files = units(dirs)
    code = {}
    for fs in files.values():
        for f in fs:
            with open(f) as fh:
                code[f] = fh.read()
    defines: dict[str, str] = {}  # function name -> unit defining it
    for unit, fs in files.items():
        for f in fs:
            if f.endswith(".c"):
                for m in FUNC_DEF.finditer(strip_comments_and_strings(code[f])):
                    defines[m.group(1)] = unit
    deps: dict[str, set[str]] = {u: set() for u in files}
    for unit, fs in files.items():
        folder = os.path.dirname(unit)
        for f in fs:
            for inc in QUOTED_INCLUDE.findall(code[f]):
                other = os.path.join(folder, inc[:-2]) if inc.endswith(".h") else None
                if other in files and other != unit:
                    deps[unit].add(other)
            if f.endswith(".c"):
                for name in set(re.findall(r"\b(\w+)\s*\(", strip_comments_and_strings(code[f]))):
                    other = defines.get(name)
                    if other and other != unit:
                        deps[unit].add(other)
    return deps


def circles(deps: dict[str, set[str]]) -> list[list[str]]:
    """The dependency circles, each once, as the units along it."""
    found, seen = [], set()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(u: str) -> None:
        state[u] = 1
        stack.append(u)
        for v in sorted(deps[u]):
            if state.get(v) == 1:
                cycle = stack[stack.index(v):]
                key = frozenset(cycle)
                if key not in seen:
                    seen.add(key)
                    found.append(cycle + [v])
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = 2

    for u in sorted(deps):
        if u not in state:
            visit(u)
    return found


def main(dirs: list[str], style: bool = True, circle: bool = True) -> int:
    problems = []
    for d in dirs if style else ():
        for f in sorted(os.listdir(d)):
            if f.endswith((".c", ".h")):
                path = os.path.join(d, f)
                with open(path, newline="") as fh:
                    problems += style_problems(path, fh.read())
    for cycle in circles(dependencies(dirs)) if circle else ():
        problems.append("a circle of C units (each includes the next's header or calls into it): " +
                        " -> ".join(os.path.basename(u) for u in cycle))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"c_lint: {len(problems)} problems (rules: tests/c_lint.py)", file=sys.stderr)
        return 1
    what = " and ".join(w for w, on in (("style", style), ("include circles", circle)) if on)
    print(f"c_lint: {' '.join(dirs)}: {what} checked")
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    only = args.pop(0) if args and args[0] in ("--style", "--circles") else None
    if not args:
        print("usage: c_lint.py [--style | --circles] DIR...", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(args, style=only != "--circles", circle=only != "--style"))
