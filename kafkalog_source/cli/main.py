"""The ``kafkalog`` command line: ``kafkalog <command> ...``.

Each subcommand lives in its own module of this package and is listed in :data:`COMMANDS`. A
command module provides two functions:

* ``register(subparsers)`` adds its ``argparse`` parser and calls
  ``parser.set_defaults(run=<function>)``;
* the ``run(args) -> int`` function it names, which returns the exit code.

Keep the top-level imports of command modules light: every command's module is imported to build
the parser, so import Spark (or anything heavy) inside ``run``.

Errors are reported by :func:`main` as one line on stderr; ``--verbose`` adds the traceback.
Every subcommand follows one exit code convention (:data:`EXIT_CODES_HELP`): 0 success, 1 bad
data (the input is damaged, missing or holds nothing to read), 2 bad usage. Every subcommand
takes the common flags of :mod:`.common` (``-v``, ``-q``, ``-o``), except that ``report``'s
``-o`` is its output file (``kafkalog report PATH -o report.html``): its reader options are
``--option`` only.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from .common import CommandError

# Subcommand modules, in help order (archive_report is `kafkalog report`; report.py is the
# summary lines of the reading commands).
COMMANDS: tuple[str, ...] = (
    "dump",
    "verify",
    "archive_report",
    "query",
    "convert",
    "maintain",
    "warmup",
)

EXIT_OK = 0
EXIT_DATA = 1  # bad data: damaged, missing, or nothing to read (and any unexpected failure)
EXIT_USAGE = 2  # bad usage: arguments, unknown options, malformed option values, SQL errors

EXIT_CODES_HELP = """\
exit codes (every command):
  0  success
  1  bad data: a damaged segment (a kafkalog error such as CorruptDataError,
     ChecksumError or DataLossError), a path that does not exist or holds no
     segment file (see the option allowEmpty), problems found by verify, a file
     dump could not read to its end; also any unexpected failure
  2  bad usage: wrong arguments, an unknown option or a malformed option value,
     conflicting arguments (e.g. a non-empty OUT), a SQL error in query
"""


def version() -> str:
    """The installed distribution's version, else the package's ``__version__``."""
    try:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as dist_version

        return dist_version("kafkalog")
    except PackageNotFoundError:
        from .. import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="kafkalog",
        description="Read Apache Kafka log segment files (.log).",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kafkalog {version()}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="print the full traceback on errors"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="less output (see COMMAND -h)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in COMMANDS:
        module = importlib.import_module(f"{__package__}.{name}")
        module.register(subparsers)
    for sub in subparsers.choices.values():
        sub.epilog = EXIT_CODES_HELP
        sub.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    from ..transport.known import known_objects

    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:  # started with the descriptor closed (``>&-``)
            setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115 (for the process's life)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with _store_of(args), _reader_warnings(args), known_objects():  # a prefix is listed once
            return int(args.run(args) or EXIT_OK)
    except KeyboardInterrupt:
        print("kafkalog: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # every failure becomes one line (+ traceback with --verbose)
        if getattr(args, "verbose", False):
            traceback.print_exc()
        from .report import for_stream

        print(for_stream(f"kafkalog: error: {one_line(exc)}"), file=sys.stderr)
        return exit_code(exc)


def _reader_warnings(args: argparse.Namespace) -> Any:
    """A context in which the reader's warnings are ``kafkalog: warning:`` lines on stderr
    (:mod:`.report`), unless the command prints what the reader found itself (``dump``,
    ``verify``: ``reader_warnings=False`` in their defaults)."""
    from contextlib import nullcontext

    from .report import warnings_to_stderr

    return warnings_to_stderr() if getattr(args, "reader_warnings", True) else nullcontext()


# the options that say how remote stores are reached, besides fs.<store>.<argument>
STORE_OPTIONS = ("readaheadbytes", "readaheadrequests", "remoteretries")


def _store_of(args: argparse.Namespace) -> Any:
    """A context in which every file the command opens uses the ``-o fs.*`` store options."""
    from ..options import parse_options
    from ..transport.source import using_store
    from .common import parse_option_args

    items = parse_option_args(getattr(args, "option", None) or [])
    store = {
        k: v for k, v in items.items() if k.lower().startswith("fs.") or k.lower() in STORE_OPTIONS
    }
    parsed = parse_options(store).store if store else None
    if parsed is not None:
        for line in unused_store_options(parsed.args, _path_arguments(args)):
            print(f"kafkalog: warning: {line}", file=sys.stderr)
    return using_store(parsed)


def _path_arguments(args: argparse.Namespace) -> list[str]:
    """Every path a command was given: what it reads, and what it writes (OUT, --checkpoint)."""
    out: list[str] = []
    for name in ("path", "paths", "files", "out", "checkpoint"):
        value = getattr(args, name, None)
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            out.extend(v for v in value if isinstance(v, str))
    for item in getattr(args, "files_opt", None) or []:
        out.extend(f for f in item.split(",") if f)
    return out


def unused_store_options(args: tuple[tuple[str, str, Any], ...], paths: list[str]) -> list[str]:
    """A warning for ``fs.<store>.*`` options given for a store none of ``paths`` is in (names
    only, never a value): a key meant for ``s3://`` given with local paths does nothing."""
    from ..options import STORE_OF_SCHEME
    from ..transport.filesystems import scheme_of

    used = {STORE_OF_SCHEME.get(scheme_of(p) or "file", scheme_of(p) or "file") for p in paths}
    unused = sorted({f"fs.{s}.{a}" for s, a, _ in args if s not in used})
    if not unused or not paths:
        return []
    where = ", ".join(sorted(used))
    return [
        f"option{'' if len(unused) == 1 else 's'} {', '.join(repr(n) for n in unused)} "
        f"{'has' if len(unused) == 1 else 'have'} no effect: no path is in that store (the "
        f"paths are {'local' if where == 'file' else where})"
    ]


