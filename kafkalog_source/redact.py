"""What may be shown of a value the user gave: the one home of masking.

Mask by default: a store option's value is shown (in ``repr``, error messages, logs) only when
its name is known to be harmless (an endpoint, a region, a timeout, a flag); every other value
is shown as :data:`MASK`, whatever its name. A URI is shown with the password of its
``user:password@`` part masked, and the values of the query parameters that carry credentials
(by their names; all of a signed URL's). Messages written by others
(a store's client, a constructor) are scrubbed of every string the masked options hold
(:func:`scrub`).

Nothing here imports anything but the standard library: any layer may use it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, unquote_plus, urlsplit

MASK = "****"

# Arguments whose values are shown, per store (``s3``, ``gs``, ``abfs``, ``hdfs``). Every other
# argument of these stores is masked: keys, tokens, secrets, and also what may hold one
# (proxy_options, extra_conf, default_metadata, external_id).
_SHOWN: dict[str, frozenset[str]] = {
    "s3": frozenset(
        {
            "anonymous",
            "region",
            "request_timeout",
            "connect_timeout",
            "scheme",
            "endpoint_override",
            "background_writes",
            "allow_delayed_open",
            "allow_bucket_creation",
            "allow_bucket_deletion",
            "check_directory_existence_before_creation",
            "force_virtual_addressing",
            "tls_ca_file_path",
            "load_frequency",
            "role_arn",
            "session_name",
            "retry_max_attempts",
        }
    ),
    "gs": frozenset(
        {
            "anonymous",
            "target_service_account",
            "credential_token_expiration",
            "default_bucket_location",
            "scheme",
            "endpoint_override",
            "retry_time_limit",
            "project_id",
        }
    ),
    "abfs": frozenset(
        {
            "account_name",
            "blob_storage_authority",
            "blob_storage_scheme",
            "dfs_storage_authority",
            "dfs_storage_scheme",
            "client_id",
            "tenant_id",
        }
    ),
    "hdfs": frozenset(
        {"host", "port", "user", "replication", "buffer_size", "default_block_size", "kerb_ticket"}
    ),
}
# Arguments of any other store (fsspec protocols) whose values are shown.
_SHOWN_ANY = frozenset(
    {
        "host",
        "port",
        "user",
        "username",
        "timeout",
        "anon",
        "anonymous",
        "region",
        "region_name",
        "endpoint_url",
        "block_size",
        "tls",
        "secure",
        "use_ssl",
        "use_https",
        "encoding",
        "auto_mkdir",
    }
)

# Shorter strings are not scrubbed from others' messages: they would match ordinary words.
_MIN_SCRUBBED = 4


def is_shown(store: str, arg: str) -> bool:
    """Whether the value of ``fs.<store>.<arg>`` is known to be harmless, and may be shown."""
    return arg.lower() in _SHOWN.get(store, _SHOWN_ANY)


def show_value(store: str, arg: str, value: Any) -> str:
    """The value of ``fs.<store>.<arg>`` as messages show it: its ``repr`` (a URI redacted)
    when the argument is known to be harmless, else :data:`MASK`."""
    if not is_shown(store, arg):
        return MASK
    return repr(redact_uri(value)) if isinstance(value, str) else repr(value)


def _leaves(value: Any) -> Iterator[str]:
    """Every string inside ``value`` (dict values, list items, a URI's password and query
    values too)."""
    if isinstance(value, str):
        yield from _forms(value)
        parts = _split(value)
        if parts is not None:
            userinfo = parts.netloc.rpartition("@")[0]
            if ":" in userinfo:
                yield from _forms(userinfo.split(":", 1)[1])
            query = parts.query
        else:  # a query string of its own: a SAS token
            query = value.lstrip("?") if "=" in value else ""
        for _, v in parse_qsl(query):
            yield from _forms(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _leaves(v)


def _forms(s: str) -> Iterator[str]:
    """``s`` as given and as a URL carries it (percent-encoded)."""
    yield s
    yield from {quote(s, safe=""), quote(s, safe="/:"), quote_plus(s)} - {s}


def secret_strings(args: Iterable[tuple[str, str, Any]]) -> list[str]:
    """The strings held by the masked ones of ``(store, argument, value)`` store options,
    longest first: what :func:`scrub` removes from others' messages."""
    found = {
        s
        for store, arg, value in args
        if not is_shown(store, arg)
        for s in _leaves(value)
        if len(s) >= _MIN_SCRUBBED
    }
    return sorted(found, key=lambda s: (-len(s), s))


