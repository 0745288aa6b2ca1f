"""Reaching a store (issue 20, items 6-7), through the public interfaces.

* ``s3://`` reads take the endpoint and region from the AWS chain (``AWS_ENDPOINT_URL_S3``,
  ``AWS_ENDPOINT_URL``, the profile), options overriding it;
* a failed read is retried only when a retry can fix it, and the error that ended it is named;
  a file or object that may not be read says so, and what to do.

Items 4-5 (fsspec store values, secrets): tests/test_secrets_stores.py.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES
from store_support import DIRECTORY, _local, _memory_store

import kafkalog_source as kl
from kafkalog_source.cli.main import main
from kafkalog_source.errors import AccessDeniedError, KafkaLogError, StorageError

# -- 6. the AWS chain: endpoint, region, profile ------------------------------------------------


@pytest.fixture
def aws_env(monkeypatch, tmp_path: Path) -> Any:
    """Only environment variables (and the config file they name) tell how to reach S3."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret-value")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    return monkeypatch


@pytest.fixture
def env_bucket(s3_server) -> str:
    if not (SAMPLES / DIRECTORY).is_dir():
        pytest.skip("sample_segments/ not present")
    s3_server.upload(SAMPLES / DIRECTORY, f"kafkalog-env/{DIRECTORY}")
    return f"s3://kafkalog-env/{DIRECTORY}"


DEAD = "http://127.0.0.1:9"  # nothing listens there


@pytest.mark.parametrize(
    "env",
    [
        {"AWS_ENDPOINT_URL": "<moto>"},
        {"AWS_ENDPOINT_URL_S3": "<moto>"},
        {"AWS_ENDPOINT_URL_S3": "<moto>", "AWS_ENDPOINT_URL": DEAD},  # the S3 one comes first
        {"AWS_ENDPOINT_URL": "<moto>", "AWS_REGION": "eu-west-1"},
    ],
)
def test_s3_endpoint_from_the_environment(s3_server, env_bucket, aws_env, env) -> None:
    for name, value in env.items():
        aws_env.setenv(name, s3_server.endpoint if value == "<moto>" else value)
    got = kl.read_table(env_bucket, remoteRetries="0")
    assert got.equals(_local())


def test_s3_endpoint_and_region_from_the_profile(s3_server, env_bucket, aws_env, tmp_path) -> None:
    (tmp_path / "aws-config").write_text(
        "[default]\nregion = us-east-1\n\n"
        "[profile archive]\nregion = eu-west-1\nservices = archive-services\n\n"
        f"[services archive-services]\ns3 =\n  endpoint_url = {s3_server.endpoint}\n"
    )
    aws_env.setenv("AWS_PROFILE", "archive")
    assert kl.read_table(env_bucket, remoteRetries="0").equals(_local())


def test_s3_options_override_the_environment(s3_server, env_bucket, aws_env) -> None:
    aws_env.setenv("AWS_ENDPOINT_URL_S3", DEAD)
    got = kl.read_table(
        env_bucket, remoteRetries="0", **{"fs.s3.endpoint_override": s3_server.endpoint}
    )
    assert got.equals(_local())
    # and the environment's endpoint is the one used when no option is given
    with pytest.raises(KafkaLogError, match="127.0.0.1:9"):
        kl.read_table(env_bucket, remoteRetries="0", **{"fs.s3.retry_max_attempts": "1"})


