"""Lake tables (kafkalog_source/lake/, ``convert --format iceberg|delta``): what a table holds
read back equals the archive's read; schema evolution from ``_schemas``; incremental runs with
the offsets in the table's own commits; losses between runs; bad input.

A table is read back as ``kafkalog query`` reads it: DuckDB over the current data files that
PyIceberg's scan planning and deltalake's add actions list (kafkalog_source/lake/files.py), not
through PyIceberg's own scan, which turns a null list of structs into an empty one
(apache/iceberg-python#3833)."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from conftest import SAMPLES, kp_v2_batch

pytest.importorskip("pyiceberg")
pytest.importorskip("deltalake")

import duckdb  # noqa: E402

import kafkalog_source as kl  # noqa: E402
from kafkalog_source.errors import DataLossError  # noqa: E402
from kafkalog_source.lake import (  # noqa: E402
    SchemaChangeError,
    TableTarget,
    convert_table,
)
from kafkalog_source.lake.files import table_files  # noqa: E402
from kafkalog_source.lake.schema import relaxed  # noqa: E402
from kafkalog_source.lake.spec import TargetError  # noqa: E402

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
    if view is None:
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


# -- every sample family, and the payload samples --------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_sample_family_reads_back_as_the_archive(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / "t"
    run = convert(SAMPLES, out, fmt)
    archive = kl.read_table(SAMPLES)
    assert run.rows == archive.num_rows and run.committed is not None
    pairs = zip(*archive.select(KEY[:2]).columns, strict=True)
    assert run.partitions == len({(t.as_py(), p.as_py()) for t, p in pairs})
    assert table_schema(out, fmt) == relaxed(archive.schema)  # names and types, in order
    back = read_back(out, fmt)
    assert_same_rows(archive, back)
    # a v0/v1 record has no headers: null, not an empty list (apache/iceberg-python#3833)
    headers = ordered(back).column("headers").to_pylist()
    assert None in headers and any(headers)
    # the next run finds nothing new and commits nothing
    assert convert(SAMPLES, out, fmt).committed is None


PAYLOAD_READS = [
    ("orders-avro-0", {"valueFormat": "avro", "keyFormat": "avro"}),
    ("orders-json-0", {"valueFormat": "json"}),
    ("orders-proto-0", {"valueFormat": "protobuf", "mode": "PERMISSIVE"}),
    ("events-plainjson-0", {"valueFormat": "json"}),
    ("orders-avro-bad-0", {"valueFormat": "avro", "mode": "PERMISSIVE"}),
]


@pytest.mark.parametrize("fmt", FORMATS)
def test_payload_samples_read_back_with_their_decoded_structs(fmt: str, tmp_path: Path) -> None:
    if any(r[1]["valueFormat"] == "protobuf" for r in PAYLOAD_READS):
        pytest.importorskip("grpc_tools")
    for name, options in PAYLOAD_READS:
        out = tmp_path / name
        convert(PAYLOADS / name, out, fmt, **options)
        archive = kl.read_table(PAYLOADS / name, **options)
        assert table_schema(out, fmt) == relaxed(archive.schema), name
        assert_same_rows(archive, read_back(out, fmt))


def test_internal_topics_convert_to_a_table(tmp_path: Path) -> None:
    from conftest import BROKER_WRITTEN, require_shared

    part = require_shared(BROKER_WRITTEN / "xpxwo100-bullShit/tmp/kafka-logs/__consumer_offsets-40")
    for fmt in FORMATS:
        out = tmp_path / fmt
        convert(part, out, fmt, decode="consumer_offsets")
        archive = kl.read_table(part, decode="consumer_offsets")
        assert archive.num_rows > 0
        assert table_schema(out, fmt) == relaxed(archive.schema)
        assert_same_rows(archive, read_back(out, fmt))


# -- schema evolution across the three Avro versions of orders-avro-value ------------------

# _schemas-0 byte positions of the batches after each version of orders-avro-value: offsets 6
# (v1), 8 (v2) and 10 (v3) register them (sample_segments/payloads/MANIFEST.json)
SCHEMAS_AFTER = {1: 2643, 2: 4542, 3: 6394}
SEGMENTS = {
    1: "00000000000000000000.log",
    2: "00000000000000000012.log",
    3: "00000000000000000024.log",
}


def grow_payload_archive(root: Path, version: int) -> Path:
    """A log directory whose _schemas ends after version ``version`` of orders-avro-value and
    whose orders-avro-0 holds the segments written with versions 1 to ``version``."""
    schemas = root / "_schemas-0"
    schemas.mkdir(parents=True, exist_ok=True)
    data = (PAYLOADS / "_schemas-0" / "00000000000000000000.log").read_bytes()
    (schemas / "00000000000000000000.log").write_bytes(data[: SCHEMAS_AFTER[version]])
    orders = root / "orders-avro-0"
    orders.mkdir(exist_ok=True)
    shutil.copy(PAYLOADS / "orders-avro-0" / SEGMENTS[version], orders / SEGMENTS[version])
    return orders


def _iceberg_ids(out: Path) -> dict[str, int]:
    from kafkalog_source.lake.iceberg import IcebergSink

    sink = IcebergSink(TableTarget("iceberg", str(out)))
    sink.load()
    struct_type = sink.table.schema().find_field("value_decoded").field_type
    return {f.name: f.field_id for f in struct_type.fields}


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_table_evolves_as_the_subject_does(fmt: str, tmp_path: Path) -> None:
    root = tmp_path / "logs"
    out = tmp_path / "t"
    opts = {"valueFormat": "avro", "keyFormat": "avro"}
    fields: dict[int, list[str]] = {}
    ids: dict[int, dict[str, int]] = {}
    for version in (1, 2, 3):
        orders = grow_payload_archive(root, version)
        run = convert(orders, out, fmt, **opts)
        assert run.rows == 12 and run.schema_changed == (version == 2)
        struct_type = table_schema(out, fmt).field("value_decoded").type
        fields[version] = [f.name for f in struct_type]
        if fmt == "iceberg":
            ids[version] = _iceberg_ids(out)
        # this run's rows: as the archive reads them now (the subject's latest version), with
        # the table's fields that version does not have null
        back = ordered(read_back(out, fmt))
        mine = back.filter(pa.compute.greater_equal(back.column("offset"), 12 * (version - 1)))
        archive = kl.read_table(
            orders, startingOffsets=json.dumps({"orders-avro": {"0": 12 * (version - 1)}}), **opts
        )
        expected = archive.column("value_decoded").to_pylist()
        for row, want in zip(mine.column("value_decoded").to_pylist(), expected, strict=True):
            if want is None:  # a tombstone
                assert row is None
                continue
            assert {k: v for k, v in row.items() if k in want} == want
            assert all(row[k] is None for k in row if k not in want)
        assert back.num_rows == 12 * version
        assert back.column("offset").to_pylist() == list(range(12 * version))
    assert "channel" not in fields[1] and fields[2] == fields[1] + ["channel"]
    assert fields[3] == fields[2]  # legacy_code stays, null in version 3's rows
    rows = ordered(read_back(out, fmt)).column("value_decoded").to_pylist()
    values = [(i, r) for i, r in enumerate(rows) if r is not None]
    assert all((r["legacy_code"] is None) == (i >= 24) for i, r in values)
    assert all((r["channel"] is None) == (i < 12) for i, r in values)
    if fmt == "iceberg":  # the old fields keep their ids; channel gets a new one
        assert {k: ids[2][k] for k in ids[1]} == ids[1] and ids[3] == ids[2]
        assert ids[2]["channel"] > max(ids[1].values())


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


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_type_change_the_format_cannot_take_is_refused(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / "t"
    v1, v2, v3 = _record("int"), _record("long"), _record("string")
    part = _avro_archive(tmp_path / "a", [v1], [(1, {"id": 1, "amount": 5})])
    opts = {"valueFormat": "avro", "schemaRegistry": str(tmp_path / "a" / "schemas")}
    convert(part, out, fmt, **opts)
    # version 2 widens amount from int to long: Iceberg takes it, Delta (deltalake) cannot
    part = _avro_archive(
        tmp_path / "a", [v1, v2], [(1, {"id": 1, "amount": 5}), (2, {"id": 2, "amount": 1 << 40})]
    )
    if fmt == "iceberg":
        convert(part, out, fmt, **opts)
        assert table_schema(out, fmt).field("value_decoded").type.field("amount").type == pa.int64()
        amounts = ordered(read_back(out, fmt)).column("value_decoded").to_pylist()
        assert [r["amount"] for r in amounts] == [5, 1 << 40]
    else:
        with pytest.raises(SchemaChangeError) as e:
            convert(part, out, fmt, **opts)
        assert "value_decoded.amount is int32 in the table but int64" in str(e.value)
        assert "subject prices-value version 1" in str(e.value)
        assert "version 2" in str(e.value)
        assert read_back(out, fmt).num_rows == 1  # nothing written
    # version 3 makes it a string: neither format can
    part = _avro_archive(
        tmp_path / "a",
        [v1, v2, v3],
        [
            (1, {"id": 1, "amount": 5}),
            (2, {"id": 2, "amount": 1 << 40}),
            (3, {"id": 3, "amount": "x"}),
        ],
    )
    before = read_back(out, fmt).num_rows
    with pytest.raises(SchemaChangeError) as e:
        convert(part, out, fmt, **opts)
    assert "value_decoded.amount" in str(e.value) and "string in this read" in str(e.value)
    assert "subject prices-value version 3" in str(e.value)
    assert read_back(out, fmt).num_rows == before
    # --mode overwrite replaces the table, with the new type (review 1, item 2)
    part = _avro_archive(tmp_path / "b", [v1, v2, v3], [(3, {"id": 3, "amount": "x"})])
    opts["schemaRegistry"] = str(tmp_path / "b" / "schemas")
    run = convert_table(part, TableTarget(fmt, str(out), mode="overwrite"), opts)
    assert run.created and run.rows == 1
    assert table_schema(out, fmt).field("value_decoded").type.field("amount").type == pa.string()
    assert read_back(out, fmt).column("value_decoded").to_pylist() == [{"id": 3, "amount": "x"}]


# -- incremental runs -------------------------------------------------------------------------


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


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_run_appends_only_what_is_new(fmt: str, tmp_path: Path) -> None:
    logs, out = tmp_path / "logs", tmp_path / "t"
    write_segment(logs / "a-0", 0, 5)
    write_segment(logs / "b-1", 0, 3)
    assert convert(logs, out, fmt).rows == 8
    write_segment(logs / "a-0", 5, 4)  # a new segment
    write_segment(logs / "c-0", 0, 2)  # a new partition
    run = convert(logs, out, fmt)
    assert (run.rows, run.partitions) == (6, 2)
    assert run.offsets == {("a", 0): 9, ("b", 1): 3, ("c", 0): 2}
    want = (
        [("a", 0, i) for i in range(9)]
        + [("b", 1, i) for i in range(3)]
        + [("c", 0, 0), ("c", 0, 1)]
    )
    assert offsets_of(out, fmt) == want
    assert convert(logs, out, fmt).committed is None


@pytest.mark.parametrize("fmt", FORMATS)
def test_retention_and_rewrites_since_the_last_run_are_reported(fmt: str, tmp_path: Path) -> None:
    logs, out = tmp_path / "logs", tmp_path / "t"
    write_segment(logs / "a-0", 0, 4)
    convert(logs, out, fmt)
    # retention deleted offsets 4..7 before they were converted
    write_segment(logs / "a-0", 4, 4)
    write_segment(logs / "a-0", 8, 3)
    for name in ("00000000000000000000.log", "00000000000000000004.log"):
        (logs / "a-0" / name).unlink()
    with pytest.raises(DataLossError, match=r"offsets 4 to 7 were deleted"):
        convert(logs, out, fmt, failOnDataLoss="true")
    assert offsets_of(out, fmt) == [("a", 0, i) for i in range(4)]  # nothing committed
    stats = kl.ReadStats()
    run = convert(logs, out, fmt, stats)
    assert run.rows == 3 and stats.missing_offsets == 4
    assert "4 offsets missing" in stats.summary()
    # the last segment is rewritten (a follower truncated and appended again): the batch last
    # converted (offset 10) is another one now
    write_segment(logs / "a-0", 8, 5, value=b"other")
    with pytest.raises(DataLossError, match=r"offsets 8 to 10, already delivered, may hold other"):
        convert(logs, out, fmt, failOnDataLoss="true")
    assert len(offsets_of(out, fmt)) == 7


def test_startingoffsets_applies_to_a_new_table_only(tmp_path: Path) -> None:
    logs, out = tmp_path / "logs", tmp_path / "t"
    write_segment(logs / "a-0", 0, 6)
    convert(logs, out, "delta", startingOffsets='{"a": {"0": 4}}')
    assert offsets_of(out, "delta") == [("a", 0, 4), ("a", 0, 5)]
    write_segment(logs / "a-0", 6, 2)
    convert(logs, out, "delta", startingOffsets='{"a": {"0": 0}}')
    assert [o for _, _, o in offsets_of(out, "delta")] == [4, 5, 6, 7]


# -- bad input: one clear error, nothing written -----------------------------------------------


def _listing(p: Path) -> list[str]:
    return sorted(str(f.relative_to(p)) for f in p.rglob("*")) if p.exists() else []


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_out_that_is_not_a_table_of_this_kind_is_refused(fmt: str, tmp_path: Path) -> None:
    src = SAMPLES / "orders-0"
    other = "delta" if fmt == "iceberg" else "iceberg"
    convert(src, tmp_path / "other", other)
    parquet = tmp_path / "parquet"
    parquet.mkdir()
    (parquet / "part-0.parquet").write_bytes(b"PAR1")
    for out, what in ((tmp_path / "other", other.capitalize()), (parquet, "not empty")):
        before = _listing(out)
        with pytest.raises(TargetError, match=what):
            convert(src, out, fmt)
        assert _listing(out) == before


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_table_of_another_archive_or_other_options_is_refused(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / "t"
    convert(SAMPLES / "orders-0", out, fmt)
    before = _listing(out)
    with pytest.raises(
        TargetError, match=r"holds topics orders .*has none of them \(magic2-none\)"
    ):
        convert(SAMPLES / "magic2-none-0", out, fmt)
    with pytest.raises(
        TargetError, match=r"isolationLevel=read_uncommitted \(this run: read_committed\)"
    ):
        convert(SAMPLES / "orders-0", out, fmt, isolationLevel="read_committed")
    with pytest.raises(TargetError, match=r"partitioned by topic,day\(timestamp\), not none"):
        convert_table(SAMPLES / "orders-0", TableTarget(fmt, str(out), partitioning=()), {})
    assert _listing(out) == before


def test_partitioning_is_chosen_when_a_table_is_created(tmp_path: Path) -> None:
    from kafkalog_source.lake import parse_partitioning

    target = TableTarget(
        "delta", str(tmp_path / "d"), partitioning=parse_partitioning("partition,hour(timestamp)")
    )
    convert_table(SAMPLES / "orders-0", target, {})
    back = read_back(tmp_path / "d", "delta")
    assert set(back.column_names) >= {"partition", "timestamp_hour"}
    dirs = {p.name.split("=")[0] for p in (tmp_path / "d").iterdir() if "=" in p.name}
    assert dirs == {"partition"}
    target = TableTarget(
        "iceberg", str(tmp_path / "i"), partitioning=parse_partitioning("month(timestamp)")
    )
    convert_table(SAMPLES / "orders-0", target, {})
    assert (
        read_back(tmp_path / "i", "iceberg").num_rows
        == kl.read_table(SAMPLES / "orders-0").num_rows
    )
    with pytest.raises(TargetError, match="not a timestamp"):
        convert_table(
            SAMPLES / "orders-0",
            TableTarget(
                "delta", str(tmp_path / "x"), partitioning=parse_partitioning("day(offset)")
            ),
            {},
        )
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("fmt", FORMATS)
def test_mode_error_refuses_a_table_and_overwrite_replaces_it(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / "t"
    src = SAMPLES / "orders-0"
    convert(src, out, fmt)
    with pytest.raises(TargetError, match="is already a table"):
        convert_table(src, TableTarget(fmt, str(out), mode="error"), {})
    run = convert_table(src, TableTarget(fmt, str(out), mode="overwrite"), {})
    assert run.created and run.rows == 30
    assert offsets_of(out, fmt) == [("orders", 0, i) for i in range(30)]


def test_any_pyiceberg_catalog_by_its_properties(tmp_path: Path) -> None:
    """Catalog properties choose the catalog (here PyIceberg's SQL catalog by type and URI,
    as a REST or Glue catalog would be named), and the table is found there again."""
    props = {"type": "sql", "uri": f"sqlite:///{tmp_path}/elsewhere.db"}
    target = TableTarget("iceberg", str(tmp_path / "t"), table="kafka.orders", properties=props)
    assert convert_table(SAMPLES / "orders-0", target, {}).rows == 30
    assert "catalog.db" not in {p.name for p in (tmp_path / "t").iterdir()}
    assert convert_table(SAMPLES / "orders-0", target, {}).committed is None
    files = table_files(target)
    assert len(files.files) == 1 and props["uri"] not in repr(target)  # names only


def test_iceberg_columns_with_names_pyiceberg_sanitizes_keep_their_values(tmp_path: Path) -> None:
    """Nested field names that are no Avro names ("user-id", "1st", "a b", "x.y") are
    sanitized in Iceberg's data files (as PyIceberg and Java write them); their values still
    arrive, read back by PyIceberg's scan and by DuckDB (review 1, item 1)."""
    logs, out = tmp_path / "logs", tmp_path / "t"
    part = logs / "users-0"
    part.mkdir(parents=True)
    values = [
        {"user": {"user-id": 7 + i, "1st": f"a{i}", "a b": i % 2 == 0, "x.y": [i, -i]}, "n": i}
        for i in range(3)
    ]
    data = b"".join(
        kp_v2_batch([(1_700_000_000_000 + i, None, json.dumps(v).encode(), [])], base_offset=i)
        for i, v in enumerate(values)
    )
    (part / "00000000000000000000.log").write_bytes(data)
    assert convert(part, out, "iceberg", valueFormat="json").rows == 3
    archive = kl.read_table(part, valueFormat="json")
    want = ordered(archive).column("value_decoded").to_pylist()
    assert [w["user"]["user-id"] for w in want] == [7, 8, 9]  # the read itself has them
    back = ordered(read_back(out, "iceberg")).column("value_decoded").to_pylist()
    assert back == want
    from kafkalog_source.lake.iceberg import IcebergSink

    sink = IcebergSink(TableTarget("iceberg", str(out)))
    sink.load()
    scanned = sink.table.scan(selected_fields=("offset", "value_decoded")).to_arrow()
    scanned = scanned.sort_by("offset").column("value_decoded").to_pylist()
    assert scanned == want
    # kafkalog query over a table in a store reads a pyarrow dataset of the files
    import pyarrow.dataset as ds

    from kafkalog_source.cli.query_duckdb import run_table_query

    files = table_files(TableTarget("iceberg", str(out)))
    files.dataset = ds.dataset(files.files, schema=files.file_schema, format="parquet")
    got = run_table_query(files, 'SELECT value_decoded FROM kafkalog ORDER BY "offset"', 10)
    assert got.column("value_decoded").to_pylist() == want


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_refused_overwrite_leaves_the_old_table(fmt: str, tmp_path: Path) -> None:
    """``--mode overwrite`` replaces the table in the run's one commit: a run that fails to
    read (no input, data loss under failOnDataLoss, a damaged batch after others were written)
    leaves the old table, its rows and its offsets, as they were (review 1, item 2)."""
    from kafkalog_source.errors import KafkaLogError
    from kafkalog_source.lake.spec import parse_partitioning

    out = tmp_path / "t"
    write_segment(tmp_path / "old" / "a-0", 0, 5)
    convert(tmp_path / "old", out, fmt)
    before = offsets_of(out, fmt)
    assert before == [("a", 0, i) for i in range(5)]

    def overwrite(path: Path, partitioning: str | None = None, **options: Any) -> Any:
        p = None if partitioning is None else parse_partitioning(partitioning)
        target = TableTarget(fmt, str(out), mode="overwrite", partitioning=p)
        return convert_table(path, target, options)

    with pytest.raises(KafkaLogError):
        overwrite(tmp_path / "missing")
    assert offsets_of(out, fmt) == before
    gap = tmp_path / "gap"
    write_segment(gap / "a-0", 0, 3)
    write_segment(gap / "a-0", 10, 3)
    with pytest.raises(DataLossError):
        overwrite(gap, failOnDataLoss="true")
    assert offsets_of(out, fmt) == before
    bad = tmp_path / "bad"
    write_segment(bad / "b-0", 0, 3)
    write_segment(bad / "b-0", 3, 3)
    seg = bad / "b-0" / "00000000000000000003.log"
    data = bytearray(seg.read_bytes())
    data[-3] ^= 0xFF  # the last batch's records: its CRC no longer matches
    seg.write_bytes(bytes(data))
    with pytest.raises(KafkaLogError):
        overwrite(bad)
    assert offsets_of(out, fmt) == before
    with pytest.raises(KafkaLogError):  # another partitioning: a new table, not yet
        overwrite(bad, "none")
    assert offsets_of(out, fmt) == before
    assert convert(tmp_path / "old", out, fmt).committed is None  # its offsets are intact
    # a run that reads replaces the rows, the offsets and the topics
    run = overwrite(gap)
    assert run.created and run.rows == 6
    assert offsets_of(out, fmt) == [("a", 0, i) for i in (0, 1, 2, 10, 11, 12)]
    assert convert(gap, out, fmt).committed is None
    # and, with another partitioning, the table
    run = overwrite(tmp_path / "old", "none")
    assert run.created and run.rows == 5
    assert offsets_of(out, fmt) == before
    assert table_files(TableTarget(fmt, str(out))).partition_columns == []
    from kafkalog_source.lake.run import open_sink

    sink = open_sink(TableTarget(fmt, str(out)))
    sink.open()
    assert sink.partitioning() == ()
    assert convert(tmp_path / "old", out, fmt).committed is None


