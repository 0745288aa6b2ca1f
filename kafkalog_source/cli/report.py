"""What every reading command says about its read, from the reader's own accounting.

The reader keeps the truth about a read in :class:`~kafkalog_source.stats.ReadStats`: what it
decoded, what it skipped and why, which offsets the archive lacks. The commands (``query`` and
``convert`` on either engine) say it in the same words:

* each warning the reader logs is one ``kafkalog: warning: ...`` line on stderr (the reader's
  message, as the Arrow API logs it), printed as it happens: :func:`warnings_to_stderr`;
* after the work, one summary line, ``kafkalog: <ReadStats.summary()>``, when anything was
  skipped or found missing (:func:`summary_line`): the sum of every read of the command (each
  view of a query, every Spark task);
* the exit code follows one rule, :mod:`.main`'s: 1 when the read failed (a damaged batch in
  ``FAILFAST``, missing offsets under ``failOnDataLoss=true``, ...), 0 when it completed,
  whatever it reported.

On the Spark engine the reads run in Spark's Python workers. The command gives them a
directory (:class:`TaskReports`, through the environment the local Spark's workers inherit);
each worker writes its warnings and each task its ReadStats there instead of logging them
(:mod:`kafkalog_source.spark.reports`), and the command prints them as the in-process engines
do. With a ``--master`` whose executors do not share this machine's disk, nothing arrives and
the summary says where to look instead.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from ..stats import SUMMARY_RECORD, ReadStats

PREFIX = "kafkalog: "
WARNING = "kafkalog: warning: "


def warning_line(message: str) -> str:
    """``kafkalog: warning: <message>`` (a message that names kafkalog already loses that)."""
    if message.startswith(PREFIX):
        message = message[len(PREFIX) :]
    return WARNING + message


class _StderrWarnings(logging.Handler):
    """The ``kafkalog`` logger's warnings as ``kafkalog: warning: ...`` lines; a read's own
    summary line is left out (the command prints the sum of its reads)."""

    def __init__(self, stream: TextIO | None) -> None:
        super().__init__(logging.WARNING)
        self.stream = stream
        self.said: set[str] = set()  # a warning said once (a path listed twice, say)

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, SUMMARY_RECORD, False):
            return
        line = warning_line(record.getMessage())
        if line in self.said:
            return
        self.said.add(line)
        try:
            stream = self.stream or sys.stderr
            stream.write(line + "\n")
            stream.flush()
        except Exception:  # a closed or broken stream: never fail the read for a warning
            self.handleError(record)


@contextmanager
def warnings_to_stderr(stream: TextIO | None = None) -> Iterator[None]:
    """While open, the ``kafkalog`` logger's warnings go to stderr as ``kafkalog: warning:``
    lines (and nowhere else: not through Python's last-resort handler as bare messages)."""
    logger = logging.getLogger("kafkalog")
    handler = _StderrWarnings(stream)
    logger.addHandler(handler)
    propagate = logger.propagate
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def summary_line(stats: ReadStats) -> str | None:
    """``kafkalog: <summary>`` when the reads skipped or missed anything, else None."""
    if not stats.skipped:
        return None
    return PREFIX + stats.summary()


def loss_note(stats: ReadStats) -> str:
    """What a command's last line adds about loss: ``""`` for a clean read, else ``"; "`` and
    the summary's parts after the counts (missing offsets, skipped batches, ...)."""
    if not stats.skipped:
        return ""
    parts = stats.summary().split("; ")[1:]
    parts = [p for p in parts if not p.startswith("decoded ")]
    return "; " + "; ".join(parts) if parts else ""


def print_summary(stats: ReadStats, stream: TextIO | None = None) -> None:
    """Print :func:`summary_line` to stderr when there is one."""
    line = summary_line(stats)
    if line is not None:
        print(line, file=stream or sys.stderr)


class TaskReports:
    """A directory the Spark engine's workers write their warnings and ReadStats to (see
    :mod:`kafkalog_source.spark.reports`), named to them through :data:`ENV` before the local
    Spark starts."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def collect(self) -> tuple[list[str], ReadStats]:
        """The warnings the workers logged (each once, in the order logged) and the sum of the
        tasks' ReadStats."""
        from ..spark.reports import read_reports

        return read_reports(self.directory)

    def print(self, stream: TextIO | None = None) -> ReadStats:
        """Print the workers' warnings as :func:`warnings_to_stderr` does, and return the
        sum of the tasks' ReadStats."""
        messages, stats = self.collect()
        out = stream or sys.stderr
        for message in messages:
            out.write(warning_line(message) + "\n")
        out.flush()
        return stats


@contextmanager
def spark_task_reports() -> Iterator[TaskReports]:
    """A :class:`TaskReports` directory, named in the environment that a Spark started in this
    process (and its Python workers) inherits; removed afterwards."""
    from ..spark.reports import ENV

    directory = tempfile.mkdtemp(prefix="kafkalog-reports-")
    before = os.environ.get(ENV)
    os.environ[ENV] = directory
    try:
        yield TaskReports(directory)
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before
        shutil.rmtree(directory, ignore_errors=True)
