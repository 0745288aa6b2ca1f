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
    """One message spec: name, family, Kafka's ``type`` (``data``, ``metadata``,
    ``coordinator-key``, ``coordinator-value``) and ``apiKey``, valid and first flexible
    version, fields, and ``src``: the ``<path>@<commit>`` of apache/kafka it was read from."""

    name: str
    family: str
    kind: str | None
    api_key: int | None
    valid: tuple[int, int]
    flexible_from: int | None
    fields: tuple[Field, ...]
    src: str = ""

    def valid_in(self, version: int) -> bool:
        """Whether ``version`` is one the pinned specs define."""
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
    """Every message spec pinned (:func:`release` says which Kafka tree), parsed once."""
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
                m.get("src", ""),
            )
        )
    return tuple(out)


@cache
def family(name: str) -> tuple[Message, ...]:
    """The messages of one family."""
    return tuple(m for m in all_messages() if m.family == name)


@cache
def by_name(name: str) -> Message:
    """The message called ``name``; KeyError when the pinned specs have none."""
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
def key_for_type(family_name: str, record_type: int) -> tuple[Message, int] | None:
    """A coordinator family's key message for a record type and the version to read the key
    at, or None. Kafka 4's specs (``coordinator-key``) carry the record type as ``apiKey`` and
    every key is read at version 0; older ones (``data``) made the key's version the record
    type (the key spec whose valid versions include it, read at that version)."""
    for m in family(family_name):
        if m.kind == "coordinator-key" and m.api_key == record_type:
            return m, 0
    for m in family(family_name):
        if m.kind != "coordinator-key" and m.name.endswith("Key") and m.valid_in(record_type):
            return m, record_type
    return None


@cache
def value_for_key(key: Message) -> Message:
    """The value message of a coordinator key message (KeyError when the specs have none)."""
    if key.kind == "coordinator-key":
        for m in family(key.family):
            if m.kind == "coordinator-value" and m.api_key == key.api_key:
                return m
    return by_name(key.name[: -len("Key")] + "Value")


def coordinator_keys(family_name: str) -> list[tuple[int, Message]]:
    """Every ``(record type, key message)`` of a coordinator family, by record type."""
    out = []
    for m in family(family_name):
        if m.kind == "coordinator-key" and m.api_key is not None:
            out.append((m.api_key, m))
        elif m.name.endswith("Key"):
            out += [(t, m) for t in range(m.valid[0], m.valid[1] + 1)]
    return sorted(out, key=lambda x: x[0])


def release() -> tuple[str, str]:
    """``(release, commit)``: what the specs are, and the base commit of apache/kafka they were
    transcribed from (each message's own commit is its ``src``)."""
    return specs.KAFKA_RELEASE, specs.KAFKA_COMMIT
