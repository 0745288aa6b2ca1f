"""``open_reader``: the Arrow C stream that DuckDB, Polars and pandas read, and the documented
examples of it (run as written, from the "Arrow stream" section of docs/guides/local-archives.md).

Expectations come from ``sample_segments/MANIFEST.json`` (the generator's inputs, written with
kafka-python), not from our own reader.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import ROOT, SAMPLES

import kafkalog_source as kl
from kafkalog_source.errors import CorruptDataError, OptionError, PathError


def _manifest() -> dict:
    if not (SAMPLES / "MANIFEST.json").is_file():
        pytest.skip("sample_segments/ not present")
    return json.loads((SAMPLES / "MANIFEST.json").read_text())["files"]


def _expected_rows(partition_dir: str) -> list[dict]:
    """Non-control rows of every segment of one partition directory, in offset order."""
    files = _manifest()
    rows = [
        r
        for name, f in sorted(files.items())
        if name.startswith(partition_dir + "/")
        for r in f["rows"]
        if not r["isControl"]
    ]
    return rows


def _expected_counts() -> dict[tuple[str, int], tuple[int, int]]:
    """(topic, partition) -> (records, last offset) of every sample directory."""
    out: dict[tuple[str, int], list[int]] = {}
    for name, f in _manifest().items():
        topic, _, part = name.split("/")[0].rpartition("-")
        for r in f["rows"]:
            if r["isControl"]:
                continue
            n, last = out.get((topic, int(part)), (0, -1))
            out[(topic, int(part))] = [n + 1, max(last, r["offset"])]
    return {k: (v[0], v[1]) for k, v in out.items()}


def test_open_reader_streams_the_rows_read_table_reads() -> None:
    expected = _expected_rows("orders-0")
    reader = kl.open_reader(str(SAMPLES / "orders-0"), recordsPerBatch=7)
    assert isinstance(reader, pa.RecordBatchReader)
    assert hasattr(reader, "__arrow_c_stream__")
    assert reader.schema == kl.read_table(str(SAMPLES / "orders-0")).schema
    batches = list(reader)
    assert len(batches) > 1  # handed over at Kafka batch boundaries once 7 rows are reached
    got = pa.Table.from_batches(batches).select(["offset", "value"]).to_pylist()
    assert got == [{"offset": r["offset"], "value": bytes.fromhex(r["value"])} for r in expected]


def test_open_reader_columns_and_errors() -> None:
    reader = kl.open_reader(str(SAMPLES / "orders-0"), columns=["value", "offset"])
    assert reader.schema.names == ["value", "offset"]
    assert reader.read_all().num_rows == len(_expected_rows("orders-0"))
    with pytest.raises(OptionError, match="'producerId'"):
        kl.open_reader(str(SAMPLES / "orders-0"), columns=["offset", "producerId"])
    with pytest.raises(OptionError):
        kl.open_reader(str(SAMPLES / "orders-0"), mod="FAILFAST")
    with pytest.raises(PathError):  # planned at once: before any batch is pulled
        kl.open_reader(str(SAMPLES / "no-such-partition-0"))


def test_open_reader_decodes_only_when_pulled(tmp_path: Path) -> None:
    """A damaged batch raises when the consumer reaches it, not when the reader is opened."""
    files = _manifest()
    name = "magic2-none-0/00000000000000000000.log"
    target = tmp_path / "magic2-none-0" / "00000000000000000000.log"
    target.parent.mkdir()
    data = bytearray((SAMPLES / name).read_bytes())
    data[files[name]["batches"][1]["position"] + 100] ^= 0xFF
    target.write_bytes(bytes(data))
    reader = kl.open_reader(str(target.parent), recordsPerBatch=1)
    first = reader.read_next_batch()  # the first Kafka batch, before the damaged one
    assert first.column("offset").to_pylist() == list(
        range(files[name]["batches"][1]["baseOffset"])
    )
    with pytest.raises(CorruptDataError):
        reader.read_all()


def _rows_by_partition(table: pa.Table) -> dict[tuple[str, int], list[tuple[int, str]]]:
    out: dict[tuple[str, int], list[tuple[int, str]]] = {}
    for r in table.select(["topic", "partition", "offset", "value"]).to_pylist():
        value = r["value"].hex() if r["value"] is not None else None
        out.setdefault((r["topic"], r["partition"]), []).append((r["offset"], value))
    return out


def _manifest_rows_by_partition() -> dict[tuple[str, int], list[tuple[int, str]]]:
    out: dict[tuple[str, int], list[tuple[int, str]]] = {}
    for name in sorted({n.split("/")[0] for n in _manifest()}):
        topic, _, part = name.rpartition("-")
        rows = [(r["offset"], r["value"]) for r in _expected_rows(name)]
        out[(topic, int(part))] = rows
    return out


@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("piece", ["1", "1k", "default"])
def test_rows_come_in_log_order_whatever_the_pieces_and_threads(threads: int, piece: str) -> None:
    """Every partition's rows in offset order, as the generator wrote them, however the
    segments are cut (pieces of one batch, of 1 KiB, or the default) and on any thread count.
    (Packed Spark splits put large pieces first: the Arrow API once returned that order.)"""
    options = {} if piece == "default" else {"maxPartitionBytes": piece}
    stats = kl.ReadStats()
    table = kl.read_table(str(SAMPLES), threads=threads, stats=stats, **options)
    assert _rows_by_partition(table) == _manifest_rows_by_partition()
    assert stats.segments == len(_manifest())  # a file read in many pieces is counted once
    assert stats.unaccounted_bytes == 0
    streamed = kl.open_reader(str(SAMPLES / "multi-segment-0"), threads=threads, **options)
    offsets = streamed.read_all().column("offset").to_pylist()
    assert offsets == [o for o, _ in _manifest_rows_by_partition()[("multi-segment", 0)]]


_EARLY_STOP = r"""
import gc, sys, threading, time
import kafkalog_source as kl
from kafkalog_source.reader import tuning

