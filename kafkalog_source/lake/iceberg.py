"""Apache Iceberg tables through PyIceberg: the catalog, the table's state and schema, data
files written per partition, and one atomic commit per run.

**Catalog.** By default an embedded one: PyIceberg's SQL catalog on a SQLite file in OUT
(``OUT/catalog.db``), or the SQLite file ``--catalog`` names (a local file, which a table in a
store needs). Catalog properties (``type=rest``, ``uri=...``, ``warehouse=...``, credentials,
FileIO settings such as ``s3.endpoint``) load any catalog PyIceberg knows instead
(``pyiceberg.catalog.load_catalog``; its ``~/.pyiceberg.yaml`` and ``PYICEBERG_CATALOG__*``
settings apply too). A catalog that cannot be reached fails before anything is read or written.
A SQLite file that does not exist yet is made by the run's commit, not before: a new table's
creation is staged on a catalog in memory while the data files are written, and made in the
file when they are committed, so that a run that fails before its commit (a read error in
FAILFAST mode, say) leaves no catalog behind.

**Writes.** Record batches are gathered into chunks of about :data:`~.sink.CHUNK_BYTES`; each
chunk is split by partition (the spec's transforms, PyIceberg's own, computed once per batch:
a batch of one topic and day stays whole) and each part written as one Parquet data file with
pyarrow as PyIceberg's writer writes it (field ids, the table's ``write.parquet.*`` properties,
PyIceberg's column statistics: :mod:`.compat`). The files are added with PyIceberg's public
fast append (``Transaction.update_snapshot().fast_append()``), in the same transaction as any
schema change and the table properties, with the run's state (:mod:`.state`) in the snapshot
summary.

**Concurrency.** The SQL catalog, like every Iceberg catalog, commits only on top of the
snapshot the transaction started from. PyIceberg would retry a failed commit on top of the new
head, checking nothing for an append; kafkalog's tables have its retries off
(``commit.retry.num-retries=0``), so a commit that another commit beat fails, its files are
deleted, and the run starts over from the offsets the table holds then
(:class:`~.spec.ConcurrentRunError`).

**A commit that fails** may have landed all the same (a catalog's reply lost, a REST catalog's
``CommitStateUnknownException``): the table is loaded again and the run's id (``kafkalog.run``
in a snapshot summary, :mod:`.state`) looked for. Found, the run succeeded. Not found, the
run's files are deleted only after a definite rejection (``CommitFailedException``,
``ValidationException``, ``TableAlreadyExistsError``, as PyIceberg itself deletes its
manifests only then); after any other error they are kept and the run fails with
:class:`~.spec.CommitUnknownError`, naming its id.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import uuid
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from ..redact import redact_uri, scrub
from . import sink as hooks
from .catalogs import CATALOG_NAME, ensure_namespace, sqlite_catalog, staging_catalog
from .compat import data_file
from .fieldids import FIELDS, FieldMap, kafkalog_ids, rebuild, to_json
from .schema import relaxed
from .sink import (
    Committed,
    Out,
    chunks,
    foreign_table,
    out_location,
    parquet_encodings,
    write_behind,
)
from .spec import (
    DEFAULT_NAMESPACE,
    EMBEDDED_CATALOG,
    CommitUnknownError,
    ConcurrentRunError,
    PartitionField,
    TableError,
    TableTarget,
    TargetError,
)
from .state import OFFSETS, RUN, TableState
from .stores import iceberg_fileio_properties, probe_iceberg, settings_secrets

log = logging.getLogger("kafkalog")

_CODEC = "write.parquet.compression-codec"
_LEVEL = "write.parquet.compression-level"
_ROW_GROUP = "write.parquet.row-group-limit"
_ROW_GROUP_DEFAULT = 1 << 20  # PyIceberg's default
# property names whose values are shown in messages (others may hold credentials)


# Set on the tables kafkalog creates (and writes, before its first commit: _no_retries):
# PyIceberg retries a commit that lost a race by itself (4 times by default, PyIceberg 0.12's
# Transaction.commit_transaction), with nothing checked for a fast append: it would land on top
# of another run's commit, the offsets converted twice, and hide that commit from the run's own
# start-over (ConcurrentRunError, run.ATTEMPTS)
_OWN_PROPERTIES = {"commit.retry.num-retries": "0"}


def default_identifier(out: Out) -> str:
    """``kafkalog.<OUT's last path part>`` (as an identifier: other characters become ``_``)."""
    base = out.uri.rstrip("/").rsplit("/", 1)[-1] or "table"
    return f"{DEFAULT_NAMESPACE}.{re.sub(r'[^A-Za-z0-9_]', '_', base)}"


def _same_location(a: str, b: str) -> bool:
    def norm(s: str) -> str:
        s = s.rstrip("/")
        return s[len("file://") :] if s.startswith("file://") else s

    return norm(a) == norm(b)


