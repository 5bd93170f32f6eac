"""Every output agrees with the JSON: on every trace available (the small
hand-made and sample ones in tests/data, every fixture in ../shared), raw
and corrected with the REAL correction (ftflame.correct.corrections, the in-trace
calibration estimate where the trace gives one), each figure of the HTML's
data block, the SVG, the speedscope file, the folded stacks and the text
report equals the JSON's after the documented rounding. The browser side
(table and detail panel read from the DOM) is tests/browser/test_consistency_browser.py."""
from __future__ import annotations

import glob
import json
import os
import re

import pytest

from conftest import DATA, FIXTURE_DATS, fixture_id, profile_of
from ftflame.correct.balance import attach
from ftflame.correct.calibration import estimate_in_trace
from ftflame.correct.corrections import HOW_CORRECTED, correct, irq_kind
from ftflame.model.profile import Calibration
from ftflame.report import folded, html, jsonout, speedscope, svg, text

FIXED = Calibration(700.0, 300.0, "command line", "fixed values given on the command line (test)")
SMALL = (sorted(glob.glob(os.path.join(DATA, "sample", "*.dat"))) +
         sorted(glob.glob(os.path.join(DATA, "text", "*.txt"))))
EVENTS = sorted(f[: -len(".events")] for f in os.listdir(os.path.join(DATA, "events")) if f.endswith(".events"))
FLAG_BITS = {"irq": 1, "irq_root": 2, "partial": 4}


def load_any(key: str):
    if key.startswith("events:"):
        from helpers.events import load

        return load(key[len("events:"):])
    return profile_of(key)


def trace_id(key: str) -> str:
    return key if key.startswith("events:") else os.path.relpath(key, DATA) if key.startswith(DATA) \
        else fixture_id(key)


TRACES = ["events:" + c for c in EVENTS] + SMALL + FIXTURE_DATS


def corrected(p):
    """The real correction: the trace's own hook-cost estimate, else fixed
    values, through ftflame.correct.corrections.correct, with the balance sheet."""
    return attach(correct(p, estimate_in_trace(p) or FIXED))


# ---- reading the JSON ---------------------------------------------------------
def tree_paths(doc) -> dict:
    """(names from the root, flag bits) -> the JSON tree rows of that path."""
    out = {}
    stack = [((), n) for n in doc["tree"]]
    while stack:
        path, n = stack.pop()
        here = path + (n["name"],)
        out.setdefault((here, sum(FLAG_BITS[f] for f in n["flags"])), []).append(n)
        stack.extend((here, k) for k in n["children"])
    return out


def close(shown: float, exact: float, decimals: int, scale: float = 1e3) -> bool:
    """A figure printed with `decimals` decimals in units of `scale` ns
    equals the JSON's (itself rounded to 0.1 ns)."""
    return abs(shown * scale - exact) <= 0.5 * scale * 10.0 ** -decimals + 0.06


# ---- the checks, one per output -------------------------------------------------
def check_html_data(q, doc):
    d = html.report_data(q)
    applied = q.calibration.applied
    F, names = d["functions"], d["funcs"]
    jf = {f["name"]: f for f in doc["functions"]}
    approx = set(F["corr"]["approx"]) if applied and F.get("corr") else set()
    for i, fid in enumerate(F["func"]):
        j = jf[names[fid]]
        assert F["calls"][i] == j["calls"]
        assert (F["incl"][i], F["excl"][i]) == (j["incl_ns"]["sum"], j["excl_ns"]["sum"])
        for k in ("min", "max", "p50", "p90", "p99", "mean"):
            assert F[k][i] == j["incl_ns"][k], (names[fid], k)
        if j["offcpu_ns"] is None:
            assert F["off"] is None
        else:
            assert F["off"][i] == j["offcpu_ns"]
        if applied:
            c = j["incl_corr_ns"]
            assert F["callsc"][i] == c["calls"]
            assert abs(F["inclc"][i] - c["sum"]) <= 0.56
            assert abs(F["exclc"][i] - j["excl_corr_ns"]["sum"]) <= 0.56
            for k in ("min", "max", "mean", "p50", "p90", "p99"):
                assert F["corr"][k][i] == c[k], (names[fid], k)
            assert (i in approx) == bool(c.get("approx")), names[fid]
    check_flame_data(q, d["flame"], names, tree_paths(doc), applied)
    # the latency panel's summary: the root function's row of the JSON tree
    S = d["samples"]
    for label, st in zip(S["roots"], S["root_stats"]):
        rows = [r for r in doc["tree"] if r["name"] == label]
        if st is None or len(rows) != 1:
            continue
        r = rows[0]
        assert (st["calls"], st["p50"], st["p99"], st["max"]) == \
            (r["calls"], r["incl_ns"]["p50"], r["incl_ns"]["p99"], r["incl_ns"]["max"])
        if applied:
            c = r["incl_corr_ns"]
            assert (st["callsc"], st["p50c"], st["p99c"], st["maxc"]) == (c["calls"], c["p50"], c["p99"], c["max"])
            assert st["approx"] == bool(c.get("approx"))
    return d


