"""Bounded fuzzing of the decoder, plus hand-made hostile inputs.

The fuzz test builds a handful of valid segments with kafka-python's builders (magic 0, 1 and 2;
none, gzip, snappy, lz4 and zstd; headers; a control batch), applies random mutations with a fixed
seed (bit flips, byte overwrites, truncations, inserted and deleted bytes, int32 fields set to huge,
negative or boundary values, mutations of a v2 batch's records *before* compression, and CRC
repair so that mutated batches get past checksum verification) and decodes each mutant with
``verifyChecksums`` true and false (and, on some iterations, in PERMISSIVE / DROPMALFORMED mode with
every column). The only exceptions allowed are subclasses of
:class:`kafkalog_source.errors.KafkaLogError`; anything else (IndexError, struct.error, a foreign
ValueError, MemoryError, ...) is a bug. Each decode must also finish within
``PER_DECODE_SECONDS``; a hang inside compiled code cannot be interrupted, so a
``faulthandler`` watchdog dumps every thread's stack and exits the run if the campaign overruns.
A segfault kills the test process; the input being decoded is always in
``<pytest tmp>/fuzz/current.log``, and pytest's faulthandler prints the stack.

Environment variables (opt-in longer campaigns):

* ``KAFKALOG_FUZZ_ITERATIONS``: number of mutated inputs (default 3000, each decoded 2 or 3 times;
  the default run takes well under a minute on one core).
* ``KAFKALOG_FUZZ_SEED``: the random seed (default 20241025), to explore other mutation sequences.

For example ``KAFKALOG_FUZZ_ITERATIONS=200000 python -m pytest tests/test_fuzz.py -k campaign``.
Failing inputs are written next to ``current.log`` as ``fail-<n>.log``.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import random
import struct
import time
import traceback
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crc32c
import pyarrow as pa
import pytest
from conftest import zigzag_varint
from kafka import codec as kcodec
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

import kafkalog_source as kl
from kafkalog_source.errors import (
    DecompressionError,
    KafkaLogError,
    RecordStructureError,
)
from kafkalog_source.options import parse_options
from kafkalog_source.planning.splits import SegmentRange
from kafkalog_source.reader import RangeReader, output_projection
from kafkalog_source.stats import ReadStats

ITERATIONS = int(os.environ.get("KAFKALOG_FUZZ_ITERATIONS", "3000"))
SEED = int(os.environ.get("KAFKALOG_FUZZ_SEED", "20241025"))
PER_DECODE_SECONDS = 5.0
MiB = 1 << 20

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
COMPRESS: dict[int, Callable[[bytes], bytes]] = {
    GZIP: kcodec.gzip_encode,
    SNAPPY: kcodec.snappy_encode,
    LZ4: kcodec.lz4_encode,
    ZSTD: kcodec.zstd_encode,
}


# ---------------------------------------------------------------------------------- encoding


def raw_record(
    key: bytes | None = b"k",
    value: bytes | None = b"v",
    headers: tuple[tuple[bytes, bytes | None], ...] = (),
    offset_delta: int = 0,
    length: bytes | None = None,
    header_count: bytes | None = None,
) -> bytes:
    """One v2 record; ``length`` / ``header_count`` replace the encoded varints when given."""
    body = b"\x00" + zigzag_varint(0) + zigzag_varint(offset_delta)
    body += zigzag_varint(-1) if key is None else zigzag_varint(len(key)) + key
    body += zigzag_varint(-1) if value is None else zigzag_varint(len(value)) + value
    body += zigzag_varint(len(headers)) if header_count is None else header_count
    for k, v in headers:
        body += zigzag_varint(len(k)) + k
        body += zigzag_varint(-1) if v is None else zigzag_varint(len(v)) + v
    return (zigzag_varint(len(body)) if length is None else length) + body


def raw_v2(
    base: int,
    records: bytes,
    count: int,
    attrs: int = 0,
    last_offset_delta: int | None = None,
    producer_id: int = -1,
) -> bytes:
    """A v2 batch around already-encoded (possibly compressed) records, with a valid CRC."""
    lod = max(count - 1, 0) if last_offset_delta is None else last_offset_delta
    header = struct.pack(
        ">qiibIhiqqqhii",
        base,
        49 + len(records),
        0,
        2,
        0,
        attrs,
        lod,
        1_700_000_000_000,
        1_700_000_000_000,
        producer_id,
        0 if producer_id >= 0 else -1,
        -1,
        count,
    )
    return fix_v2_crc(bytearray(header + records))


def fix_v2_crc(buf: bytearray, at: int = 0) -> bytes:
    size = struct.unpack_from(">i", buf, at + 8)[0]
    struct.pack_into(">I", buf, at + 17, crc32c.crc32c(bytes(buf[at + 21 : at + 12 + size])))
    return bytes(buf)


def fix_legacy_crc(buf: bytearray, at: int = 0) -> bytes:
    size = struct.unpack_from(">i", buf, at + 8)[0]
    struct.pack_into(">I", buf, at + 12, zlib.crc32(bytes(buf[at + 16 : at + 12 + size])))
    return bytes(buf)


def legacy_message(
    magic: int, offset: int, key: bytes | None, value: bytes | None, attrs: int = 0
) -> bytes:
    body = struct.pack(">bb", magic, attrs) + (struct.pack(">q", 1_000) if magic == 1 else b"")
    body += struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    body += struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def _value(i: int) -> bytes:
    return b"value-%d " % i * (3 + i % 5)


def kp_v2(codec: int, base: int, n: int, headers: bool = True) -> bytes:
    """A v2 batch built by kafka-python, stored at ``base`` (baseOffset is outside the CRC)."""
    builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 30)
    for i in range(n):
        hs = [("h-é", b"x" * i), ("null", None)] if headers and i % 2 else []
        key = None if i % 3 == 0 else b"key-%d" % i
        assert builder.append(i, 1_700_000_000_000 + i, key, _value(i), hs) is not None
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, base)
    return bytes(buf)


def kp_legacy(magic: int, codec: int, base: int, n: int) -> bytes:
    """Legacy messages built by kafka-python, in the form a broker stores them (§2.2)."""
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 30)
    for i in range(n):
        offset = i if (codec and magic == 1) else base + i
        key = None if i % 2 else b"key-%d" % i
        assert builder.append(offset, 1_600_000_000_000 + i, key, _value(i)) is not None
    buf = bytearray(builder.build())
    if codec:
        struct.pack_into(">q", buf, 0, base + n - 1)
        if magic == 1:
            struct.pack_into(">q", buf, 18, 1_600_000_000_000 + n - 1)
            return fix_legacy_crc(buf)
    return bytes(buf)


def control_batch(base: int) -> bytes:
    record = raw_record(key=b"\x00\x00\x00\x01", value=b"\x00\x00\x00\x00\x00\x05")
    return raw_v2(base, record, 1, attrs=0x30, producer_id=7)


def seed_segments() -> dict[str, bytes]:
    return {
        "v2-none-headers": kp_v2(NONE, 0, 4) + kp_v2(NONE, 4, 3) + control_batch(7),
        "v2-gzip": kp_v2(GZIP, 10, 6) + kp_v2(NONE, 16, 1),
        "v2-snappy": kp_v2(SNAPPY, 0, 6),
        "v2-lz4": kp_v2(LZ4, 100, 5) + kp_v2(LZ4, 105, 5),
        "v2-zstd": kp_v2(ZSTD, 0, 6, headers=False) + kp_v2(ZSTD, 6, 3),
        "v1-none-gzip": kp_legacy(1, NONE, 0, 2) + kp_legacy(1, GZIP, 2, 4),
        "v0-snappy-lz4": kp_legacy(0, SNAPPY, 0, 3) + kp_legacy(0, LZ4, 3, 3),
        "v1-lz4-v2-none": kp_legacy(1, LZ4, 0, 3) + kp_v2(NONE, 3, 3),
        "v0-none-gzip": kp_legacy(0, NONE, 5, 3) + kp_legacy(0, GZIP, 8, 3),
    }


def batch_starts(data: bytes) -> list[int]:
    """Positions of the top-level batches of a well-formed segment."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        out.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    return out


