"""Where schemas come from: a ``_schemas`` topic, a directory of schema files, a live registry.

:func:`load_registry` takes what the ``schemaRegistry`` option names and returns an object with
the methods of :class:`~kafkalog_source.format.registry.Registry` (``by_id``, ``version``,
``subjects``, ``referenced``), so decoders never care where schemas come from:

- **A ``_schemas`` partition directory** (``.../_schemas-0``), **a log directory** holding one, or
  the same on a store (``s3://``, ``abfs://``, ``gs://``, ``hdfs://``, fsspec URLs, reached with
  the read's ``fs.*`` options): read by the caller's ``read`` (the reader layer, above this
  one, passes its own read: :data:`ReadTopic`) and replayed as the registry replays its store (:func:`~kafkalog_source.format.replay.replay`).
  :func:`find_schemas_partition` finds the default one: the ``_schemas`` partition of the log
  directory being read.
- **A directory of schema files** (local or on a store), laid out so that ``curl`` against a
  registry produces it::

      schemas/
        7.avsc                     the schema text of id 7 (Avro; .proto: Protobuf;
        8.proto                    .json: JSON Schema)
        9.json                     or GET /schemas/ids/9 as the registry answers it:
                                   {"schema": "...", "schemaType": "PROTOBUF", "references": [...]}
        subjects/orders-value/3.json
                                   GET /subjects/orders-value/versions/3 as the registry answers
                                   it: {"subject", "version", "id", "schemaType", "schema",
                                   "references"} (a subject directory's name is percent-decoded)
        schemas.json               optional: GET /schemas (every version, one list)

  A ``.json`` file whose top level is an object with a string member ``schema`` is a registry
  answer; any other ``.json`` file is a JSON Schema document. A file's id is its name (or the
  answer's ``id``). References resolve through the subject versions present. Made with::

      SR=http://registry:8081
      curl -s $SR/schemas > schemas/schemas.json
      curl -s $SR/schemas/ids/7 > schemas/7.json
      curl -s $SR/subjects/orders-value/versions/3 --create-dirs \\
           -o schemas/subjects/orders-value/3.json

  The path may also name a ``.json`` file (a ``GET /schemas`` answer) directly.
- **An ``http://`` or ``https://`` URL**: a live registry through confluent-kafka's
  ``SchemaRegistryClient``, looked up lazily (by id, by subject and version) and cached
  (:class:`LiveRegistry`). Credentials go in ``config`` (``basic.auth.user.info``,
  ``bearer.auth.token``, ...) or the URL's ``user:password@``; they never appear in ``repr``,
  error messages or logs.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import (
    AccessDeniedError,
    InvalidSchemaError,
    OptionError,
    PathError,
    SchemasRecordError,
    StorageError,
)
from ..format.registry import (
    DEFAULT_SCHEMA_TYPE,
    RegisteredSchema,
    Registry,
    RegistryRecordError,
    SchemaNotFoundError,
    SchemaReference,
)
from ..format.replay import replay
from ..layout.discovery import parse_partition_dir
from ..options import StoreOptions, check_path, scheme_of
from ..redact import MASK, redact_uri, scrub, secret_strings
from ..transport.failures import describe, scrubbed, store_errors
from ..transport.filesystems import is_remote, resolve

log = logging.getLogger(__name__)

SCHEMAS_TOPIC = "_schemas"  # the registry's kafkastore.topic default
_EXTENSION_TYPES = {".avsc": "AVRO", ".proto": "PROTOBUF", ".json": "JSON"}


# how a _schemas topic is read: (partition directories, reader options as keyword arguments)
# -> an Arrow table with the columns key, value and offset (the reader layer's read_table)
ReadTopic = Callable[[list[str], dict[str, Any]], Any]


def load_registry(
    spec: str,
    store: StoreOptions | None = None,
    *,
    read: ReadTopic | None = None,
    lenient: bool = False,
    config: Mapping[str, Any] | None = None,
) -> Registry | LiveRegistry:
    """The schemas ``spec`` names (see the module docstring): a ``_schemas`` partition or log
    directory (path or URI), a schema-file directory, a ``GET /schemas`` JSON file, or an
    ``http(s)://`` registry URL. ``store`` holds the read's ``fs.*`` options for URIs;
    ``read`` reads a ``_schemas`` topic (:data:`ReadTopic`; needed for that kind of source);
    ``lenient`` skips ``_schemas`` records the registry could not read (as the registry does)
    instead of raising; ``config`` is extra ``SchemaRegistryClient`` configuration for a live
    registry (credentials, TLS files, timeouts).

    Raises :class:`~kafkalog_source.errors.PathError` when the path does not exist or holds
    none of these, :class:`~kafkalog_source.errors.SchemasRecordError` for a bad ``_schemas``
    record (unless ``lenient``), :class:`~kafkalog_source.errors.InvalidSchemaError` (a
    ``ValueError``) for a schema file that does not parse."""
    spec = str(spec)
    scheme = scheme_of(spec)
    if scheme in ("http", "https"):
        return LiveRegistry(spec, config)
    if config:
        raise OptionError(
            "schema registry client configuration applies to an http(s):// registry only, "
            f"not {redact_uri(spec)!r}"
        )
    check_path(spec)
    fs = _Files(store)
    kind, where = _classify(spec, fs)
    if kind == "partitions":
        if read is None:
            raise OptionError(f"{redact_uri(spec)} is a _schemas topic: reading it needs a reader")
        return read_schemas_topic(where, read, store, lenient=lenient)
    if kind == "index":
        return _registry_from_entries(_index_entries(fs.read(spec), spec))
    return load_schema_files(spec, store)


def read_schemas_topic(
    partitions: Sequence[str],
    read: ReadTopic,
    store: StoreOptions | None = None,
    *,
    lenient: bool = False,
) -> Registry:
    """Replay the ``_schemas`` partition directories ``partitions`` (normally one; copies of the
    same partition in several log directories are merged), read by ``read``, into a
    :class:`Registry`."""
    options: dict[str, Any] = _store_options(store)
    if len(partitions) > 1:
        options["replicas"] = "merge"
    table = read(list(partitions), options)
    if table.num_rows == 0:
        return replay((), lenient=lenient)
    table = table.sort_by("offset")
    keys = table.column("key").to_pylist()
    values = table.column("value").to_pylist()
    offsets = table.column("offset").to_pylist()
    try:
        registry = replay(zip(keys, values, offsets, strict=True), lenient=lenient)
    except RegistryRecordError as e:
        raise _located(e, table, offsets) from None
    log.info(
        "replayed %d _schemas records from %s: %s",
        table.num_rows,
        ", ".join(redact_uri(p) for p in partitions),
        registry,
    )
    return registry


def _located(e: RegistryRecordError, table: Any, offsets: list[int]) -> SchemasRecordError:
    """``e`` as a :class:`SchemasRecordError` naming the segment file and the byte of the
    record's batch, when the table says them (``segmentPath``, ``batchPosition``)."""
    path = position = None
    if e.offset is not None and "segmentPath" in table.column_names:
        i = offsets.index(e.offset) if e.offset in offsets else None
        if i is not None:
            path = table.column("segmentPath")[i].as_py()
            position = table.column("batchPosition")[i].as_py()
    where = "" if position is None else " (in the batch at this byte)"
    err = SchemasRecordError(
        f"_schemas record at offset {e.offset}{where}: {e.reason}; the registry logs and skips "
        "such a record (mode=DROPMALFORMED or PERMISSIVE does the same)",
        path,
        position,
    )
    err.offset = e.offset
    return err


