"""One segment's transaction bookkeeping (SEGMENT_SPEC §4): its control markers and first
transactional batches from a walk of the batch headers, and its ``.txnindex`` entries, as a
:class:`SegmentSummary` cached per file version (path, size, mtime, identity); a file that only
grew is walked from where its last walk stopped. :mod:`.transactions` runs
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
from ..storage.source import ByteSource, file_stat, open_source

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


@dataclass
class _Progress:
    """How far the last walk of one file got, so that a walk of the grown file can resume there.

    ``identity`` and ``mtime_ns`` are the file's at that walk; ``next_pos`` is the end of the last
    complete batch walked, ``last`` the position and first bytes (up to the 61-byte v2 header,
    which holds its base offset, length, leader epoch and CRC) of that batch: the resumed walk
    starts only when those bytes still read the same. ``summary`` is what the walk found, and
    ``local_open`` the producers with a transactional batch after their last marker in the file.
    """

    identity: str
    mtime_ns: int
    next_pos: int
    last: tuple[int, bytes] | None
    summary: SegmentSummary
    local_open: frozenset[int]


class _WalkState:
    """What a header walk of one file collects (resumable from a :class:`_Progress`)."""

    def __init__(self, prev: _Progress | None = None) -> None:
        s = prev.summary if prev is not None else None
        self.events: list[tuple[int, int, int]] = list(s.events) if s is not None else []
        self.counts = [s.batches, s.empty_markers, s.unreadable_markers] if s else [0, 0, 0]
        self.first_offset: int | None = s.first_offset if s is not None else None
        self.next_offset: int | None = s.next_offset if s is not None else None
        self.local_open: set[int] = set(prev.local_open) if prev is not None else set()
        self.start = prev.next_pos if prev is not None else 0
        self.next_pos = self.start
        self.last: tuple[int, bytes] | None = prev.last if prev is not None else None
        self.error: str | None = None


def _unchanged(src: ByteSource, prev: _Progress, size: int) -> bool:
    """True when the file still holds, at the position the last walk reached, the batch header
    it read there: bytes were only appended since (a cheap check, not a proof)."""
    if size < prev.next_pos:
        return False
    if prev.last is None:
        return prev.next_pos == 0
    pos, head = prev.last
    return src.read(pos, len(head)) == head


def _walk(path: str, size: int, prev: _Progress | None = None) -> _WalkState:
    """Walk the batch headers of one file (from where ``prev`` stopped, when given and the file
    only grew since); see :class:`SegmentSummary`."""
    with open_source(path) as src:
        if prev is not None and not _unchanged(src, prev, size):
            prev = None  # rewritten, truncated or replaced: walk it all again
        st = _WalkState(prev)
        events, counts, local_open = st.events, st.counts, st.local_open
        walk = HeaderWalk(src, st.start, size, _BLOCK, _fields)
        last: tuple[int, int] | None = None
        for pos, base, total, magic, attrs, lod, pid, count in walk:
            counts[0] += 1
            last = (pos, total)
            if st.first_offset is None:
                st.first_offset = base
            st.next_offset = base + lod + 1
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
        if last is not None:
            st.last = (last[0], bytes(walk.bytes_at(last[0], min(last[1], V2_HEADER_SIZE))))
            st.next_pos = last[0] + last[1]
        st.error = _stop_error(walk.stop)
    return st


_lock = threading.Lock()
_segments: OrderedDict[tuple, SegmentSummary] = OrderedDict()
_segment_events = 0
_progress: OrderedDict[str, _Progress] = OrderedDict()  # per path: where its last walk got to
_CACHE_PROGRESS = 4096
_walks = 0  # header walks done (for tests and diagnostics)
_bytes_walked = 0  # bytes those walks covered (a resumed walk: only the appended ones)


def _summary_key(path: str) -> tuple | None:
    log_key = file_stat(path)
    if log_key is None:
        return None
    return (log_key, file_stat(sibling_path(path, ".txnindex")))


def summarize_segment(path: str, base_offset: int | None = None) -> SegmentSummary | None:
    """The (cached) transaction summary of one segment file; None when it cannot be read.

    The cache is keyed by the file's version (size, mtime, identity). When the file has only
    grown since its last walk (same identity, mtime not earlier, and the header of the last batch
    walked still reads the same at the same position), the walk resumes after that batch, so a
    growing active segment costs the appended bytes per call, not the whole file. Otherwise (the
    file shrank, was rewritten or replaced) it is walked again from its start.
    """
    global _segment_events, _walks, _bytes_walked
    key = _summary_key(path)
    if key is None:
        return None
    size, mtime_ns, identity = key[0]
    with _lock:
        hit = _segments.get(key)
        if hit is not None:
            _segments.move_to_end(key)
            return hit
        prev = _progress.get(path)
    if prev is not None and (
        prev.identity != identity
        or mtime_ns < prev.mtime_ns
        or prev.summary.error is not None
        or prev.summary.base_offset != base_offset
    ):
        prev = None
    try:
        st = _walk(path, size, prev)
    except OSError as e:
        log.warning("cannot read %s for transaction markers (%s); skipping it", path, e)
        return None
    if st.error is not None:
        log.warning(
            "read_committed planning stopped walking %s: %s; markers after it come from its "
            ".txnindex only",
            path,
            st.error,
        )
    summary = SegmentSummary(
        path,
        base_offset,
        st.first_offset,
        st.next_offset,
        tuple(st.events),
        _read_txn_index(path),
        st.error,
        st.counts[0],
        st.counts[1],
        st.counts[2],
    )
    with _lock:
        _walks += 1
        _bytes_walked += max(0, size - st.start)
        _segments[key] = summary
        _segment_events += len(summary.events) + 1
        while _segment_events > _CACHE_EVENTS and len(_segments) > 1:
            _, old = _segments.popitem(last=False)
            _segment_events -= len(old.events) + 1
        _progress[path] = _Progress(
            identity, mtime_ns, st.next_pos, st.last, summary, frozenset(st.local_open)
        )
        _progress.move_to_end(path)
        while len(_progress) > _CACHE_PROGRESS:
            _progress.popitem(last=False)
    return summary


def clear_cache() -> None:
    """Forget every cached segment walk."""
    global _segment_events
    with _lock:
        _segments.clear()
        _progress.clear()
        _segment_events = 0


def walk_count() -> int:
    """How many segment header walks this process has done (cache misses)."""
    return _walks


def bytes_walked() -> int:
    """How many segment bytes those walks covered (a walk resumed after an append counts only
    the appended bytes)."""
    return _bytes_walked
