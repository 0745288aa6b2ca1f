"""The output schema, in Arrow and in Spark DDL, with the optional column groups."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ..options import ReadOptions

TIMESTAMP = pa.timestamp("us", tz="UTC")
HEADER_STRUCT = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
HEADERS = pa.list_(pa.field("element", HEADER_STRUCT))
CONTROL_STRUCT = pa.struct(
    [
        pa.field("type", pa.string()),
        pa.field("version", pa.int32()),
        pa.field("coordinatorEpoch", pa.int32()),
    ]
)

KAFKA_COLUMNS: tuple[pa.Field, ...] = (
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", TIMESTAMP),
    pa.field("timestampType", pa.int32()),
    pa.field("headers", HEADERS),
)

METADATA_COLUMNS: tuple[pa.Field, ...] = (
    pa.field("producerId", pa.int64()),
    pa.field("producerEpoch", pa.int32()),
    pa.field("sequence", pa.int32()),
    pa.field("isTransactional", pa.bool_()),
    pa.field("partitionLeaderEpoch", pa.int32()),
    pa.field("magic", pa.int32()),
    pa.field("codec", pa.string()),
    pa.field("segmentPath", pa.string()),
    pa.field("batchPosition", pa.int64()),
    pa.field("segmentBaseOffset", pa.int64()),
)

CONTROL_COLUMNS: tuple[pa.Field, ...] = (pa.field("control", CONTROL_STRUCT),)

# redpanda=raw with includeMetadata: each row's Redpanda batch type (raft_data, ...)
REDPANDA_COLUMNS: tuple[pa.Field, ...] = (pa.field("redpandaBatchType", pa.string()),)

# key and value as the records hold them, control records' too (the `key`/`value` columns are
# null for control records): what decode= (reader/internal.py) reads; not a user column
RAW_COLUMNS: tuple[pa.Field, ...] = (
    pa.field("rawKey", pa.binary()),
    pa.field("rawValue", pa.binary()),
)

ALL_COLUMNS: dict[str, pa.Field] = {
    f.name: f
    for f in KAFKA_COLUMNS + METADATA_COLUMNS + CONTROL_COLUMNS + REDPANDA_COLUMNS + RAW_COLUMNS
}

_DDL = {
    "key": "binary",
    "value": "binary",
    "topic": "string",
    "partition": "int",
    "offset": "bigint",
    "timestamp": "timestamp",
    "timestampType": "int",
    "headers": "array<struct<key:string,value:binary>>",
    "producerId": "bigint",
    "producerEpoch": "int",
    "sequence": "int",
    "isTransactional": "boolean",
    "partitionLeaderEpoch": "int",
    "magic": "int",
    "codec": "string",
    "segmentPath": "string",
    "batchPosition": "bigint",
    "segmentBaseOffset": "bigint",
    "control": "struct<type:string,version:int,coordinatorEpoch:int>",
    "redpandaBatchType": "string",
    "rawKey": "binary",
    "rawValue": "binary",
}


# What each user column means: docs/reference/schema.md is generated from these tables
# (python -m kafkalog_source.cli.docs), and a test fails when a column has no entry.
COLUMN_DOCS: dict[str, str] = {
    "key": "record key; null stays null",
    "value": "record value; null for a tombstone",
    "topic": "from the partition directory name; null outside one",
    "partition": "from the partition directory name; null outside one",
    "offset": "the record's offset",
    "timestamp": "CreateTime or LogAppendTime; null for v0 messages",
    "timestampType": "0 CreateTime, 1 LogAppendTime, -1 none (v0)",
    "headers": "null when a record has no headers, as in Spark's Kafka source; dropped with "
    "`includeHeaders=false`",
    "producerId": "-1 when none (and for v0/v1)",
    "producerEpoch": "-1 when none",
    "sequence": "`baseSequence + offsetDelta` with Kafka's wrap past 2³¹-1, or -1",
    "isTransactional": "the batch's transactional bit",
    "partitionLeaderEpoch": "-1 when none",
    "magic": "0, 1 or 2 (for inner v0/v1 messages, the wrapper's)",
    "codec": "none, gzip, snappy, lz4, zstd",
    "segmentPath": "the `.log` file",
    "batchPosition": "byte position of the record's batch (or top-level message) in the file",
    "segmentBaseOffset": "from the file name",
    "control": "for control records (transaction markers, KRaft control records): `type` "
    "(`COMMIT`, `ABORT`, `LEADER_CHANGE`, ..., `UNKNOWN(n)` for an unknown id, `INVALID` for a "
    "key shorter than 4 bytes), `version` (the key version) and `coordinatorEpoch`; null for "
    "data rows",
    "redpandaBatchType": "`redpanda=raw` with `includeMetadata`: the Redpanda batch's type "
    "(`raft_data`, `raft_configuration`, `kvstore`, ...); null for Kafka segments",
}


# Columns whose value is the same for every record of a segment: a projection of these alone
# needs how many records a batch holds, never their fields (counts come from batch headers).
PER_SEGMENT_COLUMNS = frozenset({"topic", "partition", "segmentPath", "segmentBaseOffset"})


@dataclass(frozen=True)
class Projection:
    """Which output columns to build, in order. Columns not named are never computed."""

    names: tuple[str, ...]

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of the produced record batches."""
        return pa.schema([ALL_COLUMNS[n] for n in self.names])

    def wants(self, name: str) -> bool:
        """True when the column ``name`` is part of the output."""
        return name in self.names

    @property
    def needs_records(self) -> bool:
        """False when no column reads a record's own fields (``count(*)``, or a count grouped
        by topic and partition): only how many records each batch holds matters."""
        return not PER_SEGMENT_COLUMNS.issuperset(self.names)

    @property
    def ddl(self) -> str:
        """The Spark DDL string of this projection."""
        return ", ".join(f"`{n}` {_DDL[n]}" for n in self.names)


def default_projection(
    include_headers: bool = True,
    include_metadata: bool = False,
    include_control: bool = False,
    redpanda_raw: bool = False,
) -> Projection:
    """The columns a reader produces for the given options, in Spark Kafka source order."""
    names = [f.name for f in KAFKA_COLUMNS if include_headers or f.name != "headers"]
    if include_metadata:
        names += [f.name for f in METADATA_COLUMNS]
    if include_control:
        names += [f.name for f in CONTROL_COLUMNS]
    if include_metadata and redpanda_raw:
        names += [f.name for f in REDPANDA_COLUMNS]
    return Projection(tuple(names))


def projection_for(names: list[str] | tuple[str, ...]) -> Projection:
    """A projection for user-chosen column names; raises KeyError naming an unknown column."""
    for n in names:
        if n not in ALL_COLUMNS:
            raise KeyError(n)
    return Projection(tuple(names))


def output_projection(options: ReadOptions) -> Projection:
    """The columns produced for these options when the user gives no schema."""
    return default_projection(
        options.include_headers,
        options.include_metadata,
        options.include_control_records,
        options.redpanda == "raw",
    )
