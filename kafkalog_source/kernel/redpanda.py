"""Redpanda segments in the compiled kernels: the chain of batch positions from byte 0 (their
little-endian size fields, ``csrc/kl_redpanda.h``); the layout is :mod:`..format.redpanda`'s."""

from __future__ import annotations

import numpy as np

from .compiled import native

_CHUNK = 1 << 16


def chain_positions(buf: np.ndarray) -> tuple[np.ndarray, int]:
    """The positions of the batches from byte 0 of ``buf`` (uint8), chained by their size
    fields while each fits, and where the chain stopped."""
    parts = []
    pos = 0
    while True:
        out = np.empty(_CHUNK, dtype=np.int64)
        n, stop = native.rp_chain(buf[pos:], out)
        parts.append(out[:n] + pos)
        pos += stop
        if n < _CHUNK:
            break
    return np.concatenate(parts), pos


__all__ = ["chain_positions"]
