"""Write large Kafka log segments for benchmarks with kafka-python's record builders.

A handful of distinct batches ("templates") is built with the real builders, then repeated with
fresh offsets until the file reaches the requested size. Rewriting offsets is cheap because they
lie outside the checksums (SEGMENT_SPEC §1.3, §2.1): a v2 batch's ``baseOffset`` precedes the
CRC-32C range, and a legacy entry's offset precedes the CRC-32 range that starts at ``magic``.
For v2 the base/max timestamps are also shifted per repeat so that time keeps increasing across
the file; that changes CRC-covered bytes, so the CRC-32C is recomputed (fast, SSE4.2).
Legacy (magic 1) templates keep their timestamps.

Shapes:

* ``"A"``: 16-byte key, 100-byte value, no headers.
* ``"B"``: 16-byte key, 1 KiB value, 2 headers (magic 2 only; magic 1 cannot carry headers, so
  a magic-1 shape-B segment has the same key and value without headers).

Quick look::

    .venv/bin/python bench/segments.py --shape A --magic 2 --codec lz4 --mib 16
"""

from __future__ import annotations

import argparse
import random
import struct
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
SUPPORTED = {2: ("none", "gzip", "snappy", "lz4", "zstd"), 1: ("none", "gzip")}
SHAPES = ("A", "B")
BASE_TIMESTAMP = 1_700_000_000_000
DEFAULT_BATCH_BYTES = 16_384  # the Java producer's default batch.size
TEMPLATES = 8

_WORDS = (
    b"order customer amount currency status shipped pending paid refunded item sku price "
    b"quantity warehouse region north south east west express standard priority note"
).split()


@dataclass(frozen=True)
class SegmentInfo:
    """What build_segment wrote."""

    path: Path
    size_bytes: int
    batches: int
    records: int
    base_offset: int
    next_offset: int


@dataclass
class _Template:
    data: bytearray
    records: int
    # v2: timestamp span to shift by per repeat; legacy: entry start positions to re-offset.
    ts_span: int = 0
    entry_positions: tuple[int, ...] = ()


def _text(rng: random.Random, size: int) -> bytes:
    """Word soup of exactly ``size`` bytes: realistic-ish compressibility."""
    out = bytearray()
    while len(out) < size:
        out += rng.choice(_WORDS) + b" "
    return bytes(out[:size])


def _record(
    rng: random.Random, shape: str, index: int, with_headers: bool
) -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
    key = b"k%015d" % index  # 16 bytes
    if shape == "A":
        return key, _text(rng, 100), []
    headers = [("trace-id", b"%032x" % rng.getrandbits(128)), ("content-type", b"text/plain")]
    return key, _text(rng, 1024), headers if with_headers else []


