"""A one-line progress display on stderr for long commands (verify, convert, dump of big files).

It draws only when stderr is a terminal and the command was not given ``--quiet``; piped or
redirected stderr (cron, CI, ``2>log``) gets nothing. Redraws are throttled, and :meth:`close`
erases the line so that whatever the command prints next starts on a clean line.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

_INTERVAL = 0.2  # seconds between redraws


def human_bytes(n: float) -> str:
    """``1536`` -> ``1.5 KiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def wanted(quiet: bool, stream: TextIO | None = None) -> bool:
    """True when progress should be drawn: not quiet, and the stream is a terminal."""
    stream = stream if stream is not None else sys.stderr
    if quiet:
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """``label: 42% (1.2 GiB of 2.9 GiB) note``, redrawn in place on stderr."""

    def __init__(
        self, label: str, total_bytes: int, enabled: bool, stream: TextIO | None = None
    ) -> None:
        self.label = label
        self.total = max(int(total_bytes), 0)
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self._last = 0.0
        self._width = 0

    def update(self, done_bytes: int, note: str = "", force: bool = False) -> None:
        """Show ``done_bytes`` of the total (at most every 0.2 s unless ``force``)."""
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < _INTERVAL:
            return
        self._last = now
        if self.total:
            pct = min(100.0, 100.0 * done_bytes / self.total)
            text = (
                f"{self.label}: {pct:3.0f}% ({human_bytes(done_bytes)} of "
                f"{human_bytes(self.total)})"
            )
        else:
            text = f"{self.label}: {human_bytes(done_bytes)}"
        if note:
            text += f" {note}"
        text = text[:200]
        pad = max(self._width - len(text), 0)
        self._width = len(text)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()

    def close(self) -> None:
        """Erase the progress line."""
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
