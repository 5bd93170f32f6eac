"""Speed of the text tokenizer (+ call builder) on the largest text fixture.

    .venv/bin/python bench/text_speed.py [FILE.txt.gz]

Prints MB/s of decompressed text for the C tokenizer fed 1 MiB chunks from
memory (CPU time of the process, best of 5: the machine may be shared), and
for `ftflame.parse.read` end to end (gunzip included).
"""
from __future__ import annotations

import glob
import gzip
import os
import sys
import time

from ftflame.parse import _core, read

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("FTFLAME_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))


def best(fn, n):
    out = []
    for _ in range(n):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        out.append((time.process_time() - c0, time.perf_counter() - w0))
    return min(c for c, _ in out), min(w for _, w in out)


def main() -> int:
    if len(sys.argv) > 1:
        path = sys.argv[1]
    else:
        texts = glob.glob(os.path.join(SHARED, "fixtures", "*", "*", "*.txt.gz"))
        if not texts:
            print("no text fixtures: give a file", file=sys.stderr)
            return 2
        path = max(texts, key=lambda f: len(gzip.open(f).read()))
    data = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    lines = data.count(b"\n")
    chunks = [data[i:i + (1 << 20)] for i in range(0, len(data), 1 << 20)]
    cpu, wall = best(lambda: _core.read_text_chunks(chunks), 5)
    mb = len(data) / 1e6
    print(f"{os.path.relpath(path, SHARED)}: {mb:.2f} MB, {lines:,} lines")
    print(f"tokenizer + builder: {mb / cpu:.0f} MB/s, {lines / cpu / 1e6:.2f} M lines/s "
          f"(CPU time; wall {mb / wall:.0f} MB/s)")
    cpu, wall = best(lambda: read(path), 3)
    print(f"read() end to end:   {mb / cpu:.0f} MB/s of text (CPU time; wall {mb / wall:.0f} MB/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
