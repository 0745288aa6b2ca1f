"""A batch whose length field is damaged (issue 19): the read goes on after it.

Each case copies a partition (a sample, or the broker-written ``orders-0`` when ``../shared`` is
present) into ``tmp_path`` and flips one bit of the size field (bytes 8..11) of a batch in the
middle of a segment, so that the size gets smaller (the batch looks complete, its CRC fails, and
the bytes after it are not a batch), or larger (it runs into the following batches, or past the
end of the file). ``DROPMALFORMED`` must return every record but the damaged batch's: the
expectation is kafka-python's decoding of every other top-level entry of the undamaged files
(for ``orders-0``, the undamaged read minus that batch's offsets). ``PERMISSIVE`` gives one error
row for it, ``FAILFAST`` raises naming the file, the byte and the base offset, and the bytes
balance in every mode.
"""

from __future__ import annotations

import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import BROKER_WRITTEN, SAMPLES, require_shared, run_cli
from kafka.record import MemoryRecords

import kafkalog_source as kl
from kafkalog_source.errors import CorruptDataError
from kafkalog_source.framing import resync
from kafkalog_source.stats import ReadStats

ERROR_KEY = "kafkalog.error"
ORDERS = BROKER_WRITTEN / "rjmfernandes-flink-on-prem" / "data" / "orders-0"
Row = tuple[int, bytes | None, bytes | None]


@dataclass
class Entry:
    """One top-level entry (v2 batch or v0/v1 message) of a segment, and its records."""

    log: str  # the segment's file name
    position: int
    size: int
    magic: int
    rows: list[Row]

    @property
    def base_offset_field(self) -> int:
        """What kafkalog reports as the entry's base offset: the stored offset field."""
        return self.rows[-1][0] if self.magic < 2 and self.rows else self.rows[0][0]


def entries(log: Path) -> list[Entry]:
    """The top-level entries of a well-formed segment, each decoded alone by kafka-python."""
    data = log.read_bytes()
    out = []
    pos = 0
    while pos + 17 <= len(data):
        size = 12 + struct.unpack_from(">i", data, pos + 8)[0]
        batch = MemoryRecords(data[pos : pos + size]).next_batch()
        assert batch is not None
        rows = [(r.offset, r.key, r.value) for r in batch]
        out.append(Entry(log.name, pos, size, data[pos + 16], rows))
        pos += size
    return out


def copy_partition(src: Path, dst: Path) -> Path:
    """A writable copy of a partition directory."""
    dst.mkdir(parents=True)
    for f in src.iterdir():
        shutil.copyfile(f, dst / f.name)
    return dst


def flip_size(log: Path, entry: Entry, direction: str) -> int:
    """Flip one bit of ``entry``'s size field; returns the new size field."""
    data = bytearray(log.read_bytes())
    size = entry.size - 12
    room = len(data) - entry.position - entry.size  # bytes after the batch
    smallest = 49 if entry.magic == 2 else 14
    if direction == "smaller":
        bits = [b for b in range(31) if size >> b & 1 and size - (1 << b) >= smallest]
        bit = bits[-1]
    elif direction == "larger":  # into the following batches, not past the end of the file
        bits = [b for b in range(31) if not size >> b & 1 and (1 << b) < room]
        bit = bits[-1]
    elif direction == "tiny":  # below the smallest legal size: not a single bit flip
        bit = -1
    else:  # past the end of the file
        bit = next(b for b in range(31) if not size >> b & 1 and (1 << b) > room)
    new = 5 if bit < 0 else size ^ (1 << bit)
    struct.pack_into(">i", data, entry.position + 8, new)
    log.write_bytes(bytes(data))
    return new


def rows_of(table) -> list[Row]:  # type: ignore[no-untyped-def]
    d = table.to_pydict()
    return list(zip(d["offset"], d["key"], d["value"], strict=True))


def check_modes(part: Path, log: Path, entry: Entry, expected: list[Row]) -> ReadStats:
    """DROPMALFORMED, PERMISSIVE and FAILFAST over the damaged partition ``part``."""
    st = ReadStats()
    got = rows_of(kl.read_table(str(part), mode="DROPMALFORMED", stats=st))
    assert got == expected
    assert st.malformed_batches == 1
    assert st.malformed_bytes == entry.size
    assert st.unaccounted_bytes == 0
    (event,) = st.events_of("malformed")
    assert event.position == entry.position and event.bytes == entry.size
    assert "damaged" in event.reason

    st = ReadStats()
    table = kl.read_table(str(part), mode="PERMISSIVE", stats=st)
    d = table.to_pydict()
    errors = [i for i, h in enumerate(d["headers"]) if h and h[0]["key"] == ERROR_KEY]
    assert len(errors) == 1
    assert d["offset"][errors[0]] == entry.base_offset_field
    assert len(d["value"][errors[0]] or b"") in (0, entry.size)
    rest = [r for i, r in enumerate(rows_of(table)) if i != errors[0]]
    assert rest == expected
    assert st.unaccounted_bytes == 0 and st.malformed_bytes == entry.size

    with pytest.raises(CorruptDataError) as info:
        kl.read_table(str(part), mode="FAILFAST")
    message = str(info.value)
    assert str(log) in message and f"byte {entry.position}" in message
    assert info.value.position == entry.position
    assert info.value.base_offset == entry.base_offset_field
    return st


