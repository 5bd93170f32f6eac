"""bench/zstd_floor.py, the machine's floor for reading a zstd trace.dat: the
command it prints decompresses each CPU stream with synchronous I/O where the
zstd on PATH has the option (the hand-offs between zstd's threads are the
command's cost, not the decompression's), and without it on an older zstd; on
a real trace of the corpus the printed command runs."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLOOR = ROOT / "bench" / "zstd_floor.py"
ZSTD_TRACE = ROOT / "tests" / "data" / "fixtures" / "k6.12" / "s30-repeat" / "run1" / "trace.dat"

# the option's line in `zstd -H` of 1.5.4 (Debian 12); 1.4.8 (Debian 11) has none
HELP_154 = "  --[no-]asyncio                Use asynchronous IO. [Default: Enabled]\n"
HELP_148 = "  --[no-]check                  add XXH64 integrity checksum to frame\n"


def fake_zstd(tmp_path: Path, help_text: str) -> dict:
    zstd = tmp_path / "bin" / "zstd"
    zstd.parent.mkdir()
    (tmp_path / "help.txt").write_text(help_text)
    zstd.write_text(f"#!/bin/sh\n[ \"$1\" = -H ] && cat {tmp_path / 'help.txt'}\nexit 0\n")
    zstd.chmod(0o755)
    return {**os.environ, "PATH": f"{zstd.parent}:{os.environ['PATH']}"}


def printed_command(env: dict, out_dir: Path) -> str:
    run = subprocess.run([sys.executable, str(FLOOR), str(ZSTD_TRACE), str(out_dir)],
                         capture_output=True, text=True, env=env, check=True)
    return run.stdout.strip()


@pytest.mark.parametrize("help_text, synchronous", [(HELP_154, True), (HELP_148, False)],
                         ids=["zstd 1.5.4", "zstd 1.4.8"])
def test_the_floor_decompresses_with_synchronous_io_where_zstd_can(tmp_path, help_text, synchronous):
    cmd = printed_command(fake_zstd(tmp_path, help_text), tmp_path)
    assert "zstd -dcq" in cmd
    assert ("--no-asyncio" in cmd) == synchronous


def test_the_floor_command_decompresses_every_stream(tmp_path):
    if not shutil.which("zstd"):
        pytest.skip("no zstd command (make setup installs it)")
    cmd = printed_command(dict(os.environ), tmp_path)
    streams = sorted(tmp_path.glob("cpu*.zst"))
    assert streams, "the trace's zstd chunks were not split into streams"
    run = subprocess.run(cmd, shell=True, capture_output=True, check=False)
    assert run.returncode == 0, run.stderr
