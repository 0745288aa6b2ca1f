"""Reader options: parsed once, on the driver, into one typed, immutable object.

The same names and meanings serve ``spark.read.format("kafkalog").option(...)``, the Arrow API
(``iter_batches(path, **options)``) and the command line. Names are case-insensitive, as Spark's
are. Values may be strings (as Spark passes them) or Python values. An unknown name or a malformed
value raises :class:`~kafkalog_source.errors.OptionError` naming the option.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from .errors import OptionError
from .redact import MASK, query_names, redact_uri, scrub, secret_strings, show_value, uri_password
from .selection import java_regex

MiB = 1024 * 1024
# Arrow ``binary`` columns, the type Spark takes from a Python data source, have 32-bit offsets:
# one record batch holds at most 2 GiB - 1 bytes of keys (or values, or header values). The reader
# hands over a record batch at 16 MiB of data, so one Kafka batch of up to this size always fits.
MAX_BATCH_BYTES_LIMIT = 1024 * MiB

EARLIEST = -2
LATEST = -1

MODES = ("FAILFAST", "DROPMALFORMED", "PERMISSIVE")
# offsetGaps: how a gap between batches or segments is judged (planning/evidence.py)
OFFSET_GAPS = ("auto", "compacted", "loss")
# replicas: the same topic-partition in several log directories (planning/replicas.py)
REPLICAS = ("error", "separate", "merge")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
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


# Filesystem options (fs.<store>.<argument>), see transport/filesystems.py.
# URI scheme -> the store its fs.<store>.* options configure
STORE_OF_SCHEME = {
    "s3": "s3",
    "s3a": "s3",
    "s3n": "s3",
    "gs": "gs",
    "gcs": "gs",
    "abfs": "abfs",
    "abfss": "abfs",
    "hdfs": "hdfs",
    "viewfs": "hdfs",
}
NATIVE_STORES = ("s3", "gs", "abfs", "hdfs")

# The constructor arguments of pyarrow's filesystems (pyarrow 15-26) that are not strings, and how
# an option string becomes one. Every other argument is passed as the string given.
_BOOL_ARGS = {
    "anonymous",
    "background_writes",
    "allow_delayed_open",
    "allow_bucket_creation",
    "allow_bucket_deletion",
    "check_directory_existence_before_creation",
    "force_virtual_addressing",
}
_INT_ARGS = {"load_frequency", "port", "replication", "buffer_size", "default_block_size"}
_FLOAT_ARGS = {"request_timeout", "connect_timeout"}
_SECONDS_ARGS = {"retry_time_limit"}
_JSON_ARGS = {"proxy_options", "extra_conf", "default_metadata"}
# JSON, or a URI when the value does not start with ``{``
_URI_OR_JSON_ARGS = {"proxy_options"}
# kafkalog's own: S3's retry strategy as a number of attempts
RETRY_ARG = "retry_max_attempts"

_KNOWN_ARGS = {
    "s3": {
        "access_key",
        "secret_key",
        "session_token",
        "anonymous",
        "role_arn",
        "session_name",
        "external_id",
        "load_frequency",
        "region",
        "request_timeout",
        "connect_timeout",
        "scheme",
        "endpoint_override",
        "background_writes",
        "default_metadata",
        "proxy_options",
        "allow_delayed_open",
        "allow_bucket_creation",
        "allow_bucket_deletion",
        "check_directory_existence_before_creation",
        "force_virtual_addressing",
        "tls_ca_file_path",
        RETRY_ARG,
    },
    "gs": {
        "anonymous",
        "access_token",
        "target_service_account",
        "credential_token_expiration",
        "default_bucket_location",
        "scheme",
        "endpoint_override",
        "default_metadata",
        "retry_time_limit",
        "project_id",
    },
    "abfs": {
        "account_name",
        "account_key",
        "blob_storage_authority",
        "blob_storage_scheme",
        "client_id",
        "client_secret",
        "dfs_storage_authority",
        "dfs_storage_scheme",
        "sas_token",
        "tenant_id",
    },
    "hdfs": {
        "host",
        "port",
        "user",
        "replication",
        "buffer_size",
        "default_block_size",
        "kerb_ticket",
        "extra_conf",
    },
}

# a query parameter of a URI read through fsspec that carries a credential (Azure's SAS ``sig``,
# the signatures and credentials of S3's and GCS's signed URLs, tokens, keys)
_CREDENTIAL_PARAM = re.compile(
    r"sig|token|key|secret|pass|pwd|credential|sas|auth|^x-(amz|goog)-", re.IGNORECASE
)
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")


def scheme_of(path: str) -> str | None:
    """The lower-case URI scheme of ``path``; None for a plain path (or a Windows drive letter)."""
    m = _SCHEME.match(path)
    if m is None or len(m.group(1)) == 1:
        return None
    return m.group(1).lower()


def check_path(path: str) -> None:
    """Refuse a remote URI that carries a credential, which would be shown wherever the path is
    (logs, errors, Spark's plans, ``ReadStats``): a ``user:password@`` part (for abfs,
    ``container:KEY@``), a query string of a native store's URI (kafkalog does not read it; an
    Azure SAS token goes there), a credential in the query string of an fsspec URL. The message
    shows the path redacted."""
    scheme = scheme_of(path)
    if scheme is None or scheme == "file":
        return
    store = STORE_OF_SCHEME.get(scheme, scheme)
    shown = redact_uri(path)
    where = "(logs, errors, Spark's plans)"
    if uri_password(path):
        if store == "abfs":
            raise OptionError(
                f"path {shown!r}: a key after the container (container:KEY@account) would be "
                f"shown wherever the path is {where}; an abfs URI names "
                "container@account.dfs.core.windows.net: give the key as fs.abfs.account_key "
                "(a SAS token as fs.abfs.sas_token) or through the AZURE_* environment variables"
            )
        raise OptionError(
            f"path {shown!r}: credentials in a URI would be shown wherever the path is {where}; "
            f"give them as fs.{store}.* options or through the store's environment variables "
            "or profiles"
        )
    names = query_names(path)
    if names and store in NATIVE_STORES:
        how = (
            "give a SAS token as fs.abfs.sas_token, other settings as fs.abfs.* options"
            if store == "abfs"
            else f"give settings as fs.{store}.* options"
        )
        raise OptionError(
            f"path {shown!r}: kafkalog does not read the query string of {scheme}:// URIs, and "
            f"a credential there (a SAS token, a signature) would be shown wherever the path is "
            f"{where}; {how}"
        )
    secret = [n for n in names if _CREDENTIAL_PARAM.search(n)]
    if secret:
        raise OptionError(
            f"path {shown!r}: its query string carries a credential ({', '.join(secret)}), which "
            f"would be shown wherever the path is {where}; give credentials through "
            f"fs.{store}.* options or the store's own configuration"
        )


def _typed(option: str, store: str, arg: str, value: Any) -> Any:
    """An option's value as the constructor argument ``arg`` of a native store wants it."""
    if not isinstance(value, str):
        return value
    s = value.strip()
    try:
        if arg in _BOOL_ARGS:
            if s.lower() not in ("true", "false"):
                raise ValueError
            return s.lower() == "true"
        if arg in _INT_ARGS or arg == RETRY_ARG:
            return int(s)
        if arg in _FLOAT_ARGS:
            return float(s)
        if arg in _SECONDS_ARGS:
            return timedelta(seconds=float(s))
        if arg in _URI_OR_JSON_ARGS and not s.startswith("{"):
            return value  # pyarrow's URI form: scheme://[user:password@]host:port
        if arg in _JSON_ARGS:
            return json.loads(s)
    except (ValueError, json.JSONDecodeError):
        raise OptionError(
            f"option {option!r}: malformed value {show_value(store, arg, value)}"
        ) from None
    return value


# remoteConcurrency's default: the requests a read of many remote files keeps in flight at once
DEFAULT_REMOTE_CONCURRENCY = 16


