"""The typed object of a read's options: :class:`ReadOptions` (with its :class:`StoreOptions`).

Both are frozen dataclasses whose option fields come from the option table
(:data:`~.table.OPTION_SPECS`): one field per row, named by the row's ``field``, typed by its
parser's return type, with its default. What the table does not hold is written here: the
paths, the ``schemaRegistry.<setting>`` options, the store options' ``fs.*`` arguments, the
names as given, and how each object shows itself (what may be secret is masked, see
:mod:`kafkalog_source.redact`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..redact import MASK, redact_uri, secret_strings, show_value
from .spec import OptionSpec
from .table import OPTION_SPECS

T = TypeVar("T")
STORE = "store."  # a row whose field is StoreOptions'


def table_fields(rows: tuple[OptionSpec, ...]) -> Callable[[type[T]], type[T]]:
    """Make the decorated class a frozen dataclass with its own fields and one field per row of
    ``rows`` (after them, in the table's order)."""

    def make(cls: type[T]) -> type[T]:
        own = dict(cls.__dict__.get("__annotations__", {}))
        for spec in rows:
            name = spec.field.removeprefix(STORE)
            if name in own:
                raise TypeError(f"{cls.__name__}.{name} is declared twice")
            own[name] = spec.annotation
            setattr(cls, name, spec.default)
        cls.__annotations__ = own
        return dataclass(frozen=True, repr=False)(cls)

    return make


def registry_conf_shown(key: str, value: Any) -> str:
    """A ``schemaRegistry.<conf>`` value as messages may show it: only harmless settings
    (timeouts, retries, cache sizes) are shown; credentials and everything else are masked."""
    harmless = ("timeout.ms", "max.retries", "retries.wait.ms", "retries.max.wait.ms")
    if key.lower() in harmless or key.lower().startswith("cache."):
        return str(value)
    return MASK


@table_fields(tuple(s for s in OPTION_SPECS if s.field.startswith(STORE)))
class StoreOptions:
    """How remote objects are reached and read: constructor arguments per store (the
    ``fs.<store>.<argument>`` options), and the table's remote rows (read-ahead, retries,
    concurrency). Part of :class:`ReadOptions`; values masked in ``repr`` unless known to be
    harmless (see :mod:`kafkalog_source.redact`)."""

    # ((store, argument, value), ...), sorted: hashable, so it keys the filesystem cache
    args: tuple[tuple[str, str, Any], ...] = ()

    def args_for(self, store: str) -> dict[str, Any]:
        """The constructor arguments given for ``store`` (``s3``, ``gs``, ``abfs``, ``hdfs``, or an
        fsspec protocol)."""
        return {a: v for s, a, v in self.args if s == store}

    def secrets(self) -> list[str]:
        """The strings the masked options hold, for scrubbing others' messages."""
        return secret_strings(self.args)

    def __repr__(self) -> str:
        shown = [f"fs.{s}.{a}={show_value(s, a, v)}" for s, a, v in self.args]
        shown += [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)[1:]]
        return f"StoreOptions({', '.join(shown)})"


@table_fields(tuple(s for s in OPTION_SPECS if not s.field.startswith(STORE)))
class ReadOptions:
    """Every reader option, typed: one field per row of the option table (see :mod:`.table`),
    and the fields below. Build it with :func:`~.parse.parse_options`; it stays what the user
    said (each front end builds what it asks the planner for from it). Its ``repr`` masks what
    may be secret (see :mod:`kafkalog_source.redact`)."""

    paths: tuple[str, ...] = ()
    registry_conf: tuple[tuple[str, Any], ...] = ()  # schemaRegistry.<conf> (masked in repr)
    # remote stores: fs.<store>.<argument> options, read-ahead and retries (secrets masked in repr)
    store: StoreOptions | None = None  # None: the defaults (or those of the enclosing command)
    # raw option names as given, for error messages
    given: tuple[str, ...] = field(default=(), compare=False)

    def replace(self, **changes: Any) -> ReadOptions:
        """Return a copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        shown = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "paths":
                value = tuple(redact_uri(p) for p in value)
            elif f.name == "schema_registry" and value is not None:
                value = redact_uri(value)
            elif f.name == "registry_conf":
                value = tuple((k, registry_conf_shown(k, v)) for k, v in value)
            shown.append(f"{f.name}={value!r}")
        return f"ReadOptions({', '.join(shown)})"
