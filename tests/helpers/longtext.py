"""A long function_graph text trace made from a real one: its records
repeated, each copy later in time by the trace's own span (whole seconds),
so time keeps rising as in a long recording (docs/performance.md, "Long
text traces"). Nothing is written to disk unless the caller does: the copies
are yielded as chunks, for a pipe or a file.
"""
from __future__ import annotations

import gzip
import re
from collections.abc import Iterator

# the absolute timestamp column of tracefs text (`funcgraph-abstime`):
# leading spaces, seconds, '.', microseconds
_TS = re.compile(rb"(?m)^( *)(\d+)(?=\.\d{6} )")


def repeated(path: str, size: int) -> Iterator[bytes]:
    """Chunks of about `size` bytes of text: the header of the trace at
    `path` (plain or .gz) once, then its records again and again, each copy's
    timestamps moved later by the whole seconds the trace spans (the column
    keeps its width)."""
    data = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    lines = data.split(b"\n")
    nhead = next(i for i, ln in enumerate(lines) if not ln.startswith(b"#"))
    head, body = b"\n".join(lines[:nhead]) + b"\n", b"\n".join(lines[nhead:]).rstrip(b"\n") + b"\n"
    pieces, widths, secs, at = [], [], [], 0
    for m in _TS.finditer(body):
        pieces.append(body[at:m.start()])
        widths.append(m.end() - m.start())
        secs.append(int(m.group(2)))
        at = m.end()
    tail = body[at:]
    span = max(secs) - min(secs) + 1 if secs else 0
    yield head
    done, k = len(head), 0
    while done < size:
        if k == 0 or not secs:
            chunk = body
        else:
            off = k * span
            chunk = b"".join([p + b"%*d" % (w, s + off) for p, w, s in zip(pieces, widths, secs)]) + tail
        yield chunk
        done += len(chunk)
        k += 1
