"""Return values (CONFIG_FUNCTION_GRAPH_RETVAL, 6.5+): per function, the
calls that returned an error code counted, with their inclusive times apart
from the others, the same from both trace.dat readers and from the text.

No kernel here records return values: the trace.dat is hand-made
(helpers/datwriter.py, the 6.5 exit layout) and the text is the same calls
as the kernel prints them, in both comment styles."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import DATA
from helpers import datwriter as dw
from helpers.readers import FTFLAME

INT_MINUS_5 = 0xfffffffb  # an int's -EIO in a long register: the upper half clear
POINTER = 0xffff888100a8b200

# Root calls: (function, duration ns, return value, children), one task.
# vfs_write's values: a count, -EIO, -4096 (no error code), -4095 (the last one).
ROOTS = [
    ("svc_process", 9000, 0, [("nfsd_dispatch", 8000, 1, [("nfsd3_proc_write", 7000, 0, [
        ("nfsd_vfs_write", 6000, 0, [("vfs_write", 5000, 4096, [])])])])]),
    ("svc_process", 9500, 0, [("nfsd_dispatch", 8500, 1, [("nfsd3_proc_write", 7500, 0, [
        ("nfsd_vfs_write", 6500, INT_MINUS_5, [("vfs_write", 2000, -5, [])])])])]),
    ("svc_process", 9700, 0, [("nfsd_dispatch", 8700, 1, [("nfsd3_proc_write", 7700, 0, [
        ("nfsd_vfs_write", 6700, 0, [("vfs_write", 5700, -4096, [])])])])]),
    ("svc_process", 9900, 0, [("nfsd_dispatch", 8900, 1, [("nfsd3_proc_write", 7900, 0, [
        ("nfsd_vfs_write", 6900, POINTER, [("vfs_write", 3000, -4095, [])])])])]),
]
# what the calls above returned: (errors, error ns, other calls, their ns) per function
EXPECTED = {
    "svc_process": (0, 0, 4, 9000 + 9500 + 9700 + 9900),
    "nfsd_dispatch": (0, 0, 4, 8000 + 8500 + 8700 + 8900),
    "nfsd3_proc_write": (0, 0, 4, 7000 + 7500 + 7700 + 7900),
    "nfsd_vfs_write": (1, 6500, 3, 6000 + 6700 + 6900),
    "vfs_write": (2, 2000 + 3000, 2, 5000 + 5700),
}
T0 = 1_000_000


def _events(call, depth: int, start: int, out: list) -> None:
    """(ts, kind, function, depth, calltime, rettime, retval) of a call,
    its children laid out 100 ns apart after its entry."""
    name, dur, ret, children = call
    out.append((start, "entry", name, depth, 0, 0, 0))
    at = start + 100
    for child in children:
        _events(child, depth + 1, at, out)
        at += child[1] + 100
    out.append((start + dur, "exit", name, depth, start, start + dur, ret))


def dat_trace(path, form: dw.Form = dw.LE64, roots=ROOTS) -> None:
    evs, start = [], T0
    for root in roots:
        _events(root, 0, start, evs)
        start += root[1] + 1000
    body, last = b"", T0
    for ts, kind, name, depth, calltime, rettime, ret in evs:
        rec = (dw.retval_entry(100, name, depth, form) if kind == "entry" else
               dw.retval_exit(100, name, depth, calltime, rettime, ret, form))
        body += dw.record(ts - last, rec, form)
        last = ts
    dw.write_file(str(path), dw.retval_contents(form), [[dw.page(T0, body, form=form)]], form)


def _printed(ret: int, style: int) -> str:
    """A return value as the kernel prints it: an error code in decimal,
    anything else in hex; style 2 is funcgraph-retval-hex (all in hex)."""
    raw = ret & (2 ** 64 - 1)
    signed = raw - 2 ** 64 if raw >> 63 else raw
    if raw >> 32 == 0 and raw & 0x80000000:
        signed = raw - 2 ** 32
    if -4095 <= signed <= -1 and style != 2:
        return str(signed)
    return hex(raw)


def text_trace(path) -> None:
    """The same calls in tracefs text: the first root call's comments as
    6.5-6.12 print them (`/* = X */`), the others as 6.13+ (`ret=X`), the
    third with funcgraph-retval-hex."""
    lines = ["# tracer: function_graph", "#", "# CPU  DURATION                  FUNCTION CALLS",
             "# |     |   |                     |   |   |   |"]

    def walk(call, depth, style):
        name, dur, ret, children = call
        pad = "  " * depth
        value = _printed(ret, style)
        tail = f"= {value}" if style == 0 else f"ret={value}"
        time = f"{dur / 1000:>8.3f} us    |  "
        if not children:
            lines.append(f" 0) {time}{pad}{name}(); /* {tail} */")
            return
        lines.append(f" 0)               |  {pad}{name}() {{")
        for child in children:
            walk(child, depth + 1, style)
        lines.append(f" 0) {time}{pad}}} /* {name} {'= ' if style == 0 else 'ret='}{value} */")

    for k, root in enumerate(ROOTS):
        walk(root, 0, 0 if k == 0 else 2 if k == 2 else 1)
    path.write_text("\n".join(lines) + "\n")


def returns_of(p) -> dict:
    ft = p.functions
    rs = ft.returns
    assert rs is not None
    return {ft.names[i]: (int(rs.err.calls[i]), int(rs.err.incl[i]), int(rs.ok.calls[i]), int(rs.ok.incl[i]))
            for i in range(len(ft))}


def read_with(path, reader: str):
    from ftflame.parse import dat, read

    with dat.reader_used(reader):
        return read(str(path))


FORMS = {"le64": dw.LE64, "le32": dw.Form(long_size=4), "be64": dw.Form(big_endian=True)}


@pytest.mark.parametrize("form", FORMS.values(), ids=FORMS.keys())
def test_error_calls_per_function_from_both_readers(tmp_path, form):
    """-EIO as a long and as an int are errors, -4095 is the last error code,
    -4096, a count and a pointer are not: both readers count the same calls
    with the same inclusive times, as written."""
    path = tmp_path / "retval.dat"
    dat_trace(path, form)
    own, ref = read_with(path, "builtin"), read_with(path, "libtracecmd")
    assert own.trace.has_retval and ref.trace.has_retval
    assert returns_of(own) == returns_of(ref) == EXPECTED
    ft, rs = own.functions, own.functions.returns
    i = ft.index("vfs_write")
    assert (rs.err.incl_min[i], rs.err.incl_max[i]) == (2000, 3000)
    assert (rs.ok.incl_min[i], rs.ok.incl_max[i]) == (5000, 5700)
    # percentiles from the same buckets as every other: within their resolution
    assert abs(rs.err.incl_pct[i][2] - 3000) <= 3000 / 16 and abs(rs.ok.incl_pct[i][0] - 5000) <= 5000 / 16


def test_text_in_both_comment_styles_gives_the_trace_dat_figures(tmp_path):
    """`/* = -5 */`, `/* ret=-5 */` and the hex form 0xfffffffb of an int's
    -5: the text reader counts what the trace.dat readers count."""
    dat, txt = tmp_path / "retval.dat", tmp_path / "retval.txt"
    dat_trace(dat)
    text_trace(txt)
    from ftflame.parse import read

    text = read(str(txt))
    assert text.trace.has_retval and text.counters["text_unparsed"] == 0
    assert returns_of(text) == returns_of(read_with(dat, "builtin")) == EXPECTED


def test_text_retval_comments_of_every_form():
    """tests/data/text/retval.txt: errors in `} /* f = -22 */`, `ret=-22`
    and a leaf's `/* = -13 */`; a pointer and ret=0x0 are no errors; the
    root's `}` prints no value: it counts in neither."""
    from ftflame.parse import read

    got = returns_of(read(os.path.join(DATA, "text", "retval.txt")))
    assert got["may_open"] == (1, 2335, 0, 0) and got["dentry_open"] == (1, 1000, 0, 0)
    assert got["inode_permission"] == (1, 100, 0, 0)
    assert got["cgroup_migrate_add_task"] == (0, 0, 1, 651) and got["vfs_open"] == (0, 0, 1, 200)
    assert got["nfsd_open"] == (0, 0, 0, 0)


