"""ftflame diff: what changed between two sets of traces, with error bars.

``compare(before, after, opts)`` reads every trace once (``load``), pools
each side's runs and computes every figure once (``model``: statistics in
``stats``), with the warnings of ``checks``; the renderers in
report/diff_*.py print the resulting ``Diff``.
"""
from __future__ import annotations


def compare(before, after, opts):
    """The Diff of two lists of traces (paths or run directories)."""
    from . import checks, load, model, stats

    runs_b, runs_a = load.load_sides(before, after, opts)
    min_change = getattr(opts, "min_change", None)
    d = model.build(runs_b, runs_a, corrected=not getattr(opts, "raw", False),
                    min_change=stats.MIN_CHANGE if min_change is None else min_change,
                    irqs=getattr(opts, "irqs", None) or "exclude")
    checks.refuse_disjoint(runs_b, runs_a, d.tables)
    warn = checks.warnings(runs_b, runs_a, d.before, d.after)
    return d.__class__(**{**d.__dict__, "warnings": tuple(warn)})


__all__ = ["compare"]
