"""The object client's links and credentials against a real S3-compatible server (moto) on
127.0.0.1 (issue 32): a slow or stalled link bounded by the request timeout per read, profile
keys renewed in the shared files and boto3 profile credentials asked again when they expire,
a checkpoint rewritten at the same size and second read again (by its ETag), and the
``fs.gs.*`` options as obstore's GCS settings. Request by request through the recording proxy:
tests/test_remote_requests.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from remote_support import BUCKET, _as_a_new_process, _segment

from kafkalog_source.options import parse_options


class _Trickle:
    """A TCP proxy on 127.0.0.1 in front of the moto server that passes the server's answers on
    ``chunk`` bytes at a time, ``pause`` seconds apart (a slow link), or, with ``stall``, sends
    the first chunk of an answer and then nothing more (a stalled connection)."""

    def __init__(self, target_port: int, chunk: int, pause: float, stall: bool = False):
        import socket
        import threading

        self.target, self.chunk, self.pause, self.stall = target_port, chunk, pause, stall
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: list[Any] = []
        self.sent = bytearray()  # what the clients sent (requests, headers included)
        self._start(self._accept)

    def _start(self, fn: Any, *args: Any) -> None:
        import threading

        t = threading.Thread(target=fn, args=args, daemon=True)
        t.start()
        self._threads.append(t)

    def _accept(self) -> None:
        import socket

        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self._sockets += [client, upstream]
            self._start(self._pipe, client, upstream, False)
            self._start(self._pipe, upstream, client, True)

    def _pipe(self, src: Any, dst: Any, slow: bool) -> None:
        import time

        try:
            while not self._closed.is_set():
                data = src.recv(self.chunk if slow else 65536)
                if not data:
                    break
                if not slow:
                    self.sent += data
                dst.sendall(data)
                if slow and self.stall:
                    self._closed.wait(60)
                    break
                if slow:
                    time.sleep(self.pause)
        except OSError:
            pass

    def close(self) -> None:
        self._closed.set()
        import socket

        for s in [self._server, *self._sockets]:
            try:
                s.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv or accept
            except OSError:
                pass
            s.close()
        for t in self._threads:
            t.join(5)


@pytest.mark.parametrize("link", ["slow", "stalled"])
def test_request_timeout_bounds_each_read_not_the_whole_request(s3_server, link: str) -> None:
    """``fs.s3.request_timeout`` is the wait for an answer's next bytes (as pyarrow's socket read
    timeout): a ranged GET whose bytes keep coming takes as long as it takes (no deadline for
    the whole request: obstore's default of 30 s ended large GETs on slow links); an answer
    that stops coming fails after the timeout."""
    from kafkalog_source.transport.filesystems import resolve

    data = bytes(range(256)) * 64  # 16 KiB
    s3_server.bucket(BUCKET)
    s3_server.put(f"{BUCKET}/timeouts/blob", data)
    port = int(s3_server.endpoint.rsplit(":", 1)[1])
    # slow: 2 KiB every 0.4 s, about 3 s for the whole answer; stalled: one piece, then nothing
    proxy = _Trickle(port, chunk=2048, pause=0.4, stall=link == "stalled")
    try:
        options = {
            **s3_server.options,
            "fs.s3.endpoint_override": f"http://127.0.0.1:{proxy.port}",
            "fs.s3.request_timeout": "1",
            "fs.s3.retry_max_attempts": "1",
            "fs.s3.region": f"us-east-1-{link}",  # a client of its own (not one cached)
        }
        o = parse_options(options, paths=f"s3://{BUCKET}/timeouts/blob")
        loc = resolve(f"s3://{BUCKET}/timeouts/blob", o.store)
        assert loc.objects is not None
        if link == "slow":
            got, meta = loc.objects.get(loc.key, 0, len(data))
            assert bytes(got) == data and meta.size == len(data)
        else:
            with pytest.raises(OSError, match="(?i)time"):
                loc.objects.get(loc.key, 0, len(data))
    finally:
        proxy.close()


@pytest.fixture()
def aws_files(monkeypatch, tmp_path: Path) -> Path:
    """No AWS variable but the shared files' paths (in ``tmp_path``): credentials come from the
    profile."""
    import os

    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    (tmp_path / "aws-config").write_text("")
    return tmp_path


def _profile_client(s3_server: Any, proxy: _Trickle, name: str) -> Any:
    """The location of ``BUCKET/profile/blob`` through ``proxy``, with no credentials in the
    options (a client of its own: ``name`` is in its region)."""
    from kafkalog_source.transport.filesystems import resolve

    s3_server.bucket(BUCKET)
    s3_server.put(f"{BUCKET}/profile/blob", b"0123456789")
    options = {
        "fs.s3.endpoint_override": f"http://127.0.0.1:{proxy.port}",
        "fs.s3.region": f"us-east-1-{name}",
    }
    uri = f"s3://{BUCKET}/profile/blob"
    loc = resolve(uri, parse_options(options, paths=uri).store)
    assert loc.objects is not None
    return loc


def test_profile_keys_renewed_in_the_files_reach_a_long_read(s3_server, aws_files, monkeypatch):
    """Keys a tool renews in the shared credentials file are read again (they were read once,
    at the open, and a long stream went on with expired ones)."""
    from kafkalog_source.transport import aws

    monkeypatch.setattr(aws, "PROFILE_RECHECK", __import__("datetime").timedelta(0))
    creds = aws_files / "aws-credentials"
    creds.write_text("[default]\naws_access_key_id = KEYONE\naws_secret_access_key = s1\n")
    proxy = _Trickle(int(s3_server.endpoint.rsplit(":", 1)[1]), chunk=65536, pause=0)
    try:
        loc = _profile_client(s3_server, proxy, "renewed")
        assert bytes(loc.objects.get(loc.key, 0, 4)[0]) == b"0123"
        assert b"Credential=KEYONE/" in proxy.sent
        creds.write_text(
            "[default]\naws_access_key_id = KEYTWO\naws_secret_access_key = secret2\n"
            "aws_session_token = token2\n"
        )
        proxy.sent.clear()
        assert bytes(loc.objects.get(loc.key, 4, 8)[0]) == b"4567"
        assert b"Credential=KEYTWO/" in proxy.sent and b"token2" in proxy.sent
    finally:
        proxy.close()


def test_boto3_profile_credentials_are_kept_until_they_expire_not_longer(
    s3_server, aws_files
) -> None:
    """A profile whose credentials come from boto3 (here a ``credential_process``, as SSO and
    role profiles do) is asked again when they expire: obstore's provider kept every answer
    30 minutes, past the expiry of shorter-lived credentials."""
    pytest.importorskip("boto3")
    import datetime
    import sys

    expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=20)
    script = aws_files / "creds.py"
    script.write_text(
        "import json\n"
        "print(json.dumps({'Version': 1, 'AccessKeyId': 'PROCKEY', 'SecretAccessKey': 'ps',"
        f" 'SessionToken': 'pt', 'Expiration': '{expiry.strftime('%Y-%m-%dT%H:%M:%SZ')}'}}))\n"
    )
    (aws_files / "aws-config").write_text(
        f"[default]\ncredential_process = {sys.executable} {script}\n"
    )
    proxy = _Trickle(int(s3_server.endpoint.rsplit(":", 1)[1]), chunk=65536, pause=0)
    try:
        loc = _profile_client(s3_server, proxy, "process")
        assert bytes(loc.objects.get(loc.key, 0, 4)[0]) == b"0123"
        assert b"Credential=PROCKEY/" in proxy.sent
        got = loc.objects._store.credential_provider()
        assert got["access_key_id"] == "PROCKEY"
        assert got["expires_at"] <= expiry + datetime.timedelta(seconds=1)
    finally:
        proxy.close()


def test_a_checkpoint_rewritten_at_the_same_size_and_second_is_read_again(s3_server) -> None:
    """A listed checkpoint's text is kept per version: the store's ETag (it changes with the
    content), not (size, modification time), which S3 gives to the second: Kafka rewrites a
    checkpoint every few seconds at the same size, and a stream's next trigger read the old
    text."""
    import time

    from kafkalog_source.layout.checkpoints import RECOVERY_POINT, read_log_dir_checkpoints
    from kafkalog_source.layout.discovery import discover
    from kafkalog_source.transport.filesystems import using_store
    from kafkalog_source.transport.known import attempt_known

    prefix = f"{BUCKET}/ckpt-same-second"
    s3_server.bucket(BUCKET)
    data, _ = _segment(0)
    s3_server.put(f"{prefix}/orders-0/{0:020d}.log", data)
    uri = f"s3://{prefix}"
    opts = parse_options(s3_server.options, paths=uri)

    def trigger() -> dict:
        with using_store(opts.store), attempt_known():  # one listing, as a stream trigger's
            discover(opts)
            return read_log_dir_checkpoints(uri).recovery_point

    _as_a_new_process()
    for _ in range(5):  # until the rewrite lands in the same second as the first write
        s3_server.put(f"{prefix}/{RECOVERY_POINT}", b"0\n1\norders 0 10\n")
        first = time.time()
        assert trigger() == {("orders", 0): 10}
        s3_server.put(f"{prefix}/{RECOVERY_POINT}", b"0\n1\norders 0 20\n")
        if int(time.time()) == int(first):
            break
    else:
        pytest.skip("could not rewrite within one second")
    assert trigger() == {("orders", 0): 20}


def test_gcs_options_map_onto_obstore() -> None:
    """The ``fs.gs.*`` options (pyarrow's GcsFileSystem arguments) as obstore's GCS settings:
    anonymous → skip_signature, endpoint_override + scheme → base_url (http allowed),
    retry_time_limit → retry_timeout, access_token → a credential provider giving it; an
    option obstore has no counterpart for leaves the store to pyarrow (None)."""
    from kafkalog_source.transport.objects import object_client

    def client(**options: str) -> Any:
        o = parse_options({f"fs.gs.{k}": v for k, v in options.items()}, paths="gs://b/x")
        return object_client("gs", "b", o.store.args_for("gs"))

    c = client(anonymous="true", endpoint_override="127.0.0.1:4443", scheme="http",
               retry_time_limit="7", project_id="p")  # fmt: skip
    assert c is not None and repr(c) == "ObjectClient(gs://b)"
    store = c._store
    assert store.config["skip_signature"] == "true"
    assert store.config["base_url"] == "http://127.0.0.1:4443"
    assert store.client_options["allow_http"] == "true"
    assert store.retry_config["retry_timeout"].total_seconds() == 7
    assert store.credential_provider is None
    token = "ya29.a0AfH6SMBtokenvalue0123456789"
    c = client(access_token=token)
    assert "skip_signature" not in c._store.config
    assert c._store.credential_provider()["token"] == token
    assert token not in repr(c)
    assert client(target_service_account="sa@p.iam.gserviceaccount.com") is None
