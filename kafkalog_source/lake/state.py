"""What a table remembers of the conversions that wrote it, in its own commits.

Each commit kafkalog makes carries, as string properties (Iceberg: the snapshot summary; Delta:
the commit info, plus one app transaction per topic-partition):

* ``kafkalog.offsets``: per topic-partition, the next offset to convert, with the last batch
  converted before it (its last offset and CRC), in the JSON of the stream offsets
  (:func:`~kafkalog_source.streaming.source.offsets_to_json`: ``{"orders": {"0": 1234},
  "kafkalog:lastBatch": {"orders": {"0": [1233, 3735928559]}}}``). The next run starts there and
  checks that the batch is still there, as a restarted stream does;
* ``kafkalog.read``: the read options that decide which rows and columns the table holds
  (:data:`IDENTITY`; every other option of :class:`~kafkalog_source.options.ReadOptions` is in
  :data:`NOT_IDENTITY`, with the reason): a run with other ones is refused before it reads;
* ``kafkalog.schemas``: per decoded payload column, the subject, version and schema id of the
  reader schema that typed it (named when a schema change is refused);
* ``kafkalog.archive``: the archive converted (as messages show it; not checked: archives move);
* ``kafkalog.version``: the layout of these properties (1);
* ``kafkalog.run``: the id of the run that made the commit (a UUID, new for each ``convert``;
  :data:`RUN`). A commit whose reply is lost (a connection reset, a timeout, a catalog's
  "commit state unknown") may have landed or not: the run reloads the table and looks for its
  id. Found, the run succeeded; absent after a rejection the library reports as such (another
  commit took the version first), the run deletes its files and starts over or fails; absent
  after any other error, the run keeps its files (a commit that lands late names them) and
  fails with "commit outcome unknown", naming the id. Run the same convert again: it reads the
  table as it is, so it goes on after the offsets of that run if its commit landed and converts
  them again if not (the history shows which: the id is in the commit's Delta commit info or
  Iceberg snapshot summary). Files of a commit that never landed are then orphans, which no
  snapshot names; table maintenance deletes them.

The offsets change in the same atomic commit as the data they describe, so no separate
checkpoint can disagree with the table.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..options import ReadOptions
from ..streaming.source import (
    Offsets,
    Prints,
    offsets_from_json,
    offsets_to_json,
    prints_from_json,
)
from .spec import TableError, TargetError

PREFIX = "kafkalog."
OFFSETS = "kafkalog.offsets"
READ = "kafkalog.read"
SCHEMAS = "kafkalog.schemas"
ARCHIVE = "kafkalog.archive"
VERSION = "kafkalog.version"
RUN = "kafkalog.run"  # the run's id, in its commit: found after an error, the commit landed
LAYOUT_VERSION = "1"
# a Delta app transaction per topic-partition: its version is the next offset to convert
TXN_PREFIX = "kafkalog:"

# The read options that decide which rows or which columns a run writes: recorded in each commit
# (``kafkalog.read``) and compared before a run reads. Option name -> ReadOptions field.
IDENTITY: dict[str, str] = {
    "decode": "decode",
    "isolationLevel": "isolation_level",
    "valueFormat": "value_format",
    "keyFormat": "key_format",
    "payloadAs": "payload_as",
    # added in the second list (tables written before record only the five above)
    "includeHeaders": "include_headers",  # the headers column
    "includeMetadata": "include_metadata",  # the producer columns
    "includeControlRecords": "include_control_records",  # marker rows
    "mode": "mode",  # PERMISSIVE writes a malformed batch as a row (DROPMALFORMED: none)
    "replicas": "replicas",  # separate: a record once per copy; merge: once
    "subjectNameStrategy": "subject_name_strategy",  # which subject types the payloads
    "valueSubject": "value_subject",
    "keySubject": "key_subject",
    "valueMessage": "value_message",  # which Protobuf message the payloads decode as
    "keyMessage": "key_message",
    # added in the third list (tables written before record it took the default, kafka)
    "redpanda": "redpanda",  # raw: every batch type at its raft offset; kafka: Kafka's view
}
# Tables written before the second group was recorded hold the first five only: an option
# missing from a table's record had, in every kafkalog that wrote such tables, the default it
# has now (:func:`_default`; the defaults of these options have not changed).

# Every other field of ReadOptions, with why it is not part of a table's identity
# (tests/test_lake_identity.py fails when a field is in neither list).
NOT_IDENTITY: dict[str, str] = {
    "paths": "the archive converted: archives move (shown in kafkalog.archive, not checked)",
    "registry_conf": "how the schema registry is reached (credentials, timeouts)",
    "store": "how remote objects are reached (credentials, read-ahead, retries)",
    "given": "the option names as given, for messages",
    "schema_registry": "where the schemas are read from: a location, which moves; the schemas "
    "it yields are recorded per column (kafkalog.schemas) and checked by the schema merge",
    "value_schema_version": "the reader schema's version: a newer one evolves the table's "
    "columns (the schema merge), and unset it is the latest, which changes by itself",
    "key_schema_version": "as valueSchemaVersion",
    "verify_checksums": "whether damage is looked for; damage found is handled by mode "
    "(recorded) and reported; a well-formed archive gives the same rows either way",
    "max_batch_bytes": "a resource cap: a batch over it is malformed, handled by mode "
    "(recorded) and reported, never read differently without a report",
    "ignore_missing_files": "damage accounting: a file gone is reported as missing offsets",
    "ignore_corrupt_files": "damage accounting: what is skipped is reported as missing offsets",
    "fail_on_data_loss": "whether missing offsets fail the run or are reported",
    "offset_gaps": "how missing offsets are reported (compaction or loss), not which rows",
    "allow_empty": "whether a read of no segment fails",
    "include_snapshots": "refused for a table (run.py _REFUSED)",
    "ending_offsets": "refused for a table: the archive's end decides",
    "ending_timestamp": "refused for a table",
    "ending_offsets_by_timestamp": "refused for a table",
    "starting_offsets": "where a new table starts; after its first run, its offsets decide",
    "starting_timestamp": "as startingOffsets",
    "starting_offsets_by_timestamp": "as startingOffsets",
    "starting_offsets_by_timestamp_strategy": "as startingOffsets",
    "subscribe": "which partitions a run converts: the others keep their offsets "
    "(run.py _selected); a partition's rows do not depend on it",
    "subscribe_pattern": "as subscribe",
    "assign": "as subscribe",
    "recursive_file_lookup": "which files are looked at; offsets a file left out would hold "
    "are reported as missing, never counted as converted without being read",
    "path_glob_filter": "as recursiveFileLookup",
    "modified_before": "as recursiveFileLookup",
    "modified_after": "as recursiveFileLookup",
    "compiled_codecs": "the decompressor used, not its output",
    "records_per_batch": "how rows are cut into record batches",
    "min_partitions": "splitting",
    "max_records_per_partition": "splitting",
    "max_partition_bytes": "splitting",
    "open_cost_in_bytes": "splitting",
    "remote_header_walk": "splitting of remote segments",
    "max_offsets_per_trigger": "a stream's trigger limit (a table run reads to the end)",
    "max_bytes_per_trigger": "a stream's trigger limit",
    "max_files_per_trigger": "a stream's trigger limit",
    "min_offsets_per_trigger": "a stream's trigger limit",
    "max_trigger_delay": "a stream's trigger limit",
}


def _text(value: Any) -> str:
    """An option's value as the table records it (``true``/``false``; unset: empty)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _default(name: str) -> str:
    """The recorded text of option ``name``'s default."""
    return _text(getattr(ReadOptions(), IDENTITY[name]))