class IcebergSink:
    """One Iceberg table: opened (catalog, table, state) by :meth:`open`, appended to by
    :meth:`append`."""

    def __init__(self, target: TableTarget, role: str = "OUT") -> None:
        """The table ``target`` names, at its location, which messages call ``role``
        (``convert``'s OUT; nothing for a query's PATH)."""
        self.target = target
        self.out = out_location(target.location)
        self.shown = self.out.shown
        self.where = f"{role} {self.shown}" if role else self.shown
        self.identifier = target.table or default_identifier(self.out)
        self.catalog: Any = None
        self.table: Any = None
        # kafkalog's column paths -> the table's field ids (:mod:`.fieldids`)
        self.ids: dict[str, int] = {}
        # the store settings of the read, for a table in a store (what the catalog properties
        # do not already say)
        self._fileio = iceberg_fileio_properties(target.location) if self.out.remote else {}
        self._secrets = sorted(
            {*target.secrets(), *settings_secrets(self._fileio)}, key=lambda v: (-len(v), v)
        )

    # -- the catalog ---------------------------------------------------------------------------
    def _catalog_shown(self) -> str:
        p = self.target.properties
        if p:
            what = p.get("type", "configured")
            uri = p.get("uri")
            return f"the {what} catalog" + (f" at {redact_uri(uri)}" if uri else "")
        return f"the SQLite catalog {self._sqlite_path()}"

    def _sqlite_path(self) -> str:
        if self.target.catalog:
            return os.path.abspath(self.target.catalog)
        if self.out.remote:
            raise TargetError(
                f"{self.where} is in a store, where the embedded catalog's SQLite file cannot "
                "live: name a local one with --catalog FILE.db, or another catalog with "
                "--table-option type=rest --table-option uri=..."
            )
        return os.path.join(self.out.path, EMBEDDED_CATALOG)

    def _fileio_properties(self) -> dict[str, str]:
        """FileIO settings for a table in a store: the store settings the archive is read with
        (``fs.s3.*`` options, the AWS chain's endpoint, region and keys; :mod:`.stores`)."""
        return dict(self._fileio)

    def _open_catalog(self, create: bool) -> Any:
        """The catalog (None: the embedded SQLite file does not exist yet and ``create`` is
        false)."""
        props = {**self._fileio_properties(), **self.target.properties}
        try:
            if self.target.properties:
                from pyiceberg.catalog import load_catalog

                name = props.pop("name", CATALOG_NAME)
                return load_catalog(name, **props)
            path = self._sqlite_path()
            if not os.path.exists(path):
                parent = os.path.dirname(path) or "."
                if self.target.catalog and not os.path.isdir(parent):
                    raise TableError(
                        f"cannot open the SQLite catalog {path}: its directory does not exist"
                    )
                if not create:
                    return None
                os.makedirs(parent, exist_ok=True)
            return sqlite_catalog(path, props)
        except TableError:
            raise
        except Exception as e:  # connection refused, bad credentials, unknown catalog type, ...
            raise TableError(
                f"cannot reach {self._catalog_shown()}: {self._message(e)}; nothing was read or "
                "written"
            ) from None

    def _message(self, e: BaseException) -> str:
        text = " ".join(str(e).split()) or type(e).__name__
        return scrub(text, self._secrets)[:400]

    # -- the table -----------------------------------------------------------------------------
    def open(self) -> TableState | None:
        """Load the catalog and the table (if any) and return the state of its last kafkalog
        commit (None: no table yet). Raises :class:`TableError` when OUT holds something else,
        the catalog's table lives elsewhere, or the table was not written by kafkalog."""
        loaded = self.load()
        if self.out.remote:
            self._probe()
        if not loaded:
            return None
        return self._state()

    def _probe(self) -> None:
        """Write and delete one empty object at OUT through the FileIO the run will write with
        (the table's, or the one a new table's files are written with): a table whose files
        cannot be written there fails now, naming OUT and the cause, before anything is read
        or written (:func:`~.stores.probe_iceberg`)."""
        from pyiceberg.io import load_file_io

        if self.table is not None:
            io = self.table.io
        else:
            props = (
                self.catalog.properties
                if self.catalog is not None
                else {**self._fileio_properties(), **self.target.properties}
            )
            io = load_file_io(dict(props), self.out.uri)
        try:
            probe_iceberg(io, self.out.uri)
        except Exception as e:
            raise TableError(
                f"cannot write the table's files at {self.where} (through PyIceberg's "
                f"{type(io).__name__}): {self._message(e)}; nothing was read or written"
            ) from None

    def load(self) -> bool:
        """Load the catalog and the table; whether there is one (:class:`TableError` as
        :meth:`open`, but for a table kafkalog did not write)."""
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        self.catalog = self._open_catalog(create=False)
        self.table = None
        if self.catalog is not None:
            try:
                self.table = self.catalog.load_table(self.identifier)
            except (NoSuchTableError, NoSuchNamespaceError):
                self.table = None
            except Exception as e:
                raise TableError(
                    f"cannot load table {self.identifier} from {self._catalog_shown()}: "
                    f"{self._message(e)}"
                ) from None
        if self.table is None:
            self.ids = {}
            self._check_empty()
            return False
        if not _same_location(self.table.location(), self.out.uri):
            raise TargetError(
                f"{self._catalog_shown()} has table {self.identifier} at "
                f"{redact_uri(self.table.location())}, not at {self.where}; name another "
                "table with --table"
            )
        self.ids = kafkalog_ids(self.table.metadata)
        return True

    def _field_map(self) -> FieldMap:
        """kafkalog's columns and the table's current fields, tied by field id."""
        return FieldMap(self.table.schema(), self.ids, f"table {self.identifier}")

    def _check_empty(self) -> None:
        others = self.others_here() if self.out.has("metadata") else []
        if others:
            # a second table at one location: each one's orphan removal (kafkalog maintain,
            # Iceberg's DeleteOrphanFiles) would delete the other's files
            raise TargetError(
                f"{self.where} holds the Iceberg table {others[0]} of {self._catalog_shown()}, "
                f"not {self.identifier}: convert into it with --table {others[0]}, or into "
                "another OUT"
            )
        own = () if self.target.properties or self.target.catalog else (EMBEDDED_CATALOG,)
        what = foreign_table(self.out, "iceberg", own)
        if what is None:
            return
        if self.out.has("metadata") and "Delta" not in what:
            what = (
                f"an Iceberg table that {self._catalog_shown()} does not hold as "
                f"{self.identifier}; name it with --table or its catalog with --catalog"
            )
            newest = self._newest_metadata()
            if newest:
                what += (
                    f" (or, if a replacing run was killed, register it again from {newest} "
                    "with PyIceberg's register_table)"
                )
        raise TargetError(f"{self.where} is {what}")

    def others_here(self) -> list[str]:
        """The other tables of the catalog whose location is OUT (best effort: a catalog that
        cannot list them gives none)."""
        if self.catalog is None:
            return []
        found: list[str] = []
        try:
            for ns in self.catalog.list_namespaces():
                for ident in self.catalog.list_tables(ns):
                    name = ".".join(ident)
                    if name == self.identifier:
                        continue
                    location = self.catalog.load_table(ident).location()
                    if _same_location(location, self.out.uri):
                        found.append(name)
        except Exception as e:
            log.debug("the tables of %s not listed: %s", self._catalog_shown(), e)
        return sorted(found)

    def _newest_metadata(self) -> str | None:
        """The newest ``metadata/*.metadata.json`` under OUT (shown redacted), if any."""
        from pyarrow.fs import FileSelector

        try:
            infos = self.out.fs.get_file_info(FileSelector(f"{self.out.path}/metadata"))
        except Exception:  # unreadable: the message goes without it
            return None
        names = sorted(i.base_name for i in infos if i.base_name.endswith(".metadata.json"))
        if not names:
            return None
        return redact_uri(f"{self.out.uri.rstrip('/')}/metadata/{names[-1]}")

    def _state(self) -> TableState:
        meta = self.table.metadata
        snap = meta.current_snapshot()
        while snap is not None:
            state = TableState.from_properties(snap.summary, f"table {self.identifier}")
            if state is not None:
                return state
            snap = meta.snapshot_by_id(snap.parent_snapshot_id) if snap.parent_snapshot_id else None
        # its kafkalog snapshots expired: the table properties keep the last state
        state = TableState.from_properties(meta.properties, f"table {self.identifier}")
        if state is not None:
            own = _snapshot_of_run(self.table, state.run)
            # still there, and not in the lineage walked above (--mode overwrite: no matter)
            if own is not None and self.target.mode != "overwrite":
                current = meta.current_snapshot()
                raise TargetError(
                    f"{self.where}: the snapshot of kafkalog's last run ({own.snapshot_id}, run "
                    f"{state.run}) is not in the lineage of the current snapshot "
                    f"({current.snapshot_id if current else 'none'}: a rollback?), and no "
                    "kafkalog snapshot is left in that lineage: which offsets the table holds is "
                    "not known. Set the current snapshot back, or convert with --mode overwrite"
                )
            return state
        if meta.current_snapshot() is None and OFFSETS not in meta.properties:
            return TableState()  # created (by kafkalog or not) and never written
        raise TargetError(
            f"{self.where} is an Iceberg table ({self.identifier}) that kafkalog did not "
            "write: none of its snapshots says which offsets it holds; convert into another table"
        )

    def schema(self) -> pa.Schema | None:
        """The table's columns as Arrow types, relaxed, under kafkalog's names (a column another
        writer renamed is kafkalog's by its field id; :mod:`.fieldids`), None: no table yet.
        Raises :class:`~.spec.SchemaChangeError` when a kafkalog column was dropped and its name
        taken by another field."""
        if self.table is None:
            return None
        arrow = small_types(self.table.schema().as_arrow())
        return relaxed(self._field_map().as_kafkalog(arrow))

    def partitioning(self) -> tuple[PartitionField, ...] | None:
        """The table's partition fields (None: no table yet)."""
        if self.table is None:
            return None
        schema = self.table.schema()
        out = []
        names = self._field_map()
        for f in self.table.spec().fields:
            name = names.kafkalog_name(f.source_id, schema.find_column_name(f.source_id))
            kind = type(f.transform).__name__.replace("Transform", "").lower()
            out.append(PartitionField(name, kind))
        return tuple(out)

    # -- writing -------------------------------------------------------------------------------
    def append(
        self,
        schema: pa.Schema,
        batches: Iterator[pa.RecordBatch],
        state: TableState,
        partitioning: tuple[PartitionField, ...],
        replace: str | None = None,
    ) -> Committed:
        """Write ``batches`` (conformed to ``schema``) as data files and commit them with
        ``state``, in one transaction with the schema change and (for a new table) the table's
        creation. Raises :class:`ConcurrentRunError` when another run committed first.

        ``--mode overwrite`` (nothing changes before the data files are written): ``replace=
        "rows"`` deletes the table's data files in the same transaction (one commit: a delete
        snapshot and the append's); ``"table"`` (another partitioning, a type the table cannot
        take) stages a new table, then drops the old one from the catalog and commits the new
        one (the old one registered again if that commit fails).

        A commit that fails is resolved by :meth:`_resolve`: the table loaded again and the
        run's id (``state.run``) looked for in its snapshots; :class:`ConcurrentRunError` when
        another run committed first (the run's files deleted), :class:`CommitUnknownError` when
        the outcome is not known (the files kept)."""
        old = self.table if replace == "table" else None
        if old is not None:
            self.table = None  # _transaction stages a new table
        tx, io, staged = self._transaction(schema, partitioning)
        if replace == "rows" and self.table.current_snapshot() is not None:
            from pyiceberg.expressions import AlwaysTrue

            with warnings.catch_warnings():  # "did not match any records": an empty table
                warnings.simplefilter("ignore", UserWarning)
                tx.delete(AlwaysTrue())  # whole files: no data file is rewritten
        props = state.to_properties()
        ids = self.ids if self.table is not None else {}  # "table": a new table's own
        writer = _ChunkWriter(tx.table_metadata, io, ids)
        written: list[Any] = []
        try:
            for files in write_behind(chunks(batches), writer.write):
                written += files
            hooks.before_commit(self.out.uri, [f.file_path for f in written])
            if staged:  # the catalog's file is made now, with the table's creation
                tx = self._created(self._commit_catalog(), schema, partitioning)
            now = tx.table_metadata.schema()
            props[FIELDS] = to_json(FieldMap(now, ids, self.identifier).written(schema, now))
            # PyIceberg's public fast append (no retry on top of another commit: the table's
            # commit.retry.num-retries is 0, _transaction)
            with tx.update_snapshot(snapshot_properties=props).fast_append() as append:
                for f in written:
                    append.append_data_file(f)
            tx.set_properties({**props, **_OWN_PROPERTIES})
        except BaseException:
            _delete(io, writer.paths)  # no commit began: the files are no part of the table
            raise
        before = old if old is not None else self.table
        base = before.metadata_location if before is not None else None  # None: a creation
        try:
            table = self._swap(old, tx) if old is not None else tx.commit_transaction()
            snap = table.current_snapshot()
        except Exception as e:
            table, snap = self._resolve(e, state.run, base, io, writer.paths)
        self.table = table
        total = snap.summary.get("total-records") if snap is not None else None
        return Committed(
            writer.rows, len(written), str(snap.snapshot_id if snap else ""), _int_or_none(total)
        )

    def _resolve(
        self, e: Exception, run: str, base: str | None, io: Any, paths: list[str]
    ) -> tuple[Any, Any]:
        """After the commit failed with ``e``: the table and this run's snapshot, found by its
        id ``run`` (``kafkalog.run`` in the summary) in the table loaded again: the commit
        landed. Not found: a definite rejection (:func:`_rejected`) deletes the run's files
        ``paths`` and raises :class:`ConcurrentRunError` when the table moved since ``base``
        (its metadata location when the commit began; None: the commit created it), else
        :class:`TableError`; any other error keeps them (a commit that lands late names them)
        and raises :class:`CommitUnknownError`."""
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        try:
            try:
                table = self.catalog.load_table(self.identifier)
            except (NoSuchTableError, NoSuchNamespaceError):
                table = None
            found = _snapshot_of_run(table, run) if table is not None else None
        except Exception as again:
            raise self._unknown(
                e, run, f"; the table could not be loaded again: {self._message(again)}"
            ) from None
        if found is not None:
            log.warning(
                "the commit of run %s to %s landed (snapshot %s), though PyIceberg reported: %s",
                run,
                self.identifier,
                found.snapshot_id,
                self._message(e),
            )
            return table, found
        if not _rejected(e, creating=base is None, table_now=table is not None):
            raise self._unknown(e, run, "")
        _delete(io, paths)
        if table is not None and table.metadata_location != base:
            raise ConcurrentRunError(
                f"another run committed to {self.identifier} while this one wrote; this run's "
                f"files were removed ({self._message(e)})"
            )
        raise TableError(
            f"{self._catalog_shown()} refused the commit of run {run} to {self.identifier} "
            f"({self._message(e)}); this run's files were removed"
        )

    def _unknown(self, e: BaseException, run: str, more: str) -> CommitUnknownError:
        return CommitUnknownError(
            f"commit outcome unknown: the commit of run {run} to {self.identifier} at "
            f"{self.where} failed ({type(e).__name__}: {self._message(e)}){more}, and it may "
            "have landed; its data files were kept. Run the convert again: it goes on from what "
            f"the table holds (a snapshot whose summary has kafkalog.run={run} if it landed)",
            run,
        )

    def _swap(self, old: Any, tx: Any) -> Any:
        """Commit the staged new table ``tx`` in place of ``old``: drop ``old`` from the
        catalog, commit, and register ``old`` again when the commit fails; then delete the old
        table's data files (best effort: unreferenced, they are no part of any table)."""
        files = [t.file.file_path for t in old.scan().plan_files()]
        # between the drop and the commit the catalog holds no table: a process killed there
        # leaves the old one to be registered again by hand, from this file
        log.warning(
            "replacing the table %s (a new partitioning or type): should this run be killed "
            "before its commit, register the old table again from %s",
            self.identifier,
            redact_uri(old.metadata_location),
        )
        self.catalog.drop_table(self.identifier)
        try:
            table = tx.commit_transaction()
        except BaseException:
            try:
                self.catalog.register_table(self.identifier, old.metadata_location)
            except Exception as e:
                log.error(
                    "the table %s was dropped to be replaced and its replacement failed; "
                    "register it again from %s (%s)",
                    self.identifier,
                    redact_uri(old.metadata_location),
                    self._message(e),
                )
            raise
        _delete(old.io, files)
        return table

    def _transaction(
        self, schema: pa.Schema, partitioning: tuple[PartitionField, ...]
    ) -> tuple[Any, Any, bool]:
        """The transaction of this run, the FileIO to write with, and whether the transaction
        is staged only: the table's, with the schema change staged; or the creation of the
        table, in its catalog, or (staged) on a catalog in memory when the catalog's SQLite
        file does not exist yet (:meth:`_created` makes it in the file at the commit)."""
        if self.table is not None:
            self._no_retries()
            tx = self.table.transaction()
            if not _same_schema(self.schema(), schema):
                # by the table's current names: a column kafkalog wrote keeps its field id
                current = self._field_map().as_current(schema)
                with tx.update_schema() as update:
                    update.union_by_name(current)
            return tx, self.table.io, False
        from pyiceberg.io import load_file_io

        staged = self.catalog is None
        if staged:
            catalog = staging_catalog({**self._fileio_properties(), **self.target.properties})
        else:
            catalog = self.catalog
        tx = self._created(catalog, schema, partitioning)
        io = load_file_io({**catalog.properties}, self.out.uri)
        return tx, io, staged

    def _no_retries(self) -> None:
        """Set :data:`_OWN_PROPERTIES` on a table that lacks them (one that kafkalog did not
        create), in a commit of its own: PyIceberg reads its retry count from the table as it
        is before a commit, and retried on top of another run's commit, this run's would double
        that run's offsets (PyIceberg's fast append checks nothing on a retry)."""
        from pyiceberg.exceptions import CommitFailedException

        props = self.table.properties
        if all(props.get(k) == v for k, v in _OWN_PROPERTIES.items()):
            return
        try:
            self.table = (
                self.table.transaction().set_properties(_OWN_PROPERTIES).commit_transaction()
            )
        except CommitFailedException as e:
            raise ConcurrentRunError(
                f"another commit to {self.identifier} landed first ({self._message(e)})"
            ) from None

    def _commit_catalog(self) -> Any:
        """The catalog a staged table's creation is committed to, its SQLite file made now."""
        self.catalog = self._open_catalog(create=True)
        return self.catalog

    def _created(
        self, catalog: Any, schema: pa.Schema, partitioning: tuple[PartitionField, ...]
    ) -> Any:
        """The transaction that creates the table in ``catalog`` (its namespace made first,
        unless ``catalog`` only stages it). The same schema and partitioning give the same
        field and partition ids in every catalog: data files written for a staged creation
        belong to the one committed."""
        namespace = self.identifier.rsplit(".", 1)[0] if "." in self.identifier else None
        if namespace and catalog is self.catalog:
            ensure_namespace(catalog, namespace)
        ischema, spec = _schema_and_spec(schema, partitioning)
        return catalog.create_table_transaction(
            self.identifier,
            schema=ischema,
            location=self.out.uri,
            partition_spec=spec,
            properties=dict(_OWN_PROPERTIES),
        )


