"""trace.dat: recognised by its magic, read by the C core in place, with
the builtin reader (parse/core/dat_*.c, the default) or libtracecmd
(--reader). ``read_core`` is the one place that chooses how a trace.dat is
read.

Light (no numpy) up to ``to_profile``: ``ftflame.parse.read_meanwhile``
starts the core's read before numpy is imported."""
from __future__ import annotations

import contextlib
import os

from ftflame.model.errors import InputError

TRACE_DAT_MAGIC = b"\x17\x08\x44tracing"

READERS = ("builtin", "libtracecmd")
# The reader a trace.dat is read with unless the caller names one: the CLI's
# --reader sets it (reader_used) for everything the command reads (report,
# baseline, calibrate). builtin: parity with libtracecmd on every fixture
# (tests/test_reader_parity.py).
_default_reader = "builtin"


@contextlib.contextmanager
def reader_used(reader: str):
    """The default reader is `reader` inside the block (the CLI's --reader)."""
    if reader not in READERS:
        raise InputError(f"--reader {reader}", "unknown reader", f"one of {', '.join(READERS)}")
    global _default_reader
    before, _default_reader = _default_reader, reader
    try:
        yield
    finally:
        _default_reader = before


def default_reader() -> str:
    return _default_reader


def is_plain_dat(path: str) -> bool:
    """An uncompressed trace.dat, read in place."""
    try:
        with open(path, "rb") as f:
            return f.read(len(TRACE_DAT_MAGIC)) == TRACE_DAT_MAGIC
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror}") from None


def read_core(path: str, name: str, progress, reader: str | None = None, slowest: int = 20,
              before_fork=None, call_stream=None, excl_hist: bool = True) -> dict:
    """The C core's read of a trace.dat file with `reader` (None: the
    default, see reader_used), keeping the `slowest` root calls' trees;
    its errors name `name`. before_fork(): called before the libtracecmd
    reader forks (read_libtracecmd), to end the caller's other threads.
    call_stream: every call written out as it is built (three file
    descriptors, report/perfetto.py's CallStream), None. excl_hist=False:
    no exclusive-time histograms (Profile.hist_excl None; see tables)."""
    from . import _core  # the extension alone: no numpy

    reader = reader or _default_reader
    try:
        if reader == "builtin":
            return _core.read_dat_builtin(os.fsencode(path), progress=progress, slowest=slowest,
                                          spool=call_stream, excl_hist=excl_hist)
        return read_libtracecmd(path, name, progress, slowest, before_fork, call_stream, excl_hist)
    except ValueError as e:
        raise InputError(name, str(e)) from None


def read_libtracecmd(path: str, name: str, progress, slowest: int, before_fork=None, call_stream=None,
                     excl_hist: bool = True) -> dict:
    """libtracecmd's read, guarded: libtracecmd crashes (SIGSEGV, SIGABRT,
    SIGFPE), hangs or reads silently wrong figures on damaged files. The
    builtin reader checks the file first: what it refuses, or finds damaged,
    is refused (one line). The rest is read in a forked child, so that a
    crash is one line and exit 2 too, never the user's segfault."""
    from . import _core

    # a no-op progress still lets Ctrl-C through (the core calls it now and then)
    check = _core.read_dat_builtin(os.fsencode(path), progress=None if progress is None else _quiet_progress, slowest=0,
                                   check_only=True)
    damage = damage_warnings(check["meta"])
    if damage:
        raise InputError(name, f"damaged trace.dat, not given to libtracecmd: {damage[0]}",
                         "read it with the builtin reader (the default), which counts the damage")
    cpus, data_cpus = check["meta"]["damage"]["cpucount_option"], check["meta"]["damage"]["data_cpus"]
    if cpus != -1 and cpus != data_cpus:  # (libtracecmd hangs on a CPU count option that is not the file's)
        says = "CPU count options disagree" if cpus == -2 else f"CPU count option says {cpus:,} CPUs"
        raise InputError(name, f"damaged trace.dat, not given to libtracecmd: its {says}, its data "
                         f"sections are for {data_cpus:,}",
                         "read it with the builtin reader (the default)")
    known = dict(check["meta"]["events_per_cpu"])
    notes = header_notes(check["meta"])
    del check
    # A thread still importing when the process forks leaves the child an
    # import lock no thread will release: the child's first import of that
    # module hangs (seen: the CLI's imports on their thread, the child's
    # `import ctypes`, 0% CPU for good).
    if before_fork is not None:
        before_fork()
    res = _in_child(lambda: _core.read_dat(os.fsencode(path), progress=progress, slowest=slowest,
                                           known_events=known, spool=call_stream, excl_hist=excl_hist), name)
    res["meta"]["header_notes"] = notes  # (the builtin check's: libtracecmd says nothing of them)
    return res


