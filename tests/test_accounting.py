"""Every byte accounted for, tails that are damage, offset -1, and the warnings cap (issue 10).

* Rule (item 3): after any read, ``ReadStats`` counts every byte of every range read as decoded
  or as skipped under a named reason: ``bytes_decoded + sum(skipped_bytes_by_reason()) ==
  bytes_total``, and ``bytes_total`` is the size of the files for a read without bounds. Checked
  over ``sample_segments/``, the shared fixtures (skipped when absent) and damaged mutations of
  them, in every mode.
* Item 4: a truncated batch is a quiet stop only in the last segment of a partition, and only
  when nothing says it is damage (a declared size above maxBatchBytes, a magic byte that is not
  0/1/2, a CRC that matches a shorter length). Anything else goes through ``mode``, and
  ``kafkalog verify`` exits 1.
* Item 12: warnings are logged for the first few problems of a file, then counted.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import BROKER_WRITTEN, ROOT, kp_v2_batch, require_shared, run_cli

import kafkalog_source as kl
from kafkalog_source.errors import CorruptDataError, RecordStructureError
from kafkalog_source.format.batch import BatchHeader
from kafkalog_source.framing.walk import walk_headers
from kafkalog_source.options import parse_options
from kafkalog_source.planning.splits import SegmentRange
from kafkalog_source.reader import RangeReader, output_projection
from kafkalog_source.stats import MAX_LOGGED_PER_FILE, SKIP_REASONS, ReadStats

SAMPLES = ROOT / "sample_segments"
# the partition directories (payloads/ is a log directory of its own, payloads_src/ .proto files)
SAMPLE_DIRS = sorted(p for p in SAMPLES.iterdir() if p.is_dir() and any(p.glob("*.log")))
CARVED = BROKER_WRITTEN / "kafkajs" / "carved"
V2_REQUEST = CARVED / "v2_request.test-topic-9f825c3f60bb0b4db583-0.records.bin"
MODES = ("FAILFAST", "DROPMALFORMED", "PERMISSIVE")


def headers(path: Path) -> list[BatchHeader]:
    """The complete batches of a file (framing only)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return [
            h
            for h in walk_headers(fd, str(path), 0, os.fstat(fd).st_size)
            if not hasattr(h, "kind")
        ]
    finally:
        os.close(fd)


def assert_accounted(stats: ReadStats, total: int | None = None) -> None:
    """The accounting rule, with the numbers in the message when it fails."""
    by_reason = stats.skipped_bytes_by_reason()
    assert set(by_reason) == set(SKIP_REASONS)
    assert all(v >= 0 for v in by_reason.values()), by_reason
    assert stats.bytes_decoded + sum(by_reason.values()) == stats.bytes_total, (
        stats.bytes_decoded,
        by_reason,
        stats.bytes_total,
    )
    assert stats.unaccounted_bytes == 0
    if total is not None:
        assert stats.bytes_total == total


def read(path: Path, **options: Any) -> tuple[int, ReadStats]:
    """Rows and stats of a read; a raised CorruptDataError is returned as rows -1."""
    stats = ReadStats()
    try:
        return kl.read_table(str(path), stats=stats, **options).num_rows, stats
    except CorruptDataError:
        return -1, stats


def tree_size(path: Path) -> int:
    files = [path] if path.is_file() else sorted(path.glob("*.log"))
    return sum(f.stat().st_size for f in files)


# ------------------------------------------------------------------------------ item 3


def test_offset_minus_one_records_are_rows(tmp_path: Path) -> None:
    """KafkaJS's produce-request message set (every offset -1): 3 rows, as kafka-python reads."""
    from kafka.record import MemoryRecords

    src = require_shared(V2_REQUEST)
    data = src.read_bytes()
    expected = []
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        expected += [(r.offset, r.key, r.value) for r in batch]
    assert len(expected) == 3 and {o for o, _, _ in expected} == {-1}
    stats = ReadStats()
    table = kl.read_table(str(src), stats=stats)
    got = list(zip(*(table.column(c).to_pylist() for c in ("offset", "key", "value")), strict=True))
    assert got == expected
    assert_accounted(stats, len(data))
    assert stats.bytes_decoded == len(data)


