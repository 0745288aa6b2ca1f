"""Generate ``sample_segments/payloads/``: a log directory of payloads written by real serializers,
with the Schema Registry's own storage topic (``_schemas-0``) next to them.

Run from the repository root (after ``generate.py``'s requirements, it needs confluent-kafka with
its schema-registry extras, fastavro, protobuf and grpcio-tools)::

    .venv/bin/python sample_segments/generate_payloads.py

* Values (and the Avro keys) are written by confluent-kafka's ``AvroSerializer``,
  ``ProtobufSerializer`` and ``JSONSerializer`` against its ``mock://`` registry client, with the
  default TopicNameStrategy; the Protobuf classes are compiled at generation time by
  grpcio-tools' protoc from ``payloads_src/`` (the ``.proto`` files are committed, the generated
  code is not).
* The ids, versions and references the mock registry assigned are read back from it
  (``get_subjects``/``get_versions``/``get_version``/``get_schema``) and written as the records
  Confluent's Schema Registry 7.x (the ``KafkaStore`` behind ``kafkastore.topic=_schemas``)
  writes: keys and values are Jackson JSON of ``SchemaKey``/``SchemaValue``, ``NoopKey``,
  ``ConfigKey``/``ConfigValue`` and ``DeleteSubjectKey``/``DeleteSubjectValue`` (see
  :func:`schema_value` for the field order and what is omitted).
* Record batches come from ``generate.py``'s ``PartitionLog`` (kafka-python's
  ``DefaultRecordBatchBuilder`` plus the broker's append bookkeeping and index files).

``payloads/MANIFEST.json`` holds, per partition and offset, the serializer's input (see
``NOTES`` for how values are written as JSON), the schema id, subject and version, plus the
registry's expected state and ``generate.py``-style batch/row facts. At the end every record is
decoded back with confluent-kafka's own deserializers against the same mock registry and compared
with the manifest, and every ``.log`` is decoded with kafka-python's ``MemoryRecords``.

The output is deterministic: fixed seeds and timestamps; the mock registry hands out ids in
registration order; fastavro, protobuf (maps of at most one entry: upb's map order is not
stable across processes) and the JSON serializer write the same bytes for the same input.

This script keeps the command line, the registry's history and the run; the code is in sibling
modules next to it: ``gen_payload_common.py`` (paths, seed, clock, the JSON conventions,
``PayloadLog``, the compiled Protobuf classes), ``gen_payload_registry.py`` (the recording mock
registry and the ``_schemas`` records), ``gen_payload_builders.py`` (the schemas and one builder
per payload partition) and ``gen_payload_manifest.py`` (the manifest facts and the check with
the deserializers).
"""

from __future__ import annotations

import base64
import json
import random
import shutil
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

# The code is in the sibling gen_payload_*.py modules; every name this script defined before it
# was split stays reachable from it (tests/test_payload_samples.py uses base64, to_json,
# proto_json, _id, _indexes and replay).
import generate as g  # noqa: E402
from confluent_kafka.schema_registry import Schema  # noqa: E402
from gen_payload_builders import (  # noqa: E402, F401
    ADDRESS,
    CITIES,
    ORDER_JSON_SCHEMA,
    ORDER_KEY,
    _id,
    append,
    avro_order,
    build_avro,
    build_bad,
    build_json,
    build_plain_json,
    build_proto,
    compact,
    json_order,
    order_schema,
)
from gen_payload_common import (  # noqa: E402, F401
    OUT_DIR,
    SEED,
    SRC_DIR,
    T0,
    UTC,
    Clock,
    PayloadLog,
    Row,
    compiled_protos,
    ctx,
    proto_json,
    to_json,
)
from gen_payload_manifest import (  # noqa: E402, F401
    _indexes,
    _registry_facts,
    _resolve_latest,
    _wire_facts,
    annotate,
    replay,
    verify_payloads,
)
from gen_payload_registry import (  # noqa: E402, F401
    RecordingRegistry,
    SchemasTopic,
    StoredSchema,
    _jackson,
    _proto_name,
    noop_key,
    schema_key,
    schema_value,
)

NOTES = {
    "value": (
        "the serializer's input as JSON: Avro bytes/fixed as base64, decimal as a string with "
        "the schema's scale, date as YYYY-MM-DD, timestamp-millis as ISO-8601 UTC with "
        "milliseconds (…Z), uuid as its string; Protobuf in the proto3 JSON mapping "
        "(json_format.MessageToDict with preserving_proto_field_name and "
        "always_print_fields_with_no_presence: 64-bit integers as strings, bytes as base64, "
        "enums by name, Timestamp as RFC 3339); JSON Schema and plain JSON values as the JSON "
        "itself; null for a tombstone"
    ),
    "valueLatest": (
        "Avro only: the value resolved from its writer schema into the subject's latest "
        "version (AvroDeserializer with use.latest.version), same JSON conventions"
    ),
    "schemaId": "the id in the wire-format prefix (magic 0, 4-byte big-endian id)",
    "messageIndexes": "Protobuf only: the message indexes after the id ([0] is written as 0x00)",
    "keyHex/valueHex": "the stored bytes (hex), null for null",
    "registry.schemas[].schema": (
        "the schema text as stored in _schemas: Avro and JSON Schema as registered (compact "
        "JSON); Protobuf as the .proto source text (the registry stores .proto text; "
        "confluent-kafka's serializer registers the base64 FileDescriptorProto of the same "
        "file, given as registeredSchema)"
    ),
    "registry.schemas[].state": (
        "live; soft-deleted (a SCHEMA record with deleted=true: still resolvable by id); "
        "hard-deleted (then a tombstone: not resolvable); subject-deleted (DELETE_SUBJECT)"
    ),
}


