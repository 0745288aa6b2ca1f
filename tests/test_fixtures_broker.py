"""Broker-written record sets (../shared/fixtures/broker-written) decode like kafka-python's.

Two groups of record sets, each its own parametrized test so ids stay readable:

* ``disk``: every ``records`` file in ``manifest.json`` that is not a derived carve (real ``.log``
  segments copied from broker data directories, plus kafka-python's "real live data" test bytes).
* ``carve``: every row of ``CARVE_TABLE.md``: a record set cut out of a protocol capture (hex dump,
  KafkaJS JSON byte array, raw response, pcap) at the ``records@`` byte offset for ``len`` bytes,
  written to a temporary file and decoded from there.

The reference is kafka-python's pure-Python decoder (``MemoryRecords`` handing out
``DefaultRecordBatch`` / ``LegacyRecordBatch``; kafka-python 3.0.12 ships no C extension for
these, which :func:`test_reference_decoder_is_pure_python` pins). Its output is normalised to our
conventions:

* v0 messages: kafka-python reports ``timestamp=None, timestamp_type=None``; SEGMENT_SPEC §2.1 says
  NoTimestampType, so we expect a null timestamp and timestampType -1.
* LogAppendTime: kafka-python substitutes ``maxTimestamp`` (v2) and the wrapper timestamp (v1
  compressed) exactly as SEGMENT_SPEC §1.5/§2.2 do, so no normalisation is needed; v1 inner
  messages take the wrapper's timestamp type in both.
* headers: kafka-python gives ``[]`` for no headers; we give null.
* control batches (``is_control_batch``): kafka-python yields ``ControlRecord`` objects; they are
  left out of the data comparison and compared separately (offset and key) against our
  ``includeControlRecords=true`` output.

Where kafka-python and SEGMENT_SPEC disagree, SEGMENT_SPEC wins:

* CRCs: kafka-python's ``MemoryRecords`` iteration never checks them, so it happily decodes
  kafka-rust's ``invalid_crc`` capture. Kafka's consumer (``check.crcs``) and the broker's recovery
  reject it (SEGMENT_SPEC §1.8, §6), and so do we: :class:`ChecksumError` by default, the
  kafka-python rows with ``verifyChecksums=false``.

Decoding failures listed in PROVENANCE.md are tested explicitly: truncated partial-message sets
end quietly with a truncated tail in :class:`ReadStats`; the pre-0.8 ``.kafka`` file raises our
error; KafkaJS's ``v0_recordbatch_zstd.json`` raises :class:`RecordStructureError`.

Carves keep negative offsets (produce-request record sets hold offset -1): the test ranges use
``offset_lo = -2**63`` so the reader's offset bounds do not drop them; bounds are tested elsewhere.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from conftest import BROKER_WRITTEN, require_shared
from kafka.record import default_records, legacy_records, memory_records
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

from kafkalog_source.errors import ChecksumError, CorruptDataError, RecordStructureError
from kafkalog_source.options import parse_options
from kafkalog_source.planning.splits import SegmentRange
from kafkalog_source.reader import RangeReader, output_projection
from kafkalog_source.stats import ReadStats

MANIFEST = BROKER_WRITTEN / "manifest.json"
CARVE_TABLE = BROKER_WRITTEN / "CARVE_TABLE.md"
LOWEST_OFFSET = -(2**63)

# Record sets that PROVENANCE.md lists under "Decoding failures", by carve-table fixture path.
INVALID_CRC = "kafka-rust/test-data/fetch2.mytopic.nocompression.invalid_crc.kafka.0900"
ZSTD_MISLABELLED = "kafkajs/src/protocol/recordBatch/fixtures/v0_recordbatch_zstd.json"
BARE_RECORD = "kafkajs/src/protocol/recordBatch/fixtures/v0_record.json"
PARTIAL_MESSAGES = (
    "kafkajs/src/protocol/requests/fetch/fixtures/v2_response_partial_messages_many_partitions.json"
)
INDEX_OUT_OF_RANGE = (
    "kafkajs/src/protocol/requests/fetch/fixtures/v2_response_index_out_of_range.json"
)
PRE_08_LOG = (
    "apache-kafka/core/src/test/resources/test-kafka-logs/MagicByte0-0/00000000000000000000.kafka"
)
SPECIAL = {INVALID_CRC, ZSTD_MISLABELLED, BARE_RECORD}

CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER"}


# ---------------------------------------------------------------------------------- collection
@dataclass(frozen=True)
class Carve:
    fixture: str  # path under broker-written
    partition: str
    at: int
    length: int

    def data(self) -> bytes:
        raw = (BROKER_WRITTEN / self.fixture).read_bytes()
        if self.fixture.endswith(".hex"):
            raw = bytes.fromhex(raw.decode("ascii").strip())
        elif self.fixture.endswith(".json"):
            raw = bytes(json.loads(raw)["data"])
        assert len(raw) >= self.at + self.length, f"{self.fixture} is shorter than the carve"
        return raw[self.at : self.at + self.length]


def _carves() -> list[Carve]:
    if not CARVE_TABLE.exists():
        return []
    out = []
    for line in CARVE_TABLE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or not cells[3].isdigit():
            continue  # header and separator rows
        out.append(Carve(cells[0].strip("`"), cells[2].strip("`"), int(cells[3]), int(cells[4])))
    return out


def _disk_files() -> list[str]:
    if not MANIFEST.exists():
        return []
    files = json.loads(MANIFEST.read_text())["files"]
    return sorted(f["local"] for f in files if f["kind"] == "records" and not f.get("derived"))


CARVES = _carves()
DISK = _disk_files()


def _carve_id(c: Carve) -> str:
    root, _, rest = c.fixture.partition("/")
    name = Path(rest).name
    for suffix in (".json.json", ".json", ".hex"):
        name = name.removesuffix(suffix)
    same = [d for d in CARVES if d.fixture == c.fixture]
    return f"{root}:{name}" + (f"@{c.partition}" if len(same) > 1 else "")


def _disk_id(local: str) -> str:
    parts = Path(local).parts
    stem = Path(local).stem
    if parts[-1].endswith(".log"):
        return f"{parts[0]}:{parts[-2]}/{stem}"
    return f"{parts[0]}:{stem.split('.')[-1]}"


def _params(items: list[Any], ids: Any) -> list[Any]:
    if not items:
        return [pytest.param(None, id="shared-fixtures-absent")]
    return [pytest.param(x, id=ids(x)) for x in items]


# ---------------------------------------------------------------------------------- decoding
Row = tuple[int, int | None, int, bytes | None, bytes | None, list[tuple[str, bytes | None]] | None]


@dataclass
class Reference:
    rows: list[Row]
    controls: list[tuple[int, bytes | None]]
    unparsed: int  # trailing bytes kafka-python did not frame


def reference(data: bytes) -> Reference:
    """kafka-python's pure-Python decode, normalised to our conventions (module docstring)."""
    records = MemoryRecords(data)
    rows: list[Row] = []
    controls: list[tuple[int, bytes | None]] = []
    unparsed = len(data) - records.valid_bytes()
    for batch in records:
        if isinstance(batch, DefaultRecordBatch) and batch.is_control_batch:
            controls.extend((r.offset, r.key) for r in batch)
            continue
        for r in batch:
            ts_type = -1 if r.timestamp_type is None else r.timestamp_type
            ts = None if ts_type == -1 else r.timestamp
            headers = [(k, v) for k, v in r.headers] or None
            rows.append((r.offset, ts, ts_type, r.key, r.value, headers))
    return Reference(rows, controls, unparsed)


