"""A table's current data files, for a query engine that reads Parquet (``kafkalog query``).

DuckDB's own ``iceberg`` and ``delta`` extensions are downloaded on first use, which an offline
machine cannot do; the table formats' libraries can say which files make up the table now, and
DuckDB reads those. Iceberg: PyIceberg plans a scan of the current snapshot (its manifests);
Delta: the ``deltalake`` package lists the current add actions with their partition values.

Both formats can describe rows that files do not hold as written: Iceberg delete files, Delta
deletion vectors and column mapping. kafkalog never writes them; a table that has them is refused
(read it with the format's own engine) rather than read wrong.

The view's SQL (:meth:`TableFiles.view_sql`) lists the table's columns in its order. Iceberg
names columns by field id: the files are read with ``read_parquet(..., schema = MAP {id:
{name, type, default_value}})``, which binds each top-level column by its Parquet field id, so
a column another writer renamed reads under its new name, a dropped one is gone, and one added
(again) under an old name, a new field id, reads NULL in files written before. DuckDB binds
fields inside a struct by name, and a pyarrow dataset (a table in a store) binds every column
by name: a table in which a nested field was renamed (or dropped and added again), or, in a
store, one with any rename, is read file by file with every field bound by id
(:func:`~.fieldids.by_id`), in memory, once per query; one whose files may lack field ids (a
name mapping: files added from elsewhere) is read through PyIceberg's scan, which applies it.
Delta files are read with ``union_by_name = true``, so files written before a column was added
give NULL there. Delta files do not hold the partition columns: they come from each file's
partition values, from the Hive-style paths when every path says them, else as constants per
group of files.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

import pyarrow as pa

from ..transport.filesystems import is_remote, resolve
from .sink import Out, out_location
from .spec import TableError, TableTarget, TargetError

_DUCKDB_TYPES = {
    "string": "VARCHAR",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "int16": "SMALLINT",
    "int8": "TINYINT",
    "bool": "BOOLEAN",
    "date32[day]": "DATE",
}


# an Iceberg table property: data files without field ids are read by these names
_NAME_MAPPING = "schema.name-mapping.default"

# the names below OUT that say a table is there
_TABLE_NAMES = ("_delta_log", "metadata", "catalog.db")


def _remote_names(location: str) -> set[str] | None:
    """The names directly below a remote ``location`` from one paged listing (or from a listing
    made earlier in the command); None when no object client serves the store.

    The listing stops at the first page that shows a table (a table's data files need not be
    listed: the format's library reads its metadata); an archive's is listed whole and told to
    the active known objects, for discovery to use."""
    from ..transport.known import current_known, note_listing

    loc = resolve(location)
    if loc.objects is None:
        return None
    root = location.rstrip("/")
    known = current_known()
    covered = known.under(root) if known is not None else None
    if covered is not None:
        return {u[len(root) + 1 :].split("/", 1)[0] for u, _ in covered if len(u) > len(root) + 1}
    prefix = loc.key.rstrip("/") + "/" if loc.key else ""
    names: set[str] = set()
    objects = []
    for page in loc.objects.list(prefix):
        for key, m in page:
            rel = key[len(prefix) :]
            if rel:
                names.add(rel.split("/", 1)[0])
                objects.append((f"{root}/{rel}", m.size, m.mtime_ns, m.etag))
        if names.intersection(_TABLE_NAMES):
            return names  # a table: the rest of its files are not needed here
    note_listing(root, objects)
    return names


def detect(location: str) -> str | None:
    """``iceberg`` or ``delta`` when ``location`` holds a table of that format (a
    ``_delta_log``; a ``metadata/`` directory or the embedded catalog's file), else None.

    In an object store the answer comes from one listing of the prefix, told to the active
    :class:`~kafkalog_source.transport.known.KnownObjects`, so that a query over an archive
    (not a table) lists it once: discovery then finds the prefix listed already."""
    try:
        names = _remote_names(location) if is_remote(location) else None
        if names is None:
            names = set(out_location(location).entries())
    except Exception:  # not a directory, or not reachable: not a table here
        return None
    if "_delta_log" in names:
        return "delta"
    if "metadata" in names or "catalog.db" in names:
        return "iceberg"
    return None


# at most this many entries below a folder are looked at to say what it holds of a table
_REMAINS_LIMIT = 10_000
# the files of a Delta log that make a version: commits and checkpoints
_DELTA_VERSION = re.compile(r"^\d{20}\.(json|checkpoint(\.\d+\.\d+)?\.parquet)$")


def entries_below(location: str) -> list[str]:
    """The paths below ``location``, relative to it, directories ending with ``/`` (object
    stores have none): at most :data:`_REMAINS_LIMIT`, none when it cannot be listed."""
    out: list[str] = []
    try:
        if not is_remote(location):
            root = out_location(location).path
            for here, dirs, files in os.walk(root):
                rel = os.path.relpath(here, root)
                prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
                out += [f"{prefix}{d}/" for d in sorted(dirs)]
                out += [f"{prefix}{f}" for f in sorted(files)]
                if len(out) >= _REMAINS_LIMIT:
                    break
            return out[:_REMAINS_LIMIT]
        from ..transport.known import current_known

        root = location.rstrip("/")
        known = current_known()
        covered = known.under(root) if known is not None else None
        if covered is not None:
            return [u[len(root) + 1 :] for u, _ in covered][:_REMAINS_LIMIT]
        loc = resolve(location)
        if loc.objects is not None:
            prefix = loc.key.rstrip("/") + "/" if loc.key else ""
            for page in loc.objects.list(prefix):
                out += [key[len(prefix) :] for key, _ in page]
                if len(out) >= _REMAINS_LIMIT:
                    break
            return out[:_REMAINS_LIMIT]
        from pyarrow.fs import FileSelector, FileType

        where = out_location(location)
        infos = where.fs.get_file_info(FileSelector(where.path, recursive=True))
        for i in infos[:_REMAINS_LIMIT]:
            rel = i.path[len(where.path) :].lstrip("/")
            out.append(rel + "/" if i.type == FileType.Directory else rel)
        return out
    except Exception:  # unreadable: nothing to say about it
        return []


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def table_remains(location: str) -> str | None:
    """What ``location`` holds of the files of a lake table, when it is not a readable table,
    in words ("4 Parquet files (in data/), metadata/ with 2 manifest files (.avro) and no
    table metadata, a _delta_log/ with no commit (empty)"): the files a ``convert --format
    iceberg|delta`` run leaves when it fails before its first commit, say. None when it holds
    none (no Parquet file, no ``_delta_log``, ``metadata`` or ``catalog.db``)."""
    return _remains(location)[0]


def _remains(location: str) -> tuple[str | None, bool]:
    """:func:`table_remains`, and whether ``location`` has a ``_delta_log`` with no commit."""
    entries = entries_below(location)
    parts: list[str] = []
    uncommitted = False
    parquet = [
        e
        for e in entries
        if e.endswith(".parquet") and not e.startswith(("_delta_log/", "metadata/"))
    ]
    if parquet:
        tops = sorted({e.split("/", 1)[0] + "/" if "/" in e else "" for e in parquet})
        shown = ", ".join(t or "its top level" for t in tops[:3]) + (
            ", ..." if len(tops) > 3 else ""
        )
        parts.append(f"{_count(len(parquet), 'Parquet file')} (in {shown})")
    log = [e for e in entries if e.startswith("_delta_log/")]
    if log:
        files = [e for e in log if not e.endswith("/") and e != "_delta_log/"]
        versions = [e for e in files if _DELTA_VERSION.match(e.rsplit("/", 1)[-1])]
        if not versions:
            uncommitted = True
            parts.append(
                "a _delta_log/ with no commit "
                + (f"({_count(len(files), 'other file')})" if files else "(empty)")
            )
        else:
            parts.append(f"a _delta_log/ with {_count(len(versions), 'commit')}")
    meta = [e for e in entries if e.startswith("metadata/") and not e.endswith("/")]
    if meta or "metadata/" in entries:
        tables = sum(e.endswith(".metadata.json") for e in meta)
        manifests = sum(e.endswith(".avro") for e in meta)
        bits = [_count(manifests, "manifest file") + " (.avro)"] if manifests else []
        bits.append(_count(tables, "table metadata file") if tables else "no table metadata")
        parts.append(f"metadata/ with {' and '.join(bits)}")
    if "catalog.db" in entries:
        parts.append("catalog.db")
    return (", ".join(parts) if parts else None), uncommitted


@dataclass
class TableFiles:
    """The files of a table's current version, grouped by partition values (Delta), with the
    table's columns."""

    format: str
    shown: str
    schema: pa.Schema
    # (partition values {column: text or None}, [local paths or URIs]) per group
    groups: list[tuple[dict[str, str | None], list[str]]] = field(default_factory=list)
    partition_columns: list[str] = field(default_factory=list)
    remote: bool = False
    version: str = ""
    dataset: Any = None  # a pyarrow dataset, for a table in a store
    # the columns as the files name them, when they differ (Iceberg's sanitized names)
    file_schema: pa.Schema | None = None
    # Iceberg: the top-level columns' field ids, in the schema's order (the files are read by
    # field id, :func:`_read_parquet_by_id`)
    field_ids: list[int] | None = None

    @property
    def files(self) -> list[str]:
        """Every data file."""
        return [f for _, files in self.groups for f in files]

    def view_sql(self) -> str | None:
        """A SELECT over the files, in the table's column order (None: the table has no file)."""
        if not self.files:
            return None
        data_columns = [f for f in self.schema.names if f not in self.partition_columns]
        cols = ", ".join(_ident(c) for c in self.schema.names)
        if self.field_ids is not None:
            by_id = _read_parquet_by_id(self.files, self.field_ids, self.file_schema or self.schema)
            return f"SELECT {self.select_list()} FROM {by_id}"
        if not self.partition_columns:
            return f"SELECT {self.select_list()} FROM {_read_parquet(self.files)}"
        if self._hive_paths():
            types = ", ".join(
                f"{_literal(c)}: {_literal(_duckdb_type(self.schema.field(c).type))}"
                for c in self.partition_columns
            )
            return f"SELECT {cols} FROM {_read_parquet(self.files, hive=True, hive_types=types)}"
        selects = []
        for values, files in self.groups:
            consts = ", ".join(
                f"CAST({_literal(values.get(c))} AS {_duckdb_type(self.schema.field(c).type)}) "
                f"AS {_ident(c)}"
                for c in self.partition_columns
            )
            inner = ", ".join(_ident(c) for c in data_columns)
            selects.append(f"SELECT {inner}, {consts} FROM {_read_parquet(files)}")
        return f"SELECT {cols} FROM ({' UNION ALL BY NAME '.join(selects)})"

    def select_list(self) -> str:
        """The table's columns as DuckDB SQL over its files' columns: each by its name, or,
        where the files name fields otherwise (Iceberg's data files hold names sanitized for
        Avro: ``user-id`` is ``user_x2Did``, as Java and PyIceberg write them), rebuilt under
        the table's names (DuckDB 1.3's lambda syntax)."""
        if self.file_schema is None:
            return ", ".join(_ident(c) for c in self.schema.names)
        cols = []
        for f, ff in zip(self.schema, self.file_schema, strict=True):
            e = _ident(ff.name)
            r = _renamed_sql(e, ff.type, f.type, 0)
            cols.append(e if r is None and ff.name == f.name else f"{r or e} AS {_ident(f.name)}")
        return ", ".join(cols)

    def _hive_paths(self) -> bool:
        """Whether every file's path holds its partition values as ``column=value/``."""
        for values, files in self.groups:
            if any(v is None for v in values.values()):
                return False
            want = "/".join(f"{c}={quote(str(values[c]), safe='')}" for c in self.partition_columns)
            for f in files:
                if f"/{want}/" not in f or any(ch in want for ch in "%"):
                    return False
        return True


def _renamed_sql(e: str, file_t: pa.DataType, t: pa.DataType, depth: int) -> str | None:
    """SQL for the value ``e`` of the files' type ``file_t`` under type ``t``'s field names (the
    same types, field for field), or None when the names are the same throughout."""
    if pa.types.is_struct(t) and pa.types.is_struct(file_t):
        parts, changed = [], False
        for i in range(t.num_fields):
            ff, tf = file_t.field(i), t.field(i)
            sub = f"{e}.{_ident(ff.name)}"
            inner = _renamed_sql(sub, ff.type, tf.type, depth)
            changed = changed or inner is not None or ff.name != tf.name
            parts.append(f"{_ident(tf.name)} := {inner or sub}")
        if not changed:
            return None
        return f"CASE WHEN {e} IS NULL THEN NULL ELSE struct_pack({', '.join(parts)}) END"
    x = f"x{depth}"
    if pa.types.is_list(t) and pa.types.is_list(file_t):
        inner = _renamed_sql(x, file_t.value_type, t.value_type, depth + 1)
        return None if inner is None else f"list_transform({e}, lambda {x}: {inner})"
    if pa.types.is_map(t) and pa.types.is_map(file_t):
        k = _renamed_sql(f"{x}.key", file_t.key_type, t.key_type, depth + 1)
        v = _renamed_sql(f"{x}.value", file_t.item_type, t.item_type, depth + 1)
        if k is None and v is None:
            return None
        entry = f"struct_pack(key := {k or x + '.key'}, value := {v or x + '.value'})"
        return f"map_from_entries(list_transform(map_entries({e}), lambda {x}: {entry}))"
    return None


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(value: str | None) -> str:
    return "NULL" if value is None else "'" + str(value).replace("'", "''") + "'"


def _duckdb_type(t: pa.DataType) -> str:
    if pa.types.is_timestamp(t):
        return "TIMESTAMPTZ" if t.tz else "TIMESTAMP"
    name = _DUCKDB_TYPES.get(str(t))
    if name is None:
        raise TableError(f"a partition column of type {t} cannot be read back here")
    return name


def _read_parquet(files: list[str], hive: bool = False, hive_types: str = "") -> str:
    listed = ", ".join(_literal(f) for f in files)
    if hive:
        extra = f", hive_partitioning = true, hive_types = {{{hive_types}}}"
    else:  # DuckDB would take k=v directories for columns (Iceberg's data/topic=.../ too)
        extra = ", hive_partitioning = false"
    return f"read_parquet([{listed}], union_by_name = true{extra})"


def _read_parquet_by_id(files: list[str], ids: list[int], schema: pa.Schema) -> str:
    """``read_parquet`` of ``files`` binding each column of ``schema`` (the files' names and
    types) by its field id in ``ids``: a file without it gives NULL."""
    listed = ", ".join(_literal(f) for f in files)
    cols = ", ".join(
        f"{fid}: {{name: {_literal(f.name)}, type: {_literal(_duckdb_sql_type(f.type))}, "
        "default_value: NULL}"
        for fid, f in zip(ids, schema, strict=True)
    )
    return f"read_parquet([{listed}], schema = MAP {{{cols}}}, hive_partitioning = false)"


_SQL_TYPES = {
    "bool": "BOOLEAN",
    "int8": "TINYINT",
    "int16": "SMALLINT",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "string": "VARCHAR",
    "large_string": "VARCHAR",
    "binary": "BLOB",
    "large_binary": "BLOB",
    "date32[day]": "DATE",
    "time64[us]": "TIME",
}


def _duckdb_sql_type(t: pa.DataType) -> str:
    """DuckDB's SQL type of the Arrow type ``t`` (nested too); :class:`TypeError` for a type
    this does not map (the table is then read through PyIceberg's scan)."""
    if pa.types.is_timestamp(t):
        return "TIMESTAMPTZ" if t.tz else "TIMESTAMP"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision}, {t.scale})"
    if pa.types.is_fixed_size_binary(t):
        return "BLOB"
    if pa.types.is_struct(t):
        inner = ", ".join(f"{_ident(c.name)} {_duckdb_sql_type(c.type)}" for c in t)
        return f"STRUCT({inner})"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"{_duckdb_sql_type(t.value_type)}[]"
    if pa.types.is_map(t):
        return f"MAP({_duckdb_sql_type(t.key_type)}, {_duckdb_sql_type(t.item_type)})"
    name = _SQL_TYPES.get(str(t))
    if name is None:
        raise TypeError(f"no DuckDB type for {t}")
    return name


def _sql_types(schema: pa.Schema) -> bool:
    """Whether every column of ``schema`` has a DuckDB type here."""
    try:
        for f in schema:
            _duckdb_sql_type(f.type)
    except TypeError:
        return False
    return True


def _local(path: str) -> str:
    return path[len("file://") :] if path.startswith("file://") else path


def live_data_files(table: Any, snap: Any) -> list[str] | None:
    """The paths of the live data files of the Iceberg snapshot ``snap``, from its manifest list
    and manifests (PyIceberg's public ``Snapshot.manifests`` and
    ``ManifestFile.fetch_manifest_entry``), without a scan's planning: no filter to evaluate,
    no thread pool. A manifest whose manifest-list entry counts no added and no existing file
    holds only DELETED entries and is not read (a compaction's snapshot keeps one until the next
    commit: 200 entries, 4-5 ms of a query over a maintained table here). None when the snapshot
    has delete manifests or delete files: which of those apply is the scan's to say
    (:meth:`~pyiceberg.table.DataScan.plan_files`)."""
    from pyiceberg.manifest import DataFileContent, ManifestContent

    files: list[str] = []
    for manifest in snap.manifests(table.io):
        if manifest.content != ManifestContent.DATA:
            return None
        if manifest.added_files_count == 0 and manifest.existing_files_count == 0:
            continue  # only DELETED entries (a count left out, as v1 may, is not 0: read it)
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            if entry.data_file.content != DataFileContent.DATA:
                return None
            files.append(entry.data_file.file_path)
    return files


def iceberg_files(target: TableTarget) -> TableFiles:
    """The data files of the Iceberg table's current snapshot (PyIceberg's scan planning), read
    by field id (see the module's description)."""
    from pyiceberg.schema import sanitize_column_names

    from .fieldids import nested_renamed, renamed
    from .iceberg import IcebergSink, small_types

    sink = IcebergSink(target, role="")
    if not sink.load():
        remains = table_remains(target.location)
        raise TargetError(
            f"{sink.shown} holds no Iceberg table {sink.identifier}"
            + (f": no catalog records it, and it holds {remains}" if remains else "")
        )
    table = sink.table
    schema = small_types(table.schema().as_arrow())
    file_schema = small_types(sanitize_column_names(table.schema()).as_arrow())
    snap = table.current_snapshot()
    files = live_data_files(table, snap) if snap is not None else []
    if files is None:  # delete manifests: PyIceberg's scan says which apply
        files = []
        for task in table.scan().plan_files():
            if task.delete_files:
                raise TableError(
                    f"table {sink.identifier} has delete files (rows deleted by another engine), "
                    "which this reader of its data files does not apply: query it with an "
                    "Iceberg engine"
                )
            files.append(task.file.file_path)
    out = sink.out
    tf = TableFiles("iceberg", sink.shown, schema, remote=out.remote)
    if not file_schema.equals(schema):
        tf.file_schema = file_schema
    tf.version = str(snap.snapshot_id) if snap is not None else ""
    meta = table.metadata
    tf.groups = [({}, files if out.remote else [_local(f) for f in files])]
    if out.remote:  # a pyarrow dataset binds by name
        scan = renamed(meta)
    else:  # DuckDB binds top-level columns by field id, nested fields by name
        scan = nested_renamed(meta) or not _sql_types(file_schema)
    if _NAME_MAPPING in meta.properties:  # files without field ids: PyIceberg applies it
        scanned = table.scan().to_arrow() if snap is not None else schema.empty_table()
        tf.dataset = pa.Table.from_arrays(
            [c.cast(f.type) for c, f in zip(scanned.columns, schema, strict=True)], schema=schema
        )
        tf.file_schema = None
    elif scan:
        tf.dataset = _read_by_id(out, files, table.schema(), schema)
        tf.file_schema = None
    elif out.remote:
        tf.dataset = _dataset(out, files, file_schema)
    else:
        tf.field_ids = [f.field_id for f in table.schema().fields]
    return tf


def delta_files(target: TableTarget) -> TableFiles:
    """The data files of the Delta table's current version (the ``deltalake`` package)."""
    from .delta import DeltaSink

    sink = DeltaSink(target, role="")
    try:
        loaded = sink.load()
    except TableError:  # a _delta_log with no commit is no table, not a damaged one
        remains, uncommitted = _remains(target.location)
        if not uncommitted:
            raise
        raise TargetError(
            f"{sink.shown} holds no Delta table: it holds {remains} (what a convert --format "
            "delta run that failed before its first commit may leave)"
        ) from None
    if not loaded:
        raise TargetError(f"{sink.shown} holds no Delta table")
    dt = sink.table
    features = set(dt.protocol().reader_features or [])
    mapping = delta_column_mapping(dt)
    if mapping:
        features.add(f"column mapping (delta.columnMapping.mode={mapping})")
    features.discard("columnMapping")
    if "deletionVectors" in features or mapping:
        raise TableError(
            f"the Delta table at {sink.shown} uses {', '.join(sorted(features))}, which this "
            "reader of its data files does not apply: query it with a Delta engine"
        )
    schema = pa.schema(dt.schema().to_arrow())
    schema = pa.schema([pa.field(f.name, _plain(f.type)) for f in schema])
    parts = list(dt.metadata().partition_columns)
    # through the C stream interface: pa.table() would first ask whether it is a pandas
    # DataFrame, which imports pandas (0.3-0.5 s of a query's start)
    added = pa.RecordBatchReader.from_stream(dt.get_add_actions(flatten=True)).read_all()
    wanted = ["path", *(f"partition.{c}" for c in parts)]
    actions = added.select([c for c in wanted if c in added.column_names]).to_pylist()
    out = sink.out
    groups: dict[tuple[Any, ...], list[str]] = {}
    values_of: dict[tuple[Any, ...], dict[str, str | None]] = {}
    for a in actions:
        values = {c: _partition_text(a.get(f"partition.{c}")) for c in parts}
        key = tuple(values[c] for c in parts)
        values_of[key] = values
        path = a["path"]  # a URI reference: percent-encoded (the Delta protocol's add.path)
        full = path if "://" in path else f"{out.uri}/{unquote(path)}"
        groups.setdefault(key, []).append(full if out.remote else _local(full))
    tf = TableFiles("delta", sink.shown, schema, partition_columns=parts, remote=out.remote)
    tf.groups = [(values_of[k], files) for k, files in groups.items()]
    tf.version = str(dt.version())
    if out.remote:
        tf.dataset = dt.to_pyarrow_dataset()
    return tf


def delta_column_mapping(dt: Any) -> str | None:
    """The column mapping mode of the Delta table ``dt`` (``name`` or ``id``: its columns have
    logical names over the files' physical ones, as Spark's RENAME COLUMN and DROP COLUMN
    need), None when it has none. The ``deltalake`` package (1.6) can neither read such a table's
    renamed columns nor evolve its schema, so kafkalog refuses to query or convert into it."""
    mode = (dt.metadata().configuration or {}).get("delta.columnMapping.mode", "none")
    if mode and mode != "none":
        return str(mode)
    features = set(dt.protocol().reader_features or [])
    return "name" if "columnMapping" in features else None


def _partition_text(v: Any) -> str | None:
    if v is None:
        return None
    return v.isoformat() if hasattr(v, "isoformat") else str(v)


def _plain(t: pa.DataType) -> pa.DataType:
    """deltalake's Arrow types as the reader's (views of strings and binaries as plain ones)."""
    if pa.types.is_string_view(t) or pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_binary_view(t) or pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_struct(t):
        return pa.struct([pa.field(c.name, _plain(c.type)) for c in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return pa.list_(pa.field(t.value_field.name, _plain(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(
            pa.field(t.key_field.name, _plain(t.key_type), nullable=False),
            pa.field(t.item_field.name, _plain(t.item_type)),
        )
    return t


def _read_by_id(out: Out, files: list[str], ice_schema: Any, schema: pa.Schema) -> pa.Table:
    """Every row of ``files``, each file's fields bound by field id at every depth
    (:func:`~.fieldids.by_id`), in memory: a table whose nested fields were renamed, or one in a
    store after a rename."""
    import pyarrow.parquet as pq

    from ..transport.filesystems import resolve
    from .fieldids import by_id

    parts = [schema.empty_table()]
    for f in files:
        path = resolve(f).path if out.remote else _local(f)
        data = pq.read_table(path, filesystem=out.fs if out.remote else None)
        parts.append(by_id(data, ice_schema, schema))
    return pa.concat_tables(parts)


def _dataset(out: Out, files: list[str], schema: pa.Schema) -> Any:
    import pyarrow.dataset as ds

    from ..transport.filesystems import resolve

    paths = [resolve(f).path for f in files]
    return ds.dataset(paths, schema=schema, format="parquet", filesystem=out.fs)


def table_files(target: TableTarget) -> TableFiles:
    """The current data files of the table ``target`` names."""
    if target.format == "iceberg":
        return iceberg_files(target)
    return delta_files(target)


__all__ = [
    "TableFiles",
    "delta_column_mapping",
    "delta_files",
    "detect",
    "iceberg_files",
    "live_data_files",
    "table_files",
    "table_remains",
]