# --------------------------------------------------------------------------- main


def build_all() -> tuple[dict[str, Any], list[PayloadLog], RecordingRegistry]:
    """Build every payload partition in memory; return (manifest without files, logs, registry)."""
    rng = random.Random(SEED)
    clock = Clock(T0)
    proto_text = {
        p.relative_to(SRC_DIR).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(SRC_DIR.rglob("*.proto"))
    }
    client = RecordingRegistry()
    reg = SchemasTopic(client, clock, proto_text)
    reg.start("BACKWARD")
    with compiled_protos() as (money, orders):
        avro = build_avro(reg, rng, clock)[0]
        proto = build_proto(reg, rng, clock, money, orders)
        jsn = build_json(reg, rng, clock)
        plain = build_plain_json(rng, clock)
        proto_value = proto.active.entries[0].records[0][2].value
        assert proto_value is not None
        bad = build_bad(reg, rng, clock, proto_value)

        # Schema history beside the data: a subject with a soft-deleted version and a
        # hard-deleted one, and a whole subject soft-deleted.
        for v in (1, 2, 3):
            fields = [{"name": "id", "type": "long"}]
            fields += [{"name": f"f{i}", "type": "string", "default": ""} for i in range(1, v)]
            rec = {
                "type": "record",
                "name": "Retired",
                "namespace": "shop.legacy",
                "fields": fields,
            }
            client.register_schema("retired-value", Schema(compact(rec), "AVRO"))
        client.register_schema("gone-value", Schema(compact({"type": "string"}), "AVRO"))
        reg.sync()
        reg.soft_delete_version("retired-value", 1)
        reg.soft_delete_version("retired-value", 2)
        reg.hard_delete_version("retired-value", 2)
        reg.delete_subject("gone-value")

        schemas = PayloadLog(
            "_schemas",
            0,
            "the Schema Registry's storage topic for the schemas above, records as Schema "
            "Registry 7.x writes them: NOOP, CONFIG (global BACKWARD), SCHEMA (Avro, Protobuf "
            "with a reference, JSON), a soft-deleted version, a hard-deleted version "
            "(tombstone), DELETE_SUBJECT",
        )
        for ts, key, value in reg.records:
            append(schemas, [Row(ts, key, value, {"key": key, "value": value})], "none")
        assert all(a[0] <= b[0] for a, b in pairwise(reg.records)), "_schemas goes back in time"

        logs = [schemas, avro, proto, jsn, plain, bad]
        topics = {
            schemas.name: {
                "format": "schemas",
                "rows": [
                    {
                        "offset": e["offset"],
                        "timestamp": e["timestamp"],
                        "key": e["key"].decode(),
                        "value": None if e["value"] is None else e["value"].decode(),
                    }
                    for e in schemas.expect
                ],
            },
            avro.name: {
                "format": "avro",
                "keyFormat": "avro",
                "rows": annotate(reg, avro, "avro", "avro"),
            },
            proto.name: {"format": "protobuf", "rows": annotate(reg, proto, "protobuf")},
            jsn.name: {"format": "json", "rows": annotate(reg, jsn, "json")},
            plain.name: {"format": "plain-json", "rows": annotate(reg, plain, "plain-json")},
            bad.name: {"format": "avro", "rows": annotate(reg, bad, "avro")},
        }
        manifest = {
            "generator": "sample_segments/generate_payloads.py",
            "notes": NOTES,
            "registry": _registry_facts(reg),
            "topics": topics,
        }
        # checks that need the compiled classes
        n = verify_payloads(manifest, logs, client, orders)
        for s in reg.schemas:
            if s.schema_type == "PROTOBUF":
                mod = orders if s.text == proto_text["shop/orders/orders.proto"] else money
                assert base64.standard_b64decode(s.registered) == mod.DESCRIPTOR.serialized_pb
    print(f"decoded {n} records with confluent-kafka's deserializers: equal to the manifest")
    live = {k: v["versions"] for k, v in manifest["registry"]["subjects"].items()}
    assert replay(topics[schemas.name]["rows"]) == live, "the _schemas replay differs from the mock"
    return manifest, logs, client


def main() -> int:
    """Regenerate sample_segments/payloads/ and verify it."""
    with g.pinned_gzip_mtime():
        manifest, logs, _ = build_all()
    if OUT_DIR.exists():
        shutil.rmtree(OUT_DIR)
    OUT_DIR.mkdir()
    files: dict[str, Any] = {}
    for log in logs:
        files.update(log.write(OUT_DIR))
    manifest["files"] = files
    text = g.dump_manifest(manifest)
    (OUT_DIR / "MANIFEST.json").write_text(text, encoding="utf-8")
    n = g.verify(OUT_DIR, {"files": json.loads(text)["files"]})
    total = sum(p.stat().st_size for p in OUT_DIR.rglob("*") if p.is_file())
    print(f"wrote {len(logs)} partition dirs, {n} segments; verified; {total} bytes in total")
    return 0


if __name__ == "__main__":
    sys.exit(main())