def frame_paths(depth, label) -> list:
    """Per frame (pre-order with depths): the names from the top frame down."""
    out, stack = [], []
    for i, dep in enumerate(depth):
        del stack[dep:]
        stack.append(label(i))
        out.append(tuple(stack[1:]))  # without "all"
    return out


def check_flame_data(q, fl, names, paths, applied):
    synthetic = {s[0] for s in fl["small"]} | set(fl["offcpu"])
    fpaths = frame_paths(fl["depth"], lambda i: names[fl["func"][i]] if fl["func"][i] >= 0 else "?")
    approx = set(fl["corr"]["approx"]) if applied and fl.get("corr") else set()
    n = len(fl["depth"])
    for i in range(1, n):
        if i in synthetic or fl["func"][i] < 0:
            continue
        if fl["calls"][i] == 0:
            # no completed call (the (partial) pseudo-root, a lost exit): it
            # states the calls under it
            assert fl["incl"][i] == round(fl["w"][i]) and (not applied or fl["inclc"][i] == round(fl["wc"][i]))
            continue
        rows = paths.get((fpaths[i], fl["flags"][i] & 7))
        if not rows or len(rows) != 1:
            continue  # a path shown twice (e.g. task and irq of one name): summed elsewhere
        r = rows[0]
        assert (fl["calls"][i], fl["incl"][i], fl["excl"][i]) == (r["calls"], r["incl_ns"]["sum"], r["excl_ns"]["sum"])
        assert (fl["p50"][i], fl["p99"][i]) == (r["incl_ns"]["p50"], r["incl_ns"]["p99"])
        if applied:
            c = r["incl_corr_ns"]
            assert abs(fl["inclc"][i] - c["sum"]) <= 0.56 or fl["wc"][i] == fl["inclc"][i] or \
                "partial" in r["flags"], fpaths[i]
            assert fl["callsc"][i] == c["calls"]
            assert (fl["corr"]["p50"][i], fl["corr"]["p99"][i]) == (c["p50"], c["p99"])
            assert (i in approx) == bool(c.get("approx"))
            # corrected: a drawn frame is as wide as the figure its tooltip states
            assert fl["wc"][i] == 0 or abs(fl["wc"][i] - fl["inclc"][i]) <= 0.56, fpaths[i]
    # children never overflow their parent, in either mode
    for key in ("w", "wc") if applied else ("w",):
        w = fl[key]
        kids = [0.0] * n
        count = [0] * n
        parent = []
        stack = []
        for i, dep in enumerate(fl["depth"]):
            del stack[dep:]
            parent.append(stack[-1] if stack else -1)
            stack.append(i)
        for i in range(1, n):
            kids[parent[i]] += w[i]
            count[parent[i]] += 1
        for i in range(n):
            assert kids[i] <= w[i] + 0.05 * count[i] + 1e-6, (key, i, kids[i], w[i])


def parse_time(s: str):
    """'1,234.567 us' -> (ns, decimals, unit scale)."""
    m = re.fullmatch(r"([-0-9,.]+) (ns|us|µs|ms|s)", s.strip())
    num = m.group(1).replace(",", "")
    scale = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}[m.group(2)]
    dec = len(num.split(".")[1]) if "." in num else 0
    return float(num) * scale, dec, scale


SVG_FRAME = re.compile(r'<g class="f" id="f(\d+)" data-depth="(\d+)" data-x="([-0-9.]+)" data-w="([-0-9.]+)" '
                       r'data-parent="(-?\d+)"><title>([^<]*)</title><rect x="([-0-9.]+)" y="\d+" '
                       r'width="([-0-9.]+)"')


