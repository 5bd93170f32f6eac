"""How long a process takes to stop after a signal, by the CPU time it
spends, not the wall time that passes: on a machine loaded 5-11 (CI's full
run, other jobs) a process that stops at once can still wait seconds for a
core, and a wall-clock deadline failed there while the code was right. A
process that keeps working after the signal spends CPU time; one that waits
for nothing is caught by a wide wall ceiling."""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import time

TICK = os.sysconf("SC_CLK_TCK")


def env_with_stacks(env: dict | None = None) -> dict:
    """env (default: this process's) with Python's faulthandler on, for a
    process run under communicate_within_cpu: if it hangs, it is asked for
    every thread's Python stack before it goes (SIGABRT, which faulthandler
    answers by writing them to stderr). Nothing changes while it runs."""
    return {**(os.environ if env is None else env), "PYTHONFAULTHANDLER": "1"}


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return "?"


def _stat(path: str) -> list[str]:
    """The fields of a /proc stat file after the command's name (state
    first); [] for a process already gone."""
    text = _read(path)
    return [] if text == "?" else text.rsplit(")", 1)[-1].split()


def ended(pid: int) -> bool:
    """Whether pid is gone, or dead and waiting to be reaped."""
    return _stat(f"/proc/{pid}/stat")[:1] in ([], ["Z"], ["X"])


def _tasks(pid: int) -> list[str]:
    """pid's threads (their ids), [] for a process already gone."""
    try:
        return sorted(os.listdir(f"/proc/{pid}/task"), key=int)
    except OSError:
        return []


def _family(pid: int):
    """pid, then its living descendants (the libtracecmd reader's forked
    child), each once."""
    yield pid
    for tid in _tasks(pid):
        for child in _read(f"/proc/{pid}/task/{tid}/children").split():
            if child.isdigit():
                yield from _family(int(child))


def _cpu(pid: int) -> float:
    """CPU seconds of pid (its threads, its reaped children) and of its
    living descendants; 0 for a process already gone."""
    total = 0.0
    for p in _family(pid):
        fields = _stat(f"/proc/{p}/stat")
        if len(fields) > 14:
            total += sum(int(x) for x in fields[11:15]) / TICK  # utime stime cutime cstime
    return total


def where_waiting(pid: int) -> str:
    """What each thread of pid, and of its living descendants, is doing:
    its name, state, kernel wait channel and system call (/proc: no tool
    needed), so that a hang seen once in CI says where it waited."""
    lines = []
    for p in _family(pid):
        for tid in _tasks(p):
            t = f"/proc/{p}/task/{tid}"
            state = _stat(f"{t}/stat")[:1]
            # the kernel's stack (root only): "[<0>] futex_wait_queue+0x60/0x90" a line
            kstack = " < ".join(line.split("] ", 1)[-1].split("+", 1)[0]
                                for line in _read(f"{t}/stack").splitlines()[:6])
            lines.append(f"pid {p} tid {tid} {_read(f'{t}/comm')!r} state {''.join(state)} "
                         f"wchan {_read(f'{t}/wchan')} syscall {_read(f'{t}/syscall').split(' ')[0]} "
                         f"kernel stack {kstack}")
    return "\n".join(lines)


def _abort_for_stacks(pid: int) -> None:
    """SIGABRT to pid and its living descendants, the youngest first, with
    core dumps off: a process started with env_with_stacks writes its
    threads' Python stacks to stderr and ends; any other just ends."""
    for p in reversed(list(_family(pid))):
        try:
            resource.prlimit(p, resource.RLIMIT_CORE, (0, 0))
            os.kill(p, signal.SIGABRT)
        except (OSError, ValueError):  # gone already
            continue
        # one at a time: the family shares its stderr, and stacks written
        # at once interleave line by line
        deadline = time.monotonic() + 2
        while not ended(p) and time.monotonic() < deadline:
            time.sleep(0.01)


def communicate_within_cpu(proc: subprocess.Popen, cpu_budget: float = 5.0,
                           wall_ceiling: float = 120.0) -> tuple:
    """(stdout, stderr, CPU seconds spent) of proc once it exits, or
    AssertionError (proc killed) when it spends more than cpu_budget CPU
    seconds after this call, or is still there after wall_ceiling seconds
    (a hang: waiting, not working). stdout/stderr pipes are read at the
    end: fine for the one-line stderr of an interrupted run."""
    start, t0 = _cpu(proc.pid), time.monotonic()
    used = 0.0
    while proc.poll() is None:
        used = _cpu(proc.pid) - start
        waited = time.monotonic() - t0
        if used > cpu_budget or waited > wall_ceiling:
            threads = where_waiting(proc.pid)
            _abort_for_stacks(proc.pid)
            try:
                _, err = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            if isinstance(err, bytes):
                err = err.decode(errors="replace")
            raise AssertionError(f"still running after {used:.1f} CPU seconds and {waited:.1f} s "
                                 f"(bounds: {cpu_budget} CPU s, {wall_ceiling} s); its threads:\n{threads}\n"
                                 f"its stderr (with env_with_stacks: each thread's Python stack):\n"
                                 f"{(err or '')[-6000:]}")
        time.sleep(0.02)
    out, err = proc.communicate()
    return out, err, used
