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
directory (:class:`TaskReports`, through the environment the local Spark's JVM and workers
inherit); each worker writes its warnings and each task its ReadStats there instead of logging
them (:mod:`kafkalog_source.spark.reports`; a split read twice, by a retried task or a query that
scans a view twice, counts once), and the command prints them as the in-process engines do.
With a ``--master`` that is not local, executors elsewhere do not see the directory: the command
says that their warnings and summaries are in their own logs.
"""

from __future__ import annotations

import logging
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from ..stats import SUMMARY_RECORD, ReadStats

PREFIX = "kafkalog: "
WARNING = "kafkalog: warning: "

# ANSI escape sequences (a library's colours and cursor moves): CSI (``\x1b[31m``), OSC
# (``\x1b]...\x07``), and the other escapes (``\x1b(B``, ``\x1bc``)
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[ -/]+[0-~]|[0-~])")


def for_stream(text: str, stream: TextIO | None = None) -> str:
    """``text`` as it is written to ``stream`` (stderr by default): without ANSI escape
    sequences (the colours a library puts in its messages, such as deltalake's red ``↳``
    between an error's causes) unless the stream is a terminal, which shows them as colours;
    a file, a pipe or a CI log would show them as raw codes."""
    stream = stream if stream is not None else sys.stderr
    try:
        terminal = bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        terminal = False
    return text if terminal else _ANSI.sub("", text)


def warning_line(message: str) -> str:
    """``kafkalog: warning: <message>`` (a message that names kafkalog already loses that)."""
    if message.startswith(PREFIX):
        message = message[len(PREFIX) :]
    return WARNING + message


# The warning lines a command printed: each once (a path listed twice, a warning of the planner
# logged here and again in a Spark worker)
_SAID: set[str] = set()


class _StderrWarnings(logging.Handler):
    """The ``kafkalog`` logger's warnings as ``kafkalog: warning: ...`` lines; a read's own
    summary line is left out (the command prints the sum of its reads)."""

    def __init__(self, stream: TextIO | None) -> None:
        super().__init__(logging.WARNING)
        self.stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, SUMMARY_RECORD, False):
            return
        line = warning_line(record.getMessage())
        if line in _SAID:
            return
        _SAID.add(line)
        try:
            stream = self.stream or sys.stderr
            stream.write(for_stream(line, stream) + "\n")
            stream.flush()
        except Exception:  # a closed or broken stream: never fail the read for a warning
            self.handleError(record)


@contextmanager
def warnings_to_stderr(stream: TextIO | None = None) -> Iterator[None]:
    """While open, the ``kafkalog`` logger's warnings go to stderr as ``kafkalog: warning:``
    lines (and nowhere else: not through Python's last-resort handler as bare messages)."""
    logger = logging.getLogger("kafkalog")
    _SAID.clear()
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
        self.master = "local"

    @property
    def env(self) -> dict[str, str]:
        """What the local Spark's environment gets: the directory, under the name its workers
        look for (:data:`kafkalog_source.spark.reports.ENV`)."""
        from ..spark.reports import ENV

        return {ENV: self.directory}

    def session(self, app_name: str, master: str, extra_conf: dict[str, str] | None = None) -> Any:
        """The command's local SparkSession: its workers run this Python (the one with this
        kafkalog, whatever ``PYSPARK_PYTHON`` says) and report to this directory."""
        from ..spark.session import local_session

        self.master = master
        return local_session(
            app_name, master=master, extra_conf=extra_conf, own_python=True, env=self.env
        )

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
        if not self.master.startswith("local"):
            messages.append(
                f"the Spark master ({self.master}) is not on this machine: its executors' "
                "warnings and task summaries are in their own logs, and the summary here counts "
                "only what reached this machine"
            )
        for message in messages:
            line = warning_line(message)
            if line not in _SAID:
                _SAID.add(line)
                out.write(line + "\n")
        out.flush()
        return stats


@contextmanager
def spark_task_reports() -> Iterator[TaskReports]:
    """A :class:`TaskReports` directory, removed afterwards; its ``env`` names it to the local
    Spark the command starts (``local_session(env=...)``): only that JVM and its Python workers
    see it, not this process."""
    directory = tempfile.mkdtemp(prefix="kafkalog-reports-")
    try:
        yield TaskReports(directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
