"""Delta Lake tables through the ``deltalake`` package (delta-rs): the table's state and schema,
and one commit per run that writes the data files and adds them.

**Writes.** Record batches, with the derived partition columns (``timestamp_day``, see
:mod:`.spec`) computed per batch, are gathered into chunks of about :data:`~.sink.CHUNK_BYTES`
and written by pyarrow as Hive-partitioned Parquet files under OUT (the partition columns in
the paths, not in the files, as Delta wants), as ``convert --format parquet`` writes; then one
Delta commit (``deltalake``: ``create_table_with_add_actions``, ``create_write_transaction``)
adds them with their partition values and statistics. A run that changes the schema (columns
and struct fields added) commits the change just before, with no data file
(``write_deltalake`` of no rows, ``schema_mode="merge"``; the add actions of
``create_write_transaction`` cannot carry a schema change); the batches are conformed to the
merged schema (:func:`~.schema.conform`).

**State.** The commit info of each kafkalog commit carries the run's state (:mod:`.state`) as
custom metadata, and the commit adds one app transaction (``txn``) per topic-partition:
``appId`` ``kafkalog:<topic>:<partition>``, ``version`` the next offset to convert; the table's
configuration (``metaData.configuration``) keeps the read options, payload schemas and archive
(set by a commit of its own after the run's when the read options change: a new or replaced
table; and by ``kafkalog maintain``). A run reads the state from the newest commit info that
has it (a copy made by ``kafkalog maintain``, :data:`COPIED_FROM`, unless a run committed after
it was read), each offset as its app transaction says. Once the log's commits are cleaned
up after a checkpoint (other writers' OPTIMIZE, VACUUM and log cleanup), the app transactions,
which checkpoints keep, give every topic-partition's offset and the configuration the rest;
only the last batches converted (checked by the next run) are then not known.

**Concurrency.** delta-rs commits version N+1 only if no other commit took it; when one did, it
checks the other commit for conflicts and tries the next version. Two kafkalog runs both add the
app transactions of every topic-partition they hold, which delta-rs reports as a conflict:
the later commit fails (:class:`~.spec.ConcurrentRunError`), its files are deleted, and the run
starts over from the offsets the other committed. A commit by anything else (an OPTIMIZE,
another writer's append) does not conflict, and the run's commit lands after it. The commit
that creates the table is not retried at all: delta-rs would commit it as a second creation on
top of a table another run created meanwhile.

**A commit that fails** may have landed all the same: delta-rs writes the log file with a
conditional PUT; when the reply is lost, its retry finds the file there (HTTP 412), reads it as
another's commit and reports a conflict with the run's own app transactions. So after any error
the table is reloaded and the run's id (``kafkalog.run`` in the commit info, :mod:`.state`) looked
for in the commits since: found, the run succeeded. Not found, the run's files are deleted only
when the rejection is definite (deltalake's ``CommitFailedError``; for the creation, a version 0
that is another's), and the run starts over when another commit landed; on any other error they
are kept and the run fails with :class:`~.spec.CommitUnknownError`, naming its id. No file that
a commit in the log may name is ever deleted.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from itertools import pairwise
from typing import Any
from urllib.parse import quote

import pyarrow as pa

from ..redact import scrub
from ..streaming.source import Offsets
from . import sink as hooks
from .schema import relaxed
from .sink import Committed, chunks, foreign_table, out_location, parquet_encodings, write_behind
from .spec import (
    CommitUnknownError,
    ConcurrentRunError,
    PartitionField,
    TableError,
    TableTarget,
    TargetError,
)
from .state import (
    ARCHIVE,
    OFFSETS,
    READ,
    RUN,
    SCHEMAS,
    TXN_PREFIX,
    VERSION,
    TableState,
    txn_app_id,
)
from .stores import delta_storage_options, probe_delta, settings_secrets

log = logging.getLogger("kafkalog")

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # a null partition value in a Hive path
HISTORY_STEP = 8  # how much further each look back for the last kafkalog commit reaches
# a commit info whose kafkalog state is a copy (made by ``kafkalog maintain``) of the table's
# state as read at the log version it names: a run that committed after that version is newer
COPIED_FROM = "kafkalog.copiedAt"
# the state's properties the table's configuration keeps (Delta metaData.configuration, which
# checkpoints keep): the read options, payload schemas and archive, for a log whose kafkalog
# commit infos were cleaned; the offsets are the app transactions'
CONFIGURATION = (READ, SCHEMAS, ARCHIVE, VERSION)


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
        if not self.out.remote and "%" in self.out.path:
            # delta-rs decodes %XX in a local path (%41 as A), even in a file:// URI with %25:
            # its commit lands in the directory given, and it then looks for its log elsewhere
            raise TargetError(
                f"{self.where}: a local path with '%' in it, which deltalake reads as a "
                "percent-encoding (and then cannot find the table's log): give the Delta table "
                "a directory without '%'"
            )
        read = delta_storage_options(target.location)  # the store settings of the read
        self.storage = {**read, **target.properties}
        self.table: Any = None
        self._secrets = sorted({*settings_secrets(read), *target.secrets()} - {""}, key=len)[::-1]

    def _message(self, e: BaseException) -> str:
        return scrub(" ".join(str(e).split()) or type(e).__name__, self._secrets)[:400]

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
        """The state of the newest kafkalog commit info still in the log; when none is left
        (the log cleaned after a checkpoint while other writers committed), the app
        transactions' offsets and the read options the table's configuration keeps."""
        dt = self.table
        version = dt.version()
        where = f"the Delta table at {self.shown}"
        copy: tuple[int, TableState] | None = None  # a maintenance commit's copy, and its source
        restore: dict[str, Any] | None = None  # the oldest RESTORE newer than the state
        for info in self._history():
            v = _int_or_none(info.get("version"))
            if copy is not None and (v is None or v <= copy[0]):
                break  # no run committed after the commit the copy was made from
            if info.get("operation") == "RESTORE":
                restore = info
                continue
            state = TableState.from_properties(info, where)
            if state is None:
                continue
            self._not_restored_away(restore, v)
            source = _int_or_none(info.get(COPIED_FROM))
            if source is None:  # a run's own commit (newer than any copy of an older one)
                return self._checked(state)
            if copy is None:
                copy = (source, state)
        if copy is not None:  # no run committed after the commit it copies
            return self._checked(copy[1])
        state = self._from_transactions()
        if state is not None:
            return state
        if not dt.get_add_actions(flatten=True).num_rows and version == 0:
            return TableState()
        raise TargetError(
            f"{self.where} is a Delta table that kafkalog did not write: no commit info and no "
            "app transaction (kafkalog:<topic>:<partition>) says which offsets it holds; "
            "convert into another table"
        )

    def _not_restored_away(self, restore: dict[str, Any] | None, version: int | None) -> None:
        """Refuse a state whose commit (``version``) a later RESTORE (``restore``'s commit
        info) may have undone: the app transactions keep that commit's offsets, while its rows
        are gone from the table (they would be skipped for good). ``--mode overwrite`` goes
        on (it reads everything again)."""
        if restore is None or self.target.mode == "overwrite":
            return
        params = restore.get("operationParameters") or {}
        to = _int_or_none(params.get("version"))
        if to is not None and version is not None and version <= to:
            return  # restored to a version that has this commit
        raise TargetError(
            f"{self.where}: a RESTORE (version {restore.get('version')}, to "
            f"{'version ' + str(to) if to is not None else params or 'an older state'}) undid "
            f"kafkalog's commit at version {version}: the table no longer holds the rows its "
            "offsets say were converted. Convert with --mode overwrite (or into another table)"
        )

    def _history(self) -> Iterator[dict[str, Any]]:
        """The commit infos left in the log, newest first, read a few at a time (the last
        commit is usually the last run's)."""
        version = self.table.version()
        limit, seen = 1, 0
        while True:
            history = self.table.history(limit)
            yield from history[seen:]
            if len(history) < limit or limit > version + 1:
                return
            seen = len(history)
            limit *= HISTORY_STEP

    def _checked(self, state: TableState) -> TableState:
        """``state`` with each partition's offset as its app transaction says (a commit after
        the one read may have moved them: newer commits win; the last batch recorded for an
        offset that moved is another offset's, and is not checked)."""
        offsets: Offsets = {}
        for key, off in state.offsets.items():
            v = self.table.transaction_version(txn_app_id(*key))
            offsets[key] = int(v) if v is not None else off
            if offsets[key] != off:
                state.prints.pop(key, None)
        state.offsets = offsets
        return state

    def _from_transactions(self) -> TableState | None:
        """The state when no kafkalog commit info is left: every topic-partition's offset from
        its app transaction (which checkpoints keep), the read options, payload schemas and
        archive from the table's configuration (:data:`CONFIGURATION`, set after a run's commit
        when they change, and by ``kafkalog maintain``). None when the table has no kafkalog
        app transaction. The last batches converted are not kept there: the next run does not
        check them (a partition truncated or rewritten since goes unnoticed once)."""
        offsets: Offsets = {}
        for app in self._app_ids():
            topic, _, part = app[len(TXN_PREFIX) :].rpartition(":")
            v = self.table.transaction_version(app)
            if topic and part.isdigit() and v is not None:
                offsets[(topic, int(part))] = int(v)
        if not offsets:
            return None
        config = dict(self.table.metadata().configuration or {})
        try:
            read = json.loads(config.get(READ) or "{}")
            schemas = json.loads(config.get(SCHEMAS) or "{}")
        except ValueError as e:
            raise TableError(
                f"the Delta table at {self.shown}: its configuration's kafkalog properties are "
                f"not readable ({e})"
            ) from None
        if not read:
            log.warning(
                "%s: its kafkalog commits were cleaned from its log and its configuration does "
                "not say which read options wrote it (a table created before kafkalog kept "
                "them there): this run's options are not checked against the table's",
                self.where,
            )
        return TableState(
            offsets=offsets,
            read={str(k): str(v) for k, v in read.items()},
            schemas=schemas if isinstance(schemas, dict) else {},
            archive=str(config.get(ARCHIVE) or ""),
        )

    def _app_ids(self) -> set[str]:
        """The ids of the kafkalog app transactions in the log: those of the newest checkpoint
        (its ``txn`` column; a classic, multi-part or V2 checkpoint) and of the commits after
        it (the Delta protocol's files; delta-rs lists no app transactions, it only answers
        for an id)."""
        import pyarrow.parquet as pq
        from pyarrow.fs import FileSelector

        base = f"{self.out.path}/_delta_log"
        names = [
            i.base_name for i in self.out.fs.get_file_info(FileSelector(base, allow_not_found=True))
        ]
        checkpoints = _complete_checkpoints(names)
        since = max((int(n[:20]) for n in checkpoints), default=-1)
        ids: set[str] = set()
        for name in sorted(names):
            if not name[:20].isdigit():
                continue
            path = f"{base}/{name}"
            if name in checkpoints and int(name[:20]) == since and name.endswith(".parquet"):
                with self.out.fs.open_input_file(path) as f:
                    pf = pq.ParquetFile(f)
                    if "txn" not in pf.schema_arrow.names:
                        continue
                    for txn in pf.read(columns=["txn"]).column("txn").to_pylist():
                        if txn and str(txn.get("appId", "")).startswith(TXN_PREFIX):
                            ids.add(txn["appId"])
            elif (name.endswith(".json") and int(name[:20]) > since) or (
                name in checkpoints and int(name[:20]) == since and name.endswith(".json")
            ):
                with self.out.fs.open_input_stream(path) as f:
                    text = f.read().decode("utf-8", "replace")
                for line in text.splitlines():
                    if '"txn"' not in line:
                        continue
                    txn = json.loads(line).get("txn") or {}
                    if str(txn.get("appId", "")).startswith(TXN_PREFIX):
                        ids.add(txn["appId"])
        return ids

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
        ``state`` in one Delta commit, creating the table if there is none; a schema change is
        committed just before (:meth:`_merge_schema`). ``--mode overwrite`` (``replace`` set):
        the commit replaces the table (CREATE OR REPLACE: its files, schema and partitioning)
        once the files are written; until then it stays as it was.

        A commit that fails is resolved by :meth:`_resolve`: the table reloaded, the run's id
        (``state.run``) looked for in the commits since; :class:`ConcurrentRunError` when
        another run committed first (the run's files deleted), :class:`CommitUnknownError`
        when the outcome is not known (the files kept)."""
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

        writer = _FileWriter(self.out, full, columns)
        try:
            for _ in write_behind(chunks(with_derived()), writer.write):
                pass
            hooks.before_commit(self.out.uri, [a.path for a in writer.actions])
            if self.table is not None and not replace and not _same(self.schema(), schema):
                apps = [txn_app_id(t, p) for t, p in sorted(state.offsets)]
                seen = [self.table.transaction_version(a) for a in apps]  # as the run read them
                self._merge_schema(schema, full, columns, state.run)
                # the data commit is made on the table as it is now, whose commits delta-rs
                # does not check: one of another run since this run read the table is caught
                # here (its app transactions moved)
                if [self.table.transaction_version(a) for a in apps] != seen:
                    raise ConcurrentRunError(
                        f"another run committed to the Delta table at {self.shown} while this "
                        "one wrote; this run's files were removed"
                    )
        except BaseException:
            writer.delete()  # no commit names the files: they are no part of the table
            raise
        base = self.table.version() if self.table is not None else None  # None: created
        try:
            self._commit(writer.actions, full, columns, props, replace is not None)
        except Exception as e:
            version = self._resolve(e, state.run, base, writer)
        else:
            self.table = self._open_table()
            version = self.table.version()
        done = Committed(writer.rows, len(writer.actions), str(version), None)
        return self._kept(done, state)

    def _kept(self, done: Committed, state: TableState) -> Committed:
        """After a run's commit: the table's configuration made to keep the state's read
        options, payload schemas and archive (:data:`CONFIGURATION`), in a commit of its own
        when the read options changed (a new or replaced table): checkpoints keep
        the configuration, not the commit infos (delta-rs refuses other than ``delta.*`` keys
        in a table's creation). Failing, the next run tries again."""
        want = configuration_of(state.to_properties())
        have = dict(self.table.metadata().configuration or {})
        if all(have.get(k) == want.get(k) for k in (READ, VERSION)):
            return done  # the payload schemas and archive only name things in messages
        try:
            self.table.alter.set_table_properties(want, raise_if_not_exists=False)
        except Exception as e:
            log.warning(
                "%s: the run's read options were not kept in the table's configuration (%s); "
                "the next run tries again",
                self.where,
                self._message(e),
            )
        return done

    def _open_table(self) -> Any:
        from deltalake import DeltaTable

        return DeltaTable(self.out.uri, storage_options=self.storage or None)

    def _merge_schema(
        self, schema: pa.Schema, full: pa.Schema, columns: list[str], run: str
    ) -> None:
        """Commit the table's schema change (columns and struct fields added) on its own, with
        no data file: delta-rs's ``write_deltalake`` of no rows with ``schema_mode="merge"``
        (the add actions of ``create_write_transaction`` cannot carry a schema change, and a
        ``write_deltalake`` of the rows writes files whose names a failed commit does not
        tell). The run's files are committed next; a run that stops in between leaves a table
        with the new columns and no row in them, which the next run takes as it is. After an
        error, the table reloaded decides: the columns there (this run's commit or another's),
        the run goes on; else :class:`ConcurrentRunError` when the table moved meanwhile, or
        the error."""
        from deltalake import CommitProperties, write_deltalake

        base = self.table.version()
        try:
            write_deltalake(
                self.table,
                pa.RecordBatchReader.from_batches(full, []),
                mode="append",
                schema_mode="merge",
                partition_by=columns or None,
                commit_properties=CommitProperties(custom_metadata={RUN: run} if run else None),
            )
        except Exception as e:
            try:
                self.table = self._open_table()
                now = self.schema()
            except Exception:
                raise TableError(
                    f"cannot change the schema of the Delta table at {self.where}: "
                    f"{self._message(e)}"
                ) from None
            if not _has_columns(now, schema):
                if self.table.version() > base:
                    raise ConcurrentRunError(
                        f"another commit to the Delta table at {self.shown} landed while this "
                        f"run changed its schema ({self._message(e)})"
                    ) from None
                raise TableError(
                    f"cannot change the schema of the Delta table at {self.where}: "
                    f"{self._message(e)}"
                ) from None
        self.table = self._open_table()

    def _resolve(self, e: Exception, run: str, base: int | None, writer: _FileWriter) -> int:
        """After the commit failed with ``e``: the version this run's commit landed as, found
        by its id ``run`` in the commits after ``base`` (the table's version the commit was made
        on; None: the commit created the table). Not found: a definite rejection
        (:func:`_rejected`) deletes the run's files and raises :class:`ConcurrentRunError` when
        other commits landed since ``base``, else :class:`TableError`; any other error keeps
        them and raises :class:`CommitUnknownError` (a commit that lands late names them)."""
        try:
            found = self._find_run(run, base)
        except Exception as again:
            raise self._unknown(e, run, f"; the table could not be read again: {again}") from None
        if found is not None:
            log.warning(
                "the commit of run %s to the Delta table at %s landed (version %d), though "
                "deltalake reported: %s",
                run,
                self.shown,
                found,
                self._message(e),
            )
            return found
        moved = self.table is not None and (base is None or self.table.version() > base)
        if not _rejected(e, creating=base is None, table_now=self.table is not None):
            raise self._unknown(e, run, "")
        writer.delete()
        if moved:
            raise ConcurrentRunError(
                f"another run committed to the Delta table at {self.shown} while this one "
                f"wrote; this run's files were removed ({self._message(e)})"
            )
        raise TableError(
            f"the Delta table at {self.where} refused the commit of run {run} "
            f"({self._message(e)}); this run's files were removed"
        )

    def _find_run(self, run: str, base: int | None) -> int | None:
        """Reload the table; the version of the commit (after ``base``) whose commit info
        names run ``run``, if any."""
        self.table = None
        if not self.load():
            return None
        version = self.table.version()
        newer = version + 1 if base is None else version - base
        if newer <= 0 or not run:
            return None
        for info in self.table.history(newer):
            if info.get(RUN) == run:
                v = _int_or_none(info.get("version"))
                return v if v is not None else version
        return None

    def _unknown(self, e: BaseException, run: str, more: str) -> CommitUnknownError:
        return CommitUnknownError(
            f"commit outcome unknown: the commit of run {run} to the Delta table at "
            f"{self.where} failed ({self._message(e)}){more}, and it may have landed; its data "
            "files were kept. Run the convert again: it goes on from what the table holds "
            f"(the table's history shows run {run} in kafkalog.run if it landed)",
            run,
        )

    def _commit(
        self, actions: list[Any], full: pa.Schema, columns: list[str], props: Any, replace: bool
    ) -> None:
        """The run's one commit (the library's exception when it fails)."""
        from deltalake import CommitProperties
        from deltalake.schema import Schema
        from deltalake.transaction import create_table_with_add_actions

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
        self.dirs: set[str] = set()

    def write(self, batches: list[pa.RecordBatch]) -> None:
        """Write a chunk (its files: one per partition in it, each partition's rows in the
        order read), with ``pyarrow.parquet``: ``pyarrow.dataset`` imports pandas when it is
        installed (0.2-0.45 s of every Delta convert process's start)."""
        import pyarrow.parquet as pq
        from deltalake.transaction import AddAction

        table = pa.Table.from_batches(batches, schema=self.schema)
        self.rows += table.num_rows
        data = pa.schema([f for f in self.schema if f.name not in self.columns])
        options = {"compression": "zstd", "compression_level": 1, **parquet_encodings(data)}
        now = int(time.time() * 1000)
        for i, (values, part) in enumerate(_partitions(table, self.columns)):
            folder = "/".join(
                f"{c}={NULL_PARTITION if values[c] is None else quote(values[c], safe='')}"
                for c in self.columns
            )
            name = f"part-{self.chunks:05d}-{self.uuid}-c{i}.zstd.parquet"
            rel = f"{folder}/{name}" if folder else name
            path = f"{self.out.path.rstrip('/')}/{rel}"
            parent = path.rsplit("/", 1)[0]
            if parent not in self.dirs:  # OUT itself too: a new table's first files
                self.out.fs.create_dir(parent, recursive=True)
                self.dirs.add(parent)
            self.paths.append(path)
            with self.out.fs.open_output_stream(path) as stream:
                writer = pq.ParquetWriter(stream, data, **options)
                with writer:
                    writer.write_table(part.select(data.names), row_group_size=1 << 20)
                size = stream.tell()
            stats = _stats(writer.writer.metadata, data)
            # relative to the table, as on disk (delta-rs percent-encodes it for the log)
            self.actions.append(AddAction(rel, size, values, now, True, stats))
        self.chunks += 1

    def delete(self) -> None:
        """Delete the files written (best effort: an unreferenced file is no part of the
        table)."""
        for path in self.paths:
            try:
                self.out.fs.delete_file(path)
            except OSError:
                pass


def _partitions(
    table: pa.Table, columns: list[str]
) -> Iterator[tuple[dict[str, str | None], pa.Table]]:
    """``table`` split by the values of ``columns`` (a stable sort, so each part keeps the rows'
    order), with each part's Delta partition values (text, None for null)."""
    import numpy as np
    import pyarrow.compute as pc

    n = table.num_rows
    if not columns or not n:
        if n:
            yield {}, table
        return
    if all(_constant(table.column(c)) for c in columns):  # the usual chunk: one partition
        yield {c: _partition_value(table.column(c)[0].as_py()) for c in columns}, table
        return
    keys = [(c, "ascending") for c in columns]
    table = table.take(pc.sort_indices(table, sort_keys=keys))  # nulls last
    starts = np.zeros(n, np.bool_)
    starts[0] = True
    for c in columns:
        col = table.column(c).combine_chunks()
        after, before = col.slice(1), col.slice(0, n - 1)
        # a value differs from the one before, or one of them is null and the other not
        changed = pc.or_kleene(
            pc.not_equal(after, before), pc.not_equal(pc.is_null(after), pc.is_null(before))
        )
        starts[1:] |= _true(changed)
    bounds = [*np.flatnonzero(starts).tolist(), n]
    for a, b in pairwise(bounds):
        part = table.slice(a, b - a)
        yield {c: _partition_value(part.column(c)[0].as_py()) for c in columns}, part


def _constant(col: pa.ChunkedArray) -> bool:
    """Whether every value of ``col`` is the same (all null counts as the same)."""
    import pyarrow.compute as pc

    if col.null_count:
        return col.null_count == len(col)
    mm = pc.min_max(col)
    return bool(mm["min"] == mm["max"])


def _true(mask: pa.Array) -> Any:
    """Where a boolean array is true (not null), as numpy booleans (``to_numpy`` imports
    pandas)."""
    import numpy as np

    mask = mask.combine_chunks() if isinstance(mask, pa.ChunkedArray) else mask
    n, off = len(mask), mask.offset
    validity, values = mask.buffers()[:2]
    out = np.unpackbits(np.frombuffer(values, np.uint8), bitorder="little")[off : off + n] == 1
    if validity is not None and mask.null_count:
        out &= (
            np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[off : off + n] == 1
        )
    return out


def _partition_value(v: Any) -> str | None:
    """A partition column's value as Delta's partitionValues write it."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime):
        t = v.astimezone(timezone.utc) if v.tzinfo else v.replace(tzinfo=timezone.utc)
        return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if hasattr(v, "isoformat"):  # a date
        return v.isoformat()
    return str(v)


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
                lo, hi = _bound(st, st.min_raw, "min"), _bound(st, st.max_raw, "max")
                mins[name] = lo if name not in mins else min(mins[name], lo)
                maxs[name] = hi if name not in maxs else max(maxs[name], hi)
    for name in unknown:
        nulls.pop(name, None)
        mins.pop(name, None)
        maxs.pop(name, None)
    return json.dumps(
        {"numRecords": md.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    )


# a UTC timestamp's unit in a Parquet footer, in microseconds (nanoseconds: floored)
_TIMESTAMP_US = {"milliseconds": 1000, "microseconds": 1}


def _bound(st: Any, raw: Any, which: str) -> Any:
    """A column statistic's minimum or maximum as Delta statistics write it. A UTC timestamp is
    made from the raw integer and the footer's unit: pyarrow's ``Statistics.min`` of a timestamp
    with a time zone imports pandas (0.2-0.45 s of a process's start)."""
    lt = st.logical_type
    if lt is not None and lt.type == "TIMESTAMP":
        info = json.loads(lt.to_json())
        if info.get("isAdjustedToUTC") and isinstance(raw, int):
            unit = info.get("timeUnit")
            us = raw * _TIMESTAMP_US[unit] if unit in _TIMESTAMP_US else raw // 1000
            t = _EPOCH + timedelta(microseconds=us)
            return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return _json_value(getattr(st, which))


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _json_value(v: Any) -> Any:
    if isinstance(v, datetime):
        if v.tzinfo is None:  # a timestamp without a time zone (timestamp_ntz): as it is
            return v.strftime("%Y-%m-%dT%H:%M:%S.%f")  # (astimezone would take it as local)
        return v.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return v


def _complete_checkpoints(names: list[str]) -> list[str]:
    """The checkpoint files among the ``_delta_log`` entries ``names``, but for a multi-part
    checkpoint (``<version>.checkpoint.<part>.<parts>.parquet``) missing a part (a writer that
    stopped while writing it): its app transactions are not all there, and a partition whose
    offset is missing would be converted again from its start."""
    parts: dict[tuple[int, int], set[int]] = {}
    out = []
    for n in names:
        if ".checkpoint." not in n or not n[:20].isdigit():
            continue
        bits = n.split(".")
        if len(bits) == 5 and bits[2].isdigit() and bits[3].isdigit():  # multi-part
            parts.setdefault((int(n[:20]), int(bits[3])), set()).add(int(bits[2]))
        out.append(n)
    partial = {v for (v, total), have in parts.items() if have != set(range(1, total + 1))}
    return [n for n in out if int(n[:20]) not in partial]


def _rejected(e: BaseException, creating: bool, table_now: bool) -> bool:
    """Whether a failed commit (whose run id the table, reloaded, does not show) was rejected
    for sure, nothing of it written: deltalake's ``CommitFailedError`` (delta-rs's
    ``TransactionError``: a conflict with another commit, the retries used up, an append-only
    table; its log and store errors come as other types), or, for the commit creating the
    table (version 0 only, no retry), a table that exists now without this run's commit: its
    version 0 is another's. Not the log store's ``TransactionError::LogStoreError`` (``Transaction
    failed: ...``, a CommitFailedError too: the DynamoDB lock table's entry may be there and be
    completed later). Anything else (an ``OSError``, a timeout, a ``DeltaError``) may be a
    commit that landed or lands yet. (deltalake 1.x; delta-rs ``python/src/error.rs`` maps
    ``DeltaTableError::Transaction`` to ``CommitFailedError``.)"""
    from deltalake.exceptions import CommitFailedError

    if isinstance(e, CommitFailedError) and _LOG_STORE_FAILED in str(e):
        # delta-rs's TransactionError::LogStoreError (the DynamoDB log store's lock table
        # failing) comes as CommitFailedError too, but its entry may have been written: a later
        # reader's repair then completes the commit, naming the run's files
        return False
    return isinstance(e, CommitFailedError) or (creating and table_now)


# how delta-rs (1.x, crates/core/src/kernel/transaction/mod.rs) says TransactionError::LogStoreError
_LOG_STORE_FAILED = "Transaction failed:"


def _int_or_none(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def configuration_of(props: dict[str, str]) -> dict[str, str]:
    """The table configuration that keeps the read options, payload schemas and archive of a
    state's commit properties ``props`` (:data:`CONFIGURATION`)."""
    return {k: props[k] for k in CONFIGURATION if k in props}


def _same(a: pa.Schema | None, b: pa.Schema) -> bool:
    return a is not None and a.equals(b, check_metadata=False)


def _has_columns(table: pa.Schema | None, schema: pa.Schema) -> bool:
    """Whether ``table`` has every column of ``schema``, of its type (in any order)."""
    if table is None:
        return False
    have = {f.name: f.type for f in table}
    return all(f.name in have and have[f.name].equals(f.type) for f in schema)


__all__ = [
    "CONFIGURATION",
    "COPIED_FROM",
    "OFFSETS",
    "TXN_PREFIX",
    "DeltaSink",
    "configuration_of",
    "derived_column",
]
