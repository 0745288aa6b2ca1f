"""The values of options: the constants they choose among, and one parser per kind of value.

A parser is ``parser(name, value) -> typed value``: ``name`` is the option's name as the user
gave it (for the message), ``value`` a string (as Spark passes it) or a Python value. A
malformed value raises :class:`~kafkalog_source.errors.OptionError` naming the option. The
return annotation of an option's parser is the type of its :class:`~.model.ReadOptions` field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from ..errors import OptionError
from ..selection import java_regex

MiB = 1024 * 1024
# Arrow ``binary`` columns, the type Spark takes from a Python data source, have 32-bit offsets:
# one record batch holds at most 2 GiB - 1 bytes of keys (or values, or header values). The reader
# hands over a record batch at 16 MiB of data, so one Kafka batch of up to this size always fits.
MAX_BATCH_BYTES_LIMIT = 1024 * MiB
# remoteConcurrency's default: the requests a read of many remote files keeps in flight at once
DEFAULT_REMOTE_CONCURRENCY = 16

EARLIEST = -2
LATEST = -1

MODES = ("FAILFAST", "DROPMALFORMED", "PERMISSIVE")
# offsetGaps: how a gap between batches or segments is judged (planning/evidence.py)
OFFSET_GAPS = ("auto", "compacted", "loss")
# replicas: the same topic-partition in several log directories (planning/replicas.py)
REPLICAS = ("error", "separate", "merge")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
# redpanda: how Redpanda segments read (layout/redpanda.py)
REDPANDA_MODES = ("kafka", "raw")
# startingOffsetsByTimestampStrategy: a starting time no record reaches (Spark's Kafka source)
NO_TIME_MATCH = ("error", "latest")
# decode: Kafka's internal topics as typed tables (arrow/internal.py, format/messages/)
DECODES = (
    "raw",
    "consumer_offsets",
    "transaction_state",
    "cluster_metadata",
    "remote_log_metadata",
    "share_group_state",
    "auto",
)

# valueFormat / keyFormat: payloads decoded (payloads/)
PAYLOAD_FORMATS = ("raw", "avro", "protobuf", "json", "registry")
PAYLOAD_AS = ("struct", "json")
# subject name strategies, as Confluent's serializers name them (short forms accepted)
SUBJECT_STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")

# (topic, partition) -> offset or timestamp; topic None means "any topic" (global bound)
PartitionMap = dict[tuple[str, int], int]
# parser(name, value) -> the typed value; raises OptionError
Parser = Callable[[str, Any], Any]


def boolean(name: str, v: Any) -> bool:
    """``true`` or ``false`` (any case), or a bool."""
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    raise OptionError(f"option {name!r}: expected true or false, got {v!r}")


def integer(name: str, v: Any, minimum: int | None = None) -> int:
    """An integer (a string of digits, or a whole number), at least ``minimum`` when given."""
    if isinstance(v, bool):
        raise OptionError(f"option {name!r}: expected an integer, got {v!r}")
    try:
        out = int(v.strip()) if isinstance(v, str) else int(v)
    except (TypeError, ValueError):
        raise OptionError(f"option {name!r}: expected an integer, got {v!r}") from None
    if isinstance(v, float) and v != out:
        raise OptionError(f"option {name!r}: expected an integer, got {v!r}")
    if minimum is not None and out < minimum:
        raise OptionError(f"option {name!r}: must be >= {minimum}, got {out}")
    return out


_SIZE_UNITS = {
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "m": MiB,
    "mb": MiB,
    "g": 1024 * MiB,
    "gb": 1024 * MiB,
}


def size(name: str, v: Any) -> int:
    """Bytes as an integer or with a unit suffix (``128m``, ``4MB``), like Spark's byte configs."""
    if isinstance(v, str):
        s = v.strip().lower()
        for unit in sorted(_SIZE_UNITS, key=len, reverse=True):
            if s.endswith(unit) and s[: -len(unit)].strip().isdigit():
                return integer(name, s[: -len(unit)], 1) * _SIZE_UNITS[unit]
    return integer(name, v, 1)


def max_batch_bytes(name: str, v: Any) -> int:
    """``maxBatchBytes``: a size of at most :data:`MAX_BATCH_BYTES_LIMIT` (1g)."""
    n = size(name, v)
    if n > MAX_BATCH_BYTES_LIMIT:
        raise OptionError(
            f"option {name!r}: {v!r} is above the maximum of 1g ({MAX_BATCH_BYTES_LIMIT} bytes): "
            "Arrow binary columns (32-bit offsets, as Spark requires) hold at most 2 GiB per "
            "record batch, and one Kafka batch must fit in one"
        )
    return n


