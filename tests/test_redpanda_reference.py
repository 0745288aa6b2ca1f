"""Redpanda segments read by kafkalog equal an independent decoder written from Redpanda's source.

The reference is ``tests/redpanda_reference.py`` (written from redpanda-data/redpanda at
1c6cff34, never from kafkalog_source). Three layers of tests:

* the reference itself against ``../shared/fixtures/redpanda/SUMMARY.json``, a third decoder's
  batch-level summary of every segment there (counts, offsets, types, CRC validity), and its
  encoder against the real fixture batches (byte-identical re-encoding) and round trips through
  every codec;
* kafkalog's Arrow API (``kafkalog_source.read_table``) on every fixture partition of the user
  namespace ``kafka``, and on each fixture data directory as a whole (Redpanda's own namespaces
  ``kafka_internal`` and ``redpanda`` hold no user topic), compared row by row with the
  reference: counts, Kafka offsets, keys, values, headers, timestamps, and under
  ``read_committed`` where a partition holds a transaction;
* the same comparison on Redpanda partitions built here from the fixtures' records, re-encoded
  with each codec (gzip, snappy in Java's framing and in Redpanda's own, lz4, zstd) around
  non-data batches of every offset behaviour (no Kafka offset: raft_configuration,
  version_fence, a 3-offset archival_metadata; a Kafka offset but no row: tx_fence,
  tx_prepare), committed, aborted and undecided transactions, LogAppendTime, a compacted batch
  whose record count is below its offset span, and zero-filled tails.
"""

from __future__ import annotations

import dataclasses
import json
import re
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import redpanda_reference as rr
from conftest import SHARED, require_shared

REDPANDA = SHARED / "fixtures" / "redpanda"
DATA_DIRS = (
    "DianFlober-rp-stock-monitor/redpanda-data",
    "langley232-video_ingestion/redpanda/data",
)
TIERED_TEST = "redpanda-data-redpanda/tools/rp_storage_tool/resources/test"


def _summary() -> dict[str, Any]:
    path = REDPANDA / "SUMMARY.json"
    if not path.exists():
        return {"files": [], "partitions": []}
    return json.loads(path.read_text())


SUMMARY = _summary()
SEGMENT_FILES = [f for f in SUMMARY["files"] if f.get("parsed_as_segment")]
PARTITIONS = [p for p in SUMMARY["partitions"] if "partition_dir" in p]


def _partition_dirs(namespace: str | None = None) -> list[str]:
    if not REDPANDA.exists():
        return []
    dirs = sorted(
        {str(p.parent.relative_to(REDPANDA)) for p in REDPANDA.rglob("*-v1.log") if p.is_file()}
    )
    return [d for d in dirs if namespace is None or Path(d).parent.parent.name == namespace]


KAFKA_PARTITIONS = _partition_dirs("kafka")


# ------------------------------------------------------------------- the reference vs SUMMARY


def _parse_fixture(rel: str) -> rr.Segment:
    path = require_shared(REDPANDA / rel)
    return rr.parse_segment(path.read_bytes(), rel, strict=False)


