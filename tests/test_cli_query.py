"""``kafkalog query --engine spark``: the real console entry point, run in a subprocess on small
directories (the DuckDB engine: tests/test_query_engines.py).

Each successful run starts its own local Spark (a new JVM), so there are only two of them; the
error paths that fail before Spark starts are cheap.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import conftest
import pyarrow as pa
import pytest
from conftest import SAMPLES

from kafkalog_source.cli.main import build_parser, one_line
from kafkalog_source.cli.query import format_bytes, format_table, format_value


def _samples() -> Path:
    if not (SAMPLES / "MANIFEST.json").is_file():
        pytest.skip("sample_segments/ not present")
    return SAMPLES


def run_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """The shared ``run_cli`` with a longer default timeout: these runs start Spark."""
    return conftest.run_cli(*args, timeout=timeout)


def _error_lines(stderr: str) -> list[str]:
    # The JVM itself may print a line about incubator modules before anything of ours.
    return [line for line in stderr.splitlines() if line.startswith("kafkalog: error:")]


@pytest.mark.spark
@pytest.mark.slow
def test_query_groups_by_topic_and_partition(tmp_path):
    logdir = tmp_path / "logs"
    for name in ("orders-0", "orders-1", "magic2-none-0"):
        shutil.copytree(_samples() / name, logdir / name)
    out = run_cli(
        "query",
        str(logdir),
        "SELECT topic, partition, count(*) AS n, min(offset) AS first FROM kafkalog "
        "GROUP BY topic, partition ORDER BY topic, partition",
        "--option",
        "includeHeaders=false",
        "--engine",
        "spark",
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [c.strip() for c in lines[0].split("|")] == ["topic", "partition", "n", "first"]
    assert set(lines[1]) <= {"-", "+"}
    body = [[c.strip() for c in line.split("|")] for line in lines[2:-1]]
    assert body == [
        ["magic2-none", "0", "49", "0"],
        ["orders", "0", "30", "0"],
        ["orders", "1", "30", "0"],
    ]
    assert lines[-1] == "(3 rows)"
    # columns line up: every row has its separators at the same places
    assert len({tuple(i for i, c in enumerate(line) if c == "|") for line in lines[2:-1]}) == 1
    assert not _error_lines(out.stderr)


@pytest.mark.spark
@pytest.mark.slow
def test_query_shows_text_hex_and_times_and_fails_in_one_line_on_bad_data(tmp_path):
    # One Spark start for two checks: --max-rows and cell formatting, then a corrupt file.
    manifest = json.loads((_samples() / "MANIFEST.json").read_text())
    name = "magic2-none-0/00000000000000000000.log"
    rows = manifest["files"][name]["rows"]
    logdir = tmp_path / "logs"
    shutil.copytree(_samples() / "magic2-none-0", logdir / "magic2-none-0")
    out = run_cli(
        "query",
        str(logdir),
        "SELECT offset, key, timestamp FROM kafkalog ORDER BY offset",
        "--max-rows",
        "3",
        "--max-width",
        "0",
        "--engine",
        "spark",
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[-1] == "(first 3 rows shown; raise --max-rows to see more)"
    body = [[c.strip() for c in line.split("|")] for line in lines[2:5]]
    for cells, row in zip(body, rows[:3], strict=True):
        assert cells[0] == str(row["offset"])
        key = None if row["key"] is None else bytes.fromhex(row["key"])
        assert cells[1] == ("null" if key is None else format_bytes(key))
        ts = datetime.fromtimestamp(row["timestamp"] / 1000, tz=timezone.utc)
        assert cells[2] == ts.strftime("%Y-%m-%d %H:%M:%S.") + f"{ts.microsecond // 1000:03d}"

    target = logdir / name
    data = bytearray(target.read_bytes())
    position = manifest["files"][name]["batches"][1]["position"]
    data[position + 100] ^= 0xFF
    target.write_bytes(bytes(data))
    bad = run_cli("query", str(logdir), "SELECT count(*) FROM kafkalog", "--engine", "spark")
    assert bad.returncode == 1  # bad data
    errors = _error_lines(bad.stderr)
    assert len(errors) == 1, bad.stderr
    assert str(target) in errors[0]
    assert f"byte {position}" in errors[0]
    assert "Traceback" not in bad.stderr


def test_bad_option_fails_before_spark_starts():
    out = run_cli("query", str(_samples()), "SELECT 1", "--option", "mod=FAILFAST", timeout=120)
    assert out.returncode == 2
    errors = _error_lines(out.stderr)
    assert len(errors) == 1
    assert "'mod'" in errors[0] and "did you mean 'mode'" in errors[0]


def test_malformed_option_and_missing_path():
    out = run_cli("query", str(_samples()), "SELECT 1", "--option", "nonsense", timeout=120)
    assert out.returncode == 2
    assert "--option expects KEY=VALUE" in out.stderr
    missing = run_cli("query", "/nonexistent/kafka-logs", "SELECT 1", timeout=120)
    assert missing.returncode == 1
    assert _error_lines(missing.stderr) == [
        "kafkalog: error: Path does not exist: /nonexistent/kafka-logs"
    ]


def test_verbose_prints_the_traceback():
    out = run_cli("-v", "query", "/nonexistent/kafka-logs", "SELECT 1", timeout=120)
    assert out.returncode == 1
    assert "Traceback" in out.stderr
    assert _error_lines(out.stderr)


def test_parser_has_room_for_more_subcommands():
    parser = build_parser()
    args = parser.parse_args(["query", "p", "SELECT 1", "-o", "a=b", "--max-rows", "5"])
    assert args.command == "query" and args.option == ["a=b"] and args.max_rows == 5
    assert callable(args.run)
    with pytest.raises(SystemExit):
        parser.parse_args([])


def test_format_table_aligns_and_renders_values():
    table = pa.table(
        {
            "n": pa.array([1, 22, None], pa.int64()),
            "key": pa.array([b"abc", b"\x00\xff", b""], pa.binary()),
            "ts": pa.array(
                [datetime(2023, 11, 14, 22, 13, 20, 5000, tzinfo=timezone.utc), None, None],
                pa.timestamp("us", tz="UTC"),
            ),
            "headers": pa.array(
                [[{"key": "k", "value": b"v"}], None, []],
                pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
            ),
        }
    )
    assert format_table(table, max_rows=10).splitlines() == [
        "   n | key    | ts                      | headers",
        "-----+--------+-------------------------+--------",
        "   1 | abc    | 2023-11-14 22:13:20.005 | [k=v]",
        "  22 | 0x00ff | null                    | null",
        'null | ""     | null                    | []',
        "(3 rows)",
    ]
    assert format_value(b"caf\xc3\xa9") == "café"
    assert format_value(b"line\nbreak") == "0x" + b"line\nbreak".hex()
    assert format_value({"a": 1, "b": None}) == "{a: 1, b: null}"
    assert format_table(table, max_rows=1).splitlines()[-1].startswith("(first 1 rows shown")


def test_one_line_digs_our_error_out_of_a_spark_message():
    spark_text = (
        "[PYTHON_DATA_SOURCE_ERROR] Failed ...: Traceback (most recent call last):\n"
        '  File "x.py", line 1, in read\n'
        "kafkalog_source.errors.ChecksumError: /d/x.log: byte 61: batch baseOffset 3: bad crc\n"
        " SQLSTATE: 38000"
    )
    # kafkalog's own error, as the in-process engines print it (str of the error)
    assert one_line(RuntimeError(spark_text)) == "/d/x.log: byte 61: batch baseOffset 3: bad crc"
    assert one_line(RuntimeError("[PARSE_SYNTAX_ERROR] Syntax error. SQLSTATE: 42601")) == (
        "[PARSE_SYNTAX_ERROR] Syntax error."
    )
