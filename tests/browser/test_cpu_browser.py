"""The nfsd threads' CPU time, measured outside the tracer, in the HTML
report's balance sheet section, in a real browser: the figures of the
report's `cpu` object (ftflame/correct/cpu.py), printed as given."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers.cpurun import run_dir

pytestmark = pytest.mark.browser


def test_cpu_accounting_in_the_balance_section(browser_page, tmp_path):
    d = run_dir(tmp_path)
    for out in ("r.json", "r.html"):
        subprocess.run([sys.executable, "-m", "ftflame.cli", "report", str(d), "-o", str(tmp_path / out), "-q"],
                       check=True)
    c = json.loads((tmp_path / "r.json").read_text())["cpu"]
    bp = browser_page()
    page = bp.open(tmp_path / "r.html")
    box = page.locator("#balance-section #balance-cpu")
    text = box.inner_text()
    assert "CPU time of the nfsd threads, measured outside the tracer" in text
    assert "400.000 ms" in text and "1,030 server RPCs" in text
    for p in c["parts"]:
        assert p["label"] in text
    assert "not explained by the correction" in text and "of the on-CPU time per RPC" in text
    assert "{" not in text and "[" not in text
    bp.shot("balance-cpu", "#balance-cpu")
    bp.assert_clean()
