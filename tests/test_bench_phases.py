"""bench/phases.py's room for the builder: the CPU the bound (a multiple of
the floor's CPU) leaves the builder once the rest of the command is paid,
negative when the rest alone is over the bound."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

PHASES = Path(__file__).resolve().parent.parent / "bench" / "phases.py"


def _phases():
    spec = importlib.util.spec_from_file_location("bench_phases", PHASES)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_room_is_the_bound_less_the_rest_of_the_command():
    phases = _phases()
    # floor 0.3 s, text bound 2x = 0.6 s; the command 0.9 s of which the builder 0.4:
    # the rest is 0.5 s, so the builder may take 0.1 s
    assert phases.room_for_builder(0.3, 0.9, 0.4, phases.BOUNDS["txt"]) == pytest.approx(0.1)


def test_no_room_when_the_rest_alone_is_over_the_bound():
    phases = _phases()
    # floor 0.15 s, JSON bound 2.5x = 0.375 s; the rest of the command 0.45 s
    assert phases.room_for_builder(0.15, 0.68, 0.23, phases.BOUNDS["json"]) == pytest.approx(-0.075)


def test_bounds_are_the_text_and_json_figures():
    assert _phases().BOUNDS == {"txt": 2.0, "json": 2.5}
