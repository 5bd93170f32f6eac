"""The tests' one trace.dat writer (issue 19), written from the format's own
rules (trace-cmd.dat.v6(5), trace-cmd.dat.v7(5); the kernel's ring-buffer
page: a u64 time stamp, a long commit whose top bits flag missed events,
then records each behind a 32-bit header of type_len:5 and time_delta:27).

Its layers, each usable alone:

- records and pages (`record`, `time_extend`, `time_stamp`, `padding`,
  `page`, and the 6.1-layout events `entry`/`exit_` of FUNCS): one named
  situation per hand-made file (tests/test_reader_builtin.py);
- files (`write_file`, `write_v6`, `write_v7`): version 6 or 7,
  uncompressed or in zstd or zlib chunks, little- or big-endian, 8- or
  4-byte longs (`Form`), CPU data streamed page by page;
- generated traces (`random_trace`, `write`): random call trees with
  random field layouts, page ends, time extends, absolute stamps, padding
  and lost-events flags, for the property tests (tests/test_datwriter.py);
- `recompress`: a version 7 file laid out again with another compression
  (a zstd fixture's chunks as zlib: libtracecmd here reads no zlib);
- `seeds(DIR)`: the fuzzer's seeds (`make fuzz`: python
  tests/helpers/datwriter.py DIR).

Events are bytes and (ts, bytes) tuples, no per-event objects beyond that.
"""
from __future__ import annotations

import itertools
import os
import random
import struct
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass, field

MAGIC = b"\x17\x08\x44tracing"
PAGE = 4096
MISSED_EVENTS = 1 << 31  # the commit field's flags (kernel ring_buffer.c)
MISSED_STORED = 1 << 30
TYPE_PADDING, TYPE_TIME_EXTEND, TYPE_TIME_STAMP = 29, 30, 31
MAX_SMALL = 28 * 4  # longer event data is sized by a u32 after the header
DELTA_BITS = 27
COMPRESSIONS = {"none": b"none\0\0", "zstd": b"zstd\x001.5.4\0", "zlib": b"zlib\x001.2.13\0"}


@dataclass(frozen=True)
class Form:
    """How a file is laid out: its version, the compression of a version 7
    file's sections and CPU data, the byte order of every number in it, and
    the traced kernel's long size (the page's commit word, `unsigned long`
    fields, kallsyms addresses)."""
    version: int = 6
    compression: str = "none"
    big_endian: bool = False
    long_size: int = 8
    pages_per_chunk: int = 10  # trace-cmd's chunk: 10 pages
    # trace-cmd 3.4's layout: a CPU's size counts its chunk count too, and
    # the header names the writer's compressor version (not 3.1's 1.5.4)
    writer_34: bool = False

    def __post_init__(self):
        assert self.version in (6, 7) and self.long_size in (4, 8)
        assert self.compression in COMPRESSIONS and (self.version == 7 or self.compression == "none")

    @property
    def order(self) -> str:
        return ">" if self.big_endian else "<"

    @property
    def byteorder(self) -> str:
        return "big" if self.big_endian else "little"

    @property
    def data_offset(self) -> int:
        """Where a page's records start: after its u64 stamp and long commit."""
        return 8 + self.long_size

    def num(self, value: int, size: int) -> bytes:
        return value.to_bytes(size, self.byteorder)

    @property
    def name(self) -> str:
        return (f"v{self.version}-{self.compression}-{'be' if self.big_endian else 'le'}"
                f"{self.long_size * 8}")


LE64 = Form()


def header_page_text(form: Form = LE64) -> str:
    ls = form.long_size
    return (f"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
            f"\tfield: local_t commit;\toffset:8;\tsize:{ls};\tsigned:1;\n"
            f"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
            f"\tfield: char data;\toffset:{8 + ls};\tsize:{PAGE - 8 - ls};\tsigned:1;\n")


HEADER_EVENT = (
    "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n"
    "\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n"
    "\ttime_stamp : type == 31\n\tdata max type_len  == 28\n")
COMMON = [("unsigned short common_type", 0, 2, 0), ("unsigned char common_flags", 2, 1, 0),
          ("unsigned char common_preempt_count", 3, 1, 0), ("int common_pid", 4, 4, 1)]


# ---- event formats -----------------------------------------------------------

@dataclass
class EventFormat:
    """One event's format: its id, name, and payload fields (C declaration,
    offset, size, signed) after the 8 bytes of common fields; a record is
    the fields' end rounded up to `align`."""
    id: int
    name: str
    system: str
    fields: list
    print_fmt: str
    align: int = 4

    @property
    def size(self) -> int:
        end = max(o + s for _d, o, s, _g in self.fields)
        return (end + self.align - 1) // self.align * self.align

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

    def pack(self, values: dict, flags: int = 0, pid: int = 0, form: Form = LE64) -> bytes:
        b = bytearray(self.size)
        struct.pack_into(form.order + "HBBi", b, 0, self.id, flags, 0, pid)
        for decl, off, size, _signed in self.fields:
            name = decl.split(" ")[-1].split("[")[0]
            v = values.get(name, 0)
            if isinstance(v, bytes):
                b[off:off + size] = v[:size].ljust(size, b"\0")
            else:
                b[off:off + size] = form.num(v & ((1 << (8 * size)) - 1), size)
        return bytes(b)


