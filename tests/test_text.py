"""Text traces (issue 3): the C tokenizer on every dialect, against the seed,
the real text fixtures, trace-cmd report of a trace.dat, the pure-Python
parser (parity), and one hand-made input per situation (tests/data/text/)."""
from __future__ import annotations

import glob
import gzip
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from ftflame.model.errors import InputError
from ftflame.model.profile import NODE_IRQ, NODE_IRQ_ROOT, loud_warnings
from ftflame.parse import _core, read
from ftflame.parse.detect import classify
from helpers import corpus, leafroots
from helpers import textparse_py as tp
from helpers.invariants import check_irq_context
from helpers.paths import context_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT_DATA = os.path.join(ROOT, "tests", "data", "text")

# the curated text traces, and the full corpus's when it is here (tests/helpers/corpus.py)
TEXT_FIXTURES = corpus.files(corpus.CURATED, "*.txt.gz") + corpus.files(corpus.CORPUS, "*.txt.gz")
SEEDS = sorted(glob.glob(os.path.join(corpus.SEEDS, "002_*.txt")))
GRAPH_FUNCTION = "nfsd3_proc_write"  # set_graph_function of every text fixture


def fid(path):
    return corpus.label(path)


def text_of(path) -> bytes:
    with (gzip.open(path) if path.endswith(".gz") else open(path, "rb")) as f:
        return f.read()


_PROFILES = {}


def profile(path):
    if path not in _PROFILES:
        _PROFILES[path] = read(path)
    return _PROFILES[path]


def c_events(data: bytes, mail=False, chunk=1 << 20):
    """The C tokenizer's events, with function names, split into chunks."""
    res = _core.read_text_chunks([data[i:i + chunk] for i in range(0, len(data), chunk)],
                                 mode=_core.TEXT_MAIL if mail else _core.TEXT_LINES, events=True)
    rows = np.frombuffer(res["events"], dtype=np.int64).reshape(-1, 8).tolist()
    funcs = res["funcs"]
    out = []
    for kind, cpu, pid, func, depth, calltime, rettime, flags in rows:
        if kind in (tp.ENTRY, tp.EXIT, tp.LEAF):
            out.append((kind, cpu, pid, funcs[func], depth, calltime, rettime, flags))
        elif kind == tp.RENAME:
            out.append((kind, cpu, pid, depth))
        else:
            out.append((kind, cpu))
    return out, res


def tree(p):
    """{path: (calls, incl, excl)} of a Profile (the (partial) pseudo-root left
    out); " [irq]" marks the function where interrupt context starts, as
    textparse_py.build() does."""
    calls, incl, excl = p.col("calls"), p.col("incl"), p.col("excl")
    return {context_path(p, r): (int(calls[r]), int(incl[r]), int(excl[r]))
            for r in range(p.nrows) if calls[r]}


def per_function(p):
    ft = p.functions
    return {n: (int(c), int(i)) for n, c, i in zip(ft.names, ft.calls, ft.incl)}


def check_invariants(p):
    """The tree adds up, parents precede children, sums are consistent."""
    incl, excl, parent = p.col("incl"), p.col("excl"), p.col("parent")
    child = np.zeros(p.nrows + 1, dtype=np.int64)
    np.add.at(child, parent, incl)
    pseudo = np.array([p.name(r) == "(partial)" for r in range(p.nrows)], dtype=bool)
    unowned = p.col("unowned_child_incl") if "unowned_child_incl" in _node_columns() else 0
    bad = np.nonzero((incl + unowned != excl + child[:-1]) & ~pseudo)[0]
    assert len(bad) == 0, [p.path(r) for r in bad[:3]]
    assert np.all(parent < np.arange(p.nrows))
    calls = p.col("calls")
    has = calls > 0
    assert np.all(p.col("incl_min")[has] * calls[has] <= incl[has])
    assert np.all(p.col("incl_max")[has] * calls[has] >= incl[has])
    assert np.all(p.col("gap_calls") <= calls)
    assert int(calls.sum()) == p.counters["exits"] == int(p.functions.calls.sum())
    # every event is counted once (a leaf line is one event, counted as an exit)
    assert p.counters["events"] == p.counters["entries"] + p.counters["exits"] + \
        p.counters["switches"] + p.counters["other_events"]
    check_irq_context(p)


def _node_columns():
    from ftflame.model.profile import NODE_COLUMNS

    return NODE_COLUMNS


