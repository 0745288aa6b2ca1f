"""Redpanda segments in the compiled kernels: the chain of batches from byte 0 (their
little-endian size fields, each header's CRC checked, ``csrc/kl_redpanda.h``); the layout is
:mod:`..format.redpanda`'s."""

from __future__ import annotations

import numpy as np

from .compiled import native

_CHUNK = 1 << 16


def chain_headers(buf: np.ndarray, header_size: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The batches from byte 0 of ``buf`` (uint8), chained by their size fields while each fits
    and its header CRC holds: their positions, their headers (``header_size`` bytes each, one
    row each) and where the chain stopped."""
    parts, heads = [], []
    pos = 0
    while True:
        cap = min(_CHUNK, (len(buf) - pos) // header_size + 1)
        out = np.empty(cap, dtype=np.int64)
        hdr = np.empty(cap * header_size, dtype=np.uint8)
        n, stop = native.rp_chain(buf[pos:], out, hdr)
        parts.append(out[:n] + pos)
        heads.append(hdr[: n * header_size])
        pos += stop
        if n < cap:
            break
    return np.concatenate(parts), np.concatenate(heads).reshape(-1, header_size), pos


def put_rows(dst: np.ndarray, base: int, at: np.ndarray, rows: np.ndarray) -> int:
    """``rows`` ((n, width) uint8) copied into ``dst`` (uint8) at ``at - base``, each row where it
    fits wholly; how many were copied."""
    width = rows.shape[1] if rows.ndim == 2 else 0
    return native.put_rows(dst, base, at, rows.reshape(-1), width)


__all__ = ["chain_headers", "put_rows"]
