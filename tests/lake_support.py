"""What the lake table tests share (tests/test_lake.py, test_lake_targets.py,
test_lake_runs.py): converting into a table, reading it back as ``kafkalog query`` does (DuckDB
over the current data files that PyIceberg's scan planning and deltalake's add actions list,
kafkalog_source/lake/files.py), comparing rows, and the small archives the tests write."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from conftest import SAMPLES, kp_v2_batch

import kafkalog_source as kl
from kafkalog_source.lake import TableTarget, convert_table
from kafkalog_source.lake.files import table_files

FORMATS = ("iceberg", "delta")
PAYLOADS = SAMPLES / "payloads"
KEY = ["topic", "partition", "offset"]


def convert(path: Any, out: Path, fmt: str, stats: kl.ReadStats | None = None, **options: Any):
    return convert_table(path, TableTarget(fmt, str(out)), options, stats)


def read_back(out: Path, fmt: str, sql: str = "SELECT * FROM kafkalog") -> pa.Table:
    """The table as DuckDB reads its current data files (the query command's view)."""
    files = table_files(TableTarget(fmt, str(out)))
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    view = files.view_sql()
    if files.dataset is not None:  # as the query command: a store's dataset, PyIceberg's scan
        con.register("files", files.dataset)
        con.execute(f"CREATE VIEW kafkalog AS SELECT {files.select_list()} FROM files")
    elif view is None:
        con.register("kafkalog", files.schema.empty_table())
    else:
        con.execute(f"CREATE VIEW kafkalog AS {view}")
    rel = con.sql(sql)
    return rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.fetch_arrow_table()


def ordered(t: pa.Table) -> pa.Table:
    return t.sort_by([(k, "ascending") for k in KEY])


def assert_same_rows(archive: pa.Table, table: pa.Table) -> None:
    a, b = ordered(archive), ordered(table)
    assert b.num_rows == a.num_rows
    for name in a.column_names:
        assert b.column(name).to_pylist() == a.column(name).to_pylist(), name


def table_schema(out: Path, fmt: str) -> pa.Schema:
    """The table's declared columns (Delta: without its derived partition columns)."""
    schema = table_files(TableTarget(fmt, str(out))).schema
    return pa.schema([f for f in schema if not f.name.endswith("_day")])


def _avro_archive(
    root: Path, versions: list[dict[str, Any]], values: list[tuple[int, dict]]
) -> Path:
    """A partition directory of Avro values in the wire format (one batch per value, schema ids
    as given) and a directory of schema files with ``versions`` of subject ``prices-value``."""
    import io

    import fastavro

    schemas = root / "schemas" / "subjects" / "prices-value"
    schemas.mkdir(parents=True, exist_ok=True)
    for v, schema in enumerate(versions, start=1):
        (schemas / f"{v}.json").write_text(
            json.dumps(
                {
                    "subject": "prices-value",
                    "version": v,
                    "id": v,
                    "schemaType": "AVRO",
                    "schema": json.dumps(schema),
                }
            )
        )
    part = root / "prices-0"
    part.mkdir(exist_ok=True)
    data = b""
    for offset, (schema_id, value) in enumerate(values):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, fastavro.parse_schema(versions[schema_id - 1]), value)
        payload = b"\x00" + struct.pack(">i", schema_id) + buf.getvalue()
        data += kp_v2_batch([(1_700_000_000_000 + offset, None, payload, [])], base_offset=offset)
    (part / "00000000000000000000.log").write_bytes(data)
    return part


def _record(amount: str) -> dict[str, Any]:
    return {
        "type": "record",
        "name": "Price",
        "fields": [{"name": "id", "type": "long"}, {"name": "amount", "type": amount}],
    }


def write_segment(
    part: Path, base: int, n: int, value: bytes = b"v", ts: int = 1_700_000_000_000
) -> None:
    """A segment of ``n`` one-record batches from offset ``base``."""
    part.mkdir(parents=True, exist_ok=True)
    data = b"".join(
        kp_v2_batch([(ts + i, b"k%d" % i, value + b"%d" % i, [])], base_offset=base + i)
        for i in range(n)
    )
    (part / f"{base:020d}.log").write_bytes(data)


def offsets_of(out: Path, fmt: str) -> list[tuple[str, int, int]]:
    t = read_back(out, fmt, 'SELECT topic, partition, "offset" FROM kafkalog ORDER BY 1, 2, 3')
    return list(zip(*(t.column(i).to_pylist() for i in range(3)), strict=True))


class Done:
    """A ``kafkalog`` command's exit code and output, as subprocess.run's result has them."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.returncode, self.stdout, self.stderr = code, out, err


def cli(capsys: Any, *args: str) -> Done:
    """``kafkalog ARGS`` in this process (no interpreter start per command)."""
    from kafkalog_source.cli.main import main

    code = main(list(args))
    out = capsys.readouterr()
    return Done(code, out.out, out.err)
