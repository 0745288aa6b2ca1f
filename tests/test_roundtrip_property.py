"""Property tests: records encoded by kafka-python's builders decode back exactly.

Random records (null, empty and large keys and values up to ~100 KB; 0-10 headers with null or
empty values and non-ASCII UTF-8 keys; timestamps before and after 1970) are encoded with
kafka-python's ``DefaultRecordBatchBuilder`` (magic 2, every codec) and
``LegacyRecordBatchBuilder`` (magic 0 and 1, none/gzip/snappy/lz4), turned into the form a broker
stores, concatenated into a segment file and decoded with :class:`RangeReader`.

A producer's batch is not byte-for-byte what a broker stores. What this module does to each built
batch, following SEGMENT_SPEC:

* v2 (§1.1, §1.3, §1.5): write the absolute ``baseOffset`` and a ``partitionLeaderEpoch`` (both
  outside the CRC). For LogAppendTime, set attribute bit 3 and ``maxTimestamp`` to the broker's
  append time and recompute the CRC-32C, exactly what the broker does; the record deltas keep
  the producer's create times, and every record must report the append time.
* v0/v1 uncompressed (§2.1): each message is appended with its absolute offset. For v1
  LogAppendTime, each message gets the append time, attribute bit 3 and a new CRC-32.
* v1 compressed (§2.2): inner offsets are appended as the producer writes them, relative 0..n-1;
  the wrapper (kafka-python writes offset 0, timestamp 0) gets the absolute offset of its last
  inner message and the maximum inner timestamp (CreateTime), or the append time plus attribute
  bit 3 (LogAppendTime) with a new CRC-32. The inner messages keep CreateTime and the producer's
  timestamps, as after the broker's in-place path; the reader must apply the wrapper's rule.
* v0 compressed (§2.2): inner offsets are absolute (the broker always rebuilds v0 sets); the
  wrapper's offset is the last inner offset.

kafka-python's v2 builder stores a batch uncompressed when compressing does not make it smaller,
so codec coverage is pinned by :func:`test_every_codec_roundtrips_compressed`, whose records
always compress.
"""

from __future__ import annotations

import os
import random
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crc32c
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafkalog_source.options import parse_options
from kafkalog_source.planning.splits import SegmentRange
from kafkalog_source.reader import RangeReader, output_projection
from kafkalog_source.stats import ReadStats

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
V2_CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
LEGACY_CODECS = [NONE, GZIP, SNAPPY, LZ4]  # zstd is v2-only (SEGMENT_SPEC §2.3)
HUGE_BATCH = 2**31 - 1


