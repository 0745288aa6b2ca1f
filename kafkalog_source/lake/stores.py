"""A table in a store: the S3 settings the read resolved, as the settings PyIceberg's FileIO and
the ``deltalake`` package take, and a probe of the table's location through the library's own
client before anything is read or written.

**One resolution.** The settings are those the archive is read with
(:func:`~kafkalog_source.transport.filesystems.s3_arguments`): the ``fs.s3.*`` options, else
the AWS chain's endpoint and region (``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``, the
profile's ``endpoint_url`` in ``AWS_CONFIG_FILE``, ``AWS_REGION``, ``AWS_DEFAULT_REGION``, the
profile's ``region``), on AWS itself the bucket's region looked up once per process, and the
keys of the profile in the shared files where the read uses them. Neither library reads the
endpoint variables or the profile's endpoint as the read does (PyIceberg's PyArrow FileIO reads
none; delta-rs reads ``AWS_ENDPOINT_URL`` but refuses an ``http://`` one unless told), and
PyIceberg looks a bucket's region up itself unless it is given one (a request to AWS per file
system it makes, which fails on any other server, after seconds, with ``Unable to resolve
region for bucket ...`` logged each time): so every setting is passed explicitly, the region
always: the one the read uses (on AWS itself the bucket's, looked up once per process by
:func:`~kafkalog_source.transport.filesystems.s3_arguments`), else :data:`DEFAULT_REGION`, the
SDKs' and obstore's when nothing names one.

========================================  ============================  ===========================
setting                                   PyIceberg FileIO              deltalake storage option
========================================  ============================  ===========================
endpoint (``fs.s3.endpoint_override``,    ``s3.endpoint``               ``AWS_ENDPOINT_URL``
``fs.s3.scheme``, the chain)                                            (``AWS_ALLOW_HTTP`` for
                                                                        ``http://``)
region                                    ``s3.region``,                ``AWS_REGION``
                                          ``s3.resolve-region=false``
``access_key``, ``secret_key``,           ``s3.access-key-id``, ...     ``AWS_ACCESS_KEY_ID``, ...
``session_token`` (or the profile's keys)
``anonymous``                             ``s3.anonymous``              ``AWS_SKIP_SIGNATURE``
``force_virtual_addressing``              ``s3.force-virtual-           ``AWS_VIRTUAL_HOSTED_STYLE_
                                          addressing``                  REQUEST``
``role_arn``, ``session_name``            ``s3.role-arn``,              ``AWS_IAM_ROLE_ARN``,
                                          ``s3.role-session-name``      ``AWS_IAM_ROLE_SESSION_NAME``
``connect_timeout``, ``request_timeout``  ``s3.connect-timeout``,       ``connect_timeout``
                                          ``s3.request-timeout``
``proxy_options``                         ``s3.proxy-uri``              ``proxy_url``
========================================  ============================  ===========================

Other stores' settings are given to the table directly (``--table-option``: PyIceberg FileIO
properties, Delta storage options), which also override these; both libraries read the stores'
own environment variables (``AWS_*`` keys, ``AZURE_STORAGE_*``, ``GOOGLE_*``) as well.

**The probe.** A commit that cannot happen is found out before the run reads the archive or
writes a data file: :func:`probe_iceberg` writes and deletes one empty object at the table's
location through the FileIO the run writes with; :func:`probe_delta` lists the table's
``_delta_log/`` through delta-rs's own client with the table's storage options (the first
request of its commit; the data files themselves are written through the read's filesystem).
"""

from __future__ import annotations

import os
import re
import uuid
from typing import Any

from ..options import STORE_OF_SCHEME
from ..redact import uri_secrets
from ..transport.aws import endpoints_ignored, profile_credentials
from ..transport.filesystems import s3_arguments, scheme_of

DEFAULT_REGION = "us-east-1"  # the SDKs' and obstore's region when nothing names one
PROBE_PREFIX = ".kafkalog-probe-"  # the object probe_iceberg writes and deletes at once
# the endpoint variables the AWS chain reads (and delta-rs's client by itself)
_ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")


def _is_s3(location: str) -> bool:
    scheme = scheme_of(location) or ""
    return STORE_OF_SCHEME.get(scheme, scheme) == "s3"


