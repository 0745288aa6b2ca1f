"""One conversion run into a lake table: what is new since the table's last commit, read, written
and committed with the offsets it reaches, exactly once.

A run:

1. opens the table and reads its state (:mod:`.state`): the offsets converted per
   topic-partition and the last batch converted before each;
2. finds what the archive holds now, as a stream's ``Trigger.AvailableNow`` does
   (:class:`~kafkalog_source.streaming.source.StreamSource`): each partition's end is the offset
   after its last complete batch (under ``read_committed``, at most its last stable offset, so
   an undecided transaction waits for the run that sees its marker). From the table's offsets it
   checks what a restarted stream checks: offsets deleted by retention before they were
   converted, a last batch converted that is gone or different (a partition truncated or
   rewritten), a partition gone; each is reported as the reader reports missing offsets:
   ``failOnDataLoss=true`` fails the run (nothing committed), else a warning, counted in the
   read's ReadStats. A new table starts at ``startingOffsets`` (or ``startingTimestamp``), new
   partitions of an existing one at their earliest offset;
3. reads ``[table offset, end)`` of every partition with the batch reader (``startingOffsets``
   and ``endingOffsets`` per partition, every other option as given: decoding, ``mode``,
   ``failOnDataLoss`` for what the archive itself lacks), the columns typed as the read's schema
   and the table's merged (:func:`~.schema.merge`);
4. writes the data files and commits them with the new offsets in one atomic commit
   (:mod:`.iceberg`, :mod:`.delta`). A run killed before the commit leaves the table as it was
   (its data files unreferenced), so the next run converts the same offsets again; after the
   commit, the next run starts after them. When another run commits first, this one abandons
   its commit and starts over from that run's offsets (up to :data:`ATTEMPTS` times).

Each run has an id (a UUID, :attr:`TableRun.run`) that its commit carries (``kafkalog.run``,
:mod:`.state`): after a commit error the formats reload the table and look for it, so that a
commit whose reply was lost counts as the success it is, and a commit whose outcome cannot be
known fails with :class:`~.spec.CommitUnknownError` naming the id, its data files kept.

``--mode overwrite`` always commits: the table then holds this run's result, which is empty
when the archive holds no record (nothing new to read is no reason to keep the old rows).
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..errors import OptionError
from ..options import ReadOptions, parse_options
from ..redact import redact_uri
from ..selection import TopicSelection, topic_selection
from ..stats import ReadStats
from ..streaming.source import Limit, Offsets, StreamSource, offsets_to_json
from ..transport.filesystems import using_store
from ..transport.known import attempt_known
from .schema import check_types, conform, merge, relaxed
from .sink import Committed
from .spec import (
    DEFAULT_PARTITIONING,
    ConcurrentRunError,
    PartitionField,
    SchemaChangeError,
    TableError,
    TableTarget,
    TargetError,
    parse_partitioning,
    partitioning_text,
)
from .state import TableState, check_read, check_topics, read_identity

log = logging.getLogger("kafkalog")

ATTEMPTS = 3  # runs started over after another run committed first
# what only the batch read takes: the table's offsets decide where each run starts and ends
_REFUSED = ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp", "includeSnapshots")
_STARTING = ("startingoffsets", "startingtimestamp", "startingoffsetsbytimestamp")
# options of the read's decoding, which a stream's offsets do not depend on (and refuses)
_DECODING = (
    "decode",
    "valueformat",
    "keyformat",
    "schemaregistry",
    "subjectnamestrategy",
    "valuesubject",
    "keysubject",
    "valueschemaversion",
    "keyschemaversion",
    "valuemessage",
    "keymessage",
    "payloadas",
)


@dataclass(frozen=True)
class TableRun:
    """What a run did: the commit (None when nothing was new), the rows and topic-partitions it
    added, the table's offsets after it, whether it created (or replaced) the table (with no
    commit: there was no table, and the run made none, having nothing to write),
    whether it replaced one (``--mode overwrite`` of a table that was there) or changed its
    schema, and the run's id (``kafkalog.run`` in its commit)."""

    committed: Committed | None
    rows: int = 0
    partitions: int = 0
    offsets: Offsets = field(default_factory=dict)
    created: bool = False
    replaced: bool = False
    schema_changed: bool = False
    attempts: int = 1
    run: str = ""