def _quiet_progress(_events: int) -> None:
    pass


def _in_child(read, name: str) -> dict:
    """read() in a forked child, its result (marshal: dicts, lists, bytes,
    numbers) sent back through a pipe; a signal that ends the child is an
    InputError naming it. The child dies with its parent (prctl), and is
    killed when the parent is interrupted."""
    import ctypes  # (imported here, before the fork: the child imports nothing)
    import marshal
    import signal

    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(rfd)
            _child_signals(ctypes)
            try:
                out = ("ok", read())
            except ValueError as e:
                out = ("error", str(e))
            except MemoryError as e:  # a resource, as in the parent: said as such
                out = ("memory", str(e))
            with os.fdopen(wfd, "wb") as f:
                f.write(marshal.dumps(out))
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(wfd)
    try:
        with os.fdopen(rfd, "rb") as f:
            data = f.read()
        _, status = os.waitpid(pid, 0)
        pid = 0
    finally:
        if pid:  # interrupted: the child goes too
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                # a Ctrl-C between waitpid's return and `pid = 0` above: the
                # child is reaped already, and the interruption is what to say
                pass
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        raise InputError(name, f"libtracecmd crashed reading this file ({signal.Signals(sig).name})",
                         "the file is probably damaged: read it with the builtin reader (the default)")
    if os.WEXITSTATUS(status) != 0 or not data:
        raise InputError(name, f"libtracecmd's read failed (exit {os.WEXITSTATUS(status)})",
                         "read it with the builtin reader (the default)")
    kind, res = marshal.loads(data)
    if kind == "error":
        raise ValueError(res)
    if kind == "memory":
        raise MemoryError(res)
    return res


def _child_signals(ctypes) -> None:
    """In the child: die of SIGINT, SIGTERM and SIGHUP (the parent reports
    them), unless ignored; and of SIGKILL when the parent dies. ctypes: the
    module, imported before the fork."""
    import signal  # (imported by _in_child before the fork: a look-up)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


# the reader's entry under the name the other readers' entries follow (read_*)
read_dat = read_core


def damage_warnings(meta: dict) -> list:
    """The builtin reader's count of what it skipped, in words (anomalies)."""
    d = meta.get("damage")
    if not d:
        return []
    out = []
    if d["bad_pages"]:
        out.append(f"{d['bad_pages']:,} trace.dat pages with records that do not fit the page: "
                   "the rest of each page skipped (a lost-events gap)")
    if d["bad_chunks"]:
        out.append(f"{d['bad_chunks']:,} compressed chunks that do not decompress: their pages "
                   "skipped (a lost-events gap)")
    if d["cut_streams"]:
        cpus = "1 CPU" if d["cut_streams"] == 1 else f"{d['cut_streams']:,} CPUs"
        out.append(f"the data of {cpus} cut short ({d['lost_bytes']:,} bytes missing "
                   "or unreadable): a truncated or damaged trace.dat")
    if d["partial_page_bytes"]:
        out.append(f"{d['partial_page_bytes']:,} bytes of CPU data that do not fill a page: skipped")
    if d["zero_pages"]:
        out.append(f"{d['zero_pages']:,} trace.dat pages of zeros (timestamp and commit 0): "
                   "not pages the kernel wrote; overwritten data?")
    if d.get("missing_records"):
        cpus = "1 CPU" if d["missing_record_cpus"] == 1 else f"{d['missing_record_cpus']:,} CPUs"
        out.append(f"{d['missing_records']:,} records the recording's statistics say were read from the "
                   f"kernel are not in the data ({cpus}): pages lost from the file where nothing in the "
                   "data marks a gap, so no call is left out for it: figures may miss calls")
    if d["kallsyms_bad_lines"]:
        out.append(f"{d['kallsyms_bad_lines']:,} kallsyms lines not understood: their functions "
                   "shown as addresses")
    if out and d["first"]:
        out[0] += f" (first: {d['first']})"
    return out