@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"])
def test_ignore_configured_endpoint_urls_ignores_the_environments_endpoint(
    s3_server, env_bucket, aws_env, variable: str
) -> None:
    """``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true`` makes the endpoint variables ignored, as the
    AWS SDKs do: the read goes to AWS itself (which does not answer here), never to the server
    the variable names."""
    from kafkalog_source.transport.filesystems import resolve

    port = int(s3_server.endpoint.rsplit(":", 1)[1])
    sys_path = str(Path(__file__).resolve().parent.parent / "bench")
    import sys

    sys.path.insert(0, sys_path)
    try:
        from delayproxy import DelayProxy
    finally:
        sys.path.remove(sys_path)
    with DelayProxy(port, delay=0) as proxy:
        aws_env.setenv(variable, f"http://127.0.0.1:{proxy.port}")
        aws_env.setenv("AWS_REGION", "us-east-1")
        assert kl.read_table(env_bucket, remoteRetries="0").equals(_local())  # the variable
        assert proxy.requests > 0
        proxy.reset()
        aws_env.setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
        loc = resolve(f"{env_bucket}/00000000000000000000.log", kl.parse_options({}).store)
        assert loc.objects is not None  # obstore's client, not set aside for pyarrow's
        with pytest.raises(KafkaLogError) as exc:
            kl.read_table(
                env_bucket,
                remoteRetries="0",
                **{"fs.s3.retry_max_attempts": "1", "fs.s3.connect_timeout": "2"},
            )
        assert f"127.0.0.1:{proxy.port}" not in str(exc.value)
        assert "amazonaws.com" in str(exc.value), str(exc.value)
        assert proxy.requests == 0


def test_a_buckets_region_is_asked_once_per_process_and_travels_with_the_plan(
    aws_env, monkeypatch
) -> None:
    """On AWS itself (no endpoint, no region given) a bucket's region is looked up once per
    process however many threads ask at once, and a plan's ranges carry it, so that a reader
    in another process (a Spark task) does not ask again. (pyarrow's look-up stands in: this
    test does not reach AWS.)"""
    import time
    from concurrent.futures import ThreadPoolExecutor

    from pyarrow import fs as pafs

    from kafkalog_source.reader.prefetch import range_objects
    from kafkalog_source.transport import filesystems

    monkeypatch.setattr(filesystems, "_regions", {})
    asked: list[str] = []

    def look_up(bucket: str) -> str:
        asked.append(bucket)
        time.sleep(0.2)  # a request's time: other threads ask meanwhile
        return "eu-west-3"

    monkeypatch.setattr(pafs, "resolve_s3_region", look_up)
    uri = "s3://kafkalog-far-away/logs/orders-0/00000000000000000000.log"
    with ThreadPoolExecutor(8) as pool:
        locations = list(pool.map(lambda _: filesystems.resolve(uri), range(8)))
    assert asked == ["kafkalog-far-away"]
    assert {loc.fs.region for loc in locations} == {"eu-west-3"}
    carried = filesystems.regions_of(uri)
    assert carried == (("kafkalog-far-away", "eu-west-3"),)
    assert filesystems.regions_of("s3://never-asked/x") == ()

    # a Spark task's process: the range brings the region, nothing is asked
    from kafkalog_source.planning.splits import SegmentRange

    monkeypatch.setattr(filesystems, "_regions", {})
    rng = SegmentRange(uri, 0, 10, regions=carried)
    with range_objects(rng):
        loc = filesystems.resolve(uri)
    assert asked == ["kafkalog-far-away"] and loc.fs.region == "eu-west-3"


# -- 7. retries and access denied ---------------------------------------------------------------


def _SEGMENT_FILES(root: str) -> tuple[str, ...]:  # noqa: N802
    """How an error about the segment's bytes starts: the first request that fails is planning's
    read of its .index (fetched ahead), or the read of its .log."""
    return tuple(f"{root}/00000000000000000000{s}: bytes [" for s in (".log", ".index"))


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (TimeoutError("read timed out"), "timeout"),
        (ConnectionResetError("connection reset by peer"), "connection"),
        (OSError("AWS Error SLOW_DOWN during GetObject operation: Please reduce your rate"),
         "throttling"),
        (OSError("AWS Error UNKNOWN (HTTP status 503) during GetObject operation: x"),
         "server error"),
    ],
)  # fmt: skip
def test_what_a_retry_can_fix_is_retried_and_named(plan, caplog, error, kind) -> None:
    root = _memory_store("kafkalogfail")
    plan.error = error
    with caplog.at_level(logging.INFO, logger="kafkalog"):
        with pytest.raises(StorageError) as exc:  # one request at a time: one is retried
            kl.read_table(root, remoteRetries="2", remoteConcurrency="1")
    message = str(exc.value)
    assert message.startswith(_SEGMENT_FILES(root))
    assert f"after 3 attempts; the last error ({kind}): {type(error).__name__}: " in message
    assert sum("retrying" in r.getMessage() for r in caplog.records) == 2


