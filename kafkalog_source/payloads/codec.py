"""The contract of a payload decoder, and the Schema Registry wire format's prefix.

A :class:`PayloadDecoder` turns one column of record bytes (keys or values, an Arrow binary
array) into a :class:`Decoded`: the schema id each value names, the decoded values (one Arrow
array of the decoder's fixed ``type``) and the rows that did not decode. It never raises for bad
data: the caller applies ``mode`` to :attr:`Decoded.errors`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from ..format.registry import WIRE_MAGIC, WIRE_PREFIX

NO_PREFIX = "no schema registry wire-format prefix (magic byte 0 and a 4-byte schema id)"


def registered(registry: Any, schema_id: int, kind: str | None = None) -> tuple[Any, str | None]:
    """The schema ``registry`` holds under ``schema_id``, and None; or None and why a value
    naming it does not decode: the id was never registered, or (``kind`` given: ``AVRO``,
    ``PROTOBUF``, ``JSON``) it is a schema of another format."""
    try:
        schema = registry.by_id(schema_id)
    except KeyError:
        return None, f"schema id {schema_id} is not in the registry"
    found = (schema.schema_type or "AVRO").upper()
    if kind is not None and found != kind:
        return None, f"schema id {schema_id} is a {found} schema, not {kind}"
    return schema, None


def printable(text: str) -> str:
    """``text`` as valid Unicode: a lone surrogate (which a schema's JSON may hold, and no
    string column can) as its ``\\udXXX`` escape."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass(frozen=True)
class PayloadError:
    """One value that did not decode: its row in the batch, the schema id it names (None: no
    wire-format prefix or not read that far) and why (made :func:`printable`)."""

    row: int
    schema_id: int | None
    reason: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", printable(self.reason))


@dataclass
class Decoded:
    """What a decoder made of one column: ``schema_ids`` (int32, null where a value has no
    prefix or is null), ``values`` (the decoder's type; null where the input is null or the
    value did not decode) and ``errors`` (rows that did not decode, in row order)."""

    schema_ids: pa.Array
    values: pa.Array
    errors: list[PayloadError] = field(default_factory=list)


class PayloadDecoder(ABC):
    """Decodes one column (keys or values) into one Arrow type fixed when the read is planned.

    Implementations pickle (Spark ships them to tasks) and are used from one thread at a time.
    """

    type: pa.DataType
    # the constructor's arguments: all that a decoder pickles when it names them; the rest
    # (compiled schemas, caches) is rebuilt by ``_setup`` where it is unpickled
    _ARGS: tuple[str, ...] = ()

    def __getstate__(self) -> dict[str, Any]:
        if not self._ARGS:
            return self.__dict__.copy()
        return {name: getattr(self, name) for name in self._ARGS}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._ARGS:
            self._setup()

    def _setup(self) -> None:  # noqa: B027 (optional: decoders without _ARGS need none)
        """Build what the constructor's arguments imply (after ``__init__`` and unpickling)."""

    @abstractmethod
    def decode(self, data: pa.Array) -> Decoded:
        """Decode ``data`` (binary or large_binary; nulls stay null without an error)."""


def held_by(registry: Any, schema_id: int | None) -> str:
    """`` (subject s version v)`` naming where ``schema_id`` is registered, for messages, when
    the registry can say without a request (an archive's or a schema directory's registry has
    ``holders``; a live registry is not asked); "" otherwise."""
    holders = getattr(registry, "holders", None)
    if schema_id is None or not callable(holders):
        return ""
    found = holders(schema_id)
    return f" (subject {found[0][0]} version {found[0][1]})" if found else ""


def split_wire(data: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The wire-format prefix of every value: ``(ids, has_prefix, is_null)``.

    ``ids`` is int64 (the big-endian 4-byte schema id after the zero magic byte; -1 where a
    value is null, shorter than 5 bytes or does not start with the magic byte). The payload of
    row ``i`` starts :data:`WIRE_PREFIX` bytes into its value (Protobuf's message indexes follow
    the prefix and are the Protobuf decoder's to read).
    """
    n = len(data)
    if isinstance(data, pa.ChunkedArray):
        data = data.combine_chunks()
    if pa.types.is_large_binary(data.type):
        odt = np.int64
    else:
        data = data.cast(pa.binary()) if not pa.types.is_binary(data.type) else data
        odt = np.int32
    bufs = data.buffers()
    is_null = np.asarray(data.is_null(), dtype=bool) if data.null_count else np.zeros(n, bool)
    ids = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return ids, np.zeros(0, bool), is_null
    offsets = np.frombuffer(bufs[1], dtype=odt, count=n + 1 + data.offset)[data.offset :]
    raw = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1].astype(np.int64)
    lengths = offsets[1:].astype(np.int64) - starts
    ok = (~is_null) & (lengths >= WIRE_PREFIX)
    idx = starts[ok]
    magic_ok = raw[idx] == WIRE_MAGIC
    b = [raw[idx + k].astype(np.int64) for k in range(1, 5)]
    value = (b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]
    value = np.where(value >= 1 << 31, value - (1 << 32), value)
    sub = np.full(idx.shape, -1, dtype=np.int64)
    sub[magic_ok] = value[magic_ok]
    ids[ok] = sub
    has_prefix = np.zeros(n, bool)
    has_prefix[np.flatnonzero(ok)[magic_ok]] = True
    return ids, has_prefix, is_null
