"""collect.sh and calibrate.sh refuse to start, clearly, when they must.

Each refusal exits 2 with one line on stderr. These tests never touch the
host's real tracefs or lock, and need none of the tools the scripts call
beyond the basic ones (tests/helpers/collectfake.py): fake tracefs folders
(FTFLAME_TRACEFS), a private lock directory (FTFLAME_LOCK_DIR), and a PATH of
the basic tools plus a fake trace-cmd and rpcinfo. Every case stops before
trace-cmd would record (tests/test_collect_safety.py runs the fake one; the
real recordings are tested in a real kernel by tests/vm, make test-vm).
"""
import fcntl
import json
import os
import shlex
import shutil
import subprocess

import pytest

from helpers import corpus
from helpers.collectfake import CALIBRATE, COLLECT, LOST_STAT, NFSD_FUNCS, REPO, fake_bin, fake_tracefs, script_env
from helpers.unprivileged import AS_NOBODY, require_reachable

IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root: the root check comes first")


def run(script, args, work, tracefs=None, nobody=False, extra_env=None, bin_dir=None):
    env = script_env(work, tracefs=tracefs, bin_dir=bin_dir, extra=extra_env)
    cmd = ["bash", str(script), *args]
    if nobody:
        cmd = [*AS_NOBODY, *cmd]
    return subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=60)


def assert_refused(r, *words):
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, f"want one stderr line, got: {r.stderr!r}"
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert "Traceback" not in r.stderr


# ------------------------------------------------------------- not root

@pytest.mark.parametrize("script", [COLLECT, CALIBRATE], ids=["collect", "calibrate"])
def test_refuses_when_not_root(work, script):
    # The unprivileged user needs to read the scripts: copy them out of a
    # checkout that may sit in a private home folder.
    (work / "collect").mkdir()
    for f in (REPO / "collect").glob("*.sh"):
        shutil.copy(f, work / "collect" / f.name)
    copy = work / "collect" / script.name
    t = fake_tracefs(work, functions=NFSD_FUNCS)
    env = script_env(work, tracefs=t)
    if IS_ROOT:
        require_reachable(copy, *env["PATH"].split(":"))
    args = ["-p", "nfsd-write", "--", "true"] if script == COLLECT else []
    r = run(copy, args, work, tracefs=t, nobody=IS_ROOT)
    assert_refused(r, "must run as root")


# ------------------------------------------------------------- no tracefs

@needs_root
@pytest.mark.parametrize("script", [COLLECT, CALIBRATE], ids=["collect", "calibrate"])
def test_refuses_without_tracefs(work, script):
    empty = work / "empty"
    empty.mkdir()
    args = ["-g", "nfsd3_proc_write", "--", "true"] if script == COLLECT else []
    r = run(script, args, work, tracefs=empty)
    assert_refused(r, "no tracefs", str(empty))


@needs_root
def test_refuses_without_function_graph_tracer(work):
    t = fake_tracefs(work, tracers="blk function nop", functions=NFSD_FUNCS)
    r = run(COLLECT, ["-p", "nfsd-write", "--", "true"], work, tracefs=t)
    assert_refused(r, "no function_graph tracer", "blk function nop")


# ------------------------------------------------------- unknown function

@needs_root
def test_refuses_unknown_function_and_names_it(work):
    t = fake_tracefs(work, functions=NFSD_FUNCS)
    r = run(COLLECT, ["-g", "nfsd3_proc_write", "-g", "no_such_fn", "-g", "vfs_wrote", "--", "true"],
            work, tracefs=t)
    assert_refused(r, "no such traceable function", "no_such_fn", "vfs_wrote")
    assert "nfsd3_proc_write" not in r.stderr


@needs_root
def test_refuses_preset_with_no_existing_function(work):
    t = fake_tracefs(work, functions=("vfs_write",))
    r = run(COLLECT, ["-p", "nfsd-read", "--", "true"], work, tracefs=t)
    assert_refused(r, "nfsd3_proc_read", "nfsd4_read")


@needs_root
def test_calibrate_refuses_without_nfsd_null_functions(work):
    t = fake_tracefs(work, functions=("vfs_write", "nfsd_dispatch [nfsd]"))
    r = run(CALIBRATE, [], work, tracefs=t)
    assert_refused(r, "nfsd3_proc_null", "nfsd4_proc_null")


