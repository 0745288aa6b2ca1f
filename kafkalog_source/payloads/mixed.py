"""``valueFormat=registry`` with ``payloadAs=json`` and no reader schema: every value decoded with
whatever format its own schema id names (Avro, Protobuf or JSON Schema), as a JSON string."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from .codec import NO_PREFIX, Decoded, PayloadDecoder, PayloadError, registered, split_wire


class MixedDecoder(PayloadDecoder):
    """Dispatches each value to the JSON-output decoder of its schema's format."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry
        self.type = pa.string()
        self._decoders: dict[str, PayloadDecoder] = {}

    def _decoder(self, schema_type: str) -> PayloadDecoder:
        if schema_type not in self._decoders:
            if schema_type == "PROTOBUF":
                from .protobuf import ProtobufDecoder

                self._decoders[schema_type] = ProtobufDecoder(self.registry, None, as_json=True)
            elif schema_type == "JSON":
                from .jsonschema import JsonDecoder

                self._decoders[schema_type] = JsonDecoder(self.registry, None, as_json=True)
            else:
                from .avro import AvroDecoder

                self._decoders[schema_type] = AvroDecoder(self.registry, None, as_json=True)
        return self._decoders[schema_type]

    def decode(self, data: pa.Array) -> Decoded:
        """Decode each value with its own schema's format (see the module docstring)."""
        ids, has_prefix, is_null = split_wire(data)
        n = len(ids)
        out: list[str | None] = [None] * n
        errors: list[PayloadError] = []
        groups: dict[str, list[int]] = {}
        for row in range(n):
            if is_null[row]:
                continue
            if not has_prefix[row]:
                errors.append(PayloadError(row, None, NO_PREFIX))
                continue
            schema, why = registered(self.registry, int(ids[row]))
            if why is not None:
                errors.append(PayloadError(row, int(ids[row]), why))
                continue
            groups.setdefault((schema.schema_type or "AVRO").upper(), []).append(row)
        for kind, rows in groups.items():
            sub = self._decoder(kind).decode(data.take(pa.array(rows, pa.int64())))
            values = sub.values.to_pylist()
            for i, row in enumerate(rows):
                out[row] = values[i]
            errors.extend(PayloadError(rows[e.row], e.schema_id, e.reason) for e in sub.errors)
        errors.sort(key=lambda e: e.row)
        schema_ids = pa.array(np.where(has_prefix, ids, 0).astype(np.int32), mask=~has_prefix)
        return Decoded(schema_ids, pa.array(out, pa.string()), errors)
