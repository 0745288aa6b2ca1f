"""Splitting and packing, as Spark's file source: extents cut at verified batch starts into pieces
of about ``maxPartitionBytes``, packed "next fit decreasing" with ``openCostInBytes`` per piece,
and each split's pieces turned into :class:`SegmentRange` s.

With ``maxRecordsPerPartition`` (Spark's Kafka source's name: no split holds more offsets), the
pieces are cut further where the offsets they hold would pass it, at the batch holding the
offset ``first + maxRecordsPerPartition`` (found from the ``.index`` and a short header walk:
:meth:`~.probe.SegmentProbe.reach`), and packing never puts more than that many offsets in one
split. A batch is never cut: one holding more offsets than the limit is a piece of its own. A
v0/v1 wrapper's first offset is not known without decompressing it (its entry offset is its
last), so a piece starting at one may hold up to that wrapper's records more. Where planning
cannot see the batches (a remote segment without a usable ``.index`` and without
``remoteHeaderWalk``), a piece stays as it is and is a split of its own."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..layout.tiered import MANIFEST_SUFFIX, is_tiered_log, tiered_sibling
from ..transport.fanout import bounded_map
from ..transport.filesystems import is_remote, regions_of
from ..transport.known import current_known
from .extents import Extent
from .request import PlanRequest
from .splits import SegmentRange


@dataclass(order=True)
class _Piece:
    sort_key: tuple = field(compare=True)
    extent: Extent = field(compare=False)
    start: int = field(compare=False)
    end: int = field(compare=False)
    records: int = field(default=0, compare=False)  # offsets it holds at most (maxRecords...)

    @property
    def size(self) -> int:
        return self.end - self.start


def _cut(ext: Extent, max_split: int, walk: bool = True) -> list[tuple[int, int]]:
    """Cut an extent into batch-aligned pieces of about ``max_split`` bytes (not at all, unless
    ``walk``, when the segment has no ``.index`` entries: every cut point would be found by a
    serial walk of the batch headers from the start; with entries, a walk starts at the entry
    before each cut point). The caller closes the probe (once for all of a segment's cuts)."""
    p = ext.probe
    if not walk and ext.end - ext.start > max_split // 2 and not len(p.offset_index()[1]):
        return [(ext.start, ext.end)]
    out: list[tuple[int, int]] = []
    cur, prev = ext.start, ext.start_header
    slack = min(1 << 20, max(1, max_split // 8))
    # cut points on a fixed grid (as Spark's file splits), each moved to the next batch start
    if prev is None and ext.end - cur > max_split // 2:
        prev = p.header(ext.start)  # read only for an extent to cut
    if prev is not None and prev.magic >= 2:  # the batch at ext.start
        ext.batch_offsets[ext.start] = prev.base_offset
    while prev is not None and ext.end - cur > max_split // 2:
        cut = ext.start + ((cur - ext.start) // max_split + 1) * max_split
        if cut >= ext.end:
            break
        h = p.boundary_at_or_after(cut, prev, slack)
        if h is None or h.position >= ext.end:
            break
        out.append((cur, h.position))
        cur, prev = h.position, h
        if h.magic >= 2:  # (a legacy entry's offset is its last one)
            ext.batch_offsets[h.position] = h.base_offset
    out.append((cur, ext.end))
    return out


def _first_offset(ext: Extent, start: int) -> int | None:
    """The first offset a piece of ``ext`` starting at byte ``start`` may return (None: no batch
    there). A v0/v1 wrapper's entry offset is its last one, so after the segment's first byte
    the first offset of a wrapper is not known without decoding it: its entry offset stands in
    (the piece then holds up to one wrapper's records more than counted)."""
    first = ext.batch_offsets.get(start)
    if first is None:
        h = ext.probe.header(start)
        if h is None:
            return None
        if h.magic >= 2:
            first = ext.batch_offsets[start] = h.base_offset
        elif start == 0 and ext.probe.seg.base_offset is not None:
            first = ext.probe.seg.base_offset
        else:
            first = h.last_offset
    return max(first, ext.offset_lo)


def _stop_offset(ext: Extent, end: int) -> int | None:
    """The first offset past a piece of ``ext`` ending at byte ``end``, when planning knows it."""
    stop = ext.batch_offsets.get(end) if end != ext.end else ext.end_bound
    if end == ext.end and stop is None:
        stop = ext.next_base_offset
    return min(stop, ext.offset_hi) if stop is not None else None


def _cut_records(ext: Extent, cuts: list[tuple[int, int]], most: int) -> list[tuple[int, int, int]]:
    """``cuts`` cut further so that no piece holds more than ``most`` offsets (see the module's
    documentation); each piece with the offsets it holds at most (``most`` where not known).
    The caller closes the probe."""
    p = ext.probe
    out: list[tuple[int, int, int]] = []
    for start, end in cuts:
        first = _first_offset(ext, start)
        while first is not None:
            stop = _stop_offset(ext, end)
            if stop is not None and stop - first <= most:
                break
            r = p.reach(first + most)  # the batch holding the first offset past the limit
            h = r.header
            if r.status != "found" or h is None or h.position >= end:
                if r.status == "gave_up":
                    first = None  # not known: the piece as it is, a split of its own
                break  # every batch before ``end`` ends below first + most
            if h.position > start:  # cut before it
                cut = h.position
                if h.magic >= 2:
                    after = h.base_offset
                else:
                    after = r.pred_last + 1 if r.pred_last is not None else h.last_offset
            else:  # one batch holds more than ``most`` offsets: a piece of its own
                cut, after = h.end, h.last_offset + 1
            if cut >= end:
                break
            nxt = p.header(cut)
            if nxt is None:
                break
            if nxt.magic >= 2:
                ext.batch_offsets[cut] = after = nxt.base_offset
            out.append((start, cut, max(1, min(most, after - first))))
            start, first = cut, max(after, ext.offset_lo)
        if first is None:
            out.append((start, end, most))
            continue
        stop = _stop_offset(ext, end)
        out.append((start, end, most if stop is None else max(1, min(most, stop - first))))
    return out


def _pack(
    pieces: list[_Piece], max_split: int, open_cost: int, max_records: int | None = None
) -> list[list[_Piece]]:
    """Spark's FilePartition packing: sort by size descending, then next fit (a new split also
    where the offsets would pass ``max_records``)."""
    bins: list[list[_Piece]] = []
    current: list[_Piece] = []
    current_size = current_records = 0
    for piece in sorted(pieces, key=lambda x: (-x.size, x.sort_key)):
        over = max_records is not None and current_records + piece.records > max_records
        if current and (current_size + piece.size > max_split or over):
            bins.append(current)
            current, current_size, current_records = [], 0, 0
        current.append(piece)
        current_size += piece.size + open_cost
        current_records += piece.records
    if current:
        bins.append(current)
    return bins


def ranges_of(bin_: list[_Piece]) -> tuple[SegmentRange, ...]:
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


def _range(ext: Extent, start: int, end: int) -> SegmentRange:
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
        counts_file=start == ext.start,
        missing=ext.missing if start == ext.start else (),
        next_base_offset=ext.next_base_offset if end == seg.size else None,
        compacted_below=ext.compacted_below,
        fail_on_missing=ext.fail_on_missing,
        deleted_is_loss=ext.deleted_is_loss,
        start_offset=ext.batch_offsets.get(start),
        end_offset=_end_offset(ext, end),
        offsets_exact=not ext.merged and seg.snapshot is None,
        partition_missing=ext.reported,
        objects=_objects(seg.path),
        regions=regions_of(seg.path),
    )


def _objects(path: str) -> tuple[tuple[str, int, str], ...]:
    """The listed sizes and entity tags of the objects a reader of ``path`` opens (none for a
    local file)."""
    known = current_known()
    if known is None or not is_remote(path):
        return ()
    if is_tiered_log(path):
        return known.entries((path, tiered_sibling(path, MANIFEST_SUFFIX)))
    return known.entries((path,))


def _end_offset(ext: Extent, end: int) -> int | None:
    """The first offset of the batch at ``end``: where the planner cut the extent there, the
    batch it read; where the extent itself ends inside its file at an upper offset bound (the
    planner ends it at the first batch past the bound, pushed filters included), that bound;
    None otherwise (the end of the file, or an end set by a timestamp rule)."""
    if end != ext.end:
        return ext.batch_offsets.get(end)
    return ext.end_bound


def max_split_bytes(request: PlanRequest, total_bytes: int) -> int:
    """Spark's maxSplitBytes: ``min(maxPartitionBytes, max(openCost, total / minPartitions))``,
    or ``maxPartitionBytes`` when ``minPartitions`` is not set. ``total_bytes`` includes one
    open cost per file."""
    if request.min_partitions is None:
        return request.max_partition_bytes
    per_partition = total_bytes // request.min_partitions
    return max(1, min(request.max_partition_bytes, max(request.open_cost_in_bytes, per_partition)))


def splits_for(
    extents: list[Extent],
    max_split: int,
    open_cost: int,
    concurrency: int = 1,
    walk_cuts: bool = True,
    max_records: int | None = None,
) -> list[list[_Piece]]:
    """The extents cut into pieces and packed into splits; the segments are cut ``concurrency``
    at a time (remote ones: each cut reads batch headers), each segment's extents in order; a
    segment with no ``.index`` entry stays whole unless ``walk_cuts``; with ``max_records``,
    no split holds more offsets (maxRecordsPerPartition)."""
    by_probe: dict[int, list[tuple[int, Extent]]] = {}
    for i, ext in enumerate(extents):
        by_probe.setdefault(id(ext.probe), []).append((i, ext))

    def cut_all(exts: list[tuple[int, Extent]]) -> list[tuple[int, int, int, int]]:
        """One segment's extents cut (its probe opened once for all of them)."""
        out = []
        try:
            for i, ext in exts:
                cuts = _cut(ext, max_split, walk_cuts)
                if max_records is None:
                    out += [(i, start, end, 0) for start, end in cuts]
                else:
                    out += [(i, *piece) for piece in _cut_records(ext, cuts, max_records)]
        finally:
            exts[0][1].probe.close()
        return out

    cuts: dict[int, list[tuple[int, int, int]]] = {}
    for done in bounded_map(cut_all, list(by_probe.values()), concurrency, name="kafkalog-cut"):
        for i, start, end, records in done:
            cuts.setdefault(i, []).append((start, end, records))
    pieces = [
        _Piece((ext.order, start), ext, start, end, records)
        for i, ext in enumerate(extents)
        for start, end, records in cuts[i]
    ]
    return _pack(pieces, max_split, open_cost, max_records)
