"""What kafkalog takes from PyIceberg beyond its documented API (kafkalog_source/lake/compat.py)
is there in the installed PyIceberg, and the writer's Parquet settings read the table's
``write.parquet.*`` properties as PyIceberg's own writer does."""

from __future__ import annotations

import pytest

pytest.importorskip("pyiceberg")


def test_what_compat_uses_is_in_the_installed_pyiceberg() -> None:
    """Fails, naming the function and what to change, when a PyIceberg release drops or
    changes what lake/compat.py builds a data file's DataFile from (the pin on PyIceberg in
    pyproject.toml allows every 0.x release from 0.12)."""
    from importlib.metadata import version

    from kafkalog_source.lake import compat

    problems = compat.check()
    assert not problems, f"PyIceberg {version('pyiceberg')}:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    "props",
    [
        {},
        {"write.parquet.compression-codec": "uncompressed"},
        {
            "write.parquet.compression-codec": "zstd",
            "write.parquet.compression-level": "3",
            "write.parquet.page-size-bytes": "65536",
            "write.parquet.dict-size-bytes": "1024",
            "write.parquet.page-row-limit": "100",
        },
        {"write.parquet.compression-codec": "snappy"},
    ],
)
def test_the_writer_reads_the_table_properties_as_pyiceberg_does(props: dict[str, str]) -> None:
    """kafkalog's ``writer_kwargs`` (the Iceberg spec's properties, its own code) against
    PyIceberg's private ``_get_parquet_writer_kwargs`` where the installed PyIceberg has it
    (the reference; skipped when a release drops it)."""
    import pyiceberg.io.pyarrow as pyarrow_io

    from kafkalog_source.lake.iceberg import writer_kwargs

    reference = getattr(pyarrow_io, "_get_parquet_writer_kwargs", None)
    if reference is None:
        pytest.skip("this PyIceberg has no _get_parquet_writer_kwargs to compare with")
    assert writer_kwargs(props) == reference(props)


def test_a_bad_writer_property_is_one_clear_error() -> None:
    from kafkalog_source.lake.iceberg import writer_kwargs
    from kafkalog_source.lake.spec import TableError

    with pytest.raises(TableError, match="write.parquet.page-size-bytes is not an integer"):
        writer_kwargs({"write.parquet.page-size-bytes": "1MB"})


def test_a_new_tables_schema_is_the_one_pyiceberg_makes() -> None:
    """A new table's Iceberg schema (kafkalog numbers the fields, PyIceberg's public
    pyarrow_to_schema converts, assign_fresh_schema_ids numbers them as a catalog does) equals
    the one PyIceberg's catalogs make of an Arrow schema without ids (``Catalog.
    _convert_schema_if_needed``, private: the reference where it exists), for kafkalog's
    columns with headers, nested structs, lists and maps."""
    import pyarrow as pa
    from pyiceberg.catalog import Catalog
    from pyiceberg.schema import assign_fresh_schema_ids

    from kafkalog_source.lake.iceberg import _schema_and_spec

    reference = getattr(Catalog, "_convert_schema_if_needed", None)
    if reference is None:
        pytest.skip("this PyIceberg has no Catalog._convert_schema_if_needed to compare with")
    header = pa.struct([("key", pa.string()), ("value", pa.binary())])
    schema = pa.schema(
        [
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("timestamp", pa.timestamp("us", tz="UTC")),
            ("headers", pa.list_(header)),
            ("value_decoded", pa.struct([("id", pa.int64()), ("tags", pa.list_(pa.string()))])),
            ("attrs", pa.map_(pa.string(), pa.int64())),
            ("amount", pa.decimal128(10, 2)),
            ("day", pa.date32()),
        ]
    )
    ours, _ = _schema_and_spec(schema, ())
    assert ours == assign_fresh_schema_ids(reference(schema))
