"""The framing every batch shares and the v2 batch header (SEGMENT_SPEC §0-§2).

A ``.log`` file is a concatenation of batches. Each starts ``offset:int64 | size:int32 | 4 bytes
| magic:int8`` and occupies ``12 + size`` bytes. For magic 2 the 4 bytes are the partition leader
epoch and the header goes on to 61 bytes; for magic 0 and 1 (:mod:`.legacy`) they are the
message's CRC-32. The one home of these layouts.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .legacy import (
    LEGACY_CRC_AT,
    LEGACY_CRC_FROM,
    LEGACY_HEADER,
    LEGACY_MIN_SIZE,
    V1_MIN_SIZE,
    V1_TIMESTAMP_AT,
)
from .names import CODEC_NAMES

LOG_OVERHEAD = 12  # offset and size fields: a batch takes 12 + size bytes
PREFIX_SIZE = 17  # offset, size, 4 format bytes, magic
V2_HEADER_SIZE = 61
V1_HEADER_SIZE = LOG_OVERHEAD + V1_MIN_SIZE  # 12 + crc 4, magic, attrs, ts 8, 2 lengths 4
PREFIX = struct.Struct(">qiiB")  # offset, size, 4 bytes (v2: leader epoch; legacy: crc), magic
OFFSET_AT = 0  # the offset field (v2: baseOffset; legacy: the message's offset)
SIZE_AT = 8  # the size field
MAGIC_AT = 16

# the v2 header: baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes,
# lastOffsetDelta, baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence,
# recordsCount; each field's first byte, from the batch's first byte
V2_HEADER = struct.Struct(">qiiBIhiqqqhii")
assert V2_HEADER.size == V2_HEADER_SIZE
V2_LEADER_EPOCH_AT = 12
V2_CRC_AT = 17  # the CRC-32C, which covers the batch from the attributes on
V2_CRC_FROM = 21
V2_ATTRIBUTES_AT = 21  # an int16; every bit Kafka defines is in its low byte
V2_LAST_OFFSET_DELTA_AT = 23
V2_BASE_TIMESTAMP_AT = 27
V2_MAX_TIMESTAMP_AT = 35
V2_PRODUCER_ID_AT = 43
V2_PRODUCER_EPOCH_AT = 51
V2_BASE_SEQUENCE_AT = 53
V2_RECORDS_COUNT_AT = 57
# the CRC-32C's span starts this many bytes before the records (the end of the header)
V2_CRC_BEFORE_RECORDS = V2_HEADER_SIZE - V2_CRC_FROM
# the fewest bytes a v2 record takes: length, attributes, timestampDelta, offsetDelta,
# keyLength, valueLength and headerCount, one byte each (Kafka's DefaultRecord)
V2_MIN_RECORD_SIZE = 7


def field_starts(layout: struct.Struct) -> tuple[int, ...]:
    """Where each field of a packed big-endian ``struct`` layout starts."""
    starts, at = [], 0
    for code in layout.format.lstrip("<>!="):
        starts.append(at)
        at += struct.calcsize(">" + code)
    return tuple(starts)


# the named offsets are the struct's, field by field
assert field_starts(V2_HEADER) == (
    OFFSET_AT,
    SIZE_AT,
    V2_LEADER_EPOCH_AT,
    MAGIC_AT,
    V2_CRC_AT,
    V2_ATTRIBUTES_AT,
    V2_LAST_OFFSET_DELTA_AT,
    V2_BASE_TIMESTAMP_AT,
    V2_MAX_TIMESTAMP_AT,
    V2_PRODUCER_ID_AT,
    V2_PRODUCER_EPOCH_AT,
    V2_BASE_SEQUENCE_AT,
    V2_RECORDS_COUNT_AT,
)
# from the CRC through recordsCount (the fields a resync checks)
V2_FROM_CRC = struct.Struct(">IhiqqqhiI")

# attribute bits (v2; bits 0-2 and 3 also in legacy messages)
CODEC_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40
ATTRIBUTE_BITS = 0xFF  # the attributes' low byte, where the bits above are


def prefix(buf: bytes | memoryview, at: int = 0) -> tuple[int, int, int]:
    """``(offset, size field, magic)`` of the batch starting at ``buf[at]`` (17 bytes needed)."""
    offset, size, _, magic = PREFIX.unpack_from(buf, at)
    return offset, size, magic


def size_field(buf: bytes | memoryview, at: int = 0) -> int:
    """The size field of the batch at ``buf[at]``: the batch occupies ``12 +`` this."""
    return int.from_bytes(buf[at + SIZE_AT : at + SIZE_AT + 4], "big", signed=True)


def offset_field(buf: bytes | memoryview, at: int = 0) -> int:
    """The offset field of the batch at ``buf[at]`` (v2: its base offset)."""
    return int.from_bytes(buf[at + OFFSET_AT : at + OFFSET_AT + 8], "big", signed=True)


def header_offsets(head: bytes | memoryview) -> tuple[int | None, int | None] | None:
    """The offsets a batch names in its first bytes, before its CRC can vouch for them: a v2
    batch's ``(base offset, base offset + lastOffsetDelta)`` (27 bytes needed; with 17 to 26,
    ``(base offset, None)``), a legacy entry's ``(None, its offset)`` (the last inner offset of
    a compressed wrapper; 17 bytes). None when too few bytes are there, or the fields cannot be
    a batch's (an unknown magic, a negative offset or delta)."""
    if len(head) < PREFIX_SIZE:
        return None
    offset, magic = offset_field(head), head[MAGIC_AT]
    if offset < 0 or magic > 2:
        return None
    if magic < 2:
        return None, offset
    at = V2_LAST_OFFSET_DELTA_AT
    if len(head) < at + 4:
        return offset, None
    delta = int.from_bytes(head[at : at + 4], "big", signed=True)
    return (offset, offset + delta) if delta >= 0 else None


