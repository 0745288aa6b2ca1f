"""Reader options whose behaviour is not covered by the fixture suites."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import SAMPLES, kp_v2_batch

import kafkalog_source as kl
from kafkalog_source.format.batch import BatchHeader
from kafkalog_source.framing.walk import walk_headers


def _batches(path: Path) -> list[BatchHeader]:
    fd = os.open(path, os.O_RDONLY)
    try:
        return [
            h
            for h in walk_headers(fd, str(path), 0, path.stat().st_size, full=True)
            if isinstance(h, BatchHeader)
        ]
    finally:
        os.close(fd)


@pytest.fixture
def segment_missing_a_batch(tmp_path: Path) -> Path:
    """A copy of a sample segment with its second batch cut out (offsets go missing)."""
    src = SAMPLES / "magic2-none-0" / "00000000000000000000.log"
    data = src.read_bytes()
    b = _batches(src)
    assert len(b) >= 3
    part = tmp_path / "lossy-0"
    part.mkdir()
    out = part / "00000000000000000000.log"
    out.write_bytes(data[: b[1].position] + data[b[2].position :])
    return out


def test_fail_on_data_loss_names_the_gap(segment_missing_a_batch: Path) -> None:
    """failOnDataLoss=true fails on a gap between batches, naming file, position and offsets."""
    with pytest.raises(kl.DataLossError) as err:
        kl.read_table(str(segment_missing_a_batch), failOnDataLoss=True)
    msg = str(err.value)
    assert str(segment_missing_a_batch) in msg and "missing" in msg and "byte " in msg


def test_data_loss_is_allowed_by_default(segment_missing_a_batch: Path) -> None:
    """The default (false) reads archives with gaps, as compacted topics have them."""
    full = kl.read_table(str(SAMPLES / "magic2-none-0"))
    lossy = kl.read_table(str(segment_missing_a_batch))
    assert 0 < lossy.num_rows < full.num_rows


@pytest.mark.parametrize("name", ["magic2-none-0", "compacted-0", "multi-segment-0", "upgraded-0"])
def test_no_false_data_loss(name: str) -> None:
    """Gaps inside batches (compaction) and control batches are not data loss."""
    assert kl.read_table(str(SAMPLES / name), failOnDataLoss=True).num_rows > 0


def test_permissive_turns_a_corrupt_batch_into_one_row(tmp_path: Path) -> None:
    """PERMISSIVE: the bad batch is one row with its raw bytes and the reason in a header."""
    src = SAMPLES / "magic2-none-0" / "00000000000000000000.log"
    data = bytearray(src.read_bytes())
    b = _batches(src)
    data[b[1].position + 70] ^= 0xFF  # inside the second batch's records: CRC mismatch
    part = tmp_path / "bad-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(bytes(data))
    good = kl.read_table(str(src))
    stats = kl.ReadStats()
    got = kl.read_table(str(part), mode="PERMISSIVE", stats=stats)
    assert stats.malformed_batches == 1
    bad_rows = [
        r for r in got.to_pylist() if r["headers"] and r["headers"][0]["key"] == "kafkalog.error"
    ]
    assert len(bad_rows) == 1
    row = bad_rows[0]
    assert row["offset"] == b[1].base_offset and row["key"] is None and row["timestamp"] is None
    assert row["value"] == bytes(data[b[1].position : b[1].end])
    assert "crc" in row["headers"][0]["value"].decode()
    assert (
        got.num_rows == good.num_rows - b[1].records_count + 1 if b[1].records_count > 0 else True
    )
    dropped = kl.read_table(str(part), mode="DROPMALFORMED")
    assert dropped.num_rows == got.num_rows - 1
    with pytest.raises(kl.ChecksumError):
        kl.read_table(str(part))


@pytest.mark.parametrize("name", ["magic2-lz4-0", "magic1-gzip-0", "magic2-none-0"])
def test_metadata_rows_stay_aligned_across_flushes(name: str, tmp_path: Path) -> None:
    """Thousands of batches (several header scans, several flushes) keep every row's batch
    metadata right: each copy of a segment maps to the same batch positions as the original."""
    src = (SAMPLES / name / "00000000000000000000.log").read_bytes()
    copies = 1000  # > 4096 batches: more than one header table per range
    part = tmp_path / "copies-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(src * copies)
    options = {"includeMetadata": True, "includeControlRecords": True, "recordsPerBatch": 1000}
    once = kl.read_table(str(SAMPLES / name), **options)
    many = kl.read_table(str(part), **options)
    assert many.num_rows == once.num_rows * copies
    positions = [p % len(src) for p in many.column("batchPosition").to_pylist()]
    assert positions == once.column("batchPosition").to_pylist() * copies
    assert many.column("codec").to_pylist() == once.column("codec").to_pylist() * copies


@pytest.mark.parametrize(
    "name", ["magic2-none-0", "magic2-lz4-0", "magic2-snappy-0", "magic1-none-0", "magic1-gzip-0"]
)
def test_records_per_batch_bounds_every_batch(name: str, tmp_path: Path) -> None:
    """recordsPerBatch cuts at the first Kafka batch (or wrapper) boundary at or after the
    limit: no batch exceeds it by more than one Kafka batch's records, and nothing is lost or
    reordered, even when a single kernel call covers thousands of batches."""
    src = (SAMPLES / name / "00000000000000000000.log").read_bytes()
    part = tmp_path / "many-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(src * 200)
    largest = max(
        (h.records_count if h.magic == 2 else 1)
        for h in _batches(SAMPLES / name / "00000000000000000000.log")
    )
    whole = kl.read_table(str(part), recordsPerBatch=1 << 30)
    for limit in (1, 7, 100):
        batches = list(kl.iter_batches(str(part), recordsPerBatch=limit))
        # a legacy compressed wrapper is one entry but many rows: allow its inner count
        slack = largest if "magic2" in name else 64
        assert max(b.num_rows for b in batches) <= limit - 1 + slack
        assert len(batches) >= whole.num_rows // (limit + slack)
        assert pa.Table.from_batches(batches).equals(whole)


def test_fail_on_data_loss_across_a_split_boundary(segment_missing_a_batch: Path) -> None:
    """A gap exactly at a split boundary: the range before it looks at the next batch's header,
    so the read fails whichever way the file is split; without the boundary there, it passes."""
    from kafkalog_source.options import parse_options
    from kafkalog_source.planning.splits import SegmentRange
    from kafkalog_source.reader import output_projection, read_range

    b = _batches(segment_missing_a_batch)
    size = segment_missing_a_batch.stat().st_size
    opts = parse_options({"failOnDataLoss": True})
    proj = output_projection(opts)
    path = str(segment_missing_a_batch)
    cut = b[1].position  # where the missing batch was: the gap is between b[0] and b[1]
    before = SegmentRange(path, 0, cut, at_file_end=False)
    after = SegmentRange(path, cut, size)
    assert list(read_range(after, opts, proj))  # alone, the later range has no gap inside
    with pytest.raises(kl.DataLossError) as err:
        list(read_range(before, opts, proj))
    assert f"byte {cut}" in str(err.value) and "next split" in str(err.value)
    # a boundary elsewhere: the range after the gap holds it, and finds it itself
    later = b[2].position
    assert list(read_range(SegmentRange(path, later, size), opts, proj))
    with pytest.raises(kl.DataLossError):
        list(read_range(SegmentRange(path, 0, later, at_file_end=False), opts, proj))
    # the default reads both ranges
    plain = parse_options({})
    rows = sum(
        x.num_rows
        for r in (SegmentRange(path, 0, cut, at_file_end=False), after)
        for x in read_range(r, plain, proj)
    )
    assert rows == kl.read_table(path).num_rows


def test_fail_on_data_loss_finds_a_missing_segment_file(tmp_path: Path) -> None:
    """A segment file missing from an archived partition is a gap between the files around it:
    the next file's name (its base offset) is past the last offset read."""
    import shutil

    part = tmp_path / "multi-segment-0"
    shutil.copytree(SAMPLES / "multi-segment-0", part)
    assert kl.read_table(str(part), failOnDataLoss=True).num_rows > 0
    for ext in ("log", "index", "timeindex"):
        (part / f"00000000000000001048.{ext}").unlink()
    with pytest.raises(kl.DataLossError) as err:
        kl.read_table(str(part), failOnDataLoss=True)
    msg = str(err.value)
    assert "00000000000000001000.log" in msg and "00000000000000001096.log" in msg
    assert "missing" in msg
    # the default reads what is there
    assert kl.read_table(str(part)).num_rows > 0


