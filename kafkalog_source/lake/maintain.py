"""Maintenance of a table that ``convert --format iceberg|delta`` writes every hour for years
(``kafkalog maintain OUT``): small data files compacted per partition, old snapshots (Iceberg)
or versions (Delta) expired with a retention the user sets, and files no snapshot names
removed, never one a commit in flight may name; the table's exactly-once state and time
travel within the retention kept.

**Delta** (the ``deltalake`` package's own maintenance): ``optimize.compact`` (bin-packing per
partition, zstd level 1 as kafkalog writes), ``vacuum`` (``full``: the files the log removed
before the retention, and the files it never named that are older than the retention), the
table properties ``delta.logRetentionDuration`` and ``delta.deletedFileRetentionDuration``
set to the retention, with the read options kafkalog keeps in the configuration; that commit
carries a copy of the table's kafkalog state (:data:`~.delta.COPIED_FROM`), so the next run
finds it after the log is cleaned. Then ``create_checkpoint`` (which keeps the app
transactions: the offsets) and ``cleanup_metadata`` (log files older than the retention).

**Iceberg** (PyIceberg has snapshot expiry but neither compaction nor orphan removal; they are
written here): the small data files of each partition (and partition spec and file schema)
are rewritten into files of about ``target_bytes`` (read and written with pyarrow as they
are: the same columns, field ids and types; PyIceberg's column statistics), committed as one
overwrite snapshot that deletes them and adds the new ones (PyIceberg's public
``update_snapshot().overwrite()``), on top of the snapshot they were planned from or not at
all; partitions with delete files (rows deleted by another engine) are left alone. The
snapshot carries no kafkalog state: a run finds it in the newest kafkalog snapshot of the
lineage, or in the table properties once that one expired (:mod:`.iceberg`). Snapshots older
than the retention are expired (``table.maintenance.expire_snapshots().older_than``, which
keeps branch and tag heads, the current snapshot among them); then every file under the
table's ``data/`` and ``metadata/`` that no remaining snapshot, manifest list, manifest,
metadata file (current and logged) or statistics file names, and that is older than the
retention, is deleted (as Iceberg's ``DeleteOrphanFiles`` with ``olderThan``); not when
another table of the catalog lives at the same location (its files look like orphans).

**Two maintains at once** (Delta): deltalake 1.6 commits an optimize on top of another one
that removed the same files (delta-io/delta-rs#3982 lets removes without data change pass the
conflict check; optimize takes no commit properties), keeping both rewrites: every row twice.
So a maintain compacts holding a lease (an app transaction, :data:`LEASE_APP`, committed with
no file; two taken from the same version conflict), on the table as it is once taken; a lease
younger than :data:`LEASE_TTL` skips the compaction. Another tool's OPTIMIZE at the same time
is not covered. (Iceberg: the compaction commits on the snapshot it planned from or not at all.)

**Commits in flight.** A convert writes its data files before its commit names them: a file
younger than the retention is never deleted, so a retention longer than the longest convert
(and any other writer's commit) keeps them. A retention below :data:`MIN_RETAIN` (a day, as
Iceberg's ``remove_orphan_files`` procedure refuses) is refused unless forced.
"""

from __future__ import annotations

import logging
import math
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pyarrow as pa

from ..transport.filesystems import is_remote, resolve
from .spec import TableError, TableTarget, TargetError

log = logging.getLogger("kafkalog")

MIN_RETAIN = timedelta(days=1)
MAX_RETAIN = timedelta(days=36500)  # the cutoff stays a date (now - retain)
# Delta: one compaction at a time (maintain's lease, :meth:`_Delta._lease`)
LEASE_APP = "kafkalog-maintain"
LEASE_TTL = timedelta(hours=12)
DEFAULT_RETAIN = "7d"
TARGET_FILE_BYTES = 128 << 20  # a compacted data file's size, about
SMALL = 0.75  # a data file below this share of the target size is compacted
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.I)


def parse_retention(text: str) -> timedelta:
    """``7d``, ``36h``, ``2w``, ``90m``, ``600s`` as a duration; :class:`TargetError` else."""
    m = _DURATION.match(text or "")
    if m is None:
        raise TargetError(
            f"--retain {text!r}: give a number and a unit (s, m, h, d or w), e.g. 7d or 36h"
        )
    seconds = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if seconds > MAX_RETAIN.total_seconds():
        raise TargetError(f"--retain {text!r}: at most {_duration(MAX_RETAIN)} (100 years)")
    return timedelta(seconds=seconds)


