"""An object rewritten between two ranged reads of one file (issue 40 item 5).

A real S3-compatible server (moto) on 127.0.0.1 behind a small forwarding proxy of this file,
which records every request's headers and can rewrite the object from inside a request, before
forwarding it: so the object changes between two ranged ``GET`` s of one read. Every ranged
``GET`` of a listed object carries ``If-Match`` with the ETag the listing showed (the tests write
objects through pyarrow, a one-part multipart upload, whose S3 ETag is the MD5 of the part's MD5
followed by ``-1``: the expectation is computed here, not read back from the client), and an object rewritten after the first answer fails the
read with :class:`FileChangedError` naming the object, never rows of two versions. A store that
ignores ``If-Match`` (the proxy drops the header) is caught by the answers themselves: another
size or another ETag than the first answer's.
"""

from __future__ import annotations

import hashlib
import http.client
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import kp_v2_batch
from remote_support import _as_a_new_process

from kafkalog_source.arrow.schema import output_projection
from kafkalog_source.errors import FileChangedError
from kafkalog_source.options import parse_options
from kafkalog_source.planning.planner import plan
from kafkalog_source.planning.request import batch_request
from kafkalog_source.reader import read_split, read_table
from kafkalog_source.reader.tuning import Tuning
from kafkalog_source.stats import ReadStats
from kafkalog_source.streaming.source import Limit, StreamSource, reader_options

BUCKET = "kafkalog-versions"
NAME = f"orders-0/{0:020d}.log"
RECORDS = 1500  # 1.5 MB of values: a sequential read of several ranged GETs
PER_BATCH = 10
BLOCK = 128 * 1024  # readAheadBytes: one ranged GET per 128 KiB


def _segment(fill: bytes) -> bytes:
    """A segment of RECORDS records whose 1000-byte values are ``fill`` repeated, prefixed with
    the offset: two fills give two segments of the same size."""
    data = b""
    for base in range(0, RECORDS, PER_BATCH):
        recs = [
            (1_700_000_000_000 + o, b"k%06d" % o, (b"%06d" % o + fill * 1000)[:1000], [])
            for o in range(base, base + PER_BATCH)
        ]
        data += kp_v2_batch(recs, base)
    return data


class _Proxy:
    """A forwarding HTTP proxy in front of moto: ``heads`` holds ``(method, target, headers)``
    of each request (header names in lower case); ``before(method, target)`` runs before a request is forwarded (it may
    rewrite an object); with ``drop_if_match`` the ``If-Match`` header is not forwarded (a store
    that ignores it)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.heads: list[tuple[str, str, dict[str, str]]] = []
        self.before: Callable[[str, str], None] = lambda method, target: None
        self.drop_if_match = False
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def _forward(self) -> None:
                headers = dict(self.headers.items())
                with proxy._lock:  # recorded by lower-case name (the client sends them so)
                    proxy.heads.append(
                        (self.command, self.path, {k.lower(): v for k, v in headers.items()})
                    )
                proxy.before(self.command, self.path)
                if proxy.drop_if_match:
                    headers = {k: v for k, v in headers.items() if k.lower() != "if-match"}
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                conn = http.client.HTTPConnection("127.0.0.1", proxy.target_port, timeout=30)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    r = conn.getresponse()
                    data = r.read()
                finally:
                    conn.close()
                self.send_response(r.status, r.reason)
                for k, v in r.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def gets(self, key: str) -> list[dict[str, str]]:
        """The headers of each ranged ``GET`` of ``key`` (a path below the bucket)."""
        with self._lock:
            return [
                h
                for m, t, h in self.heads
                if m == "GET" and t.split("?", 1)[0] == f"/{BUCKET}/{key}"
            ]

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture()
def proxy(s3_server: Any) -> Iterator[_Proxy]:
    """The proxy in front of the session's moto server; ``proxy.options`` reach it."""
    p = _Proxy(int(s3_server.endpoint.rsplit(":", 1)[1]))
    p.options = {  # type: ignore[attr-defined]
        **s3_server.options,
        "fs.s3.endpoint_override": f"http://127.0.0.1:{p.port}",
        "readAheadBytes": str(BLOCK),
        "readAheadRequests": "0",
    }
    try:
        yield p
    finally:
        p.close()