def _place(fields: list[tuple[str, int, int]], long_size: int = 8) -> list:
    """(decl, size, signed) in the given order, each at its natural
    alignment (at most the long size, as on i386) after the 8 common bytes."""
    out, at = [], 8
    for decl, size, signed in fields:
        align = min(size, long_size)
        at = (at + align - 1) // align * align
        out.append((decl, at, size, signed))
        at += size
    return out


ENTRY_FMT = '"--> %ps (%d)", (void *)REC->func, REC->depth'
EXIT_FMT = ('"<-- %ps (%d) (start: %llx  end: %llx) over: %d", (void *)REC->func, '
            "REC->depth, REC->calltime, REC->rettime, REC->depth")


def graph_formats(rng: random.Random, long_size: int = 8) -> tuple[EventFormat, EventFormat]:
    """funcgraph_entry and funcgraph_exit with a layout some kernel could
    have: depth of 4 bytes (or 8, as 6.15-rc declared it), the payload in a
    random order, the exit with or without a retval."""
    ul = long_size
    depth = ("int depth", 4, 1) if rng.random() < 0.7 else ("unsigned long depth", ul, 0)
    entry = [("unsigned long func", ul, 0), depth]
    exit_ = [("unsigned long func", ul, 0), depth, ("unsigned int overrun", 4, 0),
             ("unsigned long long calltime", 8, 0), ("unsigned long long rettime", 8, 0)]
    if rng.random() < 0.4:
        exit_.append(("unsigned long retval", ul, 0))
    rng.shuffle(entry)
    rng.shuffle(exit_)
    ids = rng.sample(range(8, 40), 2)
    return (EventFormat(ids[0], "funcgraph_entry", "ftrace", _place(entry, ul), ENTRY_FMT),
            EventFormat(ids[1], "funcgraph_exit", "ftrace", _place(exit_, ul), EXIT_FMT))


def sched_switch_format(event_id: int = 319, long_size: int = 8) -> EventFormat:
    return EventFormat(event_id, "sched_switch", "sched", _place([
        ("char prev_comm[16]", 16, 1), ("pid_t prev_pid", 4, 1), ("int prev_prio", 4, 1),
        ("long prev_state", long_size, 1), ("char next_comm[16]", 16, 1), ("pid_t next_pid", 4, 1),
        ("int next_prio", 4, 1)], long_size),
        '"prev_comm=%s prev_pid=%d prev_prio=%d ==> next_comm=%s next_pid=%d next_prio=%d", '
        "REC->prev_comm, REC->prev_pid, REC->prev_prio, REC->next_comm, REC->next_pid, REC->next_prio")


# ---- the 6.1 layout's events, for hand-made files ------------------------------

EXIT_ID, ENTRY_ID = 10, 11
FUNCS = {"svc_process": 0xffffffff81000000, "nfsd_dispatch": 0xffffffff81000100,
         "nfsd3_proc_write": 0xffffffff81000200}
ETEXT = 0xffffffff81000300


def corner_formats(long_size: int = 8) -> tuple[EventFormat, EventFormat]:
    """funcgraph_entry and funcgraph_exit as 6.1 lays them out (records the
    size of the kernel's struct)."""
    ul = long_size
    entry = EventFormat(ENTRY_ID, "funcgraph_entry", "ftrace",
                        _place([("unsigned long func", ul, 0), ("int depth", 4, 1)], ul),
                        '"--> %ps (%d)", (void *)REC->func, REC->depth', align=ul)
    exit_ = EventFormat(EXIT_ID, "funcgraph_exit", "ftrace", _place([
        ("unsigned long func", ul, 0), ("int depth", 4, 1), ("unsigned int overrun", 4, 0),
        ("unsigned long long calltime", 8, 0), ("unsigned long long rettime", 8, 0)], ul),
        '"<-- %ps (%d)", (void *)REC->func, REC->depth', align=ul)
    return entry, exit_


def func_address(name: str, form: Form = LE64) -> int:
    """FUNCS' address of name, on the form's long (0xc1000000 on 32 bits)."""
    a = FUNCS[name]
    return a if form.long_size == 8 else 0xc0000000 | (a & 0x0fffffff)


def entry(pid: int, func: str, depth: int, form: Form = LE64) -> bytes:
    return corner_formats(form.long_size)[0].pack(
        {"func": func_address(func, form), "depth": depth}, pid=pid, form=form)


