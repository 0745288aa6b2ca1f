"""Reports from Spark's Python workers to the ``kafkalog`` command that started the Spark.

A command that runs its read on a local Spark (``query``/``convert --engine spark``) names a
directory in the environment (:data:`ENV`) before Spark starts; the Python workers inherit it.
In such a worker, the ``kafkalog`` logger's warnings (the planner's, each task's) are appended to
a file of that directory instead of going to the worker's stderr, and each task writes its
:class:`~kafkalog_source.stats.ReadStats` there when its split is read. The command then says
what the reads found in the words the Arrow API uses (:mod:`kafkalog_source.cli.report`).
Without :data:`ENV` (any other Spark job) nothing changes: warnings and each task's summary line
go to the worker's log.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import uuid
from pathlib import Path

from ..stats import SUMMARY_RECORD, ReadStats

ENV = "KAFKALOG_TASK_REPORTS"

_captured: str | None = None


class _FileWarnings(logging.Handler):
    """Each warning as a JSON line ``{"t": time, "m": message}`` in this worker's file."""

    def __init__(self, directory: str) -> None:
        super().__init__(logging.WARNING)
        self.path = os.path.join(directory, f"warnings-{os.getpid()}-{uuid.uuid4().hex}.jsonl")

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, SUMMARY_RECORD, False):
            return
        try:
            line = json.dumps({"t": time.time(), "m": record.getMessage()})
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        except Exception:  # the directory is gone (the command ended): never fail a task
            self.handleError(record)


def capture() -> bool:
    """In a worker of a command's Spark (:data:`ENV` set), send the ``kafkalog`` logger's
    warnings to the command's directory (once per process); whether reports are captured."""
    global _captured
    directory = os.environ.get(ENV)
    if not directory:
        return False
    if _captured != directory:
        logger = logging.getLogger("kafkalog")
        for h in [h for h in logger.handlers if isinstance(h, _FileWarnings)]:
            logger.removeHandler(h)
        logger.addHandler(_FileWarnings(directory))
        logger.propagate = False
        _captured = directory
    return True


def write_stats(stats: ReadStats, key: str) -> None:
    """Write one task's ReadStats to the command's directory, named by ``key`` (what the task
    read: a split read again, by a retried task or by a query that scans a view twice, replaces
    its report rather than adding to it); written whole, then renamed, so the command never
    reads half a report."""
    directory = os.environ.get(ENV)
    if not directory:
        return
    digest = hashlib.sha1(key.encode("utf-8", "surrogateescape")).hexdigest()
    name = os.path.join(directory, f"stats-{digest}.json")
    try:
        with open(name + ".part", "w", encoding="utf-8") as f:
            json.dump(stats.to_dict(), f)
        os.replace(name + ".part", name)
    except OSError:  # the directory is gone (the command ended)
        pass


def read_reports(directory: str) -> tuple[list[str], ReadStats]:
    """The warnings written to ``directory`` (each message once, in the order logged) and the
    sum of the ReadStats the tasks wrote."""
    lines: list[tuple[float, str]] = []
    total = ReadStats()
    root = Path(directory)
    for path in sorted(root.glob("warnings-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                item = json.loads(line)
            except ValueError:  # a line cut by a worker killed while writing it
                continue
            lines.append((float(item["t"]), str(item["m"])))
    for path in sorted(root.glob("stats-*.json")):
        total.merge(ReadStats.from_dict(json.loads(path.read_text(encoding="utf-8"))))
    seen: set[str] = set()
    messages = []
    for _, message in sorted(lines, key=lambda x: x[0]):
        if message not in seen:
            seen.add(message)
            messages.append(message)
    return messages, total
