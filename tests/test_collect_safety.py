"""collect.sh run as root cannot be subverted by a local user, stops cleanly on
signals, and never leaves a cut file under a final name (issue 13, items
10-14).

Each test runs the real collect.sh with the fakes of tests/helpers/collectfake.py: a
tracefs of plain files, a private lock directory, and a PATH of the basic
tools plus a fake trace-cmd that records nothing but runs the workload as
`trace-cmd record` does (in its own child, passing its fds on, finishing its
file on SIGINT). The workloads are short shell commands and `sleep`.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import holds_open
from helpers.collectfake import COLLECT, LOST_STAT, NFSD_FUNCS, fake_tracefs, script_env

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="collect.sh refuses to run but as root")


def collect_env(work, **fake):
    """The environment of a collect.sh run; fake: FAKE_TC_* settings (lower case)."""
    t = work / "tracefs"
    if not t.exists():
        fake_tracefs(work, functions=NFSD_FUNCS)
    return script_env(work, tracefs=t, extra={f"FAKE_TC_{k.upper()}": str(v) for k, v in fake.items()})


def collect(work, out, workload, env, *opts, timeout=60):
    return subprocess.run(["bash", str(COLLECT), "-g", "nfsd3_proc_write", "--no-calibrate", *opts,
                           "-o", str(out), "--", *workload],
                          cwd=work, env=env, capture_output=True, text=True, timeout=timeout)


def live_signals():
    """For a child: the terminating signals at their defaults. A shell cannot
    trap a signal that was ignored when it started, and the suite may itself
    run with SIGHUP ignored (under nohup): the collector as a user's terminal
    starts it has SIGHUP live."""
    for s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)


def start_collect(work, out, workload, env, *opts):
    return subprocess.Popen(["bash", str(COLLECT), "-g", "nfsd3_proc_write", "--no-calibrate", *opts,
                             "-o", str(out), "--", *workload],
                            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=live_signals)


def wait_for(path: Path, proc=None, seconds=20.0) -> str:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"collect.sh ended early ({proc.returncode}): {proc.stderr.read()}")
        time.sleep(0.05)
    raise AssertionError(f"{path} did not appear in {seconds} s")


def alive(pid: int) -> bool:
    """pid runs (a zombie waiting for its parent has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def meta(out: Path) -> dict:
    return json.loads((out / "meta.json").read_text())


def assert_tracefs_restored(work):
    t = work / "tracefs"
    assert (t / "current_tracer").read_text().strip() == "nop"
    assert (t / "tracing_on").read_text().strip() == "1"
    assert (t / "set_event").read_text().strip() == ""


def one_line(r):
    assert "Traceback" not in r.stderr
    return r.stderr


# ---------------------------------------------------- item 10: the lock

def test_lock_is_a_root_only_directory_with_nothing_written_in_it(work):
    env = collect_env(work)
    r = collect(work, work / "run", ["true"], env)
    assert r.returncode == 0, r.stderr
    lock = work / "lock"
    st = lock.lstat()
    assert lock.is_dir() and not lock.is_symlink()
    assert st.st_uid == 0 and (st.st_mode & 0o777) == 0o700
    assert list(lock.iterdir()) == []   # a flock on the directory: no file to follow or truncate
    assert meta(work / "run")["complete"] is True


@pytest.mark.parametrize("setup", ["world-writable", "symlink", "not-root's"])
def test_refuses_a_lock_directory_others_could_subvert(work, setup):
    """/run/lock is world-writable: a user could plant a symlink where root
    opens the lock, or hold the lock. Such a directory is refused, and the
    file a planted link points to is never written."""
    victim = work / "victim"
    victim.write_text("precious\n")
    lock = work / "lock"
    if setup == "world-writable":
        lock.mkdir()
        lock.chmod(0o1777)
        (lock / "collect.lock").symlink_to(victim)
        (lock / "ftflame-collect.lock").symlink_to(victim)
    elif setup == "symlink":
        real = work / "elsewhere"
        real.mkdir(mode=0o700)
        lock.symlink_to(real)
    else:
        lock.mkdir(mode=0o700)
        os.chown(lock, 65534, 65534)
    env = collect_env(work)
    r = collect(work, work / "run", ["true"], env)
    assert r.returncode == 2, r.stderr
    lines = one_line(r).strip().splitlines()
    assert len(lines) == 1 and "unsafe lock directory" in lines[0] and str(lock) in lines[0], r.stderr
    assert victim.read_text() == "precious\n"
    assert not (work / "run").exists()


def test_refusal_names_the_collector_holding_the_lock(work):
    env = collect_env(work, pidfile=work / "tc.pid")
    first = start_collect(work, work / "run1", ["sleep", "30"], env)
    try:
        wait_for(work / "tc.pid", first)
        r = collect(work, work / "run2", ["true"], env)
        assert r.returncode == 2
        line = r.stderr.strip()
        assert len(line.splitlines()) == 1
        assert "another ftflame collector is running" in line
        assert f"pid {first.pid} (" in line and "collect.sh" in line, line
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=20)


