"""What a lake-table conversion writes, and how: the table format, where, its partitioning and
its catalog (:class:`TableTarget`), and the errors a table can answer with.

Partitioning is a list of columns and transforms, written as ``topic,day(timestamp)`` (the
default): an identity column (``topic``, ``partition``, or any other top-level string, integer,
date or boolean column), or ``year``/``month``/``day``/``hour`` of a top-level timestamp column.
Iceberg keeps them as hidden partitioning (the transform is table metadata; the data files hold
the columns as they are). Delta has no transforms: a transform becomes a column of its own,
computed from the source column and named ``<column>_<transform>`` (``timestamp_day``, a date),
which the table's readers see. ``none`` writes an unpartitioned table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import KafkaLogError
from ..redact import redact_uri, uri_secrets

FORMATS = ("iceberg", "delta")
TRANSFORMS = ("year", "month", "day", "hour")
DEFAULT_PARTITIONING = "topic,day(timestamp)"
# the namespace of the tables the embedded catalog holds (and the default for other catalogs)
DEFAULT_NAMESPACE = "kafkalog"
# the embedded catalog's SQLite file, in the table's own directory
EMBEDDED_CATALOG = "catalog.db"


class TableError(KafkaLogError):
    """A table that cannot be written or read as asked: OUT holds something else, the table was
    written from another archive or with other read options, a catalog cannot be reached."""


class TargetError(TableError):
    """OUT, or the catalog's table, is not what this run may write to: something else than a
    table of this format, a table of another archive, of other read options or partitioning
    (the command line's exit code 2, as for a non-empty OUT)."""


class SchemaChangeError(TableError):
    """The read's columns changed in a way the table format cannot take (a type that cannot be
    widened): names the column, both types and, for decoded payloads, the subject and versions."""


class ConcurrentRunError(TableError):
    """Another run committed to the same table while this one was writing; nothing of this run
    was committed."""


class CommitUnknownError(TableError):
    """A run's commit failed in a way that does not say whether it landed (a lost reply, a
    timeout, an I/O error), and the table, reloaded, did not show it (or could not be
    reloaded): names the run id (``kafkalog.run``); the run's data files are kept, since a
    commit that landed names them. The next run reads the table as it is."""

    def __init__(self, message: str, run: str) -> None:
        super().__init__(message)
        self.run = run


@dataclass(frozen=True)
class PartitionField:
    """One partition field: ``transform`` is ``identity`` or one of :data:`TRANSFORMS`."""

    column: str
    transform: str = "identity"

    @property
    def text(self) -> str:
        """As the option writes it: ``topic``, ``day(timestamp)``."""
        return self.column if self.transform == "identity" else f"{self.transform}({self.column})"

    @property
    def derived(self) -> str:
        """The name of the partition field (Iceberg) or of the derived column (Delta)."""
        return self.column if self.transform == "identity" else f"{self.column}_{self.transform}"


_FIELD = re.compile(r"^\s*(?:(?P<t>[A-Za-z]+)\s*\(\s*(?P<c>[^()\s]+)\s*\)|(?P<i>[^()\s,]+))\s*$")


def parse_partitioning(text: str) -> tuple[PartitionField, ...]:
    """``"topic,day(timestamp)"`` → partition fields; ``"none"`` (or empty) → none. Raises
    :class:`TableError` naming what is wrong."""
    if text.strip().lower() in ("", "none"):
        return ()
    out = []
    for item in text.split(","):
        m = _FIELD.match(item)
        if m is None:
            raise TargetError(
                f"--partition-by: cannot read {item.strip()!r}; give columns and transforms "
                f"separated by commas, e.g. {DEFAULT_PARTITIONING}, or none"
            )
        if m.group("i"):
            out.append(PartitionField(m.group("i")))
            continue
        transform = m.group("t").lower()
        if transform not in TRANSFORMS:
            raise TargetError(
                f"--partition-by: unknown transform {m.group('t')!r} in {item.strip()!r}; "
                f"the transforms are {', '.join(TRANSFORMS)}"
            )
        out.append(PartitionField(m.group("c"), transform))
    names = [f.derived for f in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise TargetError(f"--partition-by: {', '.join(dup)} given twice")
    return tuple(out)


def partitioning_text(fields: tuple[PartitionField, ...]) -> str:
    """The option's text for ``fields`` (``none`` when there are none)."""
    return ",".join(f.text for f in fields) or "none"


# Iceberg catalog properties whose values messages show (URIs redacted)
SHOWN_PROPERTIES = ("type", "uri", "warehouse", "name")


@dataclass(frozen=True, repr=False)
class TableTarget:
    """Where and how a conversion writes a table.

    ``location`` is OUT: a local directory or a store URI. ``partitioning`` is None to use the
    table's own (or the default for a new table). ``table`` names an Iceberg table in its
    catalog (``namespace.name``; default ``kafkalog.<OUT's last path part>``); ``catalog`` is
    the embedded catalog's SQLite file (default ``OUT/catalog.db``); ``properties`` are
    PyIceberg catalog properties (any catalog: ``type=rest``, ``uri=...``; given, they replace
    the embedded catalog) or, for Delta, the store's storage options. ``mode``: ``append`` (each
    run adds what is new), ``error`` (refuse an existing table), ``overwrite`` (replace it)."""

    format: str
    location: str
    partitioning: tuple[PartitionField, ...] | None = None
    table: str | None = None
    catalog: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    mode: str = "append"

    def __repr__(self) -> str:  # properties may hold credentials: names only
        keys = ",".join(sorted(self.properties))
        return (
            f"TableTarget(format={self.format!r}, location={redact_uri(self.location)!r}, "
            f"table={self.table!r}, catalog={self.catalog!r}, properties=[{keys}], "
            f"mode={self.mode!r})"
        )

    def secrets(self) -> list[str]:
        """What messages never show, longest first (for :func:`~kafkalog_source.redact.scrub`):
        every property's value but the Iceberg catalog's ``type``, ``name``, ``uri`` and
        ``warehouse``, which are shown redacted, and what those URIs carry (a password, a
        ``?token=``); what OUT's URI carries."""
        shown = SHOWN_PROPERTIES if self.format == "iceberg" else ()
        found = {v for k, v in self.properties.items() if k not in shown and v}
        for k in ("uri", "warehouse"):
            found.update(uri_secrets(self.properties.get(k) or ""))
        found.update(uri_secrets(self.location))
        return sorted(found, key=lambda v: (-len(v), v))


__all__ = [
    "DEFAULT_NAMESPACE",
    "DEFAULT_PARTITIONING",
    "EMBEDDED_CATALOG",
    "FORMATS",
    "TRANSFORMS",
    "CommitUnknownError",
    "ConcurrentRunError",
    "PartitionField",
    "SchemaChangeError",
    "TableError",
    "TableTarget",
    "TargetError",
    "parse_partitioning",
    "partitioning_text",
]
