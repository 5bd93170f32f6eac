"""Helpers shared by renderers: node flags, number formatting."""
from __future__ import annotations

import queue
import threading

import numpy as np

from ftflame.correct import corrections
from ftflame.model.depthcut import depth_cut
from ftflame.model.profile import (
    NODE_IRQ,
    NODE_IRQ_ROOT,
    NODE_PARTIAL,
    TREE_MAX_CALLS,
    Profile,
    depth_limit_words,
    lost_share,
    missing_entries_unmarked,
    retval_is_error,
    retval_signed,
)


def format_rows(items: list, nrows: int, *fd):
    """report/native's format_rows, with each enumeration's fragments cut
    to those its rows use when it has many more than rows: the C side takes
    every fragment of the list on each call (a copy of the list, each
    fragment's text), so a template naming every function (2 M distinct
    root functions), written 4,096 rows a chunk, cost chunks x functions:
    quadratic, most of the JSON report's time at 2 M. The text is the same."""
    from ._rowfmt import format_rows as native

    if nrows:
        items = [_used_fragments(it, nrows) if not isinstance(it, str) and it[0] == "e" else it for it in items]
    return native(items, nrows, *fd)


class RowsToFile:
    """format_rows(..., fd) into a binary file a chunk at a time, each chunk
    formatted on a side thread while the caller makes the next chunk's
    template: the C formatter runs without the GIL (and writes on a thread
    of its own), so on two cores the making of rows (numpy, the corrected
    statistics: most of the JSON's rendering) and their formatting overlap,
    in the file's order. One chunk in flight: two chunks' templates live at
    once. The caller's own bytes go through write(), after the chunk in
    flight. A context manager: its exit waits for the chunk in flight, also
    when the caller fails, so that the file is never closed under it."""

    def __init__(self, f):
        self.f = f
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        self._busy = False
        self._thread: threading.Thread | None = None

    def __enter__(self) -> RowsToFile:
        return self

    def __exit__(self, *exc) -> None:
        try:
            if exc[0] is None:
                self.wait()
        finally:
            if self._thread is not None:
                self._jobs.put(None)
                self._thread.join()  # after the chunk in flight, if any

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                format_rows(*job)
                self._done.put(None)
            except BaseException as e:  # raised on the caller's thread (wait)
                self._done.put(e)

    def rows(self, items: list, nrows: int) -> None:
        """The template's nrows rows, after everything written before."""
        self.wait()
        self.f.flush()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="ftflame-rows", daemon=True)
            self._thread.start()
        self._jobs.put((items, nrows, self.f.fileno()))
        self._busy = True

    def write(self, data: bytes) -> None:
        self.wait()
        self.f.write(data)

    def wait(self) -> None:
        """Until the chunk in flight is written; its error is raised here."""
        if self._busy:
            self._busy = False
            err = self._done.get()
            if err is not None:
                raise err


def _used_fragments(item: tuple, nrows: int) -> tuple:
    kind, index, frags = item
    if len(frags) <= 4 * nrows + 64:
        return item
    used, local = np.unique(np.asarray(index)[:nrows], return_inverse=True)
    return kind, local.astype(np.int64, copy=False), [frags[i] for i in used.tolist()]


def node_flags(flags: int) -> list:
    out = []
    if flags & NODE_IRQ:
        out.append("irq")
    if flags & NODE_IRQ_ROOT:
        out.append("irq_root")
    if flags & NODE_PARTIAL:
        out.append("partial")
    return out


def us(ns: float, width: int = 0, decimals: int = 3) -> str:
    """Nanoseconds as microseconds, the unit function_graph prints. With a
    width, decimals are dropped until the number fits (never truncated)."""
    for d in range(decimals, -1, -1):
        s = f"{ns / 1000.0:,.{d}f}"
        if not width or len(s) <= width:
            break
    return s.rjust(width) if width else s