def open_sink(target: TableTarget) -> Any:
    """The format's sink for ``target`` (PyIceberg and deltalake are imported when used)."""
    if target.format == "iceberg":
        from .iceberg import IcebergSink

        return IcebergSink(target)
    if target.format == "delta":
        from .delta import DeltaSink

        return DeltaSink(target)
    raise TableError(f"unknown table format {target.format!r}; iceberg or delta")


def _check_options(opts: ReadOptions) -> None:
    given = [n for n in _REFUSED if n in opts.given]
    if given:
        raise OptionError(
            f"option {given[0]!r} does not apply to a table: each run converts what the archive "
            "holds after the table's offsets, up to its end"
        )


def _source_options(options: Mapping[str, Any], path: Any) -> ReadOptions:
    """The options of the offset planning: the read's, less its decoding."""
    kept = {
        k: v
        for k, v in options.items()
        if k.lower().split(".", 1)[0] not in _DECODING and k.lower() not in _DECODING
    }
    return parse_options(kept, paths=path)


def convert_table(
    path: Any,
    target: TableTarget,
    options: Mapping[str, Any] | None = None,
    stats: ReadStats | None = None,
    progress: Callable[[ReadStats, int], None] | None = None,
) -> TableRun:
    """Convert what ``path`` holds past the table's offsets into the table ``target`` names, in
    one commit (see the module's description). ``options`` are reader options; ``stats`` gets
    the read's accounting; ``progress(stats, rows)`` is called as batches are read.

    Raises :class:`~.spec.TableError` (OUT holds something else, another archive's table,
    other read options, a catalog that cannot be reached), :class:`~.spec.SchemaChangeError`,
    :class:`~.spec.ConcurrentRunError` (another run committed first, :data:`ATTEMPTS` times) and
    the reader's errors (``DataLossError`` under ``failOnDataLoss``, ...)."""
    options = dict(options or {})
    opts = parse_options(options, paths=path)
    _check_options(opts)
    stats = stats if stats is not None else ReadStats()
    run_id = str(uuid.uuid4())  # in the commit of every attempt: one commit at most lands
    with using_store(opts.store):
        sink = open_sink(target)
        for attempt in range(1, ATTEMPTS + 1):
            run_stats = ReadStats()
            try:
                with attempt_known():  # each attempt lists the archive again, once
                    run = _attempt(
                        sink, path, target, options, opts, run_stats, progress, attempt, run_id
                    )
            except ConcurrentRunError as e:
                if attempt == ATTEMPTS:
                    stats.merge(run_stats)
                    raise
                # an abandoned attempt's reading is no part of the run's account: the next one
                # reads from the offsets the other run committed (which counted what it read)
                log.warning("%s; starting over from the offsets it committed", e)
                continue
            except BaseException:
                stats.merge(run_stats)
                raise
            stats.merge(run_stats)
            return run
    raise AssertionError("unreachable")


