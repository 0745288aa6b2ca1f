"""``valueFormat``/``keyFormat`` in Spark: decoded keys and values as typed columns (batch reads).

The driver loads the schemas and fixes each decoded column's type when Spark asks for the
schema (:func:`..reader.payloads.payload_plan`); that plan travels in the pickled data source to
``reader()``, which loads the schemas again (a DataFrame's later actions see schemas registered
since) and keeps the first plan only when the types differ. The plan (decoders, reader schemas
and the registry they hold) is pickled into the reader, and each task decodes its split's keys
or values after the raw read (:class:`..payloads.step.PayloadStep`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from ..arrow.schema import Projection, output_projection
from ..options import ReadOptions
from ..payloads.step import PayloadPlan
from .decoded import match_columns
from .partitions import planned_partitions, read_partition

log = logging.getLogger("kafkalog")


def plan_payloads(options: ReadOptions) -> tuple[PayloadPlan, pa.Schema]:
    """The payload plan and the whole Arrow schema (the raw columns, then the decoded ones)."""
    from ..reader import planned
    from ..reader.payloads import payload_plan

    payloads = payload_plan(options, lambda o, cols: planned(o, cols, threads=1)[1])
    raw = output_projection(options).schema
    return payloads, pa.schema(list(raw) + payloads.fields)


def spark_schema(schema: pa.Schema) -> StructType:
    """Spark's schema for ours."""
    return from_arrow_schema(schema)


def _by_name(t: pa.Schema | pa.DataType) -> object:
    """A type with its struct fields in name order, to compare types whose fields came in
    another order (plain JSON's, typed from the values in the order they appear)."""
    if isinstance(t, pa.Schema):
        return [(f.name, _by_name(f.type), f.nullable) for f in t]
    if pa.types.is_struct(t):
        return ("struct", sorted((f.name, _by_name(f.type), f.nullable) for f in t))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return ("list", _by_name(t.value_type))
    if pa.types.is_map(t):
        return ("map", _by_name(t.key_type), _by_name(t.item_type))
    return str(t)


def _types(schema: pa.Schema, payloads: PayloadPlan) -> str:
    """The decoded columns' types in ``schema``, for a message."""
    added = {f.name for f in payloads.fields}
    return (
        ", ".join(
            f"{f.name} {f.type}" for f in schema if f.name in added and f.name.endswith("_decoded")
        )
        or "none"
    )


class KafkaLogPayloadReader(DataSourceReader):
    """Plans the raw read on the driver; each task reads one split and decodes its payloads."""

    def __init__(
        self,
        options: ReadOptions,
        schema: StructType,
        planned: tuple[PayloadPlan, pa.Schema] | None = None,
    ) -> None:
        """A reader of ``schema``, decoding with schemas loaded now. ``planned`` is what
        :func:`plan_payloads` gave when Spark asked for the schema (None: the user gave it):
        when the schemas loaded now give other column types (a version registered since, or
        plain JSON values with new fields), the reader keeps decoding with ``planned``, whose
        types the DataFrame declares, and says so (silently when only the order of plain JSON's
        fields moved)."""
        payloads, every = plan_payloads(options)
        if planned is not None and not every.equals(planned[1]):
            if _by_name(every) != _by_name(planned[1]):  # else: plain JSON's fields reordered
                log.warning(
                    "kafkalog: the payload schemas changed since this DataFrame was created "
                    "(its decoded columns would now be %s; they were %s): it keeps decoding "
                    "with the schemas it was created with, and values that do not fit them go "
                    "through mode; read the data again (spark.read...) for the new columns",
                    _types(every, planned[0]),
                    _types(planned[1], planned[0]),
                )
            payloads, every = planned
        names = match_columns(schema, every, "the kafkalog source with valueFormat/keyFormat")
        added = {f.name for f in payloads.fields}
        wanted = [n for n in names if n not in added]
        wanted += [n for n in payloads.raw_columns if n not in wanted]
        self.read_options = options
        self.payloads = payloads
        self.names = names
        self.projection = Projection(tuple(wanted))
        # Spark's Arrow schema, under the user's spelling of the names (matched
        # case-insensitively above): each batch is renamed to it, then cast
        self.spark_arrow = to_arrow_schema(schema, timezone="UTC")
        self.user_names = [f.name for f in schema.fields]

    def partitions(self) -> Sequence[InputPartition]:
        """Plan the read (indexes and batch headers only) and wrap each split."""
        return planned_partitions(self.read_options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Decode one split's records and their payloads."""
        from ..reader.payloads import with_payloads

        def then(raw: Iterator[pa.RecordBatch], stats) -> Iterator[pa.RecordBatch]:
            for batch in with_payloads(raw, self.payloads, stats, self.names):
                if batch.schema.names != self.user_names:
                    batch = pa.RecordBatch.from_arrays(batch.columns, names=self.user_names)
                if not batch.schema.equals(self.spark_arrow):
                    batch = batch.cast(self.spark_arrow)
                yield batch

        return read_partition(partition, self.read_options, self.projection, None, then)