def test_trace_cmd_ret_trailer():
    """tests/data/text/tracecmd-new.txt: trace-cmd's `(ret=-5)`, `(ret=0)`
    and a leaf's `(ret=0x0)` after the `(N)` depth."""
    from ftflame.parse import read

    got = returns_of(read(os.path.join(DATA, "text", "tracecmd-new.txt")))
    assert got["vfs_write"] == (1, 18414, 0, 0)
    assert got["rw_verify_area"] == (0, 0, 1, 800) and got["__mutex_unlock_slowpath"] == (0, 0, 1, 1005)
    assert got["irq_handler_stub"] == (0, 0, 0, 0)


def test_no_return_values_no_figures(tmp_path):
    """A 6.1 layout (no retval field): no return figures anywhere, and the
    text report and JSON say nothing of them."""
    path = tmp_path / "plain.dat"
    dw.write_v6(str(path), [dw.nested_call_pages()])
    from ftflame.parse import read

    p = read(str(path))
    assert p.retvals is None and p.functions.returns is None and not p.trace.has_retval
    out = subprocess.run([*FTFLAME, "report", str(path)], capture_output=True, text=True, check=True).stdout
    assert "error" not in out.lower()
    doc = json.loads(subprocess.run([*FTFLAME, "report", "-F", "json", str(path)], capture_output=True,
                                    text=True, check=True).stdout)
    assert all("returns" not in f for f in doc["functions"])


