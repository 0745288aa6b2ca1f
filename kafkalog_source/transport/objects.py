"""S3, GCS and Azure objects read with one ``GET`` each: the ``obstore`` client.

pyarrow's Python API cannot open an object without a ``HEAD`` (``open_input_file`` and
``open_input_stream`` take only a path), and its listing returns only once every page is in.
obstore (Python bindings of the Rust ``object_store`` crate, the client of Apache Arrow's Rust
implementation, DataFusion and Delta Lake) gets a byte range of an object by its key alone (the
answer carries the object's size and modification time now), lists a prefix in streamed pages
that carry each object's size, and retries throttling, server errors and dropped connections
with backoff. So a bucket of thousands of small segments costs a listing and one ``GET`` per
object, with requests in flight from many threads (its calls release the GIL).

:func:`object_client` maps the ``fs.s3.*``, ``fs.gs.*`` and ``fs.abfs.*`` options (pyarrow's
constructor arguments, which stay the documented names) onto obstore's settings:

==================================  ========================================================
option                              obstore
==================================  ========================================================
``fs.s3.access_key``,               ``access_key_id``, ``secret_access_key``,
``secret_key``, ``session_token``   ``session_token``
``fs.s3.anonymous``                 ``skip_signature``
``fs.s3.region``                    ``region``
``fs.s3.endpoint_override``,        ``endpoint`` (``scheme://`` prefixed when it has none;
``fs.s3.scheme``                    ``http`` allowed when it says so)
``fs.s3.force_virtual_addressing``  ``virtual_hosted_style_request``
``fs.s3.role_arn``, ``session_      an AssumeRole credential provider (boto3's STS client;
name``, ``external_id``             without boto3 the read goes through pyarrow)
``fs.s3.request_timeout``,          client ``read_timeout`` (each read of an answer: the
``connect_timeout``                 wait for its next bytes; default 30 s) and
                                    ``connect_timeout`` (default 5 s); no deadline for
                                    the whole request (obstore's ``timeout``, 30 s by
                                    default, would end a large ranged GET on a slow link)
``fs.s3.proxy_options``             client ``proxy_url``
``fs.s3.tls_ca_file_path``          client ``root_certificate`` (the file's PEM text)
``fs.s3.retry_max_attempts``        ``max_retries`` = attempts - 1 (default 3 attempts)
``fs.gs.anonymous``                 ``skip_signature``
``fs.gs.access_token``              a credential provider giving the token
``fs.gs.endpoint_override``,        ``base_url``
``fs.gs.scheme``
``fs.gs.retry_time_limit``          ``retry_timeout``
``fs.abfs.account_name``,           ``account_name``, ``account_key``, ``sas_key``,
``account_key``, ``sas_token``,     ``client_id``, ``client_secret``, ``tenant_id``
``client_id``, ``client_secret``,
``tenant_id``
no ``fs.abfs`` credential, none     ``use_azure_cli`` (when ``az`` is on ``PATH`` and
in the environment                  logged in)
``fs.abfs.blob_storage_authority``  ``endpoint`` (``{scheme}://{account}{authority}`` for an
``blob_storage_scheme``             authority starting with ``.``, else the emulator form
                                    ``{scheme}://{authority}/{account}``)
==================================  ========================================================

Options about writing (``background_writes``, ``allow_bucket_creation``, ``default_metadata``,
...) and the DFS endpoint do not concern reads. An option with no counterpart (``fs.s3.
load_frequency``, ``fs.gs.target_service_account``, ``fs.s3.role_arn`` without boto3) makes
:func:`object_client` return None: that store is read through pyarrow's filesystem as before
(a ``HEAD`` per open). Credentials otherwise come from obstore's own chains: the AWS variables
(``AWS_ACCESS_KEY_ID``, ..., web identity, container and instance-role credentials), a profile's
keys in the shared files (read by :class:`~.aws.ProfileCredentials` when obstore asks, at most
once a minute, so that renewed keys are used; a profile that needs an SSO login, a process or a
role goes through boto3's session when boto3 is installed, else through pyarrow, its answers kept
until the credentials expire), ``GOOGLE_APPLICATION_CREDENTIALS`` and the metadata server, the ``AZURE_*`` variables
and managed identities.

A ranged ``GET`` may be conditional on the object's entity tag (``If-Match`` with the ETag a
listing or an earlier answer gave; obstore's ``if_match``): a store that finds the object
rewritten since answers 412 Precondition Failed, raised as :class:`PreconditionFailed`
(:class:`~.remote.RemoteFileSource` reports it as a file changed while read).

Errors come out as the ``OSError`` family that :mod:`.failures` tells apart: a missing object as
``FileNotFoundError``, refused credentials as ``PermissionError``, the rest as ``OSError``
carrying the client's message (which names the status, the store's error code and the URL),
scrubbed here of the store's credentials, the environment's and whatever the store's answer
echoes of them (:func:`~kafkalog_source.redact.scrub`); the client's own exception is not
chained to it.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from ..redact import scrub, secret_strings
from .aws import ProfileCredentials, endpoints_ignored, profile_credentials
from .known import Listed

log = logging.getLogger("kafkalog")

DEFAULT_ATTEMPTS = 3  # pyarrow's S3 default (AwsStandardS3RetryStrategy)
DEFAULT_CONNECT_TIMEOUT = 5.0  # seconds to connect (obstore's default)
DEFAULT_READ_TIMEOUT = 30.0  # seconds a read of an answer may wait for its next bytes
RENEW = timedelta(minutes=30)  # how long credentials that state no expiry are kept
NO_DEADLINE = timedelta(days=7)  # obstore's ``timeout`` (the whole request): none in effect
_LIST_PAGE = 1000  # objects per listing page (S3's most)


class Unsupported(Exception):
    """An option obstore has no counterpart for: read that store through pyarrow."""


class RangeNotSatisfiable(OSError):
    """A ranged ``GET`` that starts at or past the object's end (HTTP 416): it shrank."""


