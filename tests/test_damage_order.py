"""Damage in a later batch: what comes before it is kept, and rows come out in file order.

Each case is a segment of several top-level entries (v2 batches, v0/v1 messages or compressed
wrappers), built with kafka-python's record builders or copied from ``sample_segments/``, with one
entry damaged: a flipped byte (its CRC fails), a payload that does not decompress or decode (CRC
fixed up), or an impossible v2 record count (CRC fixed up). The expected rows of every undamaged
entry come from kafka-python decoding that entry alone, so the reader is checked against an
independent decoder, in every mode, with ``recordsPerBatch`` at its default and at 1 (a flush
after every Kafka batch), and with the compiled lz4/snappy decoders and the many-wrappers-per-call
path on and off:

* ``FAILFAST`` raises at the damaged entry; with ``ignoreCorruptFiles=true`` it returns exactly
  the rows of the entries before it (issue 10, item 1: compressed segments returned nothing);
* ``PERMISSIVE`` returns every row in file order, with the damaged entry's row at its place and
  its stored bytes as ``value`` (item 2: the corrupt row came before earlier batches' rows);
* ``DROPMALFORMED`` returns every other row and counts exactly the damaged entry.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crc32c
import pytest
from conftest import SAMPLES
from kafka import codec as kafka_codec
from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

import kafkalog_source as kl
from kafkalog_source.reader import Tuning

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
ERROR_KEY = "kafkalog.error"
Row = tuple[int, bytes | None, bytes | None]


# ----------------------------------------------------------------------------- segments
@dataclass
class Entry:
    """One top-level entry of a segment: its place, its bytes and kafka-python's rows for it."""

    position: int
    data: bytes
    rows: list[Row]

    @property
    def offset_field(self) -> int:
        """The entry's stored offset: a v2 batch's base offset, a legacy message's offset."""
        return struct.unpack_from(">q", self.data, 0)[0]


def entries(data: bytes) -> list[Entry]:
    """Split a well-formed segment into its top-level entries, each decoded by kafka-python."""
    out = []
    pos = 0
    while pos < len(data):
        size = 12 + struct.unpack_from(">i", data, pos + 8)[0]
        chunk = data[pos : pos + size]
        batch = MemoryRecords(chunk).next_batch()
        assert batch is not None
        rows = [(r.offset, r.key, r.value) for r in batch]
        out.append(Entry(pos, chunk, rows))
        pos += size
    assert pos == len(data)
    return out


def _value(i: int) -> bytes:
    return b"order %d: " % i + b"lorem ipsum dolor sit amet " * (1 + i % 4)


def v2_batch(codec: int, base: int, n: int, producer_id: int = -1) -> bytes:
    """A v2 batch from kafka-python's builder, stored at ``base``, really compressed."""
    builder = DefaultRecordBatchBuilder(2, codec, False, producer_id, 0, 0, 1 << 30)
    for i in range(n):
        key = None if i % 3 == 0 else b"key-%d" % (base + i)
        headers = [("h", b"%d" % i)] if i % 2 else []
        assert builder.append(i, 1_700_000_000_000 + base + i, key, _value(base + i), headers)
    buf = bytearray(builder.build())
    assert buf[22] & 7 == codec  # kafka-python stores a batch plain when codec would not shrink it
    struct.pack_into(">q", buf, 0, base)
    return bytes(buf)


def _legacy_crc(buf: bytearray, pos: int = 0) -> None:
    size = struct.unpack_from(">i", buf, pos + 8)[0]
    struct.pack_into(">I", buf, pos + 12, zlib.crc32(buf[pos + 16 : pos + 12 + size]))


def legacy_entries(magic: int, codec: int, base: int, n: int) -> bytes:
    """Legacy messages from kafka-python's builder as a broker stores them: ``n`` plain messages,
    or one compressed wrapper holding them (its offset is the last inner one)."""
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 30)
    for i in range(n):
        offset = i if (codec and magic == 1) else base + i
        key = None if i % 2 else b"key-%d" % (base + i)
        assert builder.append(offset, 1_600_000_000_000 + base + i, key, _value(base + i))
    buf = bytearray(builder.build())
    if codec:
        struct.pack_into(">q", buf, 0, base + n - 1)
        if magic == 1:
            struct.pack_into(">q", buf, 18, 1_600_000_000_000 + base + n - 1)
            _legacy_crc(buf)
    return bytes(buf)