def check_retention(retain: timedelta, force: bool) -> None:
    """Refuse a retention below :data:`MIN_RETAIN` unless ``force``: files younger than the
    retention are what a commit in flight (a convert writing its data files) may name."""
    if retain < MIN_RETAIN and not force:
        raise TargetError(
            f"--retain {_duration(retain)} is shorter than {_duration(MIN_RETAIN)}: the data "
            "files of a convert still writing (not yet committed) are named by no snapshot and "
            "would be removed, and time travel within it lost; give --force if no writer runs "
            "longer than that"
        )


@dataclass(frozen=True)
class Action:
    """One thing maintenance did (or found nothing to do), as one line."""

    name: str
    text: str

    def __str__(self) -> str:
        return f"{self.name}: {self.text}"


def maintain_table(
    target: TableTarget,
    retain: timedelta,
    force: bool = False,
    target_bytes: int = TARGET_FILE_BYTES,
    now: datetime | None = None,
) -> list[Action]:
    """Compact, expire and remove orphan files of the table ``target`` names (see the module's
    description), keeping ``retain`` of history; the actions done, one line each. Raises
    :class:`TargetError` (a retention below :data:`MIN_RETAIN` without ``force``, no table, a
    table kafkalog did not write) before changing anything, and :class:`TableError` for a
    catalog or store that cannot be reached."""
    check_retention(retain, force)
    now = now or datetime.now(timezone.utc)
    if target.format == "iceberg":
        return _Iceberg(target, retain, now, target_bytes).run()
    if target.format == "delta":
        return _Delta(target, retain, now, target_bytes).run()
    raise TableError(f"unknown table format {target.format!r}; iceberg or delta")


