"""The pure-Python parts of the ``kafkalog`` Spark data source, no Spark job: Spark's filters
as conservative pruning, the reader class, option parsing once, schema checks, plan
partitions, the task summary, conf files and the worker heap. End to end on the shared
session: tests/test_spark.py, test_spark_options.py.
"""

from __future__ import annotations

import logging
import pickle
from datetime import datetime, timezone

import pytest
from conftest import ROOT
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
