"""Kafka's message specs as data: the compact form :mod:`.specs` holds, parsed once into
:class:`Message` and :class:`Field` objects, and looked up by family and name, api key or
record type.

A family is one set of specs that share a framing: ``group`` (``__consumer_offsets``),
``transaction`` (``__transaction_state``), ``share`` (``__share_group_state``), ``metadata``
(``__cluster_metadata``), ``raft`` (KRaft's control records), ``remote``
(``__remote_log_metadata``) and ``consumer_protocol`` (a classic consumer group member's
subscription and assignment).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, lru_cache

from . import specs

OPEN = 32767  # the upper end of an open version range ("N+")

PRIMITIVES = (
    "bool",
    "int8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "float64",
    "string",
    "bytes",
    "records",
    "uuid",
)


def _in(rng: tuple[int, int] | None, version: int) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


@dataclass(frozen=True)
class Field:
    """One field of a message or struct: its Kafka name, type (a primitive, ``struct``, or
    ``[]`` + either), the versions it exists in, is nullable in and is tagged in, its tag, its
    default (as the spec gives it) and, for structs, its fields."""

    name: str
    type: str
    versions: tuple[int, int]
    nullable: tuple[int, int] | None
    tagged: tuple[int, int] | None
    tag: int | None
    default: object
    fields: tuple[Field, ...] | None

    @property
    def json_name(self) -> str:
        """The name Kafka's JSON converters give the field (its first letter lower-cased)."""
        return self.name[:1].lower() + self.name[1:]

    def exists_in(self, version: int) -> bool:
        """Whether the field is part of the message at ``version``."""
        return _in(self.versions, version)

    def nullable_in(self, version: int) -> bool:
        """Whether the field may be null at ``version``."""
        return _in(self.nullable, version)

    def tagged_in(self, version: int) -> bool:
        """Whether the field is a tagged field at ``version``."""
        return _in(self.tagged, version)


@dataclass(frozen=True)
class Message:
    """One message spec: name, family, Kafka's ``type`` and ``apiKey``, valid and first
    flexible version, fields."""

    name: str
    family: str
    kind: str | None
    api_key: int | None
    valid: tuple[int, int]
    flexible_from: int | None
    fields: tuple[Field, ...]

    def valid_in(self, version: int) -> bool:
        """Whether ``version`` is one the pinned release defines."""
        return _in(self.valid, version)

    def flexible(self, version: int) -> bool:
        """Whether ``version`` uses the flexible encoding (compact strings, tagged fields)."""
        return self.flexible_from is not None and version >= self.flexible_from


def _field(raw: list) -> Field:
    name, typ, vers, nullable, tagged, tag, default, sub = raw
    return Field(
        name,
        typ,
        tuple(vers),
        tuple(nullable) if nullable else None,
        tuple(tagged) if tagged else None,
        tag,
        default,
        tuple(_field(f) for f in sub) if sub is not None else None,
    )


@lru_cache(maxsize=1)
def all_messages() -> tuple[Message, ...]:
    """Every message spec of the pinned release, parsed once."""
    out = []
    for m in json.loads(specs.SPECS_JSON):
        out.append(
            Message(
                m["name"],
                m["family"],
                m["type"],
                m["api"],
                tuple(m["valid"]),
                m["flex"],
                tuple(_field(f) for f in m["fields"]),
            )
        )
    return tuple(out)


@cache
def family(name: str) -> tuple[Message, ...]:
    """The messages of one family."""
    return tuple(m for m in all_messages() if m.family == name)


@cache
def by_name(name: str) -> Message:
    """The message called ``name``; KeyError when the pinned release has none."""
    for m in all_messages():
        if m.name == name:
            return m
    raise KeyError(name)


@cache
def by_api_key(family_name: str, api_key: int) -> Message | None:
    """The message of a family (``metadata``, ``remote``) with this api key, or None."""
    for m in family(family_name):
        if m.api_key == api_key:
            return m
    return None


@cache
def key_for_type(family_name: str, record_type: int) -> Message | None:
    """A coordinator family's key message for a record type (the key's version field is the
    record type: the key spec whose valid versions include it), or None."""
    for m in family(family_name):
        if m.name.endswith("Key") and m.valid_in(record_type):
            return m
    return None


def release() -> tuple[str, str]:
    """``(release, commit)``: the Kafka revision the specs were transcribed from."""
    return specs.KAFKA_RELEASE, specs.KAFKA_COMMIT
