"""The Confluent Schema Registry's formats: the wire-format prefix of a serialized key or value,
and the records of its storage topic (``_schemas``). Facts only, no I/O.
"""

from __future__ import annotations

WIRE_MAGIC = 0  # the first byte of a value in the wire format
WIRE_PREFIX = 5  # the magic byte and the 4-byte big-endian schema id
