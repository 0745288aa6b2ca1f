"""The driver-side planner: segment files → :class:`Split` s of batch-aligned byte ranges.

Planning reads directory listings, index files and batch headers only; it never decodes a record.
It runs for every query, so it touches as few bytes as it can:

1. **Which segments.** Discovery lists the files. They form partition logs: the segments of one
   directory (the same topic-partition found in two log dirs is two logs, each resolved on its
   own). Topic/partition filters drop partitions; the offset bounds (``startingOffsets`` /
   ``endingOffsets`` and pushed offset filters) drop segments by their file names: a segment
   holds offsets in ``[base, next segment's base)``. A user's ``startingOffsets`` /
   ``endingOffsets`` JSON must name every partition the read selects, as Spark's Kafka source
   asserts (:func:`check_offset_maps`), and an offset in it past the end of a partition's log
   is a data loss (:func:`_past_the_end`); the per-partition timestamp maps apply to the
   partitions they name, the others keeping the default.
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

Remote segments: a request costs tens of milliseconds, so what the plan will read is fetched
first with ``remoteConcurrency`` requests in flight (:mod:`.fetchahead`), and the partition logs
are then planned that many at a time (each log's steps in order); the plan is the same. The
listing is the truth about what exists for the length of a plan (:mod:`..transport.known`): a
file it did not show (an ``.index``, a checkpoint) is not asked for, and one it showed is opened
with its listed size, with no ``HEAD``.

Modules: :mod:`.probe` (one segment: indexes, verified boundaries, header walks), :mod:`.extents`
(steps 1-3 per partition log), :mod:`.packing` (step 4), :mod:`.transactions` (step 5); this
module groups the segments into logs and ties the steps together.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from ..errors import DataLossError, OptionError
from ..layout.checkpoints import (
    LogDirCheckpoints,
    one_warning_per_file,
    read_log_dir_checkpoints,
)
from ..layout.discovery import SegmentFile, discover, parent_directory, segment_bases
from ..layout.redpanda import partition_home
from ..options import DEFAULT_REMOTE_CONCURRENCY, StoreOptions, doc_ref
from ..transport.fanout import bounded_map, request_limit
from ..transport.filesystems import is_remote
from ..transport.known import known_objects
from ..transport.source import WarmSources, remote_totals, using_store
from .evidence import clip, partition_evidence, segment_end
from .extents import Extent, bounds_for, offset_window, partition_extents
from .fetchahead import planned_reads
from .packing import max_split_bytes, ranges_of, splits_for
from .probe import SegmentProbe
from .pruning import Pruning
from .replicas import check_replicas, merge_extents, replica_sets
from .request import PlanRequest
from .splits import MissingOffsets, Split
from .transactions import log_transactions

log = logging.getLogger("kafkalog")

# A remote segment weighs openCostInBytes / this in a split: a read opens that many remote files
# at once (their requests in flight together: remoteConcurrency), so each open costs a task that
# fraction of a local one. remoteConcurrency's default, not the read's value: the plan (Spark's
# partitions) does not change with the option.
REMOTE_OPENS_AT_ONCE = DEFAULT_REMOTE_CONCURRENCY


def _group_key(seg: SegmentFile) -> tuple:
    """Segments that form one partition log: same directory (one replica's log), and same topic
    and partition when known. The same topic-partition found in two log dirs is two logs. A
    KRaft snapshot is a log of its own (its offsets start at 0 again): no partition bounds, no
    partition evidence, never a replica of the partition's segments."""
    directory = partition_home(seg.path) or parent_directory(seg.path)
    if seg.snapshot is not None:
        return (2, seg.topic or "", -1 if seg.partition is None else seg.partition, seg.path)
    pk = seg.partition_key
    if pk is not None:
        return (0, pk[0], pk[1], directory)
    return (1, "", -1, directory)


def _segment_order(seg: SegmentFile) -> tuple:
    if seg.base_offset is not None:
        return (0, seg.base_offset, seg.path)
    return (1, 0, seg.path)


def plan(
    request: PlanRequest,
    segments: list[SegmentFile] | None = None,
    pruning: Pruning | None = None,
) -> list[Split]:
    """Plan a read: the splits (Spark input partitions) covering every batch the query needs.

    Splits are packed as Spark packs files (largest first), so their order is not the log's.
    With ``request.in_order`` each piece of at most ``maxPartitionBytes`` is a split of its own,
    in log order (partition by partition, offsets ascending): what a sequential reader needs.
    The front ends build the request (:mod:`.request`); the planner reads nothing else.
    """
    before = remote_totals()
    known = getattr(segments, "known", None)  # what discover()'s listings said
    with (
        using_store(request.store),
        known.active() if known is not None else known_objects(),
        one_warning_per_file(),  # a checkpoint file that is not one: one warning in the plan
    ):
        if segments is None:
            segments = discover(request.files, allow_empty=request.allow_empty)
        splits = _with_discovery_notes(_plan(request, segments, pruning), segments)
    fetched, requests = (a - b for a, b in zip(remote_totals(), before, strict=True))
    if requests:
        log.info("planning fetched %d bytes in %d requests from remote stores", fetched, requests)
    return splits


def _with_discovery_notes(splits: list[Split], segments: list[SegmentFile]) -> list[Split]:
    """``splits`` with what discovery found and did not read (see
    :attr:`~.splits.SegmentRange.discovery_notes`) on their first range."""
    notes = getattr(segments, "notes", None)
    if notes is None or not (notes.skipped_partitions or notes.events) or not splits:
        return splits
    first = splits[0]
    if not first.ranges:
        return splits
    rng = replace(
        first.ranges[0],
        skipped_partitions=notes.skipped_partitions,
        discovery_notes=tuple(
            (e.kind, e.reason, e.path, e.base_offset, e.last_offset, e.message)
            for e in notes.events
        ),
    )
    return [replace(first, ranges=(rng, *first.ranges[1:])), *splits[1:]]


def _plan(
    request: PlanRequest,
    segments: list[SegmentFile] | None,
    pruning: Pruning | None,
) -> list[Split]:
    if segments is None:
        segments = discover(request.files, allow_empty=request.allow_empty)
    pruning = pruning or Pruning()
    if pruning.empty:
        return []
    groups: dict[tuple, list[SegmentFile]] = {}
    for seg in segments:
        if pruning.may_contain(seg.topic, seg.partition):
            groups.setdefault(_group_key(seg), []).append(seg)
    _warn_unknown_partitions(request, groups)
    if request.offsets_given:
        check_offset_maps(request, {(k[1], k[2]) for k in groups if k[0] == 0})
    check_replicas(groups, request)
    extents: list[Extent] = []
    probes: list[SegmentProbe] = []
    checkpoints: dict[str, LogDirCheckpoints] = {}
    remote = any(is_remote(s.path) for ss in groups.values() for s in ss)
    limit = (request.store or StoreOptions()).concurrency if remote else 1
    warm = WarmSources()
    merged = replica_sets(groups) if request.replicas == "merge" else {}
    in_merge = {g: pk for pk, gs in merged.items() for g in gs}

    def plan_log(gkey: tuple) -> tuple[list[SegmentProbe], list[Extent]] | None:
        """Steps 1-3 and 5 for one partition log (None: read with another copy)."""
        pkey = (gkey[1], gkey[2]) if gkey[0] == 0 else None
        all_probes: list[SegmentProbe] = []
        try:
            if gkey in in_merge:
                if gkey != merged[in_merge[gkey]][0]:
                    return None  # read with the first copy
                copies = [
                    (g[3], [SegmentProbe(s) for s in sorted(groups[g], key=_segment_order)])
                    for g in merged[in_merge[gkey]]
                ]
                all_probes = [p for _, c in copies for p in c]
                group = copies[0][1]
                group_extents, lost = merge_extents(in_merge[gkey], copies, request)
                for ext in group_extents:
                    ext.merged = True
                if request.offset_gaps == "compacted":
                    lost = []
                _report(pkey, lost, group, group_extents, request, pruning)
            else:
                group = [
                    SegmentProbe(s, not is_remote(s.path) or request.remote_header_walk)
                    for s in sorted(groups[gkey], key=_segment_order)
                ]
                all_probes = group
                group_extents = partition_extents(pkey, group, request, pruning)
                _account(pkey, gkey[3], group, group_extents, request, pruning, checkpoints)
            if (
                group_extents
                and request.isolation_level == "read_committed"
                and gkey not in in_merge  # merged copies: the batches taken (merge_extents)
            ):
                txn = log_transactions([p.seg for p in group])
                for ext in group_extents:
                    ext.txn = txn
        except BaseException:
            for p in all_probes:
                p.close()
            raise
        return all_probes, group_extents

    def discard(done: tuple[list[SegmentProbe], list[Extent]] | None) -> None:
        for p in done[0] if done is not None else ():
            p.close()

    try:
        with request_limit(limit if remote else None), warm.active():
            if remote:
                warm.warm(planned_reads(groups, request, pruning), limit)
            for done in bounded_map(plan_log, sorted(groups), limit, discard, "kafkalog-plan"):
                if done is None:
                    continue
                probes.extend(done[0])
                group_extents = done[1]
                for ext in group_extents:
                    ext.order = len(extents)
                    # this read's failOnDataLoss, and its rule for a file deleted after planning
                    ext.fail_on_missing = request.fail_on_data_loss
                    ext.deleted_is_loss = request.deleted_is_loss
                    extents.append(ext)
            if not extents:
                return []
            data_bytes = sum(e.end - e.start for e in extents)
            open_cost = request.open_cost_in_bytes
            if remote:
                # a read keeps many remote files' requests in flight at once (reader/prefetch.py):
                # each weighs that much less in a split (REMOTE_OPENS_AT_ONCE)
                open_cost //= REMOTE_OPENS_AT_ONCE
            max_split = max_split_bytes(request, data_bytes + open_cost * len(extents))

            def pack(max_split: int) -> list[list[Any]]:
                return splits_for(
                    extents,
                    max_split,
                    open_cost,
                    limit,
                    request.walk_cuts,
                    request.max_records_per_partition,
                )

            bins = pack(max_split)
            want = request.min_partitions
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
                    bins = pack(max_split)
                    stalled = len(bins) <= len(best)
                    if not stalled:
                        best = bins
                bins = best
            if request.in_order:
                bins = [[piece] for piece in sorted(p for b in bins for p in b)]
    finally:
        for p in probes:
            p.close()
        warm.close()
    splits = [Split(i, ranges_of(b)) for i, b in enumerate(bins)]
    log.info(
        "planned %d splits over %d byte ranges (%d bytes) from %d segment files",
        len(splits),
        sum(len(s.ranges) for s in splits),
        data_bytes,
        len(segments),
    )
    return splits


def _account(
    pkey: tuple[str, int] | None,
    directory: str,
    group: list[SegmentProbe],
    extents: list[Extent],
    request: PlanRequest,
    pruning: Pruning,
    checkpoints: dict[str, LogDirCheckpoints],
) -> None:
    """Check one partition log against its own evidence (:mod:`.evidence`): raise under
    failOnDataLoss, else warn and hand the missing offsets to the partition's first extent (its
    reader counts them in ReadStats). Every extent learns the next segment's base offset and where
    compaction ends, for the reader's own checks; a start past
    the last batch of a segment that is not the last is checked here (no reader sees it)."""
    ckpt = None
    if pkey is not None:
        log_dir = parent_directory(directory)
        if log_dir not in checkpoints:
            checkpoints[log_dir] = read_log_dir_checkpoints(log_dir)
        ckpt = checkpoints[log_dir]
    # a selection that may be part of the directory is measured against the directory's files
    every = segment_bases(directory, request.store) if _narrowed(request) else None
    ev = partition_evidence(pkey, group, ckpt, request.offset_gaps, every)
    bases = _next_bases(group, every)
    for ext in extents:
        ext.next_base_offset = bases.get(id(ext.probe))
        ext.compacted_below = ev.compacted_below
    missing = ev.missing
    past = _start_past_data(pkey, group, extents, request, pruning, ev.compacted_below, bases)
    if past is not None:
        missing = sorted([*missing, past], key=lambda m: m.first)
    beyond = _past_the_end(pkey, group, request, every, missing)
    _report(pkey, missing, group, extents, request, pruning, beyond)


def _start_past_data(
    pkey: tuple[str, int] | None,
    group: list[SegmentProbe],
    extents: list[Extent],
    request: PlanRequest,
    pruning: Pruning,
    compacted_below: int,
    next_bases: dict[int, int | None],
) -> MissingOffsets | None:
    """The offsets from the read's start to the next segment file, when the start lies in a
    segment that is not the last and whose batches all end below it (a segment file missing or
    cut short after its last batch before the start, such as a stream's next micro-batch): no
    file holds them, and no range's reader would see the gap, since none is read there."""
    b = bounds_for(pkey, request)
    if b.ts_start is not None or b.ts_end is not None:
        return None
    lo, hi = offset_window(b, pruning)
    read = {id(e.probe) for e in extents}
    for p in group:
        base, next_base = p.seg.base_offset, next_bases.get(id(p))
        if base is None or next_base is None or not base < lo < next_base or lo >= hi:
            continue
        if not p.seg.size or id(p) in read or next_base - 1 < compacted_below:
            return None  # an empty segment is the evidence's; a read one, its reader's
        try:
            r = p.reach(lo)
        finally:
            p.close()
        if r.status != "none":
            return None
        name = p.path.rstrip("/").rsplit("/", 1)[-1]
        return MissingOffsets(
            pkey[0] if pkey else None,
            pkey[1] if pkey else None,
            lo,
            next_base - 1,
            f"the read starts at offset {lo}, but every batch of {name} ends below it and the "
            f"next segment file, {next_base:020d}.log, starts at offset {next_base}: no file "
            "holds them (a segment file missing from the copy, or this one cut short)",
            p.path,
        )
    return None


def _past_the_end(
    pkey: tuple[str, int] | None,
    group: list[SegmentProbe],
    request: PlanRequest,
    every: list[int] | None,
    known: list[MissingOffsets],
) -> list[MissingOffsets]:
    """The offsets a user's ``startingOffsets`` / ``endingOffsets`` JSON names past the end of
    the partition's log (the next offset after the last batch of its last segment): missing
    from the archive, reported as every missing offset is (failOnDataLoss). Spark's Kafka source
    reports a start past the end as data loss in a stream ("Partition t-0's offset was changed
    from 100 to 36, some data may have been missed", KafkaOffsetReaderAdmin.scala,
    getOffsetRangesFromResolvedOffsets, apache/spark 05f8646f); its batch reader, given an end
    past the latest offset, fails fetching it under failOnDataLoss (KafkaDataConsumer). The
    offsets ``known`` already names (a last segment cut short) are not named twice; nothing is
    said when the read's last file is not the partition's last, or its end cannot be told
    without a long walk."""
    if pkey is None or not request.offsets_given or not group:
        return []
    start = _given(request.starting_offsets, pkey)
    stop = _given(request.ending_offsets, pkey)
    if start is None and stop is None:
        return []
    last = group[-1]
    base = last.seg.base_offset
    if every is not None and base is not None and any(b > base for b in every):
        return []  # the selection ends before the partition's last segment file
    end = segment_end(last)
    if end is None:
        return []
    first = max([end, *(m.last + 1 for m in known)])
    name = last.path.rstrip("/").rsplit("/", 1)[-1]
    where = f"the partition's log in the archive ends before it: its last segment, {name}, " + (
        f"ends at offset {end - 1}" if end > (base or 0) else "holds no batch"
    )
    topic, part = pkey
    out = []
    if start is not None and start > first:
        out.append(
            MissingOffsets(
                topic,
                part,
                first,
                start - 1,
                f"startingOffsets for {topic}-{part} is {start}, but {where} (Spark's Kafka "
                f"source: \"Partition {topic}-{part}'s offset was changed from {start} to "
                f'{end}, some data may have been missed")',
                last.path,
            )
        )
    lo = max(first, start or 0)
    if stop is not None and stop > lo:
        out.append(
            MissingOffsets(
                topic,
                part,
                lo,
                stop - 1,
                f"endingOffsets for {topic}-{part} is {stop}, but {where}",
                last.path,
            )
        )
    return out


def _given(offsets: str | dict, pkey: tuple[str, int]) -> int | None:
    """The offset a JSON map gives ``pkey`` (None: not a map, or -2/-1: earliest, latest)."""
    if not isinstance(offsets, dict):
        return None
    v = offsets.get(pkey)
    return v if v is not None and v >= 0 else None


def check_offset_maps(request: PlanRequest, selected: set[tuple[str, int]]) -> None:
    """A user's ``startingOffsets`` / ``endingOffsets`` JSON must name every partition the read
    selects (``selected``: after ``subscribe``, ``subscribePattern`` or ``assign``, and the
    pushed filters), as Spark's Kafka source asserts for a batch query: ``OptionError`` in
    Spark's words naming the partitions left out. (KafkaOffsetReaderAdmin.scala,
    fetchPartitionOffsets, apache/spark 05f8646f: "If startingOffsets contains specific
    offsets, you must specify all TopicPartitions.\nUse -1 for latest, -2 for earliest.", the
    same sentence for endingOffsets; here with the option's own name, and only the value a
    batch read takes.) A partition named that the read does not hold is warned about."""
    for name, value, use in (
        ("startingOffsets", request.starting_offsets, "Use -2 for earliest."),
        ("endingOffsets", request.ending_offsets, "Use -1 for latest."),
    ):
        if isinstance(value, dict):
            check_every_partition(name, value, selected, use)


def check_every_partition(
    name: str, value: dict[tuple[str, int], int], selected: set[tuple[str, int]], use: str
) -> None:
    """``OptionError`` naming the partitions of ``selected`` that the JSON map ``value`` of
    option ``name`` leaves out (Spark's Kafka source's assertion, see
    :func:`check_offset_maps`); ``use`` says which special values the read takes."""
    left_out = sorted(selected - set(value))
    if not left_out:
        return
    shown = ", ".join(f"{t}-{p}" for t, p in left_out[:10])
    if len(left_out) > 10:
        shown += f" and {len(left_out) - 10} more"
    raise OptionError(
        f"option {name!r}: If {name} contains specific offsets, you must specify all "
        f"TopicPartitions. {use} Missing: {shown} (the read selects {len(selected)} "
        f"partition{'' if len(selected) == 1 else 's'}; subscribe, subscribePattern or assign "
        "select fewer)",
        doc=doc_ref(name),
    )


def _narrowed(request: PlanRequest) -> bool:
    """Whether the read may select part of a partition directory's segments: a file (or a
    glob of files) given as a path, or a file filter."""
    o = request.files
    if o.path_glob_filter or o.modified_before is not None or o.modified_after is not None:
        return True
    return any(p.rstrip("/").rsplit("/", 1)[-1].endswith(".log") for p in o.paths)


def _next_bases(group: list[SegmentProbe], every: list[int] | None) -> dict[int, int | None]:
    """For each probe (by id), the base offset of the next segment file of its directory: the
    next selected one, or with ``every`` (all the directory's base offsets) the next file."""
    out: dict[int, int | None] = {}
    ordered = sorted(every) if every else None
    for i, p in enumerate(group):
        base = p.seg.base_offset
        if ordered is not None and base is not None:
            later = [b for b in ordered if b > base]
            out[id(p)] = later[0] if later else None
        else:
            out[id(p)] = group[i + 1].seg.base_offset if i + 1 < len(group) else None
    return out


def _report(
    pkey: tuple[str, int] | None,
    missing: list[MissingOffsets],
    group: list[SegmentProbe],
    extents: list[Extent],
    request: PlanRequest,
    pruning: Pruning,
    asked: list[MissingOffsets] | None = None,
) -> None:
    """Offsets missing from one partition, within the read's bounds (and ``asked``: those the
    user's offsets name past the end of its log, whatever the bounds): raise under
    failOnDataLoss, else warn and hand them to the partition's first extent (whose reader counts
    them in ReadStats; a partition with nothing to read gets an extent of no bytes for it)."""
    b = bounds_for(pkey, request)
    lo, hi = offset_window(b, pruning)
    missing = clip(missing, lo, hi) if lo < hi else []
    if not extents and (b.ts_start is not None or b.ts_end is not None):
        missing = []  # nothing in the time bounds, which say nothing about the missing offsets
    if asked:
        missing = sorted([*missing, *asked], key=lambda m: m.first)
    if not missing:
        return
    if request.fail_on_data_loss:
        m = missing[0]
        raise DataLossError(
            f"failOnDataLoss: {m.message()}. Set failOnDataLoss=false to read what is there (the "
            "missing offsets are then reported)",
            m.path,
            None,
            None,
        )
    for m in missing:
        log.warning("kafkalog: %s", m.message())
    if not extents:
        ext = Extent(group[-1], 0, 0, None, b.lo, b.hi)
        ext.last_segment = True
        extents.append(ext)
    extents[0].missing = tuple(missing)
    for ext in extents:
        ext.reported = tuple(missing)


def _warn_unknown_partitions(request: PlanRequest, groups: dict[tuple, list]) -> None:
    present = {(k[1], k[2]) for k in groups if k[0] == 0}
    for name, value in (
        ("startingOffsets", request.starting_offsets),
        ("endingOffsets", request.ending_offsets),
        ("startingOffsetsByTimestamp", request.starting_offsets_by_timestamp),
        ("endingOffsetsByTimestamp", request.ending_offsets_by_timestamp),
    ):
        if isinstance(value, dict):
            missing = sorted(set(value) - present)
            if missing:
                shown = ", ".join(f"{t}-{p}" for t, p in missing[:10])
                log.warning("option %r names partitions with no segment to read: %s", name, shown)


__all__ = [
    "MissingOffsets",
    "Pruning",
    "SegmentProbe",
    "check_every_partition",
    "check_offset_maps",
    "max_split_bytes",
    "plan",
]