# ----------------------------------------------------------------------------- damage
def damage(data: bytes, entry: Entry, kind: str) -> bytes:
    """A copy of ``data`` with ``entry`` damaged: ``crc`` flips its last byte; ``payload``
    ruins its records or compressed value and fixes the CRC; ``count`` (v2) stores an
    impossible record count and fixes the CRC; ``record`` (v2) breaks its fourth record."""
    out = bytearray(data)
    pos, size = entry.position, len(entry.data)
    end = pos + size
    magic = out[pos + 16]
    if kind == "crc":
        out[end - 1] ^= 0x5A
        return bytes(out)
    if magic == 2 and kind == "record":
        return bytes(out[:pos]) + _bad_fourth_record(entry.data) + bytes(out[end:])
    if magic == 2:
        if kind == "count":
            struct.pack_into(">i", out, pos + 57, 0x7FFFFFFF)
        else:
            out[pos + 61 : end] = b"\xff" * (end - pos - 61)
        struct.pack_into(">I", out, pos + 17, crc32c.crc32c(bytes(out[pos + 21 : end])))
        return bytes(out)
    assert kind == "payload"
    q = pos + 18 + (8 if magic == 1 else 0)  # the key length
    if out[pos + 17] & 7:  # a compressed wrapper: ruin its value
        klen = struct.unpack_from(">i", out, q)[0]
        v = q + 4 + max(klen, 0) + 4
        out[v:end] = b"\xff" * (end - v)
    else:  # a plain message: a key length past the message
        struct.pack_into(">i", out, q, 0x7FFFFF00)
    entry_buf = out[pos:end]
    _legacy_crc(entry_buf)
    out[pos:end] = entry_buf
    return bytes(out)


