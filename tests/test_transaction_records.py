"""Transactions offline, continued (issue 4): control records as rows, producer metadata
columns, read_committed through Spark, and logs without transactions. The expected values come
from outside the code under test, as in ``test_transactions.py`` (see ``txn_support.py``)."""

from __future__ import annotations

import struct
from typing import Any

import pyarrow as pa
import pytest
from conftest import BROKER_WRITTEN, CLIENT_WRITTEN, SAMPLES, require_shared
from txn_support import (
    INT32_MAX,
    LEVELS,
    MANIFEST,
    SAMPLE_TXN,
    TXN_FIXTURES,
    Row,
    batch_of,
    fixture_expected,
    load_fixture,
    read_rows,
    sample_expected,
    sample_txnindex,
    v2_batch,
)

from kafkalog_source.layout.discovery import parse_partition_dir
from kafkalog_source.planning import transactions as tx
from kafkalog_source.reader import read_table

# ============================================================================ control records


@pytest.mark.parametrize("level", LEVELS)
def test_control_records_hidden_by_default(level):
    t = read_table(str(SAMPLE_TXN), isolationLevel=level, includeMetadata="true")
    markers = {11, 14, 21, 22, 27, 28}
    assert not markers & set(t.column("offset").to_pylist())
    assert "control" not in t.column_names


@pytest.mark.parametrize("level", LEVELS)
def test_include_control_records(level):
    assert MANIFEST is not None
    t = read_table(str(SAMPLE_TXN), isolationLevel=level, includeControlRecords="true")
    got = {
        o: c
        for o, c in zip(
            t.column("offset").to_pylist(), t.column("control").to_pylist(), strict=True
        )
        if c is not None
    }
    expected = {}
    for name, entry in MANIFEST["files"].items():
        if name.startswith("transactions-0/"):
            for r in entry["rows"]:
                if r["isControl"]:
                    epoch = struct.unpack(">hi", bytes.fromhex(r["value"]))[1]
                    expected[r["offset"]] = {
                        "type": r["controlType"],
                        "version": 0,
                        "coordinatorEpoch": epoch,
                    }
    assert got == expected
    data = sorted(
        (o, v)
        for o, v, c in zip(
            *(t.column(n).to_pylist() for n in ("offset", "value", "control")), strict=True
        )
        if c is None
    )
    assert data == sample_expected(level)


@pytest.mark.parametrize("name", TXN_FIXTURES)
def test_fixture_control_records(name):
    d, manifest, opts = load_fixture(name)
    t = read_table(str(d), includeControlRecords="true", **opts)
    got = {
        o: (c["type"], c["version"], c["coordinatorEpoch"])
        for o, c in zip(
            t.column("offset").to_pylist(), t.column("control").to_pylist(), strict=True
        )
        if c is not None
    }
    expected = {
        r["offset"]: (
            r["control"]["type"],
            r["control"]["keyVersion"],
            r["control"]["coordinatorEpoch"],
        )
        for r in manifest["records"]
        if r.get("control")
    }
    assert got == expected


def test_control_records_have_null_key_and_value():
    """Control records come with null key and value; their content is in the control column."""
    t = read_table(str(SAMPLE_TXN), includeControlRecords="true")
    ctl = [
        (k, v)
        for k, v, c in zip(
            *(t.column(n).to_pylist() for n in ("key", "value", "control")), strict=True
        )
        if c is not None
    ]
    assert ctl and all(k is None and v is None for k, v in ctl)


# ============================================================================ metadata columns


def _kafka_sequence(base: int, delta: int) -> int:
    """``DefaultRecordBatch#incrementSequence``: wraps past Int32.MAX back to 0; -1 stays -1."""
    if base < 0:
        return -1
    if base > INT32_MAX - delta:
        return delta - (INT32_MAX - base) - 1
    return base + delta


def _meta_rows(t: pa.Table) -> list[tuple]:
    cols = ("offset", "producerId", "producerEpoch", "sequence", "isTransactional")
    return sorted(zip(*(t.column(c).to_pylist() for c in cols), strict=True))