def _attempt(
    sink: Any,
    path: Any,
    target: TableTarget,
    options: dict[str, Any],
    opts: ReadOptions,
    stats: ReadStats,
    progress: Callable[[ReadStats, int], None] | None,
    attempt: int,
    run_id: str = "",
) -> TableRun:
    where = f"OUT {sink.shown}"
    state = sink.open()
    _check_columns(sink, target, where)
    if state is not None and target.mode == "error":
        raise TargetError(
            f"{where} is already a table; convert without --mode error to add what is new to it, "
            "or with --mode overwrite to replace it"
        )
    # --mode overwrite: the run converts from the start as into a new table and its one commit
    # replaces the table's rows and offsets ("rows"; a partitioning or a type the table cannot
    # take: the whole table, "table"); until then, the old table stays as it was
    replace: str | None = None
    if state is not None and target.mode == "overwrite":
        replace, state = "rows", None
    created = state is None and replace is None
    state = state or TableState()
    if state.read:
        check_read(state, opts, where)
    if replace and target.partitioning is not None:
        if tuple(target.partitioning) != tuple(sink.partitioning() or ()):
            replace = "table"
    if not created and not replace and target.partitioning is not None:
        have = tuple(sink.partitioning() or ())
        if tuple(target.partitioning) != have:
            raise TargetError(
                f"{where} is partitioned by {partitioning_text(have)}, not "
                f"{partitioning_text(target.partitioning)}: a table's partitioning is chosen when "
                "it is created"
            )

    # subscribe, subscribePattern or assign: the partitions of the table that this run does
    # not select are not looked at (neither read nor reported gone); their offsets stay
    selected = _selected(state, topic_selection(opts))
    source = StreamSource(_source_options(options, path), fail_on_data_loss=opts.fail_on_data_loss)
    try:
        logs = source.snapshot()
    except OptionError as e:
        raise TargetError(
            f"{e} (a table keeps its offsets per topic-partition, as a stream)"
        ) from None
    check_topics(selected, {t for t, _ in logs}, where, _shown(path))
    source.prepare_available_now()
    start = dict(selected.offsets) if state.offsets else source.initial()
    end = source.latest(start, Limit(), selected.prints)
    # the losses the stream's planning found since the last run (failOnDataLoss=false), as
    # the reader counts missing offsets
    losses = source.take_losses()
    if losses is not None:
        stats.merge(losses)
    logs = source.last_snapshot or logs
    begin = {k: max(start.get(k, logs[k].earliest), logs[k].earliest) for k in end if k in logs}
    new = {k: (begin[k], end[k]) for k in begin if end[k] > begin[k]}
    offsets = {**state.offsets, **end}
    if not new and not replace:  # created: no table was there, and none is made
        return TableRun(None, offsets=offsets, created=created, attempts=attempt, run=run_id)

    read_options = {k: v for k, v in options.items() if k.lower() not in _STARTING}
    read_options["startingOffsets"] = offsets_to_json(begin)
    read_options["endingOffsets"] = offsets_to_json({k: end[k] for k in begin})
    from ..reader import prepare

    prepared = prepare(parse_options(read_options, paths=path))
    read_schema = relaxed(prepared.schema)
    check_types(read_schema, target.format)
    origins = _origins(prepared)
    table_schema = None if replace == "table" else sink.schema()
    schema = read_schema
    if table_schema is not None:
        try:
            schema = merge(table_schema, read_schema, target.format, state.schemas, origins)
        except SchemaChangeError:
            if not replace:
                raise
            replace, table_schema = "table", None  # a type the table cannot take: a new one
    partitioning = _partitioning(sink, target, schema, created or replace == "table")
    new_state = TableState(
        offsets=offsets,
        prints={**state.prints, **source.prints(end)},
        read=read_identity(opts),
        schemas={**state.schemas, **origins},
        archive=_shown(path),
        run=run_id,
    )
    batches = _batches(prepared, stats, set(new), schema, progress)
    committed = sink.append(schema, batches, new_state, partitioning, replace)
    return TableRun(
        committed,
        rows=committed.rows,
        partitions=len(new),
        offsets=offsets,
        created=created or replace is not None,
        replaced=replace is not None,
        schema_changed=table_schema is not None and not table_schema.equals(schema),
        attempts=attempt,
        run=run_id,
    )


def _check_columns(sink: Any, target: TableTarget, where: str) -> None:
    """Refuse, before reading, a Delta table with column mapping (its columns renamed or dropped
    by another engine): the ``deltalake`` package cannot write into it by the columns' ids.
    (Iceberg tables are written by field id: :mod:`.fieldids`.)"""
    if target.format != "delta" or getattr(sink, "table", None) is None:
        return
    from .files import delta_column_mapping

    mode = delta_column_mapping(sink.table)
    if mode:
        raise TargetError(
            f"{where} is a Delta table with column mapping (delta.columnMapping.mode={mode}: "
            "its columns may have been renamed or dropped by another engine), which the "
            "deltalake package cannot write by column id; convert into another table, or "
            "write this one with Spark's Delta connector"
        )