def stored_crc(head: bytes | memoryview, magic: int) -> int:
    """The CRC stored in a batch header (v2: CRC-32C; legacy: the message's CRC-32)."""
    at = V2_CRC_AT if magic >= 2 else LEGACY_CRC_AT
    return int.from_bytes(head[at : at + 4], "big")


def crc_from(magic: int) -> int:
    """The first byte of the batch its stored CRC covers."""
    return V2_CRC_FROM if magic >= 2 else LEGACY_CRC_FROM


def smallest_batch(magic: int) -> int:
    """The fewest bytes a complete batch of this magic takes."""
    return (
        V2_HEADER_SIZE
        if magic >= 2
        else LOG_OVERHEAD + LEGACY_MIN_SIZE
        if magic == 0
        else V1_HEADER_SIZE
    )


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The header fields of one batch (v2) or one top-level legacy message (v0/v1)."""

    position: int
    base_offset: int  # v2: baseOffset; legacy: the entry offset, which is the *last* offset
    size: int  # total bytes, 12 + size field
    magic: int
    attributes: int = 0
    crc: int = 0
    last_offset_delta: int = 0
    base_timestamp: int = -1
    max_timestamp: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    records_count: int = -1
    partition_leader_epoch: int = -1

    @property
    def codec(self) -> int:
        """Compression codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)."""
        return self.attributes & CODEC_MASK

    @property
    def codec_name(self) -> str:
        """The codec as Kafka's tools name it."""
        c = self.codec
        return CODEC_NAMES[c] if c < len(CODEC_NAMES) else f"unknown({c})"

    @property
    def log_append_time(self) -> bool:
        """True when the timestamp type bit says LogAppendTime (v1 and v2)."""
        return self.magic > 0 and bool(self.attributes & TIMESTAMP_TYPE_BIT)

    @property
    def is_transactional(self) -> bool:
        """v2 transactional bit."""
        return self.magic >= 2 and bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        """v2 control bit (transaction markers, KRaft control records)."""
        return self.magic >= 2 and bool(self.attributes & CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        """v2 bit 6: baseTimestamp holds the delete horizon (KIP-534)."""
        return self.magic >= 2 and bool(self.attributes & DELETE_HORIZON_BIT)

    @property
    def last_offset(self) -> int:
        """The last offset this batch occupies (v2: base + lastOffsetDelta; legacy: entry offset)."""
        return self.base_offset + self.last_offset_delta if self.magic >= 2 else self.base_offset

    @property
    def end(self) -> int:
        """Byte position just past this batch."""
        return self.position + self.size

    @property
    def timestamp_type(self) -> int:
        """Spark's timestampType: -1 none (v0), 0 CreateTime, 1 LogAppendTime."""
        if self.magic == 0:
            return -1
        return 1 if self.attributes & 0x08 else 0


def read_varint(buf: bytes | memoryview, p: int, end: int) -> tuple[int, int]:
    """The zig-zag varint at ``buf[p:end]`` as (value, next position); (0, -1) when malformed.

    For the few record fields the planner and tools read in Python (control record keys);
    whole batches go through the compiled kernels.
    """
    raw = 0
    shift = 0
    while p < end and shift <= 63:
        b = buf[p]
        p += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            return (raw >> 1) ^ -(raw & 1), p
        shift += 7
    return 0, -1


def parse_header(buf: bytes | memoryview, at: int, position: int) -> BatchHeader:
    """Parse the header at ``buf[at:]``; ``position`` is its absolute byte position in the file.

    ``buf`` must hold at least 61 bytes from ``at`` for v2, or 18 for legacy (26 for a v1
    message's timestamp, which is -1 when fewer are there).
    """
    offset, size, _, magic = PREFIX.unpack_from(buf, at)
    if magic >= 2:
        (
            base_offset,
            size,
            ple,
            magic,
            crc,
            attrs,
            lod,
            base_ts,
            max_ts,
            pid,
            epoch,
            base_seq,
            count,
        ) = V2_HEADER.unpack_from(buf, at)
        return BatchHeader(
            position,
            base_offset,
            LOG_OVERHEAD + size,
            magic,
            attrs & 0xFF,
            crc,
            lod,
            base_ts,
            max_ts,
            pid,
            epoch,
            base_seq,
            count,
            ple,
        )
    offset, size, crc, magic, attrs = LEGACY_HEADER.unpack_from(buf, at)
    ts = -1
    if magic == 1 and len(buf) - at >= V1_TIMESTAMP_AT + 8:
        ts = int.from_bytes(
            buf[at + V1_TIMESTAMP_AT : at + V1_TIMESTAMP_AT + 8], "big", signed=True
        )
    return BatchHeader(
        position,
        offset,
        LOG_OVERHEAD + size,
        magic,
        attrs & 0xFF,
        crc,
        0,
        ts,
        ts,
    )


@dataclass(frozen=True)
class RecordBytes:
    """Where one record of an uncompressed v2 batch lies, in bytes from the batch's first
    byte: the record (its length varint), its key and its value (-1: null)."""

    record: int
    key: int
    value: int


def locate_record(batch: bytes | memoryview, offset_delta: int) -> RecordBytes | None:
    """Where the record with ``offset_delta`` lies in ``batch`` (a whole uncompressed v2 batch
    from its first byte), walking the records' length fields; None for a compressed or legacy
    batch (whose records have no byte of their own in the file), or when the walk meets
    malformed lengths before the record."""
    if len(batch) < V2_HEADER_SIZE or batch[MAGIC_AT] != 2:
        return None
    if batch[V2_ATTRIBUTES_AT + 1] & CODEC_MASK:
        return None  # compressed
    end = min(len(batch), LOG_OVERHEAD + size_field(batch))
    p = V2_HEADER_SIZE
    while p < end:
        length, q = read_varint(batch, p, end)
        if q < 0 or length < 0 or q + length > end:
            return None
        nxt = q + length
        _, r = read_varint(batch, q + 1, nxt)  # attributes byte, then timestampDelta
        delta, r = read_varint(batch, r, nxt) if r >= 0 else (0, -1)
        if r < 0:
            return None
        if delta == offset_delta:
            klen, k = read_varint(batch, r, nxt)
            if k < 0:
                return None
            vlen, v = read_varint(batch, k + max(klen, 0), nxt)
            if v < 0:
                return None
            return RecordBytes(p, k if klen >= 0 else -1, v if vlen >= 0 else -1)
        p = nxt
    return None