# ---- acceptance: the seed (a trace re-flowed in a mail) --------------------

def test_seed_mail_reflowed():
    p = read(SEEDS[0])
    assert p.trace.format == "text:mail"
    f = per_function(p)
    assert f["nfsd_open"] == (1, 20549)
    assert f["fh_verify"] == (1, 14904)
    assert f["dentry_open"] == (1, 4667)
    kids = {p.name(k) for k in p.children[p.roots[0]]}
    assert p.name(p.roots[0]) == "nfsd_open" and len(p.roots) == 1
    assert {"fh_verify", "dentry_open", "ima_file_check"} <= kids
    assert p.counters.get("text_unparsed", 0) == 0
    assert p.counters["orphan_exits"] == 0 and p.counters["open_at_end"] == 0
    check_invariants(p)


# ---- acceptance: every text fixture ----------------------------------------

def test_fixtures_present():
    names = {os.path.basename(f) for f in TEXT_FIXTURES if corpus.is_curated(f)}
    assert {"trace-default.txt.gz", "trace-proc-abstime-tail.txt.gz", "perf-ftrace.txt.gz"} <= names
    assert SEEDS, f"no 002_*.txt in {corpus.SEEDS}"


PRINTED = re.compile(rb"[)|]\s+(?:[+!#*@$] )?\s*(\d+)\.(\d+) us\s*\|")


@pytest.mark.parametrize("path", TEXT_FIXTURES, ids=fid)
def test_fixture_durations_as_printed(path):
    """Every printed duration, in file order, is the duration the tokenizer
    fed the builder (exits and leaves, to the nanosecond)."""
    data = text_of(path)
    printed = [int(a) * 1000 + int(b.ljust(3, b"0")[:3]) for a, b in PRINTED.findall(data)]
    events, res = c_events(data, chunk=65536 + 7)  # odd chunks: lines straddle them
    parsed = [ev[6] - ev[5] for ev in events if ev[0] in (tp.EXIT, tp.LEAF)]
    assert len(printed) > 10000
    assert parsed == printed
    assert res["text"]["unparsed"] == 0


@pytest.mark.parametrize("path", TEXT_FIXTURES, ids=fid)
def test_fixture_invariants_and_graph_calls(path):
    p = profile(path)
    check_invariants(p)
    data = text_of(path)
    entries = len(re.findall(rb"\|\s+" + GRAPH_FUNCTION.encode() + rb"(?: \[\w+\])?\(\) \{", data))
    assert entries > (40 if corpus.is_curated(path) else 100)  # the curated heads have 58-68
    assert per_function(p)[GRAPH_FUNCTION][0] == entries
    assert p.counters["text_unparsed"] == 0
    assert p.counters["orphan_exits"] == 0 and p.counters["unterminated"] == 0
    assert p.trace.format == "text:tracefs" and p.trace.compression == "gzip"
    # graph function calls are the roots
    assert all(p.name(r) == GRAPH_FUNCTION for r in p.roots)


# task-switch separators in perf-ftrace.txt.gz: the curated head, the whole file
PERF_SEPARATORS = {"data": 14, "corpus": 21}


@pytest.mark.parametrize("where", ["data", pytest.param("corpus", marks=pytest.mark.skipif(
    not corpus.in_corpus("k6.1/s11-perf-ftrace/perf-ftrace.txt.gz"),
    reason=corpus.missing_reason("k6.1/s11-perf-ftrace/perf-ftrace.txt.gz")))])
def test_fixture_stacks_and_irq_source(where):
    by = {os.path.basename(f): f for f in TEXT_FIXTURES if corpus.is_curated(f) == (where == "data")}
    seps = PERF_SEPARATORS[where]
    proc = profile(by["trace-proc-abstime-tail.txt.gz"])
    assert proc.trace.per_task and proc.trace.irq_source == "names"
    assert proc.counters["text_ts_lines"] == proc.counters["text_records"]
    default = profile(by["trace-default.txt.gz"])
    assert not default.trace.per_task
    perf = profile(by["perf-ftrace.txt.gz"])
    assert not perf.trace.per_task and perf.counters["text_separators"] == seps
    # interrupts known by name (irq_enter_rcu, __sysvec_*) are irq roots
    flags = perf.col("flags")
    irq_roots = {perf.name(r) for r in range(perf.nrows) if flags[r] & NODE_IRQ_ROOT}
    assert "irq_enter_rcu" in irq_roots
    from ftflame.report import RENDERERS

    txt = " ".join(RENDERERS["txt"].render(perf, None).split())
    assert "stacks: per CPU" in txt and f"{seps} task-switch separators" in txt
    assert "irq context: from known irq entry function names" in txt
    import json

    js = json.loads(RENDERERS["json"].render(perf, None))
    assert js["trace"]["per_task_stacks"] is False and js["trace"]["irq_source"] == "names"
    assert any(c.startswith("stacks: per CPU") for c in js["trace"]["context"])