def wrap(text: str, indent: str = "", lead: str | None = None, width: int = 80) -> list:
    """Lines of text wrapped at width, words never cut: the first line
    starts with lead (default: text's own leading spaces), continuation
    lines with indent."""
    if lead is None:
        lead = text[: len(text) - len(text.lstrip(" "))]
    out, line = [], lead
    for word in text.split():
        if line.strip() and len(line) + 1 + len(word) > width:
            out.append(line)
            line = indent + word
        else:
            line = f"{line} {word}" if line.strip() else line + word
    if line.strip():
        out.append(line)
    return out


def retval_text(v: int) -> str:
    """A return value as the kernel prints it (funcgraph-retval): an error
    code in decimal (an int's sign-extended first), anything else in hex."""
    bits = np.array([v])
    return str(int(retval_signed(bits)[0])) if retval_is_error(bits)[0] else hex(v & 0xFFFFFFFFFFFFFFFF)


def arg_text(v: int) -> str:
    """An argument value as recorded: a register's bits, in hex (trace.dat
    has no types or names for them)."""
    return hex(v & 0xFFFFFFFFFFFFFFFF) if v else "0"


def call_text(name: str, args, ret) -> str:
    """name(args) = ret, each part only when the trace recorded it."""
    return (name + ("" if args is None else "(" + ", ".join(map(arg_text, args)) + ")") +
            ("" if ret is None else " = " + retval_text(ret)))


def count(n: int, width: int = 0) -> str:
    s = f"{int(n):,}"
    return s.rjust(width) if width else s


def plural(n: int, one: str, many: str = "") -> str:
    """'1 gap call', '2 gap calls' (many: the plural when not one + 's')."""
    return f"{int(n):,} {one if int(n) == 1 else (many or one + 's')}"


def fit_decimals(values, width: int, decimals: int = 3) -> int:
    """The most decimals (up to `decimals`) with which every value, in us
    as us() writes it, fits `width`: one count for a whole table, so its
    columns never differ in precision."""
    vals = np.asarray(values, dtype=np.float64)
    if not vals.size:
        return decimals
    for d in range(decimals, -1, -1):
        if all(len(f"{x / 1000.0:,.{d}f}") <= width for x in (float(vals.max()), float(vals.min()))):
            return d
    return 0


def report_notes(p: Profile) -> list:
    """Every note on what the trace or the correction could not account for,
    as short sentences: the same list in every output (JSON trace.notes, the
    text and HTML headers, the SVG's count)."""
    notes = anomaly_lines(p)
    hint = max_depth_hint(p)
    if hint:
        notes.append(hint)
    if p.corrected is not None:
        clamped = int(np.count_nonzero(p.corrected.clamped))
        if clamped:
            why = ("the calibration overestimates their hook cost" if p.calibration.applied else
                   "no hook cost was subtracted: the interrupt, off-CPU or switch time taken out "
                   "exceeds their measured time")
            notes.append(f"{plural(clamped, 'call path')} had a corrected time below zero, clamped at 0 "
                         f"({why})")
    if p.calibration.applied:
        # the functions every output flags (corrections.function_extras):
        # hook cost, not the interrupt or off-CPU time the trace measured
        big = int(np.count_nonzero(corrections.function_extras(p).get("unreliable", ())))
        if big:
            its, their = ("its", "its") if big == 1 else ("their", "their")
            notes.append(f"{plural(big, 'function')} had more than half of {its} measured time taken out as hook "
                         "cost (marked ? in the text, unreliable in the JSON, a warning sign in the HTML function "
                         f"table): {their} corrected figures rest mostly on the calibration")
    return notes


