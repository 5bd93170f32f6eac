#!/usr/bin/env python3
"""A corpus of damaged trace.dat files, made from real ones at test time
(issue 19): truncations, byte flips and absurd sizes in every section of the
file, located by reading the file's own structure (trace-cmd.dat.v6(5),
trace-cmd.dat.v7(5)), never by fixed offsets.

    tests/helpers/damage.py OUT_DIR SOURCE.dat... [--count N] [--seed S]

writes OUT_DIR/<name>.dat and OUT_DIR/manifest.json (one entry per file: the
source, the section, what was done, at which byte offset). Importable:
layout(data) lists a file's regions, damages(data, n, rng) picks damages,
make_corpus() writes them. Deterministic for a given seed and sources.

The sources come in three forms from one real recording (trace-cmd convert):
v6 (never compressed), v7 uncompressed and v7 zstd, so that page headers and
commit fields are reachable (uncompressed) and compressed chunk headers and
chunk bytes too (zstd).
"""
from __future__ import annotations

import json
import os
import random
import shutil
import struct
import subprocess
import sys
from dataclasses import asdict, dataclass

MAGIC = b"\x17\x08\x44tracing"

# v7 option ids (trace-cmd.dat.v7(5), "OPTIONS SECTION"); v6 shares them
OPT_DONE, OPT_BUFFER, OPT_CPUCOUNT = 0, 3, 8
SECTION_NAMES = {0: "options", 16: "header_info", 17: "ftrace_formats", 18: "event_formats",
                 19: "kallsyms", 20: "printk", 21: "cmdlines", 15: "strings"}
OPTION_SECTIONS = {16: 16, 17: 17, 18: 18, 19: 19, 20: 20, 21: 21}  # option id -> section id it points at


@dataclass(frozen=True)
class Region:
    """A byte range of the file: its section (header_page, kallsyms, ...), what
    it is (a size or offset field, text, page data), its offset and length.
    `field` regions hold one integer of `size` bytes (absurd values go there)."""
    section: str
    what: str
    offset: int
    size: int
    field: bool = False


@dataclass(frozen=True)
class Damage:
    name: str      # file name in the corpus
    source: str    # the undamaged file
    form: str      # v6, v7 or v7-zstd
    section: str
    what: str
    action: str    # truncate, flip, absurd, zero
    offset: int
    detail: str    # the mask, the value written, the length zeroed
    # the data lost with this damage is known to be detectable from the file's
    # own declared sizes: an exit 0 must say something was skipped
    must_count: bool


class Cursor:
    """Reads little- or big-endian integers and strings from `data`, raising
    ValueError past the end (the undamaged sources are always well formed)."""

    def __init__(self, data: bytes, pos: int = 0, endian: str = "<"):
        self.data, self.pos, self.endian = data, pos, endian

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"read of {n} bytes at {self.pos} past the end ({len(self.data)})")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def uint(self, n: int) -> int:
        return struct.unpack(self.endian + {2: "H", 4: "I", 8: "Q"}[n], self.take(n))[0]

    def cstr(self) -> bytes:
        end = self.data.index(b"\0", self.pos)
        s = self.data[self.pos:end]
        self.pos = end + 1
        return s


def _field(regions, c: Cursor, section: str, what: str, n: int) -> int:
    regions.append(Region(section, what, c.pos, n, field=True))
    return c.uint(n)


def _sized_text(regions, c: Cursor, section: str, what: str, width: int) -> None:
    size = _field(regions, c, section, what + " size", width)
    regions.append(Region(section, what, c.pos, size))
    c.take(size)


def _head(regions, c: Cursor) -> tuple[int, int]:
    """Magic, version, endianness, long size, page size: (version, page size)."""
    regions.append(Region("file_header", "magic", 0, len(MAGIC)))
    c.take(len(MAGIC))
    at = c.pos
    version = int(c.cstr())
    regions.append(Region("file_header", "version string", at, c.pos - at))
    regions.append(Region("file_header", "endianness", c.pos, 1))
    c.endian = ">" if c.take(1)[0] else "<"
    regions.append(Region("file_header", "long size", c.pos, 1))
    c.take(1)
    return version, _field(regions, c, "file_header", "page size", 4)


def _header_info(regions, c: Cursor) -> None:
    for name in (b"header_page", b"header_event"):
        regions.append(Region(name.decode(), "name", c.pos, len(name) + 1))
        c.take(len(name) + 1)
        _sized_text(regions, c, name.decode(), "format text", 8)


def _ftrace_formats(regions, c: Cursor) -> None:
    for i in range(_field(regions, c, "ftrace_formats", "count", 4)):
        _sized_text(regions, c, "ftrace_formats", f"format {i}", 8)


