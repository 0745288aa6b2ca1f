"""Batch framing: the 17-byte prefix every batch shares, and the v2 / legacy header fields.

A ``.log`` file is a concatenation of batches. Each starts ``offset:int64 | size:int32 | 4 bytes |
magic:int8`` (SEGMENT_SPEC §0); the batch occupies ``12 + size`` bytes. This module parses that
framing and classifies how a file ends; :mod:`.walk` walks it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import RecordStructureError
from ..logformat import CODEC_NAMES
from ..storage.source import ByteSource, as_source
from .layout import (  # noqa: F401  (re-exported: the framing facts' names here)
    LEGACY_MIN_SIZE,
    LOG_OVERHEAD,
    PREFIX_SIZE,
    V1_HEADER_SIZE,
    V2_HEADER_SIZE,
)
from .layout import PREFIX as _PREFIX

_V2 = struct.Struct(">qiiBIhiqqqhii")  # through recordsCount
_LEGACY = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes


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
        return self.attributes & 0x07

    @property
    def codec_name(self) -> str:
        """The codec as Kafka's tools name it."""
        c = self.codec
        return CODEC_NAMES[c] if c < len(CODEC_NAMES) else f"unknown({c})"

    @property
    def log_append_time(self) -> bool:
        """True when the timestamp type bit says LogAppendTime (v1 and v2)."""
        return self.magic > 0 and bool(self.attributes & 0x08)

    @property
    def is_transactional(self) -> bool:
        """v2 transactional bit."""
        return self.magic >= 2 and bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        """v2 control bit (transaction markers, KRaft control records)."""
        return self.magic >= 2 and bool(self.attributes & 0x20)

    @property
    def has_delete_horizon(self) -> bool:
        """v2 bit 6: baseTimestamp holds the delete horizon (KIP-534)."""
        return self.magic >= 2 and bool(self.attributes & 0x40)

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

    ``buf`` must hold at least 61 bytes from ``at`` for v2, or 17 (v0) / 26 (v1) for legacy.
    """
    offset, size, _, magic = _PREFIX.unpack_from(buf, at)
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
        ) = _V2.unpack_from(buf, at)
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
    offset, size, crc, magic, attrs = _LEGACY.unpack_from(buf, at)
    ts = -1
    if magic == 1 and len(buf) - at >= 26:
        ts = struct.unpack_from(">q", buf, at + 18)[0]
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


@dataclass(frozen=True, slots=True)
class Tail:
    """How a walked byte range ended.

    ``kind`` is ``"clean"`` (ended exactly at a batch boundary), ``"truncated"`` (a final batch
    whose size runs past the end: Kafka's reader stops silently), ``"zeros"`` (a zero-filled
    tail from preallocation or a crash), or ``"short"`` (fewer than 17 bytes left, not all zero).
    """

    kind: str
    position: int
    skipped_bytes: int

    @property
    def clean(self) -> bool:
        """True when nothing was left over."""
        return self.kind == "clean"


def _is_zero(src: ByteSource, pos: int, end: int, chunk: int = 1 << 20) -> bool:
    while pos < end:
        n = min(chunk, end - pos)
        data = src.read(pos, n)
        if len(data) < n or data.count(0) != len(data):
            return False
        pos += n
    return True


def classify_stop(
    source: ByteSource | int,
    path: str,
    pos: int,
    end: int,
    prefix: bytes | None,
    last_segment: bool = True,
    max_batch_bytes: int | None = None,
    evidence_bytes: int | None = None,
) -> Tail:
    """Decide how the data at ``pos`` ends. Raises for a bad size field that is not a zero tail.

    Kafka's reader stops quietly at a batch that runs past the end, because it may be an append
    in progress; only the last segment of a partition is appended to. So a short or truncated
    tail also raises when ``last_segment`` is false, when the declared size exceeds
    ``max_batch_bytes`` (a damaged length field, not a batch being written), and when its magic
    byte is not 0, 1 or 2 (not the start of a batch at all: a text file named ``.log``, say).
    A zero-filled tail is preallocation or a crash, and always ends quietly. The CRC evidence
    of a damaged length field (:func:`~.resync.crc_true_end`: the batch's CRC over candidate
    lengths) is looked for in at most ``evidence_bytes`` bytes from ``pos`` (default
    :data:`~.resync.EVIDENCE_BYTES`).
    """
    src = as_source(source, path)
    remaining = end - pos
    if remaining <= 0:
        return Tail("clean", pos, 0)
    if prefix is None or len(prefix) < PREFIX_SIZE:
        if _is_zero(src, pos, end):
            return Tail("zeros", pos, remaining)
        if not last_segment:
            raise RecordStructureError(
                f"{remaining} stray bytes after the last batch, in a segment that is not the "
                "last of its partition (a rolled segment is never appended to again)",
                path,
                pos,
            )
        return Tail("short", pos, remaining)
    offset, size, _, magic = _PREFIX.unpack_from(prefix, 0)
    if size < LEGACY_MIN_SIZE:
        if _is_zero(src, pos, end):
            return Tail("zeros", pos, remaining)
        raise RecordStructureError(
            f"found batch size {size} smaller than the minimum record overhead "
            f"({LEGACY_MIN_SIZE}); the bytes from here on are not zero, so this is corruption",
            path,
            pos,
            offset,
        )
    runs_past = f"a batch of {LOG_OVERHEAD + size} bytes runs past the end ({remaining} bytes left)"
    plausible = 0 <= magic <= 2 and not (magic == 2 and LOG_OVERHEAD + size < V2_HEADER_SIZE)
    true_end = None
    if plausible:
        from .resync import EVIDENCE_BYTES, crc_true_end  # numpy only for a truncated tail

        limit = EVIDENCE_BYTES if evidence_bytes is None else evidence_bytes
        true_end = crc_true_end(src, pos, end, limit)[0]
    problem = None
    if magic > 2 or magic < 0:
        problem = f"unknown magic byte {magic}, and {runs_past}: this is not a batch"
    elif not plausible:
        problem = f"v2 batch size {LOG_OVERHEAD + size} is smaller than the 61-byte batch header"
    elif max_batch_bytes is not None and size > max_batch_bytes:
        problem = (
            f"batch size {size} exceeds maxBatchBytes={max_batch_bytes}, and {runs_past}: "
            "a damaged length field, not an append in progress"
        )
    elif not last_segment:
        problem = (
            f"{runs_past} in a segment that is not the last of its partition (a rolled segment "
            "is never appended to again, so this is a damaged length field or a cut copy)"
        )
    elif true_end is not None:
        problem = f"{runs_past}: a damaged length field, not an append in progress"
    if problem is not None:
        if true_end is not None:
            problem += f" (the batch's CRC matches its first {true_end - pos} bytes" + (
                f", and more batches follow: reading can go on at byte {true_end})"
                if true_end < end
                else ")"
            )
        exc = RecordStructureError(problem, path, pos, offset if plausible else None)
        exc.resume_at = true_end  # where the next batch starts, when the CRC says so
        raise exc
    return Tail("truncated", pos, remaining)


def walk_headers(
    source: ByteSource | int,
    path: str,
    start: int,
    end: int,
    full: bool = False,
    last_segment: bool = True,
    max_batch_bytes: int | None = None,
) -> Iterator[BatchHeader | Tail]:
    """:func:`~.walk.walk_classified` over ``source`` (a byte source or an open descriptor):
    every complete batch's full header in ``[start, end)``, then one :class:`Tail`; raises for
    damage. ``full`` is accepted for old callers (headers are always full)."""
    from .walk import walk_classified  # walk.py builds on this module

    src = as_source(source, path)
    return walk_classified(src, path, start, end, last_segment, max_batch_bytes)
