"""The same topic-partition found in several directories: copies of one partition taken from
several brokers (replicas), or a topic deleted and created again under the same name.

Reading the copies together would give every record once per copy, so the planner refuses by
default (``replicas=error``) and names the directories. ``replicas=separate`` reads each copy
as a partition log of its own (every record once per copy, as a comparison of the copies wants);
``replicas=merge`` reads each offset once, from the copies that hold it (:func:`merge_extents`).

Two directories whose ``partition.metadata`` name different topic ids are different topics that
share a name; the error says so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..errors import DataLossError, PathError
from ..format.batch import BatchHeader
from ..layout.checkpoints import read_topic_id
from ..layout.discovery import SegmentFile
from .extents import Extent, PartitionBounds, bounds_for
from .logview import transaction_event
from .markers import SegmentSummary
from .probe import SegmentProbe
from .request import PlanRequest, no_time_match
from .splits import MissingOffsets
from .transactions import LogTransactions, collect

log = logging.getLogger("kafkalog")


def replica_sets(groups: dict[tuple, list[SegmentFile]]) -> dict[tuple[str, int], list[tuple]]:
    """Topic-partitions found in more than one directory: ``(topic, partition)`` → group keys."""
    by_partition: dict[tuple[str, int], list[tuple]] = {}
    for gkey in groups:
        if gkey[0] == 0:
            by_partition.setdefault((gkey[1], gkey[2]), []).append(gkey)
    return {k: sorted(v) for k, v in by_partition.items() if len(v) > 1}


def check_replicas(groups: dict[tuple, list[SegmentFile]], request: PlanRequest) -> None:
    """Raise :class:`PathError` when a topic-partition is in several directories, unless the
    ``replicas`` option says how to read them."""
    if request.replicas != "error":
        return
    sets = replica_sets(groups)
    if not sets:
        return
    (topic, part), gkeys = next(iter(sorted(sets.items())))
    dirs = [g[3] for g in gkeys]
    ids = {d: read_topic_id(d) for d in dirs}
    known = {i for i in ids.values() if i is not None}
    shown = ", ".join(dirs)
    more = f" ({len(sets) - 1} more partitions are too)" if len(sets) > 1 else ""
    if len(known) > 1:
        with_ids = ", ".join(f"{d} (topic id {ids[d] or 'unknown'})" for d in dirs)
        raise PathError(
            f"{topic}-{part} is in {len(dirs)} directories that hold different topics of the same "
            f"name: {with_ids}; the topic was deleted and created again. Read them one at a "
            f"time, or set replicas=separate to read each as it is{more}"
        )
    raise PathError(
        f"{topic}-{part} is in {len(dirs)} directories: {shown} (copies of one partition from "
        "several brokers?). Read together, every record would come once per copy. Read one of "
        "them, set replicas=merge to read each offset once from the copies that hold it (their "
        f"overlapping batches are checked to agree), or replicas=separate to read every copy{more}"
    )


@dataclass(frozen=True)
class _Batch:
    header: BatchHeader
    copy: int  # index of the copy (directory)
    segment: int  # index of the segment in its copy

    @property
    def key(self) -> tuple[int, int, int]:
        h = self.header
        return (h.last_offset, h.crc, h.partition_leader_epoch)


def _copy_batches(k: int, probes: list[SegmentProbe]) -> list[_Batch]:
    out = []
    for i, p in enumerate(probes):
        for h in p.walk(0, required=True):
            out.append(_Batch(h, k, i))
        if p.walk_error is not None:
            log.warning(
                "replicas=merge: %s: batches after byte %s are not merged (%s)",
                p.path,
                p.walk_error.position,
                p.walk_error.reason,
            )
        p.close()
    return out


def merge_extents(
    key: tuple[str, int],
    copies: list[tuple[str, list[SegmentProbe]]],
    request: PlanRequest,
) -> tuple[list[Extent], list[MissingOffsets]]:
    """``replicas=merge``: the extents that read each offset of one topic-partition once, from
    the copies (``(directory, segment probes in offset order)``) that hold it, and the offsets
    no copy holds.

    Every batch header of every copy is walked (on the driver). Batches are taken in offset
    order; where several copies hold a batch at the same base offset, the first copy's is read
    and the others must agree with it (last offset, CRC, leader epoch). A batch of one copy that
    overlaps a batch of another at a different base offset, or disagrees with it, is a
    divergence (different data at the same offsets, as after an unclean leader election): both
    copies are named in a warning, and failOnDataLoss=true raises.
    """
    b = bounds_for(key, request)
    batches = [x for k, (_, probes) in enumerate(copies) for x in _copy_batches(k, probes)]
    batches.sort(key=lambda x: (x.header.base_offset, -x.header.last_offset, x.copy))
    name = f"{key[0]}-{key[1]}"
    chosen: list[_Batch] = []
    by_base: dict[int, _Batch] = {}
    missing: list[MissingOffsets] = []
    divergent: list[str] = []
    end = None  # last offset taken so far
    for x in batches:
        h = x.header
        if end is not None and h.base_offset <= end:
            same = by_base.get(h.base_offset)
            if same is None or same.key != x.key:
                other = same or chosen[-1]
                divergent.append(
                    f"{name}: {copies[x.copy][0]} has a batch at offsets {h.base_offset}.."
                    f"{h.last_offset} (CRC {h.crc:08x}, leader epoch {h.partition_leader_epoch})"
                    f" that differs from {copies[other.copy][0]}'s at offsets "
                    f"{other.header.base_offset}..{other.header.last_offset} (CRC "
                    f"{other.header.crc:08x}, leader epoch {other.header.partition_leader_epoch})"
                )
            continue
        if end is not None and h.magic >= 2 and h.base_offset > end + 1:
            missing.append(
                MissingOffsets(
                    key[0],
                    key[1],
                    end + 1,
                    h.base_offset - 1,
                    "no copy holds them (replicas=merge)",
                    copies[x.copy][1][x.segment].path,
                )
            )
        chosen.append(x)
        by_base[h.base_offset] = x
        end = h.last_offset
    for d in divergent[:20]:
        log.warning("kafkalog: replicas diverge: %s", d)
    if divergent and request.fail_on_data_loss:
        raise DataLossError(
            f"failOnDataLoss: the copies of {name} disagree in {len(divergent)} batches; the "
            f"first: {divergent[0]}"
        )
    txn = (
        _transactions(name, chosen, copies) if request.isolation_level == "read_committed" else None
    )
    first, last, ends_at_time = _time_window(chosen, b)
    if b.ts_start is not None and first >= len(chosen) and request.no_time_match == "error":
        raise no_time_match(key, b.ts_start)  # as a single log's planning (extents.py)
    # runs of batches adjacent in one segment file become extents
    extents: list[Extent] = []
    for i, x in enumerate(chosen[first:last], first):
        probe = copies[x.copy][1][x.segment]
        last = extents[-1] if extents else None
        if last is not None and last.probe is probe and last.end == x.header.position:
            last.end = x.header.end
            continue
        ext = Extent(probe, x.header.position, x.header.end, x.header, b.lo, b.hi)
        ext.last_segment = x.segment == len(copies[x.copy][1]) - 1
        ext.txn = txn
        if i == first and b.ts_start is not None:
            ext.timestamp_start = b.ts_start
        extents.append(ext)
    if extents and ends_at_time:
        extents[-1].timestamp_end = b.ts_end  # the batch holding the first record at ts_end
    if extents:
        log.info(
            "%s: replicas=merge reads %d runs of batches from %d copies",
            name,
            len(extents),
            len({id(e.probe) for e in extents}),
        )
    return extents, missing


def _readable(h: BatchHeader) -> bool:
    return h.magic < 2 or h.records_count != 0


def _time_window(chosen: list[_Batch], b: PartitionBounds) -> tuple[int, int, bool]:
    """The chosen batches ``[first, last)`` a read with timestamp bounds needs: from the first
    non-empty batch whose maxTimestamp is >= the start time, through the first whose maxTimestamp
    is >= the end time (it holds the first record at or after it), as a single log's planning
    does; and whether the last one is the batch at the end time."""
    first, last, found = 0, len(chosen), False
    if b.ts_start is not None:
        first = next(
            (i for i, x in enumerate(chosen) if x.header.max_timestamp >= b.ts_start
             and _readable(x.header)),
            len(chosen),
        )  # fmt: skip
    if b.ts_end is not None:
        at = next(
            (i + 1 for i in range(first, len(chosen)) if chosen[i].header.max_timestamp >= b.ts_end
             and _readable(chosen[i].header)),
            None,
        )  # fmt: skip
        found = at is not None
        last = at if at is not None else len(chosen)
    return first, last, found


def _transactions(
    name: str, chosen: list[_Batch], copies: list[tuple[str, list[SegmentProbe]]]
) -> LogTransactions:
    """read_committed over merged copies: the aborted and undecided transactions of the batches
    taken, in offset order (each marker read from the copy whose batch was taken)."""
    events: list[tuple[int, int, int]] = []
    local_open: set[int] = set()
    for x in chosen:
        h = x.header
        probe = copies[x.copy][1][x.segment]
        kind = transaction_event(h, probe.source.read, local_open)
        if kind is not None and kind >= 0:
            events.append((h.base_offset, h.producer_id, kind))
    for _, probes in copies:
        for p in probes:
            p.close()
    summary = SegmentSummary(
        f"{name} (replicas=merge)",
        None,
        chosen[0].header.base_offset if chosen else None,
        chosen[-1].header.last_offset + 1 if chosen else None,
        tuple(events),
        None,
    )
    return collect([summary])


__all__ = ["check_replicas", "merge_extents", "replica_sets"]