def find_schemas_partition(
    paths: Iterable[str], store: StoreOptions | None = None, topic: str = SCHEMAS_TOPIC
) -> list[str]:
    """The ``_schemas`` partition directories of the log directories ``paths`` lie in (a path
    may name a log directory, a partition directory or a segment file), sorted; [] when there
    are none. Globs and paths that do not exist are passed over. ``topic`` is the storage
    topic's name (the registry's ``kafkastore.topic``)."""
    fs = _Files(store)
    found: set[str] = set()
    for path in paths:
        path = str(path)
        if any(c in path for c in "*?["):
            continue
        log_dirs = []
        name = _basename(path)
        if name.endswith(".log"):
            log_dirs.append(_parent(_parent(path)))
        elif parse_partition_dir(name) is not None:
            if parse_partition_dir(name)[0] == topic:  # type: ignore[index]
                found.add(path.rstrip("/"))
                continue
            log_dirs.append(_parent(path))
        else:
            log_dirs.append(path.rstrip("/"))
        for d in log_dirs:
            for entry, is_dir in fs.list(d) or ():
                parsed = parse_partition_dir(_basename(entry))
                if is_dir and parsed is not None and parsed[0] == topic:
                    found.add(entry.rstrip("/"))
    return sorted(found)


def default_registry(
    paths: Iterable[str],
    read: ReadTopic,
    store: StoreOptions | None = None,
    *,
    lenient: bool = False,
) -> Registry | None:
    """The registry of the ``_schemas`` partition of the log directories being read, or None
    when there is none."""
    found = find_schemas_partition(paths, store)
    return read_schemas_topic(found, read, store, lenient=lenient) if found else None


