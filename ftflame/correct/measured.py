"""Totals measured outside the tracer, checked against the trace.

collect.sh copies the server's RPC statistics (/proc/net/rpc/nfsd), the
client's /proc/self/mountstats (when the client is on the server machine)
and iozone's result table into meta.json's `measured` object, per recording
(collect/README.md). Beside a Profile corrected and balanced, this module
turns them into the `measured` object of the report:

- server_counts: per graph function that has a server counter (nfsd3_proc_X
  -> proc3 X, nfsd4_X -> the NFSv4 operation X, nfsd_dispatch -> every NFS
  call), the calls the server counted during the recording against the
  calls in the trace. A shortfall no larger than the lost events is what
  lost events do; any other difference is a warning.
- client: per graph function with a client operation (WRITE for
  nfsd3_proc_write on an NFSv3 mount...), the client's mean execute time and
  RTT per operation next to the server's corrected mean: the server's share
  of the latency the client saw.
- iozone: each test's throughput as time per operation (one record).

Pure functions of the Profile and the meta.json document; renderers print
the result and compute nothing.
"""
from __future__ import annotations

import os
import re

from ftflame.correct.balance import independent_total
from ftflame.model.profile import Profile
from ftflame.rundir import META_FILE

# a trace's recording in meta.json's "measured" object
RUN_OF_TRACE = {"trace.dat": "main", "baseline.dat": "baseline"}


# What of meta.json the report reads (collect/README.md), and of what kind:
# checked at load (load_meta), so that everything after reads only figures
# that are what they say. A field absent or null is nothing to read; a field
# of another kind, a negative count or time, NaN or Infinity is left out with
# a warning naming it. (field kinds: COUNT a whole number >= 0, AMOUNT a
# number >= 0, TEXT a string; ("obj", {key: kind}, required keys), ("map",
# kind) an object of any keys, ("list", kind), ("enum", the strings it may be))
META_SCHEMA = "ftflame-meta/1"
COUNT, AMOUNT, TEXT = "a whole number >= 0", "a number >= 0", "a string"


def _obj(required=(), **fields):
    return ("obj", fields, tuple(required))


def _map(kind):
    return ("map", kind)


_COUNTS = _map(COUNT)
_RUN = _obj(
    nfsd=_obj(delta=_obj(rpc=_COUNTS, proc2=_COUNTS, proc3=_COUNTS, proc4=_COUNTS, proc4ops=_COUNTS)),
    client_mounts=_map(_obj(fstype=TEXT, device=TEXT,
                            ops=_map(_obj(delta=_obj(ops=COUNT, execute_ms=AMOUNT, rtt_ms=AMOUNT))))),
    iozone=_obj(("units", "rows"), units=("enum", ("kB/s", "ops/s")), command_line=TEXT,
                rows=("list", _obj(("file_kb", "record_kb", "throughput"), file_kb=COUNT, record_kb=COUNT,
                                   throughput=_map(AMOUNT)))),
    iozone_latency=_map(_obj(("count", "mean_us", "max_us"), count=COUNT, mean_us=AMOUNT, max_us=AMOUNT)),
)
META_READ = _obj(
    graph_functions=("list", TEXT),
    lost_events_total=COUNT,
    baseline=_obj(lost_events_total=COUNT),
    tracer_options=_obj(buffer_percent=COUNT),
    measured=_obj(main=_RUN, baseline=_RUN),
)


