"""The option table, first part: what each record becomes (checksums, columns, modes,
transactions, ``decode=``, payloads, batch sizes). :data:`~.table.OPTION_SPECS` is the whole
table, in the reference's order."""

from __future__ import annotations

from .spec import ARROW, BATCH, SIZE_TEXT, OptionSpec, choices_text
from .values import (
    DECODES,
    ISOLATION_LEVELS,
    MODES,
    PAYLOAD_AS,
    PAYLOAD_FORMATS,
    REDPANDA_MODES,
    SUBJECT_STRATEGIES,
    MiB,
    at_least,
    boolean,
    max_batch_bytes,
    one_of,
    schema_version,
    subject_strategy,
    text,
)

DECODING: tuple[OptionSpec, ...] = (
    OptionSpec(
        "verifyChecksums",
        "verify_checksums",
        boolean,
        "boolean",
        "Check every v2 batch's CRC-32C and every v0/v1 message's CRC-32 (inner messages "
        "included).",
        "A batch whose checksum does not match is corrupt and goes through `mode`. `false` reads "
        "segments whose checksums are known to be wrong, such as the control batches that "
        "librdkafka's mock cluster writes with CRC 0 (see "
        "[Transactions](../guides/transactions.md)).",
        default=True,
    ),
    OptionSpec(
        "includeHeaders",
        "include_headers",
        boolean,
        "boolean",
        "Include the `headers` column.",
        "`false` drops the column, and the decoder never copies header data. Keep it in a "
        "`PERMISSIVE` read: the `kafkalog.error` header is what marks a row made of a "
        "malformed batch.",
        default=True,
    ),
    OptionSpec(
        "includeMetadata",
        "include_metadata",
        boolean,
        "boolean",
        "Add the producer, batch and file columns.",
        "`producerId`, `producerEpoch`, `sequence`, `isTransactional`, "
        "`partitionLeaderEpoch`, `magic`, `codec`, `segmentPath`, `batchPosition`, "
        "`segmentBaseOffset`: see the [schema](schema.md#metadata-columns).",
        default=False,
    ),
    OptionSpec(
        "includeControlRecords",
        "include_control_records",
        boolean,
        "boolean",
        "Return control records, with the `control` column.",
        "Control records (transaction markers, KRaft control records) come back as rows with "
        "null key and value and a `control` struct (`type`, `version`, `coordinatorEpoch`); "
        "`control` is null for data rows. They are counted apart from the data records: "
        "`ReadStats.control_records`, not `records` (rows = records + control records), and "
        "the summary line says `N records (M control records)`. Under `read_committed` the "
        "markers of aborted transactions are still returned; only data is filtered. With "
        "`decode`, transaction "
        "markers are rows (`AbortMarker`, `CommitMarker`) only with this option.",
        default=False,
    ),
    OptionSpec(
        "isolationLevel",
        "isolation_level",
        one_of(ISOLATION_LEVELS),
        choices_text(ISOLATION_LEVELS),
        "`read_committed` drops aborted and undecided transactions.",
        "`read_uncommitted` returns every data record, including aborted and still-open "
        "transactions. `read_committed` returns what a Kafka `read_committed` consumer would "
        "see, with *undecided* transactions (no marker in the data) excluded as well; see "
        "[Transactions](../guides/transactions.md). Spark's Kafka-source name "
        "`kafka.isolation.level` is the same option.",
        aliases=("kafka.isolation.level",),
        default="read_uncommitted",
    ),
    OptionSpec(
        "mode",
        "mode",
        one_of(MODES, upper=True),
        choices_text(MODES),
        "What a corrupt batch does: fail the read, be skipped, or become one row.",
        "`FAILFAST` raises with the file, byte, base offset and reason; `DROPMALFORMED` skips "
        "the batch, logs and counts it; `PERMISSIVE` returns it as one row marked by a "
        "`kafkalog.error` header. With `decode`, a record that does not decode goes through "
        "`mode` too. See [Bad data, modes and what is skipped](../guides/bad-data.md).",
        default="FAILFAST",
    ),
    OptionSpec(
        "decode",
        "decode",
        one_of(DECODES),
        choices_text(DECODES),
        "Read Kafka's internal topics as typed tables.",
        "`raw` is the [schema](schema.md) of every topic. `consumer_offsets`, "
        "`transaction_state`, `cluster_metadata`, `remote_log_metadata` and "
        "`share_group_state` decode that internal topic's records into typed columns; `auto` "
        "chooses by topic name (other topics raw), with one schema for all. Batch reads only: "
        "`readStream` refuses it. See [Kafka's internal topics](../guides/internal-topics.md) "
        "and [their schemas](schema.md#decode-interpretations).",
        applies=(BATCH, ARROW),
        default="raw",
    ),
    OptionSpec(
        "includeSnapshots",
        "include_snapshots",
        boolean,
        "boolean",
        "Also read the KRaft snapshots (`<end offset>-<epoch>.checkpoint`) of the partition "
        "directories read.",
        "A KRaft snapshot is a record-batch file in `__cluster_metadata-0`: a `SnapshotHeader` "
        "control record, the metadata records of the cluster's whole state below the "
        "snapshot's end offset, a `SnapshotFooter`. Discovery skips them unless this is set; "
        "a snapshot named as a path is always read. Each snapshot is read as a log of its own "
        "(its records' offsets start at 0, they are not the metadata log's offsets): with "
        "`decode=cluster_metadata` or `auto` its rows carry `snapshot_end_offset` and "
        "`snapshot_end_epoch` (null for the log's rows); in a raw read, `segmentPath` "
        "(`includeMetadata`) tells them apart. Batch reads only: `readStream` refuses it. See "
        "[Kafka's internal topics](../guides/internal-topics.md#kraft-snapshots).",
        applies=(BATCH, ARROW),
        default=False,
    ),
    OptionSpec(
        "redpanda",
        "redpanda",
        one_of(REDPANDA_MODES),
        choices_text(REDPANDA_MODES),
        "How Redpanda segments read: as Kafka clients see them, or as raw batches.",
        "`kafka` reads the user topics (namespace `kafka`) of a Redpanda data directory or "
        "tiered-storage bucket as a Kafka consumer sees them: the records of `raft_data` "
        "batches at their Kafka offsets (raft offsets translated); Redpanda's own namespaces "
        "(`kafka_internal`, `redpanda`) are skipped and counted "
        "(`ReadStats.redpanda_internal_partitions`). `raw` reads every namespace, and every "
        "batch of every type, at its raft offset, each record a row; the `redpandaBatchType` "
        "column (with `includeMetadata`) names the batch type. See "
        "[Redpanda archives](../guides/redpanda.md).",
        cli=("verify", "dump"),
        default="kafka",
    ),
    OptionSpec(
        "valueFormat",
        "value_format",
        one_of(PAYLOAD_FORMATS),
        choices_text(PAYLOAD_FORMATS),
        "Decode record values: Avro, Protobuf or JSON Schema in the Schema Registry wire "
        "format, or plain JSON.",
        "`raw` (the default) leaves `value` as bytes. The others add `value_schema_id`, "
        "`value_decoded` (a struct typed from the subject's reader schema, or a JSON string with "
        "`payloadAs=json`) and `value_error`. `avro`, `protobuf` and `json` expect that format "
        "(`json` also takes plain JSON text without the wire-format prefix); `registry` takes "
        "whatever format the reader schema has. Schemas come from `schemaRegistry`. Batch reads "
        "only. See [Payload decoding](../guides/payload-decoding.md).",
        applies=(BATCH, ARROW),
        default="raw",
    ),
    OptionSpec(
        "keyFormat",
        "key_format",
        one_of(PAYLOAD_FORMATS),
        choices_text(PAYLOAD_FORMATS),
        "Decode record keys, as `valueFormat` does values.",
        "Adds `key_schema_id`, `key_decoded` and `key_error`; the subject is `<topic>-key` "
        "under the default strategy.",
        applies=(BATCH, ARROW),
        default="raw",
    ),
    OptionSpec(
        "schemaRegistry",
        "schema_registry",
        text,
        "a path or URI, or an `http(s)://` URL",
        "Where the schemas of `valueFormat`/`keyFormat` come from.",
        "A `_schemas` partition directory or a log directory holding one (local or remote, "
        "replayed as the registry replays its topic: versions, soft and hard deletes, "
        "references), a directory of schema files, or a live registry's URL (through "
        "confluent-kafka's client; its settings as `schemaRegistry.<setting>` options, e.g. "
        "`schemaRegistry.basic.auth.user.info`, masked in messages). By default, the `_schemas` "
        "partition of the log directory being read, if there is one.",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "subjectNameStrategy",
        "subject_name_strategy",
        subject_strategy,
        ", ".join(f"`{x}`" for x in SUBJECT_STRATEGIES),
        "How a topic's subject is named, as the serializers' `subject.name.strategy`.",
        "`TopicNameStrategy` (`<topic>-value`, `<topic>-key`), `RecordNameStrategy` (the "
        "record's full name) or `TopicRecordNameStrategy` (`<topic>-<full name>`). The record "
        "strategies need the record's name: give the subject with `valueSubject`/`keySubject`, "
        "or let the only subject of that form in the registry be taken.",
        applies=(BATCH, ARROW),
        default="TopicNameStrategy",
    ),
    OptionSpec(
        "valueSubject",
        "value_subject",
        text,
        "string",
        "The subject whose schema types `value_decoded` (instead of the strategy's).",
        "",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "keySubject",
        "key_subject",
        text,
        "string",
        "The subject whose schema types `key_decoded` (instead of the strategy's).",
        "",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "valueSchemaVersion",
        "value_schema_version",
        schema_version,
        "`latest` or an integer ≥ 1",
        "The version of the value subject that types `value_decoded` (the reader schema).",
        "Values written with other versions are resolved into it (Avro's schema resolution; "
        "Protobuf and JSON by field). Default `latest`: the newest version not deleted.",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "keySchemaVersion",
        "key_schema_version",
        schema_version,
        "`latest` or an integer ≥ 1",
        "The version of the key subject that types `key_decoded`.",
        "",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "valueMessage",
        "value_message",
        text,
        "string",
        "Protobuf: the message that types `value_decoded` (default: the schema's first).",
        "A full name (`shop.orders.Order`) or one relative to the file's package "
        "(`Order.LineItem`). Values of another message type of the same file do not fit the "
        "struct and go through `mode`; `payloadAs=json` decodes every message type.",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "keyMessage",
        "key_message",
        text,
        "string",
        "Protobuf: the message that types `key_decoded`.",
        "",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "payloadAs",
        "payload_as",
        one_of(PAYLOAD_AS),
        choices_text(PAYLOAD_AS),
        "`json` makes `value_decoded`/`key_decoded` JSON strings instead of structs.",
        "For topics whose schemas are not compatible (or several topics with different "
        "subjects): each value is decoded with its own writer schema into a JSON document.",
        applies=(BATCH, ARROW),
        default="struct",
    ),
    OptionSpec(
        "compiledCodecs",
        "compiled_codecs",
        boolean,
        "boolean",
        "`false` decompresses every lz4, snappy and zstd payload through the library path.",
        "By default kafkalog's compiled path decompresses lz4, snappy and zstd batches, many per "
        "call, straight into one buffer (liblz4's and libzstd's own decoders where the lz4 and "
        "zstandard packages export them). `false` uses the library path, one Python call per "
        "batch, instead (slower): an off switch while a decoder bug is "
        "investigated. `KAFKALOG_LIBRARY_CODECS=1` in the environment of the processes that "
        "decode (the executors: `spark.executorEnv.KAFKALOG_LIBRARY_CODECS=1`) does the same "
        "for every read.",
        default=True,
        cli=("warmup",),
    ),
    OptionSpec(
        "maxBatchBytes",
        "max_batch_bytes",
        max_batch_bytes,
        SIZE_TEXT + ", at most `1g`",
        "The largest batch (or v0/v1 message), as stored and once decompressed, that is accepted.",
        "A cap that makes decompression bombs fail cleanly. A larger batch is a malformed "
        "batch, which `mode` handles (it is never read, so a `PERMISSIVE` row for it has an "
        "empty `value`). At most `1g`: Arrow's `binary` columns (the type Spark takes) hold "
        "under 2 GiB per record batch.",
        default=64 * MiB,
        cli=("verify", "dump"),
    ),
    OptionSpec(
        "recordsPerBatch",
        "records_per_batch",
        at_least(1),
        "integer ≥ 1",
        "Rows per Arrow record batch handed on.",
        "A record batch is cut at the first Kafka batch boundary at or after this many rows, "
        "or at 16 MiB of key, value and header data (a Kafka batch, or a legacy compressed "
        "wrapper, is never split across two).",
        default=65536,
    ),
)
