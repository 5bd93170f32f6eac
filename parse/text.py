"""Text traces: open (file or stdin, plain or compressed), stream, tokenize in C.

The input is read in chunks of CHUNK bytes of decompressed text and each
chunk goes to the C tokenizer (``_core.read_text_chunks``): no Python runs per
line. gzip and xz decompress with the standard library, zstd with the
``zstandard`` module when installed, else the ``zstd`` command; all stream.
"""
from __future__ import annotations

import gzip
import io
import lzma
import os
import queue
import shutil
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Callable

from ftflame.model.errors import InputError

CHUNK = 1 << 20
HEAD = 64 << 10  # bytes of decompressed input the detection looks at

# what each compression begins with (detection names them too)
COMPRESSED_MAGIC = {
    b"\x1f\x8b": "gzip",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
}


class _Prefixed(io.RawIOBase):
    """A reader that returns `head` first, then the rest of `raw`."""

    def __init__(self, head: bytes, raw):
        self._head = memoryview(head)
        self._raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if len(self._head):
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._raw.read(len(b))
        if not data:
            return 0
        n = len(data)
        b[:n] = data
        return n


class _ZstdProcess(io.RawIOBase):
    """Streaming zstd through the `zstd` command, fed from a thread."""

    def __init__(self, src, path: str):
        exe = shutil.which("zstd")
        if not exe:
            raise InputError(path, "zstd-compressed, but neither the zstandard Python module nor "
                             "the zstd command is installed", "install zstd, or decompress it first")
        import subprocess  # here: only zstd input without the zstandard module needs it

        self._proc = subprocess.Popen([exe, "-dc", "-q"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._path = path

        def pump():
            try:
                while True:
                    data = src.read(CHUNK)
                    if not data:
                        break
                    self._proc.stdin.write(data)
            except (BrokenPipeError, OSError):
                pass
            finally:
                try:
                    self._proc.stdin.close()
                except OSError:
                    pass

        self._thread = threading.Thread(target=pump, daemon=True)
        self._thread.start()

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = self._proc.stdout.readinto(b)
        if not n:
            rc = self._proc.wait()
            self._thread.join()
            if rc != 0:
                err = self._proc.stderr.read().decode("utf-8", "replace").strip().splitlines()
                raise InputError(self._path, "zstd: " + (err[-1] if err else f"exit status {rc}"))
            return 0
        return n

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        super().close()


def _decompressor(kind: str, raw, path: str):
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if kind == "xz":
        return lzma.LZMAFile(raw, mode="rb")
    try:
        import zstandard  # optional
    except ImportError:
        return _ZstdProcess(raw, path)
    return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)


@dataclass
class Source:
    """An opened input: `head` (decompressed) has been read, `stream` yields
    everything from the start again (head included)."""

    path: str
    name: str  # for messages and reports
    compression: str
    head: bytes
    stream: object

    def _read_chunks(self) -> Iterator[bytes]:
        read = self.stream.read
        while True:
            try:
                data = read(CHUNK)
            except (OSError, EOFError, lzma.LZMAError, ValueError) as e:
                raise InputError(self.name, f"{self.compression or 'input'} stream is corrupt "
                                 f"or truncated: {e}", "check the file") from None
            if not data:
                return
            yield data

    def chunks(self) -> Iterator[bytes]:
        """The input in CHUNK pieces. Compressed input is decompressed in a
        second thread (zlib, lzma and zstd release the GIL), overlapping with
        the tokenizer, which releases it too."""
        if not self.compression:
            yield from self._read_chunks()
            return
        q: queue.Queue = queue.Queue(maxsize=4)
        stop = threading.Event()

        def produce():
            try:
                for data in self._read_chunks():
                    while not stop.is_set():
                        try:
                            q.put(data, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
                q.put(None)
            except BaseException as e:  # handed to the consumer
                q.put(e)

        th = threading.Thread(target=produce, name="ftflame-decompress", daemon=True)
        th.start()
        try:
            while True:
                item = q.get()
                if item is None:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            th.join()

    def close(self) -> None:
        try:
            self.stream.close()
        except Exception:
            pass


def _read_head(stream, name: str, compression: str) -> bytes:
    parts, n = [], 0
    try:
        while n < HEAD:
            data = stream.read(HEAD - n)
            if not data:
                break
            parts.append(data)
            n += len(data)
    except (OSError, EOFError, lzma.LZMAError, ValueError) as e:
        raise InputError(name, f"{compression} stream is corrupt or truncated: {e}",
                         "check the file") from None
    return b"".join(parts)


def open_input(path: str) -> Source:
    """Open a file or '-' (stdin), undo gzip/xz/zstd, read the head."""
    if path == "-":
        raw = sys.stdin.buffer
        name = "<stdin>"
    else:
        try:
            raw = open(path, "rb")
        except OSError as e:
            raise InputError(path, f"cannot read: {e.strerror}") from None
        name = path
    magic = raw.read(8) if path != "-" else raw.read(8)
    compression = ""
    for m, kind in COMPRESSED_MAGIC.items():
        if magic.startswith(m):
            compression = kind
            break
    raw = io.BufferedReader(_Prefixed(magic, raw), CHUNK) if path == "-" else _rewind(raw)
    stream = _decompressor(compression, raw, name) if compression else raw
    head = _read_head(stream, name, compression)
    if compression and not head:
        raise InputError(name, f"empty {compression} stream", "the recording produced no data")
    return Source(path, name, compression, head,
                  io.BufferedReader(_Prefixed(head, stream), CHUNK))


def _rewind(f):
    f.seek(0)
    return f


def spool(src: Source) -> str:
    """Write a decompressed or piped trace.dat to a temporary file (libtracecmd
    needs a file); the caller removes it."""
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix="ftflame-", suffix=".dat")
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in src.chunks():
                f.write(chunk)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


DIALECT_NAMES = {
    "tracefs": "function_graph text (tracefs trace / perf ftrace)",
    "trace-cmd": "trace-cmd report text",
    "mail": "function_graph text re-flowed in a mail",
}


def read_text(src: Source, dialect: str, progress: Callable[[int], None] | None = None,
              events: bool = False, slowest: int = 20, call_stream=None, excl_hist: bool = True):
    """Tokenize a text trace in C; return the core's result dict (every call
    written to call_stream's descriptors as it is built, if given)."""
    from . import _core

    mode = _core.TEXT_MAIL if dialect == "mail" else _core.TEXT_LINES
    try:
        return _core.read_text_chunks(src.chunks(), mode=mode, progress=progress, events=events, slowest=slowest,
                                      spool=call_stream, excl_hist=excl_hist)
    except ValueError as e:  # the core's refusal (a count too big for the node table)
        raise InputError(src.name, str(e)) from None
    finally:
        src.close()


def read(src: Source, dialect: str, progress: Callable[[int], None] | None = None, slowest: int = 20,
         call_stream=None, excl_hist: bool = True):
    """A text trace into a Profile, with what the tokenizer passed over
    counted (counters text_*) and said (warnings)."""
    from .tables import from_core_result

    res = read_text(src, dialect, progress, slowest=slowest, call_stream=call_stream, excl_hist=excl_hist)
    prof = from_core_result(res, text_info(res, src, dialect))
    st = res["text"]
    if prof.counters["exits"] == 0:
        raise InputError(src.name, f"no function_graph calls in this {DIALECT_NAMES[dialect]} "
                         f"({st['lines']:,} lines, {st['unparsed']:,} not understood)",
                         "is it a function_graph trace with durations?")
    counters = dict(prof.counters)
    counters.update({"text_" + k: st[k] for k in TEXT_COUNTERS})
    return prof.replace(counters=counters, warnings=prof.warnings + tuple(text_warnings(st)))


def text_info(res: dict, src: Source, dialect: str):
    """TraceInfo of a text trace: what it was, and how stacks and irq context
    were worked out (text has no per-event task or irq flags)."""
    from ftflame.model.profile import TraceInfo

    st = res["text"]
    c = res["counters"]
    if st["irq_arrows"]:
        irq = "arrows+names"
    elif st["flag_lines"]:
        irq = "latency-flags+names"
    else:
        irq = "names"
    return TraceInfo(
        source=src.name, format=f"text:{dialect}", cpus=int(st["cpus_seen"]),
        compression=src.compression, has_sched_switch=c.get("switches", 0) > 0,
        per_task=st["cpu_lines"] == 0, irq_source=irq)


# text statistics copied into Profile.counters (prefixed "text_")
TEXT_COUNTERS = ("lines", "records", "unparsed", "too_long", "too_deep", "no_duration",
                 "unknown_exits", "tail_mismatch", "separators", "separator_conflicts",
                 "irq_arrows", "prose_lines", "cpu_lines", "proc_lines", "tracecmd_lines",
                 "ts_lines", "flag_lines", "other_lines", "rejoined", "broken_records")


# begins the warnings that part of a text trace was passed over; they are
# WarningKind.NOT_UNDERSTOOD: the command line repeats them on stderr
# (folded and speedscope files have no notes)
NOT_UNDERSTOOD = "PART OF THE TEXT NOT UNDERSTOOD"


def _share(n: int, total: int) -> str:
    """n of total as a percentage that never rounds to 0% or 100%."""
    pct = 100.0 * n / total
    if 0 < pct < 0.1:
        return "under 0.1%"
    if 99.9 < pct < 100:
        return "over 99.9%"
    return f"{pct:.1f}%"


def text_warnings(st: dict) -> list:
    """What the tokenizer could not account for, as warnings (TraceWarning)."""
    from ftflame.model.profile import TraceWarning, WarningKind

    out = []

    def say(text, kind=WarningKind.NOTE):
        out.append(TraceWarning(kind, text))

    def loud(text):
        say(text, WarningKind.NOT_UNDERSTOOD)

    if st["rejoined"]:
        n = st["rejoined"]
        say(f"{n:,} text line{'s' if n != 1 else ''} that begin{'s' if n == 1 else ''} no "
            "record of its own read as continuing the line before (re-joining what a mail "
            "client wrapped)")
    lines = max(int(st["lines"]), 1)
    if st["unparsed"]:
        loud(f"{NOT_UNDERSTOOD}: {st['unparsed']:,} of {st['lines']:,} lines "
             f"({_share(st['unparsed'], lines)}) passed over: any calls in them are missing (first, line "
             f"{st['first_unparsed_line']:,}: {st['first_unparsed'][:60].strip()!r})")
    if st["broken_records"]:
        n = st["broken_records"]
        loud(f"{NOT_UNDERSTOOD}: {n:,} record{'s' if n != 1 else ''} cut apart beyond "
             "repair (a line broken inside a name or number?) passed over: "
             f"{'their calls are' if n != 1 else 'its call is'} missing")
    if st["prose_lines"]:
        loud(f"{NOT_UNDERSTOOD}: {st['prose_lines']:,} of {st['lines']:,} lines "
             f"({_share(st['prose_lines'], lines)}) hold no trace record (prose, or records "
             "cut apart beyond repair) and were passed over: calls in them are missing")
    if st["too_long"]:
        say(f"{st['too_long']:,} text lines over 64 MiB passed over")
    if st["too_deep"]:
        say(f"{st['too_deep']:,} records deeper than 4096 levels passed over")
    if st["no_duration"]:
        say(f"{st['no_duration']:,} calls printed without a duration (funcgraph-duration "
            "off?): counted as 0 ns")
    if st["unknown_exits"]:
        say(f"{st['unknown_exits']:,} '}}' lines of a call whose entry is not in the text "
            "and whose name is not printed: counted as (unknown)")
    if st["tail_mismatch"]:
        say(f"{st['tail_mismatch']:,} '}} /* func */' tails name another function than "
            "the open entry: the tail was trusted")
    if st["separator_conflicts"]:
        say(f"{st['separator_conflicts']:,} task-switch separators disagree with the "
            "rebuilt stacks")
    return out