def decode(
    path: Path,
    stats: ReadStats | None = None,
    topic: str | None = None,
    partition: int | None = None,
    base: int | None = None,
    **options: Any,
) -> pa.Table:
    opts = parse_options(options)
    projection = output_projection(opts)
    rng = SegmentRange(
        str(path),
        0,
        os.path.getsize(path),
        at_file_end=True,
        topic=topic,
        partition=partition,
        segment_base_offset=base,
        offset_lo=LOWEST_OFFSET,
    )
    batches = list(RangeReader(rng, opts, projection, stats))
    return pa.Table.from_batches(batches, schema=projection.schema)


def rows_of(table: pa.Table) -> list[Row]:
    ms = table.column("timestamp").cast(pa.int64()).to_pylist()
    out: list[Row] = []
    for r, us in zip(table.to_pylist(), ms, strict=True):
        headers = r["headers"]
        out.append(
            (
                r["offset"],
                None if us is None else us // 1000,
                r["timestampType"],
                r["key"],
                r["value"],
                None if headers is None else [(h["key"], h["value"]) for h in headers],
            )
        )
    return out


def assert_same_rows(got: list[Row], want: list[Row]) -> None:
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        assert g == w, f"row {i} (offset {w[0]}) differs from kafka-python"
    assert len(got) == len(want), f"{len(got)} rows, kafka-python has {len(want)}"


