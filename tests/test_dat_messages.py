"""Damaged and empty trace.dat files (issue 13 item 6): one line in
ftflame's words, errno in words, nothing of libtracecmd's own on stderr,
and no crash. Each file is the bundled sample with its one CPU data
section's (offset, size) pair changed."""
from __future__ import annotations

import re
import struct
import subprocess
import sys

import pytest

from conftest import SAMPLE

FTFLAME = [sys.executable, "-m", "ftflame.cli"]
# the sample's CPU 0 data section (`trace-cmd dump --flyrecord`)
SECTION = (1048576, 554813)


def with_section(tmp_path, name, offset, size) -> str:
    data = bytearray(open(SAMPLE, "rb").read())
    at = data.find(struct.pack("<QQ", *SECTION))
    assert at > 0, "the sample's data section entry moved: update SECTION"
    data[at:at + 16] = struct.pack("<QQ", offset, size)
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def one_line_error(path, reader="builtin") -> str:
    proc = subprocess.run([*FTFLAME, "report", "--reader", reader, path], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"ftflame: {path}: ")
    assert "Unknown error" not in lines[0]
    return lines[0]


def said_read(path, events: int) -> str:
    """The file with its CPUSTAT option saying `events` were read (the
    sample's one CPU), the text's length kept."""
    data = open(path, "rb").read()
    m = re.search(rb"read events: (\d+)", data)
    assert m, "the sample has no CPUSTAT option"
    number = str(events).encode().ljust(len(m.group(1)))
    assert len(number) == len(m.group(1))
    open(path, "wb").write(data[:m.start(1)] + number + data[m.end(1):])
    return path


@pytest.mark.parametrize("reader", ["builtin", "libtracecmd"])
def test_zero_events_says_the_recording_is_empty(tmp_path, reader):
    """No data, and trace-cmd's statistics say it read nothing."""
    line = one_line_error(said_read(with_section(tmp_path, "empty.dat", SECTION[0], 0), 0), reader)
    assert "no events at all" in line and "memory" not in line


@pytest.mark.parametrize("reader", ["builtin", "libtracecmd"])
def test_zero_events_of_a_recording_that_read_some_is_damage(tmp_path, reader):
    """No data, but trace-cmd's statistics say it read 55,043 events: not an
    empty recording, a damaged file."""
    line = one_line_error(with_section(tmp_path, "emptied.dat", SECTION[0], 0), reader)
    assert "55,043" in line or "55043" in line
    assert "no events at all" not in line
    assert ("no events could be read" if reader == "builtin" else "not given to libtracecmd") in line


@pytest.mark.parametrize("name,offset,size,words", [
    # libtracecmd 3.1 crashed (SIGSEGV in tracecmd_close) on both
    ("unaligned.dat", SECTION[0] + 1, SECTION[1], "could not read its event data"),
    ("past-the-end.dat", SECTION[0], SECTION[1] * 4, "(Invalid argument)"),
])
def test_damaged_data_section_is_one_line_not_a_crash(tmp_path, name, offset, size, words):
    """The builtin reader checks a file before libtracecmd reads it: it
    finds CPU 0's data cut short and says so. libtracecmd itself, read
    directly, says it in its own terms: one ValueError, no crash."""
    path = with_section(tmp_path, name, offset, size)
    line = one_line_error(path, "libtracecmd")
    assert "damaged trace.dat, not given to libtracecmd" in line and "cut short" in line
    code = ("import os, sys; from ftflame.parse import _core\n"
            "try: _core.read_dat(os.fsencode(sys.argv[1]))\n"
            "except ValueError as e: print(e)")
    proc = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert words in proc.stdout and "damaged or truncated trace.dat" in proc.stdout


def test_builtin_reader_says_no_event_could_be_read_from_a_moved_section(tmp_path):
    # one byte off: no chunk table where the file says it is
    line = one_line_error(with_section(tmp_path, "unaligned.dat", SECTION[0] + 1, SECTION[1]))
    assert "no events could be read" in line and "cut short" in line and "damaged or truncated" in line


def test_builtin_reader_counts_a_section_past_the_end(tmp_path):
    # the chunks are all there, the size says 4x more: a report, the shortfall in its anomalies
    path = with_section(tmp_path, "past-the-end.dat", SECTION[0], SECTION[1] * 4)
    proc = subprocess.run([*FTFLAME, "report", path], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert re.search(r"the data of 1 CPU cut short \([0-9,]+ bytes missing or unreadable\)", text), text
