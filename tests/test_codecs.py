"""Tests of the codecs layer against independent encoders (kafka-python, lz4, zstandard, zlib).

Nothing here reads ../shared: every payload is produced in the test from an encoder that is not
ours, or built byte by byte from the format specifications where no encoder writes the case.
"""

from __future__ import annotations

import gzip as std_gzip
import io
import random
import struct
import time
import tracemalloc
import types
import zlib

import cramjam
import lz4.frame
import numpy as np
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import codec as kc

from kafkalog_source.codecs import decompress
from kafkalog_source.codecs.xxh32 import lz4_header_checksum, xxh32
from kafkalog_source.errors import DecompressionError, UnsupportedFormatError

BIG = 64 << 20
MIB = 1 << 20


def _records(n: int, seed: int = 7) -> bytes:
    """Return ``n`` bytes that compress like Kafka records (JSON-ish, some entropy)."""
    rnd = random.Random(seed)
    out = bytearray()
    i = 0
    while len(out) < n:
        out += b'{"id":%d,"user":"u%05d","amount":%d.%02d,"ts":%d}' % (
            i,
            rnd.randrange(99999),
            rnd.randrange(1000),
            rnd.randrange(100),
            1700 + i,
        )
        i += 1
    return bytes(out[:n])


SIZES = [0, 1, 1000, 70_000, 300_000]
PAYLOADS = {n: _records(n, seed=n) for n in SIZES}
NOISE = random.Random(3).randbytes(150_000)  # incompressible: exercises stored blocks


