"""The server's CPU time, measured outside the tracer, against the trace.

collect.sh (collect/cpusnap.sh) writes, per recording, cpu-main.txt and
cpu-baseline.txt: /proc/stat, /proc/net/rpc/nfsd and every nfsd thread's
/proc/TID/schedstat just before and just after the workload, and, where perf
runs, `perf stat -e task-clock --per-thread -t TIDS -x,` over it
(collect/README.md "CPU time measured outside the tracer"). Beside a Profile
corrected and balanced, this module makes the report's `cpu` object:

- the nfsd threads' on-CPU time during the main run (task-clock, else the
  schedstat deltas), split into what the trace explains: the root calls'
  corrected on-CPU time, the tracer's overhead and the interrupts removed
  inside them, the rest inside them, and what the threads did outside the
  root calls; the parts add up to the whole;
- the machine's time by kind (/proc/stat: user, system, irq, softirq,
  idle...), where softirq and irq work shows whichever task it ran on;
- from the baseline run (only the roots hooked): on-CPU time per RPC the
  server counted, next to the corrected on-CPU time per root call of the
  main trace: the difference, in % of the former, is what the correction
  does not explain (docs/overhead.md "CPU time per RPC").

Pure functions of the Profile and the files; renderers print the result.
"""
from __future__ import annotations

import os

import numpy as np

from ftflame.model.profile import Profile, note_warning
from ftflame.rundir import CPU_FILES

# /proc/stat's cpu line, in this order (proc(5)); guest time is already in user
STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
# the sections of a cpu-*.txt, with "perf STATE" (collect/cpusnap.sh)
SECTIONS = ("before stat", "before nfsd", "before schedstat", "after stat", "after nfsd", "after schedstat", "end")
PERF_UNITS_NS = {"msec": 1e6, "usec": 1e3, "nsec": 1.0, "sec": 1e9}


class CpuFileError(ValueError):
    pass


def _sections(text: str) -> tuple:
    head: dict = {}
    secs: dict = {}
    cur = None
    for line in text.splitlines():
        if line.startswith("=== "):
            cur = line[4:]
            secs[cur] = []
        elif cur is None:
            k, _, v = line.partition(" ")
            head[k] = v
        else:
            secs[cur].append(line)
    return head, secs


# Bounds of a cpu-*.txt's figures: USER_HZ is 100 on every Linux (sysconf
# may say up to 1000s); counters are unsigned 64-bit.
MAX_CLK_TCK = 1_000_000
MAX_COUNTER = 2**64 - 1
MAX_PERF_NS = 1e18  # 30 years of one thread's task-clock: more is a damaged line


def _count(text: str, what: str) -> int:
    """A whole number >= 0 of the file, or CpuFileError naming it."""
    try:
        v = int(text)
    except ValueError:
        raise CpuFileError(f"{what}: {text[:40]!r} is not a whole number") from None
    if not 0 <= v <= MAX_COUNTER:
        raise CpuFileError(f"{what}: {v} is out of range (0 to 2^64-1)")
    return v


def _stat(lines, section: str) -> tuple:
    """(the cpu line's ticks by kind and its number of fields, or None; a
    problem or None). A cut line leaves the machine's figures out, not the
    file."""
    for line in lines:
        f = line.split()
        if f and f[0] == "cpu":
            if len(f) < 1 + len(STAT_FIELDS):
                return None, f"{section}: the cpu line has {len(f) - 1} of its {len(STAT_FIELDS)} fields (cut short?)"
            try:
                ticks = [_count(v, section) for v in f[1:]]
            except CpuFileError as e:
                return None, str(e)
            return (dict(zip(STAT_FIELDS, ticks)), len(ticks)), None
    return None, None


def _rpc_calls(lines, section: str) -> tuple:
    """(the server's RPC count or None, a problem or None): its rpc line is
    `rpc CALLS BADCALLS BADFMT BADAUTH BADCLNT`."""
    for line in lines:
        f = line.split()
        if f and f[0] == "rpc":
            if len(f) < 6:
                return None, f"{section}: the rpc line has {len(f) - 1} of its 5 fields (cut short?)"
            try:
                return _count(f[1], f"{section}: rpc calls"), None
            except CpuFileError as e:
                return None, str(e)
    return None, None


