"""What a Spark task of a batch read or a stream's micro-batch runs: one planned split, wrapped as
an input partition, decoded into Arrow record batches, and summed up in one log line."""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import InputPartition

from ..arrow.schema import Projection
from ..options import ReadOptions
from ..planning.pruning import Pruning
from ..planning.splits import Split
from ..stats import ReadStats
from .reports import capture, write_stats

log = logging.getLogger("kafkalog")


@dataclass(frozen=True)
class SplitPartition(InputPartition):
    """One planned :class:`~kafkalog_source.planning.splits.Split`, as a Spark input partition."""

    split: Split


def planned_partitions(
    options: ReadOptions, pruning: Pruning | None = None
) -> list[InputPartition]:
    """Plan a batch read (indexes and batch headers only), each split as an input partition;
    in a kafkalog command's local Spark, the planner's warnings go to the command."""
    # Imported here, not at the top: only Spark's planning worker plans. The workers that look
    # the source up and build it (its options and schema), and the executors, then skip the
    # planner's modules (discovery, evidence, framing: ~90 ms).
    from ..planning.planner import plan
    from ..planning.request import batch_request

    capture()
    return [SplitPartition(s) for s in plan(batch_request(options), pruning=pruning)]


def read_partition(
    partition: InputPartition,
    options: ReadOptions,
    projection: Projection,
    rename: pa.Schema | None,
    then: Callable[[Iterator[pa.RecordBatch], ReadStats], Iterator[pa.RecordBatch]] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Decode one split (an empty plan arrives as ``InputPartition(None)`` and yields nothing),
    passed through ``then`` when given (``decode=``: the records' interpretation), under
    Spark's Arrow schema ``rename`` when it differs from the decoder's, then log the task's
    summary."""
    if not isinstance(partition, SplitPartition):
        return
    from ..reader import read_split  # the decoder and its kernels: executors only, not planning

    reporting = capture()  # a kafkalog command's local Spark: it prints the reports
    stats = ReadStats()
    batches = read_split(partition.split, options, projection, stats)
    if then is not None:
        batches = then(batches, stats)
    for batch in batches:
        if rename is not None:
            batch = pa.RecordBatch.from_arrays(batch.columns, schema=rename)
        yield batch
    if reporting:
        write_stats(stats, split_key(partition.split))
    else:
        log_summary(partition.split, stats)
    _freeze_worker_heap()


_heap_frozen = False


def _freeze_worker_heap() -> None:
    """Once per reused Spark Python worker, after its first split: collect, then ``gc.freeze()``.

    Spark's daemon runs a full ``gc.collect()`` after every task of a reused worker
    (``SPARK_REUSE_WORKER``, see ``pyspark/daemon.py``). Its cost grows with the objects the
    collector tracks, and by then the reader's modules are loaded (with the numba kernels of
    earlier versions: ~160,000 objects and ~65 ms per task on this machine, against ~10 ms in a
    worker with only pyspark and pyarrow). Frozen objects (the modules, alive for the life of the
    worker anyway)
    are skipped by later collections, so the per-task collection is cheap again. Nothing is done
    outside a reused Spark worker: freezing is a process-wide setting, not a library's to make.
    """
    global _heap_frozen
    if _heap_frozen or not os.environ.get("SPARK_REUSE_WORKER"):
        return
    _heap_frozen = True
    gc.collect()  # what is garbage now must not be frozen
    gc.freeze()


def split_key(split: Split) -> str:
    """What a split reads (its ranges, with their bounds), as text: the same for the same work."""
    return repr([(r.path, r.start, r.end, r.offset_lo, r.offset_hi) for r in split.ranges])


def log_summary(split: Split, stats: ReadStats) -> None:
    """One line per task: a WARNING when anything was skipped or found missing, else INFO."""
    first = split.ranges[0].path if split.ranges else "-"
    more = f" (+{len(split.ranges) - 1} ranges)" if len(split.ranges) > 1 else ""
    level = logging.WARNING if stats.skipped else logging.INFO
    events = stats.events
    also = f"; first problem: {events[0].message}" if events else ""
    log.log(
        level, "kafkalog split %d [%s%s]: %s%s", split.index, first, more, stats.summary(), also
    )