def _checked(v, kind, at: tuple, problems: list):
    """v as kind, or None (and a problem: (field path, what is wrong)) when
    it is not; of objects, maps and lists, only what is read, each part
    checked the same way."""
    from ftflame.rundir import kind as json_kind
    from ftflame.rundir import number_problem

    if isinstance(kind, str):
        if kind == TEXT:
            ok = isinstance(v, str)
            problem = None if ok else f"{json_kind(v)}, not a string"
        else:
            problem = number_problem(v, integer=kind == COUNT)
        if problem:
            problems.append((at, problem))
            return None
        return v
    if kind[0] == "enum":
        if v not in kind[1]:
            problems.append((at, f"{json_kind(v) if not isinstance(v, str) else repr(v[:20])}, not one of "
                             + ", ".join(kind[1])))
            return None
        return v
    want = {"obj": dict, "map": dict, "list": list}[kind[0]]
    if not isinstance(v, want):
        problems.append((at, f"{json_kind(v)}, not {'a list' if want is list else 'an object'}"))
        return None
    if kind[0] == "list":
        items = ((i, x) for i, x in enumerate(v))
    elif kind[0] == "map":
        items = iter(v.items())
    else:
        items = ((k, v[k]) for k in kind[1] if k in v)
        missing = [k for k in kind[2] if v.get(k) is None]
        if missing:
            problems.append((at, "no " + ", ".join(missing)))
            return None
    out: list | dict = [] if want is list else {}
    for k, x in items:
        if x is None:  # (collect.sh's null: nothing to read)
            continue
        x = _checked(x, kind[1] if kind[0] != "obj" else kind[1][k], (*at, k), problems)
        if x is not None:
            out.append(x) if isinstance(out, list) else out.__setitem__(k, x)
    if kind[0] == "obj" and any(k not in out for k in kind[2]):
        return None  # (a part it cannot go without was left out, with its problem)
    return out


def load_meta(trace_path: str) -> tuple:
    """(meta.json beside the trace, as a dict of what the report reads, or
    None; warnings). A run directory without one is not an error: the report
    goes on. Every figure read is checked here: a bad one is left out, with
    a warning naming it."""
    from ftflame.rundir import bad_numbers, field_name, load_json

    path = os.path.join(os.path.dirname(os.path.abspath(trace_path)), META_FILE)
    try:
        doc = load_json(path)
    except FileNotFoundError:
        return None, ()
    except (OSError, ValueError) as e:
        return None, (f"{path}: unreadable ({e}): the measured totals are left out",)
    if not isinstance(doc, dict):
        return None, (f"{path}: not a JSON object: the measured totals are left out",)
    if doc.get("schema") != META_SCHEMA:
        return None, (f"{path}: not a collect.sh meta.json (schema is not {META_SCHEMA!r}): the measured "
                      "totals are left out",)
    problems: list = []
    clean = _checked(doc, META_READ, (), problems)
    read = {tuple(at) for at, _ in problems}
    # (a count left out is not a count of 0: measured() checks none of its run's)
    clean["left_out"] = [field_name(at) for at, _ in problems]
    # NaN or Infinity where nothing is read: not JSON all the same, said once
    problems += [(at, f"{text} is not a number JSON has") for at, text in bad_numbers(doc) if at not in read]
    return clean, tuple(f"{path}: {field_name(at)}: {what}: left out" for at, what in problems)


def server_counter(func: str, delta: dict) -> tuple | None:
    """(counter label, calls) of the server counter that counts func's calls,
    from a /proc/net/rpc/nfsd delta; None when no counter counts them."""
    def group(name):
        return delta.get(name) or {}

    if func == "nfsd_dispatch":  # once per call of any NFS version
        return "NFS calls (proc2+proc3+proc4)", sum(
            sum(group(g).values()) for g in ("proc2", "proc3", "proc4"))
    m = re.fullmatch(r"nfsd3_proc_(\w+)", func)
    if m:
        return f"proc3 {m.group(1)}", group("proc3").get(m.group(1), 0)
    m = re.fullmatch(r"nfsd_proc_(\w+)", func)
    if m:
        return f"proc2 {m.group(1)}", group("proc2").get(m.group(1), 0)
    m = re.fullmatch(r"nfsd4_proc_(null|compound)", func)
    if m:
        return f"proc4 {m.group(1)}", group("proc4").get(m.group(1), 0)
    m = re.fullmatch(r"nfsd4_(\w+)", func)
    if m and m.group(1).upper() in NFS4_OPS:
        return f"proc4ops {m.group(1).upper()}", group("proc4ops").get(m.group(1).upper(), 0)
    return None


