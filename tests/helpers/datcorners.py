"""Small hand-made trace.dat files, written by the format's own rules
(trace-cmd.dat.v6(5), trace-cmd.dat.v7(5), the kernel's ring-buffer page):
one named situation each (time extends, padding, missed-events marks), and
the fuzzer's seeds (`make fuzz`: python tests/helpers/datwriter.py DIR).

Events are function_graph entries/exits of the 6.1 layout; kallsyms names
the functions at FUNCS' addresses.
"""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import tempfile
import zlib

PAGE = 4096
HEADER_PAGE = (b"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
               b"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
               b"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
               b"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n")
HEADER_EVENT = (b"# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n"
                b"\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n"
                b"\ttime_stamp : type == 31\n\tdata max type_len  == 28\n")
COMMON = (b"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
          b"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
          b"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
          b"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n")
EXIT_ID, ENTRY_ID = 10, 11
FORMATS = [
    b"name: funcgraph_exit\nID: 10\nformat:\n" + COMMON +
    b"\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n"
    b"\tfield:int depth;\toffset:16;\tsize:4;\tsigned:1;\n"
    b"\tfield:unsigned int overrun;\toffset:20;\tsize:4;\tsigned:0;\n"
    b"\tfield:unsigned long long calltime;\toffset:24;\tsize:8;\tsigned:0;\n"
    b"\tfield:unsigned long long rettime;\toffset:32;\tsize:8;\tsigned:0;\n\n"
    b"print fmt: \"<-- %ps (%d)\", (void *)REC->func, REC->depth\n",
    b"name: funcgraph_entry\nID: 11\nformat:\n" + COMMON +
    b"\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n"
    b"\tfield:int depth;\toffset:16;\tsize:4;\tsigned:1;\n\n"
    b"print fmt: \"--> %ps (%d)\", (void *)REC->func, REC->depth\n",
]
FUNCS = {"svc_process": 0xffffffff81000000, "nfsd_dispatch": 0xffffffff81000100,
         "nfsd3_proc_write": 0xffffffff81000200}
KALLSYMS = "".join(f"{a:016x} T {n}\n" for n, a in sorted(FUNCS.items(), key=lambda x: x[1]))
KALLSYMS += "ffffffff81000300 T _etext\n"


def entry(pid: int, func: str, depth: int) -> bytes:
    return struct.pack("<HBBiQi", ENTRY_ID, 0, 0, pid, FUNCS[func], depth) + b"\0" * 4


def exit_(pid: int, func: str, depth: int, calltime: int, rettime: int, overrun: int = 0) -> bytes:
    return struct.pack("<HBBiQiIQQ", EXIT_ID, 0, 0, pid, FUNCS[func], depth, overrun, calltime, rettime)


def record(delta: int, payload: bytes) -> bytes:
    """A data record: type_len = words (<= 28), or 0 with the length word."""
    assert len(payload) % 4 == 0 and 0 <= delta < 1 << 27
    words = len(payload) // 4
    if 0 < words <= 28:
        return struct.pack("<I", words | delta << 5) + payload
    return struct.pack("<II", delta << 5, len(payload) + 4) + payload


def time_extend(delta: int) -> bytes:
    return struct.pack("<II", 30 | (delta & ((1 << 27) - 1)) << 5, delta >> 27)


def padding(delta: int, length: int) -> bytes:
    """A discarded record (delta > 0) of `length` bytes after its header."""
    return struct.pack("<II", 29 | delta << 5, length) + b"\0" * (length - 4)


def page(ts: int, body: bytes, missed: int | None = None) -> bytes:
    """A ring-buffer page: missed=-1 marks lost events of unknown count, a
    count >= 0 is stored after the records."""
    commit = len(body)
    tail = b""
    if missed is not None:
        commit |= 1 << 31
        if missed >= 0:
            commit |= 1 << 30
            tail = struct.pack("<Q", missed)
    out = struct.pack("<QQ", ts, commit) + body + tail
    assert len(out) <= PAGE
    return out + b"\0" * (PAGE - len(out))


def _initial(version: int, comp: bytes = b"") -> bytes:
    return b"\x17\x08\x44tracing" + str(version).encode() + b"\0" + bytes([0, 8]) + \
        struct.pack("<I", PAGE) + comp


def _formats_blob() -> bytes:
    return struct.pack("<I", len(FORMATS)) + b"".join(struct.pack("<Q", len(f)) + f for f in FORMATS)


def _headers_blob() -> bytes:
    return (b"header_page\0" + struct.pack("<Q", len(HEADER_PAGE)) + HEADER_PAGE +
            b"header_event\0" + struct.pack("<Q", len(HEADER_EVENT)) + HEADER_EVENT)


def _option(oid: int, data: bytes) -> bytes:
    return struct.pack("<HI", oid, len(data)) + data


def _pad_to_page(n: int) -> int:
    return (n + PAGE - 1) // PAGE * PAGE


