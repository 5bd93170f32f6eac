"""Outputs safe as root (issue 13 items 1-5): what `-o` does to devices,
FIFOs, links, the input itself, modes and a full stdout; terminating
signals leave no temporary file; the package imports without cycles."""
from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, SAMPLE, sigint_as_default
from helpers import corpus

FTFLAME = [sys.executable, "-m", "ftflame.cli"]
BIG_REL = "k6.1/s14-v3-write-big/trace.dat"  # 75 MB of JSON: a write long enough to signal
BIG = corpus.in_corpus(BIG_REL)


def run(*args, **kw):
    return subprocess.run([*FTFLAME, *args], capture_output=True, text=True, **kw)


def temp_files(directory) -> list:
    return [f for f in os.listdir(directory) if f.startswith(".ftflame-")]


def mknod_or_skip(path, kind, major=1, minor=3):
    """A node made by the test (never the system's /dev/null)."""
    try:
        os.mknod(path, kind | 0o666, os.makedev(major, minor))
    except PermissionError:
        pytest.skip("making a device node needs root (CI runs the tests as root)")


# ---- item 1: devices, FIFOs, terminals are written in place; links replaced ----------

def test_device_node_target_is_written_in_place_not_replaced(tmp_path):
    null = tmp_path / "null"
    mknod_or_skip(str(null), stat.S_IFCHR, 1, 3)
    proc = run("report", SAMPLE, "-o", str(null), "-F", "txt")
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(os.lstat(null).st_mode) and os.lstat(null).st_rdev == os.makedev(1, 3)
    assert "in place" in proc.stderr
    assert temp_files(tmp_path) == []


def test_fifo_target_gets_the_report_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    proc = run("report", SAMPLE, "-o", str(fifo), "-F", "txt", timeout=60)
    reader.join(10)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got and got[0].startswith(b"ftflame report:")
    assert temp_files(tmp_path) == []


