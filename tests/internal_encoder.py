"""A small encoder of Kafka's message-schema encoding, for tests: builds the bytes of every
record type and version from the schema tables (format/messages/specs.py), so that record types
no fixture holds are tested too. It is the decoder's mirror, written from the same rules."""

from __future__ import annotations

import base64
import struct
from typing import Any

from kafkalog_source.format.messages.decode import default_value
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


def with_defaults(fields: tuple[Field, ...], version: int, d: dict) -> dict:
    """``d`` as the decoder returns it when tagged fields are left out of the bytes."""
    out = {}
    for f in fields:
        if f.exists_in(version):
            out[f.json_name] = d[f.json_name] if f.json_name in d else default_value(f, version)
    return out
