"""The ``kafkalog`` Spark data source, end to end on the shared local session.

Expected rows come from ``sample_segments/MANIFEST.json`` (and the ``../shared`` client-written
manifests). Every Spark test uses the one session-scoped ``spark`` fixture of conftest.py;
``spark.sql.python.filterPushdown.enabled`` is a runtime SQL conf, so the pushdown tests toggle
it with ``spark.conf.set`` and restore it. Only the auto-discovery test starts a second Spark,
in a subprocess, because sources are discovered once per JVM.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import re
import shutil
import subprocess
import sys
import textwrap
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import CLIENT_WRITTEN, ROOT, SAMPLES, require_shared
from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)
from pyspark.sql.types import (
    IntegerType,
    LongType,
    StructField,
    StructType,
    TimestampType,
)

from kafkalog_source.arrow.schema import default_projection
from kafkalog_source.errors import OptionError
from kafkalog_source.options import parse_options
from kafkalog_source.planning.pruning import Pruning
from kafkalog_source.planning.splits import SegmentRange, Split
from kafkalog_source.spark import datasource as ds
from kafkalog_source.spark import partitions as parts
from kafkalog_source.spark.filters import pruning_from_filters
from kafkalog_source.stats import ReadStats

PUSHDOWN = "spark.sql.python.filterPushdown.enabled"
DEFAULT_DDL = (
    "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
    "timestamp:timestamp,timestampType:int,headers:array<struct<key:string,value:binary>>>"
)
MANIFEST = json.loads((SAMPLES / "MANIFEST.json").read_text()) if SAMPLES.is_dir() else None

# One batch of sample_segments/magic2-none-0 (offsets 14..28) is the one the tests corrupt.
CORRUPT_SOURCE = "magic2-none-0/00000000000000000000.log"


# ----------------------------------------------------------------------------- helpers


def _samples() -> Path:
    if MANIFEST is None:
        pytest.skip("sample_segments/ not present")
    return SAMPLES


def manifest_rows(*dirs: str, control: bool = False) -> list[dict[str, Any]]:
    """Manifest rows of the sample partition directories, in offset order, with topic/partition."""
    assert MANIFEST is not None
    out = []
    for name, entry in sorted(MANIFEST["files"].items()):
        d = name.split("/")[0]
        if dirs and d not in dirs:
            continue
        for row in entry["rows"]:
            if row["isControl"] and not control:
                continue
            out.append({**row, "topic": entry["topic"], "partition": entry["partition"]})
    return sorted(out, key=lambda r: (r["topic"], r["partition"], r["offset"]))


def tpo(rows: list[dict[str, Any]]) -> list[tuple[str, int, int]]:
    """(topic, partition, offset) of manifest rows, sorted."""
    return sorted((r["topic"], r["partition"], r["offset"]) for r in rows)


def collect(df: Any, *cols: str) -> list[tuple]:
    """Rows of ``df`` (optionally projected), sorted, as plain tuples."""
    if cols:
        df = df.select(*cols)
    return sorted(tuple(r) for r in df.collect())


def kafkalog(spark: Any, path: Any, **options: Any) -> Any:
    """``spark.read.format("kafkalog").options(...).load(path)``."""
    return spark.read.format("kafkalog").options(**options).load(path)


@contextmanager
def pushdown(spark: Any, enabled: bool):
    """Run with Python filter pushdown on or off, restoring the previous setting."""
    before = spark.conf.get(PUSHDOWN, "false")
    spark.conf.set(PUSHDOWN, "true" if enabled else "false")
    try:
        yield
    finally:
        spark.conf.set(PUSHDOWN, before)


def error_text(excinfo: pytest.ExceptionInfo) -> str:
    """The full message of a Spark failure (worker tracebacks included)."""
    return str(excinfo.value)


def ms(ts: datetime | None) -> int | None:
    """A collected timestamp as epoch milliseconds.

    PySpark's collect() returns naive datetimes in the Python process's local time zone, which
    ``datetime.timestamp()`` interprets the same way, so this holds whatever TZ is.
    """
    if ts is None:
        return None
    return round(ts.timestamp() * 1000)


@pytest.fixture(scope="module")
def corrupt_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A copy of magic2-none-0 with one byte flipped inside its second batch's records."""
    _samples()
    batch = MANIFEST["files"][CORRUPT_SOURCE]["batches"][1]
    d = tmp_path_factory.mktemp("corrupt") / "broken-0"
    d.mkdir()
    target = d / "00000000000000000000.log"
    shutil.copyfile(SAMPLES / CORRUPT_SOURCE, target)
    data = bytearray(target.read_bytes())
    data[batch["position"] + 100] ^= 0xFF
    target.write_bytes(bytes(data))
    return target, batch