def _duration(d: timedelta) -> str:
    s = int(d.total_seconds())
    for unit, size in (("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if s and s % size == 0:
            return f"{s // size}{unit}"
    return f"{s}s"


def _size(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _files(n: int) -> str:
    return f"{n} file{'' if n == 1 else 's'}"


def _fs_path(uri: str) -> str:
    """A file's URI as the table's pyarrow filesystem lists it."""
    if uri.startswith("file:"):
        return "/" + uri[len("file:") :].lstrip("/")
    if "://" in uri and is_remote(uri):
        return resolve(uri).path
    return uri


# -- Delta --------------------------------------------------------------------------------------


class _Delta:
    def __init__(self, target: TableTarget, retain: timedelta, now: datetime, size: int) -> None:
        from .delta import DeltaSink

        self.sink = DeltaSink(target)
        self.retain = retain
        self.now = now
        self.size = size

    def run(self) -> list[Action]:
        from deltalake import CommitProperties, WriterProperties
        from deltalake.exceptions import CommitFailedError

        from .delta import COPIED_FROM, configuration_of
        from .state import RUN

        sink = self.sink
        if not sink.load():
            raise TargetError(f"OUT {sink.shown} holds no Delta table")
        read_at = sink.table.version()
        state = sink._state()  # refuses a table kafkalog did not write, before any change
        out: list[Action] = []
        busy = self._lease(int(self.now.timestamp() * 1000))
        if busy is not None:
            sink.load()
            out.append(Action("compact", busy))
        else:
            m: dict[str, Any] | None = None
            try:
                m = sink.table.optimize.compact(
                    target_size=self.size,
                    writer_properties=WriterProperties(compression="ZSTD", compression_level=1),
                )
            except CommitFailedError:  # refused (another commit changed the table's metadata)
                pass
            finally:
                self._release()
            out.append(self._compacted(m))
        hours = math.ceil(self.retain.total_seconds() / 3600)
        listed = sink.table.vacuum(
            retention_hours=hours, dry_run=True, enforce_retention_duration=False, full=True
        )
        sizes = self._sizes(listed)
        gone = sink.table.vacuum(
            retention_hours=hours, dry_run=False, enforce_retention_duration=False, full=True
        )
        out.append(
            Action(
                "vacuum",
                f"{_files(len(gone))} removed ({_size(sum(sizes.get(g, 0) for g in gone))}): "
                f"files the log removed more than {hours} h ago, and files it never named that "
                f"are older than that",
            )
        )
        interval = f"interval {hours} hours"
        copy = state.to_properties()
        copy.pop(RUN, None)  # the run that committed the state is not this commit's
        props = {
            **configuration_of(copy),
            "delta.logRetentionDuration": interval,
            "delta.deletedFileRetentionDuration": interval,
        }
        for attempt in range(2):  # on the table as it is now (another maintain's may be newer)
            sink.load()
            try:
                sink.table.alter.set_table_properties(
                    props,
                    raise_if_not_exists=False,
                    commit_properties=CommitProperties(
                        custom_metadata={**copy, COPIED_FROM: str(read_at)}
                    ),
                )
                break
            except CommitFailedError:  # another commit changed the metadata first: again
                if attempt:
                    raise
        sink.load()
        before = self._log_files()
        sink.table.create_checkpoint()
        sink.table.cleanup_metadata()
        sink.load()
        after = self._log_files()
        out.append(
            Action(
                "log",
                f"checkpoint at version {sink.table.version()}; {_files(len(before - after))} "
                f"of the log older than {hours} h removed (log and file retention set to "
                f"{hours} h; versions from {self._oldest(after)} on can be read)",
            )
        )
        return out

    def _lease(self, now_ms: int) -> str | None:
        """Take the compaction lease: an app transaction :data:`LEASE_APP` whose version is
        the time it was taken (ms), committed with no file; two taken at once conflict in
        delta-rs, the later refused. None when taken (the table reloaded), else why the
        compaction is skipped: another maintain holds it (taken less than :data:`LEASE_TTL`
        ago), or took it at the same time. deltalake 1.6's optimize commits on top of another
        optimize that removed the same files (delta-rs lets removes without data change pass
        its conflict check, delta-io/delta-rs#3982; optimize takes no commit properties): two
        compactions at once would keep both rewrites, every row of them twice."""
        from deltalake import CommitProperties, Transaction
        from deltalake.exceptions import CommitFailedError

        sink = self.sink
        held = sink.table.transaction_version(LEASE_APP)
        if held and 0 <= now_ms - int(held) < LEASE_TTL.total_seconds() * 1000:
            since = datetime.fromtimestamp(int(held) / 1000, timezone.utc)
            return (
                f"skipped: another maintain has been compacting since "
                f"{since.strftime('%Y-%m-%d %H:%M:%S UTC')} (if it was killed, its lease ends "
                f"{_duration(LEASE_TTL)} after that)"
            )
        try:
            sink.table.create_write_transaction(
                [],
                mode="append",
                schema=sink.table.schema(),
                partition_by=list(sink.table.metadata().partition_columns) or None,
                commit_properties=CommitProperties(
                    app_transactions=[Transaction(LEASE_APP, now_ms)]
                ),
            )
        except CommitFailedError:
            return "skipped: another maintain began compacting at the same time"
        sink.load()  # compacted as it is now, with the lease
        return None

    def _release(self) -> None:
        """Give the lease back (version 0); failing, it ends after :data:`LEASE_TTL`."""
        from deltalake import CommitProperties, Transaction

        sink = self.sink
        try:
            sink.load()
            sink.table.create_write_transaction(
                [],
                mode="append",
                schema=sink.table.schema(),
                partition_by=list(sink.table.metadata().partition_columns) or None,
                commit_properties=CommitProperties(app_transactions=[Transaction(LEASE_APP, 0)]),
            )
        except Exception as e:
            log.warning(
                "%s: the compaction lease was not given back (%s); it ends %s after it was taken",
                sink.where,
                " ".join(str(e).split())[:200],
                _duration(LEASE_TTL),
            )
        sink.load()

    def _compacted(self, m: dict[str, Any] | None) -> Action:
        """The compaction's line from deltalake's metrics ``m`` (None: its commit refused)."""
        if m is None:
            return Action(
                "compact",
                "skipped: another writer's commit refused it (the rewritten files are no part "
                "of the table: vacuum removes them once older than the retention); run maintain "
                "again",
            )
        removed, added = m.get("filesRemoved") or {}, m.get("filesAdded") or {}
        if isinstance(removed, str):
            import json

            removed, added = json.loads(removed), json.loads(added or "{}")
        n_removed, n_added = int(m.get("numFilesRemoved") or 0), int(m.get("numFilesAdded") or 0)
        if not n_removed:
            return Action("compact", "no partition has small files to rewrite")
        return Action(
            "compact",
            f"{_files(n_removed)} in {m.get('partitionsOptimized', 0)} partition(s) "
            f"rewritten as {n_added} ({_size(int(removed.get('totalSize') or 0))} -> "
            f"{_size(int(added.get('totalSize') or 0))}), version {self.sink.table.version()}",
        )

    def _sizes(self, paths: list[str]) -> dict[str, int]:
        out = self.sink.out
        infos = out.fs.get_file_info([f"{out.path}/{p}" for p in paths])
        return {p: max(i.size or 0, 0) for p, i in zip(paths, infos, strict=True)}

    def _log_files(self) -> set[str]:
        from pyarrow.fs import FileSelector

        out = self.sink.out
        infos = out.fs.get_file_info(FileSelector(f"{out.path}/_delta_log", allow_not_found=True))
        return {i.base_name for i in infos if i.base_name[:20].isdigit()}

    @staticmethod
    def _oldest(names: set[str]) -> int:
        checkpoints = [int(n[:20]) for n in names if ".checkpoint." in n]
        commits = [int(n[:20]) for n in names if n.endswith(".json")]
        if 0 in commits:
            return 0
        return min(checkpoints, default=min(commits, default=0))


# -- Iceberg ------------------------------------------------------------------------------------


class _Iceberg:
    def __init__(self, target: TableTarget, retain: timedelta, now: datetime, size: int) -> None:
        from .iceberg import IcebergSink

        self.sink = IcebergSink(target)
        self.retain = retain
        self.now = now
        self.cutoff = now - retain
        self.size = size

    def run(self) -> list[Action]:
        sink = self.sink
        if not sink.load():
            raise TargetError(
                f"OUT {sink.shown} holds no Iceberg table {sink.identifier} in "
                f"{sink._catalog_shown()}"
            )
        sink._state()  # refuses a table kafkalog did not write, before any change
        out = [self._compact(), self._expire(), self._orphans()]
        return out

    # compaction ---------------------------------------------------------------------------------
    def _compact(self) -> Action:
        from pyiceberg.exceptions import CommitFailedException

        table = self.sink.table
        if table.current_snapshot() is None:
            return Action("compact", "the table has no data file")
        groups: dict[tuple[Any, ...], list[Any]] = {}
        deletes: set[tuple[Any, ...]] = set()
        for task in table.scan().plan_files():
            f = task.file
            key = (f.spec_id, tuple(f.partition))
            if task.delete_files:
                deletes.add(key)
            if f.file_size_in_bytes < self.size * SMALL:
                groups.setdefault(key, []).append(f)
        groups = {k: v for k, v in groups.items() if k not in deletes and len(v) > 1}
        if not groups:
            return Action("compact", "no partition has small files to rewrite")
        writer = _Rewriter(table, self.size)
        old: list[Any] = []
        new: list[Any] = []
        try:
            for files in groups.values():
                done, written = writer.rewrite(files)
                old += done
                new += written
            tx = table.transaction()
            with tx.update_snapshot().overwrite() as overwrite:
                for f in old:
                    overwrite.delete_data_file(f)
                for f in new:
                    overwrite.append_data_file(f)
        except BaseException:
            writer.delete()  # no commit began: no snapshot names them
            raise
        if not old:
            return Action("compact", "no partition has small files to rewrite")
        try:
            table = tx.commit_transaction()
        except CommitFailedException:
            writer.delete()  # a definite refusal: no snapshot names them
            return Action(
                "compact",
                "skipped: another writer committed while the files were rewritten (the "
                "rewritten files were deleted); run maintain again",
            )
        # any other failure may be a commit that landed with its answer lost: the files stay
        # (a later maintain removes them once the retention has passed, if no snapshot has them)
        self.sink.table = table
        before = sum(f.file_size_in_bytes for f in old)
        after = sum(f.file_size_in_bytes for f in new)
        return Action(
            "compact",
            f"{_files(len(old))} in {len(groups)} partition(s) rewritten as {len(new)} "
            f"({_size(before)} -> {_size(after)}), snapshot "
            f"{table.current_snapshot().snapshot_id}",
        )

    # snapshot expiry ----------------------------------------------------------------------------
    def _expire(self) -> Action:
        table = self.sink.table
        cutoff_ms = int(self.cutoff.timestamp() * 1000)
        protected = {r.snapshot_id for r in table.metadata.refs.values()}
        old = [
            s
            for s in table.metadata.snapshots
            if s.timestamp_ms < cutoff_ms and s.snapshot_id not in protected
        ]
        shown = self.cutoff.strftime("%Y-%m-%d %H:%M:%S UTC")
        if not old:
            return Action("expire", f"no snapshot older than {shown} to expire")
        table.maintenance.expire_snapshots().older_than(self.cutoff).commit()
        self.sink.table = table = self.sink.catalog.load_table(self.sink.identifier)
        return Action(
            "expire",
            f"{len(old)} snapshot{'' if len(old) == 1 else 's'} older than {shown} expired "
            f"({len(table.metadata.snapshots)} kept)",
        )

    # orphan files -------------------------------------------------------------------------------
    def _referenced(self) -> set[str]:
        """Every file the table's metadata names: metadata files (current and logged),
        statistics files, and each remaining snapshot's manifest list, manifests and live data
        and delete files (a manifest's entry of a file deleted names a file the snapshot before
        held: that one names it as live if it remains)."""
        table = self.sink.table
        meta = table.metadata
        io = table.io
        names = {table.metadata_location, *(m.metadata_file for m in meta.metadata_log)}
        for attr in ("statistics", "partition_statistics"):
            for s in getattr(meta, attr, None) or ():
                names.add(getattr(s, "statistics_path", None) or "")
        manifests: dict[str, Any] = {}
        for snap in meta.snapshots:
            names.add(snap.manifest_list)
            for m in snap.manifests(io):
                manifests.setdefault(m.manifest_path, m)
        for path, m in manifests.items():
            names.add(path)
            for entry in m.fetch_manifest_entry(io, discard_deleted=True):
                names.add(entry.data_file.file_path)
        return {_fs_path(n) for n in names if n}

    def _orphans(self) -> Action:
        from pyarrow.fs import FileSelector, FileType

        out = self.sink.out
        others = self.sink.others_here()
        if others:  # their files are under data/ and metadata/ too, named by no snapshot here
            return Action(
                "orphans",
                f"skipped: the table{'s' if len(others) > 1 else ''} {', '.join(others)} of "
                f"{self.sink._catalog_shown()} also live{'' if len(others) > 1 else 's'} at "
                f"{self.sink.shown}, and their files would be removed; give each table its own "
                "location",
            )
        referenced = self._referenced()
        cutoff_ns = int(self.cutoff.timestamp() * 1e9)
        gone: list[tuple[str, int]] = []
        young = 0
        for sub in ("data", "metadata"):
            listing = out.fs.get_file_info(
                FileSelector(f"{out.path}/{sub}", recursive=True, allow_not_found=True)
            )
            for info in listing:
                if info.type != FileType.File or info.path in referenced:
                    continue
                if info.mtime_ns is None or info.mtime_ns >= cutoff_ns:
                    young += 1  # perhaps a commit in flight's: kept
                    continue
                gone.append((info.path, info.size or 0))
        for path, _ in gone:
            out.fs.delete_file(path)
        kept = f"; {_files(young)} younger than the retention kept" if young else ""
        return Action(
            "orphans",
            f"{_files(len(gone))} no snapshot names removed "
            f"({_size(sum(s for _, s in gone))}){kept}",
        )


class _Rewriter:
    """Data files of one partition rewritten into files of about ``size`` bytes: the rows of
    each file read with pyarrow as they are and written under the same Arrow schema (field ids,
    names, types), so that files of another schema version than the table's are rewritten among
    themselves and read as before; statistics as PyIceberg computes them (:mod:`.compat`, as
    a run's files)."""

    def __init__(self, table: Any, size: int) -> None:
        self.table = table
        self.io = table.io
        self.size = size
        self.uuid = uuid.uuid4()
        self.count = 0
        self.paths: list[str] = []
        from .iceberg import writer_kwargs

        props = dict(table.metadata.properties)
        # as a run writes them: the table's writer properties, zstd at level 1 unless it says
        if props.get("write.parquet.compression-codec", "zstd") == "zstd":
            props.setdefault("write.parquet.compression-level", "1")
        self.writer_kwargs = writer_kwargs(props)
        self.properties = props
        self.row_group_rows = int(props.get("write.parquet.row-group-limit", 1 << 20))

    def rewrite(self, files: list[Any]) -> tuple[list[Any], list[Any]]:
        """Rewrite ``files`` (one partition's); the files rewritten and the new DataFiles."""
        import pyarrow.parquet as pq

        by_schema: dict[Any, list[tuple[Any, Any]]] = {}
        offset = self.table.schema().find_field("offset").field_id if _has(self.table) else None
        for f in sorted(files, key=lambda f: _order(f, offset)):
            with self.io.new_input(f.file_path).open() as stream:  # the footer only
                schema = pq.read_schema(stream)
            key = schema.to_string(show_field_metadata=True)
            by_schema.setdefault(key, []).append((f, schema))
        old: list[Any] = []
        new: list[Any] = []
        for group in by_schema.values():
            if len(group) < 2:
                continue
            try:
                new += self._write(group)
            except _Unmapped:
                continue
            old += [f for f, _ in group]
        return old, new

    def _write(self, group: list[tuple[Any, Any]]) -> list[Any]:
        import os

        import pyarrow.parquet as pq
        from pyiceberg.io.pyarrow import pyarrow_to_schema

        from .compat import data_file
        from .sink import CHUNK_BYTES, parquet_encodings

        first = group[0][0]
        arrow = group[0][1]
        try:
            fschema = pyarrow_to_schema(arrow)
        except Exception as e:  # a file without field ids: left as it is
            raise _Unmapped(str(e)) from None
        directory = os.path.dirname(first.file_path)
        out: list[Any] = []
        pending = list(group)
        while pending:
            path = f"{directory}/{self.count:05d}-compacted-{self.uuid}.parquet"
            self.count += 1
            self.paths.append(path)
            output = self.io.new_output(path)
            written = 0
            with output.create(overwrite=False) as stream:
                writer = pq.ParquetWriter(
                    stream,
                    schema=arrow,
                    store_decimal_as_integer=True,
                    **self.writer_kwargs,
                    **parquet_encodings(arrow),
                )
                with writer:
                    # the files' rows gathered into row groups of the table's row-group limit
                    # (or CHUNK_BYTES of Arrow data): a row group per small file would make
                    # the compacted file as slow to scan as the small ones
                    buffered: list[pa.Table] = []
                    rows = nbytes = 0
                    while pending and (written == 0 or written < self.size):
                        f, _ = pending.pop(0)
                        with self.io.new_input(f.file_path).open() as source:
                            t = pq.read_table(source, schema=arrow)
                        written += f.file_size_in_bytes
                        buffered.append(t)
                        rows += t.num_rows
                        nbytes += t.nbytes
                        if rows >= self.row_group_rows or nbytes >= CHUNK_BYTES:
                            writer.write_table(pa.concat_tables(buffered), self.row_group_rows)
                            buffered, rows, nbytes = [], 0, 0
                    if buffered:
                        writer.write_table(pa.concat_tables(buffered), self.row_group_rows)
            out.append(
                data_file(
                    path=path,
                    size=len(output),
                    parquet_metadata=writer.writer.metadata,
                    file_schema=fschema,
                    properties=self.properties,
                    partition=first.partition,
                    spec_id=first.spec_id,
                )
            )
        return out

    def delete(self) -> None:
        """Delete the files written (best effort: no snapshot names them)."""
        for path in self.paths:
            try:
                self.io.delete(path)
            except Exception:
                pass


class _Unmapped(Exception):
    """A data file whose schema has no Iceberg field ids (not rewritten)."""


def _has(table: Any, name: str = "offset") -> bool:
    try:
        table.schema().find_field(name)
    except ValueError:
        return False
    return True


def _order(f: Any, offset: int | None) -> tuple[int, str]:
    """Data files in the order of their lowest offset (the order their rows were written in,
    within a Kafka partition), then by path."""
    from pyiceberg.conversions import from_bytes
    from pyiceberg.types import LongType

    low = (f.lower_bounds or {}).get(offset) if offset is not None else None
    value = from_bytes(LongType(), low) if low and len(low) == 8 else 0
    return value, f.file_path


def not_a_table(location: str) -> str:
    """What ``location`` is when it is no table, as the rest of "OUT <location> ..." (for a
    one-line refusal)."""
    from .files import entries_below, table_remains

    entries = entries_below(location)
    if any(e.endswith((".log", ".index", ".timeindex")) for e in entries):
        return (
            "holds Kafka segment files (an archive, not a table); maintain takes the OUT of "
            "convert --format iceberg|delta"
        )
    remains = table_remains(location)
    if remains:
        return f"holds no table, only {remains}"
    if entries:
        return "holds no table (no _delta_log, no metadata/)"
    from pyarrow.fs import FileType

    from .sink import out_location

    try:
        out = out_location(location)
        gone = out.fs.get_file_info(out.path).type == FileType.NotFound
    except Exception as e:  # a store that cannot be reached is not an empty one
        said = " ".join(str(e).split())[:300] or type(e).__name__
        return f"cannot be reached ({type(e).__name__}: {said})"
    return "does not exist" if gone else "is empty: no table there"


__all__ = [
    "DEFAULT_RETAIN",
    "MIN_RETAIN",
    "TARGET_FILE_BYTES",
    "Action",
    "check_retention",
    "maintain_table",
    "not_a_table",
    "parse_retention",
]