def exit_(pid: int, func: str, depth: int, calltime: int, rettime: int, overrun: int = 0,
          form: Form = LE64) -> bytes:
    return corner_formats(form.long_size)[1].pack(
        {"func": func_address(func, form), "depth": depth, "overrun": overrun,
         "calltime": calltime, "rettime": rettime}, pid=pid, form=form)


# ---- a kernel that records return values (CONFIG_FUNCTION_GRAPH_RETVAL) ----------

RETVAL_EXIT_ID = 12
# FUNCS and the functions below nfsd3_proc_write, all before _etext
RETVAL_FUNCS = {**FUNCS, "nfsd_vfs_write": 0xffffffff81000240, "vfs_write": 0xffffffff81000280}


def retval_exit_format(long_size: int = 8) -> EventFormat:
    """funcgraph_exit as 6.5+ lays it out with CONFIG_FUNCTION_GRAPH_RETVAL:
    func@8, retval@16, depth@24, overrun@28, calltime@32, rettime@40 (a
    long retval: 4 bytes on a 32-bit kernel)."""
    ul = long_size
    return EventFormat(RETVAL_EXIT_ID, "funcgraph_exit", "ftrace", _place([
        ("unsigned long func", ul, 0), ("unsigned long retval", ul, 0), ("int depth", 4, 1),
        ("unsigned int overrun", 4, 0), ("unsigned long long calltime", 8, 0),
        ("unsigned long long rettime", 8, 0)], ul),
        '"<-- %ps (%d) (start: %llx  end: %llx) over: %d retval: %lx", (void *)REC->func, '
        "REC->depth, REC->calltime, REC->rettime, REC->depth, REC->retval", align=ul)


def _retval_address(name: str, form: Form) -> int:
    a = RETVAL_FUNCS[name]
    return a if form.long_size == 8 else 0xc0000000 | (a & 0x0fffffff)


def retval_contents(form: Form = LE64) -> Contents:
    """The hand-made files' entry format (6.1's, unchanged in 6.5), the
    retval exit and RETVAL_FUNCS."""
    syms = {_retval_address(n, form): n for n in RETVAL_FUNCS}
    syms[ETEXT if form.long_size == 8 else 0xc1000300] = "_etext"
    return Contents([retval_exit_format(form.long_size), corner_formats(form.long_size)[0]], kallsyms=syms,
                    uname="Linux synthetic 6.6.0 x86_64")


def retval_entry(pid: int, func: str, depth: int, form: Form = LE64) -> bytes:
    return corner_formats(form.long_size)[0].pack(
        {"func": _retval_address(func, form), "depth": depth}, pid=pid, form=form)


def retval_exit(pid: int, func: str, depth: int, calltime: int, rettime: int, retval: int,
                form: Form = LE64) -> bytes:
    """The exit of a call that returned retval (-5 is stored as the
    kernel's long holds it; an int's -5 is 0xfffffffb)."""
    return retval_exit_format(form.long_size).pack(
        {"func": _retval_address(func, form), "depth": depth, "calltime": calltime, "rettime": rettime,
         "retval": retval}, pid=pid, form=form)


# ---- ring-buffer records and pages ----------------------------------------------

def _header(type_len: int, delta: int, form: Form = LE64) -> bytes:
    """The 32-bit record header: a little-endian kernel's bitfields start at
    the bottom (type_len in bits 0-4), a big-endian one's at the top."""
    word = (type_len << DELTA_BITS | delta) if form.big_endian else (delta << 5 | type_len)
    return struct.pack(form.order + "I", word)


