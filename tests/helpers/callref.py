"""The independent reference for what every output prints: per-call raw and
corrected durations, computed in the tests from the events, and the
statistics of them that the reports must show.

Nothing here comes from ftflame: the events are read by the pure-Python
twin of the parser (tests/helpers/textparse_py.py: `trace-cmd report -R` text for a
trace.dat, the text itself for a text trace, or a hand-made .events file),
calls are built by its builder, and the overhead model of docs/design.md /
docs/overhead.md is applied per call here:

    task call:  corr = dur - irq subtrees - O_in - D*(O_in + O_out) - R*O_out
    irq call:   corr = dur - O_in - D*(O_in + O_out)

(D: completed calls inside, same context; R: interrupt subtrees inside).
Path sums are sums of the calls' values; exclusive corrected time is a
path's corrected sum minus its task-context children's. The traces used
have no gap calls, no off-CPU time and no clamps (the tests assert that
from the outputs): there the model is these formulas and nothing else.

Statistics are what the documented contracts say: sums, min, max, mean
rounded to 0.1; percentiles by nearest rank, as the value of the histogram
bucket holding that call (values below 16 ns exact; above, each power of
two split into 16 equal buckets, the bucket's midpoint), clamped to
[min, max]; corrected percentiles of root calls exact, of the others the
raw ones scaled by corrected/raw mean.
"""
from __future__ import annotations

import collections
import gzip
import math
import subprocess

from . import textparse_py as tp

HIST_SUB = 16
QS = (50, 90, 99)


# ---- events --------------------------------------------------------------

def trace_text(path: str) -> str:
    if path.endswith(".dat"):
        proc = subprocess.run(["trace-cmd", "report", "-R", path], capture_output=True, timeout=600)
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        return proc.stdout.decode("utf-8", "replace")
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def trace_events(path: str) -> list:
    events, unparsed = tp.parse_events(trace_text(path))
    assert not unparsed, f"{path}: lines the Python parser does not read: {unparsed[:5]}"
    return events


def handmade_events(events_py: list) -> list:
    """tests/helpers/events.py tuples (hand-made .events files) as the twin's events.
    Only calls: the cases used carry no switches or lost events."""
    out = []
    for kind, cpu, pid, flags, func, depth, _ts, calltime, rettime, *_ in events_py:
        if kind == "entry":
            out.append((tp.ENTRY, cpu, pid, func, depth, 0, 0, flags))
        elif kind == "exit":
            out.append((tp.EXIT, cpu, pid, func, depth, calltime, rettime, flags))
        else:
            raise ValueError(f"the reference takes calls only, not {kind!r} events")
    return out


def calls_of(events: list) -> list:
    calls = []
    tp.build(events, calls)
    return calls


def gap_calls_of(path: str) -> list:
    """Every completed call of a trace, each saying whether its own interval
    holds a gap (Call.gap) and whether it is under a root call that has one
    or never completed (Call.in_gap_root): the builder's gap rules of
    docs/design.md ("Anomalies") applied by the twin (a grown overrun
    counter is the kernel's depth limit, no gap)."""
    events, unparsed = tp.parse_events(trace_text(path))
    assert not unparsed, f"{path}: lines the Python parser does not read: {unparsed[:5]}"
    calls = []
    tp.build(events, calls)
    return calls


def gap_counts(calls: list) -> dict:
    """{path: [calls, own gap, own gap or in a gap root call, detached]}:
    detached, kept calls (no gap of their own) whose caller's call spans a
    gap or never completed."""
    out = collections.defaultdict(lambda: [0, 0, 0, 0])
    for c in calls:
        e = out[c.path]
        e[0] += 1
        e[1] += c.gap
        e[2] += c.gap or c.in_gap_root
        e[3] += not c.gap and c.parent_out
    return dict(out)


# ---- statistics ----------------------------------------------------------