@dataclass(frozen=True, repr=False)
class StoreOptions:
    """How remote objects are reached and read: constructor arguments per store, read-ahead and
    retries. Part of :class:`~kafkalog_source.options.ReadOptions`; values masked in ``repr``
    unless known to be harmless (see :mod:`kafkalog_source.redact`)."""

    # ((store, argument, value), ...), sorted: hashable, so it keys the filesystem cache
    args: tuple[tuple[str, str, Any], ...] = ()
    read_ahead_bytes: int = 8 * MiB  # one ranged request of a sequential read
    read_ahead_requests: int = 2  # ranged requests in flight ahead of the decoder
    retries: int = 3  # attempts after the first for a failed ranged read
    # requests in flight for many files at once (planning, a task's reads): remoteConcurrency
    concurrency: int = DEFAULT_REMOTE_CONCURRENCY

    def args_for(self, store: str) -> dict[str, Any]:
        """The constructor arguments given for ``store`` (``s3``, ``gs``, ``abfs``, ``hdfs``, or an
        fsspec protocol)."""
        return {a: v for s, a, v in self.args if s == store}

    def secrets(self) -> list[str]:
        """The strings the masked options hold, for scrubbing others' messages."""
        return secret_strings(self.args)

    def __repr__(self) -> str:
        shown = ", ".join(f"fs.{s}.{a}={show_value(s, a, v)}" for s, a, v in self.args)
        return (
            f"StoreOptions({shown}{', ' if shown else ''}read_ahead_bytes={self.read_ahead_bytes}, "
            f"read_ahead_requests={self.read_ahead_requests}, retries={self.retries}, "
            f"concurrency={self.concurrency})"
        )


def parse_fs_option(name: str, value: Any) -> tuple[str, str, Any]:
    """``fs.<store>.<argument>`` = value → ``(store, argument, value)``; OptionError for a
    malformed name, an argument the store's filesystem does not take, or a malformed value.

    A native store's value is typed as its pyarrow constructor wants it. An fsspec store's value
    is kept as given: the filesystem layer types it from the store's signature when it builds the
    store (a string stays a string unless the signature says otherwise)."""
    parts = name.split(".", 2)
    if len(parts) != 3 or parts[0].lower() != "fs" or not parts[1] or not parts[2]:
        raise OptionError(
            f"option {name!r}: filesystem options are named fs.<store>.<argument>, "
            "e.g. fs.s3.endpoint_override"
        )
    store = STORE_OF_SCHEME.get(parts[1].lower(), parts[1].lower())
    arg = parts[2].lower()
    native = store in NATIVE_STORES
    if native and arg not in _KNOWN_ARGS[store]:
        import difflib

        close = difflib.get_close_matches(arg, sorted(_KNOWN_ARGS[store]), n=1, cutoff=0.6)
        hint = f"; did you mean fs.{store}.{close[0]}?" if close else ""
        raise OptionError(
            f"option {name!r}: the {store} filesystem takes no argument {arg!r}{hint} "
            f"(known: {', '.join(sorted(_KNOWN_ARGS[store]))})"
        )
    return store, arg, (_typed(name, store, arg, value) if native else value)


@dataclass(frozen=True, repr=False)
class ReadOptions:
    """Every reader option, typed. Build it with :func:`parse_options`. Its ``repr`` masks what
    may be secret (see :mod:`kafkalog_source.redact`)."""

    paths: tuple[str, ...] = ()
    # decoding
    verify_checksums: bool = True
    include_headers: bool = True
    include_metadata: bool = False
    include_control_records: bool = False
    max_batch_bytes: int = 64 * MiB
    records_per_batch: int = 65536
    mode: str = "FAILFAST"
    isolation_level: str = "read_uncommitted"
    compiled_codecs: bool = True  # false: every lz4/snappy payload through liblz4/cramjam
    decode: str = "raw"  # raw, or an internal topic's interpretation (DECODES)
    include_snapshots: bool = False  # KRaft snapshots (.checkpoint) of the directories scanned
    # payloads (payloads/): keys and values in the Schema Registry wire format, or plain JSON
    value_format: str = "raw"
    key_format: str = "raw"
    schema_registry: str | None = None  # None: the _schemas partition beside the data, if any
    registry_conf: tuple[tuple[str, Any], ...] = ()  # schemaRegistry.<conf> (masked in repr)
    subject_name_strategy: str = "TopicNameStrategy"
    value_subject: str | None = None
    key_subject: str | None = None
    value_schema_version: int | None = None  # None: the subject's latest version
    key_schema_version: int | None = None
    payload_as: str = "struct"
    value_message: str | None = None  # Protobuf: the message typing value_decoded
    key_message: str | None = None
    # ranges (Spark Kafka source names)
    starting_offsets: str | PartitionMap = "earliest"
    ending_offsets: str | PartitionMap = "latest"
    starting_timestamp: int | None = None
    ending_timestamp: int | None = None
    starting_offsets_by_timestamp: PartitionMap | None = None
    ending_offsets_by_timestamp: PartitionMap | None = None
    starting_offsets_by_timestamp_strategy: str = "error"
    fail_on_data_loss: bool = False
    offset_gaps: str = "auto"
    replicas: str = "error"
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    # which topics and partitions (Spark Kafka source names; at most one): None, everything
    subscribe: tuple[str, ...] | None = None
    subscribe_pattern: str | None = None  # a Java regular expression, as given
    assign: tuple[tuple[str, int], ...] | None = None
    # planning (Spark file source names)
    max_partition_bytes: int = 128 * MiB
    open_cost_in_bytes: int = 4 * MiB
    recursive_file_lookup: bool = False
    path_glob_filter: str | None = None
    modified_before: float | None = None
    modified_after: float | None = None
    ignore_missing_files: bool = False
    ignore_corrupt_files: bool = False
    allow_empty: bool = False  # a path with no segment file reads as empty instead of failing
    # streams (readStream): admission control per micro-batch, as Spark's Kafka and file sources
    max_offsets_per_trigger: int | None = None
    max_bytes_per_trigger: int | None = None
    max_files_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay: int = 15 * 60 * 1000  # milliseconds
    # planning: walk a remote segment's batch headers to split it or find an offset bound when it
    # has no usable .index (downloads the segment on the driver); false: such a segment is one piece
    remote_header_walk: bool = False
    # remote stores: fs.<store>.<argument> options, read-ahead and retries (secrets masked in repr)
    store: StoreOptions | None = None  # None: the defaults (or those of the enclosing command)
    # raw option names as given, for error messages
    given: tuple[str, ...] = field(default=(), compare=False)

    def replace(self, **changes: Any) -> ReadOptions:
        """Return a copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        shown = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "paths":
                value = tuple(redact_uri(p) for p in value)
            elif f.name == "schema_registry" and value is not None:
                value = redact_uri(value)
            elif f.name == "registry_conf":
                value = tuple((k, registry_conf_shown(k, v)) for k, v in value)
            shown.append(f"{f.name}={value!r}")
        return f"ReadOptions({', '.join(shown)})"


def _bool(name: str, v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    raise OptionError(f"option {name!r}: expected true or false, got {v!r}")


def _int(name: str, v: Any, minimum: int | None = None) -> int:
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


def _size(name: str, v: Any) -> int:
    """Bytes as an integer or with a unit suffix (``128m``, ``4MB``), like Spark's byte configs."""
    if isinstance(v, str):
        s = v.strip().lower()
        for unit in sorted(_SIZE_UNITS, key=len, reverse=True):
            if s.endswith(unit) and s[: -len(unit)].strip().isdigit():
                return _int(name, s[: -len(unit)], 1) * _SIZE_UNITS[unit]
    return _int(name, v, 1)


def _max_batch_bytes(name: str, v: Any) -> int:
    """``maxBatchBytes``: a size of at most :data:`MAX_BATCH_BYTES_LIMIT` (1g)."""
    n = _size(name, v)
    if n > MAX_BATCH_BYTES_LIMIT:
        raise OptionError(
            f"option {name!r}: {v!r} is above the maximum of 1g ({MAX_BATCH_BYTES_LIMIT} bytes): "
            "Arrow binary columns (32-bit offsets, as Spark requires) hold at most 2 GiB per "
            "record batch, and one Kafka batch must fit in one"
        )
    return n


def _choice(name: str, v: Any, choices: tuple[str, ...], upper: bool) -> str:
    s = str(v).strip()
    s = s.upper() if upper else s.lower()
    if s not in choices:
        raise OptionError(f"option {name!r}: expected one of {', '.join(choices)}, got {v!r}")
    return s


def _strategy(name: str, v: Any) -> str:
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


