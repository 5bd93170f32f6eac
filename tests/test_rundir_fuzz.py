"""Hostile run folders (issue 37): meta.json, cpu-main.txt and
calibration.json mutated, one change at a time, from a seeded generator
(types, NaN, Infinity, numbers out of range, negatives, deep nesting,
truncation, cut lines). Each figure read from them is checked where it is
loaded (ftflame/rundir.py, ftflame/correct/{calibration,measured,cpu}.py),
so every case ends one of two ways:

- exit 0, the JSON report strict (no NaN or Infinity: it must parse with a
  parser that refuses them), the figures read from the files finite and not
  negative, and either the same figures as the unmutated folder or a new
  warning saying what was left out;
- exit 2 with exactly one line on stderr naming the file.

Never exit 1 (an internal error), never a traceback. The CLI runs in this
process on the smallest curated run of nfsd3_proc_write, k6.1/s15-icount-calib's
root-only recording (128 calls hooked alone, 3,138 events; so the calibration
applied is its root-only O_in, the issue's NaN and -1e9 case): each case costs
one small read and a small report, so several hundred take seconds.
"""
from __future__ import annotations

import copy
import json
import random
import shutil

import pytest

from conftest import fixture
from helpers.cpurun import cpu_text
from helpers.inproc import CALIBRATION, report, strict_loads

SEED = 37  # the number: the same cases on every run
CASES = 110  # per file, besides the truncations and whole-document ones
DEEP = "[" * 100_000 + "]" * 100_000

META = {
    "schema": "ftflame-meta/1", "kernel": "6.1.0-56-amd64", "trace": "trace.dat",
    "graph_functions": ["nfsd3_proc_write"], "lost_events_total": 0,
    "baseline": {"lost_events_total": 0}, "tracer_options": {"buffer_percent": 50},
    "measured": {
        "main": {
            "nfsd": {"delta": {"rpc": {"calls": 131}, "proc3": {"write": 128, "getattr": 3}}},
            "client_mounts": {"/mnt/nfs": {"device": "srv:/x", "fstype": "nfs", "ops": {
                "WRITE": {"delta": {"ops": 128, "execute_ms": 9.5, "rtt_ms": 6}}}}},
            "iozone": {"units": "kB/s", "command_line": "iozone -i0 -r4k -s512k",
                       "rows": [{"file_kb": 512, "record_kb": 4, "throughput": {"write": 45285}}]},
            "iozone_latency": {"write": {"count": 128, "mean_us": 400.5, "max_us": 900}},
        },
        "baseline": None,
    },
}



CPU_MAIN = cpu_text((300, 100))


class Raw:
    """A token written into the JSON text as it is (NaN, 1e400, DEEP)."""

    def __init__(self, text):
        self.text = text


HOSTILE = ["x", [1], {"a": 1}, True, False, None, -1, -1e9, 10**30, 1e300, Raw("NaN"), Raw("Infinity"),
           Raw("-Infinity"), Raw("1e400"), Raw("-1e400"), Raw(DEEP)]
CPU_TOKENS = ["nan", "inf", "-inf", "1e400", "-5", "x", "", "18446744073709551616", "0x10", "1.5", "NaN"]


def dumps(doc) -> str:
    """JSON text of doc with its Raw tokens in place."""
    raws: list = []

    def swap(v):
        if isinstance(v, Raw):
            raws.append(v.text)
            return f"@@raw{len(raws) - 1}@@"
        if isinstance(v, dict):
            return {k: swap(x) for k, x in v.items()}
        if isinstance(v, list):
            return [swap(x) for x in v]
        return v
    text = json.dumps(swap(doc))
    for i, r in enumerate(raws):
        text = text.replace(f'"@@raw{i}@@"', r)
    return text


def paths(doc, at=()):
    """Every place in doc: (path, value)."""
    yield at, doc
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        yield from paths(v, (*at, k))


