"""What the planner is asked to do, apart from what the user said.

:class:`~kafkalog_source.options.ReadOptions` stays exactly what the user said. Each front end
turns it, once per read (a stream: once per micro-batch), into a :class:`PlanRequest`, the only
thing :func:`~.planner.plan` takes; the request holds what the planner reads and nothing else:
the files (a :class:`~..layout.discovery.Listing`, what discovery takes), the bounds, sizes and
data-loss policy, and the rules the planner applies. This module is the one place below the
front ends that reads ``ReadOptions``:

* a batch read (Spark's ``read``, the CLI): :func:`batch_request`, the options' bounds and sizes;
* the Arrow API (``read_table``, ``iter_batches``, ``open_reader``): :func:`pieces_request`,
  pieces in log order, of ``maxPartitionBytes`` when the user gave it, else of the API's piece
  size (so that threads have pieces to share);
* a stream's micro-batch: :func:`micro_batch_request`, the offsets ``[start, end)`` of each
  partition, with the stream's failOnDataLoss and number of splits;
* a stream's first offset at or after a time: :func:`time_lookup_request`.

Options that only a batch read takes (``endingOffsets``, ``endingTimestamp``,
``endingOffsetsByTimestamp``; Spark's Kafka source refuses them for streams too) are refused by
:func:`check_stream_options`, naming them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import OptionError
from ..layout.discovery import Listing
from ..options import (
    EARLIEST,
    LATEST,
    OPTION_SPECS,
    PartitionMap,
    ReadOptions,
    StoreOptions,
    doc_ref,
)
from .splits import NO_LIMIT

PartitionKey = tuple[str, int]
# the option table's rows by the ReadOptions field they set: a request's field that a row sets
# takes the row's default (the table is the one place a default is written)
_ROWS = {s.field: s for s in OPTION_SPECS}


def _default(field: str) -> Any:
    return _ROWS[field].default


# the options a stream refuses: its end is what each trigger finds (Spark's Kafka source)
BATCH_ONLY = ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")


@dataclass(frozen=True)
class PlanRequest:
    """One plan to make: the files are those ``files`` lists (as the user said), the bounds,
    sizes and data-loss policy are the request's own, and the planner's rules are the user's."""

    files: Listing
    starting_offsets: str | PartitionMap = _default("starting_offsets")
    ending_offsets: str | PartitionMap = _default("ending_offsets")
    starting_timestamp: int | None = _default("starting_timestamp")
    ending_timestamp: int | None = _default("ending_timestamp")
    starting_offsets_by_timestamp: PartitionMap | None = _default("starting_offsets_by_timestamp")
    ending_offsets_by_timestamp: PartitionMap | None = _default("ending_offsets_by_timestamp")
    fail_on_data_loss: bool = _default("fail_on_data_loss")
    max_partition_bytes: int = _default("max_partition_bytes")
    min_partitions: int | None = _default("min_partitions")
    in_order: bool = False  # one split per piece, in log order (a sequential reader's plan)
    # a path with no segment file plans nothing instead of failing
    allow_empty: bool = _default("allow_empty")
    # pieces may be cut where only a walk of the batch headers finds a boundary (a segment with
    # no .index entries); False: such a segment stays whole (its cut would cost a serial walk)
    walk_cuts: bool = True
    # a file deleted between planning and reading is a data loss to count and warn about, not an
    # error (a stream's micro-batch with failOnDataLoss=false: retention deleted the segment)
    deleted_is_loss: bool = False
    # startingOffsetsByTimestampStrategy: a partition with no record at or after the starting
    # time fails the plan (error) or reads nothing (latest; a stream resolves its start itself)
    no_time_match: str = "latest"
    # maxRecordsPerPartition: at most this many offsets in one split (packing)
    max_records_per_partition: int | None = _default("max_records_per_partition")
    # the offset maps are the user's startingOffsets / endingOffsets: each must name every
    # partition the read selects, and an offset past a partition's end is a data loss, as in
    # Spark's Kafka source (a stream's micro-batch maps are its own: neither applies)
    offsets_given: bool = False

    # the user's rules, as the planner applies them (isolationLevel, offsetGaps, replicas,
    # remoteHeaderWalk, openCostInBytes)
    isolation_level: str = _default("isolation_level")
    offset_gaps: str = _default("offset_gaps")
    replicas: str = _default("replicas")
    remote_header_walk: bool = _default("remote_header_walk")
    open_cost_in_bytes: int = _default("open_cost_in_bytes")

    @property
    def store(self) -> StoreOptions | None:
        """The remote store settings (the files' store)."""
        return self.files.store


def listing_of(o: ReadOptions) -> Listing:
    """The files ``o`` names, as discovery takes them."""
    return Listing.of(o)


def _rules(o: ReadOptions) -> dict:
    return {name: getattr(o, name) for name in _RULES}


# the bounds a batch read takes from the options as the user gave them
_BOUNDS = (
    "starting_offsets",
    "ending_offsets",
    "starting_timestamp",
    "ending_timestamp",
    "starting_offsets_by_timestamp",
    "ending_offsets_by_timestamp",
)
# the planner's rules, the user's in every request
_RULES = ("isolation_level", "offset_gaps", "replicas", "remote_header_walk", "open_cost_in_bytes")


def _bounds(o: ReadOptions) -> dict:
    return {name: getattr(o, name) for name in _BOUNDS}


