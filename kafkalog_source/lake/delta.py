"""Delta Lake tables through the ``deltalake`` package (delta-rs): the table's state and schema,
and one commit per run that writes the data files and adds them.

**Writes.** Record batches, with the derived partition columns (``timestamp_day``, see
:mod:`.spec`) computed per batch, are gathered into chunks of about :data:`~.sink.CHUNK_BYTES`
and written by pyarrow as Hive-partitioned Parquet files under OUT (the partition columns in
the paths, not in the files, as Delta wants), as ``convert --format parquet`` writes; then one
Delta commit (``deltalake``: ``create_table_with_add_actions``, ``create_write_transaction``)
adds them with their partition values and statistics. A run that changes the schema (columns
and struct fields added) is one commit too: delta-rs's ``write_deltalake`` writes its files
and commits them with the merged schema (``schema_mode="merge"``; the add actions of
``create_write_transaction`` cannot carry a schema change); the batches are conformed to the
merged schema (:func:`~.schema.conform`).

**State.** The commit info of each kafkalog commit carries the run's state (:mod:`.state`) as
custom metadata, and the commit adds one app transaction (``txn``) per topic-partition:
``appId`` ``kafkalog:<topic>:<partition>``, ``version`` the next offset to convert. A run reads
the state from the newest commit info that has it; once the log's old commits are cleaned up
after a checkpoint, the app transactions (which checkpoints keep) still give every
topic-partition's offset.

**Concurrency.** delta-rs commits version N+1 only if no other commit took it; when one did, it
checks the other commit for conflicts and tries the next version. Two kafkalog runs both add the
app transactions of every topic-partition they hold, which delta-rs reports as a conflict:
the later commit fails (:class:`~.spec.ConcurrentRunError`), its files are deleted, and the run
starts over from the offsets the other committed. A commit by anything else (an OPTIMIZE,
another writer's append) does not conflict, and the run's commit lands after it. The commit
that creates the table is not retried at all: delta-rs would commit it as a second creation on
top of a table another run created meanwhile.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

from ..redact import scrub
from ..streaming.source import Offsets
from . import sink as hooks
from .schema import relaxed
from .sink import Committed, chunks, foreign_table, out_location, parquet_encodings, write_behind
from .spec import ConcurrentRunError, PartitionField, TableError, TableTarget, TargetError
from .state import OFFSETS, TXN_PREFIX, TableState, txn_app_id
from .stores import delta_storage_options, probe_delta, settings_secrets

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # a null partition value in a Hive path
HISTORY_STEP = 8  # how much further each look back for the last kafkalog commit reaches


def derived_column(p: PartitionField, source: pa.Array) -> pa.Array:
    """The Delta column of a transform partition field computed from ``source`` (a timestamp):
    ``day`` a date, ``month`` the month's first day, ``year`` the year (int32), ``hour`` the
    timestamp truncated to the hour; in UTC."""
    import pyarrow.compute as pc

    if p.transform == "day":
        return utc_days(source)
    if p.transform == "month":
        return pc.cast(pc.floor_temporal(source, unit="month"), pa.date32())
    if p.transform == "year":
        return pc.cast(pc.year(source), pa.int32())
    return pc.floor_temporal(source, unit="hour")


def utc_days(source: pa.Array) -> pa.Array:
    """The UTC date of each timestamp (microseconds): a floor division of the values, several
    times faster than Arrow's time-zone-aware cast, which gives the same dates."""
    import numpy as np
    import pyarrow.compute as pc

    if source.offset or source.type.unit != "us":
        return pc.cast(source, pa.date32())
    validity, data = source.buffers()[:2]
    values = np.frombuffer(data, dtype=np.int64, count=len(source))
    days = np.floor_divide(values, 86_400_000_000).astype(np.int32)
    return pa.Array.from_buffers(
        pa.date32(), len(source), [validity, pa.py_buffer(days)], null_count=source.null_count
    )


def _derived_type(p: PartitionField, source: pa.DataType) -> pa.DataType:
    if p.transform in ("day", "month"):
        return pa.date32()
    if p.transform == "year":
        return pa.int32()
    return source


