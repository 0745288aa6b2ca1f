"""Secrets and stores (issue 20, items 4-5), through the public interfaces.

* fsspec store options stay strings unless the store's constructor says otherwise;
* secrets (store options not known to be harmless, credentials in URIs, SAS tokens) never appear
  in a repr, an error, a log line, Spark's plan strings or ReadStats.

Items 6-7 (the AWS chain, retries and access denied): tests/test_store_access.py.
"""

from __future__ import annotations

import base64
import http.client
import http.server
import logging
import threading
import urllib.parse
from typing import Any

import pytest
from conftest import SAMPLES
from store_support import DIRECTORY, _local, _memory_store, _Plan

import kafkalog_source as kl
from kafkalog_source.cli.main import main
from kafkalog_source.errors import AccessDeniedError, OptionError, StorageError

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


# -- query strings in messages: credentials masked, the rest shown (issue 40 item 7d) ----------

_SHOWN_QUERIES = [
    # (URI, values that must not appear, parameters that stay as written)
    ("http://127.0.0.1:9/b?list-type=2&prefix=logs%2F&delimiter=%2F", [], ["list-type=2",
     "prefix=logs%2F", "delimiter=%2F"]),
    ("https://a.blob.core.windows.net/c?restype=container&comp=list&prefix=x%2F", [],
     ["restype=container", "comp=list", "prefix=x%2F"]),
    ("https://a.blob.core.windows.net/c/k?sv=2022-11-02&sp=rl&se=2030-01-01T00%3A00Z"
     "&sig=SASSIG1", ["2022-11-02", "sp=rl", "2030-01-01", "SASSIG1"], []),
    ("https://a.blob.core.windows.net/c/k?sv=2022-11-02&ss=b&srt=sco&sp=rl&st=2030&spr=https",
     ["2022-11-02", "sp=rl", "srt=sco", "st=2030", "spr=https"], []),
    ("https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAX%2F2030"
     "&X-Amz-Date=2030&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Security-Token=SESSTOK1"
     "&X-Amz-Signature=SIGV4SIG1", ["AKIAX", "SESSTOK1", "SIGV4SIG1", "AWS4-HMAC"], []),
    ("https://storage.googleapis.com/b/k?X-Goog-Credential=SA%40p&X-Goog-Signature=GSIG1&x=1",
     ["SA%40p", "GSIG1", "x=1"], []),
    ("https://h/cat?token=TOKEN1&password=PW1&AccountKey=ACCKEY1&access_token=AT1&sslmode=require"
     "&application_name=kafkalog&continuation-token=CT1", ["TOKEN1", "PW1", "ACCKEY1", "AT1",
     "CT1"], ["sslmode=require", "application_name=kafkalog"]),
    ("https://h/p?Signature=SIG2&Expires=2030&AWSAccessKeyId=AKIA2", ["SIG2", "AKIA2", "2030"], []),
]  # fmt: skip


@pytest.mark.parametrize(("uri", "hidden", "kept"), _SHOWN_QUERIES)
def test_a_uri_in_a_message_masks_credentials_and_shows_the_rest(
    uri: str, hidden: list[str], kept: list[str]
) -> None:
    from kafkalog_source.redact import redact_uri, scrub

    for shown in (redact_uri(uri), scrub(f"Error performing GET {uri} in 1s - 404", [])):
        assert not [h for h in hidden if h in shown], shown
        assert all(k in shown for k in kept), shown
        assert shown.count("****") >= len(hidden) - 1  # masked in place, not cut out


def test_a_store_error_shows_its_listing_request_and_no_secret(s3_server: Any) -> None:
    """A listing the store refused (no such bucket) is said with its request's parameters as
    sent (``list-type=2&prefix=logs%2F``, not ``list-type=****&prefix=****``), and no secret."""
    secret = s3_server.options["fs.s3.secret_key"]
    with pytest.raises(kl.KafkaLogError) as exc:
        kl.read_table("s3://kafkalog-no-such-bucket/logs", **s3_server.options)
    shown = str(exc.value)
    assert "/kafkalog-no-such-bucket?list-type=2&prefix=logs%2F " in shown, shown
    assert "NoSuchBucket" in shown and secret not in shown and "=****" not in shown, shown
