"""The ``kafkalog`` Spark data source (PySpark Python Data Source API, Spark >= 4.1).

Options are parsed once, in the DataSource constructor, so a bad option fails the query on the
driver before any task runs. ``reader(schema)`` checks a user-supplied schema against ours and
hands the decoder a :class:`~kafkalog_source.arrow.schema.Projection` of exactly the requested
columns: the Python API has no column pruning, so a narrow ``.schema(...)`` is the way to skip
copying keys, values and headers.

Filter pushdown and ``spark.sql.python.filterPushdown.enabled``
----------------------------------------------------------------
Spark 4.3 fails every query with ``DATA_SOURCE_PUSHDOWN_DISABLED`` when the reader's class
overrides ``pushFilters`` while that setting is false (the default). The Python side cannot read
the setting: SQL confs are not passed to Python workers (neither in the environment nor over the
socket, except a bare flag inside Spark's own planning function). What it *can* see is which of
Spark's two planning workers is building the reader:

* ``pyspark.sql.worker.data_source_pushdown_filters`` runs only when the setting is true and the
  query has filters to push. It calls ``pushFilters`` and then plans the partitions.
* ``pyspark.sql.worker.plan_data_source_read`` runs in every other case. It never calls
  ``pushFilters``, and it raises ``DATA_SOURCE_PUSHDOWN_DISABLED`` if the reader overrides it
  while the setting is false.

So ``reader()`` returns :class:`KafkaLogPushdownReader` (which overrides ``pushFilters``) only
when called from the filter-pushdown worker, and the plain :class:`KafkaLogReader` otherwise. The
plain reader loses nothing, since that worker never pushes filters. If a future Spark renames
the worker, the plain reader is used everywhere. Queries then stay correct and only lose pruning,
because the base ``pushFilters`` hands every filter back to Spark. We rejected two alternatives.
Always overriding ``pushFilters`` breaks every default session. Asking users for an extra option
would duplicate the Spark setting.

``pushFilters`` never claims a filter: it returns all of them, and Spark re-applies them to our
rows. It only turns them into a conservative
:class:`~kafkalog_source.planning.pruning.Pruning` for the planner (see :mod:`.filters`).

Pruning from filters is off in Spark 4.3.0
------------------------------------------
In 4.3.0 the planned read (partitions and the pickled reader) is cached on the relation: it is
stored on ``PythonDataSourceV2.readInfo``, not on the scan. A filter-pushdown pass replaces that
cache. Any later query on the same DataFrame or temporary view that pushes no filter, or runs
with the setting off, reuses the last pushdown query's plan. With pruning, that plan covers only
the files that query needed. ``df.where("topic = 'a'").count(); df.count()`` then counts only
topic ``a``. This was observed here, and ``javap`` on spark-sql 4.3.0 shows
``getOrCreateReadInfo``/``setReadInfo``. Upstream Spark keeps the plan per scan since the change
that added ``DataSourceReader.pushLimit`` (SPARK-58551), whose scan builder says why. So
:data:`FILTER_PRUNING` is on only when ``pushLimit`` exists; check this when moving Spark up. Until then ``pushFilters`` is not defined, every plan covers all the data, and
pushdown on or off gives the same, exact results. Use the range options (``startingOffsets``,
``startingTimestamp``, ...) to read less.

SQL
---
``CREATE TEMPORARY VIEW v USING kafkalog OPTIONS (path '...')`` works. In Spark 4.3.0,
``CREATE TABLE t USING kafkalog OPTIONS (path '...')`` creates the table, but the source is then
built with no options at all when the table is queried. That case fails with a message pointing
to temporary views, rather than reading nothing. Path queries such as
``SELECT * FROM kafkalog.`/path``` are not supported for Python data sources.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    Filter,
    InputPartition,
)
from pyspark.sql.pandas.types import to_arrow_schema  # needs pyarrow only, not pandas
from pyspark.sql.types import StructType

from ..arrow.schema import (
    ALL_COLUMNS,
    METADATA_COLUMNS,
    Projection,
    output_projection,
    projection_for,
)
from ..errors import OptionError, PathError
from ..options import ReadOptions, doc_ref, parse_options
from ..planning.pruning import Pruning
from .filters import pruning_from_filters
from .partitions import planned_partitions, read_partition
from .reports import capture

if TYPE_CHECKING:
    from collections.abc import Sequence

log = logging.getLogger("kafkalog")

NAME = "kafkalog"
# Whether pushed filters may prune the plan: only where Spark keeps the planned read per scan
# (see the module docstring). Spark 4.3.0 does not.
FILTER_PRUNING: bool = hasattr(DataSourceReader, "pushLimit")
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
_PUSHDOWN_WORKER = "pyspark.sql.worker.data_source_pushdown_filters"

# Keys Spark adds to the options of a catalog table (CREATE TABLE ... USING), not user options.
SPARK_TABLE_KEYS = frozenset({"owner", "location", "provider"})

NO_PATH_MESSAGE = (
    "no path: give one with .load(path), .load([path, ...]) or OPTIONS (path '...'). "
    "If this is a table made with CREATE TABLE ... USING kafkalog: Spark 4.3 drops the OPTIONS "
    "of CREATE TABLE ... USING for Python data sources; use CREATE TEMPORARY VIEW ... USING "
    "kafkalog OPTIONS (path '...') instead"
)


class KafkaLogDataSource(DataSource):
    """Reads Kafka log segment files (``.log``): ``spark.read.format("kafkalog").load(path)``."""

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        capture()  # in a kafkalog command's local Spark, its warnings go to the command
        # Parse once, here, on the driver: a bad option fails before any task is planned.
        given = {k: v for k, v in self.options.items() if k.lower() not in SPARK_TABLE_KEYS}
        self.read_options: ReadOptions = parse_options(given)
        if not self.read_options.paths:
            raise PathError(NO_PATH_MESSAGE)

    @classmethod
    def name(cls) -> str:
        """The format name: ``spark.read.format("kafkalog")``."""
        return NAME

    def schema(self) -> str | StructType:
        """The DDL of the columns these options produce (a StructType with decoded payloads:
        their types come from the reader schemas, loaded now)."""
        capture()  # in a kafkalog command's local Spark, its warnings go to the command
        if _payloads(self.read_options):
            from .payloads import plan_payloads, spark_schema

            # kept: Spark pickles this source after schema() and calls reader() on the copy, so
            # the reader can tell whether the schemas it loads give the types declared here
            self._payload_plan = plan_payloads(self.read_options)
            return spark_schema(self._payload_plan[1])
        if self.read_options.decode != "raw":
            from ..arrow.internal import decoded_schema

            return decoded_schema(self.read_options.decode).ddl
        return output_projection(self.read_options).ddl

    def reader(self, schema: StructType) -> DataSourceReader:
        """A batch reader for ``schema`` (ours, or a user-supplied subset of it)."""
        if _payloads(self.read_options):
            from .payloads import KafkaLogPayloadReader

            planned = self.__dict__.pop("_payload_plan", None)  # None: the user gave a schema
            return KafkaLogPayloadReader(self.read_options, schema, planned)
        if self.read_options.decode != "raw":
            from .decoded import KafkaLogDecodedReader, decoded_columns

            return KafkaLogDecodedReader(
                self.read_options, *decoded_columns(schema, self.read_options)
            )
        projection, arrow_schema = check_schema(schema, output_projection(self.read_options))
        pushdown = FILTER_PRUNING and _in_pushdown_worker()
        cls = KafkaLogPushdownReader if pushdown else KafkaLogReader
        return cls(self.read_options, projection, arrow_schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """A stream reader (``spark.readStream``) for ``schema``, see :mod:`.stream`."""
        from .stream import KafkaLogStreamReader

        if self.read_options.decode != "raw":
            raise OptionError(
                "option 'decode' is for batch reads (spark.read), not streams",
                doc=doc_ref("decode"),
            )
        if _payloads(self.read_options):
            raise OptionError(
                "options 'valueFormat'/'keyFormat' are for batch reads (spark.read), not "
                "streams: decode the value column downstream, or read the archive in batches",
                doc=doc_ref("valueFormat"),
            )

        projection, arrow_schema = check_schema(schema, output_projection(self.read_options))
        rename = None if arrow_schema.equals(projection.schema) else arrow_schema
        return KafkaLogStreamReader(self.read_options, projection, rename)


def _payloads(options: ReadOptions) -> bool:
    """Whether keys or values are decoded (valueFormat/keyFormat)."""
    return options.value_format != "raw" or options.key_format != "raw"


def _in_pushdown_worker() -> bool:
    """True when Spark's filter-pushdown planning worker is the caller (see module docstring)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__")
        spec = frame.f_globals.get("__spec__")
        if name == _PUSHDOWN_WORKER or getattr(spec, "name", None) == _PUSHDOWN_WORKER:
            return True
        if os.path.basename(frame.f_code.co_filename) == "data_source_pushdown_filters.py":
            return True
        frame = frame.f_back
    return False