# one independent `if counter:` sentence per counter, a table in code form:
# splitting it would scatter the list readers check against the counters
def anomaly_lines(p: Profile) -> list:  # noqa: C901
    """Everything the tool could not account for, as short sentences."""
    c = p.counters
    out = []
    if p.lost_per_cpu:
        unk = p.lost_gaps_unknown_per_cpu
        per = ", ".join(f"CPU{cpu}: {n:,}" + (f" + {unk[cpu]} gaps of unknown size" if cpu in unk else "")
                        for cpu, n in sorted(p.lost_per_cpu.items()))
        share = lost_share(c)
        out.append(f"LOST EVENTS ({c.get('lost_events', 0):,} in {plural(c.get('lost_records', 0), 'gap')}"
                   + (f", {share:.1%} of the events written and lost" if share is not None else "")
                   + f"; {per}): calls spanning a gap are counted but left out of corrected figures; a bigger "
                   "ring buffer keeps them (trace-cmd record -b KiB-per-CPU), or fewer functions traced")
    if c.get("depth_limit_calls"):
        out.append(depth_limit_words(c))
    if c.get("gap_calls"):
        out.append(f"{plural(c['gap_calls'], 'call')} left out of corrected figures (raw sums include "
                   f"them): {'it spans' if c['gap_calls'] == 1 else 'they span'} {p.gap_causes or 'a gap'}")
    if c.get("detached_calls"):
        out.append(f"{plural(c['detached_calls'], 'complete call')} under a caller left out or never completed: "
                   "kept in corrected figures, each a tree of its own")
    if c.get("orphan_exits"):
        out.append(f"{plural(c['orphan_exits'], 'exit')} without an entry (trace began mid-call or entries "
                   "lost): complete calls, shown under their parent or (partial)")
    if c.get("unterminated"):
        out.append(f"{plural(c['unterminated'], 'entry', 'entries')} whose exit never came (lost exits)")
    if c.get("open_at_end"):
        out.append(f"{plural(c['open_at_end'], 'call')} still open when the trace ended (not counted)")
    if c.get("partial_entries"):
        out.append(f"{plural(c['partial_entries'], 'call')} began with their callers unknown: under (partial)")
    if c.get("depth_mismatch"):
        missing = c.get("missing_entries", 0)
        out.append(f"{plural(c['depth_mismatch'], 'depth mismatch', 'depth mismatches')} between events and the "
                   "rebuilt stack" + (f" ({missing:,} an entry deeper than its parent + 1: entries missing"
                                      f"{missing_entries_unmarked(c)})" if missing else ""))
    if c.get("migrations"):
        # say what the builder did: per-task stacks follow a task anywhere; a
        # text's per-CPU stacks only move where a task-switch separator names
        # the task resuming on another CPU
        how = ("handled: stacks are per task" if p.trace.per_task else
               "followed: the text's task-switch separators named the task on the other CPU; "
               "its stacks are per CPU otherwise")
        out.append(f"{c['migrations']:,} calls migrated to another CPU mid-call ({how})")
    if c.get("irq_outside_window"):
        out.append(f"{plural(c['irq_outside_window'], 'interrupt')} hit a tracer push/pop window "
                   "(attributed by depth)")
    if c.get("other_events"):
        out.append(f"{plural(c['other_events'], 'other event')} passed over")
    if c.get("duration_cut"):
        out.append(f"{plural(c['duration_cut'], 'duration')} too long to sum (over 2^53 ns, or all calls "
                   "together over 2^61 ns): cut to fit, so sums are lower bounds")
    if c.get("backwards_calls"):
        out.append(f"{plural(c['backwards_calls'], 'exit')} with a calltime after its rettime (a damaged "
                   "record or event format): taken as 0 ns calls, so figures that include them are wrong")
    if c.get("times_refuted"):
        first = c.get("times_refuted_first_func")
        which = "" if first is None or not 0 <= first < len(p.funcs) else \
            (f" (the first: {p.funcs[first]}, calltime {c['times_refuted_first_ns'] / 1e9:.6f} s, "
             f"pid {c['times_refuted_first_pid']})")
        out.append(f"{plural(c['times_refuted'], 'call')} whose rettime - calltime the entry and exit records' "
                   f"timestamps refute (by over 50 ms){which}: damaged times; figures that include them are wrong")
    if c.get("stalled_stamps"):
        # the 'global' clock's stall explains them on a trace of that clock only
        why = ("the 'global' trace clock holds a CPU whose clock lags at the last stamp any CPU wrote; an event "
               "written inside another's write takes its stamp") if p.trace.clock == "global" else \
            "an event written inside another's write takes its stamp"
        out.append(f"{plural(c['stalled_stamps'], 'record')} with its CPU's previous record's timestamp (no "
                   f"time between them: {why}): durations come "
                   "from calltime/rettime, but times between records (off-CPU time) may be off"
                   + (f"; {plural(c['times_stalled'], 'call')} whose records' interval differs from rettime - "
                      "calltime by over 50 ms because of it (not damage)" if c.get("times_stalled") else ""))
    if c.get("inner_before_call"):
        out.append(f"{plural(c['inner_before_call'], 'call')} with a call inside that started before it did (by over "
                   "50 ms, even allowing for nosleep-time): damaged times; figures that include them are wrong")
    if c.get("inner_after_return"):
        out.append(f"{plural(c['inner_after_return'], 'call')} with a call inside that returned after it did (by "
                   "over 50 ms): damaged times; figures that include them are wrong")
    if c.get("slowest_without_tree"):
        out.append(f"{plural(c['slowest_without_tree'], 'slowest call')} kept without its call tree (more than "
                   f"{TREE_MAX_CALLS:,} calls: too big to keep)")
    if c.get("long_names"):
        out.append(f"{plural(c['long_names'], 'function name')} longer than 4096 bytes: cut, ending in '...'")
    out.extend(w.text for w in p.warnings)
    return out


