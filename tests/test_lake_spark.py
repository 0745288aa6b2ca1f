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

import pyarrow as pa
import pytest
from test_lake_runs import write_segment

pytest.importorskip("pyiceberg")
pytest.importorskip("deltalake")

APP = "orders-to-lake"  # one id per streaming query
COLUMNS = ("topic", "partition", "offset", "timestamp", "key", "value")


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


# the guide's query of the micro-batches an Iceberg table holds (its Spark recipe), as it reads
ICEBERG_DONE = (
    "SELECT max(CAST(s.summary['orders-to-iceberg.batch'] AS BIGINT)) AS b ",
    "FROM lake.kafka.orders.snapshots s JOIN lake.kafka.orders.history h ",
    "ON s.snapshot_id = h.snapshot_id WHERE h.is_current_ancestor",
)


def to_iceberg(catalog: Any, name: str) -> Any:
    """The recipe's Iceberg writer: a micro-batch appended once, its id in the snapshot
    summary; the guide's query of the ids the table's lineage holds, run by DuckDB over
    PyIceberg's snapshots and history metadata tables (Spark's, offline)."""
    import duckdb
    from pyiceberg.exceptions import NoSuchTableError

    sql = "".join(ICEBERG_DONE).replace("lake.kafka.orders.", "")

    def write(batch_df: Any, batch_id: int) -> None:
        data = batch_df.toArrow()
        try:
            table = catalog.load_table(name)
        except NoSuchTableError:
            table = catalog.create_table(name, schema=data.schema)
        con = duckdb.connect()
        con.register("snapshots", table.inspect.snapshots())
        con.register("history", table.inspect.history())
        done = con.execute(sql).fetchall()[0][0]
        con.close()
        if done is not None and done >= batch_id:
            return  # a micro-batch replayed after a restart: already in the table
        table.append(data, snapshot_properties={"orders-to-iceberg.batch": str(batch_id)})

    return write


def test_the_guide_shows_the_iceberg_query() -> None:
    guide = Path(__file__).resolve().parents[1] / "docs" / "guides" / "lake-tables.md"
    text = guide.read_text()
    assert all(f'"{part}"' in text for part in ICEBERG_DONE)


def run(spark: Any, logs: Path, ckpt: Path, write: Any) -> None:
    q = (
        spark.readStream.format("kafkalog")
        .load(str(logs))
        .select(*COLUMNS)
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
    # another writer commits after the query's last micro-batch (no property in its summary)
    table = catalog.load_table("kafka.orders")
    other = table.scan(row_filter="offset = 0 and topic = 'b'").to_arrow()
    table.append(other.set_column(0, "topic", pa.array(["z"] * other.num_rows)))
    ends["z"] = 1
    # a micro-batch replayed (Spark restarted before its commit was recorded): written once
    replay = spark.read.format("kafkalog").load(str(logs / "a-0")).select(*COLUMNS)
    for write in writers.values():
        write(replay, 1)
    iceberg = offsets()["iceberg"]
    assert iceberg == want() and len(iceberg) == len(set(iceberg))
