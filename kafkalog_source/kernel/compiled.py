"""Which build of the compiled kernels this process uses, and the CPU paths it chose.

The kernels are a C extension built with the package (``setup.py``; sources in ``csrc/``, the
Python entry points in ``native.pxi``): nothing is compiled at run time, so a fresh install or a
new executor decodes at once. ``_native`` is the release build. ``KAFKALOG_KERNELS=checked``
loads ``_native_checked`` (every index and span checked: an out-of-bounds access raises
IndexError) and ``KAFKALOG_KERNELS=asan`` loads ``_native_asan`` (AddressSanitizer and
UndefinedBehaviorSanitizer); both exist only where ``KAFKALOG_BUILD_VARIANTS`` built them.

The CRC paths are chosen here, once, at import, from the CPU this process runs on: CRC-32C on
the CRC instruction (x86-64 SSE4.2, AArch64 CRC) and CRC-32 by carry-less multiplication (x86-64
PCLMULQDQ), each where the CPU has it; ``KAFKALOG_SOFTWARE_CRC32C=1`` and
``KAFKALOG_SOFTWARE_CRC32=1`` choose the portable table code instead.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from types import ModuleType

from ..errors import KafkaLogError

_BUILDS = {
    "": "_native",
    "release": "_native",
    "checked": "_native_checked",
    "asan": "_native_asan",
}


def _load() -> ModuleType:
    choice = os.environ.get("KAFKALOG_KERNELS", "").strip().lower()
    name = _BUILDS.get(choice)
    if name is None:
        raise KafkaLogError(
            f"KAFKALOG_KERNELS={choice!r}: not a build of the kernels (release, checked, asan)"
        )
    try:
        return importlib.import_module(f"{__package__}.{name}")
    except ImportError as e:
        how = (
            "reinstall the package (pip install .) so that its C extension is built"
            if name == "_native"
            else f"build it with KAFKALOG_BUILD_VARIANTS={choice} pip install -e ."
        )
        raise ImportError(f"kafkalog's compiled kernels ({name}) are not built: {how} ({e})") from e


native = _load()
BUILD: str = native.BUILD
"""The build in use: "release", "checked" or "asan"."""

HAVE_HW_CRC32C, HAVE_PCLMUL = native.configure_crc(
    os.environ.get("KAFKALOG_SOFTWARE_CRC32C") != "1",
    os.environ.get("KAFKALOG_SOFTWARE_CRC32") != "1",
)
"""Whether CRC-32C runs on the CPU's CRC instruction, and CRC-32 folds with PCLMULQDQ."""


def _module_file(name: str) -> str | None:
    """The file of an extension module, without importing it (None when it is not there)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.origin else None


HAVE_LIB_LZ4, HAVE_LIB_ZSTD = native.bind_libraries(
    _module_file("lz4.block._block"), _module_file("zstandard._cffi")
)
"""Whether the kernels decode lz4 blocks with liblz4 and zstd payloads with libzstd: the
reference C decoders, whose functions the ``lz4`` and ``zstandard`` packages' extension modules
export (``csrc/kl_libs.h``). Without them lz4 blocks take kafkalog's own C decoder and zstd
payloads the library path, one Python call per batch."""
