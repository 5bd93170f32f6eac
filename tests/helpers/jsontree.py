"""The JSON report's `tree` array on its own, as the renderer writes it
(report/jsonout.py's template through the C row formatter): for tests that
hold it to the reference (jsonref.tree_json) and to the whole document's."""
from __future__ import annotations

from ftflame.model.profile import Profile
from ftflame.report import jsonout
from ftflame.report._rowfmt import format_rows


def tree_json(p: Profile) -> str:
    """The `tree` array as JSON text, children sorted by inclusive time."""
    if p.nrows == 0:
        return "[]"
    return format_rows(jsonout.tree_template(p), p.nrows)