def test_offset_minus_one_below_a_lower_bound_is_counted_as_filtered() -> None:
    """With a lower offset bound of 0 the same bytes are skipped, and counted as filtered."""
    src = require_shared(V2_REQUEST)
    size = src.stat().st_size
    opts = parse_options({"path": str(src)})
    stats = ReadStats()
    rng = SegmentRange(str(src), 0, size, offset_lo=0)
    batches = list(RangeReader(rng, opts, output_projection(opts), stats))
    assert sum(b.num_rows for b in batches) == 0
    assert stats.filtered_bytes == size
    assert_accounted(stats, size)


# ------------------------------------------------------------------------------ accounting rule


def _inputs() -> list[Path]:
    """sample_segments/, the shared carves, and the small on-disk partitions of the shared
    broker-written fixtures (each .log under 256 KiB)."""
    paths = list(SAMPLE_DIRS)
    if CARVED.is_dir():
        paths += sorted(CARVED.glob("*.bin"))
    if BROKER_WRITTEN.is_dir():
        dirs = {p.parent for p in BROKER_WRITTEN.rglob("*.log")}
        paths += sorted(
            d for d in dirs if all(f.stat().st_size < 256 << 10 for f in d.glob("*.log"))
        )
    return paths


@pytest.mark.parametrize("path", _inputs(), ids=lambda p: f"{p.parent.name[:20]}/{p.name[:40]}")
def test_every_byte_is_accounted_for(path: Path) -> None:
    for mode in MODES:
        for extra in ({}, {"ignoreCorruptFiles": "true"}):
            rows, stats = read(path, mode=mode, **extra)
            if rows < 0:
                continue  # FAILFAST raised: nothing to account for
            assert_accounted(stats, tree_size(path))


def test_accounting_with_bounds_and_isolation() -> None:
    multi = SAMPLES / "multi-segment-0"
    for opts in (
        {"startingOffsets": '{"multi-segment":{"0":1010}}'},
        {"endingOffsets": '{"multi-segment":{"0":1100}}'},
        {"startingTimestamp": "0", "endingTimestamp": "99999999999999"},
    ):
        rows, stats = read(multi, **opts)
        assert rows > 0
        assert_accounted(stats)
    for isolation in ("read_committed", "read_uncommitted"):
        rows, stats = read(SAMPLES / "transactions-0", isolationLevel=isolation)
        assert_accounted(stats, tree_size(SAMPLES / "transactions-0"))
        assert stats.control_bytes > 0
    rows, stats = read(SAMPLES / "transactions-0", includeControlRecords="true")
    assert stats.control_bytes == 0
    assert_accounted(stats, tree_size(SAMPLES / "transactions-0"))


def _mutations(data: bytes, hs: list[BatchHeader]) -> dict[str, bytes]:
    """Damaged copies: flipped bytes in framing, CRC and payload, cut and padded tails."""
    out: dict[str, bytes] = {}
    for k, h in enumerate(hs[:3]):
        for name, at, mask in (
            ("size-hi", h.position + 8, 0x10),
            ("size-mid", h.position + 9, 0x01),
            ("size-lo", h.position + 11, 0x40),
            ("magic", h.position + 16, 0x40),
            ("crc", h.position + 18, 0xFF),
            ("payload", h.position + h.size - 3, 0x5A),
        ):
            b = bytearray(data)
            b[at] ^= mask
            out[f"{name}@{k}"] = bytes(b)
    out["cut"] = data[: len(data) - 7]
    out["cut-header"] = data[: hs[-1].position + 9] if hs else data[:9]
    out["zeros"] = data + bytes(4096)
    out["garbage"] = data + b"not a batch at all, just text\n" * 3
    return out


@pytest.mark.parametrize(
    "name",
    ["magic0-none-0", "magic0-gzip-0", "magic1-snappy-0", "magic1-none-0", "magic2-none-0",
     "magic2-lz4-0", "magic2-zstd-0", "magic2-gzip-0", "orders-0", "transactions-0",
     "upgraded-0", "snappy-mixed-0"],
)  # fmt: skip
def test_every_byte_is_accounted_for_in_damaged_copies(name: str, tmp_path: Path) -> None:
    src = sorted((SAMPLES / name).glob("*.log"))[0]
    data = src.read_bytes()
    hs = headers(src)
    for label, bad in _mutations(data, hs).items():
        path = tmp_path / "00000000000000000000.log"
        path.write_bytes(bad)
        for mode in MODES:
            for extra in ({}, {"ignoreCorruptFiles": "true"}, {"verifyChecksums": "false"}):
                rows, stats = read(path, mode=mode, **extra)
                if rows < 0:
                    assert mode == "FAILFAST" and "ignoreCorruptFiles" not in extra, label
                    continue
                try:
                    assert_accounted(stats, len(bad))
                except AssertionError as exc:
                    raise AssertionError(f"{name} {label} {mode} {extra}: {exc}") from None