@pytest.mark.parametrize("entry", SEGMENT_FILES, ids=[f["file"] for f in SEGMENT_FILES])
def test_reference_matches_summary_segment(entry: dict[str, Any]) -> None:
    """Every batch the independent summary lists: offsets, type, attrs, records, size, codec, CRCs."""
    seg = _parse_fixture(entry["file"])
    b = seg.batches
    got = [
        {
            "base": x.base_offset,
            "last": x.last_offset,
            "type": x.type,
            "attrs": x.attrs,
            "records": x.record_count,
            "size": x.size_bytes,
            "codec": x.codec,
            "crc_ok": x.crc_ok,
            "header_crc_ok": x.header_crc_ok,
        }
        for x in b
    ]
    if "batch_list" in entry:
        assert got == entry["batch_list"]
    assert len(b) == entry["batches"]
    assert dict(Counter(f"{x.type} {x.type_name}" for x in b)) == entry["batches_by_type"]
    assert sum(len(x.records) for x in b) == entry["records"]
    assert all(len(x.records) == x.record_count for x in b)
    assert b[0].base_offset == entry["first_raft_offset"]
    assert b[-1].last_offset == entry["last_raft_offset"]
    assert sum(not x.crc_ok for x in b) == entry["crc_failures"] == 0
    assert sum(not x.header_crc_ok for x in b) == entry["header_crc_failures"] == 0
    assert seg.zero_tail == entry["zero_tail_bytes"]
    assert seg.data_end == entry["bytes_in_batches"]
    assert dict(Counter(x.codec for x in b)) == entry["codecs"]
    flags = {
        "transactional": sum(x.is_transactional for x in b),
        "control": sum(x.is_control for x in b),
        "log_append_time": sum(x.log_append_time for x in b),
    }
    assert flags == entry["attr_flags"]
    producers = sorted({(x.producer_id, x.producer_epoch) for x in b if x.producer_id >= 0})
    assert producers == sorted(tuple(p) for p in entry["producers"])
    assert min(x.first_timestamp for x in b) == entry["first_ts"]
    assert max(x.max_timestamp for x in b) == entry["max_ts"]
    mismatch = [
        {
            "base_offset": x.base_offset,
            "record_count": x.record_count,
            "last_offset_delta": x.last_offset_delta,
        }
        for x in b
        if x.record_count != x.last_offset_delta + 1
    ]
    assert mismatch == entry["record_count_vs_offset_delta_mismatch"]
    gaps = [
        (p.last_offset, n.base_offset)
        for p, n in zip(b, b[1:], strict=False)
        if n.base_offset != p.last_offset + 1
    ]
    assert not gaps and not entry["offset_gaps"]


def _blob_matches(shown: Any, actual: bytes | None) -> bool:
    """SUMMARY's rendering of a key or value: text (maybe cut, ``...(+N chars)``) or len/hex."""
    if shown is None:
        return actual is None
    if actual is None:
        return False
    if isinstance(shown, dict):
        hexed = shown["hex"].removesuffix("...")
        return shown["len"] == len(actual) and actual.hex().startswith(hexed)
    m = re.fullmatch(r"(.*)\.\.\.\(\+(\d+) chars\)", shown, re.S)
    text = actual.decode("utf-8")
    if m:
        return text.startswith(m.group(1)) and len(text) == len(m.group(1)) + int(m.group(2))
    return text == shown


@pytest.mark.parametrize("entry", PARTITIONS, ids=[p["partition_dir"] for p in PARTITIONS])
def test_reference_matches_summary_partition(entry: dict[str, Any]) -> None:
    """Per partition: batch types, raft offsets and gaps, and (namespace kafka) Kafka offsets."""
    directory = require_shared(REDPANDA / entry["partition_dir"])
    log = rr.read_partition(directory, strict=False)
    batches = [b for s in log.segments for b in s.batches]
    assert [Path(s.path).name for s in log.segments] == entry["segments"]
    assert dict(Counter(f"{b.type} {b.type_name}" for b in batches)) == entry["batches_by_type"]
    assert sum(len(b.records) for b in batches) == entry["records"]
    assert [batches[0].base_offset, batches[-1].last_offset] == entry["raft_offsets"]
    assert [{"after": a - 1, "next_base": n} for a, n in log.raft_gaps] == entry["raft_offset_gaps"]
    if log.namespace != "kafka":
        assert "kafka_offsets" not in entry and log.kafka_next_offset is None
        return
    data = [b for b in batches if b.type == rr.RAFT_DATA]
    assert len(data) == entry["raft_data_batches"]
    assert len(log.rows) == entry["raft_data_records"]
    taken = sum(b.last_offset_delta + 1 for b in batches if b.type in rr.NO_KAFKA_OFFSET_TYPES)
    assert taken == entry["non_kafka_offsets_taken"]
    offsets = [r.kafka_offset for r in log.rows]
    assert ([min(offsets), max(offsets)] if offsets else None) == entry["kafka_offsets"]
    assert log.kafka_next_offset == entry["kafka_next_offset_after_last_batch"]
    assert len(entry["first_values"]) == min(len(log.rows), len(entry["first_values"]))
    for shown, row in zip(entry["first_values"], log.rows, strict=False):
        assert (shown["kafka_offset"], shown["raft_offset"]) == (row.kafka_offset, row.raft_offset)
        assert shown["timestamp"] == row.timestamp
        assert _blob_matches(shown["key"], row.key) and _blob_matches(shown["value"], row.value)
        assert shown["headers"] == [[k, v] for k, v in row.headers]


