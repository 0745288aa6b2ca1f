"""What the Spark data source tests share (tests/test_spark.py, test_spark_options.py): the
expected rows from ``sample_segments/MANIFEST.json``, reading through ``kafkalog``, collecting,
and Python filter pushdown switched on or off around a block."""

from __future__ import annotations

import json
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES

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
