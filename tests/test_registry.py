"""Schema sources: the ``_schemas`` topic replayed as Confluent's registry replays it, schema-file
directories, and a live registry (issue 23).

The records are written as the registry writes them (Jackson JSON of SchemaKey, SchemaValue,
ConfigKey/Value, DeleteSubjectKey/Value, ClearSubjectKey/Value, ContextKey/Value, NoopKey in
io.confluent.kafka.schemaregistry.storage), and the segments by kafka-python's record builder. Loading the topic from segments and stores,
schema-file directories and a live registry are in test_registry_sources.py.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from conftest import kp_v2_batch
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalog_source.format.registry import (
    HARD_DELETED,
    LIVE,
    SOFT_DELETED,
    RegisteredSchema,
    RegistryRecordError,
    SchemaReference,
    clear_matches,
    context_of,
)
from kafkalog_source.format.replay import Replayer, replay
from kafkalog_source.payloads import sources


def _read_topic(partitions: list[str], options: dict[str, Any]) -> Any:
    """How the reader layer reads a _schemas topic for the sources (payloads sit below it)."""
    from kafkalog_source import read_table

    return read_table(partitions, columns=["key", "value", "offset"], **options)


def load_registry(spec: str, store: Any = None, **kw: Any) -> Any:
    return sources.load_registry(spec, store, read=_read_topic, **kw)


def default_registry(paths: list[str], store: Any = None, **kw: Any) -> Any:
    return sources.default_registry(paths, _read_topic, store, **kw)


# -- records as the registry writes them ------------------------------------------------------


def _j(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def schema_key(subject: str, version: int) -> bytes:
    return _j({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1})


def schema_value(
    subject: str,
    version: int,
    schema_id: int,
    schema: str,
    schema_type: str | None = None,
    references: list[dict] | None = None,
    deleted: bool = False,
) -> bytes:
    v: dict[str, Any] = {"subject": subject, "version": version, "id": schema_id}
    if schema_type is not None:  # AVRO: absent in older registries' records
        v["schemaType"] = schema_type
    if references:
        v["references"] = references
    v["schema"] = schema
    v["deleted"] = deleted
    return _j(v)


def subject_key(keytype: str, subject: str | None) -> bytes:
    key: dict[str, Any] = {"keytype": keytype}
    if subject is not None:
        key["subject"] = subject
    key["magic"] = 0
    return _j(key)


NOOP = _j({"magic": 0, "keytype": "NOOP"})

AVRO_V1 = json.dumps(
    {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
)
AVRO_V2 = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "note", "type": "string", "default": ""},
        ],
    }
)
AVRO_V3 = json.dumps({"type": "record", "name": "Order", "fields": []})
COMMON_PROTO = 'syntax = "proto3";\npackage common;\nmessage Money { int64 cents = 1; }\n'
BASE_PROTO = (
    'syntax = "proto3";\npackage base;\nimport "common.proto";\n'
    "message Line { common.Money price = 1; }\n"
)
ORDER_PROTO = (
    'syntax = "proto3";\nimport "base.proto";\nmessage Order { repeated base.Line lines = 1; }\n'
)


def registry_records(pairs: list[tuple[bytes | None, bytes | None]]) -> list[tuple]:
    return [(k, v, i) for i, (k, v) in enumerate(pairs)]


def schema_history() -> list[tuple[bytes | None, bytes | None]]:
    """A registry's life: three Avro versions, a Protobuf chain with references, configs."""
    return [
        (NOOP, None),
        (subject_key("CONFIG", None), _j({"compatibilityLevel": "BACKWARD"})),
        (schema_key("orders-value", 1), schema_value("orders-value", 1, 1, AVRO_V1)),
        (schema_key("orders-value", 2), schema_value("orders-value", 2, 2, AVRO_V2, "AVRO")),
        (NOOP, None),
        (schema_key("common", 1), schema_value("common", 1, 3, COMMON_PROTO, "PROTOBUF")),
        (
            schema_key("base", 1),
            schema_value(
                "base",
                1,
                4,
                BASE_PROTO,
                "PROTOBUF",
                [{"name": "common.proto", "subject": "common", "version": 1}],
            ),
        ),
        (
            schema_key("proto-value", 1),
            schema_value(
                "proto-value",
                1,
                5,
                ORDER_PROTO,
                "PROTOBUF",
                [{"name": "base.proto", "subject": "base", "version": 1}],
            ),
        ),
        (
            subject_key("CONFIG", "orders-value"),
            _j({"subject": "orders-value", "compatibilityLevel": "FULL"}),
        ),
        (schema_key("orders-value", 3), schema_value("orders-value", 3, 6, AVRO_V3)),
        # the same schema under another subject keeps its id
        (schema_key("copy-value", 1), schema_value("copy-value", 1, 2, AVRO_V2)),
    ]