class _ChunkWriter:
    """Data files of a chunk of record batches, one per partition key.

    The Parquet files are written here as PyIceberg's Parquet writer writes them (the Iceberg
    field ids in the Arrow schema, the table's writer properties, PyIceberg's column
    statistics), with offsets and timestamps delta-encoded (:func:`~.sink.parquet_encodings`),
    and not through PyIceberg's write path, whose conversion of each batch turns a null list of
    structs (a v0/v1 record's ``headers``) into an empty one (apache/iceberg-python#3833, open
    in 0.12)."""

    def __init__(self, metadata: Any, io: Any, ids: dict[str, int]) -> None:
        """Files of the table ``metadata`` describes, written with ``io``; ``ids``: kafkalog's
        column paths to field ids (:func:`~.fieldids.kafkalog_ids`; empty for a new table)."""
        from pyiceberg.schema import sanitize_column_names
        from pyiceberg.table.locations import load_location_provider

        self.metadata = metadata
        self.io = io
        self.uuid = uuid.uuid4()
        self.counter = itertools.count(0)
        self.spec = metadata.spec()
        self.schema = metadata.schema()
        self.file_schema = sanitize_column_names(self.schema)
        self.map = FieldMap(self.schema, ids, "")
        self.locations = load_location_provider(metadata.location, metadata.properties)
        self.arrow_schema: pa.Schema | None = None  # the files' (Iceberg's sanitized names)
        self.source_schema: pa.Schema | None = None  # the batches' (the table's names)
        self.paths: list[str] = []  # every file begun, for a failed run to delete
        self.rows = 0
        self.encodings: dict[str, Any] = {}
        # PyIceberg's codec (zstd unless the table says), at level 1 unless the table says:
        # as fast to write as snappy here, and the files a third of snappy's size
        self.properties = dict(metadata.properties)
        if self.properties.get(_CODEC, "zstd") == "zstd":
            self.properties.setdefault(_LEVEL, "1")
        self.row_group_rows = int(self.properties.get(_ROW_GROUP, _ROW_GROUP_DEFAULT))
        self.writer_kwargs = writer_kwargs(self.properties)
        self.fields = [
            (
                f,
                self.map.kafkalog_name(f.source_id, self.schema.find_column_name(f.source_id)),
                self.schema.find_field(f.source_id),
            )
            for f in self.spec.fields
        ]

    def _keys(self, rb: pa.RecordBatch) -> list[tuple[tuple[Any, ...], pa.RecordBatch]]:
        """``rb`` split by partition key (whole when it has one)."""
        if not self.fields:
            return [((), rb)]
        import pyarrow.compute as pc

        columns = [
            f.transform.pyarrow_transform(src.field_type)(rb.column(name))
            for f, name, src in self.fields
        ]
        single: list[Any] = []
        for col in columns:
            if col.null_count == len(col):
                single.append(None)
                continue
            if col.null_count:
                break
            mm = pc.min_max(col)
            if mm["min"] != mm["max"]:
                break
            single.append(mm["min"].as_py())
        if len(single) == len(columns):
            return [(tuple(single), rb)]
        names = [str(i) for i in range(len(columns))]
        keyed = pa.table([*columns, pa.array(range(rb.num_rows))], names=[*names, "row"])
        out = []
        for combo in keyed.group_by(names).aggregate([("row", "list")]).to_pylist():
            key = tuple(combo[n] for n in names)
            out.append((key, rb.take(pa.array(combo["row_list"]))))
        return out

    def _with_ids(self, schema: pa.Schema) -> pa.Schema:
        """``schema`` (kafkalog's names) with each field's Iceberg field id, found by kafkalog's
        column path (a field another writer renamed keeps being written; :mod:`.fieldids`),
        under the file's name for it (the current one, sanitized)."""

        def field(f: pa.Field, path: str, retype: Callable[[], pa.DataType]) -> pa.Field:
            fid = self.map.id_of(path)
            if fid is None:  # the schema update added every column: not reached
                raise TableError(f"column {path} has no field in the table's schema")
            name = self.file_schema.find_field(fid).name
            return pa.field(
                name,
                retype(),
                nullable=f.nullable,
                metadata={b"PARQUET:field_id": str(fid).encode()},
            )

        return rebuild(schema, field)

    def _write_one(self, key: tuple[Any, ...], parts: list[pa.RecordBatch], task: int) -> Any:
        import pyarrow.parquet as pq
        from pyiceberg.partitioning import PartitionFieldValue, PartitionKey
        from pyiceberg.typedef import Record

        pkey = None
        if self.fields:
            values = [
                PartitionFieldValue(f, v) for (f, _, _), v in zip(self.fields, key, strict=True)
            ]
            pkey = PartitionKey(field_values=values, partition_spec=self.spec, schema=self.schema)
        assert self.arrow_schema is not None and self.source_schema is not None
        # the values by name into the first batch's schema, then under the file's (sanitized)
        # names by position: a cast to the sanitized names would match no nested field by name
        # and give NULLs ("user-id" is "user_x2Did" in the file)
        table = pa.Table.from_batches(parts).cast(self.source_schema)
        table = pa.Table.from_arrays(
            [_view(c, f.type) for c, f in zip(table.columns, self.arrow_schema, strict=True)],
            schema=self.arrow_schema,
        )
        path = self.locations.new_data_location(f"00000-{task}-{self.uuid}.parquet", pkey)
        self.paths.append(path)
        out = self.io.new_output(path)
        # as PyIceberg's writer writes, with the table's properties (writer_kwargs), plus the
        # encodings of parquet_encodings
        with out.create(overwrite=True) as stream:
            writer = pq.ParquetWriter(
                stream,
                schema=table.schema,
                store_decimal_as_integer=True,
                **self.writer_kwargs,
                **self.encodings,
            )
            with writer:
                writer.write(table, row_group_size=self.row_group_rows)
        return data_file(
            path=path,
            size=len(out),
            parquet_metadata=writer.writer.metadata,
            file_schema=self.file_schema,
            properties=self.properties,
            partition=pkey.partition if pkey is not None else Record(),
            spec_id=self.metadata.default_spec_id,
        )

    def write(self, batches: list[pa.RecordBatch]) -> list[Any]:
        """Write one data file per partition key of ``batches`` (on threads); their DataFiles."""
        from concurrent.futures import ThreadPoolExecutor

        if self.arrow_schema is None:
            self.source_schema = batches[0].schema
            self.arrow_schema = self._with_ids(batches[0].schema)
            self.encodings = parquet_encodings(self.arrow_schema)
        self.rows += sum(b.num_rows for b in batches)
        groups: dict[tuple[Any, ...], list[pa.RecordBatch]] = {}
        for rb in batches:
            for key, part in self._keys(rb):
                groups.setdefault(key, []).append(part)
        jobs = [(key, parts, next(self.counter)) for key, parts in groups.items()]
        if len(jobs) == 1:
            return [self._write_one(*jobs[0])]
        with ThreadPoolExecutor(max_workers=min(len(jobs), 4)) as pool:
            return list(pool.map(lambda job: self._write_one(*job), jobs))