def _schedstat(lines, section: str) -> dict:
    """Thread -> its on-CPU ns: `TID ON_CPU_NS WAIT_NS SLICES` per line
    (Documentation/scheduler/sched-stats.rst; cpusnap.sh writes all four)."""
    out = {}
    for line in lines:
        f = line.split()
        if not f:
            continue
        if len(f) != 4:
            raise CpuFileError(f"{section}: {line[:60]!r} is not TID and the thread's 3 schedstat counters")
        out[f[0]] = [_count(v, f"{section}: thread {f[0][:20]}") for v in f[1:]][0]
    return out


def _perf(lines) -> tuple:
    """(threads counted, on-CPU ns) of `perf stat -x, --per-thread` lines:
    THREAD-TID,VALUE,UNIT,task-clock,RUN_NS,PCT,METRIC,METRIC_UNIT."""
    n, ns = 0, 0.0
    for line in lines:
        if not line or line.startswith("#"):
            continue
        f = line.split(",")
        if "task-clock" not in f:  # (perf counted that event only: a cut line)
            raise CpuFileError(f"perf line without a task-clock count: {line[:80]!r}")
        i = f.index("task-clock")
        if i < 2:
            raise CpuFileError(f"perf line without a value: {line[:80]!r}")
        value, unit = f[i - 2], f[i - 1]
        n += 1
        if value == "<not counted>":  # the thread did not run while counted
            continue
        if unit not in PERF_UNITS_NS:
            raise CpuFileError(f"perf line with {value[:40]!r} {unit[:20]!r}: not a task-clock count")
        try:
            v = float(value) * PERF_UNITS_NS[unit]
        except ValueError:
            raise CpuFileError(f"perf task-clock {value[:40]!r}: not a number") from None
        if not 0 <= v <= MAX_PERF_NS:  # (NaN fails this too)
            raise CpuFileError(f"perf task-clock {value[:40]!r} {unit}: not a time (finite, >= 0)")
        ns += v
    return n, ns


def _machine(secs: dict, cpus: int, clk: int, warnings: list) -> dict | None:
    """The machine's ticks by kind between the two copies of /proc/stat; None
    (and a warning) when they cannot be read or went backwards."""
    (s0, p0), (s1, p1) = (_stat(secs.get(f"{w} stat", ()), f"{w} stat") for w in ("before", "after"))
    warnings += [f"{w}: the machine's time by kind is left out" for w in (p0, p1) if w]
    if (s0 is None) != (s1 is None) and not (p0 or p1):
        warnings.append("/proc/stat's cpu line is in one copy only: the machine's time by kind is left out")
    if not (s0 and s1):
        return None
    if s0[1] != s1[1]:
        warnings.append(f"/proc/stat's cpu line has {s0[1]} fields before and {s1[1]} after: the machine's "
                        "time by kind is left out")
        return None
    ticks = {k: s1[0][k] - s0[0][k] for k in STAT_FIELDS}
    if min(ticks.values()) < 0:
        warnings.append("/proc/stat's counters went backwards between before and after: the "
                        "machine's time by kind is left out")
        return None
    return {"cpus": cpus, "clk_tck": clk, **{f"{k}_ticks": v for k, v in ticks.items()}}


def _rpcs(secs: dict, warnings: list) -> int | None:
    """The RPCs the server counted between the two copies of its statistics;
    None (and a warning where they were there) when they cannot be read."""
    (r0, q0), (r1, q1) = (_rpc_calls(secs.get(f"{w} nfsd", ()), f"{w} nfsd") for w in ("before", "after"))
    warnings += [f"{w}: the RPC count is left out" for w in (q0, q1) if w]
    if (r0 is None) != (r1 is None) and not (q0 or q1):
        warnings.append("the server's rpc line is in one copy of /proc/net/rpc/nfsd only: the RPC count is left out")
    if r0 is None or r1 is None:
        return None
    if r1 < r0:
        warnings.append(f"the server's RPC count went backwards ({r0:,} before, {r1:,} after: nfsd "
                        "restarted?): the RPC count is left out")
        return None
    return r1 - r0


