"""Output buffers that start at one item still give identical results: kernels stop at a full
buffer, the reader grows it and redoes that batch."""

from __future__ import annotations

import pytest
from conftest import SAMPLES

import kafkalog_source.arrow.sink as sink_module
from kafkalog_source import read_table


@pytest.mark.parametrize(
    "name", ["magic2-none-0", "magic2-zstd-0", "magic1-gzip-0", "upgraded-0", "librdkafka-0"]
)
def test_growth_from_one_item(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every buffer group starting at capacity 1 decodes to the same table as the defaults."""
    path = str(SAMPLES / name)
    options = {"includeMetadata": True, "includeControlRecords": True}
    expected = read_table(path, **options)
    original = sink_module.ColumnSink.__init__

    def tiny(self, projection, records=1, data=1):  # type: ignore[no-untyped-def]
        original(self, projection, records=1, data=1)
        for k in self._cap:
            self._cap[k] = 1
        self._allocate()

    monkeypatch.setattr(sink_module.ColumnSink, "__init__", tiny)
    got = read_table(path, **options)
    assert got.num_rows == expected.num_rows > 0
    assert got.equals(expected)