# ----------------------------------------------------------------- schema and loading


@pytest.mark.spark
def test_default_schema_and_types(spark):
    df = kafkalog(spark, str(_samples() / "magic2-none-0"))
    assert df.schema.simpleString() == DEFAULT_DDL
    assert all(f.nullable for f in df.schema.fields)
    assert df.columns == list(default_projection().names)


@pytest.mark.spark
def test_schema_follows_column_options(spark):
    path = str(_samples() / "magic2-none-0")
    assert "headers" not in kafkalog(spark, path, includeHeaders="false").columns
    meta = kafkalog(spark, path, includeMetadata="true").schema
    assert meta["segmentPath"].dataType.simpleString() == "string"
    assert meta["batchPosition"].dataType == LongType()
    control = kafkalog(spark, path, includeControlRecords="true").schema
    assert control["control"].dataType.simpleString() == (
        "struct<type:string,version:int,coordinatorEpoch:int>"
    )


@pytest.mark.spark
def test_load_single_file(spark):
    path = _samples() / "magic2-gzip-0" / "00000000000000000000.log"
    rows = kafkalog(spark, str(path)).collect()
    expected = manifest_rows("magic2-gzip-0")
    assert sorted(("magic2-gzip", 0, r["offset"]) for r in expected) == sorted(
        (r.topic, r.partition, r.offset) for r in rows
    )
    by_offset = {r.offset: r for r in rows}
    for row in expected:
        got = by_offset[row["offset"]]
        assert ms(got.timestamp) == row["timestamp"]
        assert got.timestampType == row["timestampType"]
        assert (got.key.hex() if got.key is not None else None) == row["key"]
        assert (got.value.hex() if got.value is not None else None) == row["value"]


@pytest.mark.spark
def test_load_partition_directory_with_several_segments(spark):
    df = kafkalog(spark, str(_samples() / "multi-segment-0"))
    assert collect(df, "topic", "partition", "offset") == tpo(manifest_rows("multi-segment-0"))


@pytest.mark.spark
def test_load_log_directory(spark):
    df = kafkalog(spark, str(_samples()))
    got = collect(df.groupBy("topic", "partition").count())
    expected: dict[tuple[str, int], int] = {}
    for r in manifest_rows():
        key = (r["topic"], r["partition"])
        expected[key] = expected.get(key, 0) + 1
    assert got == sorted((t, p, n) for (t, p), n in expected.items())


@pytest.mark.spark
def test_load_list_of_paths(spark):
    root = _samples()
    df = kafkalog(
        spark, [str(root / "orders-0"), str(root / "orders-1" / "00000000000000000000.log")]
    )
    assert collect(df, "topic", "partition", "offset") == tpo(manifest_rows("orders-0", "orders-1"))


@pytest.mark.spark
def test_explicit_registration_is_harmless(spark):
    spark.dataSource.register(ds.KafkaLogDataSource)
    assert kafkalog(spark, str(_samples() / "orders-0")).count() == 30


@pytest.mark.spark
def test_no_path_fails_clearly(spark):
    with pytest.raises(Exception) as excinfo:
        _ = spark.read.format("kafkalog").load().schema
    assert "no path" in error_text(excinfo)


# ---------------------------------------------------------------------------------- SQL


@pytest.mark.spark
def test_sql_temporary_view(spark):
    path = _samples() / "orders-1"
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW kafkalog_orders USING kafkalog "
        f"OPTIONS (path '{path}', includeHeaders 'false')"
    )
    try:
        view = spark.table("kafkalog_orders")
        assert "headers" not in view.columns
        got = spark.sql(
            "SELECT partition, count(*), min(offset), max(offset) FROM kafkalog_orders GROUP BY 1"
        ).collect()
        assert [tuple(r) for r in got] == [(1, 30, 0, 29)]
    finally:
        spark.sql("DROP VIEW IF EXISTS kafkalog_orders")


