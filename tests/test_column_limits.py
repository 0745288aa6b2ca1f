"""Arrow binary columns have 32-bit offsets: no record batch may hold 2 GiB in one column.

``maxBatchBytes`` is bounded (1g), and the sink refuses to grow a key, value or header column past
``MAX_COLUMN_BYTES``: the reader hands over a record batch first, or raises
:class:`ColumnLimitError` when a single Kafka batch cannot fit. The tests lower the limit to 256
bytes and check the output against kafka-python's decoding.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.record import MemoryRecords
from test_fuzz import kp_legacy, kp_v2

import kafkalog_source.arrow.sink as sink_module
from kafkalog_source import iter_batches, read_table
from kafkalog_source.errors import ColumnLimitError, OptionError
from kafkalog_source.options import MAX_BATCH_BYTES_LIMIT, MiB, parse_options

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
LIMIT = 256  # one 6-record batch (224 value bytes) fits, two do not


@pytest.mark.parametrize("value", ["1025m", "2g", str(2**31), 2**40, "1048577k"])
def test_max_batch_bytes_above_1g_is_refused(value: object) -> None:
    """A maxBatchBytes that could let one batch overflow a binary column is an option error."""
    with pytest.raises(OptionError, match=r"option 'maxBatchBytes': .* above the maximum of 1g"):
        parse_options({"maxBatchBytes": value})


def test_max_batch_bytes_of_1g_is_accepted() -> None:
    """The maximum itself is accepted, with and without a unit."""
    assert MAX_BATCH_BYTES_LIMIT == 1024 * MiB
    assert parse_options({"maxBatchBytes": "1g"}).max_batch_bytes == 1 << 30
    assert parse_options({"maxBatchBytes": str(1 << 30)}).max_batch_bytes == 1 << 30


def test_read_refuses_max_batch_bytes_above_1g(tmp_path: Path) -> None:
    """The Arrow API checks the bound before reading anything."""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(kp_v2(NONE, 0, 3))
    with pytest.raises(OptionError, match="maxBatchBytes"):
        read_table(str(path), maxBatchBytes="4g")


def _expected(data: bytes) -> list[tuple[int, bytes | None, bytes | None]]:
    out = []
    records = MemoryRecords(data)
    while records.has_next():
        for r in records.next_batch():
            out.append((r.offset, r.key, r.value))
    return out


def _segment(magic: int, codec: int) -> bytes:
    """Batches of 6 records (about 200 value bytes each) from kafka-python, 60 records in all."""
    out = b""
    for base in range(0, 60, 6):
        out += kp_v2(codec, base, 6) if magic == 2 else kp_legacy(magic, codec, base, 6)
    return out


@pytest.mark.parametrize(
    ("magic", "codec"),
    [(2, NONE), (2, GZIP), (2, SNAPPY), (2, LZ4), (2, ZSTD), (1, NONE), (0, NONE), (1, GZIP)],
)
def test_record_batches_are_handed_over_before_a_column_passes_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, magic: int, codec: int
) -> None:
    """With the column limit at 256 bytes every column of every record batch stays within it, and
    the rows are kafka-python's, in order."""
    data = _segment(magic, codec)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    expected = _expected(data)
    assert sum(len(v) for _, _, v in expected if v) > 3 * LIMIT
    monkeypatch.setattr(sink_module, "MAX_COLUMN_BYTES", LIMIT)
    rows = []
    batches = list(iter_batches(str(path)))
    assert len(batches) > 3
    for batch in batches:
        for name in ("key", "value"):
            col = batch.column(name)
            assert sum(len(v) for v in col.to_pylist() if v is not None) <= LIMIT
        rows += zip(
            batch.column("offset").to_pylist(),
            batch.column("key").to_pylist(),
            batch.column("value").to_pylist(),
            strict=True,
        )
    assert rows == expected


@pytest.mark.parametrize(("magic", "codec"), [(2, NONE), (2, LZ4), (1, NONE), (1, GZIP)])
def test_one_kafka_batch_above_the_limit_raises_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, magic: int, codec: int
) -> None:
    """A Kafka batch (or message) whose values alone pass the limit is an error naming the file
    and the column, never a wrapped offset."""
    n = 40
    data = kp_v2(codec, 0, n) if magic == 2 else kp_legacy(magic, codec, 0, n)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    monkeypatch.setattr(sink_module, "MAX_COLUMN_BYTES", LIMIT)
    if magic < 2 and codec == NONE:
        # each legacy message is its own batch: they all fit, in several record batches
        assert read_table(str(path)).num_rows == n
        return
    with pytest.raises(ColumnLimitError, match=r"value column, above Arrow's binary limit") as e:
        read_table(str(path))
    assert str(path) in str(e.value)
