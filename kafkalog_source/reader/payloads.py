"""``valueFormat``/``keyFormat`` at planning: the schemas loaded, each column's reader schema
chosen, and the read wrapped in the payload step (:mod:`..payloads.step`).

Where the schemas come from (``schemaRegistry``): a ``_schemas`` partition or a log directory
holding one (read here with the reader, replayed by :func:`..format.replay.replay`), a
directory of schema files, or a live registry's ``http(s)://`` URL. Without the option, the
``_schemas`` partition of the log directory being read, if there is one.

The reader schema of a column is the chosen version (latest by default) of the subject the
strategy names for the topics read (``<topic>-value`` under ``TopicNameStrategy``). All topics
read must share it (the same schema id), since a column has one type; with ``payloadAs=json``
every value is decoded with its own writer schema into a JSON string instead. Plain JSON
without a schema (``valueFormat=json`` and no subject) gets a type inferred from the first
values of the read (:data:`JSON_SAMPLE` of them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from ..errors import InvalidSchemaError, KafkaLogError, OptionError
from ..layout.discovery import SegmentFile, discover
from ..options import ReadOptions, doc_ref, parse_options
from ..payloads.codec import PayloadDecoder
from ..payloads.step import ColumnPlan, PayloadPlan, PayloadStep, not_payload_topic
from ..planning.request import listing_of
from ..redact import redact_uri
from ..stats import ReadStats

log = logging.getLogger("kafkalog")

# how this module reads: (options, columns) -> batches (reader/api.py's planned read, one thread)
Read = Callable[[ReadOptions, list[str]], Iterator[pa.RecordBatch]]

JSON_SAMPLE = 1000  # values read at planning to infer plain JSON's type
SCHEMAS_TOPIC = "_schemas"


def wants_payloads(opts: ReadOptions) -> bool:
    """Whether these options decode keys or values."""
    return opts.value_format != "raw" or opts.key_format != "raw"


def payload_plan(
    opts: ReadOptions, read: Read, segments: list[SegmentFile] | None = None
) -> PayloadPlan:
    """Load the schemas and choose each decoded column's reader schema (OptionError when a
    subject is missing, topics disagree, or no schemas are found for a format that needs
    them). ``read`` reads the ``_schemas`` partition and, for plain JSON, a sample."""
    if segments is None:
        segments = discover(listing_of(opts))
    topics = sorted({s.topic for s in segments if s.topic is not None})
    data_topics = [t for t in topics if not not_payload_topic(t)]
    if any(s.topic is None for s in segments):
        data_topics.append(None)  # a bare segment file: the subject must be given
    registry, where = load_schemas(opts, segments, read)
    skipped = list(getattr(registry, "skipped", None) or ())
    if skipped:  # the registry logs and skips them; so does the read, and counts them
        first = skipped[0]
        log.warning(
            "%d _schemas record%s in %s could not be read by the registry and %s skipped, as "
            "the registry skips them (mode=%s; FAILFAST refuses them); the first, at offset "
            "%s: %s",
            len(skipped),
            "" if len(skipped) == 1 else "s",
            where,
            "was" if len(skipped) == 1 else "were",
            opts.mode,
            first.offset,
            first.reason,
        )
    columns = []
    for column, fmt in (("key", opts.key_format), ("value", opts.value_format)):
        if fmt != "raw":
            columns.append(_column(opts, column, fmt, registry, where, data_topics, read))
    return PayloadPlan(tuple(columns), opts.mode, len(skipped))


def load_schemas(
    opts: ReadOptions, segments: list[SegmentFile], read: Read
) -> tuple[Any, str | None]:
    """The schemas (a Registry, or a live registry's lookups) and where they came from (for
    messages, redacted), or ``(None, None)`` when there are none. A ``_schemas`` record the
    registry could not read raises under FAILFAST and is skipped otherwise (as the registry
    skips it)."""
    from ..payloads.sources import find_schemas_partition, load_registry, read_schemas_topic

    lenient = opts.mode != "FAILFAST"
    spec = opts.schema_registry
    if spec is None:
        found = sorted(
            {s.path.rsplit("/", 1)[0] for s in segments if s.topic == SCHEMAS_TOPIC}
        ) or find_schemas_partition(opts.paths, opts.store)
        if not found:
            return None, None
        shown = ", ".join(redact_uri(p) for p in found)
        topic = _topic_reader(read, opts.mode)
        return read_schemas_topic(found, topic, opts.store, lenient=lenient), shown
    live = spec.lower().startswith(("http://", "https://"))
    if opts.registry_conf and not live:
        raise OptionError(
            f"schemaRegistry.{opts.registry_conf[0][0]} configures a live registry's client, but "
            f"schemaRegistry is {redact_uri(spec)}, not an http(s):// URL",
            doc=doc_ref("schemaRegistry"),
        )
    registry = load_registry(
        spec,
        opts.store,
        read=_topic_reader(read, opts.mode),
        lenient=lenient,
        config=dict(opts.registry_conf) if live else None,
    )
    return registry, redact_uri(spec)


TOPIC_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("offset", pa.int64()),
        ("segmentPath", pa.string()),  # where a bad record lies, for FAILFAST's error
        ("batchPosition", pa.int64()),
    ]
)


def _topic_reader(read: Read, mode: str) -> Any:
    """:data:`..payloads.sources.ReadTopic` over this layer's read, in the read's ``mode`` (a
    damaged ``_schemas`` batch fails a FAILFAST read, and is skipped, logged and counted in
    the others; values whose ids it held then go through ``mode`` as ids not found)."""

    def read_topic(partitions: list[str], options: dict[str, Any]) -> pa.Table:
        # PERMISSIVE's row for a damaged batch is not a registry record: drop it (counted)
        kept = "DROPMALFORMED" if mode == "PERMISSIVE" else mode
        opts = parse_options({**options, "mode": kept, "includeMetadata": True}, paths=partitions)
        batches = list(read(opts, list(TOPIC_SCHEMA.names)))
        return pa.Table.from_batches(batches, schema=TOPIC_SCHEMA)

    return read_topic


def _subject(opts: ReadOptions, column: str, topic: str | None, registry: Any) -> str:
    """The subject naming ``topic``'s reader schema for ``column``."""
    given = opts.value_subject if column == "value" else opts.key_subject
    if given:
        return given
    option = "valueSubject" if column == "value" else "keySubject"
    strategy = opts.subject_name_strategy
    if topic is None:
        raise OptionError(
            f"{column}s of a segment file outside a partition directory have no topic to name "
            f"their subject: give it with {option}",
            doc=doc_ref(option),
        )
    if strategy == "TopicNameStrategy":
        return f"{topic}-{column}"
    subjects = registry.subjects() if registry is not None else []
    plain = [s for s in subjects if not s.endswith(("-key", "-value"))]
    if strategy == "TopicRecordNameStrategy":
        candidates = [s for s in plain if s.startswith(f"{topic}-")]
    else:
        candidates = [s for s in plain if "-" not in s or "." in s]
    if len(candidates) == 1:
        return candidates[0]
    raise OptionError(
        f"subjectNameStrategy={strategy} names the subject after the record, which only the "
        f"data knows: give the {column} subject with {option} (the registry has "
        f"{', '.join(candidates) or 'no such subject'})",
        doc=doc_ref(option),
    )


