"""The builtin trace.dat reader (parse/core/dat_*.c) against libtracecmd, the
reference: the same Profile, every column, counter, histogram, sample and
metadata field, on every fixture (the curated set always, the full corpus
when it is here), and on copies converted by trace-cmd to file version 6 and
to version 7 uncompressed (the fixtures are all version 7, zstd)."""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import FIXTURE_DATS, SAMPLE, fixture, fixture_params


def read(path: str, reader: str):
    from ftflame.parse import dat, read

    with dat.reader_used(reader):
        return read(path)


def differences(a, b, where="profile") -> list:
    """Where two values differ: dataclasses field by field (and classes of
    slots slot by slot), arrays exactly."""
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        out = []
        for f in dataclasses.fields(a):
            if not f.compare:  # what was derived (Profile.views), not the value
                continue
            out += differences(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
        return out
    if type(a) is type(b) and getattr(type(a), "__slots__", None) and not isinstance(a, tuple):
        # column holders (KeptTrees): slot by slot
        out = []
        for name in type(a).__slots__:
            out += differences(getattr(a, name), getattr(b, name), f"{where}.{name}")
        return out
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        same = isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape \
            and a.dtype == b.dtype and np.array_equal(a, b)
        return [] if same else [where]
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where} keys {sorted(set(a) ^ set(b))}"]
        out = []
        for k in a:
            out += differences(a[k], b[k], f"{where}[{k!r}]")
        return out
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, f"{where}[{i}]")
        return out
    return [] if a == b else [f"{where}: {a!r:.80} != {b!r:.80}"]


def assert_same_profile(path: str):
    ref, own = read(path, "libtracecmd"), read(path, "builtin")
    assert ref.counters["events"] > 0
    diff = differences(ref, own)
    assert not diff, diff[:10]


@pytest.mark.parametrize("path", fixture_params(FIXTURE_DATS + [SAMPLE], {}, sample=SAMPLE))
def test_builtin_reader_equals_libtracecmd(path):
    assert_same_profile(path)


def converted(tmp_path, src: str, *opts) -> str:
    """src rewritten by `trace-cmd convert` (make setup installs trace-cmd)."""
    tc = shutil.which("trace-cmd")
    if not tc:
        pytest.fail("trace-cmd not found: make setup installs it")
    out = str(tmp_path / ("converted" + "".join(o.strip("-") for o in opts) + ".dat"))
    subprocess.run([tc, "convert", "-i", src, "-o", out, *opts], check=True, capture_output=True,
                   timeout=120)
    return out


# lost events (page missed-events marks), sched_switch, two CPUs; depth-limited
@pytest.mark.parametrize("rel", ["k6.1/s10-lost/trace.dat", "k6.1/s09-depth3/trace.dat",
                                 "k6.12/s01-v3-write4k/trace.dat"])
@pytest.mark.parametrize("opts", [("--file-version", "6"),
                                  ("--file-version", "7", "--compression", "none")],
                         ids=["v6", "v7-uncompressed"])
def test_builtin_reader_equals_libtracecmd_on_other_file_versions(tmp_path, rel, opts):
    path = converted(tmp_path, fixture(rel), *opts)
    with open(path, "rb") as f:
        head = f.read(16)
    assert head[10:12] == (b"6\0" if "6" in opts else b"7\0")
    assert_same_profile(path)


def test_builtin_reader_names_no_library_in_its_metadata():
    """The file's own compression, version and clock, as libtracecmd says them."""
    p = read(fixture("k6.1/s10-lost/trace.dat"), "builtin")
    assert (p.trace.file_version, p.trace.compression, p.trace.clock, p.trace.cpus) == \
        (7, "zstd 1.5.4", "global", 2)
    assert p.trace.kernel.startswith("Linux ") and "6.1.0" in p.trace.kernel


def test_reader_option_selects_the_reader(tmp_path):
    """--reader on report: both give the same report; an unknown one is refused."""
    import sys

    outs = []
    for reader in ("builtin", "libtracecmd"):
        out = tmp_path / f"{reader}.json"
        subprocess.run([sys.executable, "-m", "ftflame.cli", "report", "-q", "--reader", reader,
                        fixture("k6.1/s09-depth3/trace.dat"), "-o", str(out)], check=True, timeout=120)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    bad = subprocess.run([sys.executable, "-m", "ftflame.cli", "report", "--reader", "tracecmd",
                          fixture("k6.1/s09-depth3/trace.dat")], capture_output=True, text=True)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_builtin_is_the_default_reader():
    from ftflame.parse import dat

    assert dat.default_reader() == "builtin"
    assert os.path.exists(SAMPLE)


def differences_besides(a, b, allowed: tuple) -> list:
    """differences(a, b) but for the named fields (e.g. profile.trace.source)."""
    return [d for d in differences(a, b) if not d.startswith(allowed)]


@pytest.mark.parametrize("rel", ["k6.1/s10-lost/trace.dat", "k6.12/s01-v3-write4k/trace.dat"])
def test_zlib_copy_of_a_fixture_reads_as_its_zstd_original(tmp_path, rel):
    """libtracecmd here reads no zlib (trace-cmd list -c: zstd only), so the
    builtin zlib path is held to the zstd original: the fixture laid out
    again by the test writer (datwriter.recompress: every compressed section
    and chunk of pages decompressed and compressed anew, as zlib) gives the
    same Profile. The re-layout itself is checked by libtracecmd on a zstd
    copy made the same way."""
    from helpers import datwriter

    src = fixture(rel)
    zlib_copy, zstd_copy = str(tmp_path / "zlib.dat"), str(tmp_path / "zstd.dat")
    datwriter.recompress(src, zlib_copy, "zlib")
    datwriter.recompress(src, zstd_copy, "zstd")
    with open(zlib_copy, "rb") as f:
        assert f.read(32)[18:23] == b"zlib\0"
    ref = read(src, "libtracecmd")
    assert ref.counters["events"] > 0
    assert differences_besides(ref, read(zstd_copy, "libtracecmd"), ("profile.trace.source",)) == []
    own = read(zlib_copy, "builtin")
    assert own.trace.compression == "zlib 1.2.13"
    assert differences_besides(ref, own, ("profile.trace.source", "profile.trace.compression")) == []