def parse_cpu_file(path) -> dict:
    """The figures of one cpu-*.txt, each checked here; CpuFileError when it
    is not one or a figure the accounting rests on is bad. A bad figure of
    the machine or RPC counts leaves that figure out, with a warning
    (`warnings`)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if not text.startswith("ftflame-cpu/1\n"):
        raise CpuFileError("not an ftflame-cpu/1 file")
    head, secs = _sections(text)
    if "end" not in secs:
        raise CpuFileError("cut short (no '=== end' line)")
    unknown = [k for k in secs if k not in SECTIONS and not k.startswith("perf ")]
    if unknown:
        raise CpuFileError(f"unknown section '=== {unknown[0][:40]}'")
    if not any(k.startswith("perf ") for k in secs):
        raise CpuFileError("no '=== perf' line (cpusnap.sh writes one, perf or not)")
    missing = [k for k in ("clk_tck", "cpus") if k not in head]
    if missing:
        raise CpuFileError(f"no {missing[0]} line")
    warnings = []
    before = _schedstat(secs.get("before schedstat", ()), "before schedstat")
    after = _schedstat(secs.get("after schedstat", ()), "after schedstat")
    back = sorted(t for t, v in after.items() if v < before.get(t, 0))
    if back:  # a thread's on-CPU time only grows: not the same thread, or not a schedstat
        raise CpuFileError(f"schedstat: thread {back[0][:20]}'s on-CPU time went backwards")
    sched_ns = sum(v - before.get(t, 0) for t, v in after.items())
    perf_state = next((k[5:] for k in secs if k.startswith("perf ")), "absent")
    if perf_state != "ok" and any(x.strip() for x in secs["perf " + perf_state]):
        raise CpuFileError(f"perf's lines under '=== perf {perf_state[:40]}' (only 'perf ok' has them)")
    perf_threads, perf_ns = _perf(secs["perf ok"]) if perf_state == "ok" else (0, 0.0)
    clk = _count(head["clk_tck"], "clk_tck")
    if not 1 <= clk <= MAX_CLK_TCK:
        raise CpuFileError(f"clk_tck {clk}: not ticks per second (1 to {MAX_CLK_TCK:,})")
    cpus = _count(head["cpus"], "cpus")
    named = head.get("threads", "").split()
    if perf_state == "ok" and perf_threads != len(named):
        warnings.append(f"perf counted {perf_threads} threads, the file names {len(named)} nfsd threads: "
                        "some perf lines missing?")
    machine = _machine(secs, cpus, clk, warnings)
    rpcs = _rpcs(secs, warnings)
    use_perf = perf_state == "ok" and perf_threads > 0
    return {
        "source": "perf task-clock" if use_perf else "/proc/<tid>/schedstat",
        "perf": perf_state,
        "threads": perf_threads if use_perf else len(after),
        "threads_started": sorted(set(after) - set(before)),
        "threads_ended": sorted(set(before) - set(after)),
        "nfsd_on_cpu_ns": int(round(perf_ns)) if use_perf else sched_ns,
        "schedstat_on_cpu_ns": sched_ns,
        "server_rpc_calls": rpcs,
        "machine": machine,
        "warnings": warnings,
    }


def root_totals(p: Profile) -> dict:
    """The trace's root calls summed, as the balance sheet splits each."""
    from ftflame.correct.balance import _clean, root_rows

    rows = root_rows(p)
    flat = np.asarray(sorted(r for rs in rows.values() for r in rs), dtype=np.int64)
    c = p.corrected_or_raw

    def total(x):
        return 0.0 if x is None or not len(flat) else float(np.asarray(x)[flat].sum())

    return {
        "calls": int(total(c.calls)),
        "raw_ns": float(_clean(p, "incl", flat).sum()) if len(flat) else 0.0,
        "corrected_ns": total(c.incl),
        "overhead_ns": total(getattr(c, "overhead", None)),
        "irq_ns": total(getattr(c, "irq_removed", None)),
        "offcpu_ns": total(getattr(c, "offcpu_removed", None)),
    }


def _pct(x: float, whole: float) -> float | None:
    return round(100.0 * x / whole, 2) if whole else None


def machine_rows(m: dict | None) -> list:
    if not m:
        return []
    total = sum(m[f"{k}_ticks"] for k in STAT_FIELDS)
    return [{"kind": k, "ns": round(m[f"{k}_ticks"] * 1e9 / m["clk_tck"]), "pct": _pct(m[f"{k}_ticks"], total)}
            for k in STAT_FIELDS]