def read_identity(opts: ReadOptions) -> dict[str, str]:
    """The options of ``opts`` that decide which rows and columns a table holds
    (:data:`IDENTITY`), as recorded."""
    return {name: _text(getattr(opts, attr)) for name, attr in IDENTITY.items()}


@dataclass
class TableState:
    """The conversions a table holds: offsets and their last batches, the read options, the
    payload schemas and the archive."""

    offsets: Offsets = field(default_factory=dict)
    prints: Prints = field(default_factory=dict)
    read: dict[str, str] = field(default_factory=dict)
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    archive: str = ""
    run: str = ""  # the id of the run committing it (:data:`RUN`), when it is a run's

    def to_properties(self) -> dict[str, str]:
        """The commit properties that hold this state."""
        return {
            OFFSETS: json.dumps(offsets_to_json(self.offsets, self.prints), sort_keys=True),
            READ: json.dumps(self.read, sort_keys=True),
            SCHEMAS: json.dumps(self.schemas, sort_keys=True),
            ARCHIVE: self.archive,
            VERSION: LAYOUT_VERSION,
            **({RUN: self.run} if self.run else {}),
        }

    @classmethod
    def from_properties(cls, props: Mapping[str, Any], where: str) -> TableState | None:
        """The state in ``props`` (a snapshot summary, a commit info), None when they hold none;
        :class:`~.spec.TableError` naming ``where`` when they are malformed."""
        raw = props.get(OFFSETS)
        if raw is None:
            return None
        try:
            data = json.loads(raw)
            read = json.loads(props.get(READ) or "{}")
            schemas = json.loads(props.get(SCHEMAS) or "{}")
            state = cls(
                offsets=offsets_from_json(data),
                prints=prints_from_json(data),
                read={str(k): str(v) for k, v in read.items()},
                schemas=schemas if isinstance(schemas, dict) else {},
                archive=str(props.get(ARCHIVE) or ""),
                run=str(props.get(RUN) or ""),
            )
        except (ValueError, TypeError, AttributeError) as e:
            raise TableError(
                f"{where}: the kafkalog properties of its last commit are not readable ({e})"
            ) from None
        version = str(props.get(VERSION) or LAYOUT_VERSION)
        if version != LAYOUT_VERSION:
            raise TargetError(
                f"{where} was written by a kafkalog whose commit properties have layout "
                f"{version}; this one reads layout {LAYOUT_VERSION}: convert with that kafkalog"
            )
        return state

    @property
    def topics(self) -> set[str]:
        """The topics whose offsets the table holds."""
        return {t for t, _ in self.offsets}


