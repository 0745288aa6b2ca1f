"""One decoder for Kafka's message-schema encoding, driven by the specs of :mod:`.schema`.

A message at a version becomes a ``dict`` keyed by Kafka's JSON field names (``topicId``,
``group``, ...), as Kafka's JSON converters print them: int and float types as numbers, strings
as ``str`` (or None), ``uuid`` as Kafka prints a Uuid (URL-safe base64 without padding),
``bytes``/``records`` as ``bytes`` (:func:`to_json` prints them as base64, as Kafka does),
structs as dicts, arrays as lists. Fields that do not exist at the version are left out; tagged
fields absent from the bytes take their default.

The encoding: fixed-width big-endian integers and floats; before a message's first flexible
version, strings with an int16 length, bytes and arrays with an int32 length (-1: null); from
it on, compact strings, bytes and arrays (unsigned varint of length + 1, 0: null) and, at the
end of every struct, a tagged-field section (an unsigned varint count, then per field its tag,
its size and its value). A nullable struct field starts with an int8 (-1: null).

Each (message, version) is compiled once into a list of field readers.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable
from functools import cache
from typing import Any

from .schema import Field, Message

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"

Reader = Callable[[bytes, int], tuple[Any, int]]


class MessageError(ValueError):
    """Bytes that do not parse as the message and version they should be; ``position`` is the
    byte (within the bytes given) where the decoder stopped."""

    def __init__(self, reason: str, position: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.position = position


_FIXED = {
    "bool": struct.Struct(">?"),
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}
_INT16 = _FIXED["int16"]
_INT32 = _FIXED["int32"]
_INT8 = _FIXED["int8"]


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint at ``pos``: ``(value, next position)``."""
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise MessageError("unsigned varint runs past the end", pos)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise MessageError("unsigned varint longer than 5 bytes", pos)


def read_int16(buf: bytes, pos: int) -> tuple[int, int]:
    """A big-endian int16 at ``pos``: ``(value, next position)``."""
    if pos + 2 > len(buf):
        raise MessageError("int16 runs past the end", pos)
    return _INT16.unpack_from(buf, pos)[0], pos + 2


def _need(buf: bytes, pos: int, n: int, what: str) -> None:
    if n < 0 or pos + n > len(buf):
        raise MessageError(f"{what} of {n} bytes runs past the end ({len(buf) - pos} left)", pos)


def _fixed(name: str) -> Reader:
    st = _FIXED[name]
    size = st.size

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        if pos + size > len(buf):
            raise MessageError(f"{name} runs past the end", pos)
        return st.unpack_from(buf, pos)[0], pos + size

    return read


def _uuid(buf: bytes, pos: int) -> tuple[str, int]:
    _need(buf, pos, 16, "uuid")
    return uuid_str(buf[pos : pos + 16]), pos + 16


def uuid_str(raw: bytes) -> str:
    """A Uuid as Kafka prints it: URL-safe base64 of its 16 bytes without padding."""
    return base64.urlsafe_b64encode(bytes(raw)).decode("ascii").rstrip("=")


def _length(flexible: bool, wide: bool) -> Reader:
    """Length prefix reader: -1 for null."""
    if flexible:

        def read(buf: bytes, pos: int) -> tuple[int, int]:
            n, pos = read_uvarint(buf, pos)
            return n - 1, pos

        return read
    st = _INT32 if wide else _INT16

    def read_fixed(buf: bytes, pos: int) -> tuple[int, int]:
        if pos + st.size > len(buf):
            raise MessageError("length runs past the end", pos)
        return st.unpack_from(buf, pos)[0], pos + st.size

    return read_fixed


def _string(flexible: bool, nullable: bool, name: str) -> Reader:
    length = _length(flexible, wide=False)

    def read(buf: bytes, pos: int) -> tuple[str | None, int]:
        n, pos = length(buf, pos)
        if n < 0:
            if not nullable:
                raise MessageError(f"non-nullable field {name} was serialized as null", pos)
            return None, pos
        _need(buf, pos, n, f"string {name}")
        try:
            return bytes(buf[pos : pos + n]).decode("utf-8"), pos + n
        except UnicodeDecodeError:
            raise MessageError(f"string {name} is not UTF-8", pos) from None

    return read


