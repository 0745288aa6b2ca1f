"""kafkalog: read Apache Kafka log segment files as Arrow tables and Spark DataFrames.

The Arrow API needs no Spark::

    import kafkalog_source as kl
    table = kl.read_table("/archive/kafka-logs/orders-0", isolationLevel="read_committed")
    for batch in kl.iter_batches("/archive/kafka-logs", verifyChecksums=True):
        ...
    reader = kl.open_reader("/archive/kafka-logs")  # a pyarrow.RecordBatchReader (DuckDB, Polars)
    frame = kl.read_pandas("/archive/kafka-logs/orders-0")  # needs pip install 'kafkalog[pandas]'

With PySpark installed, ``spark.read.format("kafkalog").load(path)`` reads the same data with the
same options (see docs/reference/options.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    AccessDeniedError,
    ChecksumError,
    CorruptDataError,
    DataLossError,
    DecompressionError,
    FileChangedError,
    KafkaLogError,
    OptionError,
    PathError,
    RecordStructureError,
    StorageError,
    UnsupportedFormatError,
)
from .options import ReadOptions, parse_options
from .stats import ReadStats

if TYPE_CHECKING:
    from .reader import iter_batches, open_reader, read_pandas, read_table


def __getattr__(name: str) -> Any:
    """Import the decoder (its C extension, pyarrow) on first use, so light commands start fast."""
    if name in ("iter_batches", "open_reader", "read_pandas", "read_table"):
        from . import reader

        return getattr(reader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AccessDeniedError",
    "ChecksumError",
    "CorruptDataError",
    "DataLossError",
    "DecompressionError",
    "FileChangedError",
    "KafkaLogError",
    "OptionError",
    "PathError",
    "ReadOptions",
    "ReadStats",
    "RecordStructureError",
    "StorageError",
    "UnsupportedFormatError",
    "iter_batches",
    "open_reader",
    "parse_options",
    "read_pandas",
    "read_table",
]

__version__ = "0.1.0"
