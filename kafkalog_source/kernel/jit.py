"""numba set-up shared by every compiled kernel: one decorator, one writable on-disk cache.

Kernels compile once per signature and are cached on disk (``cache=True``), so a fresh executor
process loads machine code instead of compiling. The cache goes to ``NUMBA_CACHE_DIR`` when set;
otherwise, when the package directory is not writable (a read-only site-packages on a cluster),
to ``$XDG_CACHE_HOME/kafkalog/numba`` (``~/.cache/kafkalog/numba``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any


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
        os.environ["NUMBA_CACHE_DIR"] = path
    except OSError:
        pass


_choose_cache_dir()

import numba  # noqa: E402


def kernel(fn: Callable[..., Any]) -> Any:
    """Compile ``fn`` with numba in nopython mode, cached on disk, releasing the GIL."""
    return numba.njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")(fn)


def inline_kernel(fn: Callable[..., Any]) -> Any:
    """Like :func:`kernel`, and inlined into its callers at the numba IR level (hot helpers)."""
    return numba.njit(
        cache=True, nogil=True, boundscheck=False, error_model="numpy", inline="always"
    )(fn)
