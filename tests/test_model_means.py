"""One truth for the raw means: the model divides each sum by its calls once
(ftflame.model.profile.means, behind FunctionTable.incl_mean, ReturnSide's,
Profile.node_means and Corrected.means) and every output prints that figure.
The model's division is swapped here for one that gives other figures (the
true mean plus 1 us): an output that divides a sum by its calls again
prints the true mean, not the model's, and fails."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from ftflame.correct.corrections import correct
from ftflame.model import profile as model
from ftflame.model.profile import Calibration
from ftflame.report import html, jsonout, text
from helpers.events import load

MARK_NS = 1000.0
FIXED = Calibration(150.0, 90.0, "command line", "fixed values given on the command line (test)")


@pytest.fixture
def marked_means(monkeypatch):
    """The model's means, each 1 us above sum / calls (0 without calls)."""
    true_means = model.means

    def marked(sums, calls):
        return true_means(sums, calls) + np.where(np.asarray(calls) != 0, MARK_NS, 0.0)

    monkeypatch.setattr(model, "means", marked)


def _profile(corrected: bool):
    # loaded under the marked means: the cached views are computed with them
    p = load("retval-errors")
    return correct(p, FIXED) if corrected else p


def _row_of(p, name: str) -> int:
    rows = [r for r in range(p.nrows) if p.name(r) == name]
    assert len(rows) == 1, name  # the hand-made trace has one path per function
    return rows[0]


def _us(ns: float) -> str:
    return f"{ns / 1e3:,.3f}"


def _table(out: str, title: str) -> dict:
    """Function name -> the cells of its row in the text table under `title`."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows = {}
    for line in lines[start + 4:]:
        if not line.strip():
            break
        *cells, name = line.split()
        rows[re.sub(r"^[|`+\- ]*", "", name)] = cells
    return rows


@pytest.mark.usefixtures("marked_means")
def test_text_prints_the_models_raw_means():
    p = _profile(corrected=False)
    ft, rs = p.functions, p.functions.returns
    out = text.render(p)
    tree = _table(out, "Call tree, aggregated per path")
    assert tree, out
    for name, cells in tree.items():
        assert cells[3] == _us(p.node_means("incl")[_row_of(p, name)]), (name, cells)
    errors = _table(out, "Functions that returned errors")
    assert errors, out
    for name, cells in errors.items():
        i = ft.index(name)
        assert cells[2] == _us(rs.err.incl_mean[i]) and cells[4] == _us(rs.ok.incl_mean[i]), (name, cells)


@pytest.mark.usefixtures("marked_means")
def test_text_corrected_tree_prints_the_models_means():
    p = _profile(corrected=True)
    out = text.render(p)
    tree = _table(out, "Call tree per path")
    assert tree, out
    for name, cells in tree.items():
        r = _row_of(p, name)
        assert cells[1:4] == [_us(p.node_means("incl")[r]), _us(p.corrected.means("incl")[r]),
                              _us(p.corrected.means("excl")[r])], (name, cells)


@pytest.mark.parametrize("corrected", [False, True])
@pytest.mark.usefixtures("marked_means")
def test_json_prints_the_models_raw_means(corrected):
    p = _profile(corrected)
    ft, rs = p.functions, p.functions.returns
    doc = json.loads(jsonout.render(p))
    for f in doc["functions"]:
        i = ft.index(f["name"])
        assert f["incl_ns"]["mean"] == round(ft.incl_mean[i], 1)
        assert f["excl_ns"]["mean"] == round(ft.excl_mean[i], 1)
        assert f["returns"]["error_incl_ns"]["mean"] == round(rs.err.incl_mean[i], 1)
        assert f["returns"]["ok_incl_ns"]["mean"] == round(rs.ok.incl_mean[i], 1)
    stack = list(doc["tree"])
    assert stack
    while stack:
        n = stack.pop()
        r = _row_of(p, n["name"])
        for kind in ("incl", "excl"):
            assert n[kind + "_ns"]["mean"] == round(p.node_means(kind)[r], 1), (n["name"], kind)
        stack.extend(n["children"])


@pytest.mark.usefixtures("marked_means")
def test_html_prints_the_models_raw_means():
    p = _profile(corrected=False)
    ft, rs = p.functions, p.functions.returns
    d = html.functions_data(p)
    assert d["mean"] == [round(m, 1) for m in ft.incl_mean.tolist()]
    assert d["ret"]["err_mean"] == [round(m, 1) for m in rs.err.incl_mean.tolist()]
    assert d["ret"]["ok_mean"] == [round(m, 1) for m in rs.ok.incl_mean.tolist()]


def test_means_of_sums_beyond_2_53_are_the_exact_quotient():
    """A sum past 2**53 ns is not exact as a float64: its mean is the
    correctly rounded quotient of the integers, the figure the JSON has
    always printed for it."""
    sums = np.array([2 ** 60 + 1, 7, 0], dtype=np.int64)
    calls = np.array([3, 2, 0], dtype=np.int64)
    assert model.means(sums, calls).tolist() == [(2 ** 60 + 1) / 3, 3.5, 0.0]
