"""Compiled batch framing over an in-memory window of a segment.

``scan_window`` reads the header of every complete batch in a window into a row of an int64
matrix, so the reader can plan decompression and decoding for many batches with numpy instead of
per-batch ``struct`` calls. It stops at the first batch that does not fit in the window (the
reader reads more, or classifies the file tail) or whose framing is invalid.
"""

from __future__ import annotations

import numpy as np

from ..format.batch import (
    ATTRIBUTE_BITS,
    LOG_OVERHEAD,
    MAGIC_AT,
    OFFSET_AT,
    PREFIX_SIZE,
    SIZE_AT,
    V2_ATTRIBUTES_AT,
    V2_BASE_SEQUENCE_AT,
    V2_BASE_TIMESTAMP_AT,
    V2_CRC_AT,
    V2_HEADER_SIZE,
    V2_LAST_OFFSET_DELTA_AT,
    V2_LEADER_EPOCH_AT,
    V2_MAX_TIMESTAMP_AT,
    V2_PRODUCER_EPOCH_AT,
    V2_PRODUCER_ID_AT,
    V2_RECORDS_COUNT_AT,
)
from ..format.legacy import (
    LEGACY_ATTRIBUTES_AT,
    LEGACY_CRC_AT,
    LEGACY_MIN_SIZE,
    V1_TIMESTAMP_AT,
    V1_TIMESTAMP_END,
)
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
        if limit - p < PREFIX_SIZE:
            return i, p, STOP_END
        if i >= out.shape[0]:
            return i, p, STOP_FULL
        size = be32(buf, p + SIZE_AT)
        magic = np.int64(np.int8(buf[p + MAGIC_AT]))
        if size < LEGACY_MIN_SIZE:
            return i, p, STOP_BAD_SIZE
        total = LOG_OVERHEAD + size
        if total > limit - p:
            return i, p, STOP_INCOMPLETE
        if magic < 0 or magic > 2:
            return i, p, STOP_BAD_MAGIC
        out[i, H_POS] = file_pos + p
        out[i, H_WPOS] = p
        out[i, H_SIZE] = total
        out[i, H_MAGIC] = magic
        out[i, H_BASE_OFFSET] = be64(buf, p + OFFSET_AT)
        if magic == 2:
            if total < V2_HEADER_SIZE:
                return i, p, STOP_V2_SMALL
            out[i, H_PLE] = be32(buf, p + V2_LEADER_EPOCH_AT)
            out[i, H_CRC] = be32u(buf, p + V2_CRC_AT)
            out[i, H_ATTRS] = be16(buf, p + V2_ATTRIBUTES_AT) & ATTRIBUTE_BITS
            out[i, H_LOD] = be32(buf, p + V2_LAST_OFFSET_DELTA_AT)
            out[i, H_BASE_TS] = be64(buf, p + V2_BASE_TIMESTAMP_AT)
            out[i, H_MAX_TS] = be64(buf, p + V2_MAX_TIMESTAMP_AT)
            out[i, H_PID] = be64(buf, p + V2_PRODUCER_ID_AT)
            out[i, H_EPOCH] = be16(buf, p + V2_PRODUCER_EPOCH_AT)
            out[i, H_BASE_SEQ] = be32(buf, p + V2_BASE_SEQUENCE_AT)
            out[i, H_COUNT] = be32(buf, p + V2_RECORDS_COUNT_AT)
        else:
            out[i, H_PLE] = -1
            out[i, H_CRC] = be32u(buf, p + LEGACY_CRC_AT)
            out[i, H_ATTRS] = buf[p + LEGACY_ATTRIBUTES_AT]
            out[i, H_LOD] = 0
            ts = np.int64(-1)
            if magic == 1 and total >= V1_TIMESTAMP_END:
                ts = be64(buf, p + V1_TIMESTAMP_AT)
            out[i, H_BASE_TS] = ts
            out[i, H_MAX_TS] = ts
            out[i, H_PID] = -1
            out[i, H_EPOCH] = -1
            out[i, H_BASE_SEQ] = -1
            out[i, H_COUNT] = -1
        i += 1
        p += total
