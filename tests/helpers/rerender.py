"""Determinism across processes: a renderer's output for a trace, rendered
in a fresh interpreter with another hash seed. Rendering twice in one process
cannot catch output that depends on set/dict iteration order of strings
(hash randomisation), on id()s or on state left by an earlier render."""
from __future__ import annotations

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

_CODE = """
import sys
from ftflame.parse import read
from ftflame.report import RENDERERS
sys.stdout.buffer.write(RENDERERS[sys.argv[1]].render(read(sys.argv[2])).encode("utf-8"))
"""


def render_in_fresh_process(fmt: str, trace: str, seed: str = "12345") -> str:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    proc = subprocess.run([sys.executable, "-c", _CODE, fmt, str(trace)], capture_output=True,
                          env=env, cwd=HERE, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return proc.stdout.decode("utf-8")
