"""What one row of the option table says: :class:`OptionSpec`, and where options apply."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .values import Parser

OPTIONS_DOC = "docs/reference/options.md"
# where an option applies: a batch read (spark.read), a stream (spark.readStream), the Arrow API
# (read_table, iter_batches, open_reader; so `kafkalog query` and `convert`, whose -o takes every
# option); the other CLI subcommands that take it are the row's ``cli``
BATCH, STREAM, ARROW = "batch", "stream", "arrow"
EVERYWHERE = (BATCH, STREAM, ARROW)
# the CLI subcommands whose -o takes only the options whose rows name them
CLI_COMMANDS = ("verify", "dump", "warmup")


@dataclass(frozen=True)
class OptionSpec:
    """One reader option: its name, the field it sets, how its value is parsed, its default,
    where it applies and what it means. :data:`~.table.OPTION_SPECS` is the one table of them:
    :func:`~.parse.parse_options` parses with it, :class:`~.model.ReadOptions` has one field per
    row (typed by the parser's return type, with the row's default), the CLI's subcommands take
    the options whose rows name them, and ``docs/reference/options.md`` is generated from it
    (``python -m kafkalog_source.cli.docs``)."""

    name: str  # the canonical (camelCase) name; names are case-insensitive
    field: str  # the ReadOptions field it sets ("store.x": StoreOptions.x)
    parser: Parser  # parser(name, value) -> the typed value; raises OptionError
    type: str  # what a value looks like, for the reference
    summary: str  # one line
    doc: str = ""  # a paragraph (Markdown)
    applies: tuple[str, ...] = EVERYWHERE
    aliases: tuple[str, ...] = ()  # other names of the same option
    default_note: str = ""  # where the default differs (streams, the Arrow API)
    default: Any = None  # the field's value when the option is not given
    cli: tuple[str, ...] = ()  # CLI_COMMANDS that take it (query and convert take every option)

    @property
    def anchor(self) -> str:
        """The option's anchor in the reference (its heading's, as a code host slugs it)."""
        return doc_anchor(self.name)

    @property
    def annotation(self) -> str:
        """The type of the option's field: its parser's return type, or None when the default
        is None."""
        returns = str(self.parser.__annotations__["return"])
        if self.default is None and "None" not in returns.split(" | "):
            return f"{returns} | None"
        return returns


def doc_anchor(heading: str) -> str:
    """The anchor a code host (GitHub's rule) gives a Markdown heading: lower case, everything
    but letters, digits, spaces, ``-`` and ``_`` dropped, spaces as ``-``."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-")


def choices_text(values: tuple[str, ...]) -> str:
    """``one of `a`, `b``` for the reference's type column."""
    return "one of " + ", ".join(f"`{v}`" for v in values)


TIME_TEXT = "epoch milliseconds, or an ISO-8601 date or time (UTC when no zone is given)"
SIZE_TEXT = "bytes: an integer, or with a `k`, `m` or `g` suffix"
COMPLETE_LINK = (
    "[Complete or loud](../guides/bad-data.md#complete-or-loud-what-a-read-says-is-missing)"
)
