"""The driver-side planner: segment files → :class:`Split` s of batch-aligned byte ranges.

Planning reads directory listings, index files and batch headers only; it never decodes a record.
It runs for every query, so it touches as few bytes as it can:

1. **Which segments.** Discovery lists the files. They form partition logs: the segments of one
   directory (the same topic-partition found in two log dirs is two logs, each resolved on its
   own). Topic/partition filters drop partitions; the offset bounds (``startingOffsets`` /
   ``endingOffsets`` and pushed offset filters) drop segments by their file names: a segment
   holds offsets in ``[base, next segment's base)``. Per-partition option maps apply to the
   partitions they name; the others keep the default (earliest / latest / no timestamp), where
   Spark's Kafka source would insist on every partition being named.
2. **Timestamps** (``startingTimestamp``, ``endingTimestamp`` and the per-partition forms) are
   resolved per partition as Kafka's ``offsetsForTimes`` does, without decoding: the answer lies
   in the first non-empty batch, in offset order, whose ``maxTimestamp`` is >= T. Segments whose
   ``.timeindex`` proves (after a check against the log's own headers) that everything in them is
   older are skipped; inside the segment that holds the answer the ``.timeindex`` gives a place to
   start walking 61-byte headers. The range then starts at that batch and carries
   ``timestamp_start`` so the reader drops that batch's records before the first one >= T.
3. **Where each segment's range starts and ends.** Offset bounds inside a segment use the
   ``.index`` to jump near the offset and walk headers from there to the exact batch.
4. **Splitting and packing** follow Spark's file source: pieces of about ``maxPartitionBytes``
   cut at verified batch starts, packed "next fit decreasing" with ``openCostInBytes`` per piece.
5. **Transactions** (``read_committed`` only): the aborted and undecided transactions of each
   partition log are collected from its ``.txnindex`` files and control batch headers
   (:mod:`.transactions`), and every range carries the ones whose data it may hold
   (:meth:`~.transactions.LogTransactions.for_range`). A range that holds an ABORT marker gets no
   batch-level timestamp pruning hint, so the reader never skips the marker.

Planning never raises for damaged data: where a header walk meets corruption, the planner stops
cutting there and leaves the rest of the segment to the reader (and its ``mode``).

**Index verification.** An index is a hint: a position from ``.index`` becomes a boundary only if
the bytes there read as a plausible batch header (size >= 14, fits in the file, magic 0..2, for v2
a sane 61-byte header), its base offset lies in the window the index entry implies (above the
previous boundary's last offset, at most the entry's offset), and the *next* header, at
``position + size``, is plausible too and continues the offsets (or the file ends there, or a zero
tail starts). Otherwise the planner walks headers from a boundary it already trusts.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from ..errors import CorruptDataError
from ..framing.headers import (
    LEGACY_MIN_SIZE,
    PREFIX_SIZE,
    V2_HEADER_SIZE,
    BatchHeader,
    Tail,
    parse_header,
)
from ..framing.walk import frame_stop, walk_classified
from ..options import EARLIEST, LATEST, ReadOptions
from ..storage.discovery import SegmentFile, discover
from ..storage.indexes import absolute_offsets, read_offset_index, read_time_index, sibling_path
from ..storage.source import ByteSource, open_source
from .pruning import Pruning
from .splits import NO_LIMIT, NO_LOWER, SegmentRange, Split
from .transactions import LogTransactions, log_transactions

log = logging.getLogger("kafkalog")

_PREFIX = struct.Struct(">qiiB")
# How many index entries to try around a target before walking headers instead.
_INDEX_TRIES = 4
# A walk that only narrows a range (it never decides correctness) gives up after this many batches.
_NARROWING_WALK_CAP = 100_000


# --------------------------------------------------------------------------------------------
# One segment: lazy index, verified boundaries, header walks
# --------------------------------------------------------------------------------------------


@dataclass
class _Reach:
    """Result of walking to the first batch whose last offset is >= a target.

    ``status`` is ``"found"`` (``header`` is that batch, ``pred_last`` the last offset of the
    batch walked just before it, if any), ``"none"`` (no complete batch reaches the target; the
    walk ended at ``position``), or ``"gave_up"`` (corruption or the walk cap; every batch before
    ``position`` ends below the target, nothing is known after it).
    """

    status: str
    position: int
    header: BatchHeader | None = None
    pred_last: int | None = None


class SegmentProbe:
    """Planning-time view of one segment file: its indexes and its batch boundaries."""

    def __init__(self, seg: SegmentFile) -> None:
        self.seg = seg
        self.path = seg.path
        self.size = seg.size
        self._src: ByteSource | None = None
        self._index: tuple[np.ndarray, np.ndarray] | None = None
        self._time_index: tuple[np.ndarray, np.ndarray] | None = None
        self._headers: dict[int, BatchHeader | None] = {}
        self._chain: dict[int, bool] = {}
        self._max_ts: tuple[int | None] | None = None
        self.walk_error: CorruptDataError | None = None
        self.batches_walked = 0

    # -- files ----------------------------------------------------------------------------
    @property
    def source(self) -> ByteSource:
        """The file's byte source (opened on first use)."""
        if self._src is None:
            self._src = open_source(self.path)
        return self._src

    def close(self) -> None:
        """Close the file; it reopens on next use."""
        if self._src is not None:
            self._src.close()
            self._src = None

    def offset_index(self) -> tuple[np.ndarray, np.ndarray]:
        """(absolute offsets, positions) of the usable ``.index`` entries; empty when unusable."""
        if self._index is None:
            offs = pos = np.empty(0, dtype=np.int64)
            base = self.seg.base_offset
            if base is not None:
                entries = read_offset_index(sibling_path(self.path, ".index"))
                if entries is not None and len(entries):
                    p = entries["position"].astype(np.int64)
                    keep = int(np.searchsorted(p, self.size - PREFIX_SIZE, side="right"))
                    offs = absolute_offsets(entries[:keep], base)
                    pos = p[:keep]
            self._index = (offs, pos)
        return self._index

    def time_index(self) -> tuple[np.ndarray, np.ndarray]:
        """(timestamps, absolute offsets) of the usable ``.timeindex`` entries."""
        if self._time_index is None:
            ts = offs = np.empty(0, dtype=np.int64)
            base = self.seg.base_offset
            if base is not None:
                entries = read_time_index(sibling_path(self.path, ".timeindex"))
                if entries is not None and len(entries):
                    ts = entries["timestamp"].astype(np.int64)
                    offs = absolute_offsets(entries, base)
            self._time_index = (ts, offs)
        return self._time_index

    # -- headers --------------------------------------------------------------------------
    def header(self, pos: int) -> BatchHeader | None:
        """The batch header at ``pos`` if it is plausible on its own, else None (cached)."""
        if pos in self._headers:
            return self._headers[pos]
        h = self._read_header(pos)
        self._headers[pos] = h
        return h

    def _read_header(self, pos: int) -> BatchHeader | None:
        if pos < 0 or self.size - pos < PREFIX_SIZE:
            return None
        data = self.source.read(pos, min(V2_HEADER_SIZE, self.size - pos))
        if len(data) < PREFIX_SIZE:
            return None
        offset, size, _, magic = _PREFIX.unpack_from(data, 0)
        if frame_stop(size, magic, self.size - pos) is not None:
            return None
        if offset < 0 or (self.seg.base_offset is not None and offset < self.seg.base_offset):
            return None
        if magic == 2:
            if len(data) < V2_HEADER_SIZE:
                return None
            h = parse_header(data, 0, pos)
            if h.last_offset_delta < 0 or h.records_count < 0 or h.codec > 4:
                return None
            if h.records_count > h.last_offset_delta + 1:
                return None
            return h
        return parse_header(data, 0, pos)

    def _chain_ok(self, h: BatchHeader) -> bool:
        """True when what follows ``h`` looks like a batch boundary: end of file, tail, or a
        plausible next header whose offsets continue after ``h``'s."""
        if h.position in self._chain:
            return self._chain[h.position]
        nxt = h.end
        ok = True
        if self.size - nxt >= PREFIX_SIZE:
            offset, size, _, magic = _PREFIX.unpack_from(self.source.read(nxt, PREFIX_SIZE), 0)
            if not (offset == 0 and size == 0):  # a zero tail starts here
                ok = size >= LEGACY_MIN_SIZE and 0 <= magic <= 2 and offset > h.last_offset
        self._chain[h.position] = ok
        return ok

    def verified(self, pos: int, after_last: int | None, at_most: int | None) -> BatchHeader | None:
        """The header at ``pos`` if it is a believable batch boundary whose base offset is
        > ``after_last`` and <= ``at_most`` (either may be None), else None."""
        h = self.header(pos)
        if h is None:
            return None
        if after_last is not None and h.base_offset <= after_last:
            return None
        if at_most is not None and h.base_offset > at_most:
            return None
        return h if self._chain_ok(h) else None

    def walk(self, start: int, end: int | None = None) -> Iterator[BatchHeader]:
        """Full (61-byte) headers of the batches from ``start`` (:func:`walk_classified`);
        stops quietly at a tail, and at corruption (recorded in ``walk_error``)."""
        self.walk_error = None
        end = self.size if end is None else end
        try:
            for item in walk_classified(self.source, self.path, start, end):
                if isinstance(item, Tail):
                    return
                self.batches_walked += 1
                yield item
        except CorruptDataError as e:
            self.walk_error = e
            log.warning("planning stopped walking %s: %s", self.path, e.reason)

    # -- offsets --------------------------------------------------------------------------
    def index_start(self, lo: int) -> BatchHeader | None:
        """A verified index boundary whose batch base offset is <= ``lo`` (so every batch before
        it ends below ``lo``), the latest one found; None means start at byte 0."""
        offs, poss = self.offset_index()
        if len(offs) == 0:
            return None
        i = int(np.searchsorted(offs, lo, side="left"))
        # entry i may be the append holding lo; entries before it end below lo
        for j in range(min(i, len(offs) - 1), max(i - _INDEX_TRIES, -1), -1):
            h = self.verified(int(poss[j]), None, int(offs[j]))
            if h is not None and h.base_offset <= lo:
                return h
        return None

    def reach(self, lo: int, cap: int | None = _NARROWING_WALK_CAP) -> _Reach:
        """Walk to the first batch whose last offset is >= ``lo``."""
        start = self.index_start(lo)
        pos = start.position if start is not None else 0
        pred_last = None
        n = 0
        for h in self.walk(pos):
            if h.last_offset >= lo:
                return _Reach("found", h.position, h, pred_last)
            pred_last = h.last_offset
            pos = h.end
            n += 1
            if cap is not None and n >= cap:
                return _Reach("gave_up", pos)
        if self.walk_error is not None:
            return _Reach("gave_up", pos)
        return _Reach("none", pos)

    def end_position(self, hi: int) -> int:
        """A batch boundary from which every batch holds offsets >= ``hi`` (the earliest one the
        walk finds), or the file size when there is none or it cannot tell."""
        r = self.reach(hi)
        if r.status != "found" or r.header is None:
            return self.size
        h = r.header
        if h.magic >= 2 and h.base_offset >= hi:
            return h.position
        if r.pred_last is not None and r.pred_last >= hi - 1:
            return h.position
        return h.end

    # -- splitting ------------------------------------------------------------------------
    def boundary_at_or_after(self, cut: int, prev: BatchHeader, slack: int) -> BatchHeader | None:
        """A verified batch start at or after ``cut`` (the first one the index or a walk gives),
        or None when no batch starts between ``cut`` and the end of the readable data."""
        offs, poss = self.offset_index()
        i = int(np.searchsorted(poss, cut, side="left"))
        for j in range(i, min(i + _INDEX_TRIES, len(poss))):
            if poss[j] - cut > slack:
                break
            h = self.verified(int(poss[j]), prev.last_offset, int(offs[j]))
            if h is not None:
                return h
        # walk from the latest trusted boundary before the cut
        start = prev
        for j in range(i - 1, max(i - 1 - _INDEX_TRIES, -1), -1):
            if poss[j] <= prev.position:
                break
            h = self.verified(int(poss[j]), prev.last_offset, int(offs[j]))
            if h is not None:
                start = h
                break
        for h in self.walk(start.position):
            if h.position >= cut:
                return h
        return None

    # -- timestamps -----------------------------------------------------------------------
    def verified_max_timestamp(self) -> int | None:
        """The segment's largest batch maxTimestamp, taken from the ``.timeindex``'s last entry
        and believed only when the log's headers agree; None when it cannot be shown cheaply."""
        if self._max_ts is not None:
            return self._max_ts[0]
        self._max_ts = (self._compute_max_ts(),)
        return self._max_ts[0]

    def _compute_max_ts(self) -> int | None:
        ts, offs = self.time_index()
        if len(ts) == 0:
            return None
        t_last, o_last = int(ts[-1]), int(offs[-1])
        # 1. the batch the entry names must exist and carry exactly that timestamp
        r = self.reach(o_last)
        h = r.header
        if r.status != "found" or h is None or h.base_offset > o_last or h.max_timestamp != t_last:
            return None
        # 2. the last batches of the file (after the last index entry) must not be newer
        offs_i, poss = self.offset_index()
        start = h
        if len(poss):
            last = self.verified(int(poss[-1]), None, int(offs_i[-1]))
            if last is not None and last.position > start.position:
                start = last
        for b in self.walk(start.position):
            if b.max_timestamp > t_last:
                return None
        if self.walk_error is not None:
            return None
        return t_last

    def first_batch_at_or_after_time(self, t: int) -> BatchHeader | None:
        """The first non-empty batch (file order) whose maxTimestamp is >= ``t``, or None."""
        start = 0
        ts, offs = self.time_index()
        k = int(np.searchsorted(ts, t, side="left")) - 1
        if k >= 0:
            # every batch up to the one holding offs[k] is older than ts[k] < t (§5.5)
            r = self.reach(int(offs[k]))
            h = r.header
            if (
                r.status == "found"
                and h is not None
                and h.base_offset <= int(offs[k]) <= h.last_offset
                and h.max_timestamp == int(ts[k])
            ):
                start = h.position
            else:
                log.debug("%s: time index entry %d does not match the log; walking", self.path, k)
        for h in self.walk(start):
            if h.max_timestamp >= t and (h.magic < 2 or h.records_count != 0):
                return h
        return None


