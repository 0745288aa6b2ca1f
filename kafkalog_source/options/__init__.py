"""Reader options: parsed once, on the driver, into one typed, immutable object.

The same names and meanings serve ``spark.read.format("kafkalog").option(...)``, the Arrow API
(``iter_batches(path, **options)``) and the command line. Names are case-insensitive, as Spark's
are. Values may be strings (as Spark passes them) or Python values. An unknown name or a malformed
value raises :class:`~kafkalog_source.errors.OptionError` naming the option.

Modules, in the order to read them:

* :mod:`.table`: the option table, every option one row (:class:`~.spec.OptionSpec`: name,
  field, parser, type, default, where it applies, the CLI subcommands that take it,
  documentation, aliases), its rows written in :mod:`.decoding` and :mod:`.reading`;
* :mod:`.model`: :class:`ReadOptions` and :class:`StoreOptions`, one field per row;
* :mod:`.parse`: :func:`parse_options`, names and values into a :class:`ReadOptions`;
* :mod:`.values`: the constants values choose among, and the value parsers;
* :mod:`.stores`: the ``fs.<store>.<argument>`` options and the paths' credentials;
* :mod:`.kafka`: Spark's Kafka source's options, taken or refused by name.
"""

from __future__ import annotations

from .kafka import (
    SPARK_KAFKA_OPTIONS,
    SPARK_KAFKA_REFUSED,
    SPARK_KAFKA_SECTION,
    refuse_spark_kafka_option,
)
from .model import ReadOptions, StoreOptions, registry_conf_shown
from .parse import parse_options
from .spec import (
    ARROW,
    BATCH,
    CLI_COMMANDS,
    EVERYWHERE,
    OPTIONS_DOC,
    STREAM,
    OptionSpec,
    doc_anchor,
)
from .stores import (
    NATIVE_STORES,
    RETRY_ARG,
    STORE_OF_SCHEME,
    check_path,
    parse_fs_option,
    scheme_of,
)
from .table import FS_OPTION, OPTION_NAMES, OPTION_SPECS, SPEC_OF, cli_options, doc_ref
from .values import (
    DECODES,
    DEFAULT_REMOTE_CONCURRENCY,
    EARLIEST,
    ISOLATION_LEVELS,
    LATEST,
    MAX_BATCH_BYTES_LIMIT,
    MODES,
    NO_TIME_MATCH,
    OFFSET_GAPS,
    PAYLOAD_AS,
    PAYLOAD_FORMATS,
    REPLICAS,
    SUBJECT_STRATEGIES,
    MiB,
    PartitionMap,
)

__all__ = [
    "ARROW",
    "BATCH",
    "CLI_COMMANDS",
    "DECODES",
    "DEFAULT_REMOTE_CONCURRENCY",
    "EARLIEST",
    "EVERYWHERE",
    "FS_OPTION",
    "ISOLATION_LEVELS",
    "LATEST",
    "MAX_BATCH_BYTES_LIMIT",
    "MODES",
    "NATIVE_STORES",
    "NO_TIME_MATCH",
    "OFFSET_GAPS",
    "OPTIONS_DOC",
    "OPTION_NAMES",
    "OPTION_SPECS",
    "PAYLOAD_AS",
    "PAYLOAD_FORMATS",
    "REPLICAS",
    "RETRY_ARG",
    "SPARK_KAFKA_OPTIONS",
    "SPARK_KAFKA_REFUSED",
    "SPARK_KAFKA_SECTION",
    "SPEC_OF",
    "STORE_OF_SCHEME",
    "STREAM",
    "SUBJECT_STRATEGIES",
    "MiB",
    "OptionSpec",
    "PartitionMap",
    "ReadOptions",
    "StoreOptions",
    "check_path",
    "cli_options",
    "doc_anchor",
    "doc_ref",
    "parse_fs_option",
    "parse_options",
    "refuse_spark_kafka_option",
    "registry_conf_shown",
    "scheme_of",
]