def _view(column: pa.ChunkedArray, t: pa.DataType) -> pa.ChunkedArray:
    """``column`` as type ``t``, which has its layout under other field names (zero-copy)."""
    return pa.chunked_array([c.view(t) for c in column.chunks], type=t)


def _schema_and_spec(
    schema: pa.Schema, partitioning: tuple[PartitionField, ...]
) -> tuple[Any, Any]:
    """The Iceberg schema (fresh field ids) and partition spec of a new table."""
    from pyiceberg.io.pyarrow import pyarrow_to_schema
    from pyiceberg.partitioning import PartitionField as IcebergPartitionField
    from pyiceberg.partitioning import PartitionSpec
    from pyiceberg.schema import assign_fresh_schema_ids
    from pyiceberg.transforms import (
        DayTransform,
        HourTransform,
        IdentityTransform,
        MonthTransform,
        YearTransform,
    )

    transforms = {
        "identity": IdentityTransform,
        "year": YearTransform,
        "month": MonthTransform,
        "day": DayTransform,
        "hour": HourTransform,
    }
    # ids numbered here (any will do: assign_fresh_schema_ids numbers them as a catalog does)
    ischema = assign_fresh_schema_ids(pyarrow_to_schema(_numbered(schema)))
    fields = []
    for i, p in enumerate(partitioning):
        source = ischema.find_field(p.column)
        fields.append(
            IcebergPartitionField(
                source_id=source.field_id,
                field_id=1000 + i,
                transform=transforms[p.transform](),
                name=p.derived,
            )
        )
    return ischema, PartitionSpec(*fields)