# --------------------------------------------------------------------------------------------
# Per-partition resolution
# --------------------------------------------------------------------------------------------


@dataclass
class _Extent:
    """The byte range ``[start, end)`` of one segment that a query needs, with its bounds."""

    probe: SegmentProbe
    start: int
    end: int
    start_header: BatchHeader | None
    offset_lo: int = NO_LOWER
    offset_hi: int = NO_LIMIT
    timestamp_start: int | None = None
    timestamp_end: int | None = None
    last_segment: bool = True  # the last segment file of its partition directory
    min_timestamp_hint: int | None = None
    order: int = 0
    txn: LogTransactions | None = None  # read_committed: the partition log's transactions


@dataclass
class _PartitionBounds:
    lo: int = NO_LOWER  # earliest: the first batch of the log, whatever its offsets
    hi: int = NO_LIMIT
    ts_start: int | None = None
    ts_end: int | None = None


def _bounds_for(key: tuple[str, int] | None, options: ReadOptions) -> _PartitionBounds:
    b = _PartitionBounds()
    if isinstance(options.starting_offsets, dict) and key is not None:
        v = options.starting_offsets.get(key, EARLIEST)  # never LATEST: rejected when parsed
        b.lo = NO_LOWER if v == EARLIEST else v
    if isinstance(options.ending_offsets, dict) and key is not None:
        v = options.ending_offsets.get(key, LATEST)  # never EARLIEST: rejected when parsed
        b.hi = NO_LIMIT if v == LATEST else v
    b.ts_start = options.starting_timestamp
    if options.starting_offsets_by_timestamp is not None and key is not None:
        b.ts_start = options.starting_offsets_by_timestamp.get(key)
    b.ts_end = options.ending_timestamp
    if options.ending_offsets_by_timestamp is not None and key is not None:
        b.ts_end = options.ending_offsets_by_timestamp.get(key)
    return b