# ---------------------------------------------------------------------------------- decoding
def decode(path: Path, stats: ReadStats | None = None, **options: Any) -> pa.Table:
    opts = parse_options(options)
    projection = output_projection(opts)
    rng = SegmentRange(
        str(path), 0, os.path.getsize(path), at_file_end=True, topic="t", partition=0
    )
    batches = list(RangeReader(rng, opts, projection, stats))
    return pa.Table.from_batches(batches, schema=projection.schema)


# ---------------------------------------------------------------------------------- mutations
INTERESTING_INT32 = [0, 1, -1, 7, 13, 14, 22, 48, 49, 60, 61, 255, 1 << 16, 1 << 30]
INTERESTING_INT32 += [2**31 - 1, -(2**31), 2**31 - 13, -13]


@dataclass
class Mutator:
    rng: random.Random
    seeds: dict[str, bytes]

    def mutate(self, data: bytes, starts: list[int]) -> tuple[bytes, list[str]]:
        done = []
        for _ in range(self.rng.choice([1, 1, 1, 2, 3])):
            op = self.rng.choice(self.OPS)
            data, what = op(self, bytearray(data), starts)
            done.append(what)
        if data and self.rng.random() < 0.4:
            data = self._repair_crcs(bytearray(data))
            done.append("crc-repair")
        return bytes(data), done

    def _pos(self, buf: bytearray) -> int:
        return self.rng.randrange(len(buf)) if buf else 0

    def bit_flip(self, buf: bytearray, starts: list[int]) -> tuple[bytearray, str]:
        if not buf:
            return buf, "noop"
        p = self._pos(buf)
        bit = self.rng.randrange(8)
        buf[p] ^= 1 << bit
        return buf, f"flip {p}.{bit}"

    def overwrite(self, buf: bytearray, starts: list[int]) -> tuple[bytearray, str]:
        p = self._pos(buf)
        n = self.rng.randint(1, 8)
        fill = self.rng.choice([b"\x00", b"\xff", b"\x80", bytes([self.rng.randrange(256)])])
        buf[p : p + n] = fill * n
        return buf, f"overwrite {p}+{n}={fill.hex()}"

    def truncate(self, buf: bytearray, starts: list[int]) -> tuple[bytearray, str]:
        n = self.rng.randrange(len(buf) + 1)
        return buf[:n], f"truncate {n}"

    def insert(self, buf: bytearray, starts: list[int]) -> tuple[bytearray, str]:
        p = self.rng.randrange(len(buf) + 1)
        n = self.rng.randint(1, 16)
        buf[p:p] = self.rng.randbytes(n)
        return buf, f"insert {p}+{n}"

    def delete(self, buf: bytearray, starts: list[int]) -> tuple[bytearray, str]:
        p = self._pos(buf)
        n = self.rng.randint(1, 16)
        del buf[p : p + n]
        return buf, f"delete {p}+{n}"

    def int32_field(self, buf: bytearray, starts: list[int]) -> tuple[bytearray, str]:
        """Set a length/count field (or any 4 bytes) to a boundary value."""
        value = self.rng.choice(INTERESTING_INT32 + [len(buf), len(buf) - 12])
        start = self.rng.choice(starts) if starts else 0
        # size; v2 lastOffsetDelta and recordsCount; legacy key length (v0) / (v1)
        rel = self.rng.choice([8, 8, 23, 57, 18, 26, self.rng.randrange(64)])
        p = start + rel
        if p + 4 > len(buf):
            return buf, "noop"
        struct.pack_into(">i", buf, p, max(min(value, 2**31 - 1), -(2**31)))
        return buf, f"int32 {p}={value}"

    def varint_field(self, buf: bytearray, starts: list[int]) -> tuple[bytearray, str]:
        """Replace the first record's length varint of a v2 batch with a hostile varint."""
        v2 = [s for s in starts if s + 62 <= len(buf) and buf[s + 16] == 2]
        if not v2:
            return buf, "noop"
        s = self.rng.choice(v2)
        hostile = self.rng.choice(
            [
                zigzag_varint(2**31 - 1),
                zigzag_varint(-(2**31)),
                b"\xff" * 9 + b"\x01",
                b"\x80" * 11,
                zigzag_varint(2**40),
            ]
        )
        buf[s + 61 : s + 62] = hostile
        return buf, f"varint {s + 61}={hostile.hex()}"

    def splice(self, buf: bytearray, starts: list[int]) -> tuple[bytearray, str]:
        """Append a batch taken from another seed segment (mixed formats, offset disorder)."""
        name = self.rng.choice(sorted(self.seeds))
        other = self.seeds[name]
        s = self.rng.choice(batch_starts(other))
        size = 12 + struct.unpack_from(">i", other, s + 8)[0]
        return buf + other[s : s + size], f"splice {name}@{s}"

    def inside_compression(self, buf: bytearray, starts: list[int]) -> tuple[bytearray, str]:
        """Corrupt the records of a compressed v2 batch, then recompress and fix size and CRC."""
        cands = []
        for s in starts:
            if s + 61 <= len(buf) and buf[s + 16] == 2 and buf[s + 22] & 7 in COMPRESS:
                size = 12 + struct.unpack_from(">i", buf, s + 8)[0]
                if s + size <= len(buf):
                    cands.append((s, size))
        if not cands:
            return buf, "noop"
        s, size = self.rng.choice(cands)
        codec = buf[s + 22] & 7
        try:
            plain = bytearray(
                {
                    GZIP: kcodec.gzip_decode,
                    SNAPPY: kcodec.snappy_decode,
                    LZ4: kcodec.lz4_decode,
                    ZSTD: kcodec.zstd_decode,
                }[codec](bytes(buf[s + 61 : s + size]))
            )
        except Exception:
            return buf, "noop"
        inner, what = self.rng.choice([Mutator.bit_flip, Mutator.overwrite, Mutator.delete])(
            self, plain, [0]
        )
        payload = COMPRESS[codec](bytes(inner))
        batch = bytearray(buf[s : s + 61] + payload)
        struct.pack_into(">i", batch, 8, len(batch) - 12)
        fixed = fix_v2_crc(batch)
        return buf[:s] + fixed + buf[s + size :], f"inside-{codec} @{s}: {what}"

    def _repair_crcs(self, buf: bytearray) -> bytearray:
        pos = 0
        while pos + 17 <= len(buf):
            size = struct.unpack_from(">i", buf, pos + 8)[0]
            if size < 14 or pos + 12 + size > len(buf):
                break
            if buf[pos + 16] == 2 and size >= 49:
                fix_v2_crc(buf, pos)
            elif buf[pos + 16] in (0, 1):
                fix_legacy_crc(buf, pos)
            pos += 12 + size
        return buf

    OPS = [
        bit_flip,
        bit_flip,
        overwrite,
        truncate,
        insert,
        delete,
        int32_field,
        int32_field,
        varint_field,
        splice,
        inside_compression,
        inside_compression,
    ]