# -- replay -----------------------------------------------------------------------------------


def test_registration_versions_and_ids() -> None:
    reg = replay(registry_records(schema_history()))
    assert reg.subjects() == ["base", "common", "copy-value", "orders-value", "proto-value"]
    assert reg.by_id(1) == RegisteredSchema(1, "AVRO", AVRO_V1)
    assert reg.by_id(2).text == AVRO_V2 and not reg.by_id(2).deleted
    assert reg.by_id(3).schema_type == "PROTOBUF"
    assert reg.version("orders-value") == (3, RegisteredSchema(6, "AVRO", AVRO_V3))
    assert reg.version("orders-value", 1)[1].id == 1
    assert reg.versions("orders-value") == [1, 2, 3]
    assert reg.ids() == [1, 2, 3, 4, 5, 6]
    with pytest.raises(KeyError, match="schema id 99 is not in the registry"):
        reg.by_id(99)
    with pytest.raises(KeyError, match="subject 'nope' is not in the registry"):
        reg.version("nope")
    with pytest.raises(KeyError, match="version 9 is not registered"):
        reg.version("orders-value", 9)
    assert reg.counts["NOOP"] == 2 and reg.counts["SCHEMA"] == 7
    assert reg.end_offset == len(schema_history())
    rows = [(r.subject, r.version, r.id, r.schema_type, r.state) for r in reg.describe()]
    assert ("orders-value", 2, 2, "AVRO", LIVE) in rows and len(rows) == 7
    assert list(reg) == reg.describe()


def test_latest_is_the_highest_version_not_deleted() -> None:
    """getLatestVersionFromSubjectSchemas: the highest version number not deleted, whatever the
    order the records came in."""
    pairs = [
        (schema_key("s", 2), schema_value("s", 2, 2, AVRO_V2)),
        (schema_key("s", 1), schema_value("s", 1, 1, AVRO_V1)),
        (schema_key("s", 3), schema_value("s", 3, 3, AVRO_V3, deleted=True)),
    ]
    reg = replay(registry_records(pairs))
    assert reg.version("s")[0] == 2
    assert reg.version(subject="s", version=-1)[0] == 2


def test_references_transitive_by_name() -> None:
    reg = replay(registry_records(schema_history()))
    order = reg.by_id(5)
    assert order.references == (SchemaReference("base.proto", "base", 1),)
    refs = reg.referenced(order)
    assert list(refs) == ["base.proto", "common.proto"]
    assert refs["common.proto"].text == COMMON_PROTO and refs["base.proto"].id == 4
    assert reg.referenced(reg.by_id(3)) == {}
    dangling = RegisteredSchema(9, "PROTOBUF", "", (SchemaReference("x.proto", "x", 1),))
    with pytest.raises(KeyError, match="references 'x.proto'"):
        reg.referenced(dangling)


def test_per_version_soft_delete() -> None:
    """A SCHEMA value with deleted=true (DELETE /subjects/s/versions/3): the version leaves
    'latest' and the subject list, its id keeps resolving, flagged."""
    pairs = schema_history() + [
        (schema_key("orders-value", 3), schema_value("orders-value", 3, 6, AVRO_V3, deleted=True))
    ]
    reg = replay(registry_records(pairs))
    assert reg.version("orders-value")[0] == 2
    assert reg.by_id(6).text == AVRO_V3 and reg.by_id(6).deleted
    n, s = reg.version("orders-value", 3)
    assert n == 3 and s.deleted
    with pytest.raises(KeyError, match="version 3 is deleted"):
        reg.version("orders-value", 3, deleted=False)
    assert reg.versions("orders-value") == [1, 2]
    assert reg.versions("orders-value", deleted=True) == [1, 2, 3]
    state = {(r.subject, r.version): r.state for r in reg.describe()}
    assert state[("orders-value", 3)] == SOFT_DELETED


