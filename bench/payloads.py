"""Avro payload benchmark: decoded rows per second, ours against the loop a user would write.

One run serializes ``--rows`` values (default 1,000,000) of a realistic record schema (eleven
fields: longs, strings, a nullable field, an enum, a nested record, an array of longs, a double,
a boolean, a timestamp) with confluent-kafka's ``AvroSerializer`` and a ``mock://`` registry
(the Schema Registry wire format: a zero byte, the schema id, the Avro body), into one Arrow
binary array, and measures on that array:

* ``ours``: ``AvroDecoder.decode`` (the compiled path), the typed Arrow column;
* ``reference``: ``AvroDecoder`` with the fastavro path (``use_kernel = False``);
* ``user loop``: what one writes without kafkalog: per value, strip the 5-byte prefix and
  ``fastavro.schemaless_reader`` into a dict, then ``pa.Table.from_pylist`` (equivalently
  ``pa.array`` of the dicts) -- fed Python ``bytes`` (``to_pylist`` of the column, untimed).

The times are CPU seconds of this process (``time.process_time``: the machine is shared),
the best of ``--repeat`` runs after one untimed warm-up (the kernel is compiled then), and the
ratio ours / user loop is printed. Usage::

    .venv/bin/python bench/payloads.py --rows 1000000 --repeat 3
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import random
import time
from typing import Any

import fastavro
import pyarrow as pa
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kafkalog_source.payloads.avro import AvroDecoder

SCHEMA = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "order_id", "type": "long"},
        {"name": "customer_id", "type": "long"},
        {"name": "sku", "type": "string"},
        {"name": "description", "type": "string"},
        {"name": "coupon", "type": ["null", "string"], "default": None},
        {
            "name": "status",
            "type": {
                "type": "enum",
                "name": "Status",
                "symbols": ["NEW", "PAID", "SHIPPED", "CANCELLED"],
            },
        },
        {
            "name": "address",
            "type": {
                "type": "record",
                "name": "Address",
                "fields": [
                    {"name": "street", "type": "string"},
                    {"name": "city", "type": "string"},
                    {"name": "zip", "type": "int"},
                ],
            },
        },
        {"name": "item_ids", "type": {"type": "array", "items": "long"}},
        {"name": "amount", "type": "double"},
        {"name": "gift", "type": "boolean"},
        {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}
CITIES = ["Berlin", "Lisbon", "Osaka", "Lagos", "Lima", "Toronto", "Perth", "Oslo"]


class _Registry:
    """The decoders' Registry API over the mock client."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def by_id(self, schema_id: int) -> Any:
        s = self.client.get_schema(schema_id)
        return _Schema(schema_id, s.schema_type or "AVRO", s.schema_str)

    def version(self, subject: str, version: int | None = None) -> tuple[int, Any]:
        r = self.client.get_latest_version(subject)
        return r.version, self.by_id(r.schema_id)

    def subjects(self) -> list[str]:
        return list(self.client.get_subjects())

    def referenced(self, schema: Any) -> dict[str, Any]:
        return {}


class _Schema:
    def __init__(self, id: int, schema_type: str, text: str) -> None:
        self.id, self.schema_type, self.text, self.references = id, schema_type, text, ()


def make_values(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` realistic orders."""
    rnd = random.Random(seed)
    base = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    out = []
    for i in range(n):
        out.append(
            {
                "order_id": 10_000_000 + i,
                "customer_id": rnd.randrange(1, 5_000_000),
                "sku": f"SKU-{rnd.randrange(100000):06d}",
                "description": "Item " + "x" * rnd.randrange(5, 40),
                "coupon": None if rnd.random() < 0.7 else f"SAVE{rnd.randrange(50)}",
                "status": rnd.choice(("NEW", "PAID", "SHIPPED", "CANCELLED")),
                "address": {
                    "street": f"{rnd.randrange(1, 999)} Main Street",
                    "city": rnd.choice(CITIES),
                    "zip": rnd.randrange(10000, 99999),
                },
                "item_ids": [rnd.randrange(1, 10**9) for _ in range(rnd.randrange(0, 6))],
                "amount": round(rnd.uniform(1, 500), 2),
                "gift": rnd.random() < 0.1,
                "created": base + datetime.timedelta(milliseconds=rnd.randrange(10**10)),
            }
        )
    return out


def user_loop(blobs: list[bytes], parsed: Any) -> pa.Table:
    """What a user writes: fastavro per value into dicts, then Arrow."""
    rows = [fastavro.schemaless_reader(io.BytesIO(b[5:]), parsed, None) for b in blobs]
    return pa.Table.from_pylist(rows)


def cpu(fn: Any, repeat: int) -> tuple[float, Any]:
    """Best CPU seconds of ``repeat`` runs after a warm-up, and the last result."""
    out = fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t)
    return best, out


def main() -> None:
    """Run the benchmark and print rows per second."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reference", action="store_true", help="also time the fastavro path")
    args = ap.parse_args()

    client = SchemaRegistryClient.new_client({"url": "mock://bench"})
    ser = AvroSerializer(client, json.dumps(SCHEMA))
    ctx = SerializationContext("orders", MessageField.VALUE)
    chunk = make_values(min(args.rows, 100_000))
    blobs = [ser(v, ctx) for v in chunk]
    blobs = (blobs * (args.rows // len(blobs) + 1))[: args.rows]
    column = pa.array(blobs, pa.binary())
    registry = _Registry(client)
    dec = AvroDecoder(registry, registry.by_id(1))
    n = len(column)
    mib = column.nbytes / 2**20
    print(f"{n:,} values, {mib:.1f} MiB, {mib * 2**20 / n:.0f} bytes each")

    t_ours, out = cpu(lambda: dec.decode(column), args.repeat)
    assert not out.errors and out.values.null_count == 0
    print(f"ours        {t_ours:7.3f} s CPU  {n / t_ours:12,.0f} rows/s")

    if args.reference:
        ref = AvroDecoder(registry, registry.by_id(1))
        ref.use_kernel = False
        t_ref, rout = cpu(lambda: ref.decode(column), 1)
        assert rout.values.equals(out.values)
        print(f"reference   {t_ref:7.3f} s CPU  {n / t_ref:12,.0f} rows/s")

    parsed = fastavro.parse_schema(SCHEMA)
    t_user, table = cpu(lambda: user_loop(blobs, parsed), args.repeat)
    assert table.num_rows == n
    print(f"user loop   {t_user:7.3f} s CPU  {n / t_user:12,.0f} rows/s")
    print(f"ours / user loop: {t_user / t_ours:.1f}x")


if __name__ == "__main__":
    main()