def test_reference_tiered_test_segments() -> None:
    """The two segments from Redpanda's rp_storage_tool tests, as SUMMARY describes them.

    The remote segment is compacted: one record at offset delta 265 of a batch spanning
    7164-7429, LogAppendTime (attrs 0x8): a consumer sees the batch's max_timestamp (SUMMARY shows
    the record's own timestamp, first_timestamp + delta).
    """
    remote = _parse_fixture(f"{TIERED_TEST}/3676-7429-77-1-v1.log.1")
    (b,) = remote.batches
    assert (b.base_offset, b.last_offset, b.record_count, b.type) == (7164, 7429, 1, rr.RAFT_DATA)
    (r,) = b.records
    assert b.base_offset + r.offset_delta == 7429 and r.key is None
    assert r.value == bytes.fromhex("c5cfc5a6a6f517fa")
    assert b.log_append_time and b.first_timestamp + r.timestamp_delta == 1668768681523
    assert b.record_timestamp(r) == b.max_timestamp == 1668768681527
    m = rr.REMOTE_SEGMENT_NAME.match("3676-7429-77-1-v1.log.1")
    assert m and m.groups() == (
        "3676",
        "7429",
        "77",
        "1",
        "1",
    )  # base, committed, size, term, archiver term
    seg = _parse_fixture(f"{TIERED_TEST}/test_segment.bin")
    assert [(x.type, x.base_offset) for x in seg.batches] == [
        (2, 4),
        (1, 5),
        (1, 6),
        (1, 7),
        (1, 8),
    ]
    assert all(
        rec.key == b"KEY" and rec.value == bytes(range(100))
        for x in seg.batches[1:]
        for rec in x.records
    )


# ------------------------------------------------------------------------- the encoder proven


def _all_fixture_segments() -> list[Path]:
    require_shared(REDPANDA)
    files = sorted(p for p in REDPANDA.rglob("*-v1.log") if p.is_file())
    return files + [
        REDPANDA / TIERED_TEST / "3676-7429-77-1-v1.log.1",
        REDPANDA / TIERED_TEST / "test_segment.bin",
    ]


def test_encoder_reproduces_every_fixture_batch() -> None:
    """Re-encoding each real batch from its decoded fields and records gives its exact bytes."""
    n = 0
    for path in _all_fixture_segments():
        data = path.read_bytes()
        for b in rr.parse_segment(data, str(path)).batches:
            again = rr.encode_batch(
                b.base_offset,
                b.records,
                batch_type=b.type,
                codec=b.codec,
                attrs=b.attrs,
                first_timestamp=b.first_timestamp,
                max_timestamp=b.max_timestamp,
                last_offset_delta=b.last_offset_delta,
                producer_id=b.producer_id,
                producer_epoch=b.producer_epoch,
                base_sequence=b.base_sequence,
            )
            assert again == data[b.position : b.position + b.size_bytes], (path, b.base_offset)
            n += 1
    assert n == sum(f["batches"] for f in SEGMENT_FILES) == 187


@pytest.mark.parametrize("codec", ["gzip", "snappy", "snappy-le", "lz4", "zstd"])
def test_encoder_codec_round_trip(codec: str) -> None:
    records = _fixture_records()[:40]
    raw = [rr.encode_record(i, i * 3, k, v, h) for i, (_, k, v, h) in enumerate(records)]
    batch = rr.encode_batch(100, raw, codec=codec, first_timestamp=1_700_000_000_000)
    seg = rr.parse_segment(batch + bytes(100))
    (b,) = seg.batches
    assert b.codec == codec.removesuffix("-le") and b.crc_ok and b.header_crc_ok
    assert [(r.key, r.value, r.headers) for r in b.records] == [
        (k, v, tuple(h)) for _, k, v, h in records
    ]
    assert seg.zero_tail == 100
    big = bytes(range(256)) * 600  # several snappy-java chunks
    assert rr.decompress(rr.CODEC_IDS[codec.removesuffix("-le")], rr.compress(codec, big)) == big


def test_reference_rejects_damage() -> None:
    """The reference's own CRC checks fire (so agreeing with it means the CRCs were checked)."""
    batch = bytearray(rr.encode_batch(0, [rr.encode_record(0, 0, b"k", b"v")]))
    for pos, what in ((20, "header_crc"), (len(batch) - 2, "crc")):
        bad = bytearray(batch)
        bad[pos] ^= 1
        with pytest.raises(rr.DecodeError, match=what):
            rr.parse_segment(bytes(bad))
    with pytest.raises(rr.DecodeError, match="cut batch header"):
        rr.parse_segment(bytes(batch) + b"\x01" * 10)