def check_record_set(path: Path, data: bytes, **where: Any) -> None:
    """Our rows, control records and tail accounting equal kafka-python's for one record set."""
    ref = reference(data)
    stats = ReadStats()
    table = decode(path, stats, **where)
    assert_same_rows(rows_of(table), ref.rows)
    assert stats.tail_bytes == ref.unparsed
    assert stats.truncated_tails + stats.zero_tails == (1 if ref.unparsed else 0)
    assert stats.malformed_batches == 0
    if ref.controls:
        with_control = decode(path, includeControlRecords=True, **where)
        # control records come with null key and value; the key's version and type are parsed
        # into the control column
        got = [
            (r["offset"], r["key"], r["control"]["version"], r["control"]["type"])
            for r in with_control.to_pylist()
            if r["control"] is not None
        ]
        want = [
            (
                off,
                None,
                int.from_bytes(key[0:2], "big", signed=True),
                CONTROL_TYPES.get(int.from_bytes(key[2:4], "big"), "?"),
            )
            for off, key in ref.controls
        ]
        assert got == want


def _carved_file(carve: Carve, tmp_path: Path) -> tuple[Path, bytes]:
    data = carve.data()
    path = tmp_path / "carved.records"
    path.write_bytes(data)
    return path, data


def _find_carve(fixture: str, partition: str | None = None) -> Carve:
    require_shared(CARVE_TABLE)
    hits = [c for c in CARVES if c.fixture == fixture and partition in (None, c.partition)]
    assert hits, f"{fixture} is missing from CARVE_TABLE.md"
    return hits[0]


# ---------------------------------------------------------------------------------- tests
def test_reference_decoder_is_pure_python() -> None:
    for module in (memory_records, default_records, legacy_records):
        assert module.__file__ is not None and module.__file__.endswith(".py"), module
    assert MemoryRecords.__module__ == "kafka.record.memory_records"
    assert DefaultRecordBatch.__module__ == "kafka.record.default_records"


@pytest.mark.parametrize("local", _params(DISK, _disk_id))
def test_disk(local: str | None) -> None:
    require_shared(MANIFEST)
    path = BROKER_WRITTEN / local
    where: dict[str, Any] = {}
    if path.suffix == ".log":
        topic, _, part = path.parent.name.rpartition("-")
        where = {"topic": topic, "partition": int(part), "base": int(path.stem)}
    check_record_set(path, path.read_bytes(), **where)


@pytest.mark.parametrize(
    "carve", _params([c for c in CARVES if c.fixture not in SPECIAL], _carve_id)
)
def test_carve(carve: Carve | None, tmp_path: Path) -> None:
    require_shared(CARVE_TABLE)
    path, data = _carved_file(carve, tmp_path)
    check_record_set(path, data)


def test_carve_table_matches_precarved_files() -> None:
    """Our reading of CARVE_TABLE.md cuts the same bytes as the fixtures' own ``carved/`` files."""
    require_shared(CARVE_TABLE)
    compared = 0
    for c in CARVES:
        root, _, rest = c.fixture.partition("/")
        name = Path(rest).name.removesuffix(".json").removesuffix(".hex")
        precarved = BROKER_WRITTEN / root / "carved" / f"{name}.{c.partition}.records.bin"
        if precarved.exists():
            assert c.data() == precarved.read_bytes(), c
            compared += 1
    assert compared >= 40