def test_reports_show_the_error_calls(tmp_path):
    """The text report's error table and the JSON's functions[].returns
    print the figures of FunctionTable.returns."""
    path = tmp_path / "retval.dat"
    dat_trace(path)
    out = subprocess.run([*FTFLAME, "report", str(path)], capture_output=True, text=True, check=True).stdout
    table = out[out.index("Functions that returned errors"):].splitlines()
    rows = [line.split() for line in table[4:6]]
    # most errors first: vfs_write's 2 of 4 (mean 2.5 us, max 3 us, the others' mean 5.35 us)
    assert rows[0] == ["2", "4", "2.500", "3.000", "5.350", "vfs_write"]
    assert rows[1] == ["1", "4", "6.500", "6.500", "6.533", "nfsd_vfs_write"]
    doc = json.loads(subprocess.run([*FTFLAME, "report", "-F", "json", str(path)], capture_output=True,
                                    text=True, check=True).stdout)
    ret = {f["name"]: f["returns"] for f in doc["functions"]}
    assert ret["vfs_write"]["calls"] == 4 and ret["vfs_write"]["errors"] == 2
    assert ret["vfs_write"]["error_incl_ns"]["sum"] == 5000 and ret["vfs_write"]["error_incl_ns"]["max"] == 3000
    assert ret["vfs_write"]["ok_incl_ns"]["mean"] == 5350.0
    assert ret["svc_process"]["errors"] == 0 and ret["svc_process"]["ok_incl_ns"]["sum"] == 38100
    subprocess.run([*FTFLAME, "report", "-q", "-o", str(tmp_path / "r.html"), str(path)], check=True)
    # the HTML's function panel: the same figures, in the functions' order
    assert '"ret":{"calls":[4,4,4,4,4],"err":[0,0,0,1,2],"err_mean":[0.0,0.0,0.0,6500.0,2500.0]' in \
        (tmp_path / "r.html").read_text()


def test_no_error_among_the_return_values(tmp_path):
    """Return values, none an error code: the text says so in one line."""
    from ftflame.parse.tables import build_events

    p = build_events([("entry", 0, 1, 0, "f", 0, 10, 0, 0, 0, 0, 0),
                      ("exit", 0, 1, 0, "f", 0, 20, 10, 20, 0, 0, 0, -4096)])
    from ftflame.report import text

    lines = text.error_table(p)
    assert len(lines) == 2 and "none of the 1 call with a return value" in lines[0]


# ---- the slowest calls' trees: arguments and return values -----------------------

S24 = os.path.join(DATA, "fixtures", "k7.x", "s24-funcgraph-args", "trace.dat")


def slowest_doc(path, reader: str = "builtin") -> list:
    proc = subprocess.run([*FTFLAME, "report", "--reader", reader, "-F", "json", str(path)],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)["slowest"]


def test_slowest_trees_carry_the_recorded_return_values(tmp_path):
    """Every call of a kept tree with its return value as the kernel prints
    it (an int's -5 as -5, -4096 in hex), the same from both readers and
    from the text; the text report names the calls that returned errors."""
    dat, txt = tmp_path / "retval.dat", tmp_path / "retval.txt"
    dat_trace(dat)
    text_trace(txt)
    docs = [slowest_doc(dat), slowest_doc(dat, "libtracecmd"), slowest_doc(txt)]
    rets = [sorted(s["tree"]["ret"] for s in d) for d in docs]
    assert rets[1:] == [rets[0]] * 2
    assert rets[0] == sorted([
        ["0x0", "0x1", "0x0", "0x0", "0x1000"], ["0x0", "0x1", "0x0", "-5", "-5"],
        ["0x0", "0x1", "0x0", "0x0", "0xfffffffffffff000"], ["0x0", "0x1", "0x0", "0xffff888100a8b200", "-4095"]])
    assert all("args" not in s["tree"] for d in docs for s in d)
    out = subprocess.run([*FTFLAME, "report", str(dat)], capture_output=True, text=True, check=True).stdout
    assert "  call: svc_process = 0x0" in out
    assert "  errors: 2 calls returned an error code: nfsd_vfs_write = -5, vfs_write = -5" in out
    html = subprocess.run([*FTFLAME, "report", "-F", "html", "-o", str(tmp_path / "r.html"), str(dat)],
                          capture_output=True, text=True, check=True)
    assert html.returncode == 0 and '"ret":["0x0","0x1","0x0","-5","-5"]' in (tmp_path / "r.html").read_text()


