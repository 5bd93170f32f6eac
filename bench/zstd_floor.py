#!/usr/bin/env python3
"""The machine's floor for reading a zstd trace.dat: its compressed chunks
decompressed by the zstd command and nothing else, one process per CPU
stream, as many at once as there are cores, with synchronous I/O (its threads'
hand-offs are the command's cost, not the decompression's: no_asyncio below)
(issue 19: how far the read is from this machine's limit).

    bench/zstd_floor.py TRACE.dat OUT_DIR    -> prints the shell command to time

Each trace.dat v7 chunk is a whole zstd frame (trace-cmd.dat.v7(5)): the
frames of one CPU stream are written one after the other into
OUT_DIR/cpuN.zst, which `zstd -d` reads as one input.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from helpers import damage  # noqa: E402  (the trace.dat layout reader)


def split_streams(trace: str, out_dir: str) -> list[str]:
    """OUT_DIR/cpuN.zst per CPU stream with chunks; [] when not zstd."""
    with open(trace, "rb") as f:
        data = f.read()
    summary, regions = damage.layout(data)
    if summary["compression"] != "zstd":
        return []
    frames: dict[str, list] = {}
    for r in regions:
        if r.section.startswith("cpu ") and r.what.endswith("compressed bytes"):
            frames.setdefault(r.section.split()[1], []).append(data[r.offset:r.offset + r.size])
    paths = []
    for cpu, parts in sorted(frames.items(), key=lambda kv: int(kv[0])):
        path = os.path.join(out_dir, f"cpu{cpu}.zst")
        with open(path, "wb") as f:
            f.writelines(parts)
        paths.append(path)
    return paths


def no_asyncio() -> str:
    """zstd's option for synchronous I/O, where this zstd has it (1.5.3 on).

    Why: with asynchronous I/O (zstd's default since 1.5.3) the command hands
    each block between its reading, decompressing and writing threads, and
    those hand-offs cost more than the decompression's own system time: on
    s18-long, 0.06-0.16 s of futex time a run (37 k calls a stream), the
    floor's CPU 0.37-0.47 s against 0.27-0.29 s without them (user time the
    same). That is the command's overhead, not the machine's limit, and it is
    also the noisy part of the figure (docs/performance.md, session 22).
    """
    try:
        helptext = subprocess.run(["zstd", "-H"], capture_output=True, text=True, check=False)
    except OSError:
        return ""
    return "--no-asyncio " if "--[no-]asyncio" in helptext.stdout + helptext.stderr else ""


def command(paths: list[str], cores: int) -> list[str]:
    """A shell command decompressing every stream to /dev/null, `cores` at a time."""
    quoted = " ".join(shlex.quote(p) for p in paths)
    return ["sh", "-c", f"printf '%s\\n' {quoted} | xargs -P {cores} -n 1 zstd -dcq {no_asyncio()}> /dev/null"]


if __name__ == "__main__":
    paths = split_streams(sys.argv[1], sys.argv[2])
    print(" ".join(shlex.quote(w) for w in command(paths, os.cpu_count() or 1)) if paths else "not zstd")
