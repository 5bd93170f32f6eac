"""`make test` fails when pytest collects no test (its exit code 5): a suite
that found nothing has not passed, and CI runs it without PYTEST_ARGS. With
PYTEST_ARGS choosing the tests, none selected is said and is not a failure. A
fake interpreter that exits 5 stands in for pytest (PY=), setup left out."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _make_test(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    fake = tmp_path / "python-exits-5"
    fake.write_text("#!/bin/sh\nexit 5\n")
    fake.chmod(0o755)
    return subprocess.run(["make", "-s", "-o", "setup", "test", f"PY={fake}", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")})


def test_no_test_collected_fails(tmp_path):
    r = _make_test(tmp_path, "PYTEST_ARGS=")  # (not the one a `make test PYTEST_ARGS=...` exports)
    assert r.returncode != 0
    assert "no test selected by pytest: a suite that collects nothing fails" in r.stdout


def test_none_selected_by_pytest_args_passes(tmp_path):
    r = _make_test(tmp_path, "PYTEST_ARGS=-k nothing")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "make test: no test selected\n" in r.stdout
