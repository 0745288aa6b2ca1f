"""The driver side of a stream over a growing archive: offsets, limits and micro-batch plans.

A micro-batch from ``start`` to ``end`` reads, in every partition, the records with
``start <= offset < end``: the batch planner does that exactly (``startingOffsets`` /
``endingOffsets`` maps), cutting ranges on batch boundaries and dropping the records outside the
bounds, so a micro-batch boundary may fall inside a Kafka batch and no record is read twice or
skipped. :class:`StreamSource` ties the concerns together, each in its own module:

* :mod:`.offsets`: the offsets and their JSON (what Spark checkpoints);
* :mod:`.snapshot`: what the archive holds now, each partition's end (walking only appended
  bytes), and the rewrites of a last segment noticed between triggers;
* :mod:`.rewrites`: the last batch delivered per partition, checked when a query starts from a
  checkpoint, and the delivered offsets a rewrite replaced;
* :mod:`.admission`: how far each partition may go in one micro-batch (Spark's names:
  ``maxOffsetsPerTrigger``, ``maxBytesPerTrigger``, ``maxFilesPerTrigger``);
* :mod:`.loss`: the data-loss policy (``failOnDataLoss``), retention and last segments cut
  short.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..arrow.schema import Projection
from ..layout.checkpoints import one_warning_per_file
from ..options import EARLIEST, LATEST, ReadOptions
from ..planning.planner import check_every_partition, plan
from ..planning.request import (
    check_stream_options,
    micro_batch_request,
    no_time_match,
    time_lookup_request,
)
from ..planning.splits import Split
from ..stats import ReadStats
from ..transport.filesystems import using_store
from .admission import Limit, admit, delay_batch
from .loss import (
    CUT_GRACE_MS,
    CutEnds,
    LossPolicy,
    check_retention,
    reader_options,
    stream_fail_on_data_loss,
)
from .offsets import (
    FILES_TURN_KEY,
    LAST_BATCH_KEY,
    BatchPrint,
    Offsets,
    PartitionKey,
    Prints,
    offsets_from_json,
    offsets_to_json,
    prints_from_json,
    turn_from_json,
)
from .rewrites import DeliveredBatches
from .snapshot import ArchiveView, PartitionLog

log = logging.getLogger("kafkalog")

# splits per micro-batch when minPartitions is not set (each at least openCostInBytes)
STREAM_MIN_PARTITIONS = 2

_T = TypeVar("_T")


def _one_checkpoint_warning(method: Callable[..., _T]) -> Callable[..., _T]:
    """A :class:`StreamSource` method under the query's checkpoint warnings: a log directory's
    checkpoint file that is not one is warned about once in the query, not at every trigger,
    nor for every partition a trigger looks it up for."""

    @functools.wraps(method)
    def under_query(self: StreamSource, *args: Any, **kwargs: Any) -> _T:
        with one_warning_per_file(self._checkpoints_warned):
            return method(self, *args, **kwargs)

    return under_query


@dataclass
class StreamSource:
    """Offsets and micro-batch plans over the archive that ``options`` names."""

    options: ReadOptions
    fail_on_data_loss: bool = True
    available: Offsets = field(default_factory=dict)  # each partition's end at the last latest()
    # maxFilesPerTrigger: the last partition served a file (the rotation goes on after it)
    turn: PartitionKey | None = None
    _target: Offsets | None = None  # Trigger.AvailableNow: the offsets to stop at
    _logs: dict[PartitionKey, PartitionLog] | None = None  # the last snapshot
    clock: Callable[[], float] = time.time  # seconds (minOffsetsPerTrigger's delay)
    _last_trigger_ms: float = 0.0  # when the last trigger ran (Spark's: 0 before the first)

    def __post_init__(self) -> None:
        check_stream_options(self.options)  # an end is for batch reads: refused, named
        o = self.options
        if "maxTriggerDelay" in o.given and o.min_offsets_per_trigger is None:
            log.warning("option 'maxTriggerDelay' is read only with minOffsetsPerTrigger")
        self._policy = LossPolicy(self.fail_on_data_loss)
        self._view = ArchiveView(self.options)
        self._cut_ends = CutEnds(self.options, self._view, self._policy)
        self._batches = DeliveredBatches(self.options, self._view, self._policy)
        self._checkpoints_warned: set[str] = set()  # see _one_checkpoint_warning

    @property
    def lost(self) -> int:
        """Offsets lost to retention or replaced by a rewrite (failOnDataLoss=false)."""
        return self._policy.lost

    @property
    def last_snapshot(self) -> dict[PartitionKey, PartitionLog] | None:
        """The partitions as the last :meth:`latest` found them (None before it)."""
        return self._logs

    def take_losses(self) -> ReadStats | None:
        """The losses reported since the last call (failOnDataLoss=false), as the reader's
        accounting counts missing offsets; None when there were none."""
        return self._policy.take()

    @property
    def walked_bytes(self) -> int:
        """Segment bytes the end walks covered (for tests and diagnostics)."""
        return self._view.walked_bytes

    def snapshot(self) -> dict[PartitionKey, PartitionLog]:
        """List the archive and find each partition's available end (cheap after the first
        call: only bytes appended since the last call are walked)."""
        return self._view.snapshot()

    # -- offsets ------------------------------------------------------------------------------
    @_one_checkpoint_warning
    def initial(self) -> Offsets:
        """Where a new query starts: ``startingOffsets`` (earliest, latest or a JSON map), or the
        first offset at or after ``startingTimestamp`` / ``startingOffsetsByTimestamp``."""
        logs = self.snapshot()
        self._view.take_rewrites()  # nothing was delivered yet
        o = self.options
        out: Offsets = {}
        if isinstance(o.starting_offsets, dict):
            # as Spark's Kafka source asserts when a stream starts (KafkaOffsetReaderAdmin.scala,
            # fetchSpecificOffsets, apache/spark 05f8646f)
            check_every_partition(
                "startingOffsets",
                o.starting_offsets,
                set(logs),
                "Use -1 for latest, -2 for earliest, if you don't care.",
            )
        for key, p in logs.items():
            if isinstance(o.starting_offsets, dict):
                v = o.starting_offsets[key]
                out[key] = p.earliest if v == EARLIEST else p.end if v == LATEST else v
                if out[key] > p.end:
                    # Spark's Kafka source plans the first micro-batch from there to the latest
                    # offset and reports the data loss (KafkaOffsetReaderAdmin.scala,
                    # getOffsetRangesFromResolvedOffsets, apache/spark 05f8646f); under
                    # failOnDataLoss=false it goes on from the latest offset
                    self._policy.report(
                        f"Partition {key[0]}-{key[1]}'s offset was changed from {v} to "
                        f"{p.end}, some data may have been missed (startingOffsets names an "
                        "offset past the end of the partition's log in the archive, "
                        + (
                            f"whose last record is at offset {p.end - 1})"
                            if p.end > p.earliest
                            else "which holds no record)"
                        ),
                        key,
                        p.end,
                        None,
                    )
                    out[key] = p.end
            else:
                out[key] = p.end if o.starting_offsets == "latest" else p.earliest
        ts = {k: o.starting_timestamp for k in logs} if o.starting_timestamp is not None else {}
        if o.starting_offsets_by_timestamp is not None:
            ts.update({k: t for k, t in o.starting_offsets_by_timestamp.items() if k in logs})
        for key, t in ts.items():
            out[key] = self._offset_for_time(logs[key], t)
        return out

    def _offset_for_time(self, p: PartitionLog, t: int) -> int:
        """The first offset of ``p`` whose timestamp is >= ``t``; when there is none, ``p.end``
        under ``startingOffsetsByTimestampStrategy=latest``, else (``error``, the default, as
        Spark's Kafka source) an OptionError."""
        with self._view.listed():
            splits = plan(time_lookup_request(self.options, p.key, p.end, t), p.segments)
        ranges = [r for split in splits for r in split.ranges]
        from ..reader import read_range  # the kernels: only for a timestamp start

        projection = Projection(("offset",))
        for rng in ranges:
            for batch in read_range(rng, self.options, projection):  # the batch holding it
                if batch.num_rows:
                    return int(batch.column("offset")[0].as_py())
        if self.options.starting_offsets_by_timestamp_strategy == "latest":
            return p.end
        raise no_time_match(p.key, t)

    @_one_checkpoint_warning
    def latest(
        self,
        start: Offsets,
        limit: Limit,
        prints: Prints | None = None,
        turn: PartitionKey | None = None,
    ) -> Offsets:
        """The end of the next micro-batch from ``start``: everything available (within the
        AvailableNow target), cut by ``limit`` (:func:`~.admission.admit`); ``start`` itself
        when there is nothing new.

        ``prints`` are the last batches delivered before ``start``, from the offsets a query
        starts or restarts with: each is checked once (:meth:`DeliveredBatches.check_prints`).
        ``turn`` is the last partition served a file, from the same offsets (None: the one this
        source served last, if any); :attr:`turn` is the one after this micro-batch."""
        logs = self._logs = self.snapshot()
        self.available = {k: p.end for k, p in logs.items()}
        self._batches.check_prints(start, prints or {}, logs)
        self._batches.report_rewrites(start, logs)
        start = check_retention(start, logs, self._policy, self._target is not None)
        with using_store(self.options.store), self._view.listed():  # the read's store, listing
            self._cut_ends.check(start, logs)
        avail: Offsets = {}
        for key, p in logs.items():
            end = p.end
            if self._target is not None:
                if key not in self._target:
                    continue
                end = min(end, self._target[key])
            avail[key] = max(end, start.get(key, p.earliest))
        out = dict(start)
        begin = {k: start.get(k, logs[k].earliest) for k in avail}
        if self._held_back(begin, avail):
            return out
        ends, self.turn = admit(begin, avail, limit, logs, turn if turn is not None else self.turn)
        out.update(ends)
        return out

    def _held_back(self, begin: Offsets, avail: Offsets) -> bool:
        """``minOffsetsPerTrigger``: whether this trigger waits for more offsets (Spark's
        ``delayBatch``, :func:`~.admission.delay_batch`); never under Trigger.AvailableNow,
        which reads what was there when it started."""
        want = self.options.min_offsets_per_trigger
        if want is None or self._target is not None:
            return False
        new = sum(max(0, avail[k] - begin[k]) for k in avail)
        skip, self._last_trigger_ms = delay_batch(
            want, new, self.clock() * 1000, self._last_trigger_ms, self.options.max_trigger_delay
        )
        return skip

    def prints(self, offsets: Offsets) -> Prints:
        """The last batch before each partition's offset in ``offsets`` (where the archive holds
        one), for the offset JSON: a query restarted from these offsets checks them."""
        logs = self._logs if self._logs is not None else self.snapshot()
        return self._batches.prints(offsets, logs)

    def prepare_available_now(self) -> None:
        """Trigger.AvailableNow: stop at what is available now."""
        self._target = {k: p.end for k, p in self.snapshot().items()}

    # -- micro-batches ------------------------------------------------------------------------
    @_one_checkpoint_warning
    def plan(self, start: Offsets, end: Offsets, prints: Prints | None = None) -> list[Split]:
        """The splits that read every record with ``start <= offset < end``, per partition
        (``prints``: the last batches delivered before ``start``, checked as :meth:`latest`
        does, for a micro-batch replayed after a restart)."""
        begin = {k: start.get(k, EARLIEST) for k in end}
        wanted = {k for k in end if end[k] > begin[k]}
        if not wanted:
            return []
        logs = self._logs  # the snapshot the end was chosen from, when it covers the batch
        if logs is None or any(k not in logs or logs[k].end < end[k] for k in wanted):
            logs = self.snapshot()  # a micro-batch replayed after a restart
        self._batches.check_prints(
            {k: v for k, v in start.items() if k in wanted}, prints or {}, logs
        )
        segments = [s for k in sorted(wanted) if k in logs for s in logs[k].segments]
        if not segments:
            return []
        request = micro_batch_request(
            self.options,
            {k: v for k, v in begin.items() if k in wanted},
            {k: end[k] for k in wanted},
            # offsets the partition's own evidence says are missing (an empty or cut segment,
            # checkpoints past the end) fail the stream unless failOnDataLoss=false was set
            fail_on_data_loss=stream_fail_on_data_loss(self.options),
            # a micro-batch is often smaller than one maxPartitionBytes split: cut it so that
            # it keeps several cores busy (Spark's file source divides by the parallelism)
            min_partitions=self.options.min_partitions or STREAM_MIN_PARTITIONS,
        )
        with self._view.listed():  # the listing the end was chosen from: no HEAD
            return plan(request, segments)


__all__ = [
    "CUT_GRACE_MS",
    "FILES_TURN_KEY",
    "LAST_BATCH_KEY",
    "STREAM_MIN_PARTITIONS",
    "BatchPrint",
    "Limit",
    "Offsets",
    "PartitionLog",
    "Prints",
    "StreamSource",
    "offsets_from_json",
    "offsets_to_json",
    "prints_from_json",
    "reader_options",
    "turn_from_json",
    "stream_fail_on_data_loss",
]
