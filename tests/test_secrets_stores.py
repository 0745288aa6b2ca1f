"""Secrets and stores (issue 20, items 4-7), through the public interfaces.

* fsspec store options stay strings unless the store's constructor says otherwise;
* secrets (store options not known to be harmless, credentials in URIs, SAS tokens) never appear
  in a repr, an error, a log line, Spark's plan strings or ReadStats;
* ``s3://`` reads take the endpoint and region from the AWS chain (``AWS_ENDPOINT_URL_S3``,
  ``AWS_ENDPOINT_URL``, the profile), options overriding it;
* a failed read is retried only when a retry can fix it, and the error that ended it is named;
  a file or object that may not be read says so, and what to do.
"""

from __future__ import annotations

import base64
import http.client
import http.server
import logging
import os
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES

import kafkalog_source as kl
from kafkalog_source.cli.main import main
from kafkalog_source.errors import AccessDeniedError, KafkaLogError, OptionError, StorageError

DIRECTORY = "magic2-zstd-0"


def _local() -> Any:
    if not (SAMPLES / DIRECTORY).is_dir():
        pytest.skip("sample_segments/ not present")
    return kl.read_table(str(SAMPLES / DIRECTORY))


# -- fsspec test stores -------------------------------------------------------------------------


class _Plan:
    """What the failing store below raises on every read (None: nothing), and what it saw."""

    error: BaseException | None = None
    reads = 0
    paths: list[str] = []  # the file of each read
    init_kwargs: dict[str, Any] = {}


def _memory_store(protocol: str, cls_body: dict[str, Any] | None = None) -> str:
    """Register ``<protocol>://``: fsspec's in-memory store holding sample_segments/magic2-zstd-0
    under ``archive/``, whose reads raise ``_Plan.error``; return the directory's URI."""
    fsspec = pytest.importorskip("fsspec")
    from fsspec.implementations.memory import MemoryFile, MemoryFileSystem

    class FailingFile(MemoryFile):
        def read(self, *args):  # type: ignore[no-untyped-def]
            _Plan.reads += 1
            _Plan.paths.append(self.path)
            if _Plan.error is not None:
                raise _Plan.error
            return super().read(*args)

    def _strip_protocol(cls, path: str) -> str:  # type: ignore[no-untyped-def]
        if path.startswith(f"{protocol}://"):
            path = path[len(protocol) + 3 :]
        return MemoryFileSystem._strip_protocol(path)

    def _open(self, path, mode="rb", **kwargs):  # type: ignore[no-untyped-def]
        f = MemoryFileSystem._open(self, path, mode, **kwargs)
        return FailingFile(self, path, f.getvalue()) if "r" in mode else f

    body = {
        "protocol": protocol,
        "store": {},
        "pseudo_dirs": [""],
        "_strip_protocol": classmethod(_strip_protocol),
        "_open": _open,
        **(cls_body or {}),
    }
    cls = type(f"Store_{protocol}", (MemoryFileSystem,), body)
    fsspec.register_implementation(protocol, cls, clobber=True)
    fs = cls()
    for f in (SAMPLES / DIRECTORY).iterdir():
        fs.pipe(f"/archive/{DIRECTORY}/{f.name}", f.read_bytes())
    return f"{protocol}://archive/{DIRECTORY}"


@pytest.fixture
def plan() -> Iterator[type[_Plan]]:
    _Plan.error, _Plan.reads, _Plan.init_kwargs, _Plan.paths = None, 0, {}, []
    yield _Plan
    _Plan.error = None


# -- 4. fsspec store values ---------------------------------------------------------------------


def _signed_store() -> str:
    """``kafkalogsig://``: a store whose constructor declares some argument types and records
    what it was given."""

    def __init__(  # type: ignore[no-untyped-def]
        self,
        username=None,
        password=None,
        port: int = 21,
        secure=False,
        timeout: float | None = None,
        params: dict[str, str] | None = None,
        **kwargs,
    ):
        _Plan.init_kwargs = dict(
            username=username,
            password=password,
            port=port,
            secure=secure,
            timeout=timeout,
            params=params,
            **kwargs,
        )
        super(type(self), self).__init__()

    return _memory_store("kafkalogsig", {"__init__": __init__})


