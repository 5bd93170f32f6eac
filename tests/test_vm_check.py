"""tests/vm/check_vm.py's verdict on the host report step, without a VM: a
report that ran and failed must fail the check (it used to be a skip, as if
ftflame had not been installed)."""
from __future__ import annotations

import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture()
def check_vm(tmp_path, monkeypatch):
    monkeypatch.setenv("FTFLAME_VM_RESULTS_DIRS", str(tmp_path))  # else it skips at import
    spec = importlib.util.spec_from_file_location("check_vm_under_test",
                                                  os.path.join(HERE, "vm", "check_vm.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_failed_report_fails_the_vm_check(check_vm, tmp_path):
    (tmp_path / "run").mkdir()
    assert check_vm.report_state(tmp_path) == "absent"  # run.sh had no ftflame
    (tmp_path / "report.rc").write_text("2\n")
    (tmp_path / "report.stderr").write_text("ftflame: trace.dat: cannot read the header\n")
    state = check_vm.report_state(tmp_path)
    assert state.startswith("ftflame report exited 2") and "cannot read the header" in state
    with pytest.raises(AssertionError, match="exited 2"):
        check_vm.test_report_on_the_result(tmp_path)
    (tmp_path / "report.rc").write_text("0\n")
    assert "wrote no run/report.json" in check_vm.report_state(tmp_path)
    (tmp_path / "run" / "report.json").write_text("{}")
    assert check_vm.report_state(tmp_path) == "ok"


def test_missing_report_step_fails_in_ci(check_vm, tmp_path, monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="did not run ftflame report"):
        check_vm.test_report_on_the_result(tmp_path)
