"""The node and sample tables cross from the C core to the Profile by
position. Both sides name the columns (parse/core/module.c exports its
names, ftflame/model/profile.py has its own), and importing ftflame.parse.tables,
which reads the tables, checks that the names agree."""
from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

from ftflame.model import profile
from ftflame.parse import _core


def test_core_and_profile_name_the_same_columns():
    assert _core.NODE_COLUMNS == profile.NODE_COLUMNS
    assert _core.SAMPLE_COLUMNS == profile.SAMPLE_COLUMNS
    assert _core.CALL_RECORD == profile.CALL_RECORD
    assert _core.CALL_EXTRAS == profile.CALL_EXTRAS
    assert _core.RETVAL_COLUMNS == profile.RETVAL_COLUMNS
    assert len(_core.NODE_COLUMNS) == _core.NODE_COLS
    assert _core.TREE_MAX_CALLS == profile.TREE_MAX_CALLS
    assert (_core.SAMPLE_GAP, _core.SAMPLE_PARTIAL, _core.SAMPLE_IRQ, _core.SAMPLE_RET) == \
        (profile.SAMPLE_GAP, profile.SAMPLE_PARTIAL, profile.SAMPLE_IRQ, profile.SAMPLE_RET)
    profile.check_core_columns(_core)


# incl_min/incl_max (row[19], row[20] in C), calltime/dur, a kept call's
# start/dur and its irq/offcpu extras
@pytest.mark.parametrize("table,i,j", [("NODE_COLUMNS", 19, 20), ("SAMPLE_COLUMNS", 4, 5),
                                       ("CALL_RECORD", 2, 3), ("CALL_EXTRAS", 3, 4),
                                       ("RETVAL_COLUMNS", 1, 5)])
def test_two_swapped_names_fail_the_import(table, i, j):
    # a fresh interpreter: the core's names with two swapped, then the
    # import of the module that reads the core's tables
    code = (f"import ftflame.parse._core as core\n"
            f"names = list(core.{table})\n"
            f"names[{i}], names[{j}] = names[{j}], names[{i}]\n"
            f"core.{table} = tuple(names)\n"
            f"import ftflame.parse.tables\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "ImportError: ftflame: the C core's" in r.stderr
    assert "make build" in r.stderr


def _fake_core(**changed):
    same = {"NODE_COLUMNS": profile.NODE_COLUMNS, "NODE_DTYPES": tuple(d.str for d in profile.NODE_DTYPES),
            "NODE_SPARSE": tuple(c for c in profile.NODE_COLUMNS if c in profile.NODE_SPARSE),
            "SAMPLE_COLUMNS": profile.SAMPLE_COLUMNS, "CALL_RECORD": profile.CALL_RECORD,
            "CALL_EXTRAS": profile.CALL_EXTRAS, "RETVAL_COLUMNS": profile.RETVAL_COLUMNS}
    return SimpleNamespace(**{**same, **changed})


def test_a_column_more_on_one_side_fails():
    profile.check_core_columns(_fake_core())
    n = len(profile.NODE_COLUMNS)
    with pytest.raises(ImportError, match=f"{n + 1} columns in C, {n} in profile.py"):
        profile.check_core_columns(_fake_core(NODE_COLUMNS=profile.NODE_COLUMNS + ("new",)))


def test_a_column_of_another_width_on_one_side_fails():
    """The node columns' widths (int32 or int64) and the mostly-zero set
    are checked like their names: a column read at the wrong width would be
    every figure wrong."""
    widths = [d.str for d in profile.NODE_DTYPES]
    calls = profile.NODE_COLUMNS.index("calls")
    widths[calls] = "<i8"
    with pytest.raises(ImportError, match="node dtype columns differ.*'<i8' in C, '<i4' in profile.py"):
        profile.check_core_columns(_fake_core(NODE_DTYPES=tuple(widths)))
    with pytest.raises(ImportError, match="sparse node columns differ"):
        profile.check_core_columns(_fake_core(NODE_SPARSE=("irq",)))
