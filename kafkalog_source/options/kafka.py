"""Spark's Kafka source's options: what each does here, and why those that do not apply to
an archive are refused by name.

A job moved from ``spark.read.format("kafka")`` to an archive keeps the options that apply, with
Spark's meaning (they are rows of the option table, :mod:`.table`); the others fail the read
naming the reason, rather than being ignored. The reference lists them all
(``docs/reference/options.md``, "Spark's Kafka source options").
"""

from __future__ import annotations

from ..errors import OptionError
from .spec import OPTIONS_DOC, doc_anchor

# Every option of Spark's Kafka source (batch and streaming; its integration guide and
# KafkaSourceProvider, Spark 4.x) that kafkalog does not take, and why: refused by name. The
# others are options of their own (OPTION_SPECS, the same names). The reference lists both
# (docs/reference/options.md, "Spark's Kafka source options").
SPARK_KAFKA_SECTION = "Spark's Kafka source options"
_NO_CONSUMER = "no Kafka consumer reads an archive"
SPARK_KAFKA_REFUSED: dict[str, str] = {
    "kafka.bootstrap.servers": "it names the brokers a consumer reads from; an archive is read "
    "from its path (load(path), or the path option)",
    "kafka.group.id": f"it names a consumer group; {_NO_CONSUMER}",
    "groupIdPrefix": f"it prefixes the consumer group ids Spark makes up; {_NO_CONSUMER}",
    "kafkaConsumer.pollTimeoutMs": f"it bounds an executor's Kafka poll; {_NO_CONSUMER} (a "
    "remote store's requests: fs.<store>.request_timeout, connect_timeout and remoteRetries)",
    "fetchOffset.numRetries": "it retries the offset requests to the brokers; an archive's "
    "offsets come from its files (a remote store's requests: remoteRetries)",
    "fetchOffset.retryIntervalMs": "it spaces the retries of the offset requests to the "
    "brokers; an archive's offsets come from its files (a remote store's requests: "
    "remoteRetries)",
    "kafka.auto.offset.reset": "Spark's Kafka source refuses it too: set startingOffsets to "
    "earliest or latest",
    "kafka.<setting>": f"it sets the Kafka consumer; {_NO_CONSUMER} (a remote store's settings "
    "are fs.<store>.<argument> options)",
}
_REFUSED_LOWER = {k.lower(): v for k, v in SPARK_KAFKA_REFUSED.items()}
# Every option of Spark's Kafka source: (name, Spark's query types, what it does here; "" for a
# refused one, whose reason is SPARK_KAFKA_REFUSED's)
SPARK_KAFKA_OPTIONS: tuple[tuple[str, str, str], ...] = (
    ("assign", "both", "The same: [`assign`](#assign), by directory names."),
    ("subscribe", "both", "The same: [`subscribe`](#subscribe); an internal topic named is read."),
    (
        "subscribePattern",
        "both",
        "The same: [`subscribePattern`](#subscribepattern) (found anywhere in the name, "
        "internal topics never taken), for the Java expressions Python reads the same way; "
        "others are refused, naming what.",
    ),
    ("kafka.bootstrap.servers", "both", ""),
    (
        "startingTimestamp",
        "both",
        "The same: [`startingTimestamp`](#startingtimestamp); also takes ISO-8601 times. Only "
        "one starting rule may be set (Spark takes `startingTimestamp`, else "
        "`startingOffsetsByTimestamp`, else `startingOffsets`, and ignores the others).",
    ),
    (
        "startingOffsetsByTimestamp",
        "both",
        "The same: [`startingOffsetsByTimestamp`](#startingoffsetsbytimestamp); partitions it "
        "does not name start by the default (Spark wants every partition named).",
    ),
    (
        "startingOffsets",
        "both",
        "The same: [`startingOffsets`](#startingoffsets), but a stream starts at `earliest` "
        "by default (Spark's: `latest`), an archive being there to be read. A JSON map names "
        "every partition selected, and an offset past the end is a data loss, as in Spark.",
    ),
    ("endingTimestamp", "batch", "The same: [`endingTimestamp`](#endingtimestamp)."),
    (
        "endingOffsetsByTimestamp",
        "batch",
        "The same: [`endingOffsetsByTimestamp`](#endingoffsetsbytimestamp).",
    ),
    (
        "endingOffsets",
        "batch",
        "The same: [`endingOffsets`](#endingoffsets); a JSON map names every partition "
        "selected, as in Spark.",
    ),
    (
        "failOnDataLoss",
        "both",
        "The same: [`failOnDataLoss`](#failondataloss), from the archive's own evidence; the "
        "default is `true` for streams as in Spark, `false` for batch reads (Spark's: `true`).",
    ),
    ("kafkaConsumer.pollTimeoutMs", "both", ""),
    ("fetchOffset.numRetries", "both", ""),
    ("fetchOffset.retryIntervalMs", "both", ""),
    (
        "maxOffsetsPerTrigger",
        "streaming",
        "The same: [`maxOffsetsPerTrigger`](#maxoffsetspertrigger), shared as Spark shares it, "
        "with the offsets rounding down leaves unused handed out.",
    ),
    (
        "minOffsetsPerTrigger",
        "streaming",
        "The same: [`minOffsetsPerTrigger`](#minoffsetspertrigger).",
    ),
    ("maxTriggerDelay", "streaming", "The same: [`maxTriggerDelay`](#maxtriggerdelay)."),
    (
        "minPartitions",
        "both",
        "The same: [`minPartitions`](#minpartitions), splitting by bytes at batch boundaries; "
        "streams: 2 by default.",
    ),
    (
        "maxRecordsPerPartition",
        "both",
        "The same: [`maxRecordsPerPartition`](#maxrecordsperpartition), cut at batch boundaries "
        "(a batch holding more is a split of its own).",
    ),
    ("groupIdPrefix", "both", ""),
    ("kafka.group.id", "both", ""),
    (
        "includeHeaders",
        "both",
        "The same: [`includeHeaders`](#includeheaders), but `true` by default (Spark's: `false`).",
    ),
    (
        "startingOffsetsByTimestampStrategy",
        "both",
        "The same: [`startingOffsetsByTimestampStrategy`](#startingoffsetsbytimestampstrategy).",
    ),
    (
        "kafka.isolation.level",
        "both",
        "The same: [`isolationLevel`](#isolationlevel), of which it is another name.",
    ),
    ("kafka.auto.offset.reset", "both", ""),
    ("kafka.<setting>", "both", ""),
)


def refuse_spark_kafka_option(name: str) -> None:
    """Raise for an option of Spark's Kafka source that does not apply to an archive."""
    lower = name.lower()
    reason = _REFUSED_LOWER.get(lower)
    if reason is None and lower.startswith("kafka."):
        reason = SPARK_KAFKA_REFUSED["kafka.<setting>"]
    if reason is not None:
        raise OptionError(
            f"option {name!r} of Spark's Kafka source does not apply to an archive: {reason}",
            doc=f"{OPTIONS_DOC}#{doc_anchor(SPARK_KAFKA_SECTION)}",
        )
