"""The S3 endpoint and region from the settings chain every AWS tool reads (boto3, the AWS CLI,
the SDKs), for ``pyarrow.fs.S3FileSystem``, whose constructor reads neither the endpoint
variables nor the profile's endpoint.

Endpoint, first found: ``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``, the profile's
``services`` section (``s3 = endpoint_url = ...``), the profile's ``endpoint_url``; none at all
when ``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`` (or the profile's
``ignore_configured_endpoint_urls``) is true. Region: ``AWS_REGION``, ``AWS_DEFAULT_REGION``, the
profile's ``region``. The profile is ``AWS_PROFILE`` (or ``AWS_DEFAULT_PROFILE``, else
``default``) in ``AWS_CONFIG_FILE`` (default ``~/.aws/config``). Credentials are left to the
SDK's own chain inside pyarrow (``AWS_ACCESS_KEY_ID``..., ``AWS_PROFILE``, roles), which reads
the same variables and files. ``fs.s3.*`` options override all of it.
"""

from __future__ import annotations

import configparser
import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any


@dataclass(frozen=True)
class AwsSettings:
    """What the AWS chain says about reaching S3; None where it says nothing."""

    endpoint: str | None = None
    region: str | None = None


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


@functools.lru_cache(maxsize=8)
def _read_config(path: str, stamp: tuple[int, int]) -> configparser.ConfigParser:
    """The config file at ``path`` (``stamp``: its modification time and size, so that a changed
    file is read again); empty when it cannot be read."""
    config = configparser.ConfigParser(interpolation=None)
    try:
        config.read(path, encoding="utf-8")
    except (OSError, UnicodeDecodeError, configparser.Error):
        return configparser.ConfigParser(interpolation=None)
    return config


def _profile(environ: Mapping[str, str]) -> tuple[dict[str, str], configparser.ConfigParser]:
    """The profile's settings and the whole config file (empty when there is none)."""
    path = environ.get("AWS_CONFIG_FILE") or os.path.join(os.path.expanduser("~"), ".aws", "config")
    try:
        st = os.stat(path)
    except OSError:
        return {}, configparser.ConfigParser(interpolation=None)
    config = _read_config(path, (st.st_mtime_ns, st.st_size))
    name = environ.get("AWS_PROFILE") or environ.get("AWS_DEFAULT_PROFILE") or "default"
    for section in (f"profile {name}", name) if name == "default" else (f"profile {name}",):
        if config.has_section(section):
            return dict(config.items(section)), config
    return {}, config


def _nested(text: str) -> dict[str, str]:
    """A nested setting of the config file (``s3 =`` followed by indented ``key = value`` lines)."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip().lower()] = value.strip()
    return out


def endpoints_ignored(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`` (or the profile's
    ``ignore_configured_endpoint_urls``) is true: the endpoint variables and the profile's
    endpoints are then ignored, as the AWS SDKs do."""
    env = os.environ if environ is None else environ
    profile, _ = _profile(env)
    return _true(env.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")) or _true(
        profile.get("ignore_configured_endpoint_urls")
    )


def aws_settings(environ: Mapping[str, str] | None = None) -> AwsSettings:
    """The S3 endpoint and region the AWS chain gives (see the module docstring)."""
    env = os.environ if environ is None else environ
    profile, config = _profile(env)
    endpoint = None
    if not endpoints_ignored(env):
        endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
        if not endpoint:
            services = profile.get("services")
            section = f"services {services.strip()}" if services else None
            if section and config.has_section(section) and config.has_option(section, "s3"):
                endpoint = _nested(config.get(section, "s3")).get("endpoint_url")
        if not endpoint:
            endpoint = profile.get("endpoint_url")
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or profile.get("region")
    return AwsSettings(endpoint=endpoint or None, region=region or None)


_SESSION_KEYS = (
    "role_arn",
    "credential_process",
    "sso_session",
    "sso_start_url",
    "credential_source",
    "web_identity_token_file",
)


def profile_credentials(environ: Mapping[str, str] | None = None) -> dict[str, str] | str | None:
    """The profile's credentials in the shared files, as the AWS tools find them: the keys
    (``access_key_id``, ``secret_access_key``, ``session_token``) of the profile's section in
    ``AWS_SHARED_CREDENTIALS_FILE`` (default ``~/.aws/credentials``), else in the config file;
    ``"session"`` when the profile gets them another way (an SSO login, a process, a role to
    assume: a job for boto3's session); None when the files say nothing of it (the rest of the
    chain applies: web identity, container and instance-role credentials)."""
    env = os.environ if environ is None else environ
    name = env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE") or "default"
    path = env.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.join(
        os.path.expanduser("~"), ".aws", "credentials"
    )
    sections: list[dict[str, str]] = []
    try:
        st = os.stat(path)
        creds = _read_config(path, (st.st_mtime_ns, st.st_size))
        if creds.has_section(name):
            sections.append(dict(creds.items(name)))
    except OSError:
        pass
    profile, _ = _profile(env)
    sections.append(profile)
    for section in sections:
        key = section.get("aws_access_key_id")
        secret = section.get("aws_secret_access_key")
        if key and secret:
            out = {"access_key_id": key, "secret_access_key": secret}
            if section.get("aws_session_token"):
                out["session_token"] = section["aws_session_token"]
            return out
        if any(section.get(k) for k in _SESSION_KEYS):
            return "session"
    return None


PROFILE_RECHECK = timedelta(minutes=1)  # how often the shared files are looked at again


class ProfileCredentials:
    """A credential provider for obstore's S3 client: the profile's keys in the shared files
    (:func:`profile_credentials`), read again when obstore asks, at most every ``recheck``
    (the files are parsed again only when they changed): keys a tool renews in the files
    (``aws sso``-style helpers, ``aws-vault``, a session token rotated by a sidecar) reach a
    long stream, where keys read once at the open would expire."""

    def __init__(self, recheck: timedelta | None = None) -> None:
        self.recheck = PROFILE_RECHECK if recheck is None else recheck

    def __call__(self) -> dict[str, Any]:
        keys = profile_credentials()
        if not isinstance(keys, dict):
            raise PermissionError(
                "the AWS profile's keys are no longer in the shared credentials or config file"
            )
        return {
            "access_key_id": keys["access_key_id"],
            "secret_access_key": keys["secret_access_key"],
            "token": keys.get("session_token"),
            "expires_at": datetime.now(timezone.utc) + self.recheck,
        }


__all__ = [
    "AwsSettings",
    "ProfileCredentials",
    "aws_settings",
    "endpoints_ignored",
    "profile_credentials",
]
