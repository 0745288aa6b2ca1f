"""The payload partitions of ``generate_payloads.py``, one builder each: the Avro, Protobuf
and JSON Schema orders (their schemas and the serializers' inputs), plain JSON events and
damaged values between good Avro ones.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import random
import struct
import uuid
from typing import Any

import generate as g
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import (
    JSONSerializer,
)
from confluent_kafka.schema_registry.protobuf import (
    ProtobufSerializer,
)
from confluent_kafka.serialization import MessageField
from gen_payload_common import UTC, Clock, PayloadLog, Row, ctx, proto_json
from gen_payload_registry import SchemasTopic

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
