"""Translate Spark's pushed-down filters into a conservative :class:`Pruning` for the planner.

Only the columns the planner can use are read: ``topic`` and ``partition`` (``=``, ``<=>``,
``IN``), ``offset`` (``=``, ``IN`` and the four comparisons) and ``timestamp`` (``=``, ``IN``,
``>`` and ``>=``, which give a lower bound; there is no upper bound because Kafka timestamps are
not ordered). Everything else, including ``NOT``, null tests and string predicates, is ignored.
The result only ever *widens* what is read: Spark re-applies every filter to the returned rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import Any

from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

from ..planning.pruning import Pruning

_COMPARISONS = (EqualTo, EqualNullSafe, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ONE_MS = timedelta(milliseconds=1)


def pruning_from_filters(filters: Iterable[Filter]) -> Pruning | None:
    """The AND of every usable filter as one Pruning, or None when no filter is usable."""
    out: Pruning | None = None
    for f in filters:
        p = _one(f)
        if p is not None:
            out = p if out is None else out.intersect(p)
    return out


def _column(f: Filter) -> str | None:
    attr = getattr(f, "attribute", None)
    if isinstance(attr, tuple) and len(attr) == 1 and isinstance(attr[0], str):
        return attr[0].lower()
    return None


def _ints(values: Iterable[Any]) -> list[int] | None:
    out = []
    for v in values:
        if v is None:
            continue  # NULL never matches
        if isinstance(v, bool) or not isinstance(v, int):
            return None  # a cast we do not model: do not prune on it
        out.append(v)
    return out


def _strings(values: Iterable[Any]) -> list[str] | None:
    out = []
    for v in values:
        if v is None:
            continue
        if not isinstance(v, str):
            return None
        out.append(v)
    return out


def _millis(values: Iterable[Any]) -> list[int] | None:
    """Timestamps floored to epoch milliseconds (Kafka's resolution), so never too high."""
    out = []
    for v in values:
        if v is None:
            continue
        if not isinstance(v, datetime):
            return None
        if v.tzinfo is None:  # Spark sends aware UTC datetimes; be safe with naive ones
            v = v.replace(tzinfo=timezone.utc)
        out.append((v - _EPOCH) // _ONE_MS)
    return out


def _values(f: Filter) -> list[Any] | None:
    if isinstance(f, _COMPARISONS):
        return [f.value]
    if isinstance(f, In):
        return list(f.value)
    return None


def _one(f: Filter) -> Pruning | None:
    column = _column(f)
    raw = _values(f)
    if column is None or raw is None:
        return None
    point = isinstance(f, (EqualTo, EqualNullSafe, In))
    if column == "topic" and point:
        topics = _strings(raw)
        return None if topics is None else Pruning(topics=frozenset(topics))
    if column == "partition" and point:
        parts = _ints(raw)
        return None if parts is None else Pruning(partitions=frozenset(parts))
    if column == "offset":
        offsets = _ints(raw)
        if offsets is None:
            return None
        if not offsets:  # `offset IN (NULL)` or `offset = NULL`: nothing can match
            return Pruning(offset_min=1, offset_max=0) if point else None
        if point:
            return Pruning(offset_min=min(offsets), offset_max=max(offsets))
        (v,) = offsets
        if isinstance(f, GreaterThan):
            return Pruning(offset_min=v + 1)
        if isinstance(f, GreaterThanOrEqual):
            return Pruning(offset_min=v)
        if isinstance(f, LessThan):
            return Pruning(offset_max=v - 1)
        return Pruning(offset_max=v)  # LessThanOrEqual
    if column == "timestamp" and (point or isinstance(f, (GreaterThan, GreaterThanOrEqual))):
        millis = _millis(raw)
        if not millis:
            return None
        # `> t` with microsecond t: a record at floor(t) ms may still be > t, so keep it.
        return Pruning(timestamp_min_ms=min(millis))
    return None