def test_fsspec_values_stay_strings_unless_the_signature_says(plan) -> None:
    root = _signed_store()
    options = {
        "fs.kafkalogsig.password": "007",
        "fs.kafkalogsig.username": "0042",
        "fs.kafkalogsig.port": "2121",
        "fs.kafkalogsig.secure": "TRUE",
        "fs.kafkalogsig.timeout": "2.5",
        "fs.kafkalogsig.params": '{"a": "1"}',
        "fs.kafkalogsig.extra": "12",  # not in the signature: as given
        "fs.kafkalogsig.flag": "True",
    }
    got = kl.read_table(root, **options)
    assert got.equals(_local())
    assert plan.init_kwargs == {
        "username": "0042",
        "password": "007",
        "port": 2121,
        "secure": True,
        "timeout": 2.5,
        "params": {"a": "1"},
        "extra": "12",
        "flag": "True",
    }
    # a password that reads like a flag is still a password
    kl.read_table(root, **{**options, "fs.kafkalogsig.password": "True"})
    assert plan.init_kwargs["password"] == "True"


def test_fsspec_value_the_signature_refuses_is_named_not_shown(plan) -> None:
    root = _signed_store()
    with pytest.raises(OptionError, match="'fs.kafkalogsig.secure'.*true or false"):
        kl.read_table(root, **{"fs.kafkalogsig.secure": "maybe"})
    with pytest.raises(OptionError, match="'fs.kafkalogsig.params'.*JSON dict") as exc:
        kl.read_table(root, **{"fs.kafkalogsig.params": '{"sig": "SIGVALUE"'})
    assert "SIGVALUE" not in str(exc.value)


# -- 5. secrets: repr, errors, logs, plans, ReadStats ---------------------------------------------

PROXY_JSON = '{"scheme": "http", "host": "proxy.internal", "port": 3128, "username": "u", "password": "PROXYPW1"}'  # noqa: E501
SECRETS = ("PROXYPW1", "HDFSCONF1", "EXTID1", "FTPPW1", "SASSIG1", "ACCOUNTKEY1")


def _secret_options() -> dict[str, str]:
    return {
        "fs.s3.proxy_options": PROXY_JSON,
        "fs.s3.external_id": "EXTID1",
        "fs.s3.region": "eu-west-1",
        "fs.s3.endpoint_override": "http://minio.internal:9000",
        "fs.hdfs.extra_conf": '{"dfs.client.secret": "HDFSCONF1"}',
        "fs.ftp.password": "FTPPW1",
        "fs.ftp.host": "ftp.internal",
        "fs.abfs.sas_token": "sv=2022-11-02&sig=SASSIG1",
        "fs.abfs.account_key": "ACCOUNTKEY1",
    }


def test_repr_masks_every_value_not_known_to_be_harmless() -> None:
    o = kl.parse_options(_secret_options(), paths="s3://bucket/kafka-logs")
    shown = repr(o)
    assert not [s for s in SECRETS if s in shown], shown
    assert "fs.s3.proxy_options=****" in shown and "fs.hdfs.extra_conf=****" in shown
    # what is known to be harmless stays readable
    assert "fs.s3.region='eu-west-1'" in shown
    assert "fs.s3.endpoint_override='http://minio.internal:9000'" in shown
    assert "fs.ftp.host='ftp.internal'" in shown


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("fs.s3.proxy_options", '{"password": "PROXYPW1"'),
        ("fs.hdfs.extra_conf", '{"dfs.client.secret": "HDFSCONF1"'),
        ("fs.s3.default_metadata", "[PROXYPW1"),
    ],
)
def test_a_malformed_value_is_never_echoed(name: str, value: str) -> None:
    with pytest.raises(OptionError, match=name.replace(".", r"\.")) as exc:
        kl.parse_options({name: value})
    assert not [s for s in SECRETS if s in str(exc.value)], str(exc.value)


