"""The Confluent Schema Registry's formats: the wire-format prefix of a serialized key or value,
and the records of its storage topic (``_schemas``), replayed as the registry replays them.
Facts only, no I/O.

The storage topic
-----------------
The registry keeps its whole state in one compacted, single-partition topic (``_schemas`` by
default) and rebuilds it at start-up by reading that topic from the beginning
(``KafkaStoreReaderThread``). Keys and values are JSON written by Jackson
(``storage/serialization/SchemaRegistrySerializer.java``). The key's ``keytype`` names its kind
(``SchemaRegistryKeyType.java``: CONFIG, SCHEMA, MODE, NOOP, DELETE_SUBJECT, CLEAR_SUBJECT,
CONTEXT, and ASSOC in the newest registries); ``magic`` is 1 for SCHEMA keys and 0 for the others::

    {"keytype":"SCHEMA","subject":"orders-value","version":1,"magic":1}
    {"subject":"orders-value","version":1,"id":7,"schemaType":"PROTOBUF","schema":"...",
     "references":[{"name":"common.proto","subject":"common","version":1}],"deleted":false}

    {"keytype":"CONFIG","subject":"orders-value","magic":0}   (subject null: the global config)
    {"subject":"orders-value","compatibilityLevel":"FULL"}
    {"keytype":"MODE","subject":null,"magic":0}               {"subject":null,"mode":"READONLY"}
    {"keytype":"DELETE_SUBJECT","subject":"s","magic":0}      {"subject":"s","version":3}
    {"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}       {"subject":"s"}
    {"keytype":"CONTEXT","tenant":"default","context":".ctx"} {"tenant":"default","context":".ctx"}
    {"magic":0,"keytype":"NOOP"}                               (no value)

How :func:`.replay.replay` (in replay.py) applies them (``KafkaStoreReaderThread.doWork``,
``KafkaStoreMessageHandler.validateUpdate``/``handleUpdate``, ``InMemoryCache``):

- Records apply in offset order to a key-value store; a record replaces the value of its key, a
  tombstone (null value) removes the key. Keys are equal when keytype, subject (and for SCHEMA
  the version) are (``SubjectKeyComparator``; the ``magic`` number is not compared).
- A SCHEMA value is refused (ignored, as a registry that is not the leader ignores it) when its
  id already names a different schema text in the same context (``validateUpdate``). A schema
  value with ``"deleted": true`` is a soft-deleted version.
- DELETE_SUBJECT soft-deletes the subject's versions 1 to ``version`` that exist
  (``handleDeleteSubject``). CLEAR_SUBJECT hard-deletes the subject's soft-deleted versions
  (``InMemoryCache.clearSubjects``; a subject ``:.ctx:`` clears the whole context). A SCHEMA
  tombstone hard-deletes one version. Tombstones of other keys only remove the key.
- CONFIG and MODE values without a subject take the key's (legacy values).
- NOOP records only move the reader's offset. A key the registry cannot parse, or a value that
  does not parse for its key, is logged and skipped by the registry (here: an error, or skipped
  and recorded with ``lenient=True``). A keytype the registry does not know stops its reader
  thread; here it is counted and recorded in :attr:`Registry.skipped`, never an error.
- The replay's work is proportional to the records read, never to a number a record claims
  (a DELETE_SUBJECT of version 2147483647 visits only the versions the store holds).

Contexts
--------
A subject ``:.ctx:orders-value`` lies in the context ``.ctx``; others lie in the default context
``.`` (``QualifiedSubject``). Ids are unique per context: :meth:`Registry.by_id` looks in the
default context, as ``GET /schemas/ids/{id}`` does, unless a subject names another (then the
subject's context, and for an unqualified subject the contexts the store knows, as
``getSchemaKeyUsingContexts``). A reference's subject lies in its referrer's context unless
qualified (``qualifySubjectWithParent``). Tenants (multi-tenant registries) are not parsed.

Ids resolve as when the data was written
----------------------------------------
An id once registered keeps resolving to its schema here, even after every version holding it
was soft-deleted (the registry still serves it) or hard-deleted (the registry would answer 404:
records written with it still need it). :attr:`RegisteredSchema.deleted` says whether no live
version holds the id any more; :meth:`Registry.describe` says which versions are soft- or
hard-deleted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

WIRE_MAGIC = 0  # the first byte of a value in the wire format
WIRE_PREFIX = 5  # the magic byte and the 4-byte big-endian schema id

# SchemaRegistryKeyType.java (ASSOC: the newest registries' resource associations)
KEY_TYPES = (
    "CONFIG",
    "SCHEMA",
    "MODE",
    "NOOP",
    "DELETE_SUBJECT",
    "CLEAR_SUBJECT",
    "CONTEXT",
    "ASSOC",
)
SCHEMA_TYPES = ("AVRO", "PROTOBUF", "JSON")
DEFAULT_SCHEMA_TYPE = "AVRO"  # SchemaValue.schemaType when absent or null
DEFAULT_CONTEXT = "."  # QualifiedSubject.DEFAULT_CONTEXT
GLOBAL_CONTEXT = ".__GLOBAL"  # QualifiedSubject.GLOBAL_CONTEXT_NAME
_CONTEXT_PREFIX = ":."

# version states, as Registry.describe() shows them
LIVE = "live"
SOFT_DELETED = "soft-deleted"
HARD_DELETED = "hard-deleted"


class RegistryRecordError(ValueError):
    """A ``_schemas`` record the registry could not read (not JSON, a field of the wrong kind, a
    schema key with a bad magic number, ...). ``offset`` is the record's offset (None when the
    caller gave none), ``reason`` says what is wrong."""

    def __init__(self, reason: str, offset: int | None = None, key: bytes | None = None) -> None:
        self.reason = reason
        self.offset = offset
        self.key = key
        where = f"_schemas record at offset {offset}" if offset is not None else "_schemas record"
        shown = f" (key {_preview(key)})" if key is not None else ""
        super().__init__(
            f"{where}{shown}: {reason}; the registry itself logs and skips such a record "
            "(replay with lenient=True to do the same)"
        )


class SchemaNotFoundError(KeyError):
    """A schema id, subject or version the registry does not hold (a ``KeyError`` whose message
    reads as a sentence)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _preview(data: bytes | None, most: int = 120) -> str:
    if data is None:
        return "null"
    text = data[:most].decode("utf-8", "replace")
    return repr(text + ("..." if len(data) > most else ""))


