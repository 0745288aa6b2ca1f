"""A lake table in a bucket takes the store settings the read of the archive takes (issue 40
item 1): with no ``-o fs.s3.*`` option at all, the endpoint of ``AWS_ENDPOINT_URL`` or of the
profile's ``endpoint_url`` reaches PyIceberg's FileIO and delta-rs (moto's S3 server on
127.0.0.1, the commands run in a process of their own with that environment), and a table
location the table's library cannot write to fails before the archive is read or a data file
is uploaded, naming OUT and the cause, no secret. The region is resolved once, by the read, and
handed on: PyIceberg does not ask AWS for the bucket's region again (issue 40 item 2)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES, run_cli

pytest.importorskip("pyiceberg")
pytest.importorskip("deltalake")

SECRET = "testing-secret-value"  # moto's secret key (any value works)
ARCHIVE = ("orders-0", "orders-1", "multi-segment-0")  # partitions of sample_segments/
BUCKET = "kafkalog-settings"
SQL = (
    'SELECT topic, partition, "offset", timestamp, key, value, headers FROM kafkalog '
    "ORDER BY 1, 2, 3"
)


@pytest.fixture(scope="module")
def archive(s3_server: Any) -> str:
    """A copy of a few partitions of sample_segments/ in the bucket."""
    for part in ARCHIVE:
        s3_server.upload(SAMPLES / part, f"{BUCKET}/archive/{part}")
    s3_server.bucket(f"{BUCKET}-lake")
    return f"s3://{BUCKET}/archive"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """No AWS setting of this machine's: the environment each test gives is all there is (no
    config or credentials file unless the test writes one, no instance metadata)."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    return {
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(tmp_path / "aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "aws-credentials"),
    }


def _objects(s3_server: Any, prefix: str) -> list[str]:
    """The objects under ``bucket/prefix`` (none when the bucket or prefix is not there)."""
    from pyarrow import fs as pafs

    infos = s3_server.fs.get_file_info(
        pafs.FileSelector(prefix, recursive=True, allow_not_found=True)
    )
    return [i.path for i in infos if i.type == pafs.FileType.File]


def _table_args(fmt: str, tmp_path: Path) -> list[str]:
    return ["--catalog", str(tmp_path / "catalog.db")] if fmt == "iceberg" else []


def _convert_then_query(archive: str, out: str, fmt: str, table: list[str], env: dict[str, str]):
    """``convert`` the archive into OUT, then ``query`` OUT and the archive, each in a process
    of its own with ``env``; assert that the table holds the archive's rows."""
    first = run_cli("convert", archive, out, "--format", fmt, *table, extra_env=env)
    assert first.returncode == 0, first.stderr
    assert f"kafkalog: wrote {out} (created {fmt} table" in first.stderr, first.stderr
    back = run_cli("query", out, SQL, *table, extra_env=env)
    assert back.returncode == 0, back.stderr
    whole = run_cli("query", archive, SQL, extra_env=env)
    assert whole.returncode == 0, whole.stderr
    assert back.stdout == whole.stdout
    assert f"({len(whole.stdout.splitlines()) - 3} rows)" in whole.stdout  # a table, not nothing
    assert "(0 rows)" not in whole.stdout
    for done in (first, back, whole):
        assert SECRET not in done.stdout + done.stderr
    return first


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_a_table_takes_the_endpoint_of_aws_endpoint_url(
    fmt: str, s3_server: Any, archive: str, clean_env: dict[str, str], tmp_path: Path
) -> None:
    """``AWS_ENDPOINT_URL`` and the keys, nothing else: the archive is read from the server
    and the table written there (before: PyIceberg went to lake.s3.us-east-1.amazonaws.com, and
    delta-rs uploaded the data files and then refused the commit, "URL scheme is not
    allowed")."""
    env = {
        **clean_env,
        "AWS_ENDPOINT_URL": s3_server.endpoint,
        "AWS_ACCESS_KEY_ID": "testing-key",
        "AWS_SECRET_ACCESS_KEY": SECRET,
    }
    out = f"s3://{BUCKET}-lake/env-{fmt}"
    _convert_then_query(archive, out, fmt, _table_args(fmt, tmp_path), env)
    assert _objects(s3_server, f"{BUCKET}-lake/env-{fmt}")
    assert not _objects(s3_server, f"{BUCKET}-lake/env-{fmt}/.kafkalog-probe")  # none left


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_a_table_takes_the_endpoint_and_keys_of_the_profile(
    fmt: str, s3_server: Any, archive: str, clean_env: dict[str, str], tmp_path: Path
) -> None:
    """``AWS_PROFILE`` naming a profile of ``AWS_CONFIG_FILE`` with an ``endpoint_url`` (and
    its keys): the table is written and read where the archive is read."""
    config = Path(clean_env["AWS_CONFIG_FILE"])
    config.write_text(
        "[profile lake]\n"
        f"endpoint_url = {s3_server.endpoint}\n"
        "region = us-east-1\n"
        "aws_access_key_id = testing-key\n"
        f"aws_secret_access_key = {SECRET}\n"
    )
    env = {**clean_env, "AWS_PROFILE": "lake"}
    out = f"s3://{BUCKET}-lake/profile-{fmt}"
    _convert_then_query(archive, out, fmt, _table_args(fmt, tmp_path), env)