def _bytes(flexible: bool, nullable: bool, name: str) -> Reader:
    length = _length(flexible, wide=True)

    def read(buf: bytes, pos: int) -> tuple[bytes | None, int]:
        n, pos = length(buf, pos)
        if n < 0:
            if not nullable:
                raise MessageError(f"non-nullable field {name} was serialized as null", pos)
            return None, pos
        _need(buf, pos, n, f"bytes {name}")
        return bytes(buf[pos : pos + n]), pos + n

    return read


def _array(element: Reader, flexible: bool, nullable: bool, name: str) -> Reader:
    length = _length(flexible, wide=True)

    def read(buf: bytes, pos: int) -> tuple[list | None, int]:
        n, pos = length(buf, pos)
        if n < 0:
            if not nullable:
                raise MessageError(f"non-nullable field {name} was serialized as null", pos)
            return None, pos
        if n > len(buf) - pos:  # every element takes at least one byte
            raise MessageError(f"array {name} of {n} elements runs past the end", pos)
        out = []
        for _ in range(n):
            v, pos = element(buf, pos)
            out.append(v)
        return out, pos

    return read


def _value_reader(f: Field, version: int, flexible: bool) -> Reader:
    """The reader of one field's value at ``version`` (tagged or not)."""
    nullable = f.nullable_in(version)
    array = f.type.startswith("[]")
    base = f.type[2:] if array else f.type
    if base == "struct":
        body = _struct_reader(f.fields or (), version, flexible)
        if array:
            element = body
        elif nullable:

            def element(buf: bytes, pos: int) -> tuple[Any, int]:
                if pos >= len(buf):
                    raise MessageError(f"struct {f.name} runs past the end", pos)
                if _INT8.unpack_from(buf, pos)[0] < 0:
                    return None, pos + 1
                return body(buf, pos + 1)

            return element
        else:
            return body
    elif base in _FIXED:
        element = _fixed(base)
    elif base == "uuid":
        element = _uuid
    elif base == "string":
        element = _string(flexible, nullable and not array, f.name)
    elif base in ("bytes", "records"):
        element = _bytes(flexible, nullable and not array, f.name)
    else:
        raise MessageError(f"field {f.name}: unknown type {f.type}", 0)
    if array:
        return _array(element, flexible, nullable, f.name)
    return element


def default_value(f: Field, version: int) -> Any:
    """A field's default at ``version``, as the decoder gives values."""
    d = f.default
    if f.type.startswith("[]"):
        return None if d == "null" else []
    if f.type == "struct":
        return None if d == "null" else _defaults(f.fields or (), version)
    if d == "null":
        return None
    if f.type == "bool":
        return str(d).lower() == "true" if d is not None else False
    if f.type in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        if d is None:
            return 0
        s = str(d)
        return int(s, 16) if s.lower().startswith(("0x", "-0x")) else int(s)
    if f.type == "float64":
        return float(d) if d is not None else 0.0
    if f.type == "string":
        return str(d) if d is not None else ""
    if f.type == "uuid":
        return ZERO_UUID
    return b""  # bytes, records


def _defaults(fields: tuple[Field, ...], version: int) -> dict[str, Any]:
    return {f.json_name: default_value(f, version) for f in fields if f.exists_in(version)}


