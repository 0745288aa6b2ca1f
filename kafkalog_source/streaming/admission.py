"""Admission control: how far each partition may go in one micro-batch, within a limit.

Pure functions over offsets and segment sizes: no I/O, no Spark. The rules, with Spark's names:

* ``maxOffsetsPerTrigger``: Spark's Kafka source (``KafkaMicroBatchStream.rateLimit``, read at
  apache/spark 676455ec; ``KafkaSource`` has shared the limit so since Spark 2.x, later versions
  adding only an overflow guard, SPARK-26718): each partition with a backlog gets
  ``limit * backlog / total`` offsets, rounded down, or **up when that share is below one**
  ("don't completely starve small partitions"), and never past its end
  (:func:`spark_rate_limit`). kafkalog then hands the
  offsets that rounding left unused to the partitions whose shares were rounded down, largest
  remainders first, one each (:func:`admit_offsets`; a share rounded up to one gets none), so a
  micro-batch takes ``min(limit, backlog)`` offsets, more only when the shares rounded up to one
  already exceed it; Spark's source may take up to one offset per partition less. Every
  partition with data therefore advances at **every** trigger.
* ``maxBytesPerTrigger`` (Spark's file sources' name; Spark's Kafka source has no byte limit):
  the same sharing over segment bytes, estimated within a segment from its offsets and size, a
  share worth less than one offset rounded up to one. Every partition with data advances at
  every trigger.
* ``maxFilesPerTrigger`` (Spark's file sources' name): the segment files a micro-batch touches,
  handed out one per partition per round, in a rotation of the partitions by name that carries
  on from trigger to trigger (and across restarts: the offsets keep the last partition served,
  :data:`~.offsets.FILES_TURN_KEY`). With ``P`` partitions holding data and ``F`` files per
  trigger, each of them advances at least once every ``ceil(P / F)`` triggers; a partition that
  gets data later joins the rotation at its place by name.
* ``minOffsetsPerTrigger`` with ``maxTriggerDelay``: Spark's ``KafkaMicroBatchStream.delayBatch``
  (:func:`delay_batch`).
"""

from __future__ import annotations

import math
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
    begin: Offsets,
    avail: Offsets,
    limit: Limit,
    logs: dict[PartitionKey, PartitionLog],
    turn: PartitionKey | None = None,
) -> tuple[Offsets, PartitionKey | None]:
    """Per-partition ends within ``limit`` from ``begin`` towards ``avail``, and the last
    partition served a file (``turn``, unchanged unless the limit is ``files``)."""
    backlog = {k: avail[k] - begin[k] for k in avail if avail[k] > begin[k]}
    out = {k: max(avail[k], begin[k]) for k in avail}
    if limit.kind == "all" or not backlog:
        return out, turn
    if limit.kind == "files":
        return admit_files(begin, avail, limit.amount, logs, turn)
    if limit.kind == "bytes":
        take = admit_bytes(begin, avail, limit.amount, logs)
    else:
        take = admit_offsets(limit.amount, backlog)
    for k, n in take.items():
        out[k] = begin[k] + n
    return out, turn


def spark_rate_limit(limit: int, backlog: dict[PartitionKey, int]) -> dict[PartitionKey, int]:
    """Spark's Kafka source's share of ``limit`` for each partition with a backlog (offsets it
    may take): ``limit * (size / total)``, rounded up below 1 and down otherwise, at most the
    backlog (``KafkaMicroBatchStream.rateLimit``)."""
    sizes = {k: n for k, n in backlog.items() if n > 0}
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(sizes)
    out = {}
    for k, size in sizes.items():
        prorate = limit * (size / total)
        n = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        out[k] = min(size, n)
    return out