def accounting(p: Profile, main: dict, base: dict | None, files: dict) -> dict:
    """The report's `cpu` object from the parsed cpu files."""
    t = root_totals(p)
    warnings = []
    total = float(main["nfsd_on_cpu_ns"])
    corrected = p.corrected is not None
    off = t["offcpu_ns"] if p.offcpu_known else 0.0
    if not p.offcpu_known:
        warnings.append("the trace has no sched_switch events: time the root calls spent switched out "
                        "counts as inside them, and the outside part is too small")
    inside = t["raw_ns"] - off
    parts = [
        ("roots_corrected", "inside the root calls, corrected" if corrected else
         "inside the root calls (raw: no calibration)", t["corrected_ns"]),
        ("roots_overhead", "tracer overhead inside the root calls", t["overhead_ns"]),
        ("roots_irq", "interrupts inside the root calls", t["irq_ns"]),
        ("roots_rest", "rest inside the root calls (switch work, clamps)",
         inside - t["corrected_ns"] - t["overhead_ns"] - t["irq_ns"]),
        ("outside_roots", "outside the root calls (receive, decode, reply...)", total - inside),
    ]
    if total and inside > total:
        warnings.append(f"the root calls' on-CPU time in the trace ({inside / 1e6:,.3f} ms) is more than "
                        f"the nfsd threads had ({total / 1e6:,.3f} ms): calls outside the counted window, "
                        "or another server instance?")
    if main["threads_started"] or main["threads_ended"]:
        warnings.append(f"nfsd threads came or went during the run (started {len(main['threads_started'])}, "
                        f"ended {len(main['threads_ended'])}): those that ended are not counted")
    for run, parsed in (("main", main), ("baseline", base)):
        warnings += [f"{files[run]}: {w}" for w in (parsed or {}).get("warnings", ())]
    rpc = main["server_rpc_calls"]
    out = {
        "file": files["main"], "source": main["source"], "perf": main["perf"], "threads": main["threads"],
        "corrected": corrected,
        "nfsd_on_cpu_ns": round(total),
        "schedstat_on_cpu_ns": main["schedstat_on_cpu_ns"],
        "server_rpc_calls": rpc,
        "root_calls": t["calls"],
        "parts": [{"key": k, "label": lab, "ns": round(v, 1), "pct": _pct(v, total)} for k, lab, v in parts],
        "machine": machine_rows(main["machine"]),
        "machine_cpus": (main["machine"] or {}).get("cpus"),
        "per_rpc": None,
        "warnings": warnings,
    }
    if base is not None:
        brpc = base["server_rpc_calls"]
        per_rpc = base["nfsd_on_cpu_ns"] / brpc if brpc else None
        per_root = t["corrected_ns"] / t["calls"] if t["calls"] else None
        main_per_rpc = total / rpc if rpc else None
        gap = per_rpc - per_root if per_rpc is not None and per_root is not None else None
        out["per_rpc"] = {
            "file": files["baseline"], "source": base["source"],
            "baseline_on_cpu_ns": base["nfsd_on_cpu_ns"], "baseline_rpc_calls": brpc,
            "baseline_on_cpu_per_rpc_ns": None if per_rpc is None else round(per_rpc, 1),
            "main_on_cpu_per_rpc_ns": None if main_per_rpc is None else round(main_per_rpc, 1),
            "corrected_per_root_call_ns": None if per_root is None else round(per_root, 1),
            "root_calls_per_rpc": round(t["calls"] / rpc, 3) if rpc else None,
            "unexplained_ns": None if gap is None else round(gap, 1),
            "unexplained_pct": None if gap is None or per_rpc is None else _pct(gap, per_rpc),
        }
        ratio = out["per_rpc"]["root_calls_per_rpc"]
        if ratio is not None and not 0.9 <= ratio <= 1.1:
            warnings.append(f"{ratio:.3f} root calls per server RPC: the RPCs are not one root call each, so "
                            "the per-RPC time and the time per root call do not measure the same path")
        if not brpc:
            warnings.append("the server counted no RPC during the baseline run: no on-CPU time per RPC")
    return out


def attach(p: Profile, trace_path: str) -> Profile:
    """The CPU accounting of the run directory the trace is in: only for a
    run's trace.dat with its cpu-main.txt (nothing otherwise)."""
    if trace_path in (None, "-") or os.path.basename(trace_path) != "trace.dat":
        return p
    d = os.path.dirname(os.path.abspath(trace_path))
    parsed = {}
    for run, name in CPU_FILES.items():
        path = os.path.join(d, name)
        if not os.path.isfile(path):
            continue
        try:
            parsed[run] = parse_cpu_file(path)
        except (OSError, CpuFileError) as e:
            return p.replace(warnings=tuple(p.warnings) + (
                note_warning(f"{path}: unreadable ({e}): the CPU accounting is left out"),))
    if "main" not in parsed:
        return p
    return p.replace(cpu=accounting(p, parsed["main"], parsed.get("baseline"), CPU_FILES))