@needs_root
def test_calibrate_refuses_without_nfsd_dispatch(work):
    t = fake_tracefs(work, functions=("nfsd3_proc_null [nfsd]", "nfsd4_proc_null [nfsd]"))
    r = run(CALIBRATE, [], work, tracefs=t)
    assert_refused(r, "no such traceable function: nfsd_dispatch")


@needs_root
def test_calibrate_refuses_when_no_nfs_server_answers(work):
    t = fake_tracefs(work, functions=NFSD_FUNCS)
    r = run(CALIBRATE, ["--vers", "4", "--host", "127.0.0.2"], work, tracefs=t,
            bin_dir=fake_bin(work, rpcinfo_rc=1))
    assert_refused(r, "no NFSv4 server answers a NULL RPC at 127.0.0.2")


# ------------------------------------------------------- missing tools
# (the PATH holds only the basic tools and the fakes given: tests/helpers/collectfake.py)

@needs_root
def test_calibrate_refuses_without_rpcinfo(work):
    t = fake_tracefs(work, functions=NFSD_FUNCS)
    r = run(CALIBRATE, [], work, tracefs=t, bin_dir=fake_bin(work, rpcinfo_rc=None))
    assert_refused(r, "rpcinfo not found", "apt-get install rpcbind")


@needs_root
@pytest.mark.parametrize("script", [COLLECT, CALIBRATE], ids=["collect", "calibrate"])
def test_refuses_without_trace_cmd(work, script):
    t = fake_tracefs(work, functions=NFSD_FUNCS)
    args = ["-g", "nfsd3_proc_write", "--", "true"] if script == COLLECT else []
    r = run(script, args, work, tracefs=t, bin_dir=fake_bin(work, trace_cmd=False))
    assert_refused(r, "trace-cmd not found", "apt-get install trace-cmd")


# ------------------------------------------------------------- lock held