tuning.AHEAD_BYTES = 1  # a worker holds one batch, then waits for the consumer
samples = sys.argv[1]


def decoders():
    return [t for t in threading.enumerate() if t.name.startswith("kafkalog-decode")]


def blocked_reader():
    reader = kl.open_reader(samples, threads=2, recordsPerBatch=1)
    assert reader.read_next_batch().num_rows >= 1
    time.sleep(0.5)  # the workers fill their one batch and wait
    assert decoders()
    return reader


reader = blocked_reader()
reader.close()
del reader  # pyarrow lets the batch generator go with the reader: that stops the workers
gc.collect()
assert not decoders(), decoders()
batches = kl.iter_batches(samples, threads=2, recordsPerBatch=1)
next(batches)
batches.close()
assert not decoders(), decoders()
print("closed", flush=True)
left = blocked_reader()  # never closed: the process must still exit
"""


def test_a_threaded_reader_stops_when_closed_or_left_at_exit() -> None:
    """A consumer that stops early (a LIMIT) leaves no decoding thread behind, even while the
    workers wait for room; and a reader left unread does not keep the process from exiting."""
    done = subprocess.run(
        [sys.executable, "-c", _EARLY_STOP, str(SAMPLES)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "closed"


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_threads_must_be_a_positive_integer(bad: object) -> None:
    with pytest.raises(OptionError, match="threads"):
        kl.read_table(str(SAMPLES / "orders-0"), threads=bad)


def test_duckdb_and_polars_read_the_stream() -> None:
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    expected = _expected_counts()
    reader = kl.open_reader(str(SAMPLES), includeHeaders="false")  # noqa: F841 (DuckDB finds it)
    rows = duckdb.sql(
        'SELECT topic, partition, count(*), max("offset") FROM reader GROUP BY ALL'
    ).fetchall()
    assert {(t, p): (n, last) for t, p, n, last in rows} == expected
    df = pl.from_arrow(kl.open_reader(str(SAMPLES), columns=["topic", "partition"]))
    got = Counter(zip(df["topic"].to_list(), df["partition"].to_list(), strict=True))
    assert dict(got) == {k: v[0] for k, v in expected.items()}


def _guide_blocks(section: str) -> list[str]:
    """The ```python blocks of a section of the local-archives guide (up to the next heading of
    any level)."""
    text = (ROOT / "docs" / "guides" / "local-archives.md").read_text()
    start = text.index(section)
    nxt = re.search(r"^#{1,6} ", text[start + len(section) :], re.M)
    body = text[start : start + len(section) + (nxt.start() if nxt else len(text))]
    return re.findall(r"```python[^\n]*\n(.*?)```", body, re.S)


def test_documented_arrow_stream_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guide's DuckDB and Polars examples, run as written from the repository root."""
    pytest.importorskip("duckdb")
    pytest.importorskip("polars")
    _manifest()
    monkeypatch.chdir(ROOT)
    blocks = _guide_blocks("## Arrow stream (DuckDB, Polars, ...)")
    assert len(blocks) == 2
    duck: dict = {}
    exec(compile(blocks[0], "guide duckdb example", "exec"), duck)
    assert {(t, p): (n, last) for t, p, n, last in duck["counts"]} == _expected_counts()
    assert [(t, p) for t, p, _, _ in duck["counts"]] == sorted(_expected_counts())
    polars: dict = {}
    exec(compile(blocks[1], "guide polars example", "exec"), polars)
    sizes = sorted(len(bytes.fromhex(r["value"])) for r in _expected_rows("orders-0"))
    assert polars["largest"]["size"].to_list() == sizes[-3:]