# ---- acceptance: parity with the pure-Python parser -------------------------

@pytest.mark.parametrize("path", TEXT_FIXTURES + SEEDS, ids=fid)
def test_parity_c_python(path):
    data = text_of(path)
    mail = "seeds" in path
    ev_c, res = c_events(data, mail=mail)
    ev_py, unparsed = tp.parse_events(data.decode("utf-8", "replace"), mail=mail)
    assert len(ev_c) == len(ev_py)
    for i, (a, b) in enumerate(zip(ev_c, ev_py)):
        assert a == b, f"event {i}: C {a} != Python {b}"
    assert res["text"]["unparsed"] == len(unparsed) == 0
    paths, funcs = tp.build(ev_py)
    p = read(path)
    assert tree(p) == {k: tuple(v) for k, v in paths.items()}
    assert per_function(p) == {k: tuple(v) for k, v in funcs.items()}


# ---- acceptance: trace-cmd report text of a trace.dat ----------------------

DAT = corpus.curated("k6.1/s15-icount-calib/trace-full.dat")


def _report(tmp_path, *opts):
    out = tmp_path / ("report%s.txt" % "".join(o.replace(":", "_") for o in opts))
    with open(out, "wb") as f:
        subprocess.run(["trace-cmd", "report", *opts, DAT], stdout=f, stderr=subprocess.DEVNULL,
                       check=True)
    return str(out)


