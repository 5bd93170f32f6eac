"""Build ftflame's C extensions, each beside the Python code that uses it:

  ftflame.parse._core     parse/core      the trace readers and the call builder
                                          (libtracecmd; zstd and zlib for the builtin reader)
  ftflame.report._rowfmt  report/native   the JSON renderer's row formatter
  ftflame._model          ftflame/native  the Profile's percentiles and tree order

Everything else lives in pyproject.toml; this file exists only because the
extensions need compile flags (and the reader pkg-config flags for
libtracecmd) at build time. ASAN=1 builds every extension with
AddressSanitizer and UBSan.
"""
import os
import shlex
import subprocess

from setuptools import Extension, setup


def pkg_config(*args):
    out = subprocess.run(["pkg-config", *args, "libtracecmd", "libtraceevent", "libtracefs"],
                         check=True, capture_output=True, text=True).stdout
    return shlex.split(out)


extra_compile = ["-g", "-Wall", "-Wextra", "-Wno-unused-parameter", "-std=gnu11"]
extra_link = []
if os.environ.get("ASAN") == "1":
    extra_compile += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1"]
    extra_link += ["-fsanitize=address,undefined"]


def files_in(folder, suffix, names=None):
    """folder's files ending in suffix (only those named, when names is given), sorted."""
    return sorted(os.path.join(folder, f) for f in os.listdir(folder)
                  if f.endswith(suffix) and not f.startswith("fuzz_") and (names is None or f in names))


def extension(name, folder, sources=None, cflags=(), libs=(), opt="-O2"):
    """One extension of folder's C files (or the named ones), rebuilt when a header there changes."""
    return Extension(
        name,
        sources=files_in(folder, ".c", sources),
        include_dirs=[folder],
        extra_compile_args=[*cflags, opt, *extra_compile],  # (ASAN's -O1 comes after: it wins)
        extra_link_args=[*libs, *extra_link],
        depends=files_in(folder, ".h"),
    )


model_native = os.path.join("ftflame", "native")
setup(
    ext_modules=[
        extension("ftflame.parse._core", os.path.join("parse", "core"),
                  # -fno-semantic-interposition: the core's own global functions (ftf_hist_add,
                  # ftf_hist_bucket...) called directly and inlinable, not as if another library
                  # could replace them
                  cflags=[*pkg_config("--cflags"), "-fno-semantic-interposition"],
                  libs=pkg_config("--libs") + ["-lzstd", "-lz"],  # -lzstd -lz: the builtin reader
                  # -O3: the read of the long bench trace 1-2% less CPU than -O2 (docs/performance.md,
                  # session 16)
                  opt="-O3"),
        extension("ftflame.report._rowfmt", os.path.join("report", "native")),
        # -ffp-contract=off: tree_pass.c's figures equal numpy's to the bit (no fused multiply-add)
        extension("ftflame._model", model_native,
                  {"model_module.c", "group_reduce.c", "hist_group.c", "percentiles.c", "tree_order.c",
                   "tree_pass.c"},
                  cflags=("-ffp-contract=off",)),
    ]
)