class PreconditionFailed(OSError):
    """A ranged ``GET`` conditional on the object's entity tag (``If-Match``) that the store
    refused (HTTP 412 Precondition Failed): the object is no longer the version that tag names
    (it was rewritten or replaced)."""


def _seconds(v: Any) -> timedelta:
    return v if isinstance(v, timedelta) else timedelta(seconds=float(v))


def _endpoint(value: str, scheme: str | None) -> str:
    return value if "://" in value else f"{scheme or 'https'}://{value}"


def _proxy_url(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        host = value.get("host")
        if not host:
            raise Unsupported("proxy_options")
        auth = ""
        if value.get("username"):
            auth = f"{value['username']}:{value.get('password', '')}@"
        port = f":{value['port']}" if value.get("port") else ""
        return f"{value.get('scheme', 'http')}://{auth}{host}{port}"
    raise Unsupported("proxy_options")


def _client_options(kwargs: dict[str, Any], endpoint: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        # a connection, then each read of the answer, has its deadline; the whole request has
        # none (obstore's default of 30 s ends a large ranged GET on a slow link)
        "connect_timeout": _seconds(kwargs.get("connect_timeout") or DEFAULT_CONNECT_TIMEOUT),
        "read_timeout": _seconds(kwargs.get("request_timeout") or DEFAULT_READ_TIMEOUT),
        "timeout": NO_DEADLINE,
    }
    if endpoint is not None and endpoint.lower().startswith("http://"):
        out["allow_http"] = True
    if kwargs.get("proxy_options"):
        out["proxy_url"] = _proxy_url(kwargs["proxy_options"])
    if kwargs.get("tls_ca_file_path"):
        with open(kwargs["tls_ca_file_path"], "rb") as f:
            out["root_certificate"] = f.read()
    return out


def _retry_config(attempts: int | None, limit: Any = None) -> dict[str, Any]:
    n = DEFAULT_ATTEMPTS if attempts is None else max(1, int(attempts))
    out: dict[str, Any] = {
        "max_retries": n - 1,
        "backoff": {
            "init_backoff": timedelta(milliseconds=100),
            "max_backoff": timedelta(seconds=5),
            "base": 2,
        },
        "retry_timeout": _seconds(limit) if limit is not None else timedelta(seconds=60),
    }
    return out


# the endpoint variables obstore's S3 client reads by itself
_ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")

_S3_IGNORED = {
    # about writing, or pyarrow's own behaviour, not reads
    "background_writes",
    "allow_delayed_open",
    "allow_bucket_creation",
    "allow_bucket_deletion",
    "check_directory_existence_before_creation",
    "default_metadata",
}


def _secrets_of(store: str, config: dict[str, Any], kwargs: dict[str, Any]) -> list[str]:
    """The credentials a store was configured with (its masked options, and the settings
    that hold a credential, a profile's keys among them), as :func:`scrub` takes them."""
    held = [(store, k, v) for k, v in config.items() if k in _SECRET_SETTINGS and v]
    return secret_strings([*held, *((store, k, v) for k, v in kwargs.items())])


def _s3_store(bucket: str, kwargs: dict[str, Any], region: str | None) -> tuple[Any, list[str]]:
    from obstore.store import S3Store

    known = {
        "access_key",
        "secret_key",
        "session_token",
        "anonymous",
        "region",
        "endpoint_override",
        "scheme",
        "force_virtual_addressing",
        "request_timeout",
        "connect_timeout",
        "proxy_options",
        "tls_ca_file_path",
        "retry_max_attempts",
        "role_arn",
        "session_name",
        "external_id",
    }
    other = set(kwargs) - known - _S3_IGNORED
    if other:
        raise Unsupported(", ".join(sorted(other)))
    config: dict[str, Any] = {}
    endpoint = kwargs.get("endpoint_override")
    if endpoint:
        endpoint = _endpoint(endpoint, kwargs.get("scheme"))
        # (obstore lets AWS_ENDPOINT_URL_S3 win over "endpoint", not over this name)
        config["aws_endpoint_url_s3"] = endpoint
    elif kwargs.get("scheme") == "http":
        raise Unsupported("scheme")
    elif any(os.environ.get(v) for v in _ENDPOINT_VARIABLES):
        # obstore reads these variables by itself: AWS's own endpoint, named, keeps them out
        if not endpoints_ignored():
            raise Unsupported("an endpoint in the environment that the AWS chain ignores")
        where = region or "us-east-1"
        config["aws_endpoint_url_s3"] = (
            f"https://{bucket}.s3.{where}.amazonaws.com"
            if kwargs.get("force_virtual_addressing")
            else f"https://s3.{where}.amazonaws.com"
        )
    if region:
        config["region"] = region
    if kwargs.get("force_virtual_addressing"):
        config["virtual_hosted_style_request"] = True
    provider = None
    if kwargs.get("anonymous"):
        config["skip_signature"] = True
    elif kwargs.get("role_arn"):
        provider = _assume_role(kwargs, region)
    elif kwargs.get("access_key") or kwargs.get("secret_key"):
        config["access_key_id"] = kwargs.get("access_key", "")
        config["secret_access_key"] = kwargs.get("secret_key", "")
        if kwargs.get("session_token"):
            config["session_token"] = kwargs["session_token"]
    elif not os.environ.get("AWS_ACCESS_KEY_ID"):
        keys = profile_credentials()
        if keys == "session":  # SSO, credential_process, a role: boto3 knows how
            provider = _boto3_session(region)
        elif keys is not None:  # read again as the files change (a tool renews them)
            provider = ProfileCredentials()
    secrets = _secrets_of("s3", config, kwargs)
    if provider is not None:
        provider = _Recording(provider, secrets)
    store = S3Store(
        bucket,
        config=config,
        client_options=_client_options(kwargs, endpoint),
        retry_config=_retry_config(kwargs.get("retry_max_attempts")),
        credential_provider=provider,
    )
    return store, secrets


class _Recording:
    """A credential provider whose answers' secrets are added to ``secrets`` (the list the
    client scrubs its errors of): credentials renewed while a stream runs are scrubbed too."""

    def __init__(self, provider: Any, secrets: list[str]) -> None:
        self._provider = provider
        self._secrets = secrets
        self._lock = threading.Lock()
        self.config = getattr(provider, "config", {})

    def __call__(self) -> Any:
        got = self._provider()
        held = [("s3", k, v) for k, v in got.items() if k in _SECRET_SETTINGS and v]
        new = secret_strings(held)
        with self._lock:
            # one slice assignment: a thread scrubbing with the list meanwhile sees it whole
            # before or after (sorting it in place shows other threads an empty list)
            self._secrets[:] = sorted({*self._secrets, *new}, key=lambda s: (-len(s), s))
        return got


class _Boto3Credentials:
    """The credentials of a boto3 session (an SSO login, a ``credential_process``, a role the
    profile assumes), renewed by botocore as they near their expiry. obstore's own
    ``Boto3CredentialProvider`` keeps each answer 30 minutes whatever the credentials' expiry
    (credentials that expire sooner failed a long stream); this one keeps an answer until the
    credentials expire (obstore asks again shortly before), at most ``RENEW`` when they say no
    expiry."""

    def __init__(self, session: Any) -> None:
        self.config: dict[str, Any] = {}
        if getattr(session, "region_name", None):
            self.config["region"] = session.region_name
        credentials = session.get_credentials()
        if credentials is None:
            raise Unsupported("an AWS profile boto3 finds no credentials in")
        self._credentials = credentials

    def __call__(self) -> dict[str, Any]:
        frozen = self._credentials.get_frozen_credentials()  # renewed when near expiry
        now = datetime.now(timezone.utc)
        expires = getattr(self._credentials, "_expiry_time", None)  # RefreshableCredentials
        until = now + RENEW
        if expires is not None:
            if expires.tzinfo is None:
                expires = expires.replace(tzinfo=timezone.utc)
            expires = expires.astimezone(timezone.utc)  # obstore takes this tzinfo only
            until = max(min(until, expires), now)
        return {
            "access_key_id": frozen.access_key,
            "secret_access_key": frozen.secret_key,
            "token": frozen.token,
            "expires_at": until,
        }


def _boto3_session(region: str | None) -> Any:
    try:
        import boto3
    except ImportError:
        raise Unsupported("an AWS profile that needs boto3") from None
    return _Boto3Credentials(boto3.Session(region_name=region))


def _assume_role(kwargs: dict[str, Any], region: str | None) -> Any:
    try:
        import boto3
        from obstore.auth.boto3 import StsCredentialProvider
    except ImportError:
        raise Unsupported("role_arn (needs boto3)") from None
    base = {}
    if kwargs.get("access_key"):
        base = {
            "aws_access_key_id": kwargs.get("access_key"),
            "aws_secret_access_key": kwargs.get("secret_key"),
            "aws_session_token": kwargs.get("session_token"),
        }
    request = {
        "RoleArn": kwargs["role_arn"],
        "RoleSessionName": kwargs.get("session_name") or "kafkalog",
    }
    if kwargs.get("external_id"):
        request["ExternalId"] = kwargs["external_id"]
    return StsCredentialProvider(boto3.Session(region_name=region, **base), **request)


def _gcs_store(bucket: str, kwargs: dict[str, Any]) -> tuple[Any, list[str]]:
    from obstore.store import GCSStore

    known = {"anonymous", "access_token", "credential_token_expiration", "endpoint_override",
             "scheme", "retry_time_limit", "project_id", "default_bucket_location",
             "default_metadata"}  # fmt: skip
    other = set(kwargs) - known
    if other:
        raise Unsupported(", ".join(sorted(other)))
    config: dict[str, Any] = {}
    endpoint = kwargs.get("endpoint_override")
    if endpoint:
        endpoint = _endpoint(endpoint, kwargs.get("scheme"))
        config["base_url"] = endpoint
    provider = None
    if kwargs.get("anonymous"):
        config["skip_signature"] = True
    elif kwargs.get("access_token"):
        token = kwargs["access_token"]

        def provider() -> dict[str, Any]:
            return {"token": token, "expires_at": None}

    store = GCSStore(
        bucket,
        config=config,
        client_options=_client_options(kwargs, endpoint),
        retry_config=_retry_config(None, kwargs.get("retry_time_limit")),
        credential_provider=provider,
    )
    return store, _secrets_of("gs", config, kwargs)


# Environment variables that give obstore's Azure client a credential (or a way to one) of its
# own: with any of them set, its chain decides
_AZURE_CREDENTIAL_VARIABLES = (
    "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCESS_KEY", "AZURE_STORAGE_MASTER_KEY",
    "AZURE_STORAGE_SAS_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_TOKEN",
    "AZURE_CLIENT_ID", "AZURE_STORAGE_CLIENT_ID", "AZURE_CLIENT_SECRET",
    "AZURE_STORAGE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_MSI_ENDPOINT",
    "AZURE_IDENTITY_ENDPOINT", "IDENTITY_ENDPOINT", "MSI_ENDPOINT", "AZURE_USE_AZURE_CLI",
    "AZURE_CREDENTIAL_TYPE", "AZURE_SKIP_SIGNATURE",
)  # fmt: skip


def _azure_cli_fallback(config: dict[str, Any]) -> bool:
    """Whether to get a token from the Azure CLI (``az account get-access-token``), as
    pyarrow's ``DefaultAzureCredential`` does: no key, SAS token or client credentials in the
    options or the environment, ``az`` on ``PATH`` and logged in (its token cache in
    ``$AZURE_CONFIG_DIR``, default ``~/.azure``). Otherwise obstore's chain applies (managed
    identity last)."""
    if any(config.get(k) for k in ("account_key", "sas_key", "client_id", "client_secret")):
        return False
    if any(os.environ.get(v) for v in _AZURE_CREDENTIAL_VARIABLES):
        return False
    if shutil.which("az") is None:
        return False
    home = os.environ.get("AZURE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".azure")
    try:
        names = os.listdir(home)
    except OSError:
        return False
    return any(n.startswith(("msal_token_cache", "accessTokens")) for n in names)


def _azure_store(container: str, account: str, kwargs: dict[str, Any]) -> tuple[Any, list[str]]:
    from obstore.store import AzureStore

    known = {"account_name", "account_key", "sas_token", "client_id", "client_secret",
             "tenant_id", "blob_storage_authority", "blob_storage_scheme",
             "dfs_storage_authority", "dfs_storage_scheme"}  # fmt: skip
    other = set(kwargs) - known
    if other:
        raise Unsupported(", ".join(sorted(other)))
    account = kwargs.get("account_name") or account
    config: dict[str, Any] = {"account_name": account}
    for ours, theirs in (
        ("account_key", "account_key"),
        ("client_id", "client_id"),
        ("client_secret", "client_secret"),
        ("tenant_id", "tenant_id"),
    ):
        if kwargs.get(ours):
            config[theirs] = kwargs[ours]
    if kwargs.get("sas_token"):
        config["sas_key"] = str(kwargs["sas_token"]).lstrip("?")
    if _azure_cli_fallback(config):
        config["use_azure_cli"] = True
    endpoint = None
    authority = kwargs.get("blob_storage_authority")
    if authority:
        scheme = kwargs.get("blob_storage_scheme") or "https"
        endpoint = (
            f"{scheme}://{account}{authority}"
            if authority.startswith(".")
            else f"{scheme}://{authority}/{account}"
        )
        config["endpoint"] = endpoint
    store = AzureStore(
        container,
        config=config,
        client_options=_client_options(kwargs, endpoint),
        retry_config=_retry_config(None),
    )
    return store, _secrets_of("abfs", config, kwargs)


@dataclass(frozen=True)
class Meta:
    """What an answer said of the object: its size, modification time and entity tag now
    (``etag`` empty where the store gives none)."""

    size: int
    mtime_ns: int
    etag: str = ""


def _meta(m: Any) -> Meta:
    lm = m.get("last_modified")
    return Meta(
        int(m["size"]), int(lm.timestamp() * 1e9) if lm is not None else 0, m.get("e_tag") or ""
    )


# obstore's settings whose values are credentials: scrubbed from its errors
_SECRET_SETTINGS = ("secret_access_key", "session_token", "account_key", "sas_key",
                    "client_secret", "token", "bearer_token")  # fmt: skip


_CERTIFICATE = re.compile(
    r"InvalidCertificate\(\s*(?:Other\(\s*OtherError\(\s*)?([A-Za-z]+)|certificate verify failed"
    r"|UnknownIssuer|invalid peer certificate[^\n\"]*"
)
_DNS = re.compile(r"dns error|failed to lookup address|Name or service not known|nodename nor "
                  r"servname|No address associated with hostname|Temporary failure in name "
                  r"resolution")  # fmt: skip
_TIMED_OUT = re.compile(r"kind: Timeout|\bTimedOut\b|operation timed out")
_HOST = re.compile(r"https?://([^/\s:,]+)")


def _connect_cause(full: str, text: str) -> str | None:
    """What the client's ``Debug source`` says of a request that failed on its way (obstore's
    message says only "error sending request" or "response body error"):
    ``certificate verify failed (<reason>)`` or ``name not resolved``, with the host, which a
    retry cannot fix; ``timed out``, which it may; None otherwise."""
    host = _HOST.search(text)
    where = f"host {host.group(1)}" if host else "the store's host"
    cert = _CERTIFICATE.search(full)
    if cert:
        reason = cert.group(1) if cert.lastindex else None
        return f"{where}: certificate verify failed" + (f" ({reason})" if reason else "")
    if _DNS.search(full):
        return f"{where}: name not resolved"
    if _TIMED_OUT.search(full):  # a retry may fix it: failures reads "timed out"
        return "timed out (connect_timeout, or fs.s3.request_timeout between bytes of the answer)"
    return None


def _translate(exc: BaseException, secrets: list[str]) -> BaseException:
    """An obstore error as the ``OSError`` family :mod:`.failures` reads, its message cut
    before the client's ``Debug source`` and scrubbed of ``secrets``, of the environment's
    credentials and of whatever a store's answer echoes of a request's credentials
    (:func:`~kafkalog_source.redact.scrub`). A new exception: raise it ``from None``, so that
    the client's own (unscrubbed) one is not shown with it."""
    from obstore import exceptions as ox

    full = str(exc)
    text = " ".join(re.split(r"\s*Debug source:", full)[0].split())
    cause = _connect_cause(full, text)
    if cause:
        text = f"{text}: {cause}"
    text = scrub(text, secrets)
    if isinstance(exc, (ox.NotFoundError, FileNotFoundError)):
        return FileNotFoundError(text)
    if isinstance(exc, (ox.PermissionDeniedError, ox.UnauthenticatedError, PermissionError)):
        return PermissionError(text)
    if "status code: 416" in text or "Range Not Satisfiable" in text:
        return RangeNotSatisfiable(text)
    if isinstance(exc, ox.PreconditionError) or "status code: 412" in text:
        return PreconditionFailed(text)
    if isinstance(exc, TimeoutError):
        return TimeoutError(text)
    if isinstance(exc, ConnectionError):
        return ConnectionError(text)
    return OSError(f"{type(exc).__name__}: {text}")


class ObjectClient:
    """One bucket (or container) of S3, GCS or Azure through obstore: keys relative to it."""

    def __init__(self, store: Any, where: str, secrets: list[str] | None = None) -> None:
        """``store`` is the obstore store of the bucket; ``where`` names it in ``repr``;
        ``secrets`` are the credentials it was configured with (scrubbed from its errors)."""
        self._store = store
        self.where = where
        self._secrets = secrets or []

    def __repr__(self) -> str:
        return f"ObjectClient({self.where})"

    def head(self, key: str) -> Meta:
        """The object's size, modification time and entity tag (one ``HEAD``)."""
        import obstore

        try:
            return _meta(obstore.head(self._store, key))
        except Exception as exc:  # noqa: BLE001 - translated, raised again
            raise _translate(exc, self._secrets) from None

    def get(
        self, key: str, start: int, end: int, if_match: str | None = None
    ) -> tuple[memoryview, Meta]:
        """Bytes ``[start, end)`` (fewer where the object ends first) in one ranged ``GET``, and
        what the answer said of the object now. With ``if_match`` (an entity tag a listing or
        an earlier answer gave), the ``GET`` is conditional on it (``If-Match``, which S3, Azure
        and GCS's XML API take; obstore's ``if_match``): :class:`PreconditionFailed` when the
        object is no longer that version."""
        import obstore

        options: dict[str, Any] = {"range": (start, end)}
        if if_match:
            options["if_match"] = if_match
        try:
            r = obstore.get(self._store, key, options=options)
            data = memoryview(r.bytes())
            return data, _meta(r.meta)
        except Exception as exc:  # noqa: BLE001 - translated, raised again
            raise _translate(exc, self._secrets) from None

    def list(self, prefix: str) -> Iterator[list[tuple[str, Listed]]]:
        """The objects below ``prefix`` (a key ending with ``/``, or ``""``), page by page, as
        the store sends them: ``(key, Listed)``."""
        import obstore

        try:
            stream = obstore.list(self._store, prefix=prefix or None, chunk_size=_LIST_PAGE)
            for page in stream:
                out = []
                for m in page:
                    mm = _meta(m)
                    out.append((m["path"], Listed(mm.size, mm.mtime_ns, m.get("e_tag") or "")))
                yield out
        except Exception as exc:  # noqa: BLE001 - translated, raised again
            raise _translate(exc, self._secrets) from None


def object_client(
    store: str, bucket: str, kwargs: dict[str, Any], region: str | None = None, account: str = ""
) -> ObjectClient | None:
    """The obstore client of ``bucket`` (a container for ``abfs``, of ``account``) configured
    by ``kwargs`` (the ``fs.<store>.*`` options, typed); None when obstore is not installed or
    an option has no counterpart in it (the caller reads through pyarrow then)."""
    try:
        import obstore  # noqa: F401
    except ImportError:
        return None
    try:
        if store == "s3":
            built, secrets = _s3_store(bucket, kwargs, region)
            return ObjectClient(built, f"s3://{bucket}", secrets)
        if store == "gs":
            built, secrets = _gcs_store(bucket, kwargs)
            return ObjectClient(built, f"gs://{bucket}", secrets)
        if store == "abfs":
            built, secrets = _azure_store(bucket, account, kwargs)
            return ObjectClient(built, f"abfs://{bucket}@{account}", secrets)
    except Exception as exc:  # noqa: BLE001 - Unsupported, or settings obstore refuses
        log.debug("%s://%s: read through pyarrow (obstore: %s)", store, bucket, type(exc).__name__)
        return None
    return None


__all__ = [
    "DEFAULT_ATTEMPTS",
    "Meta",
    "ObjectClient",
    "PreconditionFailed",
    "RangeNotSatisfiable",
    "object_client",
]