def _schema_version(name: str, v: Any) -> int | None:
    if isinstance(v, str) and v.strip().lower() == "latest":
        return None
    return _int(name, v, 1)


def _text(name: str, v: Any) -> str:
    text = str(v).strip()
    if not text:
        raise OptionError(f"option {name!r} must not be empty")
    return text


def registry_conf_shown(key: str, value: Any) -> str:
    """A ``schemaRegistry.<conf>`` value as messages may show it: only harmless settings
    (timeouts, retries, cache sizes) are shown; credentials and everything else are masked."""
    harmless = ("timeout.ms", "max.retries", "retries.wait.ms", "retries.max.wait.ms")
    if key.lower() in harmless or key.lower().startswith("cache."):
        return str(value)
    return MASK


def _partition_json(
    name: str,
    v: Any,
    allow_special: bool,
    forbid: int | None = None,
    value: Any = _int,
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
            part = _int(f"{name}[{topic}]", p, 0)
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


def _offsets(name: str, v: Any, default: str) -> str | PartitionMap:
    if isinstance(v, str) and v.strip().lower() in ("earliest", "latest"):
        s = v.strip().lower()
        # startingOffsets=latest is for streams only: the batch planner refuses it (check_batch)
        if name == "endingOffsets" and s == "earliest":
            raise OptionError("option 'endingOffsets': 'earliest' is not allowed for batch reads")
        return s
    forbid = None if name == "startingOffsets" else EARLIEST  # latest (-1): streams only
    return _partition_json(name, v, allow_special=True, forbid=forbid)


def _timestamp_ms(name: str, v: Any) -> float:
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


def _timestamp_bound(name: str, v: Any, minimum: int | None = None) -> int:
    """A record-timestamp bound (``startingTimestamp``, ``endingTimestamp``, the values of the
    by-timestamp maps): whole epoch milliseconds, or an ISO-8601 date or time read as
    :func:`_timestamp_ms` reads ``modifiedBefore`` (UTC when no zone is given). A time with
    finer digits is rounded up to the next millisecond: Kafka's timestamps are whole
    milliseconds, so "at or after" it selects the same records."""
    if isinstance(v, (int, float)) or (isinstance(v, str) and re.fullmatch(r"\s*-?[0-9]+\s*", v)):
        return _int(name, v, minimum)  # epoch ms (a bool or a fractional number is refused)
    return _int(name, math.ceil(_timestamp_ms(name, v)), minimum)


def _subscribe(name: str, v: Any) -> tuple[str, ...]:
    """``subscribe``: topics, comma-separated (or a list), trimmed, empty names dropped."""
    items = v.split(",") if isinstance(v, str) else [str(t) for t in v]
    topics = tuple(sorted({t.strip() for t in items if t.strip()}))
    if not topics:
        raise OptionError(
            f"No topics to subscribe to as specified value for option {name!r} is {str(v)!r}"
        )
    return topics


def _subscribe_pattern(name: str, v: Any) -> str:
    """``subscribePattern``: a Java regular expression, translated once to check it."""
    pattern = str(v).strip()
    if not pattern:
        raise OptionError(
            f"Pattern to subscribe is empty as specified value for option {name!r} is {v!r}"
        )
    java_regex(pattern)  # OptionError for what kafkalog cannot translate, saying what
    return pattern


def _assign(name: str, v: Any) -> tuple[tuple[str, int], ...]:
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


def _time_ms(name: str, v: Any) -> int:
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


def _positive(name: str, v: Any) -> int:
    """An integer > 0, refused as Spark's Kafka source words it."""
    n = _int(name, v)
    if n <= 0:
        raise OptionError(f"option {name!r} must be positive, got {n}")
    return n


OPTIONS_DOC = "docs/reference/options.md"
# where an option applies: a batch read (spark.read), a stream (spark.readStream), the Arrow API
# (read_table, iter_batches, open_reader); the CLI's subcommands are listed by the generator
# (kafkalog_source/cli/docs.py) from each subcommand's own list of the options it takes
BATCH, STREAM, ARROW = "batch", "stream", "arrow"
EVERYWHERE = (BATCH, STREAM, ARROW)


@dataclass(frozen=True)
class OptionSpec:
    """One reader option: how it is parsed and what it means. :data:`OPTION_SPECS` is the one
    table that :func:`parse_options` parses with and that ``docs/reference/options.md`` is
    generated from (``python -m kafkalog_source.cli.docs``)."""

    name: str  # the canonical (camelCase) name; names are case-insensitive
    field: str  # the ReadOptions field it sets ("store.x": StoreOptions.x)
    parser: Any  # parser(name, value) -> the typed value; raises OptionError
    type: str  # what a value looks like, for the reference
    summary: str  # one line
    doc: str = ""  # a paragraph (Markdown)
    applies: tuple[str, ...] = EVERYWHERE
    aliases: tuple[str, ...] = ()  # other names of the same option
    default_note: str = ""  # where the default differs (streams, the Arrow API)

    @property
    def anchor(self) -> str:
        """The option's anchor in the reference (its heading's, as a code host slugs it)."""
        return doc_anchor(self.name)


def doc_anchor(heading: str) -> str:
    """The anchor a code host (GitHub's rule) gives a Markdown heading: lower case, everything
    but letters, digits, spaces, ``-`` and ``_`` dropped, spaces as ``-``."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-")


def doc_ref(name: str | None = None) -> str:
    """Where the reference documents option ``name`` (any spelling or alias; ``fs.*`` store
    options share one entry); the reference page itself for None or an unknown name."""
    if name is None:
        return OPTIONS_DOC
    if name.lower().startswith("fs."):
        return f"{OPTIONS_DOC}#{FS_OPTION.anchor}"
    if name.lower().startswith("schemaregistry."):
        name = "schemaRegistry"
    spec = SPEC_OF.get(name.lower())
    return f"{OPTIONS_DOC}#{spec.anchor}" if spec else OPTIONS_DOC


def _choices(values: tuple[str, ...]) -> str:
    return "one of " + ", ".join(f"`{v}`" for v in values)


_TIME = "epoch milliseconds, or an ISO-8601 date or time (UTC when no zone is given)"
_SIZE = "bytes: an integer, or with a `k`, `m` or `g` suffix"
_COMPLETE = "[Complete or loud](../guides/bad-data.md#complete-or-loud-what-a-read-says-is-missing)"

OPTION_SPECS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "verifyChecksums",
        "verify_checksums",
        _bool,
        "boolean",
        "Check every v2 batch's CRC-32C and every v0/v1 message's CRC-32 (inner messages "
        "included).",
        "A batch whose checksum does not match is corrupt and goes through `mode`. `false` reads "
        "segments whose checksums are known to be wrong, such as the control batches that "
        "librdkafka's mock cluster writes with CRC 0 (see "
        "[Transactions](../guides/transactions.md)).",
    ),
    OptionSpec(
        "includeHeaders",
        "include_headers",
        _bool,
        "boolean",
        "Include the `headers` column.",
        "`false` drops the column, and the decoder never copies header data. Keep it in a "
        "`PERMISSIVE` read: the `kafkalog.error` header is what marks a row made of a "
        "malformed batch.",
    ),
    OptionSpec(
        "includeMetadata",
        "include_metadata",
        _bool,
        "boolean",
        "Add the producer, batch and file columns.",
        "`producerId`, `producerEpoch`, `sequence`, `isTransactional`, "
        "`partitionLeaderEpoch`, `magic`, `codec`, `segmentPath`, `batchPosition`, "
        "`segmentBaseOffset`: see the [schema](schema.md#metadata-columns).",
    ),
    OptionSpec(
        "includeControlRecords",
        "include_control_records",
        _bool,
        "boolean",
        "Return control records, with the `control` column.",
        "Control records (transaction markers, KRaft control records) come back as rows with "
        "null key and value and a `control` struct (`type`, `version`, `coordinatorEpoch`); "
        "`control` is null for data rows. Under `read_committed` the markers of aborted "
        "transactions are still returned; only data is filtered. With `decode`, transaction "
        "markers are rows (`AbortMarker`, `CommitMarker`) only with this option.",
    ),
    OptionSpec(
        "isolationLevel",
        "isolation_level",
        lambda n, v: _choice(n, v, ISOLATION_LEVELS, False),
        _choices(ISOLATION_LEVELS),
        "`read_committed` drops aborted and undecided transactions.",
        "`read_uncommitted` returns every data record, including aborted and still-open "
        "transactions. `read_committed` returns what a Kafka `read_committed` consumer would "
        "see, with *undecided* transactions (no marker in the data) excluded as well; see "
        "[Transactions](../guides/transactions.md). Spark's Kafka-source name "
        "`kafka.isolation.level` is the same option.",
        aliases=("kafka.isolation.level",),
    ),
    OptionSpec(
        "mode",
        "mode",
        lambda n, v: _choice(n, v, MODES, True),
        _choices(MODES),
        "What a corrupt batch does: fail the read, be skipped, or become one row.",
        "`FAILFAST` raises with the file, byte, base offset and reason; `DROPMALFORMED` skips "
        "the batch, logs and counts it; `PERMISSIVE` returns it as one row marked by a "
        "`kafkalog.error` header. With `decode`, a record that does not decode goes through "
        "`mode` too. See [Bad data, modes and what is skipped](../guides/bad-data.md).",
    ),
    OptionSpec(
        "decode",
        "decode",
        lambda n, v: _choice(n, v, DECODES, False),
        _choices(DECODES),
        "Read Kafka's internal topics as typed tables.",
        "`raw` is the [schema](schema.md) of every topic. `consumer_offsets`, "
        "`transaction_state`, `cluster_metadata`, `remote_log_metadata` and "
        "`share_group_state` decode that internal topic's records into typed columns; `auto` "
        "chooses by topic name (other topics raw), with one schema for all. Batch reads only: "
        "`readStream` refuses it. See [Kafka's internal topics](../guides/internal-topics.md) "
        "and [their schemas](schema.md#decode-interpretations).",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "includeSnapshots",
        "include_snapshots",
        _bool,
        "boolean",
        "Also read the KRaft snapshots (`<end offset>-<epoch>.checkpoint`) of the partition "
        "directories read.",
        "A KRaft snapshot is a record-batch file in `__cluster_metadata-0`: a `SnapshotHeader` "
        "control record, the metadata records of the cluster's whole state below the "
        "snapshot's end offset, a `SnapshotFooter`. Discovery skips them unless this is set; "
        "a snapshot named as a path is always read. Each snapshot is read as a log of its own "
        "(its records' offsets start at 0, they are not the metadata log's offsets): with "
        "`decode=cluster_metadata` or `auto` its rows carry `snapshot_end_offset` and "
        "`snapshot_end_epoch` (null for the log's rows); in a raw read, `segmentPath` "
        "(`includeMetadata`) tells them apart. Batch reads only: `readStream` refuses it. See "
        "[Kafka's internal topics](../guides/internal-topics.md#kraft-snapshots).",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "valueFormat",
        "value_format",
        lambda n, v: _choice(n, v, PAYLOAD_FORMATS, False),
        _choices(PAYLOAD_FORMATS),
        "Decode record values: Avro, Protobuf or JSON Schema in the Schema Registry wire "
        "format, or plain JSON.",
        "`raw` (the default) leaves `value` as bytes. The others add `value_schema_id`, "
        "`value_decoded` (a struct typed from the subject's reader schema, or a JSON string with "
        "`payloadAs=json`) and `value_error`. `avro`, `protobuf` and `json` expect that format "
        "(`json` also takes plain JSON text without the wire-format prefix); `registry` takes "
        "whatever format the reader schema has. Schemas come from `schemaRegistry`. Batch reads "
        "only. See [Payload decoding](../guides/payload-decoding.md).",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "keyFormat",
        "key_format",
        lambda n, v: _choice(n, v, PAYLOAD_FORMATS, False),
        _choices(PAYLOAD_FORMATS),
        "Decode record keys, as `valueFormat` does values.",
        "Adds `key_schema_id`, `key_decoded` and `key_error`; the subject is `<topic>-key` "
        "under the default strategy.",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "schemaRegistry",
        "schema_registry",
        _text,
        "a path or URI, or an `http(s)://` URL",
        "Where the schemas of `valueFormat`/`keyFormat` come from.",
        "A `_schemas` partition directory or a log directory holding one (local or remote, "
        "replayed as the registry replays its topic: versions, soft and hard deletes, "
        "references), a directory of schema files, or a live registry's URL (through "
        "confluent-kafka's client; its settings as `schemaRegistry.<setting>` options, e.g. "
        "`schemaRegistry.basic.auth.user.info`, masked in messages). By default, the `_schemas` "
        "partition of the log directory being read, if there is one.",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "subjectNameStrategy",
        "subject_name_strategy",
        _strategy,
        ", ".join(f"`{x}`" for x in SUBJECT_STRATEGIES),
        "How a topic's subject is named, as the serializers' `subject.name.strategy`.",
        "`TopicNameStrategy` (`<topic>-value`, `<topic>-key`), `RecordNameStrategy` (the "
        "record's full name) or `TopicRecordNameStrategy` (`<topic>-<full name>`). The record "
        "strategies need the record's name: give the subject with `valueSubject`/`keySubject`, "
        "or let the only subject of that form in the registry be taken.",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "valueSubject",
        "value_subject",
        _text,
        "string",
        "The subject whose schema types `value_decoded` (instead of the strategy's).",
        "",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "keySubject",
        "key_subject",
        _text,
        "string",
        "The subject whose schema types `key_decoded` (instead of the strategy's).",
        "",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "valueSchemaVersion",
        "value_schema_version",
        _schema_version,
        "`latest` or an integer ≥ 1",
        "The version of the value subject that types `value_decoded` (the reader schema).",
        "Values written with other versions are resolved into it (Avro's schema resolution; "
        "Protobuf and JSON by field). Default `latest`: the newest version not deleted.",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "keySchemaVersion",
        "key_schema_version",
        _schema_version,
        "`latest` or an integer ≥ 1",
        "The version of the key subject that types `key_decoded`.",
        "",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "valueMessage",
        "value_message",
        _text,
        "string",
        "Protobuf: the message that types `value_decoded` (default: the schema's first).",
        "A full name (`shop.orders.Order`) or one relative to the file's package "
        "(`Order.LineItem`). Values of another message type of the same file do not fit the "
        "struct and go through `mode`; `payloadAs=json` decodes every message type.",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "keyMessage",
        "key_message",
        _text,
        "string",
        "Protobuf: the message that types `key_decoded`.",
        "",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "payloadAs",
        "payload_as",
        lambda n, v: _choice(n, v, PAYLOAD_AS, False),
        _choices(PAYLOAD_AS),
        "`json` makes `value_decoded`/`key_decoded` JSON strings instead of structs.",
        "For topics whose schemas are not compatible (or several topics with different "
        "subjects): each value is decoded with its own writer schema into a JSON document.",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "compiledCodecs",
        "compiled_codecs",
        _bool,
        "boolean",
        "`false` decompresses every lz4 and snappy payload with liblz4 and cramjam.",
        "By default kafkalog's compiled decoders decompress lz4 and snappy batches. `false` "
        "uses the libraries instead (slower): an off switch while a decoder bug is "
        "investigated. `KAFKALOG_LIBRARY_CODECS=1` in the environment of the processes that "
        "decode (the executors: `spark.executorEnv.KAFKALOG_LIBRARY_CODECS=1`) does the same "
        "for every read.",
    ),
    OptionSpec(
        "maxBatchBytes",
        "max_batch_bytes",
        _max_batch_bytes,
        _SIZE + ", at most `1g`",
        "The largest batch (or v0/v1 message), as stored and once decompressed, that is accepted.",
        "A cap that makes decompression bombs fail cleanly. A larger batch is a malformed "
        "batch, which `mode` handles (it is never read, so a `PERMISSIVE` row for it has an "
        "empty `value`). At most `1g`: Arrow's `binary` columns (the type Spark takes) hold "
        "under 2 GiB per record batch.",
    ),
    OptionSpec(
        "recordsPerBatch",
        "records_per_batch",
        lambda n, v: _int(n, v, 1),
        "integer ≥ 1",
        "Rows per Arrow record batch handed on.",
        "A record batch is cut at the first Kafka batch boundary at or after this many rows, "
        "or at 16 MiB of key, value and header data (a Kafka batch, or a legacy compressed "
        "wrapper, is never split across two).",
    ),
    OptionSpec(
        "subscribe",
        "subscribe",
        _subscribe,
        "a comma-separated list of topics",
        "Read only these topics (Spark's Kafka source's `subscribe`).",
        "Topics are known by their `<topic>-<partition>` directory names (a tiered-storage "
        "object's key), so partitions of other topics are left out while the paths are listed, "
        "before any of their files is opened or requested. Only one of `subscribe`, "
        "`subscribePattern` and `assign` may be set; with none, every partition under the paths "
        "is read. Unlike Spark's source, a Kafka internal topic named here is read. A segment "
        "whose topic is not known from its directory fails the read, naming it. See "
        "[Spark's Kafka source options](#sparks-kafka-source-options).",
    ),
    OptionSpec(
        "subscribePattern",
        "subscribe_pattern",
        _subscribe_pattern,
        "a Java regular expression",
        "Read only the topics whose names the pattern is found in (Spark's Kafka source's "
        "`subscribePattern`).",
        "As Spark's source (its default offset fetching through the admin client): a topic is "
        "taken when the pattern is found anywhere in its name (`orders` takes `orders-eu`; "
        "anchor it, `^orders$`, for one topic), and Kafka's internal topics "
        "(`__consumer_offsets`, `__transaction_state`, `__share_group_state`, and "
        "`__cluster_metadata`) are never taken: name them with `subscribe` or `assign`. The "
        "pattern is translated to Python's `re` where Java and Python read it the same way over "
        "topic names (literals, `.`, classes `[...]` with ranges and `\\d` `\\w` `\\s`, the "
        "POSIX classes `\\p{Alpha}` and the like, groups, alternatives, greedy, lazy and "
        "possessive quantifiers, anchors, look-arounds, `(?i)` first or `(?i:...)`, `\\Q...\\E`); "
        "anything else (Unicode properties, class unions and intersections, back references, "
        "flags in mid-pattern, `\\h`, `\\R`, ...) is refused, naming it. Pruned as `subscribe` is.",
    ),
    OptionSpec(
        "assign",
        "assign",
        _assign,
        'JSON `{"topicA":[0,1],"topicB":[2,4]}`',
        "Read only these partitions (Spark's Kafka source's `assign`).",
        "Pruned as `subscribe` is. A partition named that the paths do not hold is warned "
        "about in a batch read (a stream waits for it).",
    ),
    OptionSpec(
        "startingOffsets",
        "starting_offsets",
        lambda n, v: _offsets(n, v, "earliest"),
        '`earliest`, `latest` (streams), or JSON `{"topic":{"0":23}}`',
        "Where to start, per partition; inclusive.",
        '`earliest`, or JSON `{"topic":{"0":23,"1":-2}}` (-2 = earliest). Streams also take '
        "`latest` (and -1); a batch read refuses them. A stream uses it on its first run only; "
        "later runs resume from the checkpoint. Only one starting rule may be set "
        "(`startingOffsets`, `startingTimestamp` or `startingOffsetsByTimestamp`). Offset "
        "bounds use the file names and the `.index`.",
    ),
    OptionSpec(
        "endingOffsets",
        "ending_offsets",
        lambda n, v: _offsets(n, v, "latest"),
        '`latest`, or JSON `{"topic":{"0":50}}`',
        "Where to stop, per partition; exclusive.",
        '`latest`, or JSON `{"topic":{"0":50,"1":-1}}` (-1 = latest). Only one ending rule '
        "may be set. Batch reads only: a stream refuses it (its end is what each trigger "
        "finds, as in Spark's Kafka source; use `Trigger.AvailableNow` to stop at what is "
        "there).",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "startingTimestamp",
        "starting_timestamp",
        lambda n, v: _timestamp_bound(n, v, 0),
        _TIME,
        "Start every partition at the earliest offset whose timestamp is ≥ this time.",
        "Kafka's `offsetsForTimes`: everything after that offset is returned. Epoch "
        "milliseconds, or an ISO-8601 date or time as `modifiedBefore` takes it "
        "(`2023-11-15`, `2023-11-15T22:00:00Z`, `2023-11-15T23:00:00+01:00`); a time without "
        "a zone is UTC, and finer than a millisecond is rounded up to the next one. Timestamp "
        "bounds use the `.timeindex` and batch `maxTimestamp` to skip whole segments and "
        "batches without decompressing them.",
    ),
    OptionSpec(
        "endingTimestamp",
        "ending_timestamp",
        lambda n, v: _timestamp_bound(n, v, 0),
        _TIME,
        "Stop every partition before the earliest offset whose timestamp is ≥ this time.",
        "A time, as `startingTimestamp` takes it. Batch reads only: a stream refuses it.",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "startingOffsetsByTimestamp",
        "starting_offsets_by_timestamp",
        lambda n, v: _partition_json(n, v, False, value=_timestamp_bound),
        'JSON `{"topic":{"0":1700000000000,"1":"2023-11-15T22:00:00Z"}}`',
        "`startingTimestamp` per partition.",
        "Each value is a time as `startingTimestamp` takes it.",
    ),
    OptionSpec(
        "endingOffsetsByTimestamp",
        "ending_offsets_by_timestamp",
        lambda n, v: _partition_json(n, v, False, value=_timestamp_bound),
        'JSON `{"topic":{"0":1700000000000,"1":"2023-11-15T22:00:00Z"}}`',
        "`endingTimestamp` per partition.",
        "Each value is a time as `startingTimestamp` takes it. Batch reads only: a stream "
        "refuses it.",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "startingOffsetsByTimestampStrategy",
        "starting_offsets_by_timestamp_strategy",
        lambda n, v: _choice(n, v, NO_TIME_MATCH, False),
        _choices(NO_TIME_MATCH),
        "What a partition with no record at or after the starting time does.",
        "For `startingTimestamp` and `startingOffsetsByTimestamp`, as Spark's Kafka source: "
        '`error` fails the read (`OptionError`: "No offset matched from request of '
        'topic-partition orders-0 and timestamp 1700000000000."); `latest` starts that '
        "partition at its latest offset (nothing of it in a batch read; a stream reads what "
        "comes after).",
    ),
    OptionSpec(
        "failOnDataLoss",
        "fail_on_data_loss",
        _bool,
        "boolean",
        "`true` fails the read (`DataLossError`) when offsets are missing.",
        "Missing offsets: offsets the partition's own evidence says it held (an empty or cut "
        "segment, `.index`/`.timeindex` entries past the end of the last segment, the log "
        "directory's checkpoints, the partition's `leader-epoch-checkpoint`; see "
        f"{_COMPLETE}), a segment file missing between two "
        "others, a segment file deleted after the read was planned (retention: a batch read "
        "with `false` then fails with `FileNotFoundError` unless `ignoreMissingFiles`, a "
        "stream goes on), and a gap between consecutive batches of a segment. Gaps that `offsetGaps` "
        "calls compaction never fail. With `false` missing offsets are read around and "
        "reported: a warning, `ReadStats.missing_offsets`, the CLI's summary line and Spark's "
        "task summary. Gaps between batches inside a segment are checked only with `true`. "
        "For streams the default is `true` (see "
        "[Scheduled ETL](../guides/streaming.md)).",
        default_note="streams: `true`",
    ),
    OptionSpec(
        "offsetGaps",
        "offset_gaps",
        lambda n, v: _choice(n, v, OFFSET_GAPS, False),
        _choices(OFFSET_GAPS),
        "How a gap between batches or segments is judged: compaction or loss.",
        "`auto` calls gaps below the partition's entry in the log directory's "
        "`cleaner-offset-checkpoint` compaction and every other gap loss; `compacted` calls "
        "every such gap compaction (an archive of a compacted topic copied without its "
        "checkpoint files); `loss` calls every gap loss. A cut last segment and offsets below "
        "a recovery point or high watermark are loss under every rule.",
    ),
    OptionSpec(
        "replicas",
        "replicas",
        lambda n, v: _choice(n, v, REPLICAS, False),
        _choices(REPLICAS),
        "What to do with the same topic-partition found in several directories.",
        "Copies from several brokers: `error` refuses the read naming the directories (and "
        "says when their `partition.metadata` topic ids differ: different topics of one "
        "name); `separate` reads every copy as it is (each record once per copy); `merge` "
        "reads each offset once from the copies that hold it (see [Recovering a partition "
        "from several brokers' disks](../guides/bad-data.md#recovering-a-partition-from-"
        "several-brokers-disks)). With `merge`, offsets no copy holds are reported as missing "
        "unless `offsetGaps=compacted`: the cleaner's checkpoint is not applied to merged "
        "copies, which brokers compact independently.",
    ),
    OptionSpec(
        "minPartitions",
        "min_partitions",
        lambda n, v: _int(n, v, 1),
        "integer ≥ 1",
        "Ask for at least this many Spark partitions (splits large segments further).",
        "Streams: per micro-batch, default 2 (each at least `openCostInBytes`), so that a "
        "small micro-batch still uses two cores. The Arrow API cuts its pieces further too.",
        default_note="streams: 2",
    ),
    OptionSpec(
        "maxRecordsPerPartition",
        "max_records_per_partition",
        _positive,
        "integer ≥ 1",
        "At most this many offsets in one Spark partition (split), as Spark's Kafka source.",
        "Splits are cut further at batch boundaries found from the `.index` and a short walk "
        "of batch headers, and never packed past it. A Kafka batch is never cut, so one batch "
        "holding more offsets than this is a split of its own; in v0/v1 segments a split may "
        "hold up to one compressed wrapper's records more (a wrapper's first offset is not "
        "known without decompressing it); a remote segment without a usable `.index` is cut "
        "only with `remoteHeaderWalk`. "
        "Compacted offsets count, as in Spark (the offsets between a split's first and last).",
    ),
    OptionSpec(
        "maxPartitionBytes",
        "max_partition_bytes",
        _size,
        _SIZE,
        "Target bytes per Spark partition; large segments are split on batch boundaries.",
        "The Arrow API, `query --engine duckdb` and `convert --engine arrow` cut pieces of "
        "`16m` unless it is given (and on one thread do not cut segments at all unless it is "
        "given; with the default threads, a segment without `.index` entries is not cut "
        "either, unless it or `minPartitions` is given).",
        default_note="Arrow API: pieces of `16m`",
    ),
    OptionSpec(
        "openCostInBytes",
        "open_cost_in_bytes",
        lambda n, v: _size(n, v) if str(v) != "0" else 0,
        _SIZE,
        "What each segment weighs when small segments are packed together.",
        "As Spark's file sources: small segments are packed into one split up to "
        "`maxPartitionBytes`, each counting at least this much. A remote segment counts a "
        "sixteenth of it: a read keeps that many remote files' requests in flight at once "
        "(`remoteConcurrency`'s default; the default, not the option's value, so that a plan "
        "does not change with it).",
    ),
    OptionSpec(
        "recursiveFileLookup",
        "recursive_file_lookup",
        _bool,
        "boolean",
        "Find segments in all subdirectories.",
        "By default a path is a segment file, a partition directory or a log directory "
        "holding partition directories.",
    ),
    OptionSpec(
        "pathGlobFilter",
        "path_glob_filter",
        lambda n, v: str(v),
        "a glob",
        "Only files whose name matches this glob.",
    ),
    OptionSpec(
        "modifiedBefore",
        "modified_before",
        _timestamp_ms,
        _TIME,
        "Only files modified before this time.",
        "On object stores, the object's modification time.",
    ),
    OptionSpec(
        "modifiedAfter",
        "modified_after",
        _timestamp_ms,
        _TIME,
        "Only files modified after this time.",
        "Must be earlier than `modifiedBefore` when both are given.",
    ),
    OptionSpec(
        "ignoreMissingFiles",
        "ignore_missing_files",
        _bool,
        "boolean",
        "A listed path that does not exist, or a file that disappears, is skipped and counted.",
    ),
    OptionSpec(
        "ignoreCorruptFiles",
        "ignore_corrupt_files",
        _bool,
        "boolean",
        "Stop reading a corrupt file, keep its rows up to the damage, count it, and go on.",
        "A large segment read in several splits (Spark) or pieces (the Arrow API, `query`, "
        "`convert --engine arrow`) is stopped only in the one that meets the damage: the "
        "others still return their rows, as with Spark's file sources. With `FAILFAST` it "
        "ends the read of the file at a corrupt batch (counted in `corrupt_files`); with "
        "`DROPMALFORMED` and `PERMISSIVE`, which skip the batch and read on, it changes "
        "nothing there.",
    ),
    OptionSpec(
        "allowEmpty",
        "allow_empty",
        _bool,
        "boolean",
        "`true` reads a path with no segment file as an empty result.",
        "By default a read that finds no `.log` file at all (an empty directory, one with only "
        "index files, filters that leave nothing, or only missing paths skipped by "
        "`ignoreMissingFiles`) fails with a `PathError` naming the path, as Spark's file "
        "sources fail on a path with nothing to read, so a mistyped path does not look like "
        "an empty topic. An empty `.log` file is an empty topic and reads as 0 rows either "
        "way. A stream always waits for segments to appear.",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "readAheadBytes",
        "store.read_ahead_bytes",
        _size,
        _SIZE,
        "Remote paths: bytes per ranged request of a sequential read.",
        "Memory per split stays at `(readAheadRequests + 1) × readAheadBytes` on top of the "
        "decoder's own. See [Remote storage](../guides/remote-storage.md).",
    ),
    OptionSpec(
        "readAheadRequests",
        "store.read_ahead_requests",
        lambda n, v: _int(n, v, 0),
        "integer ≥ 0",
        "Remote paths: ranged requests in flight ahead of the decoder (`0`: none).",
        "Fetching overlaps decoding, never past the split's end.",
    ),
    OptionSpec(
        "remoteRetries",
        "store.retries",
        lambda n, v: _int(n, v, 0),
        "integer ≥ 0",
        "Remote paths: retries of a request that failed in a way a retry can fix.",
        "A timeout, a dropped or refused connection, throttling or an HTTP 5xx is retried "
        "with exponential backoff, after the store client's own retries, before the read "
        "fails with a `StorageError`; other failures (access denied, a bad request, a host "
        "that does not resolve, a certificate not trusted) are not retried.",
    ),
    OptionSpec(
        "remoteConcurrency",
        "store.concurrency",
        lambda n, v: _int(n, v, 1),
        "integer ≥ 1",
        "Remote paths: requests in flight at most for many files at once.",
        "Planning's reads of many segments (on the driver), and each read of several ranges (a "
        "Spark task's split, an Arrow API read), which opens the next ranges and fetches their "
        "first `readAheadBytes` while one decodes. Every request of the plan or the read counts, "
        "read-ahead included. `1`: one request at a time. See [Remote "
        "storage](../guides/remote-storage.md).",
    ),
    OptionSpec(
        "remoteHeaderWalk",
        "remote_header_walk",
        _bool,
        "boolean",
        "Remote paths: walk the batch headers of a segment that has no usable `.index`.",
        "To split it and find offset bounds; this reads the segment on the driver. By default "
        "such a segment is one split, and offset bounds inside it are applied by the reader.",
    ),
    OptionSpec(
        "maxOffsetsPerTrigger",
        "max_offsets_per_trigger",
        lambda n, v: _int(n, v, 1),
        "integer ≥ 1",
        "Streams: at most this many offsets per micro-batch.",
        "Shared between partitions in proportion to their backlog as Spark's Kafka source "
        "shares it: each partition's share rounded down, or up to one offset when it is below "
        "one, never past the partition's end; the offsets rounding leaves unused go one each to "
        "the shares rounded down, largest remainders first (a share rounded up gets none). A "
        "micro-batch takes `min(limit, backlog)` offsets (more only when the shares rounded up "
        "to one already exceed it), and every partition with data advances at every "
        "trigger. Only one of `maxOffsetsPerTrigger`, `maxBytesPerTrigger` and "
        "`maxFilesPerTrigger` may be set. Batch reads ignore it. See "
        "[Admission control](../guides/streaming.md#admission-control).",
        applies=(STREAM,),
    ),
    OptionSpec(
        "maxBytesPerTrigger",
        "max_bytes_per_trigger",
        _size,
        _SIZE,
        "Streams: at most this many segment bytes per micro-batch.",
        "Estimated within a segment from its offsets and size, and shared as "
        "`maxOffsetsPerTrigger` is: a share worth less than one offset is one offset, so every "
        "partition with data advances at every trigger. Only one of the three limits may be "
        "set. Batch reads ignore it.",
        applies=(STREAM,),
    ),
    OptionSpec(
        "maxFilesPerTrigger",
        "max_files_per_trigger",
        lambda n, v: _int(n, v, 1),
        "integer ≥ 1",
        "Streams: at most this many segment files touched per micro-batch.",
        "One file per partition per round, the partitions taken in a rotation by name that "
        "goes on from trigger to trigger and across restarts (the offsets keep the last "
        "partition served): with `P` partitions holding data, each advances at least once "
        "every `ceil(P / maxFilesPerTrigger)` triggers. Only one of the three limits may be "
        "set. Batch reads ignore it.",
        applies=(STREAM,),
    ),
    OptionSpec(
        "minOffsetsPerTrigger",
        "min_offsets_per_trigger",
        lambda n, v: _int(n, v, 1),
        "integer ≥ 1",
        "Streams: hold a trigger back until this many new offsets are available.",
        "As Spark's Kafka source: the new offsets are summed over partitions; a trigger runs "
        "anyway once `maxTriggerDelay` has passed since the last one that ran, and the first "
        "trigger of a query always runs. It combines with any of the three limits (with "
        "`maxOffsetsPerTrigger`, it must not be larger). `Trigger.AvailableNow` does not hold "
        "its micro-batches back. Batch reads ignore it.",
        applies=(STREAM,),
    ),
    OptionSpec(
        "maxTriggerDelay",
        "max_trigger_delay",
        _time_ms,
        "a time: an integer with `us`, `ms`, `s`, `m`, `min`, `h` or `d` (milliseconds without "
        "a unit)",
        "Streams: the longest `minOffsetsPerTrigger` holds a trigger back.",
        "Read only with `minOffsetsPerTrigger` (set alone, it is warned about).",
        applies=(STREAM,),
        default_note="15m",
    ),
)

# the fs.<store>.<argument> options: one entry in the reference, parsed by parse_fs_option
FS_OPTION = OptionSpec(
    "fs.<store>.<argument>",
    "store.args",
    parse_fs_option,
    "as the store's filesystem constructor takes the argument",
    "A filesystem constructor argument for remote paths.",
    "Store `s3`, `gs`, `abfs`, `hdfs`, or an fsspec protocol: the argument configures that "
    "store's client (for `s3`, `gs` and `abfs`, pyarrow's constructor arguments mapped onto "
    "obstore's settings; for the others, passed to the filesystem's constructor), typed as "
    "pyarrow's constructor wants it, and overrides the store's credential chain "
    "(`fs.s3.endpoint_override`, `fs.s3.region`, `fs.abfs.sas_token`, ...). A name the "
    'constructor does not take fails with a "did you mean" hint. Values are masked in messages '
    "unless known to be harmless. See [Remote storage](../guides/remote-storage.md) for each "
    "store's arguments.",
)

SPEC_OF: dict[str, OptionSpec] = {n.lower(): s for s in OPTION_SPECS for n in (s.name, *s.aliases)}
# Spark option name (case-insensitive) -> (field name, parser)
_PARSERS: dict[str, tuple[str, Any]] = {
    n: (s.field, s.parser) for s in OPTION_SPECS for n in (s.name, *s.aliases)
}
_BY_LOWER = {k.lower(): k for k in _PARSERS}

# Names that Spark itself adds or that belong to Spark, accepted and ignored here.
_SPARK_PASSTHROUGH = {"path", "paths"}

OPTION_NAMES: tuple[str, ...] = tuple(_PARSERS)


def parse_options(
    options: Mapping[str, Any] | None = None, paths: Any = None, **kwargs: Any
) -> ReadOptions:
    """Parse user options (Spark's strings or Python values) into a :class:`ReadOptions`."""
    merged: dict[str, Any] = {}
    for source in (options or {}), kwargs:
        for k, v in source.items():
            merged[str(k)] = v
    collected_paths: list[str] = []
    fs_args: list[tuple[str, str, Any]] = []
    conf: list[tuple[str, Any]] = []
    values: dict[str, Any] = {}
    seen: dict[str, str] = {}
    for raw_name, value in merged.items():
        lower = raw_name.lower()
        if lower == "path":
            if value is not None and str(value) != "":
                collected_paths.append(str(value))
            continue
        if lower == "paths":
            collected_paths.extend(_parse_paths(value))
            continue
        if lower.startswith("schemaregistry."):
            if value is not None:
                conf.append((raw_name.split(".", 1)[1], value))
                seen[f"sr:{lower}"] = raw_name
            continue
        if lower.startswith("fs."):
            if value is not None:
                fs_args.append(_documented(parse_fs_option, raw_name, value))
                seen[f"fs:{lower}"] = raw_name
            continue
        canonical = _BY_LOWER.get(lower)
        if canonical is None and value is not None:
            _refuse_spark_kafka_option(raw_name)
        if canonical is None:
            raise OptionError(_unknown_message(raw_name), doc=doc_ref())
        field_name, parser = _PARSERS[canonical]
        if value is None:
            continue
        if field_name in seen and seen[field_name] != canonical:
            raise OptionError(
                f"options {seen[field_name]!r} and {canonical!r} are the same option",
                doc=doc_ref(canonical),
            )
        seen[field_name] = canonical
        values[field_name] = _documented(parser, canonical, value)
    if paths is not None:
        single = isinstance(paths, (str, bytes, os.PathLike))
        collected_paths.extend(os.fsdecode(p) for p in ([paths] if single else list(paths)))
    for p in collected_paths:
        check_path(p)
    store = {k[6:]: values.pop(k) for k in list(values) if k.startswith("store.")}
    if fs_args or store:
        values["store"] = StoreOptions(args=tuple(sorted(fs_args, key=lambda a: a[:2])), **store)
    if conf:
        values["registry_conf"] = tuple(sorted(conf, key=lambda c: c[0]))
    opts = ReadOptions(paths=tuple(collected_paths), given=tuple(seen.values()), **values)
    _check_combinations(opts)
    return opts


# Every option of Spark's Kafka source (batch and streaming; its integration guide and
# KafkaSourceProvider, Spark 4.x) that kafkalog does not take, and why: refused by name. The
# others are options of their own (OPTION_SPECS, the same names). The reference lists both
# (docs/reference/options.md, "Spark's Kafka source options").
SPARK_KAFKA_SECTION = "Spark's Kafka source options"
_NO_CONSUMER = "no Kafka consumer reads an archive"
SPARK_KAFKA_REFUSED: dict[str, str] = {
    "kafka.bootstrap.servers": "it names the brokers a consumer reads from; an archive is read "
    "from its path (load(path), or the path option)",
    "kafka.group.id": f"it names a consumer group; {_NO_CONSUMER}",
    "groupIdPrefix": f"it prefixes the consumer group ids Spark makes up; {_NO_CONSUMER}",
    "kafkaConsumer.pollTimeoutMs": f"it bounds an executor's Kafka poll; {_NO_CONSUMER} (a "
    "remote store's requests: fs.<store>.request_timeout, connect_timeout and remoteRetries)",
    "fetchOffset.numRetries": "it retries the offset requests to the brokers; an archive's "
    "offsets come from its files (a remote store's requests: remoteRetries)",
    "fetchOffset.retryIntervalMs": "it spaces the retries of the offset requests to the "
    "brokers; an archive's offsets come from its files (a remote store's requests: "
    "remoteRetries)",
    "kafka.auto.offset.reset": "Spark's Kafka source refuses it too: set startingOffsets to "
    "earliest or latest",
    "kafka.<setting>": f"it sets the Kafka consumer; {_NO_CONSUMER} (a remote store's settings "
    "are fs.<store>.<argument> options)",
}
_REFUSED_LOWER = {k.lower(): v for k, v in SPARK_KAFKA_REFUSED.items()}
# Every option of Spark's Kafka source: (name, Spark's query types, what it does here; "" for a
# refused one, whose reason is SPARK_KAFKA_REFUSED's)
SPARK_KAFKA_OPTIONS: tuple[tuple[str, str, str], ...] = (
    ("assign", "both", "The same: [`assign`](#assign), by directory names."),
    ("subscribe", "both", "The same: [`subscribe`](#subscribe); an internal topic named is read."),
    (
        "subscribePattern",
        "both",
        "The same: [`subscribePattern`](#subscribepattern) (found anywhere in the name, "
        "internal topics never taken), for the Java expressions Python reads the same way; "
        "others are refused, naming what.",
    ),
    ("kafka.bootstrap.servers", "both", ""),
    (
        "startingTimestamp",
        "both",
        "The same: [`startingTimestamp`](#startingtimestamp); also takes ISO-8601 times. Only "
        "one starting rule may be set (Spark takes `startingTimestamp`, else "
        "`startingOffsetsByTimestamp`, else `startingOffsets`, and ignores the others).",
    ),
    (
        "startingOffsetsByTimestamp",
        "both",
        "The same: [`startingOffsetsByTimestamp`](#startingoffsetsbytimestamp); partitions it "
        "does not name start by the default (Spark wants every partition named).",
    ),
    (
        "startingOffsets",
        "both",
        "The same: [`startingOffsets`](#startingoffsets), but a stream starts at `earliest` "
        "by default (Spark's: `latest`), an archive being there to be read; partitions a JSON "
        "map does not name start at earliest.",
    ),
    ("endingTimestamp", "batch", "The same: [`endingTimestamp`](#endingtimestamp)."),
    (
        "endingOffsetsByTimestamp",
        "batch",
        "The same: [`endingOffsetsByTimestamp`](#endingoffsetsbytimestamp).",
    ),
    ("endingOffsets", "batch", "The same: [`endingOffsets`](#endingoffsets)."),
    (
        "failOnDataLoss",
        "both",
        "The same: [`failOnDataLoss`](#failondataloss), from the archive's own evidence; the "
        "default is `true` for streams as in Spark, `false` for batch reads (Spark's: `true`).",
    ),
    ("kafkaConsumer.pollTimeoutMs", "both", ""),
    ("fetchOffset.numRetries", "both", ""),
    ("fetchOffset.retryIntervalMs", "both", ""),
    (
        "maxOffsetsPerTrigger",
        "streaming",
        "The same: [`maxOffsetsPerTrigger`](#maxoffsetspertrigger), shared as Spark shares it, "
        "with the offsets rounding down leaves unused handed out.",
    ),
    (
        "minOffsetsPerTrigger",
        "streaming",
        "The same: [`minOffsetsPerTrigger`](#minoffsetspertrigger).",
    ),
    ("maxTriggerDelay", "streaming", "The same: [`maxTriggerDelay`](#maxtriggerdelay)."),
    (
        "minPartitions",
        "both",
        "The same: [`minPartitions`](#minpartitions), splitting by bytes at batch boundaries; "
        "streams: 2 by default.",
    ),
    (
        "maxRecordsPerPartition",
        "both",
        "The same: [`maxRecordsPerPartition`](#maxrecordsperpartition), cut at batch boundaries "
        "(a batch holding more is a split of its own).",
    ),
    ("groupIdPrefix", "both", ""),
    ("kafka.group.id", "both", ""),
    (
        "includeHeaders",
        "both",
        "The same: [`includeHeaders`](#includeheaders), but `true` by default (Spark's: `false`).",
    ),
    (
        "startingOffsetsByTimestampStrategy",
        "both",
        "The same: [`startingOffsetsByTimestampStrategy`](#startingoffsetsbytimestampstrategy).",
    ),
    (
        "kafka.isolation.level",
        "both",
        "The same: [`isolationLevel`](#isolationlevel), of which it is another name.",
    ),
    ("kafka.auto.offset.reset", "both", ""),
    ("kafka.<setting>", "both", ""),
)


def _refuse_spark_kafka_option(name: str) -> None:
    """Raise for an option of Spark's Kafka source that does not apply to an archive."""
    lower = name.lower()
    reason = _REFUSED_LOWER.get(lower)
    if reason is None and lower.startswith("kafka."):
        reason = SPARK_KAFKA_REFUSED["kafka.<setting>"]
    if reason is not None:
        raise OptionError(
            f"option {name!r} of Spark's Kafka source does not apply to an archive: {reason}",
            doc=f"{OPTIONS_DOC}#{doc_anchor(SPARK_KAFKA_SECTION)}",
        )


def _documented(parser: Any, name: str, value: Any) -> Any:
    """``parser(name, value)``, its OptionError pointing to the option's reference entry."""
    try:
        return parser(name, value)
    except OptionError as e:
        if e.doc is not None:
            raise
        raise OptionError(str(e), doc=doc_ref(name)) from None


def _parse_paths(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        s = value.strip()
        if s.startswith("["):
            try:
                out = json.loads(s)
            except json.JSONDecodeError:
                raise OptionError(
                    f"option 'paths': not a JSON list: {scrub(repr(value), ())}"
                ) from None
            return [str(p) for p in out]
        return [s] if s else []
    return [str(p) for p in value]


def _unknown_message(name: str) -> str:
    import difflib

    close = difflib.get_close_matches(name.lower(), list(_BY_LOWER), n=1, cutoff=0.6)
    hint = f"; did you mean {_BY_LOWER[close[0]]!r}?" if close else ""
    known = ", ".join(sorted(OPTION_NAMES))
    return f"unknown option {name!r}{hint} (known: {known}, and fs.<store>.<argument>)"


def _check_combinations(o: ReadOptions) -> None:
    starts = [
        n
        for n, v in (
            ("startingOffsets", o.starting_offsets != "earliest"),
            ("startingTimestamp", o.starting_timestamp is not None),
            ("startingOffsetsByTimestamp", o.starting_offsets_by_timestamp is not None),
        )
        if v
    ]
    ends = [
        n
        for n, v in (
            ("endingOffsets", o.ending_offsets != "latest"),
            ("endingTimestamp", o.ending_timestamp is not None),
            ("endingOffsetsByTimestamp", o.ending_offsets_by_timestamp is not None),
        )
        if v
    ]
    # Spark's Kafka source applies one starting rule: the timestamp ones take precedence. We are
    # stricter and reject ambiguous combinations rather than silently ignoring one of them.
    if len(starts) > 1:
        raise OptionError(
            f"options {' and '.join(starts)} both set a start; use only one",
            doc=doc_ref(starts[0]),
        )
    if len(ends) > 1:
        raise OptionError(
            f"options {' and '.join(ends)} both set an end; use only one", doc=doc_ref(ends[0])
        )
    limits = [
        n
        for n, v in (
            ("maxOffsetsPerTrigger", o.max_offsets_per_trigger),
            ("maxBytesPerTrigger", o.max_bytes_per_trigger),
            ("maxFilesPerTrigger", o.max_files_per_trigger),
        )
        if v is not None
    ]
    if len(limits) > 1:  # Spark gives a Python stream one read limit
        raise OptionError(
            f"options {' and '.join(limits)} both limit a micro-batch; use one",
            doc=doc_ref(limits[0]),
        )
    chosen = [
        n
        for n, v in (
            ("assign", o.assign),
            ("subscribe", o.subscribe),
            ("subscribePattern", o.subscribe_pattern),
        )
        if v is not None
    ]
    if len(chosen) > 1:  # Spark's Kafka source: "Only one of the following options can be ..."
        raise OptionError(
            "Only one of the following options can be specified: assign, subscribe, "
            f"subscribePattern (got {' and '.join(chosen)})",
            doc=doc_ref(chosen[0]),
        )
    low, high = o.min_offsets_per_trigger, o.max_offsets_per_trigger
    if low is not None and high is not None and low > high:
        raise OptionError(
            f"The value of minOffsetsPerTrigger({low}) is higher than the "
            f"maxOffsetsPerTrigger({high})",
            doc=doc_ref("minOffsetsPerTrigger"),
        )
    if o.decode != "raw" and (o.value_format != "raw" or o.key_format != "raw"):
        raise OptionError(
            "options 'decode' and 'valueFormat'/'keyFormat' do not combine: decode reads "
            "Kafka's internal topics, whose records are not Schema Registry payloads",
            doc=doc_ref("valueFormat"),
        )
    if o.modified_before is not None and o.modified_after is not None:
        if o.modified_after >= o.modified_before:
            raise OptionError(
                "option 'modifiedAfter' must be earlier than 'modifiedBefore'",
                doc=doc_ref("modifiedAfter"),
            )
