"""A TCP proxy on 127.0.0.1 that adds a delay to every HTTP request, as a real store's latency.

Put it in front of a local S3 server (moto) and point ``fs.s3.endpoint_override`` at it: every
request (a client chunk that starts with an HTTP method) waits ``delay`` seconds before it is
forwarded; bodies and responses pass at once, in order. It counts requests and the requests in
flight (sent by the client, no response byte back yet; HTTP/1.1 clients send one request at a
time per connection), and keeps the largest number in flight seen (``max_in_flight``).

Requests are also counted by kind (:func:`request_kind`): ``LIST`` (a bucket or container
listing), ``HEAD``, ``GET`` (of an object), ``PUT`` and ``OTHER``. A process of its own answers
``GET /__delayproxy__/counts`` itself (not forwarded, not delayed, not counted) with those counts
as JSON, and zeroes them when the query string says ``reset=1``.

In a process (tests)::

    with DelayProxy(target_port, delay=0.02) as proxy:
        ...  # endpoint http://127.0.0.1:{proxy.port}
        assert proxy.max_in_flight <= 4

As a process of its own (benchmarks, so that the proxy does not share the measured process's
GIL): ``python bench/delayproxy.py --target-port 9000 --delay-ms 20`` prints the port it
listens on, then serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import sys
import threading
from typing import Any

METHODS = (b"GET ", b"HEAD ", b"PUT ", b"POST ", b"DELETE ")
CONTROL = b"/__delayproxy__/counts"
KINDS = ("LIST", "HEAD", "GET", "PUT", "OTHER")


def request_kind(first_line: bytes) -> str:
    """What an HTTP request line asks of an S3, GCS or Azure store: ``LIST`` (S3's
    ``list-type=2`` or a bucket-level ``GET /bucket?...``, GCS's ``/o?``, Azure's
    ``comp=list`` / ``resource=filesystem``), ``HEAD``, ``GET`` (an object), ``PUT`` or
    ``OTHER``."""
    method, _, rest = first_line.partition(b" ")
    target = rest.split(b" ", 1)[0]
    path, _, query = target.partition(b"?")
    if method == b"HEAD":
        return "HEAD"
    if method == b"PUT":
        return "PUT"
    if method != b"GET":
        return "OTHER"
    if (
        b"list-type=" in query
        or b"comp=list" in query
        or b"resource=filesystem" in query
        or path.endswith(b"/o")
        or (path.strip(b"/").count(b"/") == 0 and query)
    ):
        return "LIST"
    return "GET"


class DelayProxy:
    """The proxy, run on an asyncio loop in a thread of its own."""

    def __init__(self, target_port: int, delay: float = 0.02, target_host: str = "127.0.0.1"):
        """Forward to ``target_host:target_port``, each request ``delay`` seconds late."""
        self.target = (target_host, target_port)
        self.delay = delay
        self.port = 0
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.request_lines: list[bytes] = []  # the first line of each request
        self.kinds: dict[str, int] = dict.fromkeys(KINDS, 0)  # requests by request_kind
        # a request whose first line contains a key is answered with its value (a whole HTTP
        # response), not forwarded: errors injected for tests; a callable value is called with
        # the request line and answers what it returns (None: the request is forwarded)
        self.answers: dict[bytes, Any] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._ready = threading.Event()

    # -- counters -------------------------------------------------------------------------
    def reset(self) -> None:
        """Zero the counters (``in_flight`` stays: requests under way stay under way)."""
        with self._lock:
            self.requests = 0
            self.max_in_flight = self.in_flight
            self.request_lines = []
            self.kinds = dict.fromkeys(KINDS, 0)

    def counts(self, reset: bool = False) -> dict[str, int]:
        """The requests made by kind (and ``total``) since the last reset; ``reset`` zeroes
        them."""
        with self._lock:
            out = {**self.kinds, "total": self.requests}
        if reset:
            self.reset()
        return out

    def _begin(self, chunk: bytes) -> None:
        with self._lock:
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            first = chunk.split(b"\r\n", 1)[0]
            self.request_lines.append(first)
            self.kinds[request_kind(first)] += 1

    def _end(self, n: int) -> None:
        with self._lock:
            self.in_flight -= n

    # -- serving --------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        pending = [0]  # requests of this connection without a response byte yet

        async def client_to_server() -> None:
            try:
                while chunk := await reader.read(1 << 16):
                    if chunk.startswith(b"GET " + CONTROL):
                        first = chunk.split(b"\r\n", 1)[0]
                        body = json.dumps(self.counts(reset=b"reset=1" in first)).encode()
                        writer.write(
                            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                            + f"Content-Length: {len(body)}\r\n\r\n".encode()
                            + body
                        )
                        await writer.drain()
                        continue
                    if chunk.startswith(METHODS):
                        self._begin(chunk)
                        if self.delay:
                            await asyncio.sleep(self.delay)
                        first = chunk.split(b"\r\n", 1)[0]
                        answer = next((v for k, v in self.answers.items() if k in first), None)
                        if callable(answer):  # asked each time: None forwards the request
                            answer = answer(first)
                        if answer is not None:
                            self._end(1)
                            writer.write(answer)
                            await writer.drain()
                            continue
                        pending[0] += 1
                    up_writer.write(chunk)
                    await up_writer.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                up_writer.close()

        async def server_to_client() -> None:
            try:
                while chunk := await up_reader.read(1 << 16):
                    if pending[0]:
                        self._end(pending[0])
                        pending[0] = 0
                    writer.write(chunk)
                    await writer.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                writer.close()

        await asyncio.gather(client_to_server(), server_to_client())
        if pending[0]:
            self._end(pending[0])

    async def _serve(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        async with self._server:
            await self._server.serve_forever()

    def start(self) -> DelayProxy:
        """Start serving on a free port (``self.port``)."""

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            try:
                self._loop.run_until_complete(self._serve())
            except asyncio.CancelledError:
                pass
            finally:
                self._loop.close()

        self._thread = threading.Thread(target=run, name="delay-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the proxy did not start")
        return self

    def stop(self) -> None:
        """Stop serving and join the thread."""
        loop, server = self._loop, self._server
        if loop is not None and server is not None:

            def close() -> None:
                server.close()
                for task in asyncio.all_tasks(loop):
                    task.cancel()

            loop.call_soon_threadsafe(close)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> DelayProxy:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def http_error(status: int, reason: str, code: str, message: str) -> bytes:
    """A whole S3-style XML error response, for :attr:`DelayProxy.answers`."""
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
        f"<Message>{message}</Message></Error>"
    ).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/xml\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    return head + body


def proxy_counts(port: int, reset: bool = False) -> dict[str, int]:
    """The counts by kind of the proxy process listening on ``port`` (see the module docstring);
    ``reset`` zeroes them."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", CONTROL.decode() + ("?reset=1" if reset else ""))
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    """Serve as a process of its own: print the port, then serve until killed."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target-port", type=int, required=True)
    ap.add_argument("--target-host", default="127.0.0.1")
    ap.add_argument("--delay-ms", type=float, default=20.0)
    args = ap.parse_args(argv)
    proxy = DelayProxy(args.target_port, args.delay_ms / 1000, args.target_host).start()
    print(proxy.port, flush=True)
    try:
        proxy._thread.join()  # type: ignore[union-attr]
    except KeyboardInterrupt:
        proxy.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
