"""What a read of a bucket asks of the store, request by request (issue 32).

A real S3-compatible server (moto) on 127.0.0.1 behind ``bench/delayproxy.py``, which records
every request line. The listing is the truth about what exists: planning makes the listing and one
``GET`` per listed evidence file that a rule needs (and the end walk of a last segment that
something claims past), never a ``HEAD``, never a request for a file the listing did not show;
reading makes one ``GET`` per small object. The faults a store has (throttling, access denied,
an object deleted, truncated or grown between the listing and the read) come out as they do for
local files. No timing here: ``bench/remote.py --cluster`` measures. The object client's links
and credentials (timeouts, renewed profile keys, checkpoint versions, GCS options):
tests/test_remote_links.py.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from conftest import kp_v2_batch
from remote_support import BATCHES, BUCKET, RECORDS, SECRET, _as_a_new_process, _segment

from kafkalog_source.arrow.schema import output_projection
from kafkalog_source.errors import AccessDeniedError, StorageError
from kafkalog_source.options import parse_options
from kafkalog_source.planning.planner import plan
from kafkalog_source.planning.request import batch_request
from kafkalog_source.reader import iter_batches, read_split, read_table
from kafkalog_source.stats import ReadStats
from kafkalog_source.transport.known import NOT_LISTED, KnownObjects, Listed

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from delayproxy import DelayProxy, http_error, request_kind  # noqa: E402


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