# ------------------------------------------------------------------- kafkalog vs the reference


def _product_rows(
    table: pa.Table, *, metadata: bool = False, control: bool = False
) -> list[dict[str, Any]]:
    ts = table.column("timestamp").cast(pa.int64()).to_pylist()
    out = []
    for i, row in enumerate(table.to_pylist()):
        d = {
            "topic": row["topic"],
            "partition": row["partition"],
            "offset": row["offset"],
            "timestamp_ms": None if ts[i] is None else ts[i] // 1000,
            "timestampType": row["timestampType"],
            "key": row["key"],
            "value": row["value"],
            "headers": None
            if row["headers"] is None
            else [(h["key"], h["value"]) for h in row["headers"]],
        }
        if metadata:
            d["producerId"] = row["producerId"]
            d["isTransactional"] = row["isTransactional"]
        if control:
            d["control"] = None if row["control"] is None else row["control"]["type"]
        out.append(d)
    return sorted(out, key=lambda d: (d["topic"] or "", d["partition"] or 0, d["offset"]))


def _expected_rows(
    rows: list[rr.Row], *, metadata: bool = False, control: bool = False
) -> list[dict[str, Any]]:
    if not control:
        rows = [r for r in rows if not r.is_control]
    out = []
    for r, d in zip(rows, rr.row_dicts(rows), strict=True):
        if control:  # kafkalog's control rows: null key and value, no headers, a control struct
            d["control"] = None
            if r.is_control:
                d.update(key=None, value=None, headers=None)
                d["control"] = {0: "ABORT", 1: "COMMIT"}.get(
                    r.control_type, f"UNKNOWN({r.control_type})"
                )
        if metadata:
            d["producerId"] = r.producer_id
            d["isTransactional"] = r.is_transactional
        out.append(d)
    return sorted(out, key=lambda d: (d["topic"] or "", d["partition"] or 0, d["offset"]))


def _compare(path: Path, rows: list[rr.Row]) -> None:
    """kafkalog's rows for ``path`` equal the reference's ``rows``: default read, with metadata
    and control records, and (where a transaction is present) under read_committed."""
    import kafkalog_source as kl

    table = kl.read_table(str(path))
    assert table.num_rows == sum(not r.is_control for r in rows)
    assert _product_rows(table) == _expected_rows(rows)
    full = kl.read_table(str(path), includeMetadata=True, includeControlRecords=True)
    assert _product_rows(full, metadata=True, control=True) == _expected_rows(
        rows, metadata=True, control=True
    )
    if any(r.is_transactional for r in rows):
        committed = rr.read_committed(rows)
        table = kl.read_table(str(path), isolationLevel="read_committed")
        assert _product_rows(table) == _expected_rows(committed)
        table = kl.read_table(
            str(path),
            isolationLevel="read_committed",
            includeMetadata=True,
            includeControlRecords=True,
        )
        assert _product_rows(table, metadata=True, control=True) == _expected_rows(
            committed, metadata=True, control=True
        )


@pytest.mark.parametrize("rel", KAFKA_PARTITIONS)
def test_kafkalog_reads_fixture_partition(rel: str) -> None:
    """Every fixture partition of the user namespace reads as the reference decodes it."""
    directory = require_shared(REDPANDA / rel)
    _compare(directory, rr.read_partition(directory).rows)


@pytest.mark.parametrize("rel", DATA_DIRS)
def test_kafkalog_reads_fixture_data_directory(rel: str) -> None:
    """A whole data directory gives the rows of its ``kafka`` namespace partitions, nothing of
    ``kafka_internal`` or ``redpanda`` (Redpanda's own state)."""
    root = require_shared(REDPANDA / rel)
    rows = [
        r
        for d in KAFKA_PARTITIONS
        if d.startswith(rel + "/")
        for r in rr.read_partition(REDPANDA / d).rows
    ]
    _compare(root, rows)


