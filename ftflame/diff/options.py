"""What `ftflame diff` is told besides its traces: exactly the knobs the
reading and the comparison read, each one set from a flag of `ftflame diff`
(ftflame/diff/cli.py builds it once from the arguments)."""
from __future__ import annotations

from dataclasses import dataclass

# Changes smaller than this are not called, whatever their p-value. Here,
# not in stats.py, so that the command line's parser imports no numpy.
MIN_CHANGE = 0.05


@dataclass(frozen=True)
class DiffOptions:
    # --raw: compare the raw times, nothing taken out
    raw: bool = False
    # --min-change PCT: the smallest change called faster/slower, as a fraction
    min_change: float = MIN_CHANGE
    # --calibration FILE|none: the hook cost of both sides (None: each
    # trace's own, as `ftflame report` chooses it)
    calibration: str | None = None
    # --irqs: interrupt subtrees out of the interrupted calls' time or in
    irqs: str = "exclude"
    # --runs-identical: take the calls of all runs as independent
    # observations (the user vouches the runs do not differ); without it the
    # runs are the replicates and one run a side gets no verdict
    runs_identical: bool = False
    # --focus FUNC (repeatable): the functions a patch is about, named before
    # looking: each is a primary claim of its own family (Holm over the named
    # ones alone), not one of thousands of functions adjusted together
    focus: tuple = ()


DEFAULT = DiffOptions()