def test_metadata_columns_sample():
    assert MANIFEST is not None
    expected = []
    for name, entry in MANIFEST["files"].items():
        if name.startswith("transactions-0/"):
            for r in entry["rows"]:
                if r["isControl"]:
                    continue
                b = entry["batches"][r["batch"]]
                seq = _kafka_sequence(b["baseSequence"], r["offset"] - b["baseOffset"])
                expected.append(
                    (r["offset"], b["producerId"], b["producerEpoch"], seq, b["isTransactional"])
                )
    t = read_table(str(SAMPLE_TXN), includeMetadata="true")
    assert _meta_rows(t) == sorted(expected)


@pytest.mark.parametrize("name", TXN_FIXTURES)
def test_metadata_columns_fixtures(name):
    d, manifest, opts = load_fixture(name)
    expected = []
    for r in manifest["records"]:
        b = manifest["batches"][batch_of(manifest, r["offset"])]
        seq = _kafka_sequence(b["base_sequence"], r["offset"] - b["base_offset"])
        expected.append(
            (r["offset"], b["producer_id"], b["producer_epoch"], seq, b["is_transactional"])
        )
    t = read_table(str(d), includeMetadata="true", includeControlRecords="true", **opts)
    assert _meta_rows(t) == sorted(expected)


def test_sequence_wraps_like_kafka(tmp_path):
    d = tmp_path / "wrap-0"
    d.mkdir()
    recs = [(b"k", b"v%d" % i) for i in range(4)]
    (d / "00000000000000000000.log").write_bytes(
        v2_batch(0, recs, pid=9, epoch=1, seq=INT32_MAX - 1)
        + v2_batch(4, recs[:2], pid=9, epoch=1, seq=-1)
    )
    t = read_table(str(d), includeMetadata="true")
    assert t.column("sequence").to_pylist() == [INT32_MAX - 1, INT32_MAX, 0, 1, -1, -1]
    assert t.column("producerEpoch").to_pylist() == [1] * 6


# ============================================================================ Spark


def _spark_rows(df: Any) -> list[Row]:
    return sorted(
        (r[0], None if r[1] is None else bytes(r[1]))
        for r in df.select("offset", "value").collect()
    )


@pytest.mark.spark
def test_spark_read_committed(spark):
    """Both option spellings, several splits per partition; the transactional fixtures in one
    load (their CRC-0 markers need verifyChecksums=false)."""
    for name in ("isolationLevel", "kafka.isolation.level"):
        df = (
            spark.read.format("kafkalog")
            .option(name, "read_committed")
            .option("maxPartitionBytes", "500")
            .option("openCostInBytes", "0")
            .load(str(SAMPLE_TXN))
        )
        assert df.rdd.getNumPartitions() > 1
        assert _spark_rows(df) == sample_expected("read_committed")
    if not CLIENT_WRITTEN.is_dir():
        return
    loaded = [load_fixture(n) for n in TXN_FIXTURES]
    for level in LEVELS:
        df = (
            spark.read.format("kafkalog")
            .option("isolationLevel", level)
            .option("verifyChecksums", "false")
            .option("maxPartitionBytes", "700")
            .load([str(d) for d, _, _ in loaded])
        )
        got = sorted(
            (r[0], r[1], None if r[2] is None else bytes(r[2]))
            for r in df.select("topic", "offset", "value").collect()
        )
        want = sorted(
            (m["topic"], o, v) for _, m, _ in loaded for o, v in fixture_expected(m, level)
        )
        assert got == want, level