def _upload(s3_server: Any, prefix: str, data: bytes) -> tuple[str, str]:
    """``data`` as the one segment of a log directory at ``prefix``: (its URI, the object's key
    below the bucket)."""
    key = f"{prefix}/{NAME}"
    s3_server.put(f"{BUCKET}/{key}", data)
    return f"s3://{BUCKET}/{prefix}", key


def _rewrite_at_get(s3_server: Any, proxy: _Proxy, key: str, new: bytes, nth: int) -> None:
    """Rewrite ``key`` with ``new`` just before its ``nth`` ranged ``GET`` is forwarded."""
    seen = {"gets": 0}

    def before(method: str, target: str) -> None:
        if method == "GET" and target.split("?", 1)[0] == f"/{BUCKET}/{key}":
            seen["gets"] += 1
            if seen["gets"] == nth:
                s3_server.put(f"{BUCKET}/{key}", new)

    proxy.before = before


def _etag(data: bytes) -> str:
    """S3's ETag of ``data`` written as one part of a multipart upload (as pyarrow writes it)."""
    return f'"{hashlib.md5(hashlib.md5(data).digest()).hexdigest()}-1"'  # noqa: S324 - S3's


def _values(table: Any) -> set[bytes]:
    """The fills of a table's values (the byte after the 6-digit offset)."""
    return {bytes(v)[6:7] for v in table.column("value").to_pylist()}


def test_every_ranged_get_carries_the_listed_etag(s3_server: Any, proxy: _Proxy) -> None:
    data = _segment(b"a")
    uri, key = _upload(s3_server, "etag", data)
    _as_a_new_process()
    table = read_table(uri, **proxy.options)  # type: ignore[attr-defined]
    assert table.num_rows == RECORDS and _values(table) == {b"a"}
    gets = proxy.gets(key)
    assert len(gets) >= len(data) // BLOCK  # a sequential read of several ranged GETs
    expected = _etag(data)
    assert [g.get("if-match") for g in gets] == [expected] * len(gets)
    assert all(g.get("range", "").startswith("bytes=") for g in gets)

    # a split read where it was not planned (a Spark task): the range carries the listed ETag
    o = parse_options(proxy.options, paths=uri)  # type: ignore[attr-defined]
    splits = plan(batch_request(o))
    assert [r.objects for s in splits for r in s.ranges] == [
        ((f"s3://{BUCKET}/{key}", len(data), expected),)
    ]
    proxy.heads.clear()
    rows = sum(b.num_rows for s in splits for b in read_split(s, o, output_projection(o)))
    assert rows == RECORDS
    gets = proxy.gets(key)
    assert len(gets) >= 2 and [g.get("if-match") for g in gets] == [expected] * len(gets)


def test_an_object_rewritten_at_the_same_size_between_ranged_reads_fails_the_read(
    s3_server: Any, proxy: _Proxy
) -> None:
    old, new = _segment(b"a"), _segment(b"b")
    assert len(old) == len(new) and old != new
    uri, key = _upload(s3_server, "same-size", old)
    _rewrite_at_get(s3_server, proxy, key, new, nth=3)
    _as_a_new_process()
    with pytest.raises(FileChangedError) as exc:
        read_table(uri, **proxy.options)  # type: ignore[attr-defined]
    shown = str(exc.value)
    assert f"s3://{BUCKET}/{key}" in shown
    assert "rewritten while being read" in shown and "412" in shown
    assert len(proxy.gets(key)) == 3  # the read ended at the GET the store refused

    # ignoreCorruptFiles keeps what was decoded before the rewrite (windows of one GET each
    # here): rows of the old version only, the first ones, and the file counted as corrupt
    s3_server.put(f"{BUCKET}/{key}", old)
    _rewrite_at_get(s3_server, proxy, key, new, nth=3)
    _as_a_new_process()
    stats = ReadStats()
    opts = {**proxy.options, "ignoreCorruptFiles": "true"}  # type: ignore[attr-defined]
    table = read_table(uri, stats=stats, tuning=Tuning(window_bytes=BLOCK), **opts)
    assert 0 < table.num_rows < RECORDS and _values(table) == {b"a"}
    assert table.column("offset").to_pylist() == list(range(table.num_rows))
    assert stats.corrupt_files == 1