def test_merge_and_summary_keep_the_accounting() -> None:
    a, b = ReadStats(), ReadStats()
    kl.read_table(str(SAMPLES / "orders-0"), stats=a)
    kl.read_table(str(SAMPLES / "transactions-0"), stats=b, isolationLevel="read_committed")
    a.merge(b)
    assert_accounted(a, tree_size(SAMPLES / "orders-0") + tree_size(SAMPLES / "transactions-0"))
    assert f"decoded {a.bytes_decoded} of {a.bytes_total} bytes" in a.summary()
    assert "control" in a.summary() and not a.skipped


# ------------------------------------------------------------------------------ item 4


DAMAGED_LENGTH = ["magic0-none-0", "magic0-gzip-0", "magic1-none-0", "magic1-lz4-0",
                  "magic2-none-0", "magic2-snappy-0", "magic2-zstd-0", "orders-0"]  # fmt: skip


def _damage_length(name: str, tmp_path: Path, how: str) -> tuple[Path, BatchHeader, int]:
    """Copy a sample partition and damage the size field of a middle batch of its segment."""
    part = tmp_path / name
    shutil.copytree(SAMPLES / name, part)
    seg = part / "00000000000000000000.log"
    hs = headers(seg)
    assert len(hs) >= 3
    h = hs[1]
    b = bytearray(seg.read_bytes())
    if how == "huge":
        b[h.position + 8] |= 0x10  # + 256 MiB: above maxBatchBytes
    else:
        b[h.position + 9] ^= 0x01  # + 64 KiB: below maxBatchBytes, runs past the end
    seg.write_bytes(bytes(b))
    return seg, h, len(b)


@pytest.mark.parametrize("how", ["huge", "crc-evidence"])
@pytest.mark.parametrize("name", DAMAGED_LENGTH)
def test_damaged_length_field_is_corruption_not_a_tail(name: str, how: str, tmp_path: Path) -> None:
    seg, h, size = _damage_length(name, tmp_path, how)
    with pytest.raises(RecordStructureError) as info:
        kl.read_table(str(seg))
    assert info.value.path == str(seg) and info.value.position == h.position
    assert "not an append in progress" in info.value.reason
    # the batch's CRC shows where it really ends: the batches after it are read
    orig = kl.read_table(str(SAMPLES / name), includeMetadata="true")
    keep = [
        o
        for o, p in zip(orig["offset"].to_pylist(), orig["batchPosition"].to_pylist(), strict=True)
        if p != h.position
    ]
    for mode in ("DROPMALFORMED", "PERMISSIVE"):
        stats = ReadStats()
        table = kl.read_table(str(seg), stats=stats, mode=mode)
        got = table["offset"].to_pylist()
        if mode == "PERMISSIVE":
            got.remove(h.base_offset)  # the corrupt batch's row
        assert got == keep, mode
        assert stats.malformed_batches == 1 and stats.truncated_tails == 0, mode
        assert stats.malformed_bytes == h.size
        assert stats.bytes_decoded == size - h.size
        assert_accounted(stats, size)
    rows, stats = read(seg, ignoreCorruptFiles="true")
    assert stats.corrupt_files == 1 and stats.truncated_tails == 0
    assert_accounted(stats, size)


def test_text_file_named_log_is_not_a_segment(tmp_path: Path) -> None:
    seg = tmp_path / "00000000000000000000.log"
    seg.write_text("hello, this is a text file and not a Kafka segment at all\n" * 3)
    with pytest.raises(RecordStructureError, match="not a batch") as info:
        kl.read_table(str(seg))
    assert info.value.position == 0
    rows, stats = read(seg, mode="DROPMALFORMED")
    assert rows == 0 and stats.malformed_batches == 1 and stats.truncated_tails == 0
    assert_accounted(stats, seg.stat().st_size)
    result = run_cli("verify", "--quiet", str(seg))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "not a batch" in result.stdout


def _multi(tmp_path: Path) -> tuple[Path, list[Path]]:
    part = tmp_path / "multi-segment-0"
    shutil.copytree(SAMPLES / "multi-segment-0", part)
    return part, sorted(part.glob("*.log"))