def _resolution(ns: int) -> int:
    """What trace-cmd's duration print loses: it keeps 7 digits of us."""
    digits = len(str(ns // 1000))
    return 1 if digits < 5 else 10 ** (digits - 4)


def test_tracecmd_report_matches_trace_dat(tmp_path):
    """With fgraph:tailprint (every '}' names its function), the text gives
    the trace.dat's per-function calls and inclusive sums, each call within
    the text's print resolution (1 ns below 10 ms)."""
    dat = read(DAT)
    text = read(_report(tmp_path, "-O", "fgraph:tailprint"))
    assert text.trace.format == "text:trace-cmd" and text.trace.per_task
    fd, ft = per_function(dat), per_function(text)
    assert set(fd) == set(ft)
    maxdur = dict(zip(dat.functions.names, dat.functions.incl_max.tolist()))
    for name, (calls, incl) in fd.items():
        tcalls, tincl = ft[name]
        assert tcalls == calls, name
        assert incl - calls * _resolution(maxdur[name]) <= tincl <= incl, name
    # the same anomalies are seen, from the text alone
    for k in ("exits", "orphan_exits", "unterminated", "open_at_end", "lost_events",
              "lost_unknown", "switches", "partial_entries", "irq_roots"):
        assert text.counters[k] == dat.counters[k], k
    assert text.counters["text_unparsed"] == 0
    check_invariants(text)


def test_tracecmd_report_plain_and_depth(tmp_path):
    """Without tailprint, a '}' whose entry is not in the text has no name:
    it is counted as (unknown); everything else matches. -O fgraph:depth
    gives explicit depths and the same figures."""
    dat = read(DAT)
    plain = read(_report(tmp_path))
    fd, fp = per_function(dat), per_function(plain)
    assert plain.counters["exits"] == dat.counters["exits"]
    unknown = fp.pop("(unknown)")
    assert unknown[0] == plain.counters["text_unknown_exits"] > 0
    missing = sum(fd[n][0] - fp.get(n, (0, 0))[0] for n in fd)
    assert missing == unknown[0]
    depth = read(_report(tmp_path, "-O", "fgraph:depth", "-O", "fgraph:tailprint"))
    assert per_function(depth) == per_function(read(_report(tmp_path, "-O", "fgraph:tailprint")))


def test_tracecmd_report_raw_is_exact(tmp_path):
    """-R prints calltime and rettime: the text gives the trace.dat's sums to
    the nanosecond, and its tree."""
    dat = read(DAT)
    raw = read(_report(tmp_path, "-R"))
    assert per_function(raw) == per_function(dat)
    assert tree(raw) == tree(dat)


def test_tracecmd_report_latency_flags_and_parity(tmp_path):
    """-l prints the latency flags: irq context comes from them; the C and
    Python parsers agree on every event of the -l and tailprint forms."""
    lat = _report(tmp_path, "-l")
    p = read(lat)
    assert p.trace.irq_source == "latency-flags+names"
    assert p.counters["text_flag_lines"] == p.counters["text_tracecmd_lines"] > 0
    assert per_function(p) == per_function(read(_report(tmp_path)))
    for path in (lat, _report(tmp_path, "-O", "fgraph:tailprint")):
        raw = text_of(path)
        ev_c, res = c_events(raw)
        ev_py, unparsed = tp.parse_events(raw.decode("utf-8", "replace"))
        assert ev_c == ev_py and not unparsed and res["text"]["unparsed"] == 0
        paths, _ = tp.build(ev_py)
        assert tree(read(path)) == {k: tuple(v) for k, v in paths.items()}


# ---- one hand-made input per situation -------------------------------------

def data(name):
    return os.path.join(TEXT_DATA, name)


def paths_of(p):
    return {"/".join(k): v for k, v in tree(p).items()}


def test_duration_markers():
    p = read(data("markers.txt"))
    t = paths_of(p)
    assert t["outer/plain"][1] == 500
    assert t["outer/plus"][1] == 12345
    assert t["outer/bang"][1] == 140417
    assert t["outer/hash"][1] == 1837709
    assert t["outer/star"][1] == 33998590   # 7 digits printed: 10 ns resolution
    assert t["outer/at"][1] == 119760200
    assert t["outer/dollar"][1] == 3594274000
    assert t["outer"][1] == 3800000000


def test_duration_units():
    """ns, us, ms and s durations, each read in its own unit (no fixture has
    an ms, s or ns duration: one read as us would pass everything else)."""
    p = read(data("units.txt"))
    t = paths_of(p)
    assert t["outer/in_ns"][1] == 850
    assert t["outer/in_us"][1] == 2_500
    assert t["outer/in_ms"][1] == 1_250_000
    assert t["outer/in_s"][1] == 1_500_000_000
    assert t["outer"][1] == 2_000_001_000


def test_tail_comments_and_orphans():
    p = read(data("tail.txt"))
    t = paths_of(p)
    assert t["(partial)/began_before_trace"] == (1, 2000, 2000)
    assert t["(partial)/outer_unknown"][1] == 15000  # module suffix dropped from the tail
    assert t["caller/middle/leaf"][1] == 1000 and t["caller"] == (1, 5000, 2000)
    assert p.counters["orphan_exits"] == 2 and p.counters["text_unknown_exits"] == 0


def test_retval_comments_both_styles():
    p = read(data("retval.txt"))
    t = paths_of(p)
    assert t["nfsd_open/cgroup_migrate_add_task"][1] == 651
    assert t["nfsd_open/fh_verify"][1] == 300
    assert t["nfsd_open/may_open"] == (1, 2335, 2235)  # '} /* may_open = -22 */'
    assert t["nfsd_open/dentry_open"] == (1, 1000, 800)  # '} /* dentry_open ret=-22 */'
    assert t["nfsd_open/dentry_open/vfs_open"][1] == 200  # retaddr + ret comment
    assert p.counters["text_tail_mismatch"] == 0 and p.counters["text_unparsed"] == 0


def test_abstime():
    p = read(data("abstime.txt"))
    assert paths_of(p)["outer"] == (1, 10250, 8750)
    # the exit line's time is the return; the root call began dur earlier
    s = p.samples
    outer = [r for r in s.tolist() if p.name(r[0]) == "outer"][0]
    assert outer[4] == 100000020000 - 10250
    assert p.counters["text_ts_lines"] == 4 and p.trace.cpus == 2


def test_proc_column_gives_task_stacks():
    """Two tasks interleave on one CPU: with the comm-pid column each has its
    own stack, so nfsd-143's call does not land inside nfsd-142's."""
    p = read(data("proc.txt"))
    assert p.trace.per_task
    t = paths_of(p)
    assert t["nfsd3_proc_write"] == (2, 34000, 13000)
    assert t["nfsd3_proc_write/nfsd_write"] == (1, 20000, 20000)
    assert t["tick"][1] == 500  # <idle>-0
    assert sorted(p.scol("pid").tolist()) == [0, 142, 143]


def test_lost_events():
    p = read(data("lost.txt"))
    assert p.lost_per_cpu == {0: 12}
    assert p.counters["lost_events"] == 12 and p.counters["orphan_exits"] == 1
    t = paths_of(p)
    assert t["(partial)/lost_entry"][1] == 2000
    # the call that spans the gap is counted, and marked for corrections
    outer = [r for r in range(p.nrows) if p.path(r) == ["outer"]][0]
    assert p.col("gap_calls")[outer] == 1
    from ftflame.report.common import anomaly_lines

    assert any(line.startswith("LOST EVENTS") for line in anomaly_lines(p))


def test_irq_arrows():
    p = read(data("irq_arrows.txt"))
    assert p.trace.irq_source == "arrows+names"
    rows = {"/".join(p.path(r)): r for r in range(p.nrows)}
    flags = p.col("flags")
    r = rows["task_work/handle_level_irq"]
    assert flags[r] & NODE_IRQ_ROOT and flags[rows["task_work/handle_level_irq/handler"]] & NODE_IRQ
    assert not flags[rows["task_work/after"]] & NODE_IRQ  # the arrow back ends irq context
    root = rows["task_work"]
    assert p.col("irq")[root] == 3000 and p.col("irq_calls")[root] == 2
    assert p.col("desc")[root] == 2  # before, after: irq calls left out of D


def test_task_switch_separators():
    """Without a task column, the separators switch stacks: nfsd-142's call
    nests alone, and nfsd-143's stack continues after the switch back."""
    p = read(data("switch.txt"))
    assert not p.trace.per_task and p.counters["text_separators"] == 2
    t = paths_of(p)
    assert t["nfsd3_proc_write"] == (2, 225000, 14000)
    assert t["nfsd3_proc_write/fh_verify"] == (1, 1000, 1000)
    assert t["nfsd3_proc_write/nfsd_write/schedule"] == (1, 200000, 200000)
    assert p.counters["unterminated"] == 0 and p.counters["orphan_exits"] == 0
    # nfsd-143 ran first, unnamed until the first separator: its calls,
    # open then, get its pid
    assert sorted(p.scol("pid").tolist()) == [142, 143]


def test_module_suffix():
    p = read(data("module.txt"))
    t = paths_of(p)
    assert t["nfsd_open"] == (1, 1500, 603)
    assert t["nfsd_open/sunrpc_cache_lookup/_raw_read_lock"][1] == 27
    assert all("[" not in n for n in p.funcs)


def test_tracecmd_lines():
    p = read(data("tracecmd.txt"))
    assert p.trace.format == "text:trace-cmd" and p.trace.per_task
    t = paths_of(p)
    assert t["nfsd4_write"][1] == 176000
    assert t["nfsd4_write/fh_verify/_raw_spin_lock_irqsave"][1] == 991
    assert t["nfsd4_getattr"][1] == 2000
    assert p.counters["switches"] == 2 and p.trace.has_sched_switch
    assert p.lost_per_cpu == {0: 5, 1: 0} and p.lost_gaps_unknown_per_cpu == {1: 1}
    # off-CPU time from sched_switch: 95 us inside fh_verify and nfsd4_write
    rows = {"/".join(p.path(r)): r for r in range(p.nrows)}
    assert p.col("offcpu")[rows["nfsd4_write/fh_verify"]] == 95000


def test_mail_small():
    p = read(data("mail.txt"))
    assert p.trace.format == "text:mail"
    assert paths_of(p) == {"nfsd_open": (1, 20000, 6500), "nfsd_open/fh_verify": (1, 12500, 12457),
                           "nfsd_open/fh_verify/exp_find": (1, 43, 43),
                           "nfsd_open/dentry_open": (1, 1000, 1000)}


@pytest.mark.parametrize("name", sorted(os.listdir(TEXT_DATA)))
def test_small_inputs_parity_and_invariants(name):
    path = data(name)
    raw = text_of(path)
    mail = name.startswith("mail")
    ev_c, res = c_events(raw, mail=mail, chunk=5)
    ev_py, unparsed = tp.parse_events(raw.decode(), mail=mail)
    assert ev_c == ev_py and len(unparsed) == res["text"]["unparsed"]
    # only wrapped.txt keeps lines no re-join can mend (comment tails)
    assert not unparsed or name == "wrapped.txt"
    p = read(path)
    paths, funcs = tp.build(ev_py)
    assert tree(p) == {k: tuple(v) for k, v in paths.items()}
    check_invariants(p)


# ---- streams, compression, detection ---------------------------------------

def test_compressed_and_stdin(tmp_path):
    import lzma

    src = data("switch.txt")
    raw = text_of(src)
    want = tree(read(src))
    (tmp_path / "t.txt.xz").write_bytes(lzma.compress(raw))
    (tmp_path / "t.txt.gz").write_bytes(gzip.compress(raw))
    assert tree(read(str(tmp_path / "t.txt.xz"))) == want
    assert tree(read(str(tmp_path / "t.txt.gz"))) == want
    if shutil.which("zstd"):
        subprocess.run(["zstd", "-q", "-o", str(tmp_path / "t.txt.zst"), src], check=True)
        p = read(str(tmp_path / "t.txt.zst"))
        assert tree(p) == want and p.trace.compression == "zstd"
    # stdin, through the command line, compressed
    out = subprocess.run([sys.executable, "-m", "ftflame.cli", "report", "-", "-F", "json"],
                         input=gzip.compress(raw), capture_output=True, check=True)
    import json

    js = json.loads(out.stdout)
    assert js["trace"]["source"] == "<stdin>" and js["trace"]["compression"] == "gzip"


def test_gzipped_trace_dat_from_stdin(tmp_path):
    small = corpus.curated("k6.1/s06-calib-pair/trace-root.dat")
    gz = gzip.compress(open(small, "rb").read(), compresslevel=1)
    out = subprocess.run([sys.executable, "-m", "ftflame.cli", "report", "-", "-F", "folded"],
                         input=gz, capture_output=True, check=True)
    direct = subprocess.run([sys.executable, "-m", "ftflame.cli", "report", small, "-F", "folded"],
                            capture_output=True, check=True)
    assert out.stdout == direct.stdout


@pytest.mark.parametrize("content,problem", [
    (b"hello world\nthis is not a trace\n", "not a function_graph trace"),
    (b"# tracer: function\n#\n  bash-1 [000] 1.0: foo <-bar\n", "'function' tracer"),
    (b"\x00\x01\x02binary", "binary data"),
    (gzip.compress(b"just words\n"), "not a function_graph trace"),
    (gzip.compress(b"")[:12], "corrupt or truncated"),
    (b"# tracer: function_graph\n#\n# CPU  DURATION   FUNCTION CALLS\n", "no function_graph calls"),
])
def test_detection_errors(tmp_path, content, problem):
    f = tmp_path / "input.txt"
    f.write_bytes(content)
    with pytest.raises(InputError) as e:
        read(str(f))
    assert problem in str(e.value)
    if "not a function_graph" in problem:
        assert "tried:" in str(e.value) and "trace-cmd report" in str(e.value)
    r = subprocess.run([sys.executable, "-m", "ftflame.cli", "report", str(f)], capture_output=True)
    assert r.returncode == 2 and r.stderr.count(b"\n") == 1 and b"Traceback" not in r.stderr


def test_classify_dialects():
    assert classify(text_of(data("tracecmd.txt")), "x").dialect == "trace-cmd"
    assert classify(text_of(data("proc.txt")), "x").dialect == "tracefs"
    assert classify(text_of(data("mail.txt")), "x").dialect == "mail"
    # no header: line shape alone
    body = b"\n".join(text_of(data("markers.txt")).split(b"\n")[4:])
    assert classify(body, "x").dialect == "tracefs"


def test_unparsed_lines_are_counted_and_shown(tmp_path):
    raw = text_of(data("markers.txt")).replace(b" 0)   0.500 us    |    plain();",
                                                  b" 0) garbage line here")
    f = tmp_path / "bad.txt"
    f.write_bytes(raw)
    p = read(str(f))
    assert p.counters["text_unparsed"] == 1
    assert any("not understood" in w.text.lower() and "garbage" in w.text for w in loud_warnings(p.warnings))


def test_chunking_does_not_matter():
    raw = text_of(data("tracecmd.txt")) + text_of(data("proc.txt"))
    whole, _ = c_events(raw, chunk=len(raw))
    for chunk in (1, 2, 3, 17, 100):
        assert c_events(raw, chunk=chunk)[0] == whole


def test_truncated_compressed_stream(tmp_path):
    """A .gz cut in the middle: one clear error, not a partial report."""
    big = text_of(data("proc.txt")) * 20000  # several MiB of text: many chunks
    gz = gzip.compress(big)
    f = tmp_path / "cut.txt.gz"
    f.write_bytes(gz[: len(gz) * 2 // 3])
    with pytest.raises(InputError) as e:
        read(str(f))
    assert "corrupt or truncated" in str(e.value)
    out = tmp_path / "r.txt"
    r = subprocess.run([sys.executable, "-m", "ftflame.cli", "report", str(f), "-o", str(out)],
                       capture_output=True)
    assert r.returncode == 2 and not out.exists() and b"Traceback" not in r.stderr


def test_tracecmd_newer_forms():
    """trace-cmd 3.3+/3.4: latency column by default, (ret=...), args,
    return addresses before the brace; 'h' in the flags marks hardirq."""
    p = read(data("tracecmd-new.txt"))
    t = paths_of(p)
    assert t["vfs_write"] == (1, 18414, 18414 - 1005 - 300 - 800)
    assert t["vfs_write/rw_verify_area"][1] == 800
    assert t["vfs_write/__mutex_unlock_slowpath"][1] == 1005
    rows = {"/".join(p.path(r)): r for r in range(p.nrows)}
    assert p.col("flags")[rows["vfs_write/irq_handler_stub"]] & NODE_IRQ_ROOT
    assert p.trace.irq_source == "latency-flags+names"


def test_kernel_613_retaddr_args_retval():
    p = read(data("kernel613.txt"))
    assert paths_of(p) == {"vfs_write": (1, 5000, 3700), "vfs_write/rw_verify_area": (1, 300, 300),
                           "vfs_write/file_start_write": (1, 1000, 900),
                           "vfs_write/file_start_write/__sb_start_write": (1, 100, 100)}
    assert p.counters["text_tail_mismatch"] == 0


def test_migration_note_says_what_was_done():
    """Issue 11 item 10: on per-CPU stacks (no task column) a call that ends
    on another CPU was followed through the task-switch separators; the note
    must not claim per-task stacks."""
    from ftflame.report.common import anomaly_lines
    p = read(data("migrate.txt"))
    assert not p.trace.per_task and p.counters["migrations"] == 3
    note = [n for n in anomaly_lines(p) if "migrated" in n]
    assert len(note) == 1 and "stacks are per task" not in note[0]
    assert "separators" in note[0] and "per CPU" in note[0]
    assert tree(p)["nfsd3_proc_write",] == (1, 220000, 10000)


# ---- issue 11 item 9: text a mail client wrapped ------------------------------

# the curated head of the corpus's tracefs dump (fmt is in coreutils)
TRACEFS = corpus.curated("k6.1/s07-tracefs-text/trace-default.txt.gz")


def test_tracefs_text_rewrapped_by_fmt_reads_like_the_original(tmp_path):
    """A real tracefs trace pasted into a mail and re-flowed at 72 columns
    (`fmt -w 72` joins short lines and breaks long ones at spaces): the same
    calls, functions and inclusive sums as the unwrapped trace."""
    wrapped = subprocess.run(["fmt", "-w", "72"], input=text_of(TRACEFS), capture_output=True,
                             check=True).stdout
    path = tmp_path / "wrapped.txt"
    path.write_bytes(wrapped)
    orig, p = read(TRACEFS), read(str(path))
    assert p.trace.format == "text:mail"
    assert p.counters["text_records"] == orig.counters["text_records"]
    assert per_function(p) == per_function(orig)
    assert p.counters["text_rejoined"] > 0
    assert p.counters["text_prose_lines"] == p.counters["text_broken_records"] == 0
    assert not loud_warnings(p.warnings)
    assert any("re-joining what a mail client wrapped" in w.text for w in p.warnings)


def test_lines_wrapped_without_reflow_are_rejoined():
    """Long lines wrapped at a space, short ones left alone (line mode): a
    line that begins no record continues the one before it. Where the first
    part stood alone as a record (cut inside a trailing comment), the rest is
    passed over, loudly."""
    orig, p = read(data("kernel613.txt")), read(data("wrapped.txt"))
    assert tree(p) == tree(orig)
    assert p.counters["text_rejoined"] == 1 and p.counters["text_unparsed"] == 2
    loud = loud_warnings(p.warnings)
    assert len(loud) == 1 and loud[0].text.startswith("PART OF THE TEXT NOT UNDERSTOOD")
    assert "2 of 16 lines (12.5%)" in loud[0].text


def test_mail_cut_beyond_repair_warns_in_every_output(tmp_path):
    """A record cut inside a name cannot be mended: every output says so,
    with the share of lines not understood (stderr for the folded file)."""
    src = data("mail-wrapped.txt")
    p = read(src)
    assert sorted(per_function(p)) == ["exp_find", "fh_verify", "nfsd_close", "nfsd_open"]
    assert p.counters["text_broken_records"] == 1 and p.counters["text_rejoined"] == 6
    for fmt in ("txt", "json", "folded"):
        out = tmp_path / f"r.{fmt}"
        proc = subprocess.run([sys.executable, "-m", "ftflame.cli", "report", src, "-o", str(out)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        said = out.read_text() if fmt != "folded" else proc.stderr
        said = " ".join(said.split())
        assert "PART OF THE TEXT NOT UNDERSTOOD: 1 record cut apart" in said, fmt
        assert "4 of 11 lines (36.4%) hold no trace record" in said, fmt


@pytest.mark.parametrize("corrected", [False, True])
def test_the_roots_a_call_tree_hides_leave_no_blank_lines(tmp_path, corrected):
    """A root function's tree is followed by a blank line; the roots past
    TREE_MAX_LINES were each given one too, though nothing of them is
    printed: 99,851 blank lines in the text of 100k distinct root functions.
    They are counted in the note that ends the tree, and take no line."""
    from ftflame.correct.corrections import correct
    from ftflame.model.profile import Calibration
    from ftflame.report import text

    n = 2000
    path = tmp_path / "roots.txt"
    path.write_text(leafroots.trace(leafroots.line(0, f"{1 + i % 97}.000", f"f_{i}") for i in range(n)))
    p = read(str(path))
    if corrected:
        p = correct(p, Calibration(10.0, 20.0, "test", "fixed values (test)"))
    lines = text.call_tree(p)
    assert len(lines) < 3 * text.TREE_MAX_LINES, f"{len(lines)} lines for a tree of {text.TREE_MAX_LINES} rows"
    assert "\n\n\n" not in "\n".join(lines)
    assert f"({n - text.TREE_MAX_LINES:,} smaller or deeper paths not shown" in "\n".join(lines)


@pytest.mark.parametrize("corrected", [False, True])
def test_the_call_tree_sorts_many_roots_without_a_python_key_each(tmp_path, monkeypatch, corrected):
    """The text call tree shows TREE_MAX_LINES paths; with 100k distinct
    root functions its roots were sorted by a Python key per root (a name
    looked up for each) and each walked to be counted as hidden. Counted,
    not timed: names looked up for the rows printed only; the same text as
    the Python sort's (ties by name)."""
    from ftflame.correct.corrections import correct
    from ftflame.model.profile import Calibration, Profile
    from ftflame.report import text

    n = 5000
    path = tmp_path / "roots.txt"
    path.write_text(leafroots.trace(leafroots.line(0, f"{1 + i % 97}.000", f"f_{(i * 7919) % n}") for i in range(n)))
    p = read(str(path))
    if corrected:
        p = correct(p, Calibration(10.0, 20.0, "test", "fixed values (test)"))
    looked_up = {"n": 0}
    name = Profile.name

    def counted(self, row):
        looked_up["n"] += 1
        return name(self, row)

    monkeypatch.setattr(Profile, "name", counted)
    lines = text.call_tree(p)
    assert looked_up["n"] <= 2 * text.TREE_MAX_LINES, f"{looked_up['n']} names looked up for {n} roots"
    shown = [line.split()[-1] for line in lines[4:4 + 2 * text.TREE_MAX_LINES] if line.strip()]
    want = sorted((-(1 + i % 97), f"f_{(i * 7919) % n}") for i in range(n))
    assert shown[:text.TREE_MAX_LINES] == [f for _, f in want[:text.TREE_MAX_LINES]]
    assert f"({n - text.TREE_MAX_LINES:,} smaller or deeper paths not shown" in "\n".join(lines)