def bucket_mid(v: int) -> int:
    """The value a histogram percentile of v is printed as."""
    if v < HIST_SUB:
        return v
    k = v.bit_length() - 1  # 2**k <= v < 2**(k+1), k >= 4
    width = 1 << (k - 4)
    lower = (1 << k) + ((v - (1 << k)) // width) * width
    return (lower + lower + width - 1) // 2


def nearest_rank(sorted_vals, q):
    return sorted_vals[max(math.ceil(len(sorted_vals) * q / 100.0) - 1, 0)]


def raw_stats(vals) -> dict:
    v = sorted(vals)
    s = sum(v)
    out = {"sum": s, "min": v[0], "max": v[-1], "mean": round(s / len(v), 1)}
    for q in QS:
        out[f"p{q}"] = min(max(bucket_mid(nearest_rank(v, q)), v[0]), v[-1])
    return out


def exact_stats(vals) -> dict:
    """Corrected statistics from per-call values (root calls)."""
    v = sorted(vals)
    s = sum(v)
    out = {"sum": s, "min": v[0], "max": v[-1], "mean": s / len(v)}
    for q in QS:
        out[f"p{q}"] = nearest_rank(v, q)
    return out


def scaled_stats(raw: dict, corr_sum: float, n: int) -> dict:
    """Corrected statistics where per-call values are not kept: the raw
    ones times corrected mean / raw mean."""
    mean = corr_sum / n
    f = mean / raw["mean"] if raw["mean"] > 0 else 0.0
    out = {"sum": corr_sum, "mean": mean}
    for k in ("min", "max") + tuple(f"p{q}" for q in QS):
        out[k] = max(raw[k] * f, 0.0)
    return out


# ---- the reference -------------------------------------------------------

class Reference:
    """Per path and per function: calls, raw and corrected statistics,
    flags; from the calls of one trace and a hook cost (None: raw only)."""

    def __init__(self, calls: list, o_in: float = None, o_out: float = None):
        self.corrected = o_in is not None
        o_sum = (o_in or 0.0) + (o_out or 0.0)
        by_path = collections.defaultdict(list)
        for c in calls:
            by_path[c.path].append(c)
        self.paths = {}
        for path, cs in by_path.items():
            incl = [c.dur for c in cs]
            excl = [c.excl for c in cs]
            e = {"calls": len(cs), "incl": raw_stats(incl), "excl": raw_stats(excl),
                 "irq": cs[0].irq, "irq_root": cs[0].irq_root, "partial": path[0] == "(partial)",
                 "root": len(path) == 1}
            assert all(c.irq == e["irq"] and c.irq_root == e["irq_root"] for c in cs), path
            if self.corrected:
                corr = [c.dur - o_in - c.desc * o_sum if c.irq else
                        c.dur - c.irq_time - o_in - c.desc * o_sum - c.irq_roots * o_out for c in cs]
                e["corr_values"] = corr
                e["corr_incl_sum"] = sum(corr)
            self.paths[path] = e
        if self.corrected:
            kids = collections.defaultdict(float)
            for path, e in self.paths.items():
                if len(path) > 1 and not e["irq_root"] and path[0] != "(partial)":
                    kids[path[:-1]] += e["corr_incl_sum"]
            for path, e in self.paths.items():
                n = e["calls"]
                e["corr_excl_sum"] = e["corr_incl_sum"] - kids[path]
                if e["root"]:
                    e["incl_corr"] = exact_stats([max(v, 0.0) for v in e["corr_values"]])
                else:
                    e["incl_corr"] = scaled_stats(e["incl"], e["corr_incl_sum"], n)
                e["excl_corr"] = scaled_stats(e["excl"], e["corr_excl_sum"], n)
        # per function: every call of it, on every path
        by_func = collections.defaultdict(list)
        for path in self.paths:
            # the twin marks where irq context starts (" [irq]": task and irq
            # context are two paths); a function is one whatever its context
            by_func[path[-1].removesuffix(" [irq]")].append(path)
        self.functions = {}
        for name, paths in by_func.items():
            cs = [c for p in paths for c in by_path[p]]
            f = {"calls": len(cs), "incl": raw_stats([c.dur for c in cs]),
                 "excl": raw_stats([c.excl for c in cs]), "paths": paths}
            if self.corrected:
                ci = sum(self.paths[p]["corr_incl_sum"] for p in paths)
                cx = sum(self.paths[p]["corr_excl_sum"] for p in paths)
                if all(self.paths[p]["root"] for p in paths):
                    f["incl_corr"] = exact_stats([max(v, 0.0) for p in paths
                                                  for v in self.paths[p]["corr_values"]])
                else:
                    f["incl_corr"] = scaled_stats(f["incl"], ci, len(cs))
                f["incl_corr"]["sum"] = ci
                f["excl_corr"] = scaled_stats(f["excl"], cx, len(cs))
            self.functions[name] = f

    def negative_root_calls(self) -> int:
        return sum(1 for e in self.paths.values() if e["root"] and self.corrected
                   for v in e["corr_values"] if v < 0)


def of_trace(path: str, o_in=None, o_out=None) -> Reference:
    return Reference(calls_of(trace_events(path)), o_in, o_out)
