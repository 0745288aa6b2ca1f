"""The Schema Registry side of ``generate_payloads.py``: confluent-kafka's ``mock://``
registry noting what the serializers registered, and the ``_schemas`` storage topic written
from it as Schema Registry 7.x's ``KafkaStore`` writes it (Jackson JSON keys and values).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka.schema_registry import RegisteredSchema, Schema
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import (
    MockSchemaRegistryClient,
)
from gen_payload_common import Clock

# --------------------------------------------------------------------------- the registry


class RecordingRegistry(MockSchemaRegistryClient):
    """confluent-kafka's ``mock://`` registry, noting the order of first registrations."""

    def __init__(self) -> None:
        super().__init__({"url": "mock://kafkalog-payloads"})
        self.registered: list[tuple[str, int]] = []

    def register_schema_full_response(
        self, subject_name: str, schema: Schema, normalize_schemas: bool = False
    ) -> RegisteredSchema:
        """Register as the mock does; note (subject, version) the first time."""
        rs = super().register_schema_full_response(subject_name, schema, normalize_schemas)
        key = (rs.subject, rs.version)
        if key not in self.registered:
            self.registered.append(key)
        return rs


@dataclass
class StoredSchema:
    """One (subject, version) as read back from the mock registry right after registration."""

    subject: str
    version: int
    id: int
    schema_type: str
    text: str  # as stored in _schemas
    registered: str  # as the serializer registered it (== text except Protobuf)
    references: list[dict[str, Any]]
    state: str = "live"


@dataclass
class SchemasTopic:
    """The registry's storage log: what KafkaStore appends, in order, with the mock's state."""

    client: RecordingRegistry
    clock: Clock
    proto_text: dict[str, str]  # Protobuf file name -> .proto source
    records: list[tuple[int, bytes, bytes | None]] = field(default_factory=list)
    schemas: list[StoredSchema] = field(default_factory=list)
    _seen: int = 0

    def _put(
        self, key: dict[str, Any], value: dict[str, Any] | None, ts: int | None = None
    ) -> None:
        # KafkaStore.waitUntilKafkaReaderReachesLastOffset produces a NOOP to learn the log end
        # before every write; a registry's _schemas is full of them.
        ts = self.clock.tick(10) if ts is None else ts
        self.records.append((ts - 5, _jackson(noop_key()), None))
        self.records.append((ts, _jackson(key), None if value is None else _jackson(value)))

    def start(self, compatibility: str) -> None:
        """Startup NOOP, then the global compatibility level set through PUT /config."""
        self.records.append((self.clock.tick(1000), _jackson(noop_key()), None))
        self._put(
            {"keytype": "CONFIG", "magic": 0},  # ConfigKey, subject null (global): omitted
            {"compatibilityLevel": compatibility},
        )

    def sync(self) -> None:
        """Write a SCHEMA record for every (subject, version) registered since the last sync."""
        new = self.client.registered[self._seen :]
        # registered while serializing the record stamped clock.now: just before it (the
        # records of a topic are >= 100 ms apart, so these stay after the previous ones)
        ts = self.clock.now - 10 * len(new)
        for subject, version in new:
            rs = self.client.get_version(subject, version)
            assert rs.schema is not None and rs.schema_id is not None
            schema = rs.schema
            fetched = self.client.get_schema(rs.schema_id)
            assert fetched == schema
            assert schema.schema_str is not None
            schema_type = schema.schema_type or "AVRO"
            text = schema.schema_str
            if schema_type == "PROTOBUF":
                # the mock holds the base64 FileDescriptorProto; a registry stores .proto text
                name = _proto_name(schema.schema_str)
                text = self.proto_text[name]
            refs = [
                {"name": r.name, "subject": r.subject, "version": r.version}
                for r in schema.references or []
            ]
            stored = StoredSchema(
                subject, version, rs.schema_id, schema_type, text, schema.schema_str, refs
            )
            self.schemas.append(stored)
            self._put(schema_key(subject, version), schema_value(stored), ts)
            ts += 10
        self._seen = len(self.client.registered)

    def _stored(self, subject: str, version: int) -> StoredSchema:
        (s,) = [s for s in self.schemas if (s.subject, s.version) == (subject, version)]
        return s

    def soft_delete_version(self, subject: str, version: int) -> None:
        """DELETE /subjects/{s}/versions/{v}: the SCHEMA record again, with deleted=true."""
        stored = self._stored(subject, version)
        assert self.client.delete_version(subject, version) == stored.id
        stored.state = "soft-deleted"
        self._put(schema_key(subject, version), schema_value(stored, deleted=True))

    def hard_delete_version(self, subject: str, version: int) -> None:
        """DELETE …?permanent=true after the soft delete: a tombstone for the SCHEMA key."""
        stored = self._stored(subject, version)
        assert stored.state == "soft-deleted"
        stored.state = "hard-deleted"
        self._put(schema_key(subject, version), None)

    def delete_subject(self, subject: str) -> None:
        """DELETE /subjects/{s} (soft): one DELETE_SUBJECT record up to the latest version."""
        versions = sorted(self.client.get_versions(subject))
        assert sorted(self.client.delete_subject(subject)) == versions
        for v in versions:
            self._stored(subject, v).state = "subject-deleted"
        self._put(
            {"keytype": "DELETE_SUBJECT", "subject": subject, "magic": 0},
            {"subject": subject, "version": versions[-1]},
        )


def _jackson(obj: dict[str, Any]) -> bytes:
    """Jackson's ObjectMapper.writeValueAsBytes: compact, keys in the given order, non-ASCII raw."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def noop_key() -> dict[str, Any]:
    """NoopKey: @JsonPropertyOrder({"keytype", "magic"}), magic 0."""
    return {"keytype": "NOOP", "magic": 0}


def schema_key(subject: str, version: int) -> dict[str, Any]:
    """SchemaKey: @JsonPropertyOrder({"keytype", "subject", "version", "magic"}), magic 1."""
    return {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}


def schema_value(s: StoredSchema, deleted: bool = False) -> dict[str, Any]:
    """SchemaValue as Schema Registry 5.5-7.9 writes it (``@JsonInclude(NON_EMPTY)``).

    Jackson (before 2.18) orders creator properties first, in the order they first appear in the
    class's constructors: ``(subject, version, id, schema, deleted)``, then
    ``(…, schemaType, references, …)``, then ``(…, md5, …, metadata, ruleSet, …)``. Empty and
    null properties are left out: ``references`` when there are none, ``md5``/``metadata``/
    ``ruleSet`` (null here), and ``schemaType`` for Avro (``SchemaTypeConverter`` turns AVRO into
    null; Schema Registry 8.0 dropped that converter and writes ``"schemaType":"AVRO"``).
    """
    value: dict[str, Any] = {
        "subject": s.subject,
        "version": s.version,
        "id": s.id,
        "schema": s.text,
        "deleted": deleted,
    }
    if s.schema_type != "AVRO":
        value["schemaType"] = s.schema_type
    if s.references:
        value["references"] = s.references
    return value


def _proto_name(b64: str) -> str:
    from google.protobuf import descriptor_pb2

    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.ParseFromString(base64.standard_b64decode(b64))
    return fdp.name
