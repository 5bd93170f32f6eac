"""A hand-made run directory with the CPU files of collect/cpusnap.sh
(tests/test_cpu_report.py, tests/browser/test_cpu_browser.py): a real trace
(the curated k6.1/s01-v3-write4k: 23 root calls of nfsd3_proc_write) and
the files cpusnap.sh writes when it runs a workload on a fake /proc
(FTFLAME_PROC) whose two nfsd threads, /proc/stat and RPC counts the
workload moves on."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CPUSNAP = REPO / "collect" / "cpusnap.sh"
TRACE = REPO / "tests" / "data" / "fixtures" / "k6.1" / "s01-v3-write4k" / "trace.dat"


def cpu_file(tmp_path, name, on_cpu_ms, rpcs):
    """cpusnap.sh's file of a workload during which two nfsd threads ran
    on_cpu_ms between them and the server counted rpcs RPCs."""
    p = tmp_path / f"proc-{name}"
    (p / "net" / "rpc").mkdir(parents=True)
    (p / "stat").write_text("cpu  1000 10 500 8000 20 30 40 5 0 0\ncpu0 500 5 250 4000 10 15 20 2 0 0\n")
    (p / "net" / "rpc" / "nfsd").write_text("rc 0 3 18\nrpc 21 0 0 0 0\n")
    for tid in (101, 102):
        (p / str(tid)).mkdir()
        (p / str(tid) / "comm").write_text("nfsd\n")
        (p / str(tid) / "schedstat").write_text("1000000 50 10\n")
    a, b = 1_000_000 + on_cpu_ms * 750_000, 1_000_000 + on_cpu_ms * 250_000
    workload = (f"echo '{a} 60 20' >{p}/101/schedstat; echo '{b} 70 30' >{p}/102/schedstat; "
                f"printf 'rc 0 3 18\\nrpc {21 + rpcs} 0 0 0 0\\n' >{p}/net/rpc/nfsd; "
                f"printf 'cpu  1100 10 700 8150 20 40 70 5 0 0\\n' >{p}/stat")
    out = tmp_path / name
    env = dict(os.environ, FTFLAME_PROC=str(p), FTFLAME_NO_PERF="1")
    subprocess.run(["bash", str(CPUSNAP), str(out), "--", "sh", "-c", workload], env=env, check=True)
    return out


def run_dir(tmp_path, main=True, baseline=True) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(TRACE, d / "trace.dat")
    if main:
        shutil.copy(cpu_file(tmp_path, "main", 400, 1030), d / "cpu-main.txt")
    if baseline:
        shutil.copy(cpu_file(tmp_path, "base", 250, 1027), d / "cpu-baseline.txt")
    return d


def cpu_text(on_cpu_ms: tuple) -> str:
    """cpusnap.sh's file as it writes it where perf runs (collect/README.md),
    written here without running it: two nfsd threads (101, 102) that ran
    on_cpu_ms each, /proc/stat and 131 RPCs the workload moved."""
    return ("ftflame-cpu/1\nclk_tck 100\ncpus 2\nthreads 101 102\n"
            "=== before stat\ncpu  1000 10 500 8000 20 30 40 5 0 0\ncpu0 500 5 250 4000 10 15 20 2 0 0\n"
            "=== before nfsd\nrc 0 3 18\nrpc 21 0 0 0 0\n"
            "=== before schedstat\n101 1000000 50 10\n102 1000000 50 10\n"
            "=== after stat\ncpu  1100 10 700 8150 20 40 70 5 0 0\n"
            "=== after nfsd\nrc 0 3 18\nrpc 152 0 0 0 0\n"
            f"=== after schedstat\n101 {1_000_000 + on_cpu_ms[0] * 1_000_000} 60 20\n"
            f"102 {1_000_000 + on_cpu_ms[1] * 1_000_000} 70 30\n"
            "=== perf ok\n# started on Sat Nov 28 17:00:00 2026\n\n"
            f"nfsd-101,{on_cpu_ms[0]}.5,msec,task-clock,{on_cpu_ms[0]}500000,100.00,0.475,CPUs utilized\n"
            f"nfsd-102,{on_cpu_ms[1]}.25,msec,task-clock,{on_cpu_ms[1]}250000,100.00,0.2,CPUs utilized\n"
            "=== end\n")