@pytest.mark.parametrize(
    "error",
    [
        OSError("AWS Error INVALID_ARGUMENT during GetObject operation: bad range"),
        OSError("AWS Error NETWORK_CONNECTION during GetObject operation: curlCode: 6, "
                "Could not resolve host: kafkalog.s3.us-east-1.amazonaws.com"),
        # obstore's message names its retry_timeout setting: not a timeout
        OSError("GenericError: Error performing GET http://127.0.0.1:9/b/k in 5ms, after 2 "
                "retries, max_retries: 2, retry_timeout: 60s - Server returned non-2xx status "
                "code: 400 Bad Request"),
        OSError("something else went wrong"),
    ],
)  # fmt: skip
def test_what_a_retry_cannot_fix_fails_at_once_and_is_named(plan, caplog, error) -> None:
    root = _memory_store("kafkalogfail")
    plan.error = error
    with caplog.at_level(logging.INFO, logger="kafkalog"):
        with pytest.raises(StorageError) as exc:
            kl.read_table(root, remoteRetries="3", remoteConcurrency="1")
    message = str(exc.value)
    assert "not retried" in message and str(error).split(":")[0] in message
    assert not [r for r in caplog.records if "retrying" in r.getMessage()]
    assert len(plan.paths) == len(set(plan.paths)) >= 1  # each file asked once: no retry


@pytest.fixture(scope="module")
def tls_s3_endpoint(tmp_path_factory) -> Iterator[str]:
    """A moto S3 server on 127.0.0.1 speaking TLS with a certificate of its own (self-signed:
    no client trusts it)."""
    pytest.importorskip("moto.server", reason="moto[server] is not installed")
    pytest.importorskip("cryptography", reason="moto's TLS certificate needs cryptography")
    import socket
    import ssl
    import subprocess
    import sys
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log_file = tmp_path_factory.mktemp("moto-tls") / "moto.log"
    with open(log_file, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-s", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    insecure = ssl.create_default_context()
    insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2) as raw:
                    with insecure.wrap_socket(raw):
                        break
            except OSError as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto did not start: {log_file.read_text()}") from exc
                time.sleep(0.2)
        yield f"https://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.parametrize("case", ["certificate", "unknown host"])
def test_a_certificate_or_host_failure_fails_fast_naming_the_cause(
    case: str, tls_s3_endpoint: str, caplog
) -> None:
    """A certificate the client does not trust, or a host that does not resolve, is not a
    passing failure: not retried, and the error names the host and the cause (obstore's
    message says only "error sending request")."""
    from kafkalog_source.transport.failures import transient
    from kafkalog_source.transport.filesystems import resolve
    from kafkalog_source.transport.remote import RemoteFileSource

    if case == "certificate":
        endpoint, host, cause = tls_s3_endpoint, "127.0.0.1", "certificate verify failed"
    else:
        host = "kafkalog-no-such-host.invalid"
        endpoint, cause = f"http://{host}:9000", "name not resolved"
    options = {
        "fs.s3.endpoint_override": endpoint,
        "fs.s3.access_key": "testing-key",
        "fs.s3.secret_key": "testing-secret-value",
        "fs.s3.region": "us-east-1",
        "fs.s3.retry_max_attempts": "1",
    }
    uri = "s3://kafkalog-tls/topic-0/00000000000000000000.log"
    with caplog.at_level(logging.INFO, logger="kafkalog"):
        with pytest.raises(KafkaLogError) as exc:  # the listing
            kl.read_table("s3://kafkalog-tls/topic-0", remoteRetries="3", **options)
        o = kl.parse_options(options, paths=uri)
        loc = resolve(uri, o.store)
        assert loc.objects is not None  # obstore's client
        with pytest.raises(OSError) as raw:
            loc.objects.get(loc.key, 0, 10)
        with pytest.raises(StorageError) as read:  # a read: not retried
            RemoteFileSource(loc, o.store, size=100).read(0, 10)
    for message in (str(exc.value), str(raw.value), str(read.value)):
        assert f"host {host}: {cause}" in message, message
    assert transient(raw.value) is None
    assert "not retried" in str(read.value)
    assert not [r for r in caplog.records if "retrying" in r.getMessage()]