# --- paths on disk or on a store -------------------------------------------------------------


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1] if "://" in path else os.path.basename(path)


def _parent(path: str) -> str:
    if "://" in path:
        return path.rstrip("/").rpartition("/")[0]
    return os.path.dirname(os.path.abspath(path))


def _join(directory: str, name: str) -> str:
    return (
        f"{directory.rstrip('/')}/{name}" if "://" in directory else os.path.join(directory, name)
    )


class _Files:
    """Listing and reading small files, local or on a store (the read's ``fs.*`` options)."""

    def __init__(self, store: StoreOptions | None) -> None:
        self.store = store

    def _failed(self, what: str, uri: str, exc: BaseException) -> Exception:
        said = scrub(describe(exc), (self.store or StoreOptions()).secrets())
        return StorageError(f"cannot {what}: {said}", redact_uri(uri))

    def kind(self, path: str) -> str | None:
        """ "dir", "file" or None (absent)."""
        if not is_remote(path):
            if os.path.isdir(path):
                return "dir"
            return "file" if os.path.exists(path) else None
        from pyarrow.fs import FileType

        loc = resolve(path, self.store)
        try:
            info = loc.fs.get_file_info(loc.path)
        except store_errors() as e:
            raise self._failed("look up", path, e) from scrubbed(
                e, (self.store or StoreOptions()).secrets()
            )
        if info.type == FileType.Directory:
            return "dir"
        if info.type == FileType.File:
            return "file"
        # a store without directories: a prefix with objects under it
        return "dir" if self.list(path) else None

    def list(self, directory: str) -> list[tuple[str, bool]] | None:
        """``(path, is_dir)`` of the entries of ``directory``; None when it does not exist."""
        if not is_remote(directory):
            try:
                with os.scandir(directory) as it:
                    return [(e.path, e.is_dir()) for e in it]
            except (FileNotFoundError, NotADirectoryError):
                return None
            except OSError as e:
                raise PathError(f"cannot list {directory}: {e}") from e
        from pyarrow.fs import FileSelector, FileType

        loc = resolve(directory, self.store)
        try:
            infos = loc.fs.get_file_info(
                FileSelector(loc.path.rstrip("/"), recursive=False, allow_not_found=True)
            )
        except store_errors() as e:
            raise self._failed("list", directory, e) from scrubbed(
                e, (self.store or StoreOptions()).secrets()
            )
        return [(loc.to_uri(i.path), i.type == FileType.Directory) for i in infos]

    def read(self, path: str) -> bytes:
        if not is_remote(path):
            with open(path, "rb") as f:
                return f.read()
        loc = resolve(path, self.store)
        try:
            with loc.fs.open_input_stream(loc.path) as f:
                return f.read()
        except store_errors() as e:
            raise self._failed("read", path, e) from scrubbed(
                e, (self.store or StoreOptions()).secrets()
            )