def test_catalog_uri_secrets_are_in_no_message(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A catalog ``uri`` (or OUT) that carries a password or a ``?token=`` shows them in no
    error, repr or CLI line, not even where a library prints the URL's path and query on their
    own (review 1, item 7)."""
    from kafkalog_source.cli.main import main
    from kafkalog_source.lake.spec import TableError

    secrets = ["TOKENVALUE123", "PASSWORD456", "SIGVALUE789"]
    uri = "http://bob:PASSWORD456@127.0.0.1:9/cat?token=TOKENVALUE123"
    target = TableTarget("iceberg", str(tmp_path / "t"), properties={"type": "rest", "uri": uri})
    with pytest.raises(TableError) as e:  # nothing listens on port 9
        convert_table(SAMPLES / "orders-0", target, {})
    assert "cannot reach the rest catalog" in str(e.value)
    assert not any(s in str(e.value) for s in secrets), str(e.value)
    uri2 = "http://127.0.0.1:9/cat?token=TOKENVALUE123"
    with pytest.raises(TableError) as e:  # requests: "url: /cat?token=.../v1/config"
        convert_table(SAMPLES / "orders-0", TableTarget("iceberg", str(tmp_path / "t"),
                      properties={"type": "rest", "uri": uri2}), {})  # fmt: skip
    assert "/cat?token=" in str(e.value) and "TOKENVALUE123" not in str(e.value)
    shown = repr(TableTarget("delta", "s3://key:PASSWORD456@bucket/t?sig=SIGVALUE789"))
    assert "bucket/t" in shown and not any(s in shown for s in secrets), shown
    # a library's own error on the command line
    import kafkalog_source.lake as lake

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"commit failed: PUT /cat/v1/tables?token=TOKENVALUE123 ({uri})")

    monkeypatch.setattr(lake, "convert_table", failing)
    args = ["convert", str(SAMPLES / "orders-0"), str(tmp_path / "u"), "--format", "iceberg"]
    code = main([*args, "--table-option", "type=rest", "--table-option", f"uri={uri}"])
    err = capsys.readouterr().err
    assert code != 0 and "commit failed" in err
    assert not any(s in err for s in secrets), err


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_run_that_selects_partitions_leaves_the_others(fmt: str, tmp_path: Path) -> None:
    """``subscribe``, ``subscribePattern`` and ``assign`` on a table run: the table's other
    partitions are neither read nor reported gone, and keep their offsets (review 1, item 8);
    a selected partition that is gone still is."""
    logs, out = tmp_path / "logs", tmp_path / "t"
    write_segment(logs / "a-0", 0, 3)
    write_segment(logs / "b-0", 0, 2)
    write_segment(logs / "c-1", 0, 2)
    convert(logs, out, fmt)
    held = {("a", 0): 3, ("b", 0): 2, ("c", 1): 2}
    for i, opts in enumerate(
        ({"subscribe": "a"}, {"subscribePattern": "a.*"}, {"assign": '{"a": [0]}'})
    ):
        write_segment(logs / "a-0", 3 + i, 1)
        stats = kl.ReadStats()
        run = convert(logs, out, fmt, stats, failOnDataLoss="true", **opts)
        held[("a", 0)] += 1
        assert (run.rows, run.offsets) == (1, held), opts
        assert stats.missing_offsets == 0
    # the next run over everything finds nothing new
    assert convert(logs, out, fmt, failOnDataLoss="true").committed is None
    # a selected partition that is gone is reported, an unselected one is not looked at
    shutil.rmtree(logs / "b-0")
    assert convert(logs, out, fmt, failOnDataLoss="true", subscribe="a,c").committed is None
    with pytest.raises(DataLossError, match="partition b-0 is gone"):
        convert(logs, out, fmt, failOnDataLoss="true", subscribe="b,c")
    assert len(offsets_of(out, fmt)) == 3 + 3 + 2 + 2


def test_a_delta_schema_change_is_one_commit_with_its_rows(tmp_path: Path) -> None:
    """A run that adds a column to a Delta table commits the new schema, its rows and its
    offsets in one log entry (review 1, item 11): no version has the schema without the rows.
    Read from the _delta_log's JSON itself."""
    out = tmp_path / "t"
    v1 = _record("int")
    v2 = {**v1, "fields": [*v1["fields"], {"name": "note", "type": "string", "default": "-"}]}
    part = _avro_archive(tmp_path / "a", [v1], [(1, {"id": 1, "amount": 5})])
    opts = {"valueFormat": "avro", "schemaRegistry": str(tmp_path / "a" / "schemas")}
    convert(part, out, "delta", **opts)
    logs = sorted((out / "_delta_log").glob("*.json"))
    part = _avro_archive(
        tmp_path / "a",
        [v1, v2],
        [(1, {"id": 1, "amount": 5}), (2, {"id": 2, "amount": 7, "note": "x"})],
    )
    seg = part / "00000000000000000000.log"
    good = seg.read_bytes()
    seg.write_bytes(good[:-2] + bytes([good[-2] ^ 0xFF]) + good[-1:])  # the last batch's CRC
    from kafkalog_source.errors import KafkaLogError

    with pytest.raises(KafkaLogError):  # a read that fails: no commit, no schema change
        convert(part, out, "delta", **opts)
    assert sorted((out / "_delta_log").glob("*.json")) == logs
    seg.write_bytes(good)
    run = convert(part, out, "delta", **opts)
    assert run.rows == 1 and run.schema_changed
    new = sorted((out / "_delta_log").glob("*.json"))
    assert len(new) == len(logs) + 1  # one commit
    actions = [json.loads(line) for line in new[-1].read_text().splitlines()]
    kinds = [next(iter(a)) for a in actions]
    assert "metaData" in kinds and "add" in kinds and "txn" in kinds
    meta = next(a["metaData"] for a in actions if "metaData" in a)
    assert "note" in meta["schemaString"]
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert any(k.startswith("kafkalog.") for k in info), info
    rows = ordered(read_back(out, "delta")).column("value_decoded").to_pylist()
    assert rows == [{"id": 1, "amount": 5, "note": None}, {"id": 2, "amount": 7, "note": "x"}]
    assert convert(part, out, "delta", **opts).committed is None


def test_delta_statistics_of_a_timestamp_without_zone_are_not_shifted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A top-level timestamp without a time zone (an Avro local-timestamp value) gets Delta
    file statistics equal to its values, whatever the machine's time zone (review 1, item 15):
    they were read as local times and shifted to UTC."""
    import time

    from deltalake import DeltaTable

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        schema = {"type": "long", "logicalType": "local-timestamp-millis"}
        ms = [1_700_000_000_123, 1_700_000_360_000]
        part = _avro_archive(tmp_path / "a", [schema], [(1, v) for v in ms])
        out = tmp_path / "t"
        opts = {"valueFormat": "avro", "schemaRegistry": str(tmp_path / "a" / "schemas")}
        convert(part, out, "delta", **opts)
        values = read_back(out, "delta").column("value_decoded").to_pylist()
        actions = pa.table(DeltaTable(str(out)).get_add_actions(flatten=True)).to_pylist()
        lo = min(a["min.value_decoded"] for a in actions)
        hi = max(a["max.value_decoded"] for a in actions)
        assert (lo, hi) == (min(values), max(values))
        assert str(min(values)) == "2023-11-14 22:13:20.123000"  # the value, as written
    finally:
        monkeypatch.undo()
        time.tzset()
