"""collect.sh and calibrate.sh --buffer-percent N (issue 17, docs/overhead.md
"Figures: like for like at volume"): tracefs buffer_percent is written before
each recording (trace-cmd does not set it), put back after it and by the
traps, recorded in meta.json and calib-meta.json, and passed on from
collect.sh to its calibration, which must be recorded in the same mode.

The scripts run on the fakes of tests/helpers/collectfake.py; a wrapper in
front of the fake trace-cmd notes the knob's value each time a recording
starts."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time

import pytest
from test_collect_refusals import assert_refused, lib
from test_collect_safety import live_signals, nfs_null_server, wait_for

from helpers.collectfake import CALIBRATE, COLLECT, NFSD_FUNCS, fake_bin, fake_tracefs, script_env

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the collectors refuse to run but as root")

KERNEL_DEFAULT = "50"


def env_noting_the_knob(work, **extra):
    """The scripts' environment on a fake tracefs whose buffer_percent is the
    kernel's default, with a trace-cmd that appends the knob's value to
    work/seen at each record, then runs the fake."""
    t = fake_tracefs(work, functions=NFSD_FUNCS)
    (t / "buffer_percent").write_text(KERNEL_DEFAULT + "\n")
    fakes = fake_bin(work)
    wrap = work / "wrap"
    wrap.mkdir()
    (wrap / "trace-cmd").write_text(
        '#!/bin/sh\n[ "$1" = record ] && cat "$FTFLAME_TRACEFS/buffer_percent" >>"$SEEN"\n'
        f'exec {fakes}/trace-cmd "$@"\n')
    (wrap / "trace-cmd").chmod(0o755)
    (wrap / "rpcinfo").symlink_to(fakes / "rpcinfo")
    return t, script_env(work, tracefs=t, bin_dir=wrap, extra={"SEEN": str(work / "seen"), **extra})


def seen(work) -> list:
    return (work / "seen").read_text().split() if (work / "seen").exists() else []


def test_collect_records_with_the_knob_and_puts_it_back(work):
    t, env = env_noting_the_knob(work)
    r = subprocess.run(["bash", str(COLLECT), "-g", "nfsd3_proc_write", "--no-calibrate", "--baseline",
                        "--buffer-percent", "100", "--buffer", "32768", "-o", str(work / "run"), "--", "true"],
                       cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert seen(work) == ["100", "100"]  # trace.dat and baseline.dat
    assert (t / "buffer_percent").read_text().strip() == KERNEL_DEFAULT
    meta = json.loads((work / "run" / "meta.json").read_text())
    assert meta["tracer_options"]["buffer_percent"] == 100
    assert meta["tracer_options"]["buffer_kb_per_cpu"] == 32768
    assert "the whole run must fit 32768 KB per CPU" in r.stderr


def test_without_the_option_the_knob_is_left_and_recorded(work):
    t, env = env_noting_the_knob(work)
    r = subprocess.run(["bash", str(COLLECT), "-g", "nfsd3_proc_write", "--no-calibrate",
                        "-o", str(work / "run"), "--", "true"],
                       cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert seen(work) == [KERNEL_DEFAULT]
    meta = json.loads((work / "run" / "meta.json").read_text())
    assert meta["tracer_options"]["buffer_percent"] == int(KERNEL_DEFAULT)


@pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not installed")
def test_calibrate_records_its_three_traces_in_the_mode(work):
    t, env = env_noting_the_knob(work)
    port = nfs_null_server()
    r = subprocess.run(["bash", str(CALIBRATE), "--port", str(port), "--count", "3",
                        "--buffer-percent=100", "-o", str(work / "cal")],
                       cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert seen(work) == ["100", "100", "100"]
    assert (t / "buffer_percent").read_text().strip() == KERNEL_DEFAULT
    meta = json.loads((work / "cal" / "calib-meta.json").read_text())
    assert meta["tracer_options"]["buffer_percent"] == 100


def test_collect_passes_the_mode_on_to_its_calibration():
    out = lib('parse_tracer_opt --buffer-percent 100; tracer_opts_cli; printf "%s " "${FT_CLI[@]}"')
    assert "--buffer-percent 100" in out


def test_a_signal_puts_the_knob_back(work):
    t, env = env_noting_the_knob(work, FAKE_TC_PIDFILE=str(work / "tc.pid"))
    proc = subprocess.Popen(["bash", str(COLLECT), "-g", "nfsd3_proc_write", "--no-calibrate",
                             "--buffer-percent", "100", "-o", str(work / "run"), "--", "sleep", "60"],
                            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=live_signals)
    wait_for(work / "tc.pid", proc)
    assert (t / "buffer_percent").read_text().strip() == "100"
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
    assert proc.returncode == 143, err
    assert (t / "buffer_percent").read_text().strip() == KERNEL_DEFAULT


@pytest.mark.parametrize("script", [COLLECT, CALIBRATE], ids=["collect", "calibrate"])
def test_refused_where_the_kernel_has_no_such_knob(work, script):
    t, env = env_noting_the_knob(work)
    (t / "buffer_percent").unlink()
    args = ["--buffer-percent", "100", "-o", str(work / "run")]
    if script == COLLECT:
        args = ["-g", "nfsd3_proc_write", "--no-calibrate", *args, "--", "true"]
    r = subprocess.run(["bash", str(script), *args], cwd=work, env=env, capture_output=True, text=True,
                       timeout=60)
    assert_refused(r, "no tracefs buffer_percent", "without --buffer-percent")
    assert seen(work) == []


@pytest.mark.parametrize("value", ["101", "-1", "x", "050"])
def test_a_bad_value_is_a_usage_error(work, value):
    _, env = env_noting_the_knob(work)
    r = subprocess.run(["bash", str(COLLECT), "-g", "nfsd3_proc_write", "--buffer-percent", value,
                        "--", "true"], cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--buffer-percent wants a number from 0 to 100" in r.stderr
