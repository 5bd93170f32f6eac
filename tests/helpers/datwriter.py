"""A small trace.dat writer (file version 6, little-endian, 64-bit), written
from the format's own rules (trace-cmd.dat.v6(5); the kernel's ring-buffer
page: a u64 time stamp, a long commit whose top bits flag missed events,
then events each behind a 32-bit header of type_len:5 and time_delta:27),
for tests that need trace.dat files with chosen contents (issue 19):

- event formats of funcgraph_entry/funcgraph_exit with layouts varied as
  kernels did (depth of 4 or 8 bytes, the payload fields in any order at
  their natural alignment, exit with or without retval), sched_switch;
- kallsyms, cmdlines;
- per-CPU pages of any size ending anywhere, time extends for long deltas,
  absolute time stamps, end-of-page padding, lost-events flags with or
  without the count stored.

`Trace` collects events per CPU (what the kernel would have recorded);
`write(path)` lays them out. Events are ints and tuples, no per-event
objects beyond that: a generated file of tens of millions of events is
written in a stream (`write` takes any iterable per CPU).
"""
from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field

MAGIC = b"\x17\x08\x44tracing"
PAGE = 4096
PAGE_HEADER = 16  # u64 time stamp, 64-bit local_t commit
MISSED_EVENTS = 1 << 31  # the commit field's flags (kernel ring_buffer.c)
MISSED_STORED = 1 << 30
TYPE_PADDING, TYPE_TIME_EXTEND, TYPE_TIME_STAMP = 29, 30, 31
MAX_SMALL = 28 * 4  # longer event data is sized by a u32 after the header
DELTA_BITS = 27

HEADER_PAGE = (
    "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
    "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
    "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
    f"\tfield: char data;\toffset:16;\tsize:{PAGE - PAGE_HEADER};\tsigned:1;\n")
HEADER_EVENT = (
    "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n"
    "\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n"
    "\ttime_stamp : type == 31\n\tdata max type_len  == 28\n")
COMMON = [("unsigned short common_type", 0, 2, 0), ("unsigned char common_flags", 2, 1, 0),
          ("unsigned char common_preempt_count", 3, 1, 0), ("int common_pid", 4, 4, 1)]