def exit_code(exc: BaseException) -> int:
    """The exit code for a failure: 2 for bad usage, 1 for bad data and anything else."""
    from ..errors import KafkaLogError, OptionError

    if isinstance(exc, (CommandError, OptionError)):
        return EXIT_USAGE
    if isinstance(exc, KafkaLogError):
        return EXIT_DATA
    # A kafkalog error raised in a Spark Python worker arrives wrapped in Spark's exceptions.
    ours = _our_errors(str(exc))
    if ours:
        return EXIT_USAGE if ours[-1].group("cls") == "OptionError" else EXIT_DATA
    if "pyspark" in sys.modules:
        from pyspark.errors import AnalysisException

        if isinstance(exc, AnalysisException):  # the SQL does not parse or resolve
            return EXIT_USAGE
    return EXIT_DATA


# "kafkalog_source.errors.CorruptDataError: /x.log: byte 61: ..." in a Python worker traceback.
_WORKER_ERROR = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?(?P<cls>[A-Z]\w*(?:Error|Exception)): (?P<msg>.+)$", re.M
)
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+\s*$")


def _our_errors(text: str) -> list[re.Match[str]]:
    """The ``kafkalog_source.errors.XError: message`` lines in a wrapped worker traceback."""
    return [m for m in _WORKER_ERROR.finditer(text) if "kafkalog_source" in m.group(0)]


# Py4J's "An error occurred while calling o66.start.\n: java.Class: message\n\tat ..." and the
# "Caused by: java.Class: message" lines of the Java stack trace after it.
_PY4J_CALL = re.compile(r"^An error occurred while calling [\w.$]+\.?\s*$", re.M)
_JAVA_CAUSE = re.compile(r"^(?:: |Caused by: )(?P<cls>[A-Za-z_$][\w.$]*)(?:: (?P<msg>.*))?$", re.M)


def java_cause(text: str) -> str | None:
    """The root Java cause of a Py4J error text (``Class: message``, the class without its
    package), or None when ``text`` is not a Py4J call failure."""
    if not _PY4J_CALL.search(text):
        return None
    causes = list(_JAVA_CAUSE.finditer(text))
    if not causes:
        return None
    m = causes[-1]  # the last "Caused by:" is the root cause
    cls = m.group("cls").rsplit(".", 1)[-1]
    msg = (m.group("msg") or "").strip()
    return f"{cls}: {msg}" if msg else cls


def one_line(exc: BaseException) -> str:
    """A short, single-line description of an exception, digging out kafkalog's own errors (and
    the Java cause of a Py4J call that failed in Spark's JVM)."""
    from ..errors import KafkaLogError

    if isinstance(exc, KafkaLogError) or isinstance(exc, CommandError):
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    text = str(exc)
    cause = java_cause(text) if not _our_errors(text) else None
    if cause is not None:
        return cause
    # Errors raised in Python workers arrive wrapped in Spark exceptions with the worker's
    # traceback inside; the last "SomethingError: message" line is the real cause.
    ours = _our_errors(text)
    if not ours:
        ours = [
            m
            for m in _WORKER_ERROR.finditer(text)
            if m.group("cls") not in ("PythonException", "Py4JJavaError")
        ]
    if ours and ("Traceback" in text or "PYTHON_DATA_SOURCE" in text):
        m = ours[-1]
        msg = _SQLSTATE.sub("", m.group("msg")).strip()
        if "kafkalog_source" in m.group(0):
            return msg  # kafkalog's own error, as the in-process engines print it
        return f"{m.group('cls')}: {msg}"
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    first = _SQLSTATE.sub("", first).strip()
    return first or type(exc).__name__


def run_module(argv: Sequence[str] | None = None) -> NoReturn:
    """Entry point of the ``kafkalog`` script and of ``python -m kafkalog_source.cli.main``: run
    the command line and exit with its code (see :func:`exit_process`)."""
    exit_process(main(list(argv) if argv is not None else None))


def exit_process(code: int) -> NoReturn:
    """End the process with ``code``.

    After a command that ran no Spark, the process ends once its output is flushed, without
    the interpreter's exit handlers: the native libraries' teardown there can abort a process
    after the work is done ("terminate called without an active exception", exit -6): pyarrow's
    S3 client (apache/arrow#34314), and, rarely, a local ``convert --engine arrow`` on a loaded
    machine (seen in this project's test suite); a scheduler would take the finished command for
    a failed one. Every file a command writes is closed before it returns, and its temporary
    directories are removed by their own ``with`` blocks. Output that cannot be written (a full
    disk) makes a successful command exit 120, as the interpreter's own flush at exit does.
    Spark's exit handlers stop its JVM, so with Spark the interpreter exits as usual."""
    if "pyspark" not in sys.modules:
        import logging
        import os

        for stream in (sys.stdout, sys.stderr):  # never None: main() replaced a closed one
            try:
                stream.flush()
            except (BrokenPipeError, ValueError):  # a closed pipe or stream: nothing to say
                pass
            except OSError as exc:
                try:
                    print(f"kafkalog: error: cannot write the output: {exc}", file=sys.stderr)
                    sys.stderr.flush()
                except (OSError, ValueError):
                    pass
                code = code or 120
        logging.shutdown()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    # ``python -m kafkalog_source.cli.main`` runs this file as ``__main__``, a second copy of the
    # module. Run the package's module instead, so that one copy of every class is in play (this
    # copy's exit_code would otherwise handle errors of the other copy's classes).
    from kafkalog_source.cli.main import run_module as _run_module

    _run_module()