@pytest.mark.spark
def test_create_table_using_kafkalog_fails_with_a_pointer_to_temporary_views(spark, tmp_path):
    # Spark 4.3.0 builds the source with the table's options when the table is created, but with
    # no options at all when it is queried. Reading nothing silently would be worse than failing.
    copy = tmp_path / "orders-0"
    shutil.copytree(_samples() / "orders-0", copy)
    spark.sql(f"CREATE TABLE kafkalog_table_test USING kafkalog OPTIONS (path '{copy}')")
    try:
        with pytest.raises(Exception) as excinfo:
            spark.sql("SELECT count(*) FROM kafkalog_table_test").collect()
        text = error_text(excinfo)
        assert "no path" in text
        assert "CREATE TEMPORARY VIEW" in text
    finally:
        spark.sql("DROP TABLE IF EXISTS kafkalog_table_test")
    assert (copy / "00000000000000000000.log").exists()  # an external table: data untouched


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


# ------------------------------------------------------------------------------ pushdown

PUSHDOWN_FILTERS = [
    "topic = 'orders'",
    "topic IN ('orders', 'magic2-lz4') AND partition = 1",
    "partition IN (1)",
    "offset >= 1010 AND offset < 1020",
    "offset > 1140 OR offset = 3",
    "offset IN (3, 1001, 1143)",
    "offset <= 2 AND topic = 'transactions'",
    "timestamp >= '2023-11-15 22:15:00'",
    "timestamp > '2023-11-14 23:15:27.049999' AND topic = 'multi-segment'",
    "timestamp = '2023-11-15 22:15:33.507'",
    "topic = 'nope'",
    "topic = 'orders' AND topic = 'magic2-lz4'",
]


@pytest.mark.spark
@pytest.mark.parametrize("where", PUSHDOWN_FILTERS)
def test_pushdown_on_and_off_agree(spark, where):
    df = kafkalog(spark, str(_samples()), includeHeaders="false")
    cols = ("topic", "partition", "offset", "timestamp", "key")
    with pushdown(spark, True):
        on = collect(df.where(where), *cols)
    with pushdown(spark, False):
        off = collect(df.where(where), *cols)
    assert on == off


@pytest.mark.spark
def test_pushdown_results_match_the_manifest(spark):
    df = kafkalog(spark, str(_samples()))
    t = datetime(2023, 11, 15, 22, 15, 33, 500000, tzinfo=timezone.utc)
    t_ms = round(t.timestamp() * 1000)
    want = sorted(
        (r["partition"], r["offset"])
        for r in manifest_rows("orders-0", "orders-1")
        if r["timestamp"] >= t_ms
    )
    for enabled in (True, False):
        with pushdown(spark, enabled):
            got = collect(
                df.where("topic = 'orders'").where(df.timestamp >= t), "partition", "offset"
            )
        assert got == want


@pytest.mark.spark
def test_pushdown_pruning_only_where_spark_plans_per_scan(spark):
    # One split per segment file, so the number of Spark partitions shows what was planned.
    df = kafkalog(spark, str(_samples()), maxPartitionBytes="8k", openCostInBytes="8k")
    files = len(MANIFEST["files"])
    with pushdown(spark, True):
        planned = df.where("topic = 'orders'").rdd.getNumPartitions()
        assert df.where("topic = 'nope'").count() == 0
    assert planned == (2 if ds.FILTER_PRUNING else files)


