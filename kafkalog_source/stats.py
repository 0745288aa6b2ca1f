"""Counters a read keeps about what it decoded and, above all, what it skipped."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any

log = logging.getLogger("kafkalog")

MAX_PROBLEMS = 100  # messages in ``ReadStats.problems`` (the first events')
MAX_EVENTS = 10_000  # events kept in ``ReadStats.events``; the rest are counted only
MAX_LOGGED_PER_FILE = 5  # warnings logged per file; the rest are counted, and summed up once
# The attribute that marks the log record of a read's summary line (see log_summary): a command
# that sums up several reads itself leaves these out and prints its own.
SUMMARY_RECORD = "kafkalog_summary"

# Why bytes of a file were not decoded: the ReadStats field that counts each reason.
SKIP_REASONS = {
    "malformed": "malformed_bytes",
    "truncated tail": "truncated_tail_bytes",
    "zero tail": "zero_tail_bytes",
    "filtered": "filtered_bytes",
    "aborted": "aborted_bytes",
    "control": "control_bytes",
    "corrupt file": "corrupt_file_bytes",
    "missing file": "missing_file_bytes",
}


@dataclass(frozen=True)
class ReadEvent:
    """One error or skip of a read, as data: what the CLI and the Spark task summary read.

    ``kind`` is a key of :data:`SKIP_REASONS` for the skips that are counted there ("malformed",
    "truncated tail", "zero tail", "corrupt file", "missing file"), "missing offsets" (offsets
    the archive should hold and does not: ``base_offset`` is the first of them and
    ``last_offset`` the last), or "missing path" / "swap file" (discovery). ``message`` is the
    line that is logged.
    """

    kind: str
    reason: str
    path: str | None = None
    position: int | None = None  # byte position in the file, when known
    base_offset: int | None = None  # of the batch, when known
    bytes: int = 0  # bytes not decoded because of it (0 when counted elsewhere or unknown)
    message: str = ""
    last_offset: int | None = None  # "missing offsets": the last of them

    @property
    def detail(self) -> str:
        """Position, base offset and reason, without the path (as errors print them)."""
        parts = []
        if self.position is not None:
            parts.append(f"byte {self.position}")
        if self.base_offset is not None:
            parts.append(f"batch baseOffset {self.base_offset}")
        return ": ".join([*parts, self.reason])


@dataclass
class ReadStats:
    """What one read (a split, a file, or a whole ``read_table``) saw. Nothing is skipped silently.

    Byte accounting: every byte of every range read (whole files unless offset or timestamp
    bounds narrowed the plan) is counted once, in ``bytes_total``, and then either as decoded
    (``bytes_decoded``: batches walked into rows) or under one skip reason (see
    :data:`SKIP_REASONS` and :meth:`skipped_bytes_by_reason`), so that
    ``bytes_decoded + sum(skipped_bytes_by_reason().values()) == bytes_total``.
    """

    segments: int = 0  # files read, each counted once (by the read of its first piece)
    pieces: int = 0  # ranges read of files that another range counts (a file cut into pieces)
    batches: int = 0  # batches decoded (one the mode skips counts as a malformed batch only)
    # data records read (returned as rows); control records (transaction markers, KRaft
    # records) are never counted here: returned rows = records + control_records
    records: int = 0
    control_records: int = 0  # control records returned as rows (includeControlRecords)
    bytes_read: int = 0  # bytes of whole batches the framing scan went over
    control_batches: int = 0
    aborted_batches: int = 0
    # DROPMALFORMED / PERMISSIVE / ignoreCorruptFiles
    malformed_batches: int = 0
    malformed_bytes: int = 0
    corrupt_files: int = 0
    missing_files: int = 0
    # file tails
    truncated_tails: int = 0
    zero_tails: int = 0
    # of those, tails of segments their format preallocates (Redpanda's): where the data ends,
    # counted (bytes under "zero tail") but not a reason to warn
    preallocated_tails: int = 0
    tail_bytes: int = 0  # truncated_tail_bytes + zero_tail_bytes
    # byte accounting
    bytes_total: int = 0
    bytes_decoded: int = 0
    truncated_tail_bytes: int = 0
    zero_tail_bytes: int = 0
    filtered_bytes: int = 0  # batches outside the offset/timestamp bounds or pushed filters
    aborted_bytes: int = 0  # read_committed: batches of aborted transactions
    control_bytes: int = 0  # control batches not asked for (includeControlRecords=false)
    corrupt_file_bytes: int = 0  # ignoreCorruptFiles: the rest of a file after the damage
    # planned bytes of a file that disappeared: ignoreMissingFiles, or a stream's failOnDataLoss=false
    missing_file_bytes: int = 0
    # offsets the archive should hold and does not (empty, cut or missing segment files, found
    # from the partition's own evidence: indexes, segment names, checkpoints); see events
    # of kind "missing offsets" for which and why
    missing_offsets: int = 0
    missing_ranges: int = 0
    # storage: what the byte sources fetched (read-ahead included) and the requests they made
    source_bytes: int = 0
    source_requests: int = 0
    listing_requests: int = 0  # remote listing and metadata calls made by discovery
    # Redpanda: partitions of Redpanda's own namespaces (kafka_internal, redpanda) found and
    # not read (redpanda=kafka; redpanda=raw reads them)
    redpanda_internal_partitions: int = 0
    unlogged_problems: int = 0  # problems counted and kept, but not logged (per-file cap)
    events_dropped: int = 0  # events past MAX_EVENTS: counted, not kept
    # decode=: records of internal topics that did not decode (DROPMALFORMED: dropped;
    # PERMISSIVE: kept with their bytes and the error); events of kind "undecodable record"
    undecodable_records: int = 0
    # decode=: records of a type or version the pinned Kafka specs do not define, kept in
    # every mode as rows with their bytes (record_type unknown:...); events of kind
    # "unknown record" (only the first of a read is logged as a warning)
    unknown_records: int = 0
    # valueFormat/keyFormat: keys or values that did not decode (no wire-format prefix, an id
    # absent from the schemas, bytes that do not parse); events of kind "undecodable payload"
    undecodable_payloads: int = 0
    # valueFormat/keyFormat: records of the _schemas topic the registry could not read,
    # skipped as it skips them (not under FAILFAST, which refuses them)
    skipped_schema_records: int = 0
    # work: bytes examined looking for where batches with damaged length fields really end
    resync_bytes: int = 0
    events: list[ReadEvent] = field(default_factory=list)
    _logged: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def record(self, event: ReadEvent, level: int = logging.WARNING, capped: bool = True) -> None:
        """Keep ``event`` and log its message, unless ``capped`` and its file already had
        ``MAX_LOGGED_PER_FILE`` problems logged (see :meth:`end_file`)."""
        if capped and event.path is not None:
            n = self._logged.get(event.path, 0)
            self._logged[event.path] = n + 1
            if n >= MAX_LOGGED_PER_FILE:
                self.unlogged_problems += 1
                level = logging.DEBUG
        log.log(level, event.message)
        if len(self.events) < MAX_EVENTS:
            self.events.append(event)
        else:
            self.events_dropped += 1

    def events_of(self, *kinds: str) -> list[ReadEvent]:
        """The kept events of these kinds, in order."""
        return [e for e in self.events if e.kind in kinds]

    @property
    def problems(self) -> list[str]:
        """The messages of the first 100 events."""
        return [e.message for e in self.events[:MAX_PROBLEMS]]

    def end_file(self, path: str) -> None:
        """Log how many problems of ``path`` were not logged, once the file has been read."""
        n = self._logged.pop(path, 0)
        if n > MAX_LOGGED_PER_FILE:
            log.warning(
                "%s: %d more problems not logged (the first %d were; all are counted in ReadStats)",
                path,
                n - MAX_LOGGED_PER_FILE,
                MAX_LOGGED_PER_FILE,
            )

    def merge(self, other: ReadStats) -> None:
        """Add another read's counters into this one."""
        for name in self.__dataclass_fields__:
            if name == "events":
                room = max(MAX_EVENTS - len(self.events), 0)
                self.events.extend(other.events[:room])
                self.events_dropped += len(other.events[room:])
            elif name != "_logged":
                setattr(self, name, getattr(self, name) + getattr(other, name))

    def _interpretations(self, kind: str) -> str:
        """``decode=<interpretation>`` of the kept events of ``kind`` (their reasons start with
        the interpretation's name), e.g. ``decode=consumer_offsets``."""
        names = sorted({e.reason.split(" ", 1)[0] for e in self.events_of(kind)})
        return "decode=" + ",".join(names) if names else "decode="

    def skipped_bytes_by_reason(self) -> dict[str, int]:
        """Bytes not decoded, by reason (every reason, zero or not)."""
        return {reason: getattr(self, name) for reason, name in SKIP_REASONS.items()}

    @property
    def unaccounted_bytes(self) -> int:
        """Bytes neither decoded nor skipped under a reason: always 0 unless kafkalog has a bug."""
        return self.bytes_total - self.bytes_decoded - sum(self.skipped_bytes_by_reason().values())

    @property
    def skipped(self) -> bool:
        """Whether anything was left undecoded or is missing: malformed batches, tails, ignored
        files, offsets missing from the archive."""
        return bool(
            self.malformed_batches
            or self.truncated_tails
            or self.zero_tails > self.preallocated_tails
            or self.corrupt_files
            or self.corrupt_file_bytes
            or self.missing_files
            or self.missing_file_bytes
            or self.missing_ranges
            or self.undecodable_records
            or self.undecodable_payloads
            or self.skipped_schema_records
            or (self.bytes_total and self.unaccounted_bytes)
        )

    def to_dict(self) -> dict[str, Any]:
        """The counters and kept events as plain data (JSON), for a report that crosses
        processes (a Spark task's, see :mod:`kafkalog_source.spark.reports`)."""
        out: dict[str, Any] = {
            name: getattr(self, name)
            for name in self.__dataclass_fields__
            if name not in ("events", "_logged")
        }
        out["events"] = [asdict(e) for e in self.events]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReadStats:
        """The stats :meth:`to_dict` gave (names it does not know are ignored)."""
        known = set(cls.__dataclass_fields__) - {"events", "_logged"}
        stats = cls(**{k: v for k, v in data.items() if k in known})
        fields = set(ReadEvent.__dataclass_fields__)
        stats.events = [
            ReadEvent(**{k: v for k, v in e.items() if k in fields}) for e in data.get("events", [])
        ]
        return stats

    def _sources(self) -> str:
        """``from N segments``; for a read of pieces only (a Spark task whose pieces of a file
        another task counts), ``from P pieces of segments``."""
        if self.pieces and not self.segments:
            n = self.pieces
            return (
                f"from {n} piece{'' if n == 1 else 's'} of {'a segment' if n == 1 else 'segments'}"
            )
        return f"from {self.segments} segment{'' if self.segments == 1 else 's'}"

    def _control(self) -> str:
        """`` (N control records)`` when control records were read, else nothing."""
        n = self.control_records
        return f" ({n} control record{'' if n == 1 else 's'})" if n else ""

    def missing_offset_runs(self) -> list[tuple[str | None, int, int]]:
        """``(path, first, last)`` of each run of missing offsets kept in the events."""
        return [
            (e.path, e.base_offset, e.last_offset if e.last_offset is not None else e.base_offset)
            for e in self.events_of("missing offsets")
            if e.base_offset is not None
        ]

    def summary(self) -> str:
        """One line for logs."""
        parts = [
            f"{self.records} records{self._control()} in {self.batches} batches {self._sources()}"
        ]
        if self.bytes_total:
            parts.append(f"decoded {self.bytes_decoded} of {self.bytes_total} bytes")
        if self.malformed_batches:
            parts.append(
                f"skipped {self.malformed_batches} malformed batches ({self.malformed_bytes} bytes)"
            )
        if self.truncated_tails or self.zero_tails:
            parts.append(
                f"{self.truncated_tails} truncated and {self.zero_tails} zero-filled tails "
                f"({self.tail_bytes} bytes not decoded)"
            )
        if self.corrupt_files or self.missing_files or self.missing_file_bytes:
            parts.append(
                f"skipped {self.corrupt_files} corrupt files ({self.corrupt_file_bytes} bytes) "
                f"and {self.missing_files} missing ({self.missing_file_bytes} bytes)"
            )
        if self.redpanda_internal_partitions:
            n = self.redpanda_internal_partitions
            parts.append(
                f"skipped {n} partition{'' if n == 1 else 's'} of Redpanda's own namespaces "
                "(redpanda=raw reads them)"
            )
        if self.missing_ranges:
            parts.append(
                f"{self.missing_offsets} offset{'' if self.missing_offsets == 1 else 's'} "
                "missing from the archive in "
                f"{self.missing_ranges} range{'' if self.missing_ranges == 1 else 's'}"
            )
        if self.undecodable_records:
            parts.append(
                f"{self.undecodable_records} records that did not decode "
                f"({self._interpretations('undecodable record')})"
            )
        if self.unknown_records:
            parts.append(
                f"{self.unknown_records} records of types or versions the Kafka specs do not "
                f"know, kept raw ({self._interpretations('unknown record')})"
            )
        if self.undecodable_payloads:
            parts.append(
                f"{self.undecodable_payloads} keys or values that did not decode "
                "(valueFormat/keyFormat)"
            )
        if self.skipped_schema_records:
            parts.append(
                f"{self.skipped_schema_records} _schemas records the registry could not read, "
                "skipped"
            )
        wanted = {
            "filtered by bounds": self.filtered_bytes,
            "aborted": self.aborted_bytes,
            "control": self.control_bytes,
        }
        left_out = ", ".join(f"{v} {k}" for k, v in wanted.items() if v)
        if left_out:
            parts.append(f"bytes not asked for: {left_out}")
        if self.bytes_total and self.unaccounted_bytes:
            parts.append(f"{self.unaccounted_bytes} bytes unaccounted for (a kafkalog bug)")
        if self.unlogged_problems:
            parts.append(f"{self.unlogged_problems} problems not logged")
        return "; ".join(parts)


def log_summary(stats: ReadStats) -> None:
    """Log the summary line of a read that skipped or missed anything (a WARNING marked with
    :data:`SUMMARY_RECORD`); nothing for a clean read."""
    if stats.skipped:
        log.warning("kafkalog: %s", stats.summary(), extra={SUMMARY_RECORD: True})
