"""Constraints derived from pushed-down filters, used by the planner to skip work.

A :class:`Pruning` is only a hint: Spark re-applies every filter to the rows we return, so the
planner may read more than needed but must never drop a row that could match. Every field is
"no constraint" when None.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pruning:
    """Conservative bounds on the rows a query can keep."""

    topics: frozenset[str] | None = None
    partitions: frozenset[int] | None = None
    offset_min: int | None = None  # inclusive
    offset_max: int | None = None  # inclusive
    timestamp_min_ms: int | None = None  # inclusive, on the record timestamp

    def may_contain(self, topic: str | None, partition: int | None) -> bool:
        """False only when the filters prove no row of this topic-partition can match."""
        if self.topics is not None and topic is not None and topic not in self.topics:
            return False
        if self.partitions is not None and partition is not None:
            if partition not in self.partitions:
                return False
        return True

    @property
    def empty(self) -> bool:
        """True when the filters prove that no row at all can match."""
        if self.topics is not None and not self.topics:
            return True
        if self.partitions is not None and not self.partitions:
            return True
        return (
            self.offset_min is not None
            and self.offset_max is not None
            and self.offset_min > self.offset_max
        )

    def intersect(self, other: Pruning) -> Pruning:
        """Both sets of constraints at once (for filters combined with AND)."""

        def both_sets(a: frozenset | None, b: frozenset | None) -> frozenset | None:
            if a is None:
                return b
            return a if b is None else a & b

        def pick(a: int | None, b: int | None, f) -> int | None:
            if a is None:
                return b
            return a if b is None else f(a, b)

        return Pruning(
            topics=both_sets(self.topics, other.topics),
            partitions=both_sets(self.partitions, other.partitions),
            offset_min=pick(self.offset_min, other.offset_min, max),
            offset_max=pick(self.offset_max, other.offset_max, min),
            timestamp_min_ms=pick(self.timestamp_min_ms, other.timestamp_min_ms, max),
        )
