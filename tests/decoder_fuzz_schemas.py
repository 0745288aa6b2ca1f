"""The ``_schemas`` family of the decoder fuzz harness (tests/decoder_fuzz.py): record
sequences of a registry's life, mutated as JSON, in the schemas they hold and as bytes;
replayed leniently (and one in ten strictly), every new schema used as a reader, values decoded
with the replayed registry (one in 20) and one input in 500 read through ``read_table`` as a
log directory."""

from __future__ import annotations

import base64
import json
import random
import tempfile
from pathlib import Path
from typing import Any

from decoder_fuzz import Campaign, dumps, guarded, mutate_bytes, mutate_json


def _schemas_seed() -> list[tuple[bytes | None, bytes | None]]:
    """A registry's life: Avro versions (evolutions), a JSON Schema, a Protobuf schema stored as
    a base64 descriptor (no protoc needed), references, deletes, configs, contexts."""
    from google.protobuf import descriptor_pb2

    def key(subject: str, version: int) -> bytes:
        return dumps({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1})

    def value(subject: str, version: int, sid: int, text: str, kind: str = "AVRO", refs=None):
        v: dict[str, Any] = {"subject": subject, "version": version, "id": sid, "schema": text}
        if kind != "AVRO":
            v["schemaType"] = kind
        if refs:
            v["references"] = refs
        v["deleted"] = False
        return dumps(v)

    avro1 = {"type": "record", "name": "T", "fields": [{"name": "a", "type": "int"}]}
    avro2 = {
        "type": "record",
        "name": "T",
        "fields": [
            {"name": "a", "type": "long"},
            {"name": "b", "type": ["null", "string"], "default": None},
            {"name": "f", "type": {"type": "fixed", "name": "F", "size": 2}, "default": "ab"},
            {
                "name": "e",
                "type": {"type": "enum", "name": "E", "symbols": ["X", "Y"]},
                "default": "X",
            },
            {"name": "r", "type": "common.Money", "default": {"cents": 0}},
        ],
    }
    money = {
        "type": "record",
        "name": "Money",
        "namespace": "common",
        "fields": [{"name": "cents", "type": "long"}],
    }
    jschema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}
    fdp = descriptor_pb2.FileDescriptorProto(name="t.proto", package="t", syntax="proto3")
    msg = fdp.message_type.add(name="T")
    msg.field.add(name="a", number=1, type=3, label=1)
    msg.field.add(name="b", number=2, type=9, label=1)
    proto = base64.b64encode(fdp.SerializeToString()).decode()
    ref = [{"name": "common.Money", "subject": "money", "version": 1}]
    return [
        (dumps({"magic": 0, "keytype": "NOOP"}), None),
        (
            dumps({"keytype": "CONFIG", "subject": None, "magic": 0}),
            dumps({"compatibilityLevel": "BACKWARD"}),
        ),
        (key("money", 1), value("money", 1, 1, json.dumps(money))),
        (key("t-value", 1), value("t-value", 1, 2, json.dumps(avro1))),
        (key("t-value", 2), value("t-value", 2, 3, json.dumps(avro2), refs=ref)),
        (key("j", 1), value("j", 1, 4, json.dumps(jschema), "JSON")),
        (key("p", 1), value("p", 1, 5, proto, "PROTOBUF")),
        (
            dumps({"keytype": "DELETE_SUBJECT", "subject": "j", "magic": 0}),
            dumps({"subject": "j", "version": 1}),
        ),
        (dumps({"keytype": "CLEAR_SUBJECT", "subject": "j", "magic": 0}), dumps({"subject": "j"})),
        (key(":.ctx:t-value", 1), value(":.ctx:t-value", 1, 2, json.dumps(avro1))),
        (dumps({"keytype": "MODE", "subject": None, "magic": 0}), dumps({"mode": "READWRITE"})),
    ]


_PAYLOADS = [b"\x02", b"\x04\x00\x04ab\x00\x00", b"", b'{"a": 1}', b"\x00\x08\x01", b"\x80" * 12]


def _mutate_record(rnd: random.Random, key: bytes | None, value: bytes | None) -> tuple:
    """A ``_schemas`` record mutated: its key or value as JSON, the schema text it holds (as
    a JSON document, or as descriptor bytes), or as bytes."""
    r = rnd.random()
    try:
        if r < 0.35 and value is not None:
            v = json.loads(value)
            if isinstance(v, dict) and isinstance(v.get("schema"), str):
                text = v["schema"]
                if v.get("schemaType") == "PROTOBUF":
                    raw = base64.b64decode(text)
                    v["schema"] = base64.b64encode(mutate_bytes(rnd, raw, [])).decode()
                else:
                    try:
                        v["schema"] = json.dumps(mutate_json(rnd, json.loads(text)))
                    except ValueError:
                        v["schema"] = text + "x"
                return key, dumps(v)
        if r < 0.6 and value is not None:
            return key, dumps(mutate_json(rnd, json.loads(value)))
        if r < 0.8 and key is not None:
            return dumps(mutate_json(rnd, json.loads(key))), value
    except ValueError:
        pass
    if value is not None and rnd.random() < 0.5:
        return key, mutate_bytes(rnd, value, [])
    return (None if key is None else mutate_bytes(rnd, key, [])), value


