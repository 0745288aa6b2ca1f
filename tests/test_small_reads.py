"""Per-read buffers are sized from the data: a small file does not get buffers for 65,536 rows
or for maxBatchBytes, and the window buffer is one per reader, reused for every window.

Spark reuses Python workers, so what thousands of small reads allocate is executor memory
(``bench/small.py`` measures it).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from kafka.record import MemoryRecords
from test_fuzz import kp_legacy, kp_v2

import kafkalog_source.arrow.sink as sink_module
import kafkalog_source.reader.range_reader as range_reader
from kafkalog_source import read_table
from kafkalog_source.reader import Tuning
from kafkalog_source.transport.windows import SegmentWindows

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)


def _count(data: bytes) -> int:
    n = 0
    records = MemoryRecords(data)
    while records.has_next():
        n += sum(1 for _ in records.next_batch())
    return n


@pytest.mark.parametrize(
    ("magic", "codec"), [(2, NONE), (2, LZ4), (2, ZSTD), (2, GZIP), (1, NONE), (0, SNAPPY)]
)
def test_small_file_gets_small_buffers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, magic: int, codec: int
) -> None:
    """Every output buffer of a read of a few hundred bytes is a few KiB at most."""
    data = kp_v2(codec, 0, 6) if magic == 2 else kp_legacy(magic, codec, 0, 6)
    assert len(data) < 1000
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    sizes: list[int] = []
    original = sink_module._empty

    def recording(n: int, dtype: type) -> np.ndarray:
        arr = original(n, dtype)
        sizes.append(arr.nbytes)
        return arr

    monkeypatch.setattr(sink_module, "_empty", recording)
    table = read_table(str(path), includeMetadata=True)
    assert table.num_rows == _count(data) == 6
    assert sizes and max(sizes) <= 16 << 10, sorted(sizes)[-5:]
    # nothing is allocated for a batch that never comes after the last flush
    assert sum(sizes) <= 64 << 10


def test_one_window_buffer_per_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Many windows of one file are read into the same buffer, sized for one window."""
    data = b"".join(kp_v2(NONE, base, 20) for base in range(0, 2000, 20))
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    window = 16 << 10
    bases: set[int] = set()
    calls = 0

    class Recording(SegmentWindows):
        def window(self, pos: int, length: int) -> tuple[np.ndarray, int]:
            nonlocal calls
            buf, n = super().window(pos, length)
            calls += 1
            assert buf.base is not None and buf.base.nbytes <= window + self.pad
            bases.add(id(buf.base))
            return buf, n

    monkeypatch.setattr(range_reader, "SegmentWindows", Recording)
    assert read_table(str(path), tuning=Tuning(window_bytes=window)).num_rows == 2000
    assert calls > 5
    assert len(bases) == 1


def test_window_padding_is_zero_after_a_reused_buffer(tmp_path: Path) -> None:
    """A shorter window after a longer one gets zero padding, not the previous window's bytes."""
    path = tmp_path / "x.log"
    path.write_bytes(bytes(range(1, 201)) * 10)
    fd = os.open(path, os.O_RDONLY)
    try:
        w = SegmentWindows(fd, 2000, 16, str(path))
        a, n = w.window(0, 1000)
        assert n == 1000 and a[:1000].tobytes() == (bytes(range(1, 201)) * 5)
        b, n = w.window(1500, 100)
        assert b.base is a.base
        assert b[:100].tobytes() == (bytes(range(1, 201)) * 10)[1500:1600]
        assert not b[100:116].any()
    finally:
        os.close(fd)
