"""One segment's transaction bookkeeping (SEGMENT_SPEC §4): its control markers and first
transactional batches from a walk of the batch headers, and its ``.txnindex`` entries, as a
:class:`SegmentSummary` cached per file version (path, size, mtime). :mod:`.transactions` runs
§4.4 pass 1 over these summaries across the segments of a partition log."""

from __future__ import annotations

import logging
import struct
import threading
from collections import OrderedDict
from dataclasses import dataclass

from ..framing.headers import (
    LOG_OVERHEAD,
    V2_HEADER_SIZE,
    read_varint,
)
from ..framing.walk import (
    STOP_BAD_MAGIC,
    STOP_BAD_SIZE,
    STOP_END,
    STOP_INCOMPLETE,
    HeaderWalk,
    Stop,
)
from ..storage.indexes import read_txn_index, sibling_path
from ..storage.source import file_stat, open_source

log = logging.getLogger("kafkalog")

ABORT = 0
COMMIT = 1
DATA = 2  # event kind: a producer's first transactional batch since its previous marker

_PREFIX = struct.Struct(">qiiB")
# baseOffset, batchLength, (leader epoch), magic, (crc), attributes, lastOffsetDelta,
# (timestamps), producerId, (epoch), (baseSequence), recordsCount
_V2 = struct.Struct(">qi4xB4xhi16xq2x4xi")
assert _V2.size == V2_HEADER_SIZE
_BLOCK = 64 * 1024
# A control record's key starts within: length (<=5) + attributes (1) + timestampDelta (<=10) +
# offsetDelta (<=5) + keyLength (<=5) bytes; then 4 key bytes.
_CONTROL_PEEK = 32
# Walk results kept in memory: summaries are small (a few tuples per transaction).
_CACHE_EVENTS = 2_000_000


@dataclass(frozen=True)
class SegmentSummary:
    """What one segment file contributes to the transaction bookkeeping.

    ``events`` are ``(offset, producerId, kind)`` in file order: ``ABORT`` / ``COMMIT`` markers,
    and ``DATA`` for a producer's first transactional batch since the segment start or since its
    previous marker in this segment (enough to run §4.4 pass 1 across segments).
    ``first_offset`` / ``next_offset`` bound the offsets of the batches walked. ``error`` says why
    the walk stopped before the end of the readable data (corruption), else None. ``txn_index``
    holds the ``.txnindex`` entries ``(producerId, firstOffset, lastOffset, lastStableOffset)``, or
    None when the file is missing or unreadable.
    """

    path: str
    base_offset: int | None
    first_offset: int | None
    next_offset: int | None
    events: tuple[tuple[int, int, int], ...]
    txn_index: tuple[tuple[int, int, int, int], ...] | None
    error: str | None = None
    batches: int = 0
    empty_markers: int = 0
    unreadable_markers: int = 0


def control_type(record: bytes) -> int | None:
    """The type of the control record at the start of ``record`` (0 ABORT, 1 COMMIT, ...), or
    None when its key cannot be read (fewer than 4 bytes, malformed varints)."""
    end = len(record)
    _, p = read_varint(record, 0, end)  # record length
    if p < 0:
        return None
    _, p = read_varint(record, p + 1, end)  # attributes (1 byte), then timestampDelta
    if p < 0:
        return None
    _, p = read_varint(record, p, end)  # offsetDelta
    if p < 0:
        return None
    klen, p = read_varint(record, p, end)
    if p < 0 or klen < 4 or p + 4 > end:
        return None
    return struct.unpack_from(">h", record, p + 2)[0]


def _read_txn_index(path: str) -> tuple[tuple[int, int, int, int], ...] | None:
    try:
        entries = read_txn_index(sibling_path(path, ".txnindex"))
    except OSError as e:
        log.warning("cannot read the .txnindex of %s (%s); using the batch headers", path, e)
        return None
    if entries is None:
        return None
    return tuple(
        (
            int(e["producer_id"]),
            int(e["first_offset"]),
            int(e["last_offset"]),
            int(e["last_stable_offset"]),
        )
        for e in entries
    )


def _fields(buf: bytes, at: int, pos: int) -> tuple[int, int, int, int, int, int, int, int]:
    """The header fields the walk needs: position, base offset, total size, magic, attributes,
    lastOffsetDelta, producerId, recordsCount (legacy: the entry offset, no producer)."""
    if buf[at + 16] < 2:
        offset, size, _, magic = _PREFIX.unpack_from(buf, at)
        return pos, offset, LOG_OVERHEAD + size, magic, 0, 0, -1, -1
    base, size, magic, attrs, lod, pid, count = _V2.unpack_from(buf, at)
    return pos, base, LOG_OVERHEAD + size, magic, attrs, lod, pid, count


