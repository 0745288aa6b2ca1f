"""The layout every batch shares (SEGMENT_SPEC §0): ``offset:int64 | size:int32 | 4 bytes |
magic:int8``, the batch occupying ``12 + size`` bytes; and the smallest legal sizes. The one home
of these facts for :mod:`.headers`, :mod:`.walk` and :mod:`.resync`."""

from __future__ import annotations

import struct

LOG_OVERHEAD = 12  # offset and size fields: a batch takes 12 + size bytes
PREFIX_SIZE = 17  # offset, size, 4 format bytes, magic
V2_HEADER_SIZE = 61
LEGACY_MIN_SIZE = 14  # RECORD_OVERHEAD_V0: the smallest legal size field
V1_HEADER_SIZE = 34  # 12 + crc 4 + magic 1 + attrs 1 + ts 8 + key len 4 + value len 4
PREFIX = struct.Struct(">qiiB")  # offset, size, 4 bytes (v2: leader epoch; legacy: crc), magic

__all__ = ["LEGACY_MIN_SIZE", "LOG_OVERHEAD", "PREFIX", "PREFIX_SIZE", "V1_HEADER_SIZE",
           "V2_HEADER_SIZE"]  # fmt: skip