def test_slowest_trees_carry_the_recorded_arguments():
    """k7.x/s24 (funcgraph-args): each call's six argument values as its
    entry recorded them, the same from both readers; the first
    nfsd3_proc_write's are the ones trace-cmd 3.4 prints (ff3a5a5584ab7800,
    0, 80, ...). No return values in this trace: none claimed."""
    own, ref = slowest_doc(S24), slowest_doc(S24, "libtracecmd")
    assert [s["tree"]["args"] for s in own] == [s["tree"]["args"] for s in ref]
    first = min(own, key=lambda s: s["start_ns"])
    assert first["tree"]["funcs"][0] == "nfsd3_proc_write"
    assert first["tree"]["args"][0] == ["0xff3a5a5584ab7800", "0", "0x80", "0x80", "0x7fffffff", "0"]
    assert all(len(a) == 6 for s in own for a in s["tree"]["args"]) and all("ret" not in s["tree"] for s in own)
    out = subprocess.run([*FTFLAME, "report", S24], capture_output=True, text=True, check=True).stdout
    assert "  call: nfsd3_proc_write(0xff3a5a5584ab7800, 0, 0x80, 0x80, 0x7fffffff, 0)" in out
    calls = [line for line in out.splitlines() if line.startswith("  call: ")]
    assert calls and not any(" = " in line for line in calls) and "  errors: " not in out


def test_arguments_as_many_as_recorded():
    """An entry with fewer argument values (a 32-bit record, or a kernel
    that records fewer): only those are shown; a call whose entry carried
    none shows none."""
    from ftflame.correct.operations import slowest_calls
    from ftflame.parse.tables import build_events

    p = build_events([("entry", 0, 1, 0, "f", 0, 10, 0, 0, 0, 0, 0, None, (0x10, 0)),
                      ("entry", 0, 1, 0, "g", 1, 11, 0, 0, 0, 0, 0),
                      ("exit", 0, 1, 0, "g", 1, 15, 11, 15, 0, 0, 0),
                      ("exit", 0, 1, 0, "f", 0, 20, 10, 20, 0, 0, 0)])
    s = slowest_calls(p)[0]
    assert p.call_args == 2 and s.call_args == (0x10, 0) and s.call_ret is None
    from ftflame.report import callsjson

    assert callsjson.slowest_json(p)[0]["tree"]["args"] == [["0x10", "0"], None]


def test_minus_one_is_an_error_code_in_every_figure(tmp_path):
    """-1 (EPERM), as a long and as an int, is the first error code: the C
    error table counted it, and an off-by-one bound in retval_is_error
    (s < -1) would drop it from the slowest calls' line only, with no
    test noticing (issue 37, "Tests that bind"). 0 and -4096 are not."""
    roots = [("svc_process", 9000, 0, [("nfsd_dispatch", 8000, -1, [("vfs_write", 5000, 0xffffffff, [])])]),
             ("svc_process", 8000, -4096, [("nfsd_dispatch", 7000, 0, [])])]
    path = tmp_path / "eperm.dat"
    dat_trace(path, roots=roots)
    rs = returns_of(read_with(path, "builtin"))
    assert rs["nfsd_dispatch"] == (1, 8000, 1, 7000) and rs["vfs_write"] == (1, 5000, 0, 0)
    assert rs["svc_process"] == (0, 0, 2, 17000)
    out = subprocess.run([*FTFLAME, "report", str(path)], capture_output=True, text=True, check=True).stdout
    assert "  errors: 2 calls returned an error code: nfsd_dispatch = -1, vfs_write = -1" in out
    doc = json.loads(subprocess.run([*FTFLAME, "report", "-F", "json", str(path)], capture_output=True,
                                    text=True, check=True).stdout)
    slow = {s["dur_ns"]: s for s in doc["slowest"]}
    assert slow[9000]["tree"]["ret"] == ["0x0", "-1", "-1"]
    assert slow[8000]["tree"]["ret"] == ["0xfffffffffffff000", "0x0"]