def _find_time(probes: list[SegmentProbe], t: int) -> tuple[int, BatchHeader] | None:
    """(segment index, batch) of the first non-empty batch, in offset order, with maxTimestamp
    >= ``t``: it holds the partition's earliest offset whose timestamp is >= ``t``."""
    for i, p in enumerate(probes):
        m = p.verified_max_timestamp()
        if m is not None and m < t:
            continue
        h = p.first_batch_at_or_after_time(t)
        if h is not None:
            return i, h
    return None


def _partition_extents(
    key: tuple[str, int] | None,
    probes: list[SegmentProbe],
    options: ReadOptions,
    pruning: Pruning,
) -> list[_Extent]:
    """The extents one partition (its segments in offset order) contributes to the plan."""
    b = _bounds_for(key, options)
    name = f"{key[0]}-{key[1]}" if key else os.path.dirname(probes[0].path)
    if b.lo >= b.hi:
        return []
    ts_start = ts_end = None
    if b.ts_start is not None:
        ts_start = _find_time(probes, b.ts_start)
        if ts_start is None:
            log.info("%s: no record with timestamp >= %d; nothing to read", name, b.ts_start)
            return []
        s_batch = ts_start[1]
        if s_batch.magic >= 2:
            b.lo = max(b.lo, s_batch.base_offset)
    if b.ts_end is not None:
        ts_end = _find_time(probes, b.ts_end)
        if ts_end is not None:
            b.hi = min(b.hi, ts_end[1].last_offset + 1)
    if ts_start is not None and ts_end is not None and ts_end[0] < ts_start[0]:
        return []
    # the bytes needed may be fewer than the exact bounds say (pushed filters)
    lo, hi = b.lo, b.hi
    if pruning.offset_min is not None:
        lo = max(lo, pruning.offset_min)
    if pruning.offset_max is not None:
        hi = min(hi, pruning.offset_max + 1)
    if lo >= hi:
        return []
    out: list[_Extent] = []
    for i, p in enumerate(probes):
        seg = p.seg
        try:
            ext = _segment_extent(i, p, probes, lo, hi, b, ts_start, ts_end, pruning)
        finally:
            p.close()
        if ext is not None:
            out.append(ext)
        else:
            log.debug("%s: segment %s not needed", name, seg.path)
    return out