def test_calibrate_run_by_collect_shares_its_lock(work):
    """calibrate.sh under collect.sh takes the lock through the fd collect.sh
    passes it (and only it): not refused as "another collector". Here it then
    stops at the NULL-RPC client, as no NFS server answers."""
    env = collect_env(work)
    r = subprocess.run(["bash", str(COLLECT), "-g", "nfsd3_proc_write", "--calib-count", "3",
                        "-o", str(work / "run"), "--", "true"],
                       cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert "another ftflame collector" not in r.stderr
    assert "calibrate.sh: error: the perl NULL-RPC client failed against 127.0.0.1" in r.stderr
    assert meta(work / "run")["calibration"]["status"] == "failed"


# ------------------------------------------- item 11: the lock fd is not inherited

def test_what_the_workload_leaves_behind_does_not_hold_the_lock(work):
    """A workload that leaves a process behind (nohup sleep &): neither it nor
    trace-cmd has the lock open, and the next run is not refused."""
    log = work / "tc.log"
    env = collect_env(work, log=log)
    leave = ["sh", "-c", "sleep 60 </dev/null >/dev/null 2>&1 & echo $! >left.pid"]
    r = collect(work, work / "run1", leave, env)
    assert r.returncode == 0, r.stderr
    left = int((work / "left.pid").read_text())
    try:
        assert alive(left)
        lock = work / "lock"
        assert not holds_open(left, lock)
        fds = json.loads(log.read_text().splitlines()[0])["fds"]
        assert str(lock) not in fds.values()          # trace-cmd did not get it either
        r2 = collect(work, work / "run2", ["true"], env)
        assert r2.returncode == 0, r2.stderr
    finally:
        os.kill(left, signal.SIGKILL)


# --------------------------------------- item 12: unknown lost events are not zero

def test_lost_events_unknown_when_trace_cmd_cannot_tell(work):
    env = collect_env(work, stat_fail=1)
    r = collect(work, work / "run", ["true"], env)
    assert r.returncode == 0, r.stderr
    assert "no lost events" not in r.stderr
    assert "WARNING: lost events in trace.dat are UNKNOWN" in r.stderr
    m = meta(work / "run")
    assert m["lost_events_total"] is None and m["lost_events"] is None
    assert any("UNKNOWN" in w for w in m["warnings"])


def test_lost_events_counted_from_trace_cmd_stat(work):
    (work / "lost.stat").write_text(LOST_STAT)
    env = collect_env(work, stat=work / "lost.stat")
    r = collect(work, work / "run", ["true"], env)
    assert r.returncode == 0, r.stderr
    m = meta(work / "run")
    assert m["lost_events_total"] == 52634 + 281416
    assert m["lost_events"]["1"] == {"lost": 281416, "overrun": 281416, "commit_overrun": 0,
                                     "dropped": 0, "read": 438706}
    assert "LOST EVENTS: 334050 events lost in trace.dat" in r.stderr


# ---------------------------------------------------- item 13: signals, orphans

WORKLOAD = ["sh", "-c", "echo $$ >workload.pid; exec sleep 60"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_signal_stops_workload_and_trace_cmd_at_once(work, sig):
    env = collect_env(work, pidfile=work / "tc.pid")
    proc = start_collect(work, work / "run", WORKLOAD, env)
    tc = int(wait_for(work / "tc.pid", proc))
    workload = int(wait_for(work / "workload.pid", proc))
    assert (work / "tracefs" / "current_tracer").read_text().strip() == "function_graph"
    t0 = time.monotonic()
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
    took = time.monotonic() - t0
    assert took < 3.5, f"collect.sh took {took:.1f} s to stop"
    assert proc.returncode == 128 + sig, err
    assert not alive(workload) and not alive(tc)
    assert_tracefs_restored(work)
    assert f"interrupted by {sig.name}: tracefs restored" in err
    out = work / "run"
    assert not (out / "trace.dat").exists()
    m = meta(out)
    assert m["complete"] is False and m["incomplete_reason"] == f"interrupted by {sig.name}"
    assert list(out.glob(".*tmp")) == []


def test_trace_cmd_killed_stops_the_workload(work):
    env = collect_env(work, pidfile=work / "tc.pid")
    proc = start_collect(work, work / "run", WORKLOAD, env)
    tc = int(wait_for(work / "tc.pid", proc))
    workload = int(wait_for(work / "workload.pid", proc))
    t0 = time.monotonic()
    os.kill(tc, signal.SIGKILL)
    try:
        _, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
    took = time.monotonic() - t0
    assert took < 3.5, f"collect.sh took {took:.1f} s after trace-cmd died"
    assert proc.returncode == 1, err
    assert not alive(workload)
    assert "trace-cmd record failed (exit 137: killed by KILL)" in err
    assert_tracefs_restored(work)
    m = meta(work / "run")
    assert m["complete"] is False and "trace-cmd record failed" in m["incomplete_reason"]
    assert m["trace"] is None


# --------------------------------------------------------- item 14: disk full

def test_failed_recording_never_leaves_a_trace_dat(work):
    env = collect_env(work, fail=1, bytes=100000)
    r = collect(work, work / "run", ["true"], env)
    assert r.returncode == 1
    out = work / "run"
    assert not (out / "trace.dat").exists()
    assert (out / "trace.dat.partial").stat().st_size > 100000
    assert "what it wrote is in trace.dat.partial, not a complete trace" in r.stderr
    m = meta(out)
    assert m["complete"] is False and m["trace"] is None and m["partial_trace"] == "trace.dat.partial"
    assert "trace-cmd record failed (exit 1)" in m["incomplete_reason"]


@pytest.fixture
def small_disk(work):
    """A 256 KB tmpfs (root only; skipped where mounting is not allowed)."""
    d = work / "disk"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs", str(d)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {r.stderr.strip()}")
    yield d
    subprocess.run(["umount", "-l", str(d)], check=False)


def test_disk_full_while_recording(work, small_disk):
    out = small_disk / "run"
    env = collect_env(work, bytes=1 << 20)
    r = collect(work, out, ["true"], env)
    assert r.returncode == 1
    assert not (out / "trace.dat").exists()
    assert "trace-cmd record failed (exit 1) for trace.dat (the disk is full: 0 KB free" in r.stderr
    # No room left for meta.json either: one line says so, no temporary file.
    assert f"collect.sh: error: cannot write {out}/meta.json: No space left on device" in r.stderr
    assert not (out / "meta.json").exists()
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []


def test_disk_full_while_writing_meta_json(work, small_disk):
    out = small_disk / "run"
    env = collect_env(work, fill=small_disk / "filler")
    r = collect(work, out, ["true"], env)
    assert r.returncode == 1
    assert (out / "trace.dat").exists()
    err = r.stderr.strip().splitlines()
    assert err[-1].startswith(f"collect.sh: error: cannot write {out}/meta.json: No space left on device"), err
    assert "the disk is full" in err[-1]
    assert "write error" not in r.stderr.replace(err[-1], "")
    assert not (out / "meta.json").exists()
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []


def nfs_null_server():
    """An ONC RPC server on 127.0.0.1 that answers every call on every
    connection like nfsd answers NULL; returns its port (daemon threads)."""
    import socket
    import struct
    import threading
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)

    def serve(conn):
        with conn, conn.makefile("rb") as f:
            try:
                while len(mark := f.read(4)) == 4:
                    body = f.read(struct.unpack(">I", mark)[0] & 0x7FFFFFFF)
                    xid = struct.unpack(">I", body[:4])[0]
                    reply = struct.pack(">6I", xid, 1, 0, 0, 0, 0)  # REPLY, ACCEPTED, SUCCESS
                    conn.sendall(struct.pack(">I", 0x80000000 | len(reply)) + reply)
            except OSError:  # the client was stopped
                return

    def accept():
        while True:
            conn, _ = srv.accept()
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return srv.getsockname()[1]


@pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not installed")
def test_calibrate_stops_its_recording_on_sigterm(work):
    """calibrate.sh alone: SIGTERM while the NULL RPCs run under trace-cmd
    stops them and trace-cmd at once and restores tracefs."""
    from helpers.collectfake import CALIBRATE
    env = collect_env(work, pidfile=work / "tc.pid")
    port = nfs_null_server()
    proc = subprocess.Popen(["bash", str(CALIBRATE), "--port", str(port), "--count", "100000000",
                             "-o", str(work / "cal")],
                            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=live_signals)
    tc = int(wait_for(work / "tc.pid", proc))
    time.sleep(0.3)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
    assert time.monotonic() - t0 < 3.5
    assert proc.returncode == 143, err
    assert "interrupted by SIGTERM" in err
    assert not alive(tc)
    assert_tracefs_restored(work)
    assert not (work / "cal" / "calib-null.dat").exists()


# ------------------------------------- the output folder: nothing planted is used

@pytest.mark.parametrize("owner", ["world-writable", "another user's"])
def test_links_planted_in_the_output_folder_are_never_followed(work, owner):
    """-o into a folder another user can write to, where links wait at the
    names of the run's files: refused, and what they point to is untouched."""
    pub = work / "pub"
    pub.mkdir()
    if owner == "world-writable":
        pub.chmod(0o1777)
    else:
        os.chown(pub, 65534, 65534)
    victim = work / "victim"
    victim.write_text("precious\n")
    for name in ("workload.log", "record.log", "meta.json"):
        (pub / name).symlink_to(victim)
    r = collect(work, pub, ["echo", "written through the link"], collect_env(work))
    assert r.returncode == 2, r.stderr
    lines = one_line(r).strip().splitlines()
    assert len(lines) == 1 and f"unsafe output folder {pub}" in lines[0], r.stderr
    assert victim.read_text() == "precious\n"


@pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not installed")
def test_calibrate_refuses_a_folder_others_can_write_to(work):
    from helpers.collectfake import CALIBRATE
    pub = work / "pub"
    pub.mkdir()
    pub.chmod(0o1777)
    victim = work / "victim"
    victim.write_text("precious\n")
    for name in ("calib-rpc.log", "record.log"):
        (pub / name).symlink_to(victim)
    r = subprocess.run(["bash", str(CALIBRATE), "--port", str(nfs_null_server()), "--count", "3",
                        "-o", str(pub)], cwd=work,
                       env=collect_env(work), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    lines = one_line(r).strip().splitlines()
    assert len(lines) == 1 and f"unsafe output folder {pub}" in lines[0], r.stderr
    assert victim.read_text() == "precious\n"


def test_default_folder_taken_by_another_user_is_not_used(work):
    """The default ./ftflame-DATE is predictable: in a world-writable folder a
    user can make it first, with links in it. collect.sh then makes a new
    folder beside it, root's own."""
    pub = work / "pub"
    pub.mkdir()
    pub.chmod(0o1777)
    victim = work / "victim"
    victim.write_text("precious\n")
    now = time.time()
    for s in range(-1, 30):
        d = pub / time.strftime("ftflame-%Y%m%d-%H%M%S", time.localtime(now + s))
        d.mkdir()
        (d / "workload.log").symlink_to(victim)
        (d / "record.log").symlink_to(victim)
        os.chown(d, 65534, 65534, follow_symlinks=False)
        d.chmod(0o777)
    r = subprocess.run(["bash", str(COLLECT), "-g", "nfsd3_proc_write", "--no-calibrate", "--",
                        "echo", "written through the link"],
                       cwd=pub, env=collect_env(work), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == "precious\n"
    runs = [d for d in pub.iterdir() if (d / "meta.json").exists()]
    assert len(runs) == 1, r.stderr
    st = runs[0].lstat()
    assert st.st_uid == 0 and (st.st_mode & 0o777) == 0o755
    assert (runs[0] / "workload.log").read_text() == "written through the link\n"


# ------------------------------------------ one run per folder, or --force

def test_refuses_a_folder_holding_a_previous_run(work):
    """A run that failed leaves no trace.dat, only trace.dat.partial and a
    meta.json saying so: a second run there is refused, the first kept as is."""
    out = work / "run"
    r1 = collect(work, out, ["true"], collect_env(work, fail=1, bytes=1000))
    assert r1.returncode == 1 and (out / "trace.dat.partial").exists(), r1.stderr
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    r2 = collect(work, out, ["echo", "second"], collect_env(work))
    assert r2.returncode == 2, r2.stderr
    lines = one_line(r2).strip().splitlines()
    assert len(lines) == 1 and f"{out} holds a previous run" in lines[0] and "--force" in lines[0]
    assert "trace.dat.partial" in lines[0] and "meta.json" in lines[0]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_force_replaces_a_previous_run_whole(work):
    """--force into a run's folder: nothing of the old run stays beside the
    new one (its baseline.dat would contradict the new meta.json)."""
    out = work / "run"
    env = collect_env(work)
    r1 = collect(work, out, ["echo", "first"], env, "--baseline")
    assert r1.returncode == 0, r1.stderr
    assert (out / "baseline.dat").exists()
    r2 = collect(work, out, ["echo", "second"], env, "--force")
    assert r2.returncode == 0, r2.stderr
    assert "--force: removed the previous run's files" in r2.stderr
    assert not (out / "baseline.dat").exists() and not (out / "baseline-workload.log").exists()
    assert (out / "workload.log").read_text() == "second\n"
    assert meta(out)["baseline"] is None and meta(out)["complete"] is True


# ------------------------------------------------- killed with SIGKILL

def children(pid: int) -> list:
    """(pid, command name) of the processes whose parent is pid."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        if int(text.rsplit(")", 1)[1].split()[1]) == pid:
            out.append((int(stat.parent.name), comm))
    return out


def knob_env(work, **fake):
    env = collect_env(work, **fake)
    (work / "tracefs" / "buffer_percent").write_text("50\n")
    return env


def buffer_percent(work) -> str:
    return (work / "tracefs" / "buffer_percent").read_text().strip()


def wait_until(cond, seconds=8.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def test_sigkill_of_the_collector_stops_trace_cmd_and_the_workload_and_restores(work):
    """No trap runs on SIGKILL: trace-cmd and the workload still die with
    the collector, and the tracefs settings it changed are put back."""
    env = knob_env(work, pidfile=work / "tc.pid")
    proc = start_collect(work, work / "run", WORKLOAD, env, "--buffer-percent", "100")
    tc = int(wait_for(work / "tc.pid", proc))
    workload = int(wait_for(work / "workload.pid", proc))
    try:
        assert buffer_percent(work) == "100"
        proc.kill()
        proc.wait()
        assert wait_until(lambda: not alive(tc) and not alive(workload)), "left running"
        assert wait_until(lambda: list((work / "lock").iterdir()) == [])
        assert buffer_percent(work) == "50"
        assert_tracefs_restored(work)
        _, err = proc.communicate(timeout=15)
        assert "was killed: stopping what it recorded, putting tracefs back" in err
    finally:
        for pid in (tc, workload):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not installed")
def test_sigkill_of_calibrate_stops_its_recording_and_restores(work):
    """calibrate.sh alone, killed with SIGKILL while the NULL RPCs run under
    trace-cmd: they stop, and tracefs is put back from what it saved."""
    from helpers.collectfake import CALIBRATE
    env = knob_env(work, pidfile=work / "tc.pid")
    proc = subprocess.Popen(["bash", str(CALIBRATE), "--port", str(nfs_null_server()), "--count", "100000000",
                             "--buffer-percent", "100", "-o", str(work / "cal")],
                            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=live_signals)
    tc = int(wait_for(work / "tc.pid", proc))
    try:
        assert buffer_percent(work) == "100"
        proc.kill()
        proc.wait()
        assert wait_until(lambda: not alive(tc)), "trace-cmd left running"
        assert wait_until(lambda: list((work / "lock").iterdir()) == [])
        assert buffer_percent(work) == "50"
        assert_tracefs_restored(work)
    finally:
        if alive(tc):
            os.killpg(tc, signal.SIGKILL)
    proc.communicate(timeout=15)


@pytest.mark.parametrize("how", ["--restore", "the next run"])
def test_what_a_killed_collector_left_is_put_back(work, how):
    """The collector and its watchdog both killed (as by the OOM killer): the
    settings to put back wait beside the lock, and collect.sh --restore, or
    the next run (--force, as tracefs looks busy), puts back those, not the
    leftovers."""
    env = knob_env(work, pidfile=work / "tc.pid")
    proc = start_collect(work, work / "run", WORKLOAD, env, "--buffer-percent", "100")
    tc = int(wait_for(work / "tc.pid", proc))
    workload = int(wait_for(work / "workload.pid", proc))
    try:
        for pid, comm in children(proc.pid):
            if comm == "bash":
                os.kill(pid, signal.SIGKILL)
        proc.kill()
        proc.wait()
        assert alive(tc) and alive(workload)
    finally:
        os.killpg(tc, signal.SIGKILL)  # (trace-cmd leads the recording's group)
    proc.communicate(timeout=15)
    assert buffer_percent(work) == "100"   # left changed
    if how == "--restore":
        r = subprocess.run(["bash", str(COLLECT), "--restore"], cwd=work, env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert "left tracefs changed: putting back the settings it saved" in r.stderr
    else:
        r = collect(work, work / "run2", ["true"], env, "--force")
        assert r.returncode == 0, r.stderr
        assert meta(work / "run2")["tracer_options"]["buffer_percent"] == 50
    assert buffer_percent(work) == "50"
    assert_tracefs_restored(work)
    assert list((work / "lock").iterdir()) == []


# ------------- the run folder: no other user can swap it while root writes

# What the probe did, as another user: wait for a run's workload.log to
# appear under H, rename the run folder away and put in its place a folder
# whose record.log and workload.log are links to a file of root's. Polls
# every 10 ms (no inotify tool in the basic set); says "swapped" or why not.
SWAPPER = r"""
H=$1 victim=$2 end=$((SECONDS + 20))
while ((SECONDS < end)); do
	for log in "$H"/*/workload.log; do
		[ -e "$log" ] || continue
		run=${log%/workload.log}
		mv -- "$run" "$run.moved" 2>&1 || { echo "cannot rename $run"; exit 3; }
		mkdir -- "$run" && ln -s -- "$victim" "$run/record.log" && ln -s -- "$victim" "$run/workload.log"
		echo swapped
		exit 0
	done
	sleep 0.01
done
echo "no run folder appeared"
exit 1
"""


@pytest.fixture
def other_user():
    """A real second user (and its group), made for the test, removed after."""
    import pwd
    if shutil.which("useradd") is None or shutil.which("userdel") is None:
        pytest.skip("needs useradd and userdel (passwd) to make a second user")
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux) to run as the second user")
    name = f"ftfl-swap-{os.getpid()}"
    r = subprocess.run(["useradd", "--system", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin",
                        name], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot make a second user here: {r.stderr.strip()}")
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True)


def start_swapper(work, other_user, folder):
    """A root-only file (the target) and the other user's SWAPPER process
    watching `folder`: (victim, its Popen)."""
    victim = work / "victim"
    victim.write_text("precious\n")
    victim.chmod(0o600)
    (work / "swap.sh").write_text(SWAPPER)
    swapper = subprocess.Popen(["setpriv", f"--reuid={other_user.pw_uid}", f"--regid={other_user.pw_gid}",
                                "--clear-groups", "bash", str(work / "swap.sh"), str(folder), str(victim)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return victim, swapper


@pytest.mark.parametrize("folder", ["owned by the user", "writable by the user's group", "default in the user's folder"])
def test_another_user_cannot_swap_the_run_folder(work, other_user, folder):
    """H is a folder another user can change: theirs (mode 0755, as a home
    folder is), or root's but writable by their group. While collect.sh
    records into H/run1 (or the default ./ftflame-DATE in H), that user
    swaps it for a folder of links to a file of root's (mode 0600). The run
    is refused before anything is made in H, and the file stays as it was.
    (Before: the ancestor check let both folders pass, and root appended
    trace-cmd's summary and the workload's output to the file.)"""
    home = work / "home"
    home.mkdir()
    if folder == "writable by the user's group":
        os.chown(home, 0, other_user.pw_gid)
        home.chmod(0o775)
    else:
        os.chown(home, other_user.pw_uid, other_user.pw_gid)
        home.chmod(0o755)
    victim, swapper = start_swapper(work, other_user, home)
    try:
        out = [] if folder.startswith("default") else ["-o", str(home / "run1")]
        r = subprocess.run(["bash", str(COLLECT), "-g", "nfsd3_proc_write", "--no-calibrate", "--baseline", *out,
                            "--", "sh", "-c", "sleep 2; echo the workload output"],
                           cwd=home if folder.startswith("default") else work, env=collect_env(work),
                           capture_output=True, text=True, timeout=60)
    finally:
        swapper.kill()
        swapped = swapper.communicate()[0]
    assert victim.read_text() == "precious\n", f"root wrote into the file through the links ({swapped.strip()})"
    assert r.returncode == 2, r.stderr
    lines = one_line(r).strip().splitlines()
    assert len(lines) == 1 and "unsafe output folder" in lines[0], r.stderr
    why = "is writable by its group" if "group" in folder else f"is owned by {other_user.pw_name}"
    assert f"{home} {why}" in lines[0], lines[0]
    assert list(home.iterdir()) == []


def test_a_sticky_folder_holds_the_run_folder_root_made(work, other_user):
    """In a sticky world-writable folder (/tmp's mode) the run folder root
    makes cannot be renamed by another user: the run goes on, the swap fails
    and the file the links would point to stays as it was."""
    pub = work / "pub"
    pub.mkdir()
    pub.chmod(0o1777)
    victim, swapper = start_swapper(work, other_user, pub)
    try:
        r = collect(work, pub / "run1", ["sh", "-c", "sleep 1; echo the workload output"],
                    collect_env(work), "--baseline")
    finally:
        swapper.kill()
        swapped = swapper.communicate()[0]
    assert r.returncode == 0, r.stderr
    assert "cannot rename" in swapped, swapped
    assert victim.read_text() == "precious\n"
    assert (pub / "run1" / "workload.log").read_text() == "the workload output\n"
    assert "CPU0 data recorded" in (pub / "run1" / "record.log").read_text()


# ------------------- --restore reads the saved settings as data, never runs them

def restore_with(work, text: str):
    """collect.sh --restore with text as the saved settings beside the lock."""
    env = collect_env(work)
    lock = work / "lock"
    lock.mkdir(mode=0o700)
    state = lock / "tracefs-restore"
    state.write_text(text.replace("@T@", str(work / "tracefs")).replace("@W@", str(work)))
    state.chmod(0o600)
    victim = work / "victim"
    victim.write_text("precious\n")
    before = {p: p.read_bytes() for p in (work / "tracefs").rglob("*") if p.is_file()}
    r = subprocess.run(["bash", str(COLLECT), "--restore"], cwd=work, env=env,
                       capture_output=True, text=True, timeout=60)
    after = {p: p.read_bytes() for p in (work / "tracefs").rglob("*") if p.is_file()}
    return r, state, victim, before, after


HOSTILE_STATES = {
    # the old format, which the collector sourced: each line would run
    "command substitution": ("# tracefs settings to put back\nFT_SAVED_T=@T@\n"
                             "FT_SNAP[current_tracer]=nop\ntouch @W@/ran-1\n"
                             "FT_SNAP[tracing_on]=$(touch @W@/ran-2)1\n"),
    # ... and a path out of tracefs: T/options/../../victim is W/victim
    "../ in a name": ("FT_SAVED_T=@T@\nFT_SNAP[current_tracer]=nop\nFT_SNAP[tracing_on]=1\n"
                      "FT_SNAP[options/../../victim]=written\n"),
    # the data format, with the same tricks: refused as a whole, nothing written
    "../ in a data name": ("ftflame-tracefs-restore/2\nT=@T@\nS:current_tracer=nop\nS:tracing_on=1\n"
                           "S:options/../../victim=written\n"),
    "another path as tracefs": ("ftflame-tracefs-restore/2\nT=@W@\nS:current_tracer=nop\nS:tracing_on=1\n"
                                "S:options/x=$(touch @W@/ran-3)\n"),
    "not a setting": ("ftflame-tracefs-restore/2\nT=@T@\nS:current_tracer=nop\nS:tracing_on=1\n"
                      "S:$(touch @W@/ran-4)=1\n"),
}


@pytest.mark.parametrize("case", list(HOSTILE_STATES))
def test_restore_runs_nothing_and_writes_nothing_outside_tracefs(work, case):
    """A saved-settings file that holds code or paths out of tracefs: --restore
    refuses it whole (one line, exit 2, the file kept): no command of it
    runs, nothing is written, in tracefs or out of it. (Before: the file was
    sourced: its commands ran, and options/../../victim was written.)"""
    r, state, victim, before, after = restore_with(work, HOSTILE_STATES[case])
    assert sorted(p.name for p in work.glob("ran-*")) == [], "a command of the saved file ran"
    assert victim.read_text() == "precious\n"
    assert after == before
    assert r.returncode == 2, r.stderr
    lines = one_line(r).strip().splitlines()
    assert len(lines) == 1 and "cannot read the tracefs settings to put back" in lines[0], r.stderr
    assert state.exists()


def test_restore_reads_values_with_newlines_and_percents_back(work):
    """The data format keeps every value as it was: list files of several
    lines, a % in a value."""
    t = fake_tracefs(work, functions=NFSD_FUNCS)
    (t / "options").mkdir(exist_ok=True)
    (t / "set_ftrace_filter").write_text("vfs_write\nvfs_read\n")
    (t / "options" / "odd").write_text("50%0A%25\n")
    env = collect_env(work)
    script = ('. "$0"; T=$1; FT_LOCK_DIR=$2; FT_STATE_NAME=s; snapshot_tracefs; declare -A want; '
              'for k in "${!FT_SNAP[@]}"; do want[$k]=${FT_SNAP[$k]}; done; read_tracefs_state "$2/s"; '
              'for k in "${!want[@]}"; do [ "${FT_SNAP[$k]}" = "${want[$k]}" ] || echo "differs: $k"; done; '
              'echo "${#FT_SNAP[@]} ${#want[@]}"; printf "%s|" "${FT_SNAP[set_ftrace_filter]}" "${FT_SNAP[options/odd]}"')
    (work / "st").mkdir(mode=0o700)
    r = subprocess.run(["bash", "-c", script, str(COLLECT.parent / "lib.sh"), str(t), str(work / "st")],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert "differs" not in r.stdout, r.stdout
    n, m = out[0].split()
    assert n == m and int(n) > 5
    assert r.stdout.endswith("vfs_write\nvfs_read|50%0A%25|")


def test_a_new_output_path_with_dot_dot_is_refused_before_anything_is_made(work):
    """-o x/../run: the folders to make are made one by one, each in a
    folder checked first; a .. among them is refused, and nothing is made."""
    r = collect(work, "x/../run", ["true"], collect_env(work))
    assert r.returncode == 2, r.stderr
    lines = one_line(r).strip().splitlines()
    assert len(lines) == 1 and "'..' in the folders to make" in lines[0], r.stderr
    assert not (work / "x").exists() and not (work / "run").exists()