def choice(name: str, v: Any, choices: tuple[str, ...], upper: bool) -> str:
    """One of ``choices``, compared in upper case (``upper``) or lower case."""
    s = str(v).strip()
    s = s.upper() if upper else s.lower()
    if s not in choices:
        raise OptionError(f"option {name!r}: expected one of {', '.join(choices)}, got {v!r}")
    return s


def subject_strategy(name: str, v: Any) -> str:
    """A subject name strategy, by its full name or a short form (``topic``, ``record``,
    ``topic_record``)."""
    text = str(v).strip()
    short = {
        "topic": "TopicNameStrategy",
        "record": "RecordNameStrategy",
        "topic_record": "TopicRecordNameStrategy",
        "topicrecord": "TopicRecordNameStrategy",
    }
    for full in SUBJECT_STRATEGIES:
        if text.lower() in (full.lower(), full.lower().removesuffix("namestrategy")):
            return full
    if text.lower() in short:
        return short[text.lower()]
    raise OptionError(
        f"option {name!r} must be one of {', '.join(SUBJECT_STRATEGIES)} (or topic, record, "
        f"topic_record), got {text!r}"
    )


def schema_version(name: str, v: Any) -> int | None:
    """``latest`` (None) or a version number >= 1."""
    if isinstance(v, str) and v.strip().lower() == "latest":
        return None
    return integer(name, v, 1)


def text(name: str, v: Any) -> str:
    """A string, trimmed, not empty."""
    text = str(v).strip()
    if not text:
        raise OptionError(f"option {name!r} must not be empty")
    return text


def partition_json(
    name: str,
    v: Any,
    allow_special: bool,
    forbid: int | None = None,
    value: Any = integer,
) -> PartitionMap:
    """A per-partition JSON map. ``allow_special`` admits -2 (earliest) and -1 (latest), except
    ``forbid``: the one of them a batch read cannot use (Spark's Kafka source rejects it too).
    ``value(name, v)`` parses each value (an integer by default)."""
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except json.JSONDecodeError as e:
            raise OptionError(f"option {name!r}: not valid JSON ({e.msg}): {v!r}") from None
    if not isinstance(v, dict):
        raise OptionError(f'option {name!r}: expected JSON like {{"topic":{{"0":23}}}}')
    out: PartitionMap = {}
    for topic, parts in v.items():
        if not isinstance(parts, dict):
            raise OptionError(f"option {name!r}: topic {topic!r} must map partitions to values")
        for p, val in parts.items():
            part = integer(f"{name}[{topic}]", p, 0)
            num = value(f"{name}[{topic}][{p}]", val)
            if num < 0 and not (allow_special and num in (EARLIEST, LATEST)):
                raise OptionError(
                    f"option {name!r}: {topic}-{part}: {num} is not an offset"
                    + (" (-2 = earliest, -1 = latest)" if allow_special else "")
                )
            if forbid is not None and num == forbid:
                which = "latest (-1)" if forbid == LATEST else "earliest (-2)"
                raise OptionError(
                    f"option {name!r}: {topic}-{part}: {which} is not allowed for batch reads"
                )
            out[(str(topic), part)] = num
    return out


def offsets(name: str, v: Any) -> str | PartitionMap:
    """``startingOffsets`` / ``endingOffsets``: ``earliest``, ``latest`` or a per-partition JSON
    map (what a batch read refuses is refused here, naming it)."""
    if isinstance(v, str) and v.strip().lower() in ("earliest", "latest"):
        s = v.strip().lower()
        # startingOffsets=latest is for streams only: the batch planner refuses it (check_batch)
        if name == "endingOffsets" and s == "earliest":
            raise OptionError("option 'endingOffsets': 'earliest' is not allowed for batch reads")
        return s
    forbid = None if name == "startingOffsets" else EARLIEST  # latest (-1): streams only
    return partition_json(name, v, allow_special=True, forbid=forbid)