def _numbered(schema: pa.Schema) -> pa.Schema:
    """``schema`` with a Parquet field id on every field, nested ones too, depth first."""
    counter = itertools.count(1)

    def field(f: pa.Field) -> pa.Field:
        meta = {**(f.metadata or {}), b"PARQUET:field_id": str(next(counter)).encode()}
        return pa.field(f.name, typ(f.type), nullable=f.nullable, metadata=meta)

    def typ(t: pa.DataType) -> pa.DataType:
        if pa.types.is_struct(t):
            return pa.struct([field(c) for c in t])
        if pa.types.is_large_list(t):
            return pa.large_list(field(t.value_field))
        if pa.types.is_list(t):
            return pa.list_(field(t.value_field))
        if pa.types.is_map(t):
            return pa.map_(field(t.key_field), field(t.item_field))
        return t

    return pa.schema([field(f) for f in schema])


def small_types(schema: pa.Schema) -> pa.Schema:
    """PyIceberg's Arrow schema with large strings, binaries and lists as the reader's types, and
    without field-id metadata."""

    def t(x: pa.DataType) -> pa.DataType:
        if pa.types.is_large_string(x):
            return pa.string()
        if pa.types.is_large_binary(x):
            return pa.binary()
        if pa.types.is_large_list(x) or pa.types.is_list(x):
            return pa.list_(pa.field(x.value_field.name, t(x.value_type)))
        if pa.types.is_struct(x):
            return pa.struct([pa.field(c.name, t(c.type)) for c in x])
        if pa.types.is_map(x):
            return pa.map_(
                pa.field(x.key_field.name, t(x.key_type), nullable=False),
                pa.field(x.item_field.name, t(x.item_type)),
            )
        return x

    return pa.schema([pa.field(f.name, t(f.type)) for f in schema])