def budget(examples: int) -> settings:
    """Hypothesis settings: ``examples`` cases (about 150 in all), no per-example deadline."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# ---------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class Rec:
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True)
class Batch:
    magic: int
    codec: int
    records: tuple[Rec, ...]
    gap: int  # offsets skipped before this batch (compaction leaves gaps)
    log_append_time: int | None  # broker append time, or None for CreateTime


def _big(size: int, seed: int, compressible: bool) -> bytes:
    if compressible:
        return (b"kafka-log-segment-%d " % seed) * (size // 20 + 1)
    return random.Random(seed).randbytes(size)


def payloads() -> st.SearchStrategy[bytes | None]:
    return st.one_of(
        st.none(),
        st.just(b""),
        st.binary(max_size=48),
        st.builds(_big, st.integers(1, 100_000), st.integers(0, 2**32), st.booleans()).map(
            lambda b: b[:100_000]
        ),
    )


timestamps = st.one_of(
    st.integers(-(2**45), 2**45),  # about year 855 to 3085
    st.sampled_from([-1, 0, 1, -86_400_000, -2_208_988_800_000, 1_700_000_000_000]),
)
header_keys = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", "trace-id", "clé", "ключ", "キー", "🔑", "a\x00b"]),
)
headers = st.lists(
    st.tuples(header_keys, st.one_of(st.none(), st.just(b""), st.binary(max_size=24))),
    max_size=10,
).map(tuple)


def records(with_headers: bool) -> st.SearchStrategy[tuple[Rec, ...]]:
    rec = st.builds(
        Rec,
        key=payloads(),
        value=payloads(),
        timestamp=timestamps,
        headers=headers if with_headers else st.just(()),
    )
    return st.lists(rec, min_size=1, max_size=6).map(tuple)


@st.composite
def batches(draw: Any, magic: int) -> Batch:
    codec = draw(st.sampled_from(V2_CODECS if magic == 2 else LEGACY_CODECS))
    append = draw(st.one_of(st.none(), timestamps)) if magic > 0 else None
    return Batch(magic, codec, draw(records(magic == 2)), draw(st.integers(0, 3)), append)


@st.composite
def mixed_segments(draw: Any) -> list[Batch]:
    """Batches whose magic never goes down, as in a partition whose format was upgraded."""
    magics = sorted(draw(st.lists(st.sampled_from([0, 1, 2]), min_size=2, max_size=5)))
    return [draw(batches(m)) for m in magics]


# ---------------------------------------------------------------------------------- encoding
def _legacy_crc(buf: bytearray, pos: int) -> None:
    """Recompute the CRC-32 of the legacy message at ``pos`` (over magic..end)."""
    size = struct.unpack_from(">i", buf, pos + 8)[0]
    struct.pack_into(">I", buf, pos + 12, zlib.crc32(buf[pos + 16 : pos + 12 + size]))


def build_v2(batch: Batch, base: int, leader_epoch: int) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=batch.codec,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=HUGE_BATCH,
    )
    for delta, r in enumerate(batch.records):
        meta = builder.append(delta, r.timestamp, r.key, r.value, list(r.headers))
        assert meta is not None
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, base)  # baseOffset: outside the CRC
    struct.pack_into(">i", buf, 12, leader_epoch)  # partitionLeaderEpoch: outside the CRC
    if batch.log_append_time is not None:
        attrs = struct.unpack_from(">h", buf, 21)[0] | 0x08
        struct.pack_into(">h", buf, 21, attrs)
        struct.pack_into(">q", buf, 35, batch.log_append_time)
        struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def build_legacy(batch: Batch, base: int) -> bytes:
    magic, codec, recs = batch.magic, batch.codec, batch.records
    builder = LegacyRecordBatchBuilder(magic, codec, HUGE_BATCH)
    for i, r in enumerate(recs):
        offset = i if (codec and magic == 1) else base + i
        meta = builder.append(offset, r.timestamp, r.key, r.value)
        assert meta is not None
    buf = bytearray(builder.build())
    append = batch.log_append_time
    if codec == NONE:
        if magic == 1 and append is not None:
            pos = 0
            while pos < len(buf):
                buf[pos + 17] |= 0x08
                struct.pack_into(">q", buf, pos + 18, append)
                _legacy_crc(buf, pos)
                pos += 12 + struct.unpack_from(">i", buf, pos + 8)[0]
        return bytes(buf)
    struct.pack_into(">q", buf, 0, base + len(recs) - 1)  # the wrapper holds the last offset
    if magic == 1:
        if append is not None:
            buf[17] |= 0x08
        wrapper_ts = append if append is not None else max(r.timestamp for r in recs)
        struct.pack_into(">q", buf, 18, wrapper_ts)
        _legacy_crc(buf, 0)
    return bytes(buf)


Row = tuple[int, int | None, int, bytes | None, bytes | None, list[tuple[str, bytes | None]] | None]


def build_segment(segment: list[Batch], first_offset: int) -> tuple[bytes, list[Row]]:
    """The stored bytes of ``segment`` and the rows a reader must return for them."""
    out = bytearray()
    rows: list[Row] = []
    offset = first_offset
    for n, batch in enumerate(segment):
        offset += batch.gap
        if batch.magic == 2:
            out += build_v2(batch, offset, leader_epoch=n)
        else:
            out += build_legacy(batch, offset)
        for i, r in enumerate(batch.records):
            if batch.magic == 0:
                ts, ts_type = None, -1
            elif batch.log_append_time is not None:
                ts, ts_type = batch.log_append_time, 1
            else:
                ts, ts_type = r.timestamp, 0
            rows.append((offset + i, ts, ts_type, r.key, r.value, list(r.headers) or None))
        offset += len(batch.records)
    return bytes(out), rows


# ---------------------------------------------------------------------------------- decoding
def decode(path: Path, **options: Any) -> tuple[list[Row], ReadStats]:
    opts = parse_options(options)
    projection = output_projection(opts)
    stats = ReadStats()
    rng = SegmentRange(
        str(path), 0, os.path.getsize(path), at_file_end=True, topic="t", partition=0
    )
    table = pa.Table.from_batches(
        list(RangeReader(rng, opts, projection, stats)), schema=projection.schema
    )
    ms = table.column("timestamp").cast(pa.int64()).to_pylist()
    rows: list[Row] = []
    for r, us in zip(table.to_pylist(), ms, strict=True):
        hs = r["headers"]
        rows.append(
            (
                r["offset"],
                None if us is None else us // 1000,
                r["timestampType"],
                r["key"],
                r["value"],
                None if hs is None else [(h["key"], h["value"]) for h in hs],
            )
        )
    return rows, stats


def assert_roundtrip(directory: Path, segment: list[Batch], first_offset: int) -> None:
    data, expected = build_segment(segment, first_offset)
    path = directory / f"{first_offset:020d}.log"
    path.write_bytes(data)
    for verify in (True, False):
        got, stats = decode(path, verifyChecksums=verify)
        assert stats.tail_bytes == 0 and stats.malformed_batches == 0
        assert len(got) == len(expected)
        for g, w in zip(got, expected, strict=True):
            assert g == w, f"row at offset {w[0]} differs"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("roundtrip")


# ---------------------------------------------------------------------------------- tests
@budget(60)
@given(segment=st.lists(batches(2), min_size=1, max_size=4), first=st.integers(0, 2**40))
def test_v2_roundtrip(workdir: Path, segment: list[Batch], first: int) -> None:
    assert_roundtrip(workdir, segment, first)


@budget(60)
@given(
    magic=st.sampled_from([0, 1]),
    data=st.data(),
    first=st.integers(0, 2**40),
)
def test_legacy_roundtrip(workdir: Path, magic: int, data: Any, first: int) -> None:
    segment = data.draw(st.lists(batches(magic), min_size=1, max_size=4))
    assert_roundtrip(workdir, segment, first)


@budget(30)
@given(segment=mixed_segments(), first=st.integers(0, 2**40))
def test_mixed_magic_roundtrip(workdir: Path, segment: list[Batch], first: int) -> None:
    assert_roundtrip(workdir, segment, first)


CODEC_CASES = [(2, c) for c in V2_CODECS] + [(m, c) for m in (0, 1) for c in LEGACY_CODECS]


@pytest.mark.parametrize(
    ("magic", "codec"), CODEC_CASES, ids=[f"v{m}-{CODEC_NAMES[c]}" for m, c in CODEC_CASES]
)
@pytest.mark.parametrize("log_append", [False, True], ids=["CreateTime", "LogAppendTime"])
def test_every_codec_roundtrips_compressed(
    workdir: Path, magic: int, codec: int, log_append: bool
) -> None:
    recs = tuple(
        Rec(
            key=None if i % 3 == 0 else b"key-%d" % i,
            value=_big(1000 * (i + 1), i, compressible=True) if i != 2 else None,
            timestamp=-1_000_000 + 7_000 * i,
            headers=(("héader", b"v"), ("nul", None)) if magic == 2 and i % 2 else (),
        )
        for i in range(5)
    )
    append = 1_234_567_890_123 if log_append and magic > 0 else None
    segment = [Batch(magic, codec, recs, 0, append), Batch(magic, codec, recs[:2], 2, append)]
    data, _ = build_segment(segment, 40)
    attrs = data[22] if magic == 2 else data[17]  # v2: low byte of the int16 at 21
    assert attrs & 0x07 == codec, "the builder did not compress; the case tests nothing"
    assert_roundtrip(workdir, segment, 40)