# --- the records ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaReference:
    """A reference of a schema to another (``SchemaReference.java``): the name the referring
    schema uses (a Protobuf import path, an Avro full name, a JSON Schema ``$ref``), and the
    subject and version registered under it (None or -1: the latest, when resolved)."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class RegisteredSchema:
    """One registered schema: its id, type (``AVRO``, ``PROTOBUF`` or ``JSON``: the registry's
    ``schemaType``, absent = AVRO), text exactly as stored and references.

    ``context`` is the registry context the id belongs to (``.`` the default). ``deleted``
    (not compared): for :meth:`Registry.by_id`, no live version holds the id any more; for
    :meth:`Registry.version`, that version is soft- or hard-deleted."""

    id: int
    schema_type: str
    text: str
    references: tuple[SchemaReference, ...] = ()
    context: str = DEFAULT_CONTEXT
    deleted: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class StoreKey:
    """A parsed ``_schemas`` key. ``subject`` and ``version`` are None where the keytype has
    none; ``fields`` is the whole JSON object."""

    keytype: str
    magic: int
    subject: str | None = None
    version: int | None = None
    fields: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def identity(self) -> tuple:
        """What makes two keys the same store entry (``SubjectKeyComparator``)."""
        if self.keytype == "SCHEMA":
            return ("SCHEMA", self.subject, self.version)
        if self.keytype == "CONTEXT":
            return ("CONTEXT", self.fields.get("tenant"), self.fields.get("context"))
        if self.keytype == "ASSOC":
            return ("ASSOC", *(str(self.fields.get(k)) for k in sorted(self.fields)))
        return (self.keytype, self.subject)


@dataclass(frozen=True)
class VersionInfo:
    """One subject version as :meth:`Registry.describe` lists it. ``state`` is ``live``,
    ``soft-deleted`` or ``hard-deleted``; ``offset`` the ``_schemas`` offset of the record that
    registered it (None when not from a ``_schemas`` topic)."""

    subject: str
    version: int
    id: int
    schema_type: str
    state: str
    offset: int | None = None

    @property
    def deleted(self) -> bool:
        """Whether the version is soft- or hard-deleted."""
        return self.state != LIVE


@dataclass(frozen=True)
class SkippedRecord:
    """A record :func:`.replay.replay` did not apply: its offset, keytype (None when the key did not
    parse) and why."""

    offset: int | None
    keytype: str | None
    reason: str


def _loads(data: bytes, what: str, offset: int | None, key: bytes | None) -> Any:
    try:
        return json.loads(data)
    except (UnicodeDecodeError, ValueError) as e:
        raise RegistryRecordError(f"the {what} is not JSON ({e})", offset, key) from None


def _int_field(obj: dict, name: str, what: str, offset: int | None, key: bytes | None) -> Any:
    v = obj.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise RegistryRecordError(f"{what} field {name!r} is not an integer: {v!r}", offset, key)
    return v


def _str_field(obj: dict, name: str, what: str, offset: int | None, key: bytes | None) -> Any:
    v = obj.get(name)
    if v is not None and not isinstance(v, str):
        raise RegistryRecordError(f"{what} field {name!r} is not a string: {v!r}", offset, key)
    return v


def parse_key(data: bytes | None, offset: int | None = None) -> StoreKey:
    """Parse a ``_schemas`` key. Raises :class:`RegistryRecordError` for a null key, one that
    is not a JSON object, a field of the wrong kind, or a SCHEMA key without subject or version
    or with a magic number other than 0 or 1 (``validateMagicByte``). A keytype that is not one
    of :data:`KEY_TYPES` parses (the caller decides what to do with it)."""
    if data is None:
        raise RegistryRecordError("the key is null", offset)
    obj = _loads(data, "key", offset, data)
    if not isinstance(obj, dict):
        raise RegistryRecordError("the key is not a JSON object", offset, data)
    keytype = obj.get("keytype")
    if not isinstance(keytype, str):
        raise RegistryRecordError("the key has no keytype", offset, data)
    magic = _int_field(obj, "magic", "the key's", offset, data) or 0
    subject = _str_field(obj, "subject", "the key's", offset, data)
    version = None
    if keytype == "SCHEMA":
        version = _int_field(obj, "version", "the key's", offset, data)
        if subject is None or version is None:
            raise RegistryRecordError("a SCHEMA key without subject or version", offset, data)
        if magic not in (0, 1):
            raise RegistryRecordError(f"a SCHEMA key with magic number {magic}", offset, data)
    return StoreKey(keytype, magic, subject, version, obj)


def parse_value(key: StoreKey, data: bytes | None, offset: int | None = None) -> dict | None:
    """Parse a ``_schemas`` value for ``key``: the JSON object (None for a tombstone), its
    fields checked as the registry's Jackson classes read them; a SCHEMA value gets
    ``schemaType`` (AVRO when absent), ``references`` and ``deleted`` filled in."""
    if data is None:
        return None
    raw = json.dumps(key.fields).encode()
    obj = _loads(data, f"{key.keytype} value", offset, raw)
    if not isinstance(obj, dict):
        raise RegistryRecordError(f"the {key.keytype} value is not a JSON object", offset, raw)
    what = f"the {key.keytype} value's"
    _str_field(obj, "subject", what, offset, raw)
    if key.keytype == "SCHEMA":
        if _int_field(obj, "id", what, offset, raw) is None:
            raise RegistryRecordError("a SCHEMA value without an id", offset, raw)
        if _str_field(obj, "schema", what, offset, raw) is None:
            raise RegistryRecordError("a SCHEMA value without a schema", offset, raw)
        _int_field(obj, "version", what, offset, raw)
        stype = _str_field(obj, "schemaType", what, offset, raw)
        obj["schemaType"] = stype if stype is not None else DEFAULT_SCHEMA_TYPE
        refs = obj.get("references") or []
        if not isinstance(refs, list) or not all(isinstance(r, dict) for r in refs):
            raise RegistryRecordError(f"{what} references are not a list of objects", offset, raw)
        for r in refs:
            _str_field(r, "name", "a reference's", offset, raw)
            _str_field(r, "subject", "a reference's", offset, raw)
            _int_field(r, "version", "a reference's", offset, raw)
        obj["references"] = refs
        deleted = obj.get("deleted", False)
        if deleted is None:
            deleted = False
        if not isinstance(deleted, bool):
            raise RegistryRecordError(f"{what} deleted flag is not a boolean", offset, raw)
        obj["deleted"] = deleted
    elif key.keytype == "DELETE_SUBJECT":
        if _int_field(obj, "version", what, offset, raw) is None:
            raise RegistryRecordError("a DELETE_SUBJECT value without a version", offset, raw)
    elif key.keytype == "CONFIG":
        _str_field(obj, "compatibilityLevel", what, offset, raw)
    elif key.keytype == "MODE":
        _str_field(obj, "mode", what, offset, raw)
    return obj


# --- subjects and contexts (QualifiedSubject, default tenant) --------------------------------


def split_subject(subject: str | None) -> tuple[str, str]:
    """``":.ctx:orders"`` → ``(".ctx", "orders")``; an unqualified subject lies in the default
    context ``"."``; ``":.ctx:"`` is the context itself (empty subject)."""
    s = subject or ""
    if s.startswith(_CONTEXT_PREFIX):
        rest = s[len(_CONTEXT_PREFIX) :]
        ix = rest.find(":")
        if ix >= 0:
            return s[1 : len(_CONTEXT_PREFIX) + ix], rest[ix + 1 :]
        return s[1:], ""
    return DEFAULT_CONTEXT, s


def context_of(subject: str | None) -> str:
    """The registry context ``subject`` lies in (``"."``: the default)."""
    return split_subject(subject)[0]


def qualify_reference(parent: str | None, ref_subject: str) -> str:
    """A reference's subject as the store names it: in the referrer's context unless qualified
    (``QualifiedSubject.qualifySubjectWithParent``)."""
    ctx, _ = split_subject(ref_subject)
    if ctx != DEFAULT_CONTEXT:
        return ref_subject
    parent_ctx = context_of(parent)
    if parent_ctx == DEFAULT_CONTEXT:
        return ref_subject
    return f":{parent_ctx}:{ref_subject}"


def clear_matches(clear_subject: str | None, subject: str) -> bool:
    """``InMemoryCache.matchingSubjectPredicate``: the subjects a CLEAR_SUBJECT applies to."""
    if clear_subject is None:
        return True
    if clear_subject == subject:
        return True
    ctx, name = split_subject(clear_subject)
    return name == "" and (ctx == GLOBAL_CONTEXT or ctx == context_of(subject))


# --- the registry ----------------------------------------------------------------------------


@dataclass
class StoredVersion:
    """A subject version in the store: its schema, whether it is soft-deleted, and the
    ``_schemas`` offset that registered it (None: not from a topic)."""

    schema: RegisteredSchema
    deleted: bool  # soft-deleted
    offset: int | None


class Registry:
    """The schemas of a registry: by id, by subject and version, with their references.

    Built by :func:`.replay.replay` (a ``_schemas`` topic) or :meth:`from_versions` (schema files);
    immutable afterwards, and picklable. See the module docstring for how ids resolve.
    """

    def __init__(self) -> None:
        # (subject, version) -> what the store held at the end (live or soft-deleted)
        self._store: dict[tuple[str, int], StoredVersion] = {}
        # (subject, version) -> the last value of a version no longer in the store
        self._gone: dict[tuple[str, int], StoredVersion] = {}
        # context -> id -> {subject: version}: the registry's guidToSubjectVersions
        self._guids: dict[str, dict[int, dict[str, int]]] = {}
        # context -> id -> the schema last registered with it (kept after deletes)
        self._archive: dict[str, dict[int, RegisteredSchema]] = {}
        # (context, id) known live without a subject version (schema files named by id)
        self._live_ids: set[tuple[str, int]] = set()
        self._configs: dict[str | None, dict[str, Any]] = {}
        self._modes: dict[str | None, str | None] = {}
        self._contexts: set[str] = set()
        #: records by keytype (tombstones under "<KEYTYPE> tombstone")
        self.counts: dict[str, int] = {}
        #: records not applied: unknown keytypes, records ignored as the registry ignores them,
        #: and (with ``lenient=True``) records that do not parse
        self.skipped: list[SkippedRecord] = []
        #: the offset after the last record replayed (None: not from a topic)
        self.end_offset: int | None = None

    # construction from schema files (payloads/sources.py) ------------------------------------

    @classmethod
    def from_versions(
        cls,
        versions: Iterable[tuple[str | None, int | None, RegisteredSchema]],
    ) -> Registry:
        """A registry holding ``(subject, version, schema)`` entries (subject and version None:
        a schema known by id only), all live."""
        reg = cls()
        for subject, version, schema in versions:
            ctx = context_of(subject) if subject is not None else schema.context
            schema = replace(schema, context=ctx, deleted=False)
            reg._archive.setdefault(ctx, {})[schema.id] = schema
            reg._live_ids.add((ctx, schema.id))
            if subject is not None and version is not None:
                reg._store[(subject, version)] = StoredVersion(schema, False, None)
                reg._guids.setdefault(ctx, {}).setdefault(schema.id, {})[subject] = version
        return reg

    # lookups ------------------------------------------------------------------------------------

    def by_id(self, schema_id: int, subject: str | None = None) -> RegisteredSchema:
        """The schema registered with ``schema_id`` in the default context (or ``subject``'s
        context, see the module docstring), even if deleted since (then ``deleted`` is True when
        no live version holds it). Raises :class:`SchemaNotFoundError` (a KeyError) for an id
        never registered there."""
        for ctx in self._id_contexts(schema_id, subject):
            found = self._resolve_id(ctx, schema_id)
            if found is not None:
                return found
        holders = sorted(c for c, ids in self._archive.items() if schema_id in ids)
        where = "the default context" if subject is None else f"the context of {subject!r}"
        hint = (
            f"; it is registered in the context(s) {', '.join(holders)}: name a subject there "
            f"(':{holders[0]}:<subject>')"
            if holders
            else ""
        )
        raise SchemaNotFoundError(
            f"schema id {schema_id} is not in the registry ({where}; {self._size()}){hint}"
        )

    def holders(self, schema_id: int) -> list[tuple[str, int]]:
        """The ``(subject, version)`` pairs that hold ``schema_id`` in the default context, in
        subject order (for messages: where a schema id came from)."""
        return sorted(self._guids.get(DEFAULT_CONTEXT, {}).get(schema_id, {}).items())

    def _id_contexts(self, schema_id: int, subject: str | None) -> list[str]:
        if subject is None:
            return [DEFAULT_CONTEXT]
        ctx, name = split_subject(subject)
        if ctx != DEFAULT_CONTEXT or name == "":
            return [ctx]
        # unqualified: the subject itself in the default context, then the subject in every
        # known context, then the default context (getSchemaKeyUsingContexts)
        out = []
        if subject in self._guids.get(DEFAULT_CONTEXT, {}).get(schema_id, {}):
            out.append(DEFAULT_CONTEXT)
        for c in sorted(self.contexts()):
            if f":{c}:{name}" in self._guids.get(c, {}).get(schema_id, {}):
                out.append(c)
        out.append(DEFAULT_CONTEXT)
        return out

    def _resolve_id(self, ctx: str, schema_id: int) -> RegisteredSchema | None:
        holders = self._guids.get(ctx, {}).get(schema_id, {})
        live = (ctx, schema_id) in self._live_ids
        found = None
        for subj, ver in holders.items():
            v = self._store.get((subj, ver))
            if v is None or v.schema.id != schema_id:
                continue  # a key since given to another id (IMPORT mode): use the archive
            live = live or not v.deleted
            found = found or v.schema
        if found is None:
            found = self._archive.get(ctx, {}).get(schema_id)
        if found is None:
            return None
        return replace(found, deleted=not live)

    def version(
        self, subject: str, version: int | None = None, deleted: bool = True
    ) -> tuple[int, RegisteredSchema]:
        """``(version, schema)`` of ``subject``. ``version`` None (or -1): the latest version
        that is not deleted, as the registry's ``latest``. A version number: that version, even
        soft- or hard-deleted (its ``deleted`` says so) unless ``deleted=False``. Raises
        :class:`SchemaNotFoundError` (a KeyError) when there is none."""
        if version is None or version == -1:
            live = [v for (s, v), e in self._store.items() if s == subject and not e.deleted]
            if not live:
                raise SchemaNotFoundError(
                    self._no_subject(subject, "no version that is not deleted")
                )
            n = max(live)
            return n, replace(self._store[(subject, n)].schema, deleted=False)
        entry = self._store.get((subject, version))
        if entry is not None and (deleted or not entry.deleted):
            return version, replace(entry.schema, deleted=entry.deleted)
        gone = self._gone.get((subject, version))
        if gone is not None and deleted and entry is None:
            return version, replace(gone.schema, deleted=True)
        state = "deleted" if entry is not None or gone is not None else "not registered"
        raise SchemaNotFoundError(self._no_subject(subject, f"version {version} is {state}"))

    def _no_subject(self, subject: str, why: str) -> str:
        known = self.subjects(deleted=True)
        if subject not in known and not any(s == subject for s, _ in self._gone):
            shown = ", ".join(known[:10]) + (", ..." if len(known) > 10 else "")
            return f"subject {subject!r} is not in the registry (subjects: {shown or 'none'})"
        return f"subject {subject!r}: {why}"

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        """The versions of ``subject`` in the store, ascending (soft-deleted ones too with
        ``deleted=True``; hard-deleted ones never: :meth:`describe` lists those)."""
        return sorted(
            v for (s, v), e in self._store.items() if s == subject and (deleted or not e.deleted)
        )

    def subjects(self, deleted: bool = False) -> list[str]:
        """The subjects with a version that is not deleted, sorted, as ``GET /subjects`` lists
        them (with ``deleted=True`` also those whose versions are all soft-deleted)."""
        return sorted({s for (s, _), e in self._store.items() if deleted or not e.deleted})

    def referenced(self, schema: RegisteredSchema) -> dict[str, RegisteredSchema]:
        """Every schema ``schema`` references, transitively, by reference name (the import path
        for Protobuf, the full name for Avro, the ``$ref`` for JSON Schema). A reference's
        subject lies in the referrer's context unless qualified; version None or -1 is the
        latest. The first reference met under a name wins. Raises
        :class:`SchemaNotFoundError` for a reference the registry does not hold."""
        out: dict[str, RegisteredSchema] = {}
        parent = f":{schema.context}:" if schema.context != DEFAULT_CONTEXT else None
        todo = [(parent, r) for r in schema.references]
        seen: set[tuple[str, int | None]] = set()
        while todo:
            parent, ref = todo.pop(0)
            subject = qualify_reference(parent, ref.subject)
            if (subject, ref.version) in seen:
                continue
            seen.add((subject, ref.version))
            try:
                _, target = self.version(subject, ref.version)
            except SchemaNotFoundError as e:
                raise SchemaNotFoundError(
                    f"schema id {schema.id} references {ref.name!r} (subject {ref.subject!r} "
                    f"version {ref.version}), which the registry does not hold: {e}"
                ) from None
            out.setdefault(ref.name, target)
            todo.extend((subject, r) for r in target.references)
        return out

    # what else the store says -----------------------------------------------------------------

    def ids(self, context: str = DEFAULT_CONTEXT) -> list[int]:
        """Every id ever registered in ``context``, ascending."""
        return sorted(self._archive.get(context, {}))

    def describe(self) -> list[VersionInfo]:
        """Every subject version the records showed, sorted by subject and version, with its id,
        type and state (live, soft-deleted, hard-deleted)."""
        rows = [
            VersionInfo(
                s,
                v,
                e.schema.id,
                e.schema.schema_type,
                SOFT_DELETED if e.deleted else LIVE,
                e.offset,
            )
            for (s, v), e in self._store.items()
        ]
        rows += [
            VersionInfo(s, v, e.schema.id, e.schema.schema_type, HARD_DELETED, e.offset)
            for (s, v), e in self._gone.items()
            if (s, v) not in self._store
        ]
        return sorted(rows, key=lambda r: (r.subject, r.version))

    def __iter__(self) -> Iterator[VersionInfo]:
        return iter(self.describe())

    @property
    def configs(self) -> dict[str | None, str | None]:
        """The compatibility level configured per subject (key None: the global config; a key
        ``:.ctx:``: a context's), as CONFIG records set it (a level absent from the record:
        None)."""
        return {k: v.get("compatibilityLevel") for k, v in self._configs.items()}

    def config(self, subject: str | None = None) -> dict[str, Any] | None:
        """The CONFIG value stored for ``subject`` (None: global) as the record had it, or
        None."""
        v = self._configs.get(subject)
        return dict(v) if v is not None else None

    def compatibility(self, subject: str | None = None) -> str | None:
        """The compatibility level in force for ``subject``: its own, else its context's (the
        global config for the default context), else the ``:.__GLOBAL:`` context's, as
        ``InMemoryCache.config`` looks it up; None when no record sets one (the registry then
        uses its configured default, BACKWARD unless changed)."""
        return self._lookup(self.configs, subject)

    @property
    def modes(self) -> dict[str | None, str | None]:
        """The mode set per subject (key None: global), as MODE records set it."""
        return dict(self._modes)

    def mode(self, subject: str | None = None) -> str | None:
        """The mode in force for ``subject`` (looked up as :meth:`compatibility`); None when no
        record sets one (the registry's default is READWRITE)."""
        return self._lookup(self._modes, subject)

    @staticmethod
    def _lookup(table: dict[str | None, str | None], subject: str | None) -> str | None:
        if subject is not None and table.get(subject) is not None:
            return table[subject]
        ctx = context_of(subject)
        ctx_key = None if ctx == DEFAULT_CONTEXT else f":{ctx}:"
        if table.get(ctx_key) is not None:
            return table[ctx_key]
        return table.get(f":{GLOBAL_CONTEXT}:")

    def contexts(self) -> list[str]:
        """The contexts CONTEXT records created, and those subjects lie in (without the default
        context ``.``), sorted."""
        found = set(self._contexts)
        found.update(context_of(s) for s, _ in self._store)
        found.discard(DEFAULT_CONTEXT)
        return sorted(found)

    def _size(self) -> str:
        n = sum(len(ids) for ids in self._archive.values())
        return f"{n} schema id{'s' if n != 1 else ''} known"

    def __repr__(self) -> str:
        return (
            f"Registry({len(self.subjects())} subjects, {len(self._store)} versions, "
            f"{self._size()}, {len(self.skipped)} records skipped)"
        )