def json_mutations(doc: dict, rng: random.Random) -> list:
    """(what, text): one hostile value at one place, truncations, whole documents."""
    places = [p for p, _ in paths(doc) if p]
    combos = [(p, v) for p in places for v in HOSTILE]
    out = []
    for p, v in rng.sample(combos, CASES):
        d = copy.deepcopy(doc)
        parent = d
        for k in p[:-1]:
            parent = parent[k]
        parent[p[-1]] = v
        # (null where collect.sh writes null for "nothing to read": no warning due)
        what = f"{'.'.join(map(str, p))} = {getattr(v, 'text', v)!r}"[:80] + (" (null)" if v is None else "")
        out.append((what, dumps(d)))
    text = json.dumps(doc)
    out += [(f"cut at {n}", text[:n]) for n in sorted(rng.sample(range(len(text)), 20))]
    out += [(f"the document {getattr(v, 'text', v)!r}"[:80], dumps(v)) for v in HOSTILE]
    out += [("not UTF-8", text[:20] + "\udcff" + text[20:]), ("empty", "")]
    return out


def cpu_mutations(text: str, rng: random.Random) -> list:
    """(what, text): a token replaced, a line cut or dropped, the file cut."""
    lines = text.split("\n")
    out = []
    for _ in range(CASES):
        i = rng.randrange(len(lines) - 1)
        line = lines[i]
        sep = "," if "," in line else " "
        toks = line.split(sep)
        how = rng.random()
        if how < 0.75 and toks:
            j = rng.randrange(len(toks))
            toks[j] = rng.choice(CPU_TOKENS)
            new, what = sep.join(toks), f"line {i} token {j} -> {toks[j]!r}"
        elif how < 0.9:
            new = line[:rng.randrange(len(line) + 1)]
            what = f"line {i} cut to {new!r}"
        else:
            new, what = None, f"line {i} dropped"
        mutated = lines[:i] + ([] if new is None else [new]) + lines[i + 1:]
        out.append((what[:80], "\n".join(mutated)))
    out += [(f"cut at {n}", text[:n]) for n in sorted(rng.sample(range(len(text)), 15))]
    out += [("clk_tck 0", text.replace("clk_tck 100", "clk_tck 0")),
            ("counters back", text.replace("cpu  1100 10 700", "cpu  900 10 700")),
            ("rpc back", text.replace("rpc 152", "rpc 7"))]
    return out


# Figures read from the three files, or made of them: finite and >= 0
NOT_NEGATIVE = {"o_in_ns", "o_out_ns", "server_calls", "trace_calls", "server_rpc_calls", "client_ops",
                "client_execute_mean_ns", "client_rtt_mean_ns", "server_share_pct", "throughput",
                "time_per_op_ns", "file_kb", "record_kb", "operations", "count", "mean_us", "max_us",
                "nfsd_on_cpu_ns", "schedstat_on_cpu_ns", "threads", "root_calls", "machine_cpus",
                "baseline_on_cpu_ns", "baseline_rpc_calls", "baseline_on_cpu_per_rpc_ns",
                "main_on_cpu_per_rpc_ns", "lost_events"}


def figures(doc: dict) -> dict:
    """What the report says of the three files, warnings apart."""
    cal = doc["calibration"]
    out = {k: copy.deepcopy(doc.get(k)) for k in ("measured", "cpu")}
    for part in out.values():
        if isinstance(part, dict):
            part.pop("warnings", None)
    out["calibration"] = {k: cal[k] for k in ("source", "o_in_ns", "o_out_ns", "spread")}
    return out


def warnings(doc: dict) -> set:
    return {*doc["trace"]["notes"], *((doc.get("measured") or {}).get("warnings") or ()),
            *((doc.get("cpu") or {}).get("warnings") or ())}


