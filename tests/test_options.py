"""Option parsing: every value is checked once, and a bad one names its option.

These run without Spark: the same parser serves the data source, the Arrow API and the CLI.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import kafkalog_source as kl
from kafkalog_source.errors import OptionError
from kafkalog_source.options import EARLIEST, LATEST, MiB, parse_options

SAMPLES = Path(__file__).resolve().parent.parent / "sample_segments"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"verifyChecksum": "true"}, "did you mean 'verifyChecksums'"),
        ({"verifyChecksums": "yes"}, "option 'verifyChecksums': expected true or false"),
        ({"recordsPerBatch": "0"}, "option 'recordsPerBatch': must be >= 1"),
        ({"recordsPerBatch": "1.5"}, "option 'recordsPerBatch': expected an integer"),
        ({"maxBatchBytes": "lots"}, "option 'maxBatchBytes': expected an integer"),
        ({"mode": "lenient"}, "option 'mode': expected one of FAILFAST, DROPMALFORMED, PERMISSIVE"),
        ({"isolationLevel": "serializable"}, "option 'isolationLevel': expected one of"),
        ({"compiledCodecs": "off"}, "option 'compiledCodecs': expected true or false"),
        ({"endingOffsets": "earliest"}, "'earliest' is not allowed for batch reads"),
        # Spark's Kafka source rejects these for batch queries too: -1 = latest, -2 = earliest
        ({"endingOffsets": '{"t":{"3":-2}}'}, "t-3: earliest (-2) is not allowed for batch"),
        ({"startingOffsets": '{"t":{"0":-5}}'}, "t-0: -5 is not an offset"),
        ({"startingOffsets": "{not json"}, "option 'startingOffsets': not valid JSON"),
        ({"startingOffsets": "[1, 2]"}, "option 'startingOffsets': expected JSON like"),
        ({"endingOffsets": '{"t": 5}'}, "topic 't' must map partitions to values"),
        ({"startingOffsets": '{"t":{"x":1}}'}, "option 'startingOffsets[t]': expected an integer"),
        ({"startingOffsetsByTimestamp": '{"t":{"0":-2}}'}, "t-0: -2 is not an offset"),
        ({"startingTimestamp": "-1"}, "option 'startingTimestamp': must be >= 0"),
        ({"modifiedAfter": "yesterday"}, "option 'modifiedAfter': expected epoch milliseconds"),
        ({"minPartitions": "0"}, "option 'minPartitions': must be >= 1"),
        (
            {"startingOffsets": '{"t":{"0":1}}', "startingTimestamp": "5"},
            "options startingOffsets and startingTimestamp both set a start",
        ),
        (
            {"endingTimestamp": "5", "endingOffsetsByTimestamp": '{"t":{"0":9}}'},
            "options endingTimestamp and endingOffsetsByTimestamp both set an end",
        ),
        (
            {"modifiedAfter": "2024-01-02", "modifiedBefore": "2024-01-01"},
            "'modifiedAfter' must be earlier than 'modifiedBefore'",
        ),
        (
            {"isolationLevel": "read_committed", "kafka.isolation.level": "read_committed"},
            "are the same option",
        ),
    ],
)
def test_bad_values_name_the_option(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=re.escape(message)):
        parse_options(options)


def test_values_are_typed() -> None:
    o = parse_options(
        {
            "VERIFYCHECKSUMS": "False",  # names and booleans are case-insensitive, as in Spark
            "maxBatchBytes": "2m",
            "startingOffsets": '{"orders":{"0":23,"1":-2}}',
            "endingOffsets": '{"orders":{"0":-1,"1":50}}',
            "modifiedAfter": "2024-03-01T00:00:00",  # UTC when no zone is given
            "mode": "dropmalformed",
        }
    )
    assert o.verify_checksums is False
    assert o.max_batch_bytes == 2 * MiB
    assert o.starting_offsets == {("orders", 0): 23, ("orders", 1): EARLIEST}
    assert o.ending_offsets == {("orders", 0): LATEST, ("orders", 1): 50}
    assert o.modified_after == 1709251200000.0
    assert o.mode == "DROPMALFORMED"
    assert o.given == ("verifyChecksums", "maxBatchBytes", "startingOffsets", "endingOffsets",
                       "modifiedAfter", "mode")  # fmt: skip


def test_compiled_codecs_option() -> None:
    assert parse_options({}).compiled_codecs is True
    assert parse_options({"compiledcodecs": "FALSE"}).compiled_codecs is False
    assert parse_options(compiledCodecs=False).compiled_codecs is False


def test_paths_from_spark_and_python() -> None:
    assert parse_options({"path": "/a"}).paths == ("/a",)
    assert parse_options({"paths": '["/a", "/b"]'}).paths == ("/a", "/b")
    assert parse_options(paths=["/a", "/b"]).paths == ("/a", "/b")
    # the Arrow API takes what Python code has at hand: pathlib paths, and bytes paths
    assert parse_options(paths=Path("/a/orders-0")).paths == ("/a/orders-0",)
    assert parse_options(paths=[Path("/a"), "/b", b"/c"]).paths == ("/a", "/b", "/c")


def test_read_table_takes_a_pathlib_path() -> None:
    table = kl.read_table(SAMPLES / "magic2-none-0")
    assert table.num_rows == kl.read_table(str(SAMPLES / "magic2-none-0")).num_rows > 0


def test_the_arrow_api_rejects_unknown_options() -> None:
    with pytest.raises(OptionError, match="did you mean 'includeHeaders'"):
        kl.read_table(SAMPLES / "magic2-none-0", includeHeader=False)
    with pytest.raises(OptionError, match="option 'mode'"):
        next(kl.iter_batches(SAMPLES / "magic2-none-0", mode="skip"))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("latest", "'latest' is not allowed for batch reads"),
        ('{"t":{"0":-1}}', "t-0: latest (-1) is not allowed for batch"),
    ],
)
def test_a_latest_start_is_for_streams_only(value: str, message: str) -> None:
    from kafkalog_source.planning.request import check_batch

    opts = parse_options({"startingOffsets": value})  # a stream may start at the latest offset
    with pytest.raises(OptionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_batch(opts)


def test_the_option_table_is_what_readoptions_is_made_of() -> None:
    """Every row sets one field of ReadOptions (or StoreOptions) with the row's default, typed
    by the row's parser, and the default is a value the parser itself returns."""
    import dataclasses

    from kafkalog_source.options import OPTION_SPECS, ReadOptions, StoreOptions

    fields = {f.name: f for f in dataclasses.fields(ReadOptions)}
    fields |= {f"store.{f.name}": f for f in dataclasses.fields(StoreOptions)}
    for spec in OPTION_SPECS:
        f = fields[spec.field]
        assert f.default == spec.default and f.type == spec.annotation, spec.name
        if spec.default is not None:
            assert spec.parser(spec.name, spec.default) == spec.default, spec.name
            assert spec.parser(spec.name, str(spec.default).lower()) == spec.default, spec.name


def test_the_cli_subcommands_take_the_options_whose_rows_name_them() -> None:
    from kafkalog_source.cli.dump import DUMP_OPTIONS
    from kafkalog_source.cli.verify import VERIFY_OPTIONS
    from kafkalog_source.cli.warmup import WARMUP_OPTIONS
    from kafkalog_source.options import OPTION_SPECS, cli_options

    for command, taken in (("dump", DUMP_OPTIONS), ("verify", VERIFY_OPTIONS)):
        assert (
            taken == tuple(s.name for s in OPTION_SPECS if command in s.cli) == cli_options(command)
        )
    assert WARMUP_OPTIONS == ("compiledCodecs",)
    with pytest.raises(ValueError):
        cli_options("query")  # query and convert take every option
