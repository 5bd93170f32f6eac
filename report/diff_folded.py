"""`ftflame diff` as "difffolded" lines (FlameGraph's difffolded.pl and
inferno-diff-folded write the same): `a;b;c BEFORE AFTER`, one line per
call path, with each side's corrected exclusive time per root call in ns
(integers; sides of different lengths compare per root call). Feed it to
flamegraph.pl or inferno-flamegraph: the frames are sized by AFTER and
coloured by the difference. Prints the model's figures; computes none."""
from __future__ import annotations


def render(d, opts=None) -> str:
    t = d.folded
    lines = [f"{key} {int(round(b))} {int(round(a))}"
             for key, b, a in zip(t.keys, t.before.tolist(), t.after.tolist())
             if round(b) or round(a)]
    return "\n".join(lines) + ("\n" if lines else "")
