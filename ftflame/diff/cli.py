"""The `ftflame diff` subcommand: its options, its --help, its run."""
from __future__ import annotations

import argparse
import os

from ftflame.model.errors import InputError
from ftflame.report import DIFF_RENDERERS, choose_format

from .options import MIN_CHANGE, DiffOptions

DESCRIPTION = """\
Compare BEFORE with AFTER: per root function, per function and per call
path, the calls per root call and the time per call on each side (mean and
median), the change in % with a 95% interval, and a verdict: faster, slower,
or no significant change. Each side is one or more traces (trace.dat, text
traces, collect.sh run directories); several runs per side are pooled and
their run-to-run spread is kept. Times are corrected as `ftflame report`
corrects them (each trace with its own calibration), raw with --raw."""

EPILOG = """\
examples:
  ftflame diff before.dat after.dat              text for a mail, on stdout
  ftflame diff b1/ b2/ b3/ -- a1/ a2/ a3/        three runs per side (run dirs)
  ftflame diff b1 b2 -- a1 a2 -o d.html          options may follow the AFTER traces
  ftflame diff before.dat after.dat -o d.json    JSON, schema "ftflame-diff/1"
  ftflame diff before.dat after.dat -o d.html    differential flame graph, delta table
  ftflame diff before.dat after.dat -o d.folded  difffolded lines: path BEFORE AFTER
      (inferno-flamegraph d.folded > d.svg, or flamegraph.pl d.folded)

statistics (docs/diff.md):
  values      each call's corrected time: exact for root calls, from the
              1/16-wide histograms elsewhere; means exact (corrected sums)
  change      ratio AFTER / BEFORE of the median time per call - 1 (each
              run's median, averaged in log over the side's runs; an outlier
              50x the rest counts as one call, not as 50)
  interval    95%, a t-test over the runs' medians: the runs are the
              replicates, so run-to-run variation sets the width (each
              item's variance moderated by all functions' variances: Smyth's
              limma). When the root and most functions moved together (a
              drift), each run's figures are taken relative to its effect.
              One run a side cannot measure run-to-run variation: estimate
              and a within-run interval (Welch), no faster/slower verdict
              (--runs-identical takes the calls as independent; the output
              says so)
  verdict     p-values adjusted over the items that could be called: Holm
              over the root functions and operations (the primary claims),
              Benjamini-Hochberg (FDR 5%) over functions and call paths;
              faster/slower needs adjusted p < 0.05, |change| >=
              --min-change, medians of at least 0.1 us per call on both
              sides (smaller corrected times are within the calibration's
              error), and, on a side of several runs, the item in two
  drift       when most functions moved the same way (the machine, not
              the code), the drift is said and items are judged against it
  on          the typical call (the change above), not the mean: items
              whose mean moved the other way are flagged
  new/gone    functions and paths on one side only, with their time

Warnings (one line each) when the sides differ in kernel, clock, graph
functions, tracer options or calibration, and for events lost on a side;
sides with no function in common are refused (exit 2), and so is a side
that names one trace twice (a second name, a link or a copy).
"""


def add_parser(sub, formatter_class: type = argparse.RawDescriptionHelpFormatter) -> None:
    """The diff subcommand; formatter_class is ftflame's own (ftflame.cli.HelpFormatter:
    the terminal's width), passed in because ftflame.cli imports this module."""
    d = sub.add_parser("diff", help="compare two sets of traces: what a patch changed, with error bars",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=formatter_class)
    d.add_argument("inputs", nargs="*", metavar="TRACE",
                   help="BEFORE AFTER, or BEFORE... -- AFTER... (trace.dat, text trace, run directory)")
    d.add_argument("-o", "--output", metavar="OUT",
                   help=f"output file (format from its extension: {' '.join(r.extensions[0] for r in DIFF_RENDERERS.values())}); "
                        "default: text on stdout")
    d.add_argument("-F", "--format", choices=sorted(DIFF_RENDERERS), help="output format (overrides the extension)")
    d.add_argument("-q", "--quiet", action="store_true", help="no notes on stderr")
    d.add_argument("--raw", action="store_true", help="compare raw times (no overhead correction)")
    d.add_argument("--min-change", metavar="PCT", type=float,
                   help=f"smallest change called faster/slower, in %% (default {MIN_CHANGE * 100:g})")
    d.add_argument("--calibration", metavar="FILE",
                   help="calibration.json for both sides ('none': no hook-cost correction); "
                        "default: each trace's own, as ftflame report chooses it")
    d.add_argument("--irqs", choices=("exclude", "include"), default="exclude",
                   help="interrupt subtrees out of the interrupted calls' time (default) or in")
    d.add_argument("--runs-identical", action="store_true",
                   help="take the calls of every run as independent observations (you know the runs do "
                        "not differ); by default the runs are the replicates and one run a side gets no "
                        "faster/slower verdict")
    d.add_argument("--focus", metavar="FUNC", action="append", default=[],
                   help="a function your change is about, named before looking (repeatable): judged as a "
                        "question of its own (Holm over the named functions), not adjusted over every "
                        "function of the traces; with 3 runs a side a +20%% change of a named function is "
                        "found where it would be lost among thousands (docs/diff.md)")
    d.set_defaults(func=cmd_diff)


