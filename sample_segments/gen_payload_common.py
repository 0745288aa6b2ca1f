"""What the parts of ``generate_payloads.py`` share: the paths, seed and start time, the
deterministic clock, the manifest's JSON conventions for decoded values (``to_json``,
``proto_json``), the ``PayloadLog`` and ``Row`` records are appended as, and the Protobuf
classes compiled from ``payloads_src/`` by grpcio-tools' protoc.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import importlib
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import generate as g
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import json_format

HERE = Path(__file__).resolve().parent
OUT_DIR = HERE / "payloads"
SRC_DIR = HERE / "payloads_src"
SEED = 20240523
T0 = g.BASE_TS + 30 * 86_400_000  # 2023-12-14T22:13:20Z: the registry starts
UTC = dt.timezone.utc


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