@pytest.mark.parametrize("change", ["grown", "same size"])
def test_a_store_that_ignores_if_match_is_caught_by_its_answers(
    s3_server: Any, proxy: _Proxy, change: str
) -> None:
    old = _segment(b"a")
    new = old + kp_v2_batch([(1, b"k", b"v", [])], RECORDS) if change == "grown" else _segment(b"c")
    uri, key = _upload(s3_server, f"ignored-{change.replace(' ', '-')}", old)
    proxy.drop_if_match = True
    _rewrite_at_get(s3_server, proxy, key, new, nth=3)
    _as_a_new_process()
    with pytest.raises(FileChangedError) as exc:
        read_table(uri, **proxy.options)  # type: ignore[attr-defined]
    shown = str(exc.value)
    assert f"s3://{BUCKET}/{key}" in shown and "rewritten while being read" in shown
    if change == "grown":
        assert f"it held {len(old)} bytes at its first read, {len(new)} at the read" in shown
    else:
        assert "entity tag changed" in shown
    assert all("if-match" in g for g in proxy.gets(key))  # sent, and dropped by the proxy


def test_an_object_rewritten_before_its_first_read_is_read_as_it_is_then(
    s3_server: Any, proxy: _Proxy, tmp_path: Path
) -> None:
    """Rewritten between the listing and the first ranged read (the listed ETag refused at the
    first GET): read whole as it is then, as a local file rewritten then is; one more GET."""
    old, new = _segment(b"a"), _segment(b"d")
    uri, key = _upload(s3_server, "before-first", old)
    _rewrite_at_get(s3_server, proxy, key, new, nth=1)
    _as_a_new_process()
    table = read_table(uri, **proxy.options)  # type: ignore[attr-defined]
    assert table.num_rows == RECORDS and _values(table) == {b"d"}
    gets = proxy.gets(key)
    first, then = _etag(old), _etag(new)
    assert gets[0].get("if-match") == first and "if-match" not in gets[1]
    assert [g.get("if-match") for g in gets[2:]] == [then] * (len(gets) - 2)


def test_a_stream_micro_batch_over_an_object_rewritten_while_read(
    s3_server: Any, proxy: _Proxy
) -> None:
    """A micro-batch whose object is rewritten between two of its ranged reads fails naming the
    object (as a segment cut while read does); the restarted query replays the micro-batch from
    its planned offsets and delivers the new version's records, none of the old."""
    old, new = _segment(b"a"), _segment(b"e")
    uri, key = _upload(s3_server, "stream", old)
    _as_a_new_process()
    options = {**proxy.options, "startingOffsets": "earliest"}  # type: ignore[attr-defined]
    src = StreamSource(parse_options(options, paths=uri))
    start = src.initial()
    end = src.latest(start, Limit())
    assert end == {("orders", 0): RECORDS}
    _rewrite_at_get(s3_server, proxy, key, new, nth=3)
    opts = reader_options(src.options)

    def micro_batch(source: StreamSource) -> list[Any]:
        return [
            b
            for split in source.plan(start, end)
            for b in read_split(split, opts, output_projection(opts))
        ]

    with pytest.raises(FileChangedError) as exc:
        micro_batch(src)
    assert f"s3://{BUCKET}/{key}" in str(exc.value) and "412" in str(exc.value)

    proxy.before = lambda method, target: None
    _as_a_new_process()
    again = StreamSource(parse_options(options, paths=uri))  # the restarted query
    batches = micro_batch(again)
    assert sum(b.num_rows for b in batches) == RECORDS
    assert {bytes(v)[6:7] for b in batches for v in b.column("value").to_pylist()} == {b"e"}
