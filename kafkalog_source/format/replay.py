"""Replaying a ``_schemas`` topic into a :class:`~.registry.Registry`, record by record, as the
Schema Registry rebuilds its store at start-up (the rules are in :mod:`.registry`'s docstring).

The work is proportional to the records read, never to a number a record claims: a
``DELETE_SUBJECT`` that names version 2147483647 visits only the versions the store holds that
are not deleted yet (each such version is visited once, when it is deleted), and a
``CLEAR_SUBJECT`` visits only the versions deleted or removed since a clear last looked at them,
not the whole store. Facts only, no I/O.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable

from .registry import (
    GLOBAL_CONTEXT,
    KEY_TYPES,
    RegisteredSchema,
    Registry,
    RegistryRecordError,
    SchemaReference,
    SkippedRecord,
    StoredVersion,
    StoreKey,
    clear_matches,
    context_of,
    parse_key,
    parse_value,
    split_subject,
)

Key = tuple[str, int]  # (subject, version)


class Replayer:
    """Applies ``_schemas`` records one at a time, in offset order (:meth:`apply`), as the
    registry's reader thread does; :meth:`result` hands over the :class:`Registry`."""

    def __init__(self, lenient: bool = False) -> None:
        self.lenient = lenient
        self._reg = Registry()
        self._done = False
        # subject -> a min-heap of its versions that were stored live (some may be deleted or
        # gone since: checked when popped); DELETE_SUBJECT pops those up to its version
        self._live: dict[str, list[int]] = {}
        # context -> subject -> versions stored soft-deleted (CLEAR_SUBJECT hard-deletes them)
        self._soft: dict[str, dict[str, set[int]]] = {}
        # context -> subject -> versions whose entry became deleted or absent while an id's
        # holders still named them (CLEAR_SUBJECT of that context drops those holders)
        self._stale: dict[str, dict[str, set[int]]] = {}
        # context -> (subject, version) -> the ids whose holders map subject to version
        self._holding: dict[str, dict[Key, set[int]]] = {}

    def apply(self, key: bytes | None, value: bytes | None, offset: int | None = None) -> None:
        """Apply one record. Raises :class:`RegistryRecordError` for a record the registry could
        not read, unless ``lenient`` (then it is skipped and recorded, as the registry does)."""
        if self._done:
            raise RuntimeError("the registry was already handed over")
        reg = self._reg
        if offset is not None:
            reg.end_offset = offset + 1
        try:
            k = parse_key(key, offset)
            if k.keytype not in KEY_TYPES:
                self._count(f"unknown keytype {k.keytype}")
                reg.skipped.append(
                    SkippedRecord(offset, k.keytype, f"unknown keytype {k.keytype!r}")
                )
                return
            if k.keytype == "NOOP":
                self._count("NOOP")
                return
            v = parse_value(k, value, offset)
        except RegistryRecordError as e:
            if not self.lenient:
                raise
            keytype = None
            try:
                keytype = json.loads(key or b"null").get("keytype")
            except (ValueError, AttributeError):
                pass
            self._count("unreadable")
            reg.skipped.append(SkippedRecord(offset, keytype, e.reason))
            return
        self._count(k.keytype if v is not None else f"{k.keytype} tombstone")
        getattr(self, f"_{k.keytype.lower()}")(k, v, offset)

    def _count(self, what: str) -> None:
        self._reg.counts[what] = self._reg.counts.get(what, 0) + 1

    # the store and the ids' holders, with the indexes that keep deletes and clears linear

    def _put(self, skey: Key, entry: StoredVersion) -> None:
        self._reg._store[skey] = entry
        if entry.deleted:
            self._deleted(skey)
        else:
            heapq.heappush(self._live.setdefault(skey[0], []), skey[1])

    def _deleted(self, skey: Key) -> None:
        """``skey``'s entry became soft-deleted or absent: a clear has work there."""
        ctx = context_of(skey[0])
        if skey in self._reg._store:
            self._soft.setdefault(ctx, {}).setdefault(skey[0], set()).add(skey[1])
        if self._holding.get(ctx, {}).get(skey):
            self._stale.setdefault(ctx, {}).setdefault(skey[0], set()).add(skey[1])

    def _hold(self, ctx: str, schema_id: int, subject: str, version: int) -> None:
        holders = self._reg._guids.setdefault(ctx, {}).setdefault(schema_id, {})
        old = holders.get(subject)
        if old is not None:
            self._holding[ctx].get((subject, old), set()).discard(schema_id)
        holders[subject] = version
        self._holding.setdefault(ctx, {}).setdefault((subject, version), set()).add(schema_id)

    def _unhold(self, ctx: str, schema_id: int, subject: str) -> None:
        guids = self._reg._guids[ctx]
        version = guids[schema_id].pop(subject)
        self._holding[ctx].get((subject, version), set()).discard(schema_id)
        if not guids[schema_id]:
            del guids[schema_id]

    # SCHEMA: validateUpdate, then handleSchemaUpdate / schemaRegistered / schemaDeleted /
    # schemaTombstoned
    def _schema(self, k: StoreKey, v: dict | None, offset: int | None) -> None:
        reg = self._reg
        assert k.subject is not None and k.version is not None
        skey = (k.subject, k.version)
        ctx = context_of(k.subject)
        guids = reg._guids.setdefault(ctx, {})
        if v is None:
            old = reg._store.pop(skey, None)
            if old is not None:
                reg._gone[skey] = old
                holders = guids.get(old.schema.id)
                if holders is not None and holders.get(k.subject) == k.version:
                    self._unhold(ctx, old.schema.id, k.subject)
                self._deleted(skey)
            return
        schema_id = v["id"]
        text = v["schema"]
        qctx = context_of(v.get("subject"))  # validateUpdate: the value's subject
        holders = reg._guids.get(qctx, {}).get(schema_id)
        if holders:
            subj, ver = next(iter(holders.items()))
            prior = reg._store.get((subj, ver))
            if prior is not None and prior.schema.text != text:
                reg.skipped.append(
                    SkippedRecord(
                        offset,
                        "SCHEMA",
                        f"schema id {schema_id} already names another schema ({subj!r} version "
                        f"{ver}); the registry ignores this registration of {k.subject!r} "
                        f"version {k.version}",
                    )
                )
                return
        refs = tuple(
            SchemaReference(r.get("name") or "", r.get("subject") or "", r.get("version"))
            for r in v["references"]
        )
        schema = RegisteredSchema(schema_id, v["schemaType"], text, refs, ctx)
        self._put(skey, StoredVersion(schema, v["deleted"], offset))
        reg._gone.pop(skey, None)
        self._hold(ctx, schema_id, k.subject, k.version)
        if v["deleted"]:
            self._deleted(skey)
        reg._archive.setdefault(ctx, {})[schema_id] = schema

    def _delete_subject(self, k: StoreKey, v: dict | None, offset: int | None) -> None:
        if v is None:
            return  # a tombstone of the DELETE_SUBJECT key itself
        subject = v.get("subject")  # the value's, as handleDeleteSubject reads it
        live = self._live.get(subject) if isinstance(subject, str) else None
        store = self._reg._store
        # versions 1 .. version that exist (handleDeleteSubject walks the numbers; the store's
        # versions at or below it are the same set): each live version is popped once
        while live and live[0] <= v["version"]:
            version = heapq.heappop(live)
            e = store.get((subject, version))
            if version >= 1 and e is not None and not e.deleted:
                e.deleted = True
                self._deleted((subject, version))

    def _clear_subject(self, k: StoreKey, v: dict | None, offset: int | None) -> None:
        if v is None:
            return
        reg = self._reg
        subject = v.get("subject")  # the value's (None: every subject), as handleClearSubject
        ctx = context_of(subject)
        # the holders (in the subject's context) of versions that are deleted or absent
        for s, ver in self._pick(self._stale, subject, only=ctx):
            e = reg._store.get((s, ver))
            if e is None or e.deleted:
                for schema_id in list(self._holding.get(ctx, {}).get((s, ver), ())):
                    if reg._guids.get(ctx, {}).get(schema_id, {}).get(s) == ver:
                        self._unhold(ctx, schema_id, s)
        # every matching soft-deleted version leaves the store
        for skey in self._pick(self._soft, subject):
            e = reg._store.get(skey)
            if e is not None and e.deleted:
                reg._gone[skey] = reg._store.pop(skey)

    @staticmethod
    def _pick(
        index: dict[str, dict[str, set[int]]], clear: str | None, only: str | None = None
    ) -> list[Key]:
        """Take out of ``index`` (context -> subject -> versions) the keys that the clear of
        ``clear`` matches (:func:`~.registry.clear_matches`), in context ``only`` if given."""
        ctx, name = split_subject(clear)
        if clear is not None and name != "":  # one subject
            if only is not None and ctx != only:
                return []
            return [(clear, ver) for ver in sorted(index.get(ctx, {}).pop(clear, ()))]
        out: list[Key] = []
        for c in list(index) if clear is None or ctx == GLOBAL_CONTEXT else [ctx]:
            if only is not None and c != only:
                continue
            subjects = index.get(c, {})
            for s in [s for s in subjects if clear_matches(clear, s)]:
                out += [(s, ver) for ver in sorted(subjects.pop(s))]
        return out

    def _config(self, k: StoreKey, v: dict | None, offset: int | None) -> None:
        if v is None:
            self._reg._configs.pop(k.subject, None)
        else:
            self._reg._configs[k.subject] = v

    def _mode(self, k: StoreKey, v: dict | None, offset: int | None) -> None:
        if v is None:
            self._reg._modes.pop(k.subject, None)
        else:
            self._reg._modes[k.subject] = v.get("mode")

    def _context(self, k: StoreKey, v: dict | None, offset: int | None) -> None:
        ctx = (v or k.fields).get("context")
        if not isinstance(ctx, str):
            return
        if v is None:
            self._reg._contexts.discard(ctx)
        else:
            self._reg._contexts.add(ctx)

    def _assoc(self, k: StoreKey, v: dict | None, offset: int | None) -> None:
        pass  # resource associations (newest registries): nothing a decoder needs

    def result(self) -> Registry:
        """The registry the records built (the replayer cannot be used afterwards)."""
        self._done = True
        return self._reg


def replay(
    records: Iterable[tuple[bytes | None, bytes | None, int | None]], lenient: bool = False
) -> Registry:
    """Replay ``_schemas`` records ``(key, value, offset)``, in offset order, into a
    :class:`Registry`, as the registry rebuilds its store at start-up (see :mod:`.registry`'s
    docstring). A record the registry could not read raises :class:`RegistryRecordError`
    naming its offset; with ``lenient=True`` it is skipped and listed in
    :attr:`Registry.skipped`, as the registry logs and skips it."""
    r = Replayer(lenient)
    for key, value, offset in records:
        r.apply(key, value, offset)
    return r.result()
