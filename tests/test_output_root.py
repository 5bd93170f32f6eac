"""No harm as root (issue 31): what every writing command (report, diff,
calibrate) does with an output that is a link to an open descriptor, stdin's
own file, a file of the run directory it reads, another user's file or a
FIFO nobody reads; closed standard streams and running out of memory."""
from __future__ import annotations

import grp
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import threading

import pytest

from conftest import SAMPLE

FTFLAME = [sys.executable, "-m", "ftflame.cli"]
TEXT_TRACE = os.path.join(os.path.dirname(SAMPLE), "..", "text", "proc.txt")


def run(*args, **kw):
    if "stdout" not in kw:
        kw.setdefault("capture_output", True)
    return subprocess.run([*FTFLAME, *args], text=True, timeout=120, **kw)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def temp_files(directory) -> list:
    return [f for f in os.listdir(directory) if f.startswith(".ftflame-")]


# ---- 1: a link to an open file descriptor ----------------------------------------

COMMANDS = {
    "report": lambda tmp: ["report", SAMPLE, "-F", "json"],
    "diff": lambda tmp: ["diff", SAMPLE, SAMPLE, "-F", "json"],
    "calibrate": lambda tmp: ["calibrate", "--from-traces", SAMPLE, SAMPLE, SAMPLE],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_link_to_an_open_descriptor_is_refused_not_replaced(tmp_path, command):
    """/dev/stdout is a link to /proc/self/fd/1: with stdout on a file,
    following it ends on that regular file, and replacing the link would
    take /dev/stdout from the whole machine (a link in a temporary
    directory stands for it here)."""
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    cap = tmp_path / "cap.txt"
    with open(cap, "w") as out:
        proc = run(*COMMANDS[command](tmp_path), "-o", str(link), stdout=out, stderr=subprocess.PIPE)
    assert proc.returncode == 2, proc.stderr
    assert "open file descriptor" in one_line(proc.stderr)
    assert os.path.islink(link) and os.readlink(link) == "/proc/self/fd/1"
    assert temp_files(tmp_path) == []


def test_link_through_a_linked_directory_to_a_descriptor_is_refused(tmp_path):
    """/dev/fd/1: the directory is the link (/dev/fd -> /proc/self/fd)."""
    (tmp_path / "fd").symlink_to("/proc/self/fd")
    (tmp_path / "out").symlink_to(tmp_path / "fd" / "1")
    with open(tmp_path / "cap.txt", "w") as out:
        proc = run("report", SAMPLE, "-o", str(tmp_path / "out"), "-F", "txt", stdout=out,
                   stderr=subprocess.PIPE)
    assert proc.returncode == 2 and "open file descriptor" in proc.stderr, proc.stderr
    assert os.path.islink(tmp_path / "out")


def test_dev_stdout_in_a_private_mount_namespace_is_left_alone(tmp_path):
    """The issue's own case: /dev on a tmpfs of a private mount namespace,
    /dev/stdout -> /proc/self/fd/1 in it, stdout on a file."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1)")
    cap = tmp_path / "cap.txt"
    script = ("mount -t tmpfs none /dev && ln -s /proc/self/fd/1 /dev/stdout && "
              f"{' '.join(FTFLAME)} report {SAMPLE} -o /dev/stdout -F json > {cap}; rc=$?; "
              "test -L /dev/stdout && echo link-kept >&2; exit $rc")
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=120, cwd=os.getcwd())
    if "mount:" in proc.stderr or "unshare:" in proc.stderr:
        pytest.skip(f"no private mount namespace here: {proc.stderr.strip()}")
    assert proc.returncode == 2 and "open file descriptor" in proc.stderr, proc.stderr
    assert "link-kept" in proc.stderr


# ---- 3: the trace on stdin -------------------------------------------------------------

@pytest.mark.parametrize("source", ["trace.dat", "text"])
def test_output_that_is_stdins_file_is_refused(tmp_path, source):
    trace = tmp_path / "trace.txt"
    shutil.copy(SAMPLE if source == "trace.dat" else TEXT_TRACE, trace)
    before = trace.read_bytes()
    with open(trace, "rb") as stdin:
        proc = run("report", "-", "-o", str(trace), stdin=stdin)
    assert proc.returncode == 2, proc.stderr
    assert "is the input on stdin" in one_line(proc.stderr)
    assert trace.read_bytes() == before


# ---- 4: a run directory's own files -------------------------------------------------------

def run_dir(tmp_path, name="run1"):
    d = tmp_path / name
    d.mkdir()
    shutil.copy(SAMPLE, d / "trace.dat")
    (d / "meta.json").write_text("{}\n")
    return d


@pytest.mark.parametrize("name", ["calibration.json", "meta.json"])
def test_report_into_its_run_directorys_files_is_refused(tmp_path, name):
    """calibration.json is refused even before it exists: written, the
    next report of the run would read a report as its calibration."""
    d = run_dir(tmp_path)
    before = {f: (d / f).read_bytes() for f in os.listdir(d)}
    proc = run("report", str(d), "-o", str(d / name), "-F", "json")
    assert proc.returncode == 2, proc.stderr
    assert "reads beside the trace" in one_line(proc.stderr) and name in proc.stderr
    assert {f: (d / f).read_bytes() for f in os.listdir(d)} == before
    assert run("report", str(d), "-q").returncode == 0


def test_diff_into_a_sides_run_directory_is_refused(tmp_path):
    a, b = run_dir(tmp_path, "a"), run_dir(tmp_path, "b")
    proc = run("diff", str(a), str(b), "-o", str(b / "calibration.json"), "-F", "json")
    assert proc.returncode == 2 and "reads beside the trace" in one_line(proc.stderr), proc.stderr
    assert not (b / "calibration.json").exists()


def test_calibrate_into_the_calibration_record_is_refused(tmp_path):
    """calib-meta.json, which calibrate.sh writes beside the recordings
    and calibrate reads."""
    traces = []
    for name in ("n.dat", "r.dat", "f.dat"):
        shutil.copy(SAMPLE, tmp_path / name)
        traces.append(str(tmp_path / name))
    meta = tmp_path / "calib-meta.json"
    meta.write_text('{"tracer_options": {}}\n')
    proc = run("calibrate", "--from-traces", *traces, "-o", str(meta))
    assert proc.returncode == 2 and "reads beside the trace" in one_line(proc.stderr), proc.stderr
    assert meta.read_text() == '{"tracer_options": {}}\n'


# ---- 8: another user's file ------------------------------------------------------------

def as_nobody(path, mode):
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root (CI runs the tests as root)")
    uid, gid = pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid
    os.chown(path, uid, gid)
    os.chmod(path, mode)
    return uid, gid


@pytest.mark.parametrize("mode", [0o2775, 0o4755], ids=["2775", "4755"])
def test_replacing_another_users_file_keeps_its_owner(tmp_path, mode):
    out = tmp_path / "r.txt"
    out.write_text("old\n")
    uid, gid = as_nobody(out, mode)
    proc = run("report", SAMPLE, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    st = os.stat(out)
    assert out.read_text().startswith("ftflame report:")
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (uid, gid, mode)


def test_replacement_that_cannot_keep_the_owner_loses_set_id_bits():
    """A user replacing root's set-user-ID file in a directory the user may
    write: the replacement is the user's, so the bits would be too."""
    if os.geteuid() != 0:
        pytest.skip("needs root to set the scene")
    from ftflame.output import write_atomic

    uid, gid = pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid
    d = tempfile.mkdtemp(prefix="ftflame-test-")  # not under pytest's 0700 tree: nobody reaches it
    try:
        os.chmod(d, 0o777)
        out = os.path.join(d, "r.txt")
        with open(out, "w") as f:
            f.write("old\n")
        os.chmod(out, 0o6755)
        pid = os.fork()
        if pid == 0:  # the child becomes nobody and writes; its exit code says how it went
            try:
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
                write_atomic(out, "report\n")
                os._exit(0)
            except BaseException:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        st = os.stat(out)
        assert open(out).read() == "report\n"
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (uid, 0o755)
    finally:
        shutil.rmtree(d)


# ---- 16: a FIFO nobody reads ------------------------------------------------------------

def test_fifo_without_a_reader_says_what_it_waits_for(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    proc = subprocess.Popen([*FTFLAME, "report", SAMPLE, "-o", str(fifo), "-F", "txt"],
                            stderr=subprocess.PIPE, text=True)
    first = []
    t = threading.Thread(target=lambda: first.append(proc.stderr.readline()), daemon=True)
    t.start()
    t.join(60)
    said = first[0] if first else ""
    with open(fifo, "rb") as reader:  # lets it go on either way
        report = reader.read()
    rest = proc.stderr.read()
    assert proc.wait(60) == 0, said + rest
    assert "no reader" in said and "waiting" in said, said
    assert report.startswith(b"ftflame report:")


# ---- 11: closed standard streams, out of memory ------------------------------------------------

def shell(redirect: str, *args):
    cmd = " ".join([*FTFLAME, *args]) + " " + redirect
    return subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_closed_stdout_is_one_line_and_exit_2(tmp_path, command):
    args = [a for a in COMMANDS[command](tmp_path) if a not in ("-F", "json")]
    proc = shell(">&-", *args)
    assert proc.returncode == 2
    assert "stdout" in one_line(proc.stderr) and "closed" in proc.stderr


def test_closed_stdout_with_an_output_file_is_no_matter(tmp_path):
    out = tmp_path / "r.json"
    proc = shell(">&-", "report", SAMPLE, "-o", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["schema"] == "ftflame/1"


def test_closed_stderr_keeps_the_exit_codes(tmp_path):
    ok = shell("2>&-", "report", SAMPLE, "-F", "json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["schema"] == "ftflame/1"
    bad = shell("2>&-", "report", str(tmp_path / "missing.dat"))
    assert bad.returncode == 2 and bad.stdout == ""


def test_closed_stderr_never_lands_in_the_output(tmp_path):
    """With fd 2 closed, the output file may get number 2: an error line
    written to "stderr" would go into it."""
    out = tmp_path / "r.txt"
    proc = shell("2>&-", "diff", SAMPLE, SAMPLE, "-o", str(out))
    assert proc.returncode == 0
    assert "ftflame:" not in out.read_text().splitlines()[0]


def test_closed_stdin_is_one_line_and_exit_2():
    proc = shell("<&-", "report", "-")
    assert proc.returncode == 2
    assert "stdin" in one_line(proc.stderr) and "closed" in proc.stderr
    assert shell("<&-", "report", SAMPLE, "-q").returncode == 0


def test_out_of_memory_is_one_line_and_exit_1():
    """Memory running out in the middle of a report (here the correction
    stage asking for more than any machine has: a real allocation, a real
    MemoryError) is a resource, said in one line, not an internal error."""
    code = ("import sys\n"
            "from ftflame import cli\n"
            "from ftflame.correct import stage\n"
            "real = stage.correct_for_report\n"
            "def correct(*a):\n"
            "    bytearray(1 << 60)\n"
            "    return real(*a)\n"
            "stage.correct_for_report = correct\n"
            f"sys.exit(cli.main(['report', {SAMPLE!r}, '-q']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    # (a sanitized run's allocator adds a warning line of its own, "==PID==WARNING: ...")
    ours = "\n".join(line for line in proc.stderr.splitlines() if not line.startswith("=="))
    assert "out of memory" in one_line(ours) and "internal error" not in ours


# ---- 7: a trace's strings never reach a terminal raw ---------------------------------------

EVIL = "\x1b[2J\x1b]0;owned\x07\x1b]8;;http://x/\x1b\\\u009b2J\x7f"


def evil_trace(path):
    """A trace.dat whose kallsyms name one function with escape sequences
    (clear the screen, a window title, an OSC 8 link, a C1 CSI) and whose
    uname carries one too."""
    from helpers import datwriter as dw

    c = dw.corner_contents()
    addr = dw.func_address("nfsd_dispatch")
    c.kallsyms[addr] = "nfsd_dispatch" + EVIL
    c.uname = "Linux evil 6.1.0" + EVIL + " x86_64"
    dw.write_file(str(path), c, [dw.nested_call_pages()], dw.Form(7))


def raw_controls(text: str) -> list:
    return sorted({hex(ord(ch)) for ch in text if ord(ch) < 0x20 and ch not in "\n\t" or 0x7f <= ord(ch) < 0xa0})


@pytest.mark.parametrize("fmt", ["txt", "json", "folded", "html", "speedscope"])
def test_escape_sequences_from_a_trace_are_shown_not_sent(tmp_path, fmt):
    trace = tmp_path / "evil.dat"
    evil_trace(trace)
    proc = run("report", str(trace), "-F", fmt)
    assert proc.returncode == 0, proc.stderr
    assert raw_controls(proc.stdout) == [] and raw_controls(proc.stderr) == []
    text = proc.stdout.replace("\\\\", "\\")
    if fmt in ("txt", "json", "html"):  # the outputs that carry the kernel string: escaped
        assert "6.1.0\\x1b[2J" in text
    if fmt == "txt":  # no kernel symbol holds such bytes: the line is counted, not taken as a name
        assert "1 kallsyms lines not understood" in text and "nfsd_dispatch" not in text


def test_escape_sequences_never_reach_the_diff(tmp_path):
    before, after = tmp_path / "b.dat", tmp_path / "a.dat"
    evil_trace(before)
    evil_trace(after)
    proc = run("diff", str(before), str(after))
    assert proc.returncode == 0, proc.stderr
    assert raw_controls(proc.stdout) == [] and raw_controls(proc.stderr) == []
    assert "6.1.0\\x1b[2J" in proc.stdout


def test_printable_names_are_left_as_they_are():
    from ftflame.model.names import printable

    for name in ("nfsd3_proc_write", "__x64_sys_write.cold", "ext4_écrire", "[irq]"):
        assert printable(name) == name
    assert printable("a\x1bb\u009bc\u202ed") == "a\\x1bb\\x9bc\\u202ed"


def test_c1_controls_in_a_text_traces_names_are_shown_not_sent(tmp_path):
    """The text reader ends a name at a C0 control but takes any byte from
    0x80 up: a C1 CSI (U+009B, 0xc2 0x9b in UTF-8) is escaped like the
    trace.dat's names."""
    trace = tmp_path / "t.txt"
    trace.write_bytes(b"# tracer: function_graph\n"
                      b" 0)               |  nfsd3_proc_write() {\n"
                      b" 0)   1.000 us    |    fh_\xc2\x9b2Jverify();\n"
                      b" 0)   4.000 us    |  }\n")
    proc = run("report", str(trace))
    assert proc.returncode == 0, proc.stderr
    assert raw_controls(proc.stdout) == [] and "fh_\\x9b2Jverify" in proc.stdout


def test_a_uname_in_another_encoding_is_read_not_refused(tmp_path):
    """A uname that is not UTF-8 (Latin-1 bytes, or a C1 control's single
    byte): its bytes are replaced, the trace is read."""
    from helpers import datwriter as dw

    c = dw.corner_contents()
    c.uname = "Linux host 6.1.0-QQQQ x86_64"
    path = tmp_path / "latin1.dat"
    dw.write_file(str(path), c, [dw.nested_call_pages()], dw.Form(7))
    path.write_bytes(path.read_bytes().replace(b"QQQQ", b"f\xe9\x9bx"))
    proc = run("report", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "kernel 6.1.0-f\ufffdx," in proc.stdout and raw_controls(proc.stdout) == []


def test_a_replaced_link_gives_the_report_no_owner_of_its_own(tmp_path):
    """Another user's link is replaced by a report of root's: the owner
    kept is a replaced file's, never a link's (whoever planted it)."""
    out = tmp_path / "r.txt"
    out.symlink_to(tmp_path / "elsewhere")
    if os.geteuid() != 0:
        pytest.skip("giving a link to another user needs root")
    os.lchown(out, pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid)
    proc = run("report", SAMPLE, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert not os.path.islink(out) and os.stat(out).st_uid == 0


@pytest.mark.parametrize("args", [["report", "{p}"], ["report", "{p}", "--sections", "header", "-q"],
                                  ["report", "{p}", "-o", "{p}.json"], ["diff", "{p}", "{p}.missing"],
                                  ["report", "{p}.missing"], ["report", "{p}", "-o", "{p}"]],
                         ids=["text", "header", "wrote-note", "diff", "missing", "input-as-output"])
def test_escape_sequences_in_a_path_are_shown_not_sent(tmp_path, args):
    """Issue 37 item 9: the input's path reached the terminal raw in the
    report's header and in the one-line messages (error, "wrote")."""
    p = tmp_path / "a\x1b]0;PWN\x07\x1b[2J\x9b.dat"
    shutil.copy(SAMPLE, p)
    r = subprocess.run([*FTFLAME, *(a.format(p=p) for a in args)], capture_output=True, text=True)
    assert r.returncode in (0, 2), r.stderr
    for stream in (r.stdout, r.stderr):
        assert not any(c in stream for c in "\x1b\x07\x9b"), stream
    assert "a\\x1b]0;PWN\\x07\\x1b[2J\\x9b.dat" in r.stdout + r.stderr
