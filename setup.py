"""Build the C core (parse/core) as the CPython extension ftflame.parse._core.

Everything else lives in pyproject.toml; this file exists only because the
extension needs pkg-config flags for libtracecmd at build time.
"""
import os
import shlex
import subprocess

from setuptools import Extension, setup


def pkg_config(*args):
    out = subprocess.run(["pkg-config", *args, "libtracecmd", "libtraceevent", "libtracefs"],
                         check=True, capture_output=True, text=True).stdout
    return shlex.split(out)


cflags = pkg_config("--cflags")
libs = pkg_config("--libs") + ["-lzstd", "-lz"]  # the builtin reader (dat_decomp.c)
extra_compile = ["-O2", "-g", "-Wall", "-Wextra", "-Wno-unused-parameter", "-std=gnu11"]
extra_link = []
if os.environ.get("ASAN") == "1":
    extra_compile += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1"]
    extra_link += ["-fsanitize=address,undefined"]

core_sources = sorted(
    os.path.join("parse", "core", f)
    for f in os.listdir(os.path.join("parse", "core"))
    if f.endswith(".c") and not f.startswith("fuzz_")
)

setup(
    ext_modules=[
        Extension(
            "ftflame.parse._core",
            sources=core_sources,
            include_dirs=[os.path.join("parse", "core")],
            extra_compile_args=cflags + extra_compile,
            extra_link_args=libs + extra_link,
            depends=[os.path.join("parse", "core", f) for f in os.listdir(os.path.join("parse", "core")) if f.endswith(".h")],
        )
    ]
)
