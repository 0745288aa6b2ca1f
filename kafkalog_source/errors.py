"""The one error hierarchy of kafkalog.

Every failure caused by bad input raises a subclass of :class:`KafkaLogError`. Errors about data
name the file, the byte position in that file, the base offset of the batch (when known) and the
reason, so that a message alone is enough to find the bad bytes with ``xxd``.
"""

from __future__ import annotations


class KafkaLogError(Exception):
    """Base class of every error kafkalog raises on purpose."""


class OptionError(KafkaLogError, ValueError):
    """An unknown option, or an option with a malformed value.

    ``doc`` names where the reference documents the option (``docs/reference/options.md#...``,
    see :func:`kafkalog_source.options.doc_ref`); the message ends with "(see DOC)"."""

    def __init__(self, message: str = "", doc: str | None = None) -> None:
        self.doc = doc
        if doc and f"(see {doc})" not in message:
            message = f"{message} (see {doc})"
        super().__init__(message)


class PathError(KafkaLogError, FileNotFoundError):
    """A path that does not exist or holds no segment where one was required."""


class CorruptDataError(KafkaLogError):
    """Bytes that are not a valid Kafka log segment.

    Attributes ``path``, ``position`` (absolute byte offset in the file), ``base_offset`` (of the
    enclosing batch, or None) and ``reason`` are always set.
    """

    # where the next batch starts after a bad one whose framing is lost, when known (a damaged
    # length field whose batch CRC matches a shorter length): DROPMALFORMED reads on from there
    resume_at: int | None = None

    def __init__(
        self,
        reason: str,
        path: str | None = None,
        position: int | None = None,
        base_offset: int | None = None,
    ) -> None:
        self.reason = reason
        self.path = path
        self.position = position
        self.base_offset = base_offset
        super().__init__(self._format())

    def _format(self) -> str:
        where = self.path if self.path is not None else "<buffer>"
        parts = [where]
        if self.position is not None:
            parts.append(f"byte {self.position}")
        if self.base_offset is not None:
            parts.append(f"batch baseOffset {self.base_offset}")
        return f"{': '.join(parts)}: {self.reason}"

    def located(
        self, path: str | None, position: int | None, base_offset: int | None
    ) -> CorruptDataError:
        """Return a copy of this error of the same class with its location filled in."""
        err = type(self).__new__(type(self))
        CorruptDataError.__init__(
            err,
            self.reason,
            path if self.path is None else self.path,
            position if self.position is None else self.position,
            base_offset if self.base_offset is None else self.base_offset,
        )
        return err


class UndecodableRecordError(CorruptDataError):
    """A record of a Kafka internal topic that ``decode`` cannot decode: bytes of a known
    record type and version that do not parse as it, or values that do not fit their columns.
    A record type or version the pinned Kafka specs do not define is no error: it is kept as
    an ``unknown:`` row (counted in ``ReadStats.unknown_records``)."""


class SchemasRecordError(UndecodableRecordError):
    """A record of the Schema Registry's ``_schemas`` topic that the registry could not read
    (not JSON, a field of the wrong type, ...), under ``mode=FAILFAST``: names the file, the
    byte, the record's ``offset`` and why. The other modes skip it, as the registry does."""

    offset: int | None = None


class InvalidSchemaError(KafkaLogError, ValueError):
    """A registered schema that its format's own parser refuses (Avro's, Protobuf's, JSON
    Schema's: attributes of the wrong type, duplicate names, sizes, limits), or whose references
    the registry does not hold, where the read cannot do without it: the reader schema that
    types a column, or a schema file. Names the subject, version and schema id when known.

    A writer schema that does not validate is not this error: only the values written with it
    are undecodable (:class:`UndecodablePayloadError` under FAILFAST, counted otherwise)."""

    subject: str | None = None
    version: int | None = None
    schema_id: int | None = None


class UndecodablePayloadError(CorruptDataError):
    """A key or value that ``valueFormat``/``keyFormat`` cannot decode: no Schema Registry
    wire-format prefix, a schema id absent from the schemas, or bytes that do not parse under
    their schema. ``schema_id`` and ``offset`` say which."""

    schema_id: int | None = None
    offset: int | None = None


class ChecksumError(CorruptDataError):
    """A stored CRC (CRC-32C for v2 batches, CRC-32 for v0/v1 messages) does not match."""


class UnsupportedFormatError(CorruptDataError):
    """An unknown magic byte or compression codec, or a codec not allowed for the magic."""


class EncryptedSegmentError(UnsupportedFormatError):
    """A tiered-storage segment that its plugin encrypted: kafkalog cannot decrypt it (the error
    names the segment's manifest)."""


class DecompressionError(CorruptDataError):
    """A compressed payload failed to decompress, or decompresses past ``maxBatchBytes``."""


class RecordStructureError(CorruptDataError):
    """A batch whose framing or records are inconsistent: bad lengths, counts, or varints."""


class DataLossError(CorruptDataError):
    """``failOnDataLoss=true`` (a stream's default): offsets the archive held are missing (an
    empty or cut segment, a missing file, checkpoints past the log's end, a gap between
    batches, a rewritten segment). The message names the partition, the offsets and why."""

    def _format(self) -> str:
        if self.path is None and self.position is None:
            return self.reason  # the message names the partition and its files itself
        return super()._format()


class FileChangedError(CorruptDataError):
    """A segment file that shrank (Kafka truncated it, say) or changed while it was being read.

    It is a :class:`CorruptDataError`, so ``ignoreCorruptFiles=true`` counts the file as corrupt
    and keeps the rows decoded before the change.
    """


class StorageError(KafkaLogError, OSError):
    """A store that failed to serve bytes: names the URI, the byte range and the error that
    ended the read (after the retries, when a retry could fix it).

    Not a :class:`CorruptDataError`: the data may be fine, so ``ignoreCorruptFiles`` does not
    skip it; the task fails (and Spark retries it).
    """

    def __init__(self, reason: str, uri: str, start: int | None = None, end: int | None = None):
        self.reason = reason
        self.uri = uri
        self.start = start
        self.end = end
        where = uri if start is None else f"{uri}: bytes [{start}, {end})"
        super().__init__(f"{where}: {reason}")


class AccessDeniedError(StorageError, PermissionError):
    """A file this process may not read (its permissions), or an object the store's credentials
    may not read (or a store that got no credentials). Never retried: the message names the file
    and says what to change.

    A :class:`StorageError` and a ``PermissionError``.
    """


class ColumnLimitError(KafkaLogError):
    """One Arrow record batch would hold more than 2 GiB - 1 bytes in one binary column.

    Arrow ``binary`` (the type Spark accepts) has 32-bit offsets. The reader hands over a record
    batch before a column would overflow, so this is raised only for a single Kafka batch (or a
    PERMISSIVE row) that cannot fit in one record batch; ``maxBatchBytes`` (at most 1g) keeps that
    from happening.
    """