IRQ_SOURCES = {
    "common_flags": "from the events' hardirq/softirq flags",
    "arrows+names": "from the text's ==========> arrows and known irq entry functions "
                    "(text has no irq flags)",
    "latency-flags+names": "from the latency-flags column and known irq entry functions",
    "names": "from known irq entry function names only (text has no irq flags)",
}


TEXT_FORMATS = {
    "text:tracefs": "function_graph text (tracefs trace, trace_pipe or perf ftrace)",
    "text:trace-cmd": "trace-cmd report text",
    "text:mail": "function_graph text re-flowed in a mail",
}


def context_lines(p: Profile) -> list:
    """How call stacks and irq context were worked out, when not from a
    trace.dat's per-event pid and flags (text traces)."""
    t, c = p.trace, p.counters
    if t.per_task and t.irq_source == "common_flags":
        return []
    if t.per_task:
        stacks = "stacks: per task (the text names the task on every line)"
    else:
        seps = c.get("text_separators", 0)
        stacks = ("stacks: per CPU - the text has no task column" +
                  (f"; switched at {seps:,} task-switch separators" if seps else "") +
                  " (funcgraph-proc or trace-cmd give per-task stacks)")
    irq = "irq context: " + IRQ_SOURCES.get(t.irq_source, t.irq_source)
    out = []
    if t.format.startswith("text:"):
        out.append(f"input: {TEXT_FORMATS.get(t.format, t.format)}"
                   + (f", {t.compression}-compressed" if t.compression else ""))
    out += [stacks, irq]
    if c.get("text_records") and not c.get("text_ts_lines"):
        out.append("times: durations as printed (no timestamps in the text)")
    return out


def max_depth_hint(p: Profile):
    """A trace that seems cut by max_graph_depth, said only when the shape of
    its tree shows it (ftflame/model/depthcut.py; ftflame diff says the same)."""
    cut = depth_cut(p)
    if cut is None:
        return None
    return (f"seems cut at max_graph_depth {cut.limit}: {cut.evidence()}; deeper calls were "
            "hooked but not recorded, their time is in their callers' self time")