def _zstd_no_size(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(write_content_size=False).compress(data)


# --------------------------------------------------------------------------------------- gzip


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("level", [1, 9])
def test_gzip_round_trip(n: int, level: int) -> None:
    data = PAYLOADS[n]
    assert decompress(1, kc.gzip_encode(data, level), 2, BIG) == data
    assert decompress(1, memoryview(kc.gzip_encode(data, level)), 1, BIG) == data


def test_gzip_concatenated_members_and_header_fields() -> None:
    a, b, c = PAYLOADS[1000], PAYLOADS[70_000], NOISE
    buf = io.BytesIO()
    with std_gzip.GzipFile(filename="name.txt", mode="wb", fileobj=buf, mtime=0) as f:
        f.write(b)  # FNAME set
    members = kc.gzip_encode(a) + buf.getvalue() + kc.gzip_encode(b"") + kc.gzip_encode(c)
    assert decompress(1, members, 2, BIG) == a + b + c


def _gzip_member_with_fhcrc(data: bytes, good: bool = True) -> bytes:
    header = b"\x1f\x8b\x08\x02" + b"\x00" * 4 + b"\x00\xff"
    hcrc = zlib.crc32(header) & 0xFFFF
    if not good:
        hcrc ^= 1
    body = zlib.compressobj(6, zlib.DEFLATED, -15)
    deflated = body.compress(data) + body.flush()
    trailer = struct.pack("<II", zlib.crc32(data), len(data))
    return header + struct.pack("<H", hcrc) + deflated + trailer


def test_gzip_header_crc_member() -> None:
    a = PAYLOADS[1000]
    assert decompress(1, _gzip_member_with_fhcrc(a), 2, BIG) == a
    # After a first member, a header with a bad FHCRC is "not a header": Java ignores the rest.
    two = kc.gzip_encode(a) + _gzip_member_with_fhcrc(a, good=False)
    assert decompress(1, two, 2, BIG) == a


@pytest.mark.parametrize(
    "tail",
    [b"garbage", b"\x00", b"\x1f", b"\x1f\x8b", b"\x1f\x8b\x08\x00\x00", b"\x1f\x8b\x09" * 8],
)
def test_gzip_trailing_non_header_bytes_are_ignored(tail: bytes) -> None:
    a = PAYLOADS[70_000]
    assert decompress(1, kc.gzip_encode(a) + tail, 2, BIG) == a


def test_gzip_truncated_second_member_is_an_error() -> None:
    a = PAYLOADS[70_000]
    second = kc.gzip_encode(a)
    with pytest.raises(DecompressionError, match="end marker"):
        decompress(1, kc.gzip_encode(a) + second[:-3], 2, BIG)
    with pytest.raises(DecompressionError, match="member at payload byte"):
        decompress(1, kc.gzip_encode(a) + second[:12] + b"\xff" * 40, 2, BIG)


def test_gzip_bad_crc_and_size_are_errors() -> None:
    good = bytearray(kc.gzip_encode(PAYLOADS[1000]))
    for at in (-8, -1):
        bad = bytearray(good)
        bad[at] ^= 0x01
        with pytest.raises(DecompressionError, match="gzip: .*incorrect"):
            decompress(1, bytes(bad), 2, BIG)


# ------------------------------------------------------------------------------------- snappy


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("xerial", [True, False])
def test_snappy_round_trip(n: int, xerial: bool) -> None:
    data = PAYLOADS[n]
    if n == 0 and not xerial:
        payload = kc.snappy_encode(data, xerial_compatible=False)
        assert decompress(2, payload, 2, BIG) == b""
        return
    payload = kc.snappy_encode(data, xerial_compatible=xerial, xerial_blocksize=8192)
    assert decompress(2, payload, 2, BIG) == data
    assert decompress(2, memoryview(payload), 0, BIG) == data


def test_snappy_xerial_edge_cases() -> None:
    a, b = PAYLOADS[70_000], NOISE
    xa, xb = kc.snappy_encode(a), kc.snappy_encode(b)
    # concatenated xerial streams, as SnappyInputStream reads them
    assert decompress(2, xa + xb + xa, 2, BIG) == a + b + a
    # version / compat little-endian (as some producers wrote them) or nonsense: not checked
    for fields in (struct.pack("<ii", 1, 1), b"\xff" * 8):
        assert decompress(2, xa[:8] + fields + xa[16:], 2, BIG) == a
    # 1 to 3 stray bytes after the last chunk are ignored (hasNextChunk needs 4)
    for k in (1, 2, 3):
        assert decompress(2, xa + b"\x00" * k, 2, BIG) == a
    # a header alone is an empty stream
    assert decompress(2, xa[:16], 2, BIG) == b""
    # a concatenated header whose 8-byte magic is wrong ends the stream, as in Java
    assert decompress(2, xa + xa[:4] + b"XXXX" + xa[8:], 2, BIG) == a


def test_snappy_xerial_bad_lengths() -> None:
    xa = kc.snappy_encode(PAYLOADS[70_000], xerial_blocksize=32768)
    with pytest.raises(DecompressionError, match="negative"):
        decompress(2, xa[:16] + struct.pack(">i", -5) + xa[20:], 2, BIG)
    with pytest.raises(DecompressionError, match=r"chunk length 123456 at payload byte 16 runs"):
        decompress(2, xa[:16] + struct.pack(">i", 123456) + xa[20:], 2, BIG)
    with pytest.raises(DecompressionError, match="runs past the end"):
        decompress(2, xa[:-1], 2, BIG)
    with pytest.raises(DecompressionError, match="cut short"):
        decompress(2, xa + xa[:10], 2, BIG)
    with pytest.raises(DecompressionError, match="empty"):
        decompress(2, xa + b"\x00\x00\x00\x00", 2, BIG)


def test_snappy_short_magic_prefix_is_raw() -> None:
    # fewer than 16 bytes: decoded as one raw block even if it starts with the xerial magic
    raw = kc.snappy_encode(b"x", xerial_compatible=False)
    assert decompress(2, raw, 2, BIG) == b"x"
    with pytest.raises(DecompressionError, match="raw block"):
        decompress(2, b"\x82SNAPPY\x00\x00\x00\x00\x01", 2, BIG)


# ---------------------------------------------------------------------------------------- lz4

_LZ4_VARIANTS = {
    "kafka-python": lambda d: kc.lz4_encode(d),
    "no-size-64k": lambda d: lz4.frame.compress(d, block_linked=False, store_size=False),
    "block-checksum": lambda d: lz4.frame.compress(d, block_linked=False, block_checksum=True),
    "content-checksum": lambda d: lz4.frame.compress(d, block_linked=False, content_checksum=True),
    "all-flags-4m": lambda d: lz4.frame.compress(
        d,
        block_linked=False,
        block_checksum=True,
        content_checksum=True,
        block_size=lz4.frame.BLOCKSIZE_MAX4MB,
    ),
    "256k-hc": lambda d: lz4.frame.compress(
        d, block_linked=False, block_size=lz4.frame.BLOCKSIZE_MAX256KB, compression_level=9
    ),
    "1m": lambda d: lz4.frame.compress(
        d, block_linked=False, block_size=lz4.frame.BLOCKSIZE_MAX1MB
    ),
}


@pytest.mark.parametrize("variant", sorted(_LZ4_VARIANTS))
@pytest.mark.parametrize("n", SIZES)
def test_lz4_round_trip(variant: str, n: int) -> None:
    data = PAYLOADS[n]
    frame = _LZ4_VARIANTS[variant](data)
    for magic in (0, 1, 2):
        assert decompress(3, frame, magic, BIG) == data
    assert decompress(3, memoryview(frame), 2, BIG) == data
    noisy = _LZ4_VARIANTS[variant](NOISE)  # stored (uncompressed) blocks
    assert decompress(3, noisy, 2, BIG) == NOISE


class _Digest:
    def __init__(self, value: int) -> None:
        self.value = value

    def digest(self) -> bytes:
        return struct.pack(">I", self.value)


def test_lz4_v0_broken_header_checksum(monkeypatch: pytest.MonkeyPatch) -> None:
    # kafka-python's encoder for 0.8/0.9 brokers needs the xxhash module; give it ours (checked
    # against liblz4's own checksums in test_xxh32_matches_liblz4).
    monkeypatch.setattr(kc, "xxhash", types.SimpleNamespace(xxh32=lambda b: _Digest(xxh32(b))))
    for n in SIZES:
        data = PAYLOADS[n]
        frame = kc.lz4_encode_old_kafka(data)
        assert frame[6] != lz4_header_checksum(bytes(frame[4:6]))
        assert decompress(3, frame, 0, BIG) == data
        with pytest.raises(DecompressionError, match="descriptor checksum mismatch"):
            decompress(3, frame, 1, BIG)


def test_lz4_v0_frame_as_kafka_writes_it() -> None:
    # SEGMENT_SPEC 2.4: Kafka's v0 frames start 04 22 4D 18 60 40 1A (HC hashed over the magic).
    data = PAYLOADS[70_000]
    frame = bytearray(lz4.frame.compress(data, block_linked=False, store_size=False))
    assert bytes(frame[:7]) == bytes.fromhex("04224d18604082")
    frame[6] = 0x1A
    assert decompress(3, bytes(frame), 0, BIG) == data
    for magic in (1, 2):
        with pytest.raises(DecompressionError, match="stored 0x1a, computed 0x82"):
            decompress(3, bytes(frame), magic, BIG)


def test_lz4_rejects_what_kafka_rejects() -> None:
    data = PAYLOADS[70_000]
    with pytest.raises(DecompressionError, match="dependent blocks are not supported"):
        decompress(3, lz4.frame.compress(data, block_linked=True), 2, BIG)
    good = lz4.frame.compress(data, block_linked=False, store_size=False)

    def patched(flg: int | None = None, bd: int | None = None) -> bytes:
        f = bytearray(good)
        f[4] = f[4] if flg is None else flg
        f[5] = f[5] if bd is None else bd
        return bytes(f)

    cases = [
        (patched(flg=0x61), 0, "dictionary IDs are not supported"),
        (patched(flg=0xA0), 0, "version bits"),
        (patched(flg=0x62), 0, "reserved FLG bit"),
        (patched(bd=0x30), 0, "block maximum size id 3"),
        (patched(bd=0x41), 0, "reserved BD bits"),
        (b"\x02\x21\x4c\x18" + good[4:], 2, "invalid magic"),
        (b"\x50\x2a\x4d\x18" + good[4:], 2, "invalid magic"),
        (good[:6], 2, "too short"),
    ]
    for payload, magic, reason in cases:
        with pytest.raises(DecompressionError, match=reason):
            decompress(3, payload, magic, BIG)


def test_lz4_ignores_what_kafka_ignores() -> None:
    data = PAYLOADS[300_000]
    # content checksum: read but not verified
    f = bytearray(lz4.frame.compress(data, block_linked=False, content_checksum=True))
    f[-1] ^= 0xFF
    assert decompress(3, bytes(f), 2, BIG) == data
    # anything after the end mark, e.g. a second frame
    one = lz4.frame.compress(data, block_linked=False)
    assert decompress(3, one + one + b"junk", 2, BIG) == data
    # content size: skipped (a lie about it is harmless); HC is ignored for magic 0 only
    f = bytearray(lz4.frame.compress(data, block_linked=False, store_size=True))
    assert f[4] & 0x08
    f[6:14] = struct.pack("<Q", 1 << 60)
    assert decompress(3, bytes(f), 0, BIG) == data
    f[14] = lz4_header_checksum(bytes(f[4:14]))
    assert decompress(3, bytes(f), 2, BIG) == data
    f[14] ^= 0x01
    with pytest.raises(DecompressionError, match="descriptor checksum mismatch"):
        decompress(3, bytes(f), 1, BIG)
    assert decompress(3, bytes(f), 0, BIG) == data


def test_lz4_block_checksum_is_verified_and_sizes_are_checked() -> None:
    data = PAYLOADS[300_000]
    f = bytearray(lz4.frame.compress(data, block_linked=False, block_checksum=True))
    (first,) = struct.unpack_from("<I", f, 15)
    f[15 + 4 + (first & 0x7FFFFFFF)] ^= 0x55  # first block's checksum
    with pytest.raises(DecompressionError, match="block checksum mismatch"):
        decompress(3, bytes(f), 2, BIG)
    good = lz4.frame.compress(data, block_linked=False, store_size=False)
    big = good[:7] + struct.pack("<I", 65537) + good[11:]
    with pytest.raises(DecompressionError, match="block size 65537 exceeded max: 65536"):
        decompress(3, big, 2, BIG)
    with pytest.raises(DecompressionError, match="before the end mark"):
        decompress(3, good[:-4], 2, BIG)
    with pytest.raises(DecompressionError, match="stream ended prematurely"):
        decompress(3, good[:-5], 2, BIG)
    corrupt = bytearray(good)
    corrupt[11:40] = b"\xff" * 29
    with pytest.raises(DecompressionError, match="lz4: block data is corrupt"):
        decompress(3, bytes(corrupt), 2, BIG)
    cc = lz4.frame.compress(data, block_linked=False, content_checksum=True)
    with pytest.raises(DecompressionError, match="content checksum missing"):
        decompress(3, cc[:-2], 2, BIG)


def test_lz4_masked_end_mark() -> None:
    # Kafka masks the stored bit before testing for the end mark: 0x80000000 ends the frame.
    data = PAYLOADS[70_000]
    good = lz4.frame.compress(data, block_linked=False, store_size=False)
    assert good[-4:] == b"\x00\x00\x00\x00"
    assert decompress(3, good[:-4] + b"\x00\x00\x00\x80", 2, BIG) == data


def test_xxh32_matches_liblz4() -> None:
    assert xxh32(b"") == 0x02CC5D05
    assert lz4_header_checksum(b"\x60\x40") == 0x82
    assert lz4_header_checksum(bytes.fromhex("04224d186040")) == 0x1A
    rnd = random.Random(5)
    for n in [*range(0, 40), 63, 64, 65, 1000, 4097]:
        data = rnd.randbytes(n)
        frame = lz4.frame.compress(data, content_checksum=True)
        assert struct.unpack("<I", frame[-4:])[0] == xxh32(data)


# --------------------------------------------------------------------------------------- zstd


@pytest.mark.parametrize("n", SIZES)
def test_zstd_round_trip(n: int) -> None:
    data = PAYLOADS[n]
    for payload in (
        kc.zstd_encode(data),
        _zstd_no_size(data),
        zstandard.ZstdCompressor(level=19, write_checksum=True).compress(data),
        zstandard.ZstdCompressor(level=-5).compress(data),
    ):
        assert decompress(4, payload, 2, BIG) == data
        assert decompress(4, memoryview(payload), 2, BIG) == data


def test_zstd_streamed_frame_without_size() -> None:
    data = PAYLOADS[300_000] + NOISE
    out = io.BytesIO()
    with zstandard.ZstdCompressor().stream_writer(out, closefd=False) as w:
        for i in range(0, len(data), 10_000):
            w.write(data[i : i + 10_000])
    assert (
        zstandard.get_frame_parameters(out.getvalue()).content_size == zstandard.CONTENTSIZE_UNKNOWN
    )
    assert decompress(4, out.getvalue(), 2, BIG) == data


def test_zstd_multiple_and_skippable_frames() -> None:
    a, b, c = PAYLOADS[1000], PAYLOADS[300_000], NOISE
    skippable = struct.pack("<II", 0x184D2A53, 5) + b"hello"
    payload = kc.zstd_encode(a) + skippable + _zstd_no_size(b) + skippable + kc.zstd_encode(c)
    assert decompress(4, payload, 2, BIG) == a + b + c
    assert decompress(4, skippable, 2, BIG) == b""
    assert decompress(4, kc.zstd_encode(b"") * 3, 2, BIG) == b""


def test_zstd_rejects_what_kafka_rejects() -> None:
    data = PAYLOADS[70_000]
    good = _zstd_no_size(data)
    with pytest.raises(DecompressionError, match="unknown frame magic"):
        decompress(4, good + b"garbage!", 2, BIG)
    with pytest.raises(DecompressionError, match="too short for a frame"):
        decompress(4, good + b"\x28\xb5", 2, BIG)
    for cut in (1, 3, 5, 6, len(good) // 2, len(good) - 1):
        with pytest.raises(DecompressionError, match="truncated|too short"):
            decompress(4, good[:cut], 2, BIG)
    skippable = struct.pack("<II", 0x184D2A50, 100) + b"x" * 10
    with pytest.raises(DecompressionError, match="skippable frame runs past the end"):
        decompress(4, good + skippable, 2, BIG)
    # a frame naming a dictionary (Kafka configures none): FHD dictionary flag 1, 1-byte ID 7
    fhd = good[4]
    assert fhd & 0x03 == 0 and not fhd & 0x20
    with_dict = good[:4] + bytes([fhd | 0x01, good[5], 7]) + good[6:]
    with pytest.raises(DecompressionError, match="dictionary 7"):
        decompress(4, with_dict, 2, BIG)
    corrupt = bytearray(kc.zstd_encode(data))
    corrupt[len(corrupt) // 2 :] = bytes(len(corrupt) - len(corrupt) // 2)
    with pytest.raises(DecompressionError, match="zstd"):
        decompress(4, bytes(corrupt), 2, BIG)
    checked = bytearray(zstandard.ZstdCompressor(write_checksum=True).compress(data))
    checked[-1] ^= 1
    with pytest.raises(DecompressionError, match="corrupt"):
        decompress(4, bytes(checked), 2, BIG)


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_needs_magic_2(magic: int) -> None:
    with pytest.raises(
        UnsupportedFormatError, match=f"zstd compression is not allowed with magic {magic}"
    ):
        decompress(4, kc.zstd_encode(b"abc"), magic, BIG)


# ----------------------------------------------------------------------------- dispatch & errors


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codecs(codec: int) -> None:
    with pytest.raises(UnsupportedFormatError, match=f"unknown compression codec {codec}"):
        decompress(codec, b"\x00" * 32, 2, BIG)


def _encoders() -> dict[int, object]:
    return {
        1: kc.gzip_encode,
        2: kc.snappy_encode,
        3: kc.lz4_encode,
        4: kc.zstd_encode,
    }


GARBAGE = [
    b"\x01",
    b"\xff" * 7,
    b"\x1f\x8b\x08\x00garbage-garbage",
    b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x05hello",
    b"\x04\x22\x4d\x18\x60\x40\x82\xff\xff\xff\x7f",
    b"\x28\xb5\x2f\xfd\x00\x00\xff\xff\xff",
    random.Random(11).randbytes(3000),
]


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_empty_truncated_and_garbage_raise_decompression_error(codec: int) -> None:
    with pytest.raises(DecompressionError, match="empty|too short"):
        decompress(codec, b"", 2, BIG)
    payload = _encoders()[codec](PAYLOADS[70_000])
    for cut in (1, 2, 5, 9, 15, 21, len(payload) // 3, len(payload) - 9, len(payload) - 1):
        with pytest.raises(DecompressionError):
            decompress(codec, payload[:cut], 2, BIG)
    for junk in GARBAGE:
        with pytest.raises(DecompressionError):
            decompress(codec, junk, 2, BIG)


def test_error_location_is_filled_by_caller() -> None:
    with pytest.raises(DecompressionError) as info:
        decompress(1, b"not gzip at all", 2, BIG)
    err = info.value.located("/x/00000000000000000000.log", 4242, 17)
    assert isinstance(err, DecompressionError)
    assert str(err).startswith("/x/00000000000000000000.log: byte 4242: batch baseOffset 17: gzip:")


# ---------------------------------------------------------------------------- bombs and limits


@pytest.fixture(scope="module")
def bombs() -> dict[str, tuple[int, bytes]]:
    """200 MB of zeros, compressed by each codec. The zeros are calloc'ed (no resident memory)."""
    zeros = np.zeros(200_000_000, dtype=np.uint8)
    chunk = memoryview(zeros)[: 1 << 20]
    g = zlib.compressobj(1, zlib.DEFLATED, 31)
    gz = (
        b"".join(g.compress(chunk) for _ in range(190)) + g.compress(zeros[190 << 20 :]) + g.flush()
    )
    lz = lz4.frame.LZ4FrameCompressor(block_linked=False, block_size=lz4.frame.BLOCKSIZE_MAX64KB)
    lzf = lz.begin() + b"".join(lz.compress(chunk) for _ in range(190))
    lzf += lz.compress(zeros[190 << 20 :]) + lz.flush()
    zo = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    zsf = b"".join(zo.compress(chunk) for _ in range(190)) + zo.compress(zeros[190 << 20 :])
    zsf += zo.flush()
    return {
        "gzip": (1, gz),
        "snappy-xerial": (2, kc.snappy_encode(zeros, xerial_compatible=True)),
        "snappy-raw": (2, bytes(cramjam.snappy.compress_raw(zeros))),
        "lz4": (3, lzf),
        "zstd-no-size": (4, zsf),
        "zstd-sized": (4, zstandard.ZstdCompressor().compress(zeros)),
    }


@pytest.mark.parametrize(
    "name", ["gzip", "snappy-xerial", "snappy-raw", "lz4", "zstd-no-size", "zstd-sized"]
)
def test_bombs_are_stopped_early(bombs: dict[str, tuple[int, bytes]], name: str) -> None:
    codec, payload = bombs[name]
    tracemalloc.start()
    try:
        t0 = time.perf_counter()
        with pytest.raises(DecompressionError, match=r"more than maxBatchBytes=1048576 bytes"):
            decompress(codec, payload, 2, MIB)
        elapsed = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert elapsed < 2.0
    assert peak < 8 * MIB


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_limit_is_exact(codec: int) -> None:
    data = PAYLOADS[300_000]
    payload = _encoders()[codec](data)
    assert decompress(codec, payload, 2, len(data)) == data
    with pytest.raises(DecompressionError, match=f"maxBatchBytes={len(data) - 1} "):
        decompress(codec, payload, 2, len(data) - 1)


def test_limit_applies_across_members_chunks_and_frames() -> None:
    data = PAYLOADS[70_000]
    n = len(data)
    cases = {
        1: kc.gzip_encode(data) * 3,
        2: kc.snappy_encode(data) * 3,
        4: _zstd_no_size(data) * 3,
    }
    for codec, payload in cases.items():
        assert decompress(codec, payload, 2, 3 * n) == data * 3
        with pytest.raises(DecompressionError, match="maxBatchBytes"):
            decompress(codec, payload, 2, 3 * n - 1)


# --------------------------------------------------------------------------------- properties

_SMALL = st.binary(min_size=0, max_size=600) | st.builds(
    lambda b, k: b * k, st.binary(min_size=1, max_size=40), st.integers(1, 60)
)


def _encode(codec: int, variant: int, data: bytes) -> bytes:
    if codec == 1:
        return kc.gzip_encode(data)
    if codec == 2:
        return kc.snappy_encode(data, xerial_compatible=bool(variant % 2), xerial_blocksize=256)
    if codec == 3:
        return lz4.frame.compress(
            data,
            block_linked=False,
            block_checksum=bool(variant % 2),
            content_checksum=bool(variant % 3 == 0),
            store_size=bool(variant % 4 < 2),
        )
    return kc.zstd_encode(data) if variant % 2 else _zstd_no_size(data)


@settings(
    max_examples=150,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    codec=st.integers(1, 4),
    variant=st.integers(0, 11),
    data=_SMALL,
    edits=st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 10_000), st.integers(0, 255)), max_size=4
    ),
    cut=st.integers(0, 10_000),
    magic=st.integers(0, 2),
)
def test_mutated_payloads_only_raise_our_errors(
    codec: int,
    variant: int,
    data: bytes,
    edits: list[tuple[int, int, int]],
    cut: int,
    magic: int,
) -> None:
    payload = bytearray(_encode(codec, variant, data))
    if codec == 4:
        magic = 2
    elif codec == 3 and magic == 0:
        payload[14 if payload[4] & 0x08 else 6] = 0x1A  # a broken v0 HC must not matter
    for kind, at, value in edits:
        if not payload:
            break
        i = at % len(payload)
        if kind == 0:
            payload[i] = value
        elif kind == 1:
            del payload[i]
        else:
            payload.insert(i, value)
    if cut % 3 == 0:
        del payload[cut % (len(payload) + 1) :]
    limit = 4 * len(data) + 64
    try:
        out = decompress(codec, bytes(payload), magic, limit)
    except DecompressionError:
        return
    assert isinstance(out, bytes)
    assert len(out) <= limit
    if not edits and cut % 3:
        assert out == data


@settings(max_examples=50, deadline=None, database=None, derandomize=True)
@given(codec=st.integers(1, 4), junk=st.binary(max_size=200))
def test_arbitrary_bytes_only_raise_our_errors(codec: int, junk: bytes) -> None:
    try:
        out = decompress(codec, junk, 2, 4096)
    except DecompressionError:
        return
    assert isinstance(out, bytes) and len(out) <= 4096


def test_bound_above_limit_but_content_within_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # lz4 and zstd (no content size) bound the output per block; a payload whose bound passes the
    # limit while its content does not must still decode, through the bounded paths.
    import kafkalog_source.codecs.zstd as zstd_module

    streamed = []
    real_stream = zstd_module._stream
    monkeypatch.setattr(zstd_module, "_stream", lambda *a: streamed.append(1) or real_stream(*a))
    data = PAYLOADS[300_000]
    lz = lz4.frame.compress(data, block_linked=False, store_size=False)
    zs = _zstd_no_size(data)
    cases = [(3, lz, data), (4, zs, data), (4, kc.zstd_encode(b"x") + zs, b"x" + data)]
    for codec, payload, expected in cases:
        assert decompress(codec, payload, 2, len(expected)) == expected
        with pytest.raises(DecompressionError, match="maxBatchBytes"):
            decompress(codec, payload, 2, len(expected) - 1)
    assert len(streamed) == 4
    # the reused per-thread decoders still work after a failure
    assert decompress(4, zs, 2, BIG) == data
    assert decompress(3, lz, 2, BIG) == data


def test_threads_use_their_own_decoders() -> None:
    from concurrent.futures import ThreadPoolExecutor

    jobs = [
        (codec, _encoders()[codec](PAYLOADS[n]), PAYLOADS[n])
        for codec in (1, 2, 3, 4)
        for n in (1000, 70_000, 300_000)
    ] * 4
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda job: decompress(job[0], job[1], 2, BIG) == job[2], jobs))
    assert all(results)
