"""The builtin trace.dat reader, one named situation per test: hand-made
files (tests/helpers/datwriter.py) for the page format's corners, and damage that
must end as one line naming the section and byte offset, or as a report
whose anomalies say what was skipped."""
from __future__ import annotations

import os
import re
import signal
import struct
import subprocess
import sys
import time

import pytest

from conftest import FIXTURE_DATS, fixture, fixture_id, holds_open, sigint_as_default
from helpers import datwriter as dw
from helpers import promptly

FTFLAME = [sys.executable, "-m", "ftflame.cli"]
T0 = 1_000_000


def core(path, reader="builtin"):
    from ftflame.parse import _core

    read = _core.read_dat_builtin if reader == "builtin" else _core.read_dat
    return read(os.fsencode(str(path)))


def same_in_both(path) -> dict:
    """The builtin result, checked equal to libtracecmd's (meta's damage aside)."""
    own, ref = core(path), core(path, "libtracecmd")
    own_meta = dict(own["meta"])
    del own_meta["damage"]
    assert own_meta == ref["meta"]
    for key in ref:
        if key != "meta":
            assert own[key] == ref[key], key
    return own


def report(path, *args):
    return subprocess.run([*FTFLAME, "report", *args, str(path)], capture_output=True, text=True,
                          timeout=60)


def one_line_error(path) -> str:
    proc = report(path)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"ftflame: {path}: ")
    return lines[0]


def calls_page(pid=100, t0=T0, lead=b"", missed=None):
    return dw.page(t0, lead + dw.record(0, dw.entry(pid, "nfsd_dispatch", 0)) +
                   dw.record(500, dw.exit_(pid, "nfsd_dispatch", 0, t0, t0 + 500)), missed)


# ---- the page format ------------------------------------------------------

@pytest.mark.parametrize("write", [dw.write_v6, dw.write_v7,
                                   lambda p, c: dw.write_v7(p, c, "zstd")], ids=["v6", "v7", "v7-zstd"])
def test_nested_calls_in_every_file_form(tmp_path, write):
    path = tmp_path / "t.dat"
    write(str(path), [dw.nested_call_pages(100), dw.nested_call_pages(200, T0 + 50)])
    res = same_in_both(path)
    c = res["counters"]
    assert (c["entries"], c["exits"], c["first_ts"], c["last_ts"]) == (6, 6, T0, T0 + 750)


def test_zlib_reads_as_the_uncompressed_file(tmp_path):
    """zlib chunks (trace-cmd's other algorithm; its 3.1.6 here writes zstd
    only, and libtracecmd cannot read zlib without the plugin): the same
    result as the uncompressed file."""
    cpus = [[calls_page(100, T0 + i * 10_000) for i in range(25)], dw.nested_call_pages(200)]
    plain, packed = tmp_path / "plain.dat", tmp_path / "zlib.dat"
    dw.write_v7(str(plain), cpus)
    dw.write_v7(str(packed), cpus, "zlib")
    a, b = core(plain), core(packed)
    assert b["meta"].pop("compression") == "zlib 1.2.13" and a["meta"].pop("compression") == ""
    assert a == b and b["counters"]["exits"] == 28


def test_time_extend_and_discarded_record_move_the_clock(tmp_path):
    """A time extend adds (word << 27) + delta; a discarded record (padding
    with a delta) still counts its delta; a record of more than 28 words
    carries its length."""
    far = (3 << 27) + 5
    body = (dw.record(0, dw.entry(100, "svc_process", 0)) + dw.time_extend(far) +
            dw.padding(7, 12) + dw.record(0, dw.entry(100, "nfsd_dispatch", 1) + b"\0" * 100) +
            dw.record(1, dw.exit_(100, "nfsd_dispatch", 1, T0 + far + 7, T0 + far + 8)) +
            dw.record(1, dw.exit_(100, "svc_process", 0, T0, T0 + far + 9)))
    path = tmp_path / "t.dat"
    dw.write_v6(str(path), [[dw.page(T0, body)]])
    c = same_in_both(path)["counters"]
    assert (c["exits"], c["first_ts"], c["last_ts"]) == (2, T0, T0 + far + 9)


