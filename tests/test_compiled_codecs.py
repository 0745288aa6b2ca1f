"""The compiled fast paths against their references: CRC-32C, CRC-32 and the lz4/snappy decoders.

* ``crc32c_spans`` (the CPU's CRC instruction, three streams) must equal the ``crc32c`` package
  on any span, and so must its software fallback (checked in a subprocess, as the choice is made
  at import).
* ``crc32_spans`` (carry-less folding on x86-64 with PCLMULQDQ) must equal ``zlib.crc32`` on any
  span, and so must its table fallback (``KAFKALOG_SOFTWARE_CRC32=1``, in a subprocess).
* The compiled lz4, snappy and zstd paths are a fast path in front of the library path (liblz4's
  frame API, cramjam's snappy, zstandard). Differential fuzzing: for real payloads and thousands of mutations of them,
  whenever the compiled decoder accepts a payload, the library must accept it too and give the
  same bytes. (Declining, ``NEEDS_LIBRARY``, is always allowed: the reader then asks the library.)
* Reading with the fast path on and off gives equal tables on every sample and client fixture
  with lz4 or snappy batches, a batch too large for the arena included.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import zlib
from pathlib import Path

import cramjam
import crc32c
import lz4.frame
import numpy as np
import pyarrow as pa
import pytest
import zstandard
from conftest import CLIENT_WRITTEN, SAMPLES, kp_v2_batch
from kafka.record.default_records import DefaultRecordBatchBuilder

import kafkalog_source as kl
import kafkalog_source.reader.v2 as reader_v2
from kafkalog_source.codecs import decompress
from kafkalog_source.codecs.compiled import (
    ARENA_FULL,
    NEEDS_LIBRARY,
    lz4_frame,
    snappy_payload,
    xxh32_short,
    zstd_payload,
)
from kafkalog_source.codecs.xxh32 import xxh32
from kafkalog_source.errors import KafkaLogError
from kafkalog_source.kernel.compiled import HAVE_LIB_LZ4, HAVE_LIB_ZSTD
from kafkalog_source.kernel.crc32 import HAVE_PCLMUL, crc32_spans
from kafkalog_source.kernel.crc32c import HAVE_HW_CRC32C, crc32c_spans
from kafkalog_source.reader import Tuning

REPO = Path(__file__).resolve().parent.parent
LEGACY_SAMPLES = ["magic0-none-0", "magic1-gzip-0", "magic1-none-0", "upgraded-0"]
ARENA = 1 << 22


def _spans(rng: random.Random, size: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    starts = [rng.randrange(0, size // 2) for _ in range(n)]
    lengths = list(range(40)) + [rng.randrange(0, 6000) for _ in range(n - 40)]
    return np.array(starts, np.int64), np.array(starts, np.int64) + np.array(lengths, np.int64)


def test_crc32c_spans_match_the_package() -> None:
    """Every span length (0..39 and random up to 6000, at odd alignments) gives the same CRC."""
    rng = random.Random(7)
    data = rng.randbytes(1 << 16)
    buf = np.frombuffer(data, np.uint8)
    starts, ends = _spans(rng, len(data), 400)
    out = np.empty(starts.shape[0], np.int64)
    crc32c_spans(buf, starts, ends, out)
    expected = [
        crc32c.crc32c(data[a:b]) for a, b in zip(starts.tolist(), ends.tolist(), strict=True)
    ]
    assert out.tolist() == expected


def test_software_crc32c_fallback_matches(tmp_path: Path) -> None:
    """With KAFKALOG_SOFTWARE_CRC32C=1 (what a host without the instruction gets), the table
    version is used and gives the same CRCs, and a segment still reads and verifies."""
    script = f"""
