"""The Delta writer's files, written with ``pyarrow.parquet`` (no ``pyarrow.dataset``, which
imports pandas): a chunk split by its partition values (nulls, booleans, dates, hours), each part
in the order read, the partition values as Delta writes them, and a table delta-rs reads back
with the same rows."""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

import pyarrow as pa
import pytest

pytest.importorskip("deltalake")

from lake_support import write_segment  # noqa: E402

from kafkalog_source.lake import TableTarget, convert_table, parse_partitioning  # noqa: E402
from kafkalog_source.lake.delta import _partitions  # noqa: E402

T0 = 1_699_920_000_000  # 2023-11-14 00:00 UTC


def test_a_chunk_is_split_by_partition_values_keeping_the_order() -> None:
    hour = pa.timestamp("us", tz="UTC")
    rows = [
        ("b", 1, True, date(2023, 11, 14), datetime(2023, 11, 14, 1, tzinfo=timezone.utc)),
        ("a", None, False, None, None),
        ("b", 1, True, date(2023, 11, 14), datetime(2023, 11, 14, 1, tzinfo=timezone.utc)),
        (None, 2, None, date(2023, 11, 15), datetime(2023, 11, 15, 23, tzinfo=timezone.utc)),
        ("a", None, False, None, None),
        ("a b/%", 1, True, date(2023, 11, 14), None),
    ]
    names = ["s", "i", "b", "d", "h"]
    types = [pa.string(), pa.int32(), pa.bool_(), pa.date32(), hour]
    table = pa.table(
        {
            n: pa.array([r[k] for r in rows], t)
            for k, (n, t) in enumerate(zip(names, types, strict=True))
        }
    ).append_column("row", pa.array(range(len(rows)), pa.int64()))
    got = {
        tuple(values[n] for n in names): part.column("row").to_pylist()
        for values, part in _partitions(table, names)
    }
    assert got == {
        ("b", "1", "true", "2023-11-14", "2023-11-14T01:00:00.000000Z"): [0, 2],
        ("a", None, "false", None, None): [1, 4],
        (None, "2", None, "2023-11-15", "2023-11-15T23:00:00.000000Z"): [3],
        ("a b/%", "1", "true", "2023-11-14", None): [5],
    }
    assert [v for v, _ in _partitions(table, [])] == [{}]
    assert list(_partitions(table.slice(0, 0), names)) == []


def test_a_partitioned_table_reads_back_with_every_row(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    logs, out = tmp_path / "logs", tmp_path / "t"
    for p, part in enumerate(("t-0", "t-1", "u-0")):
        # two hours in each partition, so one chunk holds several partition values
        write_segment(logs / part, 0, 6, value=part.encode(), ts=T0 + p * 3_600_000)
        write_segment(logs / part, 6, 4, value=part.encode(), ts=T0 + 86_400_000)
    spec = parse_partitioning("topic,partition,hour(timestamp)")
    run = convert_table(logs, TableTarget("delta", str(out), partitioning=spec), {})
    assert run.committed is not None
    dt = DeltaTable(str(out))
    acts = pa.RecordBatchReader.from_stream(dt.get_add_actions(flatten=True)).read_all()
    values = sorted(
        zip(
            acts.column("partition.topic").to_pylist(),
            acts.column("partition.partition").to_pylist(),
            [
                t.strftime("%Y-%m-%d %H")
                for t in acts.column("partition.timestamp_hour").to_pylist()
            ],
            acts.column("num_records").to_pylist(),
            strict=True,
        )
    )
    assert values == [
        ("t", 0, "2023-11-14 00", 6),
        ("t", 0, "2023-11-15 00", 4),
        ("t", 1, "2023-11-14 01", 6),
        ("t", 1, "2023-11-15 00", 4),
        ("u", 0, "2023-11-14 02", 6),
        ("u", 0, "2023-11-15 00", 4),
    ]
    back = dt.to_pyarrow_table(columns=["topic", "partition", "offset", "value"]).to_pylist()
    got = sorted((r["topic"], r["partition"], r["offset"], r["value"]) for r in back)
    want = sorted(
        (part[0], int(part[2]), o, b"%s%d" % (part.encode(), o if o < 6 else o - 6))
        for part in ("t-0", "t-1", "u-0")
        for o in range(10)
    )
    assert got == want
