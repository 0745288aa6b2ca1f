"""Delta Lake tables through the ``deltalake`` package (delta-rs): the table's state and schema,
and one commit per run that writes the data files and adds them.

**Writes.** The record batches stream into ``deltalake.write_deltalake`` (its Rust writer
partitions, writes Parquet and commits, without holding the data), with the derived partition
columns (``timestamp_day``, see :mod:`.spec`) computed per batch. A schema change goes in the same
commit (``schema_mode="merge"``): batches are conformed to the merged schema first
(:func:`~.schema.conform`), since the writer cannot fill a struct field a newer payload schema
dropped.

**State.** The commit info of each kafkalog commit carries the run's state (:mod:`.state`) as
custom metadata, and the commit adds one app transaction (``txn``) per topic-partition:
``appId`` ``kafkalog:<topic>:<partition>``, ``version`` the next offset to convert. A run reads
the state from the newest commit info that has it; once the log's old commits are cleaned up
after a checkpoint, the app transactions (which checkpoints keep) still give every
topic-partition's offset.

**Concurrency.** delta-rs commits version N+1 only if no other commit took it; when one did, it
checks the other commit for conflicts and tries the next version. Two kafkalog runs both add the
app transactions of every topic-partition they hold, which delta-rs reports as a conflict:
the later commit fails (:class:`~.spec.ConcurrentRunError`) and the run starts over from the
offsets the other committed. A commit by anything else (an OPTIMIZE, another writer's append)
does not conflict, and the run's commit lands after it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from ..redact import scrub
from ..streaming.source import Offsets
from . import sink as hooks
from .schema import relaxed
from .sink import Committed, foreign_table, out_location
from .spec import ConcurrentRunError, PartitionField, TableError, TableTarget, TargetError
from .state import OFFSETS, TXN_PREFIX, TableState, txn_app_id
from .stores import delta_storage_options

HISTORY_STEP = 50  # commits read per step when looking back for the last kafkalog commit


def derived_column(p: PartitionField, source: pa.Array) -> pa.Array:
    """The Delta column of a transform partition field computed from ``source`` (a timestamp):
    ``day`` a date, ``month`` the month's first day, ``year`` the year (int32), ``hour`` the
    timestamp truncated to the hour; in UTC."""
    import pyarrow.compute as pc

    if p.transform == "day":
        return pc.cast(pc.floor_temporal(source, unit="day"), pa.date32())
    if p.transform == "month":
        return pc.cast(pc.floor_temporal(source, unit="month"), pa.date32())
    if p.transform == "year":
        return pc.cast(pc.year(source), pa.int32())
    return pc.floor_temporal(source, unit="hour")


def _derived_type(p: PartitionField, source: pa.DataType) -> pa.DataType:
    if p.transform in ("day", "month"):
        return pa.date32()
    if p.transform == "year":
        return pa.int32()
    return source


class DeltaSink:
    """One Delta table: opened by :meth:`open`, appended to by :meth:`append`."""

    def __init__(self, target: TableTarget) -> None:
        self.target = target
        self.out = out_location(target.location)
        self.shown = self.out.shown
        self.storage = {**delta_storage_options(target.location), **target.properties}
        self.table: Any = None
        self._secrets = list(self.storage.values())

    def _message(self, e: BaseException) -> str:
        return scrub(" ".join(str(e).split()) or type(e).__name__, self._secrets)[:400]

    def open(self) -> TableState | None:
        """Load the table (if any) and return the state of its last kafkalog commit (None: no
        table yet). Raises :class:`TableError` when OUT holds something else or the table was
        not written by kafkalog."""
        if not self.load():
            return None
        return self._state()

    def load(self) -> bool:
        """Load the table; whether there is one (:class:`TableError` when OUT holds something
        else)."""
        from deltalake import DeltaTable

        self.table = None
        if not self.out.has("_delta_log"):
            what = foreign_table(self.out, "delta")
            if what is not None:
                raise TargetError(f"OUT {self.shown} is {what}")
            return False
        try:
            self.table = DeltaTable(self.out.uri, storage_options=self.storage or None)
        except Exception as e:
            raise TableError(
                f"cannot open the Delta table at OUT {self.shown}: {self._message(e)}"
            ) from None
        return True

    def _state(self) -> TableState:
        dt = self.table
        version = dt.version()
        limit = HISTORY_STEP
        while True:
            history = dt.history(limit)
            for info in history:
                state = TableState.from_properties(info, f"the Delta table at {self.shown}")
                if state is not None:
                    return self._checked(state)
            if len(history) < limit or limit > version + 1:
                break
            limit *= 4
        if not dt.get_add_actions(flatten=True).num_rows and version == 0:
            return TableState()
        raise TargetError(
            f"OUT {self.shown} is a Delta table that kafkalog did not write, or whose kafkalog "
            "commits were cleaned from its log: no commit says which offsets it holds; convert "
            "into another table"
        )

    def _checked(self, state: TableState) -> TableState:
        """``state`` with each partition's offset as its app transaction says (a commit after
        the one read may have moved them: newer commits win)."""
        offsets: Offsets = {}
        for key, off in state.offsets.items():
            v = self.table.transaction_version(txn_app_id(*key))
            offsets[key] = int(v) if v is not None else off
        state.offsets = offsets
        return state

    def schema(self) -> pa.Schema | None:
        """The table's columns as Arrow types, relaxed, without the derived partition columns
        (None: no table yet)."""
        if self.table is None:
            return None
        derived = {p.derived for p in self.partitioning() or () if p.transform != "identity"}
        arrow = pa.schema(self.table.schema().to_arrow())
        return relaxed(pa.schema([f for f in arrow if f.name not in derived]))

    def partitioning(self) -> tuple[PartitionField, ...] | None:
        """The table's partition columns, those named ``<column>_<transform>`` read as that
        transform (None: no table yet)."""
        if self.table is None:
            return None
        out = []
        for name in self.table.metadata().partition_columns:
            column, _, transform = name.rpartition("_")
            if column and transform in ("year", "month", "day", "hour"):
                out.append(PartitionField(column, transform))
            else:
                out.append(PartitionField(name))
        return tuple(out)

    def drop(self) -> None:
        """``--mode overwrite``: delete what is under OUT."""
        self.table = None
        self.out.clear()

    def append(
        self,
        schema: pa.Schema,
        batches: Iterator[pa.RecordBatch],
        state: TableState,
        partitioning: tuple[PartitionField, ...],
    ) -> Committed:
        """Write ``batches`` (conformed to ``schema``) and commit them with ``state`` in one
        Delta commit, creating the table if there is none. Raises :class:`ConcurrentRunError`
        when another kafkalog run committed first."""
        from deltalake import CommitProperties, Transaction, write_deltalake

        derived = [p for p in partitioning if p.transform != "identity"]
        full = pa.schema(
            list(schema)
            + [pa.field(p.derived, _derived_type(p, schema.field(p.column).type)) for p in derived]
        )
        counted = {"rows": 0}
        failure: list[BaseException] = []

        def stream() -> Iterator[pa.RecordBatch]:
            try:
                for rb in batches:
                    if not rb.num_rows:
                        continue
                    if derived:
                        cols = [derived_column(p, rb.column(p.column)) for p in derived]
                        rb = pa.RecordBatch.from_arrays([*rb.columns, *cols], schema=full)
                    counted["rows"] += rb.num_rows
                    yield rb
                hooks.before_commit(self.out.uri, [])
            except BaseException as e:  # the reader's error, not the writer's
                failure.append(e)
                raise

        props = CommitProperties(
            custom_metadata=state.to_properties(),
            app_transactions=[
                Transaction(txn_app_id(t, p), int(off))
                for (t, p), off in sorted(state.offsets.items())
            ],
        )
        evolving = self.table is not None and not _same(self.schema(), schema)
        try:
            write_deltalake(
                self.table if self.table is not None else self.out.uri,
                pa.RecordBatchReader.from_batches(full, stream()),
                mode="append",
                partition_by=[p.derived for p in partitioning] or None,
                schema_mode="merge" if evolving else None,
                storage_options=self.storage or None if self.table is None else None,
                commit_properties=props,
            )
        except Exception as e:
            if failure:
                raise failure[0] from None
            if _conflict(e):
                raise ConcurrentRunError(
                    f"another run committed to the Delta table at {self.shown} while this one "
                    f"wrote ({self._message(e)})"
                ) from None
            raise TableError(
                f"cannot write the Delta table at OUT {self.shown}: {self._message(e)}"
            ) from None
        from deltalake import DeltaTable

        dt = DeltaTable(self.out.uri, storage_options=self.storage or None)
        info = dt.history(1)[0]
        metrics = info.get("operationMetrics") or {}
        return Committed(
            counted["rows"],
            int(metrics.get("num_added_files", 0)),
            str(dt.version()),
            None,
        )


def _conflict(e: BaseException) -> bool:
    """Whether a write failed because another commit took its version (a concurrent run)."""
    name = type(e).__name__
    text = str(e).lower()
    return (
        name == "CommitFailedError"
        or "concurrent" in text
        or ("version" in text and "already exists" in text)
    )


def _same(a: pa.Schema | None, b: pa.Schema) -> bool:
    return a is not None and a.equals(b, check_metadata=False)


__all__ = ["OFFSETS", "TXN_PREFIX", "DeltaSink", "derived_column"]