def test_invalid_crc_raises_checksum_error(tmp_path: Path) -> None:
    """kafka-rust's deliberately corrupted v0 message: SEGMENT_SPEC wins over kafka-python."""
    path, data = _carved_file(_find_carve(INVALID_CRC), tmp_path)
    with pytest.raises(ChecksumError) as info:
        decode(path)
    assert info.value.path == str(path)
    assert info.value.position == 0
    assert f"{path}: byte 0" in str(info.value)
    # kafka-python does not check CRCs; without verification we give its rows.
    ref = reference(data)
    assert len(ref.rows) == 1
    assert_same_rows(rows_of(decode(path, verifyChecksums=False)), ref.rows)


def test_valid_twin_of_invalid_crc_decodes(tmp_path: Path) -> None:
    """The valid capture differs only in the CRC field: same rows once CRCs are not checked."""
    twin = INVALID_CRC.replace(".invalid_crc", "")
    path, good_data = _carved_file(_find_carve(twin), tmp_path)
    bad_data = _find_carve(INVALID_CRC).data()
    diff = [i for i, (a, b) in enumerate(zip(good_data, bad_data, strict=True)) if a != b]
    assert diff and set(diff) <= {12, 13, 14, 15}  # the v0 message CRC field
    bad_path = tmp_path / "bad.records"
    bad_path.write_bytes(bad_data)
    good = rows_of(decode(path))
    assert len(good) == 1
    assert rows_of(decode(bad_path, verifyChecksums=False)) == good


@pytest.mark.parametrize("partition", [0, 3, 6, 9], ids=lambda p: f"topic-partial-message-{p}")
def test_partial_message_sets_end_quietly(partition: int, tmp_path: Path) -> None:
    """1024 bytes holding only the start of one batch: no rows, a truncated tail of 1024 bytes."""
    carve = _find_carve(PARTIAL_MESSAGES, f"topic-partial-message-{partition}")
    path, data = _carved_file(carve, tmp_path)
    stats = ReadStats()
    assert decode(path, stats).num_rows == 0
    assert stats.truncated_tails == 1
    assert stats.zero_tails == 0
    assert stats.tail_bytes == len(data) == 1024


def test_index_out_of_range_keeps_rows_before_partial_tail(tmp_path: Path) -> None:
    """Three complete v0 messages, then 9 bytes of a cut-off one."""
    path, data = _carved_file(_find_carve(INDEX_OUT_OF_RANGE), tmp_path)
    stats = ReadStats()
    rows = rows_of(decode(path, stats))
    assert [r[0] for r in rows] == [15733908, 15733909, 15733910]
    assert_same_rows(rows, reference(data).rows)
    assert stats.truncated_tails == 1
    assert stats.tail_bytes == 9


def test_pre_08_kafka_file_raises_our_error() -> None:
    """A Kafka 0.7 log (no offsets, different framing) is not a segment: our error, no crash."""
    path = require_shared(BROKER_WRITTEN / PRE_08_LOG)
    with pytest.raises(CorruptDataError) as info:
        decode(path)
    assert info.value.path == str(path)
    assert info.value.position is not None


def test_mislabelled_zstd_batch_raises_record_structure_error(tmp_path: Path) -> None:
    """KafkaJS wrote a zstd frame into a batch whose attributes say codec none."""
    path, _ = _carved_file(_find_carve(ZSTD_MISLABELLED), tmp_path)
    for verify in (True, False):
        with pytest.raises(RecordStructureError) as info:
            decode(path, verifyChecksums=verify)
        assert info.value.path == str(path)
        assert info.value.base_offset == 0


def test_bare_record_is_not_a_record_set(tmp_path: Path) -> None:
    """KafkaJS's ``v0_record.json`` is one v2 record without a batch header: never a crash."""
    path, data = _carved_file(_find_carve(BARE_RECORD), tmp_path)
    stats = ReadStats()
    try:
        table = decode(path, stats)
    except CorruptDataError as exc:
        assert exc.path == str(path)
    else:
        assert table.num_rows == 0
        assert stats.tail_bytes == len(data)