# the NFSv4 operations nfsd counts (collect/measure.sh names them)
NFS4_OPS = frozenset("""ACCESS CLOSE COMMIT CREATE DELEGPURGE DELEGRETURN GETATTR GETFH LINK LOCK
LOCKT LOCKU LOOKUP LOOKUPP NVERIFY OPEN OPENATTR OPEN_CONFIRM OPEN_DOWNGRADE PUTFH PUTPUBFH
PUTROOTFH READ READDIR READLINK REMOVE RENAME RENEW RESTOREFH SAVEFH SECINFO SETATTR SETCLIENTID
SETCLIENTID_CONFIRM VERIFY WRITE RELEASE_LOCKOWNER BACKCHANNEL_CTL BIND_CONN_TO_SESSION
EXCHANGE_ID CREATE_SESSION DESTROY_SESSION FREE_STATEID GET_DIR_DELEGATION GETDEVICEINFO
GETDEVICELIST LAYOUTCOMMIT LAYOUTGET LAYOUTRETURN SECINFO_NO_NAME SEQUENCE SET_SSV TEST_STATEID
WANT_DELEGATION DESTROY_CLIENTID RECLAIM_COMPLETE ALLOCATE COPY COPY_NOTIFY DEALLOCATE IO_ADVISE
LAYOUTERROR LAYOUTSTATS OFFLOAD_CANCEL OFFLOAD_STATUS READ_PLUS SEEK WRITE_SAME CLONE GETXATTR
SETXATTR LISTXATTRS REMOVEXATTR""".split())


def client_op(func: str) -> tuple | None:
    """(NFS version, client operation name) whose calls func serves."""
    m = re.fullmatch(r"nfsd3_proc_(\w+)", func)
    if m:
        return 3, m.group(1).upper()
    m = re.fullmatch(r"nfsd4_(\w+)", func)
    if m and m.group(1).upper() in NFS4_OPS:
        return 4, m.group(1).upper()
    return None


def trace_root_calls(p: Profile) -> dict:
    """Function -> its root calls in the trace, those spanning a lost-event
    gap included (they happened: only their times are unsure)."""
    from ftflame.correct.balance import root_rows

    calls = p.col("calls")
    return {name: int(calls[rows].sum()) for name, rows in root_rows(p).items()}


def count_check(func: str, counter: str, server: int, traced: int, lost: int | None) -> dict:
    """One server count against the trace's calls, with the verdict."""
    short = server - traced
    calls = "call" if abs(short) == 1 else "calls"
    if short == 0:
        status, note = "equal", "the trace has every call the server counted"
    elif short > 0 and lost is None:
        status, note = "warning", (f"the trace has {short:,} {calls} fewer than the server counted; "
                                   "lost events are unknown (meta.json: null), so this is unexplained")
    elif short > 0 and lost is not None and short <= lost:
        status, note = "explained", f"{short:,} {calls} fewer: within the {lost:,} lost events"
    elif short > 0:
        status, note = "warning", (f"the trace has {short:,} {calls} fewer than the server counted, "
                                   f"more than lost events explain ({lost:,}): calls outside "
                                   "the tracing window or another server thread/namespace?")
    else:
        status, note = "warning", (f"the trace has {-short:,} {calls} more than the server counted: "
                                   "counters reset, or another nfsd instance (network namespace)?")
    return {"function": func, "counter": counter, "server_calls": server, "trace_calls": traced,
            "difference": traced - server, "lost_events": lost, "status": status, "note": note}


def _mount_version(mount: dict) -> int:
    return 4 if str(mount.get("fstype", "")).startswith("nfs4") else 3


def client_rows(mounts: dict | None, funcs, balance: tuple) -> list:
    """The client's mean execute time per operation next to the server's
    corrected mean of the function serving it."""
    corrected = {b["function"]: b["corrected_mean_ns"] for b in balance}
    out = []
    for func in funcs:
        want = client_op(func)
        if want is None or func not in corrected:
            continue  # (no client operation, or not in the trace)
        for mnt, m in sorted((mounts or {}).items()):
            op = (m.get("ops") or {}).get(want[1])
            if _mount_version(m) != want[0] or not op:
                continue
            d = op.get("delta") or {}
            n = d.get("ops") or 0
            if not n or "execute_ms" not in d or "rtt_ms" not in d:  # (none, or left out at load)
                continue
            exe = 1e6 * d["execute_ms"] / n
            rtt = 1e6 * d["rtt_ms"] / n
            srv = corrected[func]
            out.append({
                "function": func, "mount": mnt, "device": m.get("device"), "op": want[1],
                "client_ops": n, "client_execute_mean_ns": round(exe, 1),
                "client_rtt_mean_ns": round(rtt, 1),
                "server_corrected_mean_ns": srv,
                "difference_ns": round(exe - srv, 1),
                "server_share_pct": round(100.0 * srv / exe, 2) if exe else None,
            })
    return out


