"""What a table remembers of the conversions that wrote it, in its own commits.

Each commit kafkalog makes carries, as string properties (Iceberg: the snapshot summary; Delta:
the commit info, plus one app transaction per topic-partition):

* ``kafkalog.offsets``: per topic-partition, the next offset to convert, with the last batch
  converted before it (its last offset and CRC), in the JSON of the stream offsets
  (:func:`~kafkalog_source.streaming.source.offsets_to_json`: ``{"orders": {"0": 1234},
  "kafkalog:lastBatch": {"orders": {"0": [1233, 3735928559]}}}``). The next run starts there and
  checks that the batch is still there, as a restarted stream does;
* ``kafkalog.read``: the read options that decide which rows and columns the table holds
  (``decode``, ``isolationLevel``, ``valueFormat``, ``keyFormat``, ``payloadAs``): a run with
  other ones is refused;
* ``kafkalog.schemas``: per decoded payload column, the subject, version and schema id of the
  reader schema that typed it (named when a schema change is refused);
* ``kafkalog.archive``: the archive converted (as messages show it; not checked: archives move);
* ``kafkalog.version``: the layout of these properties (1).

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
LAYOUT_VERSION = "1"
# a Delta app transaction per topic-partition: its version is the next offset to convert
TXN_PREFIX = "kafkalog:"

# the read options that decide the table's rows and columns, with their defaults
_READ_DEFAULTS = {
    "decode": "raw",
    "isolationLevel": "read_uncommitted",
    "valueFormat": "raw",
    "keyFormat": "raw",
    "payloadAs": "struct",
}


def read_identity(opts: ReadOptions) -> dict[str, str]:
    """The options of ``opts`` that decide which rows and columns a table holds."""
    return {
        "decode": str(opts.decode),
        "isolationLevel": str(opts.isolation_level),
        "valueFormat": str(opts.value_format),
        "keyFormat": str(opts.key_format),
        "payloadAs": str(opts.payload_as),
    }


@dataclass
class TableState:
    """The conversions a table holds: offsets and their last batches, the read options, the
    payload schemas and the archive."""

    offsets: Offsets = field(default_factory=dict)
    prints: Prints = field(default_factory=dict)
    read: dict[str, str] = field(default_factory=dict)
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    archive: str = ""

    def to_properties(self) -> dict[str, str]:
        """The commit properties that hold this state."""
        return {
            OFFSETS: json.dumps(offsets_to_json(self.offsets, self.prints), sort_keys=True),
            READ: json.dumps(self.read, sort_keys=True),
            SCHEMAS: json.dumps(self.schemas, sort_keys=True),
            ARCHIVE: self.archive,
            VERSION: LAYOUT_VERSION,
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
    """Refuse a run whose row- and column-deciding options differ from the table's."""
    now = read_identity(opts)
    was = {**_READ_DEFAULTS, **state.read}
    diff = [k for k in _READ_DEFAULTS if was.get(k) != now.get(k)]
    if diff:
        shown = ", ".join(f"{k}={was[k]} (this run: {now[k]})" for k in diff)
        raise TargetError(
            f"{where} was converted with {shown}: a table holds one kind of rows; convert with "
            "the table's options, or into another table"
        )


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
    "SCHEMAS",
    "VERSION",
    "TableState",
    "check_read",
    "check_topics",
    "read_identity",
    "txn_app_id",
]