def _records_per_batch(shape: str, batch_bytes: int) -> int:
    approx = (16 + 100 + 10) if shape == "A" else (16 + 1024 + 70)
    return max(1, batch_bytes // approx)


def _v2_template(rng: random.Random, shape: str, codec: str, n: int, first_index: int) -> _Template:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=CODEC_IDS[codec],
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for i in range(n):
        key, value, headers = _record(rng, shape, first_index + i, True)
        assert builder.append(i, BASE_TIMESTAMP + i, key, value, headers) is not None
    data = bytearray(builder.build())
    return _Template(data=data, records=n, ts_span=n)


def _v1_template(rng: random.Random, shape: str, codec: str, n: int, first_index: int) -> _Template:
    builder = LegacyRecordBatchBuilder(
        magic=1, compression_type=CODEC_IDS[codec], batch_size=1 << 30
    )
    positions, pos = [], 0
    for i in range(n):
        key, value, _ = _record(rng, shape, first_index + i, False)
        meta = builder.append(i, BASE_TIMESTAMP + i, key, value)
        assert meta is not None
        positions.append(pos)
        pos += meta.size
    data = bytearray(builder.build())
    if codec == "none":
        return _Template(data=data, records=n, entry_positions=tuple(positions))
    # Compressed wrapper: inner offsets are relative 0..n-1. kafka-python leaves the wrapper
    # timestamp at 0; the broker sets it to the max inner timestamp (CreateTime) and fixes the
    # CRC-32, which starts at the magic byte (offset 16).
    struct.pack_into(">q", data, 18, BASE_TIMESTAMP + n - 1)
    struct.pack_into(">I", data, 12, zlib.crc32(memoryview(data)[16:]))
    return _Template(data=data, records=n)


def build_segment(
    path: str | Path,
    shape: str,
    magic: int,
    codec: str,
    total_bytes: int,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    *,
    base_offset: int = 0,
    seed: int = 0,
    templates: int = TEMPLATES,
) -> SegmentInfo:
    """Write a ``.log`` segment of at most ``total_bytes`` made of repeated builder batches.

    ``templates`` distinct batches are built and repeated; with at least as many templates as
    the segment has batches, every record is distinct (slower to build: kafka-python builds
    each one)."""
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, not {shape!r}")
    if magic not in SUPPORTED or codec not in SUPPORTED[magic]:
        raise ValueError(f"magic {magic} with codec {codec!r} is not supported: {SUPPORTED}")
    rng = random.Random(seed)
    n = _records_per_batch(shape, batch_bytes)
    make = _v2_template if magic == 2 else _v1_template
    built: dict[int, _Template] = {}
    keep = templates <= 64  # a few templates are kept and repeated; many are built as needed

    def template(i: int) -> _Template:
        tpl = built.get(i % templates)
        if tpl is None:
            tpl = make(rng, shape, codec, n, (i % templates) * n)
            if keep:
                built[i % templates] = tpl
        return tpl

    first = template(0)
    if magic == 2 and codec != "none":
        got = first.data[22] & 0x07
        if got != CODEC_IDS[codec]:  # kafka-python stores uncompressed if it does not pay off
            raise RuntimeError(f"kafka-python did not compress the {codec} template batch")

    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    offset, written, batches, repeat = base_offset, 0, 0, 0
    pack_q = struct.Struct(">q").pack_into
    with out.open("wb", buffering=1 << 20) as f:
        while True:
            tpl = template(repeat)
            data = tpl.data
            if written + len(data) > total_bytes and batches:
                break
            if magic == 2:
                pack_q(data, 0, offset)  # baseOffset: outside the CRC
                shift = repeat * tpl.ts_span
                pack_q(data, 27, BASE_TIMESTAMP + shift)  # baseTimestamp
                pack_q(data, 35, BASE_TIMESTAMP + shift + tpl.ts_span - 1)  # maxTimestamp
                struct.pack_into(">I", data, 17, crc32c.crc32c(memoryview(data)[21:]))
            elif tpl.entry_positions:
                for i, p in enumerate(tpl.entry_positions):
                    pack_q(data, p, offset + i)  # each message's offset: outside its CRC
            else:
                pack_q(data, 0, offset + tpl.records - 1)  # wrapper offset = last inner offset
            f.write(data)
            written += len(data)
            offset += tpl.records
            batches += 1 if not tpl.entry_positions else tpl.records
            repeat += 1
    return SegmentInfo(
        path=out,
        size_bytes=written,
        batches=batches,
        records=offset - base_offset,
        base_offset=base_offset,
        next_offset=offset,
    )


def main(argv: list[str] | None = None) -> int:
    """Write one segment under bench/out/ and print what was written."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=SHAPES, default="A")
    parser.add_argument("--magic", type=int, choices=sorted(SUPPORTED), default=2)
    parser.add_argument("--codec", choices=list(CODEC_IDS), default="lz4")
    parser.add_argument("--mib", type=float, default=16.0, help="segment size in MiB")
    parser.add_argument("--batch-bytes", type=int, default=DEFAULT_BATCH_BYTES)
    parser.add_argument("--out", type=Path, default=None, help="the .log file to write")
    args = parser.parse_args(argv)
    out = args.out or (
        Path(__file__).resolve().parent
        / "out"
        / f"bench-{args.shape.lower()}-m{args.magic}-{args.codec}-0"
        / f"{0:020d}.log"
    )
    start = time.perf_counter()
    info = build_segment(
        out, args.shape, args.magic, args.codec, int(args.mib * (1 << 20)), args.batch_bytes
    )
    secs = time.perf_counter() - start
    print(
        f"{info.path}: {info.size_bytes} bytes, {info.batches} batches, {info.records} records, "
        f"offsets {info.base_offset}..{info.next_offset - 1}, {secs:.2f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
