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
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import importlib
import io
import json
import random
import shutil
import struct
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import fastavro  # noqa: E402
import generate as g  # noqa: E402
from confluent_kafka.schema_registry import RegisteredSchema, Schema  # noqa: E402
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import (  # noqa: E402
    MockSchemaRegistryClient,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.common.serde import SchemaId  # noqa: E402
from confluent_kafka.schema_registry.json_schema import (  # noqa: E402
    JSONDeserializer,
    JSONSerializer,
)
from confluent_kafka.schema_registry.protobuf import (  # noqa: E402
    ProtobufDeserializer,
    ProtobufSerializer,
)
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from google.protobuf import json_format  # noqa: E402

OUT_DIR = HERE / "payloads"
SRC_DIR = HERE / "payloads_src"
SEED = 20240523
T0 = g.BASE_TS + 30 * 86_400_000  # 2023-12-14T22:13:20Z: the registry starts
UTC = dt.timezone.utc

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


# --------------------------------------------------------------------------- helpers


class Clock:
    """Deterministic milliseconds since the epoch."""

    def __init__(self, start: int) -> None:
        self.now = start

    def tick(self, ms: int) -> int:
        self.now += ms
        return self.now


def to_json(v: Any) -> Any:
    """A decoded Avro/JSON value as manifest JSON (see NOTES["value"])."""
    if isinstance(v, dict):
        return {k: to_json(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [to_json(x) for x in v]
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, dt.datetime):
        assert v.utcoffset() == dt.timedelta(0)
        return v.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}Z"
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, uuid.UUID):
        return str(v)
    return v


def proto_json(msg: Any) -> dict[str, Any]:
    """A Protobuf message in the proto3 JSON mapping (see NOTES["value"])."""
    return json_format.MessageToDict(
        msg, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


class PayloadLog(g.PartitionLog):
    """A ``generate.PartitionLog`` that also keeps the manifest's expectations per row."""

    def __init__(self, topic: str, partition: int, description: str) -> None:
        super().__init__(topic, partition, description)
        self.expect: list[dict[str, Any]] = []


@dataclass
class Row:
    """One record to append, with what the manifest says about it."""

    ts: int
    key: bytes | None
    value: bytes | None
    expect: dict[str, Any]


def ctx(topic: str, which: MessageField) -> SerializationContext:
    return SerializationContext(topic, which)


@contextmanager
def compiled_protos() -> Iterator[tuple[Any, Any]]:
    """Compile payloads_src/ with grpcio-tools' protoc into a temporary dir; yield the modules."""
    from grpc_tools import protoc

    proto_include = Path(importlib.import_module("grpc_tools").__file__).parent / "_proto"
    with tempfile.TemporaryDirectory(prefix="kafkalog-pb2-") as tmp:
        files = sorted(p.relative_to(SRC_DIR).as_posix() for p in SRC_DIR.rglob("*.proto"))
        rc = protoc.main(
            ["protoc", f"-I{SRC_DIR}", f"-I{proto_include}", f"--python_out={tmp}", *files]
        )
        assert rc == 0, f"protoc failed ({rc})"
        sys.path.insert(0, tmp)
        try:
            money = importlib.import_module("shop.common.money_pb2")
            orders = importlib.import_module("shop.orders.orders_pb2")
            yield money, orders
        finally:
            sys.path.remove(tmp)


# --------------------------------------------------------------------------- Avro

ADDRESS = {
    "type": "record",
    "name": "Address",
    "fields": [
        {"name": "street", "type": "string"},
        {"name": "city", "type": "string"},
        {"name": "zip", "type": ["null", "string"], "default": None},
    ],
}
ORDER_KEY = {
    "type": "record",
    "name": "OrderKey",
    "namespace": "shop.orders",
    "fields": [{"name": "order_id", "type": "long"}, {"name": "region", "type": "string"}],
}


def order_schema(version: int) -> dict[str, Any]:
    """The Avro value schema, version 1, 2 (adds ``channel`` with a default) or 3 (removes
    ``legacy_code``); each is backward compatible with the one before."""
    fields: list[dict[str, Any]] = [
        {"name": "order_id", "type": "long"},
        {"name": "quantity", "type": "int"},
        {"name": "customer", "type": "string"},
        {"name": "payload", "type": "bytes"},
        {"name": "total", "type": "double"},
        {"name": "weight", "type": "float"},
        {"name": "gift", "type": "boolean"},
        {
            "name": "status",
            "type": {
                "type": "enum",
                "name": "Status",
                "symbols": ["NEW", "PAID", "SHIPPED", "CANCELLED"],
            },
        },
        {"name": "checksum", "type": {"type": "fixed", "name": "Md5", "size": 16}},
        {"name": "shipping", "type": ADDRESS},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "counters", "type": {"type": "map", "values": "long"}},
        {"name": "coupon", "type": ["null", "string"], "default": None},
        {"name": "ref", "type": ["null", "long", "string"], "default": None},
        {
            "name": "price",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
        },
        {"name": "order_date", "type": {"type": "int", "logicalType": "date"}},
        {"name": "created_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "trace_id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "legacy_code", "type": "string"},
    ]
    if version >= 2:
        fields.append({"name": "channel", "type": "string", "default": "web"})
    if version >= 3:
        fields = [f for f in fields if f["name"] != "legacy_code"]
    return {"type": "record", "name": "Order", "namespace": "shop.orders", "fields": fields}