def _segment_extent(
    i: int,
    p: SegmentProbe,
    probes: list[SegmentProbe],
    lo: int,
    hi: int,
    b: _PartitionBounds,
    ts_start: tuple[int, BatchHeader] | None,
    ts_end: tuple[int, BatchHeader] | None,
    pruning: Pruning,
) -> _Extent | None:
    seg = p.seg
    if seg.size == 0:
        return None
    if ts_start is not None and i < ts_start[0]:
        return None
    if ts_end is not None and i > ts_end[0]:
        return None
    base = seg.base_offset
    nxt = probes[i + 1].seg.base_offset if i + 1 < len(probes) else None
    if base is not None and nxt is not None and nxt <= base:
        nxt = None  # not a proper sequence of segment names: no upper bound from them
    if base is not None and nxt is not None and nxt <= lo:
        return None  # the segment's offsets are all below lo
    if base is not None and base >= hi:
        return None  # ... or all at or above hi
    if pruning.timestamp_min_ms is not None:
        m = p.verified_max_timestamp()
        if m is not None and m < pruning.timestamp_min_ms:
            return None
    start, end = 0, seg.size
    start_header: BatchHeader | None = None
    if ts_start is not None and i == ts_start[0]:
        start_header = ts_start[1]
        start = start_header.position
    if ts_end is not None and i == ts_end[0]:
        end = ts_end[1].end
    already = (
        start_header is not None and start_header.magic >= 2 and start_header.base_offset >= lo
    )
    if lo > (base if base is not None else 0) and not already:
        r = p.reach(lo)
        if r.status == "none":
            return None
        if r.position > start:
            start = r.position
            start_header = r.header
    ends_at_time = ts_end is not None and i == ts_end[0] and hi > ts_end[1].last_offset
    if hi < NO_LIMIT and (nxt is None or nxt > hi) and not ends_at_time:
        end = min(end, p.end_position(hi))
    if start >= end:
        return None
    if start_header is None or start_header.position != start:
        start_header = p.header(start)
    ext = _Extent(p, start, end, start_header, b.lo, b.hi, order=0)
    ext.last_segment = i == len(probes) - 1 or base is None
    if ts_start is not None and i == ts_start[0] and start == ts_start[1].position:
        ext.timestamp_start = b.ts_start
    if ts_end is not None and i == ts_end[0] and end == ts_end[1].end:
        ext.timestamp_end = b.ts_end
    ext.min_timestamp_hint = pruning.timestamp_min_ms
    return ext


