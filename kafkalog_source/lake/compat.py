"""What kafkalog takes from PyIceberg beyond its documented API, in one place.

kafkalog writes an Iceberg table's Parquet data files itself (pyarrow: offsets and timestamps
delta-encoded, one file per partition key, and none of PyIceberg's per-batch conversion, which
turns a null list of structs into an empty one, apache/iceberg-python#3833), and adds them with
PyIceberg's public API: ``Transaction.update_snapshot(snapshot_properties=...).fast_append()``
and its ``append_data_file``. What that API wants is a ``DataFile`` per file, with the column
statistics PyIceberg's own writer records. PyIceberg's documented way to get one,
``Transaction.add_files``, reads each file's footer again (a request per file in a store) and
infers the partition from the statistics, which fails for an identity partition on a string
longer than the statistics' truncation (16 characters by default: a topic name). So the
``DataFile`` is built here, from the footer the writer already holds and the partition key the
writer used, with functions that are public names of ``pyiceberg.io.pyarrow`` but not
documented API (taken from PyIceberg 0.12.0, ``pyiceberg/io/pyarrow.py``
``parquet_file_to_data_file``, which builds its ``DataFile`` the same way):

* ``compute_statistics_plan(schema, table_properties)``;
* ``parquet_path_to_id_mapping(schema)``;
* ``data_file_statistics_from_parquet_metadata(parquet_metadata, stats_columns,
  parquet_column_mapping)`` and its result's ``to_serialized_dict()``;
* ``pyiceberg.manifest.DataFile.from_args(...)``.

:func:`check` says what of this the installed PyIceberg lacks (``tests/test_lake_compat.py``
runs it and fails naming what to change). A newer PyIceberg that changes them: adapt
:func:`data_file` (and nothing else), or fall back to ``Transaction.add_files`` with
``check_duplicate_files=False`` for tables without identity partitions on strings.
"""

from __future__ import annotations

import inspect
from typing import Any

# what data_file calls, with the parameters it passes
NEEDED = {
    "pyiceberg.io.pyarrow.compute_statistics_plan": ("schema", "table_properties"),
    "pyiceberg.io.pyarrow.parquet_path_to_id_mapping": ("schema",),
    "pyiceberg.io.pyarrow.data_file_statistics_from_parquet_metadata": (
        "parquet_metadata",
        "stats_columns",
        "parquet_column_mapping",
    ),
    # not documented either, used by .iceberg's writer (and .files): the files' names, paths,
    # partition keys and a new table's field ids
    "pyiceberg.schema.sanitize_column_names": ("schema",),
    "pyiceberg.table.locations.load_location_provider": ("table_location", "table_properties"),
    "pyiceberg.io.pyarrow.pyarrow_to_schema": ("schema",),
    "pyiceberg.partitioning.PartitionKey": ("field_values", "partition_spec", "schema"),
}


def data_file(
    *,
    path: str,
    size: int,
    parquet_metadata: Any,
    file_schema: Any,
    properties: dict[str, str],
    partition: Any,
    spec_id: int,
) -> Any:
    """The PyIceberg ``DataFile`` of the Parquet file at ``path`` (``size`` bytes, footer
    ``parquet_metadata``), written with the Iceberg schema ``file_schema`` (its field ids in the
    file) under the table's ``properties`` (which columns get statistics, and how truncated), in
    the partition ``partition`` (a ``Record``) of spec ``spec_id``."""
    from pyiceberg.io.pyarrow import (
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
    )
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat

    stats = data_file_statistics_from_parquet_metadata(
        parquet_metadata=parquet_metadata,
        stats_columns=compute_statistics_plan(file_schema, properties),
        parquet_column_mapping=parquet_path_to_id_mapping(file_schema),
    )
    return DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=partition,
        file_size_in_bytes=size,
        sort_order_id=None,
        spec_id=spec_id,
        equality_ids=None,
        key_metadata=None,
        **stats.to_serialized_dict(),
    )


def check() -> list[str]:
    """What :func:`data_file` needs that the installed PyIceberg lacks or has changed (empty:
    all there), each naming the function and what to change."""
    import importlib

    problems: list[str] = []
    for name, params in NEEDED.items():
        module, _, attr = name.rpartition(".")
        fn = getattr(importlib.import_module(module), attr, None)
        if fn is None:
            problems.append(f"{name} is gone")
            continue
        have = set(inspect.signature(fn).parameters)
        missing = [p for p in params if p not in have]
        if missing:
            problems.append(f"{name} has no parameter {', '.join(missing)}")
    from pyiceberg.manifest import DataFile

    if not callable(getattr(DataFile, "from_args", None)):
        problems.append("pyiceberg.manifest.DataFile.from_args is gone")
    return [
        f"{p}: kafkalog_source/lake/compat.py lists it as what kafkalog's Iceberg writer uses "
        "beyond PyIceberg's documented API; adapt data_file() there (or the writer in "
        "lake/iceberg.py) to this PyIceberg (see compat.py's description)"
        for p in problems
    ]


__all__ = ["NEEDED", "check", "data_file"]
