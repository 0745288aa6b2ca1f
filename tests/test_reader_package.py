"""The reader package's seams (issue 11): options parsed once, the sink's synthetic row, the
package's settable names, structured read events, and the one segment-name rule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLES, kp_v2_batch, run_cli

import kafkalog_source.reader as reader
import kafkalog_source.stats as stats_module
from kafkalog_source.arrow.schema import projection_for
from kafkalog_source.arrow.sink import ColumnSink
from kafkalog_source.format import names as logformat
from kafkalog_source.stats import ReadEvent, ReadStats


def _bad_crc_segment(tmp_path: Path, n: int = 3) -> Path:
    good = [kp_v2_batch([(1700000000000, b"k", b"v", [])], base_offset=i) for i in range(n)]
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(b"".join(b[:17] + bytes(4) + b[21:] for b in good))  # zeroed CRCs
    return seg


def test_read_table_parses_its_options_once(tmp_path: Path, monkeypatch) -> None:
    seg = _bad_crc_segment(tmp_path)
    calls = []
    real = reader.api.parse_options

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(reader.api, "parse_options", counting)
    table = reader.read_table(str(seg), mode="PERMISSIVE")
    assert table.num_rows == 3 and len(calls) == 1


def test_tuning_is_a_value_passed_to_the_read() -> None:
    """Window size and fast paths are a :class:`Tuning` handed to the read; the package is a
    plain module (nothing set on it reaches other modules)."""
    import types

    assert type(reader) is types.ModuleType
    seg = str(SAMPLES / "magic2-lz4-0")
    want = reader.read_table(seg, includeMetadata=True)
    for knobs in (reader.Tuning(window_bytes=4096), reader.Tuning(fast_codecs=False)):
        assert reader.read_table(seg, includeMetadata=True, tuning=knobs).equals(want)
    assert reader.Tuning() == reader.tuning.DEFAULT_TUNING


@pytest.mark.parametrize("columns", [["offset", "value", "headers"], ["offset"], ["key"]])
def test_sink_append_row(columns: list[str]) -> None:
    sink = ColumnSink(projection_for(columns), records=1, data=1)
    sink.append_row(7, 0, b"raw" * 100, [(b"kafkalog.error", b"why")])
    sink.append_row(8, 1, b"", [(b"a", b""), (b"bb", b"c")])
    cols = sink.take_columns()
    assert cols["offset"].tolist() == [7, 8] and cols["null_ts"] == 2
    assert cols["ts_type"].tolist() == [-1, -1] and cols["meta"].tolist() == [0, 1]
    if "key" in cols:
        assert cols["key"].to_pylist() == [None, None]
    if "value" in cols:
        assert cols["value"].to_pylist() == [b"raw" * 100, b""]
    if "headers" in cols:
        assert cols["headers"].to_pylist() == [
            [{"key": "kafkalog.error", "value": b"why"}],
            [{"key": "a", "value": b""}, {"key": "bb", "value": b"c"}],
        ]


def test_skips_are_recorded_as_events(tmp_path: Path) -> None:
    """Each malformed batch is one event with its position, base offset and size; the tail too."""
    seg = _bad_crc_segment(tmp_path)
    batch = kp_v2_batch([(1700000000000, b"k", b"v", [])], base_offset=0)
    seg.write_bytes(seg.read_bytes() + batch[:30])  # a truncated final batch
    stats = ReadStats()
    reader.read_table(str(seg), stats=stats, mode="DROPMALFORMED")
    malformed = stats.events_of("malformed")
    assert [(e.position, e.base_offset, e.bytes) for e in malformed] == [
        (i * len(batch), i, len(batch)) for i in range(3)
    ]
    assert all(e.path == str(seg) and "crc" in e.reason for e in malformed)
    assert (
        malformed[0].message
        == f"DROPMALFORMED: skipped malformed batch: {malformed[0].path}: {malformed[0].detail}"
    )
    (tail,) = stats.events_of("truncated tail")
    assert (tail.position, tail.bytes) == (3 * len(batch), 30)
    assert stats.problems == [e.message for e in stats.events]


def test_ignore_corrupt_files_is_an_event(tmp_path: Path) -> None:
    seg = _bad_crc_segment(tmp_path)
    stats = ReadStats()
    reader.read_table(str(seg), stats=stats, ignoreCorruptFiles="true")
    (event,) = stats.events
    assert event.kind == "corrupt file" and event.position == 0 and event.base_offset == 0
    assert event.bytes == seg.stat().st_size == stats.corrupt_file_bytes


def test_events_are_kept_past_the_problem_messages(tmp_path: Path, monkeypatch) -> None:
    """problems keeps 100 messages; the events (what verify lists) go on up to MAX_EVENTS."""
    monkeypatch.setattr(stats_module, "MAX_EVENTS", 150)
    stats = ReadStats()
    for i in range(200):
        stats.record(ReadEvent("malformed", "r", "f", i, message=f"m{i}"), capped=False)
    assert len(stats.problems) == 100 and len(stats.events) == 150 and stats.events_dropped == 50
    other = ReadStats()
    other.merge(stats)
    assert len(other.events) == 150 and other.events_dropped == 50


@pytest.mark.parametrize(
    ("name", "base"),
    [
        ("00000000000000368769.log", 368769),
        ("00000000000000368769.index", 368769),
        ("00000000000000368769.log.deleted", 368769),
        ("99999999999999999999.log", 99999999999999999999),
        ("5.log", None),  # Kafka's parseLong would take it; the broker never writes it
        ("-0000000000000000001.log", None),
        ("+0000000000000000001.log", None),
        ("0000000000000036876\u0669.log", None),  # a non-ASCII digit
        ("000000000000003687690.log", None),
    ],
)
def test_one_segment_name_rule(name: str, base: int | None) -> None:
    assert logformat.base_offset_from_name(f"/x/{name}") == base
    is_log = name.endswith(".log") and base is not None
    assert logformat.segment_base_offset(name) == (base if is_log else None)


def test_dump_of_a_non_standard_name(tmp_path: Path) -> None:
    """``5.log`` is dumped without a base offset (a warning); ``5.index`` cannot find its log."""
    src = SAMPLES / "magic2-none-0" / "00000000000000000000"
    for ext in ("log", "index"):
        (tmp_path / f"5.{ext}").write_bytes(src.with_suffix(f".{ext}").read_bytes())
    out = run_cli("dump", str(tmp_path / "5.log"))
    assert out.returncode == 0 and "no base offset in the file name" in out.stderr
    assert "Log starting offset" not in out.stdout and "baseOffset: 0 lastOffset: 13" in out.stdout
    out = run_cli("dump", str(tmp_path / "5.index"))
    assert out.returncode == 1 and "5.index: no base offset in the file name" in out.stderr


def test_sequence_wrap_for_ints_and_arrays() -> None:
    top = logformat.INT32_MAX
    assert logformat.increment_sequence(top, 1) == 0
    assert logformat.increment_sequence(top - 2, 5) == 2
    assert logformat.increment_sequence(7, 3) == 10
    assert logformat.decrement_sequence(2, 5) == top - 2
    got = logformat.increment_sequence(np.array([top, top - 2, 7]), np.array([1, 5, 3]))
    assert got.tolist() == [0, 2, 10]