def compact(schema: Any) -> str:
    """Schema text as a registry stores it: compact JSON."""
    return json.dumps(schema, separators=(",", ":"))


CITIES = ["Lyon", "Porto", "Graz", "Ghent", "Zürich", "Kraków"]


def avro_order(rng: random.Random, n: int, version: int, ts: int) -> dict[str, Any]:
    """One order (the AvroSerializer's input) for schema ``version``; edge values on some."""
    created = dt.datetime.fromtimestamp(ts // 1000, UTC) + dt.timedelta(milliseconds=ts % 1000)
    v: dict[str, Any] = {
        "order_id": 70_000 + n,
        "quantity": rng.randrange(1, 20),
        "customer": f"cust-{rng.randrange(100):03d}",
        "payload": bytes(rng.randrange(256) for _ in range(rng.randrange(0, 6))),
        "total": round(rng.uniform(1, 900), 2),
        "weight": rng.randrange(1, 4000) / 8,  # exact in float32
        "gift": rng.random() < 0.3,
        "status": rng.choice(["NEW", "PAID", "SHIPPED", "CANCELLED"]),
        "checksum": bytes(rng.randrange(256) for _ in range(16)),
        "shipping": {
            "street": f"{rng.randrange(1, 200)} {rng.choice(g.WORDS).title()} Street",
            "city": rng.choice(CITIES),
            "zip": None if rng.random() < 0.3 else f"{rng.randrange(10000, 99999)}",
        },
        "tags": [rng.choice(g.WORDS) for _ in range(rng.randrange(0, 4))],
        "counters": {
            rng.choice(g.WORDS): rng.randrange(-5, 10**12) for _ in range(rng.randrange(3))
        },
        "coupon": rng.choice([None, None, "SAVE10", "WELCOME"]),
        "ref": rng.choice([None, rng.randrange(1, 10**9), f"ext-{rng.randrange(1000)}"]),
        "price": decimal.Decimal(rng.randrange(100, 9_999_999)).scaleb(-2),
        "order_date": created.date(),
        "created_at": created,
        "trace_id": uuid.UUID(int=rng.getrandbits(128), version=4),
    }
    if version <= 2:
        v["legacy_code"] = f"L{rng.randrange(1000):03d}"
    if version >= 2:
        v["channel"] = rng.choice(["web", "app", "pos"])
    if n % 7 == 3:  # edge values
        v.update(
            order_id=2**62 + n,
            quantity=-(2**31),
            customer="",
            total=-0.5,
            price=decimal.Decimal("-12.30"),
            order_date=dt.date(1969, 12, 31),
            created_at=dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
        )
    return v


def build_avro(
    reg: SchemasTopic, rng: random.Random, clock: Clock
) -> tuple[PayloadLog, dict[int, AvroSerializer]]:
    """orders-avro-0: three segments, one per schema version; Avro keys; some tombstones."""
    topic = "orders-avro"
    log = PayloadLog(
        topic,
        0,
        "Avro values (AvroSerializer, subject orders-avro-value) in three segments, one per "
        "schema version (v2 adds channel with a default, v3 removes legacy_code); Avro keys "
        "(orders-avro-key); tombstones",
    )
    key_ser = AvroSerializer(reg.client, compact(ORDER_KEY))
    sers = {v: AvroSerializer(reg.client, compact(order_schema(v))) for v in (1, 2, 3)}
    n = 0
    plan = {1: ["none", "zstd"], 2: ["lz4", "none"], 3: ["zstd", "none"]}
    for version, codecs in plan.items():
        if version > 1:
            log.roll()
        for codec in codecs:
            rows = []
            for j in range(6):
                ts = clock.tick(rng.randrange(200, 2000))
                key_obj = {"order_id": 70_000 + n, "region": rng.choice(["eu", "us", "apac"])}
                tombstone = j == 4 and codec == "none"
                value_obj = None if tombstone else avro_order(rng, n, version, ts)
                key = key_ser(key_obj, ctx(topic, MessageField.KEY))
                value = sers[version](value_obj, ctx(topic, MessageField.VALUE))
                reg.sync()
                rows.append(Row(ts, key, value, {"key": key_obj, "value": value_obj}))
                n += 1
            append(log, rows, codec)
    return log, sers


def append(log: PayloadLog, rows: list[Row], codec: str) -> None:
    """One v2 batch of ``rows`` through generate.py's PartitionLog; note offsets."""
    first = log.next_offset
    log.append_v2([g.Rec(r.ts, r.key, r.value) for r in rows], codec)
    for i, r in enumerate(rows):
        log.expect.append({"offset": first + i, "timestamp": r.ts, **r.expect})


# --------------------------------------------------------------------------- Protobuf


def build_proto(
    reg: SchemasTopic, rng: random.Random, clock: Clock, money: Any, orders: Any
) -> PayloadLog:
    """orders-proto-0: Order ([0]), OrderCancelled ([1]) and Order.LineItem ([0, 0]) values of
    one schema with a reference (shop/common/money.proto) and google/protobuf/timestamp.proto."""
    topic = "orders-proto"
    log = PayloadLog(
        topic,
        0,
        "Protobuf values (ProtobufSerializer, subject orders-proto-value referencing "
        "shop/common/money.proto): Order (message index [0]), OrderCancelled ([1]) and "
        "Order.LineItem ([0, 0]); nested, repeated, map, oneof, enum, Timestamp, uint64; "
        "string keys; a tombstone",
    )
    sers = {
        cls: ProtobufSerializer(cls, reg.client, {"use.deprecated.format": False})
        for cls in (orders.Order, orders.OrderCancelled, orders.Order.LineItem)
    }
    Money = money.Money

    def price(r: random.Random) -> Any:
        return Money(
            currency_code=r.choice(["EUR", "USD"]),
            units=r.randrange(0, 500),
            nanos=r.randrange(0, 100) * 10_000_000,
        )

    n = 0
    for codec in ("none", "lz4", "zstd"):
        rows = []
        for j in range(7):
            ts = clock.tick(rng.randrange(200, 2000))
            oid = 80_000 + n
            stamp = {"seconds": ts // 1000, "nanos": (ts % 1000) * 1_000_000}
            kind = "Order" if j % 3 != 2 else ("OrderCancelled" if j != 5 else "LineItem")
            if kind == "Order":
                msg = orders.Order(
                    order_id=oid,
                    customer=f"cust-{rng.randrange(100):03d}",
                    status=rng.choice([0, 1, 2, 3]),
                    items=[
                        orders.Order.LineItem(
                            sku=f"SKU-{rng.randrange(10000):04d}",
                            quantity=rng.randrange(1, 9),
                            unit_price=price(rng),
                        )
                        for _ in range(rng.randrange(0, 3))
                    ],
                    total=price(rng),
                    signature=bytes(rng.randrange(256) for _ in range(rng.randrange(0, 8))),
                    score=rng.randrange(-1000, 1000) / 16,
                    weight=rng.randrange(0, 4000) / 8,
                    gift=rng.random() < 0.3,
                    flags=rng.choice([0, 1, 2**32 - 1]),
                    balance_delta=rng.choice([-(2**63), -7, 0, 12345]),
                    big_counter=rng.choice([0, 2**64 - 1, 2**63 + 5, 42]),
                    codes=[rng.randrange(-100, 100) for _ in range(rng.randrange(0, 4))],
                )
                msg.created_at.seconds, msg.created_at.nanos = stamp["seconds"], stamp["nanos"]
                if rng.random() < 0.7:  # at most one entry: see the module docstring
                    msg.labels[rng.choice(["channel", "source"])] = rng.choice(g.WORDS)
                pay = rng.choice(["card", "iban", None])
                if pay == "card":
                    msg.card_last4 = f"{rng.randrange(10000):04d}"
                elif pay == "iban":
                    msg.iban = f"DE{rng.randrange(10**18):018d}"
                if rng.random() < 0.5:
                    msg.note = rng.choice(["", "leave at door", "fragile ✓"])
                cls = orders.Order
            elif kind == "OrderCancelled":
                msg = orders.OrderCancelled(
                    order_id=oid, reason=rng.choice(["customer", "fraud", ""]), refund=price(rng)
                )
                msg.cancelled_at.seconds, msg.cancelled_at.nanos = stamp["seconds"], stamp["nanos"]
                cls = orders.OrderCancelled
            else:
                msg = orders.Order.LineItem(sku="SKU-LOOSE", quantity=1, unit_price=price(rng))
                cls = orders.Order.LineItem
            tombstone = codec == "lz4" and j == 3
            key = f"order-{oid}".encode()
            value = None if tombstone else sers[cls](msg, ctx(topic, MessageField.VALUE))
            reg.sync()
            expect: dict[str, Any] = {
                "key": key.decode(),
                "value": None if tombstone else proto_json(msg),
                "messageType": None if tombstone else cls.DESCRIPTOR.full_name,
            }
            rows.append(Row(ts, key, value, expect))
            n += 1
        append(log, rows, codec)
    return log


# --------------------------------------------------------------------------- JSON

ORDER_JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "order_id": {"type": "integer"},
        "customer": {"type": "string"},
        "amount": {"type": "number"},
        "paid": {"type": "boolean"},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                "required": ["sku", "qty"],
            },
        },
        "shipping": {
            "type": ["object", "null"],
            "properties": {"city": {"type": "string"}, "zip": {"type": ["string", "null"]}},
        },
        "note": {"type": ["string", "null"]},
    },
    "required": ["order_id", "customer", "amount", "paid", "items"],
}