def header_notes(meta: dict) -> list:
    """What the builtin reader found odd in the headers and read on without
    (not damage: the data is whole), in words: a CPU count the data
    sections refute, options of ids no trace-cmd defines, section headers
    that are not what their option or the file allow. The libtracecmd
    reader's read carries the builtin check's (read_libtracecmd)."""
    if "header_notes" in meta:
        return list(meta["header_notes"])
    d = meta.get("damage")
    if not d:
        return []
    out = []
    cpus, data_cpus = d["cpucount_option"], d["data_cpus"]
    if cpus != -1 and cpus != data_cpus:
        says = "CPU count options disagree" if cpus == -2 else f"CPU count option says {cpus:,} CPUs"
        out.append(f"the trace.dat's {says}, its data sections are for {data_cpus:,}: "
                   f"{data_cpus:,} shown")
    if d.get("unknown_options"):
        n = d["unknown_options"]
        out.append(f"{n:,} trace.dat option{'s' if n != 1 else ''} of an id no trace-cmd defines "
                   f"(first: {d['first_unknown_option']}): skipped (a newer trace-cmd, or damage)")
    if d.get("bad_section_headers"):
        n = d["bad_section_headers"]
        out.append(f"{n:,} trace.dat section header{'s' if n != 1 else ''} that the file refutes: "
                   f"read on without {'them' if n != 1 else 'it'} (first: {d['first_bad_section']})")
    return out


def to_profile(res: dict, name: str, compression: str):
    """The Profile of the core's read of a trace.dat; an empty recording or
    one without function_graph calls is bad input."""
    from ftflame.model.profile import TraceInfo, note_warning

    from .tables import from_core_result

    meta = res["meta"]
    cpus, per_cpu = meta["cpus"], dict(meta["events_per_cpu"])
    data_cpus = (meta.get("damage") or {}).get("data_cpus") or meta.get("data_cpus")
    if data_cpus and (meta.get("damage") or {}).get("cpucount_option", -1) not in (-1, data_cpus):
        # a CPU count the data refutes (header_notes says so): the data's
        cpus, per_cpu = data_cpus, {c: n for c, n in per_cpu.items() if n}
    info = TraceInfo(
        source=name, format="trace.dat", kernel=meta["kernel"], clock=meta["clock"],
        cpus=cpus, tracer_version=meta["tracer_version"],
        file_version=meta["file_version"], compression=meta["compression"] or compression,
        events_per_cpu=per_cpu, has_sched_switch=meta["has_switch_event"],
        has_retval=meta["has_retval"], has_args=meta["has_args"])
    prof = from_core_result(res, info)
    damage = damage_warnings(meta)
    odd = header_notes(meta)
    if damage or odd:
        prof = prof.replace(warnings=prof.warnings + tuple(map(note_warning, damage + odd)))
    missing = (meta.get("damage") or {}).get("missing_records")  # the builtin reader's
    if missing:  # a JSON counter, as the builder's refuted figures
        prof = prof.replace(counters={**prof.counters, "missing_records": missing})
    if prof.counters["events"] == 0 and damage:
        raise InputError(name, f"no events could be read: {damage[0]}",
                         "the file is damaged or truncated: record it again, or copy it whole")
    if prof.counters["events"] == 0:
        raise InputError(name, "no events at all in this trace.dat (function_graph or other): "
                         "the recording is empty",
                         "was the tracer on and the workload running while trace-cmd recorded?")
    if prof.counters["exits"] == 0:
        raise InputError(name, "no function_graph calls in this trace.dat",
                         "check set_graph_function: did the traced functions run?")
    return prof


def read(path: str, name: str, compression: str, progress, slowest: int = 20, call_stream=None,
         excl_hist: bool = True):
    """A trace.dat file (`name` is what errors call it) into a Profile."""
    return to_profile(read_core(path, name, progress, slowest=slowest, call_stream=call_stream, excl_hist=excl_hist),
                      name, compression)