def test_proxy_options_take_pyarrows_uri_form(s3_server) -> None:
    """``fs.s3.proxy_options=http://user:password@host:port`` is used (the reads go through the
    proxy, which gets the credentials) and never shown."""
    bucket = "kafkalog-proxy"
    s3_server.upload(SAMPLES / DIRECTORY, f"{bucket}/{DIRECTORY}")
    with _Proxy() as proxy:
        proxy_uri = f"http://user1:PROXYPW1@127.0.0.1:{proxy.port}"
        o = kl.parse_options({**s3_server.options, "fs.s3.proxy_options": proxy_uri})
        assert "PROXYPW1" not in repr(o)
        got = kl.read_table(
            f"s3://{bucket}/{DIRECTORY}", **s3_server.options, **{"fs.s3.proxy_options": proxy_uri}
        )
    assert got.equals(_local())
    assert proxy.requests > 0
    assert proxy.authorizations == {"user1:PROXYPW1"}


class _Proxy:
    """A forwarding HTTP proxy on 127.0.0.1 that counts requests and records the credentials
    (``Proxy-Authorization: Basic``) it is given."""

    def __init__(self) -> None:
        self.requests = 0
        self.authorizations: set[str] = set()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def _forward(self) -> None:
                outer.requests += 1
                auth = self.headers.get("Proxy-Authorization", "")
                if auth.startswith("Basic "):
                    outer.authorizations.add(base64.b64decode(auth[6:]).decode())
                target = http.client.urlsplit(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in ("proxy-authorization", "proxy-connection", "connection")
                }
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                path = target.path + (f"?{target.query}" if target.query else "")
                conn.request(self.command, path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status, resp.reason)
                skip = {"transfer-encoding", "connection"}
                if self.command != "HEAD":  # a HEAD's Content-Length is the object's
                    skip.add("content-length")
                    self.send_header("Content-Length", str(len(data)))
                for k, v in resp.getheaders():
                    if k.lower() not in skip:
                        self.send_header(k, v)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]

    def __enter__(self) -> _Proxy:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_an_abfs_uri_with_a_key_is_refused_without_showing_it(capsys) -> None:
    uri = "abfss://container:ACCOUNTKEY1@account.dfs.core.windows.net/kafka-logs"
    with pytest.raises(OptionError, match="fs.abfs.account_key") as exc:
        kl.read_table(uri)
    assert "ACCOUNTKEY1" not in str(exc.value)
    assert "abfss://container:****@account.dfs.core.windows.net/kafka-logs" in str(exc.value)
    assert main(["verify", uri]) == 2
    err = capsys.readouterr().err
    assert "ACCOUNTKEY1" not in err and "fs.abfs.account_key" in err


@pytest.mark.parametrize(
    "uri",
    [
        "abfss://container@account.dfs.core.windows.net/kafka-logs?sv=2022-11-02&sp=rl&sig=SASSIG1",
        "abfs://container@account.dfs.core.windows.net/kafka-logs/orders-0?sig=SASSIG1",
        "https://account.blob.core.windows.net/container/x.log?sv=2022-11-02&sig=SASSIG1",
        "s3://bucket/x.log?X-Amz-Credential=AKIA&X-Amz-Signature=SASSIG1",
    ],
)
def test_a_signed_query_string_never_appears(uri: str, capsys, caplog) -> None:
    with caplog.at_level(logging.DEBUG, logger="kafkalog"):
        with pytest.raises(OptionError, match="query string") as exc:
            kl.parse_options(paths=uri)
        with pytest.raises(OptionError):
            kl.read_table(uri)
        assert main(["verify", uri]) == 2
    err = capsys.readouterr().err
    shown = str(exc.value) + err + caplog.text
    assert "SASSIG1" not in shown, shown
    assert "sig=****" in str(exc.value) or "Signature=****" in str(exc.value)


def test_a_store_error_echoing_a_secret_is_scrubbed(plan, caplog) -> None:
    """Whatever a store's client writes in its errors, the masked options' values are scrubbed
    from the error, the retry log lines and the read's stats."""
    root = _memory_store("kafkalogecho")
    plan.error = ConnectionResetError("reset while using password FTPPW1 and proxy PROXYPW1")
    options = {
        "fs.kafkalogecho.password": "FTPPW1",
        "fs.kafkalogecho.proxy": "http://u:PROXYPW1@proxy:3128",
        "remoteRetries": "1",
    }
    stats = kl.ReadStats()
    with caplog.at_level(logging.DEBUG, logger="kafkalog"):
        with pytest.raises(StorageError) as exc:
            kl.read_table(root, stats=stats, **options)
    shown = str(exc.value) + caplog.text + repr(stats)
    assert "retrying" in caplog.text and "ConnectionResetError" in str(exc.value)
    assert "FTPPW1" not in shown and "PROXYPW1" not in shown, shown