def check_figures(doc: dict, where: str) -> None:
    for part in (doc.get("measured"), doc.get("cpu"), doc["calibration"]):
        for at, v in paths(part or {}):
            key = next((k for k in reversed(at) if isinstance(k, str)), None)
            if key in NOT_NEGATIVE and isinstance(v, (int, float)) and not isinstance(v, bool):
                assert v >= 0, f"{where}: {'.'.join(map(str, at))} = {v}"
    for m in doc["cpu"]["machine"] if doc.get("cpu") else ():
        assert m["ns"] >= 0 and (m["pct"] is None or 0 <= m["pct"] <= 100), (where, m)
    cal = doc["calibration"]
    for k, s in cal["spread"].items():  # an interval printed is the value's
        if "ci95_ns" in s:
            ci = s["ci95_ns"]
            assert isinstance(ci, list) and len(ci) == 2 and all(type(x) in (int, float) for x in ci), (where, s)
            lo, hi = ci
            assert lo - 0.1 <= cal[f"{k}_ns"] <= hi + 0.1, (where, k, s)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz") / "run"
    d.mkdir()
    shutil.copy(fixture("k6.1/s15-icount-calib/trace-root.dat"), d / "trace.dat")
    return d


def write_clean(d):
    (d / "meta.json").write_text(json.dumps(META))
    (d / "calibration.json").write_text(json.dumps(CALIBRATION))
    (d / "cpu-main.txt").write_text(CPU_MAIN)
    (d / "cpu-baseline.txt").write_text(cpu_text((200, 50)))


def test_the_unmutated_folder_reads_every_file(folder):
    write_clean(folder)
    rc, err, text = report(folder)
    assert rc == 0, err
    doc = strict_loads(text)
    assert doc["calibration"]["source"].endswith("calibration.json")
    assert doc["calibration"]["o_in_ns"] == 900  # (root-only: the NULL procedure's O_in hooked alone)
    assert doc["measured"]["client"][0]["client_ops"] == 128 and doc["measured"]["warnings"] == []
    assert doc["cpu"]["source"] == "perf task-clock" and doc["cpu"]["machine"]
    assert doc["cpu"]["per_rpc"]["baseline_rpc_calls"] == 131
    check_figures(doc, "clean")


def check_case(where: str, name: str, rc: int, err: str, text: str | None, clean: dict) -> int:
    assert rc in (0, 2), f"{where}: exit {rc}: {err}"
    assert "Traceback" not in err and "internal error" not in err, f"{where}: {err}"
    if rc == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and name in lines[0], f"{where}: {err}"
        assert text is None, f"{where}: a report written on exit 2"
        return rc
    try:
        doc = strict_loads(text)
    except ValueError as e:  # (NaN or Infinity)
        raise AssertionError(f"{where}: {e}") from None
    check_figures(doc, where)
    if figures(doc) != figures(clean) and not where.endswith("(null)"):
        assert warnings(doc) - warnings(clean), f"{where}: figures changed without a warning"
    return rc


@pytest.mark.parametrize("name", ["meta.json", "calibration.json", "cpu-main.txt"])
def test_every_mutation_is_a_warning_or_one_line(folder, name):
    write_clean(folder)
    rc, err, text = report(folder)
    clean = strict_loads(text)
    rng = random.Random(f"{SEED}-{name}")
    if name == "cpu-main.txt":
        cases = cpu_mutations(CPU_MAIN, rng)
    else:
        cases = json_mutations(META if name == "meta.json" else CALIBRATION, rng)
    assert len(cases) >= 100
    outcomes = {0: 0, 2: 0}
    failed = []
    for what, mutated in cases:
        write_clean(folder)
        (folder / name).write_bytes(mutated.encode("utf-8", "surrogateescape"))
        rc, err, text = report(folder)
        try:
            outcomes[check_case(f"{name}: {what}", name, rc, err, text, clean)] += 1
        except AssertionError as e:
            failed.append(str(e).split("\n")[0])
    assert not failed, f"{len(failed)} of {len(cases)} cases:\n" + "\n".join(failed[:40])
    # each file's policy: a calibration is refused, the rest are left out with a warning
    if name == "calibration.json":
        assert outcomes[2] > 100, outcomes
    else:
        assert outcomes[2] == 0, outcomes