def _varint(buf: bytes, p: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[p]
        p += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (value >> 1) ^ -(value & 1), p


def _bad_fourth_record(batch: bytes) -> bytes:
    """The v2 ``batch`` with a negative length in its fourth record, re-compressed with
    kafka-python's codecs (the batch size and CRC follow): three records decode, then it fails."""
    codec = batch[22] & 7
    encode, decode = KP_CODECS[codec]
    records = bytearray(decode(batch[61:]))
    p = 0
    for _ in range(3):
        length, q = _varint(records, p)
        p = q + length
    records[p] = 0x7F  # zig-zag -64
    out = bytearray(batch[:61]) + encode(bytes(records))
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


KP_CODECS = {
    NONE: (bytes, bytes),
    GZIP: (kafka_codec.gzip_encode, kafka_codec.gzip_decode),
    SNAPPY: (kafka_codec.snappy_encode, kafka_codec.snappy_decode),
    LZ4: (kafka_codec.lz4_encode, kafka_codec.lz4_decode),
    ZSTD: (kafka_codec.zstd_encode, kafka_codec.zstd_decode),
}


# ----------------------------------------------------------------------------- reading
def read(path: Path, **options: Any) -> tuple[list[dict[str, Any]], kl.ReadStats]:
    stats = kl.ReadStats()
    table = kl.read_table(str(path), stats=stats, **options)
    return table.to_pylist(), stats


def plain_rows(rows: list[dict[str, Any]]) -> list[Row]:
    return [(r["offset"], r["key"], r["value"]) for r in rows]


def is_error_row(row: dict[str, Any]) -> bool:
    return bool(row["headers"]) and row["headers"][0]["key"] == ERROR_KEY


def check_damaged(
    directory: Path, data: bytes, victims: list[Entry], d: int, kind: str, **extra: str
) -> None:
    """Write ``data`` with entry ``d`` damaged, read it every way (plus options ``extra``),
    and compare with kafka-python's rows of the other entries."""
    bad = victims[d]
    broken = damage(data, bad, kind)
    part = directory / f"damaged-{d}-{kind}-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(broken)
    before = [r for e in victims[:d] for r in e.rows]
    after = [r for e in victims[d + 1 :] for r in e.rows]
    size = 12 + struct.unpack_from(">i", broken, bad.position + 8)[0]  # "record" re-compresses
    stored = broken[bad.position : bad.position + size]

    with pytest.raises(kl.CorruptDataError) as excinfo:
        kl.read_table(str(part), **extra)
    assert bad.position <= excinfo.value.position < bad.position + size

    for fast in (True, False):
        knobs = Tuning(fast_codecs=fast, fast_wrappers=fast)
        for rpb in ({**extra, "tuning": knobs}, {**extra, "recordsPerBatch": 1, "tuning": knobs}):
            where = f"fast={fast} {rpb}"
            rows, stats = read(part, ignoreCorruptFiles=True, **rpb)
            assert plain_rows(rows) == before, where
            assert stats.corrupt_files == 1, where

            rows, stats = read(part, mode="PERMISSIVE", **rpb)
            errors = [k for k, r in enumerate(rows) if is_error_row(r)]
            assert errors == [len(before)], where
            assert plain_rows(rows) == [*before, (bad.offset_field, None, stored), *after], where
            assert stats.malformed_batches == 1, where

            rows, stats = read(part, mode="DROPMALFORMED", **rpb)
            assert plain_rows(rows) == before + after, where
            assert (stats.malformed_batches, stats.malformed_bytes) == (1, size), where

    # Every entry a piece of its own, the pieces decoded on three threads: the rows still come
    # in file order, and FAILFAST hands on every row before the damage, then raises.
    pieces = {**extra, "threads": 3, "maxPartitionBytes": 1}
    got: list[Row] = []
    with pytest.raises(kl.CorruptDataError) as excinfo:
        for batch in kl.iter_batches(str(part), **pieces):
            got.extend(plain_rows(batch.to_pylist()))
    assert got == before
    assert bad.position <= excinfo.value.position < bad.position + size
    rows, stats = read(part, mode="DROPMALFORMED", **pieces)
    assert plain_rows(rows) == before + after
    assert (stats.malformed_batches, stats.malformed_bytes, stats.segments) == (1, size, 1)
    assert stats.unaccounted_bytes == 0
    rows, stats = read(part, mode="PERMISSIVE", **pieces)
    assert plain_rows(rows) == [*before, (bad.offset_field, None, stored), *after]
    # ignoreCorruptFiles stops the piece that meets the damage (as a Spark split): the pieces
    # after it still give their rows
    rows, stats = read(part, ignoreCorruptFiles=True, **pieces)
    assert plain_rows(rows) == before + after
    assert (stats.corrupt_files, stats.corrupt_file_bytes) == (1, size)


def _positions(n: int) -> list[int]:
    return sorted({1, n // 2, n - 1})


# ----------------------------------------------------------------------------- built segments
@pytest.mark.parametrize("kind", ["crc", "payload", "count", "record"])
@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4, ZSTD], ids=CODEC_NAMES.get)
@pytest.mark.parametrize("producer_id", [-1, 7], ids=["bulk", "per-batch"])
def test_v2_one_codec(tmp_path: Path, codec: int, kind: str, producer_id: int) -> None:
    """Six v2 batches of one codec. With a producer id, read_committed sends every batch through
    the per-batch path (``_v2_rows``); without, they take the bulk run (and lz4/snappy the
    compiled arena path)."""
    data = b"".join(v2_batch(codec, 5 * b, 5, producer_id) for b in range(6))
    victims = entries(data)
    level = {"isolationLevel": "read_committed"} if producer_id >= 0 else {}
    for d in _positions(len(victims)):
        check_damaged(tmp_path, data, victims, d, kind, **level)


@pytest.mark.parametrize("kind", ["crc", "payload", "count", "record"])
def test_v2_mixed_codecs(tmp_path: Path, kind: str) -> None:
    """Codecs changing batch by batch (the per-batch path with uncompressed batches gathered
    in place and compressed ones in groups), damaged at every position."""
    codecs = [LZ4, NONE, GZIP, NONE, ZSTD, SNAPPY, LZ4, NONE]
    data = b"".join(v2_batch(c, 4 * b, 4) for b, c in enumerate(codecs))
    victims = entries(data)
    for d in range(1, len(victims)):
        check_damaged(tmp_path, data, victims, d, kind)


@pytest.mark.parametrize("kind", ["crc", "payload"])
@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4], ids=CODEC_NAMES.get)
@pytest.mark.parametrize("magic", [0, 1])
def test_legacy(tmp_path: Path, magic: int, codec: int, kind: str) -> None:
    """v0/v1: six compressed wrappers of one codec, or plain messages, one of them damaged."""
    if codec:
        data = b"".join(legacy_entries(magic, codec, 4 * b, 4) for b in range(6))
    else:
        data = legacy_entries(magic, NONE, 0, 8)
    victims = entries(data)
    for d in _positions(len(victims)):
        check_damaged(tmp_path, data, victims, d, kind)


def test_legacy_then_v2(tmp_path: Path) -> None:
    """A topic upgraded over time: v0 and v1 wrappers, then v2 batches, damage at each."""
    data = (
        legacy_entries(0, GZIP, 0, 3)
        + legacy_entries(1, LZ4, 3, 3)
        + legacy_entries(1, NONE, 6, 2)
        + v2_batch(SNAPPY, 8, 3)
        + v2_batch(NONE, 11, 3)
        + v2_batch(ZSTD, 14, 3)
    )
    victims = entries(data)
    for d in range(1, len(victims)):
        check_damaged(tmp_path, data, victims, d, "crc")