@dataclass
class Failure:
    iteration: int
    seed: str
    mutations: list[str]
    options: dict[str, Any]
    error: str
    where: str
    saved: Path


def _decode_checked(path: Path, options: dict[str, Any]) -> tuple[str | None, str, float]:
    """Decode; return (None or the unexpected exception, its innermost frame, seconds)."""
    t0 = time.perf_counter()
    try:
        decode(path, ReadStats(), **options)
    except KafkaLogError:
        pass
    except BaseException as exc:  # noqa: BLE001 - anything that is not ours is the finding
        if isinstance(exc, KeyboardInterrupt):
            raise
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno} in {frame.name}"
        return f"{type(exc).__name__}: {exc}"[:300], where, time.perf_counter() - t0
    return None, "", time.perf_counter() - t0


def run_campaign(iterations: int, seed: int, workdir: Path) -> tuple[list[Failure], list[str]]:
    rng = random.Random(seed)
    seeds = seed_segments()
    names = sorted(seeds)
    mutator = Mutator(rng, seeds)
    current = workdir / "current.log"
    failures: list[Failure] = []
    slow: list[str] = []
    seen: set[tuple[str, str]] = set()
    for i in range(iterations):
        name = rng.choice(names)
        data, mutations = mutator.mutate(seeds[name], batch_starts(seeds[name]))
        current.write_bytes(data)
        runs: list[dict[str, Any]] = [{"verifyChecksums": True}, {"verifyChecksums": False}]
        if i % 3 == 0:
            runs.append(
                {
                    "mode": rng.choice(["PERMISSIVE", "DROPMALFORMED"]),
                    "verifyChecksums": rng.random() < 0.5,
                    "includeMetadata": True,
                    "includeControlRecords": True,
                    "maxBatchBytes": rng.choice(["64k", "1m", "64m"]),
                }
            )
        for options in runs:
            error, where, seconds = _decode_checked(current, options)
            if seconds > PER_DECODE_SECONDS:
                slow.append(f"iteration {i} ({name}, {mutations}, {options}): {seconds:.1f}s")
            if error is not None and (error.split(":")[0], where) not in seen:
                seen.add((error.split(":")[0], where))
                saved = workdir / f"fail-{len(failures)}.log"
                saved.write_bytes(data)
                failures.append(Failure(i, name, mutations, options, error, where, saved))
    return failures, slow


