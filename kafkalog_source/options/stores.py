"""Store options: the ``fs.<store>.<argument>`` options, and the paths a read may be given.

A native store (``s3``, ``gs``, ``abfs``, ``hdfs``) takes the constructor arguments of pyarrow's
filesystem (obstore's client maps them onto its settings, :mod:`~kafkalog_source.transport`);
each value is typed here as that constructor wants it, and an argument the store does not take
is refused with a "did you mean" hint. Values are masked wherever they could be shown
(:mod:`kafkalog_source.redact`); a path that carries a credential is refused
(:func:`check_path`).
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

from ..errors import OptionError
from ..redact import query_names, redact_uri, show_value, uri_password

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
