"""A headless Chromium driven over the DevTools protocol, for tests of the pages kafkalog writes.

No browser package and no websocket client: Chromium is started with
``--remote-debugging-pipe`` and spoken to over two pipes (file descriptors 3 and 4 in the child:
JSON messages each ended by a NUL byte). :func:`load_page` opens a file, records every console
message, uncaught exception, log entry and network request, waits until the page says it has
drawn (``body[data-rendered]``), and can save a PNG of the whole page.

``find_chromium()`` is None where no browser is installed (the tests then skip); CI installs
Debian's ``chromium`` (.ci/run).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """The path of a Chromium (or Chrome) executable, or None."""
    env = os.environ.get("KAFKALOG_CHROMIUM")
    if env:
        return env if os.path.exists(env) else None
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageResult:
    """What happened while a page loaded and drew."""

    console: list[tuple[str, str]] = field(default_factory=list)  # (type, text)
    exceptions: list[str] = field(default_factory=list)
    log_entries: list[tuple[str, str]] = field(default_factory=list)  # (level, text)
    requests: list[str] = field(default_factory=list)  # every URL the page asked for
    rendered: str | None = None  # body[data-rendered]: "yes", "failed", or None (timed out)
    render_ms: float | None = None  # window.kafkalogRenderMs: the charts' drawing
    load_ms: float | None = None  # window.kafkalogDoneAt: from the page's load to drawn
    text: str = ""  # document.body.innerText

    @property
    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries."""
        return (
            [t for k, t in self.console if k in ("error", "assert")]
            + self.exceptions
            + [t for lvl, t in self.log_entries if lvl == "error"]
        )

    def fetched(self, own: str) -> list[str]:
        """Requests for anything but the page itself (``own``) and inline data."""
        return [u for u in self.requests if u != own and not u.startswith(("data:", "about:"))]


class Chromium:
    """One headless Chromium process, spoken to over ``--remote-debugging-pipe``."""

    def __init__(self, executable: str) -> None:
        self._profile = tempfile.TemporaryDirectory(prefix="kafkalog-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # the child reads commands on fd 3 and writes replies and events on fd 4
        self.proc = subprocess.Popen(
            [
                executable,
                "--headless=new",
                "--remote-debugging-pipe",
                "--no-sandbox",  # tests run as root in CI
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                f"--user-data-dir={self._profile.name}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # the pipes are close-on-exec; only their copies on 3 and 4 reach the browser
            close_fds=False,
            preexec_fn=_fds(to_child_r, from_child_w),
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []

    # -------------------------------------------------------------------- the protocol
    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        """Call ``method``; return its result (events that arrive meanwhile are kept)."""
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self._next:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def _read(self, deadline: float) -> dict[str, Any]:
        import select

        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from Chromium")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed its pipe")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def pump(self, seconds: float) -> None:
        """Collect the events that arrive within ``seconds``."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                self.events.append(self._read(deadline))
        except TimeoutError:
            pass

    def close(self) -> None:
        """End the browser."""
        try:
            self.send("Browser.close", timeout=5)
        except Exception:  # noqa: BLE001 (closing anyway)
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        self._profile.cleanup()

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _fds(read_end: int, write_end: int) -> Any:
    def setup() -> None:
        import fcntl

        # out of the way first: either end may itself be fd 3 or 4
        r = fcntl.fcntl(read_end, fcntl.F_DUPFD, 100)
        w = fcntl.fcntl(write_end, fcntl.F_DUPFD, 100)
        os.dup2(r, 3)  # dup2 leaves the copies inheritable
        os.dup2(w, 4)
        os.close(r)
        os.close(w)

    return setup


def load_page(
    executable: str,
    page: Path,
    screenshot: Path | None = None,
    width: int = 1280,
    max_height: int = 20000,
    timeout: float = 60.0,
) -> PageResult:
    """Open ``page`` in a fresh headless Chromium and wait until it has drawn (or ``timeout``);
    record what it logged and requested; save a PNG of the whole page to ``screenshot``."""
    url = page.resolve().as_uri()
    res = PageResult()
    with Chromium(executable) as b:
        target = b.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Runtime", "Log", "Network", "Page"):
            b.send(f"{domain}.enable", session=session)
        b.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        b.send("Page.navigate", {"url": url}, session=session)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = b.send(
                "Runtime.evaluate",
                {
                    "expression": "document.body && document.body.getAttribute('data-rendered')",
                    "returnByValue": True,
                },
                session=session,
            )["result"].get("value")
            if state:
                res.rendered = state
                break
            b.pump(0.1)
        b.pump(0.3)  # late messages
        probe = b.send(
            "Runtime.evaluate",
            {
                "expression": "JSON.stringify({r: window.kafkalogRenderMs || null, "
                "l: window.kafkalogDoneAt || null, "
                "t: document.body ? document.body.innerText : ''})",
                "returnByValue": True,
            },
            session=session,
        )["result"].get("value")
        info = json.loads(probe or "{}")
        res.render_ms = info.get("r")
        res.text = info.get("t", "")
        res.load_ms = info.get("l")
        if screenshot is not None and res.rendered:
            metrics = b.send("Page.getLayoutMetrics", session=session)
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            height = min(int(size["height"]) + 1, max_height)
            shot = b.send(
                "Page.captureScreenshot",
                {
                    "format": "png",
                    "captureBeyondViewport": True,
                    "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
                },
                session=session,
                timeout=60,
            )
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        for m in b.events:
            method, p = m.get("method"), m.get("params", {})
            if method == "Runtime.consoleAPICalled":
                text = " ".join(
                    str(a.get("value", a.get("description", ""))) for a in p.get("args", [])
                )
                res.console.append((p.get("type", ""), text))
            elif method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                res.exceptions.append(
                    str(d.get("exception", {}).get("description") or d.get("text"))
                )
            elif method == "Log.entryAdded":
                e = p.get("entry", {})
                res.log_entries.append((e.get("level", ""), e.get("text", "")))
            elif method == "Network.requestWillBeSent":
                res.requests.append(p.get("request", {}).get("url", ""))
    return res