def _struct_reader(fields: tuple[Field, ...], version: int, flexible: bool) -> Reader:
    plain = [
        (f.json_name, _value_reader(f, version, flexible))
        for f in fields
        if f.exists_in(version) and not f.tagged_in(version)
    ]
    tagged = {
        f.tag: (f.json_name, _value_reader(f, version, True))
        for f in fields
        if f.exists_in(version) and f.tagged_in(version)
    }
    tag_defaults = [
        (f.json_name, f) for f in fields if f.exists_in(version) and f.tagged_in(version)
    ]

    def read(buf: bytes, pos: int) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = {}
        for name, reader in plain:
            out[name], pos = reader(buf, pos)
        if flexible:
            for name, f in tag_defaults:
                out[name] = default_value(f, version)
            count, pos = read_uvarint(buf, pos)
            last = -1
            for _ in range(count):
                tag, pos = read_uvarint(buf, pos)
                size, pos = read_uvarint(buf, pos)
                _need(buf, pos, size, f"tagged field {tag}")
                if tag <= last:
                    raise MessageError(f"tagged field {tag} out of order", pos)
                last = tag
                known = tagged.get(tag)
                if known is not None:
                    end = pos + size
                    value, after = known[1](buf[:end], pos)
                    if after != end:
                        raise MessageError(
                            f"tagged field {known[0]} (tag {tag}) has {end - after} bytes left",
                            after,
                        )
                    out[known[0]] = value
                pos += size  # unknown tags are skipped, as Kafka keeps them aside
        return out, pos

    return read


@cache
def compiled(message: Message, version: int) -> Reader:
    """The reader of ``message`` at ``version`` (compiled once)."""
    return _struct_reader(message.fields, version, message.flexible(version))


def read_message(
    message: Message, version: int, buf: bytes, pos: int = 0, whole: bool = True
) -> tuple[dict[str, Any], int]:
    """Decode ``message`` at ``version`` from ``buf`` at ``pos``: ``(fields, next position)``.
    ``whole``: the message must end where ``buf`` ends (bytes left over are an error)."""
    if not message.valid_in(version):
        lo, hi = message.valid
        span = f"{lo}" if lo == hi else f"{lo}-{hi}"
        raise MessageError(
            f"{message.name} version {version} is not defined (the pinned Kafka specs define "
            f"{span})",
            pos,
        )
    try:
        out, end = compiled(message, version)(buf, pos)
    except (struct.error, IndexError) as e:
        raise MessageError(f"{message.name} v{version}: {e}", pos) from None
    if whole and end != len(buf):
        raise MessageError(
            f"{message.name} v{version}: {len(buf) - end} bytes left over after the message", end
        )
    return out, end


def _json_default(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode("ascii")
    raise TypeError(f"not JSON: {type(v).__name__}")


def to_json(value: Any) -> str:
    """``value`` (decoded fields) as JSON, bytes as base64 (as Kafka's JSON converters)."""
    return json.dumps(value, default=_json_default, separators=(",", ":"), allow_nan=True)


def converter_view(
    fields: tuple[Field, ...], version: int, value: dict[str, Any]
) -> dict[str, Any]:
    """``value`` (a struct the decoder read at ``version``) as Kafka's generated JSON converters
    write it (``XJsonConverter.write``): fields in the spec's order, a tagged field only when
    its value is not its default; nested structs alike. Other keys of ``value`` (none the
    decoder makes) are dropped; a value that is not a struct where the spec has one (an
    embedded message decoded in place) is kept as it is."""
    out: dict[str, Any] = {}
    for f in fields:
        if not f.exists_in(version) or f.json_name not in value:
            continue
        v = value[f.json_name]
        if f.tagged_in(version) and v == default_value(f, version):
            continue
        if f.fields:
            if isinstance(v, dict):
                v = converter_view(f.fields, version, v)
            elif isinstance(v, list):
                v = [converter_view(f.fields, version, x) if isinstance(x, dict) else x for x in v]
        out[f.json_name] = v
    return out


def to_kafka_json(value: Any) -> str:
    """``value`` as Jackson prints a JSON tree (``JsonNode.toString``): compact, non-ASCII
    characters as they are, bytes as base64 (what kafka-dump-log prints)."""
    return json.dumps(
        value, default=_json_default, separators=(",", ":"), ensure_ascii=False, allow_nan=True
    )
