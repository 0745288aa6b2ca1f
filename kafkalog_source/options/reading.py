"""The option table, second part: which records and files a read takes (topics and
partitions, offset and time bounds, data loss, splits, file filters, remote stores, stream
limits). :data:`~.table.OPTION_SPECS` is the whole table, in the reference's order."""

from __future__ import annotations

from .spec import (
    ARROW,
    BATCH,
    COMPLETE_LINK,
    SIZE_TEXT,
    STREAM,
    TIME_TEXT,
    OptionSpec,
    choices_text,
)
from .values import (
    DEFAULT_REMOTE_CONCURRENCY,
    NO_TIME_MATCH,
    OFFSET_GAPS,
    REPLICAS,
    MiB,
    as_string,
    assignment,
    at_least,
    boolean,
    duration_ms,
    offsets,
    one_of,
    positive,
    size,
    size_or_zero,
    timestamp,
    timestamp_map,
    timestamp_ms,
    topic_list,
    topic_pattern,
)

READING: tuple[OptionSpec, ...] = (
    OptionSpec(
        "subscribe",
        "subscribe",
        topic_list,
        "a comma-separated list of topics",
        "Read only these topics (Spark's Kafka source's `subscribe`).",
        "Topics are known by their `<topic>-<partition>` directory names (a tiered-storage "
        "object's key), so partitions of other topics are left out while the paths are listed, "
        "before any of their files is opened or requested. Only one of `subscribe`, "
        "`subscribePattern` and `assign` may be set; with none, every partition under the paths "
        "is read. Unlike Spark's source, a Kafka internal topic named here is read. A segment "
        "whose topic is not known from its directory fails the read, naming it. See "
        "[Spark's Kafka source options](#sparks-kafka-source-options).",
        cli=("verify",),
    ),
    OptionSpec(
        "subscribePattern",
        "subscribe_pattern",
        topic_pattern,
        "a Java regular expression",
        "Read only the topics whose names the pattern is found in (Spark's Kafka source's "
        "`subscribePattern`).",
        "As Spark's source (its default offset fetching through the admin client): a topic is "
        "taken when the pattern is found anywhere in its name (`orders` takes `orders-eu`; "
        "anchor it, `^orders$`, for one topic), and Kafka's internal topics "
        "(`__consumer_offsets`, `__transaction_state`, `__share_group_state`, and "
        "`__cluster_metadata`) are never taken: name them with `subscribe` or `assign`. The "
        "pattern is translated to Python's `re` where Java and Python read it the same way over "
        "topic names (literals, `.`, classes `[...]` with ranges and `\\d` `\\w` `\\s`, the "
        "POSIX classes `\\p{Alpha}` and the like, groups, alternatives, greedy, lazy and "
        "possessive quantifiers, anchors, look-arounds, `(?i)` first or `(?i:...)`, `\\Q...\\E`); "
        "anything else (Unicode properties, class unions and intersections, back references, "
        "flags in mid-pattern, `\\h`, `\\R`, ...) is refused, naming it. Pruned as `subscribe` is.",
        cli=("verify",),
    ),
    OptionSpec(
        "assign",
        "assign",
        assignment,
        'JSON `{"topicA":[0,1],"topicB":[2,4]}`',
        "Read only these partitions (Spark's Kafka source's `assign`).",
        "Pruned as `subscribe` is. A partition named that the paths do not hold is warned "
        "about in a batch read (a stream waits for it).",
        cli=("verify",),
    ),
    OptionSpec(
        "startingOffsets",
        "starting_offsets",
        offsets,
        '`earliest`, `latest` (streams), or JSON `{"topic":{"0":23}}`',
        "Where to start, per partition; inclusive.",
        '`earliest`, or JSON `{"topic":{"0":23,"1":-2}}` (-2 = earliest). Streams also take '
        "`latest` (and -1); a batch read refuses them. A JSON map names every partition the "
        "read selects, as Spark's Kafka source asserts (an `OptionError` names those left out; "
        "`subscribe`, `subscribePattern` or `assign` select fewer). An offset past the end of a "
        "partition's log is a data loss, as Spark's Kafka source reports it (\"Partition "
        "orders-0's offset was changed from 100 to 36, some data may have been missed\"): "
        "`DataLossError` under `failOnDataLoss=true`, else a warning and the offsets counted "
        "missing (a stream then starts at the partition's end). A stream uses it on its first "
        "run only; later runs resume from the checkpoint. Only one starting rule may be set "
        "(`startingOffsets`, `startingTimestamp` or `startingOffsetsByTimestamp`). Offset "
        "bounds use the file names and the `.index`.",
        default="earliest",
    ),
    OptionSpec(
        "endingOffsets",
        "ending_offsets",
        offsets,
        '`latest`, or JSON `{"topic":{"0":50}}`',
        "Where to stop, per partition; exclusive.",
        '`latest`, or JSON `{"topic":{"0":50,"1":-1}}` (-1 = latest). A JSON map names every '
        "partition the read selects, as for `startingOffsets`. An offset past the end of a "
        "partition's log makes the offsets from that end up to it missing (`DataLossError` "
        "under `failOnDataLoss=true`, else a warning and counted). Only one ending rule may be set. Batch reads only: a stream refuses it (its end is what each trigger "
        "finds, as in Spark's Kafka source; use `Trigger.AvailableNow` to stop at what is "
        "there).",
        applies=(BATCH, ARROW),
        default="latest",
    ),
    OptionSpec(
        "startingTimestamp",
        "starting_timestamp",
        timestamp,
        TIME_TEXT,
        "Start every partition at the earliest offset whose timestamp is ≥ this time.",
        "Kafka's `offsetsForTimes`: everything after that offset is returned. Epoch "
        "milliseconds, or an ISO-8601 date or time as `modifiedBefore` takes it "
        "(`2023-11-15`, `2023-11-15T22:00:00Z`, `2023-11-15T23:00:00+01:00`); a time without "
        "a zone is UTC, and finer than a millisecond is rounded up to the next one. Timestamp "
        "bounds use the `.timeindex` and batch `maxTimestamp` to skip whole segments and "
        "batches without decompressing them.",
    ),
    OptionSpec(
        "endingTimestamp",
        "ending_timestamp",
        timestamp,
        TIME_TEXT,
        "Stop every partition before the earliest offset whose timestamp is ≥ this time.",
        "A time, as `startingTimestamp` takes it. Batch reads only: a stream refuses it.",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "startingOffsetsByTimestamp",
        "starting_offsets_by_timestamp",
        timestamp_map,
        'JSON `{"topic":{"0":1700000000000,"1":"2023-11-15T22:00:00Z"}}`',
        "`startingTimestamp` per partition.",
        "Each value is a time as `startingTimestamp` takes it.",
    ),
    OptionSpec(
        "endingOffsetsByTimestamp",
        "ending_offsets_by_timestamp",
        timestamp_map,
        'JSON `{"topic":{"0":1700000000000,"1":"2023-11-15T22:00:00Z"}}`',
        "`endingTimestamp` per partition.",
        "Each value is a time as `startingTimestamp` takes it. Batch reads only: a stream "
        "refuses it.",
        applies=(BATCH, ARROW),
    ),
    OptionSpec(
        "startingOffsetsByTimestampStrategy",
        "starting_offsets_by_timestamp_strategy",
        one_of(NO_TIME_MATCH),
        choices_text(NO_TIME_MATCH),
        "What a partition with no record at or after the starting time does.",
        "For `startingTimestamp` and `startingOffsetsByTimestamp`, as Spark's Kafka source: "
        '`error` fails the read (`OptionError`: "No offset matched from request of '
        'topic-partition orders-0 and timestamp 1700000000000."); `latest` starts that '
        "partition at its latest offset (nothing of it in a batch read; a stream reads what "
        "comes after).",
        default="error",
    ),
    OptionSpec(
        "failOnDataLoss",
        "fail_on_data_loss",
        boolean,
        "boolean",
        "`true` fails the read (`DataLossError`) when offsets are missing.",
        "Missing offsets: offsets the partition's own evidence says it held (an empty or cut "
        "segment, `.index`/`.timeindex` entries past the end of the last segment, the log "
        "directory's checkpoints, the partition's `leader-epoch-checkpoint`; see "
        f"{COMPLETE_LINK}), a segment file missing between two "
        "others, a segment file deleted after the read was planned (retention: a batch read "
        "with `false` then fails with `FileNotFoundError` unless `ignoreMissingFiles`, a "
        "stream goes on), and a gap between consecutive batches of a segment. Gaps that `offsetGaps` "
        "calls compaction never fail. With `false` missing offsets are read around and "
        "reported: a warning, `ReadStats.missing_offsets`, the CLI's summary line and Spark's "
        "task summary. Gaps between batches inside a segment are checked only with `true`. "
        "For streams the default is `true` (see "
        "[Scheduled ETL](../guides/streaming.md)).",
        default_note="streams: `true`",
        default=False,
        cli=("verify",),
    ),
    OptionSpec(
        "offsetGaps",
        "offset_gaps",
        one_of(OFFSET_GAPS),
        choices_text(OFFSET_GAPS),
        "How a gap between batches or segments is judged: compaction or loss.",
        "`auto` calls gaps below the partition's entry in the log directory's "
        "`cleaner-offset-checkpoint` compaction and every other gap loss; `compacted` calls "
        "every such gap compaction (an archive of a compacted topic copied without its "
        "checkpoint files); `loss` calls every gap loss. A cut last segment and offsets below "
        "a recovery point or high watermark are loss under every rule.",
        default="auto",
        cli=("verify",),
    ),
    OptionSpec(
        "replicas",
        "replicas",
        one_of(REPLICAS),
        choices_text(REPLICAS),
        "What to do with the same topic-partition found in several directories.",
        "Copies from several brokers: `error` refuses the read naming the directories (and "
        "says when their `partition.metadata` topic ids differ: different topics of one "
        "name); `separate` reads every copy as it is (each record once per copy); `merge` "
        "reads each offset once from the copies that hold it (see [Recovering a partition "
        "from several brokers' disks](../guides/bad-data.md#recovering-a-partition-from-"
        "several-brokers-disks)). With `merge`, offsets no copy holds are reported as missing "
        "unless `offsetGaps=compacted`: the cleaner's checkpoint is not applied to merged "
        "copies, which brokers compact independently.",
        default="error",
        cli=("verify",),
    ),
    OptionSpec(
        "minPartitions",
        "min_partitions",
        at_least(1),
        "integer ≥ 1",
        "Ask for at least this many Spark partitions (splits large segments further).",
        "Streams: per micro-batch, default 2 (each at least `openCostInBytes`), so that a "
        "small micro-batch still uses two cores. The Arrow API cuts its pieces further too.",
        default_note="streams: 2",
    ),
    OptionSpec(
        "maxRecordsPerPartition",
        "max_records_per_partition",
        positive,
        "integer ≥ 1",
        "At most this many offsets in one Spark partition (split), as Spark's Kafka source.",
        "Splits are cut further at batch boundaries found from the `.index` and a short walk "
        "of batch headers, and never packed past it. A Kafka batch is never cut, so one batch "
        "holding more offsets than this is a split of its own; in v0/v1 segments a split may "
        "hold up to one compressed wrapper's records more (a wrapper's first offset is not "
        "known without decompressing it); a remote segment without a usable `.index` is cut "
        "only with `remoteHeaderWalk`. "
        "Compacted offsets count, as in Spark (the offsets between a split's first and last).",
    ),
    OptionSpec(
        "maxPartitionBytes",
        "max_partition_bytes",
        size,
        SIZE_TEXT,
        "Target bytes per Spark partition; large segments are split on batch boundaries.",
        "The Arrow API, `query --engine duckdb` and `convert --engine arrow` cut pieces of "
        "`16m` unless it is given (and on one thread do not cut segments at all unless it is "
        "given; with the default threads, a segment without `.index` entries is not cut "
        "either, unless it or `minPartitions` is given).",
        default_note="Arrow API: pieces of `16m`",
        default=128 * MiB,
    ),
    OptionSpec(
        "openCostInBytes",
        "open_cost_in_bytes",
        size_or_zero,
        SIZE_TEXT,
        "What each segment weighs when small segments are packed together.",
        "As Spark's file sources: small segments are packed into one split up to "
        "`maxPartitionBytes`, each counting at least this much. A remote segment counts a "
        "sixteenth of it: a read keeps that many remote files' requests in flight at once "
        "(`remoteConcurrency`'s default; the default, not the option's value, so that a plan "
        "does not change with it).",
        default=4 * MiB,
    ),
    OptionSpec(
        "recursiveFileLookup",
        "recursive_file_lookup",
        boolean,
        "boolean",
        "Find segments in all subdirectories.",
        "By default a path is a segment file, a partition directory or a log directory "
        "holding partition directories.",
        default=False,
        cli=("verify", "dump"),
    ),
    OptionSpec(
        "pathGlobFilter",
        "path_glob_filter",
        as_string,
        "a glob",
        "Only files whose name matches this glob.",
        cli=("verify",),
    ),
    OptionSpec(
        "modifiedBefore",
        "modified_before",
        timestamp_ms,
        TIME_TEXT,
        "Only files modified before this time.",
        "On object stores, the object's modification time.",
        cli=("verify",),
    ),
    OptionSpec(
        "modifiedAfter",
        "modified_after",
        timestamp_ms,
        TIME_TEXT,
        "Only files modified after this time.",
        "Must be earlier than `modifiedBefore` when both are given.",
        cli=("verify",),
    ),
    OptionSpec(
        "ignoreMissingFiles",
        "ignore_missing_files",
        boolean,
        "boolean",
        "A listed path that does not exist, or a file that disappears, is skipped and counted.",
        default=False,
        cli=("verify",),
    ),
    OptionSpec(
        "ignoreCorruptFiles",
        "ignore_corrupt_files",
        boolean,
        "boolean",
        "Stop reading a corrupt file, keep its rows up to the damage, count it, and go on.",
        "A large segment read in several splits (Spark) or pieces (the Arrow API, `query`, "
        "`convert --engine arrow`) is stopped only in the one that meets the damage: the "
        "others still return their rows, as with Spark's file sources. With `FAILFAST` it "
        "ends the read of the file at a corrupt batch (counted in `corrupt_files`); with "
        "`DROPMALFORMED` and `PERMISSIVE`, which skip the batch and read on, it changes "
        "nothing there.",
        default=False,
    ),
    OptionSpec(
        "allowEmpty",
        "allow_empty",
        boolean,
        "boolean",
        "`true` reads a path with no segment file as an empty result.",
        "By default a read that finds no `.log` file at all (an empty directory, one with only "
        "index files, filters that leave nothing, or only missing paths skipped by "
        "`ignoreMissingFiles`) fails with a `PathError` naming the path, as Spark's file "
        "sources fail on a path with nothing to read, so a mistyped path does not look like "
        "an empty topic. An empty `.log` file is an empty topic and reads as 0 rows either "
        "way. A stream always waits for segments to appear.",
        applies=(BATCH, ARROW),
        default=False,
        cli=("verify", "dump"),
    ),
    OptionSpec(
        "readAheadBytes",
        "store.read_ahead_bytes",
        size,
        SIZE_TEXT,
        "Remote paths: bytes per ranged request of a sequential read.",
        "Memory per split stays at `(readAheadRequests + 1) × readAheadBytes` on top of the "
        "decoder's own. See [Remote storage](../guides/remote-storage.md).",
        default=8 * MiB,
        cli=("verify", "dump"),
    ),
    OptionSpec(
        "readAheadRequests",
        "store.read_ahead_requests",
        at_least(0),
        "integer ≥ 0",
        "Remote paths: ranged requests in flight ahead of the decoder (`0`: none).",
        "Fetching overlaps decoding, never past the split's end.",
        default=2,
        cli=("verify", "dump"),
    ),
    OptionSpec(
        "remoteRetries",
        "store.retries",
        at_least(0),
        "integer ≥ 0",
        "Remote paths: retries of a request that failed in a way a retry can fix.",
        "A timeout, a dropped or refused connection, throttling or an HTTP 5xx is retried "
        "with exponential backoff, after the store client's own retries, before the read "
        "fails with a `StorageError`; other failures (access denied, a bad request, a host "
        "that does not resolve, a certificate not trusted) are not retried.",
        default=3,
        cli=("verify", "dump"),
    ),
    OptionSpec(
        "remoteConcurrency",
        "store.concurrency",
        at_least(1),
        "integer ≥ 1",
        "Remote paths: requests in flight at most for many files at once.",
        "Planning's reads of many segments (on the driver), and each read of several ranges (a "
        "Spark task's split, an Arrow API read), which opens the next ranges and fetches their "
        "first `readAheadBytes` while one decodes. Every request of the plan or the read counts, "
        "read-ahead included. `1`: one request at a time. See [Remote "
        "storage](../guides/remote-storage.md).",
        default=DEFAULT_REMOTE_CONCURRENCY,
    ),
    OptionSpec(
        "remoteHeaderWalk",
        "remote_header_walk",
        boolean,
        "boolean",
        "Remote paths: walk the batch headers of a segment that has no usable `.index`.",
        "To split it and find offset bounds; this reads the segment on the driver. By default "
        "such a segment is one split, and offset bounds inside it are applied by the reader.",
        default=False,
    ),
    OptionSpec(
        "maxOffsetsPerTrigger",
        "max_offsets_per_trigger",
        at_least(1),
        "integer ≥ 1",
        "Streams: at most this many offsets per micro-batch.",
        "Shared between partitions in proportion to their backlog as Spark's Kafka source "
        "shares it: each partition's share rounded down, or up to one offset when it is below "
        "one, never past the partition's end; the offsets rounding leaves unused go one each to "
        "the shares rounded down, largest remainders first (a share rounded up gets none). A "
        "micro-batch takes `min(limit, backlog)` offsets (more only when the shares rounded up "
        "to one already exceed it), and every partition with data advances at every "
        "trigger. Only one of `maxOffsetsPerTrigger`, `maxBytesPerTrigger` and "
        "`maxFilesPerTrigger` may be set. Batch reads ignore it. See "
        "[Admission control](../guides/streaming.md#admission-control).",
        applies=(STREAM,),
    ),
    OptionSpec(
        "maxBytesPerTrigger",
        "max_bytes_per_trigger",
        size,
        SIZE_TEXT,
        "Streams: at most this many segment bytes per micro-batch.",
        "Estimated within a segment from its offsets and size, and shared as "
        "`maxOffsetsPerTrigger` is: a share worth less than one offset is one offset, so every "
        "partition with data advances at every trigger. Only one of the three limits may be "
        "set. Batch reads ignore it.",
        applies=(STREAM,),
    ),
    OptionSpec(
        "maxFilesPerTrigger",
        "max_files_per_trigger",
        at_least(1),
        "integer ≥ 1",
        "Streams: at most this many segment files touched per micro-batch.",
        "One file per partition per round, the partitions taken in a rotation by name that "
        "goes on from trigger to trigger and across restarts (the offsets keep the last "
        "partition served): with `P` partitions holding data, each advances at least once "
        "every `ceil(P / maxFilesPerTrigger)` triggers. Only one of the three limits may be "
        "set. Batch reads ignore it.",
        applies=(STREAM,),
    ),
    OptionSpec(
        "minOffsetsPerTrigger",
        "min_offsets_per_trigger",
        at_least(1),
        "integer ≥ 1",
        "Streams: hold a trigger back until this many new offsets are available.",
        "As Spark's Kafka source: the new offsets are summed over partitions; a trigger runs "
        "anyway once `maxTriggerDelay` has passed since the last one that ran, and the first "
        "trigger of a query always runs. It combines with any of the three limits (with "
        "`maxOffsetsPerTrigger`, it must not be larger). `Trigger.AvailableNow` does not hold "
        "its micro-batches back. Batch reads ignore it.",
        applies=(STREAM,),
    ),
    OptionSpec(
        "maxTriggerDelay",
        "max_trigger_delay",
        duration_ms,
        "a time: an integer with `us`, `ms`, `s`, `m`, `min`, `h` or `d` (milliseconds without "
        "a unit)",
        "Streams: the longest `minOffsetsPerTrigger` holds a trigger back.",
        "Read only with `minOffsetsPerTrigger` (set alone, it is warned about).",
        applies=(STREAM,),
        default_note="15m",
        default=15 * 60 * 1000,
    ),
)