AUDIT_SQL = """
WITH data AS (
  SELECT producerId, offset FROM txn_audit WHERE isTransactional AND control IS NULL
), markers AS (
  SELECT producerId, offset AS marker, control.type AS type FROM txn_audit
  WHERE control IS NOT NULL AND control.type IN ('ABORT', 'COMMIT')
), next_marker AS (
  SELECT d.producerId, d.offset, MIN(m.marker) AS marker
  FROM data d LEFT JOIN markers m ON m.producerId = d.producerId AND m.marker > d.offset
  GROUP BY d.producerId, d.offset
)
SELECT n.producerId, MIN(n.offset) AS firstOffset, MAX(n.offset) AS lastDataOffset, n.marker,
       COALESCE(m.type, 'UNDECIDED') AS outcome, COUNT(*) AS records
FROM next_marker n LEFT JOIN markers m ON m.producerId = n.producerId AND m.marker = n.marker
GROUP BY n.producerId, n.marker, m.type
ORDER BY firstOffset
"""


@pytest.mark.spark
def test_spark_sql_audit_finds_aborted_producer_ranges(spark):
    """read_uncommitted + includeMetadata + includeControlRecords: the aborted producer ranges
    come out of one SQL query, and match the .txnindex (and the manifest's txn marks)."""
    df = (
        spark.read.format("kafkalog")
        .option("includeMetadata", "true")
        .option("includeControlRecords", "true")
        .load(str(SAMPLE_TXN))
    )
    df.createOrReplaceTempView("txn_audit")
    try:
        rows = [r.asDict() for r in spark.sql(AUDIT_SQL).collect()]
    finally:
        spark.catalog.dropTempView("txn_audit")
    aborted = sorted(
        (r["producerId"], r["firstOffset"], r["marker"]) for r in rows if r["outcome"] == "ABORT"
    )
    assert aborted == sample_txnindex()
    undecided = [(r["producerId"], r["firstOffset"]) for r in rows if r["outcome"] == "UNDECIDED"]
    assert undecided == [(6000, 29)]
    lt = tx.log_transactions([str(SAMPLE_TXN / "00000000000000000000.log")])
    assert aborted == list(lt.aborted) and tuple(undecided) == lt.undecided
    # the records the query calls aborted/undecided are those the manifest marks so
    assert MANIFEST is not None
    marks = {
        r["offset"]: r["txn"]
        for n, e in MANIFEST["files"].items()
        if n.startswith("transactions-0/")
        for r in e["rows"]
    }
    fates = {"ABORT": "aborted", "COMMIT": "committed", "UNDECIDED": "open"}
    counted = {}
    for r in rows:
        counted[fates[r["outcome"]]] = counted.get(fates[r["outcome"]], 0) + r["records"]
    assert counted == {
        fate: sum(1 for v in marks.values() if v == fate)
        for fate in ("aborted", "committed", "open")
    }


# ============================================================================ reader gaps


def test_dropmalformed_zero_crc_abort_marker_keeps_later_committed_data():
    """A skipped (CRC-0) ABORT marker still ends its transaction: the marker offset is known."""
    d, manifest, _ = load_fixture("rdkafka-v2-txn-gzip-0")
    got = read_rows(d, isolationLevel="read_committed", mode="DROPMALFORMED")
    assert got == fixture_expected(manifest, "read_committed")


# ============================================================================ no transactions


def _plain_sample_dirs() -> list[str]:
    if not SAMPLES.is_dir():
        return []
    return sorted(
        d.name
        for d in SAMPLES.iterdir()
        if d.is_dir() and parse_partition_dir(d.name) and d.name != "transactions-0"
    )


@pytest.mark.parametrize("name", _plain_sample_dirs())
def test_read_committed_changes_nothing_without_transactions(name):
    """Every other sample (legacy formats, compaction with an empty batch, several segments)."""
    d = SAMPLES / name
    lt = tx.log_transactions([str(p) for p in d.glob("*.log")])
    assert lt.entries == () and lt.notes == ()
    assert read_rows(d, isolationLevel="read_committed") == read_rows(d)


def test_broker_written_logs_walk_cleanly():
    root = require_shared(BROKER_WRITTEN)
    dirs = sorted({p.parent for p in root.rglob("*.log")})
    assert dirs
    for d in dirs:
        lt = tx.log_transactions([str(p) for p in d.glob("*.log")])
        assert lt.notes == () and all(s.error is None for s in lt.segments), d
