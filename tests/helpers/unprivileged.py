"""Running a command without root's power, wherever the checkout sits.

A checkout may be cloned where user nobody (uid 65534) cannot go: /root, a
home folder of mode 0700, a `mktemp -d` folder. A test that drops privileges
then either runs only what it copied to a place that user can reach
(reachable_dir, require_reachable), or stays root and gives up only the
power to read and enter what its modes forbid (without_dac: the checkout
stays reachable to its owner); where neither can work it is skipped, with
the reason, never failed.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
# Root less CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (dropped from the bounding
# set, so gone after exec): file modes apply to it as to anyone.
WITHOUT_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def reachable_dir(prefix: str) -> Path:
    """A new folder of mode 0755 in /tmp (not TMPDIR, which may be private);
    the caller removes it."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    d.chmod(0o755)
    return d


def require_reachable(*paths) -> None:
    """Skip the test unless user nobody can read every path (each folder on
    the way searchable)."""
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux) to run as user nobody")
    r = subprocess.run([*AS_NOBODY, "bash", "-c", 'for p; do [ -r "$p" ] || { echo "$p"; exit 1; }; done',
                        "-", *map(str, paths)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"user nobody cannot read {r.stdout.strip() or paths} "
                    f"({r.stderr.strip() or 'a folder on the way is private'})")


def without_dac(cmd: list) -> list:
    """cmd run as root without the power to override file modes; skips the
    test where that cannot be done or the command cannot start so (a
    checkout owned by another user in a private folder)."""
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux) to drop root's file-mode override")
    probe = subprocess.run([*WITHOUT_DAC, *cmd, "--help"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot run {cmd[0]} as root without CAP_DAC_OVERRIDE here: "
                    f"{(probe.stderr.strip().splitlines() or ['exit %d' % probe.returncode])[-1]}")
    return [*WITHOUT_DAC, *cmd]
