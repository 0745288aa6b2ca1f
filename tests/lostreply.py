"""A TCP proxy on 127.0.0.1 in front of a store (moto's S3 server) that loses the reply of one
request: the request goes to the store whole, the store applies it and answers, and the proxy
closes the client's connection instead of passing the answer on, as a network that drops a
reply does. The client sees its connection reset with no response, and cannot tell whether the
write happened.

    with LostReplyProcess(moto_port) as proxy:
        proxy.arm(r"PUT /bucket/t/_delta_log/0+1\\.json")  # the next such request, once
        ...  # endpoint proxy.endpoint
        assert proxy.state()["dropped"] == 1

Every other request and reply passes unchanged. HTTP/1.1 clients send one request at a time on
a connection, so the first reply bytes after the armed request on its connection are its reply
(an interim ``100 Continue`` passes on, so that the client sends the body).

The proxy runs in a process of its own (:class:`LostReplyProcess`): some of deltalake's calls
hold the GIL while they wait for the store, which would stall a proxy in the same process. It
answers ``GET /__lostreply__/arm?PATTERN`` (arm) and ``GET /__lostreply__/state`` (JSON:
``dropped``, ``lines``) itself."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from typing import Any

CONTROL = b"/__lostreply__/"


class LostReply:
    """The proxy, serving on a thread of its own until :meth:`close`."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        """Forward to ``target_host:target_port``."""
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._pattern: re.Pattern[bytes] | None = None
        self._lock = threading.Lock()
        self.dropped = 0  # replies lost so far
        self.lines: list[bytes] = []  # the request lines seen
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._closed = False

    @property
    def endpoint(self) -> str:
        """The proxy's URL (``http://127.0.0.1:PORT``)."""
        return f"http://127.0.0.1:{self.port}"

    def arm(self, request_line: bytes) -> None:
        """Lose the reply of the next request whose first line matches the regular expression
        ``request_line`` (once)."""
        with self._lock:
            self._pattern = re.compile(request_line)

    def _take(self, line: bytes) -> bool:
        with self._lock:
            self.lines.append(line)
            if self._pattern is not None and self._pattern.search(line):
                self._pattern = None
                return True
            return False

    def __enter__(self) -> LostReply:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop listening (connections under way end with their peers)."""
        self._closed = True
        try:
            self._listener.close()
        except OSError:
            pass

    def _serve(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(client,), daemon=True).start()

    def _connection(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target)
        except OSError:
            client.close()
            return
        doomed = threading.Event()  # the request under way is the one whose reply is lost

        def up() -> None:
            try:
                while chunk := client.recv(1 << 16):
                    if chunk.startswith(b"GET " + CONTROL):
                        client.sendall(self._control(chunk.split(b"\r\n", 1)[0]))
                        continue
                    if chunk[:8].split(b" ", 1)[0] in (b"GET", b"HEAD", b"PUT", b"POST", b"DELETE"):
                        if self._take(chunk.split(b"\r\n", 1)[0]):
                            doomed.set()
                    upstream.sendall(chunk)
            except OSError:
                pass
            finally:
                try:
                    upstream.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

        threading.Thread(target=up, daemon=True).start()
        try:
            while chunk := upstream.recv(1 << 16):
                if doomed.is_set() and not chunk.startswith(b"HTTP/1.1 100"):
                    # the store applied the request and answered: the answer goes nowhere
                    with self._lock:
                        self.dropped += 1
                    client.shutdown(socket.SHUT_RDWR)
                    break
                client.sendall(chunk)
        except OSError:
            pass
        finally:
            client.close()
            upstream.close()

    def _control(self, line: bytes) -> bytes:
        target = line.split(b" ")[1][len(CONTROL) :]
        what, _, query = target.partition(b"?")
        if what == b"arm":
            self.arm(urllib.parse.unquote_to_bytes(query))
        with self._lock:
            body = json.dumps(
                {"dropped": self.dropped, "lines": [x.decode("latin-1") for x in self.lines]}
            ).encode()
        return (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )


class LostReplyProcess:
    """:class:`LostReply` in a process of its own, driven from here."""

    def __init__(self, target_port: int) -> None:
        """A proxy in front of ``127.0.0.1:target_port``, started by ``with``."""
        self.target_port = target_port
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0

    @property
    def endpoint(self) -> str:
        """The proxy's URL (``http://127.0.0.1:PORT``)."""
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LostReplyProcess:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, str(self.target_port)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)

    def _get(self, what: str) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.endpoint}/__lostreply__/{what}", timeout=10) as r:
            return json.loads(r.read())

    def arm(self, request_line: str) -> None:
        """Lose the reply of the next request whose first line matches ``request_line`` (a
        regular expression), once."""
        self._get("arm?" + urllib.parse.quote(request_line, safe=""))

    def state(self) -> dict[str, Any]:
        """``dropped`` (replies lost so far) and ``lines`` (every request line seen)."""
        return self._get("state")


if __name__ == "__main__":
    proxy = LostReply(int(sys.argv[1]))
    print(proxy.port, flush=True)
    proxy._serve()