def _endpoint(args: dict[str, Any]) -> str | None:
    endpoint = args.get("endpoint_override")
    if not endpoint:
        return None
    endpoint = str(endpoint)
    if "://" not in endpoint:
        endpoint = f"{args.get('scheme', 'https')}://{endpoint}"
    return endpoint


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _proxy(value: Any) -> str | None:
    """``fs.s3.proxy_options`` as a URI (a URI, or pyarrow's dict of its parts)."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, dict) and value.get("host"):
        auth = ""
        if value.get("username"):
            auth = f"{value['username']}:{value.get('password', '')}@"
        port = f":{value['port']}" if value.get("port") else ""
        return f"{value.get('scheme', 'http')}://{auth}{value['host']}{port}"
    return None


def _keys(args: dict[str, Any]) -> dict[str, str]:
    """The keys the read signs with, where they are named: ``fs.s3.*``, else (no key in the
    environment, where both libraries find it themselves) the profile's keys in the shared
    files, as the read takes them (:func:`~kafkalog_source.transport.aws.profile_credentials`);
    none for an anonymous read or a role to assume."""
    if args.get("anonymous") or args.get("role_arn"):
        return {}
    if args.get("access_key") or args.get("secret_key"):
        out = {
            "access_key": str(args.get("access_key", "")),
            "secret_key": str(args.get("secret_key", "")),
        }
        if args.get("session_token"):
            out["session_token"] = str(args["session_token"])
        return out
    if os.environ.get("AWS_ACCESS_KEY_ID"):
        return {}
    found = profile_credentials()
    if not isinstance(found, dict):  # none, or a session (SSO, a process, a role): the chain's
        return {}
    out = {"access_key": found["access_key_id"], "secret_key": found["secret_access_key"]}
    if found.get("session_token"):
        out["session_token"] = found["session_token"]
    return out


def _settings(location: str) -> tuple[dict[str, Any], str | None, str, dict[str, str]]:
    """The read's S3 arguments for ``location``, its endpoint, region (:data:`DEFAULT_REGION`
    when none is known) and keys."""
    args = s3_arguments(location)
    region = str(args.get("region") or DEFAULT_REGION)
    return args, _endpoint(args), region, _keys(args)


_ICEBERG_KEYS = {
    "access_key": "s3.access-key-id",
    "secret_key": "s3.secret-access-key",
    "session_token": "s3.session-token",
}
_ICEBERG_NAMES = {
    "anonymous": "s3.anonymous",
    "force_virtual_addressing": "s3.force-virtual-addressing",
    "role_arn": "s3.role-arn",
    "session_name": "s3.role-session-name",
    "connect_timeout": "s3.connect-timeout",
    "request_timeout": "s3.request-timeout",
}
_DELTA_KEYS = {
    "access_key": "AWS_ACCESS_KEY_ID",
    "secret_key": "AWS_SECRET_ACCESS_KEY",
    "session_token": "AWS_SESSION_TOKEN",
}
_DELTA_NAMES = {
    "anonymous": "AWS_SKIP_SIGNATURE",
    "force_virtual_addressing": "AWS_VIRTUAL_HOSTED_STYLE_REQUEST",
    "role_arn": "AWS_IAM_ROLE_ARN",
    "session_name": "AWS_IAM_ROLE_SESSION_NAME",
}


# the settings whose values messages may show: an endpoint, a region, a flag, a timeout, a role
_SHOWN = frozenset(
    {
        "s3.endpoint",
        "s3.region",
        "s3.resolve-region",
        "s3.anonymous",
        "s3.force-virtual-addressing",
        "s3.role-arn",
        "s3.role-session-name",
        "s3.connect-timeout",
        "s3.request-timeout",
        "AWS_ENDPOINT_URL",
        "AWS_REGION",
        "AWS_ALLOW_HTTP",
        "AWS_SKIP_SIGNATURE",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST",
        "AWS_IAM_ROLE_ARN",
        "AWS_IAM_ROLE_SESSION_NAME",
        "connect_timeout",
    }
)


def settings_secrets(settings: dict[str, str]) -> list[str]:
    """What messages never show of ``settings`` (made by :func:`iceberg_fileio_properties` or
    :func:`delta_storage_options`): every value but an endpoint's, a region's, a flag's, a
    timeout's and a role's (keys, tokens, a proxy URI and its password), longest first, for
    :func:`~kafkalog_source.redact.scrub`."""
    found: set[str] = set()
    for name, value in settings.items():
        if name not in _SHOWN and value:
            found.add(value)
            found.update(uri_secrets(value))
    return sorted(found, key=lambda v: (-len(v), v))


def _renamed(args: dict[str, Any], names: dict[str, str]) -> dict[str, str]:
    """The ``args`` that ``names`` maps and that are set, under their new names."""
    return {new: _text(args[arg]) for arg, new in names.items() if args.get(arg) not in (None, "")}


def iceberg_fileio_properties(location: str) -> dict[str, str]:
    """PyIceberg FileIO properties for a table at ``location`` (an ``s3://`` URI; nothing for
    others): the settings the read of the archive resolved (see the module's description), the
    region always, so that PyIceberg does not look the bucket's region up again."""
    if not _is_s3(location):
        return {}
    args, endpoint, region, keys = _settings(location)
    out = {**_renamed(args, _ICEBERG_NAMES), **_renamed(keys, _ICEBERG_KEYS)}
    # a region given, and no look-up asked for: PyIceberg's PyArrow FileIO would otherwise ask
    # AWS for the bucket's region again, once per file system it makes, and log "Unable to
    # resolve region for bucket ..." each time the answer does not come (any server but AWS)
    out["s3.region"] = region
    out["s3.resolve-region"] = "false"
    if endpoint:
        out["s3.endpoint"] = endpoint
    proxy = _proxy(args.get("proxy_options"))
    if proxy:
        out["s3.proxy-uri"] = proxy
    return out


def delta_storage_options(location: str) -> dict[str, str]:
    """``deltalake`` storage options for a table at ``location`` (an ``s3://`` URI; nothing
    for others): the settings the read of the archive resolved (see the module's
    description), ``AWS_ALLOW_HTTP`` for an ``http://`` endpoint."""
    if not _is_s3(location):
        return {}
    args, endpoint, region, keys = _settings(location)
    out = {**_renamed(args, _DELTA_NAMES), **_renamed(keys, _DELTA_KEYS)}
    out["AWS_REGION"] = region
    if endpoint:
        out["AWS_ENDPOINT_URL"] = endpoint
        if endpoint.lower().startswith("http://"):
            out["AWS_ALLOW_HTTP"] = "true"
    elif any(os.environ.get(v) for v in _ENDPOINT_VARIABLES) and endpoints_ignored():
        # delta-rs's client reads the endpoint variables by itself: AWS's own, named, wins
        out["AWS_ENDPOINT_URL"] = f"https://s3.{region}.amazonaws.com"
    if args.get("connect_timeout"):
        out["connect_timeout"] = f"{int(float(args['connect_timeout']) * 1000)}ms"
    proxy = _proxy(args.get("proxy_options"))
    if proxy:
        out["proxy_url"] = proxy
    return out


def probe_iceberg(io: Any, location: str) -> None:
    """Write one empty object at ``location`` (the table's) through the FileIO ``io`` and delete
    it: the library's exception when the table's files could not be written there (a store
    that cannot be reached, refused keys, no such bucket), before anything is read or written.
    An :class:`OSError` naming the object when it was written but could not be deleted."""
    path = f"{location.rstrip('/')}/{PROBE_PREFIX}{uuid.uuid4().hex}"
    with io.new_output(path).create(overwrite=True):
        pass
    try:
        io.delete(path)
    except Exception as e:
        raise OSError(f"the object {path} it wrote could not be deleted ({e})") from None


def probe_delta(location: str, storage: dict[str, str]) -> None:
    """List ``location``'s ``_delta_log/`` through delta-rs's own client with the table's
    ``storage`` options, as its commit begins: the library's exception when the commit could
    not reach the table there (an endpoint it may not use, a store that cannot be reached,
    refused keys, no such bucket)."""
    from deltalake.fs import DeltaStorageHandler
    from pyarrow.fs import FileSelector

    handler = DeltaStorageHandler(location, storage or None)
    try:
        handler.get_file_info_selector(FileSelector("_delta_log", allow_not_found=True))
    except Exception as e:
        raise OSError(_cause(str(e))) from None


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _cause(text: str) -> str:
    """delta-rs's chain of causes (``Generic S3 error ↳ Error performing list request ↳ ... ↳
    tcp connect error ↳ Connection refused (os error 111)``) as its first and last two, the
    general and the particular: the request in between names a URL that scrubbing masks."""
    parts = [" ".join(p.split()) for p in _ANSI.sub("", text).split("\u21b3")]
    parts = [_answer(p) for p in parts if p]
    if len(parts) > 3:
        parts = [parts[0], *parts[-2:]]
    return ": ".join(parts) or text


_ELEMENT = re.compile(r"<(Code|Message)>([^<]*)</\1>")


def _answer(text: str) -> str:
    """An S3 error document (``<?xml ...><Error><Code>NoSuchBucket</Code><Message>...``) as its
    code and message; any other text as it is."""
    if not text.startswith("<?xml"):
        return text
    found = dict(_ELEMENT.findall(text))
    return " ".join(v for v in (found.get("Code"), found.get("Message")) if v) or text


__all__ = [
    "DEFAULT_REGION",
    "PROBE_PREFIX",
    "delta_storage_options",
    "iceberg_fileio_properties",
    "probe_delta",
    "probe_iceberg",
    "settings_secrets",
]
