"""Builds the compiled kernels (kafkalog_source/kernel/_native*.pyx over csrc/*.h) with the
package; everything else about the package is in pyproject.toml.

``pip install .``, ``pip install -e .`` and ``pip wheel .`` compile ``_native`` with the
machine's C compiler: portable code for the architecture (no ``-march``), the CRC instructions
chosen at run time. Two more builds of the same source, for CI and for anyone hunting a memory
bug, are made when ``KAFKALOG_BUILD_VARIANTS`` names them (comma-separated):

* ``checked``: ``_native_checked``, every array index and span checked (an out-of-bounds
  access is an IndexError, not a read of foreign memory);
* ``asan``: ``_native_asan``, compiled with AddressSanitizer and UndefinedBehaviorSanitizer
  (load it with ``LD_PRELOAD`` of the compiler's libasan; see docs/development.md).

``KAFKALOG_KERNELS=checked`` or ``=asan`` makes ``kafkalog_source`` import that build instead.
"""

from __future__ import annotations

import os

from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = "kafkalog_source/kernel"
HEADERS = [os.path.join(HERE, "native.pxi")] + [
    os.path.join(HERE, "csrc", name) for name in sorted(os.listdir(os.path.join(HERE, "csrc")))
]
# -fwrapv: int64 sums of hostile values (a base offset plus a delta) wrap, as Java's and numpy's
# do, instead of being undefined behaviour
COMMON = ["-O3", "-fwrapv", "-fno-strict-aliasing", "-std=gnu11", "-Wno-unused-function"]
RELEASE = ["-g0"]  # no debug information in what users install (the sanitizer build keeps -g)
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
            "-fno-omit-frame-pointer", "-g", "-O1"]  # fmt: skip


def extension(suffix: str, defines: list[tuple[str, str]], cflags: list[str],
              ldflags: list[str]) -> Extension:  # fmt: skip
    """One build of the kernels, as module ``kafkalog_source.kernel._native<suffix>``."""
    return Extension(
        f"kafkalog_source.kernel._native{suffix}",
        [os.path.join(HERE, f"_native{suffix}.pyx")],
        include_dirs=[HERE],
        define_macros=defines,
        extra_compile_args=COMMON + cflags,
        extra_link_args=ldflags,
        depends=HEADERS,
    )


variants = {
    v.strip() for v in os.environ.get("KAFKALOG_BUILD_VARIANTS", "").split(",") if v.strip()
}
unknown = variants - {"checked", "asan"}
if unknown:
    raise SystemExit(f"KAFKALOG_BUILD_VARIANTS: unknown build {sorted(unknown)} (checked, asan)")
extensions = [extension("", [], RELEASE, [])]
if "checked" in variants:
    extensions.append(extension("_checked", [("KL_BOUNDSCHECK", "1")], [], []))
if "asan" in variants:
    extensions.append(extension("_asan", [("KL_SANITIZE", "1")], SANITIZE, SANITIZE[:2]))

setup(ext_modules=cythonize(extensions, compiler_directives={"language_level": "3"}, quiet=True))