def test_delete_subject_soft_deletes_up_to_its_version() -> None:
    pairs = schema_history() + [
        (
            subject_key("DELETE_SUBJECT", "orders-value"),
            _j({"subject": "orders-value", "version": 2}),
        ),
    ]
    reg = replay(registry_records(pairs))
    assert reg.version("orders-value")[0] == 3  # version 3 was not covered
    state = {(r.subject, r.version): r.state for r in reg.describe()}
    assert state[("orders-value", 1)] == state[("orders-value", 2)] == SOFT_DELETED
    assert reg.by_id(1).deleted
    assert not reg.by_id(2).deleted  # copy-value version 1 still holds id 2 live
    pairs.append(
        (
            subject_key("DELETE_SUBJECT", "orders-value"),
            _j({"subject": "orders-value", "version": 3}),
        )
    )
    reg = replay(registry_records(pairs))
    assert "orders-value" not in reg.subjects()
    assert "orders-value" in reg.subjects(deleted=True)
    with pytest.raises(KeyError, match="no version that is not deleted"):
        reg.version("orders-value")


def test_hard_delete_tombstone_and_clear_subject() -> None:
    """A SCHEMA tombstone removes one version; CLEAR_SUBJECT removes the soft-deleted ones.
    Ids keep resolving (flagged deleted), as the data written with them needs them."""
    pairs = schema_history() + [
        (schema_key("orders-value", 1), schema_value("orders-value", 1, 1, AVRO_V1, deleted=True)),
        (schema_key("orders-value", 1), None),
        (
            subject_key("DELETE_SUBJECT", "orders-value"),
            _j({"subject": "orders-value", "version": 2}),
        ),
        (subject_key("CLEAR_SUBJECT", "orders-value"), _j({"subject": "orders-value"})),
    ]
    reg = replay(registry_records(pairs))
    assert reg.versions("orders-value", deleted=True) == [3]
    state = {(r.subject, r.version): r.state for r in reg.describe()}
    assert state[("orders-value", 1)] == state[("orders-value", 2)] == HARD_DELETED
    assert reg.by_id(1).text == AVRO_V1 and reg.by_id(1).deleted
    assert not reg.by_id(2).deleted  # copy-value holds it
    n, s = reg.version("orders-value", 1)
    assert n == 1 and s.deleted and s.text == AVRO_V1
    with pytest.raises(KeyError):
        reg.version("orders-value", 1, deleted=False)
    assert reg.counts["SCHEMA tombstone"] == 1
    # a version number freed by a hard delete can be registered again
    again = pairs + [
        (schema_key("orders-value", 1), schema_value("orders-value", 1, 7, AVRO_V2 + " "))
    ]
    reg = replay(registry_records(again))
    assert reg.version("orders-value", 1)[1].id == 7 and reg.by_id(1).text == AVRO_V1


def test_configs_modes_and_contexts() -> None:
    pairs = schema_history() + [
        # a legacy CONFIG value without subject takes the key's
        (subject_key("CONFIG", "proto-value"), _j({"compatibilityLevel": "NONE"})),
        (subject_key("MODE", None), _j({"mode": "READONLY"})),
        (subject_key("CONFIG", "proto-value"), None),  # tombstone: back to the global one
        (
            _j({"keytype": "CONTEXT", "tenant": "default", "context": ".staging", "magic": 0}),
            _j({"tenant": "default", "context": ".staging"}),
        ),
        (subject_key("CONFIG", ":.staging:"), _j({"compatibilityLevel": "NONE"})),
    ]
    reg = replay(registry_records(pairs))
    assert reg.configs == {None: "BACKWARD", "orders-value": "FULL", ":.staging:": "NONE"}
    assert reg.compatibility("orders-value") == "FULL"
    assert reg.compatibility("proto-value") == "BACKWARD"
    assert reg.compatibility(":.staging:orders") == "NONE"
    assert reg.config("orders-value") == {"subject": "orders-value", "compatibilityLevel": "FULL"}
    assert reg.modes == {None: "READONLY"} and reg.mode("anything") == "READONLY"
    assert reg.contexts() == [".staging"]