def check_read(state: TableState, opts: ReadOptions, where: str) -> None:
    """Refuse a run whose row- and column-deciding options (:data:`IDENTITY`) differ from the
    table's, naming each with its recorded and its given value. An option the table's record
    lacks (a table written before it was recorded) had its default."""
    now = read_identity(opts)
    was = {name: state.read.get(name, _default(name)) for name in IDENTITY}
    diff = [k for k in IDENTITY if was[k] != now[k]]
    if diff:
        shown = ", ".join(
            f"{k}={_shown_value(was[k])}"
            + ("" if k in state.read else " (not recorded: the default then)")
            + f" (this run: {_shown_value(now[k])})"
            for k in diff
        )
        raise TargetError(
            f"{where} was converted with {shown}: a table holds one kind of rows; convert with "
            "the table's options, or into another table"
        )


def _shown_value(v: str) -> str:
    return v if v else "unset"


def check_topics(state: TableState, archive_topics: set[str], where: str, path: str) -> None:
    """Refuse an archive that shares no topic with a table that holds offsets (a table written
    from another archive)."""
    held = state.topics
    if held and archive_topics and not (held & archive_topics):
        raise TargetError(
            f"{where} holds topics {', '.join(sorted(held))} (converted from "
            f"{state.archive or 'another archive'}), and {path} has none of them "
            f"({', '.join(sorted(archive_topics))}): a table written from another archive; "
            "convert into another table"
        )


def txn_app_id(topic: str, partition: int) -> str:
    """The Delta app transaction id of a topic-partition (``kafkalog:<topic>:<partition>``; ":"
    is not allowed in a topic name)."""
    return f"{TXN_PREFIX}{topic}:{partition}"


__all__ = [
    "ARCHIVE",
    "OFFSETS",
    "PREFIX",
    "READ",
    "RUN",
    "SCHEMAS",
    "IDENTITY",
    "NOT_IDENTITY",
    "VERSION",
    "TableState",
    "check_read",
    "check_topics",
    "read_identity",
    "txn_app_id",
]
