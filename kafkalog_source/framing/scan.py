"""Compiled batch framing over an in-memory window of a segment (C: ``kernel/csrc/kl_v2.h``,
the offsets it reads named in :mod:`..format` and written into ``kl_layout.h``).

``scan_window`` reads the header of every complete batch in a window into a row of an int64
matrix, so the reader can plan decompression and decoding for many batches with numpy instead of
per-batch ``struct`` calls. It stops at the first batch that does not fit in the window (the
reader reads more, or classifies the file tail) or whose framing is invalid.
"""

from __future__ import annotations

from ..kernel.compiled import native

# header matrix columns
H_POS, H_WPOS, H_SIZE, H_MAGIC, H_ATTRS, H_BASE_OFFSET, H_LOD, H_BASE_TS, H_MAX_TS = range(9)
H_PID, H_EPOCH, H_BASE_SEQ, H_COUNT, H_CRC, H_PLE = range(9, 15)
H_WIDTH = 15

# scan stop reasons: those of the Python walker (framing/walk.py), and one more
STOP_FULL = 5  # the output matrix is full


scan_window = native.scan_window
"""``scan_window(buf, limit, file_pos, out)``: fill ``out`` with the headers of complete batches
in ``buf[:limit]`` -> ``(rows, stop position, why)`` (C: ``kernel/csrc/kl_v2.h``)."""