def _stop_error(stop: Stop) -> str | None:
    """What a walk stop means here, leniently: a truncated final batch, a zero-filled tail and
    a short tail end the data quietly (Kafka's reader ignores them too); other framing is
    damage, which stops the walk (markers beyond it can still come from the ``.txnindex``)."""
    if stop.reason in (STOP_END, STOP_INCOMPLETE):
        return None
    offset, size = stop.offset_and_size
    if stop.reason == STOP_BAD_SIZE:
        return (
            None if offset == 0 and size == 0 else f"bad batch size {size} at byte {stop.position}"
        )
    if stop.reason == STOP_BAD_MAGIC:
        return f"unknown magic byte {stop.magic} at byte {stop.position}"
    total = LOG_OVERHEAD + size
    return f"v2 batch of {total} bytes at byte {stop.position} is shorter than its header"


def _walk(path: str, size: int) -> tuple[int | None, int | None, list, str | None, list[int]]:
    """Walk the batch headers of one file; see :class:`SegmentSummary`."""
    events: list[tuple[int, int, int]] = []
    counts = [0, 0, 0]  # batches, empty markers, unreadable markers
    first_offset: int | None = None
    next_offset: int | None = None
    local_open: set[int] = set()
    with open_source(path) as src:
        walk = HeaderWalk(src, 0, size, _BLOCK, _fields)
        for pos, base, total, magic, attrs, lod, pid, count in walk:
            counts[0] += 1
            if first_offset is None:
                first_offset = base
            next_offset = base + lod + 1
            if magic < 2 or pid < 0:
                continue
            if attrs & 0x20:
                if count == 0:
                    counts[1] += 1  # an emptied marker (compaction): not a marker any more
                elif attrs & 0x07:
                    counts[2] += 1  # a compressed control batch: the reader ignores it too
                else:
                    peek = min(total, V2_HEADER_SIZE + _CONTROL_PEEK) - V2_HEADER_SIZE
                    t = control_type(walk.bytes_at(pos + V2_HEADER_SIZE, peek))
                    if t in (ABORT, COMMIT):
                        events.append((base, pid, t))
                        local_open.discard(pid)
                    elif t is None:
                        counts[2] += 1
            elif attrs & 0x10 and pid not in local_open:
                local_open.add(pid)
                events.append((base, pid, DATA))
        assert walk.stop is not None
        error = _stop_error(walk.stop)
    return first_offset, next_offset, events, error, counts


_lock = threading.Lock()
_segments: OrderedDict[tuple, SegmentSummary] = OrderedDict()
_segment_events = 0
_walks = 0  # header walks done (for tests and diagnostics)


def _summary_key(path: str) -> tuple | None:
    log_key = file_stat(path)
    if log_key is None:
        return None
    return (log_key, file_stat(sibling_path(path, ".txnindex")))


def summarize_segment(path: str, base_offset: int | None = None) -> SegmentSummary | None:
    """The (cached) transaction summary of one segment file; None when it cannot be read."""
    global _segment_events, _walks
    key = _summary_key(path)
    if key is None:
        return None
    with _lock:
        hit = _segments.get(key)
        if hit is not None:
            _segments.move_to_end(key)
            return hit
    try:
        first, nxt, events, error, counts = _walk(path, key[0][0])
    except OSError as e:
        log.warning("cannot read %s for transaction markers (%s); skipping it", path, e)
        return None
    if error is not None:
        log.warning(
            "read_committed planning stopped walking %s: %s; markers after it come from its "
            ".txnindex only",
            path,
            error,
        )
    summary = SegmentSummary(
        path,
        base_offset,
        first,
        nxt,
        tuple(events),
        _read_txn_index(path),
        error,
        counts[0],
        counts[1],
        counts[2],
    )
    with _lock:
        _walks += 1
        _segments[key] = summary
        _segment_events += len(summary.events) + 1
        while _segment_events > _CACHE_EVENTS and len(_segments) > 1:
            _, old = _segments.popitem(last=False)
            _segment_events -= len(old.events) + 1
    return summary


def clear_cache() -> None:
    """Forget every cached segment walk."""
    global _segment_events
    with _lock:
        _segments.clear()
        _segment_events = 0


def walk_count() -> int:
    """How many segment header walks this process has done (cache misses)."""
    return _walks
