"""ftflame command line: `ftflame report`, `ftflame diff`, `ftflame collect`, `ftflame calibrate`.

Exit codes: 0 success; 2 bad input or usage (one line on stderr naming the
file and the problem); 130 interrupted; 1 internal error or out of memory
(one line too). Closed standard streams are opened on /dev/null first: a
report for a closed stdout, or stdin read when closed, is bad input.
"""
from __future__ import annotations

import gc
import os
import signal
import sys


def _interrupted_while_starting(signum, frame):
    """Ctrl-C before main() is running (during the imports below): nothing
    has been written yet, so leave at once as an interrupted run does, with
    one line and not a traceback from the middle of an import."""
    sys.stderr.write("ftflame: interrupted\n")
    os._exit(130)


# SIGINT ignored when we started (a command run with `&` from a script, or
# by a parent that wants it to ignore Ctrl-C): leave it ignored, as Python
# itself does and as ftflame does for SIGTERM and SIGHUP (output.py).
_SIGINT_IGNORED = signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def _on_sigint(handler) -> None:
    if _SIGINT_IGNORED:
        return
    try:
        signal.signal(signal.SIGINT, handler)
    except ValueError:  # imported off the main thread (a library use): leave it
        pass


_on_sigint(_interrupted_while_starting)

import argparse  # noqa: E402
import shutil  # noqa: E402

# numpy's OpenBLAS starts one spinning thread per core at import; ftflame
# does no linear algebra, and on a small machine those threads take CPU from
# the reader (a lasting 3% of samples on 2 cores).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from ftflame import __version__  # noqa: E402
from ftflame.model.errors import InputError  # noqa: E402
from ftflame.output import (  # noqa: E402
    CLOSED_STREAMS,
    Progress,
    Terminated,
    guard_standard_streams,
    refuse_input_as_output,
    say,
    terminating_signals_raise,
    write_atomic,
    write_stdout,
)

_on_sigint(signal.default_int_handler)  # main() turns KeyboardInterrupt into exit 130

REPORT_EPILOG = """\
examples:
  ftflame report trace.dat                 text on stdout, 80 columns
  ftflame report trace.dat -o nfsd.json    JSON, schema "ftflame/1"
  ftflame report trace.dat -o nfsd.html    one self-contained page
  ftflame report trace.dat --open          that page, opened in a browser
  ftflame report trace.dat -o nfsd.svg     an interactive flame graph
  ftflame report trace.dat -o nfsd.folded  for flamegraph.pl or inferno
  ftflame report trace.dat -o x.speedscope.json
                                           for speedscope
  ftflame report trace.dat -o nfsd.parquet/
                                           Parquet tables, for DuckDB
  ftflame batch run*/ -o runs/ --label patch=v2
                                           many traces into one dataset
  ftflame report run1/                     a collect.sh output directory
  ftflame report run1/ --baseline b.dat    a balance sheet against a
                                           root-only recording

input: a trace.dat recorded by trace-cmd 3.x with the function_graph
  tracer, e.g.
    trace-cmd record -p function_graph -g nfsd3_proc_write \\
        -e sched:sched_switch
  (sched_switch events split off-CPU time from on-CPU time), or any text
  form of a function_graph trace, told apart by its content: the tracefs
  `trace` file, `perf ftrace` or `trace-cmd report` output, a trace pasted
  into a mail; gzip/xz/zstd-compressed, or on stdin (-). Text has no task
  or irq flags: without a task column (funcgraph-proc) stacks are per CPU;
  the report says so.

what the numbers mean:
  Total/incl  inclusive time: rettime - calltime of each completed call
  Self/excl   inclusive time minus its children's inclusive time
  calls       completed calls (the exit was seen); open calls, lost exits,
              orphan exits and lost events are counted and reported
  *           corrected: the tracer's hook cost (about 1 us per traced call
              on a VM), interrupt subtrees and off-CPU time taken out, with
              calibration.json (ftflame calibrate) or an in-trace estimate
              (docs/overhead.md)
How corrected figures are computed: sums and means are exact, the corrected
sums over the clean calls (gap calls left out) and their count; min, max and
percentiles are exact where every clean call's corrected time is known (root
calls), elsewhere estimates: the raw ones scaled by corrected mean / raw mean,
marked approx (≈ in the HTML, "approx": true in the JSON).

output (-o OUT): a regular file is written beside OUT, then renamed over
  it (never half-written; a new file gets 0666 minus the umask, a replaced
  one keeps its mode and owner, or loses its set-id bits when the owner
  cannot be kept); a device, FIFO or terminal is written in place (a FIFO
  without a reader is waited for, and stderr says so); a symbolic link is
  replaced by the report, never written through (a link to a device, FIFO,
  terminal or open file descriptor, e.g. /dev/stdout, is refused: use '-');
  an OUT that is one of the inputs is refused: a file named, stdin's file,
  or a file read beside the trace (a run directory's calibration.json,
  meta.json); a symbolic link among OUT's directories is followed only
  when root or you own it. The temporary file, .ftflame-HOST-PID-RANDOM,
  of a writer killed (SIGKILL) is removed by the next write there. A disk
  filling up (OUT or stdout) is one line and exit 2, OUT left as it was.
"""