def _same_schema(a: pa.Schema | None, b: pa.Schema) -> bool:
    return a is not None and a.equals(b, check_metadata=False)


def writer_kwargs(properties: dict[str, str]) -> dict[str, Any]:
    """pyarrow ``ParquetWriter`` arguments from an Iceberg table's ``write.parquet.*``
    properties (the Iceberg spec's table properties, PyIceberg's defaults, as PyIceberg 0.12's
    writer reads them): codec (zstd; ``uncompressed`` is pyarrow's ``none``), level, page size,
    dictionary page size and rows per page (the write batch). The row group limit is the
    write's (``write.parquet.row-group-limit``)."""
    from pyiceberg.table import TableProperties as P

    def number(name: str, default: int | None) -> int | None:
        value = properties.get(name)
        if not value:
            return default
        try:
            return int(value)
        except ValueError:
            raise TableError(f"table property {name} is not an integer: {value!r}") from None

    codec = properties.get(P.PARQUET_COMPRESSION, P.PARQUET_COMPRESSION_DEFAULT)
    return {
        "compression": "none" if codec == "uncompressed" else codec,
        "compression_level": number(P.PARQUET_COMPRESSION_LEVEL, None),
        "data_page_size": number(P.PARQUET_PAGE_SIZE_BYTES, P.PARQUET_PAGE_SIZE_BYTES_DEFAULT),
        "dictionary_pagesize_limit": number(
            P.PARQUET_DICT_SIZE_BYTES, P.PARQUET_DICT_SIZE_BYTES_DEFAULT
        ),
        "write_batch_size": number(P.PARQUET_PAGE_ROW_LIMIT, P.PARQUET_PAGE_ROW_LIMIT_DEFAULT),
    }


