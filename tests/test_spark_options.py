"""The ``kafkalog`` Spark data source's read options and user schemas, end to end on the shared
local session (the rest of the source: tests/test_spark.py).

Expected rows come from ``sample_segments/MANIFEST.json``: every option that keeps every row
keeps them, the ones that select (isolation level, offsets, timestamps, modification times,
file selection) select what the manifest says, and a bad option or schema fails naming it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from spark_support import (
    MANIFEST,
    _samples,
    collect,
    error_text,
    kafkalog,
    manifest_rows,
    tpo,
)

# ------------------------------------------------------------------------------ options


@pytest.mark.spark
def test_unknown_option_fails_naming_it(spark):
    with pytest.raises(Exception) as excinfo:
        _ = kafkalog(spark, str(_samples()), startingOffset="earliest").schema
    text = error_text(excinfo)
    assert "OptionError" in text
    assert "'startingoffset'" in text.lower()  # Spark lower-cases option names
    assert "did you mean 'startingOffsets'" in text


@pytest.mark.spark
@pytest.mark.parametrize(
    ("name", "value"),
    [("mode", "LENIENT"), ("maxBatchBytes", "lots"), ("endingOffsets", "{not json")],
)
def test_bad_option_value_fails_naming_it(spark, name, value):
    with pytest.raises(Exception) as excinfo:
        _ = kafkalog(spark, str(_samples()), **{name: value}).schema
    text = error_text(excinfo)
    assert "OptionError" in text
    assert f"'{name}'" in text


@pytest.mark.spark
def test_same_option_under_two_names_fails(spark):
    with pytest.raises(Exception) as excinfo:
        _ = kafkalog(
            spark,
            str(_samples()),
            isolationLevel="read_committed",
            **{"kafka.isolation.level": "read_committed"},
        ).schema
    assert "same option" in error_text(excinfo)


def _committed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """read_committed on an archive: aborted and undecided (open) transactions are dropped;
    non-transactional records after them are kept (kafkalog_source/planning/transactions.py)."""
    return [r for r in rows if r["txn"] not in ("aborted", "open")]


def _from_first_at_or_after(rows: list[dict[str, Any]], ts: int) -> list[dict[str, Any]]:
    for i, r in enumerate(rows):
        if r["timestamp"] is not None and r["timestamp"] >= ts:
            return rows[i:]
    return []


def _before_first_at_or_after(rows: list[dict[str, Any]], ts: int) -> list[dict[str, Any]]:
    for i, r in enumerate(rows):
        if r["timestamp"] is not None and r["timestamp"] >= ts:
            return rows[:i]
    return rows


@pytest.mark.spark
@pytest.mark.parametrize(
    "name",
    [
        "verifyChecksums",
        "maxBatchBytes",
        "recordsPerBatch",
        "mode",
        "failOnDataLoss",
        "ignoreMissingFiles",
        "modifiedBefore",
        "modifiedAfter",
    ],
)
def test_options_that_keep_every_row(spark, name):
    value = {
        "verifyChecksums": "false",
        "maxBatchBytes": "1m",
        "recordsPerBatch": "7",
        "mode": "DROPMALFORMED",
        "failOnDataLoss": "true",
        "ignoreMissingFiles": "true",
        "modifiedBefore": "2999-01-01T00:00:00",
        "modifiedAfter": "2000-01-01T00:00:00Z",
    }[name]
    dirs = ("magic2-zstd-0", "multi-segment-0")
    df = kafkalog(spark, [str(_samples() / d) for d in dirs], **{name: value})
    assert collect(df, "topic", "partition", "offset") == tpo(manifest_rows(*dirs))


@pytest.mark.spark
def test_modified_after_everything_reads_nothing(spark):
    # nothing left to read is an error naming the path and the filters, unless allowEmpty=true
    df = kafkalog(spark, str(_samples() / "orders-0"), modifiedAfter="2999-01-01T00:00:00")
    with pytest.raises(Exception, match="1 segment file left out by pathGlobFilter, modifiedB"):
        df.count()
    df = kafkalog(
        spark, str(_samples() / "orders-0"), modifiedAfter="2999-01-01T00:00:00", allowEmpty="true"
    )
    assert df.count() == 0


@pytest.mark.spark
def test_include_headers_false(spark):
    df = kafkalog(spark, str(_samples() / "magic2-none-0"), includeHeaders="false")
    assert "headers" not in df.columns
    assert df.count() == len(manifest_rows("magic2-none-0"))


@pytest.mark.spark
def test_include_metadata(spark):
    df = kafkalog(spark, str(_samples() / "upgraded-0"), includeMetadata="true")
    got = collect(df, "offset", "magic", "codec", "batchPosition", "segmentBaseOffset")
    entry = MANIFEST["files"]["upgraded-0/00000000000000000000.log"]
    batches = entry["batches"]
    expected = []
    for row in entry["rows"]:
        b = batches[row["batch"]]
        expected.append((row["offset"], b["magic"], b["codec"], b["position"], 0))
    assert got == sorted(expected)
    paths = {p for (p,) in collect(df.select("segmentPath").distinct())}
    assert [Path(p).name for p in paths] == ["00000000000000000000.log"]


@pytest.mark.spark
def test_include_control_records(spark):
    df = kafkalog(spark, str(_samples() / "transactions-0"), includeControlRecords="true")
    expected = manifest_rows("transactions-0", control=True)
    assert collect(df, "offset") == [(r["offset"],) for r in expected]
    controls = collect(df.where("control IS NOT NULL"), "offset", "control.type")
    assert controls == [(r["offset"], r["controlType"]) for r in expected if r["isControl"]]


@pytest.mark.spark
@pytest.mark.parametrize("name", ["isolationLevel", "kafka.isolation.level"])
def test_read_committed(spark, name):
    df = kafkalog(spark, str(_samples() / "transactions-0"), **{name: "read_committed"})
    expected = _committed(manifest_rows("transactions-0"))
    assert collect(df, "offset") == [(r["offset"],) for r in expected]


@pytest.mark.spark
def test_starting_and_ending_offsets(spark):
    path = str(_samples() / "multi-segment-0")
    df = kafkalog(
        spark,
        path,
        startingOffsets=json.dumps({"multi-segment": {"0": 1010}}),
        endingOffsets=json.dumps({"multi-segment": {"0": 1100}}),
    )
    assert collect(df, "offset") == [(o,) for o in range(1010, 1100)]
    everything = kafkalog(spark, path, startingOffsets="earliest", endingOffsets="latest")
    assert everything.count() == 144


@pytest.mark.spark
def test_starting_and_ending_timestamp(spark):
    path = str(_samples() / "multi-segment-0")
    rows = manifest_rows("multi-segment-0")
    t = 1700003662000  # offset 1060; the older batch at 1072..1077 comes after it
    start = kafkalog(spark, path, startingTimestamp=str(t))
    assert collect(start, "offset") == [(r["offset"],) for r in _from_first_at_or_after(rows, t)]
    end = kafkalog(spark, path, endingTimestamp=str(t))
    assert collect(end, "offset") == [(r["offset"],) for r in _before_first_at_or_after(rows, t)]


@pytest.mark.spark
def test_offsets_by_timestamp(spark):
    root = _samples()
    paths = [str(root / "orders-0"), str(root / "orders-1")]
    starts = {"0": 1700086460000, "1": 1700086466007}
    ends = {"0": 1700086526000, "1": 1700086521507}
    start_df = kafkalog(spark, paths, startingOffsetsByTimestamp=json.dumps({"orders": starts}))
    end_df = kafkalog(spark, paths, endingOffsetsByTimestamp=json.dumps({"orders": ends}))
    want_start, want_end = [], []
    for p in (0, 1):
        rows = manifest_rows(f"orders-{p}")
        want_start += [
            ("orders", p, r["offset"]) for r in _from_first_at_or_after(rows, starts[str(p)])
        ]
        want_end += [
            ("orders", p, r["offset"]) for r in _before_first_at_or_after(rows, ends[str(p)])
        ]
    assert collect(start_df, "topic", "partition", "offset") == sorted(want_start)
    assert collect(end_df, "topic", "partition", "offset") == sorted(want_end)


@pytest.mark.spark
def test_partitioning_options(spark):
    root = _samples()
    one_per_file = kafkalog(spark, str(root), maxPartitionBytes="8k", openCostInBytes="8k")
    segment_files = len(MANIFEST["files"])
    assert one_per_file.rdd.getNumPartitions() == segment_files
    assert one_per_file.count() == len(manifest_rows())
    split_up = kafkalog(spark, str(root / "multi-segment-0"), minPartitions="4")
    assert split_up.rdd.getNumPartitions() >= 4
    assert collect(split_up, "offset") == [(o,) for o in range(1000, 1144)]


@pytest.mark.spark
def test_file_selection_options(spark, tmp_path):
    root = _samples()
    nested = tmp_path / "a" / "b" / "multi-segment-0"
    shutil.copytree(root / "multi-segment-0", nested)
    recursive = kafkalog(spark, str(tmp_path / "a"), recursiveFileLookup="true")
    assert recursive.count() == 144
    globbed = kafkalog(spark, str(root / "multi-segment-0"), pathGlobFilter="*1048.log")
    assert collect(globbed, "offset") == [(o,) for o in range(1048, 1096)]


# ----------------------------------------------------------------------- user schemas


@pytest.mark.spark
def test_user_schema_subset(spark):
    path = str(_samples() / "multi-segment-0")
    df = spark.read.format("kafkalog").schema("offset long, timestamp timestamp").load(path)
    assert df.columns == ["offset", "timestamp"]
    full = collect(kafkalog(spark, path), "offset", "timestamp")
    assert collect(df) == full


@pytest.mark.spark
def test_user_schema_any_order_and_case(spark):
    path = str(_samples() / "orders-1")
    df = (
        spark.read.format("kafkalog").schema("Partition int, TOPIC string, value binary").load(path)
    )
    assert df.columns == ["Partition", "TOPIC", "value"]
    assert collect(df) == collect(kafkalog(spark, path), "partition", "topic", "value")


@pytest.mark.spark
@pytest.mark.parametrize(
    ("ddl", "needle"),
    [
        ("offset int", "column 'offset' has type int, expected bigint"),
        ("offset bigint, nope string", "unknown column 'nope'"),
        ("offset bigint, codec string", "includeMetadata=true"),
        ("timestamp timestamp_ntz", "expected timestamp"),
    ],
)
def test_wrong_user_schema_fails_listing_allowed_columns(spark, ddl, needle):
    with pytest.raises(Exception) as excinfo:
        spark.read.format("kafkalog").schema(ddl).load(str(_samples() / "orders-0")).collect()
    text = error_text(excinfo)
    assert needle in text
    assert "Allowed columns (any subset, any order): key binary, value binary, topic string" in text