@dataclass
class EventFormat:
    """One event's format: its id, name, and payload fields (C declaration,
    offset, size, signed) after the 8 bytes of common fields."""
    id: int
    name: str
    system: str
    fields: list
    print_fmt: str

    @property
    def size(self) -> int:
        end = max(o + s for _d, o, s, _g in self.fields)
        return (end + 3) // 4 * 4

    def offset(self, name: str) -> tuple[int, int]:
        for decl, off, size, _signed in self.fields:
            if decl.split(" ")[-1].split("[")[0] == name:
                return off, size
        raise KeyError(name)

    def text(self) -> str:
        lines = [f"name: {self.name}", f"ID: {self.id}", "format:"]
        for decl, off, size, signed in COMMON:
            lines.append(f"\tfield:{decl};\toffset:{off};\tsize:{size};\tsigned:{signed};")
        lines.append("")
        for decl, off, size, signed in self.fields:
            lines.append(f"\tfield:{decl};\toffset:{off};\tsize:{size};\tsigned:{signed};")
        return "\n".join(lines) + f"\n\nprint fmt: {self.print_fmt}\n"

    def pack(self, values: dict, flags: int = 0, pid: int = 0) -> bytes:
        b = bytearray(self.size)
        struct.pack_into("<HBBi", b, 0, self.id, flags, 0, pid)
        for decl, off, size, _signed in self.fields:
            name = decl.split(" ")[-1].split("[")[0]
            v = values.get(name, 0)
            if isinstance(v, bytes):
                b[off:off + size] = v[:size].ljust(size, b"\0")
            else:
                b[off:off + size] = (v & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        return bytes(b)


def _place(fields: list[tuple[str, int, int]]) -> list:
    """(decl, size, signed) in the given order, each at its natural
    alignment after the 8 common bytes."""
    out, at = [], 8
    for decl, size, signed in fields:
        align = min(size, 8)
        at = (at + align - 1) // align * align
        out.append((decl, at, size, signed))
        at += size
    return out


def graph_formats(rng: random.Random) -> tuple[EventFormat, EventFormat]:
    """funcgraph_entry and funcgraph_exit with a layout some kernel could
    have: depth of 4 bytes (or 8, as 6.15-rc declared it), the payload in a
    random order, the exit with or without a retval."""
    depth = ("int depth", 4, 1) if rng.random() < 0.7 else ("unsigned long depth", 8, 0)
    entry = [("unsigned long func", 8, 0), depth]
    exit_ = [("unsigned long func", 8, 0), depth, ("unsigned int overrun", 4, 0),
             ("unsigned long long calltime", 8, 0), ("unsigned long long rettime", 8, 0)]
    if rng.random() < 0.4:
        exit_.append(("unsigned long retval", 8, 0))
    rng.shuffle(entry)
    rng.shuffle(exit_)
    ids = rng.sample(range(8, 40), 2)
    return (EventFormat(ids[0], "funcgraph_entry", "ftrace", _place(entry),
                        '"--> %ps (%d)", (void *)REC->func, REC->depth'),
            EventFormat(ids[1], "funcgraph_exit", "ftrace", _place(exit_),
                        '"<-- %ps (%d) (start: %llx  end: %llx) over: %d", (void *)REC->func, '
                        "REC->depth, REC->calltime, REC->rettime, REC->depth"))


def sched_switch_format(event_id: int = 319) -> EventFormat:
    return EventFormat(event_id, "sched_switch", "sched", _place([
        ("char prev_comm[16]", 16, 1), ("pid_t prev_pid", 4, 1), ("int prev_prio", 4, 1),
        ("long prev_state", 8, 1), ("char next_comm[16]", 16, 1), ("pid_t next_pid", 4, 1),
        ("int next_prio", 4, 1)]),
        '"prev_comm=%s prev_pid=%d prev_prio=%d ==> next_comm=%s next_pid=%d next_prio=%d", '
        "REC->prev_comm, REC->prev_pid, REC->prev_prio, REC->next_comm, REC->next_pid, REC->next_prio")


# ---- ring-buffer pages --------------------------------------------------------

def _header(type_len: int, delta: int) -> bytes:
    return struct.pack("<I", (delta << 5) | type_len)


def encode_event(data: bytes, delta: int) -> bytes:
    """One data event with its time delta (< 2**27): small ones sized by
    type_len, longer ones (over 112 bytes) by a u32 length."""
    pad = data + bytes(-len(data) % 4)
    if len(pad) <= MAX_SMALL:
        return _header(len(pad) // 4, delta) + pad
    return _header(0, delta) + struct.pack("<I", len(pad) + 4) + pad


def time_extend(delta: int) -> bytes:
    return _header(TYPE_TIME_EXTEND, delta & ((1 << DELTA_BITS) - 1)) + struct.pack("<I", delta >> DELTA_BITS)


def time_stamp(ts: int) -> bytes:
    return _header(TYPE_TIME_STAMP, ts & ((1 << DELTA_BITS) - 1)) + struct.pack("<I", ts >> DELTA_BITS)


@dataclass
class PagePlan:
    """How pages are cut: a page ends early (its rest unused) with
    probability `early_end`; missed events are flagged on a new page with
    probability `lost` (the count stored after the data when there is room,
    with probability `lost_stored`); absolute stamps instead of deltas with
    probability `absolute`; trailing padding event at a page end with
    probability `padding`."""
    early_end: float = 0.0
    lost: float = 0.0
    lost_stored: float = 0.5
    absolute: float = 0.0
    padding: float = 0.0
    seed: int = 0


def pages(events, plan: PagePlan):
    """The pages of one CPU's events ((ts, data bytes) in time order), and
    per page the missed-events count flagged on it (-1: flagged, count not
    stored): yields (page bytes, missed)."""
    rng = random.Random(plan.seed)
    room = PAGE - PAGE_HEADER
    body, page_ts, last, missed = bytearray(), None, 0, 0

    def close():
        commit = len(body)
        tail = b""
        flags = 0
        if missed:
            flags = MISSED_EVENTS
            if missed > 0 and commit + 8 <= room:
                flags |= MISSED_STORED
                tail = struct.pack("<Q", missed)
        if plan.padding and rng.random() < plan.padding and commit + len(tail) + 4 <= room - 4:
            # the kernel's end-of-page padding: type 29 with a zero delta
            body.extend(_header(TYPE_PADDING, 0))
            commit = len(body)
            tail = struct.pack("<Q", missed) if flags & MISSED_STORED else b""
        page = struct.pack("<QQ", page_ts, commit | flags) + bytes(body) + tail
        return page + bytes(PAGE - len(page))

    for ts, data in events:
        parts = []
        if page_ts is not None and plan.absolute and rng.random() < plan.absolute:
            parts.append(time_stamp(ts))
            delta = 0
        else:
            delta = 0 if page_ts is None else ts - last
        if delta >= 1 << DELTA_BITS:
            parts.append(time_extend(delta))
            delta = 0
        parts.append(encode_event(data, delta))
        need = sum(len(p) for p in parts)
        early = page_ts is not None and plan.early_end and rng.random() < plan.early_end
        if page_ts is not None and (len(body) + need + 8 + 4 > room or early):
            yield close(), missed
            body, page_ts, missed = bytearray(), None, 0
        if page_ts is None:
            page_ts = ts
            parts = [encode_event(data, 0)]
            if plan.lost and rng.random() < plan.lost:
                missed = rng.randrange(1, 5000) if rng.random() < plan.lost_stored else -1
        for p in parts:
            body.extend(p)
        last = ts
    if page_ts is not None:
        yield close(), missed


# ---- the file -----------------------------------------------------------------

@dataclass
class Trace:
    """What a v6 trace.dat holds: formats, symbols, task names, and per CPU
    an iterable of (ts, event bytes) in time order."""
    entry: EventFormat
    exit: EventFormat
    switch: EventFormat = field(default_factory=sched_switch_format)
    kallsyms: dict = field(default_factory=dict)   # address -> name
    comms: dict = field(default_factory=dict)      # pid -> comm
    cpus: dict = field(default_factory=dict)       # cpu -> iterable of (ts, bytes)
    plan: PagePlan = field(default_factory=PagePlan)
    lost: dict = field(default_factory=dict)       # cpu -> [missed per flagged page] (after write)


def _sized(width: int, text: str | bytes) -> bytes:
    b = text.encode() if isinstance(text, str) else text
    return (len(b)).to_bytes(width, "little") + b


def _header_bytes(t: Trace) -> bytes:
    out = bytearray(MAGIC + b"6\0" + b"\0" + b"\x08" + struct.pack("<I", PAGE))
    out += b"header_page\0" + _sized(8, HEADER_PAGE)
    out += b"header_event\0" + _sized(8, HEADER_EVENT)
    out += struct.pack("<I", 2) + _sized(8, t.entry.text()) + _sized(8, t.exit.text())
    out += struct.pack("<I", 1) + b"sched\0" + struct.pack("<I", 1) + _sized(8, t.switch.text())
    syms = "".join(f"{a:016x} T {n}\n" for a, n in sorted(t.kallsyms.items()))
    out += _sized(4, syms)
    out += _sized(4, "")
    out += _sized(8, "".join(f"{p} {c}\n" for p, c in sorted(t.comms.items())))
    return bytes(out)


def write(t: Trace, path: str) -> None:
    """Lay the trace out: the header, then each CPU's pages at page-aligned
    offsets, then the flyrecord table filled in (the header is written
    first with room for it, its offsets patched at the end)."""
    ncpu = max(t.cpus) + 1 if t.cpus else 1
    head = _header_bytes(t) + struct.pack("<I", ncpu)
    head += b"options  \0" + struct.pack("<HI", 4, 6) + b"local\0" + struct.pack("<H", 0)
    head += b"flyrecord\0"
    table_at = len(head)
    head += bytes(16 * ncpu)
    with open(path, "wb") as f:
        f.write(head)
        table = []
        for cpu in range(ncpu):
            at = (f.tell() + PAGE - 1) // PAGE * PAGE
            f.write(bytes(at - f.tell()))
            n = 0
            plan = PagePlan(**{**t.plan.__dict__, "seed": t.plan.seed * 1000 + cpu})
            t.lost[cpu] = []
            for page, missed in pages(t.cpus.get(cpu, ()), plan):
                f.write(page)
                n += 1
                if missed:
                    t.lost[cpu].append(missed)
            table.append((at, n * PAGE))
        f.seek(table_at)
        for at, size in table:
            f.write(struct.pack("<QQ", at, size))


# ---- call trees to write -------------------------------------------------------

@dataclass
class Written:
    """What was written, to check a reader against: per function name the
    completed calls and their summed inclusive time, the event counts."""
    calls: dict = field(default_factory=dict)
    incl_ns: dict = field(default_factory=dict)
    entries: int = 0
    exits: int = 0
    switches: int = 0


@dataclass
class Call:
    """Where _call writes: the formats, the symbols, one CPU's event list,
    the tally of what was written, the task, the deepest level."""
    entry: EventFormat
    exit: EventFormat
    funcs: dict
    evs: list
    written: Written
    pid: int
    max_depth: int


def _call(rng: random.Random, c: Call, depth: int, ts: int) -> int:
    """One complete call at `depth` from `ts` with 0-2 callees each level
    down: its entry and exit events appended, the time after it returned."""
    a = rng.choice(sorted(c.funcs))
    start = ts
    c.evs.append((ts, c.entry.pack({"func": a, "depth": depth}, pid=c.pid)))
    c.written.entries += 1
    ts += rng.randrange(50, 2000)
    if depth < c.max_depth:
        for _ in range(rng.randrange(0, 3)):
            ts = _call(rng, c, depth + 1, ts) + rng.randrange(10, 500)
    c.evs.append((ts, c.exit.pack({"func": a, "depth": depth, "calltime": start,
                                   "rettime": ts, "retval": 0}, pid=c.pid)))
    c.written.exits += 1
    name = c.funcs[a]
    c.written.calls[name] = c.written.calls.get(name, 0) + 1
    c.written.incl_ns[name] = c.written.incl_ns.get(name, 0) + ts - start
    return ts + rng.randrange(10, 500)


def random_trace(rng: random.Random, ncpu: int = 2, roots: int = 20, max_depth: int = 6,
                 nfuncs: int = 12, long_gaps: bool = True, plan: PagePlan | None = None,
                 switches: bool = True) -> tuple[Trace, Written]:
    """Complete call trees of a few tasks per CPU (every entry has its exit,
    nothing nested across a task switch), with time gaps long enough for time
    extends when `long_gaps`; what was written is returned beside the trace."""
    entry, exit_ = graph_formats(rng)
    switch = sched_switch_format(rng.choice([319, 300, 1000]))
    funcs = {0xFFFFFFFF81000000 + 0x100 * i: f"func_{i}" for i in range(nfuncs)}
    written = Written()
    cpus: dict[int, list] = {}
    comms = {}
    ts = 1_000_000_000
    for cpu in range(ncpu):
        evs = []
        ts = 1_000_000_000 + cpu * 7
        pids = [100 + 10 * cpu + i for i in range(2)]
        for p in pids:
            comms[p] = f"nfsd{p}"
        current = pids[0]
        for _r in range(roots):
            if switches and rng.random() < 0.3:
                nxt = pids[1] if current == pids[0] else pids[0]
                evs.append((ts, switch.pack({"prev_comm": comms[current].encode(), "prev_pid": current,
                                             "prev_prio": 120, "prev_state": 1,
                                             "next_comm": comms[nxt].encode(), "next_pid": nxt,
                                             "next_prio": 120}, pid=current)))
                written.switches += 1
                current = nxt
                ts += rng.randrange(100, 3000)

            ts = _call(rng, Call(entry, exit_, funcs, evs, written, current, max_depth), 0, ts)
            ts += rng.choice([rng.randrange(100, 10_000), 1 << 28]) if long_gaps else rng.randrange(100, 10_000)
        cpus[cpu] = evs
    return Trace(entry, exit_, switch, funcs, comms, cpus, plan or PagePlan()), written
