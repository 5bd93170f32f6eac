"""tests/helpers/promptly.py on a process that hangs: the AssertionError
names each thread's state and wait, and, for a process started with
env_with_stacks (Python's faulthandler on), each thread's Python stack, so
that a hang seen once in CI says where it waited. The process and its
forked child are gone afterwards."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from helpers import promptly

# a main thread waiting on a lock its side thread never releases, and a
# forked child asleep: the shape of a reader that waits for good
HANGS = """import os, threading, time
lock = threading.Lock()
lock.acquire()
def side():
    time.sleep(3600)
threading.Thread(target=side, name="side", daemon=True).start()
if os.fork() == 0:
    time.sleep(3600)
print("ready", flush=True)
lock.acquire()
"""


def test_a_hang_says_where_each_thread_waits():
    proc = subprocess.Popen([sys.executable, "-c", HANGS], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=promptly.env_with_stacks())
    assert proc.stdout.readline() == "ready\n"
    family = list(promptly._family(proc.pid))
    assert len(family) == 2  # the process and its forked child
    with pytest.raises(AssertionError) as e:
        promptly.communicate_within_cpu(proc, cpu_budget=5.0, wall_ceiling=0.5)
    said = str(e.value)
    assert "still running after" in said and "state S" in said and "kernel stack" in said
    # faulthandler's dump: the main thread at the lock's acquire (the
    # script's last line), the side thread in its sleep, the child in its own
    assert 'File "<string>", line 10 in <module>' in said, said
    assert 'File "<string>", line 5 in side' in said, said
    assert 'File "<string>", line 8 in <module>' in said, said
    deadline = time.monotonic() + 10
    while not all(promptly.ended(p) for p in family) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is not None and all(promptly.ended(p) for p in family)
