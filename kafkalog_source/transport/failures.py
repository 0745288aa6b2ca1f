"""Which failures of a store a retry can fix, and which it cannot.

A store's client (pyarrow's S3, GCS and Azure filesystems, an fsspec store) already retries a
request a few times. On top of that, a byte source retries only what another attempt can fix:
a timeout, a dropped or refused connection, throttling, a server error (HTTP 5xx). Access denied,
a missing object, a bad request or an unknown host fail at once, naming the error.

pyarrow raises a plain ``OSError`` for its stores' failures, so they are told apart by the words
its clients write: ``AWS Error ACCESS_DENIED during GetObject operation``, ``AWS Error UNKNOWN
(HTTP status 503)``, ``google::cloud::Status(UNAVAILABLE: ...)``, ``Azure Error:
[ServerBusy] 503 ...``; so are obstore's (:mod:`.objects` turns them into the same ``OSError``
family): ``Server returned non-2xx status code: 503 Service Unavailable: ...<Code>SlowDown``,
``error sending request ...: Connection refused``. A Python exception (from an fsspec store) is
told by its type.
"""

from __future__ import annotations

import errno
import re

from ..redact import scrub

_DENIED = re.compile(
    r"ACCESS_DENIED|AccessDenied|Access Denied|PERMISSION_DENIED|UNAUTHENTICATED"
    r"|INVALID_ACCESS_KEY_ID|InvalidAccessKeyId|SIGNATURE_DOES_NOT_MATCH|SignatureDoesNotMatch"
    r"|AuthorizationFailure|AuthorizationPermissionMismatch|AuthenticationFailed|Forbidden"
    r"|AuthenticationException|Failed to get token"
    r"|\bHTTP status 40[13]\b|\] 40[13] |\b40[13] (?:Forbidden|Unauthorized)"
)
# an object that is not there (any more): a read of an object deleted after it was opened
_NOT_FOUND = re.compile(
    r"NO_SUCH_KEY|NoSuchKey|RESOURCE_NOT_FOUND|\bHTTP status 404\b|BlobNotFound|\] 404 "
    r"|\bNOT_FOUND\b"
)
# a host that does not resolve: a wrong endpoint or bucket, not a passing failure
# a host that does not resolve, or a certificate that is not trusted: a wrong endpoint, bucket or
# CA bundle, not a passing failure (obstore's client says so in the words :mod:`.objects` adds)
_NOT_TRANSIENT = re.compile(
    r"resolve host|curlCode: (?:6|60|77)\b|Name or service not known|name not resolved"
    r"|certificate verify failed|SSL certificate problem|CERTIFICATE_VERIFY_FAILED",
    re.IGNORECASE,
)
_TRANSIENT = (
    ("throttling", re.compile(r"SLOW_DOWN|SlowDown|THROTTL|Throttl|TooManyRequests|TOO_MANY_REQ"
                              r"|RESOURCE_EXHAUSTED|ServerBusy|\bHTTP status 429\b|\] 429 "
                              r"|status code: 429\b|\b429 Too Many Requests")),
    # (not a setting's name in the message: obstore's "retry_timeout: 60s" is not a timeout)
    ("timeout", re.compile(r"REQUEST_TIMEOUT|RequestTimeout|DEADLINE_EXCEEDED|OperationTimedOut"
                           r"|timed out|(?<![A-Za-z0-9_])timeout",
                           re.IGNORECASE)),
    ("connection", re.compile(r"NETWORK_CONNECTION|connection (?:reset|refused|aborted|closed)"
                              r"|couldn't connect|could not connect|broken pipe|curlCode: (?:7|"
                              r"52|55|56)\b|error sending request|error decoding response body"
                              r"|IncompleteMessage|connection closed before|unexpected EOF",
                              re.IGNORECASE)),
    ("server error", re.compile(r"SERVICE_UNAVAILABLE|ServiceUnavailable|INTERNAL_FAILURE"
                                r"|InternalError|\bUNAVAILABLE\b|\bINTERNAL\b"
                                r"|\bHTTP status 5[0-9][0-9]\b|\] 5[0-9][0-9] "
                                r"|status code: 5[0-9][0-9]\b|\b50[0-9] (?:Internal Server Error"
                                r"|Bad Gateway|Service Unavailable|Gateway Timeout)")),
)  # fmt: skip
_TRANSIENT_ERRNO = {
    errno.ETIMEDOUT: "timeout",
    errno.ECONNRESET: "connection",
    errno.ECONNREFUSED: "connection",
    errno.ECONNABORTED: "connection",
    errno.EPIPE: "connection",
}


def store_errors() -> tuple[type[BaseException], ...]:
    """What a store's client raises for a failed request: ``OSError``, and pyarrow's
    ``ArrowException`` (the Azure filesystem raises it when it cannot get a token, say)."""
    try:
        from pyarrow.lib import ArrowException
    except ImportError:  # pragma: no cover (pyarrow is a dependency)
        return (OSError,)
    return (OSError, ArrowException)


def access_denied(exc: BaseException) -> bool:
    """Whether ``exc`` says the credentials may not read the object (or there are none)."""
    if isinstance(exc, PermissionError):
        return True
    return bool(_DENIED.search(str(exc)))


def not_found(exc: BaseException) -> bool:
    """Whether ``exc`` says the object does not exist (pyarrow raises ``FileNotFoundError``
    only when an open finds nothing; a read of an object deleted since comes back as a plain
    ``OSError`` naming the store's not-found error)."""
    if isinstance(exc, FileNotFoundError):
        return True
    return bool(_NOT_FOUND.search(str(exc))) and not access_denied(exc)


def transient(exc: BaseException) -> str | None:
    """What passing failure ``exc`` is ("timeout", "connection", "throttling", "server
    error"), when another attempt may succeed; None when a retry cannot fix it."""
    if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
        return None
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, ConnectionError):
        return "connection"
    if isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNO:
        return _TRANSIENT_ERRNO[exc.errno]
    text = str(exc)
    if access_denied(exc) or _NOT_TRANSIENT.search(text) or isinstance(exc, ValueError):
        return None
    for kind, pattern in _TRANSIENT:
        if pattern.search(text):
            return kind
    return None


def scrubbed(exc: BaseException, secrets: list[str]) -> BaseException:
    """``exc`` to chain to the error that reports it (``raise ... from scrubbed(exc, ...)``):
    itself when neither its message nor any of its causes' holds anything
    :func:`~kafkalog_source.redact.scrub` removes, else a copy whose message is scrubbed (an
    ``OSError`` when its type cannot be built from a message), its own causes dropped."""
    text = str(exc)
    clean = scrub(text, secrets)
    if clean == text and not _secret_in_causes(exc, secrets):
        return exc
    try:
        copy = type(exc)(clean)
    except Exception:  # noqa: BLE001 - a type that takes other arguments
        copy = OSError(f"{type(exc).__name__}: {clean}")
    copy.__suppress_context__ = True
    return copy


def _secret_in_causes(exc: BaseException, secrets: list[str]) -> bool:
    """Whether a cause or context of ``exc`` (an fsspec store's chained library error) says
    something :func:`~kafkalog_source.redact.scrub` removes."""
    seen = {id(exc)}
    link = exc.__cause__ or exc.__context__
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        text = str(link)
        if scrub(text, secrets) != text:
            return True
        link = link.__cause__ or link.__context__
    return False


def describe(exc: BaseException) -> str:
    """``Type: message`` of an exception, the message on one line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


__all__ = ["access_denied", "describe", "not_found", "scrubbed", "store_errors", "transient"]