def _classify(spec: str, fs: _Files) -> tuple[str, list[str]]:
    """("partitions", [dirs]) for a ``_schemas`` partition or a log directory holding one,
    ("index", []) for a JSON file, ("files", []) for a schema-file directory."""
    kind = fs.kind(spec)
    shown = redact_uri(spec)
    if kind is None:
        raise PathError(f"schema registry path {shown} does not exist")
    if kind == "file":
        if spec.endswith(".json"):
            return "index", []
        raise PathError(
            f"schema registry path {shown} is a file: name a _schemas partition directory, a "
            "log directory holding one, a directory of schema files or a GET /schemas .json file"
        )
    entries = fs.list(spec) or []
    if any(_basename(p).endswith(".log") and not d for p, d in entries):
        return "partitions", [spec.rstrip("/")]
    topics = [
        p.rstrip("/")
        for p, d in entries
        if d and (parse_partition_dir(_basename(p)) or ("",))[0] == SCHEMAS_TOPIC
    ]
    if topics:
        return "partitions", sorted(topics)
    if any(_is_schema_file(p) for p, d in entries if not d) or any(
        d and _basename(p) == "subjects" for p, d in entries
    ):
        return "files", []
    partitions = [p for p, d in entries if d and parse_partition_dir(_basename(p))]
    if partitions:
        raise PathError(
            f"schema registry path {shown} is a log directory without a {SCHEMAS_TOPIC} "
            "partition: name the registry's storage topic's partition directory, a directory "
            "of schema files, or an http(s):// registry"
        )
    raise PathError(
        f"schema registry path {shown} holds no {SCHEMAS_TOPIC} partition and no schema files "
        "(<id>.avsc, <id>.proto, <id>.json, subjects/<subject>/<version>.json)"
    )


def _store_options(store: StoreOptions | None) -> dict[str, Any]:
    """``store`` as the reader's options (``fs.<store>.<argument>`` and the read-ahead ones)."""
    if store is None:
        return {}
    out: dict[str, Any] = {f"fs.{s}.{a}": v for s, a, v in store.args}
    out.update(
        readAheadBytes=store.read_ahead_bytes,
        readAheadRequests=store.read_ahead_requests,
        remoteRetries=store.retries,
        remoteConcurrency=store.concurrency,
    )
    return out


# --- schema files ----------------------------------------------------------------------------


def _is_schema_file(path: str) -> bool:
    stem, ext = os.path.splitext(_basename(path))
    return ext in _EXTENSION_TYPES and stem.isdigit()


def _schema_type(obj: Mapping[str, Any]) -> str:
    t = obj.get("schemaType")
    return t if isinstance(t, str) and t else DEFAULT_SCHEMA_TYPE


def _references(obj: Mapping[str, Any], where: str) -> tuple[SchemaReference, ...]:
    refs = obj.get("references") or []
    if not isinstance(refs, list):
        raise InvalidSchemaError(f"{where}: 'references' is not a list")
    try:
        return tuple(SchemaReference(r["name"], r["subject"], r.get("version")) for r in refs)
    except (KeyError, TypeError):
        raise InvalidSchemaError(f"{where}: a reference without name or subject") from None


def _answer(data: bytes, where: str) -> Any:
    try:
        return json.loads(data)
    except (UnicodeDecodeError, ValueError) as e:
        raise InvalidSchemaError(f"{where}: not JSON ({e})") from None


def _is_answer(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("schema"), str)


Entry = tuple[str | None, int | None, RegisteredSchema]


def _index_entries(data: bytes, where: str) -> list[Entry]:
    """The entries of a ``GET /schemas`` answer (a list of subject versions)."""
    shown = redact_uri(where)
    obj = _answer(data, shown)
    if _is_answer(obj):
        obj = [obj]
    if not isinstance(obj, list):
        raise InvalidSchemaError(f"{shown}: not a list of schemas (the answer of GET /schemas)")
    out = []
    for i, item in enumerate(obj):
        out.append(_version_entry(item, f"{shown} item {i}"))
    return out


def _version_entry(item: Any, where: str) -> Entry:
    if not _is_answer(item) or not isinstance(item.get("id"), int):
        raise InvalidSchemaError(f"{where}: not a registered schema (no 'schema' text or 'id')")
    subject, version = item.get("subject"), item.get("version")
    if (subject is None) != (version is None) or (
        version is not None and not isinstance(version, int)
    ):
        raise InvalidSchemaError(f"{where}: 'subject' and 'version' go together")
    schema = RegisteredSchema(
        item["id"], _schema_type(item), item["schema"], _references(item, where)
    )
    return subject, version, schema