@pytest.mark.parametrize(
    "error",
    [
        PermissionError(13, "Permission denied"),
        OSError("AWS Error ACCESS_DENIED during GetObject operation: Access Denied"),
        OSError("GetProperties failed for 'c/x'. Azure Error: [AuthorizationFailure] 403 "
                "This request is not authorized to perform this operation."),
        "azure-no-credential",
    ],
)  # fmt: skip
def test_access_denied_is_not_retried_and_says_what_to_do(plan, caplog, error) -> None:
    if error == "azure-no-credential":  # pyarrow's Azure filesystem, when no credential works
        from pyarrow.lib import ArrowException

        error = ArrowException(
            "Unknown error: Check for Hierarchical Namespace support on "
            "'https://account.blob.core.windows.net/c' failed: "
            "N5Azure4Core11Credentials23AuthenticationExceptionE: Failed to get token from "
            "DefaultAzureCredential."
        )
    root = _memory_store("kafkalogdenied")
    plan.error = error
    with caplog.at_level(logging.INFO, logger="kafkalog"):
        with pytest.raises(AccessDeniedError) as exc:
            kl.read_table(root, remoteRetries="3", remoteConcurrency="1")
    assert isinstance(exc.value, PermissionError)
    message = str(exc.value)
    assert message.startswith(_SEGMENT_FILES(root))
    assert "access denied" in message and "credentials" in message
    assert "fs.kafkalogdenied.*" in message
    assert not [r for r in caplog.records if "retrying" in r.getMessage()]
    assert len(plan.paths) == len(set(plan.paths)) >= 1  # each file asked once: no retry


@pytest.fixture
def unreadable(monkeypatch, tmp_path: Path) -> Path:
    """A copy of a sample partition whose .log this process may not open: ``os.open`` raises
    ``PermissionError`` for it, as for a file without read permission (root reads any file, so
    chmod cannot be used here)."""
    if not (SAMPLES / DIRECTORY).is_dir():
        pytest.skip("sample_segments/ not present")
    part = tmp_path / DIRECTORY
    part.mkdir()
    for f in (SAMPLES / DIRECTORY).iterdir():
        (part / f.name).write_bytes(f.read_bytes())
    log_file = str(part / "00000000000000000000.log")
    real_open = os.open

    def fake_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fspath(path) == log_file:
            raise PermissionError(13, "Permission denied", log_file)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)
    return part


def test_an_unreadable_local_file_is_named_with_what_to_do(unreadable: Path, capsys) -> None:
    log_file = str(unreadable / "00000000000000000000.log")
    with pytest.raises(AccessDeniedError) as exc:
        kl.read_table(str(unreadable))
    message = str(exc.value)
    assert isinstance(exc.value, PermissionError)
    assert message.startswith(f"{log_file}: permission denied")
    assert "chmod" in message and "[Errno 13]" not in message
    assert main(["verify", str(unreadable)]) == 1
    out = capsys.readouterr()
    assert "permission denied" in out.out + out.err and "chmod" in out.out + out.err


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads files without permission"
)
def test_a_file_without_read_permission(tmp_path: Path) -> None:
    if not (SAMPLES / DIRECTORY).is_dir():
        pytest.skip("sample_segments/ not present")
    part = tmp_path / DIRECTORY
    part.mkdir()
    for f in (SAMPLES / DIRECTORY).iterdir():
        (part / f.name).write_bytes(f.read_bytes())
    (part / "00000000000000000000.log").chmod(0)
    with pytest.raises(AccessDeniedError, match="permission denied.*chmod"):
        kl.read_table(str(part))
