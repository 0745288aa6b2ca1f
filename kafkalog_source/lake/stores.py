"""A table in a store: the command's ``fs.s3.*`` options (the same that reach the archive) as
the settings PyIceberg's FileIO and the ``deltalake`` package take.

Only S3's settings are translated (endpoint, scheme, region, keys, session token). Other stores'
settings are given to the table directly (``--table-option``: PyIceberg FileIO properties, Delta
storage options), and both libraries also read the stores' own environment variables
(``AWS_*``, ``AZURE_STORAGE_*``, ``GOOGLE_*``)."""

from __future__ import annotations

from typing import Any

from ..options import STORE_OF_SCHEME
from ..transport.filesystems import current_store, scheme_of


def _s3_args(location: str) -> dict[str, Any]:
    scheme = scheme_of(location) or ""
    if STORE_OF_SCHEME.get(scheme, scheme) != "s3":
        return {}
    store = current_store()
    return store.args_for("s3") if store is not None else {}


def _endpoint(args: dict[str, Any]) -> str | None:
    endpoint = args.get("endpoint_override")
    if not endpoint:
        return None
    endpoint = str(endpoint)
    if "://" not in endpoint:
        endpoint = f"{args.get('scheme', 'https')}://{endpoint}"
    return endpoint


# the fs.s3.* arguments a table's library takes, by its own names
_ICEBERG_NAMES = {
    "access_key": "s3.access-key-id",
    "secret_key": "s3.secret-access-key",
    "session_token": "s3.session-token",
    "region": "s3.region",
}
_DELTA_NAMES = {
    "access_key": "AWS_ACCESS_KEY_ID",
    "secret_key": "AWS_SECRET_ACCESS_KEY",
    "session_token": "AWS_SESSION_TOKEN",
    "region": "AWS_REGION",
}


def _renamed(args: dict[str, Any], names: dict[str, str]) -> dict[str, str]:
    """The ``args`` that ``names`` maps and that are set, under their new names."""
    return {new: str(args[arg]) for arg, new in names.items() if args.get(arg)}


def iceberg_fileio_properties(location: str) -> dict[str, str]:
    """PyIceberg FileIO properties for a table at ``location`` from the ``fs.s3.*`` options."""
    args = _s3_args(location)
    out = _renamed(args, _ICEBERG_NAMES)
    endpoint = _endpoint(args)
    if endpoint:
        out["s3.endpoint"] = endpoint
    return out


def delta_storage_options(location: str) -> dict[str, str]:
    """``deltalake`` storage options for a table at ``location`` from the ``fs.s3.*``
    options."""
    args = _s3_args(location)
    out = _renamed(args, _DELTA_NAMES)
    endpoint = _endpoint(args)
    if endpoint:
        out["AWS_ENDPOINT_URL"] = endpoint
        if endpoint.startswith("http://"):
            out["AWS_ALLOW_HTTP"] = "true"
    return out


__all__ = ["delta_storage_options", "iceberg_fileio_properties"]
