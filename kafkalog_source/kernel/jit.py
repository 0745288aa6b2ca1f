"""numba set-up shared by every compiled kernel: one decorator, one on-disk cache per code variant.

Kernels compile once per signature and are cached on disk, so a fresh executor process loads
machine code instead of compiling. The cache goes to ``NUMBA_CACHE_DIR`` when set; otherwise,
when the package directory is not writable (a read-only site-packages on a cluster), to
``$XDG_CACHE_HOME/kafkalog/numba`` (``~/.cache/kafkalog/numba``). When no cache directory is
writable at all, kernels compile in memory on each start, and the ``kafkalog`` logger says so
once.

CPU-specific code. The CRC kernels use instructions that not every CPU has: CRC-32C on the CRC
instruction (x86-64 SSE4.2, AArch64 CRC) and CRC-32 by carry-less multiplication (x86-64
PCLMULQDQ). The choice is made here, once, from the CPU numba compiles for: the host, or
``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` when set (``NUMBA_CPU_NAME=generic`` builds code
for any CPU of the architecture, so the table versions are used), and from
``KAFKALOG_SOFTWARE_CRC32C=1`` / ``KAFKALOG_SOFTWARE_CRC32=1``. numba's cache keys a compiled
function on its own bytecode and the target CPU, not on the Python globals it calls, so a kernel
that inlines one CRC variant would be loaded from the cache by a process that chose the other.
:data:`VARIANT` names the choice (and numba's bounds-check setting, which the cache ignores too),
and every kernel's cache files carry it in their names: each variant has its own entries.
"""

from __future__ import annotations

import logging
import os
import platform
import sys
from collections.abc import Callable
from typing import Any

log = logging.getLogger("kafkalog")


def _choose_cache_dir() -> None:
    if os.environ.get("NUMBA_CACHE_DIR") or "numba" in sys.modules:
        return
    here = os.path.dirname(os.path.abspath(__file__))
    if os.access(here, os.W_OK):
        return
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "kafkalog", "numba")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return
    if os.access(path, os.W_OK):
        os.environ["NUMBA_CACHE_DIR"] = path


_choose_cache_dir()

import numba  # noqa: E402
from numba.core import config  # noqa: E402
from numba.core.caching import CompileResultCacheImpl, FunctionCache  # noqa: E402


def _enabled_features(flat: str) -> set[str]:
    """Feature names a flat LLVM feature string (``+sse4.2,-avx,...``) turns on."""
    return {f.strip()[1:] for f in flat.split(",") if f.strip().startswith("+")}


def _host_features() -> set[str]:
    try:
        import llvmlite.binding as llvm

        return {k for k, on in llvm.get_host_cpu_features().items() if on}
    except Exception:  # pragma: no cover - llvmlite without host feature queries
        return set()


def target_features() -> set[str]:
    """CPU features the compiled code may use: this host has them and numba's target allows them.

    numba compiles for the host CPU unless ``NUMBA_CPU_NAME`` names another one; then only the
    features listed in ``NUMBA_CPU_FEATURES`` are assumed (none for ``generic``, and none for a
    named CPU without a feature list: the portable choice).
    """
    host = _host_features()
    name = (config.CPU_NAME or "host").lower()
    if config.CPU_FEATURES is not None:
        target = _enabled_features(config.CPU_FEATURES)
    elif name == "host":
        target = host
    else:
        target = set()
    return host & target


def _choose_isa() -> tuple[str | None, bool]:
    features = target_features()
    machine = platform.machine().lower()
    x86 = machine in ("x86_64", "amd64")
    arm = machine in ("aarch64", "arm64")
    crc32c: str | None = None
    if os.environ.get("KAFKALOG_SOFTWARE_CRC32C") != "1":
        if x86 and "sse4.2" in features:
            crc32c = "x86"
        elif arm and "crc" in features:
            crc32c = "arm"
    pclmul = os.environ.get("KAFKALOG_SOFTWARE_CRC32") != "1" and x86 and "pclmul" in features
    return crc32c, pclmul


CRC32C_INSTRUCTION, PCLMUL = _choose_isa()
"""The CRC-32C instruction family the kernels use ("x86", "arm", or None: tables), and whether
CRC-32 folds with carry-less multiplication."""

VARIANT = "crc32c_{}-crc32_{}{}".format(
    CRC32C_INSTRUCTION or "table",
    "clmul" if PCLMUL else "table",
    "-boundscheck" if config.BOUNDSCHECK else "",
)


class _VariantCacheImpl(CompileResultCacheImpl):
    """numba's cache files, with :data:`VARIANT` in their names."""

    def get_filename_base(self, fullname: str, abiflags: str) -> str:
        return super().get_filename_base(f"{fullname}-{VARIANT}", abiflags)


class _VariantCache(FunctionCache):
    """numba's per-function disk cache, one set of entries per :data:`VARIANT`; a failed write
    (a full or vanished disk) is logged once and the compiled code still used."""

    _impl_class = _VariantCacheImpl

    def save_overload(self, sig: Any, data: Any) -> None:
        try:
            super().save_overload(sig, data)
        except OSError as e:
            _warn_no_cache(f"could not write the kernel cache in {self.cache_path}: {e}")


_cache_state = {"usable": True, "warned": False}


def _warn_no_cache(reason: str) -> None:
    if not _cache_state["warned"]:
        _cache_state["warned"] = True
        log.warning(
            "%s; kernels are compiled in memory (slower start-up in every new process). Set "
            "NUMBA_CACHE_DIR to a writable directory to cache them.",
            reason,
        )


def cache_usable() -> bool:
    """Whether compiled kernels are saved on disk (else every process compiles them again)."""
    return _cache_state["usable"] and not _cache_state["warned"]


def _jit(fn: Callable[..., Any], **flags: Any) -> Any:
    disp = numba.njit(nogil=True, boundscheck=False, error_model="numpy", **flags)(fn)
    if _cache_state["usable"]:
        try:
            disp._cache = _VariantCache(fn)
        except RuntimeError as e:  # numba: "cannot cache function ...: no locator available"
            _cache_state["usable"] = False
            _warn_no_cache(f"no writable directory for the kernel cache ({e})")
    return disp


def kernel(fn: Callable[..., Any]) -> Any:
    """Compile ``fn`` with numba in nopython mode, cached on disk, releasing the GIL."""
    return _jit(fn)


def helper_kernel(fn: Callable[..., Any]) -> Any:
    """Like :func:`kernel`, for helpers that only kernels call: no Python or C entry point is
    built for it (that wrapper is about a third of a small helper's compile time), so Python
    cannot call it directly."""
    return _jit(fn, no_cpython_wrapper=True, no_cfunc_wrapper=True)


def inline_kernel(fn: Callable[..., Any]) -> Any:
    """Like :func:`kernel`, and inlined into its callers at the numba IR level.

    IR inlining is paid again, in compile time, at every call site (numba re-runs its passes on
    each copy). A helper called from many sites should rather be a plain :func:`kernel`: it is
    compiled once, and LLVM inlines it into its callers when the caller's module is optimized
    (the machine code is the same). A helper called with literal arguments is compiled once per
    literal value: give it an ``overload`` that passes them on as plain integers
    (``status.fail``).
    """
    return _jit(fn, inline="always")