def _column(
    opts: ReadOptions,
    column: str,
    fmt: str,
    registry: Any,
    where: str | None,
    topics: list[str | None],
    read: Read,
) -> ColumnPlan:
    """Choose ``column``'s reader schema and build its decoder."""
    as_json = opts.payload_as == "json"
    version = opts.value_schema_version if column == "value" else opts.key_schema_version
    message = opts.value_message if column == "value" else opts.key_message
    option = "valueFormat" if column == "value" else "keyFormat"
    if registry is None:
        if fmt == "json":
            return ColumnPlan(column, fmt, _plain_json(opts, column, as_json, read))
        raise OptionError(
            f"{option}={fmt} needs the schemas the values name, and none were found: no "
            "_schemas partition in the log directory read; give schemaRegistry (a _schemas "
            "partition, a log directory, a directory of schema files or a registry URL)",
            doc=doc_ref("schemaRegistry"),
        )
    if as_json:  # every value with its own writer schema: no reader schema to choose
        return ColumnPlan(column, fmt, _decoder(fmt, registry, None, True))
    chosen: dict[str, list[str]] = {}  # subject -> topics
    readers: dict[int, tuple[str, int, Any]] = {}
    missing = []
    for topic in topics:
        subject = _subject(opts, column, topic, registry)
        chosen.setdefault(subject, []).append(str(topic))
    for subject in chosen:
        try:
            number, schema = registry.version(subject, version)
        except KeyError:
            missing.append(subject)
            continue
        readers.setdefault(schema.id, (subject, number, schema))
    if missing:
        if fmt == "json" and not readers:
            return ColumnPlan(column, fmt, _plain_json(opts, column, as_json, read))
        wanted = f"version {version} of " if version is not None else ""
        raise OptionError(
            f"{option}={fmt}: no {wanted}subject {', '.join(map(repr, missing))} in the "
            f"schemas at {where} (subjects there: {', '.join(registry.subjects()) or 'none'}); "
            "name the subject with valueSubject/keySubject, read only the topics meant (their "
            "partition directories as paths), or set payloadAs=json",
            doc=doc_ref("subjectNameStrategy"),
        )
    if len(readers) > 1:
        listed = "; ".join(
            f"{s} version {v} (id {i}) for topics {', '.join(chosen[s])}"
            for i, (s, v, _) in readers.items()
        )
        raise OptionError(
            f"{option}={fmt}: the topics read have different reader schemas ({listed}), and a "
            "column has one type: read one subject's topics at a time, name one subject with "
            "valueSubject/keySubject, or set payloadAs=json",
            doc=doc_ref("payloadAs"),
        )
    if not readers:  # no topic at all
        raise OptionError(f"{option}={fmt}: nothing to choose a reader schema for")
    sid, (subject, number, schema) = next(iter(readers.items()))
    kind = {"AVRO": "avro", "PROTOBUF": "protobuf", "JSON": "json"}.get(schema.schema_type)
    if fmt != "registry" and kind != fmt:
        raise OptionError(
            f"{option}={fmt}, but subject {subject} version {number} (schema id {sid}) is a "
            f"{schema.schema_type} schema: set {option}={kind or 'registry'}",
            doc=doc_ref(option),
        )
    try:
        decoder = _decoder(kind or fmt, registry, schema, False, message)
    except OptionError:
        raise
    except (KafkaLogError, KeyError) as e:  # the reader schema does not validate or compile
        err = InvalidSchemaError(
            f"{option}={kind or fmt}: the reader schema, subject {subject} version {number} "
            f"(schema id {sid}), is invalid: {e}; choose another version with "
            f"{'valueSchemaVersion' if column == 'value' else 'keySchemaVersion'}, or read "
            "every value with its own schema with payloadAs=json"
        )
        err.subject, err.version, err.schema_id = subject, number, sid
        raise err from None
    return ColumnPlan(column, kind or fmt, decoder, subject, number, sid)


