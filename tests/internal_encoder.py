"""A small encoder of Kafka's message-schema encoding, for tests: builds the bytes of every
record type and version from the schema tables (format/messages/specs.py, Kafka's JSON specs
transcribed), with Kafka's own layout (its generated ``Message.write``: fields in spec order,
then, in flexible versions, the tagged fields present, by tag), so that record types no fixture
holds are tested too. It also says what Kafka's generated JSON converter
(``XJsonConverter.write``, MessageGenerator's JsonConverterGenerator at apache/kafka e6d242113625)
prints for a message: fields in spec order, a tagged field only when its value differs from
its default (``generateNonDefaultValueCheck``), uuids as Kafka prints a Uuid, bytes as base64.
Written from the specs and Kafka's rules, not from the decoder (nothing of it is imported)."""

from __future__ import annotations

import base64
import struct
from typing import Any

from kafkalog_source.format.messages.schema import Field, Message

_FIXED = {
    "bool": ">?",
    "int8": ">b",
    "int16": ">h",
    "uint16": ">H",
    "int32": ">i",
    "uint32": ">I",
    "int64": ">q",
    "float64": ">d",
}


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _length(n: int, flexible: bool, wide: bool) -> bytes:
    if flexible:
        return uvarint(n + 1)
    return struct.pack(">i" if wide else ">h", n)


def _value(f: Field, version: int, flexible: bool, v: Any) -> bytes:
    array = f.type.startswith("[]")
    base = f.type[2:] if array else f.type
    nullable = f.nullable_in(version)

    def one(x: Any) -> bytes:
        if base == "struct":
            return encode_struct(f.fields or (), version, flexible, x)
        if base in _FIXED:
            return struct.pack(_FIXED[base], x)
        if base == "uuid":
            return base64.urlsafe_b64decode(x + "==")
        if base == "string":
            if x is None:
                return _length(-1, flexible, False)
            raw = x.encode()
            return _length(len(raw), flexible, False) + raw
        if x is None:
            return _length(-1, flexible, True)
        return _length(len(x), flexible, True) + bytes(x)

    if array:
        if v is None:
            return _length(-1, flexible, True)
        return _length(len(v), flexible, True) + b"".join(one(x) for x in v)
    if base == "struct" and nullable:
        return b"\xff" if v is None else b"\x01" + one(v)
    return one(v)


def encode_struct(fields: tuple[Field, ...], version: int, flexible: bool, d: dict) -> bytes:
    out = b""
    tagged = []
    for f in fields:
        if not f.exists_in(version):
            continue
        if f.tagged_in(version):
            tagged.append(f)
            continue
        out += _value(f, version, flexible, d[f.json_name])
    if flexible:
        present = [f for f in sorted(tagged, key=lambda f: f.tag) if f.json_name in d]
        out += uvarint(len(present))
        for f in present:
            data = _value(f, version, True, d[f.json_name])
            out += uvarint(f.tag) + uvarint(len(data)) + data
    return out


def encode(message: Message, version: int, d: dict) -> bytes:
    """``d`` (Kafka's JSON field names) as ``message`` at ``version``."""
    return encode_struct(message.fields, version, message.flexible(version), d)


def sample(fields: tuple[Field, ...], version: int, seed: int = 1) -> dict:
    """A value for every field that exists at ``version``: non-default where possible, so that
    a decoder that skips or misplaces a field is caught."""
    out: dict[str, Any] = {}
    for i, f in enumerate(fields):
        if not f.exists_in(version):
            continue
        n = seed + i
        array = f.type.startswith("[]")
        base = f.type[2:] if array else f.type
        if base == "struct":
            one: Any = sample(f.fields or (), version, n + 1)
        elif base == "bool":
            one = True
        elif base in ("int8", "int16", "int32", "int64"):
            one = n + 3
        elif base in ("uint16", "uint32"):
            one = 60000 + n if base == "uint16" else 4_000_000_000 + n
        elif base == "float64":
            one = 1.5 + n
        elif base == "string":
            one = f"{f.json_name}-{n}"
        elif base == "uuid":
            one = base64.urlsafe_b64encode(bytes(range(n, n + 16))).decode().rstrip("=")
        else:
            one = bytes([n % 256]) * 3
        out[f.json_name] = [one, one] if array else one
    return out


def spec_default(f: Field, version: int) -> Any:
    """A field's default as Kafka's generated classes set it (FieldSpec.fieldDefault): the
    spec's ``default``, else 0, false, "", an empty array or byte string, the zero uuid, a
    struct of defaults; ``null`` where the spec says so."""
    d = f.default
    if d == "null":
        return None
    if f.type.startswith("[]"):
        return []
    if f.type == "struct":
        return {
            g.json_name: spec_default(g, version) for g in f.fields or () if g.exists_in(version)
        }
    if f.type == "bool":
        return d in (True, "true")
    if f.type in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return (
            0
            if d is None
            else int(str(d), 0)
            if str(d).lower().startswith(("0x", "-0x"))
            else int(d)
        )
    if f.type == "float64":
        return float(d or 0)
    if f.type == "string":
        return "" if d is None else str(d)
    if f.type == "uuid":
        return "AAAAAAAAAAAAAAAAAAAAAA"
    return b""


def kafka_json(fields: tuple[Field, ...], version: int, d: dict) -> dict:
    """What Kafka's JSON converter writes for the struct ``d`` (the values a reader of the
    bytes holds: a tagged field absent from ``d`` is at its default): fields in spec order, a
    tagged field only when not at its default, nested structs alike."""
    out: dict[str, Any] = {}
    for f in fields:
        if not f.exists_in(version):
            continue
        v = d.get(f.json_name, spec_default(f, version))
        if f.tagged_in(version) and v == spec_default(f, version):
            continue
        if f.fields and isinstance(v, dict):
            v = kafka_json(f.fields, version, v)
        elif f.fields and isinstance(v, list):
            v = [kafka_json(f.fields, version, x) for x in v]
        out[f.json_name] = v
    return out


def jackson(value: Any) -> str:
    """A JSON tree as Jackson's ``JsonNode.toString`` prints it (compact, non-ASCII as it is),
    bytes as base64 (Kafka's converters write them as BinaryNode)."""
    import json

    def b64(x: Any) -> str:
        return base64.b64encode(bytes(x)).decode("ascii")

    return json.dumps(value, default=b64, separators=(",", ":"), ensure_ascii=False)
