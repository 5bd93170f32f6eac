"""How far the calibration's own uncertainty moves a corrected figure
(docs/overhead.md "Uncertainty").

A corrected inclusive sum is linear in the hook costs: a call path's clean
calls, D recorded descendants and R interrupt subtrees take out
calls*O_in + D*(O_in + O_out) + R*O_out. Each cost has a 95% interval in
calibration.json (bootstrap over the calibration's calls); its half-width,
times what it multiplies, summed, is the half-width of the corrected sum's
interval (added, not in quadrature: the three estimates share their samples,
so their errors need not be independent). The hook level (ftflame/correct/hooklevel.py)
is read in whole nanoseconds from the trace and adds nothing here.

Without intervals (the in-trace estimate, values given on the command line,
no calibration) a figure has none: None, and the outputs print none.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ftflame.model.profile import Calibration, Profile


def _half_width(details: dict, key: str) -> Optional[float]:
    obj = details.get(key)
    ci = obj.get("ci95_ns") if isinstance(obj, dict) else None
    try:
        lo, hi = float(ci[0]), float(ci[1])
    except (TypeError, ValueError, IndexError):
        return None
    return (hi - lo) / 2.0 if np.isfinite(lo) and np.isfinite(hi) and hi >= lo else None


def cost_half_widths(cal: Calibration) -> Optional[tuple]:
    """(O_in, O_in + O_out, O_out) 95% half-widths, ns, or None when the
    calibration has no intervals for them (or values were replaced)."""
    d = cal.details if isinstance(cal.details, dict) else {}
    if not cal.applied or "command_line" in d:
        return None
    if "applied_o_in" in d:  # a root-only trace: O_in is the NULL procedure alone
        h_in = _half_width(d, "o_in_root_only")
    else:
        h_in = _half_width(d, "o_in")
    h_sum, h_out = _half_width(d, "o_in_plus_o_out"), _half_width(d, "o_out")
    if h_in is None or h_sum is None or h_out is None:
        return None
    return h_in, h_sum, h_out


def root_half_widths(p: Profile) -> Optional[np.ndarray]:
    """Per root call (the sample table): the 95% half-width, ns, of its
    corrected duration; None without calibration intervals."""
    c = p.corrected
    hw = cost_half_widths(p.calibration) if c is not None else None
    if hw is None:
        return None
    h_in, h_sum, h_out = hw
    desc = p.scol("desc").astype(np.float64)
    if c.irqs == "include":
        return h_in + (desc + p.scol("irq_calls")) * h_sum
    return h_in + desc * h_sum + p.scol("irq_roots") * h_out
