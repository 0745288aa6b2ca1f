"""``kafkalog report PATH... -o report.html``: one self-contained HTML page of what an archive
holds, where it has holes, and what its consumers had read (the gathering and the page are in
:mod:`.gather`, :mod:`.internal`, :mod:`.render`; this module is the command line).

The report reads the archive once, as ``kafkalog verify`` does (its counts, gaps and problems
are verify's), and its exit status is verify's: 0 when verify finds no error (no warning either
with ``--strict``), 1 when it does (the page is written all the same, and draws the damage) or
when PATH holds nothing to read, 2 for usage errors (an output file that cannot be written is
one, found before anything is read). ``--json FILE`` writes every number the page shows.

Unlike the other commands, ``-o`` is the output file here (as in ``kafkalog report PATH -o
report.html``); reader options are given with ``--option KEY=VALUE``: verify's options.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Any

from ..common import CommandError, add_quiet_argument, add_verbose_argument


def register(subparsers: Any) -> None:
    """Add the ``report`` subcommand."""
    from ...options import cli_options

    accepted = cli_options("verify")
    p = subparsers.add_parser(
        "report",
        help="draw an archive as one self-contained HTML page (and its numbers as JSON)",
        description=(
            "Read every segment under PATH once, as verify does, and write one HTML page that "
            "opens offline in any browser: an overview, a timeline per partition with every gap "
            "and loss (file and byte), records and bytes over time per topic, batch sizes and "
            "compression, producers and transactions, consumer groups and their lag at the "
            "moment of the archive (__consumer_offsets), brokers, topics and configuration "
            "changes (__cluster_metadata). Exit status as verify's. Needs the report extra: "
            "pip install 'kafkalog[report]'."
        ),
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="segment file or directory")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        action="append",  # given twice is refused (run), not the last one silently taken
        metavar="FILE",
        help="the HTML file to write (replaced if it exists); reader options go in --option",
    )
    p.add_argument("--json", metavar="FILE", help="also write every number the page shows as JSON")
    p.add_argument("--strict", action="store_true", help="treat warnings as problems too (exit 1)")
    add_verbose_argument(p)
    add_quiet_argument(p, "print nothing but errors")
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"a reader option (repeatable); report takes verify's: {', '.join(accepted)}",
    )
    p.set_defaults(run=run, reader_warnings=False)


def output_file(values: list[str]) -> str:
    """The one ``-o`` given. ``-o`` is a reader option in the other commands: an ``-o`` given
    twice, or one that reads ``KEY=VALUE`` with a reader option's KEY, is a usage error saying
    so, rather than a page written to a file named ``offsetGaps=compacted``."""
    from ...options import cli_options

    def shown(v: str) -> str:  # a KEY=VALUE's value may be a secret (fs.s3.secret_key=...)
        return repr(f"{v.partition('=')[0]}=..." if "=" in v else v)

    if len(values) > 1:
        raise CommandError(
            f"report: -o given {len(values)} times ({', '.join(map(shown, values))}): -o is "
            "the output file here; give reader options with --option KEY=VALUE"
        )
    value = values[0]
    key = value.partition("=")[0].strip().lower()
    known = {k.lower() for k in cli_options("verify")}
    if "=" in value and (key in known or key.startswith("fs.")):
        raise CommandError(
            f"report: -o {shown(value)} looks like a reader option: -o is the output file "
            "here; give reader options with --option KEY=VALUE"
        )
    return value


def writable(path: str, what: str) -> None:
    """Fail (a usage error) unless ``path`` can be written: checked before the archive is read."""
    full = os.path.abspath(path)
    parent = os.path.dirname(full)
    if os.path.isdir(full):
        raise CommandError(f"report: {what} {path!r} is a directory")
    if not os.path.isdir(parent):
        raise CommandError(f"report: cannot write {what} {path!r}: no directory {parent!r}")
    try:
        with tempfile.NamedTemporaryFile(dir=parent, prefix=".kafkalog-report-", delete=True):
            pass
    except OSError as exc:
        raise CommandError(f"report: cannot write {what} {path!r}: {exc.strerror}") from None
    if os.path.exists(full) and not os.access(full, os.W_OK):
        raise CommandError(f"report: cannot write {what} {path!r}: permission denied")


def write_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in its directory."""
    full = os.path.abspath(path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(full), prefix=".kafkalog-report-")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # as open() would create it, not mkstemp's 0600
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, full)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def run(args: argparse.Namespace) -> int:
    """Gather, render and write the report; return verify's exit status."""
    import logging

    from .gather import gather, to_json
    from .render import MissingRenderer, javascript, render_html

    logging.getLogger("kafkalog").addHandler(logging.NullHandler())
    args.output = output_file(args.output)
    writable(args.output, "output")
    if args.json:
        if os.path.realpath(args.json) == os.path.realpath(args.output):
            raise CommandError(f"report: --json {args.json!r} is the output file (-o) too")
        writable(args.json, "--json file")
    try:
        script = javascript()  # before the pass: a missing extra fails at once
    except MissingRenderer as exc:
        raise CommandError(f"report: {exc}") from None
    quiet = bool(getattr(args, "quiet", False))
    result = gather(list(args.paths), list(args.option), strict=args.strict, quiet=quiet)
    data = result.data
    page = render_html(data, script)
    write_atomically(args.output, page)
    if args.json:
        write_atomically(args.json, to_json(data))
    if not quiet:
        o = data["overview"]
        v = data["verify"]
        verdict = (
            "OK" if result.exit_code == 0 else f"{v['errors']} errors, {v['warnings']} warnings"
        )
        print(
            f"kafkalog report: wrote {args.output} ({len(page.encode()) // 1024} KiB): "
            f"{o['partitions']} partitions, {o['segments']} segments, {o['records']} records, "
            f"{o['gaps']} gaps; verify: {verdict}",
            file=sys.stderr,
        )
        for note in data["notes"]:
            print(f"kafkalog report: note: {note}", file=sys.stderr)
    return result.exit_code