def test_symlink_target_is_replaced_and_what_it_points_to_untouched(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    link = tmp_path / "r.txt"
    link.symlink_to(victim)
    proc = run("report", SAMPLE, "-o", str(link))
    assert proc.returncode == 0, proc.stderr
    assert not os.path.islink(link) and link.read_text().startswith("ftflame report:")
    assert victim.read_text() == "keep me\n"


def test_symlink_to_a_fifo_is_refused_and_left_alone(tmp_path):
    """Like /dev/stdout as root: replacing the link would break it, and
    following links to nodes could write onto a disk."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "stdout"
    link.symlink_to(fifo)
    proc = run("report", SAMPLE, "-o", str(link), "-F", "txt", timeout=60)
    assert proc.returncode == 2 and "symbolic link" in proc.stderr, proc.stderr
    assert os.path.islink(link) and os.readlink(link) == str(fifo)
    assert temp_files(tmp_path) == []


def test_help_and_readme_state_the_rule():
    helptext = run("report", "--help").stdout
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    for text in (helptext, readme):
        flat = " ".join(text.split())
        assert "in place" in flat and "symbolic link" in flat, flat[:200]


# ---- item 2: the output is the input ------------------------------------------------

def test_output_that_is_the_input_is_refused(tmp_path):
    trace = tmp_path / "same.dat"
    trace.write_bytes(open(SAMPLE, "rb").read())
    before = trace.read_bytes()
    hard = tmp_path / "hard.json"
    os.link(trace, hard)
    for out in (trace, hard):
        proc = run("report", str(trace), "-o", str(out), "-F", "json")
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "is the input" in proc.stderr
    assert trace.read_bytes() == before
    assert temp_files(tmp_path) == []


def test_calibrate_output_that_is_an_input_is_refused(tmp_path):
    traces = []
    for name in ("a.dat", "b.dat", "c.dat"):
        (tmp_path / name).write_bytes(open(SAMPLE, "rb").read())
        traces.append(str(tmp_path / name))
    proc = run("calibrate", "--from-traces", *traces, "-o", traces[2])
    assert proc.returncode == 2 and "is the input" in proc.stderr, proc.stderr
    assert open(traces[2], "rb").read() == open(SAMPLE, "rb").read()


# ---- item 4: modes ------------------------------------------------------------------

def test_new_output_honours_the_umask(tmp_path):
    out = tmp_path / "r.txt"
    proc = subprocess.run(["sh", "-c", 'umask 077 && exec "$@"', "sh", *FTFLAME, "report", SAMPLE,
                           "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600


def test_replaced_output_keeps_its_mode(tmp_path):
    out = tmp_path / "r.txt"
    out.write_text("old\n")
    os.chmod(out, 0o640)
    assert run("report", SAMPLE, "-o", str(out)).returncode == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o640
    assert out.read_text().startswith("ftflame report:")


# ---- item 5: stdout that cannot be written --------------------------------------------

def test_full_stdout_is_one_line_and_exit_2(tmp_path):
    full = tmp_path / "full"
    mknod_or_skip(str(full), stat.S_IFCHR, 1, 7)  # the kernel's "full" device
    with open(full, "wb") as f:
        proc = subprocess.run([*FTFLAME, "report", SAMPLE], stdout=f, stderr=subprocess.PIPE, text=True)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "stdout" in lines[0] and "No space left" in lines[0], proc.stderr
    assert "internal error" not in proc.stderr


# ---- item 3: terminating signals mid-write ---------------------------------------------

@pytest.mark.skipif(BIG is None, reason=corpus.missing_reason(BIG_REL))
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_during_the_write_leaves_no_temporary_file(tmp_path, sig):
    """A real report of the big trace to JSON (75 MB), signalled once its
    temporary file exists: it goes, and so does the report."""
    out = tmp_path / "r.json"
    proc = subprocess.Popen([*FTFLAME, "report", BIG, "-o", str(out)], stderr=subprocess.PIPE, text=True,
                            preexec_fn=sigint_as_default)
    deadline = time.monotonic() + 120
    while not temp_files(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    if proc.poll() is not None:
        pytest.skip("the report finished before its temporary file was seen")
    proc.send_signal(sig)
    err = proc.communicate(timeout=120)[1]
    if proc.returncode == 0:
        pytest.skip("the report finished before the signal")
    assert proc.returncode == (130 if sig == signal.SIGINT else 128 + sig), err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert os.listdir(tmp_path) == []


# ---- issue 37 item 2: a disk that fills up mid-report ----------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 64 KiB tmpfs: the first 64 KiB of a report fit, the rest does not
    (the kernel takes a short write, then refuses: what a real disk filling
    up does, and what /dev/full, which refuses the first byte, cannot show)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", str(mnt)],
                       check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"mounting a small tmpfs needs root and mount(8): {e}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _one_line_out_of_space(proc) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "No space left" in lines[0], proc.stderr
    assert "internal error" not in proc.stderr


@pytest.mark.parametrize("args", [["report", SAMPLE, "-F", "json"], ["report", SAMPLE, "-F", "json", "-o", "-"],
                                  ["report", SAMPLE, "-F", "html"],
                                  ["diff", SAMPLE, SAMPLE, "-F", "json"]],
                         ids=["report-json", "report-o-dash", "report-html", "diff-json"])
def test_stdout_filling_a_disk_is_one_line_and_exit_2(small_disk, args):
    """Before: 65,536 bytes of the report, exit 0, nothing said (a short
    write's count was not checked)."""
    with open(small_disk / "x.out", "wb") as f:
        proc = subprocess.run([*FTFLAME, *args], stdout=f, stderr=subprocess.PIPE, text=True)
    _one_line_out_of_space(proc)
    assert "stdout" in proc.stderr


def test_output_file_filling_a_disk_keeps_the_previous_one(small_disk):
    out = small_disk / "x.json"
    out.write_text("the previous report\n")
    proc = run("report", SAMPLE, "-o", str(out))
    _one_line_out_of_space(proc)
    assert out.read_text() == "the previous report\n"
    assert temp_files(small_disk) == []


def _full_device(tmp_path):
    full = tmp_path / "full"
    mknod_or_skip(str(full), stat.S_IFCHR, 1, 7)  # the kernel's "full" device
    return full


def test_full_stderr_leaves_the_written_report_a_success(tmp_path):
    """Before: exit 1 (the "wrote" note failed, then the internal-error line)."""
    out = tmp_path / "r.json"
    with open(_full_device(tmp_path), "wb") as err:
        proc = subprocess.run([*FTFLAME, "report", SAMPLE, "-o", str(out)], stderr=err)
    assert proc.returncode == 0
    assert out.stat().st_size > 100_000


def test_full_stdout_and_full_stderr_still_exit_2(tmp_path):
    full = _full_device(tmp_path)
    with open(full, "wb") as f:
        proc = subprocess.run([*FTFLAME, "report", SAMPLE, "-F", "json"], stdout=f, stderr=f)
    assert proc.returncode == 2


# ---- issue 37 item 10: links among the output's directories; a killed writer's temp ----

def _nobody_owns(link) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a link to another user needs root (CI runs the tests as root)")
    import pwd

    os.lchown(link, pwd.getpwnam("nobody").pw_uid, -1)


def test_directory_link_of_another_user_is_not_followed(tmp_path):
    """Before: `-o link-to-etc/passwd -F txt` replaced the file the other
    user's link led to."""
    target = tmp_path / "etc"
    target.mkdir()
    (target / "passwd").write_text("root:x:0:0\n")
    link = tmp_path / "link-to-etc"
    link.symlink_to(target)
    _nobody_owns(link)
    proc = run("report", SAMPLE, "-o", str(link / "passwd"), "-F", "txt")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "symbolic link (link-to-etc) owned by another user" in lines[0], proc.stderr
    assert (target / "passwd").read_text() == "root:x:0:0\n"
    assert temp_files(target) == [] and temp_files(tmp_path) == []


def test_directory_link_of_another_user_deeper_in_a_chain_is_not_followed(tmp_path):
    """My own link leading to another user's link: the second is refused."""
    target = tmp_path / "etc"
    target.mkdir()
    theirs = tmp_path / "theirs"
    theirs.symlink_to(target)
    _nobody_owns(theirs)
    (tmp_path / "mine").symlink_to("theirs")
    proc = run("report", SAMPLE, "-o", str(tmp_path / "mine" / "x.txt"))
    assert proc.returncode == 2 and "(theirs) owned by another user" in proc.stderr, proc.stderr
    assert os.listdir(target) == []


def test_directory_link_of_my_own_is_followed(tmp_path):
    target = tmp_path / "real"
    target.mkdir()
    (tmp_path / "a").symlink_to("real")
    (tmp_path / "b").symlink_to(tmp_path / "a")  # a chain, absolute then relative
    proc = run("report", SAMPLE, "-o", str(tmp_path / "b" / "x.txt"), "-q")
    assert proc.returncode == 0, proc.stderr
    assert (target / "x.txt").read_text().startswith("ftflame report:")


def test_temporary_file_names_its_writer():
    """.ftflame-HOST-PID-RANDOM: a leftover says whose it is."""
    import tempfile

    from ftflame.output import _host, write_atomic

    d = tempfile.mkdtemp()
    seen = []
    write_atomic(os.path.join(d, "r.txt"), lambda f: seen.extend(temp_files(d)))
    assert len(seen) == 1 and seen[0].startswith(f".ftflame-{_host()}-{os.getpid()}-"), seen
    os.unlink(os.path.join(d, "r.txt"))
    os.rmdir(d)


def test_killed_writers_temporary_file_goes_at_the_next_write(tmp_path):
    """Before: SIGKILL mid-write left a .ftflame-XXXX beside the output for
    good. A dead writer's temp goes; a live writer's, another machine's
    (NFS: its process numbers mean nothing here) and a stranger's stay."""
    from ftflame.output import _host

    dead = subprocess.Popen(["true"])
    dead.wait()  # a process number nobody has now (reuse within the test: vanishingly rare)
    host = _host()
    stale = f".ftflame-{host}-{dead.pid}-0a1b2c3d"
    kept = [f".ftflame-{host}-{os.getpid()}-0a1b2c3d", f".ftflame-otherhost-{dead.pid}-0a1b2c3d",
            ".ftflame-abc123"]
    for name in [stale, *kept]:
        (tmp_path / name).write_text("half a report")
    proc = run("report", SAMPLE, "-o", str(tmp_path / "r.txt"), "-q")
    assert proc.returncode == 0, proc.stderr
    assert sorted(temp_files(tmp_path)) == sorted(kept)


def test_sigkill_mid_write_leaves_a_temp_the_next_write_removes(tmp_path):
    """A real SIGKILL: a writer stopped (SIGSTOP) while its temp exists,
    killed, then a second report into the same directory."""
    code = ("import os, signal, sys\nfrom ftflame.output import write_atomic\n"
            "write_atomic(sys.argv[1], lambda f: (f.write(b'x'), os.kill(os.getpid(), signal.SIGSTOP)))\n")
    child = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "r.txt")])
    _, status = os.waitpid(child.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status)
    left = temp_files(tmp_path)
    child.kill()
    child.wait()
    assert len(left) == 1 and f"-{child.pid}-" in left[0]
    assert temp_files(tmp_path) == left  # (what SIGKILL leaves)
    proc = run("report", SAMPLE, "-o", str(tmp_path / "r.txt"), "-q")
    assert proc.returncode == 0, proc.stderr
    assert temp_files(tmp_path) == []
