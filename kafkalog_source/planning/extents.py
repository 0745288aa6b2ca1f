"""Per-partition resolution: the bounds a query sets on one partition log (offsets, timestamps,
pushed filters) and the byte range (:class:`Extent`) each of its segments contributes."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from ..format.batch import BatchHeader
from ..options import EARLIEST, LATEST
from .probe import SegmentProbe
from .pruning import Pruning
from .request import PlanRequest, no_time_match
from .splits import NO_LIMIT, NO_LOWER, MissingOffsets
from .transactions import LogTransactions

log = logging.getLogger("kafkalog")


@dataclass
class Extent:
    """The byte range ``[start, end)`` of one segment that a query needs, with its bounds."""

    probe: SegmentProbe
    start: int
    end: int
    start_header: BatchHeader | None  # None: not read yet (see packing)
    offset_lo: int = NO_LOWER
    offset_hi: int = NO_LIMIT
    timestamp_start: int | None = None
    timestamp_end: int | None = None
    last_segment: bool = True  # the last segment file of its partition directory
    min_timestamp_hint: int | None = None
    order: int = 0
    txn: LogTransactions | None = None  # read_committed: the partition log's transactions
    missing: tuple[MissingOffsets, ...] = ()  # reported by the extent's first range
    next_base_offset: int | None = None  # the next segment file's base offset
    compacted_below: int = NO_LOWER  # gaps below this offset are compaction
    fail_on_missing: bool = False  # the planner's failOnDataLoss (see SegmentRange)
    deleted_is_loss: bool = False  # the request's deleted_is_loss (see SegmentRange)
    # position -> first offset of the v2 batch there, for the batches the cuts start at
    batch_offsets: dict[int, int] = field(default_factory=dict)
    end_bound: int | None = None  # the offset bound the extent was ended at (end_position)
    merged: bool = False  # a run of replicas=merge
    reported: tuple[MissingOffsets, ...] = ()  # what the planner reported for the partition


@dataclass
class PartitionBounds:
    lo: int = NO_LOWER  # earliest: the first batch of the log, whatever its offsets
    hi: int = NO_LIMIT
    ts_start: int | None = None
    ts_end: int | None = None


def bounds_for(key: tuple[str, int] | None, request: PlanRequest) -> PartitionBounds:
    b = PartitionBounds()
    if isinstance(request.starting_offsets, dict) and key is not None:
        v = request.starting_offsets.get(key, EARLIEST)  # never LATEST: rejected when parsed
        b.lo = NO_LOWER if v == EARLIEST else v
    if isinstance(request.ending_offsets, dict) and key is not None:
        v = request.ending_offsets.get(key, LATEST)  # never EARLIEST: rejected when parsed
        b.hi = NO_LIMIT if v == LATEST else v
    b.ts_start = request.starting_timestamp
    if request.starting_offsets_by_timestamp is not None and key is not None:
        b.ts_start = request.starting_offsets_by_timestamp.get(key)
    b.ts_end = request.ending_timestamp
    if request.ending_offsets_by_timestamp is not None and key is not None:
        b.ts_end = request.ending_offsets_by_timestamp.get(key)
    return b


def offset_window(b: PartitionBounds, pruning: Pruning) -> tuple[int, int]:
    """The offsets ``[lo, hi)`` a partition's read needs: its bounds narrowed by pushed filters
    (the bytes needed may be fewer than the exact bounds say)."""
    lo, hi = b.lo, b.hi
    if pruning.offset_min is not None:
        lo = max(lo, pruning.offset_min)
    if pruning.offset_max is not None:
        hi = min(hi, pruning.offset_max + 1)
    return lo, hi


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


def partition_extents(
    key: tuple[str, int] | None,
    probes: list[SegmentProbe],
    request: PlanRequest,
    pruning: Pruning,
) -> list[Extent]:
    """The extents one partition (its segments in offset order) contributes to the plan."""
    b = bounds_for(key, request)
    name = f"{key[0]}-{key[1]}" if key else os.path.dirname(probes[0].path)
    if b.lo >= b.hi:
        return []
    ts_start = ts_end = None
    if b.ts_start is not None:
        ts_start = _find_time(probes, b.ts_start)
        if ts_start is None and request.no_time_match == "error" and key is not None:
            raise no_time_match(key, b.ts_start)  # Spark's Kafka source's default
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
    lo, hi = offset_window(b, pruning)
    if lo >= hi:
        return []
    out: list[Extent] = []
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
    b: PartitionBounds,
    ts_start: tuple[int, BatchHeader] | None,
    ts_end: tuple[int, BatchHeader] | None,
    pruning: Pruning,
) -> Extent | None:
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
    end_bound = None
    if hi < NO_LIMIT and (nxt is None or nxt > hi) and not ends_at_time:
        bounded = p.end_position(hi)
        if bounded < end:
            end, end_bound = bounded, hi
    if start >= end:
        return None
    if start_header is not None and start_header.position != start:
        start_header = None  # read when the extent is cut (packing), not for every segment
    ext = Extent(p, start, end, start_header, b.lo, b.hi, order=0)
    ext.end_bound = end_bound
    ext.last_segment = i == len(probes) - 1 or base is None
    if ts_start is not None and i == ts_start[0] and start == ts_start[1].position:
        ext.timestamp_start = b.ts_start
    if ts_end is not None and i == ts_end[0] and end == ts_end[1].end:
        ext.timestamp_end = b.ts_end
    ext.min_timestamp_hint = pruning.timestamp_min_ms
    return ext
