"""The manifest and check step of ``generate_payloads.py``: the registry's facts, each row's
ids, subjects and versions, the decode of every row with confluent-kafka's deserializers
and a replay of ``_schemas``.
"""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.common.serde import SchemaId
from confluent_kafka.schema_registry.json_schema import (
    JSONDeserializer,
)
from confluent_kafka.schema_registry.protobuf import (
    ProtobufDeserializer,
)
from confluent_kafka.serialization import MessageField
from gen_payload_builders import _id
from gen_payload_common import PayloadLog, ctx, proto_json, to_json
from gen_payload_registry import RecordingRegistry, SchemasTopic, StoredSchema

# --------------------------------------------------------------------------- manifest


def _registry_facts(reg: SchemasTopic) -> dict[str, Any]:
    by_subject: dict[str, Any] = {}
    for subject in sorted(reg.client.get_subjects()):
        versions = sorted(reg.client.get_versions(subject))
        by_subject[subject] = {
            "versions": {str(v): reg.client.get_version(subject, v).schema_id for v in versions},
            "latest": versions[-1],
        }
    return {
        "config": {"compatibilityLevel": "BACKWARD"},
        "subjects": by_subject,
        "schemas": [
            {
                "id": s.id,
                "subject": s.subject,
                "version": s.version,
                "schemaType": s.schema_type,
                "references": s.references,
                "state": s.state,
                "schema": s.text,
                **({"registeredSchema": s.registered} if s.registered != s.text else {}),
            }
            for s in reg.schemas
        ],
    }


def annotate(
    reg: SchemasTopic, log: PayloadLog, fmt: str, key_fmt: str = "string"
) -> list[dict[str, Any]]:
    """The manifest rows of one partition: hex, decoded key/value, ids, subjects, versions."""
    ids = {s.id: s for s in reg.schemas}
    rows = [r for seg in log.segments for e in seg.entries for r in e.rows]
    out = []
    for exp, row in zip(log.expect, rows, strict=True):
        assert exp["offset"] == row["offset"] and exp["timestamp"] == row["timestamp"]
        r: dict[str, Any] = {
            "offset": exp["offset"],
            "timestamp": exp["timestamp"],
            "key": to_json(exp["key"]),
        }
        if key_fmt == "avro":
            r.update(_wire_facts(ids, bytes.fromhex(row["key"]), "key"))
        if "error" in exp:
            r["error"] = exp["error"]
            if "schemaId" in exp:
                r["valueSchemaId"] = exp["schemaId"]
        else:
            r["value"] = exp["value"] if fmt == "protobuf" else to_json(exp["value"])
            if row["value"] is not None and fmt != "plain-json":
                raw = bytes.fromhex(row["value"])
                r.update(_wire_facts(ids, raw, "value"))
                if fmt == "protobuf":
                    r["messageType"] = exp["messageType"]
                    r["messageIndexes"] = _indexes(raw)
                if fmt == "avro":
                    r["valueLatest"] = to_json(_resolve_latest(reg, raw))
        out.append(r)
    return out


def _wire_facts(ids: dict[int, StoredSchema], raw: bytes, part: str) -> dict[str, Any]:
    assert raw[0] == 0
    s = ids[_id(raw)]
    return {f"{part}SchemaId": s.id, f"{part}Subject": s.subject, f"{part}Version": s.version}


def _resolve_latest(reg: SchemasTopic, raw: bytes) -> Any:
    """fastavro's schema resolution from the writer schema into the subject's latest version."""
    writer = next(s for s in reg.schemas if s.id == _id(raw))
    latest = reg.client.get_latest_version(writer.subject)
    assert latest.schema is not None and latest.schema.schema_str is not None
    return fastavro.schemaless_reader(
        io.BytesIO(raw[5:]),
        fastavro.parse_schema(json.loads(writer.text)),
        fastavro.parse_schema(json.loads(latest.schema.schema_str)),
    )


