"""A small stand-in for format/registry.py's Registry (by_id, version, subjects, referenced),
filled from a confluent-kafka mock registry client, for the payload decoders' tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class SchemaReference:
    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class RegisteredSchema:
    id: int
    schema_type: str
    text: str
    references: tuple[SchemaReference, ...] = ()


class FakeRegistry:
    """Schemas by id and by (subject, version); ``referenced`` walks references transitively."""

    def __init__(self) -> None:
        self._by_id: dict[int, RegisteredSchema] = {}
        self._versions: dict[str, dict[int, int]] = {}

    def add(self, subject: str, version: int, schema: RegisteredSchema) -> RegisteredSchema:
        self._by_id[schema.id] = schema
        self._versions.setdefault(subject, {})[version] = schema.id
        return schema

    def by_id(self, schema_id: int) -> RegisteredSchema:
        return self._by_id[schema_id]

    def version(self, subject: str, version: int | None = None) -> tuple[int, RegisteredSchema]:
        versions = self._versions[subject]
        v = max(versions) if version is None else version
        return v, self._by_id[versions[v]]

    def subjects(self) -> list[str]:
        return sorted(self._versions)

    def referenced(self, schema: RegisteredSchema) -> dict[str, RegisteredSchema]:
        found: dict[str, RegisteredSchema] = {}

        def walk(s: RegisteredSchema) -> None:
            for ref in s.references:
                if ref.name not in found:
                    found[ref.name] = self.version(ref.subject, ref.version)[1]
                    walk(found[ref.name])

        walk(schema)
        return found


def from_mock(client, text: Callable[[str, str], str] | None = None) -> FakeRegistry:
    """Every subject and version of a confluent-kafka mock client. ``text(subject, stored)``
    may replace the stored text (the Python Protobuf serializer stores a base64 descriptor;
    a real registry stores ``.proto`` text)."""
    reg = FakeRegistry()
    for subject in client.get_subjects():
        for v in client.get_versions(subject):
            rs = client.get_version(subject, v)
            s = rs.schema
            refs = tuple(
                SchemaReference(r.name, r.subject, r.version) for r in (s.references or [])
            )
            body = s.schema_str if text is None else text(subject, s.schema_str)
            reg.add(
                subject,
                v,
                RegisteredSchema(rs.schema_id, s.schema_type or "AVRO", body, refs),
            )
    return reg
