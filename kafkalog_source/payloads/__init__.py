"""Payloads: record keys and values in the Schema Registry wire format (Avro, Protobuf, JSON
Schema) or plain JSON, decoded with schemas the archive itself holds (its ``_schemas`` topic),
a directory of schema files, or a live registry.

This layer sits above :mod:`..reader` (a ``_schemas`` partition is read with the reader) and
below the front ends. :mod:`.codec` is the contract every format implements.
"""