def _indexes(raw: bytes) -> list[int]:
    """The message indexes, read by confluent-kafka's own SchemaId."""
    sid = SchemaId("PROTOBUF")
    sid.from_bytes(io.BytesIO(raw))
    return list(sid.message_indexes or [])


# --------------------------------------------------------------------------- verification


def verify_payloads(
    manifest: dict[str, Any], logs: list[PayloadLog], client: RecordingRegistry, orders: Any
) -> int:
    """Decode every row's stored key and value (the rows ``PartitionLog`` wrote into the
    segments, checked against the files by ``generate.verify``) with confluent-kafka's
    deserializers; compare with the manifest."""
    checked = 0
    plain = AvroDeserializer(client)
    latest = AvroDeserializer(client, conf={"use.latest.version": True})
    proto = {
        cls.DESCRIPTOR.full_name: ProtobufDeserializer(
            cls, {"use.deprecated.format": False}, schema_registry_client=client
        )
        for cls in (orders.Order, orders.OrderCancelled, orders.Order.LineItem)
    }
    jsond = JSONDeserializer(None, schema_registry_client=client)
    for name, part in manifest["topics"].items():
        topic = name.rsplit("-", 1)[0]
        fmt = part["format"]
        if fmt == "schemas":
            continue
        vctx = ctx(topic, MessageField.VALUE)
        (log,) = [log for log in logs if log.topic == topic]
        stored = {r["offset"]: r for seg in log.segments for e in seg.entries for r in e.rows}
        for r in part["rows"]:
            row = stored[r["offset"]]
            assert row["timestamp"] == r["timestamp"], r
            key = bytes.fromhex(row["key"]) if row["key"] is not None else None
            value = bytes.fromhex(row["value"]) if row["value"] is not None else None
            if part.get("keyFormat") == "avro":
                assert to_json(plain(key, ctx(topic, MessageField.KEY))) == r["key"], r
            else:
                assert key is not None and key.decode() == r["key"], r
            if "error" in r:
                try:
                    plain(value, vctx)
                except Exception:  # noqa: BLE001 - any failure is what a damaged value gives
                    pass
                else:
                    raise AssertionError(f"{name} offset {r['offset']} decoded: {r}")
            elif value is None:
                assert r["value"] is None, r
            elif fmt == "avro":
                assert to_json(plain(value, vctx)) == r["value"], r
                assert to_json(latest(value, vctx)) == r["valueLatest"], r
            elif fmt == "protobuf":
                msg = proto[r["messageType"]](value, vctx)
                assert proto_json(msg) == r["value"], r
                desc: Any = orders.DESCRIPTOR.message_types_by_name
                d = list(desc.values())[r["messageIndexes"][0]]
                for i in r["messageIndexes"][1:]:
                    d = d.nested_types[i]
                assert d.full_name == r["messageType"], r
            elif fmt == "json":
                assert jsond(value, vctx) == r["value"], r
            elif fmt == "plain-json":
                assert json.loads(value) == r["value"], r
            checked += 1
    return checked


def replay(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """A minimal replay of _schemas (as KafkaStoreMessageHandler applies it): live versions."""
    store: dict[tuple[str, int], dict[str, Any]] = {}
    for r in rows:
        key = json.loads(r["key"])
        value = None if r["value"] is None else json.loads(r["value"])
        if key["keytype"] == "SCHEMA":
            k = (key["subject"], key["version"])
            if value is None:
                store.pop(k, None)
            else:
                store[k] = value
        elif key["keytype"] == "DELETE_SUBJECT":
            for (s, v), val in store.items():
                if s == value["subject"] and v <= value["version"]:
                    val["deleted"] = True
    live: dict[str, dict[str, int]] = {}
    for (s, v), val in sorted(store.items()):
        if not val["deleted"]:
            live.setdefault(s, {})[str(v)] = val["id"]
    return live
