"""``open_reader``: the Arrow C stream that DuckDB, Polars and pandas read, and the README's
examples of it (run as written, from the README's "Arrow stream" section).

Expectations come from ``sample_segments/MANIFEST.json`` (the generator's inputs, written with
kafka-python), not from our own reader.
"""

from __future__ import annotations

import json
import re
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


def _readme_blocks(section: str) -> list[str]:
    """The ```python blocks of a README section (up to the next heading of any level)."""
    text = (ROOT / "README.md").read_text()
    start = text.index(section)
    nxt = re.search(r"^#{1,6} ", text[start + len(section) :], re.M)
    body = text[start : start + len(section) + (nxt.start() if nxt else len(text))]
    return re.findall(r"```python\n(.*?)```", body, re.S)


def test_readme_arrow_stream_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's DuckDB and Polars examples, run as written from the repository root."""
    pytest.importorskip("duckdb")
    pytest.importorskip("polars")
    _manifest()
    monkeypatch.chdir(ROOT)
    blocks = _readme_blocks("### Arrow stream (DuckDB, Polars, ...)")
    assert len(blocks) == 2
    duck: dict = {}
    exec(compile(blocks[0], "README duckdb example", "exec"), duck)
    assert {(t, p): (n, last) for t, p, n, last in duck["counts"]} == _expected_counts()
    assert [(t, p) for t, p, _, _ in duck["counts"]] == sorted(_expected_counts())
    polars: dict = {}
    exec(compile(blocks[1], "README polars example", "exec"), polars)
    sizes = sorted(len(bytes.fromhex(r["value"])) for r in _expected_rows("orders-0"))
    assert polars["largest"]["size"].to_list() == sizes[-3:]
