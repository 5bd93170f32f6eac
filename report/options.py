"""What a renderer is told besides the Profile: exactly the knobs renderers
read, each one set from a flag of `ftflame report` (ftflame/cli.py builds
it once from the arguments)."""
from __future__ import annotations

from dataclasses import dataclass

from ftflame.model.errors import InputError

FOLDED_WEIGHTS = ("raw", "corrected")


@dataclass(frozen=True)
class RenderOptions:
    # --folded-weights: the folded stacks' weights, raw exclusive ns or the
    # corrected ones (interrupt subtrees then stand apart under [irq])
    folded_weights: str = "raw"
    # --top N: rows per text table (None: each table's default); --sections:
    # the text sections to print, in order (None: all, report/text.py SECTIONS)
    top: int | None = None
    sections: tuple | None = None


DEFAULT = RenderOptions()


def render_options(fmt: str, folded_weights: str | None = None, top: int | None = None,
                   sections: tuple | None = None) -> RenderOptions:
    """The options of a report in format fmt; a knob of another format is
    refused rather than silently ignored."""
    if folded_weights is not None and fmt != "folded":
        raise InputError(f"--folded-weights {folded_weights}", f"applies to the folded output, not {fmt}",
                         "write .folded or use -F folded")
    for flag, value in (("--top", top), ("--sections", sections)):
        if value is not None and fmt != "txt":
            shown = ",".join(value) if isinstance(value, tuple) else value
            raise InputError(f"{flag} {shown}", f"applies to the text report, not {fmt}", "write .txt or use -F txt")
    return RenderOptions(folded_weights=folded_weights or "raw", top=top, sections=sections)