def check_svg(q, doc):
    import html as htmllib

    out = svg.render(q)
    applied = q.calibration.applied
    notes = len(doc["trace"]["notes"])
    if notes:
        assert f"| {notes:,} anomal" in out  # the same notes as the HTML's banner and the JSON
    else:
        assert "anomal" not in out.split("<g id=\"frames\">")[0]
    frames = {}
    for m in SVG_FRAME.finditer(out):
        fid = int(m.group(1))
        frames[fid] = {"parent": int(m.group(5)), "w": float(m.group(4)), "pw": float(m.group(8)),
                       "tip": htmllib.unescape(m.group(6))}
    if not frames:  # nothing to draw (every call left out of corrected figures)
        return
    total = frames[0]["w"]
    by_names = {}
    for (pth, _), rs in tree_paths(doc).items():
        by_names.setdefault(pth, []).extend(rs)
    for fid, f in frames.items():
        # the rectangle is the frame's width, to the pixel
        assert abs(f["pw"] - f["w"] / total * svg.WIDTH) <= 0.01 + 1e-3 * svg.WIDTH * 0.1 / max(total, 1)
        bits = f["tip"].split(" | ")
        name = bits[0]
        if fid == 0 or name.startswith("[") or "calls" not in f["tip"]:
            continue
        names = []
        a = fid
        while a > 0:
            names.append(frames[a]["tip"].split(" | ")[0])
            a = frames[a]["parent"]
        rows = by_names.get(tuple(reversed(names)), [])
        incl = next(b for b in bits if b.startswith("inclusive "))
        m = re.fullmatch(r"inclusive (.+?) raw(?:, (.+?) corrected)?", incl)
        raw_ns, dec, scale = parse_time(m.group(1))
        if len(rows) == 1 and rows[0]["calls"]:
            assert close(raw_ns / scale, rows[0]["incl_ns"]["sum"], dec, scale), (names, incl)
            assert f"calls {rows[0]['calls']:,}" in f["tip"]
        shown_ns, dec, scale = parse_time(m.group(2)) if applied else (raw_ns, dec, scale)
        # the tooltip states the frame's width (raw: wider only where clock
        # skew makes the children add up to more)
        assert close(shown_ns / scale, f["w"], dec, scale) or (not applied and f["w"] > shown_ns), \
            (names, f["tip"], f["w"])


def check_speedscope(q, doc):
    d = speedscope.document(q)
    names = [f["name"] for f in d["shared"]["frames"]]
    roots = {}
    for r in doc["tree"]:
        roots[r["name"]] = roots.get(r["name"], 0) + r["incl_ns"]["sum"]
    trees = [pr for pr in d["profiles"] if "(call tree, raw ns)" in pr["name"]]
    if trees:
        busiest = max((n for n in roots if n != "(partial)"), key=lambda n: (roots[n], n), default=None)
        if busiest is not None:
            assert d["activeProfileIndex"] == 0 and d["profiles"][0]["name"].startswith(busiest + " (call tree")
    for pr in d["profiles"]:
        m = re.fullmatch(r"(.+) \(call tree, (raw|corrected) ns\)", pr["name"])
        if not m:
            continue
        root, mode = m.groups()
        key = "incl_ns" if mode == "raw" else "incl_corr_ns"
        opened, per_name = {}, {}
        for e in pr["events"]:
            if e["type"] == "O":
                opened.setdefault(e["frame"], []).append(e["at"])
            else:
                nm = names[e["frame"]]
                per_name[nm] = per_name.get(nm, 0) + e["at"] - opened[e["frame"]].pop()
        # the root function's own frames last exactly its (corrected) total
        want = sum(r[key]["sum"] for r in doc["tree"] if r["name"] == root)
        nroots = sum(1 for r in doc["tree"] if r["name"] == root)
        # (corrected: a root frame also holds the kept calls under a caller
        # left out, detached, which are in no kept caller's corrected time)
        wider = mode == "raw" or q.counters.get("detached_calls", 0) > 0
        if root != "(partial)":
            assert abs(per_name.get(root, 0) - want) <= 0.5 * nroots + 0.06 or \
                (wider and per_name.get(root, 0) >= want), (pr["name"], per_name.get(root), want)


def folded_paths(doc) -> dict:
    out = {}
    stack = [("", n) for n in doc["tree"]]
    while stack:
        prefix, n = stack.pop()
        name = n["name"].replace(";", ":").replace(" ", "_")
        if not prefix and "irq" in n["flags"]:  # a root in interrupt context, under its frame
            prefix = irq_kind(n["name"])
        elif prefix and "irq_root" in n["flags"]:  # an interrupt inside a task call, marked
            prefix += ";" + irq_kind(n["name"])
        path = (prefix + ";" if prefix else "") + name
        if n["excl_ns"]["sum"] > 0:
            out[path] = out.get(path, 0) + n["excl_ns"]["sum"]
        stack.extend((path, k) for k in n["children"])
    return {k: int(v) for k, v in out.items() if int(v) > 0}


