"""Golden outputs for the hand-made inputs: tests/data/events/expected/.

Regenerate after an intended change with `UPDATE_GOLDEN=1 make test` (or
`make golden`), then review the diff. On a mismatch the actual output is
written beside the golden file as *.actual.
"""
from __future__ import annotations

import os

import pytest

from events import HERE, load
from ftflame.report import RENDERERS

EXPECTED = os.path.join(HERE, "expected")
CASES = sorted(f[: -len(".events")] for f in os.listdir(HERE) if f.endswith(".events"))
FORMATS = {"txt": "txt", "folded": "folded", "json": "json"}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("case", CASES)
def test_golden(case, fmt):
    actual = RENDERERS[fmt].render(load(case))
    path = os.path.join(EXPECTED, f"{case}.{FORMATS[fmt]}")
    if os.environ.get("UPDATE_GOLDEN"):
        os.makedirs(EXPECTED, exist_ok=True)
        with open(path, "w") as f:
            f.write(actual)
        return
    if not os.path.exists(path):
        pytest.fail(f"{path} missing: run UPDATE_GOLDEN=1 make test")
    with open(path) as f:
        expected = f.read()
    if actual != expected:
        with open(path + ".actual", "w") as f:
            f.write(actual)
        pytest.fail(f"{case} {fmt} differs from {path} (actual in {path}.actual; "
                    "UPDATE_GOLDEN=1 make test to accept)")