# ---------------------------------------------------------------------------------- tests
def test_seed_segments_are_valid(tmp_path: Path) -> None:
    """The unmutated seeds decode cleanly, so mutants start from real data."""
    for name, data in seed_segments().items():
        path = tmp_path / f"{name}.log"
        path.write_bytes(data)
        stats = ReadStats()
        table = decode(path, stats, includeControlRecords=True)
        assert table.num_rows >= 6, name
        assert stats.tail_bytes == 0, name


def test_fuzz_campaign(tmp_path: Path) -> None:
    workdir = tmp_path / "fuzz"
    workdir.mkdir()
    budget = max(600.0, ITERATIONS * 0.5)
    faulthandler.dump_traceback_later(budget, exit=True)
    try:
        failures, slow = run_campaign(ITERATIONS, SEED, workdir)
    finally:
        faulthandler.cancel_dump_traceback_later()
    report = "\n".join(
        f"- iteration {f.iteration} seed={f.seed} mutations={f.mutations} options={f.options}: "
        f"{f.error} at {f.where} (input saved to {f.saved})"
        for f in failures
    )
    assert not failures, f"exceptions that are not KafkaLogError (seed {SEED}):\n{report}"
    assert not slow, f"decodes slower than {PER_DECODE_SECONDS}s:\n" + "\n".join(slow)