def _event_formats(regions, c: Cursor) -> None:
    for _ in range(_field(regions, c, "event_formats", "systems", 4)):
        system = c.cstr().decode()
        for i in range(_field(regions, c, "event_formats", f"{system} count", 4)):
            _sized_text(regions, c, "event_formats", f"{system} format {i}", 8)


def _pages(regions, data: bytes, section: str, start: int, size: int, page: int, long_size: int) -> None:
    """Each ring-buffer page's header: its time stamp and its commit field
    (the data length, with the missed-events flags in its top bits)."""
    for at in range(start, min(start + size, len(data)), page):
        regions.append(Region(section, "page time stamp", at, 8, field=True))
        regions.append(Region(section, "page commit", at + 8, long_size, field=True))
        regions.append(Region(section, "page data", at + 8 + long_size, page - 8 - long_size))


def _chunks(regions, data: bytes, endian: str, section: str, start: int) -> None:
    """A compressed CPU stream: a chunk count, then per chunk its compressed
    and uncompressed sizes and the compressed bytes."""
    c = Cursor(data, start, endian)
    for i in range(_field(regions, c, section, "chunk count", 4)):
        comp = _field(regions, c, section, f"chunk {i} compressed size", 4)
        _field(regions, c, section, f"chunk {i} uncompressed size", 4)
        regions.append(Region(section, f"chunk {i} compressed bytes", c.pos, comp))
        c.take(comp)


def _v6(regions, c: Cursor, page: int) -> list[tuple[int, int, int]]:
    _header_info(regions, c)
    _ftrace_formats(regions, c)
    _event_formats(regions, c)
    _sized_text(regions, c, "kallsyms", "text", 4)
    _sized_text(regions, c, "printk", "text", 4)
    _sized_text(regions, c, "cmdlines", "text", 8)
    cpus = _field(regions, c, "flyrecord", "cpu count", 4)
    label = c.take(10)
    if label == b"options  \0":
        while True:
            oid = _field(regions, c, "options", "option id", 2)
            if oid == OPT_DONE:
                break
            _sized_text(regions, c, "options", f"option {oid}", 4)
        label = c.take(10)
    if label != b"flyrecord\0":
        raise ValueError(f"not a flyrecord file: {label!r}")
    streams = []
    for cpu in range(cpus):
        off = _field(regions, c, "flyrecord", f"cpu {cpu} offset", 8)
        size = _field(regions, c, "flyrecord", f"cpu {cpu} size", 8)
        streams.append((cpu, off, size))
    return streams


def _section_header(regions, c: Cursor, name: str) -> tuple[int, int, int]:
    """(id, flags, size) of a v7 section header at c, regions noted."""
    sid = _field(regions, c, name, "section id", 2)
    flags = _field(regions, c, name, "section flags", 2)
    _field(regions, c, name, "section string id", 4)
    size = _field(regions, c, name, "section size", 8)
    return sid, flags, size


def _v7(regions, data: bytes, c: Cursor, page: int, long_size: int):
    at = c.pos
    compression = c.cstr()
    c.cstr()
    regions.append(Region("file_header", "compression name", at, c.pos - at))
    next_options = _field(regions, c, "file_header", "first options offset", 8)
    sections: dict[int, int] = {}
    buffers = []
    seen = set()
    while next_options and next_options not in seen:
        seen.add(next_options)
        c.pos = next_options
        _sid, flags, size = _section_header(regions, c, "options")
        if flags & 1:  # a compressed options section: its compression header only
            _field(regions, c, "options", "compressed size", 4)
            _field(regions, c, "options", "uncompressed size", 4)
            regions.append(Region("options", "compressed bytes", c.pos, size - 8))
            break
        next_options = 0
        while True:
            oid = _field(regions, c, "options", "option id", 2)
            osize = _field(regions, c, "options", f"option {oid} size", 4)
            body = c.pos
            if oid == OPT_DONE:
                next_options = _field(regions, c, "options", "next options offset", 8)
                break
            if oid in OPTION_SECTIONS:
                sections[OPTION_SECTIONS[oid]] = _field(regions, c, "options", f"option {oid} offset", 8)
            elif oid == OPT_BUFFER:
                boff = _field(regions, c, "buffer_option", "flyrecord offset", 8)
                c.cstr(), c.cstr()
                _field(regions, c, "buffer_option", "page size", 4)
                streams = []
                for i in range(_field(regions, c, "buffer_option", "cpu count", 4)):
                    cpu = _field(regions, c, "buffer_option", f"cpu {i} id", 4)
                    off = _field(regions, c, "buffer_option", f"cpu {cpu} offset", 8)
                    sz = _field(regions, c, "buffer_option", f"cpu {cpu} size", 8)
                    streams.append((cpu, off, sz))
                buffers.append((boff, streams))
            else:
                regions.append(Region("options", f"option {oid} data", body, osize))
            c.pos = body + osize
    for sid, off in sorted(sections.items()):
        name = SECTION_NAMES.get(sid, f"section {sid}")
        c.pos = off
        _sid, flags, size = _section_header(regions, c, name)
        if flags & 1:
            _field(regions, c, name, "compressed size", 4)
            _field(regions, c, name, "uncompressed size", 4)
            regions.append(Region(name, "compressed bytes", c.pos, size - 8))
            continue
        body = Cursor(data, c.pos, c.endian)
        parse = {16: _header_info, 17: _ftrace_formats, 18: _event_formats,
                 19: lambda r, cc: _sized_text(r, cc, "kallsyms", "text", 4),
                 20: lambda r, cc: _sized_text(r, cc, "printk", "text", 4),
                 21: lambda r, cc: _sized_text(r, cc, "cmdlines", "text", 8)}.get(sid)
        if parse:
            parse(regions, body)
    streams = []
    for boff, cpus in buffers:
        c.pos = boff
        _section_header(regions, c, "flyrecord")
        streams += cpus
    return compression, streams


