"""CRC-32 (IEEE 802.3, as ``java.util.zip.CRC32``) inside kernels, for v0/v1 messages.

Legacy messages carry one CRC each, inner messages of compressed wrappers included, so it runs
per record and must be compiled. Slicing-by-8 tables: about eight times a byte-at-a-time loop.
"""

from __future__ import annotations

import numpy as np

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
    """CRC of ``src[start:end]`` with the slicing-by-8 ``tables`` (CRC-32 or CRC-32C)."""
    c = np.uint32(0xFFFFFFFF)
    p = start
    while end - p >= 8:
        lo = c ^ (
            np.uint32(src[p])
            | (np.uint32(src[p + 1]) << np.uint32(8))
            | (np.uint32(src[p + 2]) << np.uint32(16))
            | (np.uint32(src[p + 3]) << np.uint32(24))
        )
        c = (
            tables[7, lo & np.uint32(0xFF)]
            ^ tables[6, (lo >> np.uint32(8)) & np.uint32(0xFF)]
            ^ tables[5, (lo >> np.uint32(16)) & np.uint32(0xFF)]
            ^ tables[4, lo >> np.uint32(24)]
            ^ tables[3, src[p + 4]]
            ^ tables[2, src[p + 5]]
            ^ tables[1, src[p + 6]]
            ^ tables[0, src[p + 7]]
        )
        p += 8
    while p < end:
        c = tables[0, (c ^ np.uint32(src[p])) & np.uint32(0xFF)] ^ (c >> np.uint32(8))
        p += 1
    return np.int64(c ^ np.uint32(0xFFFFFFFF))
