"""The ``kafkalog`` Spark data source, end to end on the shared local session.

Expected rows come from ``sample_segments/MANIFEST.json`` (and the ``../shared`` client-written
manifests). Every Spark test uses the one session-scoped ``spark`` fixture of conftest.py;
``spark.sql.python.filterPushdown.enabled`` is a runtime SQL conf, so the pushdown tests toggle
it with ``spark.conf.set`` and restore it. Only the auto-discovery test starts a second Spark,
in a subprocess, because sources are discovered once per JVM. The read options and user
schemas: tests/test_spark_options.py; the pure-Python parts (no Spark jobs):
tests/test_spark_parts.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import CLIENT_WRITTEN, SAMPLES, require_shared
from pyspark.sql.types import LongType
from spark_support import (
    CORRUPT_SOURCE,
    DEFAULT_DDL,
    MANIFEST,
    _samples,
    collect,
    error_text,
    kafkalog,
    manifest_rows,
    ms,
    pushdown,
    tpo,
)

from kafkalog_source.arrow.schema import default_projection
from kafkalog_source.spark import datasource as ds


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