def json_order(rng: random.Random, n: int) -> dict[str, Any]:
    v: dict[str, Any] = {
        "order_id": 90_000 + n,
        "customer": f"cust-{rng.randrange(100):03d}",
        "amount": round(rng.uniform(1, 500), 2),
        "paid": rng.random() < 0.6,
        "items": [
            {"sku": f"SKU-{rng.randrange(10000):04d}", "qty": rng.randrange(1, 5)}
            for _ in range(rng.randrange(0, 3))
        ],
    }
    if rng.random() < 0.7:
        v["shipping"] = (
            None
            if rng.random() < 0.2
            else {"city": rng.choice(CITIES), "zip": rng.choice([None, "4020"])}
        )
    if rng.random() < 0.4:
        v["note"] = rng.choice([None, "gift wrap", "ünïcødé ✓"])
    if n == 3:
        v["amount"] = 7  # an integer in a number field
    return v


def build_json(reg: SchemasTopic, rng: random.Random, clock: Clock) -> PayloadLog:
    topic = "orders-json"
    log = PayloadLog(
        topic,
        0,
        "JSON Schema values (JSONSerializer, subject orders-json-value): nested object, array, "
        "nullable types, optional fields; string keys; a tombstone",
    )
    ser = JSONSerializer(compact(ORDER_JSON_SCHEMA), reg.client)
    n = 0
    for codec in ("none", "zstd"):
        rows = []
        for j in range(8):
            ts = clock.tick(rng.randrange(200, 2000))
            tombstone = codec == "zstd" and j == 6
            obj = None if tombstone else json_order(rng, n)
            key = f"order-{90_000 + n}".encode()
            value = ser(obj, ctx(topic, MessageField.VALUE))
            reg.sync()
            rows.append(Row(ts, key, value, {"key": key.decode(), "value": obj}))
            n += 1
        append(log, rows, codec)
    return log