SAMPLE_CASES = ["magic2-none-0", "magic2-lz4-0", "magic1-gzip-0", "magic0-none-0",
                "multi-segment-0"]  # fmt: skip


@pytest.mark.parametrize("direction", ["smaller", "larger", "past-end", "tiny"])
@pytest.mark.parametrize("sample", SAMPLE_CASES)
def test_damaged_length_in_a_sample_skips_only_that_batch(
    tmp_path: Path, sample: str, direction: str
) -> None:
    part = copy_partition(SAMPLES / sample, tmp_path / sample)
    logs = sorted(part.glob("*.log"))
    per_log = {log.name: entries(log) for log in logs}
    log = logs[0]  # in multi-segment-0, a segment that is not the last
    ents = per_log[log.name]
    assert len(ents) >= 3
    entry = ents[len(ents) // 2]
    expected = [
        r for name in sorted(per_log) for e in per_log[name] if e is not entry for r in e.rows
    ]
    flip_size(log, entry, direction)
    check_modes(part, log, entry, expected)


def test_damaged_length_and_crc_resyncs_at_the_next_verified_batch(tmp_path: Path) -> None:
    """No length matches a damaged CRC: the next batch whose own CRC holds (from the .index or
    a forward scan) is where reading goes on."""
    part = copy_partition(SAMPLES / "magic2-none-0", tmp_path / "p")
    log = next(part.glob("*.log"))
    ents = entries(log)
    entry = ents[1]
    flip_size(log, entry, "smaller")
    data = bytearray(log.read_bytes())
    data[entry.position + 17] ^= 0x01  # the stored CRC too
    log.write_bytes(bytes(data))
    expected = [r for e in ents if e is not entry for r in e.rows]
    st = ReadStats()
    assert rows_of(kl.read_table(str(part), mode="DROPMALFORMED", stats=st)) == expected
    assert st.malformed_bytes == entry.size and st.unaccounted_bytes == 0
    (event,) = st.events_of("malformed")
    assert "next batch whose CRC holds" in event.reason


@pytest.mark.parametrize("direction", ["smaller", "larger"])
def test_damaged_length_in_the_broker_written_orders(tmp_path: Path, direction: str) -> None:
    require_shared(ORDERS)
    part = copy_partition(ORDERS, tmp_path / "orders-0")
    log = next(part.glob("*.log"))
    undamaged = rows_of(kl.read_table(str(part), mode="FAILFAST"))
    assert len(undamaged) == 17212
    data = log.read_bytes()
    pos, middle = 0, len(data) // 2
    while True:  # the batch that holds the middle byte
        size = 12 + struct.unpack_from(">i", data, pos + 8)[0]
        if pos + size > middle:
            break
        pos += size
    batch = MemoryRecords(data[pos : pos + size]).next_batch()
    assert batch is not None
    offsets = {r.offset for r in batch}
    entry = Entry(log.name, pos, size, data[pos + 16], [(min(offsets), None, None)])
    expected = [r for r in undamaged if r[0] not in offsets]
    assert len(expected) == 17212 - len(offsets)
    flip_size(log, entry, direction)
    check_modes(part, log, entry, expected)


def test_cli_query_reads_past_a_damaged_length(tmp_path: Path) -> None:
    part = copy_partition(SAMPLES / "magic2-none-0", tmp_path / "magic2-none-0")
    log = next(part.glob("*.log"))
    ents = entries(log)
    flip_size(log, ents[1], "smaller")
    want = sum(len(e.rows) for e in ents) - len(ents[1].rows)
    sql = "SELECT count(*) AS n FROM kafkalog"
    out = run_cli("query", str(part), sql, "--option", "mode=DROPMALFORMED", timeout=300)
    assert out.returncode == 0, out.stderr
    assert str(want) in out.stdout.split()
    bad = run_cli("query", str(part), sql, timeout=300)
    assert bad.returncode == 1
    assert f"byte {ents[1].position}" in bad.stderr


def test_plausible_garbage_costs_bounded_work(tmp_path: Path) -> None:
    """A file of v0 messages whose CRCs all fail: each one is a candidate for a damaged length
    field, but the searches share one budget per range, so the work stays linear."""
    msg = bytearray(struct.pack(">qiIbbii", 0, 88, 0xDEADBEEF, 0, 0, -1, 74) + b"x" * 74)
    assert len(msg) == 100
    n = 20_000  # 2 MB
    data = b"".join(bytes(struct.pack(">q", i) + msg[8:]) for i in range(n))
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    st = ReadStats()
    table = kl.read_table(str(path), mode="DROPMALFORMED", stats=st)
    assert table.num_rows == 0
    assert st.malformed_batches == n and st.unaccounted_bytes == 0
    budget = 4 * len(data) + 2 * resync.EVIDENCE_BYTES
    assert 0 < st.resync_bytes <= budget + (1 << 20)
