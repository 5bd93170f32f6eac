"""The correction stage of `ftflame report` as one step: the hook cost
chosen (calibration), the corrected figures (corrections), the balance sheet
against a baseline recording or measured means (balance) and the totals a
collect.sh run measured outside the tracer (measured)."""
from __future__ import annotations

from dataclasses import dataclass

import ftflame.parse as parse
from ftflame.correct import balance, calibration, corrections, cpu, measured
from ftflame.model.errors import InputError
from ftflame.model.profile import Profile, note_warning
from ftflame.rundir import resolve_input


@dataclass(frozen=True)
class CorrectionOptions:
    """The report's correction options, as given (`ftflame report --help`)."""
    calibration: str | None = None  # calibration.json, 'none', or None: look beside the trace
    overhead_in: str | None = None  # ns, as typed
    overhead_out: str | None = None
    irqs: str = "exclude"
    baseline: str | None = None  # a root-only recording (trace.dat or run directory)
    measured: tuple[str, ...] = ()  # FUNC=TIME
    strict_calibration: bool = False  # keep a calibration the trace contradicts


def hook_cost_ns(option: str, text: str | None) -> float | None:
    """A hook cost given on the command line, in ns."""
    if text is None:
        return None
    try:
        v = float(text)
    except ValueError:
        raise InputError(option, f"not a number of ns: {text!r}") from None
    if not v >= 0 or v == float("inf"):
        raise InputError(option, f"must be a finite number of ns >= 0, not {text!r}")
    return v


def correct_for_report(profile: Profile, path: str, opts: CorrectionOptions) -> Profile:
    """Calibration, corrections and the balance sheet of the trace at path."""
    cal = calibration.choose(profile, path, opts.calibration,
                             hook_cost_ns("--overhead-in", opts.overhead_in),
                             hook_cost_ns("--overhead-out", opts.overhead_out),
                             strict=opts.strict_calibration, irqs=opts.irqs)
    profile = corrections.correct(profile, cal, irqs=opts.irqs)
    meta = measured.load_meta(path)  # (meta.json beside a collect.sh trace, checked; its warnings)
    note = calibration.buffer_percent_note(cal, meta[0])
    if note:
        profile = profile.replace(warnings=profile.warnings + (note_warning(note),))
    means = [balance.parse_measured(m) for m in opts.measured]
    base = None
    if opts.baseline:
        base = parse.read(resolve_input(opts.baseline))
        # the same calibration (its root-only O_in where it has one)
        base = corrections.correct(base, calibration.for_profile(cal, base), irqs=opts.irqs)
    out = measured.attach(balance.attach(profile, base, means), path, meta)
    out = cpu.attach(out, path)
    return _without_views_of_the_correction(out)


# Views of the tree's shape that only the correction stage reads (a
# whole-tree column each, under every renderer's peak). The flame graph's
# tree (HTML, SVG) makes the levels again, quickly.
CORRECTION_VIEWS = ("level_order", "levels", "tree_tops")


def _without_views_of_the_correction(p: Profile) -> Profile:
    p.forget(*CORRECTION_VIEWS)
    return p
