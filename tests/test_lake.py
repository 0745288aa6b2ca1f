"""Lake tables (kafkalog_source/lake/, ``convert --format iceberg|delta``): what a table holds
read back equals the archive's read; schema evolution from ``_schemas``; incremental runs with
the offsets in the table's own commits. Refused targets, catalogs, partitioning and bad input:
tests/test_lake_targets.py.

A table is read back as ``kafkalog query`` reads it: DuckDB over the current data files that
PyIceberg's scan planning and deltalake's add actions list (kafkalog_source/lake/files.py), not
through PyIceberg's own scan, which turns a null list of structs into an empty one
(apache/iceberg-python#3833)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import SAMPLES

pytest.importorskip("pyiceberg")
pytest.importorskip("deltalake")

from lake_support import (  # noqa: E402
    FORMATS,
    KEY,
    PAYLOADS,
    _avro_archive,
    _record,
    assert_same_rows,
    convert,
    offsets_of,
    ordered,
    read_back,
    table_schema,
    write_segment,
)

import kafkalog_source as kl  # noqa: E402
from kafkalog_source.errors import DataLossError  # noqa: E402
from kafkalog_source.lake import SchemaChangeError, TableTarget, convert_table  # noqa: E402
from kafkalog_source.lake.schema import relaxed  # noqa: E402

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