def timestamp_ms(name: str, v: Any) -> float:
    """A time as epoch milliseconds, or an ISO-8601 string (UTC when no zone is given)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, datetime):
        dt = v
    else:
        s = str(v).strip()
        try:
            return float(int(s))
        except ValueError:
            pass
        try:
            dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
        except ValueError:
            raise OptionError(
                f"option {name!r}: expected epoch milliseconds or an ISO-8601 time, got {v!r}"
            ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp() * 1000.0


def timestamp_bound(name: str, v: Any, minimum: int | None = None) -> int:
    """A record-timestamp bound (``startingTimestamp``, ``endingTimestamp``, the values of the
    by-timestamp maps): whole epoch milliseconds, or an ISO-8601 date or time read as
    :func:`timestamp_ms` reads ``modifiedBefore`` (UTC when no zone is given). A time with
    finer digits is rounded up to the next millisecond: Kafka's timestamps are whole
    milliseconds, so "at or after" it selects the same records."""
    if isinstance(v, (int, float)) or (isinstance(v, str) and re.fullmatch(r"\s*-?[0-9]+\s*", v)):
        return integer(name, v, minimum)  # epoch ms (a bool or a fractional number is refused)
    return integer(name, math.ceil(timestamp_ms(name, v)), minimum)


def topic_list(name: str, v: Any) -> tuple[str, ...]:
    """``subscribe``: topics, comma-separated (or a list), trimmed, empty names dropped."""
    items = v.split(",") if isinstance(v, str) else [str(t) for t in v]
    topics = tuple(sorted({t.strip() for t in items if t.strip()}))
    if not topics:
        raise OptionError(
            f"No topics to subscribe to as specified value for option {name!r} is {str(v)!r}"
        )
    return topics


def topic_pattern(name: str, v: Any) -> str:
    """``subscribePattern``: a Java regular expression, translated once to check it."""
    pattern = str(v).strip()
    if not pattern:
        raise OptionError(
            f"Pattern to subscribe is empty as specified value for option {name!r} is {v!r}"
        )
    java_regex(pattern)  # OptionError for what kafkalog cannot translate, saying what
    return pattern


def assignment(name: str, v: Any) -> tuple[tuple[str, int], ...]:
    """``assign``: JSON ``{"topicA":[0,1],"topicB":[2,4]}`` (or such a dict)."""
    example = '{"topicA":[0,1],"topicB":[0,1]}'
    if isinstance(v, str):
        if not v.strip().startswith("{"):
            raise OptionError(
                f"No topicpartitions to assign as specified value for option {name!r} is {v!r}"
            )
        try:
            v = json.loads(v)
        except json.JSONDecodeError:
            raise OptionError(f"option {name!r}: expected e.g. {example}, got {v!r}") from None
    ok = isinstance(v, dict) and all(
        isinstance(parts, list)
        and all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts)
        for parts in v.values()
    )
    if not ok:
        raise OptionError(f"option {name!r}: expected e.g. {example}, got {v!r}")
    return tuple(sorted({(str(t), p) for t, parts in v.items() for p in parts}))


_TIME_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000}
_TIME_UNITS_MS.update({"h": 3_600_000, "d": 86_400_000})


def duration_ms(name: str, v: Any) -> int:
    """A duration as Spark's ``timeStringAsMs`` reads it: an integer with a unit (``us``,
    ``ms``, ``s``, ``m`` or ``min``, ``h``, ``d``), milliseconds without one."""
    m = re.fullmatch(r"([0-9]+)([a-z]+)?", str(v).strip().lower())
    if m is None or (m.group(2) is not None and m.group(2) not in _TIME_UNITS_MS):
        raise OptionError(
            f"option {name!r}: {v!r}: time must be specified as seconds (s), milliseconds (ms), "
            "microseconds (us), minutes (m or min), hour (h), or day (d). E.g. 50s, 100ms, or "
            "250us"
        )
    return int(int(m.group(1)) * _TIME_UNITS_MS[m.group(2) or "ms"])


def positive(name: str, v: Any) -> int:
    """An integer > 0, refused as Spark's Kafka source words it."""
    n = integer(name, v)
    if n <= 0:
        raise OptionError(f"option {name!r} must be positive, got {n}")
    return n


def one_of(choices: tuple[str, ...], upper: bool = False) -> Parser:
    """The parser of an option whose value is one of ``choices`` (see :func:`choice`)."""

    def parse(name: str, v: Any) -> str:
        return choice(name, v, choices, upper)

    return parse


def at_least(minimum: int) -> Parser:
    """The parser of an integer option of at least ``minimum``."""

    def parse(name: str, v: Any) -> int:
        return integer(name, v, minimum)

    return parse


def timestamp(name: str, v: Any) -> int:
    """A record-timestamp bound of at least 0 (see :func:`timestamp_bound`)."""
    return timestamp_bound(name, v, 0)


def timestamp_map(name: str, v: Any) -> PartitionMap:
    """A per-partition JSON map of record-timestamp bounds."""
    return partition_json(name, v, False, value=timestamp_bound)


def size_or_zero(name: str, v: Any) -> int:
    """A size (see :func:`size`), or 0."""
    return size(name, v) if str(v) != "0" else 0


def as_string(name: str, v: Any) -> str:
    """The value as a string, as given."""
    return str(v)
