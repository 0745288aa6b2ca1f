"""Admission control: how far each partition may go in one micro-batch, within a limit.

Pure functions over offsets and segment sizes: no I/O, no Spark.
"""

from __future__ import annotations

from dataclasses import dataclass

from .offsets import Offsets, PartitionKey
from .snapshot import PartitionLog


@dataclass(frozen=True)
class Limit:
    """How much one micro-batch may take: ``kind`` is ``all``, ``offsets``, ``bytes`` or
    ``files``, ``amount`` the maximum."""

    kind: str = "all"
    amount: int = 0


def admit(
    begin: Offsets, avail: Offsets, limit: Limit, logs: dict[PartitionKey, PartitionLog]
) -> Offsets:
    """Per-partition ends within ``limit``, shared in proportion to each partition's backlog."""
    backlog = {k: avail[k] - begin[k] for k in avail if avail[k] > begin[k]}
    out = {k: max(avail[k], begin[k]) for k in avail}
    if limit.kind == "all" or not backlog:
        return out
    if limit.kind == "files":
        return _admit_files(begin, avail, backlog, limit.amount, logs)
    if limit.kind == "bytes":
        cost = {k: bytes_between(logs[k], begin[k], avail[k]) for k in backlog}
    else:
        cost = {k: float(n) for k, n in backlog.items()}
    total = sum(cost.values())
    if total <= limit.amount:
        return out
    for k in backlog:
        share = limit.amount * cost[k] / total  # this partition's part of the limit
        if limit.kind == "bytes":
            n = offsets_within(logs[k], begin[k], avail[k], share)
        else:
            n = int(share)
        out[k] = begin[k] + min(n, backlog[k])
    if all(out[k] == begin[k] for k in backlog):  # always make progress: the largest backlog
        k = max(backlog, key=lambda k: (cost[k], k))
        out[k] = begin[k] + 1
    return out


def segment_spans(p: PartitionLog) -> list[tuple[int, int, int]]:
    """``(first offset, next segment's first offset, bytes)`` per segment."""
    spans = []
    for i, s in enumerate(p.segments):
        lo = s.base_offset if s.base_offset is not None else p.earliest
        nxt = p.segments[i + 1].base_offset if i + 1 < len(p.segments) else None
        hi = nxt if nxt is not None else max(p.end, lo + 1)
        spans.append((lo, max(hi, lo + 1), s.size))
    return spans


def bytes_between(p: PartitionLog, lo: int, hi: int) -> float:
    """Segment bytes holding offsets ``[lo, hi)``, interpolated within a segment."""
    total = 0.0
    for a, b, size in segment_spans(p):
        x, y = max(a, lo), min(b, hi)
        if x < y:
            total += size * (y - x) / (b - a)
    return total


def offsets_within(p: PartitionLog, lo: int, hi: int, budget: float) -> int:
    """How many offsets from ``lo`` fit in ``budget`` segment bytes (interpolated)."""
    at = lo
    for a, b, size in segment_spans(p):
        if b <= at or at >= hi:
            continue
        per = size / (b - a) if size else 0.0
        span = min(b, hi) - at
        cost = per * span
        if cost <= budget:
            budget -= cost
            at += span
        else:
            return at - lo + (int(budget / per) if per else span)
    return at - lo


def _admit_files(
    begin: Offsets,
    avail: Offsets,
    backlog: dict[PartitionKey, int],
    files: int,
    logs: dict[PartitionKey, PartitionLog],
) -> Offsets:
    """Ends that touch at most ``files`` segment files, taken round-robin across partitions."""
    queues: dict[PartitionKey, list[int]] = {}
    for k in backlog:
        ends = [b for a, b, _ in segment_spans(logs[k]) if b > begin[k] and a < avail[k]]
        queues[k] = [min(e, avail[k]) for e in ends]
    out = {k: max(avail[k], begin[k]) for k in avail}
    for k in backlog:
        out[k] = begin[k]
    left = max(1, files)
    while left > 0 and any(queues.values()):
        for k in sorted(queues):
            if left and queues[k]:
                out[k] = queues[k].pop(0)
                left -= 1
    return out


__all__ = ["Limit", "admit", "bytes_between", "offsets_within", "segment_spans"]