def trace_cmd_stamps(path) -> list:
    """(cpu, ts ns, event) of every event `trace-cmd report` prints."""
    out = subprocess.run(["trace-cmd", "report", "-N", "-t", "-R", str(path)], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    lines = [re.match(r"^\s*\S+-\d+\s+\[(\d+)\]\s+(\d+)\.(\d{9}): (\w+):", ln) for ln in out.splitlines()]
    return [(int(m[1]), int(m[2]) * 10**9 + int(m[3]), m[4]) for m in lines if m]


def test_absolute_time_stamp_sets_the_clock(tmp_path):
    """A type 31 record sets the clock to (word << 27) + delta, whatever it
    was; the deltas after it count from there. trace-cmd prints the same
    stamps."""
    stamp = (5 << 27) + 12_345
    body = (dw.record(0, dw.entry(100, "svc_process", 0)) + dw.time_stamp(stamp) +
            dw.record(3, dw.entry(100, "nfsd_dispatch", 1)) +
            dw.record(4, dw.exit_(100, "nfsd_dispatch", 1, stamp + 3, stamp + 7)) +
            dw.record(2, dw.exit_(100, "svc_process", 0, T0, stamp + 9)))
    path = tmp_path / "t.dat"
    dw.write_v6(str(path), [[dw.page(T0, body)]])
    assert [ts for _cpu, ts, _e in trace_cmd_stamps(path)] == [T0, stamp + 3, stamp + 7, stamp + 9]
    c = same_in_both(path)["counters"]
    assert (c["entries"], c["exits"], c["first_ts"], c["last_ts"]) == (2, 2, T0, stamp + 9)


OTHER_FORMS = [dw.Form(v, comp, big, long) for v, comp in ((6, "none"), (7, "zstd"))
               for big, long in ((True, 8), (False, 4), (True, 4))]


@pytest.mark.parametrize("form", OTHER_FORMS, ids=lambda f: f.name)
def test_big_endian_and_32_bit_files_read_as_libtracecmd_reads_them(tmp_path, form):
    """The file header says the byte order and the long size: every number,
    the record header's bitfields (type_len at the top on big-endian), the
    page's commit word and the missed-events count stored after the records
    (a long), the `unsigned long` fields and the kallsyms addresses follow
    them. trace-cmd reads the file as written; both readers agree."""
    far = (2 << 27) + 9
    pages = [dw.page(T0, dw.record(0, dw.entry(100, "svc_process", 0, form), form) +
                     dw.time_extend(far, form) +
                     dw.record(0, dw.exit_(100, "svc_process", 0, T0, T0 + far, form=form), form),
                     form=form),
             dw.page(T0 + far + 100, dw.record(0, dw.entry(100, "nfsd_dispatch", 0, form), form) +
                     dw.record(50, dw.exit_(100, "nfsd_dispatch", 0, T0 + far + 100, T0 + far + 150,
                                            form=form), form), missed=77, form=form)]
    path = tmp_path / "t.dat"
    dw.write_file(str(path), dw.corner_contents(form), [pages, dw.nested_call_pages(200, form=form)], form)
    with open(path, "rb") as f:
        assert f.read(14)[12:] == bytes([form.big_endian, form.long_size])
    assert sorted(trace_cmd_stamps(path)) == sorted(
        [(0, T0, "funcgraph_entry"), (0, T0 + far, "funcgraph_exit"),
         (0, T0 + far + 100, "funcgraph_entry"), (0, T0 + far + 150, "funcgraph_exit")] +
        [(1, T0 + t, e) for t, e in ((0, "funcgraph_entry"), (100, "funcgraph_entry"),
                                     (200, "funcgraph_entry"), (500, "funcgraph_exit"),
                                     (600, "funcgraph_exit"), (700, "funcgraph_exit"))])
    res = same_in_both(path)
    c = res["counters"]
    assert (c["entries"], c["exits"], c["lost_events"]) == (5, 5, 77)
    assert {"svc_process", "nfsd_dispatch", "nfsd3_proc_write"} <= set(res["funcs"])
    proc = report(path, "-F", "txt")
    assert proc.returncode == 0 and "nfsd3_proc_write" in proc.stdout, proc.stderr


@pytest.mark.parametrize("missed,known,unknown", [(123, 123, 0), (-1, 0, 1)])
def test_missed_events_mark_on_a_page(tmp_path, missed, known, unknown):
    """The page's commit word says events were missed before it, with the
    count stored after the records (bit 30) or not."""
    path = tmp_path / "t.dat"
    dw.write_v7(str(path), [[calls_page(), calls_page(t0=T0 + 10_000, missed=missed)]])
    res = same_in_both(path)
    c = res["counters"]
    assert (c["lost_records"], c["lost_events"], c["lost_unknown"]) == (1, known, unknown)


def test_missed_events_behind_a_time_extend_are_not_lost(tmp_path):
    """libtracecmd attaches a page's missed-events mark only to a record at
    the page's first byte: behind a time extend it drops it. The builtin
    reader keeps it (its one difference from libtracecmd, on purpose)."""
    path = tmp_path / "t.dat"
    lead = dw.time_extend(1 << 28)
    dw.write_v7(str(path), [[calls_page(), calls_page(t0=T0 + 10_000, lead=lead, missed=55)]])
    assert core(path)["counters"]["lost_events"] == 55
    assert core(path, "libtracecmd")["counters"]["lost_events"] == 0


# ---- damage to the event data: counted -------------------------------------

def test_page_whose_commit_runs_past_it_is_skipped_and_counted(tmp_path):
    bad = bytearray(calls_page(t0=T0 + 10_000))
    struct.pack_into("<Q", bad, 8, dw.PAGE)  # more records than the page holds
    path = tmp_path / "t.dat"
    dw.write_v6(str(path), [[calls_page(), bytes(bad), calls_page(t0=T0 + 20_000)]])
    res = core(path)
    assert res["meta"]["damage"]["bad_pages"] == 1
    assert res["counters"]["exits"] == 2 and res["counters"]["lost_unknown"] == 1  # a gap
    proc = report(path)
    assert proc.returncode == 0, proc.stderr
    assert "1 trace.dat pages with records that do not fit the page" in " ".join(proc.stdout.split())


def test_zeroed_pages_are_counted(tmp_path):
    path = tmp_path / "t.dat"
    dw.write_v6(str(path), [[calls_page(), b"\0" * dw.PAGE, calls_page(t0=T0 + 20_000)]])
    assert core(path)["meta"]["damage"]["zero_pages"] == 1
    assert "pages of zeros" in " ".join(report(path).stdout.split())


def test_chunk_that_does_not_decompress_is_skipped_and_counted(tmp_path):
    path = tmp_path / "t.dat"
    pages = [calls_page(100, T0 + i * 10_000) for i in range(30)]
    dw.write_v7(str(path), [pages], "zstd", pages_per_chunk=10)
    good = core(path)["counters"]["exits"]
    data = bytearray(path.read_bytes())
    # the second chunk's compressed bytes: flip one in its middle
    first = data.find(b"\x28\xb5\x2f\xfd", dw.cpu_data(str(path))[0][1])
    second = data.find(b"\x28\xb5\x2f\xfd", first + 4)
    data[second + 40] ^= 0xFF
    path.write_bytes(bytes(data))
    res = core(path)
    assert res["meta"]["damage"]["bad_chunks"] == 1
    assert res["counters"]["exits"] == good - 10 and res["counters"]["lost_unknown"] == 1


def test_trace_cmd_34_cpu_sizes_are_no_damage(tmp_path):
    """trace-cmd 3.4 counts the chunk count in a CPU's size (3.1 does not):
    the last chunk ends 4 bytes before the size read the 3.1 way, on every
    CPU, the last one's at the end of the file. Not data cut short; and
    both readers name the compressor version the file gives."""
    path = tmp_path / "t.dat"
    cpus = [[calls_page(100 + c, T0 + i * 10_000) for i in range(12)] for c in range(2)]
    dw.write_v7(str(path), cpus, "zstd", writer_34=True)
    res = same_in_both(path)
    assert res["meta"]["damage"]["cut_streams"] == 0 and res["meta"]["damage"]["lost_bytes"] == 0
    assert res["meta"]["compression"] == "zstd 1.5.7"
    dw.write_v7(str(tmp_path / "t31.dat"), cpus, "zstd")
    assert res["counters"] == core(tmp_path / "t31.dat")["counters"]  # every call read
    proc = report(path, "--reader", "libtracecmd")
    assert proc.returncode == 0 and "cut short" not in proc.stderr, proc.stderr
    assert "cut short" not in report(path).stderr


def test_a_chunk_count_short_of_a_34_cpus_data_is_still_damage(tmp_path):
    """The 4 bytes of 3.4's size are all the slack: a chunk count one short
    leaves a whole chunk unread, which is data cut short."""
    path = tmp_path / "t.dat"
    dw.write_v7(str(path), [[calls_page(100, T0 + i * 10_000) for i in range(12)]], "zstd",
                writer_34=True)
    data = bytearray(path.read_bytes())
    _cpu, off, _size = dw.cpu_data(str(path))[0]
    struct.pack_into("<I", data, off, struct.unpack_from("<I", data, off)[0] - 1)
    path.write_bytes(bytes(data))
    assert core(path)["meta"]["damage"]["cut_streams"] == 1


# ---- damage to the headers: one line, the section and the offset ----------

def test_file_bytes_quoted_in_a_message_stay_one_line(tmp_path):
    """A system name made of the header text (found by the fuzzer) is
    quoted with its newlines as '?'."""
    path = tmp_path / "t.dat"
    dw.write_v6(str(path), [dw.nested_call_pages()])
    data = bytearray(path.read_bytes())
    at = data.index(b"name: funcgraph_entry") + len(dw.corner_formats()[0].text())
    # the event systems count: 1, a name with a newline and a UTF-8-breaking byte, 2^31 formats
    data[at:at + 4] = struct.pack("<I", 1) + b"bad\n\xff\0" + struct.pack("<I", 1 << 31)
    path.write_bytes(bytes(data))
    line = one_line_error(path)
    assert "formats in system bad??" in line


def test_absurd_field_offset_is_one_line(tmp_path):
    """offset:2147483647 overflowed the int bounds check of the libtracecmd
    path (issue 19); here formats are read with 64-bit checks."""
    path = tmp_path / "t.dat"
    dw.write_v6(str(path), [dw.nested_call_pages()])
    data = path.read_bytes()
    at = data.index(b"func;\toffset:8;")
    path.write_bytes(data[:at] + b"func;\toffset:2147483647;" + data[at + len(b"func;\toffset:8;"):])
    line = one_line_error(path)
    assert "ftrace event formats at byte" in line and "offset 2147483647" in line


def test_v6_header_claiming_16m_cpus_is_refused_at_once(tmp_path):
    path = tmp_path / "t.dat"
    dw.write_v6(str(path), [dw.nested_call_pages()])
    data = bytearray(path.read_bytes())
    at = data.index(b"options  \0") - 4
    struct.pack_into("<I", data, at, 16_777_215)
    path.write_bytes(bytes(data))
    line = one_line_error(path)
    assert f"CPU count at byte {at}: the file claims 16777215 CPUs" in line


def test_overlapping_cpu_data_is_refused(tmp_path):
    path = tmp_path / "t.dat"
    dw.write_v6(str(path), [dw.nested_call_pages(), dw.nested_call_pages(200)])
    data = bytearray(path.read_bytes())
    at = data.index(b"flyrecord\0") + 10
    off0, size0 = struct.unpack_from("<QQ", data, at)
    struct.pack_into("<QQ", data, at + 16, off0, size0)  # CPU 1 points at CPU 0's data
    path.write_bytes(bytes(data))
    assert "overlaps CPU 1's" in one_line_error(path)


@pytest.mark.parametrize("cut", [5, 30, 200, 1000, 3000, 6000, 9000])
def test_truncated_file_is_one_line_or_counted(tmp_path, cut):
    path = tmp_path / "t.dat"
    dw.write_v7(str(path), [[calls_page(100, T0 + i * 10_000) for i in range(3)]], "zstd")
    data = path.read_bytes()
    path.write_bytes(data[:len(data) * cut // 10_000] if cut < 10_000 else data)
    proc = report(path)
    assert proc.returncode in (0, 2), proc.stderr
    if proc.returncode == 2:
        assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
    else:
        assert "cut short" in " ".join(proc.stdout.split())


# ---- threads, Ctrl-C ------------------------------------------------------

@pytest.mark.parametrize("path", FIXTURE_DATS[:6], ids=fixture_id)
def test_builder_thread_changes_nothing(path, monkeypatch):
    piped = core(path)
    monkeypatch.setenv("FTFLAME_THREADS", "1")
    assert core(path) == piped


@pytest.mark.parametrize("threads", ["1", ""])
def test_progress_callback_can_stop_the_builtin_read(threads, monkeypatch):
    """Ctrl-C reaches the read through the progress callback (every 2^16
    events): it stops the decoding and the builder thread, and the exception
    comes through."""
    from ftflame.parse import _core

    monkeypatch.setenv("FTFLAME_THREADS", threads)
    seen = []

    def progress(events):
        seen.append(events)
        raise KeyboardInterrupt

    big = fixture("k6.1/s15-icount-calib/trace-full-nosleep.dat")  # 75,259 events
    with pytest.raises(KeyboardInterrupt):
        _core.read_dat_builtin(os.fsencode(big), progress=progress)
    assert seen == [1 << 16]


def zero_chunks_file(path, chunks: int) -> None:
    """One CPU: the nested calls' page, then `chunks` zstd chunks of 16,384
    pages of zeros each: 64 MiB to decode per chunk, a few KB of file, and
    not one record in them (damage the reader counts as zero pages)."""
    per = 16_384
    zeros = dw.compress("zstd", bytes(dw.PAGE * per))
    first = dw.nested_call_pages(100)[0] + bytes(dw.PAGE * (per - 1))
    cpu = dw.Compressed([(dw.compress("zstd", first), len(first))] + [(zeros, len(first))] * chunks)
    dw.write_file(str(path), dw.corner_contents(), [cpu], dw.Form(7, "zstd"))


@pytest.mark.parametrize("threads", ["1", ""])
def test_progress_comes_through_pages_without_records(tmp_path, threads, monkeypatch):
    """Pages without records (zeros, damage) gave the progress callback, and
    so Ctrl-C, no turn until a record came: a small file of compressed zeros
    kept Ctrl-C waiting for seconds. Streams now ask every 4,096 pages."""
    from ftflame.parse import _core

    monkeypatch.setenv("FTFLAME_THREADS", threads)
    path = tmp_path / "zeros.dat"
    zero_chunks_file(path, 3)
    assert core(path)["meta"]["damage"]["zero_pages"] == 4 * 16_384 - 1
    seen = []

    def progress(events):
        seen.append(events)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _core.read_dat_builtin(os.fsencode(str(path)), progress=progress)
    assert len(seen) == 1 and seen[0] <= 6


def test_ctrl_c_stops_a_read_of_pages_without_records(tmp_path):
    """SIGINT while the builtin reader decodes gigabytes of zero pages (a
    2 MB file; the reader needs 10-30 s for it): exit 130 within 5 s, one
    line, nothing written."""
    path = tmp_path / "zeros.dat"
    zero_chunks_file(path, 1000)
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen([*FTFLAME, "report", str(path), "--reader", "builtin", "-q", "-o",
                             str(out / "r.txt")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, preexec_fn=sigint_as_default, env=promptly.env_with_stacks())
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline and not holds_open(proc.pid, path):
        time.sleep(0.005)
    time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()[1]
    proc.send_signal(signal.SIGINT)
    # bounded by CPU time after the signal, not wall time (a loaded CI
    # machine failed a 5 s wall deadline): the unstopped read needs 10-30 s
    # of CPU, a stopped one a fraction of a second
    _, err, _ = promptly.communicate_within_cpu(proc, cpu_budget=5.0)
    assert proc.returncode == 130 and err == "ftflame: interrupted\n", (proc.returncode, err)
    assert os.listdir(out) == []


def test_a_curated_fixture_reads_in_one_go():
    assert core(fixture("k6.1/s10-lost/trace.dat"))["meta"]["damage"]["bad_pages"] == 0


def test_chunk_count_short_of_the_data_is_counted(tmp_path):
    """The file's own size for the CPU's data says there is more than the
    chunk count covers: the chunks after it are unread, and said so."""
    path = tmp_path / "t.dat"
    dw.write_v7(str(path), [[calls_page(100, T0 + i * 10_000) for i in range(30)]], "zstd",
                pages_per_chunk=10)
    data = bytearray(path.read_bytes())
    at = dw.cpu_data(str(path))[0][1]  # the chunk count, before the first chunk's sizes
    assert struct.unpack_from("<I", data, at)[0] == 3
    struct.pack_into("<I", data, at, 2)
    path.write_bytes(bytes(data))
    res = core(path)
    assert res["counters"]["exits"] == 20 and res["meta"]["damage"]["cut_streams"] == 1