# --------------------------------------------------------------------------------------------
# Splitting and packing
# --------------------------------------------------------------------------------------------


@dataclass(order=True)
class _Piece:
    sort_key: tuple = field(compare=True)
    extent: _Extent = field(compare=False)
    start: int = field(compare=False)
    end: int = field(compare=False)

    @property
    def size(self) -> int:
        return self.end - self.start


def _cut(ext: _Extent, max_split: int) -> list[tuple[int, int]]:
    """Cut an extent into batch-aligned pieces of about ``max_split`` bytes."""
    p = ext.probe
    out: list[tuple[int, int]] = []
    cur, prev = ext.start, ext.start_header
    slack = min(1 << 20, max(1, max_split // 8))
    # cut points on a fixed grid (as Spark's file splits), each moved to the next batch start
    try:
        while prev is not None and ext.end - cur > max_split // 2:
            cut = ext.start + ((cur - ext.start) // max_split + 1) * max_split
            if cut >= ext.end:
                break
            h = p.boundary_at_or_after(cut, prev, slack)
            if h is None or h.position >= ext.end:
                break
            out.append((cur, h.position))
            cur, prev = h.position, h
    finally:
        p.close()
    out.append((cur, ext.end))
    return out


def _pack(pieces: list[_Piece], max_split: int, open_cost: int) -> list[list[_Piece]]:
    """Spark's FilePartition packing: sort by size descending, then next fit."""
    bins: list[list[_Piece]] = []
    current: list[_Piece] = []
    current_size = 0
    for piece in sorted(pieces, key=lambda x: (-x.size, x.sort_key)):
        if current and current_size + piece.size > max_split:
            bins.append(current)
            current, current_size = [], 0
        current.append(piece)
        current_size += piece.size + open_cost
    if current:
        bins.append(current)
    return bins


def _ranges(bin_: list[_Piece]) -> tuple[SegmentRange, ...]:
    """The ranges of one split, in file order, adjacent pieces of one extent merged."""
    out: list[SegmentRange] = []
    last: _Piece | None = None
    merged_start = 0
    for piece in sorted(bin_):
        if last is not None and last.extent is piece.extent and last.end == piece.start:
            out[-1] = _range(piece.extent, merged_start, piece.end)
        else:
            merged_start = piece.start
            out.append(_range(piece.extent, piece.start, piece.end))
        last = piece
    return tuple(out)


def _range(ext: _Extent, start: int, end: int) -> SegmentRange:
    seg = ext.probe.seg
    aborted: tuple[tuple[int, int, int], ...] = ()
    hint = ext.min_timestamp_hint
    if ext.txn is not None:
        aborted, holds_marker = ext.txn.for_range(
            seg.path, start, end, ext.offset_lo, ext.offset_hi
        )
        if holds_marker:
            hint = None  # a pruned ABORT marker would leave its producer marked aborted
    return SegmentRange(
        path=seg.path,
        start=start,
        end=end,
        at_file_end=end == seg.size,
        last_segment=ext.last_segment,
        topic=seg.topic,
        partition=seg.partition,
        segment_base_offset=seg.base_offset,
        offset_lo=ext.offset_lo,
        offset_hi=ext.offset_hi,
        min_timestamp_hint=hint,
        aborted=aborted,
        timestamp_start=ext.timestamp_start if start == ext.start else None,
        timestamp_end=ext.timestamp_end if end == ext.end else None,
    )


def max_split_bytes(options: ReadOptions, total_bytes: int) -> int:
    """Spark's maxSplitBytes: ``min(maxPartitionBytes, max(openCost, total / minPartitions))``,
    or ``maxPartitionBytes`` when ``minPartitions`` is not set. ``total_bytes`` includes one
    open cost per file."""
    if options.min_partitions is None:
        return options.max_partition_bytes
    per_partition = total_bytes // options.min_partitions
    return max(1, min(options.max_partition_bytes, max(options.open_cost_in_bytes, per_partition)))


def _splits_for(extents: list[_Extent], max_split: int, open_cost: int) -> list[list[_Piece]]:
    pieces = [
        _Piece((ext.order, start), ext, start, end)
        for ext in extents
        for start, end in _cut(ext, max_split)
    ]
    return _pack(pieces, max_split, open_cost)


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def _group_key(seg: SegmentFile) -> tuple:
    """Segments that form one partition log: same directory (one replica's log), and same topic
    and partition when known. The same topic-partition found in two log dirs is two logs."""
    directory = os.path.dirname(os.path.abspath(seg.path))
    pk = seg.partition_key
    if pk is not None:
        return (0, pk[0], pk[1], directory)
    return (1, "", -1, directory)


def _segment_order(seg: SegmentFile) -> tuple:
    if seg.base_offset is not None:
        return (0, seg.base_offset, seg.path)
    return (1, 0, seg.path)


def plan(
    options: ReadOptions,
    segments: list[SegmentFile] | None = None,
    pruning: Pruning | None = None,
) -> list[Split]:
    """Plan a read: the splits (Spark input partitions) covering every batch the query needs."""
    if segments is None:
        segments = discover(options)
    pruning = pruning or Pruning()
    if pruning.empty:
        return []
    groups: dict[tuple, list[SegmentFile]] = {}
    for seg in segments:
        if pruning.may_contain(seg.topic, seg.partition):
            groups.setdefault(_group_key(seg), []).append(seg)
    _warn_unknown_partitions(options, groups)
    extents: list[_Extent] = []
    probes: list[SegmentProbe] = []
    try:
        for gkey in sorted(groups):
            group = [SegmentProbe(s) for s in sorted(groups[gkey], key=_segment_order)]
            probes.extend(group)
            pkey = (gkey[1], gkey[2]) if gkey[0] == 0 else None
            group_extents = _partition_extents(pkey, group, options, pruning)
            if group_extents and options.isolation_level == "read_committed":
                txn = log_transactions([p.seg for p in group])
                for ext in group_extents:
                    ext.txn = txn
            for ext in group_extents:
                ext.order = len(extents)
                extents.append(ext)
        if not extents:
            return []
        data_bytes = sum(e.end - e.start for e in extents)
        open_cost = options.open_cost_in_bytes
        max_split = max_split_bytes(options, data_bytes + open_cost * len(extents))
        bins = _splits_for(extents, max_split, open_cost)
        want = options.min_partitions
        if want is not None and len(bins) < want:
            # best effort below the open-cost floor; a batch is never split
            # shrink proportionally, halving when that stalls (big batches cannot be cut)
            best = bins
            stalled = False
            for _ in range(12):
                if len(best) >= want or max_split <= 1:
                    break
                step = max_split * len(bins) // want
                if stalled:
                    step = max_split // 2
                max_split = max(1, min(data_bytes // want, step, max_split * 9 // 10))
                bins = _splits_for(extents, max_split, open_cost)
                stalled = len(bins) <= len(best)
                if not stalled:
                    best = bins
            bins = best
    finally:
        for p in probes:
            p.close()
    splits = [Split(i, _ranges(b)) for i, b in enumerate(bins)]
    log.info(
        "planned %d splits over %d byte ranges (%d bytes) from %d segment files",
        len(splits),
        sum(len(s.ranges) for s in splits),
        data_bytes,
        len(segments),
    )
    return splits


def _warn_unknown_partitions(options: ReadOptions, groups: dict[tuple, list]) -> None:
    present = {(k[1], k[2]) for k in groups if k[0] == 0}
    for name, value in (
        ("startingOffsets", options.starting_offsets),
        ("endingOffsets", options.ending_offsets),
        ("startingOffsetsByTimestamp", options.starting_offsets_by_timestamp),
        ("endingOffsetsByTimestamp", options.ending_offsets_by_timestamp),
    ):
        if isinstance(value, dict):
            missing = sorted(set(value) - present)
            if missing:
                shown = ", ".join(f"{t}-{p}" for t, p in missing[:10])
                log.warning("option %r names partitions with no segment to read: %s", name, shown)


__all__ = ["Pruning", "SegmentProbe", "max_split_bytes", "plan"]
