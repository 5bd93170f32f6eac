"""ftflame.report: one renderer per output format, all reading one Profile.

Each renderer is a function ``render(profile, opts) -> str`` registered in
RENDERERS with the file extensions that select it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict

from . import folded, html, jsonout, speedscope, svg, text  # noqa: E402


@dataclass(frozen=True)
class Renderer:
    name: str
    render: Callable
    extensions: tuple
    description: str


RENDERERS: Dict[str, Renderer] = {}


def register(r: Renderer) -> None:
    RENDERERS[r.name] = r


register(Renderer("txt", text.render, (".txt",), "plain text for mail: function table and call tree"))
register(Renderer("json", jsonout.render, (".json",), 'machine-readable, schema "ftflame/1"'))
register(Renderer("folded", folded.render, (".folded", ".collapsed"),
                  "FlameGraph folded stacks, exclusive ns per path (flamegraph.pl, inferno)"))
register(Renderer("html", html.render, (".html", ".htm"),
                  "self-contained interactive report: flame graph, tables, latency over time"))
register(Renderer("svg", svg.render, (".svg",), "standalone interactive flame graph (SVG)"))
register(Renderer("speedscope", speedscope.render, (".speedscope.json",),
                  "speedscope evented profile, one per root function (speedscope.app)"))


def format_for_path(path: str):
    """The format an output file name asks for, or None. Longest suffix wins
    (x.speedscope.json is speedscope, not json)."""
    low = path.lower()
    best = None
    for r in RENDERERS.values():
        for ext in r.extensions:
            if low.endswith(ext) and (best is None or len(ext) > len(best[1])):
                best = (r.name, ext)
    return best[0] if best else None