def _decoder(
    fmt: str, registry: Any, reader: Any, as_json: bool, message: str | None = None
) -> PayloadDecoder:
    """The format's decoder."""
    if fmt == "avro":
        from ..payloads.avro import AvroDecoder

        return AvroDecoder(registry, reader, as_json=as_json)
    if fmt == "protobuf":
        from ..payloads.protobuf import ProtobufDecoder

        return ProtobufDecoder(registry, reader, as_json=as_json, message_name=message)
    if fmt == "json":
        from ..payloads.jsonschema import JsonDecoder

        return JsonDecoder(registry, reader, as_json=as_json)
    if fmt == "registry":  # payloadAs=json without a reader: every value by its own schema
        from ..payloads.mixed import MixedDecoder

        return MixedDecoder(registry)
    raise OptionError(f"unknown payload format {fmt!r}")


def _plain_json(opts: ReadOptions, column: str, as_json: bool, read: Read) -> PayloadDecoder:
    """Plain JSON without a schema: its type inferred from the first values read."""
    from ..payloads.jsonschema import JsonDecoder, infer_json_type

    if as_json:
        return JsonDecoder(None, None, as_json=True)
    samples = list(_sample(opts, column, JSON_SAMPLE, read))
    return JsonDecoder(None, None, as_json=False, inferred=infer_json_type(samples))


def _sample(opts: ReadOptions, column: str, most: int, read: Read) -> Iterator[bytes]:
    """Up to ``most`` non-null ``column`` values of payload topics, in log order (damaged
    batches skipped: a sample; the read itself reports them)."""
    raw = opts.replace(value_format="raw", key_format="raw", mode="DROPMALFORMED")
    seen = 0
    for batch in read(raw, [column, "topic"]):
        topics = batch.column(1).to_pylist()
        for value, topic in zip(batch.column(0).to_pylist(), topics, strict=True):
            if value is None or not_payload_topic(topic):
                continue
            yield value
            seen += 1
            if seen >= most:
                return


def with_payloads(
    batches: Iterator[pa.RecordBatch], plan: PayloadPlan, stats: ReadStats, names: list[str]
) -> Iterator[pa.RecordBatch]:
    """Apply the payload step to raw batches and keep the output columns ``names``."""
    step = PayloadStep(plan, stats)
    for raw in batches:
        out = step.apply(raw)
        yield out.select(names)