def test_kafkalog_reads_fixture_segment_file() -> None:
    """The segment holding the ksqlDB transaction, read as a single file."""
    rel = (
        "DianFlober-rp-stock-monitor/redpanda-data/kafka/_confluent-ksql-default__command_topic/0_4"
    )
    directory = require_shared(REDPANDA / rel)
    rows = [r for r in rr.read_partition(directory).rows if r.segment.endswith("/0-1-v1.log")]
    assert [(r.kafka_offset, r.raft_offset, r.is_control) for r in rows] == [
        (1, 2, False),
        (3, 4, True),
    ]
    _compare(directory / "0-1-v1.log", rows)


# ------------------------------------------------------------- built partitions, every codec


def _fixture_records() -> list[
    tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]
]:
    """(timestamp, key, value, headers) of every record of every fixture segment, in file order,
    with headers and tombstones added to some (the fixtures have none)."""
    out = []
    for path in _all_fixture_segments():
        for b in rr.parse_segment(path.read_bytes(), str(path)).batches:
            for r in b.records:
                out.append((b.first_timestamp + r.timestamp_delta, r.key, r.value, []))
    for i in range(0, len(out), 3):
        ts, k, v, _ = out[i]
        headers = [
            ("src", b"redpanda-fixture"),
            ("nothing", None),
            ("", b""),
            ("ключ", b"\x00\xff" * (i % 5)),
        ]
        out[i] = (ts, k, v, headers[: 1 + i % 4])
    for i in range(5, len(out), 17):
        ts, k, _, h = out[i]
        out[i] = (ts, k, None, h)
    return out


CONTROL_VALUE = struct.pack(">hi", 0, 5)  # version 0, coordinator epoch 5


def _data_batch(base: int, recs, codec: str, **kw) -> bytes:
    first = min(ts for ts, *_ in recs)
    raw = [rr.encode_record(i, ts - first, k, v, h) for i, (ts, k, v, h) in enumerate(recs)]
    return rr.encode_batch(base, raw, codec=codec, first_timestamp=first, **kw)


def _internal_batch(base: int, batch_type: int, n: int = 1, **kw) -> bytes:
    raw = [rr.encode_record(i, 0, b"rp-internal-key", bytes([batch_type, i]) * 9) for i in range(n)]
    return rr.encode_batch(
        base, raw, batch_type=batch_type, first_timestamp=1_692_585_000_000, **kw
    )


def _control_batch(base: int, pid: int, commit: bool) -> bytes:
    key = struct.pack(">hh", 0, 1 if commit else 0)
    raw = [rr.encode_record(0, 0, key, CONTROL_VALUE)]
    return rr.encode_batch(
        base, raw, attrs=rr.ATTR_TRANSACTIONAL | rr.ATTR_CONTROL, first_timestamp=1_692_585_100_000,
        producer_id=pid, producer_epoch=0,
    )  # fmt: skip


def _padded(data: bytes) -> bytes:
    """A segment with a zero-filled (fallocated) tail up to the next 4 KiB."""
    return data + bytes(4096 - len(data) % 4096)


def build_partition(directory: Path, codec: str) -> None:
    """Two segments (terms 1 and 2) of a user-topic partition, data batches compressed with
    ``codec``, around every kind of non-data batch and transaction outcome."""
    records = _fixture_records()
    take = iter(range(len(records)))

    def some(n: int):
        return [records[next(take)] for _ in range(n)]

    seg = bytearray()
    off = 0

    def put(batch: bytes) -> None:
        nonlocal off
        seg.extend(batch)
        off = rr.parse_segment(batch).batches[0].last_offset + 1

    def txn(pid: int) -> dict[str, int]:
        return {"attrs": rr.ATTR_TRANSACTIONAL, "producer_id": pid, "producer_epoch": 0}

    # raft_configuration, version_fence, archival_metadata (3 offsets): no Kafka offset;
    # tx_fence, tx_prepare: a Kafka offset each, no row
    put(_internal_batch(off, 2))
    put(_data_batch(off, some(8), codec))
    put(_internal_batch(off, 23))
    idempotent = {"producer_id": 3, "producer_epoch": 0, "base_sequence": 0}
    put(_data_batch(off, some(5), codec, **idempotent))
    put(_internal_batch(off, 19, n=3))
    put(_internal_batch(off, 10, producer_id=7, producer_epoch=0))
    put(_data_batch(off, some(6), codec, base_sequence=0, **txn(7)))
    put(_data_batch(off, some(2), codec))  # non-transactional inside the transaction's span
    put(_internal_batch(off, 9, producer_id=7, producer_epoch=0))
    put(_control_batch(off, 7, commit=True))
    put(_internal_batch(off, 10, producer_id=8, producer_epoch=0))
    put(_data_batch(off, some(4), codec, base_sequence=0, **txn(8)))
    put(_control_batch(off, 8, commit=False))
    recs = some(4)  # LogAppendTime: every record takes max_timestamp
    late = max(t for t, *_ in recs) + 12_345
    put(_data_batch(off, recs, codec, attrs=rr.ATTR_LOG_APPEND_TIME, max_timestamp=late))
    compacted = some(2)  # two records left of seven offsets (record_count 2, last_offset_delta 6)
    first = min(t for t, *_ in compacted)
    raw = [
        rr.encode_record(d, t - first, k, v, h)
        for d, (t, k, v, h) in zip((1, 4), compacted, strict=True)
    ]
    put(rr.encode_batch(off, raw, codec=codec, first_timestamp=first, last_offset_delta=6))
    (directory / "0-1-v1.log").write_bytes(_padded(bytes(seg)))

    second_base = off
    seg = bytearray()
    put(_internal_batch(off, 2))
    rest = [records[i] for i in take]
    body, undecided = rest[:-3], rest[-3:]
    for i in range(0, len(body), 9):
        put(_data_batch(off, body[i : i + 9], codec))
    put(_internal_batch(off, 10, producer_id=9, producer_epoch=0))  # undecided transaction
    put(_data_batch(off, undecided, codec, base_sequence=0, **txn(9)))
    (directory / f"{second_base}-2-v1.log").write_bytes(_padded(bytes(seg)))


