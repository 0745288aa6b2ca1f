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
from .redact import query_names, redact_uri, scrub, secret_strings, show_value, uri_password

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
    concurrency: int = 16  # requests in flight for many files at once (planning, a task's reads)

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
    # ranges (Spark Kafka source names)
    starting_offsets: str | PartitionMap = "earliest"
    ending_offsets: str | PartitionMap = "latest"
    starting_timestamp: int | None = None
    ending_timestamp: int | None = None
    starting_offsets_by_timestamp: PartitionMap | None = None
    ending_offsets_by_timestamp: PartitionMap | None = None
    fail_on_data_loss: bool = False
    offset_gaps: str = "auto"
    replicas: str = "error"
    min_partitions: int | None = None
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


# Spark option name (case-insensitive) -> (field name, parser)
_PARSERS: dict[str, tuple[str, Any]] = {
    "verifyChecksums": ("verify_checksums", _bool),
    "includeHeaders": ("include_headers", _bool),
    "includeMetadata": ("include_metadata", _bool),
    "includeControlRecords": ("include_control_records", _bool),
    "maxBatchBytes": ("max_batch_bytes", _max_batch_bytes),
    "recordsPerBatch": ("records_per_batch", lambda n, v: _int(n, v, 1)),
    "mode": ("mode", lambda n, v: _choice(n, v, MODES, True)),
    "compiledCodecs": ("compiled_codecs", _bool),
    "decode": ("decode", lambda n, v: _choice(n, v, DECODES, False)),
    "isolationLevel": ("isolation_level", lambda n, v: _choice(n, v, ISOLATION_LEVELS, False)),
    "kafka.isolation.level": (
        "isolation_level",
        lambda n, v: _choice(n, v, ISOLATION_LEVELS, False),
    ),
    "startingOffsets": ("starting_offsets", lambda n, v: _offsets(n, v, "earliest")),
    "endingOffsets": ("ending_offsets", lambda n, v: _offsets(n, v, "latest")),
    "startingTimestamp": ("starting_timestamp", lambda n, v: _timestamp_bound(n, v, 0)),
    "endingTimestamp": ("ending_timestamp", lambda n, v: _timestamp_bound(n, v, 0)),
    "startingOffsetsByTimestamp": (
        "starting_offsets_by_timestamp",
        lambda n, v: _partition_json(n, v, False, value=_timestamp_bound),
    ),
    "endingOffsetsByTimestamp": (
        "ending_offsets_by_timestamp",
        lambda n, v: _partition_json(n, v, False, value=_timestamp_bound),
    ),
    "failOnDataLoss": ("fail_on_data_loss", _bool),
    "offsetGaps": ("offset_gaps", lambda n, v: _choice(n, v, OFFSET_GAPS, False)),
    "replicas": ("replicas", lambda n, v: _choice(n, v, REPLICAS, False)),
    "minPartitions": ("min_partitions", lambda n, v: _int(n, v, 1)),
    "maxPartitionBytes": ("max_partition_bytes", _size),
    "openCostInBytes": ("open_cost_in_bytes", lambda n, v: _size(n, v) if str(v) != "0" else 0),
    "recursiveFileLookup": ("recursive_file_lookup", _bool),
    "pathGlobFilter": ("path_glob_filter", lambda n, v: str(v)),
    "modifiedBefore": ("modified_before", _timestamp_ms),
    "modifiedAfter": ("modified_after", _timestamp_ms),
    "ignoreMissingFiles": ("ignore_missing_files", _bool),
    "ignoreCorruptFiles": ("ignore_corrupt_files", _bool),
    "allowEmpty": ("allow_empty", _bool),
    "readAheadBytes": ("store.read_ahead_bytes", _size),
    "readAheadRequests": ("store.read_ahead_requests", lambda n, v: _int(n, v, 0)),
    "remoteRetries": ("store.retries", lambda n, v: _int(n, v, 0)),
    "remoteConcurrency": ("store.concurrency", lambda n, v: _int(n, v, 1)),
    "remoteHeaderWalk": ("remote_header_walk", _bool),
    "maxOffsetsPerTrigger": ("max_offsets_per_trigger", lambda n, v: _int(n, v, 1)),
    "maxBytesPerTrigger": ("max_bytes_per_trigger", _size),
    "maxFilesPerTrigger": ("max_files_per_trigger", lambda n, v: _int(n, v, 1)),
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
        if lower.startswith("fs."):
            if value is not None:
                fs_args.append(parse_fs_option(raw_name, value))
                seen[f"fs:{lower}"] = raw_name
            continue
        canonical = _BY_LOWER.get(lower)
        if canonical is None:
            raise OptionError(_unknown_message(raw_name))
        field_name, parser = _PARSERS[canonical]
        if value is None:
            continue
        if field_name in seen and seen[field_name] != canonical:
            raise OptionError(f"options {seen[field_name]!r} and {canonical!r} are the same option")
        seen[field_name] = canonical
        values[field_name] = parser(canonical, value)
    if paths is not None:
        single = isinstance(paths, (str, bytes, os.PathLike))
        collected_paths.extend(os.fsdecode(p) for p in ([paths] if single else list(paths)))
    for p in collected_paths:
        check_path(p)
    store = {k[6:]: values.pop(k) for k in list(values) if k.startswith("store.")}
    if fs_args or store:
        values["store"] = StoreOptions(args=tuple(sorted(fs_args, key=lambda a: a[:2])), **store)
    opts = ReadOptions(paths=tuple(collected_paths), given=tuple(seen.values()), **values)
    _check_combinations(opts)
    return opts


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
        raise OptionError(f"options {' and '.join(starts)} both set a start; use only one")
    if len(ends) > 1:
        raise OptionError(f"options {' and '.join(ends)} both set an end; use only one")
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
        raise OptionError(f"options {' and '.join(limits)} both limit a micro-batch; use one")
    if o.modified_before is not None and o.modified_after is not None:
        if o.modified_after >= o.modified_before:
            raise OptionError("option 'modifiedAfter' must be earlier than 'modifiedBefore'")
