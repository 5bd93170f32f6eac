"""Fakes for the collector tests (collect/collect.sh, collect/calibrate.sh).

The tests never touch the host's tracefs, lock or tools, and need none of
trace-cmd, rpcinfo or an NFS server installed: they run the scripts with

- a fake tracefs folder of plain files (FTFLAME_TRACEFS),
- a private lock directory (FTFLAME_LOCK_DIR),
- a PATH of only the basic tools every Debian has (bare_path: coreutils,
  util-linux, bash, awk, sed, grep, findutils, procps, perl-base), plus a
  folder of fakes the test writes: a trace-cmd that runs the workload like
  `trace-cmd record` and answers `report --stat`, and an rpcinfo.

The fake trace-cmd is driven by environment variables:
  FAKE_TC_PIDFILE    record writes its pid there once the workload runs
  FAKE_TC_LOG        record appends a JSON line: argv and its open fds
  (record prints a summary on stdout, as trace-cmd does: "CPU0 data recorded...")
  FAKE_TC_FAIL=N     record exits N after the workload (a partial file written)
  FAKE_TC_BYTES=N    record writes N bytes more into its -o file
  FAKE_TC_FILL=PATH  record then fills PATH's file system (a disk filling up)
  FAKE_TC_STAT=FILE  report --stat prints FILE (default: 2 CPUs, no loss)
  FAKE_TC_STAT_FAIL  report --stat fails
"""
from __future__ import annotations

import atexit
import os
import shutil
import sys
from pathlib import Path

from helpers.unprivileged import reachable_dir

REPO = Path(__file__).resolve().parents[2]
COLLECT = REPO / "collect" / "collect.sh"
CALIBRATE = REPO / "collect" / "calibrate.sh"

# What the scripts and the tests' own shell snippets may use: all in Debian's
# essential or required packages, so on every machine the suite runs on.
BASIC_TOOLS = (
    "bash", "sh", "env", "cat", "cp", "mv", "rm", "mkdir", "rmdir", "ln", "ls", "stat", "id",
    "readlink", "dirname", "basename", "head", "tail", "tr", "sed", "awk", "grep", "find",
    "sort", "wc", "date", "sleep", "mktemp", "tee", "uname", "getconf", "nproc", "df", "true",
    "false", "flock", "setsid", "setpriv", "kill", "ps", "perl", "chmod", "touch", "dd", "iconv",
)

NO_LOSS_STAT = """cpus=2

Kernel buffer statistics:
  Note: "entries" are the entries left in the kernel ring buffer and are not
        recorded in the trace data. They should all be zero.

CPU: 0
entries: 0
overrun: 0
commit overrun: 0
bytes: 0
oldest event ts:    16.093823
now ts:    16.269681
dropped events: 0
read events: 1200

CPU: 1
entries: 0
overrun: 0
commit overrun: 0
bytes: 0
oldest event ts:    16.069122
now ts:    16.271113
dropped events: 0
read events: 1100
"""

# `trace-cmd report --stat` of fixtures k6.1/s10-lost/trace.dat (a 64 KB
# buffer that overflowed), as trace-cmd 3.1.6 prints it.
LOST_STAT = """cpus=2

Kernel buffer statistics:
  Note: "entries" are the entries left in the kernel ring buffer and are not
        recorded in the trace data. They should all be zero.

CPU: 0
entries: 72
overrun: 52634
commit overrun: 0
bytes: 2608
oldest event ts:    16.093823
now ts:    16.269681
dropped events: 0
read events: 441064

CPU: 1
entries: 0
overrun: 281416
commit overrun: 0
bytes: 0
oldest event ts:    16.069122
now ts:    16.271113
dropped events: 0
read events: 438706


CPU0 data recorded at offset=0x1000
    15118336 bytes in size
CPU1 data recorded at offset=0xe6c000
"""