# ---------------------------------------------------------------------------------- hostile
GOOD = raw_v2(0, raw_record() + raw_record(offset_delta=1), 2) + raw_v2(2, raw_record(), 1)


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    return path


def _timed(fn: Callable[[], Any], limit: float = PER_DECODE_SECONDS) -> Any:
    t0 = time.perf_counter()
    out = fn()
    assert time.perf_counter() - t0 < limit
    return out


def _raises_quickly(path: Path, cls: type[Exception], **options: Any) -> Exception:
    t0 = time.perf_counter()
    with pytest.raises(cls) as info:
        decode(path, **options)
    assert time.perf_counter() - t0 < PER_DECODE_SECONDS
    err = info.value
    assert getattr(err, "path", None) == str(path)
    return err


def _body(body: bytes) -> bytes:
    """A record: its length varint, then ``body`` as given."""
    return zigzag_varint(len(body)) + body


HOSTILE_V2 = {
    "count-2^31-1": raw_v2(3, raw_record(), 2**31 - 1),
    "count-2^31-1-gzip": raw_v2(3, kcodec.gzip_encode(raw_record()), 2**31 - 1, attrs=GZIP),
    "count-negative": raw_v2(3, raw_record(), -1),
    "record-length-2^31-1": raw_v2(3, raw_record(length=zigzag_varint(2**31 - 1)), 1),
    "record-length-negative": raw_v2(3, raw_record(length=zigzag_varint(-7)), 1),
    "record-length-10-byte-varint": raw_v2(
        3, raw_record(length=b"\x81" + b"\x80" * 8 + b"\x00"), 1
    ),
    # attributes, timestampDelta, offsetDelta, then a 10-byte keyLength; value "v"; no headers
    "key-length-10-byte-varint": raw_v2(
        3, _body(b"\x00\x00\x00" + b"\xff" * 9 + b"\x01\x02v\x00"), 1
    ),
    # an 11-byte timestampDelta (a varlong may take at most 10 bytes)
    "timestamp-11-byte-varlong": raw_v2(
        3, _body(b"\x00" + b"\x80" * 10 + b"\x00\x00\x01\x01\x00"), 1
    ),
    "header-count-2^31-1": raw_v2(3, raw_record(header_count=zigzag_varint(2**31 - 1)), 1),
    "header-count-negative": raw_v2(3, raw_record(header_count=zigzag_varint(-2)), 1),
    "header-key-length-2^31-1": raw_v2(
        3, raw_record(header_count=zigzag_varint(1) + zigzag_varint(2**31 - 1)), 1
    ),
    "varint-runs-off-batch": raw_v2(3, b"\x80\x80\x80", 1),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_V2))
@pytest.mark.parametrize("verify", [True, False], ids=["verify", "noverify"])
def test_hostile_v2_batch_raises_record_structure_error(
    name: str, verify: bool, tmp_path: Path
) -> None:
    path = _write(tmp_path, GOOD + HOSTILE_V2[name])
    err = _raises_quickly(path, RecordStructureError, verifyChecksums=verify)
    assert err.position >= len(GOOD)  # at or inside the bad batch
    assert err.base_offset == 3


def test_size_field_larger_than_file_is_a_truncated_tail(tmp_path: Path) -> None:
    tail = struct.pack(">qiib", 3, 1 << 20, 0, 2) + b"x" * 100
    path = _write(tmp_path, GOOD + tail)
    stats = ReadStats()
    table = _timed(lambda: decode(path, stats))
    assert table.column("offset").to_pylist() == [0, 1, 2]
    assert stats.truncated_tails == 1 and stats.zero_tails == 0
    assert stats.tail_bytes == len(tail)


