"""Whether a trace looks cut by max_graph_depth (tracefs `max_graph_depth`,
`trace-cmd record --max-graph-depth N`): the tracer hooks deeper calls but
records only depths 0..N-1, so the calls at depth N-1 become leaves holding
their callees' time as self time.

The depth alone says nothing (a NULL procedure's graph is 3 levels deep), so
the evidence is the shape a cut leaves: a call graph thins out towards its
deepest level (few calls, little time: the leaves of real graphs are short
helpers), while a cut stops every deep branch at the same level, which then
holds at least as many calls as the level above and a large share of the
time. The depth-limited fixtures are cut and no full-graph fixture comes
near (tests/test_output_cases.py, the depth-cut test, names them).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .profile import Profile

MIN_SHARE = 0.25  # of the root calls' time in calls at the deepest depth
MIN_CALLS = 100  # calls at the deepest depth: fewer tell nothing


@dataclass(frozen=True)
class DepthCut:
    depth: int  # the deepest depth recorded (roots are depth 0)
    calls: int  # completed calls at that depth
    calls_above: int  # at the depth above
    share: float  # of the root calls' inclusive time held by the calls at that depth

    @property
    def limit(self) -> int:
        """The max_graph_depth the shape suggests."""
        return self.depth + 1

    def evidence(self) -> str:
        return (f"no call deeper than depth {self.depth}, and the {self.calls:,} calls there "
                f"(more than the {self.calls_above:,} at the depth above) hold "
                f"{100 * self.share:.0f}% of the root calls' time")


def depth_cut(p: Profile) -> DepthCut | None:
    """The cut the trace shows, or None when the evidence does not hold."""
    if p.nrows == 0:
        return None
    depth = p.col("depth")
    d = int(depth.max())
    if d < 1:  # a root-only trace: a graph filter, or depth 1; nothing to tell them apart
        return None
    calls = p.col("calls")
    incl = p.col("incl").astype(np.float64)
    at, above = depth == d, depth == d - 1
    n, n_above = int(calls[at].sum()), int(calls[above].sum())
    total = float(incl[depth == 0].sum())
    share = float(incl[at].sum()) / total if total > 0 else 0.0
    if n < MIN_CALLS or n < n_above or share < MIN_SHARE:
        return None
    return DepthCut(d, n, n_above, share)