def _sized_segment(tmp_path: Path, magic: int, value_sizes: list[int]) -> Path:
    """One batch (v2) or message (v0/v1) per value size, at offsets 0, 1, 2, ..."""
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    out = bytearray()
    for offset, size in enumerate(value_sizes):
        if magic == 2:
            data = kp_v2_batch([(1_700_000_000_000, None, b"v" * size, [])], base_offset=offset)
        else:
            legacy = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 30)
            legacy.append(offset, 1_700_000_000_000 if magic else None, None, b"v" * size)
            data = legacy.build()
        out += data
    part = tmp_path / f"sized{magic}-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(bytes(out))
    return part


def _entry_size(part: Path, position: int) -> int:
    """Size of the batch or message at ``position`` of the segment: 12 + its length field."""
    data = (part / "00000000000000000000.log").read_bytes()
    return 12 + int.from_bytes(data[position + 8 : position + 12], "big")


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_max_batch_bytes_bounds_every_batch(tmp_path: Path, magic: int) -> None:
    """A batch (or message) above maxBatchBytes is refused, however small the window it is in."""
    part = _sized_segment(tmp_path, magic, [100, 300_000, 100, 200])
    with pytest.raises(kl.RecordStructureError, match=r"exceeds maxBatchBytes=262144") as info:
        kl.read_table(part, maxBatchBytes="256k")
    assert info.value.base_offset == 1 and info.value.path.endswith("00000000000000000000.log")
    assert info.value.position == _entry_size(part, 0)  # the second batch/message starts there
    stats = kl.ReadStats()
    kept = kl.read_table(part, maxBatchBytes="256k", mode="DROPMALFORMED", stats=stats)
    assert kept.column("offset").to_pylist() == [0, 2, 3]
    assert stats.malformed_batches == 1 and stats.malformed_bytes > 300_000
    rows = kl.read_table(part, maxBatchBytes="256k", mode="PERMISSIVE").to_pylist()
    assert [r["offset"] for r in rows] == [0, 1, 2, 3]
    assert rows[1]["value"] == b"" and rows[1]["headers"][0]["key"] == "kafkalog.error"
    assert kl.read_table(part).num_rows == 4  # the default (64 MiB) takes them all


def test_max_batch_bytes_past_the_read_window(tmp_path: Path) -> None:
    """A batch larger than the reader's 8 MiB window takes the same mode path."""
    part = _sized_segment(tmp_path, 2, [10, 9 << 20, 10])
    with pytest.raises(kl.RecordStructureError, match="exceeds maxBatchBytes=8388608") as info:
        kl.read_table(part, maxBatchBytes="8m")
    assert info.value.base_offset == 1 and info.value.position == _entry_size(part, 0)
    assert info.value.path.endswith("00000000000000000000.log")
    kept = kl.read_table(part, maxBatchBytes="8m", mode="DROPMALFORMED")
    assert kept.column("offset").to_pylist() == [0, 2]
    assert kl.read_table(part, maxBatchBytes="10m").column("offset").to_pylist() == [0, 1, 2]