def test_short_tail_in_a_segment_that_is_not_the_last_is_damage(tmp_path: Path) -> None:
    part, segs = _multi(tmp_path)
    first = segs[0]
    data = first.read_bytes()
    first.write_bytes(data[:-20])  # its last batch cut short
    cut_at = headers(first)[-1].end
    with pytest.raises(RecordStructureError, match="not the last of its partition") as info:
        kl.read_table(str(part))
    assert info.value.path == str(first) and info.value.position == cut_at
    full = kl.read_table(str(SAMPLES / "multi-segment-0")).num_rows
    rows, stats = read(part, mode="DROPMALFORMED")
    assert stats.malformed_batches == 1 and stats.truncated_tails == 0
    assert 0 < rows < full
    assert_accounted(stats, tree_size(part))
    rows, stats = read(part, ignoreCorruptFiles="true")
    assert stats.corrupt_files == 1
    assert_accounted(stats, tree_size(part))
    result = run_cli("verify", "--quiet", str(part))
    assert result.returncode == 1, result.stdout + result.stderr


def test_short_tail_in_the_last_segment_ends_quietly(tmp_path: Path, caplog) -> None:
    part, segs = _multi(tmp_path)
    last = segs[-1]
    data = last.read_bytes()
    last.write_bytes(data[:-20])
    for index in (".index", ".timeindex"):  # they point at the lost batch; Kafka rebuilds them
        last.with_suffix(index).unlink()
    complete = headers(last)[-1].end
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        rows, stats = read(part)  # FAILFAST
    assert rows > 0
    assert stats.truncated_tails == 1 and stats.malformed_batches == 0
    assert stats.truncated_tail_bytes == len(data) - 20 - complete
    assert_accounted(stats, tree_size(part))
    assert any("append in progress" in r.getMessage() for r in caplog.records)
    # the cut batch's header names its offsets: they are missing, which verify reports as an
    # error (the tail itself is a warning)
    assert stats.missing_ranges == 1
    result = run_cli("verify", "--quiet", str(part))
    assert result.returncode == 1, result.stdout + result.stderr
    assert ": warning: byte " in result.stdout and "are missing: the last batch" in result.stdout
    # fewer bytes than a batch's offset and size fields (17): nothing says which offsets are
    # missing, the tail ends the file quietly (as Kafka's reader treats an append in progress)
    last.write_bytes(data[: complete + 10])
    rows, stats = read(part)
    assert stats.truncated_tails == 1 and stats.missing_ranges == 0
    result = run_cli("verify", "--quiet", str(part))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "warning" in result.stdout


def test_file_named_directly_counts_as_last(tmp_path: Path) -> None:
    _, segs = _multi(tmp_path)
    first = segs[0]
    first.write_bytes(first.read_bytes()[:-20])
    opts = parse_options({"path": str(first)})
    stats = ReadStats()
    rng = SegmentRange(str(first), 0, first.stat().st_size)  # default: last segment
    assert sum(b.num_rows for b in RangeReader(rng, opts, output_projection(opts), stats)) > 0
    assert stats.truncated_tails == 1


@pytest.mark.parametrize("name", DAMAGED_LENGTH[:3] + ["orders-0"])
def test_verify_exits_1_for_a_damaged_length_field(name: str, tmp_path: Path) -> None:
    seg, h, _ = _damage_length(name, tmp_path, "crc-evidence")
    result = run_cli("verify", "--quiet", str(seg.parent))
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"byte {h.position}" in result.stdout


# ------------------------------------------------------------------------------ item 12


def test_warnings_are_capped_per_file(tmp_path: Path, caplog) -> None:
    """30 batches with a bad CRC: 5 warnings, one line saying how many more, all 30 counted."""
    good = [
        kp_v2_batch([(1700000000000, f"k{i}".encode(), b"v", [])], base_offset=i) for i in range(30)
    ]
    bad = [b[:17] + bytes(4) + b[21:] for b in good]  # zeroed CRC
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(b"".join(bad))
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        stats = ReadStats()
        table = kl.read_table(str(seg), stats=stats, mode="DROPMALFORMED")
    assert table.num_rows == 0
    assert stats.malformed_batches == 30 and stats.unlogged_problems == 30 - MAX_LOGGED_PER_FILE
    assert_accounted(stats, seg.stat().st_size)
    skipped = [r for r in caplog.records if "skipped malformed batch" in r.getMessage()]
    assert len(skipped) == MAX_LOGGED_PER_FILE
    more = [r for r in caplog.records if "more problems not logged" in r.getMessage()]
    assert len(more) == 1 and f"{30 - MAX_LOGGED_PER_FILE} more" in more[0].getMessage()
    assert str(seg) in more[0].getMessage()
    assert len(stats.problems) == 30  # every message is still kept (up to 100)