def check_batch(o: ReadOptions) -> None:
    """Refuse what only a stream may use: a start at the latest offset (a batch read of an
    archive from its end is empty), as Spark's Kafka source does for batch queries."""
    if o.starting_offsets == "latest":
        raise OptionError(
            "option 'startingOffsets': 'latest' is not allowed for batch reads",
            doc=doc_ref("startingOffsets"),
        )
    if isinstance(o.starting_offsets, dict):
        for (topic, part), v in sorted(o.starting_offsets.items()):
            if v == LATEST:
                raise OptionError(
                    f"option 'startingOffsets': {topic}-{part}: latest (-1) is not allowed for "
                    "batch reads",
                    doc=doc_ref("startingOffsets"),
                )


def check_stream_options(o: ReadOptions) -> None:
    """Refuse the options a stream does not take, naming them."""
    given = [name for name in BATCH_ONLY if name in o.given]
    if given:
        raise OptionError(
            f"option{'s' if len(given) > 1 else ''} {', '.join(map(repr, given))} "
            f"{'are' if len(given) > 1 else 'is'} for batch reads only: a stream reads what each "
            "trigger finds (as Spark's Kafka source); use Trigger.AvailableNow to stop at what is "
            "there, or a batch read for a fixed end",
            doc=doc_ref(given[0]),
        )
    decoding = [
        name
        for name, value in (
            ("decode", o.decode),
            ("valueFormat", o.value_format),
            ("keyFormat", o.key_format),
            ("includeSnapshots", "true" if o.include_snapshots else "raw"),
        )
        if value != "raw"
    ]
    if decoding:
        raise OptionError(
            f"option {decoding[0]!r} is for batch reads only: a stream returns the raw columns "
            "(decode them downstream, or read the archive in batches)",
            doc=doc_ref(decoding[0]),
        )


def no_time_match(key: PartitionKey, t: int) -> OptionError:
    """``startingOffsetsByTimestampStrategy=error``: no record of partition ``key`` has a
    timestamp at or after ``t`` (Spark's Kafka source's words)."""
    return OptionError(
        f"No offset matched from request of topic-partition {key[0]}-{key[1]} and timestamp "
        f"{t}. Set startingOffsetsByTimestampStrategy=latest to start such a partition at its "
        "latest offset",
        doc=doc_ref("startingOffsetsByTimestampStrategy"),
    )


def batch_request(o: ReadOptions, files: Listing | None = None) -> PlanRequest:
    """A batch read of what ``o`` says (its files: ``files``, when the caller listed them
    already from ``o``)."""
    check_batch(o)
    return PlanRequest(
        files or listing_of(o),
        **_rules(o),
        **_bounds(o),
        fail_on_data_loss=o.fail_on_data_loss,
        max_partition_bytes=o.max_partition_bytes,
        min_partitions=o.min_partitions,
        allow_empty=o.allow_empty,
        no_time_match=o.starting_offsets_by_timestamp_strategy,
        max_records_per_partition=o.max_records_per_partition,
        offsets_given=True,
    )


def pieces_request(
    o: ReadOptions, piece_bytes: int, walk_cuts: bool = True, files: Listing | None = None
) -> PlanRequest:
    """The Arrow API's plan: pieces in log order, of ``maxPartitionBytes`` when the user gave
    it, else of ``piece_bytes``; unless ``walk_cuts`` (or the user's ``maxPartitionBytes`` or
    ``minPartitions``), a segment with no ``.index`` entries is not cut. ``files``: the files
    of ``o``, when the caller listed them already."""
    check_batch(o)
    given = "maxPartitionBytes" in o.given
    return PlanRequest(
        files or listing_of(o),
        **_rules(o),
        **_bounds(o),
        fail_on_data_loss=o.fail_on_data_loss,
        max_partition_bytes=o.max_partition_bytes if given else piece_bytes,
        min_partitions=o.min_partitions,
        in_order=True,
        allow_empty=o.allow_empty,
        walk_cuts=walk_cuts
        or given
        or o.min_partitions is not None
        or o.max_records_per_partition is not None,
        no_time_match=o.starting_offsets_by_timestamp_strategy,
        max_records_per_partition=o.max_records_per_partition,
        offsets_given=True,
    )


def micro_batch_request(
    o: ReadOptions,
    start: dict[PartitionKey, int],
    end: dict[PartitionKey, int],
    fail_on_data_loss: bool,
    min_partitions: int,
) -> PlanRequest:
    """A stream's micro-batch: offsets ``start[k] <= offset < end[k]`` of each partition ``k``."""
    return PlanRequest(
        listing_of(o),
        **_rules(o),
        starting_offsets=dict(start),
        ending_offsets=dict(end),
        fail_on_data_loss=fail_on_data_loss,
        max_partition_bytes=o.max_partition_bytes,
        min_partitions=min_partitions,
        allow_empty=True,
        deleted_is_loss=not fail_on_data_loss,
        max_records_per_partition=o.max_records_per_partition,
    )


def time_lookup_request(o: ReadOptions, key: PartitionKey, end: int, t: int) -> PlanRequest:
    """The plan that finds partition ``key``'s first offset at or after time ``t`` (below
    ``end``): one range per segment, read in offset order."""
    return PlanRequest(
        listing_of(o),
        **_rules(o),
        starting_offsets="earliest",
        ending_offsets={key: end},
        starting_offsets_by_timestamp={key: t},
        max_partition_bytes=NO_LIMIT,
        in_order=True,
        allow_empty=True,
    )


__all__ = [
    "BATCH_ONLY",
    "EARLIEST",
    "PlanRequest",
    "batch_request",
    "check_batch",
    "check_stream_options",
    "listing_of",
    "micro_batch_request",
    "no_time_match",
    "pieces_request",
    "time_lookup_request",
]
