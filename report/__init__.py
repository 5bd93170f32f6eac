"""ftflame.report: one renderer per output format, all reading one Profile.

Each renderer is a function ``render(profile, opts) -> str`` in a module of
this package, registered in RENDERERS with the file extensions that select
it; a module may also have ``write(profile, opts, binary_file)``, which
streams the same text into a file (the CLI uses it when there is one).
`ftflame diff`'s renderers, ``render(diff, opts)`` of an ftflame.diff Diff,
are registered the same way in DIFF_RENDERERS. Modules are imported on first
use: choosing a format costs nothing, and the CLI imports the renderer while
the C core reads the trace.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from ftflame.model.errors import InputError


@dataclass(frozen=True)
class Renderer:
    name: str
    module: str  # the module of this package whose render() it is
    extensions: tuple
    description: str

    @property
    def render(self) -> Callable:
        return importlib.import_module(f"{__name__}.{self.module}").render

    @property
    def write(self) -> Callable:
        """write(profile, opts, binary_file): the module's own, or render()
        encoded as UTF-8."""
        module = importlib.import_module(f"{__name__}.{self.module}")
        if hasattr(module, "write"):
            return module.write
        return lambda profile, opts, f: f.write(module.render(profile, opts).encode("utf-8"))

    @property
    def write_calls(self) -> Callable:
        """write_calls(profile, call_stream, binary_file), of a STREAMED format."""
        return importlib.import_module(f"{__name__}.{self.module}").write_calls


RENDERERS: dict[str, Renderer] = {}  # ftflame report's formats
DIFF_RENDERERS: dict[str, Renderer] = {}  # ftflame diff's


def register(r: Renderer, registry: dict[str, Renderer] | None = None) -> None:
    (RENDERERS if registry is None else registry)[r.name] = r


register(Renderer("txt", "text", (".txt",), "plain text for mail: function table and call tree"))
register(Renderer("json", "jsonout", (".json",), 'machine-readable, schema "ftflame/1"'))
register(Renderer("folded", "folded", (".folded", ".collapsed"),
                  "FlameGraph folded stacks, exclusive ns per path (flamegraph.pl, inferno)"))
register(Renderer("html", "html", (".html", ".htm"),
                  "self-contained interactive report: flame graph, tables, latency over time"))
register(Renderer("svg", "svg", (".svg",), "standalone interactive flame graph (SVG)"))
register(Renderer("speedscope", "speedscope", (".speedscope.json",),
                  "speedscope: a call tree per root function, every call on its task's timeline (speedscope.app)"))
register(Renderer("parquet", "parquet", (".parquet", ".parquet/"),
                  'a folder of Parquet tables for DuckDB, pandas, Spark, schema "ftflame-parquet/1"'))
register(Renderer("perfetto", "perfetto", (".perfetto-trace", ".pftrace"),
                  "Perfetto trace: every call on its task's timeline (ui.perfetto.dev), to a file only"))

register(Renderer("txt", "diff_text", (".txt",), "plain text for mail: verdicts, then the tables"),
         DIFF_RENDERERS)
register(Renderer("json", "diff_json", (".json",), 'machine-readable, schema "ftflame-diff/1"'), DIFF_RENDERERS)
register(Renderer("folded", "diff_folded", (".folded", ".difffolded"),
                  "difffolded lines, path BEFORE AFTER (flamegraph.pl, inferno-flamegraph)"), DIFF_RENDERERS)
register(Renderer("html", "diff_html", (".html", ".htm"), "differential flame graph and delta table"),
         DIFF_RENDERERS)


def format_for_path(path: str, registry: dict[str, Renderer] | None = None):
    """The format an output file name asks for (of report's formats, or of
    the registry given), or None. Longest suffix wins (x.speedscope.json is
    speedscope, not json)."""
    low = path.lower()
    best = None
    for r in (RENDERERS if registry is None else registry).values():
        for ext in r.extensions:
            if low.endswith(ext) and (best is None or len(ext) > len(best[1])):
                best = (r.name, ext)
    return best[0] if best else None


def choose_format(output: str | None, fmt: str | None,
                  registry: dict[str, Renderer] | None = None) -> str:
    """The format asked for: --format, else the output's extension; text on stdout."""
    if fmt:
        return fmt
    if output in (None, "-"):
        return "txt"
    found = format_for_path(output, registry)
    if not found:
        exts = [r.extensions[0] for r in (RENDERERS if registry is None else registry).values()]
        raise InputError(output, "cannot tell the output format from the extension",
                         f"use {' '.join(exts[:-1])} or {exts[-1]}, or --format")
    return found


OPENABLE = ("html", "svg")  # what --open shows in a browser
# made from the calls the core writes out while it reads (report/perfetto.py):
# Perfetto's trace, speedscope's per-task timelines
STREAMED = ("perfetto", "speedscope")
BINARY = ("perfetto",)  # to a file only


def output_and_format(output: str | None, fmt: str | None, open_it: bool,
                      input_path: str) -> tuple[str | None, str]:
    """Where the report goes and in which format. --open without a file
    writes an HTML (or SVG) report into a new temporary directory."""
    if open_it and output in (None, "-"):
        fmt = fmt or "html"
        if fmt not in OPENABLE:
            raise InputError(f"--format {fmt}", "--open shows an HTML or SVG report", "use -F html or -F svg")
        from ftflame.output import temporary_output

        output = temporary_output(input_path, fmt)
    fmt = choose_format(output, fmt)
    if open_it and fmt not in OPENABLE:
        raise InputError(output, "--open shows an HTML or SVG report", "write .html or .svg")
    return output, fmt