def load_schema_files(directory: str, store: StoreOptions | None = None) -> Registry:
    """The schemas of a schema-file directory (see the module docstring)."""
    fs = _Files(store)
    entries: list[Entry] = []
    listing = fs.list(directory)
    if listing is None:
        raise PathError(f"schema directory {redact_uri(directory)} does not exist")
    for path, is_dir in sorted(listing):
        name = _basename(path)
        if is_dir and name == "subjects":
            for sdir, sis_dir in sorted(fs.list(path) or ()):
                if not sis_dir:
                    continue
                subject = unquote(_basename(sdir))
                for vpath, vis_dir in sorted(fs.list(sdir) or ()):
                    stem, ext = os.path.splitext(_basename(vpath))
                    if vis_dir or ext != ".json" or not stem.isdigit():
                        continue
                    where = redact_uri(vpath)
                    s, v, schema = _version_entry(_answer(fs.read(vpath), where), where)
                    if (s is not None and s != subject) or (v is not None and v != int(stem)):
                        raise InvalidSchemaError(
                            f"{where}: names subject {s!r} version {v}, its path "
                            f"{subject!r} version {int(stem)}"
                        )
                    entries.append((subject, int(stem), schema))
        elif not is_dir and name == "schemas.json":
            entries.extend(_index_entries(fs.read(path), path))
        elif not is_dir and _is_schema_file(path):
            stem, ext = os.path.splitext(name)
            where = redact_uri(path)
            data = fs.read(path)
            obj = _answer(data, where) if ext == ".json" else None
            if _is_answer(obj):
                if obj.get("id") is not None and obj["id"] != int(stem):
                    raise InvalidSchemaError(f"{where}: holds id {obj['id']}, its name says {stem}")
                schema = RegisteredSchema(
                    int(stem), _schema_type(obj), obj["schema"], _references(obj, where)
                )
            else:
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise InvalidSchemaError(f"{where}: not UTF-8 text ({e})") from None
                schema = RegisteredSchema(int(stem), _EXTENSION_TYPES[ext], text)
            entries.append((None, None, schema))
    if not entries:
        raise PathError(
            f"schema directory {redact_uri(directory)} holds no schema files "
            "(<id>.avsc, <id>.proto, <id>.json, subjects/<subject>/<version>.json)"
        )
    return _registry_from_entries(entries)


def _registry_from_entries(entries: list[Entry]) -> Registry:
    # a version's answer names its id too: versions first, so an id file cannot hide one
    ordered = [e for e in entries if e[0] is None] + [e for e in entries if e[0] is not None]
    return Registry.from_versions(ordered)


# --- a live registry -------------------------------------------------------------------------

# SchemaRegistryClient settings whose values are shown; every other value is a secret
_SHOWN_CONFIG = frozenset(
    {
        "timeout",
        "cache.capacity",
        "cache.latest.ttl.sec",
        "max.retries",
        "retries.wait.ms",
        "retries.max.wait.ms",
        "ssl.ca.location",
        "ssl.certificate.location",
        "bearer.auth.credentials.source",
        "bearer.auth.logical.cluster",
        "bearer.auth.identity.pool.id",
    }
)