def check_folded(q, doc):
    got = {}
    for line in folded.render(q).splitlines():
        path, _, w = line.rpartition(" ")
        got[path] = int(w)
    assert got == folded_paths(doc)


def table_rows(txt: str, title: str) -> list:
    """The lines of the text table under `title`."""
    lines = txt.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(title))
    i = next(k for k in range(start, len(lines)) if lines[k].startswith("====")) + 1
    out = []
    while i < len(lines) and lines[i].strip():
        out.append(lines[i])
        i += 1
    return out


def named_rows(txt: str, title: str) -> list:
    """(figures, name) of the rows of the text table under `title`, whose
    last column is "Function": a name too long for its row stands on the
    line above the figures (report/text.py named_row); the name's marks
    (" [irq]") dropped."""
    lines = txt.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(title))
    name_col = next(ln for ln in lines[start:] if ln.rstrip().endswith("Function")).index("Function")
    out, pending = [], None
    for line in table_rows(txt, title):
        nums = line[:name_col - 1].split()
        if not nums or not nums[0].replace(",", "").replace("+", "").isdigit():
            pending = line.strip()
            continue
        name = pending if pending is not None else line[name_col:].strip()
        pending = None
        out.append((nums, name.split(" [")[0]))
    return out


def check_text(q, doc):
    txt = text.render(q)
    jf = {f["name"]: f for f in doc["functions"]}
    if q.corrected is None:
        for nums, name in named_rows(txt, "Functions by total inclusive time"):
            # Calls, p50, p99, Total, name
            if name not in jf:
                continue
            j = jf[name]
            assert int(nums[0].replace(",", "")) == j["calls"]
            for tok, exact in zip(nums[1:], (j["incl_ns"]["p50"], j["incl_ns"]["p99"], j["incl_ns"]["sum"])):
                dec = len(tok.split(".")[1]) if "." in tok else 0
                assert close(float(tok.replace(",", "")), exact, dec), (name, tok, exact)
        return
    for nums, name in named_rows(txt, "Functions by corrected inclusive time"):
        # Calls (N+G: N clean, G gap calls), p50*, p99*, Total*, a flag, name
        if name not in jf:
            continue
        j = jf[name]
        c = j["incl_corr_ns"]
        clean, _, gap = nums[0].replace(",", "").partition("+")
        assert int(clean) + int(gap or 0) == j["calls"]
        assert int(clean) == c["calls"]  # the calls the corrected figures cover
        for tok, exact in zip(nums[1:], (c["p50"], c["p99"], c["sum"])):
            if tok == "-":  # every call a gap call: no corrected figure
                assert c["calls"] == 0, (name, c)
                continue
            dec = len(tok.split(".")[1]) if "." in tok else 0
            assert close(float(tok.replace(",", "")), exact, dec), (name, tok, exact)
    flat = " ".join(txt.split())
    for b in doc["balance"]:
        if b["external"] is None:
            assert b["accounted_pct"] is None
            assert "no independent total given" in flat
        else:
            assert f"accounted {b['external']['accounted_pct']:.1f}%" in txt


def check_all(q):
    doc = json.loads(jsonout.render(q))
    check_html_data(q, doc)
    check_svg(q, doc)
    check_speedscope(q, doc)
    check_folded(q, doc)
    check_text(q, doc)


@pytest.mark.parametrize("key", TRACES, ids=trace_id)
def test_every_output_prints_the_json_figures(key):
    p = load_any(key)
    check_all(p)
    check_all(corrected(p))


def test_corrected_figures_are_described_in_the_same_words_everywhere():
    import subprocess
    import sys

    def norm(s):
        return " ".join(s.replace("`", "").split())

    docs = [open(os.path.join(os.path.dirname(os.path.dirname(DATA)), "docs", f), encoding="utf-8").read()
            for f in ("html.md", "overhead.md")]
    helptext = subprocess.run([sys.executable, "-m", "ftflame.cli", "report", "--help"],
                              capture_output=True, text=True).stdout
    for where in docs + [helptext]:
        assert norm(HOW_CORRECTED) in norm(where)