@pytest.mark.spark
@pytest.mark.parametrize("enabled", [True, False])
def test_reused_dataframe_and_view_keep_every_row_after_filtered_queries(spark, enabled):
    # Spark 4.3.0 caches the planned read on the relation and a pushdown pass replaces it, so a
    # pruned plan would leak into the next query on the same DataFrame or view.
    total = len(manifest_rows())
    df = kafkalog(spark, str(_samples()), includeHeaders="false")
    df.createOrReplaceTempView("kafkalog_reuse")
    try:
        with pushdown(spark, enabled):
            assert df.where("topic = 'orders'").count() == 60
            assert df.count() == total
            assert (
                spark.sql("SELECT count(*) FROM kafkalog_reuse WHERE partition = 1").first()[0]
                == 30
            )
            assert spark.sql("SELECT count(*) FROM kafkalog_reuse").first()[0] == total
        with pushdown(spark, not enabled):
            assert df.count() == total
            assert spark.sql("SELECT count(*) FROM kafkalog_reuse").first()[0] == total
    finally:
        spark.catalog.dropTempView("kafkalog_reuse")


# ----------------------------------------------------------------- shared fixtures, bad data


@pytest.mark.spark
def test_client_written_fixtures_match_their_manifests(spark):
    root = require_shared(CLIENT_WRITTEN)
    expected: dict[tuple[str, int], int] = {}
    for manifest_path in sorted(root.glob("*/*.manifest.json")):
        m = json.loads(manifest_path.read_text())
        n = sum(1 for r in m["records"] if not r.get("control"))
        expected[(m["topic"], m["partition"])] = n
    if not expected:
        pytest.skip(f"no manifests under {root}")
    # Some mock-broker control batches carry a zero CRC; they are covered below.
    df = kafkalog(spark, str(root), verifyChecksums="false")
    got = {(t, p): n for t, p, n in collect(df.groupBy("topic", "partition").count())}
    assert got == expected


@pytest.mark.spark
def test_zero_crc_fixture_fails_naming_file_and_position(spark):
    d = require_shared(CLIENT_WRITTEN / "rdkafka-v2-txn-none-0")
    with pytest.raises(Exception) as excinfo:
        kafkalog(spark, str(d)).count()
    text = error_text(excinfo)
    assert "ChecksumError" in text
    assert str(d / "00000000000000000000.log") in text
    assert re.search(r"byte \d+", text)


@pytest.mark.spark
def test_corrupt_segment_fails_naming_file_and_position(spark, corrupt_dir):
    target, batch = corrupt_dir
    with pytest.raises(Exception) as excinfo:
        kafkalog(spark, str(target.parent)).collect()
    text = error_text(excinfo)
    assert str(target) in text
    match = re.search(r"byte (\d+)", text)
    assert match, text
    assert batch["position"] <= int(match.group(1)) < batch["position"] + batch["sizeInBytes"]


@pytest.mark.spark
def test_dropmalformed_returns_the_good_rows(spark, corrupt_dir):
    target, batch = corrupt_dir
    df = kafkalog(spark, str(target.parent), mode="DROPMALFORMED")
    bad = set(range(batch["baseOffset"], batch["lastOffset"] + 1))
    want = [(r["offset"],) for r in manifest_rows("magic2-none-0") if r["offset"] not in bad]
    assert collect(df, "offset") == want


@pytest.mark.spark
def test_ignore_corrupt_files_does_not_fail(spark, corrupt_dir):
    target, batch = corrupt_dir
    df = kafkalog(spark, str(target.parent), ignoreCorruptFiles="true")
    offsets = [o for (o,) in collect(df, "offset")]
    assert len(offsets) < len(manifest_rows("magic2-none-0"))
    assert not set(offsets) & set(range(batch["baseOffset"], batch["lastOffset"] + 1))


# -------------------------------------------------------------------------- registration


def _discoverable_without_repo_on_path() -> bool:
    code = (
        "import pkgutil; print(any(m.name == 'pyspark_kafkalog' for m in pkgutil.iter_modules()))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd="/"
    )
    return out.stdout.strip() == "True"


