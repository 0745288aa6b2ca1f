"""The committed payload samples (``sample_segments/payloads/``) are what their manifest says.

``payloads/MANIFEST.json`` is written by ``sample_segments/generate_payloads.py`` from the objects
it handed to confluent-kafka's Avro, Protobuf and JSON Schema serializers. Here kafkalog's raw
reader reads the segments, and the keys and values it returns are decoded with confluent-kafka's
own deserializers against a ``mock://`` registry rebuilt from the manifest's schemas; the
``_schemas`` partition is checked against the same schemas. So the samples are proven before
kafkalog's own payload decoders are tested on them.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES

from kafkalog_source import read_table

pytest.importorskip("fastavro")
pytest.importorskip("confluent_kafka.schema_registry.avro")
pytest.importorskip("google.protobuf")

from confluent_kafka.schema_registry import Schema, SchemaReference  # noqa: E402
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import (  # noqa: E402
    MockSchemaRegistryClient,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer  # noqa: E402
from confluent_kafka.schema_registry.json_schema import JSONDeserializer  # noqa: E402
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, timestamp_pb2  # noqa: E402
from google.protobuf.message_factory import GetMessageClass  # noqa: E402

PAYLOADS = SAMPLES / "payloads"
MANIFEST = json.loads((PAYLOADS / "MANIFEST.json").read_text(encoding="utf-8"))
TOPICS = MANIFEST["topics"]
SCHEMAS = MANIFEST["registry"]["schemas"]
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

# the manifest's JSON conventions (to_json, proto_json) come from the generator itself
_spec = importlib.util.spec_from_file_location(
    "kafkalog_generate_payloads", SAMPLES / "generate_payloads.py"
)
assert _spec is not None and _spec.loader is not None
gp = importlib.util.module_from_spec(_spec)
sys.modules.setdefault(_spec.name, gp)
_spec.loader.exec_module(gp)


def _read(name: str) -> list[dict[str, Any]]:
    table = read_table(str(PAYLOADS / name), columns=["offset", "timestamp", "key", "value"])
    rows = table.to_pylist()
    for r in rows:
        r["timestamp"] = (r["timestamp"] - EPOCH) // timedelta(milliseconds=1)
    return rows


@pytest.fixture(scope="module")
def registry() -> MockSchemaRegistryClient:
    """A mock registry holding the manifest's schemas under the same ids."""
    client = MockSchemaRegistryClient({"url": "mock://kafkalog-payload-test"})
    for s in sorted(SCHEMAS, key=lambda s: s["id"]):
        refs = [SchemaReference(r["name"], r["subject"], r["version"]) for r in s["references"]]
        text = s.get("registeredSchema", s["schema"])
        rs = client.register_schema_full_response(s["subject"], Schema(text, s["schemaType"], refs))
        assert (rs.schema_id, rs.version) == (s["id"], s["version"]), s
    for s in SCHEMAS:  # what the registry no longer lists
        if s["state"] != "live":
            client.delete_version(s["subject"], s["version"])
    return client


@pytest.fixture(scope="module")
def proto_classes() -> dict[str, Any]:
    """Message classes from the registered FileDescriptorProtos (no generated code)."""
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    for s in sorted(SCHEMAS, key=lambda s: s["id"]):
        if s["schemaType"] == "PROTOBUF":
            pool.AddSerializedFile(gp.base64.standard_b64decode(s["registeredSchema"]))
    names = {r["messageType"] for r in TOPICS["orders-proto-0"]["rows"] if r.get("messageType")}
    return {n: GetMessageClass(pool.FindMessageTypeByName(n)) for n in names}


def test_the_log_directory_holds_the_manifests_partitions() -> None:
    table = read_table(str(PAYLOADS), columns=["topic", "partition", "offset"])
    got: dict[str, int] = {}
    for r in table.select(["topic", "partition"]).to_pylist():
        name = f"{r['topic']}-{r['partition']}"
        got[name] = got.get(name, 0) + 1
    assert got == {name: len(part["rows"]) for name, part in TOPICS.items()}
    assert sorted(MANIFEST["files"]) == sorted(
        p.relative_to(PAYLOADS).as_posix() for p in PAYLOADS.glob("*-*/*.log")
    )


@pytest.mark.parametrize("name", sorted(TOPICS))
def test_raw_rows_are_the_stored_bytes(name: str) -> None:
    """Offsets, timestamps, and key/value bytes as the generator appended them."""
    stored = [
        r
        for f in MANIFEST["files"].values()
        if f"{f['topic']}-{f['partition']}" == name
        for r in f["rows"]
    ]
    got = _read(name)
    assert [r["offset"] for r in got] == [r["offset"] for r in TOPICS[name]["rows"]]
    assert [r["timestamp"] for r in got] == [r["timestamp"] for r in TOPICS[name]["rows"]]
    assert [(r["offset"], r["key"], r["value"]) for r in got] == [
        (
            r["offset"],
            None if r["key"] is None else bytes.fromhex(r["key"]),
            None if r["value"] is None else bytes.fromhex(r["value"]),
        )
        for r in stored
    ]