def test_context_ids_are_per_context() -> None:
    pairs = [
        (schema_key("orders", 1), schema_value("orders", 1, 1, AVRO_V1)),
        (schema_key(":.eu:orders", 1), schema_value(":.eu:orders", 1, 1, AVRO_V2)),
        (schema_key(":.eu:money", 1), schema_value(":.eu:money", 1, 2, COMMON_PROTO, "PROTOBUF")),
        (
            schema_key(":.eu:lines", 1),
            schema_value(
                ":.eu:lines",
                1,
                3,
                BASE_PROTO,
                "PROTOBUF",
                [{"name": "common.proto", "subject": "money", "version": 1}],
            ),
        ),
    ]
    reg = replay(registry_records(pairs))
    assert reg.by_id(1).text == AVRO_V1  # the default context, as GET /schemas/ids/1
    assert reg.by_id(1, subject=":.eu:orders").text == AVRO_V2
    assert reg.by_id(1, subject=":.eu:orders").context == ".eu"
    with pytest.raises(KeyError, match=r"context\(s\) \.eu"):
        reg.by_id(3)
    lines = reg.by_id(3, subject=":.eu:")
    # an unqualified reference lies in the referrer's context
    assert reg.referenced(lines)["common.proto"].text == COMMON_PROTO
    assert reg.contexts() == [".eu"]


def test_duplicate_id_with_other_text_is_ignored() -> None:
    """validateUpdate: a registration whose id already names another schema is ignored."""
    pairs = [
        (schema_key("a", 1), schema_value("a", 1, 1, AVRO_V1)),
        (schema_key("b", 1), schema_value("b", 1, 1, AVRO_V2)),
    ]
    reg = replay(registry_records(pairs))
    assert reg.by_id(1).text == AVRO_V1 and reg.subjects() == ["a"]
    assert "already names another schema" in reg.skipped[0].reason
    assert reg.skipped[0].offset == 1


def test_noop_unknown_keytypes_and_bad_records() -> None:
    pairs = [
        (NOOP, None),
        (_j({"keytype": "FROM_THE_FUTURE", "magic": 0}), b"{}"),
        (_j({"keytype": "ASSOC", "tenant": "t", "subject": "s", "magic": 0}), b"{}"),
        (schema_key("a", 1), schema_value("a", 1, 1, AVRO_V1)),
    ]
    reg = replay(registry_records(pairs))
    assert reg.counts == {"NOOP": 1, "unknown keytype FROM_THE_FUTURE": 1, "ASSOC": 1, "SCHEMA": 1}
    assert [(s.offset, s.keytype) for s in reg.skipped] == [(1, "FROM_THE_FUTURE")]
    bad = [
        (schema_key("a", 1), b"{not json"),
        (b"\xff\xfe", None),
        (None, b"{}"),
        (schema_key("a", 1), _j({"subject": "a", "version": 1, "schema": "x"})),  # no id
        (_j({"keytype": "SCHEMA", "subject": "a", "version": 1, "magic": 7}), b"{}"),
        (subject_key("DELETE_SUBJECT", "a"), _j({"subject": "a"})),
    ]
    for key, value in bad:
        with pytest.raises(RegistryRecordError, match="offset 41") as e:
            replay([(key, value, 41)])
        assert e.value.offset == 41 and "lenient=True" in str(e.value)
    reg = replay(registry_records(pairs[3:] + bad), lenient=True)
    assert reg.subjects() == ["a"]
    assert [s.offset for s in reg.skipped] == [1, 2, 3, 4, 5, 6]
    assert reg.counts["unreadable"] == 6


def test_registry_pickles() -> None:
    reg = replay(registry_records(schema_history()))
    back = pickle.loads(pickle.dumps(reg))
    assert back.describe() == reg.describe() and back.by_id(5) == reg.by_id(5)
    assert back.referenced(back.by_id(5)) == reg.referenced(reg.by_id(5))


# -- the _schemas topic in segments -----------------------------------------------------------