def split_sides(inputs: list, after: list | None):
    """(before, after) from `A B` or `A... -- B...`."""
    if after is not None:
        if not inputs or not after:
            raise InputError("diff", "a side is empty", "give BEFORE... -- AFTER...")
        return list(inputs), list(after)
    if len(inputs) != 2:
        raise InputError("diff", f"{len(inputs)} traces without '--'",
                         "give BEFORE AFTER, or BEFORE... -- AFTER...")
    return [inputs[0]], [inputs[1]]


def _option_arity() -> dict:
    """{option string: takes a value} of the diff subcommand, from its parser."""
    sub = argparse.ArgumentParser(add_help=False).add_subparsers()
    add_parser(sub)
    return {s: a.nargs != 0 for a in sub.choices["diff"]._actions for s in a.option_strings}


def _option_at(token: str, arity: dict):
    """(takes a value, value attached) when `token` is an option of diff
    (`-o`, `-oFILE`, `--output=FILE`, an unambiguous `--out`), else None."""
    if token in ("-", "--") or not token.startswith("-"):
        return None
    if token.startswith("--"):
        name, eq, _ = token.partition("=")
        hits = [o for o in arity if o.startswith("--") and o.startswith(name)]
        match = name if name in arity else hits[0] if len(hits) == 1 else None
        return None if match is None else (arity[match], bool(eq))
    short = token[:2]
    if short not in arity:
        return None
    return arity[short], len(token) > 2


def pre_split(argv: list):
    """argv of `diff` with the traces after '--' taken out (argparse would
    mix both sides into one list): (argv, after or None). Options written
    after the AFTER traces (`... -- a1 a2 -o d.html`) stay options: they
    go back before the '--'; a trace whose name starts with '-' is given
    as ./-name."""
    if "--" not in argv:
        return argv, None
    at = argv.index("--")
    arity = _option_arity()
    head, after = list(argv[:at]), []
    rest = argv[at + 1:]
    i = 0
    while i < len(rest):
        opt = _option_at(rest[i], arity)
        if opt is None:
            after.append(rest[i])
            i += 1
            continue
        takes_value, attached = opt
        take = 2 if takes_value and not attached and i + 1 < len(rest) else 1
        head += rest[i:i + take]
        i += take
    return head, after


def diff_options(args: argparse.Namespace) -> DiffOptions:
    """The options of `ftflame diff`, from its parsed arguments."""
    if args.min_change is not None and not 0 <= args.min_change < 1000:
        raise InputError("--min-change", f"must be a percentage from 0 to 1000, not {args.min_change:g}")
    return DiffOptions(raw=args.raw, min_change=MIN_CHANGE if args.min_change is None else args.min_change / 100.0,
                       calibration=args.calibration, irqs=args.irqs, runs_identical=args.runs_identical,
                       focus=tuple(dict.fromkeys(args.focus)))


def cmd_diff(args) -> int:
    from ftflame.output import refuse_input_as_output, say, write_atomic, write_stdout
    from ftflame.rundir import read_beside, resolve_input

    from . import compare
    from .load import refuse_repeated_runs

    before, after = split_sides(args.inputs, args.after_side)
    fmt = choose_format(args.output, args.format, DIFF_RENDERERS)
    opts = diff_options(args)
    for given in before + after:
        if not os.path.exists(given) and given != "-":
            raise InputError(given, "no such file or directory")
    if "-" in before + after:
        raise InputError("-", "diff reads files, not stdin", "save the trace to a file")
    traces = [resolve_input(g) for g in before + after]
    refuse_repeated_runs("BEFORE", before, traces[:len(before)])
    refuse_repeated_runs("AFTER", after, traces[len(before):])
    refuse_input_as_output(args.output, traces + [args.calibration], [b for t in traces for b in read_beside(t)])
    d = compare(before, after, opts)
    if args.output in (None, "-"):
        write_stdout(DIFF_RENDERERS[fmt].render(d, opts))
    else:
        write = DIFF_RENDERERS[fmt].write
        size = write_atomic(args.output, lambda f: write(d, opts, f))
        if not args.quiet:
            wrote = f", {size:,} bytes" if size is not None else ", in place"
            say(f"wrote {args.output} ({fmt}{wrote})")
    if not args.quiet and args.output not in (None, "-"):
        for w in d.warnings:
            say(f"warning: {w}")
        if d.drift is not None:  # the first thing to know before reading any verdict
            say(f"note: {d.drift.sentence()}")
    return 0
