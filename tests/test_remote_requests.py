"""What a read of a bucket asks of the store, request by request (issue 32).

A real S3-compatible server (moto) on 127.0.0.1 behind ``bench/delayproxy.py``, which records
every request line. The listing is the truth about what exists: planning makes the listing and one
``GET`` per listed evidence file that a rule needs (and the end walk of a last segment that
something claims past), never a ``HEAD``, never a request for a file the listing did not show;
reading makes one ``GET`` per small object. The faults a store has (throttling, access denied,
an object deleted, truncated or grown between the listing and the read) come out as they do for
local files. No timing here: ``bench/remote.py --cluster`` measures.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from conftest import kp_v2_batch

from kafkalog_source.arrow.schema import output_projection
from kafkalog_source.errors import AccessDeniedError, StorageError
from kafkalog_source.options import parse_options
from kafkalog_source.planning import logview
from kafkalog_source.planning.planner import plan
from kafkalog_source.planning.request import batch_request
from kafkalog_source.reader import iter_batches, read_split, read_table
from kafkalog_source.stats import ReadStats
from kafkalog_source.transport.known import NOT_LISTED, KnownObjects, Listed

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from delayproxy import DelayProxy, http_error, request_kind  # noqa: E402

BUCKET = "kafkalog-requests"
SECRET = "testing-secret-value"  # conftest's S3 secret key
BATCHES = 4  # per segment
RECORDS = 5  # per batch


def _segment(base: int) -> tuple[bytes, list[tuple[int, int, int]]]:
    """Segment bytes from offset ``base``, and (position, base offset, first timestamp) of each
    batch."""
    data = b""
    batches = []
    for b in range(BATCHES):
        offset = base + b * RECORDS
        ts = 1_700_000_000_000 + offset
        batches.append((len(data), offset, ts))
        recs = [(ts + i, b"k%d" % (offset + i), b"v%d" % (offset + i), []) for i in range(RECORDS)]
        data += kp_v2_batch(recs, offset)
    return data, batches


def _write_archive(root: Path) -> dict[str, Any]:
    """A log directory: ``orders-0`` (two segments, each with its .index and .timeindex, and a
    leader-epoch-checkpoint), ``orders-1`` (two segments, nothing else), and the log
    directory's recovery-point-offset-checkpoint. Returns what the test expects."""
    ends = {}
    for part in (0, 1):
        d = root / f"orders-{part}"
        d.mkdir(parents=True)
        for k in range(2):
            base = k * BATCHES * RECORDS
            data, batches = _segment(base)
            (d / f"{base:020d}.log").write_bytes(data)
            if part == 0:  # an entry at the third batch, as a broker writes every 4 KiB
                pos, off, ts = batches[2]
                (d / f"{base:020d}.index").write_bytes(struct.pack(">ii", off - base, pos))
                (d / f"{base:020d}.timeindex").write_bytes(struct.pack(">qi", ts, off - base))
        ends[part] = 2 * BATCHES * RECORDS
    (root / "orders-0" / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    (root / "recovery-point-offset-checkpoint").write_text(
        f"0\n2\norders 0 {ends[0]}\norders 1 {ends[1]}\n"
    )
    last = f"{BATCHES * RECORDS:020d}"
    return {
        "evidence": {
            "recovery-point-offset-checkpoint",
            "orders-0/leader-epoch-checkpoint",
            f"orders-0/{last}.index",
            f"orders-0/{last}.timeindex",
        },
        # the last segments' ends are walked: something (an index, the recovery point) could
        # claim offsets past them
        "walked": {f"orders-0/{last}.log", f"orders-1/{last}.log"},
        "logs": {f"orders-{p}/{k * BATCHES * RECORDS:020d}.log" for p in (0, 1) for k in (0, 1)},
        "records": 2 * 2 * BATCHES * RECORDS,
    }


@pytest.fixture(scope="module")
def archive(s3_server, tmp_path_factory) -> tuple[str, Path, dict[str, Any]]:
    """(URI of the copy in the bucket, the local archive, what the test expects)."""
    local = tmp_path_factory.mktemp("requests") / "logs"
    expect = _write_archive(local)
    s3_server.upload(local, f"{BUCKET}/logs")
    return f"s3://{BUCKET}/logs", local, expect


@pytest.fixture()
def proxy(s3_server) -> Any:
    """A proxy in front of the moto server that records every request line; ``proxy.options``
    reach the bucket through it."""
    port = int(s3_server.endpoint.rsplit(":", 1)[1])
    with DelayProxy(port, delay=0) as p:
        p.options = {**s3_server.options, "fs.s3.endpoint_override": f"http://127.0.0.1:{p.port}"}
        yield p


def _as_a_new_process() -> None:
    """Forget what this process learnt of the files (header walks, checkpoint texts)."""
    from kafkalog_source.layout import checkpoints

    logview.forget()
    checkpoints.forget()


def _requests(proxy: Any) -> list[tuple[str, str]]:
    """(kind, key below logs/) of each request the proxy saw, in order."""
    out = []
    for line in proxy.request_lines:
        first = line.decode()
        target = first.split()[1]
        key = target.split("?", 1)[0].removeprefix(f"/{BUCKET}/").partition("/")[2]
        out.append((request_kind(line), key))
    return out


def test_planning_is_the_listing_and_the_evidence_a_rule_needs(archive, proxy) -> None:
    uri, _, expect = archive
    _as_a_new_process()  # as a fresh process: no walk cached
    proxy.reset()
    splits = plan(batch_request(parse_options(proxy.options, paths=uri)))
    assert sum(len(s.ranges) for s in splits) == len(expect["logs"])
    got = _requests(proxy)
    kinds = [k for k, _ in got]
    assert kinds.count("LIST") == 1 and kinds[0] == "LIST"  # one page holds this archive
    assert "HEAD" not in kinds, got
    gets = [key for k, key in got if k == "GET"]
    # each listed evidence file a rule needs, once; the last segments' ends walked, once each;
    # nothing else: not the first segment's .index (no rule needs it), not the files the
    # listing did not show (orders-1's indexes and leader epochs, the other checkpoints)
    assert sorted(gets) == sorted(expect["evidence"] | expect["walked"]), got
    assert len(gets) == len(set(gets))


def test_reading_is_one_get_per_small_object(archive, proxy) -> None:
    uri, local, expect = archive
    o = parse_options(proxy.options, paths=uri)
    splits = plan(batch_request(o))
    proxy.reset()
    rows = 0
    for split in splits:
        for batch in read_split(split, o, output_projection(o)):
            rows += batch.num_rows
    assert rows == expect["records"]
    got = _requests(proxy)
    assert sorted(key for _, key in got) == sorted(expect["logs"]), got
    assert {k for k, _ in got} == {"GET"}

    # the whole Arrow read: the plan's requests, then one GET per object; and the rows are
    # those of the local copy
    _as_a_new_process()
    proxy.reset()
    table = pa.Table.from_batches(list(iter_batches(uri, **proxy.options)))
    kinds = [k for k, _ in _requests(proxy)]
    assert kinds.count("LIST") == 1 and "HEAD" not in kinds
    assert kinds.count("GET") == len(expect["evidence"]) + len(expect["walked"]) + len(
        expect["logs"]
    )
    assert table.equals(read_table(str(local)))


def test_throttling_is_retried_and_access_denied_is_not(archive, proxy, caplog) -> None:
    import logging

    uri, local, expect = archive
    victim = f"/{BUCKET}/logs/orders-1/{0:020d}.log"
    slow = http_error(503, "Slow Down", "SlowDown", "Please reduce your request rate")
    failures = {"left": 2}

    def twice(line: bytes) -> bytes | None:
        if failures["left"] > 0:
            failures["left"] -= 1
            return slow
        return None

    # the client's own retries (fs.s3.retry_max_attempts, default 3 attempts) absorb it
    proxy.answers[f"GET {victim} ".encode()] = twice
    assert read_table(uri, **proxy.options).equals(read_table(str(local)))
    victim_gets = [ln for ln in proxy.request_lines if f"GET {victim} ".encode() in ln]
    assert len(victim_gets) == 3

    # and with none of its own, kafkalog's (remoteRetries), logged, with backoff
    failures["left"] = 2
    opts = {**proxy.options, "fs.s3.retry_max_attempts": "1", "remoteRetries": "2"}
    with caplog.at_level(logging.INFO, logger="kafkalog"):
        assert read_table(uri, **opts).equals(read_table(str(local)))
    assert sum("retrying" in r.getMessage() and "throttling" in r.getMessage()
               for r in caplog.records) == 2  # fmt: skip
    failures["left"] = 10
    with pytest.raises(StorageError, match=r"after 3 attempts; the last error \(throttling\)"):
        read_table(uri, **opts)

    # access denied: one line naming the object, asked once, never retried, no secret
    proxy.answers.clear()
    proxy.answers[f"GET {victim} ".encode()] = http_error(
        403, "Forbidden", "AccessDenied", f"denied while using {SECRET}"
    )
    proxy.reset()
    with pytest.raises(AccessDeniedError) as exc:
        read_table(uri, **opts)
    shown = str(exc.value)
    assert "\n" not in shown and "orders-1/00000000000000000000.log" in shown
    assert "not retried" in shown and SECRET not in shown and SECRET not in repr(exc.value)
    assert len([ln for ln in proxy.request_lines if f"GET {victim} ".encode() in ln]) == 1


def _plan_then(uri: str, opts: dict[str, str], change: Any, stats: ReadStats) -> list[int]:
    """Plan a read of ``uri``, apply ``change``, then read the plan: the offsets read."""
    o = parse_options(opts, paths=uri)
    splits = plan(batch_request(o))
    change()
    out: list[int] = []
    for split in splits:
        for batch in read_split(split, o, output_projection(o), stats):
            out += batch.column("offset").to_pylist()
    return out


@pytest.mark.parametrize("change", ["deleted", "truncated", "grown"])
def test_an_object_changed_between_listing_and_read_is_reported_as_a_file_is(
    s3_server, proxy, tmp_path: Path, change: str
) -> None:
    """The same plan-then-change on a local copy and on the bucket: the same rows, the same
    error or the same counts (the completeness rules do not depend on the store)."""
    name = f"orders-1/{BATCHES * RECORDS:020d}.log"
    for i, opts in enumerate(({}, {"ignoreMissingFiles": "true"})):
        local = tmp_path / f"local-{i}"
        _write_archive(local)
        data = (local / name).read_bytes()
        new = {
            "deleted": None,
            "truncated": data[: len(data) // 2 + 7],  # inside a batch
            "grown": data + kp_v2_batch([(1, b"k", b"v", [])], 2 * BATCHES * RECORDS),
        }[change]
        prefix = f"{BUCKET}/changed-{change}-{i}"
        uri = s3_server.upload(local, prefix)

        def change_local(local: Path = local, new: bytes | None = new) -> None:
            p = local / name
            p.unlink() if new is None else p.write_bytes(new)

        def change_remote(prefix: str = prefix, new: bytes | None = new) -> None:
            if new is None:
                s3_server.fs.delete_file(f"{prefix}/{name}")
            else:
                s3_server.put(f"{prefix}/{name}", new)

        results = []
        for where, options, apply in (
            (str(local), opts, change_local),
            (uri, {**proxy.options, **opts}, change_remote),
        ):
            _as_a_new_process()
            stats = ReadStats()
            try:
                got: Any = _plan_then(where, options, apply, stats)
            except Exception as exc:  # noqa: BLE001 - compared below
                got = type(exc).__name__
            results.append((got, stats.missing_files, stats.segments, stats.corrupt_files))
        assert results[0] == results[1], (change, opts, results)
        got = results[1][0]
        if change == "deleted" and not opts:
            assert got == "FileNotFoundError"
        elif change == "deleted":  # skipped, counted; the other three segments read
            assert len(got) == 60 and results[1][1] == 1
        elif change == "truncated":  # the last segment ends quietly inside its cut batch
            assert len(got) == 70
        else:  # what was planned: the batch appended since the listing is the next read's
            assert len(got) == 80


def test_known_objects_answer_from_the_listing() -> None:
    known = KnownObjects()
    known.add_listing(
        "s3://b/logs",
        [("s3://b/logs/t-0/00000000000000000000.log", 10, 5), ("s3://b/logs/cp", 3, 1)],
    )
    assert known.lookup("s3://b/logs/t-0/00000000000000000000.log") == Listed(10, 5)
    assert known.lookup("s3://b/logs/t-0/00000000000000000000.index") is NOT_LISTED
    assert known.lookup("s3://b/other/x") is None  # not below a listed prefix: ask the store
    assert known.under("s3://b/logs/t-0") == [
        ("s3://b/logs/t-0/00000000000000000000.log", Listed(10, 5))
    ]
    assert known.under("s3://b") is None


@pytest.mark.parametrize("scope", ["none", "command"])
def test_a_stream_trigger_is_one_listing_plus_the_new_bytes(
    s3_server, proxy, tmp_path, scope: str
) -> None:
    """Each trigger lists the bucket once, also where a listing is active around the stream
    (``command``: a CLI command holds one for its length; a trigger went on with it, stale)."""
    import contextlib

    from kafkalog_source.transport.known import known_objects

    outer = known_objects() if scope == "command" else contextlib.nullcontext()
    with outer:
        _stream_triggers(s3_server, proxy, tmp_path, scope)


def _stream_triggers(s3_server: Any, proxy: Any, tmp_path: Path, scope: str) -> None:
    from kafkalog_source.streaming.source import Limit, StreamSource

    local = tmp_path / "logs"
    _write_archive(local)
    prefix = f"{BUCKET}/stream-{scope}"
    uri = s3_server.upload(local, prefix)
    _as_a_new_process()
    source = StreamSource(parse_options(proxy.options, paths=uri))
    start = source.initial()
    end = source.latest(start, Limit())
    assert sum(end.values()) == 2 * 2 * BATCHES * RECORDS
    source.plan(start, end)
    # nothing new: the trigger is its listing, nothing asked of the objects it knows
    proxy.reset()
    assert source.latest(end, Limit()) == end
    assert source.plan(end, end) == []
    assert [k for k, _ in _requests(proxy)] == ["LIST"], _requests(proxy)
    # a batch appended to orders-1's last segment: the listing, and its new bytes
    name = f"orders-1/{BATCHES * RECORDS:020d}.log"
    grown = (local / name).read_bytes() + kp_v2_batch([(1, b"k", b"v", [])], 40)
    s3_server.put(f"{prefix}/{name}", grown)
    proxy.reset()
    new_end = source.latest(end, Limit())
    assert new_end[("orders", 1)] == end[("orders", 1)] + 1
    splits = source.plan(end, new_end)
    got = _requests(proxy)
    assert [k for k, _ in got].count("LIST") == 1 and "HEAD" not in [k for k, _ in got], got
    assert {key for k, key in got if k == "GET"} == {name}, got  # only the object that changed
    opts = parse_options(proxy.options, paths=uri)
    offsets = [
        off
        for split in splits
        for batch in read_split(split, opts, output_projection(opts))
        for off in batch.column("offset").to_pylist()
    ]
    assert offsets == [2 * BATCHES * RECORDS]


def test_a_query_command_lists_once_and_makes_no_head(archive, proxy, capsys) -> None:
    """``kafkalog query`` (DuckDB engine) asks what an Arrow read asks: one listing (which also
    tells that PATH is no Iceberg or Delta table), no ``HEAD``, one ``GET`` per object and per
    evidence file a rule needs."""
    from kafkalog_source.cli.main import main

    uri, _, expect = archive
    _as_a_new_process()
    proxy.reset()
    opts = [a for k, v in proxy.options.items() for a in ("-o", f"{k}={v}")]
    code = main(["query", uri, "SELECT count(*) AS n FROM kafkalog", "-q", *opts])
    assert code == 0 and str(expect["records"]) in capsys.readouterr().out
    got = _requests(proxy)
    kinds = [k for k, _ in got]
    assert kinds.count("LIST") == 1 and "HEAD" not in kinds, got
    gets = sorted(key for k, key in got if k == "GET")
    # the evidence once; the last segments' ends walked in planning, then each object read
    assert gets == sorted([*expect["evidence"], *expect["walked"], *expect["logs"]]), got


TOKEN = "FQoGZXIvYXdzESSIONTOKEN0123456789abcdefSECRET/+=="  # a session token, as STS gives


def _echoing_errors(token: str, secret: str) -> dict[str, bytes]:
    """What S3 answers a request whose session token it refuses, echoing what it was sent: the
    token itself (``<Token-0>`` of ExpiredToken / InvalidToken), the canonical request it
    signed (with the ``x-amz-security-token`` header), a presigned URL's query, an
    ``Authorization`` header. Real S3 writes the first two; moto does not check tokens, so the
    proxy in front of it answers with them."""

    def answer(status: int, reason: str, body: str) -> bytes:
        data = body.encode()
        head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/xml\r\n"
        return (head + f"Content-Length: {len(data)}\r\n\r\n").encode() + data

    return {
        "expired": answer(
            400,
            "Bad Request",
            "<Error><Code>ExpiredToken</Code><Message>The provided token has expired."
            f"</Message><Token-0>{token}</Token-0></Error>",
        ),
        "signature": answer(
            403,
            "Forbidden",
            "<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we "
            "calculated does not match</Message><StringToSign>AWS4-HMAC-SHA256\n20260101T000000Z"
            "</StringToSign><CanonicalRequest>GET\n/x\n\nhost:127.0.0.1\n"
            f"x-amz-security-token:{token}\n\nhost;x-amz-security-token\nUNSIGNED"
            "</CanonicalRequest></Error>",
        ),
        "echo": answer(
            400,
            "Bad Request",
            "<Error><Code>InvalidRequest</Code><Message>bad request "
            f"https://b.s3.amazonaws.com/x?X-Amz-Security-Token={token}&X-Amz-Signature=abc "
            f"Authorization: AWS4-HMAC-SHA256 Credential=AKID/x, Signature={secret} "
            f"X-Amz-Security-Token: {token} sig={secret}</Message></Error>",
        ),
    }


@pytest.mark.parametrize("given", ["option", "environment"])
@pytest.mark.parametrize("error", ["expired", "signature", "echo"])
def test_a_session_token_never_appears_in_an_error(
    archive, proxy, caplog, capsys, monkeypatch, given: str, error: str
) -> None:
    """A request made with a session token (an option, or ``AWS_SESSION_TOKEN``) that the store
    refuses, its answer echoing the token: the token and the secret key never appear in the
    error, its repr, its causes, the log or the CLI's output."""
    import logging
    import traceback

    from kafkalog_source.cli.main import main
    from kafkalog_source.errors import KafkaLogError

    uri, _, _ = archive
    secret = "envsecretKEY0123456789/abcdefgh" if given == "environment" else SECRET
    opts = {**proxy.options, "remoteRetries": "0", "fs.s3.retry_max_attempts": "1"}
    if given == "option":
        opts["fs.s3.session_token"] = TOKEN
    else:
        for k in ("fs.s3.access_key", "fs.s3.secret_key"):
            opts.pop(k)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing-key")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
        monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    victim = f"/{BUCKET}/logs/orders-1/{0:020d}.log"
    proxy.answers[f"GET {victim} ".encode()] = _echoing_errors(TOKEN, secret)[error]
    _as_a_new_process()
    with caplog.at_level(logging.DEBUG, logger="kafkalog"):
        with pytest.raises(KafkaLogError) as exc:
            read_table(uri, **opts)
        args = [a for k, v in opts.items() for a in ("-o", f"{k}={v}")]
        assert main(["verify", "-v", *args, uri]) != 0
    out = capsys.readouterr()
    shown = (
        str(exc.value)
        + repr(exc.value)
        + "".join(traceback.format_exception(exc.value))
        + caplog.text
        + out.out
        + out.err
    )
    for part in (TOKEN, TOKEN[:24], TOKEN[-24:], secret):
        assert part not in shown, shown
    assert "orders-1/00000000000000000000.log" in str(exc.value)


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