def test_schemas_partition_holds_the_registrys_schemas() -> None:
    """The _schemas records as the registry writes them, and the schemas the manifest lists."""
    got = _read("_schemas-0")
    rows = TOPICS["_schemas-0"]["rows"]
    assert [(r["key"].decode(), r["value"] and r["value"].decode()) for r in got] == [
        (r["key"], r["value"]) for r in rows
    ]
    last: dict[tuple[str, int], dict[str, Any] | None] = {}
    kinds = set()
    for r in got:
        key = json.loads(r["key"])
        kinds.add(key["keytype"])
        assert list(key)[0] == "keytype" and list(key)[-1] == "magic", key
        if key["keytype"] == "SCHEMA":
            assert key["magic"] == 1
            value = None if r["value"] is None else json.loads(r["value"])
            if value is not None:
                assert list(value)[:5] == ["subject", "version", "id", "schema", "deleted"], value
            last[(key["subject"], key["version"])] = value
        elif key["keytype"] == "NOOP":
            assert r["value"] is None and key == {"keytype": "NOOP", "magic": 0}
    assert kinds == {"NOOP", "CONFIG", "SCHEMA", "DELETE_SUBJECT"}
    for s in SCHEMAS:
        value = last[(s["subject"], s["version"])]
        if s["state"] == "hard-deleted":
            assert value is None
            continue
        assert value is not None
        assert value["deleted"] == (s["state"] == "soft-deleted")
        assert value["id"] == s["id"] and value["schema"] == s["schema"]
        assert value.get("schemaType", "AVRO") == s["schemaType"]
        assert ("schemaType" in value) == (s["schemaType"] != "AVRO")
        assert value.get("references", []) == s["references"]
    live: dict[str, dict[str, int]] = gp.replay(rows)
    assert live == {k: v["versions"] for k, v in MANIFEST["registry"]["subjects"].items()}


@pytest.mark.parametrize("name", [n for n, p in TOPICS.items() if p["format"] != "schemas"])
def test_values_decode_with_confluents_deserializers(
    name: str, registry: MockSchemaRegistryClient, proto_classes: dict[str, Any]
) -> None:
    part = TOPICS[name]
    topic = name.rsplit("-", 1)[0]
    kctx = SerializationContext(topic, MessageField.KEY)
    vctx = SerializationContext(topic, MessageField.VALUE)
    avro = AvroDeserializer(registry)
    latest = AvroDeserializer(registry, conf={"use.latest.version": True})
    jsond = JSONDeserializer(None, schema_registry_client=registry)
    got = _read(name)
    for r, want in zip(got, part["rows"], strict=True):
        if part.get("keyFormat") == "avro":
            assert gp.to_json(avro(r["key"], kctx)) == want["key"]
            assert gp._id(r["key"]) == want["keySchemaId"]
        else:
            assert r["key"].decode() == want["key"]
        value = r["value"]
        if "error" in want:
            with pytest.raises(Exception):  # noqa: B017 - a damaged value fails, however it fails
                avro(value, vctx)
            continue
        if value is None:
            assert want["value"] is None
            continue
        if part["format"] != "plain-json":
            assert value[0] == 0 and gp._id(value) == want["valueSchemaId"]
            s = next(s for s in SCHEMAS if s["id"] == want["valueSchemaId"])
            assert (s["subject"], s["version"]) == (want["valueSubject"], want["valueVersion"])
        if part["format"] == "avro":
            assert gp.to_json(avro(value, vctx)) == want["value"]
            assert gp.to_json(latest(value, vctx)) == want["valueLatest"]
        elif part["format"] == "protobuf":
            cls = proto_classes[want["messageType"]]
            des = ProtobufDeserializer(
                cls, {"use.deprecated.format": False}, schema_registry_client=registry
            )
            assert gp.proto_json(des(value, vctx)) == want["value"]
            assert gp._indexes(value) == want["messageIndexes"]
        elif part["format"] == "json":
            assert jsond(value, vctx) == want["value"]
        else:
            assert json.loads(value) == want["value"]


def test_proto_text_compiles_to_the_registered_descriptor(tmp_path: Path) -> None:
    """The .proto text in _schemas is the file whose descriptor the serializer registered."""
    protoc = pytest.importorskip("grpc_tools.protoc")
    include = Path(protoc.__file__).parent / "_proto"
    names = {}
    for s in SCHEMAS:
        if s["schemaType"] == "PROTOBUF":
            want = descriptor_pb2.FileDescriptorProto()
            want.ParseFromString(gp.base64.standard_b64decode(s["registeredSchema"]))
            (tmp_path / want.name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / want.name).write_text(s["schema"], encoding="utf-8")
            names[want.name] = want
    out = tmp_path / "set.pb"
    assert shutil.which(sys.executable)
    rc = subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp_path}", f"-I{include}",
         f"--descriptor_set_out={out}", *sorted(names)],
        check=False,
    ).returncode  # fmt: skip
    assert rc == 0
    got = descriptor_pb2.FileDescriptorSet()
    got.ParseFromString(out.read_bytes())
    for f in got.file:  # protoc's python_out leaves out json_name; --descriptor_set_out not
        for m in _messages(f.message_type):
            for fld in m.field:
                fld.ClearField("json_name")
    assert {f.name: f for f in got.file} == names


def _messages(msgs: Any) -> Any:
    for m in msgs:
        yield m
        yield from _messages(m.nested_type)
