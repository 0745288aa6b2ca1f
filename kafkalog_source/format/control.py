"""Control records (SEGMENT_SPEC §4.1): the one record of a v2 control batch. Its key is
``version:int16 | type:int16`` (:data:`~.names.CONTROL_TYPES`); a transaction marker's value is
``version:int16 | coordinatorEpoch:int32``."""

from __future__ import annotations

from .batch import read_varint

ABORT = 0
COMMIT = 1
CONTROL_KEY_SIZE = 4
MARKER_VALUE_SIZE = 6


def control_key(key: bytes) -> tuple[int, int] | None:
    """``(version, type)`` of a control record's key; None when it is shorter than 4 bytes."""
    if len(key) < CONTROL_KEY_SIZE:
        return None
    return int.from_bytes(key[0:2], "big", signed=True), int.from_bytes(
        key[2:4], "big", signed=True
    )


def marker_coordinator_epoch(value: bytes) -> int | None:
    """The coordinator epoch of a transaction marker's value; None when it is too short."""
    if len(value) < MARKER_VALUE_SIZE:
        return None
    return int.from_bytes(value[2:6], "big", signed=True)


def control_type(record: bytes | memoryview) -> int | None:
    """The type of the control record at the start of ``record`` (the record's bytes, from its
    length varint): 0 ABORT, 1 COMMIT, ...; None when its key cannot be read (fewer than 4
    bytes, malformed varints)."""
    end = len(record)
    _, p = read_varint(record, 0, end)  # record length
    if p < 0:
        return None
    _, p = read_varint(record, p + 1, end)  # attributes (1 byte), then timestampDelta
    if p < 0:
        return None
    _, p = read_varint(record, p, end)  # offsetDelta
    if p < 0:
        return None
    klen, p = read_varint(record, p, end)
    if p < 0 or klen < CONTROL_KEY_SIZE or p + CONTROL_KEY_SIZE > end:
        return None
    key = control_key(bytes(record[p : p + CONTROL_KEY_SIZE]))
    return None if key is None else key[1]