# ----------------------------------------------------------------------------- sample segments
SAMPLE_DIRS = [
    *(f"magic{m}-{c}-0" for m in (0, 1) for c in ("none", "gzip", "snappy", "lz4")),
    *(f"magic2-{c}-0" for c in ("none", "gzip", "snappy", "lz4", "zstd")),
    "orders-0",
    "orders-1",
    "upgraded-0",
    "librdkafka-0",
    "snappy-mixed-0",
]


@pytest.mark.parametrize("kind", ["crc", "payload"])
@pytest.mark.parametrize("name", SAMPLE_DIRS)
def test_sample_segments(tmp_path: Path, name: str, kind: str) -> None:
    """The shipped samples (the issue's case: orders-0, lz4/none/lz4, damaged in batch 2)."""
    src = SAMPLES / name / "00000000000000000000.log"
    if not src.exists():
        pytest.skip(f"{src} not present")
    data = src.read_bytes()
    victims = entries(data)
    for d in _positions(len(victims)):
        check_damaged(tmp_path, data, victims, d, kind)


def test_issue_example_orders_0(tmp_path: Path) -> None:
    """The issue's reproduction, spelled out: one byte flipped inside batch 2 of orders-0."""
    src = SAMPLES / "orders-0" / "00000000000000000000.log"
    if not src.exists():
        pytest.skip(f"{src} not present")
    data = bytearray(src.read_bytes())
    second = entries(bytes(data))[1]
    data[second.position + 100] ^= 0xFF
    part = tmp_path / "orders-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(bytes(data))
    for rpb in (65536, 1):
        got = kl.read_table(str(part), ignoreCorruptFiles=True, recordsPerBatch=rpb)
        assert got.column("offset").to_pylist() == list(range(10))
    got = kl.read_table(str(part), mode="PERMISSIVE")
    assert got.column("offset").to_pylist() == [*range(11), *range(20, 30)]


@pytest.mark.spark
def test_spark_keeps_rows_before_the_damage_in_order(spark: Any, tmp_path: Path) -> None:
    """Spark, on the issue's example: ignoreCorruptFiles returns the 10 rows before the damage,
    and PERMISSIVE returns the corrupt batch's row between its neighbours' rows."""
    src = SAMPLES / "orders-0" / "00000000000000000000.log"
    if not src.exists():
        pytest.skip(f"{src} not present")
    data = bytearray(src.read_bytes())
    data[entries(bytes(data))[1].position + 100] ^= 0xFF
    part = tmp_path / "orders-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(bytes(data))
    kafkalog = spark.read.format("kafkalog")
    kept = kafkalog.option("ignoreCorruptFiles", "true").load(str(part)).select("offset")
    assert sorted(r.offset for r in kept.collect()) == list(range(10))
    kafkalog = spark.read.format("kafkalog")
    permissive = kafkalog.option("mode", "PERMISSIVE").load(str(part)).select("offset")
    assert [r.offset for r in permissive.collect()] == [*range(11), *range(20, 30)]


# ----------------------------------------------------------------------------- failOnDataLoss
@pytest.mark.parametrize("codec", [NONE, GZIP, LZ4], ids=CODEC_NAMES.get)
def test_data_loss_keeps_the_rows_before_the_gap(tmp_path: Path, codec: int) -> None:
    """failOnDataLoss raises at a gap between batches only after the batches before it are
    decoded: ignoreCorruptFiles returns their rows (it returned none of the window's), and a
    range that ends before the gap does not fail at all."""
    bases = [0, 5, 10, 25, 30]  # offsets 15..24 are missing
    data = b"".join(v2_batch(codec, b, 5) for b in bases)
    before = [r for e in entries(data)[:3] for r in e.rows]
    part = tmp_path / "gap-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(data)
    with pytest.raises(kl.DataLossError, match=r"offsets 15\.\.24 are missing"):
        kl.read_table(str(part), failOnDataLoss=True)
    for rpb in (65536, 1):
        rows, stats = read(part, failOnDataLoss=True, ignoreCorruptFiles=True, recordsPerBatch=rpb)
        assert plain_rows(rows) == before
        assert stats.corrupt_files == 1
    rows, _ = read(part, failOnDataLoss=True, endingOffsets='{"gap": {"0": 12}}')
    assert plain_rows(rows) == before[:12]
