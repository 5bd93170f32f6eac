"""One decoder for both trace.dat readers (parse/core/record_decode.c): the
builtin reader and the libtracecmd one differ only in how they get records.
Each binds the same table of fields by name from the file's own formats,
and no reader decodes a field of its own."""
from __future__ import annotations

import os
import re

import pytest

from conftest import FIXTURE_DATS, fixture_id
from helpers import datwriter as dw

CORE = os.path.join(os.path.dirname(__file__), os.pardir, "parse", "core")
# every event a read looks at, and what a call needs of it
NEEDED = {("funcgraph_entry", "func"), ("funcgraph_entry", "depth"),
          ("funcgraph_exit", "func"), ("funcgraph_exit", "depth"), ("funcgraph_exit", "calltime"),
          ("funcgraph_exit", "rettime"), ("funcgraph_exit", "overrun"),
          ("funcgraph_exit", "common_pid"), ("funcgraph_exit", "common_flags")}


def decoded_fields(path, reader: str) -> dict:
    from ftflame.parse import _core

    return _core.dat_decoder(os.fsencode(str(path)), reader)


@pytest.mark.parametrize("path", FIXTURE_DATS[:12], ids=fixture_id)
def test_both_readers_decode_the_same_fields_of_a_recorded_trace(path):
    own = decoded_fields(path, "builtin")
    assert own == decoded_fields(path, "libtracecmd")
    assert NEEDED <= set(own)


FORMS = [dw.Form(v, comp, big, long) for v, comp in ((6, "none"), (7, "zstd"))
         for big, long in ((False, 8), (True, 8), (False, 4))]


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.name)
def test_both_readers_decode_the_same_fields_of_every_file_form(tmp_path, form):
    path = tmp_path / "t.dat"
    dw.write_file(str(path), dw.corner_contents(form), [dw.nested_call_pages(100, form=form)], form)
    own = decoded_fields(path, "builtin")
    assert own == decoded_fields(path, "libtracecmd")
    assert NEEDED <= set(own)


def c_source(name: str) -> str:
    with open(os.path.join(CORE, name)) as f:
        return re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)


def test_no_reader_names_a_field_of_its_own():
    """Field names are looked up only through record_decode.c's table: a
    field bound in one reader alone (a string literal naming it) fails."""
    table = re.findall(r'\[FTF_FLD_\w+\] = "(\w+)"', c_source("record_decode.c"))
    assert "func" in table and "common_flags" in table
    for name in sorted(os.listdir(CORE)):
        if name.startswith("dat_") and name.endswith(".c") or name == "reader_libtracecmd.c":
            named = set(re.findall(r'"(\w+)"', c_source(name))) & set(table)
            assert not named, f"{name} names {sorted(named)}: bind them in record_decode.c's table"


@pytest.mark.parametrize("reader", ["builtin", "libtracecmd"])
def test_a_reader_reads_records_only_through_the_decoder(reader):
    """Neither reader takes a record's bytes apart itself: no field offset
    or byte swap outside record_decode.c and record_decode.h (its decoding
    inline, which the builtin reader's loop calls)."""
    src = c_source({"builtin": "dat_merge.c", "libtracecmd": "reader_libtracecmd.c"}[reader])
    assert re.search(r"\bftf_decode_record(_inl)?\(", src) and "ftf_decoder_bind(" in src
    assert not re.search(r"bswap|dat_get(16|32|64)|(rdata|->data)\s*[\[+]", src)