def layout(data: bytes) -> tuple[dict, list[Region]]:
    """The regions of a trace.dat file (v6 or v7, compressed or not) and a
    summary: version, compression, page size, per-CPU streams."""
    regions: list[Region] = []
    if not data.startswith(MAGIC):
        raise ValueError("not a trace.dat file")
    c = Cursor(data)
    version, page = _head(regions, c)
    long_size = data[c.pos - 5]
    compression = b"none"
    if version >= 7:
        compression, streams = _v7(regions, data, c, page, long_size)
    else:
        streams = _v6(regions, c, page)
    compressed = compression not in (b"none", b"")
    for cpu, off, size in streams:
        if compressed:
            _chunks(regions, data, c.endian, f"cpu {cpu} data", off)
        else:
            _pages(regions, data, f"cpu {cpu} data", off, size, page, long_size)
    summary = {"version": version, "compression": compression.decode(), "page_size": page,
               "long_size": long_size, "endian": c.endian, "streams": streams}
    return summary, regions


# ---- damages -----------------------------------------------------------------

ABSURD = (0, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFF,
          0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF)


def _absurd_bytes(region: Region, value: int, endian: str) -> bytes:
    value &= (1 << (8 * region.size)) - 1
    return value.to_bytes(region.size, "little" if endian == "<" else "big")


def apply(data: bytes, d: Damage, endian: str = "<") -> bytes:
    """The damaged copy of `data` for one damage."""
    b = bytearray(data)
    if d.action == "truncate":
        return bytes(b[:d.offset])
    if d.action == "flip":
        b[d.offset] ^= int(d.detail, 16)
    elif d.action == "absurd":
        size, value = (int(x, 0) for x in d.detail.split(":"))
        b[d.offset:d.offset + size] = _absurd_bytes(Region("", "", d.offset, size), value, endian)
    elif d.action == "zero":
        b[d.offset:d.offset + int(d.detail)] = bytes(int(d.detail))
    elif d.action == "format-offset":
        return _format_offset(bytes(b), d.offset, d.detail, endian)
    return bytes(b)


def _format_offset(data: bytes, text_at: int, edit: str, endian: str) -> bytes:
    """A v6 file whose event format text at `text_at` (after its 8-byte
    size) has `old=>new` applied once: the text's size is fixed, and the
    padding before the CPU data absorbs the longer text, so every offset in
    the file still holds (v6 only: v7 sections point at each other)."""
    old, new = (x.encode() for x in edit.split("=>"))
    fmt = "<Q" if endian == "<" else ">Q"
    size = struct.unpack_from(fmt, data, text_at - 8)[0]
    text = data[text_at:text_at + size]
    assert old in text, (old, text[:80])
    grown = len(new) - len(old)
    text = text.replace(old, new, 1)
    summary, regions = layout(data)
    first_data = min(off for _c, off, sz in summary["streams"])
    pad_from = max(r.offset + r.size for r in regions if r.offset < first_data)
    assert first_data - pad_from >= grown, "no room in the padding before the CPU data"
    out = (data[:text_at - 8] + struct.pack(fmt, len(text)) + text
           + data[text_at + size:pad_from] + data[pad_from + grown:])
    assert len(out) == len(data)
    return out


