"""The Spark recipe of docs/guides/lake-tables.md, offline: ``readStream.format("kafkalog")`` with
``foreachBatch`` into a Delta table (deltalake, from the micro-batch's Arrow data) and an Iceberg
table (PyIceberg), each write made idempotent by the micro-batch id kept in the table's own
commit (a Delta app transaction; an Iceberg snapshot summary property), so that a micro-batch
Spark replays after a restart is not written twice. On a cluster the same functions run on the
driver, or the JVM writers do the same (``txnAppId``/``txnVersion``, ``snapshot-property.*``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_lake_runs import write_segment

pytest.importorskip("pyiceberg")
pytest.importorskip("deltalake")

APP = "orders-to-lake"  # one id per streaming query


def to_delta(path: str) -> Any:
    """The recipe's Delta writer: a micro-batch appended once, its id in an app transaction."""
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    def write(batch_df: Any, batch_id: int) -> None:
        if DeltaTable.is_deltatable(path):
            done = DeltaTable(path).transaction_version(APP)
            if done is not None and done >= batch_id:
                return  # a micro-batch replayed after a restart: already in the table
        write_deltalake(
            path,
            batch_df.toArrow(),
            mode="append",
            partition_by=["topic"],
            commit_properties=CommitProperties(app_transactions=[Transaction(APP, batch_id)]),
        )

    return write


def to_iceberg(catalog: Any, name: str) -> Any:
    """The recipe's Iceberg writer: a micro-batch appended once, its id in the snapshot
    summary."""
    from pyiceberg.exceptions import NoSuchTableError

    key = f"{APP}.batch"

    def write(batch_df: Any, batch_id: int) -> None:
        data = batch_df.toArrow()
        try:
            table = catalog.load_table(name)
        except NoSuchTableError:
            table = catalog.create_table(name, schema=data.schema)
        snap = table.current_snapshot()
        while snap is not None:  # the last micro-batch this query committed
            if snap.summary[key] is not None:
                if int(snap.summary[key]) >= batch_id:
                    return
                break
            snap = (
                table.snapshot_by_id(snap.parent_snapshot_id) if snap.parent_snapshot_id else None
            )
        table.append(data, snapshot_properties={key: str(batch_id)})

    return write


def run(spark: Any, logs: Path, ckpt: Path, write: Any) -> None:
    q = (
        spark.readStream.format("kafkalog")
        .load(str(logs))
        .select("topic", "partition", "offset", "timestamp", "key", "value")
        .writeStream.foreachBatch(write)
        .option("checkpointLocation", str(ckpt))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(300)
    assert q.exception() is None, q.exception()


@pytest.mark.spark
def test_foreachbatch_into_delta_and_iceberg_exactly_once(spark: Any, tmp_path: Path) -> None:
    from deltalake import DeltaTable
    from pyiceberg.catalog.sql import SqlCatalog

    logs = tmp_path / "logs"
    ends = {"a": write_segment(logs / "a-0", 0, 2), "b": write_segment(logs / "b-0", 0, 1)}
    delta = str(tmp_path / "delta")
    catalog = SqlCatalog(
        "lake", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh"
    )
    catalog.create_namespace("kafka")
    writers = {"delta": to_delta(delta), "iceberg": to_iceberg(catalog, "kafka.orders")}

    def offsets() -> dict[str, list[tuple]]:
        cols = ["topic", "partition", "offset"]
        d = DeltaTable(delta).to_pyarrow_table(columns=cols)
        i = catalog.load_table("kafka.orders").scan(selected_fields=tuple(cols)).to_arrow()
        return {
            n: sorted(zip(*(t.column(c).to_pylist() for c in cols), strict=True))
            for n, t in (("delta", d), ("iceberg", i))
        }

    def both(batch_df: Any, batch_id: int) -> None:  # one query feeds both recipes
        for write in writers.values():
            write(batch_df, batch_id)

    want = lambda: [(t, 0, o) for t in sorted(ends) for o in range(ends[t])]  # noqa: E731
    run(spark, logs, tmp_path / "ckpt", both)
    assert offsets() == {"delta": want(), "iceberg": want()}
    ends["a"] = write_segment(logs / "a-0", ends["a"], 1)  # the archive grows; the next run
    run(spark, logs, tmp_path / "ckpt", both)
    assert offsets() == {"delta": want(), "iceberg": want()}
    # a micro-batch replayed (Spark restarted before its commit was recorded): written once
    replay = spark.read.format("kafkalog").load(str(logs / "a-0"))
    for write in writers.values():
        write(replay, 1)
    assert offsets() == {"delta": want(), "iceberg": want()}
