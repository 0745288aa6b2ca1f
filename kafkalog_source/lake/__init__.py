"""Lake tables: an archive converted into an Apache Iceberg or Delta Lake table, incrementally and
exactly once, and read back.

* :mod:`.spec`: what to write (format, OUT, partitioning, catalog) and the errors;
* :mod:`.schema`: the table's columns from the read's, their evolution, batches conformed;
* :mod:`.state`: the offsets and read options each commit carries;
* :mod:`.run`: one run (offsets planned as a stream's, the batch read, one commit; retried when
  another run commits first);
* :mod:`.iceberg` (PyIceberg) and :mod:`.delta` (the ``deltalake`` package): the formats;
* :mod:`.files`: a table's current data files, for DuckDB (``kafkalog query``);
* :mod:`.fieldids`: which Iceberg field id each of kafkalog's columns is (renames);
* :mod:`.maintain`: compaction, snapshot expiry or vacuum, and orphan files (``kafkalog
  maintain``);
* :mod:`.stores`: the ``fs.s3.*`` options as the libraries' settings;
* :mod:`.compat`: what the Iceberg writer takes from PyIceberg beyond its documented API.

Above the reader and the streaming layer, below ``spark`` and ``cli``; PyIceberg and deltalake are
imported only when a table of their format is used (``pip install -e '.[lake]'`` in the
checkout).
"""

from __future__ import annotations

from .run import ATTEMPTS, TableRun, convert_table
from .spec import (
    DEFAULT_PARTITIONING,
    FORMATS,
    CommitUnknownError,
    ConcurrentRunError,
    PartitionField,
    SchemaChangeError,
    TableError,
    TableTarget,
    parse_partitioning,
)

# kafkalog is installed from its checkout (it is not on a package index), so the hint names the
# command that works there; from a wheel, the same extra is `pip install 'kafkalog-*.whl[lake]'`
LAKE_HINT = "pip install -e '.[lake]' in the kafkalog checkout (the lake extra)"

__all__ = [
    "ATTEMPTS",
    "DEFAULT_PARTITIONING",
    "FORMATS",
    "LAKE_HINT",
    "CommitUnknownError",
    "ConcurrentRunError",
    "PartitionField",
    "SchemaChangeError",
    "TableError",
    "TableRun",
    "TableTarget",
    "convert_table",
    "parse_partitioning",
]