def write_v6(path: str, cpus: list[list[bytes]]) -> None:
    """cpus: per CPU, its pages."""
    ks = KALLSYMS.encode()
    head = (_initial(6) + _headers_blob() + _formats_blob() + struct.pack("<I", 0) +
            struct.pack("<I", len(ks)) + ks + struct.pack("<I", 0) + struct.pack("<Q", 0) +
            struct.pack("<I", len(cpus)) + b"options  \0" +
            _option(4, b"local [global] counter\0") + _option(5, b"Linux synthetic 6.1.0 x86_64\0") +
            _option(9, b"3.1.6 datcorners\0") + struct.pack("<H", 0) + b"flyrecord\0")
    table_end = len(head) + 16 * len(cpus)
    at = _pad_to_page(table_end)
    table, data = b"", b""
    for pages in cpus:
        blob = b"".join(pages)
        table += struct.pack("<QQ", at + len(data), len(blob))
        data += blob
    with open(path, "wb") as f:
        f.write(head + table + b"\0" * (at - table_end) + data)


def _zstd(data: bytes) -> bytes:
    with tempfile.NamedTemporaryFile() as t:  # a file: the frame states its size
        t.write(data)
        t.flush()
        return subprocess.run(["zstd", "-q", "-c", t.name], check=True, capture_output=True).stdout


def write_v7(path: str, cpus: list[list[bytes]], compression: str = "none",
             pages_per_chunk: int = 10) -> None:
    """Version 7: sections found through an options section; compressed
    (zstd, zlib) or not. Sections are written uncompressed; the CPU data in
    chunks when compressed."""
    comp = {"zstd": b"zstd\x001.5.4\0", "zlib": b"zlib\x001.2.13\0"}.get(compression, b"none\0\0")
    packs = {"zstd": _zstd, "zlib": zlib.compress}
    out = bytearray(_initial(7, comp))
    first_options_at = len(out)
    out += b"\0" * 8

    def section(sid: int, payload: bytes) -> int:
        at = len(out)
        out.extend(struct.pack("<HHIQ", sid, 0, 0, len(payload)) + payload)
        return at

    ks = KALLSYMS.encode()
    refs = {16: section(16, _headers_blob()), 17: section(17, _formats_blob()),
            18: section(18, struct.pack("<I", 0)), 19: section(19, struct.pack("<I", len(ks)) + ks)}
    # the buffer section header, then page-aligned CPU data
    buf_at = len(out)
    out += struct.pack("<HHIQ", 3, 1 if compression in packs else 0, 0, 0)
    cpu_rows = b""
    for cpu, pages in enumerate(cpus):
        out += b"\0" * (_pad_to_page(len(out)) - len(out))
        at = len(out)
        if compression in packs:
            chunks = [b"".join(pages[i:i + pages_per_chunk]) for i in range(0, len(pages), pages_per_chunk)]
            body = b""
            for c in chunks:
                z = packs[compression](c)
                body += struct.pack("<II", len(z), len(c)) + z
            out += struct.pack("<I", len(chunks)) + body
            size = len(body)  # trace-cmd's size leaves the chunk count out
        else:
            out += b"".join(pages)
            size = len(out) - at
        cpu_rows += struct.pack("<IQQ", cpu, at, size)
    buffer = struct.pack("<Q", buf_at) + b"\0" + b"local\0" + struct.pack("<II", PAGE, len(cpus)) + cpu_rows
    opts = (b"".join(_option(o, struct.pack("<Q", refs[o])) for o in (16, 17, 18, 19)) +
            _option(5, b"Linux synthetic 6.1.0 x86_64\0") + _option(9, b"3.1.6 datcorners\0") +
            _option(8, struct.pack("<I", len(cpus))) + _option(3, buffer) + _option(0, struct.pack("<Q", 0)))
    opt_at = section(0, opts)
    struct.pack_into("<Q", out, first_options_at, opt_at)
    with open(path, "wb") as f:
        f.write(out)


def nested_call_pages(pid: int = 100, t0: int = 1_000_000) -> list[bytes]:
    """svc_process > nfsd_dispatch > nfsd3_proc_write, on one page."""
    body = (record(0, entry(pid, "svc_process", 0)) + record(100, entry(pid, "nfsd_dispatch", 1)) +
            record(100, entry(pid, "nfsd3_proc_write", 2)) +
            record(300, exit_(pid, "nfsd3_proc_write", 2, t0 + 200, t0 + 500)) +
            record(100, exit_(pid, "nfsd_dispatch", 1, t0 + 100, t0 + 600)) +
            record(100, exit_(pid, "svc_process", 0, t0, t0 + 700)))
    return [page(t0, body)]


def seeds(out_dir: str) -> None:
    """The fuzzer's seeds: the same calls in every form this writer has."""
    os.makedirs(out_dir, exist_ok=True)
    two_cpus = [nested_call_pages(100), nested_call_pages(200, 1_000_050)]
    write_v6(os.path.join(out_dir, "v6.dat"), two_cpus)
    write_v7(os.path.join(out_dir, "v7.dat"), two_cpus)
    write_v7(os.path.join(out_dir, "v7-zstd.dat"), two_cpus, "zstd")


if __name__ == "__main__":
    seeds(sys.argv[1])
