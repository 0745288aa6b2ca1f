"""CRC-32 (IEEE 802.3, as ``java.util.zip.CRC32``) inside kernels, for v0/v1 messages.

Legacy messages carry one CRC each, inner messages of compressed wrappers included, so it runs
per record and must be compiled. Slicing-by-8 tables: about eight times a byte-at-a-time loop.
"""

from __future__ import annotations

import numpy as np

from .bytes import load_u64
from .jit import kernel


def slice_tables(poly: int = 0xEDB88320) -> np.ndarray:
    """Slicing-by-8 tables for the reflected polynomial ``poly`` (CRC-32 by default)."""
    t = np.zeros((8, 256), dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        t[0, i] = c
    for i in range(256):
        c = int(t[0, i])
        for k in range(1, 8):
            c = int(t[0, c & 0xFF]) ^ (c >> 8)
            t[k, i] = c
    return t


CRC32_TABLES = slice_tables()


@kernel
def crc32(tables, src, start, end):  # type: ignore[no-untyped-def]
    """CRC of ``src[start:end]`` with the slicing-by-8 ``tables`` (CRC-32 or CRC-32C).

    Eight bytes at a time from one 64-bit load (about 1.45x eight byte loads).
    """
    c = np.uint64(0xFFFFFFFF)
    p = start
    m = np.uint64(0xFF)
    while end - p >= 8:
        w = load_u64(src, p) ^ c
        c = (
            np.uint64(tables[7, w & m])
            ^ np.uint64(tables[6, (w >> np.uint64(8)) & m])
            ^ np.uint64(tables[5, (w >> np.uint64(16)) & m])
            ^ np.uint64(tables[4, (w >> np.uint64(24)) & m])
            ^ np.uint64(tables[3, (w >> np.uint64(32)) & m])
            ^ np.uint64(tables[2, (w >> np.uint64(40)) & m])
            ^ np.uint64(tables[1, (w >> np.uint64(48)) & m])
            ^ np.uint64(tables[0, w >> np.uint64(56)])
        )
        p += 8
    while p < end:
        c = np.uint64(tables[0, (c ^ np.uint64(src[p])) & m]) ^ (c >> np.uint64(8))
        p += 1
    return np.int64(c ^ np.uint64(0xFFFFFFFF))