def _dead_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"  # closed again: nothing listens


@pytest.mark.parametrize(
    ("fmt", "table", "bucket", "cause"),
    [
        # the issue's own failure: delta-rs refused the endpoint only at the commit
        ("delta", ["AWS_ALLOW_HTTP=false"], None, "URL scheme is not allowed"),
        ("delta", ["AWS_ENDPOINT_URL=<dead>"], None, "Connection refused"),
        ("delta", [], "kafkalog-no-such-bucket", "404 Not Found: NoSuchBucket"),
        ("iceberg", ["type=sql", "uri=<catalog>", "s3.endpoint=<dead>"], None, "<dead>"),
        ("iceberg", [], "kafkalog-no-such-bucket", "bucket does not exist"),
    ],
    ids=[
        "delta-http-refused",
        "delta-unreachable",
        "delta-no-bucket",
        "iceberg-unreachable",
        "iceberg-no-bucket",
    ],
)
def test_a_table_location_the_library_cannot_write_fails_before_anything_is_uploaded(
    fmt: str,
    table: list[str],
    bucket: str | None,
    cause: str,
    s3_server: Any,
    archive: str,
    clean_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    """The table's library cannot reach OUT (an endpoint it may not use, nothing listening, a
    bucket that is not there): the run fails at once, in one line naming OUT and the cause and
    saying nothing was read or written; the archive was not read, and no object is under OUT's
    prefix (before: delta-rs's refusal came at the commit, after the data files were
    uploaded)."""
    from kafkalog_source.cli.main import main
    from kafkalog_source.streaming.source import StreamSource

    for name, value in {
        **clean_env,
        "AWS_ENDPOINT_URL": s3_server.endpoint,
        "AWS_ACCESS_KEY_ID": "testing-key",
        "AWS_SECRET_ACCESS_KEY": SECRET,
    }.items():
        monkeypatch.setenv(name, value)
    read: list[int] = []
    snapshot = StreamSource.snapshot

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        read.append(1)
        return snapshot(self, *args, **kwargs)

    monkeypatch.setattr(StreamSource, "snapshot", counted)
    dead = _dead_endpoint()
    prefix = f"{bucket or BUCKET + '-lake'}/refused-{fmt}-{abs(hash(tuple(table))) % 10_000}"
    options = [
        x
        for item in table
        for x in (
            "--table-option",
            item.replace("<dead>", dead).replace("<catalog>", f"sqlite:///{tmp_path}/c.db"),
        )
    ]
    if fmt == "iceberg" and not table:
        options = _table_args(fmt, tmp_path)
    code = main(["convert", archive, f"s3://{prefix}", "--format", fmt, *options])
    err = capsys.readouterr().err
    assert code == 1, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("kafkalog: error: "), err
    assert f"s3://{prefix}" in err and "nothing was read or written" in err, err
    assert cause.replace("<dead>", dead.split("//")[1]) in err, err
    assert SECRET not in err
    assert read == []  # the archive was not looked at
    assert _objects(s3_server, prefix) == []


def test_every_s3_option_of_the_read_reaches_both_libraries(
    clean_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``-o fs.s3.*`` options, by the names each library takes; the endpoint with its
    scheme, ``AWS_ALLOW_HTTP`` for ``http``; the keys, a token and a proxy's password are the
    settings' secrets, the endpoint and region are not."""
    from kafkalog_source.lake.stores import (
        delta_storage_options,
        iceberg_fileio_properties,
        settings_secrets,
    )
    from kafkalog_source.options import parse_options
    from kafkalog_source.transport.filesystems import using_store

    for name, value in clean_env.items():
        monkeypatch.setenv(name, value)
    options = {
        "fs.s3.endpoint_override": "127.0.0.1:9000",
        "fs.s3.scheme": "http",
        "fs.s3.region": "eu-west-3",
        "fs.s3.access_key": "AKIA-one",
        "fs.s3.secret_key": SECRET,
        "fs.s3.session_token": "token-of-the-session",
        "fs.s3.force_virtual_addressing": "true",
        "fs.s3.connect_timeout": "2.5",
        "fs.s3.request_timeout": "40",
        "fs.s3.proxy_options": '{"scheme": "http", "host": "proxy", "port": 3128, '
        '"username": "u", "password": "proxy-password"}',
    }
    with using_store(parse_options(options).store):
        ice = iceberg_fileio_properties("s3://lake/t")
        delta = delta_storage_options("s3a://lake/t")
        assert iceberg_fileio_properties("gs://lake/t") == delta_storage_options("/tmp/t") == {}
    assert ice == {
        "s3.endpoint": "http://127.0.0.1:9000",
        "s3.region": "eu-west-3",
        "s3.resolve-region": "false",
        "s3.access-key-id": "AKIA-one",
        "s3.secret-access-key": SECRET,
        "s3.session-token": "token-of-the-session",
        "s3.force-virtual-addressing": "true",
        "s3.connect-timeout": "2.5",
        "s3.request-timeout": "40.0",
        "s3.proxy-uri": "http://u:proxy-password@proxy:3128",
    }
    assert delta == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_ALLOW_HTTP": "true",
        "AWS_REGION": "eu-west-3",
        "AWS_ACCESS_KEY_ID": "AKIA-one",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_SESSION_TOKEN": "token-of-the-session",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "true",
        "connect_timeout": "2500ms",
        "proxy_url": "http://u:proxy-password@proxy:3128",
    }
    for settings in (ice, delta):
        secrets = settings_secrets(settings)
        for s in (SECRET, "AKIA-one", "token-of-the-session", "proxy-password"):
            assert s in secrets
        for s in ("http://127.0.0.1:9000", "eu-west-3", "true"):
            assert s not in secrets


def test_the_chains_endpoint_and_region_and_the_profiles_keys_reach_both_libraries(
    clean_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No option: ``AWS_ENDPOINT_URL_S3`` before ``AWS_ENDPOINT_URL``, ``AWS_REGION``; the
    profile's ``endpoint_url``, region and keys; an option overrides the chain; keys in the
    environment are left to each library's own chain (as the read leaves them to obstore's)."""
    from kafkalog_source.lake.stores import delta_storage_options, iceberg_fileio_properties
    from kafkalog_source.options import parse_options
    from kafkalog_source.transport.filesystems import using_store

    for name, value in clean_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000")
    monkeypatch.setenv("AWS_REGION", "ap-south-2")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "from-the-environment")
    ice = iceberg_fileio_properties("s3://lake/t")
    assert ice["s3.endpoint"] == "http://127.0.0.1:9000" and ice["s3.region"] == "ap-south-2"
    assert "s3.access-key-id" not in ice
    delta = delta_storage_options("s3://lake/t")
    assert delta["AWS_ENDPOINT_URL"] == "http://127.0.0.1:9000"
    assert delta["AWS_REGION"] == "ap-south-2" and delta["AWS_ALLOW_HTTP"] == "true"
    with using_store(parse_options({"fs.s3.region": "eu-north-1"}).store):
        assert iceberg_fileio_properties("s3://lake/t")["s3.region"] == "eu-north-1"

    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_ACCESS_KEY_ID"):
        monkeypatch.delenv(name)
    Path(clean_env["AWS_CONFIG_FILE"]).write_text(
        "[profile lake]\nendpoint_url = https://minio.internal:9000\nregion = eu-central-2\n"
        f"aws_access_key_id = key-of-the-profile\naws_secret_access_key = {SECRET}\n"
    )
    monkeypatch.setenv("AWS_PROFILE", "lake")
    ice = iceberg_fileio_properties("s3://lake/t")
    delta = delta_storage_options("s3://lake/t")
    assert ice["s3.endpoint"] == delta["AWS_ENDPOINT_URL"] == "https://minio.internal:9000"
    assert ice["s3.region"] == delta["AWS_REGION"] == "eu-central-2"
    assert "AWS_ALLOW_HTTP" not in delta
    assert ice["s3.access-key-id"] == delta["AWS_ACCESS_KEY_ID"] == "key-of-the-profile"
    assert ice["s3.secret-access-key"] == delta["AWS_SECRET_ACCESS_KEY"] == SECRET


# -- the region: resolved once, by the read, and handed on (issue 40 item 2) ------------------


def _count_region_asks(monkeypatch: pytest.MonkeyPatch, answer: str | None) -> list[str]:
    """Every look-up of a bucket's region in this process (kafkalog's and PyIceberg's both go
    through pyarrow's ``resolve_s3_region``), answered ``answer`` (None: it fails, as it does
    for any bucket not on AWS), with what both remember of earlier answers forgotten."""
    from pyarrow import fs as pafs
    from pyiceberg.io import pyarrow as pyiceberg_pyarrow

    from kafkalog_source.transport import filesystems

    asked: list[str] = []

    def look_up(bucket: str) -> str:
        asked.append(bucket)
        if answer is None:
            raise OSError(f"When resolving region for bucket '{bucket}': no answer")
        return answer

    monkeypatch.setattr(pafs, "resolve_s3_region", look_up)
    monkeypatch.setattr(filesystems, "_regions", {})
    pyiceberg_pyarrow._cached_resolve_s3_region.cache_clear()
    return asked


@pytest.mark.parametrize("region", ["eu-west-1", None], ids=["AWS_REGION", "no-region"])
def test_an_iceberg_table_on_a_server_asks_no_region_and_logs_none(
    region: str | None,
    s3_server: Any,
    archive: str,
    clean_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture,
) -> None:
    """``AWS_ENDPOINT_URL`` (and ``AWS_REGION``, or no region at all): convert and query ask
    nobody for the bucket's region (a server has none to give: before, PyIceberg asked AWS for
    each file system it made and logged "Unable to resolve region for bucket ..." each time,
    8 s longer than Delta), and nothing says it could not resolve one."""
    import logging

    from kafkalog_source.cli.main import main

    env = {
        **clean_env,
        "AWS_ENDPOINT_URL": s3_server.endpoint,
        "AWS_ACCESS_KEY_ID": "testing-key",
        "AWS_SECRET_ACCESS_KEY": SECRET,
    }
    if region:
        env["AWS_REGION"] = region
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    asked = _count_region_asks(monkeypatch, None)
    out = f"s3://{BUCKET}-lake/region-{region or 'none'}"
    table = ["--catalog", str(tmp_path / "catalog.db")]
    with caplog.at_level(logging.WARNING):
        assert main(["convert", archive, out, "--format", "iceberg", *table]) == 0
        assert main(["query", out, "SELECT count(*) FROM kafkalog", *table]) == 0
    said = capsys.readouterr()
    assert f"kafkalog: wrote {out} (created iceberg table" in said.err, said.err
    assert asked == []
    for text in (said.err, said.out, caplog.text):
        assert "resolve region" not in text, text


def test_on_aws_the_buckets_region_is_asked_once_and_handed_to_both_libraries(
    clean_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On AWS itself (no endpoint, no region given) the read looks the bucket's region up once;
    the table's settings carry that answer, and the FileIO PyIceberg makes from them asks
    nothing more. (pyarrow's look-up stands in: this test does not reach AWS.)"""
    from pyiceberg.io.pyarrow import PyArrowFileIO

    from kafkalog_source.lake.stores import delta_storage_options, iceberg_fileio_properties
    from kafkalog_source.transport.filesystems import resolve

    for name, value in clean_env.items():
        monkeypatch.setenv(name, value)
    asked = _count_region_asks(monkeypatch, "eu-west-3")
    bucket = "kafkalog-far-away"
    assert resolve(f"s3://{bucket}/archive/orders-0").fs.region == "eu-west-3"  # the read
    props = iceberg_fileio_properties(f"s3://{bucket}/lake/t")
    assert props["s3.region"] == "eu-west-3" and props["s3.resolve-region"] == "false"
    assert delta_storage_options(f"s3://{bucket}/lake/d")["AWS_REGION"] == "eu-west-3"
    fs = PyArrowFileIO(props).fs_by_scheme("s3", bucket)
    assert fs.region == "eu-west-3"
    assert asked == [bucket]

    # a bucket whose region cannot be told: the SDKs' default, still not asked again
    asked = _count_region_asks(monkeypatch, None)
    props = iceberg_fileio_properties("s3://kafkalog-nowhere/t")
    assert props["s3.region"] == "us-east-1"
    PyArrowFileIO(props).fs_by_scheme("s3", "kafkalog-nowhere")
    assert asked == ["kafkalog-nowhere"]