@pytest.mark.spark
@pytest.mark.slow
def test_new_session_auto_discovers_the_source(tmp_path):
    # Spark looks for pyspark_* modules once per JVM, with pkgutil.iter_modules(); a setuptools
    # editable install in its default (import hook) mode is invisible to that.
    if not _discoverable_without_repo_on_path():
        pytest.skip(
            "pyspark_kafkalog is not installed where pkgutil sees it: run `pip install .` or "
            "`pip install -e . --config-settings editable_mode=compat`"
        )
    script = textwrap.dedent(
        """
        import os, sys
        os.environ["PYSPARK_PYTHON"] = sys.executable
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[1]").appName("discovery")
                 .config("spark.ui.enabled", "false")
                 .config("spark.driver.host", "127.0.0.1")
                 .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
        print("COUNT", spark.read.format("kafkalog").load(sys.argv[1]).count())
        spark.stop()
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", script, str(_samples() / "orders-0")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert "COUNT 30" in out.stdout, out.stderr[-3000:]


# ------------------------------------------------------- pure-Python parts (no Spark jobs)


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ([EqualTo(("topic",), "a")], Pruning(topics=frozenset({"a"}))),
        ([In(("topic",), ("a", "b", None))], Pruning(topics=frozenset({"a", "b"}))),
        (
            [EqualTo(("topic",), "a"), EqualTo(("topic",), "b")],
            Pruning(topics=frozenset()),
        ),
        ([In(("partition",), (0, 2))], Pruning(partitions=frozenset({0, 2}))),
        ([GreaterThan(("offset",), 9)], Pruning(offset_min=10)),
        ([GreaterThanOrEqual(("offset",), 9)], Pruning(offset_min=9)),
        ([LessThan(("offset",), 9)], Pruning(offset_max=8)),
        ([LessThanOrEqual(("offset",), 9)], Pruning(offset_max=9)),
        ([EqualTo(("offset",), 5)], Pruning(offset_min=5, offset_max=5)),
        ([In(("offset",), (7, 3, 11))], Pruning(offset_min=3, offset_max=11)),
        (
            [GreaterThan(("offset",), 3), LessThan(("offset",), 10), EqualTo(("topic",), "t")],
            Pruning(topics=frozenset({"t"}), offset_min=4, offset_max=9),
        ),
        (
            [GreaterThan(("timestamp",), _ts("2023-11-14 22:13:20.000999"))],
            Pruning(timestamp_min_ms=1700000000000),
        ),
        (
            [GreaterThanOrEqual(("timestamp",), _ts("2023-11-14 22:13:20.001"))],
            Pruning(timestamp_min_ms=1700000000001),
        ),
        (
            [In(("timestamp",), (_ts("2023-11-14 22:13:21"), _ts("2023-11-14 22:13:20")))],
            Pruning(timestamp_min_ms=1700000000000),
        ),
    ],
)
def test_filters_become_conservative_pruning(filters, expected):
    assert pruning_from_filters(filters) == expected


@pytest.mark.parametrize(
    "flt",
    [
        LessThan(("timestamp",), _ts("2023-11-14 22:13:20")),  # no upper timestamp bound
        GreaterThan(("partition",), 1),
        GreaterThan(("topic",), "a"),
        Not(EqualTo(("topic",), "a")),
        IsNotNull(("offset",)),
        StringStartsWith(("topic",), "ord"),
        EqualTo(("key",), b"k"),
        EqualTo(("headers", "key"), "x"),
        EqualTo(("offset",), 1.5),
    ],
)
def test_filters_we_cannot_use_are_ignored(flt):
    assert pruning_from_filters([flt]) is None


def test_push_filters_returns_every_filter_unchanged():
    opts = parse_options({"path": "x"})
    reader = ds.KafkaLogPushdownReader(opts, default_projection(), default_projection().schema)
    filters = [EqualTo(("topic",), "a"), Not(EqualTo(("offset",), 1))]
    assert list(reader.pushFilters(filters)) == filters
    assert all(a is b for a, b in zip(reader.pushFilters(filters), filters, strict=True))
    assert reader.pruning == Pruning(topics=frozenset({"a"}))


def test_reader_class_depends_on_the_planning_worker():
    from pyspark.sql.datasource import DataSourceReader

    assert ds.FILTER_PRUNING == hasattr(DataSourceReader, "pushLimit")
    assert not ds._in_pushdown_worker()
    assert "pushFilters" not in ds.KafkaLogReader.__dict__
    assert "pushFilters" in ds.KafkaLogPushdownReader.__dict__


def test_data_source_parses_options_once_and_needs_a_path():
    source = ds.KafkaLogDataSource({"path": "/x", "includeheaders": "false"})
    assert source.read_options.paths == ("/x",)
    assert source.read_options.include_headers is False
    with pytest.raises(OptionError, match="'mode'"):
        ds.KafkaLogDataSource({"path": "/x", "mode": "nope"})
    with pytest.raises(Exception, match="CREATE TEMPORARY VIEW"):
        ds.KafkaLogDataSource({})
    # Keys Spark adds for catalog tables are not user options.
    table = ds.KafkaLogDataSource({"path": "/x", "owner": "me", "location": "/x", "provider": "k"})
    assert table.read_options.paths == ("/x",)


def test_check_schema_maps_names_and_types():
    available = default_projection()
    schema = StructType(
        [StructField("OFFSET", LongType()), StructField("timestamp", TimestampType())]
    )
    projection, arrow = ds.check_schema(schema, available)
    assert projection.names == ("offset", "timestamp")
    assert arrow.names == ["OFFSET", "timestamp"]
    with pytest.raises(OptionError, match="appears twice"):
        ds.check_schema(
            StructType([StructField("offset", LongType()), StructField("Offset", LongType())]),
            available,
        )
    with pytest.raises(OptionError, match="must be nullable"):
        ds.check_schema(StructType([StructField("partition", IntegerType(), False)]), available)


def test_empty_plan_partition_reads_nothing_and_partitions_pickle():
    opts = parse_options({"path": "x"})
    reader = ds.KafkaLogReader(opts, default_projection(), default_projection().schema)
    assert list(reader.read(InputPartition(None))) == []
    part = parts.SplitPartition(Split(3, (SegmentRange("/x/00000000000000000000.log", 0, 10),)))
    assert pickle.loads(pickle.dumps(part)) == part
    assert pickle.loads(pickle.dumps(reader)).read_options == opts


def test_task_summary_is_a_warning_only_when_something_was_skipped(caplog):
    split = Split(0, (SegmentRange("/x/00000000000000000000.log", 0, 10),))
    with caplog.at_level(logging.INFO, logger="kafkalog"):
        parts.log_summary(split, ReadStats(records=5, batches=1, segments=1))
        parts.log_summary(split, ReadStats(records=5, malformed_batches=1, malformed_bytes=99))
    levels = [(r.levelno, "skipped 1 malformed" in r.getMessage()) for r in caplog.records]
    assert levels == [(logging.INFO, False), (logging.WARNING, True)]


def test_conf_files_are_found_and_parsed():
    from kafkalog_source.spark import session

    assert session.conf_dir() == ROOT / "kafkalog_source" / "spark" / "conf"  # shipped in the wheel
    conf = session.session_conf({"spark.sql.shuffle.partitions": "3"})
    assert conf["spark.sql.python.filterPushdown.enabled"] == "true"
    assert conf["spark.sql.session.timeZone"] == "UTC"
    assert conf["spark.sql.shuffle.partitions"] == "3"
    assert conf["spark.driver.host"] == "127.0.0.1"  # from spark-local.conf
    assert "log4j2.configurationFile" in conf["spark.driver.extraJavaOptions"]
    # the file a cluster gets holds nothing that ties the driver to this machine
    cluster = session.read_spark_defaults(ROOT / "conf" / "spark-defaults.conf")
    assert not [k for k in cluster if k.startswith("spark.driver.") or "warehouse" in k]


def test_worker_heap_frozen_once_in_a_reused_worker_only(monkeypatch):
    """Spark's daemon collects after every task of a reused worker; kafkalog freezes the
    worker's heap once (after its first split) so that collection stays cheap, and leaves any
    other process alone."""
    import gc

    from kafkalog_source.spark import partitions

    assert gc.get_freeze_count() == 0
    monkeypatch.setattr(partitions, "_heap_frozen", False)
    monkeypatch.delenv("SPARK_REUSE_WORKER", raising=False)
    partitions._freeze_worker_heap()
    assert gc.get_freeze_count() == 0 and not partitions._heap_frozen
    monkeypatch.setenv("SPARK_REUSE_WORKER", "1")
    try:
        partitions._freeze_worker_heap()
        assert gc.get_freeze_count() > 0 and partitions._heap_frozen
        gc.unfreeze()
        partitions._freeze_worker_heap()  # once per process
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
