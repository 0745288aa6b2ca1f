"""Compile every kernel ahead of time, into the on-disk cache (``kafkalog warmup``).

Kernels compile lazily: a read compiles only what its data needs (a v2 uncompressed segment does
not compile the v0/v1, lz4 or snappy kernels), the first time any process on the machine needs
it, and the cache (:mod:`kafkalog_source.kernel.jit`) keeps it for every later process. A
cluster image or bootstrap script can pay for all of it once instead: :func:`warmup` reads tiny
segments of every format and codec family shipped in ``warmup_data/`` (copies of
``sample_segments/``, written with kafka-python), which compiles every kernel the reader calls
with the signatures it calls them with, then reports each kernel's state.

The compiled code is for this process's code variant (:data:`~kafkalog_source.kernel.jit.VARIANT`:
the CPU numba targets, the CRC choices, ``NUMBA_BOUNDSCHECK``), so run it with the executors'
environment (``NUMBA_CACHE_DIR``, ``NUMBA_CPU_NAME``, ...).
"""

from __future__ import annotations

import importlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WARMUP_DATA = Path(__file__).resolve().parent / "warmup_data"

# Every module that defines kernels, lowest layer first.
KERNEL_MODULES = (
    "kafkalog_source.kernel.bytes",
    "kafkalog_source.kernel.crc32",
    "kafkalog_source.kernel.crc32c",
    "kafkalog_source.kernel.v2",
    "kafkalog_source.kernel.legacy",
    "kafkalog_source.codecs.compiled",
    "kafkalog_source.framing.scan",
)


@dataclass
class KernelState:
    """One kernel: signatures this process compiled, loaded from the cache, and the cache holds.

    ``cached`` counts the cache's entries for this CPU target and code variant; a kernel that
    only other kernels call is compiled into them, so a process that loads its callers from the
    cache neither compiles nor loads it, but it is cached all the same.
    """

    name: str
    compiled: int
    loaded: int
    cached: int
    cache_dir: str | None


@dataclass
class WarmupReport:
    """What :func:`warmup` did: per kernel, the cache directories and the code variant."""

    kernels: list[KernelState] = field(default_factory=list)
    seconds: float = 0.0
    variant: str = ""
    cache_dirs: list[str] = field(default_factory=list)
    cache_usable: bool = True

    @property
    def compiled(self) -> int:
        """Signatures compiled by this process (absent from the cache)."""
        return sum(k.compiled for k in self.kernels)

    @property
    def loaded(self) -> int:
        """Signatures loaded from the cache (compiled by an earlier process)."""
        return sum(k.loaded for k in self.kernels)


def kernel_dispatchers() -> dict[str, Any]:
    """Every separately compiled kernel (not the ones numba inlines), by ``module.name``."""
    from numba.core.registry import CPUDispatcher

    out: dict[str, Any] = {}
    for modname in KERNEL_MODULES:
        module = importlib.import_module(modname)
        for obj in vars(module).values():
            if not isinstance(obj, CPUDispatcher) or obj.py_func.__module__ != modname:
                continue  # not a kernel, or imported from another module
            if obj.targetoptions.get("inline", "never") != "never":
                continue  # inlined into its callers at the numba IR level, never compiled alone
            out[f"{modname.rsplit('.', 1)[-1]}.{obj.py_func.__name__}"] = obj  # aliases: once
    return out


def kernel_states() -> list[KernelState]:
    """Each kernel's signatures so far in this process: compiled here or loaded from the cache."""
    states = []
    for name, disp in sorted(kernel_dispatchers().items()):
        stats = disp.stats
        compiled = sum(stats.cache_misses.values())
        loaded = sum(stats.cache_hits.values())
        cache = getattr(disp, "_cache", None)
        path = getattr(cache, "cache_path", None)
        states.append(KernelState(name, compiled, loaded, _cached(disp), path))
    return states


def _cached(disp: Any) -> int:
    """Entries in ``disp``'s on-disk cache index for this process's CPU target and variant."""
    try:
        index = disp._cache._cache_file._load_index()  # numba internals: {(sig, target, code)}
        target = disp.targetctx.codegen().magic_tuple()
    except Exception:  # no cache (compiled in memory), or another numba layout
        return 0
    return sum(1 for key in index if key[1] == target)


def warmup(**options: Any) -> WarmupReport:
    """Compile (or load from the cache) every kernel the reader uses; report each one."""
    from ..kernel import jit
    from .api import read_table

    t0 = time.perf_counter()
    read_table(str(WARMUP_DATA), **options)
    report = WarmupReport(
        kernels=kernel_states(),
        seconds=time.perf_counter() - t0,
        variant=jit.VARIANT,
        cache_usable=jit.cache_usable(),
    )
    report.cache_dirs = sorted({k.cache_dir for k in report.kernels if k.cache_dir})
    return report


def cache_root() -> str | None:
    """``NUMBA_CACHE_DIR`` when set (the directory every kernel's cache lives under), else None:
    the cache is in ``__pycache__`` next to each kernel module."""
    return os.environ.get("NUMBA_CACHE_DIR") or None