# Environment variables whose values are credentials the stores' clients read by themselves
# (the AWS, Azure and Google chains): scrubbed from every message, as the options' are.
_SECRET_VARIABLES = (
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_ACCESS_KEY",
    "AZURE_STORAGE_MASTER_KEY",
    "AZURE_STORAGE_KEY",
    "AZURE_STORAGE_SAS_KEY",
    "AZURE_STORAGE_SAS_TOKEN",
    "AZURE_STORAGE_TOKEN",
    "AZURE_STORAGE_CLIENT_SECRET",
    "AZURE_CLIENT_SECRET",
    "AZURE_STORAGE_CONNECTION_STRING",
    "GOOGLE_SERVICE_ACCOUNT_KEY",
    "GOOGLE_OAUTH_ACCESS_TOKEN",
)

# What a store's answer or a client's message may carry of a credential, whatever its value:
# the whole element (S3 echoes a refused token in <Token-0>, and the canonical request it
# signed, headers and all, in <CanonicalRequest>), or the value after the name.
_SECRET_ELEMENTS = re.compile(
    r"(<(Token-\d+|CanonicalRequest(?:Bytes)?|StringToSign(?:Bytes)?|SignatureProvided)>)"
    r".*?(</\2>|$)",
    re.DOTALL,
)
_SECRET_VALUES = re.compile(
    # a header (``name: value``) or a query / connection-string parameter (``name=value``)
    r"(?i)((?<![A-Za-z0-9_./-])(?:x-amz-security-token|x-amz-signature|x-amz-credential"
    r"|x-goog-signature|x-goog-credential|signature|sig|accountkey|sharedaccesssignature"
    r"|access_token|id_token|refresh_token|client_secret|aws_secret_access_key"
    r"|aws_session_token|secret_access_key|session_token|account_key|sas_key|sas_token"
    r"|x-ms-copy-source-authorization)\s*[:=]\s*)"
    r"(?!\*\*\*\*)[^\s&;,\"'<>]+"
)
_SECRET_SCHEMES = re.compile(
    # an Authorization header's credentials, after its scheme (as headers spell it): a token
    # of 16 or more characters with a digit, "=" or "/" in it ("Basic authentication failed"
    # and "Basic Multilingual Plane" are prose)
    r"((?<![A-Za-z0-9_-])(?:Bearer|bearer|Basic|SharedKey|SharedKeyLite)\s+(?:[^\s:\"'<>]+:)?)"
    r"(?!\*\*\*\*)(?=[A-Za-z0-9\-._~+/]*[0-9=/])[A-Za-z0-9\-._~+/]{16,}=*"
)


def environment_secrets() -> list[str]:
    """The credentials held by the environment variables the stores' clients read (the AWS,
    Azure and Google chains: ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``,
    ``AZURE_STORAGE_ACCOUNT_KEY``, ...), as :func:`secret_strings` gives them."""
    found = set()
    for name in _SECRET_VARIABLES:
        value = os.environ.get(name)
        if value:
            found.update(s for s in _leaves(value) if len(s) >= _MIN_SCRUBBED)
    return sorted(found, key=lambda s: (-len(s), s))


# the query parameters whose values are credentials or part of one, by their names: tokens,
# passwords, secrets, keys, signatures, credentials, ... (not ``sslmode=require``,
# ``application_name=kafkalog``, ``list-type=2`` or ``prefix=logs/``, which say nothing secret,
# and which scrubbing would cut out of every message that says "required" or "kafkalog"); the
# presigned URL families' own (``X-Amz-*``, ``X-Goog-*``, ``X-Ms-*``); the fields of an Azure
# SAS token (``sv``, ``sp``, ``se``, ...: with its ``sig`` they are the grant)
_SECRET_QUERY_NAME = re.compile(
    r"(?i)token|pass|pwd|secret|key|cred|sig|auth|sas|session|cookie|jwt|ticket|hmac|assertion"
    r"|^code$|^x-(amz|goog|ms)-"
)
_SAS_FIELDS = frozenset(
    {"sv", "ss", "srt", "sp", "se", "st", "spr", "sr", "si", "sip", "sdd", "ses", "skoid",
     "sktid", "skt", "ske", "sks", "skv", "saoid", "suoid", "scid", "sduoid", "rscc", "rscd",
     "rsce", "rscl", "rsct"}
)  # fmt: skip
# the parameters that sign a URL: every parameter of a signed URL is part of what it grants
_SIGNATURE_NAME = re.compile(r"(?i)^(sig|signature|x-amz-signature|x-goog-signature)$")


def secret_query_names(names: Iterable[str]) -> set[str]:
    """Those of a query string's parameter ``names`` whose values are masked: names that say
    credential (token, password, secret, key, signature, ...), the presigned URL families'
    ``X-Amz-*``/``X-Goog-*``/``X-Ms-*`` and an Azure SAS token's fields; every one of them when
    one signs the URL (``sig``, ``Signature``, ``X-Amz-Signature``, ``X-Goog-Signature``)."""
    names = list(names)
    if any(_SIGNATURE_NAME.match(n) for n in names):
        return set(names)
    return {n for n in names if _SECRET_QUERY_NAME.search(n) or n.lower() in _SAS_FIELDS}