def build_plain_json(rng: random.Random, clock: Clock) -> PayloadLog:
    """events-plainjson-0: JSON text values without any registry (fields vary by event)."""
    log = PayloadLog(
        "events-plainjson",
        0,
        "plain JSON text values (no schema registry, no prefix): objects whose fields vary by "
        "event type, nested objects and arrays, unicode, null, a tombstone",
    )
    n = 0
    for codec in ("none", "lz4"):
        rows = []
        for j in range(8):
            ts = clock.tick(rng.randrange(100, 900))
            kind = rng.choice(["click", "view", "purchase"])
            obj: dict[str, Any] | None = {
                "event": kind,
                "user": f"u{rng.randrange(1000)}",
                "ts": ts,
                "props": {
                    "page": f"/{rng.choice(g.WORDS)}",
                    "ref": rng.choice([None, "ads", "mail"]),
                },
            }
            if kind == "purchase":
                obj["amount"] = round(rng.uniform(1, 300), 2)
                obj["items"] = [rng.choice(g.WORDS) for _ in range(rng.randrange(1, 4))]
            if j == 2:
                obj["label"] = "Grüße ✓"
            if codec == "lz4" and j == 5:
                obj = None
            key = f"user-{rng.randrange(50)}".encode()
            value = (
                None
                if obj is None
                else json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
            )
            rows.append(Row(ts, key, value, {"key": key.decode(), "value": obj}))
            n += 1
        append(log, rows, codec)
    return log