FAKE_TRACE_CMD = r'''
"""A fake trace-cmd for the collector tests (tests/helpers/collectfake.py)."""
import json, os, signal, subprocess, sys
env = os.environ
args = sys.argv[1:]
if args[:1] == ["--version"]:
    print("trace-cmd version 3.1.6 (fake)")
    sys.exit(255)
if args[:2] == ["report", "--stat"]:
    if env.get("FAKE_TC_STAT_FAIL"):
        print("trace-cmd: cannot read " + args[-1], file=sys.stderr)
        sys.exit(1)
    if env.get("FAKE_TC_STAT"):
        sys.stdout.write(open(env["FAKE_TC_STAT"]).read())
    else:
        sys.stdout.write(NO_LOSS_STAT)
    sys.exit(0)
if args[:1] != ["record"]:
    print("fake trace-cmd: not faked:", args, file=sys.stderr)
    sys.exit(1)

WITH_VALUE = {"-p", "-b", "-g", "-l", "-M", "-O", "-C", "-e", "-o", "--max-graph-depth"}
i, out = 1, None
while i < len(args) and args[i].startswith("-"):
    if args[i] == "-o":
        out = args[i + 1]
    i += 2 if args[i] in WITH_VALUE else 1
command = args[i:]

class Interrupted(Exception):
    pass

def interrupted(signum, frame):
    raise Interrupted()

# Like trace-cmd: Ctrl-C stops the recording and the file is written.
signal.signal(signal.SIGINT, interrupted)
tracefs = env["FTFLAME_TRACEFS"]
for name, value in (("current_tracer", "function_graph"), ("tracing_on", "0"),
                    ("set_event", "sched:sched_switch")):
    with open(os.path.join(tracefs, name), "w") as f:
        f.write(value + "\n")
if env.get("FAKE_TC_LOG"):
    fds = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds[fd] = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            pass
    with open(env["FAKE_TC_LOG"], "a") as f:
        f.write(json.dumps({"argv": args, "fds": fds}) + "\n")
try:
    child = subprocess.Popen(command, close_fds=False)  # trace-cmd passes its fds on
    if env.get("FAKE_TC_PIDFILE"):
        with open(env["FAKE_TC_PIDFILE"] + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(env["FAKE_TC_PIDFILE"] + ".tmp", env["FAKE_TC_PIDFILE"])
    child.wait()
except Interrupted:
    pass
try:
    with open(out, "wb") as f:
        f.write(b"\x17\x08Dtracing6\0fake trace.dat\n")
        left = int(env.get("FAKE_TC_BYTES", "0"))
        while left > 0:
            n = min(left, 65536)
            f.write(b"\0" * n)
            left -= n
except OSError as e:
    print("trace-cmd: writing %s: %s" % (out, e.strerror), file=sys.stderr)
    sys.exit(1)
# Like trace-cmd: its summary on stdout (collect.sh sends it to record.log).
print("CPU0 data recorded at offset=0x1000\n    %d bytes in size" % os.path.getsize(out), flush=True)
if env.get("FAKE_TC_FILL"):
    try:
        with open(env["FAKE_TC_FILL"], "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
    except OSError:
        pass
sys.exit(int(env.get("FAKE_TC_FAIL", "0")))
'''


def fake_tracefs(root, tracers="nop function function_graph", functions=(), tracer="nop", events=""):
    """A tracefs folder of plain files, as the scripts read and restore it."""
    t = Path(root) / "tracefs"
    (t / "options").mkdir(parents=True)
    (t / "available_tracers").write_text(tracers + "\n")
    (t / "available_filter_functions").write_text("".join(f + "\n" for f in functions))
    (t / "current_tracer").write_text(tracer + "\n")
    (t / "set_event").write_text(events)
    (t / "trace_clock").write_text("[local] global counter\n")
    (t / "buffer_size_kb").write_text("7 (expanded: 1408)\n")
    (t / "tracing_on").write_text("1\n")
    return t


NFSD_FUNCS = ("nfsd3_proc_write [nfsd]", "nfsd4_write [nfsd]", "nfsd_dispatch [nfsd]",
              "nfsd3_proc_null [nfsd]", "svc_process [sunrpc]", "vfs_write")

_BARE = None


def bare_path() -> str:
    """A folder of links to the basic tools only (made once per session):
    what a PATH holds on a machine where nothing beyond Debian's essential
    packages is installed."""
    global _BARE
    if _BARE is None:
        d = reachable_dir("ftflame-bare-path-")  # (the not-root test runs as nobody)
        atexit.register(shutil.rmtree, d, True)
        for tool in BASIC_TOOLS:
            found = shutil.which(tool)
            if found:
                (d / tool).symlink_to(found)
        _BARE = str(d)
    return _BARE


def fake_bin(work, trace_cmd=True, rpcinfo_rc: int | None = 0) -> Path:
    """work/bin with the fakes: trace-cmd and rpcinfo (exiting rpcinfo_rc),
    each left out when False/None."""
    d = Path(work) / "bin"
    d.mkdir(exist_ok=True)
    for name in ("trace-cmd", "rpcinfo"):
        (d / name).unlink(missing_ok=True)
    if trace_cmd:
        (d / "trace-cmd").write_text(f"#!{sys.executable}\n"
                                     f"NO_LOSS_STAT = {NO_LOSS_STAT!r}\n{FAKE_TRACE_CMD}")
        (d / "trace-cmd").chmod(0o755)
    if rpcinfo_rc is not None:
        (d / "rpcinfo").write_text(f"#!/bin/sh\nexit {rpcinfo_rc}\n")
        (d / "rpcinfo").chmod(0o755)
    return d


def script_env(work, tracefs=None, lock_dir=None, bin_dir=None, extra=None) -> dict:
    """The environment the tests run a script in: private tracefs and lock,
    PATH = the fakes + the basic tools (nothing else of the host's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_TC_", "FTFLAME", "FT_"))}
    env["FTFLAME_LOCK_DIR"] = str(lock_dir or Path(work) / "lock")
    if tracefs is not None:
        env["FTFLAME_TRACEFS"] = str(tracefs)
    bins = fake_bin(work) if bin_dir is None else bin_dir
    env["PATH"] = f"{bins}:{bare_path()}"
    env["FTFLAME"] = "ftflame-not-installed"  # calibrate.sh: no math, keep the traces
    env.update(extra or {})
    return env
