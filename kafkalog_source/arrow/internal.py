"""The schemas of ``decode=``: Kafka's internal topics as typed tables.

Every interpretation has the same frame: ``topic``, ``partition``, ``offset``, ``timestamp``
(as the raw schema has them), ``record_type`` (the record's name as Kafka's specs give it:
``OffsetCommit``, ``GroupMetadata``, ``TopicRecord``, ``LeaderChange``, ...) and
``record_version`` (the value's version; null for a tombstone), then the interpretation's typed
columns (:data:`~..format.messages.topics.TYPED_COLUMNS`), then ``tombstone``, ``decoded`` (the
whole record, key and value, as JSON with Kafka's field names), ``error`` (PERMISSIVE: why the
record did not decode) and ``key``/``value`` (the record's bytes).

``decode=auto`` reads every topic with one schema: the frame with the union of all
interpretations' typed columns (a column name means the same thing, with the same type, in every
interpretation that has it); rows of other topics have only the frame and ``key``/``value``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ..format.messages.topics import INTERPRETATIONS, TYPED_COLUMNS
from .schema import TIMESTAMP

DECODE_CHOICES = ("raw", *INTERPRETATIONS, "auto")

HEAD: tuple[pa.Field, ...] = (
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", TIMESTAMP),
    pa.field("record_type", pa.string()),
    pa.field("record_version", pa.int32()),
)
TAIL: tuple[pa.Field, ...] = (
    pa.field("tombstone", pa.bool_()),
    pa.field("decoded", pa.string()),
    pa.field("error", pa.string()),
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
)

# what the frame's columns mean (docs/reference/schema.md is generated from these)
FRAME_DOCS: dict[str, str] = {
    "topic": "as in the raw schema",
    "partition": "as in the raw schema",
    "offset": "as in the raw schema",
    "timestamp": "as in the raw schema",
    "record_type": "the record's name as Kafka's specs give it (`OffsetCommit`, `GroupMetadata`, "
    "`TopicRecord`, `LeaderChange`, ...); `unknown:<type>` (`unknown:<name>` for an unknown "
    "version) for a record the pinned specs do not define, kept raw; null for rows of a topic "
    "`auto` reads raw",
    "record_version": "the value's version; null for a tombstone",
    "tombstone": "a deleted offset or group: a row that says so",
    "decoded": 'the whole record, `{"key": ..., "value": ...}`, as Kafka\'s JSON converter '
    "writes it (the field names of Kafka's specs, tagged fields only when not at their "
    "default, bytes as base64)",
    "error": "why the record did not decode: PERMISSIVE's undecodable records, and in every "
    "mode records of a type or version the specs do not define (kept raw)",
    "key": "the record's key bytes",
    "value": "the record's value bytes",
}

_S, _I, _L, _T = pa.string(), pa.int32(), pa.int64(), TIMESTAMP
TYPED_TYPES: dict[str, pa.DataType] = {
    "group": _S,
    "committed_topic": _S,
    "committed_partition": _I,
    "committed_offset": _L,
    "committed_leader_epoch": _I,
    "committed_metadata": _S,
    "commit_timestamp": _T,
    "expire_timestamp": _T,
    "member_id": _S,
    "protocol_type": _S,
    "generation": _I,
    "transactional_id": _S,
    "producer_id": _L,
    "producer_epoch": _I,
    "previous_producer_id": _L,
    "next_producer_id": _L,
    "transaction_timeout_ms": _I,
    "transaction_state": _S,
    "transaction_start_timestamp": _T,
    "transaction_last_update_timestamp": _T,
    "client_transaction_version": _I,
    "topic_name": _S,
    "topic_id": _S,
    "partition_id": _I,
    "broker_id": _I,
    "controller_id": _I,
    "leader": _I,
    "replicas": pa.list_(pa.field("element", _I)),
    "isr": pa.list_(pa.field("element", _I)),
    "config_resource_type": _I,
    "config_resource_name": _S,
    "config_name": _S,
    "config_value": _S,
    "snapshot_end_offset": _L,
    "snapshot_end_epoch": _I,
    "segment_id": _S,
    "start_offset": _L,
    "end_offset": _L,
    "state": _S,
    "snapshot_epoch": _I,
    "state_epoch": _I,
    "leader_epoch": _I,
}
TIMESTAMP_COLUMNS = frozenset(n for n, t in TYPED_TYPES.items() if t == TIMESTAMP)

_DDL = {
    pa.string(): "string",
    pa.int32(): "int",
    pa.int64(): "bigint",
    pa.bool_(): "boolean",
    pa.binary(): "binary",
    TIMESTAMP: "timestamp",
}


def typed_columns(decode: str) -> tuple[str, ...]:
    """The typed columns of an interpretation (for ``auto``: of all of them, once each)."""
    if decode == "auto":
        seen: dict[str, None] = {}
        for cols in TYPED_COLUMNS.values():
            seen.update(dict.fromkeys(cols))
        return tuple(seen)
    return TYPED_COLUMNS[decode]


@dataclass(frozen=True)
class DecodedSchema:
    """The output of one ``decode`` interpretation, or of some of its columns."""

    decode: str
    names: tuple[str, ...]

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema."""
        fields = {f.name: f for f in HEAD + TAIL}
        return pa.schema([fields.get(n) or pa.field(n, TYPED_TYPES[n]) for n in self.names])

    @property
    def ddl(self) -> str:
        """The Spark DDL string."""
        out = []
        for f in self.schema:
            t = "array<int>" if pa.types.is_list(f.type) else _DDL[f.type]
            out.append(f"`{f.name}` {t}")
        return ", ".join(out)

    def wants(self, name: str) -> bool:
        """True when the column ``name`` is part of the output."""
        return name in self.names


def decoded_schema(
    decode: str, columns: list[str] | tuple[str, ...] | None = None
) -> DecodedSchema:
    """The schema of ``decode`` (every column, or ``columns`` of them in that order; KeyError
    naming the first unknown one)."""
    every = tuple(f.name for f in HEAD) + typed_columns(decode) + tuple(f.name for f in TAIL)
    if columns is None:
        return DecodedSchema(decode, every)
    for c in columns:
        if c not in every:
            raise KeyError(c)
    return DecodedSchema(decode, tuple(columns))