def iozone_rows(ioz: dict | None) -> list:
    """Each iozone test's throughput as the time one record took."""
    if not ioz:
        return []
    per_sec_ops = ioz.get("units") == "ops/s"
    out = []
    for row in ioz.get("rows") or ():
        fkb, rkb = row.get("file_kb"), row.get("record_kb")
        for test, v in (row.get("throughput") or {}).items():
            ops_s = v if per_sec_ops else (v / rkb if rkb else 0)
            out.append({"test": test, "file_kb": fkb, "record_kb": rkb,
                        "throughput": v, "units": ioz.get("units"),
                        "operations": fkb // rkb if fkb and rkb else None,
                        "time_per_op_ns": round(1e9 / ops_s, 1) if ops_s else None})
    return out


def measured(p: Profile, trace_path: str, meta: dict | None, load_warnings=()) -> dict | None:
    """The report's `measured` object, or None when the run directory has
    no measured totals for this trace (meta, load_warnings: load_meta's)."""
    warnings = list(load_warnings)
    run = RUN_OF_TRACE.get(os.path.basename(trace_path))
    m = ((meta or {}).get("measured") or {}).get(run) if run else None
    if not isinstance(m, dict):
        return {"source": META_FILE, "run": run, "warnings": warnings} if warnings else None
    base = meta.get("baseline") if run == "baseline" else meta
    # lost events: trace-cmd's count (meta.json, null when it could not
    # tell) or the trace's own markers, whichever is larger
    lost = (base or {}).get("lost_events_total")
    lost = lost if isinstance(lost, int) and not isinstance(lost, bool) else None
    if p.counters.get("lost_events"):
        lost = max(lost or 0, int(p.counters["lost_events"]))
    funcs = [f for f in meta.get("graph_functions") or () if isinstance(f, str)]
    traced = trace_root_calls(p)
    nfsd = m.get("nfsd") or {}
    if any(f.startswith(f"measured.{run}.nfsd") for f in meta.get("left_out", ())):
        nfsd = {}  # the server's counts, some left out at load (said there): no check on what is left
    counts = []
    for func in funcs:
        c = server_counter(func, nfsd.get("delta") or {}) if nfsd else None
        if c is None:
            continue
        if not c[1] and not traced.get(func):
            continue  # (a preset's function this workload did not call)
        check = count_check(func, c[0], c[1], traced.get(func, 0), lost)
        counts.append(check)
        if check["status"] == "warning":
            warnings.append(f"{func}: {check['note']}")
    rpc = (nfsd.get("delta") or {}).get("rpc", {}).get("calls", 0) if nfsd else None
    return {
        "source": META_FILE, "run": run,
        "server_rpc_calls": rpc,
        "server_counts": counts,
        "client": client_rows(m.get("client_mounts"), funcs, p.balance),
        "iozone": iozone_rows(m.get("iozone")),
        "iozone_command_line": (m.get("iozone") or {}).get("command_line"),
        "iozone_latency": m.get("iozone_latency"),
        "warnings": warnings,
    }


def with_client_totals(balance: tuple, m: dict | None) -> tuple:
    """The balance sheet with the client's mean execute time per operation
    as one more independent total of the function that served it (the
    server's corrected time is part of it: the difference is what the client
    and the network added)."""
    rows = (m or {}).get("client") or ()
    if not rows:
        return balance
    out = []
    for b in balance:
        extra = [independent_total(f"client execute time ({r['op']} on {r['mount']}, {r['client_ops']:,} ops)",
                                   r["client_execute_mean_ns"], b["corrected_mean_ns"])
                 for r in rows if r["function"] == b["function"]]
        out.append(dict(b, independent=list(b.get("independent", [])) + extra) if extra else b)
    return tuple(out)


def attach(p: Profile, trace_path: str, loaded_meta: tuple) -> Profile:
    """The measured totals of meta.json (loaded_meta: load_meta(trace_path))."""
    meta, warnings = loaded_meta
    m = measured(p, trace_path, meta, warnings)
    return p.replace(measured=m, balance=with_client_totals(p.balance, m))
