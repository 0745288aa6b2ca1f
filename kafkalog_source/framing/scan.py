"""Compiled batch framing over an in-memory window of a segment.

``scan_window`` reads the header of every complete batch in a window into a row of an int64
matrix, so the reader can plan decompression and decoding for many batches with numpy instead of
per-batch ``struct`` calls. It stops at the first batch that does not fit in the window (the
reader reads more, or classifies the file tail) or whose framing is invalid.
"""

from __future__ import annotations

import numpy as np

from ..kernel.bytes import be16, be32, be32u, be64
from ..kernel.jit import kernel
from .walk import STOP_BAD_MAGIC, STOP_BAD_SIZE, STOP_END, STOP_INCOMPLETE, STOP_V2_SMALL

# header matrix columns
H_POS, H_WPOS, H_SIZE, H_MAGIC, H_ATTRS, H_BASE_OFFSET, H_LOD, H_BASE_TS, H_MAX_TS = range(9)
H_PID, H_EPOCH, H_BASE_SEQ, H_COUNT, H_CRC, H_PLE = range(9, 15)
H_WIDTH = 15

# scan stop reasons: those of the Python walker (framing/walk.py), and one more
STOP_FULL = 5  # the output matrix is full


@kernel
def scan_window(buf, limit, file_pos, out):  # type: ignore[no-untyped-def]
    """Fill ``out`` with headers of complete batches in ``buf[:limit]`` -> (rows, stop pos, why)."""
    p = np.int64(0)  # not a literal 0: one compiled be64, not a second one for be64(buf, 0)
    i = 0
    while True:
        if limit - p < 17:
            return i, p, STOP_END
        if i >= out.shape[0]:
            return i, p, STOP_FULL
        size = be32(buf, p + 8)
        magic = np.int64(np.int8(buf[p + 16]))
        if size < 14:
            return i, p, STOP_BAD_SIZE
        total = 12 + size
        if total > limit - p:
            return i, p, STOP_INCOMPLETE
        if magic < 0 or magic > 2:
            return i, p, STOP_BAD_MAGIC
        out[i, H_POS] = file_pos + p
        out[i, H_WPOS] = p
        out[i, H_SIZE] = total
        out[i, H_MAGIC] = magic
        out[i, H_BASE_OFFSET] = be64(buf, p)
        if magic == 2:
            if total < 61:
                return i, p, STOP_V2_SMALL
            out[i, H_PLE] = be32(buf, p + 12)
            out[i, H_CRC] = be32u(buf, p + 17)
            out[i, H_ATTRS] = be16(buf, p + 21) & 0xFF
            out[i, H_LOD] = be32(buf, p + 23)
            out[i, H_BASE_TS] = be64(buf, p + 27)
            out[i, H_MAX_TS] = be64(buf, p + 35)
            out[i, H_PID] = be64(buf, p + 43)
            out[i, H_EPOCH] = be16(buf, p + 51)
            out[i, H_BASE_SEQ] = be32(buf, p + 53)
            out[i, H_COUNT] = be32(buf, p + 57)
        else:
            out[i, H_PLE] = -1
            out[i, H_CRC] = be32u(buf, p + 12)
            out[i, H_ATTRS] = buf[p + 17]
            out[i, H_LOD] = 0
            ts = np.int64(-1)
            if magic == 1 and total >= 26:
                ts = be64(buf, p + 18)
            out[i, H_BASE_TS] = ts
            out[i, H_MAX_TS] = ts
            out[i, H_PID] = -1
            out[i, H_EPOCH] = -1
            out[i, H_BASE_SEQ] = -1
            out[i, H_COUNT] = -1
        i += 1
        p += total
