"""The payload step: raw record batches in, the same batches with decoded keys or values out.

A :class:`PayloadPlan` is made once, when the read is planned (the reader layer loads the schemas
and chooses each column's reader schema, see :mod:`..reader.payloads`); it pickles, so Spark
ships it to every task. :class:`PayloadStep` applies it to each raw batch: for every decoded
column (``key`` or ``value``) it adds ``<column>_schema_id`` (int), ``<column>_decoded`` (the
reader schema's type, or a JSON string) and ``<column>_error``, and applies ``mode`` to the
values that did not decode:

* ``FAILFAST`` raises :class:`~..errors.UndecodablePayloadError` naming the file, the byte of the
  record's batch, the offset, the schema id and the reason;
* ``DROPMALFORMED`` drops the row, counts it in ``ReadStats.undecodable_payloads`` and records an
  event of kind ``"undecodable payload"``;
* ``PERMISSIVE`` keeps the row (raw ``key``/``value`` included) with the reason in
  ``<column>_error`` and a null ``<column>_decoded``, counted the same way.

A null key or value (a tombstone) decodes to null without an error. Records of Kafka's and the
registry's own topics (``_schemas``, names starting with ``__``) are not payloads: their
decoded columns are null and nothing is counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UndecodablePayloadError
from ..stats import ReadEvent, ReadStats
from .codec import PayloadDecoder

# raw columns the step reads besides the decoded column itself
LOCATION_COLUMNS = ("topic", "offset", "segmentPath", "batchPosition")


def not_payload_topic(topic: str | None) -> bool:
    """Topics whose keys and values are never payloads: the registry's storage topic and
    Kafka's internal topics (``__consumer_offsets``, ``__cluster_metadata``, ...)."""
    return topic is not None and (topic == "_schemas" or topic.startswith("__"))


@dataclass(frozen=True)
class ColumnPlan:
    """How one column (``key`` or ``value``) is decoded: the format, the decoder (which holds
    the reader schema and the registry) and which subject and version type it."""

    column: str
    fmt: str
    decoder: PayloadDecoder
    subject: str | None = None
    version: int | None = None
    schema_id: int | None = None

    @property
    def fields(self) -> tuple[pa.Field, pa.Field, pa.Field]:
        """The three columns this adds."""
        return (
            pa.field(f"{self.column}_schema_id", pa.int32()),
            pa.field(f"{self.column}_decoded", self.decoder.type),
            pa.field(f"{self.column}_error", pa.string()),
        )

    def describe(self) -> str:
        """One line for plans and logs: the format and where the reader schema comes from."""
        if self.subject is None:
            return f"{self.column}: {self.fmt} (no reader schema)"
        return (
            f"{self.column}: {self.fmt}, subject {self.subject} version {self.version} "
            f"(schema id {self.schema_id})"
        )


@dataclass(frozen=True)
class PayloadPlan:
    """Every decoded column of a read, and the read's ``mode``."""

    columns: tuple[ColumnPlan, ...]
    mode: str
    # _schemas records the registry could not read, skipped as it skips them (not FAILFAST)
    skipped_schema_records: int = 0

    @property
    def fields(self) -> list[pa.Field]:
        """The columns the step adds, in order (key's before value's)."""
        return [f for c in self.columns for f in c.fields]

    @property
    def raw_columns(self) -> tuple[str, ...]:
        """The raw columns the step needs from the read."""
        return tuple(c.column for c in self.columns) + LOCATION_COLUMNS


class PayloadStep:
    """Applies a :class:`PayloadPlan` to raw record batches (one thread at a time)."""

    def __init__(self, plan: PayloadPlan, stats: ReadStats) -> None:
        self.plan = plan
        self.stats = stats

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` with the decoded columns appended (rows dropped under DROPMALFORMED)."""
        n = batch.num_rows
        names = batch.schema.names
        topics = batch.column(names.index("topic"))
        skip = _skipped_rows(topics)
        drop = np.zeros(n, dtype=bool)
        arrays, fields = list(batch.columns), list(batch.schema)
        for cp in self.plan.columns:
            data = batch.column(names.index(cp.column))
            if skip is not None:
                data = pc.if_else(pa.array(skip), pa.nulls(n, data.type), data)
            decoded = cp.decoder.decode(data)
            errors: list[str | None] | None = None
            for e in decoded.errors:
                self._bad(batch, cp, e.row, e.schema_id, e.reason)
                if self.plan.mode == "DROPMALFORMED":
                    drop[e.row] = True
                else:
                    if errors is None:
                        errors = [None] * n
                    errors[e.row] = e.reason
            ids = decoded.schema_ids
            if not pa.types.is_int32(ids.type):
                ids = ids.cast(pa.int32())
            err = pa.nulls(n, pa.string()) if errors is None else pa.array(errors, pa.string())
            arrays += [ids, decoded.values, err]
            fields += list(cp.fields)
        out = pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))
        if drop.any():
            out = out.filter(pa.array(~drop))
        return out

    def _bad(
        self, batch: pa.RecordBatch, cp: ColumnPlan, row: int, schema_id: int | None, why: str
    ) -> None:
        """Raise (FAILFAST) or count and record one value that did not decode."""
        names = batch.schema.names
        path = batch.column(names.index("segmentPath"))[row].as_py()
        pos = batch.column(names.index("batchPosition"))[row].as_py()
        offset = batch.column(names.index("offset"))[row].as_py()
        sid = "none" if schema_id is None else str(schema_id)
        reason = (
            f"the {cp.column} at offset {offset} (in the batch at this byte) does not decode "
            f"as {cp.fmt} (schema id {sid}): {why}"
        )
        if self.plan.mode == "FAILFAST":
            err = UndecodablePayloadError(
                reason + " (mode=DROPMALFORMED drops such records, mode=PERMISSIVE keeps them "
                f"with their bytes and the reason in {cp.column}_error)",
                path,
                pos,
            )
            err.schema_id = schema_id
            err.offset = offset
            raise err
        self.stats.undecodable_payloads += 1
        self.stats.record(
            ReadEvent(
                "undecodable payload", reason, path, pos, None, 0, f"{path}: byte {pos}: {reason}"
            )
        )


def _skipped_rows(topics: pa.Array) -> np.ndarray | None:
    """Rows of topics that are not payloads (see :func:`not_payload_topic`), or None."""
    if len(topics) == 0:
        return None
    uniques = pc.unique(topics).to_pylist()
    bad = [t for t in uniques if not_payload_topic(t)]
    if not bad:
        return None
    return np.asarray(pc.is_in(topics, pa.array(bad, topics.type)).fill_null(False))