def _snapshot_of_run(table: Any, run: str) -> Any:
    """The snapshot of ``table`` whose summary names run ``run`` (``kafkalog.run``), if any."""
    if not run:
        return None
    for snap in table.metadata.snapshots:
        if snap.summary is not None and snap.summary.get(RUN) == run:
            return snap
    return None


def _rejected(e: BaseException, creating: bool, table_now: bool) -> bool:
    """Whether a failed commit (whose run id the table, loaded again, does not show) was
    rejected for sure, nothing of it applied: PyIceberg's ``CommitFailedException`` (a
    requirement not met: another commit first), ``ValidationException`` and, creating the
    table, ``TableAlreadyExistsError`` or a table there now that is not this run's (its name is
    another's). ``CommitStateUnknownException`` (a REST catalog's 5xx or timeout), an
    ``OSError`` and anything else may be a commit that landed. (PyIceberg 0.12: the exceptions
    after which its own ``Transaction.commit_transaction`` deletes its manifests.)"""
    from pyiceberg.exceptions import (
        CommitFailedException,
        TableAlreadyExistsError,
        ValidationException,
    )

    if isinstance(e, (CommitFailedException, ValidationException, TableAlreadyExistsError)):
        return True
    return creating and table_now


def _delete(io: Any, paths: list[str]) -> None:
    for path in paths:
        try:
            io.delete(path)
        except Exception:  # best effort: an unreferenced file is not part of the table
            pass


def _int_or_none(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


__all__ = ["IcebergSink", "default_identifier", "small_types"]
