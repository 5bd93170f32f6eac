"""ftflame diff: what changed between two sets of traces, with error bars.

``compare(before, after, opts)`` reads every trace once (``load``), pools
each side's runs and computes every figure once (``model``: statistics in
``stats``), with the warnings of ``checks``; the options are a
``DiffOptions`` (``options``); the renderers in report/diff_*.py
(ftflame.report.DIFF_RENDERERS) print the resulting ``Diff``.
"""
from __future__ import annotations

from .options import DEFAULT, DiffOptions


def compare(before, after, opts: DiffOptions = DEFAULT):
    """The Diff of two lists of traces (paths or run directories)."""
    from . import load

    runs_b, runs_a = load.load_sides(before, after, opts)
    return compare_runs(runs_b, runs_a, opts)


def compare_runs(runs_b, runs_a, opts: DiffOptions = DEFAULT):
    """The Diff of two sides already read (tuples of load.Run)."""
    from . import checks, model

    d = model.build(runs_b, runs_a, corrected=not opts.raw, min_change=opts.min_change, irqs=opts.irqs,
                    runs_identical=opts.runs_identical, focus=opts.focus)
    checks.refuse_disjoint(runs_b, runs_a, d.tables)
    known = set(d.table("functions").keys)
    for name in opts.focus:
        if name not in known:
            from ftflame.model.errors import InputError

            raise InputError("--focus", f"{name}: no such function in either side's traces",
                             "name it as `ftflame report` prints it")
    warn = checks.warnings(runs_b, runs_a, d.before, d.after, d.tables if d.corrected else None)
    return d.__class__(**{**d.__dict__, "warnings": tuple(warn)})


__all__ = ["DiffOptions", "compare", "compare_runs"]