CODECS = ["none", "gzip", "snappy", "snappy-le", "lz4", "zstd"]


@pytest.fixture(scope="module")
def built_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with one partition per codec: ``kafka/rp-<codec>/0_3``."""
    root = tmp_path_factory.mktemp("redpanda-built")
    for codec in CODECS:
        d = root / "kafka" / f"rp-{codec}" / "0_3"
        d.mkdir(parents=True)
        build_partition(d, codec)
    return root


def test_built_partition_offsets(built_dir: Path) -> None:
    """The built log's offsets, as the offset translator defines them (a check of the builder)."""
    log = rr.read_partition(built_dir / "kafka" / "rp-none" / "0_3")
    assert not log.raft_gaps and len(log.segments) == 2 and all(s.zero_tail for s in log.segments)
    batches = [b for s in log.segments for b in s.batches]
    assert Counter(b.codec for b in batches) == {"none": len(batches)}
    offsets = [r.kafka_offset for r in log.rows]
    assert offsets == sorted(set(offsets))
    first = log.rows[0]
    assert (first.raft_offset, first.kafka_offset) == (1, 0)  # after raft_configuration at 0
    # raft_configuration x2, version_fence, archival_metadata (3 offsets) take no Kafka offset
    assert log.kafka_next_offset == batches[-1].last_offset + 1 - 6
    control = [r for r in log.rows if r.is_control]
    assert [r.control_type for r in control] == [1, 0]
    # tx_fence/tx_prepare keep Kafka offsets no row uses
    held = {b.base_offset for b in batches if b.type in (9, 10)}
    assert len(held) == 4 and not held & {r.raft_offset for r in log.rows}
    lat = [r for r in log.rows if r.timestamp_type == 1]
    assert len(lat) == 4 and len({r.timestamp for r in lat}) == 1
    compacted = [b for b in batches if b.record_count != b.last_offset_delta + 1]
    assert [(b.record_count, b.last_offset_delta) for b in compacted] == [(2, 6)]
    committed = rr.read_committed(log.rows)
    dropped = {r.producer_id for r in log.rows if r not in committed}
    assert dropped == {8, 9}  # aborted, undecided


@pytest.mark.parametrize("codec", CODECS)
def test_kafkalog_reads_built_partition(built_dir: Path, codec: str) -> None:
    """A Redpanda partition with ``codec``-compressed data batches reads as the reference says."""
    directory = built_dir / "kafka" / f"rp-{codec}" / "0_3"
    log = rr.read_partition(directory)
    assert {
        b.codec for s in log.segments for b in s.batches if b.type == 1 and not b.is_control
    } == {codec.removesuffix("-le")}
    _compare(directory, log.rows)


