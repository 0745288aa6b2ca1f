"""The v0/v1 message header (SEGMENT_SPEC §1): ``offset:int64 | size:int32 | crc:uint32 |
magic:int8 | attributes:int8 | [timestamp:int64, v1] | keyLength:int32 | key | valueLength:int32 |
value``. A compressed message (a wrapper) holds a whole message set, compressed, as its value."""

from __future__ import annotations

import struct

LEGACY_HEADER = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
LEGACY_MIN_SIZE = 14  # RECORD_OVERHEAD_V0: the smallest legal size field
V1_MIN_SIZE = LEGACY_MIN_SIZE + 8  # and with a v1 message's timestamp
LEGACY_MESSAGE_AT = 12  # the message after the entry's offset and size fields
LEGACY_CRC_AT = 12
LEGACY_CRC_FROM = 16  # the CRC-32 covers the message from its magic byte on
LEGACY_MAGIC_AT = 16
LEGACY_ATTRIBUTES_AT = 17
V1_TIMESTAMP_AT = 18
V1_TIMESTAMP_END = V1_TIMESTAMP_AT + 8  # a v1 entry holds its timestamp from this many bytes
_INT32 = struct.Struct(">i")


def key_length_at(magic: int) -> int:
    """Where a message's key length field starts, from the message's first byte."""
    return V1_TIMESTAMP_END if magic == 1 else V1_TIMESTAMP_AT


def message_header(buf: bytes | memoryview, at: int) -> tuple[int, int, int, int, int, int]:
    """``(offset, size, crc, magic, attributes, timestamp)`` of the message at ``buf[at]``
    (timestamp -1 for v0, and for a v1 message cut before it); 18 bytes needed."""
    offset, size, crc, magic, attrs = LEGACY_HEADER.unpack_from(buf, at)
    ts = -1
    if magic == 1 and len(buf) - at >= V1_TIMESTAMP_END:
        ts = int.from_bytes(
            buf[at + V1_TIMESTAMP_AT : at + V1_TIMESTAMP_AT + 8], "big", signed=True
        )
    return offset, size, crc, magic, attrs, ts


def key_and_value(buf: bytes | memoryview, at: int, magic: int) -> tuple[int, int, int, int]:
    """``(key position, key length, value position, value length)`` of the message at
    ``buf[at]`` (a length of -1 is null). Raises ValueError when the fields do not fit."""
    q = at + key_length_at(magic)
    try:
        (klen,) = _INT32.unpack_from(buf, q)
        key_at = q + 4
        q = key_at + max(klen, 0)
        (vlen,) = _INT32.unpack_from(buf, q)
    except struct.error:
        raise ValueError(f"the message at byte {at} is too short for its key and value") from None
    return key_at, klen, q + 4, vlen
