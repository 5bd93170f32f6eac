"""The command line: formats, atomic writes, and bad input (exit 2, one line
on stderr naming the file, no traceback, no output file)."""
from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import SAMPLE, corpus_fixture, fixture, holds_open, sigint_as_default
from helpers.unprivileged import without_dac

FTFLAME = [sys.executable, "-m", "ftflame.cli"]


def run(*args, **kw):
    return subprocess.run([*FTFLAME, *args], capture_output=True, text=True, **kw)


def assert_bad_input(proc, name, out=None):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert name in lines[0]
    assert "Traceback" not in proc.stderr
    if out is not None:
        assert not os.path.exists(out)
        leftovers = [f for f in os.listdir(os.path.dirname(out)) if f.startswith(".ftflame-")]
        assert leftovers == []


@pytest.mark.parametrize("ext,check", [
    (".txt", lambda s: s.startswith("ftflame report:")),
    (".json", lambda s: json.loads(s)["schema"] == "ftflame/1"),
    (".folded", lambda s: s.splitlines()[0].rsplit(" ", 1)[1].isdigit()),
])
def test_format_from_extension(tmp_path, ext, check):
    out = tmp_path / ("r" + ext)
    proc = run("report", SAMPLE, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert check(out.read_text())
    assert [f.name for f in tmp_path.iterdir()] == [out.name]


def test_text_on_stdout_by_default():
    proc = run("report", SAMPLE)
    assert proc.returncode == 0
    assert "nfsd3_proc_write" in proc.stdout


def test_format_flag_overrides(tmp_path):
    out = tmp_path / "r.out"
    proc = run("report", SAMPLE, "-o", str(out), "--format", "json")
    assert proc.returncode == 0 and json.loads(out.read_text())["schema"] == "ftflame/1"


def test_run_directory_input(tmp_path):
    shutil.copy(SAMPLE, tmp_path / "trace.dat")
    proc = run("report", str(tmp_path), "-o", str(tmp_path / "r.json"))
    assert proc.returncode == 0, proc.stderr


def test_help_teaches():
    proc = run("report", "--help")
    assert proc.returncode == 0
    for word in ("examples:", "trace-cmd record -p function_graph", "inclusive", "-o"):
        assert word in proc.stdout


def test_empty_file(tmp_path):
    f = tmp_path / "empty.dat"
    f.write_bytes(b"")
    out = tmp_path / "o.json"
    assert_bad_input(run("report", str(f), "-o", str(out)), "empty.dat", str(out))


def test_random_bytes(tmp_path):
    f = tmp_path / "random.dat"
    f.write_bytes(os.urandom(4096))
    out = tmp_path / "o.json"
    proc = run("report", str(f), "-o", str(out))
    assert_bad_input(proc, "random.dat", str(out))
    assert "tried" in proc.stderr


@pytest.mark.parametrize("keep", [10, 4096, 100_000, 0.5, 0.99])
def test_truncated_trace_dat(tmp_path, keep):
    """Cut in the headers, in kallsyms (from 98.5 KB), and in the events (a
    fraction of the file)."""
    src = fixture("k6.1/s09-depth3/trace.dat")
    f = tmp_path / "trunc.dat"
    with open(src, "rb") as s:
        data = s.read()
    f.write_bytes(data[:keep if keep >= 1 else int(len(data) * keep)])
    out = tmp_path / "o.json"
    assert_bad_input(run("report", str(f), "-o", str(out)), "trunc.dat", str(out))


def test_trace_dat_without_function_graph_events(tmp_path):
    # a real trace.dat cut to a time window with no events: headers and
    # formats, but no function_graph records
    src = fixture("k6.1/s09-depth3/trace.dat")
    subprocess.run(["trace-cmd", "split", "-i", src, "-o", str(tmp_path / "nofg.dat"), "1", "2"],
                   check=True, capture_output=True)
    f = tmp_path / "nofg.dat.1"
    assert f.exists()
    out = tmp_path / "o.json"
    proc = run("report", str(f), "-o", str(out))
    assert_bad_input(proc, "nofg.dat.1", str(out))
    assert "function_graph" in proc.stderr


def test_directory_without_trace(tmp_path):
    assert_bad_input(run("report", str(tmp_path)), str(tmp_path))


def test_missing_file(tmp_path):
    assert_bad_input(run("report", str(tmp_path / "nope.dat")), "nope.dat")


def test_unreadable_file(tmp_path):
    f = tmp_path / "secret.dat"
    shutil.copy(SAMPLE, f)
    f.chmod(0)
    cmd = [*FTFLAME, "report", str(f)]
    if os.geteuid() == 0:
        # root reads anything: it gives up that power for this check (as root
        # it still reaches a checkout in a private folder, which user nobody
        # could not)
        cmd = without_dac(FTFLAME) + ["report", str(f)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert_bad_input(proc, "secret.dat")
    assert "permission" in proc.stderr


def test_unknown_output_extension(tmp_path):
    out = tmp_path / "r.xyz"
    assert_bad_input(run("report", SAMPLE, "-o", str(out)), "r.xyz", str(out))


def test_output_directory_missing(tmp_path):
    proc = run("report", SAMPLE, "-o", str(tmp_path / "no" / "r.json"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_collect_runs_the_installed_script():
    proc = run("collect", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "USAGE: collect.sh" in proc.stdout + proc.stderr


def test_cli_and_parse_package_import_no_numpy():
    """The CLI starts the C core on a trace.dat before numpy and the
    renderers are imported (parse.read_meanwhile), so the ~0.2 s of imports
    overlap the read. That holds only while these imports stay light."""
    code = ("import sys; from ftflame import cli, parse; from ftflame.report import RENDERERS, "
            "format_for_path; cli.build_parser(); "
            "print(sorted(m for m in ('numpy', 'jinja2', 'ftflame.parse.tables') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_text_report_imports_only_what_it_uses():
    """A text report of a trace.dat imports neither what only other inputs,
    outputs or commands use (the text reader, diff, batch) nor numpy.ma
    (np.unique's plain form imports it: 6-9 ms of CPU)."""
    code = ("import sys, io, contextlib; from ftflame import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert cli.main(['report', {fixture('k6.1/s10-lost/trace.dat')!r}]) == 0\n"
            "print(sorted(m for m in ('numpy.ma', 'jinja2', 'ftflame.parse.text', 'ftflame.diff', "
            "'ftflame.batch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("ext", [".json", ".html"])
def test_json_and_html_reports_do_not_import_numpy_ma(tmp_path, ext):
    """The JSON and HTML reports take distinct values without np.unique's
    plain form (or its axis=0 form), which imports numpy.ma: 6-9 ms of CPU."""
    out_file = tmp_path / ("r" + ext)
    code = ("import sys, io, contextlib; from ftflame import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert cli.main(['report', '-q', {fixture('k6.1/s10-lost/trace.dat')!r}, '-o', {str(out_file)!r}]) == 0\n"
            "print('numpy.ma' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False" and out_file.stat().st_size > 0


def test_text_report_compiles_few_dataclass_methods():
    """Each method dataclasses generates is source compiled at import (0.1
    ms or more): classes nobody compares or prints go without __eq__ and
    __repr__. A text report made 120 of them; bounded by a count. (Python
    3.13 compiles a class's methods together: no count to take there.)"""
    import dataclasses

    if not hasattr(dataclasses, "_create_fn"):
        pytest.skip("this Python's dataclasses compile a class's methods together")
    code = ("import dataclasses, io, contextlib, sys\n"
            "made = []\n"
            "create = dataclasses._create_fn\n"
            "dataclasses._create_fn = lambda *a, **k: made.append(a[0]) or create(*a, **k)\n"
            "from ftflame import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert cli.main(['report', {fixture('k6.1/s10-lost/trace.dat')!r}]) == 0\n"
            "print(len(made))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) <= 95, out.stdout


def test_read_meanwhile_equals_read_and_runs_the_side_work():
    from ftflame import parse

    path = fixture("k6.1/s10-lost/trace.dat")
    ran = []
    a, b = parse.read_meanwhile(path, lambda: ran.append(1)), parse.read(path)
    assert ran == [1]
    assert a.trace == b.trace and a.counters == b.counters
    assert a.nodes.equals(b.nodes)
    # text input: read after the side work
    txt = fixture("k6.1/s07-tracefs-text/trace-default.txt.gz")
    assert parse.read_meanwhile(txt, lambda: None).counters == parse.read(txt).counters


def test_read_meanwhile_raises_the_side_work_error():
    from ftflame import parse

    def broken():
        raise ImportError("no such renderer")

    with pytest.raises(ImportError, match="no such renderer"):
        parse.read_meanwhile(fixture("k6.1/s10-lost/trace.dat"), broken)


def test_read_meanwhile_ctrl_c_stops_the_core():
    """Ctrl-C reaches Python on the main thread, in the progress callback
    the core calls from the thread reading (this one): the read stops at
    once, after the side work has finished."""
    from ftflame import parse

    calls, done = [], []

    def progress(events):
        calls.append(events)
        raise KeyboardInterrupt

    big = corpus_fixture("k6.1/s14-v3-write-big/trace.dat")  # progress comes every 1 M events
    with pytest.raises(KeyboardInterrupt):
        parse.read_meanwhile(big, lambda: done.append(1), progress)
    assert len(calls) == 1 and done == [1]


def test_sigint_interrupts_a_report(tmp_path):
    """A real Ctrl-C during the read: exit 130, one line, no output file."""
    out = tmp_path / "r.json"
    big = corpus_fixture("k6.1/s14-v3-write-big/trace.dat")  # a read long enough to interrupt
    proc = subprocess.Popen([*FTFLAME, "report", big, "-o", str(out)],
                            stderr=subprocess.PIPE, text=True, preexec_fn=sigint_as_default)
    # during the read: once the trace is open (a fixed sleep signalled a
    # loaded machine's interpreter while it was still starting)
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline and not holds_open(proc.pid, big):
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=60)[1]
    if proc.returncode == 0:
        pytest.skip("the report finished before the signal")
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert os.listdir(tmp_path) == []


def test_write_failure_is_one_line_and_leaves_nothing(tmp_path):
    """A write that fails half-way (disk full) names the file, and neither
    the report nor its temporary file is left behind."""
    from ftflame.model.errors import InputError
    from ftflame.output import write_atomic

    out = tmp_path / "r.json"

    def fill_then_fail(f):
        f.write(b"x" * 4096)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(InputError) as e:
        write_atomic(str(out), fill_then_fail)
    assert "r.json" in e.value.line() and "No space left" in e.value.line()
    assert os.listdir(tmp_path) == []


def test_json_streamed_to_a_file_equals_stdout(tmp_path):
    """-o FILE streams the JSON (jsonout.write), stdout gets render()."""
    out = tmp_path / "r.json"
    assert run("report", "-q", SAMPLE, "-o", str(out)).returncode == 0
    proc = run("report", "-q", SAMPLE, "-F", "json")
    assert proc.returncode == 0
    assert out.read_text() == proc.stdout


def test_command_entry_point_exits_cleanly(tmp_path):
    """`ftflame` is cli.run: main(), then os._exit with the streams
    flushed: output complete, exit code kept."""
    code = "import sys; sys.argv[0] = 'ftflame'; from ftflame import cli; cli.run()"
    ok = subprocess.run([sys.executable, "-c", code, "report", "-q", SAMPLE], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.startswith("ftflame report:") and ok.stdout.endswith("\n")
    assert ok.stdout == run("report", "-q", SAMPLE).stdout
    bad = subprocess.run([sys.executable, "-c", code, "report", str(tmp_path / "none.dat")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "none.dat" in bad.stderr


_GC_SPY = """
import gc, sys
sys.argv[0] = 'ftflame'
from ftflame import cli, parse
seen = {}
read_meanwhile, render_to = parse.read_meanwhile, cli._render_to
def reading(*a, **kw):
    seen['read'] = gc.isenabled()
    return read_meanwhile(*a, **kw)
def rendering(*a, **kw):
    seen['render'] = (gc.isenabled(), gc.get_freeze_count() > 0)
    sys.stderr.write(repr(seen) + '\\n')
    return render_to(*a, **kw)
parse.read_meanwhile, cli._render_to = reading, rendering
cli.run()
"""


def test_command_holds_the_garbage_collector_off_until_imported(tmp_path):
    """The `ftflame` command runs its imports and the read with Python's
    cyclic collector off (its walks over every imported object were 8-10 ms
    of a report's CPU), then turns it on with those objects frozen, before
    any rendering. main() called in a process of its own (a library use,
    these tests) leaves the collector as it found it."""
    proc = subprocess.run([sys.executable, "-c", _GC_SPY, "report", "-q", SAMPLE, "-o", str(tmp_path / "r.txt")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == repr({"read": False, "render": (True, True)})
    import gc

    from ftflame import cli
    frozen = gc.get_freeze_count()
    cli.collect_after_imports()
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_reader_given_for_a_text_input_is_noted(tmp_path):
    """--reader chooses how a trace.dat is read: given for a text trace it
    does not apply, and one note on stderr says so (not an error: exit 0,
    the report written); none for a trace.dat, none with -q."""
    text = os.path.join(os.path.dirname(__file__), "data", "text", "lost.txt")
    proc = run("report", text, "--reader", "libtracecmd", "-o", str(tmp_path / "r.txt"))
    assert proc.returncode == 0, proc.stderr
    notes = [ln for ln in proc.stderr.splitlines() if "--reader" in ln]
    assert notes == [f"ftflame: note: --reader libtracecmd does not apply to {text} (function_graph text, "
                     "not a trace.dat): it chooses how trace.dat files are read"]
    assert (tmp_path / "r.txt").exists()
    quiet = run("report", text, "--reader", "builtin", "-q", "-o", str(tmp_path / "q.txt"))
    assert quiet.returncode == 0 and quiet.stderr == ""
    dat = run("report", fixture("k6.1/s10-lost/trace.dat"), "--reader", "builtin", "-o", str(tmp_path / "d.txt"))
    assert dat.returncode == 0 and "--reader" not in dat.stderr, dat.stderr


@pytest.mark.parametrize("command", ["report", "calibrate", "diff"])
def test_help_fits_the_terminal(command):
    # every subcommand's --help goes through ftflame's own formatter: at an 80-column
    # terminal no line of it is wider (diff's once kept its 90-column prose)
    proc = run(command, "--help", env={**os.environ, "COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    wide = [line for line in proc.stdout.splitlines() if len(line) > 80]
    assert wide == []