def test_warnings_cap_restarts_for_each_file(tmp_path: Path, caplog) -> None:
    part = tmp_path / "t-0"
    part.mkdir()
    for base in (0, 100):
        batches = [
            kp_v2_batch([(1700000000000, b"k", b"v", [])], base_offset=base + i) for i in range(8)
        ]
        data = b"".join(b[:17] + bytes(4) + b[21:] for b in batches)
        (part / f"{base:020d}.log").write_bytes(data)
    with caplog.at_level(logging.WARNING, logger="kafkalog"):
        stats = ReadStats()
        kl.read_table(str(part), stats=stats, mode="DROPMALFORMED")
    assert stats.malformed_batches == 16
    skipped = [r for r in caplog.records if "skipped malformed batch" in r.getMessage()]
    assert len(skipped) == 2 * MAX_LOGGED_PER_FILE
    more = [r.getMessage() for r in caplog.records if "more problems not logged" in r.getMessage()]
    assert len(more) == 2 and all("3 more" in m for m in more)


def test_spark_task_summary_reads_the_accounting(tmp_path: Path, caplog) -> None:
    """The per-task summary line of the Spark source says what was decoded and skipped."""
    pytest.importorskip("pyspark")
    from kafkalog_source.planning.splits import Split
    from kafkalog_source.spark import partitions as parts

    seg, h, size = _damage_length("orders-0", tmp_path, "huge")
    stats = ReadStats()
    kl.read_table(str(seg), stats=stats, mode="DROPMALFORMED")
    with caplog.at_level(logging.INFO, logger="kafkalog"):
        parts.log_summary(Split(0, (SegmentRange(str(seg), 0, size),)), stats)
    line = caplog.records[-1]
    assert line.levelno == logging.WARNING
    assert f"decoded {size - h.size} of {size} bytes" in line.getMessage()
    assert f"skipped 1 malformed batches ({h.size} bytes)" in line.getMessage()


@pytest.mark.parametrize("codec", [0, 1])
def test_a_skipped_batch_counts_as_malformed_only_in_every_path(codec: int, tmp_path: Path) -> None:
    """A batch whose CRC fails, alone in its file or between good ones: ``batches`` counts the
    batches decoded (as ``bytes_decoded`` does) and the skipped one is a malformed batch only,
    whether the read decodes records or counts them from headers (``count(*)``)."""
    good = [
        kp_v2_batch([(1000 + i, b"k", b"v%d" % i * 40, [])] * 3, base_offset=3 * i, codec=codec)
        for i in range(3)
    ]
    bad = bytearray(good[1])
    bad[-2] ^= 0x01  # inside the records: the CRC fails
    for name, batches, decoded in (("alone", [bad], 0), ("middle", [good[0], bad, good[2]], 2)):
        part = tmp_path / name / "t-0"
        part.mkdir(parents=True)
        (part / "00000000000000000000.log").write_bytes(b"".join(batches))
        for mode in ("DROPMALFORMED", "PERMISSIVE"):
            for columns in (None, ["offset"], []):
                stats = ReadStats()
                kw = {} if columns is None else {"columns": columns}
                kl.read_table(part, mode=mode, stats=stats, **kw)
                where = (name, mode, columns)
                assert stats.batches == decoded, where
                assert stats.malformed_batches == 1, where
                assert stats.malformed_bytes == len(bad), where
                assert_accounted(stats)


@pytest.mark.parametrize("sample", ["magic1-none-0", "magic0-gzip-0"])
def test_a_skipped_legacy_message_counts_as_malformed_only(sample: str, tmp_path: Path) -> None:
    """The same for v0/v1 messages: the one whose CRC fails is not among ``batches``."""
    part = tmp_path / sample
    shutil.copytree(SAMPLES / sample, part)
    (log,) = part.glob("*.log")
    found = headers(log)
    second = found[1]
    data = bytearray(log.read_bytes())
    data[second.position + second.size - 2] ^= 0x01
    log.write_bytes(bytes(data))
    for columns in (None, []):
        stats = ReadStats()
        kl.read_table(part, mode="PERMISSIVE", stats=stats, **({} if columns is None else
                                                               {"columns": columns}))  # fmt: skip
        assert (stats.batches, stats.malformed_batches) == (len(found) - 1, 1), columns
        assert_accounted(stats)
