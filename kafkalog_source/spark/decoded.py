"""``decode=`` in Spark: Kafka's internal topics as typed tables (batch reads).

The plan is the raw read's (control records kept, see :mod:`..reader.internal`); each task
decodes its split's records into the interpretation's schema (:mod:`..arrow.internal`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from ..arrow.internal import DecodedSchema, decoded_schema
from ..errors import OptionError
from ..options import ReadOptions
from .partitions import planned_partitions, read_partition


def match_columns(schema: StructType, every: pa.Schema, what: str) -> list[str]:
    """Our names of the columns a user-supplied ``schema`` asks for, out of ``every`` (any
    subset, any order; names case-insensitive; each of Spark's type for ours). OptionError
    naming every problem and the columns there are; ``what`` says which source is read."""
    allowed = {n.lower(): n for n in every.names}
    names, problems = [], []
    for field in schema.fields:
        ours = allowed.get(field.name.lower())
        if ours is None:
            problems.append(f"unknown column {field.name!r}")
            continue
        want = from_arrow_schema(pa.schema([every.field(ours)]))[0].dataType
        if field.dataType != want:
            problems.append(
                f"column {field.name!r} has type {field.dataType.simpleString()}, "
                f"expected {want.simpleString()}"
            )
        names.append(ours)
    if problems or not names:
        shown = ", ".join(
            f"{f.name} {from_arrow_schema(pa.schema([f]))[0].dataType.simpleString()}"
            for f in every
        )
        raise OptionError(
            f"user-supplied schema does not match {what}: "
            + ("; ".join(problems) or "no columns")
            + f". Allowed columns: {shown}"
        )
    return names


def decoded_columns(schema: StructType, options: ReadOptions) -> tuple[DecodedSchema, pa.Schema]:
    """The decoded columns Spark asks for (any subset, any order; names case-insensitive, types
    ours) and Spark's Arrow schema for them."""
    every = decoded_schema(options.decode)
    names = match_columns(schema, every.schema, f"decode={options.decode}")
    return decoded_schema(options.decode, names), to_arrow_schema(schema, timezone="UTC")


class KafkaLogDecodedReader(DataSourceReader):
    """Plans the raw read on the driver; each task decodes one split into ``columns``."""

    def __init__(self, options: ReadOptions, columns: DecodedSchema, arrow_schema: pa.Schema):
        from ..reader.internal import raw_options

        self.read_options = options
        self.raw_options = raw_options(options)
        self.columns = columns
        self.rename = None if arrow_schema.equals(columns.schema) else arrow_schema

    def partitions(self) -> Sequence[InputPartition]:
        """Plan the read (indexes and batch headers only) and wrap each split."""
        return planned_partitions(self.raw_options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Decode one split's records (an empty plan yields nothing)."""
        from ..reader.internal import RAW_PROJECTION, decode_batches

        return read_partition(
            partition,
            self.raw_options,
            RAW_PROJECTION,
            self.rename,
            lambda raw, stats: decode_batches(raw, self.read_options, self.columns, stats),
        )