def uri_secrets(uri: str) -> list[str]:
    """The secrets a URI that is itself shown (redacted) carries: the password of its
    ``user:password@`` part and its query values (``?token=...``), in the forms a URL carries
    them, longest first: a message that shows them outside the URI form (an HTTP client's
    ``url: /v1/config?token=...``) is scrubbed of them by :func:`scrub`. Query values count
    only where :func:`redact_uri` masks them (:func:`secret_query_names`)."""
    parts = _split(uri)
    if parts is None:
        return []
    found: set[str] = set()
    userinfo = parts.netloc.rpartition("@")[0]
    if ":" in userinfo:
        found.update(_forms(userinfo.split(":", 1)[1]))
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    secret = secret_query_names(k for k, _ in pairs)
    for k, v in pairs:
        if k in secret:
            found.update(_forms(v))
    for raw in parts.query.split("&"):  # as written, however it is encoded
        k, eq, v = raw.partition("=")
        if eq and unquote_plus(k) in secret:
            found.add(v)
    return sorted((f for f in found if len(f) >= _MIN_SCRUBBED), key=lambda f: (-len(f), f))


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every one of ``secrets`` (see :func:`secret_strings`) and of the
    environment's credentials (:func:`environment_secrets`) replaced by :data:`MASK`, the
    credentials a store's answer or a header may carry masked whatever their value (S3's
    ``<Token-0>``, ``<CanonicalRequest>`` and ``<StringToSign>``, ``X-Amz-Security-Token``,
    ``Signature=``, ``sig=``, ``AccountKey=``, ``Authorization: Bearer ...``), and every URI in
    it redacted (:func:`redact_uri`)."""
    for s in sorted({*secrets, *environment_secrets()}, key=lambda s: (-len(s), s)):
        if s:
            text = text.replace(s, MASK)
    text = _SECRET_ELEMENTS.sub(lambda m: f"{m.group(1)}{MASK}{m.group(3)}", text)
    text = _SECRET_VALUES.sub(lambda m: f"{m.group(1)}{MASK}", text)
    text = _SECRET_SCHEMES.sub(lambda m: f"{m.group(1)}{MASK}", text)
    return _URI_IN_TEXT.sub(lambda m: redact_uri(m.group(0)), text)


_URI_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]+://[^\s'\"<>]+")


def _split(uri: str) -> Any:
    """``urlsplit(uri)`` when ``uri`` is a URI with an authority (``scheme://...``), else None."""
    if "://" not in uri:
        return None
    try:
        parts = urlsplit(uri)
    except ValueError:
        return None
    if len(parts.scheme) < 2:
        return None
    return parts


def redact_uri(uri: str) -> str:
    """``uri`` as messages show it: the password of a ``user:password@`` part and the values of
    the query parameters that carry credentials masked (:func:`secret_query_names`: every one of
    a signed URL's; ``list-type=2&prefix=logs/`` stays as it is). An abfs URI's
    ``container@account`` is not a credential and stays; in other URIs the whole
    ``user:password@`` part is masked. A local path is returned as is."""
    parts = _split(uri)
    if parts is None:
        return uri
    out = uri
    if "@" in parts.netloc:
        userinfo, _, host = parts.netloc.rpartition("@")
        if parts.scheme.lower() in ("abfs", "abfss"):
            shown = userinfo if ":" not in userinfo else f"{userinfo.split(':', 1)[0]}:{MASK}"
        else:
            shown = MASK
        out = out.replace(parts.netloc, f"{shown}@{host}", 1)
    if "=" in parts.query:
        head, _, _ = out.partition("?")
        written = parts.query.split("&")
        names = [unquote_plus(p.split("=", 1)[0]) for p in written if "=" in p]
        secret = secret_query_names(names)
        query = "&".join(
            f"{p.split('=', 1)[0]}={MASK}"
            if "=" in p and unquote_plus(p.split("=", 1)[0]) in secret
            else p
            for p in written
        )
        out = f"{head}?{query}" + (f"#{parts.fragment}" if parts.fragment else "")
    return out


def query_names(uri: str) -> list[str]:
    """The names of the parameters in ``uri``'s query string (``k=v`` pairs only: a ``?`` of a
    glob pattern is not a query)."""
    parts = _split(uri)
    if parts is None or "=" not in parts.query:
        return []
    return [k for k, _ in parse_qsl(parts.query, keep_blank_values=True)]


def uri_password(uri: str) -> bool:
    """Whether ``uri`` carries a ``user:password@`` part (for an abfs URI, ``container:KEY@``)."""
    parts = _split(uri)
    if parts is None or "@" not in parts.netloc:
        return False
    return ":" in parts.netloc.rpartition("@")[0]


__all__ = [
    "MASK",
    "environment_secrets",
    "is_shown",
    "query_names",
    "redact_uri",
    "scrub",
    "secret_query_names",
    "secret_strings",
    "show_value",
    "uri_password",
]