CALIBRATE_EPILOG = """\
examples:
  ftflame calibrate calib1/                  writes calib1/calibration.json
  ftflame calibrate --from-traces calib-null.dat calib-dispatch-root.dat \\
      calib-dispatch-full.dat -o calibration.json

ftflame report picks up calibration.json beside the trace by itself, or take
one with: ftflame report trace.dat --calibration calibration.json
"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """--help at the terminal's width (COLUMNS, else the terminal's): the
    options' help is wrapped by argparse; descriptions and epilogs keep their
    line breaks and indentation, and a line wider than the terminal wraps
    under its own text ("  command      what it does" under "what")."""

    def __init__(self, prog, **kw):
        kw.setdefault("width", max(shutil.get_terminal_size().columns - 2, 40))
        super().__init__(prog, **kw)

    def _fill_text(self, text, width, indent):
        import re
        import textwrap

        out = []
        for line in text.splitlines():
            if len(indent) + len(line) <= width:
                out.append(indent + line)
                continue
            lead = len(line) - len(line.lstrip())
            m = re.match(r"(\s*\S.*?\s{2,})\S", line)
            hang = lead
            if m and width - len(indent) - len(m.group(1)) >= 24:
                hang = len(m.group(1))
            elif m:  # too narrow for two columns: the command, then what it does below it
                out.append(indent + m.group(1).rstrip())
                line, hang = " " * (lead + 4) + line[len(m.group(1)):], lead + 4
            out.extend(textwrap.wrap(line, width, initial_indent=indent, subsequent_indent=indent + " " * hang,
                                     break_long_words=False, break_on_hyphens=False))
        return "\n".join(out)


def _calib_names():
    from ftflame.rundir import CALIBRATION_TRACES as RUN_DIR_TRACES

    return RUN_DIR_TRACES


MAX_COUNT = 100_000  # --slowest/--top: more is no report (and --slowest N x trees would not fit memory)


def _count_arg(text: str) -> int:
    """--slowest/--top N: a whole number 0..MAX_COUNT (argparse turns the error into exit 2)."""
    try:
        n = int(text)
    except ValueError:
        n = -1
    if not 0 <= n <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 0 to {MAX_COUNT:,}")
    return n


def _sections_arg(text: str) -> tuple:
    from ftflame.report.text import SECTIONS

    names = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [x for x in names if x not in SECTIONS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown section(s) {', '.join(bad) or text!r}: choose from "
                                         f"{','.join(SECTIONS)}")
    return names


def _formats():
    from ftflame.report import RENDERERS

    return RENDERERS


def add_reader_option(p) -> None:
    # default None, not "builtin": a --reader given for a text input is noted
    p.add_argument("--reader", choices=("builtin", "libtracecmd"), default=None,
                   help="how a trace.dat is read: ftflame's own reader (builtin, default) or "
                        "trace-cmd's libtracecmd (the reference; docs/trace-formats.md)")


def reader_of(args):
    """--reader for every trace.dat the command reads (report, its baseline,
    calibrate's three), for the command's duration."""
    from ftflame.parse import dat

    return dat.reader_used(getattr(args, "reader", None) or dat.default_reader())


def reader_note(args, name: str, fmt: str) -> None:
    """One line on stderr when --reader was given for an input it does not
    apply to (a text trace): the option is not silently ignored."""
    if getattr(args, "reader", None) and fmt != "trace.dat" and not args.quiet:
        say(f"note: --reader {args.reader} does not apply to {name} (function_graph text, "
            "not a trace.dat): it chooses how trace.dat files are read")


def input_format(path: str) -> str:
    """'trace.dat' or 'text' for a file, from its first bytes (compressed
    too), without reading it whole; '' when it is neither (the read says why)."""
    from ftflame.parse import dat, text
    from ftflame.parse.detect import classify

    if dat.is_plain_dat(path):
        return "trace.dat"
    try:
        src = text.open_input(path)
    except InputError:
        return ""
    try:
        return classify(src.head, src.name, src.compression).kind
    except InputError:
        return ""
    finally:
        src.close()


class Parser(argparse.ArgumentParser):
    """argparse's usage errors quote what was typed (a glob can bring a
    file name holding escape sequences): shown, not sent, as every line
    ftflame prints (output.say). Subcommands' parsers are made of this
    class too (argparse uses the parent's)."""

    def error(self, message):
        from ftflame.model.names import printable

        super().error(printable(message))


COMMANDS = ("report", "calibrate", "diff", "batch", "collect")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """ftflame's argument parser. command: the one command the arguments
    name, when known: the other commands' parsers are left out, and with
    them diff's and batch's modules (2-3 ms of every report's start-up);
    None: every command (ftflame --help, a usage error lists them)."""

    def wanted(name: str) -> bool:
        return command in (None, name)

    ap = Parser(
        prog="ftflame", formatter_class=HelpFormatter,
        description="Turn ftrace function_graph traces into call trees, latency figures "
                    "and flame graphs you can trust.")
    ap.add_argument("--version", action="version", version=f"ftflame {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    if wanted("report"):
        _add_report(sub)
    if wanted("calibrate"):
        _add_calibrate(sub)
    if wanted("diff"):
        from ftflame.diff.cli import add_parser as add_diff  # ftflame diff (ftflame/diff/)

        add_diff(sub, HelpFormatter)
    if wanted("batch"):
        from ftflame.batch import add_parser as add_batch  # ftflame batch (ftflame/batch.py)

        add_batch(sub, HelpFormatter, _count_arg)
    if wanted("collect"):
        c = sub.add_parser("collect", help="record a trace around a workload (collect/collect.sh)", add_help=False)
        c.add_argument("args", nargs=argparse.REMAINDER)
        c.set_defaults(func=cmd_script, script="collect.sh")
    return ap


def _add_report(sub) -> None:
    rep = sub.add_parser(
        "report", help="report a trace (text, JSON, HTML, SVG, folded stacks, speedscope, Parquet)",
        description="Rebuild per-task call trees from a function_graph trace and report "
                    "per-function and per-call-path times.",
        epilog=REPORT_EPILOG, formatter_class=HelpFormatter)
    rep.add_argument("input", metavar="INPUT",
                     help="trace.dat, function_graph text (tracefs, perf ftrace, trace-cmd report, "
                          "a mail; .gz/.xz/.zst read as is), '-' for stdin, or a collect.sh "
                          "output directory")
    rep.add_argument("-o", "--output", metavar="OUT",
                     help="output file (format from its extension: .txt .json .folded .html "
                          ".svg .speedscope.json; .parquet/: a folder of tables); default: text on stdout; '-' for stdout")
    rep.add_argument("-F", "--format", choices=sorted(_formats()), metavar="FMT",
                     help="output format (overrides the extension): " + ", ".join(sorted(_formats())))
    rep.add_argument("--folded-weights", choices=("raw", "corrected"),
                     help="folded output: weigh each stack by its raw exclusive ns (default) or its "
                          "corrected ones (tracer overhead out, interrupt subtrees apart under [irq]; "
                          "needs a calibration or the in-trace estimate)")
    rep.add_argument("-q", "--quiet", action="store_true", help="no progress or notes on stderr")
    add_reader_option(rep)
    rep.add_argument("--open", action="store_true",
                     help="open the HTML/SVG output in a web browser when run interactively "
                          "(without -o: an HTML report in a temporary directory)")
    sel = rep.add_argument_group("what is reported")
    sel.add_argument("--slowest", metavar="N", type=_count_arg, default=20,
                     help="keep the N slowest root calls per root function and operation, each with "
                          "its whole call tree (default 20; 0: none)")
    sel.add_argument("--top", metavar="N", type=_count_arg, default=None,
                     help="text: rows per table (default: 40 functions, 10 hot paths)")
    sel.add_argument("--sections", metavar="A,B,...", type=_sections_arg, default=None,
                     help="text: the sections to print, in order (default: all): "
                          "header, operations (the root calls' latency), functions, hot, offcpu, "
                          "slowest, tree, balance, measured")
    cor = rep.add_argument_group(
        "overhead correction (see docs/overhead.md)",
        "Corrected figures take the tracer's hook cost (O_in inside each call, O_out in its "
        "caller, per recorded call), interrupt subtrees and off-CPU time out of the raw ones. "
        "Calibration, first found: --calibration FILE, calibration.json beside the trace "
        "(collect.sh run directory), the in-trace estimate; --overhead-in/--overhead-out "
        "replace the matching value.")
    cor.add_argument("--calibration", metavar="FILE",
                     help="calibration.json from 'ftflame calibrate' ('none': no hook-cost correction)")
    cor.add_argument("--strict-calibration", action="store_true",
                     help="keep the calibration given even where the trace contradicts it (a "
                          "misfit: docs/overhead.md \"Fit check\"); every corrected figure then "
                          "rests on it. Default: a misfit gives way to one that fits")
    cor.add_argument("--overhead-in", metavar="NS",
                     help="O_in: hook cost inside a traced call's own window, ns")
    cor.add_argument("--overhead-out", metavar="NS",
                     help="O_out: hook cost outside it (in the caller), ns")
    cor.add_argument("--irqs", choices=("exclude", "include"), default="exclude",
                     help="interrupt subtrees: leave the interrupted calls' corrected time and "
                          "show apart (exclude, default), or stay in (include)")
    cor.add_argument("--baseline", metavar="BASELINE.dat",
                     help="the same workload recorded with only the root functions hooked "
                          "(collect.sh --baseline): the measured totals of the balance sheet")
    cor.add_argument("--measured", metavar="FUNC=TIME", action="append", default=[],
                     help="a measured mean per call of a root function for the balance sheet, "
                          "e.g. nfsd3_proc_write=124us (ns/us/ms/s; bare number: us); repeatable")
    rep.set_defaults(func=cmd_report)


def _add_calibrate(sub) -> None:
    cal = sub.add_parser(
        "calibrate", help="compute calibration.json from empty-call recordings",
        description="Compute the tracer's hook cost (O_in, O_out) from the three NFS NULL RPC "
                    "recordings of collect/calibrate.sh: the NULL procedure alone, the dispatcher "
                    "alone, the dispatcher with its whole graph.",
        epilog=CALIBRATE_EPILOG, formatter_class=HelpFormatter)
    cal.add_argument("rundir", nargs="?", metavar="RUNDIR",
                     help="a collect.sh/calibrate.sh output directory holding "
                          + ", ".join(_calib_names()))
    cal.add_argument("--from-traces", nargs=3, metavar=("NULL.dat", "ROOT.dat", "FULL.dat"),
                     help="the three recordings, in this order")
    cal.add_argument("-o", "--output", metavar="OUT",
                     help="where to write calibration.json (default: RUNDIR/calibration.json; "
                          "with --from-traces, stdout; '-' for stdout)")
    cal.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    add_reader_option(cal)
    cal.set_defaults(func=cmd_calibrate)


def correction_options(args):
    """The report's correction flags, typed for the correction stage."""
    from ftflame.correct.stage import CorrectionOptions

    return CorrectionOptions(calibration=args.calibration, overhead_in=args.overhead_in,
                             overhead_out=args.overhead_out, irqs=args.irqs, baseline=args.baseline,
                             measured=tuple(args.measured),
                             strict_calibration=args.strict_calibration)


def _render_to(output, fmt: str, profile, opts, stream) -> tuple:
    """The report of profile written to output, or its text for stdout:
    (text or None, the bytes written to a file or None)."""
    from ftflame.report import RENDERERS

    text = size = None
    if output in (None, "-") and stream is not None:  # written as it is made: it may be big
        write_calls = RENDERERS[fmt].write_calls
        write_stdout(lambda f: write_calls(profile, stream, f))
    elif output in (None, "-"):
        text = RENDERERS[fmt].render(profile, opts)
    elif fmt == "parquet":  # a folder of tables, written beside it and renamed
        from ftflame.report.parquet import write_folder

        size = write_folder(output, profile)
    elif stream is not None:  # the calls the core wrote out, a batch at a time
        write_calls = RENDERERS[fmt].write_calls
        size = write_atomic(output, lambda f: write_calls(profile, stream, f))
    else:  # rendered straight into the file (JSON: in chunks, as written)
        write = RENDERERS[fmt].write
        size = write_atomic(output, lambda f: write(profile, opts, f))
    return text, size


def cmd_report(args) -> int:
    from ftflame import parse
    from ftflame.output import open_in_browser
    from ftflame.report import BINARY, RENDERERS, STREAMED, output_and_format
    from ftflame.report.options import render_options
    from ftflame.rundir import read_beside, resolve_input

    output, fmt = output_and_format(args.output, args.format, args.open, args.input)
    if fmt == "parquet" and output in (None, "-"):
        raise InputError(output or "stdout", "Parquet output is a folder of tables, not a stream",
                         "give -o NAME.parquet/")
    opts = render_options(fmt, args.folded_weights, args.top, args.sections)
    path = resolve_input(args.input)
    if path == "-" and 0 in CLOSED_STREAMS:
        raise InputError("-", "stdin is closed", "give the trace's file name, or redirect stdin from it")
    baseline = args.baseline and resolve_input(args.baseline)
    refuse_input_as_output(output, (path, args.calibration, baseline), read_beside(path))
    stream = None
    if fmt in STREAMED:
        if output in (None, "-") and fmt in BINARY:
            raise InputError("-", f"the {fmt} output is binary, written while the trace is read",
                             f"write it to a file: -o NAME{RENDERERS[fmt].extensions[0]}")
        from ftflame.report.perfetto import CallStream, stream_directory

        stream = CallStream(stream_directory(output) if output not in (None, "-") else None)
    progress = Progress(f"reading {path}", not args.quiet, path)
    try:
        def imports():  # about 0.1-0.2 s, numpy mostly: while the core reads
            RENDERERS[fmt].render
            import ftflame.correct.stage  # noqa: F401

        # the text prints no exclusive-time percentiles: the read keeps no
        # such histograms for it (one histogram update a call fewer: 5% of
        # the read's CPU; docs/performance.md)
        profile = parse.read_meanwhile(path, imports, progress=progress, slowest=args.slowest,
                                       call_stream=stream and stream.fds, excl_hist=fmt != "txt")
        collect_after_imports()
        progress.stage("correcting...")
        from ftflame.correct.stage import correct_for_report

        reader_note(args, profile.trace.source, profile.trace.format)
        profile = correct_for_report(profile, path, correction_options(args))
        progress.stage(f"rendering {fmt}...")
        text, size = _render_to(output, fmt, profile, opts, stream)
    finally:
        progress.done()
        if stream is not None:
            stream.close()
    if output in (None, "-"):
        if text is not None:
            write_stdout(text)
    else:
        if not args.quiet:
            wrote = f", {size:,} bytes" if size is not None else ", in place"
            say(f"wrote {output} ({fmt}{wrote})")
        if args.open:
            open_in_browser(output, args.quiet)
    from ftflame.model.profile import loud_warnings
    for w in loud_warnings(profile.warnings) if not args.quiet else ():
        say(f"warning: {w}")
    return 0


def cmd_calibrate(args) -> int:
    import json

    from ftflame.correct import calibration
    from ftflame.rundir import calibration_inputs, read_beside

    traces, out = calibration_inputs(args.rundir, args.from_traces, args.output)
    refuse_input_as_output(out, traces, [m for t in traces for m in read_beside(t, calibrating=True)])
    for t in traces if args.reader else ():
        reader_note(args, t, input_format(t))
    doc = calibration.calibrate_from_traces(*traces)
    text = json.dumps(doc, indent=2) + "\n"
    if out == "-":
        write_stdout(text)
    else:
        write_atomic(out, text)
    if not args.quiet:
        say(f"{calibration.summary(doc)}" + ("" if out == "-" else f"; wrote {out}"))
        for c in doc["checks"]:
            say(f"warning: {c}")
    return 0


def scripts_dir() -> str:
    import ftflame.collect

    return os.path.dirname(ftflame.collect.__file__)


def cmd_script(args) -> int:
    script = os.path.join(scripts_dir(), args.script)
    if not os.path.isfile(script):
        raise InputError(script, "not installed with this ftflame")
    # calibrate.sh computes calibration.json with `$FTFLAME calibrate`: this ftflame,
    # even when it is not on PATH (e.g. .venv/bin/ftflame)
    me = shutil.which("ftflame") if not sys.argv[0].endswith("ftflame") else os.path.abspath(sys.argv[0])
    if me:
        os.environ.setdefault("FTFLAME", me)
    os.execvp("bash", ["bash", script, *args.args])
    return 1  # not reached


def collect_after_imports() -> None:
    """The cyclic garbage collector on again, if run() held it off, with the
    objects made so far (the imports': modules, classes, functions) set
    aside as permanent (gc.freeze): no later collection walks them."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["collect"]:
        # everything after `collect` belongs to collect.sh, --help included
        try:
            return cmd_script(argparse.Namespace(script="collect.sh", args=argv[1:]))
        except InputError as e:
            say(e.line())
            return 2
    after_side = None
    if argv[:1] == ["diff"]:  # BEFORE... -- AFTER...: the sides apart before argparse
        from ftflame.diff.cli import pre_split

        argv, after_side = pre_split(argv)
    ap = build_parser(argv[0] if argv[:1] and argv[0] in COMMANDS else None)
    args = ap.parse_args(argv)
    args.after_side = after_side
    if not getattr(args, "func", None):
        ap.print_help()
        return 2
    if args.func is not cmd_report:
        collect_after_imports()
    try:
        with terminating_signals_raise(), reader_of(args):
            return args.func(args)
    except InputError as e:
        say(e.line())
        return 2
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except Terminated as e:
        say(f"stopped by {e.name}")
        return 128 + e.signum
    except BrokenPipeError:
        return 0
    except MemoryError:  # a resource, not a bug: exit 1 with one line all the same
        say("out of memory (more than this machine or its limits give: ulimit -v, the "
            "cgroup's memory.max; `report --slowest 0` keeps no call trees)")
        return 1
    except Exception as e:  # an ftflame bug, not bad input
        if os.environ.get("FTFLAME_DEBUG"):
            raise
        say(f"internal error: {type(e).__name__}: {e} "
            "(set FTFLAME_DEBUG=1 for a traceback, and please report it)")
        return 1


def run() -> None:
    """The `ftflame` command: main(), then an exit without tearing the
    interpreter down. Freeing a big read's objects one by one takes time
    that nobody waits for; the reports are written and closed by then, and
    only the standard streams need a flush. (glibc's malloc settings stay
    the default: keeping freed big blocks on the heap saved no time once
    the core stopped copying its tables, and raised the peak RSS;
    docs/performance.md.)"""
    guard_standard_streams()
    # Python's cyclic garbage collector runs every 700 new container objects
    # and, now and then, walks every object alive: during the imports
    # (numpy's, ftflame's) that is every module, class and function again
    # and again, 8-10 ms of the command's CPU on any trace, for garbage the
    # imports do not make. Held off until they are done (collect_after_imports).
    gc.disable()
    try:
        rc = main()
    except KeyboardInterrupt:  # Ctrl-C outside main()'s own try (this import, the parser)
        sys.stderr.write("ftflame: interrupted\n")
        rc = 130
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more to say
            pass
    os._exit(rc)


if __name__ == "__main__":
    run()
