"""bench/timeline.py, what each thread of `ftflame report` does over time, on
a fake `perf` on PATH: `perf record` succeeds, `perf script` prints samples
as perf 6.1 does (`-F comm,tid,time`): the threads are told apart by name
(the core's) or by order (Python's), their CPU is their samples over the
frequency, and a bin's cores are the sum of its threads' shares."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMELINE = ROOT / "bench" / "timeline.py"

# 1,000 Hz, 10 ms bins: 10 samples a bin is one core (each sample a
# quarter ms into its ms: no time on a bin's edge)
SAMPLES = sorted(
    [("ftflame", 100, k / 1000) for k in range(20)]                       # main, 0-19 ms
    + [("ftflame", 101, 0.00025 + (10 + k) / 1000) for k in range(5)]     # the imports' thread
    + [("ftflame-build", 102, 0.00025 + (10 + k) / 1000) for k in range(10)]  # the builder
    + [("ftflame-write", 103, 0.00025 + (20 + k) / 1000) for k in range(2)]   # two writers
    + [("ftflame-write", 104, 0.00025 + (22 + k) / 1000) for k in range(2)],
    key=lambda s: s[2])


def fake_perf(tmp_path: Path) -> dict:
    lines = "\n".join(f"{comm:>16} {tid:6d} {100 + t:.6f}:" for comm, tid, t in SAMPLES)
    (tmp_path / "samples.txt").write_text(lines + "\n")
    perf = tmp_path / "bin" / "perf"
    perf.parent.mkdir()
    perf.write_text(f"""#!/bin/sh
case "$1" in
record) exit 0 ;;
script) cat {tmp_path / "samples.txt"} ;;
*) exit 1 ;;
esac
""")
    perf.chmod(0o755)
    return {**os.environ, "PATH": f"{perf.parent}:{os.environ['PATH']}"}


def test_threads_and_bins_from_perf_samples(tmp_path):
    out = subprocess.run([sys.executable, str(TIMELINE), "--freq", "1000", "--bin", "10", "trace.dat"],
                         env=fake_perf(tmp_path), capture_output=True, text=True, check=True).stdout
    assert "| T0 | main | 1 | 0.020 | 0 | 19 |" in out
    assert "| T1 | a Python thread | 1 | 0.005 | 10 | 14 |" in out
    assert "| T2 | ftflame-build | 1 | 0.010 | 10 | 19 |" in out
    assert "| T3 | ftflame-write | 2 | 0.004 | 20 | 23 |" in out
    bins = [line.split() for line in out.splitlines() if line[:5].strip().isdigit()]
    assert bins[0] == ["0", "1.00", ".", ".", ".", "1.00"]
    assert bins[1] == ["10", "1.00", "0.50", "1.00", ".", "2.50"]
    assert bins[2] == ["20", ".", ".", ".", "0.40", "0.40"]
    assert "about one core busy: 1 of 3; about two: 1 of 3" in out


def test_without_perf_it_says_so_and_exits_2(tmp_path):
    empty = tmp_path / "nobin"
    empty.mkdir()
    res = subprocess.run([sys.executable, str(TIMELINE), "trace.dat"], env={**os.environ, "PATH": str(empty)},
                         capture_output=True, text=True)
    assert res.returncode == 2
    assert res.stderr.strip() == "timeline: needs perf (apt-get install linux-perf)"