def fuzz_schemas(camp: Campaign, rnd: random.Random, inputs: int) -> None:
    """The ``schemas`` family (see the module docstring)."""
    from kafkalog_source.format.registry import RegistryRecordError
    from kafkalog_source.format.replay import replay

    seed = _schemas_seed()
    extra = [
        (
            dumps({"keytype": "DELETE_SUBJECT", "subject": "t-value", "magic": 0}),
            dumps({"subject": "t-value", "version": 2147483647}),
        ),
        (
            dumps({"keytype": "CLEAR_SUBJECT", "subject": None, "magic": 0}),
            dumps({"subject": None}),
        ),
        (dumps({"keytype": "SCHEMA", "subject": "t-value", "version": 2, "magic": 1}), None),
    ]
    seen: set[tuple] = set()  # schemas already used as readers (each new one is tried)
    done = 0
    while done < inputs:
        if len(seen) > 100_000:
            seen.clear()
        records = list(seed)
        for _ in range(rnd.randint(1, 3)):
            i = rnd.randrange(len(records))
            if rnd.random() < 0.15:
                records.insert(i, rnd.choice(extra))
            else:
                records[i] = _mutate_record(rnd, *records[i])
        triples = [(k, v, i) for i, (k, v) in enumerate(records)]

        def strict(triples: list = triples) -> None:
            try:
                replay(triples)
            except RegistryRecordError:
                pass

        if rnd.random() < 0.1:  # strictly: only RegistryRecordError may stop it
            guarded(camp, "schemas", records, strict)
        reg = guarded(
            camp, "schemas", records, lambda triples=triples: replay(triples, lenient=True)
        )
        if reg is not None:
            _use_schemas(camp, rnd, reg, records, seen)
        if rnd.random() < 1 / 500:
            _schemas_through_files(camp, rnd, records)
        done += 1
        camp.count("schemas", 1)


def _use_schemas(
    camp: Campaign, rnd: random.Random, reg: Any, records: list, seen: set[tuple]
) -> None:
    """Every schema of the replayed registry not tried before as a reader; and, for one
    registry in 20, values of every id decoded by those readers and by each id's own
    schema (as JSON)."""
    from decoder_fuzz_payloads import _payload_batch, _wire

    from kafkalog_source.payloads.avro import AvroDecoder
    from kafkalog_source.payloads.jsonschema import JsonDecoder
    from kafkalog_source.payloads.mixed import MixedDecoder
    from kafkalog_source.payloads.protobuf import ProtobufDecoder

    ids = []
    for i in reg.ids():
        s = reg.by_id(i)
        if not -(1 << 31) <= i < (1 << 31):
            continue  # a wire id has 4 bytes
        if s.schema_type.upper() == "PROTOBUF" and not _is_descriptor(s.text):
            continue  # .proto text needs protoc: too slow for a campaign
        ids.append(i)
    ids = ids[:8]
    with_values = rnd.random() < 0.05
    values = [_wire(i, p) for i in ids + [99] for p in _PAYLOADS]
    decoders: list[Any] = [MixedDecoder(reg)]
    for sid in ids:
        schema = reg.by_id(sid)
        kind = schema.schema_type.upper()
        try:
            refs = tuple(sorted((n, r.text) for n, r in reg.referenced(schema).items()))
        except KeyError:
            refs = ("missing",)
        key = (kind, schema.text, refs)
        if key in seen and not with_values:
            continue
        seen.add(key)
        make = {
            "AVRO": lambda s=schema: AvroDecoder(reg, s),
            "JSON": lambda s=schema: JsonDecoder(reg, s),
            "PROTOBUF": lambda s=schema: ProtobufDecoder(reg, s),
        }.get(kind)
        if make is None:
            continue
        dec = guarded(camp, "schemas", records, make)
        if dec is not None:
            decoders.append(dec)
    if not with_values:
        return
    if any(reg.by_id(i).schema_type.upper() == "AVRO" for i in ids):
        decoders.append(AvroDecoder(reg, None, as_json=True))
    for dec in decoders:
        if isinstance(dec, AvroDecoder) and not dec.as_json:
            dec.use_kernel = rnd.random() < 0.5
    _payload_batch(camp, "schemas", rnd, decoders, values)


def _is_descriptor(text: str) -> bool:
    from kafkalog_source.payloads.protobuf import _as_descriptor_proto

    return _as_descriptor_proto(text) is not None


def _schemas_through_files(camp: Campaign, rnd: random.Random, records: list) -> None:
    """The records as a ``_schemas-0`` beside a topic, read with ``read_table``."""
    from conftest import kp_v2_batch
    from decoder_fuzz_payloads import _wire

    import kafkalog_source as kl

    with tempfile.TemporaryDirectory(prefix="kafkalog-fuzz-") as tmp:
        root = Path(tmp)
        (root / "_schemas-0").mkdir()
        (root / "_schemas-0" / "00000000000000000000.log").write_bytes(
            kp_v2_batch([(1, k, v, []) for k, v in records])
        )
        (root / "t-0").mkdir()
        vals = [_wire(rnd.randint(1, 6), rnd.choice(_PAYLOADS)) for _ in range(5)]
        (root / "t-0" / "00000000000000000000.log").write_bytes(
            kp_v2_batch([(1, b"k", v, []) for v in vals])
        )
        for fmt, as_json in (("avro", "struct"), ("registry", "json"), ("json", "struct")):
            mode = rnd.choice(["FAILFAST", "DROPMALFORMED", "PERMISSIVE"])
            guarded(
                camp,
                "schemas",
                records,
                lambda fmt=fmt, as_json=as_json, mode=mode: kl.read_table(
                    root / "t-0", valueFormat=fmt, payloadAs=as_json, mode=mode
                ),
            )