def _kind(label: str) -> str:
    """A region's label without its numbers and names: "cpu 1 offset" and
    "cpu 0 offset" are one kind, as are "sched format 3" and "irq format 0"."""
    words = [w for w in label.split(" ") if not w.isdigit()]
    if len(words) > 1 and words[1] in ("format", "count"):
        words = words[1:]
    return " ".join(words)


def damages(source: str, stem: str, form: str, data: bytes, n: int,
            rng: random.Random) -> list[Damage]:
    """n damages of one file: every section gets at least one of each kind
    that fits it (flips in every region kind, absurd values in every
    integer field kind), the rest at random; truncations spread over the
    whole file; and the two that went unnoticed (issue 19): CPU 0's pages
    zeroed, one byte of a zstd chunk flipped."""
    summary, regions = layout(data)
    out: list[Damage] = []

    def add(section, what, action, offset, detail, must_count):
        name = f"{stem}-{len(out):03d}-{action}-{section.replace(' ', '')}.dat"
        out.append(Damage(name, source, form, section, what, action, offset, detail, must_count))

    # one region of each (section, kind of region) first, so that every
    # section and every kind of field is hit; then sections at random (not
    # regions: the event formats alone are most of the regions)
    kinds: dict[tuple[str, str, bool], list[Region]] = {}
    for r in regions:
        kinds.setdefault((_kind(r.section), _kind(r.what), r.field), []).append(r)
    picks = [rng.choice(rs) for _k, rs in sorted(kinds.items())]
    sections: dict[str, list[Region]] = {}
    for r in regions:
        sections.setdefault(_kind(r.section), []).append(r)
    names = sorted(sections)
    while len(picks) < n * 3 // 4:
        picks.append(rng.choice(sections[rng.choice(names)]))
    for r in picks:
        if r.size <= 0:
            continue
        if r.field and rng.random() < 0.6:
            value = rng.choice(ABSURD)
            add(r.section, r.what, "absurd", r.offset, f"{r.size}:{value:#x}", must_count=False)
        else:
            at = r.offset + rng.randrange(r.size)
            add(r.section, r.what, "flip", at, f"{1 << rng.randrange(8):#04x}", must_count=False)
    # truncations: the header's own fields, then anywhere
    ends = sorted({r.offset + rng.randrange(max(1, r.size)) for r in rng.sample(regions, min(len(regions), 12))})
    ends += sorted(rng.randrange(1, len(data)) for _ in range(max(0, n - len(out) - 2 - len(ends))))
    for at in ends:
        section = next((r.section for r in reversed(regions) if r.offset <= at), "file_header")
        add(section, "truncated here", "truncate", at, "", must_count=True)
    # the damage that went unnoticed: CPU 0's data zeroed; a zstd chunk byte
    cpu0 = [s for s in summary["streams"] if s[0] == 0 and s[2] > 0]
    if cpu0 and summary["compression"] == "none":
        _cpu, off, size = cpu0[0]
        add("cpu 0 data", "all pages", "zero", off, str(size), must_count=True)
    # the named cases of issue 19: a v6 header claiming 16,777,215 CPUs; a
    # format field at offset 2147483647 (int overflow in a bounds check)
    if summary["version"] == 6:
        cpus = next(r for r in regions if r.what == "cpu count")
        add(cpus.section, cpus.what, "absurd", cpus.offset, "4:0xffffff", must_count=False)
        entry = next(r for r in regions if r.section == "ftrace_formats" and not r.field
                     and b"name: funcgraph_entry\n" in data[r.offset:r.offset + r.size])
        add("ftrace_formats", "funcgraph_entry func offset", "format-offset", entry.offset,
            "func;\toffset:8;=>func;\toffset:2147483647;", must_count=False)
    chunk_bytes = [r for r in regions if r.what.endswith("compressed bytes") and r.section.startswith("cpu")]
    if chunk_bytes:
        r = rng.choice(chunk_bytes)
        add(r.section, r.what, "flip", r.offset + rng.randrange(r.size), "0x10", must_count=True)
    return out


# ---- damaged call times ----------------------------------------------------------
# Damage the corpus's byte flips reach rarely: one exit's calltime, or the
# exit format's calltime and rettime fields (issue 31). The exit is found by
# its calltime's bytes, which occur once in the uncompressed CPU data.

def patch_once(data: bytes, old: bytes, new: bytes) -> bytes:
    """`data` with the one occurrence of `old` replaced by `new` (same length)."""
    assert len(old) == len(new) and data.count(old) == 1, (old, data.count(old))
    return data.replace(old, new)