def test_kafkalog_reads_built_data_directory(built_dir: Path) -> None:
    """The whole built data directory: every codec's partition in one read."""
    rows = [
        r for c in CODECS for r in rr.read_partition(built_dir / "kafka" / f"rp-{c}" / "0_3").rows
    ]
    _compare(built_dir, rows)


def kafka_segment_of(log: rr.PartitionLog) -> bytes:
    """The raft_data batches of ``log`` as one Kafka v2 segment at their Kafka offsets: the same
    records section and attrs..record_count (so the same Kafka CRC), a Kafka batch header."""
    out = bytearray()
    mapped, _ = rr.kafka_offset_map((b for s in log.segments for b in s.batches), log.namespace)
    for b, delta in mapped:
        if b.type != rr.RAFT_DATA:
            continue
        seg = next(s for s in log.segments if b in s.batches)
        with open(seg.path, "rb") as f:
            f.seek(b.position + rr.HEADER_SIZE)
            section = f.read(b.size_bytes - rr.HEADER_SIZE)
        tail = rr.KAFKA_PART.pack(
            b.attrs, b.last_offset_delta, b.first_timestamp, b.max_timestamp,
            b.producer_id, b.producer_epoch, b.base_sequence, b.record_count,
        )  # fmt: skip
        body = struct.pack(">iB", 0, 2) + struct.pack(">I", b.crc) + tail + section
        out += struct.pack(">qi", b.base_offset - delta, len(body)) + body
    return bytes(out)


@pytest.mark.parametrize("codec", CODECS)
def test_comparison_holds_for_the_same_records_as_kafka(
    built_dir: Path, tmp_path: Path, codec: str
) -> None:
    """A check of this file's comparison: the built partition's data batches, moved into a Kafka
    segment at the reference's Kafka offsets, read by kafkalog's Kafka reader equal the
    reference's rows (so a failure of the Redpanda tests above is about Redpanda)."""
    log = rr.read_partition(built_dir / "kafka" / f"rp-{codec}" / "0_3")
    directory = tmp_path / f"rp-{codec}-0"
    directory.mkdir()
    (directory / f"{0:020d}.log").write_bytes(kafka_segment_of(log))
    _compare(directory, [dataclasses.replace(r, topic=f"rp-{codec}") for r in log.rows])


def test_kafkalog_reads_tiered_storage_copy(tmp_path: Path) -> None:
    """A local copy of a Tiered Storage bucket: the real compacted remote segment
    (``3676-7429-77-1-v1.log.1``, a v2 name) under its hashed key, with a v1 JSON partition
    manifest whose ``delta_offset`` gives the Kafka offsets (cloud_storage/remote_segment.cc:117-119:
    the segment reader starts from the manifest's delta)."""
    name = "3676-7429-77-1-v1.log.1"
    data = require_shared(REDPANDA / TIERED_TEST / name).read_bytes()
    ns, topic, partition, revision, delta = "kafka", "tiered", 4, 35, 3
    seg = rr.parse_segment(data, name)
    (b,) = seg.batches
    key = rr.remote_segment_key(ns, topic, partition, revision, "3676-7429-77-1-v1.log", 1)
    (tmp_path / key).parent.mkdir(parents=True)
    (tmp_path / key).write_bytes(data)
    manifest = {
        "version": 1, "namespace": ns, "topic": topic, "partition": partition,
        "revision": revision, "last_offset": 7429, "insync_offset": 7430, "start_offset": 3676,
        "segments": {
            "3676-1-v1.log": {
                "is_compacted": True, "size_bytes": len(data), "committed_offset": 7429,
                "base_offset": 3676, "base_timestamp": b.first_timestamp,
                "max_timestamp": b.max_timestamp, "delta_offset": delta, "archiver_term": 1,
                "segment_term": 1, "delta_offset_end": delta, "sname_format": 2,
            }
        },
    }  # fmt: skip
    mkey = tmp_path / rr.partition_manifest_key(ns, topic, partition, revision)
    mkey.parent.mkdir(parents=True)
    mkey.write_text(json.dumps(manifest))
    mapped, _ = rr.kafka_offset_map(seg.batches, ns, base_delta=delta)
    rows = [r for bb, d in mapped for r in rr.batch_rows(bb, d, topic, partition, str(key))]
    assert [(r.kafka_offset, r.raft_offset, r.timestamp) for r in rows] == [
        (7426, 7429, b.max_timestamp)
    ]
    _compare(tmp_path, rows)