def admit_offsets(limit: int, backlog: dict[PartitionKey, int]) -> dict[PartitionKey, int]:
    """``maxOffsetsPerTrigger``: :func:`spark_rate_limit`, and the offsets its rounding left
    unused (up to ``min(limit, total backlog)``) handed one each to the partitions whose shares
    were rounded down, largest remainders first (then by name), never past a partition's
    backlog; a share rounded up to one gets none (shares 45/45/9 of 10: 5/4/1, not 4/4/2)."""
    out = spark_rate_limit(limit, backlog)
    total = sum(out.values())
    left = min(limit, sum(backlog.values())) - total
    if left <= 0:
        return out
    whole = float(sum(backlog.values()))

    def share(k: PartitionKey) -> float:
        return limit * (backlog[k] / whole)

    # a share rounded up to one already took more than it was due: it gets no leftover
    rounded_down = (k for k in out if out[k] < backlog[k] and share(k) >= 1)
    for k in sorted(rounded_down, key=lambda k: (math.floor(share(k)) - share(k), k)):
        if left == 0:
            break
        out[k] += 1
        left -= 1
    return out


def admit_bytes(
    begin: Offsets, avail: Offsets, limit: int, logs: dict[PartitionKey, PartitionLog]
) -> dict[PartitionKey, int]:
    """``maxBytesPerTrigger``: offsets per partition, the byte limit shared in proportion to each
    partition's backlog in bytes; a share worth less than one offset is one offset."""
    backlog = {k: avail[k] - begin[k] for k in avail if avail[k] > begin[k]}
    cost = {k: bytes_between(logs[k], begin[k], avail[k]) for k in backlog}
    total = sum(cost.values())
    if total <= limit:
        return backlog
    out = {}
    for k, n in backlog.items():
        share = limit * (cost[k] / total)  # this partition's part of the limit, in bytes
        out[k] = min(n, max(1, offsets_within(logs[k], begin[k], avail[k], share)))
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


def admit_files(
    begin: Offsets,
    avail: Offsets,
    files: int,
    logs: dict[PartitionKey, PartitionLog],
    turn: PartitionKey | None = None,
) -> tuple[Offsets, PartitionKey | None]:
    """``maxFilesPerTrigger``: ends that touch at most ``files`` segment files (at least one),
    one file per partition per round, the rounds going through the partitions with a backlog by
    name starting after ``turn`` (the last partition served at the previous trigger); returns
    the ends and the last partition served now."""
    queues: dict[PartitionKey, list[int]] = {}
    out = {k: max(avail[k], begin[k]) for k in avail}
    for k in avail:
        if avail[k] > begin[k]:
            ends = [b for a, b, _ in segment_spans(logs[k]) if b > begin[k] and a < avail[k]]
            queues[k] = [min(e, avail[k]) for e in ends] or [avail[k]]
            out[k] = begin[k]
    order = sorted(queues)
    if turn is not None:  # the rotation goes on after the partition served last
        after = [k for k in order if k > turn]
        order = after + [k for k in order if k <= turn]
    left = max(1, files)
    while left > 0 and any(queues.values()):
        for k in order:
            if left and queues[k]:
                out[k] = queues[k].pop(0)
                turn = k
                left -= 1
    return out, turn


def delay_batch(
    min_offsets: int,
    new_offsets: int,
    now_ms: float,
    last_trigger_ms: float,
    max_delay_ms: int,
) -> tuple[bool, float]:
    """``minOffsetsPerTrigger``: whether to skip this trigger, and the time of the last trigger
    that ran (Spark's ``KafkaMicroBatchStream.delayBatch``). A trigger runs once
    ``maxTriggerDelay`` has passed since the last one that ran (the first one always runs: the
    last is at 0), or when at least ``min_offsets`` new offsets are available."""
    if now_ms - last_trigger_ms >= max_delay_ms:
        return False, now_ms
    if new_offsets < min_offsets:
        return True, last_trigger_ms
    return False, now_ms


__all__ = [
    "Limit",
    "admit",
    "admit_bytes",
    "admit_files",
    "admit_offsets",
    "bytes_between",
    "delay_batch",
    "offsets_within",
    "segment_spans",
    "spark_rate_limit",
]