def check_schema(schema: StructType, available: Projection) -> tuple[Projection, pa.Schema]:
    """Validate a requested schema; return the decoder's projection and Spark's Arrow schema.

    Any subset of the available columns, in any order, with our types, is allowed. Names match
    case-insensitively (as Spark does by default); the output keeps the user's spelling.
    """
    allowed = {n.lower(): n for n in available.names}
    allowed_text = available.ddl.replace("`", "")
    names: list[str] = []
    problems: list[str] = []
    for field in schema.fields:
        ours = allowed.get(field.name.lower())
        if ours is None:
            hint = ""
            if field.name in {f.name for f in METADATA_COLUMNS}:
                hint = " (a metadata column: set includeMetadata=true)"
            elif field.name == "headers":
                hint = " (set includeHeaders=true)"
            elif field.name == "control":
                hint = " (set includeControlRecords=true)"
            problems.append(f"unknown column {field.name!r}{hint}")
            continue
        if ours in names:
            problems.append(f"column {field.name!r} appears twice")
            continue
        try:
            arrow_type = to_arrow_schema(StructType([field]), timezone="UTC")[0].type
        except Exception:  # any type Spark cannot map to Arrow is a mismatch
            arrow_type = None
        if arrow_type is None or not arrow_type.equals(ALL_COLUMNS[ours].type):
            problems.append(
                f"column {field.name!r} has type {field.dataType.simpleString()}, "
                f"expected {_spark_type(ours)}"
            )
        elif not field.nullable:
            problems.append(f"column {field.name!r} must be nullable")
        names.append(ours)
    if not names and not problems:
        problems.append("the schema has no columns")
    if problems:
        raise OptionError(
            "user-supplied schema does not match the kafkalog source: "
            + "; ".join(problems)
            + f". Allowed columns (any subset, any order): {allowed_text}"
        )
    projection = projection_for(names)
    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    return projection, arrow_schema


def _spark_type(name: str) -> str:
    return Projection((name,)).ddl.split(" ", 1)[1]


class KafkaLogReader(DataSourceReader):
    """Plans splits on the driver and decodes one split per task into Arrow record batches."""

    def __init__(
        self, options: ReadOptions, projection: Projection, arrow_schema: pa.Schema
    ) -> None:
        self.read_options = options
        self.projection = projection
        # Spark's expected Arrow schema; None when the decoder's schema already equals it.
        self.rename: pa.Schema | None = (
            None if arrow_schema.equals(projection.schema) else arrow_schema
        )
        self.pruning: Pruning | None = None

    def partitions(self) -> Sequence[InputPartition]:
        """Plan the read (indexes and batch headers only) and wrap each split."""
        return planned_partitions(self.read_options, self.pruning)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Decode one split; an empty plan arrives as ``InputPartition(None)`` and yields nothing."""
        return read_partition(partition, self.read_options, self.projection, self.rename)


class KafkaLogPushdownReader(KafkaLogReader):
    """The reader used when Spark pushes filters (``spark.sql.python.filterPushdown.enabled``)."""

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:
        """Keep usable filters as a pruning hint; return all of them for Spark to re-apply."""
        self.pruning = pruning_from_filters(filters)
        return filters