def test_size_field_above_max_batch_bytes_is_damage_not_a_tail(tmp_path: Path) -> None:
    """A final batch declaring more than maxBatchBytes is not an append in progress."""
    tail = struct.pack(">qiib", 3, 1 << 30, 0, 2) + b"x" * 100
    path = _write(tmp_path, GOOD + tail)
    with pytest.raises(RecordStructureError, match="exceeds maxBatchBytes") as info:
        _timed(lambda: decode(path))
    assert info.value.position == len(GOOD)
    stats = ReadStats()
    table = _timed(lambda: decode(path, stats, mode="DROPMALFORMED"))
    assert table.column("offset").to_pylist() == [0, 1, 2]
    assert stats.truncated_tails == 0 and stats.malformed_batches == 1
    assert stats.malformed_bytes == len(tail)


def test_one_mib_zero_tail_ends_quietly(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD + bytes(MiB))
    stats = ReadStats()
    table = _timed(lambda: decode(path, stats))
    assert table.column("offset").to_pylist() == [0, 1, 2]
    assert stats.zero_tails == 1 and stats.truncated_tails == 0
    assert stats.tail_bytes == MiB


def test_thirteen_byte_garbage_tail_ends_quietly(tmp_path: Path) -> None:
    """Fewer than 17 bytes cannot hold a batch header: Kafka's reader stops there (§0)."""
    path = _write(tmp_path, GOOD + bytes(range(0xF0, 0xFD)))
    stats = ReadStats()
    table = _timed(lambda: decode(path, stats))
    assert table.column("offset").to_pylist() == [0, 1, 2]
    assert stats.truncated_tails == 1
    assert stats.tail_bytes == 13


def _gzip_bomb(total: int) -> bytes:
    """``total`` zero bytes as concatenated gzip members (legal: §3.1), about 1000:1."""
    member = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = member.compress(bytes(8 * MiB)) + member.flush()
    return chunk * (total // (8 * MiB))


def test_gzip_bomb_in_v2_batch_raises_decompression_error(tmp_path: Path) -> None:
    bomb = _gzip_bomb(512 * MiB)
    assert len(bomb) < MiB
    path = _write(tmp_path, GOOD + raw_v2(3, bomb, 1, attrs=GZIP))
    for verify in (True, False):
        err = _raises_quickly(path, DecompressionError, maxBatchBytes="1m", verifyChecksums=verify)
        assert err.position == len(GOOD)


def test_gzip_bomb_in_legacy_wrapper_raises_decompression_error(tmp_path: Path) -> None:
    bomb = _gzip_bomb(256 * MiB)
    wrapper = legacy_message(1, 10, None, bomb, attrs=GZIP)
    path = _write(tmp_path, kp_legacy(1, NONE, 0, 2) + wrapper)
    _raises_quickly(path, DecompressionError, maxBatchBytes="1m")


def test_nested_compressed_legacy_wrapper_is_rejected(tmp_path: Path) -> None:
    """SEGMENT_SPEC §2.2: "An inner message must not itself be compressed" (Kafka raises
    InvalidRecordException "Inner messages must not be compressed"; kafka-python asserts)."""
    inner = legacy_message(1, 0, b"a", b"1") + legacy_message(1, 1, b"b", b"2")
    middle = legacy_message(1, 1, None, kcodec.gzip_encode(inner), attrs=GZIP)
    outer = legacy_message(1, 11, None, kcodec.gzip_encode(middle), attrs=GZIP)
    path = _write(tmp_path, outer)
    _raises_quickly(path, RecordStructureError)


@pytest.mark.parametrize(
    ("tail", "says"),
    [
        (struct.pack(">qiib", 3, 1 << 20, 0, 2) + b"x" * 100, "incomplete final batch at byte"),
        (bytes(4096), "zero-filled tail from byte"),
    ],
    ids=["truncated", "zeros"],
)
def test_tails_are_logged_as_warnings(
    tmp_path: Path, tail: bytes, says: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A file tail that is not decoded is said, not only counted: one line for the file, and
    the Arrow API's summary line."""
    path = _write(tmp_path, GOOD + tail)
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        table = kl.read_table(path)
    assert table.num_rows == 3
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(says in line and str(path) in line for line in lines), lines
    assert any(f"({len(tail)} bytes not decoded)" in line for line in lines), lines