def write_schemas_topic(log_dir: Path, pairs: list[tuple[bytes | None, bytes | None]]) -> Path:
    """``_schemas-0`` with ``pairs`` in two segments, as a broker stores the topic."""
    part = log_dir / "_schemas-0"
    part.mkdir(parents=True)
    half = len(pairs) // 2
    for base, chunk in ((0, pairs[:half]), (half, pairs[half:])):
        recs = [(1_700_000_000_000 + i, k, v, []) for i, (k, v) in enumerate(chunk)]
        (part / f"{base:020d}.log").write_bytes(kp_v2_batch(recs, base_offset=base))
    other = log_dir / "orders-value-0"  # a topic whose values the schemas decode
    other.mkdir()
    (other / f"{0:020d}.log").write_bytes(kp_v2_batch([(1, b"k", b"\0\0\0\0\1\2", [])]))
    return part


class _PlainReplayer(Replayer):
    """The registry's rules as written (handleDeleteSubject walks versions 1..version,
    clearSubjects walks every holder and every stored version): the reference for the indexed
    replay, on version numbers small enough to walk."""

    def _delete_subject(self, k: Any, v: dict | None, offset: int | None) -> None:
        if v is None:
            return
        for version in range(1, v["version"] + 1):
            e = self._reg._store.get((v.get("subject"), version))
            if e is not None and not e.deleted:
                e.deleted = True

    def _clear_subject(self, k: Any, v: dict | None, offset: int | None) -> None:
        if v is None:
            return
        reg, subject = self._reg, v.get("subject")
        guids = reg._guids.get(context_of(subject), {})
        for schema_id in list(guids):
            holders = guids[schema_id]
            for s, ver in list(holders.items()):
                e = reg._store.get((s, ver))
                if clear_matches(subject, s) and (e is None or e.deleted):
                    del holders[s]
            if not holders:
                del guids[schema_id]
        for skey, e in list(reg._store.items()):
            if clear_matches(subject, skey[0]) and e.deleted:
                reg._gone[skey] = reg._store.pop(skey)


_SUBJECTS = ["a", "b", ":.x:a", ":.x:c"]
_CLEARS = [*_SUBJECTS, None, ":.x:", ":.:", ":.__GLOBAL:"]


@st.composite
def _registry_records(draw: Any) -> list[tuple[bytes | None, bytes | None]]:
    out: list[tuple[bytes | None, bytes | None]] = []
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(["schema", "schema", "tombstone", "delete", "clear"]))
        subject = draw(st.sampled_from(_SUBJECTS))
        version = draw(st.integers(-1, 4))
        if kind == "schema":
            sid = draw(st.integers(1, 4))
            text = draw(st.sampled_from([AVRO_V1, AVRO_V2]))
            deleted = draw(st.booleans())
            out.append(
                (
                    schema_key(subject, version),
                    schema_value(subject, version, sid, text, None, None, deleted),
                )
            )
        elif kind == "tombstone":
            out.append((schema_key(subject, version), None))
        elif kind == "delete":
            out.append(
                (
                    subject_key("DELETE_SUBJECT", subject),
                    _j({"subject": subject, "version": version}),
                )
            )
        else:
            clear = draw(st.sampled_from(_CLEARS))
            out.append((subject_key("CLEAR_SUBJECT", clear), _j({"subject": clear})))
    return out


@settings(max_examples=300, deadline=None)
@given(_registry_records())
def test_indexed_replay_matches_the_plain_rules(pairs: list) -> None:
    """Random SCHEMA, tombstone, DELETE_SUBJECT and CLEAR_SUBJECT records over a few subjects
    in two contexts: the indexed replay (linear in the records) ends in the same store, ids and
    holders as the registry's rules walked literally."""
    got, want = Replayer(), _PlainReplayer()
    for i, (k, v) in enumerate(pairs):
        got.apply(k, v, i)
        want.apply(k, v, i)
    a, b = got.result(), want.result()
    assert a.describe() == b.describe()
    assert a._guids == {c: g for c, g in b._guids.items() if g or c in a._guids}
    for ctx in {*a._archive, *b._archive}:
        for sid in b.ids(ctx):
            subject = None if ctx == "." else f":{ctx}:"
            assert a.by_id(sid, subject) == b.by_id(sid, subject)
            assert a.by_id(sid, subject).deleted == b.by_id(sid, subject).deleted
