"""``decode=``: the record batches of Kafka's internal topics turned into typed tables.

The compiled kernels decode the batches as for any topic (the raw key and value of every
record, control records' too); then each record is decoded here, in Python, one record at a
time, by the data-driven decoder of :mod:`..format.messages`. That costs microseconds per record:
fine for internal topics, which are small (compacted; ``bench/internal.py`` measures it).

A record of a type or version the pinned Kafka specs do not define (a newer Kafka's, or a
left over of an aborted upgrade) is kept in every mode: a row with its raw ``key``/``value``,
``record_type`` ``unknown:<type>`` (``unknown:<name>`` for an unknown version of a known type,
whose key columns are filled), the reason in ``error``; counted in
``ReadStats.unknown_records`` (events of kind "unknown record", the first of a read logged as a
warning, the others at debug level).

A record of a known type and version that does not decode (bytes that do not parse, or a
value that parses but does not fit its column: a version
or an int32 field past 2^31 - 1, a millisecond timestamp whose microseconds pass 64 bits, a
KRaft snapshot file named with an epoch past int32) goes through ``mode``: FAILFAST raises
:class:`~..errors.UndecodableRecordError` naming the file, the record's own byte (and the byte
where its key or value stops parsing) in an uncompressed batch, else the byte of its
(compressed) batch, the offset, the record type and version; DROPMALFORMED drops it and counts it in
``ReadStats.undecodable_records`` (events of kind "undecodable record"); PERMISSIVE keeps the
row with its raw ``key``/``value``, the ``error`` and what is known of its type and version.

Control records of an internal topic are decoded like the others, every one of them: a KRaft
control record, or one of a control type the specs do not define, is a row; a record whose key
or value does not parse (a key null or shorter than 4 bytes) goes through ``mode``; only a
record that decodes as a transaction marker is left out, unless ``includeControlRecords``. The
control records of a topic ``decode=auto`` reads raw are as a raw read has them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from ..arrow.internal import TIMESTAMP_COLUMNS, TYPED_TYPES, DecodedSchema, decoded_schema
from ..arrow.schema import Projection
from ..errors import OptionError, UndecodableRecordError
from ..format.batch import LOG_OVERHEAD, locate_record, offset_field, size_field
from ..format.messages.decode import to_json
from ..format.messages.topics import (
    MARKERS,
    TOPIC_INTERPRETATION,
    RecordDecodeError,
    decode_record,
)
from ..format.names import snapshot_id_of
from ..layout.files import open_source
from ..options import ReadOptions
from ..stats import ReadEvent, ReadStats

# what the raw read produces for decode=
RAW_PROJECTION = Projection(
    (
        "rawKey",
        "rawValue",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "control",
        "segmentPath",
        "batchPosition",
    )
)
KRAFT_CONTROL = frozenset(
    ("LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER", "KRAFT_VERSION", "KRAFT_VOTERS")
)
# the record types of decoded transaction markers: rows only with includeControlRecords
TRANSACTION_MARKERS = frozenset(MARKERS.values())

_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
MAX_MS = _INT64[1] // 1000  # a millisecond timestamp whose microseconds fit 64 bits
_CHECKED_TYPES = {
    **TYPED_TYPES,
    "record_version": pa.int32(),
    "snapshot_end_offset": pa.int64(),
    "snapshot_end_epoch": pa.int32(),
}


def misfit(name: str, value: Any) -> str | None:
    """Why ``value`` does not fit the column ``name`` (None: it fits, or is null). Checked
    before any conversion, so that a value valid on the wire but out of its column's range is
    an undecodable record, not a failed read."""
    if value is None:
        return None
    t = _CHECKED_TYPES.get(name)
    if t is None:
        return None
    if name in TIMESTAMP_COLUMNS:
        if isinstance(value, int) and -MAX_MS <= value <= MAX_MS:
            return None
        return (
            f"{name} {value} (milliseconds) is out of the range of a timestamp column "
            f"(microseconds in 64 bits: |ms| <= {MAX_MS})"
        )
    if pa.types.is_list(t):
        bad = next((v for v in value if misfit_int(v, _INT32)), None)
        return None if bad is None else f"{name} holds {bad}, out of the int32 range"
    if t == pa.int32() or t == pa.int64():
        if misfit_int(value, _INT32 if t == pa.int32() else _INT64):
            return f"{name} {value} is out of the {'int32' if t == pa.int32() else 'int64'} range"
    return None


def misfit_int(value: Any, bounds: tuple[int, int]) -> bool:
    """Whether ``value`` is not an integer within ``bounds`` (null fits)."""
    if value is None:
        return False
    return (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not (bounds[0] <= value <= bounds[1])
    )


def raw_options(options: ReadOptions) -> ReadOptions:
    """The options of the raw read under a decoded one: control records kept (KRaft's are rows
    of ``cluster_metadata``; transaction markers are dropped here unless asked for)."""
    return options.replace(include_control_records=True)


def output_schema(
    options: ReadOptions, columns: list[str] | tuple[str, ...] | None
) -> DecodedSchema:
    """The decoded schema for these options, or ``columns`` of it (OptionError naming an
    unknown column and listing those there are)."""
    if isinstance(columns, str):
        raise OptionError(f"columns must be a list of column names, got the string {columns!r}")
    try:
        return decoded_schema(options.decode, columns)
    except KeyError as e:
        every = decoded_schema(options.decode).names
        raise OptionError(
            f"unknown column {e.args[0]!r}; with decode={options.decode} the columns are: "
            f"{', '.join(every)}"
        ) from None


class InternalDecoder:
    """Turns raw record batches (:data:`RAW_PROJECTION`) into ``schema``'s batches."""

    def __init__(self, options: ReadOptions, schema: DecodedSchema, stats: ReadStats) -> None:
        self.options = options
        self.schema = schema
        self.stats = stats
        self.mode = options.mode
        self.keep_markers = options.include_control_records
        self._snapshots: dict[str, tuple[int, int] | None] = {}

    def snapshot(self, path: str) -> tuple[int, int] | None:
        """The KRaft snapshot id ``(end offset, epoch)`` of the file ``path`` (KRaft's
        bootstrap.checkpoint: Kafka's bootstrap snapshot id), None for a segment (discovery
        reads a ``.checkpoint`` file only as a snapshot)."""
        if path not in self._snapshots:
            self._snapshots[path] = snapshot_id_of(path)
        return self._snapshots[path]

    def interpretation(self, topic: str) -> str | None:
        """How records of ``topic`` are decoded (None: raw)."""
        if self.options.decode == "auto":
            return TOPIC_INTERPRETATION.get(topic)
        return self.options.decode

    def batch(self, raw: pa.RecordBatch) -> pa.RecordBatch:
        """Decode one raw batch."""
        cols = {}
        for i, name in enumerate(raw.schema.names):
            col = raw.column(i)
            if name == "timestamp":  # microseconds as they are: a datetime stops at year 9999
                col = col.cast(pa.int64())
            cols[name] = col.to_pylist()
        rows: dict[str, list[Any]] = {n: [] for n in self.schema.names}
        for i in range(raw.num_rows):
            self._row(cols, i, rows)
        arrays = []
        for f in self.schema.schema:
            values = rows[f.name]
            if f.name in TIMESTAMP_COLUMNS:
                values = [v * 1000 if v is not None else None for v in values]
            arrays.append(pa.array(values, f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema.schema)

    def _row(self, cols: dict[str, list[Any]], i: int, rows: dict[str, list[Any]]) -> None:
        control = cols["control"][i]
        ctype = control["type"] if control is not None else None
        topic = cols["topic"][i]
        interp = self.interpretation(topic)
        if (
            interp is None
            and control is not None
            and ctype not in KRAFT_CONTROL
            and not self.keep_markers
        ):
            # decode=auto, a topic read raw: its control records as a raw read without
            # includeControlRecords has them (not returned)
            return
        key, value = cols["rawKey"][i], cols["rawValue"][i]
        out: dict[str, Any] = {
            "topic": topic,
            "partition": cols["partition"][i],
            "offset": cols["offset"][i],
            "timestamp": cols["timestamp"][i],
            "key": key,
            "value": value,
        }
        snapshot = self.snapshot(cols["segmentPath"][i])
        if snapshot is not None:
            out["snapshot_end_offset"], out["snapshot_end_epoch"] = snapshot
        if interp is not None:
            try:
                d = decode_record(interp, key, value, control=control is not None)
                self._check_fit(d, snapshot)
            except RecordDecodeError as e:
                if snapshot is not None and self._snapshot_misfit(snapshot) is not None:
                    del out["snapshot_end_offset"], out["snapshot_end_epoch"]
                if not self._undecodable(e, cols, i, interp, out):
                    return
            else:
                if d.record_type in TRANSACTION_MARKERS and not self.keep_markers:
                    return  # a transaction marker, not asked for (includeControlRecords)
                out.update(d.typed)
                out.update(
                    record_type=d.record_type,
                    record_version=d.record_version,
                    tombstone=d.tombstone,
                )
                if d.unknown is None:
                    out["decoded"] = to_json(d.document())
                else:
                    out["error"] = d.unknown
                    self._unknown(d, cols, i, interp)
        else:  # decode=auto, another topic: as the raw schema has them
            if control is not None:
                out["key"] = out["value"] = None
            if snapshot is not None and (why := self._snapshot_misfit(snapshot)) is not None:
                del out["snapshot_end_offset"], out["snapshot_end_epoch"]
                e = RecordDecodeError(why, "value", -1)
                if not self._undecodable(e, cols, i, f"{topic} (read raw)", out):
                    return
        for name, values in rows.items():
            values.append(out.get(name))

    def _unknown(self, d: Any, cols: dict[str, list[Any]], i: int, interp: str) -> None:
        """Count a record of a type or version the specs do not know (its row is kept), and
        warn of the first of the read."""
        path, pos, offset = cols["segmentPath"][i], cols["batchPosition"][i], cols["offset"][i]
        reason = (
            f"{interp} record at offset {offset} (in the batch at this byte) is kept raw as "
            f"{d.record_type}: {d.unknown}"
        )
        first = self.stats.unknown_records == 0
        self.stats.unknown_records += 1
        message = f"{path}: byte {pos}: {reason}"
        if first:
            message += (
                " (a newer Kafka's record, or a left over of an aborted upgrade; every such "
                "record is counted in ReadStats.unknown_records, only the first is logged)"
            )
        self.stats.record(
            ReadEvent("unknown record", reason, path, pos, None, 0, message),
            level=logging.WARNING if first else logging.DEBUG,
            capped=False,
        )

    @staticmethod
    def _snapshot_misfit(snapshot: tuple[int, int]) -> str | None:
        """Why a KRaft snapshot file's id does not fit its columns (None: it does)."""
        for name, v in zip(("snapshot_end_offset", "snapshot_end_epoch"), snapshot, strict=True):
            why = misfit(name, v)
            if why is not None:
                return (
                    f"the KRaft snapshot file's name gives {why} (Kafka's Snapshots.parse "
                    "refuses such a name too)"
                )
        return None

    @staticmethod
    def _check_fit(d: Any, snapshot: tuple[int, int] | None) -> None:
        """Raise :class:`RecordDecodeError` when a value of the decoded record ``d`` (or the
        snapshot id of its file) does not fit its column (see :func:`misfit`)."""
        values = dict(d.typed)
        values["record_version"] = d.record_version
        if d.unknown is not None and misfit("record_version", d.record_version):
            d.record_version = None  # an unknown metadata record's version varint: not kept
            values["record_version"] = None
        whys = [misfit(name, v) for name, v in values.items()]
        if snapshot is not None:
            whys.append(InternalDecoder._snapshot_misfit(snapshot))
        for why in whys:
            if why is None:
                continue
            version = d.record_version if not misfit("record_version", d.record_version) else None
            raise RecordDecodeError(
                f"{why}: the record does not fit its columns", "value", -1, d.record_type, version
            )

    def _record_place(
        self, path: str, batch_pos: int, offset: int, e: RecordDecodeError
    ) -> tuple[int, str]:
        """Where the record that did not decode lies: ``(byte, words)``. The raw read hands
        over a record's batch position only (the kernels keep no record positions), so this
        reads the batch again, once, for the error: in an uncompressed batch, the record's own
        byte and the byte where its key or value stops parsing; in a compressed batch (or when
        the batch cannot be read again) the batch's byte, which with the offset is exact."""
        try:
            with open_source(path, self.options.store) as src:
                head = src.read(batch_pos, LOG_OVERHEAD)
                data = src.read(batch_pos, LOG_OVERHEAD + size_field(head))
            place = locate_record(data, offset - offset_field(data))
        except Exception:  # noqa: BLE001 - the error being raised is the one that matters
            place = None
        if place is None:
            return batch_pos, "in the batch at this byte"
        at = batch_pos + place.record
        part = place.key if e.part == "key" else place.value
        if part < 0 or e.position < 0:  # no stop byte: it parsed, and a value does not fit
            return at, f"the record at this byte, in the batch at byte {batch_pos}"
        return at, (
            f"the record at this byte, in the batch at byte {batch_pos}; its {e.part} stops "
            f"parsing at byte {batch_pos + part + e.position}"
        )

    def _undecodable(
        self, e: RecordDecodeError, cols: dict[str, list[Any]], i: int, interp: str, out: dict
    ) -> bool:
        """Apply ``mode`` to a record that did not decode; True: keep its row (PERMISSIVE)."""
        path, pos, offset = cols["segmentPath"][i], cols["batchPosition"][i], cols["offset"][i]
        rtype = e.record_type if e.record_type is not None else "unknown"
        version = "unknown" if e.version is None else e.version
        reason = (
            f"{interp} record at offset {offset} (in the batch at this byte) does not decode: "
            f"record type {rtype}, version {version}: {e.reason}"
        )
        if self.mode == "FAILFAST":
            at, where = self._record_place(path, pos, offset, e)
            raise UndecodableRecordError(
                f"{interp} record at offset {offset} ({where}) does not decode: record type "
                f"{rtype}, version {version}: {e.reason} (mode=DROPMALFORMED drops such "
                "records, mode=PERMISSIVE keeps them with their bytes and the error)",
                path,
                at,
            )
        self.stats.undecodable_records += 1
        self.stats.record(
            ReadEvent(
                "undecodable record",
                reason,
                path,
                pos,
                None,
                0,
                f"{path}: byte {pos}: {reason}",
            )
        )
        if self.mode == "DROPMALFORMED":
            return False
        out.update(
            record_type=None if e.record_type is None else str(e.record_type),
            record_version=None if misfit("record_version", e.version) else e.version,
            error=e.reason,
        )
        return True


def decode_batches(
    batches: Iterator[pa.RecordBatch], options: ReadOptions, schema: DecodedSchema, stats: ReadStats
) -> Iterator[pa.RecordBatch]:
    """Decode raw batches (of :data:`RAW_PROJECTION`) into ``schema``'s, in order."""
    decoder = InternalDecoder(options, schema, stats)
    for raw in batches:
        out = decoder.batch(raw)
        if out.num_rows:
            yield out