def record(delta: int, payload: bytes, form: Form = LE64) -> bytes:
    """A data record: type_len = words (<= 28), or 0 with the length word
    (payload padded to whole words)."""
    assert 0 <= delta < 1 << DELTA_BITS
    pad = payload + bytes(-len(payload) % 4)
    if len(pad) <= MAX_SMALL:
        return _header(len(pad) // 4, delta, form) + pad
    return _header(0, delta, form) + struct.pack(form.order + "I", len(pad) + 4) + pad


def time_extend(delta: int, form: Form = LE64) -> bytes:
    """Adds (word << 27) + delta to the clock."""
    return (_header(TYPE_TIME_EXTEND, delta & ((1 << DELTA_BITS) - 1), form) +
            struct.pack(form.order + "I", delta >> DELTA_BITS))


def time_stamp(ts: int, form: Form = LE64) -> bytes:
    """Sets the clock: (word << 27) + delta, an absolute time stamp."""
    return (_header(TYPE_TIME_STAMP, ts & ((1 << DELTA_BITS) - 1), form) +
            struct.pack(form.order + "I", ts >> DELTA_BITS))


def padding(delta: int, length: int, form: Form = LE64) -> bytes:
    """A discarded record (delta > 0) of `length` bytes after its header."""
    return (_header(TYPE_PADDING, delta, form) + struct.pack(form.order + "I", length) +
            bytes(length - 4))


def page(ts: int, body: bytes, missed: int | None = None, form: Form = LE64) -> bytes:
    """A ring-buffer page: missed=-1 marks lost events of unknown count, a
    count >= 0 is stored (a long) after the records."""
    commit = len(body)
    tail = b""
    if missed is not None:
        commit |= MISSED_EVENTS
        if missed >= 0:
            commit |= MISSED_STORED
            tail = form.num(missed, form.long_size)
    out = form.num(ts, 8) + form.num(commit, form.long_size) + body + tail
    assert len(out) <= PAGE
    return out + bytes(PAGE - len(out))


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


def pages(events, plan: PagePlan, form: Form = LE64):
    """The pages of one CPU's events ((ts, data bytes) in time order), and
    per page the missed-events count flagged on it (-1: flagged, count not
    stored): yields (page bytes, missed)."""
    rng = random.Random(plan.seed)
    room = PAGE - form.data_offset
    long = form.long_size
    body, page_ts, last, missed = bytearray(), None, 0, 0

    def close():
        stored = None if not missed else (missed if missed > 0 and len(body) + long <= room else -1)
        if plan.padding and rng.random() < plan.padding and \
                len(body) + (long if stored is not None and stored >= 0 else 0) + 4 <= room - 4:
            # the kernel's end-of-page padding: type 29 with a zero delta
            body.extend(_header(TYPE_PADDING, 0, form))
        return page(page_ts, bytes(body), stored, form)

    for ts, data in events:
        parts = []
        if page_ts is not None and plan.absolute and rng.random() < plan.absolute:
            parts.append(time_stamp(ts, form))
            delta = 0
        else:
            delta = 0 if page_ts is None else ts - last
        if delta >= 1 << DELTA_BITS:
            parts.append(time_extend(delta, form))
            delta = 0
        parts.append(record(delta, data, form))
        need = sum(len(p) for p in parts)
        early = page_ts is not None and plan.early_end and rng.random() < plan.early_end
        if page_ts is not None and (len(body) + need + 8 + 4 > room or early):
            yield close(), missed
            body, page_ts, missed = bytearray(), None, 0
        if page_ts is None:
            page_ts = ts
            parts = [record(0, data, form)]
            if plan.lost and rng.random() < plan.lost:
                missed = rng.randrange(1, 5000) if rng.random() < plan.lost_stored else -1
        for p in parts:
            body.extend(p)
        last = ts
    if page_ts is not None:
        yield close(), missed


# ---- the file ------------------------------------------------------------------

@dataclass
class Contents:
    """What a file says besides its events: the event formats (ftrace's
    and sched_switch), kallsyms (address -> name), task names, the options."""
    ftrace: list
    switch: EventFormat | None = None
    kallsyms: dict = field(default_factory=dict)
    comms: dict = field(default_factory=dict)
    clock_list: str = "local [global] counter"
    uname: str = "Linux synthetic 6.1.0 x86_64"
    version: str = "3.1.6 datwriter"


def corner_contents(form: Form = LE64) -> Contents:
    """The hand-made files' formats (6.1 layout, exit first) and FUNCS."""
    entry_f, exit_f = corner_formats(form.long_size)
    syms = {func_address(n, form): n for n in FUNCS}
    syms[ETEXT if form.long_size == 8 else 0xc1000300] = "_etext"
    return Contents([exit_f, entry_f], kallsyms=syms)


def _sized(width: int, data: str | bytes, form: Form) -> bytes:
    b = data.encode() if isinstance(data, str) else data
    return form.num(len(b), width) + b


def _initial(form: Form) -> bytes:
    out = MAGIC + str(form.version).encode() + b"\0" + bytes([form.big_endian, form.long_size])
    out += form.num(PAGE, 4)
    if form.version == 7 and form.writer_34 and form.compression == "zstd":
        return out + b"zstd\x001.5.7\0"
    return out + (COMPRESSIONS[form.compression] if form.version == 7 else b"")


def _header_info(form: Form) -> bytes:
    return (b"header_page\0" + _sized(8, header_page_text(form), form) +
            b"header_event\0" + _sized(8, HEADER_EVENT, form))


def _ftrace_formats(c: Contents, form: Form) -> bytes:
    return form.num(len(c.ftrace), 4) + b"".join(_sized(8, f.text(), form) for f in c.ftrace)


def _event_formats(c: Contents, form: Form) -> bytes:
    if c.switch is None:
        return form.num(0, 4)
    return form.num(1, 4) + b"sched\0" + form.num(1, 4) + _sized(8, c.switch.text(), form)


def _kallsyms(c: Contents, form: Form) -> bytes:
    width = 2 * form.long_size
    return _sized(4, "".join(f"{a:0{width}x} T {n}\n" for a, n in sorted(c.kallsyms.items())), form)


def _cmdlines(c: Contents, form: Form) -> bytes:
    return _sized(8, "".join(f"{p} {n}\n" for p, n in sorted(c.comms.items())), form)


def _option(oid: int, data: bytes, form: Form) -> bytes:
    return form.num(oid, 2) + form.num(len(data), 4) + data


def _text_options(c: Contents, form: Form) -> bytes:
    return (_option(4, c.clock_list.encode() + b"\0", form) + _option(5, c.uname.encode() + b"\0", form) +
            _option(9, c.version.encode() + b"\0", form))


def compress(name: str, data: bytes) -> bytes:
    """data in one zstd frame that states its size (the zstd command, as
    trace-cmd's frames do) or in zlib's format (trace-cmd's zlib plugin)."""
    if name == "zlib":
        return zlib.compress(data)
    assert name == "zstd"
    with tempfile.NamedTemporaryFile() as t:  # a file: the frame states its size
        t.write(data)
        t.flush()
        return subprocess.run(["zstd", "-q", "-c", t.name], check=True, capture_output=True).stdout


def decompress(name: str, data: bytes) -> bytes:
    """zstd frames (any number, one after another) or one zlib stream."""
    if name == "none":
        return data
    if name == "zlib":
        return zlib.decompress(data)
    return subprocess.run(["zstd", "-q", "-d", "-c"], input=data, check=True, capture_output=True).stdout


def _pad_to_page(f) -> int:
    at = (f.tell() + PAGE - 1) // PAGE * PAGE
    f.write(bytes(at - f.tell()))
    return at


@dataclass
class Compressed:
    """A CPU's data given as chunks compressed already: (compressed bytes,
    size decompressed) each, written as they are (a chunk made once can be
    written a thousand times)."""
    chunks: list


def _chunks(cpu_pages, form: Form):
    """(compressed bytes, size decompressed) of each chunk of
    pages_per_chunk pages."""
    if isinstance(cpu_pages, Compressed):
        yield from cpu_pages.chunks
        return
    it = iter(cpu_pages)
    while chunk := b"".join(itertools.islice(it, form.pages_per_chunk)):
        yield compress(form.compression, chunk), len(chunk)


def _write_cpu_data(f, cpu_pages, form: Form) -> int:
    """One CPU's pages at the file's position: plain, or chunks of
    pages_per_chunk pages behind their count. Returns the size the file
    gives them (trace-cmd 3.1's leaves the chunk count out, 3.4's not)."""
    if form.compression == "none":
        n = 0
        for p in cpu_pages:
            f.write(p)
            n += len(p)
        return n
    count_at = f.tell()
    f.write(bytes(4))
    chunks = 0
    for z, size in _chunks(cpu_pages, form):
        f.write(form.num(len(z), 4) + form.num(size, 4) + z)
        chunks += 1
    end = f.tell()
    f.seek(count_at)
    f.write(form.num(chunks, 4))
    f.seek(end)
    return end - count_at - (0 if form.writer_34 else 4)


def _write_v6(f, c: Contents, cpus: list, form: Form) -> None:
    head = (_initial(form) + _header_info(form) + _ftrace_formats(c, form) + _event_formats(c, form) +
            _kallsyms(c, form) + _sized(4, "", form) + _cmdlines(c, form) + form.num(len(cpus), 4) +
            b"options  \0" + _text_options(c, form) + form.num(0, 2) + b"flyrecord\0")
    f.write(head)
    table_at = f.tell()
    f.write(bytes(16 * len(cpus)))
    table = []
    for cpu_pages in cpus:
        at = _pad_to_page(f)
        table.append((at, _write_cpu_data(f, cpu_pages, form)))
    f.seek(table_at)
    f.write(b"".join(form.num(at, 8) + form.num(size, 8) for at, size in table))


def _section(f, sid: int, payload: bytes, form: Form) -> int:
    """A section at the file's position (compressed, as trace-cmd does, when
    the file is); returns its offset."""
    at = f.tell()
    flags = 0
    if form.compression != "none":
        z = compress(form.compression, payload)
        payload = form.num(len(z), 4) + form.num(len(payload), 4) + z
        flags = 1
    f.write(form.num(sid, 2) + form.num(flags, 2) + form.num(0, 4) + form.num(len(payload), 8) + payload)
    return at


def _write_v7(f, c: Contents, cpus: list, form: Form) -> None:
    f.write(_initial(form))
    first_options = f.tell()
    f.write(bytes(8))
    refs = {16: _section(f, 16, _header_info(form), form),
            17: _section(f, 17, _ftrace_formats(c, form), form),
            18: _section(f, 18, _event_formats(c, form), form),
            19: _section(f, 19, _kallsyms(c, form), form),
            20: _section(f, 20, _sized(4, "", form), form),
            21: _section(f, 21, _cmdlines(c, form), form)}
    # the buffer section: its header, then page-aligned CPU data
    buf_at = f.tell()
    f.write(bytes(16))
    rows = []
    for cpu, cpu_pages in enumerate(cpus):
        at = _pad_to_page(f)
        rows.append(form.num(cpu, 4) + form.num(at, 8) + form.num(_write_cpu_data(f, cpu_pages, form), 8))
    end = f.tell()
    f.seek(buf_at)
    f.write(form.num(3, 2) + form.num(form.compression != "none", 2) + form.num(0, 4) +
            form.num(end - buf_at - 16, 8))
    f.seek(end)
    clock = c.clock_list.split("[")[1].split("]")[0]  # the one in use, as tracefs marks it
    buffer = (form.num(buf_at, 8) + b"\0" + clock.encode() + b"\0" + form.num(PAGE, 4) + form.num(len(cpus), 4) +
              b"".join(rows))
    opts = (b"".join(_option(o, form.num(at, 8), form) for o, at in refs.items()) +
            _text_options(c, form) + _option(8, form.num(len(cpus), 4), form) +
            _option(3, buffer, form) + _option(0, form.num(0, 8), form))
    opt_at = f.tell()
    f.write(form.num(0, 2) + form.num(0, 2) + form.num(0, 4) + form.num(len(opts), 8) + opts)
    f.seek(first_options)
    f.write(form.num(opt_at, 8))


def write_file(path: str, contents: Contents, cpus: list, form: Form = LE64) -> None:
    """A trace.dat of `form`: per CPU (0, 1, ...) an iterable of its pages,
    written as they come (or, compressed, its chunks: `Compressed`)."""
    with open(path, "wb") as f:
        (_write_v6 if form.version == 6 else _write_v7)(f, contents, cpus, form)


def write_v6(path: str, cpus: list[list[bytes]], form: Form = LE64) -> None:
    """A hand-made version 6 file: per CPU, its pages."""
    write_file(path, corner_contents(form), cpus, Form(6, "none", form.big_endian, form.long_size))


def write_v7(path: str, cpus: list[list[bytes]], compression: str = "none",
             pages_per_chunk: int = 10, form: Form = LE64, writer_34: bool = False) -> None:
    """A hand-made version 7 file: sections found through an options
    section; compressed (zstd, zlib: the sections and the CPU data in
    chunks) or not; laid out as trace-cmd 3.1 writes it, or 3.4."""
    write_file(path, corner_contents(form), cpus,
               Form(7, compression, form.big_endian, form.long_size, pages_per_chunk, writer_34))


def nested_call_pages(pid: int = 100, t0: int = 1_000_000, form: Form = LE64) -> list[bytes]:
    """svc_process > nfsd_dispatch > nfsd3_proc_write, on one page."""
    body = (record(0, entry(pid, "svc_process", 0, form), form) +
            record(100, entry(pid, "nfsd_dispatch", 1, form), form) +
            record(100, entry(pid, "nfsd3_proc_write", 2, form), form) +
            record(300, exit_(pid, "nfsd3_proc_write", 2, t0 + 200, t0 + 500, form=form), form) +
            record(100, exit_(pid, "nfsd_dispatch", 1, t0 + 100, t0 + 600, form=form), form) +
            record(100, exit_(pid, "svc_process", 0, t0, t0 + 700, form=form), form))
    return [page(t0, body, form=form)]


# ---- another compression for a version 7 file --------------------------------------

def _initial_of(data: bytes) -> tuple[Form, int, int]:
    """A version 7 file's form, where its initial header ends and its first
    options section's offset."""
    assert data[:10] == MAGIC and data[10:12] == b"7\0", "a version 7 trace.dat"
    big, long_size = data[12] == 1, data[13]
    at = 18
    name_end = data.index(b"\0", at)
    comp = data[at:name_end].decode()
    at = data.index(b"\0", name_end + 1) + 1
    form = Form(7, comp, big, long_size)
    return form, at, int.from_bytes(data[at:at + 8], form.byteorder)


def _section_at(data: bytes, off: int, form: Form) -> tuple[int, int, bytes]:
    """(id, flags, payload decompressed) of the section at off."""
    order = form.order
    sid, flags, _s, size = struct.unpack_from(order + "HHIQ", data, off)
    payload = data[off + 16:off + 16 + size]
    if flags & 1 and sid != 3:
        csize, _usize = struct.unpack_from(order + "II", payload)
        payload = decompress(form.compression, payload[8:8 + csize])
    return sid, flags, payload


def _options_of(data: bytes, first: int, form: Form) -> list[tuple[int, bytes]]:
    """Every option of the options chain, DONE left out."""
    out, off = [], first
    while off:
        _sid, _flags, body = _section_at(data, off, form)
        at, off = 0, 0
        while at < len(body):
            oid, size = struct.unpack_from(form.order + "HI", body, at)
            opt = body[at + 6:at + 6 + size]
            at += 6 + size
            if oid == 0:
                off = int.from_bytes(opt[:8], form.byteorder) if size >= 8 else 0
                break
            out.append((oid, opt))
    return out


def _cpu_pages(data: bytes, off: int, size: int, form: Form) -> list[bytes]:
    """One CPU's data as chunks of pages (one list item per chunk)."""
    if form.compression == "none":
        blob = data[off:off + size]
        return [blob[i:i + PAGE * form.pages_per_chunk] for i in range(0, len(blob), PAGE * form.pages_per_chunk)]
    count = int.from_bytes(data[off:off + 4], form.byteorder)
    at, frames, sizes = off + 4, [], []
    for _ in range(count):
        csize, usize = struct.unpack_from(form.order + "II", data, at)
        frames.append(data[at + 8:at + 8 + csize])
        sizes.append(usize)
        at += 8 + csize
    if form.compression == "zlib":
        return [zlib.decompress(z) for z in frames]
    whole = decompress("zstd", b"".join(frames))  # one run for every frame
    out, at = [], 0
    for n in sizes:
        out.append(whole[at:at + n])
        at += n
    assert at == len(whole)
    return out


def cpu_data(path: str) -> list[tuple[int, int, int]]:
    """A version 7 file's top buffer: (cpu, offset, size) of each CPU's data."""
    with open(path, "rb") as f:
        data = f.read()
    form, _end, first = _initial_of(data)
    for oid, opt in _options_of(data, first, form):
        if oid == 3 and opt[8] == 0:  # the top instance, named ""
            clock_end = opt.index(b"\0", 9)
            ncpu = int.from_bytes(opt[clock_end + 5:clock_end + 9], form.byteorder)
            return [struct.unpack_from(form.order + "IQQ", opt, clock_end + 9 + 20 * i) for i in range(ncpu)]
    return []


def recompress(src: str, dst: str, compression: str) -> None:
    """src (version 7) laid out again with `compression`: the same
    sections, options and pages, each chunk of pages compressed anew (the
    chunks keep their pages), the options gathered into one section."""
    with open(src, "rb") as f:
        data = f.read()
    old, _end, first = _initial_of(data)
    new = Form(7, compression, old.big_endian, old.long_size)
    options = _options_of(data, first, old)
    with open(dst, "wb") as f:
        f.write(_initial(new))
        first_options = f.tell()
        f.write(bytes(8))
        kept = []
        for oid, opt in options:
            if 16 <= oid <= 21:
                sid, _flags, payload = _section_at(data, int.from_bytes(opt[:8], old.byteorder), old)
                kept.append((oid, new.num(_section(f, sid, payload, new), 8)))
            elif oid == 3:
                kept.append((oid, _rewrite_buffer(f, data, opt, old, new)))
            else:
                kept.append((oid, opt))
        opts = b"".join(_option(o, d, new) for o, d in kept) + _option(0, new.num(0, 8), new)
        opt_at = f.tell()
        f.write(new.num(0, 2) + new.num(0, 2) + new.num(0, 4) + new.num(len(opts), 8) + opts)
        f.seek(first_options)
        f.write(new.num(opt_at, 8))


def _rewrite_buffer(f, data: bytes, opt: bytes, old: Form, new: Form) -> bytes:
    """A BUFFER option's flyrecord section written again; its new option data."""
    num = lambda b: int.from_bytes(b, old.byteorder)  # noqa: E731 (one line)
    name_end = opt.index(b"\0", 8)
    clock_end = opt.index(b"\0", name_end + 1)
    head = opt[8:clock_end + 1]
    page_size, ncpu = num(opt[clock_end + 1:clock_end + 5]), num(opt[clock_end + 5:clock_end + 9])
    rows_at = clock_end + 9
    buf_at = f.tell()
    f.write(bytes(16))
    rows = []
    for i in range(ncpu):
        cpu, off, size = struct.unpack_from(old.order + "IQQ", opt, rows_at + 20 * i)
        chunks = _cpu_pages(data, off, size, old)
        at = _pad_to_page(f)
        size = _write_cpu_data(f, chunks, Form(7, new.compression, new.big_endian, new.long_size, 1))
        rows.append(new.num(cpu, 4) + new.num(at, 8) + new.num(size, 8))
    end = f.tell()
    f.seek(buf_at)
    f.write(new.num(3, 2) + new.num(new.compression != "none", 2) + new.num(0, 4) +
            new.num(end - buf_at - 16, 8))
    f.seek(end)
    return new.num(buf_at, 8) + head + new.num(page_size, 4) + new.num(ncpu, 4) + b"".join(rows)


# ---- generated traces ----------------------------------------------------------

@dataclass
class Trace:
    """What a trace.dat holds: formats, symbols, task names, and per CPU
    an iterable of (ts, event bytes) in time order, and the file's form."""
    entry: EventFormat
    exit: EventFormat
    switch: EventFormat = field(default_factory=sched_switch_format)
    kallsyms: dict = field(default_factory=dict)   # address -> name
    comms: dict = field(default_factory=dict)      # pid -> comm
    cpus: dict = field(default_factory=dict)       # cpu -> iterable of (ts, bytes)
    plan: PagePlan = field(default_factory=PagePlan)
    lost: dict = field(default_factory=dict)       # cpu -> [missed per flagged page] (after write)
    form: Form = LE64


def write(t: Trace, path: str) -> None:
    """Lay the trace out in its form, each CPU's pages cut by its plan;
    t.lost gets the missed-events count flagged on each page."""
    ncpu = max(t.cpus) + 1 if t.cpus else 1

    def cpu_pages(cpu):
        plan = PagePlan(**{**t.plan.__dict__, "seed": t.plan.seed * 1000 + cpu})
        t.lost[cpu] = []
        for pg, missed in pages(t.cpus.get(cpu, ()), plan, t.form):
            if missed:
                t.lost[cpu].append(missed)
            yield pg

    contents = Contents([t.entry, t.exit], t.switch, t.kallsyms, t.comms)
    write_file(path, contents, [cpu_pages(cpu) for cpu in range(ncpu)], t.form)


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
    the tally of what was written, the task, the deepest level, the form."""
    entry: EventFormat
    exit: EventFormat
    funcs: dict
    evs: list
    written: Written
    pid: int
    max_depth: int
    form: Form = LE64


def _call(rng: random.Random, c: Call, depth: int, ts: int) -> int:
    """One complete call at `depth` from `ts` with 0-2 callees each level
    down: its entry and exit events appended, the time after it returned."""
    a = rng.choice(sorted(c.funcs))
    start = ts
    c.evs.append((ts, c.entry.pack({"func": a, "depth": depth}, pid=c.pid, form=c.form)))
    c.written.entries += 1
    ts += rng.randrange(50, 2000)
    if depth < c.max_depth:
        for _ in range(rng.randrange(0, 3)):
            ts = _call(rng, c, depth + 1, ts) + rng.randrange(10, 500)
    c.evs.append((ts, c.exit.pack({"func": a, "depth": depth, "calltime": start,
                                   "rettime": ts, "retval": 0}, pid=c.pid, form=c.form)))
    c.written.exits += 1
    name = c.funcs[a]
    c.written.calls[name] = c.written.calls.get(name, 0) + 1
    c.written.incl_ns[name] = c.written.incl_ns.get(name, 0) + ts - start
    return ts + rng.randrange(10, 500)


def random_trace(rng: random.Random, ncpu: int = 2, roots: int = 20, max_depth: int = 6,
                 nfuncs: int = 12, long_gaps: bool = True, plan: PagePlan | None = None,
                 switches: bool = True, form: Form = LE64) -> tuple[Trace, Written]:
    """Complete call trees of a few tasks per CPU (every entry has its exit,
    nothing nested across a task switch), with time gaps long enough for time
    extends when `long_gaps`; what was written is returned beside the trace."""
    entry_f, exit_f = graph_formats(rng, form.long_size)
    switch = sched_switch_format(rng.choice([319, 300, 1000]), form.long_size)
    base = 0xFFFFFFFF81000000 if form.long_size == 8 else 0xC1000000
    funcs = {base + 0x100 * i: f"func_{i}" for i in range(nfuncs)}
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
                                             "next_prio": 120}, pid=current, form=form)))
                written.switches += 1
                current = nxt
                ts += rng.randrange(100, 3000)

            ts = _call(rng, Call(entry_f, exit_f, funcs, evs, written, current, max_depth, form), 0, ts)
            ts += rng.choice([rng.randrange(100, 10_000), 1 << 28]) if long_gaps else rng.randrange(100, 10_000)
        cpus[cpu] = evs
    return Trace(entry_f, exit_f, switch, funcs, comms, cpus, plan or PagePlan(), form=form), written


# ---- the fuzzer's seeds --------------------------------------------------------

SEED_FORMS = [Form(6), Form(7), Form(7, "zstd"), Form(7, "zlib"), Form(6, big_endian=True),
              Form(7, "zstd", long_size=4), Form(7, "none", big_endian=True, long_size=4)]


def seeds(out_dir: str) -> None:
    """The fuzzer's seeds: the same calls in every form this writer has."""
    os.makedirs(out_dir, exist_ok=True)
    for form in SEED_FORMS:
        two_cpus = [nested_call_pages(100, form=form), nested_call_pages(200, 1_000_050, form=form)]
        write_file(os.path.join(out_dir, form.name + ".dat"), corner_contents(form), two_cpus, form)


if __name__ == "__main__":
    seeds(sys.argv[1])