class DeltaSink:
    """One Delta table: opened by :meth:`open`, appended to by :meth:`append`."""

    def __init__(self, target: TableTarget, role: str = "OUT") -> None:
        """The table at ``target``'s location, which messages call ``role`` (``convert``'s
        OUT; nothing for a query's PATH)."""
        self.target = target
        self.out = out_location(target.location)
        self.shown = self.out.shown
        self.where = f"{role} {self.shown}" if role else self.shown
        read = delta_storage_options(target.location)  # the store settings of the read
        self.storage = {**read, **target.properties}
        self.table: Any = None
        self._secrets = sorted({*settings_secrets(read), *target.secrets()} - {""}, key=len)[::-1]

    def _message(self, e: BaseException) -> str:
        return scrub(" ".join(str(e).split()) or type(e).__name__, self._secrets)[:400]

    def _commit_failed(self, e: BaseException) -> TableError:
        """The error for a commit the table refused: another run's (a conflict) or else."""
        if _conflict(e):
            return ConcurrentRunError(
                f"another run committed to the Delta table at {self.shown} while this one "
                f"wrote ({self._message(e)})"
            )
        return TableError(f"cannot commit to the Delta table at {self.where}: {self._message(e)}")

    def open(self) -> TableState | None:
        """Load the table (if any) and return the state of its last kafkalog commit (None: no
        table yet). Raises :class:`TableError` when OUT holds something else or the table was
        not written by kafkalog."""
        if not self.load():
            if self.out.remote:  # a commit that cannot happen, found before anything is written
                self._probe()
            return None
        return self._state()

    def _probe(self) -> None:
        """List OUT's ``_delta_log/`` through delta-rs's own client, as the commit will: a
        table it cannot reach there fails now, naming OUT and the cause, before anything is
        read or written (:func:`~.stores.probe_delta`; an existing table was just opened)."""
        try:
            probe_delta(self.out.uri, self.storage)
        except Exception as e:
            raise TableError(
                f"cannot reach the Delta table at {self.where} (through deltalake): "
                f"{self._message(e)}; nothing was read or written"
            ) from None

    def load(self) -> bool:
        """Load the table; whether there is one (:class:`TableError` when OUT holds something
        else)."""
        from deltalake import DeltaTable

        self.table = None
        if not self.out.has("_delta_log"):
            what = foreign_table(self.out, "delta")
            if what is not None:
                raise TargetError(f"{self.where} is {what}")
            return False
        try:
            self.table = DeltaTable(self.out.uri, storage_options=self.storage or None)
        except Exception as e:
            raise TableError(
                f"cannot open the Delta table at {self.where}: {self._message(e)}"
            ) from None
        return True

    def _state(self) -> TableState:
        dt = self.table
        version = dt.version()
        limit = 1  # the last commit, usually the last run's
        while True:
            history = dt.history(limit)
            for info in history:
                state = TableState.from_properties(info, f"the Delta table at {self.shown}")
                if state is not None:
                    return self._checked(state)
            if len(history) < limit or limit > version + 1:
                break
            limit *= HISTORY_STEP
        if not dt.get_add_actions(flatten=True).num_rows and version == 0:
            return TableState()
        raise TargetError(
            f"{self.where} is a Delta table that kafkalog did not write, or whose kafkalog "
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

    def append(
        self,
        schema: pa.Schema,
        batches: Iterator[pa.RecordBatch],
        state: TableState,
        partitioning: tuple[PartitionField, ...],
        replace: str | None = None,
    ) -> Committed:
        """Write ``batches`` (conformed to ``schema``) as data files and commit them with
        ``state`` in one Delta commit, creating the table if there is none or changing its
        schema (:meth:`_append_merged`). Raises :class:`ConcurrentRunError` when another kafkalog
        run committed first; the run's files are then deleted. ``--mode overwrite`` (``replace``
        set): the commit replaces the table (CREATE OR REPLACE: its files, schema and
        partitioning) once the files are written; until then it stays as it was."""
        from deltalake import CommitProperties, Transaction

        derived = [p for p in partitioning if p.transform != "identity"]
        full = pa.schema(
            list(schema)
            + [pa.field(p.derived, _derived_type(p, schema.field(p.column).type)) for p in derived]
        )
        columns = [p.derived for p in partitioning]
        props = CommitProperties(
            custom_metadata=state.to_properties(),
            app_transactions=[
                Transaction(txn_app_id(t, p), int(off))
                for (t, p), off in sorted(state.offsets.items())
            ],
        )

        def with_derived() -> Iterator[pa.RecordBatch]:
            for rb in batches:
                if derived and rb.num_rows:
                    cols = [derived_column(p, rb.column(p.column)) for p in derived]
                    rb = pa.RecordBatch.from_arrays([*rb.columns, *cols], schema=full)
                yield rb

        if self.table is not None and not replace and not _same(self.schema(), schema):
            return self._append_merged(full, columns, props, with_derived())
        writer = _FileWriter(self.out, full, columns)
        try:
            for _ in write_behind(chunks(with_derived()), writer.write):
                pass
            hooks.before_commit(self.out.uri, [a.path for a in writer.actions])
        except BaseException:
            writer.delete()  # no commit began: the files are no part of the table
            raise
        try:
            self._commit(writer.actions, full, columns, props, replace is not None)
        except ConcurrentRunError:  # delta-rs says the commit did not land
            writer.delete()
            raise
        # any other failure may be a commit that landed with its answer lost: the files stay
        return Committed(writer.rows, len(writer.actions), str(self.table.version()), None)

    def _append_merged(
        self, full: pa.Schema, columns: list[str], props: Any, batches: Iterator[pa.RecordBatch]
    ) -> Committed:
        """A run that changes the schema: its batches written and committed with the merged
        schema in one commit (``write_deltalake``, ``schema_mode="merge"``; delta-rs writes the
        files, zstd level 1, and their statistics). A run killed before that commit leaves the
        table as it was."""
        from deltalake import DeltaTable, WriterProperties, write_deltalake

        counted = [0]
        failed: list[BaseException] = []  # the read's error, which delta-rs would wrap

        def rows() -> Iterator[pa.RecordBatch]:
            try:
                for rb in batches:
                    counted[0] += rb.num_rows
                    yield rb
            except BaseException as e:
                failed.append(e)
                raise

        before = self.table.get_add_actions(flatten=True).num_rows
        hooks.before_commit(self.out.uri, [])
        try:
            write_deltalake(
                self.table,
                pa.RecordBatchReader.from_batches(full, rows()),
                mode="append",
                schema_mode="merge",
                partition_by=columns or None,
                commit_properties=props,
                writer_properties=WriterProperties(compression="ZSTD", compression_level=1),
            )
        except Exception as e:
            if failed:  # the read failed: nothing was committed
                raise failed[0] from None
            raise self._commit_failed(e) from None
        self.table = DeltaTable(self.out.uri, storage_options=self.storage or None)
        files = self.table.get_add_actions(flatten=True).num_rows - before
        return Committed(counted[0], files, str(self.table.version()), None)

    def _commit(
        self, actions: list[Any], full: pa.Schema, columns: list[str], props: Any, replace: bool
    ) -> None:
        from deltalake import CommitProperties, DeltaTable
        from deltalake.schema import Schema
        from deltalake.transaction import create_table_with_add_actions

        try:
            if self.table is None or replace:
                # no retry: delta-rs would commit a second table creation as the next version
                # of a table another run created meanwhile, its files beside the other's;
                # --mode overwrite: CREATE OR REPLACE, the old files removed in this commit
                props = CommitProperties(
                    custom_metadata=props.custom_metadata,
                    app_transactions=props.app_transactions,
                    max_commit_retries=0,
                )
                create_table_with_add_actions(
                    self.out.uri,
                    Schema.from_arrow(full),
                    actions,
                    mode="overwrite" if replace else "error",
                    partition_by=columns,
                    name=None,
                    description=None,
                    configuration=None,
                    storage_options=self.storage or None,
                    commit_properties=props,
                    post_commithook_properties=None,
                )
            else:
                self.table.create_write_transaction(
                    actions, mode="append", schema=full, partition_by=columns,
                    commit_properties=props,
                )  # fmt: skip
        except Exception as e:
            raise self._commit_failed(e) from None
        self.table = DeltaTable(self.out.uri, storage_options=self.storage or None)


class _FileWriter:
    """A run's Parquet data files under OUT, Hive-partitioned by the partition columns (which
    the files do not hold, as Delta wants), written with pyarrow in chunks of about
    :data:`~.sink.CHUNK_BYTES`; the Delta add action of each (path, partition values, size,
    statistics)."""

    def __init__(self, out: Any, schema: pa.Schema, columns: list[str]) -> None:
        self.out = out
        self.schema = schema
        self.columns = columns
        self.uuid = str(uuid.uuid4())
        self.chunks = 0
        self.rows = 0
        self.actions: list[Any] = []
        self.paths: list[str] = []

    def write(self, batches: list[pa.RecordBatch]) -> None:
        """Write a chunk (its files: one per partition in it)."""
        import pyarrow.dataset as ds
        from deltalake.transaction import AddAction

        table = pa.Table.from_batches(batches, schema=self.schema)
        self.rows += table.num_rows
        data = pa.schema([f for f in self.schema if f.name not in self.columns])
        written: list[Any] = []
        ds.write_dataset(
            table,
            self.out.path,
            filesystem=self.out.fs,
            format="parquet",
            partitioning=ds.partitioning(
                pa.schema([self.schema.field(c) for c in self.columns]), flavor="hive"
            )
            if self.columns
            else None,
            basename_template=f"part-{self.chunks:05d}-{self.uuid}-c{{i}}.zstd.parquet",
            file_options=ds.ParquetFileFormat().make_write_options(
                compression="zstd", compression_level=1, **parquet_encodings(data)
            ),
            existing_data_behavior="overwrite_or_ignore",
            max_partitions=1 << 20,
            max_rows_per_group=1 << 20,
            file_visitor=written.append,
        )
        self.chunks += 1
        now = int(time.time() * 1000)
        for f in written:
            # relative to the table, as on disk (delta-rs percent-encodes it for the log)
            rel = f.path[len(self.out.path) :].lstrip("/")
            self.paths.append(f.path)
            values = self._partition_values(rel)
            self.actions.append(AddAction(rel, f.size, values, now, True, _stats(f.metadata, data)))

    def _partition_values(self, rel: str) -> dict[str, str | None]:
        """The Delta partition values of a file at ``rel`` (Hive directories, URI-encoded)."""
        out: dict[str, str | None] = {}
        for part in rel.split("/")[:-1]:
            name, _, text = part.partition("=")
            value = unquote(text)
            if value == NULL_PARTITION:
                out[name] = None
            elif pa.types.is_timestamp(self.schema.field(name).type):
                t = datetime.fromisoformat(value).astimezone(timezone.utc)
                out[name] = t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            else:
                out[name] = value
        return out

    def delete(self) -> None:
        """Delete the files written (best effort: an unreferenced file is no part of the
        table)."""
        for path in self.paths:
            try:
                self.out.fs.delete_file(path)
            except OSError:
                pass


def _stats(md: Any, schema: pa.Schema) -> str:
    """Delta file statistics from a Parquet footer: the row count, and nulls, minimum and maximum
    of each top-level column of a plain type (nested columns have none)."""
    nulls: dict[str, int] = {}
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    plain = {
        f.name
        for f in schema
        if not (
            pa.types.is_nested(f.type) or pa.types.is_binary(f.type) or pa.types.is_decimal(f.type)
        )
    }
    unknown: set[str] = set()
    for g in range(md.num_row_groups):
        group = md.row_group(g)
        for c in range(group.num_columns):
            col = group.column(c)
            name = col.path_in_schema
            if name not in plain:
                continue
            st = col.statistics
            if st is None or not st.has_null_count:
                unknown.add(name)
                continue
            nulls[name] = nulls.get(name, 0) + st.null_count
            if st.has_min_max:
                lo, hi = _json_value(st.min), _json_value(st.max)
                mins[name] = lo if name not in mins else min(mins[name], lo)
                maxs[name] = hi if name not in maxs else max(maxs[name], hi)
    for name in unknown:
        nulls.pop(name, None)
        mins.pop(name, None)
        maxs.pop(name, None)
    return json.dumps(
        {"numRecords": md.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    )


def _json_value(v: Any) -> Any:
    if isinstance(v, datetime):
        if v.tzinfo is None:  # a timestamp without a time zone (timestamp_ntz): as it is
            return v.strftime("%Y-%m-%dT%H:%M:%S.%f")  # (astimezone would take it as local)
        return v.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return v


def _conflict(e: BaseException) -> bool:
    """Whether a commit failed because another commit took its version (a concurrent run), or
    created the table first."""
    name = type(e).__name__
    text = str(e).lower()
    return name == "CommitFailedError" or "concurrent" in text or "already exists" in text


def _same(a: pa.Schema | None, b: pa.Schema) -> bool:
    return a is not None and a.equals(b, check_metadata=False)


__all__ = ["OFFSETS", "TXN_PREFIX", "DeltaSink", "derived_column"]