def test_every_output_prints_the_same_intervals():
    """The 95% intervals of the corrected figures (ftflame/correct/uncertainty.py,
    computed once): the JSON's `intervals`, the HTML's data, the text's interval
    table and the balance sheet print the same half-widths (k6.1/s15-icount-calib
    calibrated from its own empty calls)."""
    from conftest import fixture
    from ftflame.correct.calibration import calibrate_from_traces, for_profile
    from ftflame.correct.corrections import STAT_NAMES

    d = "k6.1/s15-icount-calib/"
    doc = calibrate_from_traces(*(profile_of(fixture(d + n)) for n in (
        "trace-null.dat", "trace-dispatch-root.dat", "trace-dispatch-full.dat")))
    cal = Calibration(doc["o_in_ns"], doc["o_out_ns"], "file:test", doc["method"], doc)
    p = profile_of(fixture(d + "trace-full.dat"))
    q = attach(correct(p, for_profile(cal, p)))
    j = json.loads(jsonout.render(q))
    iv = j["intervals"]
    assert len(iv["functions"]) == len(j["functions"]) and len(iv["root_calls"]) == len(j["root_calls"])
    assert [v is None for v in iv["root_calls"]] == [r["dur_corr_ns"] is None for r in j["root_calls"]]
    names = [f["name"] for f in j["functions"]]
    F = html.report_data(q)["functions"]
    fnames = [html.report_data(q)["funcs"][f] for f in F["func"]]
    for i, name in enumerate(names):
        k = fnames.index(name)
        want = iv["functions"][i]
        assert [F["corr"]["pm"][s][k] for s in STAT_NAMES] == [want["incl_corr_ns"][s] for s in STAT_NAMES]
        assert F["corr"]["pm"]["self"][k] == want["excl_corr_ns"]["sum"]
    txt = text.render(q)
    rows = table_rows(txt, "Corrected figures with their 95% intervals")
    checked = 0
    for line in rows:
        nums, name = line[:54].split(), line[56:].strip()
        if name.endswith("...") or name not in names:
            continue
        checked += 1
        want = iv["functions"][names.index(name)]["incl_corr_ns"]
        for tok, s in zip(nums[1::2], ("mean", "p50", "p90")):
            dec = len(tok.split(".")[1]) if "." in tok else 0
            assert close(float(tok.replace(",", "")), want[s], dec), (name, tok, want[s])
    assert checked >= 20
    b, = j["balance"]  # one root function: its mean's interval is the balance sheet's
    assert b["corrected_mean_pm_ns"] == iv["functions"][names.index(b["function"])]["incl_corr_ns"]["mean"]
    assert f"+- {b['corrected_mean_pm_ns'] / 1e3:.3f} (95%)" in txt


def test_every_output_prints_the_same_operation_intervals():
    """The operations table's corrected figures' intervals: JSON
    `intervals.operations`, the HTML's operations data and the text's
    "+-95% *" rows agree (k6.1/s17-mixed-ops with the s13 calibration); the
    JSON is the independent reference's (tests/helpers/jsonref.py) with them."""
    from conftest import fixture
    from ftflame.correct.calibration import calibrate_from_traces, for_profile
    from helpers import jsonref

    d = "k6.1/s13-calib-null/"
    doc = calibrate_from_traces(*(profile_of(fixture(d + n)) for n in (
        "trace-null.dat", "trace-dispatch-root.dat", "trace-dispatch-full.dat")))
    cal = Calibration(doc["o_in_ns"], doc["o_out_ns"], "file:test", doc["method"], doc)
    p = profile_of(fixture("k6.1/s17-mixed-ops/trace.dat"))
    q = attach(correct(p, for_profile(cal, p)))
    rendered = jsonout.render(q)
    assert rendered == jsonref.render(q, jsonref.head_of(rendered))
    j = json.loads(rendered)
    ops = j["intervals"]["operations"]
    assert len(ops) == len(j["operations"]) > 3
    assert [o["dur_corr_pm_ns"] for o in html.report_data(q)["operations"]] == ops
    rows = [ln for ln in text.render(q).splitlines() if ln.startswith("  +-95% *")]
    assert len(rows) == len(ops)
    for line, want in zip(rows, ops):
        for tok, k in zip(line[len("  +-95% *"):].split(), ("p50", "p90", "p99", "max", "mean")):
            dec = len(tok.split(".")[1]) if "." in tok else 0
            assert close(float(tok.replace(",", "")), want[k], dec), (tok, want[k])