def _selected(state: TableState, selection: TopicSelection | None) -> TableState:
    """``state`` with only the partitions ``selection`` takes (all: None)."""
    if selection is None:
        return state
    return dataclasses.replace(
        state,
        offsets={k: v for k, v in state.offsets.items() if selection.takes(*k)},
        prints={k: v for k, v in state.prints.items() if selection.takes(*k)},
    )


def _shown(path: Any) -> str:
    """The path (or paths) read, as messages show it."""
    if isinstance(path, (list, tuple)):
        return ", ".join(redact_uri(str(p)) for p in path)
    return redact_uri(str(path))


def _origins(prepared: Any) -> dict[str, dict[str, Any]]:
    """Per decoded payload column, the subject, version and schema id of its reader schema."""
    plan = getattr(prepared, "payloads", None)
    if plan is None:
        return {}
    return {
        f"{c.column}_decoded": {"subject": c.subject, "version": c.version, "id": c.schema_id}
        for c in plan.columns
        if c.subject is not None
    }


def _partitioning(
    sink: Any, target: TableTarget, schema: pa.Schema, created: bool
) -> tuple[PartitionField, ...]:
    """The partitioning to write with: a new table's (given or the default), checked against its
    columns; an existing table's own (a different one given is refused)."""
    if not created:
        return tuple(sink.partitioning() or ())
    fields = (
        target.partitioning
        if target.partitioning is not None
        else parse_partitioning(DEFAULT_PARTITIONING)
    )
    for p in fields:
        if p.column not in schema.names:
            raise TargetError(
                f"--partition-by {p.text}: no column {p.column!r}; the columns are "
                f"{', '.join(schema.names)}"
            )
        t = schema.field(p.column).type
        if p.transform != "identity" and not pa.types.is_timestamp(t):
            raise TargetError(f"--partition-by {p.text}: {p.column} is {t}, not a timestamp")
        if p.transform == "identity" and not (
            pa.types.is_string(t)
            or pa.types.is_integer(t)
            or pa.types.is_date(t)
            or pa.types.is_boolean(t)
        ):
            raise TargetError(
                f"--partition-by {p.text}: {p.column} is {t}; partition by a string, integer, "
                "date or boolean column, or a transform of a timestamp"
            )
    return tuple(fields)


def _batches(
    prepared: Any,
    stats: ReadStats,
    planned: set[tuple[str, int]],
    schema: pa.Schema,
    progress: Callable[[ReadStats, int], None] | None,
) -> Iterator[pa.RecordBatch]:
    """The read's batches conformed to ``schema``, without rows of partitions this run did not
    plan (a partition that appeared after its offsets were taken: the next run converts it)."""
    rows = 0
    for rb in prepared.open(stats=stats):
        if not rb.num_rows:
            continue
        rb = _planned_rows(rb, planned)
        if rb is None:
            continue
        rows += rb.num_rows
        yield conform(rb, schema)
        if progress is not None:
            progress(stats, rows)


def _planned_rows(rb: pa.RecordBatch, planned: set[tuple[str, int]]) -> pa.RecordBatch | None:
    topics = rb.column("topic")
    parts = rb.column("partition")
    first = (topics[0].as_py(), parts[0].as_py())
    last = (topics[-1].as_py(), parts[-1].as_py())
    if first == last:
        return rb if first in planned else None
    import pyarrow.compute as pc

    keep = pa.array(
        [(t, p) in planned for t, p in zip(topics.to_pylist(), parts.to_pylist(), strict=True)]
    )
    out = pc.filter(rb, keep)
    return out if out.num_rows else None


__all__ = ["ATTEMPTS", "TableRun", "convert_table", "open_sink"]
