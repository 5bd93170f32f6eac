"""collect.sh records the server's CPU time around each recording's workload,
from sources independent of ftrace (collect/cpusnap.sh): /proc/stat, the
server's RPC counts, every nfsd thread's /proc/TID/schedstat and, where perf
runs, `perf stat -e task-clock --per-thread -t TIDS -x,`. It writes them as
cpu-main.txt and cpu-baseline.txt, which `ftflame report` reads
(ftflame/correct/cpu.py).

The collector runs on the fakes of tests/helpers/collectfake.py, with a fake
/proc folder (FTFLAME_PROC): two nfsd threads, one other task and one gone, /proc/stat
and /proc/net/rpc/nfsd; the workload moves them to their "after" contents.
A fake `perf` on PATH opens a file named like perf's event fds, waits for
SIGINT and prints `perf stat -x, --per-thread` lines as perf 6.1 does.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ftflame.correct.cpu import parse_cpu_file
from helpers.collectfake import COLLECT, NFSD_FUNCS, fake_bin, fake_tracefs, script_env

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="collect.sh refuses to run but as root")

STAT_BEFORE = """cpu  1000 10 500 8000 20 30 40 5 0 0
cpu0 500 5 250 4000 10 15 20 2 0 0
cpu1 500 5 250 4000 10 15 20 3 0 0
intr 12345 0 0
ctxt 99999
btime 1700000000
"""
STAT_AFTER = """cpu  1100 10 700 8150 20 40 70 5 0 0
cpu0 550 5 350 4075 10 20 35 2 0 0
cpu1 550 5 350 4075 10 20 35 3 0 0
intr 13345 0 0
ctxt 109999
btime 1700000000
"""
RPC_BEFORE = "rc 0 3 18\nnet 21 0 21 3\nrpc 21 0 0 0 0\nproc3 22 1 6 0 2 3 0 0 0 0 0 0 0 0 0 0 0 0 0 1 2 1 0\n"
RPC_AFTER = "rc 0 1027 18\nnet 1045 0 1045 3\nrpc 1045 0 0 0 0\nproc3 22 1 6 0 2 3 0 0 1024 0 0 0 0 0 0 0 0 0 0 1 2 1 0\n"

# The workload: the NFS traffic "happens" (the proc files move on).
FAKE_WORKLOAD = """#!/bin/bash
p=$FTFLAME_PROC
printf '%s' "$STAT_AFTER" >"$p/stat"
printf '%s' "$RPC_AFTER" >"$p/net/rpc/nfsd"
echo "50000000 1000 300" >"$p/101/schedstat"
echo "32000000 2000 200" >"$p/102/schedstat"
echo "1 2 3" >"$p/200/schedstat"
echo "workload done"
"""

FAKE_PERF = r'''
"""A fake perf: `perf stat` as collect/cpusnap.sh runs it."""
import os, signal, subprocess, sys, tempfile
args = sys.argv[1:]
if os.environ.get("FAKE_PERF_FAIL"):
    print("perf: perf not found for kernel 6.1.0-99", file=sys.stderr)
    sys.exit(1)
out = args[args.index("-o") + 1]
if "--" in args:  # counting a command: run it
    sys.exit(subprocess.call(args[args.index("--") + 1:]))
with open(os.environ["FAKE_PERF_LOG"], "a") as f:
    f.write(" ".join(args) + "\n")
tids = args[args.index("-t") + 1].split(",")
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # (perf counts until SIGINT)
d = tempfile.mkdtemp()
ev = [open(os.path.join(d, "[perf_event]"), "w") for _ in tids]  # like perf's event fds
signal.sigwait({signal.SIGINT})
msec = dict(kv.split("=") for kv in os.environ["FAKE_PERF_MSEC"].split(","))
with open(out, "w") as f:
    f.write("# started on Fri Nov 27 08:52:16 2026\n\n")
    for t in tids:
        v = msec.get(t, "<not counted>")
        ns = int(float(v) * 1e6) if v[0].isdigit() else 0
        f.write(f"nfsd-{t},{v},msec,task-clock,{ns},100.00,,\n")
'''


def fake_proc(work) -> Path:
    p = work / "proc"
    (p / "net" / "rpc").mkdir(parents=True)
    (p / "stat").write_text(STAT_BEFORE)
    (p / "net" / "rpc" / "nfsd").write_text(RPC_BEFORE)
    for tid, comm, sched in ((101, "nfsd", "40000000 900 250"), (102, "nfsd", "30000000 1800 180"),
                             (200, "bash", "1 2 3")):
        (p / str(tid)).mkdir()
        (p / str(tid) / "comm").write_text(comm + "\n")
        (p / str(tid) / "schedstat").write_text(sched + "\n")
    # a task that ended between the listing and the read: no message of it
    # in the workload's log
    (p / "300").mkdir()
    (p / "300" / "comm").symlink_to(p / "300" / "gone")
    return p


def run_collect(work, perf=True, opts=(), extra=()):
    t = fake_tracefs(work, functions=NFSD_FUNCS)
    bins = fake_bin(work)
    (bins / "nfs-workload").write_text(FAKE_WORKLOAD)
    (bins / "nfs-workload").chmod(0o755)
    if perf:
        (bins / "perf").write_text(f"#!{__import__('sys').executable}\n{FAKE_PERF}")
        (bins / "perf").chmod(0o755)
    proc = fake_proc(work)
    env = script_env(work, tracefs=t, bin_dir=bins, extra={
        "FTFLAME_PROC": str(proc), "STAT_AFTER": STAT_AFTER, "RPC_AFTER": RPC_AFTER,
        "FAKE_PERF_MSEC": "101=9.5,102=2.25", "FAKE_PERF_LOG": str(work / "perf.log"), **dict(extra)})
    r = subprocess.run(["bash", str(COLLECT), "-g", "nfsd3_proc_write", "--no-calibrate", *opts,
                        "-o", str(work / "run"), "--", "nfs-workload"],
                       cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return work / "run", r


def test_perf_task_clock_per_nfsd_thread(work):
    run, _ = run_collect(work)
    text = (run / "cpu-main.txt").read_text()
    assert text.startswith("ftflame-cpu/1\n")
    assert "=== perf ok\n" in text
    assert "nfsd-101,9.5,msec,task-clock," in text
    # perf counted the nfsd threads only, per thread, as CSV
    args = (work / "perf.log").read_text().split()
    assert args[:8] == ["stat", "-e", "task-clock", "--per-thread", "-t", "101,102", "-x,", "-o"]
    c = parse_cpu_file(run / "cpu-main.txt")
    assert c["source"] == "perf task-clock"
    assert c["threads"] == 2
    assert c["nfsd_on_cpu_ns"] == 11_750_000  # 9.5 + 2.25 ms
    assert c["schedstat_on_cpu_ns"] == 12_000_000  # (10 + 2 ms: the cross-check beside it)
    assert c["server_rpc_calls"] == 1024
    assert workload_ran(run)


def workload_ran(run):
    return (run / "workload.log").read_text() == "workload done\n"


def test_proc_schedstat_without_perf(work):
    run, _ = run_collect(work, perf=False)
    text = (run / "cpu-main.txt").read_text()
    assert "=== perf absent\n" in text
    assert "=== before schedstat\n101 40000000 900 250\n102 30000000 1800 180\n=== after stat" in text
    c = parse_cpu_file(run / "cpu-main.txt")
    assert c["source"] == "/proc/<tid>/schedstat"
    assert c["nfsd_on_cpu_ns"] == 12_000_000  # (50-40) + (32-30) ms, the bash task left out
    assert c["server_rpc_calls"] == 1024
    # /proc/stat, in USER_HZ ticks: user 100, system 200, idle 150, irq 10, softirq 30
    m = c["machine"]
    assert (m["user_ticks"], m["system_ticks"], m["idle_ticks"], m["irq_ticks"], m["softirq_ticks"]) == \
        (100, 200, 150, 10, 30)
    assert workload_ran(run)


def test_perf_that_fails_for_this_kernel_falls_back_to_proc(work):
    run, _ = run_collect(work, extra={"FAKE_PERF_FAIL": "1"})
    text = (run / "cpu-main.txt").read_text()
    assert "=== perf failed: perf: perf not found for kernel 6.1.0-99" in text
    assert parse_cpu_file(run / "cpu-main.txt")["source"] == "/proc/<tid>/schedstat"
    assert workload_ran(run)


def test_baseline_gets_its_own_cpu_file_named_in_meta(work):
    run, _ = run_collect(work, opts=("--baseline",))
    meta = json.loads((run / "meta.json").read_text())
    assert meta["measured"]["cpu"] == {"main": "cpu-main.txt", "baseline": "cpu-baseline.txt"}
    # (the workload ran twice: the second time the proc files were already "after")
    assert parse_cpu_file(run / "cpu-baseline.txt")["server_rpc_calls"] == 0
    assert parse_cpu_file(run / "cpu-main.txt")["server_rpc_calls"] == 1024


def test_a_previous_runs_cpu_file_is_a_previous_run(work):
    (work / "run").mkdir(mode=0o755)
    (work / "run" / "cpu-main.txt").write_text("old\n")
    t = fake_tracefs(work, functions=NFSD_FUNCS)
    r = subprocess.run(["bash", str(COLLECT), "-g", "nfsd3_proc_write", "--no-calibrate",
                        "-o", str(work / "run"), "--", "true"],
                       cwd=work, env=script_env(work, tracefs=t), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "holds a previous run (cpu-main.txt)" in r.stderr
