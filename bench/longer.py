#!/usr/bin/env python3
"""A longer trace.dat made from a real one: its per-CPU ring-buffer pages
repeated N times, each copy later in time by the trace's own span (issue 19:
memory at two trace lengths, and a 5 GB trace).

    bench/longer.py SOURCE.dat TIMES OUT.dat [--zstd]

Concatenating trace.dat files is not a byte copy: each file has its own
header, and the time stamps inside the pages must keep rising. Here the
source is rewritten as v6 uncompressed (trace-cmd convert), its pages are
walked once (event headers per trace-cmd.dat.v6(5) and the kernel's
ring-buffer page format) to find every absolute time in them: each page's
time stamp and each funcgraph_exit's calltime and rettime (offsets from the
file's own format text); copy k adds k * span to those, in numpy, per copy.
Deltas between events are relative and need nothing. With --zstd the result
is converted to v7 zstd, the form trace-cmd 3.x records (trace-cmd convert
holds the trace in memory: keep --zstd for a few hundred MB).

Events per copy are the source's; the call trees are the source's repeated.
Nothing here is committed: traces are made on demand into /tmp or build/.
"""
from __future__ import annotations

import os
import re
import struct
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from helpers import damage  # noqa: E402  (the trace.dat layout reader)

TYPE_PADDING, TYPE_TIME_EXTEND, TYPE_TIME_STAMP = 29, 30, 31


def exit_fields(data: bytes, regions) -> tuple[int, int, int]:
    """funcgraph_exit's id and the offsets of calltime and rettime, from the
    file's own format text."""
    for r in regions:
        if r.section == "ftrace_formats" and not r.field:
            text = data[r.offset:r.offset + r.size].decode(errors="replace")
            if "name: funcgraph_exit\n" in text:
                ident = int(re.search(r"^ID: (\d+)", text, re.M)[1])
                call = int(re.search(r"calltime;\s*offset:(\d+);\s*size:8;", text)[1])
                ret = int(re.search(r"rettime;\s*offset:(\d+);\s*size:8;", text)[1])
                return ident, call, ret
    raise SystemExit("longer.py: no funcgraph_exit format in the source")


def time_positions(data: bytes, start: int, size: int, page: int, exit_id: int,
                   call_off: int, ret_off: int) -> tuple[np.ndarray, int, int]:
    """Byte offsets (from `start`) of every absolute time in one CPU's pages,
    and the first and last page time stamps."""
    pos, first, last = [], None, 0
    for at in range(start, start + size, page):
        ts, commit = struct.unpack_from("<QQ", data, at)
        first = ts if first is None else first
        last = max(last, ts)
        pos.append(at - start)
        end = at + 16 + (commit & ((1 << 30) - 1))  # the top bits flag missed events
        p = at + 16
        while p < end:
            (hdr,) = struct.unpack_from("<I", data, p)
            kind = hdr & 31
            if kind == TYPE_PADDING:
                if hdr >> 5 == 0:
                    break
                p += 4 + struct.unpack_from("<I", data, p + 4)[0]
            elif kind == TYPE_TIME_EXTEND:
                p += 8
            elif kind == TYPE_TIME_STAMP:
                raise SystemExit("longer.py: absolute time stamps in the pages: not supported")
            else:
                if kind == 0:
                    length = struct.unpack_from("<I", data, p + 4)[0] - 4
                    body = p + 8
                else:
                    length = kind * 4
                    body = p + 4
                if struct.unpack_from("<H", data, body)[0] == exit_id:
                    pos += [body + call_off - start, body + ret_off - start]
                p = body + length
    return np.array(pos, dtype=np.int64), first or 0, last


def shifted(block: np.ndarray, pos: np.ndarray, by: int) -> np.ndarray:
    """A copy of block with `by` added to the little-endian u64 at each of pos."""
    out = block.copy()
    idx = pos[:, None] + np.arange(8)
    vals = out[idx].copy().view("<u8").ravel() + np.uint64(by)
    out[idx] = vals.view(np.uint8).reshape(-1, 8)
    return out


def make(source: str, times: int, out: str, zstd: bool = False) -> str:
    tmp = tempfile.mkdtemp(prefix="ftflame-longer-")
    v6 = damage.convert(source, "v6", os.path.join(tmp, "v6.dat"))
    data = open(v6, "rb").read()
    summary, regions = damage.layout(data)
    page = summary["page_size"]
    exit_id, call_off, ret_off = exit_fields(data, regions)
    streams = summary["streams"]
    walked = {cpu: time_positions(data, off, size, page, exit_id, call_off, ret_off)
              for cpu, off, size in streams if size}
    first = min(w[1] for w in walked.values())
    last = max(w[2] for w in walked.values())
    # the last page's events run past its stamp: a second of margin is plenty
    span = last - first + 1_000_000_000
    table_at = next(r.offset for r in regions if r.what == "cpu 0 offset")
    head_end = min(off for _c, off, _s in streams)
    dest = os.path.join(tmp, "long.dat") if zstd else out
    with open(dest, "wb") as f:
        f.write(data[:head_end])
        table = []
        for cpu, off, size in streams:
            at = (f.tell() + page - 1) // page * page
            f.write(bytes(at - f.tell()))
            if size:
                block = np.frombuffer(data, dtype=np.uint8, count=size, offset=off)
                pos = walked[cpu][0]
                for k in range(times):
                    f.write(shifted(block, pos, k * span).tobytes())
            table.append((at, size * times))
        f.seek(table_at)
        for at, size in table:
            f.write(struct.pack("<QQ", at, size))
    if zstd:
        damage.convert(dest, "v7-zstd", out)
    for name in os.listdir(tmp):
        os.unlink(os.path.join(tmp, name))
    os.rmdir(tmp)
    return out


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source")
    ap.add_argument("times", type=int)
    ap.add_argument("out")
    ap.add_argument("--zstd", action="store_true", help="write v7 zstd (trace-cmd convert)")
    a = ap.parse_args(argv)
    make(a.source, a.times, a.out, a.zstd)
    print(f"{a.out}: {os.path.getsize(a.out) / 2**20:.0f} MiB, {a.times} x {a.source}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