# --------------------------------------------------------------------------- damaged values


def build_bad(
    reg: SchemasTopic, rng: random.Random, clock: Clock, proto_value: bytes
) -> PayloadLog:
    """orders-avro-bad-0: good Avro values around damaged ones (one kind each)."""
    topic = "orders-avro-bad"
    log = PayloadLog(
        topic,
        0,
        "damaged values between good Avro ones (subject orders-avro-bad-value = the v3 Order "
        "schema): no wire-format prefix (JSON text, empty value), an unknown magic byte, a "
        "schema id absent from the registry, a truncated Avro body, a Protobuf schema's id",
    )
    ser = AvroSerializer(reg.client, compact(order_schema(3)))

    def good(n: int) -> tuple[bytes, dict[str, Any]]:
        obj = avro_order(rng, 500 + n, 3, clock.now)
        data = ser(obj, ctx(topic, MessageField.VALUE))
        reg.sync()
        assert data is not None
        return data, obj

    first, first_obj = good(0)
    body = first[5:]
    cases: list[tuple[bytes, dict[str, Any]]] = [
        (first, {"value": first_obj}),
        (json.dumps({"order_id": 1}).encode(), {"error": "no-prefix"}),
        (b"", {"error": "no-prefix"}),
        (b"\x02" + first[1:], {"error": "unknown-magic"}),
        (b"\x00" + struct.pack(">I", 9999) + body, {"error": "unknown-id", "schemaId": 9999}),
        (first[: len(first) - 7], {"error": "truncated", "schemaId": _id(first)}),
        (proto_value, {"error": "wrong-type", "schemaId": _id(proto_value)}),
    ]
    last, last_obj = good(1)
    cases.append((last, {"value": last_obj}))
    rows = []
    for i, (value, expect) in enumerate(cases):
        ts = clock.tick(rng.randrange(200, 2000))
        key = f"bad-{i}".encode()
        rows.append(Row(ts, key, value, {"key": key.decode(), **expect}))
    append(log, rows, "none")
    return log


def _id(data: bytes) -> int:
    return struct.unpack(">I", data[1:5])[0]


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
