"""Golden outputs for the hand-made inputs: tests/data/events/expected/,
raw (CASE.FMT) and corrected with a fixed hook cost (CASE.corr.FMT: the real
correction, as `--overhead-in 150 --overhead-out 90` applies it).

Regenerate after an intended change with `UPDATE_GOLDEN=1 make test` (or
`make golden`), then review the diff: test_golden_figures_equal_reference
checks the golden JSON figures against the independent reference
(tests/helpers/callref.py), so a golden file cannot silently take in a wrong number.
On a mismatch the actual output is written beside the golden file as *.actual.
"""
from __future__ import annotations

import json
import os

import pytest
from test_binding import check_corr, check_raw, tree_nodes

from ftflame.cli import build_parser, correction_options
from ftflame.correct.stage import correct_for_report
from ftflame.report import RENDERERS
from helpers import callref
from helpers.events import HERE, load, parse_events

EXPECTED = os.path.join(HERE, "expected")
CASES = sorted(f[: -len(".events")] for f in os.listdir(HERE) if f.endswith(".events"))
FORMATS = {"txt": "txt", "folded": "folded", "json": "json"}
O_IN, O_OUT = 150.0, 90.0
# cases of calls only (no switches, lost events, orphans): the reference's ground
REFERENCE_CASES = ["many-calls"]  # the others are a few ns long: O_in 150 clamps them


def profile(case: str, variant: str):
    p = load(case)
    if variant == "corr":
        # strict: the fixed hook cost even where the tiny hand-made calls
        # contradict it (their clamps are what some cases show)
        args = build_parser().parse_args(["report", case, "--overhead-in", str(O_IN),
                                          "--overhead-out", str(O_OUT), "--strict-calibration"])
        p = correct_for_report(p, case, correction_options(args))
    return p


def golden_path(case: str, variant: str, fmt: str) -> str:
    return os.path.join(EXPECTED, f"{case}.{FORMATS[fmt]}" if variant == "raw" else
                        f"{case}.corr.{FORMATS[fmt]}")


@pytest.mark.parametrize("variant", ["raw", "corr"])
@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("case", CASES)
def test_golden(case, fmt, variant):
    actual = RENDERERS[fmt].render(profile(case, variant))
    path = golden_path(case, variant, fmt)
    if os.environ.get("UPDATE_GOLDEN"):
        os.makedirs(EXPECTED, exist_ok=True)
        with open(path, "w") as f:
            f.write(actual)
        return
    if not os.path.exists(path):
        pytest.fail(f"{path} missing: run UPDATE_GOLDEN=1 make test")
    with open(path) as f:
        expected = f.read()
    if actual != expected:
        with open(path + ".actual", "w") as f:
            f.write(actual)
        pytest.fail(f"{case} {fmt} differs from {path} (actual in {path}.actual; "
                    "UPDATE_GOLDEN=1 make test to accept)")


@pytest.mark.parametrize("fmt", ["txt", "html"])
@pytest.mark.parametrize("case", CASES)
def test_lost_events_are_claimed_only_where_the_trace_has_them(case, fmt):
    """Gap calls have several causes (a lost-event gap, an overrun, a missing
    entry or exit): no output may say events were lost of a trace whose
    counters show none."""
    p = profile(case, "corr")
    out = " ".join(RENDERERS[fmt].render(p).split())
    claims = [w for w in ("lost-event gap", "LOST EVENTS", "lost events on") if w in out]
    if p.counters.get("lost_records"):
        assert claims, f"{case}: the lost events are not said"
    else:
        assert not claims, f"{case}: {claims} of a trace without lost events"


@pytest.mark.parametrize("case", REFERENCE_CASES)
def test_golden_figures_equal_reference(case):
    """Every figure of the golden JSON, raw and corrected, is the reference's."""
    with open(os.path.join(HERE, case + ".events")) as f:
        calls = callref.calls_of(callref.handmade_events(parse_events(f.read())))
    ref = callref.Reference(calls, O_IN, O_OUT)
    for variant in ("raw", "corr"):
        with open(golden_path(case, variant, "json")) as f:
            doc = json.load(f)
        nodes = tree_nodes(doc)
        assert set(nodes) == set(ref.paths)
        for path, e in ref.paths.items():
            n, what = nodes[path], f"{variant} {'/'.join(path)}"
            assert n["calls"] == e["calls"], what
            check_raw(n["incl_ns"], e["incl"], what + " incl")
            check_raw(n["excl_ns"], e["excl"], what + " excl")
            want_flags = ({"irq"} if e["irq"] else set()) | ({"irq_root"} if e["irq_root"] else set())
            assert set(n["flags"]) == want_flags, what
            if variant == "corr":
                assert ("approx" not in n["incl_corr_ns"]) == e["root"], what
                check_corr(n["incl_corr_ns"], e["incl_corr"], what + " incl*", e["root"])
                check_corr(n["excl_corr_ns"], e["excl_corr"], what + " excl*", False)
            else:
                check_raw(n["incl_corr_ns"], e["incl"], what + " incl* (raw)")
        # every root call, in irq context too (the twin's root path is then
        # "name [irq]"; root_calls[] name the function and say irq): raw and
        # corrected duration
        roots = {p[0]: e for p, e in ref.paths.items() if e["root"]}
        got = {}
        for rc in doc["root_calls"]:
            got.setdefault(rc["name"] + (" [irq]" if rc["irq"] else ""), []).append(rc)
        assert set(got) == set(roots), variant
        for name, e in roots.items():
            assert sorted(rc["dur_ns"] for rc in got[name]) == sorted(
                c.dur for c in calls if c.path == (name,)), name
            want = sorted(e["corr_values"]) if variant == "corr" else sorted(
                c.dur for c in calls if c.path == (name,))
            assert sorted(rc["dur_corr_ns"] for rc in got[name]) == pytest.approx(want, abs=0.051), name
            assert all(rc["irq"] == e["irq"] for rc in got[name]), name
        funcs = {f["name"]: f for f in doc["functions"]}
        for name, e in ref.functions.items():
            check_raw(funcs[name]["incl_ns"], e["incl"], f"{variant} {name} incl")
            check_raw(funcs[name]["excl_ns"], e["excl"], f"{variant} {name} excl")
            if variant == "corr":
                exact = all(ref.paths[p]["root"] for p in e["paths"])
                check_corr(funcs[name]["incl_corr_ns"], e["incl_corr"], f"{name} incl*", exact)
                check_corr(funcs[name]["excl_corr_ns"], e["excl_corr"], f"{name} excl*", False)
    # the case shows what a swapped column would change
    if case == "many-calls":
        inc = ref.paths[("svc_process",)]["incl"]
        assert len({inc["p50"], inc["p90"], inc["p99"], inc["max"]}) == 4
        assert ref.paths[("__sysvec_apic_timer_interrupt [irq]",)]["irq"]
