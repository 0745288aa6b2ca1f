"""A stream's offsets and their JSON, the form Spark checkpoints.

Offsets are per topic and partition, the next offset to read, shaped like those of Spark's Kafka
source (``{"orders": {"0": 1234, "1": 99}}``), with one more key for the last batches delivered:
per partition, the last offset and CRC of the batch holding the offset before the position
(``{"orders": {"0": 10}, "kafkalog:lastBatch": {"orders": {"0": [9, 3735928559]}}}``), which
a query that starts or restarts from these offsets checks (:mod:`.rewrites`); and, under
``maxFilesPerTrigger``, the last partition served a file (``{"kafkalog:filesTurn": ["orders",
1]}``), where the rotation of :mod:`.admission` goes on after a restart. Spark checkpoints the
JSON as it is. The extra keys are not Kafka topic names (``:`` is not allowed in one).
"""

from __future__ import annotations

from typing import Any

from ..errors import OptionError

PartitionKey = tuple[str, int]
Offsets = dict[PartitionKey, int]

# (last offset, CRC) of the batch holding the offset before a partition's position: the last
# batch the stream delivered there, checked when a query starts from that position
BatchPrint = tuple[int, int]
Prints = dict[PartitionKey, BatchPrint]
# the offset JSON's key for them: not a Kafka topic name (":" is not allowed in one)
LAST_BATCH_KEY = "kafkalog:lastBatch"
# ... and for the last partition served a file under maxFilesPerTrigger
FILES_TURN_KEY = "kafkalog:filesTurn"
# every key of kafkalog's own starts so
OWN_KEY_PREFIX = "kafkalog:"


def offsets_to_json(
    offsets: Offsets, prints: Prints | None = None, turn: PartitionKey | None = None
) -> dict[str, Any]:
    """``{(topic, partition): offset}`` → ``{"topic": {"partition": offset}}`` (sorted), with
    ``prints`` their last batches under :data:`LAST_BATCH_KEY`:
    ``{"kafkalog:lastBatch": {"topic": {"partition": [last offset, crc]}}}``, and with ``turn``
    the last partition served a file under :data:`FILES_TURN_KEY`: ``["topic", partition]``."""
    out: dict[str, Any] = {}
    for (topic, part), off in sorted(offsets.items()):
        out.setdefault(topic, {})[str(part)] = int(off)
    if prints:
        last: dict[str, dict[str, list[int]]] = {}
        for (topic, part), (last_offset, crc) in sorted(prints.items()):
            last.setdefault(topic, {})[str(part)] = [int(last_offset), int(crc)]
        out[LAST_BATCH_KEY] = last
    if turn is not None:
        out[FILES_TURN_KEY] = [turn[0], int(turn[1])]
    return out


def offsets_from_json(data: Any) -> Offsets:
    """The offsets of :func:`offsets_to_json`'s JSON (kafkalog's own keys are left out);
    OptionError for anything else."""
    out: Offsets = {}
    if not isinstance(data, dict):
        raise OptionError(f"stream offsets must be a JSON object, got {data!r}")
    for topic, parts in data.items():
        if str(topic).startswith(OWN_KEY_PREFIX):
            continue
        if not isinstance(parts, dict):
            raise OptionError(f"stream offsets of topic {topic!r} must be an object")
        for part, off in parts.items():
            try:
                out[(str(topic), int(part))] = int(off)
            except (TypeError, ValueError):
                raise OptionError(
                    f"stream offset {topic}-{part}: not an integer: {off!r}"
                ) from None
    return out


def prints_from_json(data: Any) -> Prints:
    """The last batches of :func:`offsets_to_json`'s JSON (none in offsets written before they
    were kept); OptionError when they are malformed."""
    out: Prints = {}
    last = data.get(LAST_BATCH_KEY) if isinstance(data, dict) else None
    if last is None:
        return out
    if not isinstance(last, dict):
        raise OptionError(f"stream offsets: {LAST_BATCH_KEY} must be an object, got {last!r}")
    for topic, parts in last.items():
        if not isinstance(parts, dict):
            raise OptionError(f"stream offsets: {LAST_BATCH_KEY} of topic {topic!r}: not an object")
        for part, value in parts.items():
            try:
                last_offset, crc = value
                out[(str(topic), int(part))] = (int(last_offset), int(crc))
            except (TypeError, ValueError):
                raise OptionError(
                    f"stream offsets: {LAST_BATCH_KEY} {topic}-{part}: not [last offset, crc]: "
                    f"{value!r}"
                ) from None
    return out


def turn_from_json(data: Any) -> PartitionKey | None:
    """The last partition served a file, from :func:`offsets_to_json`'s JSON (None when it has
    none); OptionError when it is malformed."""
    value = data.get(FILES_TURN_KEY) if isinstance(data, dict) else None
    if value is None:
        return None
    try:
        topic, part = value
        if not isinstance(topic, str):
            raise TypeError
        return (topic, int(part))
    except (TypeError, ValueError):
        raise OptionError(
            f"stream offsets: {FILES_TURN_KEY} is not [topic, partition]: {value!r}"
        ) from None


__all__ = [
    "FILES_TURN_KEY",
    "LAST_BATCH_KEY",
    "BatchPrint",
    "Offsets",
    "PartitionKey",
    "Prints",
    "offsets_from_json",
    "offsets_to_json",
    "prints_from_json",
    "turn_from_json",
]