@needs_root
@pytest.mark.parametrize("script", [COLLECT, CALIBRATE], ids=["collect", "calibrate"])
def test_refuses_while_another_collector_holds_the_lock(work, script):
    """The lock is a flock on a root-only directory; the refusal names the
    process holding it (here this test) by pid and command line."""
    t = fake_tracefs(work, functions=NFSD_FUNCS)
    lock = work / "lock"
    lock.mkdir(mode=0o700)
    held = os.open(lock, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        args = ["-g", "nfsd3_proc_write", "--", "true"] if script == COLLECT else []
        r = run(script, args, work, tracefs=t)  # (calibrate.sh: the fake rpcinfo says yes)
    finally:
        os.close(held)
    assert_refused(r, "another ftflame collector is running", str(lock),
                   f"pid {os.getpid()} (", "python")


@needs_root
def test_refuses_when_another_tracer_is_active(work):
    t = fake_tracefs(work, functions=NFSD_FUNCS, tracer="function")
    r = run(COLLECT, ["-g", "nfsd3_proc_write", "--", "true"], work, tracefs=t)
    assert_refused(r, "tracefs is busy", "function")


@needs_root
def test_refuses_to_overwrite_a_trace(work):
    t = fake_tracefs(work, functions=NFSD_FUNCS)
    (work / "run1").mkdir()
    (work / "run1" / "trace.dat").write_bytes(b"x")
    r = run(COLLECT, ["-g", "nfsd3_proc_write", "-o", "run1", "--", "true"], work, tracefs=t)
    assert_refused(r, "run1 holds a previous run (trace.dat)", "--force")


# ------------------------------------------------------------- usage

@pytest.mark.parametrize("args, words", [
    (["-g", "nfsd3_proc_write"], ["no workload"]),
    (["--", "true"], ["no graph functions"]),
    (["-p", "nfsd-nope", "--", "true"], ["unknown preset", "nfsd-nope"]),
    (["--irqs", "maybe", "-g", "f", "--", "true"], ["--irqs wants on or off"]),
    (["--buffer", "0", "-g", "f", "--", "true"], ["--buffer wants KB"]),
    (["--bogus"], ["unknown option"]),
])
def test_usage_errors_exit_2(work, args, words):
    r = run(COLLECT, args, work, tracefs=work / "nowhere")
    assert_refused(r, *words)


@pytest.mark.parametrize("script", [COLLECT, CALIBRATE], ids=["collect", "calibrate"])
def test_help_documents_usage_and_an_example(work, script):
    r = run(script, ["--help"], work)
    assert r.returncode == 0
    assert "USAGE:" in r.stdout and "EXAMPLE" in r.stdout and "WARNING" in r.stdout
    assert "set -euo" not in r.stdout


# ----------------------------------------------------- lib.sh helpers

def lib(snippet, *args):
    """Run a snippet of bash with collect/lib.sh sourced; args are $1, $2, ..."""
    r = subprocess.run(["bash", "-c", f'. "$0"; set -euo pipefail; {snippet}',
                        str(REPO / "collect" / "lib.sh"), *args],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("cpus, mask", [("0", "1"), ("0-3,6", "4f"), ("1,33", "2,00000002"),
                                        ("0-63", "ffffffff,ffffffff")])
def test_cpulist_to_mask(cpus, mask):
    assert lib('cpulist_to_mask "$1"', cpus) == mask


@pytest.mark.parametrize("s, want", [
    ("plain", "plain"),
    ('a "quoted" \\ back\\slash', 'a "quoted" \\ back\\slash'),
    ("new\nline\ttab\rcr", "new\nline\ttab\rcr"),
    ("ctl\x01\x1fchars", "ctlchars"),          # other control characters are dropped
    ("ünïcode", "ünïcode"),
])
def test_json_str_is_valid_json(s, want):
    assert json.loads(lib('json_str "$1"', s)) == want


def test_json_str_array_and_num():
    assert json.loads(lib('json_str_array "$@"', "a b", "c")) == ["a b", "c"]
    assert json.loads(lib('json_str_array')) == []
    assert lib('json_num 12.5; json_num x; json_num -3') == "12.5null-3"
    # JSON has no leading zeros, no bare dot, no exponent words: null
    assert lib('json_num 007; json_num 1.; json_num 0; json_num 4x; json_num nan') == "nullnull0nullnull"


def corpus_fixture(rel):
    """A whole recording of the full corpus: the curated copies in tests/data
    are windows whose CPU statistics were left out (they describe the whole)."""
    path = corpus.in_corpus(rel)
    if path is None:
        pytest.skip(corpus.missing_reason(rel))
    return path


def test_lost_events_parses_the_stat_of_a_trace_that_lost_events(work):
    """lost_events on what trace-cmd report --stat printed for a real trace
    (fixture s10-lost), through the fake trace-cmd: no trace-cmd needed."""
    (work / "s10.stat").write_text(LOST_STAT)
    env = script_env(work, extra={"FAKE_TC_STAT": str(work / "s10.stat")})
    r = subprocess.run(["bash", "-c", '. "$0"; set -euo pipefail; lost_events x.dat',
                        str(REPO / "collect" / "lib.sh")], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.strip().splitlines()]
    assert rows == [["0", "52634", "0", "0", "441064"], ["1", "281416", "0", "0", "438706"]]


def test_lost_events_fails_when_trace_cmd_cannot_tell(work):
    env = script_env(work, extra={"FAKE_TC_STAT_FAIL": "1"})
    r = subprocess.run(["bash", "-c", '. "$0"; lost_events x.dat', str(REPO / "collect" / "lib.sh")],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and r.stdout == ""


@pytest.mark.skipif(shutil.which("trace-cmd") is None, reason="trace-cmd is not installed")
def test_lost_events_parses_trace_cmd_stat():
    dat = corpus_fixture("k6.1/s10-lost/trace.dat")
    out = lib(f"lost_events {dat}")
    rows = [line.split() for line in out.strip().splitlines()]
    # CPU OVERRUN COMMIT_OVERRUN DROPPED READ, as in the fixture's .stat file
    assert rows == [["0", "52634", "0", "0", "441064"], ["1", "281416", "0", "0", "438706"]]


# ------------------------------------------- snapshot / restore (fake tracefs)

def test_restore_puts_back_what_a_recording_changed(work):
    """snapshot_tracefs + restore_tracefs on a fake tracefs of plain files: every
    setting a recording changes comes back (the real tracefs: tests/vm)."""
    t = fake_tracefs(work, functions=NFSD_FUNCS)
    files = {
        "tracing_on": "1", "max_graph_depth": "0", "tracing_cpumask": "3",
        "set_graph_function": "#### all functions enabled ####",
        "set_ftrace_filter": "#### all functions enabled ####",
        "set_ftrace_pid": "no pid", "options/sleep-time": "1", "options/funcgraph-irqs": "1",
        "per_cpu/cpu0/buffer_size_kb": "7", "per_cpu/cpu1/buffer_size_kb": "7",
    }
    for name, value in files.items():
        (t / name).parent.mkdir(parents=True, exist_ok=True)
        (t / name).write_text(value + "\n")
    changed = {  # what trace-cmd record -p function_graph -O nosleep-time ... leaves
        "current_tracer": "function_graph", "tracing_on": "0", "trace_clock": "global",
        "max_graph_depth": "3", "tracing_cpumask": "1", "set_graph_function": "nfsd3_proc_write",
        "set_ftrace_filter": "nfsd3_proc_write\nnfsd4_write", "set_event": "sched:sched_switch",
        "set_ftrace_pid": "42", "options/sleep-time": "0", "buffer_size_kb": "4096",
    }
    script = "T=$1; snapshot_tracefs; " + "; ".join(
        f"printf '%s\\n' {shlex.quote(v)} > \"$T/{k}\"" for k, v in changed.items()
    ) + "; restore_tracefs"
    lib(script, str(t))
    got = {k: (t / k).read_text().strip() for k in [*changed, *files]}
    assert got == {
        "current_tracer": "nop", "tracing_on": "1", "trace_clock": "local", "max_graph_depth": "0",
        "tracing_cpumask": "3", "set_graph_function": "", "set_ftrace_filter": "", "set_event": "",
        "set_ftrace_pid": "", "options/sleep-time": "1", "options/funcgraph-irqs": "1",
        "buffer_size_kb": "1408",  # the size the untouched "7 (expanded: 1408)" buffer would get
        "per_cpu/cpu0/buffer_size_kb": "7", "per_cpu/cpu1/buffer_size_kb": "7",
    }


def test_restore_after_a_recording_that_changed_nothing_writes_nothing(work):
    t = fake_tracefs(work, functions=NFSD_FUNCS)
    (t / "options" / "sleep-time").write_text("1\n")
    before = {p: p.stat().st_mtime_ns for p in t.rglob("*") if p.is_file()}
    lib("T=$1; snapshot_tracefs; restore_tracefs", str(t))
    after = {p: p.stat().st_mtime_ns for p in t.rglob("*") if p.is_file()}
    changed = sorted(str(p.relative_to(t)) for p in before if before[p] != after[p])
    assert changed == ["tracing_on"]  # tracing is switched off, then back to what it was


# ------------------------------------------------ the NULL-RPC client

def fake_nfs_server(replies_ok=True):
    """A one-connection ONC RPC server on 127.0.0.1 that answers every call
    like nfsd answers NULL; returns (port, thread, seen calls)."""
    import socket
    import struct
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    seen = []

    def serve():
        conn, _ = srv.accept()
        with conn:
            f = conn.makefile("rb")
            while True:
                mark = f.read(4)
                if len(mark) < 4:
                    break
                body = f.read(struct.unpack(">I", mark)[0] & 0x7FFFFFFF)
                xid, mtype, rpcvers, prog, vers, proc = struct.unpack(">6I", body[:24])
                seen.append((mtype, rpcvers, prog, vers, proc))
                accept = 0 if replies_ok else 1      # SUCCESS / PROG_UNAVAIL
                reply = struct.pack(">6I", xid, 1, 0, 0, 0, accept)  # REPLY, ACCEPTED, AUTH_NULL verf
                conn.sendall(struct.pack(">I", 0x80000000 | len(reply)) + reply)
        srv.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return srv.getsockname()[1], t, seen


@pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not installed")
def test_null_rpc_client_sends_null_calls_and_checks_replies():
    port, t, seen = fake_nfs_server()
    lib('perl -e "$FT_NULL_CLIENT" 127.0.0.1 "$1" 3 25', str(port))
    t.join(10)
    assert seen == [(0, 2, 100003, 3, 0)] * 25   # CALL, RPC v2, nfs, v3, NULL


@pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not installed")
def test_null_rpc_client_fails_on_a_bad_reply():
    port, t, seen = fake_nfs_server(replies_ok=False)
    r = subprocess.run(["bash", "-c", '. "$0"; perl -e "$FT_NULL_CLIENT" 127.0.0.1 "$1" 4 5',
                        str(REPO / "collect" / "lib.sh"), str(port)], capture_output=True, text=True, timeout=30)
    t.join(10)
    assert r.returncode != 0 and "bad reply to NULL call 1" in r.stderr
    assert len(seen) == 1