def _account_sas(permissions: str = "rl") -> str:
    """An account SAS for Azurite's well-known account (Azure's signing scheme, version
    2022-11-02): blob service, service/container/object resources, valid for an hour."""
    import datetime
    import hashlib
    import hmac

    from conftest import AZURITE_ACCOUNT, AZURITE_KEY

    now = datetime.datetime.now(datetime.timezone.utc)
    start = (now - datetime.timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    expiry = (now + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    fields = [AZURITE_ACCOUNT, permissions, "b", "sco", start, expiry, "", "http,https"]
    to_sign = "\n".join([*fields, "2022-11-02", "", ""])
    digest = hmac.new(base64.b64decode(AZURITE_KEY), to_sign.encode(), hashlib.sha256).digest()
    sig = urllib.parse.quote(base64.b64encode(digest).decode(), safe="")
    return (
        f"sv=2022-11-02&ss=b&srt=sco&sp={permissions}&st={start}&se={expiry}"
        f"&spr=http,https&sig={sig}"
    )


@pytest.fixture
def sas_container(azurite_server) -> tuple[str, dict[str, str]]:
    """sample_segments/magic2-zstd-0 in Azurite, and options that reach it without the key."""
    if not (SAMPLES / DIRECTORY).is_dir():
        pytest.skip("sample_segments/ not present")
    azurite_server.upload(SAMPLES / DIRECTORY, f"kafkalog-sas/{DIRECTORY}")
    options = {k: v for k, v in azurite_server.options.items() if k != "fs.abfs.account_key"}
    return azurite_server.uri(f"kafkalog-sas/{DIRECTORY}"), options


def test_a_sas_token_option_reads_azure(sas_container) -> None:
    """``fs.abfs.sas_token`` as the Azure portal shows it (``sv=...``) or as a query string
    (``?sv=...``, the form pyarrow wants)."""
    uri, options = sas_container
    token = _account_sas()
    for given in (token, f"?{token}"):
        stats = kl.ReadStats()
        got = kl.read_table(uri, stats=stats, **options, **{"fs.abfs.sas_token": given})
        assert got.equals(_local())
        sig = token.rpartition("sig=")[2]
        assert sig not in repr(kl.parse_options({"fs.abfs.sas_token": given})) + repr(stats)


def test_a_sas_token_never_appears_in_an_azure_error(sas_container, caplog) -> None:
    """Azure's errors name the request's URL, which carries the SAS token: scrubbed. A token
    the account refuses is access denied, not retried."""
    uri, options = sas_container
    token = _account_sas().rpartition("sig=")[0] + "sig=SASSIG1%2Bx%2Fy%3D"
    with caplog.at_level(logging.DEBUG, logger="kafkalog"):
        with pytest.raises(AccessDeniedError) as exc:
            kl.read_table(uri, **options, **{"fs.abfs.sas_token": token})
    assert "SASSIG1" not in str(exc.value) + caplog.text, str(exc.value)
    assert "fs.abfs.*" in str(exc.value)


@pytest.mark.spark
def test_spark_plan_strings_and_errors_show_no_secret(spark) -> None:
    if not (SAMPLES / DIRECTORY).is_dir():
        pytest.skip("sample_segments/ not present")
    df = spark.read.format("kafkalog").options(**_secret_options()).load(str(SAMPLES / DIRECTORY))
    qe = df._jdf.queryExecution()
    plans = qe.toString() + qe.simpleString() + df._jdf.logicalPlan().toString()
    assert "BatchScan kafkalog" in plans
    assert not [s for s in SECRETS if s in plans]
    assert df.count() == _local().num_rows
    with pytest.raises(Exception) as exc:  # noqa: PT011 (Spark wraps our OptionError)
        spark.read.format("kafkalog").option("fs.s3.proxy_options", '{"password": "PROXYPW1"').load(
            str(SAMPLES / DIRECTORY)
        )
    assert "fs.s3.proxy_options" in str(exc.value) and "PROXYPW1" not in str(exc.value)


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