class LiveRegistry:
    """A live Schema Registry, looked up lazily through confluent-kafka's
    ``SchemaRegistryClient`` with the methods of :class:`Registry`, each answer cached.

    Pickles as its URL and configuration only: the client is built on first use in each process.
    Credentials (the URL's ``user:password@``, ``basic.auth.user.info``, ``bearer.auth.token``,
    any setting not known to be harmless) never appear in ``repr``, error messages or logs.
    """

    def __init__(self, url: str, config: Mapping[str, Any] | None = None) -> None:
        self.url = str(url)
        self.config = dict(config or {})
        if "url" in self.config:
            raise OptionError("give the registry's URL as the schemaRegistry path, not in config")
        self._init_runtime()

    def _init_runtime(self) -> None:
        self._client: Any = None
        self._lock = threading.Lock()
        self._by_id: dict[tuple[int, str | None], RegisteredSchema] = {}
        self._versions: dict[tuple[str, int, bool], tuple[int, RegisteredSchema]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "config": self.config}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.url = state["url"]
        self.config = state["config"]
        self._init_runtime()

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{k}={v!r}" if k in _SHOWN_CONFIG else f"{k}={MASK}"
            for k, v in sorted(self.config.items())
        )
        return f"LiveRegistry({redact_uri(self.url)!r}{', ' if shown else ''}{shown})"

    def _secrets(self) -> list[str]:
        found = secret_strings(
            ("registry", k, v) for k, v in self.config.items() if k not in _SHOWN_CONFIG
        )
        extra = []
        info = self.config.get("basic.auth.user.info")
        if isinstance(info, str) and ":" in info:
            extra.append(info.split(":", 1)[1])
        for url in self.url.split(","):
            try:
                parts = urlsplit(url.strip())
            except ValueError:
                continue
            if parts.password:
                extra += [parts.password, unquote(parts.password)]
        extra = [s for s in extra if s]
        return sorted(set(found) | set(extra), key=lambda s: (-len(s), s))

    def _scrub(self, text: str) -> str:
        return scrub(text, self._secrets())

    def client(self) -> Any:
        """The ``SchemaRegistryClient`` (built on first use)."""
        with self._lock:
            if self._client is None:
                try:
                    from confluent_kafka.schema_registry import SchemaRegistryClient
                except ImportError as e:
                    raise ImportError(
                        "a live schema registry needs confluent-kafka's registry client: "
                        f"pip install 'confluent-kafka[schemaregistry]' ({e})"
                    ) from None
                try:
                    self._client = SchemaRegistryClient({"url": self.url, **self.config})
                except (ValueError, TypeError) as e:
                    raise OptionError(
                        f"schema registry {redact_uri(self.url)}: {self._scrub(str(e))}"
                    ) from None
            return self._client

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args)`` with the client's failures as kafkalog's errors, secrets scrubbed."""
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # the client raises its own errors and httpx's
            status = getattr(e, "http_status_code", None)
            said = self._scrub(f"{type(e).__name__}: {e}")
            uri = redact_uri(self.url)
            if status == 404:
                raise SchemaNotFoundError(
                    f"{what} is not in the registry at {uri} ({said})"
                ) from None
            if status in (401, 403):
                raise AccessDeniedError(f"{what}: access denied ({said})", uri) from None
            raise StorageError(f"{what}: {said}", uri) from None

    @staticmethod
    def _schema(schema_id: int, s: Any) -> RegisteredSchema:
        refs = tuple(SchemaReference(r.name, r.subject, r.version) for r in (s.references or []))
        return RegisteredSchema(
            schema_id, s.schema_type or DEFAULT_SCHEMA_TYPE, s.schema_str or "", refs
        )

    def by_id(self, schema_id: int, subject: str | None = None) -> RegisteredSchema:
        """The schema with ``schema_id`` (``GET /schemas/ids/{id}``, ``subject`` as its
        ``subject`` parameter). Raises :class:`SchemaNotFoundError` for an unknown id."""
        key = (int(schema_id), subject)
        hit = self._by_id.get(key)
        if hit is None:
            client = self.client()
            s = self._call(f"schema id {schema_id}", client.get_schema, int(schema_id), subject)
            hit = self._by_id.setdefault(key, self._schema(int(schema_id), s))
        return hit

    def version(
        self, subject: str, version: int | None = None, deleted: bool = True
    ) -> tuple[int, RegisteredSchema]:
        """``(version, schema)`` of ``subject`` (``GET /subjects/{subject}/versions/{v}``; None:
        ``latest``, looked up once per process; a version number is also found soft-deleted
        unless ``deleted=False``)."""
        v = -1 if version is None else int(version)
        key = (subject, v, bool(deleted))
        hit = self._versions.get(key)
        if hit is None:
            client = self.client()
            what = f"subject {subject!r} version {'latest' if v == -1 else v}"
            if v == -1:
                r = self._call(what, client.get_version, subject, "latest")
            else:
                r = self._call(what, client.get_version, subject, v, deleted=bool(deleted))
            schema = self._schema(r.schema_id, r.schema)
            self._by_id.setdefault((r.schema_id, None), schema)
            hit = self._versions.setdefault(key, (r.version, schema))
        return hit

    def subjects(self, deleted: bool = False) -> list[str]:
        """The registry's subjects (``GET /subjects``), sorted."""
        client = self.client()
        return sorted(self._call("the subjects", client.get_subjects))

    def referenced(self, schema: RegisteredSchema) -> dict[str, RegisteredSchema]:
        """Every schema ``schema`` references, transitively, by reference name (as
        :meth:`Registry.referenced`)."""
        out: dict[str, RegisteredSchema] = {}
        todo = list(schema.references)
        seen: set[tuple[str, int | None]] = set()
        while todo:
            ref = todo.pop(0)
            if (ref.subject, ref.version) in seen:
                continue
            seen.add((ref.subject, ref.version))
            version = None if ref.version in (None, -1) else ref.version
            _, target = self.version(ref.subject, version)
            out.setdefault(ref.name, target)
            todo.extend(target.references)
        return out