def exit_calltime(data: bytes, calltime: int, new: int, endian: str = "<") -> bytes:
    """An uncompressed trace.dat whose exit with `calltime` has calltime `new`."""
    return patch_once(data, struct.pack(endian + "Q", calltime), struct.pack(endian + "Q", new))


def exit_shifted(data: bytes, calltime: int, rettime: int, shift: int, endian: str = "<") -> bytes:
    """An uncompressed trace.dat whose exit with `calltime` and `rettime` has
    both moved by `shift` ns: its duration unchanged, its place in time not."""
    return exit_calltime(exit_calltime(data, calltime, calltime + shift, endian), rettime, rettime + shift, endian)


def pages_dropped(data: bytes, cpu: int = 0, keep: float = 0.5) -> bytes:
    """An uncompressed trace.dat whose CPU `cpu` data section is cut to
    its first `keep` of pages, its size field saying so: the pages after
    are gone with nothing in the data to show it (no cut page, no
    missed-events mark); only the recording's statistics (CPUSTAT) can."""
    summary, regions = layout(data)
    page = summary["page_size"]
    size = next(size for c, _, size in summary["streams"] if c == cpu)
    field = next(r for r in regions if r.field and r.what == f"cpu {cpu} size")
    new = (int(size * keep) // page) * page
    b = bytearray(data)
    b[field.offset:field.offset + field.size] = new.to_bytes(field.size, "little" if summary["endian"] == "<" else "big")
    return bytes(b)


def exit_format(data: bytes, *edits: str) -> bytes:
    """A v6 trace.dat whose funcgraph_exit format has each `old=>new` applied
    (_format_offset: every offset in the file still holds)."""
    for edit in edits:
        _summary, regions = layout(data)
        text = next(r for r in regions if r.section == "ftrace_formats" and not r.field
                    and b"name: funcgraph_exit\n" in data[r.offset:r.offset + r.size])
        data = _format_offset(data, text.offset, edit, "<")
    return data


# ---- sources and the corpus ---------------------------------------------------

FORMS = {"v6": ["--file-version", "6", "--compression", "none"],
         "v7": ["--file-version", "7", "--compression", "none"],
         "v7-zstd": ["--file-version", "7", "--compression", "zstd"]}


def convert(source: str, form: str, out: str) -> str:
    """`source` rewritten by trace-cmd convert in one of FORMS."""
    subprocess.run(["trace-cmd", "convert", "-i", source, *FORMS[form], "-o", out],
                   check=True, capture_output=True, timeout=120)
    return out


def make_corpus(out_dir: str, sources: list[str], per_form: int = 40, seed: int = 19,
                write: bool = True) -> list[dict]:
    """Each source in each form with `per_form` damages; returns the manifest
    (also written to out_dir/manifest.json). The undamaged converted copies
    are kept in out_dir/undamaged/; with write=False the damaged files are
    not written yet (write_damaged() makes one when it is needed: the whole
    corpus is about 500 MB)."""
    os.makedirs(os.path.join(out_dir, "undamaged"), exist_ok=True)
    rng = random.Random(seed)
    manifest = []
    for source in sources:
        for form in FORMS:
            stem = f"{os.path.basename(os.path.dirname(source))}-{form}"
            clean = convert(source, form, os.path.join(out_dir, "undamaged", stem + ".dat"))
            data = open(clean, "rb").read()
            for d in damages(clean, stem, form, data, per_form, rng):
                entry = {**asdict(d), "path": os.path.join(out_dir, d.name), "undamaged": clean}
                manifest.append(entry)
                if write:
                    write_damaged(entry, data)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return manifest


def write_damaged(entry: dict, data: bytes | None = None) -> str:
    """Write one manifest entry's damaged file (from its undamaged copy)."""
    if data is None:
        with open(entry["undamaged"], "rb") as f:
            data = f.read()
    d = Damage(**{k: entry[k] for k in Damage.__dataclass_fields__})
    with open(entry["path"], "wb") as f:
        f.write(apply(data, d, layout(data)[0]["endian"]))
    return entry["path"]


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("sources", nargs="+")
    ap.add_argument("--count", type=int, default=40, help="damages per source and form (default 40)")
    ap.add_argument("--seed", type=int, default=19)
    a = ap.parse_args(argv)
    if not shutil.which("trace-cmd"):
        print("damage.py: trace-cmd not found (make setup installs it)", file=sys.stderr)
        return 2
    manifest = make_corpus(a.out_dir, a.sources, a.count, a.seed)
    print(f"{len(manifest)} damaged files in {a.out_dir} (manifest.json)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