import random, sys
import numpy as np, crc32c
import kafkalog_source as kl
from kafkalog_source.kernel.crc32 import HAVE_PCLMUL, crc32_spans
from kafkalog_source.kernel.crc32c import HAVE_HW_CRC32C, crc32c_spans
assert not HAVE_HW_CRC32C
rng = random.Random(3)
data = rng.randbytes(20000)
buf = np.frombuffer(data, np.uint8)
starts = np.array([rng.randrange(0, 9000) for _ in range(200)], np.int64)
ends = starts + np.array([rng.randrange(0, 9000) for _ in range(200)], np.int64)
out = np.empty(200, np.int64)
crc32c_spans(buf, starts, ends, out)
assert out.tolist() == [crc32c.crc32c(data[a:b]) for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
print(kl.read_table({str(SAMPLES / "magic2-none-0")!r}).num_rows)
"""
    env = dict(os.environ, KAFKALOG_SOFTWARE_CRC32C="1")
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == kl.read_table(str(SAMPLES / "magic2-none-0")).num_rows


def test_crc32_spans_match_zlib() -> None:
    """CRC-32 of every span length 0..39, each length around the 64-byte folding threshold, and
    random ones up to 6000, at odd alignments, equals zlib's."""
    rng = random.Random(11)
    data = rng.randbytes(1 << 16)
    buf = np.frombuffer(data + bytes(16), np.uint8)
    starts, ends = _spans(rng, len(data), 400)
    near = np.array([rng.randrange(0, 1000) for _ in range(48)], np.int64)
    starts = np.concatenate([starts, near])
    ends = np.concatenate([ends, near + np.arange(56, 104)])
    out = np.empty(starts.shape[0], np.int64)
    crc32_spans(buf, starts, ends, out)
    expected = [zlib.crc32(data[a:b]) for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
    assert out.tolist() == expected


def test_table_crc32_fallback_matches(tmp_path: Path) -> None:
    """With KAFKALOG_SOFTWARE_CRC32=1 (what a host without PCLMULQDQ gets) the table kernel is
    used, gives zlib's CRCs, and v0/v1 samples still read with their CRCs verified."""
    script = f"""
import random, zlib
import numpy as np
import kafkalog_source as kl
from kafkalog_source.kernel.crc32 import HAVE_PCLMUL, crc32_spans
assert not HAVE_PCLMUL
rng = random.Random(5)
data = rng.randbytes(20000)
buf = np.frombuffer(data + bytes(16), np.uint8)
starts = np.array([rng.randrange(0, 9000) for _ in range(200)], np.int64)
ends = starts + np.array([rng.randrange(0, 9000) for _ in range(200)], np.int64)
out = np.empty(200, np.int64)
crc32_spans(buf, starts, ends, out)
assert out.tolist() == [zlib.crc32(data[a:b]) for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
print(sum(kl.read_table(p).num_rows for p in {[str(SAMPLES / n) for n in LEGACY_SAMPLES]!r}))
"""
    env = dict(os.environ, KAFKALOG_SOFTWARE_CRC32="1")
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    expected = sum(kl.read_table(str(SAMPLES / n)).num_rows for n in LEGACY_SAMPLES)
    assert int(done.stdout.split()[-1]) == expected


def test_pclmul_crc32_detected_on_x86_64() -> None:
    """On an x86-64 host with PCLMULQDQ the folding kernel is the one in use."""
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if os.uname().machine != "x86_64" or " pclmulqdq" not in flags:
        pytest.skip("not an x86-64 host with PCLMULQDQ")
    assert HAVE_PCLMUL


def test_hardware_crc32c_detected_on_x86_64_with_sse42() -> None:
    """On this kind of host the instruction path is the one in use (else the test is moot)."""
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if os.uname().machine != "x86_64" or " sse4_2" not in flags:
        pytest.skip("not an x86-64 host with SSE4.2")
    assert HAVE_HW_CRC32C


def test_xxh32_short_matches_reference() -> None:
    rng = random.Random(5)
    for n in range(16):
        data = rng.randbytes(n)
        assert xxh32_short(np.frombuffer(data + bytes(16), np.uint8), 0, n) == xxh32(data)


# ------------------------------------------------------------------ differential decoding
def _compiled(codec: int, payload: bytes) -> bytes | int:
    """Run the compiled decoder on ``payload``: its output, or its status code."""
    src = np.frombuffer(payload + bytes(16), np.uint8)
    dst = np.empty(ARENA + 64, np.uint8)
    if codec == 3:
        end = lz4_frame(src, 0, len(payload), 2, dst, 0, ARENA)
    elif codec == 4:
        end = zstd_payload(src, 0, len(payload), dst, 0, ARENA)
    else:
        end = snappy_payload(src, 0, len(payload), dst, 0, ARENA)
    return int(end) if end < 0 else bytes(dst[:end])


def _library(codec: int, payload: bytes) -> bytes | None:
    try:
        return decompress(codec, payload, 2, ARENA)
    except KafkaLogError:
        return None


def _payloads(rng: random.Random) -> list[tuple[int, bytes]]:
    words = [b"alpha", b"beta", b"gamma", b"delta", b"kafka", b"log", b"{", b"}", b'"id":']
    texts = [
        b"",
        b"x",
        rng.randbytes(300),
        b"a" * 5000,
        b"ab" * 3000,
        b"abcdefghijk" * 900,
        b" ".join(rng.choice(words) for _ in range(20000)),
        rng.randbytes(70000),
    ]
    out: list[tuple[int, bytes]] = []
    for t in texts:
        out.append((3, lz4.frame.compress(t, block_linked=False)))
        out.append((3, lz4.frame.compress(t, block_linked=False, store_size=False)))
        out.append((3, lz4.frame.compress(t, block_linked=False, content_checksum=True)))
        out.append((2, bytes(cramjam.snappy.compress_raw(t))))
        # xerial framing as Java clients write it: header, then int32 BE length + raw block
        chunks = [t[i : i + 32768] for i in range(0, len(t), 32768)] or [b""]
        framed = b"\x82SNAPPY\x00" + (1).to_bytes(4, "big") + (1).to_bytes(4, "big")
        for c in chunks:
            block = bytes(cramjam.snappy.compress_raw(c))
            framed += len(block).to_bytes(4, "big") + block
        out.append((2, framed))
        # zstd as producers write it: one frame with and without its content size, a checksum,
        # two frames back to back, a skippable frame between them (zstd-jni reads all of them)
        z = zstandard.ZstdCompressor(level=3)
        out.append((4, z.compress(t)))
        out.append((4, zstandard.ZstdCompressor(write_content_size=False).compress(t)))
        out.append((4, zstandard.ZstdCompressor(write_checksum=True).compress(t)))
        half = len(t) // 2
        skippable = (0x184D2A50).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"
        out.append((4, z.compress(t[:half]) + skippable + z.compress(t[half:])))
    return out


def test_compiled_decoders_agree_with_the_libraries_on_valid_payloads() -> None:
    for codec, payload in _payloads(random.Random(11)):
        got = _compiled(codec, payload)
        assert isinstance(got, bytes), (codec, got)
        assert got == decompress(codec, payload, 2, ARENA)


def test_compiled_decoders_never_accept_what_the_libraries_reject() -> None:
    """Mutated payloads: accepted by the compiled decoder => same bytes from the library."""
    rng = random.Random(int(os.environ.get("KAFKALOG_FUZZ_SEED", "20241025")))
    base = _payloads(rng)
    iterations = int(os.environ.get("KAFKALOG_FUZZ_ITERATIONS", "3000"))
    accepted = 0
    for _ in range(iterations):
        codec, payload = rng.choice(base)
        data = bytearray(payload)
        for _ in range(rng.randint(1, 4)):
            if not data:
                break
            kind = rng.random()
            at = rng.randrange(len(data))
            if kind < 0.5:
                data[at] ^= 1 << rng.randrange(8)
            elif kind < 0.7:
                data[at] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
            elif kind < 0.85:
                del data[at:]
            else:
                data[at:at] = rng.randbytes(rng.randint(1, 8))
        got = _compiled(codec, bytes(data))
        if isinstance(got, int):
            assert got in (NEEDS_LIBRARY, ARENA_FULL)
            continue
        accepted += 1
        assert _library(codec, bytes(data)) == got, (codec, bytes(data).hex())
    assert accepted > iterations // 20  # the mutations do exercise the accepting paths


# ------------------------------------------------------------------ fast path on and off
def _compressed_sources() -> list[Path]:
    out = [
        SAMPLES / n
        for n in (
            "magic2-lz4-0",
            "magic2-snappy-0",
            "magic2-zstd-0",
            "snappy-mixed-0",
            "librdkafka-0",
            "orders-0",
        )
    ]
    if CLIENT_WRITTEN.is_dir():
        out += sorted(
            p
            for p in CLIENT_WRITTEN.rglob("*.log")
            if any(c in str(p).lower() for c in ("lz4", "snappy", "zstd"))
        )
    return out


@pytest.mark.parametrize("source", _compressed_sources(), ids=lambda p: p.name)
def test_fast_codecs_change_nothing(source: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    options = {"includeMetadata": True, "includeControlRecords": True}
    try:
        slow: pa.Table | str = kl.read_table(
            str(source), tuning=Tuning(fast_codecs=False), **options
        )
    except KafkaLogError as exc:
        slow = f"{type(exc).__name__}: {exc}"
    try:
        fast: pa.Table | str = kl.read_table(
            str(source), tuning=Tuning(fast_codecs=True), **options
        )
    except KafkaLogError as exc:
        fast = f"{type(exc).__name__}: {exc}"
    if isinstance(slow, str):
        assert fast == slow
    else:
        assert isinstance(fast, pa.Table) and fast.equals(slow)


def _big_batches_segment(codec: int, tmp_path: Path) -> tuple[Path, list[bytes]]:
    """A partition directory with one segment of five v2 batches, two of them 3 and 9 MiB."""
    rng = random.Random(codec)
    data = bytearray()
    values: list[bytes] = []
    for i, size in enumerate([100, 3 << 20, 50, 9 << 20, 10]):
        builder = DefaultRecordBatchBuilder(
            magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
            producer_epoch=-1, base_sequence=-1, batch_size=1 << 30,
        )  # fmt: skip
        value = (b"kafkalog %d " % i) * (size // 12) + rng.randbytes(size % 997)
        builder.append(0, timestamp=1_700_000_000_000 + i, key=None, value=value, headers=[])
        batch = bytearray(builder.build())
        batch[0:8] = i.to_bytes(8, "big")
        data += batch
        values.append(value)
    part = tmp_path / "big-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(bytes(data))
    return part, values


@pytest.mark.parametrize("codec", [2, 3, 4])
def test_batch_larger_than_the_arena(codec: int, tmp_path: Path) -> None:
    """A batch that decompresses to more than the arena grows it; small batches around it too."""
    part, values = _big_batches_segment(codec, tmp_path)
    table = kl.read_table(str(part))
    assert table.column("value").to_pylist() == values
    assert table.column("offset").to_pylist() == list(range(5))


@pytest.mark.parametrize("codec", [2, 3, 4])
def test_max_batch_bytes_holds_on_the_fast_path(
    codec: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """maxBatchBytes below a batch's output fails it as the library path does (the compiled
    decoders hand such a batch to the library instead of growing the arena for it)."""
    part, _ = _big_batches_segment(codec, tmp_path)
    errors = []
    for fast in (True, False):
        knobs = Tuning(fast_codecs=fast)
        with pytest.raises(KafkaLogError) as err:
            kl.read_table(str(part), maxBatchBytes="2m", tuning=knobs)
        errors.append(str(err.value))
        assert "maxBatchBytes" in str(err.value)
        dropped = kl.read_table(str(part), maxBatchBytes="2m", mode="DROPMALFORMED", tuning=knobs)
        assert dropped.column("offset").to_pylist() == [0, 2, 4]
    assert errors[0] == errors[1]


def _lz4_frame(block: bytes) -> bytes:
    """A Kafka-subset LZ4 frame (64 KiB blocks, independent, no checksums) of one block."""
    descriptor = bytes((0x60, 0x40))
    hc = (xxh32(descriptor) >> 8) & 0xFF
    size = len(block).to_bytes(4, "little")
    return b"\x04\x22\x4d\x18" + descriptor + bytes((hc,)) + size + block + bytes(4)


@pytest.mark.parametrize(
    "block",
    [
        # a match length whose extra bytes reach into the last 4 input bytes
        b"\x4fabcd\x01\x00\xff\xff\x05\x20xy",
        # literals ending within the last 8 input bytes that are not the last sequence
        b"\x40abcd\x01\x00\x10z",
        # a literal length whose extra bytes reach into the last 15 input bytes
        b"\xf0\x01" + b"q" * 16,
        # a match reaching before the block start (offset past the output)
        b"\x40abcd\x09\x00" + b"\x50" + b"12345" + b"\x00" * 8,
        # offset 0
        b"\x40abcd\x00\x00" + b"\x50" + b"12345" + b"\x00" * 8,
    ],
)
def test_lz4_blocks_liblz4_rejects_are_declined(block: bytes) -> None:
    """liblz4's parsing limits near a block's end: the compiled decoder declines what liblz4
    rejects (or decodes it exactly as liblz4 does)."""
    frame = _lz4_frame(block)
    got = _compiled(3, frame)
    expected = _library(3, frame)
    if isinstance(got, bytes):
        assert got == expected
    else:
        assert got == NEEDS_LIBRARY


def test_copies_match_numpy_at_every_alignment(tmp_path: Path) -> None:
    """The kernels' copy (16-byte moves for short copies, one memcpy for the rest and near an
    array end) at key lengths around each step, through the record kernel: every key read back
    exactly, at every output offset mod 16."""
    rng = random.Random(11)
    lengths = [0, 1, 15, 16, 17, 127, 128, 129, 255, 300, 1000, 4099]
    lengths += list(range(100, 160))
    lengths += [rng.randint(0, 20000) for _ in range(100)]
    keys = [rng.randbytes(n) for n in lengths]
    records = [(1_700_000_000_000 + i, k, rng.randbytes(i % 19), []) for i, k in enumerate(keys)]
    part = tmp_path / "copies-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(kp_v2_batch(records))
    for per_batch in (1, 7, 1000):
        got = kl.read_table(part, recordsPerBatch=per_batch).to_pylist()
        assert [r["key"] for r in got] == keys
        assert [r["value"] for r in got] == [v for _, _, v, _ in records]


def test_large_values_read_back_exactly(tmp_path: Path) -> None:
    """Values and header values of hundreds to thousands of bytes (the memcpy path), at every
    output offset mod 16, across many small output batches."""
    rng = random.Random(5)
    records = []
    for i in range(200):
        value = rng.randbytes(rng.randint(200, 3000))
        hv = rng.randbytes(rng.randint(250, 600))
        records.append((rng.randbytes(i % 23), value, [("h", hv)]))
    batch = kp_v2_batch([(1_700_000_000_000 + i, k, v, h) for i, (k, v, h) in enumerate(records)])
    part = tmp_path / "big-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(batch)
    got = kl.read_table(part, recordsPerBatch=37).to_pylist()
    assert [r["value"] for r in got] == [v for _, v, _ in records]
    assert [r["key"] for r in got] == [k for k, _, _ in records]
    assert [r["headers"][0]["value"] for r in got] == [h[0][1] for _, _, h in records]


# ------------------------------------------------------------------ the off switch
@pytest.mark.parametrize(
    "name", ["magic2-lz4-0", "magic2-snappy-0", "magic2-zstd-0", "snappy-mixed-0"]
)
def test_compiled_codecs_off_switch(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """compiledCodecs=false, or KAFKALOG_LIBRARY_CODECS=1 in the environment (executors), sends
    every lz4/snappy payload through liblz4/cramjam: the compiled decoders are never called, and
    the rows are the same as with them."""
    calls = []
    real = reader_v2.inflate_batches

    def spy(*args: object) -> object:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(reader_v2, "inflate_batches", spy)
    monkeypatch.delenv("KAFKALOG_LIBRARY_CODECS", raising=False)
    source = SAMPLES / name
    options = {"includeMetadata": True, "includeControlRecords": True}
    compiled = kl.read_table(str(source), **options)
    assert calls  # the spy sees the compiled path when it is on
    calls.clear()
    off = kl.read_table(str(source), compiledCodecs=False, **options)
    assert not calls
    assert off.equals(compiled)
    monkeypatch.setenv("KAFKALOG_LIBRARY_CODECS", "1")
    env_off = kl.read_table(str(source), **options)
    assert not calls
    assert env_off.equals(compiled)


def test_the_reference_decoders_are_bound() -> None:
    """liblz4's block decoder and libzstd's stream decoder are reached through the symbols the
    lz4 and zstandard packages export (kernel/csrc/kl_libs.h). A release of either that stops
    exporting them would leave the compiled path slower (lz4: kafkalog's own block decoder) or
    off (zstd: one Python call per batch) without failing a read: this test fails instead, so
    that the change is seen (then bind another of the package's modules, or build against the
    system's libraries)."""
    import lz4 as lz4_pkg

    assert HAVE_LIB_LZ4, (
        f"lz4 {lz4_pkg.__version__}: lz4.block._block exports no LZ4_decompress_safe"
    )
    assert HAVE_LIB_ZSTD, (
        f"zstandard {zstandard.__version__}: zstandard._cffi exports no ZSTD_decompressStream"
    )


def test_zstd_payloads_that_need_more_room_say_so() -> None:
    """An output larger than the space left is ARENA_FULL (the reader grows the arena or hands
    the batch to the library path), never a partial result."""
    data = zstandard.ZstdCompressor(write_content_size=False).compress(b"kafkalog " * 10000)
    src = np.frombuffer(data + bytes(16), np.uint8)
    dst = np.empty(200_000, np.uint8)
    assert zstd_payload(src, 0, len(data), dst, 0, 50_000) == ARENA_FULL
    assert zstd_payload(src, 0, len(data), dst, 0, 90_000) == 90_000
    assert bytes(dst[:90_000]) == b"kafkalog " * 10000
    assert zstd_payload(src, 0, len(data) - 3, dst, 0, 150_000) == NEEDS_LIBRARY  # cut short
    assert zstd_payload(src, 0, len(data), dst, 10, 150_000) == 90_010


def test_a_zstd_window_over_the_limit_goes_to_the_library_path(tmp_path: Path) -> None:
    """libzstd's one-pass shortcut would decode a frame whose content size is stored even when
    its window is over the 128 MiB + 1 limit zstd-jni keeps; the fast path walks the frame
    headers first and leaves such a payload to the library path, so both paths give the same
    error (found in review)."""
    recs = b"\x28\x00\x00\x00\x02k\x28" + b"v" * 20 + b"\x00"
    frame = (
        (0xFD2FB528).to_bytes(4, "little")
        + bytes([0x80, 20 << 3])  # a window descriptor of 1 GiB, a 4-byte content size
        + len(recs).to_bytes(4, "little")
        + ((len(recs) << 3) | 1).to_bytes(4, "little")[:3]  # one raw block, the last
        + recs
    )
    src = np.frombuffer(frame + bytes(16), np.uint8)
    dst = np.empty(1 << 16, np.uint8)
    assert zstd_payload(src, 0, len(frame), dst, 0, 60_000) == NEEDS_LIBRARY
    with pytest.raises(KafkaLogError, match="1073741824-byte window"):
        decompress(4, frame, 2, 1 << 20)


def test_zstd_contexts_of_ended_threads_are_freed() -> None:
    """Each decoding thread's zstd context is freed when the thread ends (the reader starts
    threads per read; found in review: 40 short-lived threads had grown RSS by 84 MiB): after
    30 threads that each decoded a payload have ended, no more contexts are alive than before
    them."""
    import threading

    from kafkalog_source.kernel.compiled import native

    payload = zstandard.ZstdCompressor(write_content_size=False).compress(b"kafkalog " * 50000)
    src = np.frombuffer(payload + bytes(16), np.uint8)

    def decode() -> None:
        dst = np.empty(1 << 20, np.uint8)
        assert zstd_payload(src, 0, len(payload), dst, 0, (1 << 20) - 16) == 450000

    before = native.zstd_contexts()
    for _ in range(30):
        t = threading.Thread(target=decode)
        t.start()
        t.join()
    import time

    deadline = time.monotonic() + 5  # AddressSanitizer runs a thread's key destructors late
    while native.zstd_contexts() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert native.zstd_contexts() == before
    decode()  # this thread's context stays for its next payload
    assert native.zstd_contexts() <= before + 1


def test_bad_kernel_arguments_are_refused_not_used() -> None:
    """The entry points check what the C code would index with: a source without padding after
    a batch's records, a CRC span before the source, a span past the end, an Avro layout outside
    its buffers or a program writing a column of another kind are errors, never memory outside
    an array (found in review)."""
    from kafkalog_source.arrow.schema import projection_for
    from kafkalog_source.arrow.sink import ColumnSink
    from kafkalog_source.kernel import avro as A
    from kafkalog_source.kernel.compiled import native

    sink = ColumnSink(projection_for(["offset", "key", "value"]))
    sink.reserve(16)
    src = np.zeros(100, np.uint8)
    bp = np.zeros((1, 9), np.int64)
    bp[0, :3] = (61, 99, 1)  # ends 1 byte before the source does: no room for the padding
    with pytest.raises(IndexError, match="padding"):
        native.decode_v2(src, bp, 3, False, 10, 1 << 20, *sink.v2_args())
    bp[0, :3] = (10, 20, 1)  # verify: the CRC would start 30 bytes before the source
    with pytest.raises(IndexError):
        native.decode_v2(src, bp, 3, True, 10, 1 << 20, *sink.v2_args())
    with pytest.raises(IndexError):
        native.xxh32_short(src, (1 << 63) - 4, 8)

    def avro(lay: np.ndarray, kinds: list[int], prog: np.ndarray, top_fill: list[int]) -> object:
        n = 1
        return native.decode_avro(
            np.zeros(32, np.uint8), np.zeros(16, np.uint8), np.zeros(n, np.int64),
            np.ones(n, np.int64), np.zeros(n, np.int64), 0, prog, np.zeros(1, np.int64),
            np.zeros(39, np.int64), np.zeros(39, np.int64), np.array(top_fill, np.int64),
            np.array(kinds, np.int64), lay, np.zeros(len(kinds), np.int64),
            np.zeros(len(kinds), np.int64), np.zeros(1, np.uint8), np.zeros(1, np.int64),
            np.zeros(1, np.float64), np.zeros(1, np.uint8), np.zeros((2, 4), np.int64),
            *(np.zeros(n, np.int64) for _ in range(4)),
        )  # fmt: skip

    big = np.zeros((1, A.LAYOUT_WIDTH), np.int64)
    big[0, A.L_CAP] = 1000  # 1,000 entries in 1-entry buffers
    prog = np.array([[A.OP_INT, 0, A.CV_INT, 0, 0, 0, 0], [A.OP_END, -1, 0, 0, 0, 0, 0]])
    with pytest.raises(ValueError, match="layout"):
        avro(big, [A.K_FIXED], prog, [0])
    ok = np.zeros((1, A.LAYOUT_WIDTH), np.int64)
    ok[0, A.L_CAP] = 1
    with pytest.raises(ValueError, match="top_fill"):
        avro(ok, [A.K_FIXED], prog, [5])
    with pytest.raises(ValueError, match="cannot hold"):
        avro(ok, [A.K_STRUCT], prog, [0])  # an integer into a column without integer entries
