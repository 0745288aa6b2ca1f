"""``spark.readStream.format("kafkalog")``: a ``DataSourceStreamReader`` over a growing archive.

The offsets, limits and micro-batch plans are :class:`~kafkalog_source.streaming.source.
StreamSource`'s; this module maps them to Spark's stream reader API (Spark >= 4.2: read limits,
``reportLatestOffset`` and ``SupportsTriggerAvailableNow``). Each micro-batch's splits are
decoded by the same reader as a batch read. Spark keeps this object on the driver for the whole
query, so the archive's listing and the walks of growing segments are cached between triggers
(only appended bytes are walked), and a last segment truncated or rewritten between triggers is
noticed and walked again, its replaced offsets reported as a data loss (see
:class:`~kafkalog_source.streaming.source.StreamSource`). A new query (an AvailableNow run after
another) starts with an empty cache; the offsets Spark checkpoints carry, per partition, the last
offset and CRC of the last batch delivered (under ``"kafkalog:lastBatch"``, beside the Kafka
shaped offsets), and the new query checks that batch before it goes on, so a segment rewritten
while no query ran is reported too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from ..arrow.schema import Projection
from ..options import ReadOptions
from ..streaming.source import (
    Limit,
    StreamSource,
    offsets_from_json,
    offsets_to_json,
    prints_from_json,
    reader_options,
    stream_fail_on_data_loss,
    turn_from_json,
)
from .partitions import SplitPartition, read_partition
from .reports import capture, write_stats

log = logging.getLogger("kafkalog")


class KafkaLogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of the records appended to an archive since the last one."""

    def __init__(
        self, options: ReadOptions, projection: Projection, rename: pa.Schema | None
    ) -> None:
        capture()  # in a kafkalog command's local Spark, its warnings go to the command
        self.read_options = reader_options(options)
        self.projection = projection
        self.rename = rename
        self.source = StreamSource(options, stream_fail_on_data_loss(options))

    def initialOffset(self) -> dict:
        """The first run's start: startingOffsets / startingTimestamp / ...ByTimestamp."""
        return offsets_to_json(self.source.initial())

    def getDefaultReadLimit(self) -> ReadLimit:
        """maxOffsetsPerTrigger, maxBytesPerTrigger or maxFilesPerTrigger, else everything."""
        o = self.read_options
        if o.max_offsets_per_trigger is not None:
            return ReadMaxRows(o.max_offsets_per_trigger)
        if o.max_bytes_per_trigger is not None:
            return ReadMaxBytes(o.max_bytes_per_trigger)
        if o.max_files_per_trigger is not None:
            return ReadMaxFiles(o.max_files_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """The end of the next micro-batch (``start`` when nothing is new), with the last batch
        before each partition's end (a query restarted from it checks that batch is unchanged)
        and, under maxFilesPerTrigger, the last partition served a file (where the rotation
        goes on, after a restart too)."""
        end = self.source.latest(
            offsets_from_json(start), _limit(limit), prints_from_json(start), turn_from_json(start)
        )
        self._report_losses()
        return offsets_to_json(end, self.source.prints(end), self.source.turn)

    def _report_losses(self) -> None:
        """In a kafkalog command's local Spark, the losses this trigger found (retention, a
        cut or rewritten segment, with failOnDataLoss=false) go to the command's summary as
        missing offsets, as a task's do."""
        losses = self.source.take_losses()
        if losses is not None and capture():
            write_stats(losses, repr([(e.path, e.base_offset, e.last_offset, e.reason)
                                      for e in losses.events]))  # fmt: skip

    def reportLatestOffset(self) -> dict | None:
        """Every partition's available end, for the query's progress."""
        return offsets_to_json(self.source.available) if self.source.available else None

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: read what is there now, in bounded micro-batches, then stop."""
        self.source.prepare_available_now()

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        """The splits reading ``start <= offset < end`` in every partition."""
        splits = self.source.plan(
            offsets_from_json(start), offsets_from_json(end), prints_from_json(start)
        )
        return [SplitPartition(s) for s in splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Decode one split, as a batch read does."""
        return read_partition(partition, self.read_options, self.projection, self.rename)

    def commit(self, end: dict) -> None:
        """Nothing to release: the archive is only read."""

    def stop(self) -> None:
        """Nothing to release."""


def _limit(limit: Any) -> Limit:
    if isinstance(limit, ReadMaxRows):
        return Limit("offsets", limit.max_rows)
    if isinstance(limit, ReadMaxBytes):
        return Limit("bytes", limit.max_bytes)
    if isinstance(limit, ReadMaxFiles):
        return Limit("files", limit.max_files)
    return Limit()
