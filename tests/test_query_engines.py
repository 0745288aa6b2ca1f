"""``kafkalog query``'s engines: DuckDB (the default, in-process over ``open_reader``) and Spark.

The documented queries (the README's demo and quick start, the command-line guide's ad-hoc SQL
section: every ``kafkalog query`` in a bash block of README.md or docs/), run as written, give the
same table
from both engines (Spark through the shared in-process session, DuckDB through the engine's
function); the demo's output printed in the README is checked against the DuckDB CLI, whose
runs are cheap (no JVM). Expected values elsewhere come from ``sample_segments/MANIFEST.json``.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES, run_cli

from kafkalog_source.cli.query import format_table

duckdb = pytest.importorskip("duckdb")

from kafkalog_source.cli.query_duckdb import quote_offset_column, run_query  # noqa: E402
from kafkalog_source.cli.sqlview import VIEW, View  # noqa: E402

README = ROOT / "README.md"
MAX_ROWS = 1000


def _samples() -> Path:
    if not (SAMPLES / "MANIFEST.json").is_file():
        pytest.skip("sample_segments/ not present")
    return SAMPLES


def _readme_queries() -> list[tuple[str, str, dict[str, str]]]:
    """Every ``kafkalog query PATH SQL [options]`` command in the bash blocks of README.md and
    docs/, with ``/archive/kafka-logs`` read as ``sample_segments``: (path, sql, options)."""
    text = "\n".join(p.read_text() for p in [README, *sorted((ROOT / "docs").rglob("*.md"))])
    out = []
    for block in re.findall(r"```bash[^\n]*\n(.*?)```", text, re.S):
        tables = set()  # what a `kafkalog convert` of the block wrote: a table, not an archive
        for line in _join_quoted_lines(block.replace("\\\n", " ")).splitlines():
            for command in line.split("&&"):
                words = shlex.split(command)
                if len(words) >= 4 and words[0].endswith("kafkalog") and words[1] == "convert":
                    tables.add(words[3])
                if len(words) < 3 or not words[0].endswith("kafkalog") or words[1] != "query":
                    continue
                if words[2] in tables:
                    continue
                path = words[2].replace("/archive/kafka-logs", str(_samples()))
                path = str(ROOT / path) if not path.startswith("/") else path
                sql, options, rest = None, {}, iter(words[3:])
                for w in rest:  # -o/--option before or after the SQL; other flags skipped
                    if w in ("--option", "-o"):
                        key, _, value = next(rest).partition("=")
                        options[key] = value
                    elif w in ("--engine", "--master", "--max-rows", "--format"):
                        next(rest)
                    elif not w.startswith("-") and sql is None:
                        sql = w
                assert sql is not None, command
                out.append((path, sql, options))
    return out


def _join_quoted_lines(text: str) -> str:
    """``text`` with the newlines inside '...' or "..." turned into spaces (one command a line)."""
    out, quote = [], None
    for ch in text:
        if quote is None and ch in "'\"":
            quote = ch
        elif ch == quote:
            quote = None
        out.append(" " if ch == "\n" and quote else ch)
    return "".join(out)


def _duckdb_table(path: str, sql: str, options: dict[str, str]) -> str:
    return format_table(run_query([View(VIEW, path, options)], sql, MAX_ROWS, False), MAX_ROWS)


def test_readme_has_the_queries() -> None:
    queries = _readme_queries()
    assert len(queries) >= 3
    assert any("read_committed" in o.get("isolationLevel", "") for _, _, o in queries)


@pytest.mark.spark
def test_both_engines_give_the_same_rows_for_the_readme_queries(spark) -> None:
    for path, sql, options in _readme_queries():
        reader = spark.read.format("kafkalog").options(**options).load(path)
        reader.createOrReplaceTempView("kafkalog")
        expected = format_table(spark.sql(sql).limit(MAX_ROWS + 1).toArrow(), MAX_ROWS)
        got = _duckdb_table(path, sql, options)
        assert got == expected, (sql, got, expected)
        assert "(0 rows)" not in got, sql


def test_the_readme_demo_output_is_the_duckdb_cli_output() -> None:
    """The demo command without ``--engine spark`` prints exactly what the README shows."""
    text = README.read_text()
    demo = next(q for q in _readme_queries() if q[0] == str(ROOT / "sample_segments"))
    shown = re.search(r"The demo prints:\n\n```\n(.*?)```", text, re.S).group(1)
    out = run_cli("query", "sample_segments", demo[1], timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout == shown
    assert out.stderr == ""


def test_only_the_columns_the_query_uses_are_decoded(monkeypatch) -> None:
    seen: list[list[str]] = []
    import kafkalog_source.reader as reader

    original = reader.PreparedRead.open

    def spy(self, columns=None, *args, **kwargs):
        seen.append(list(columns))
        return original(self, columns, *args, **kwargs)

    monkeypatch.setattr(reader.PreparedRead, "open", spy)
    path = str(_samples() / "orders-0")
    one = _duckdb_table(path, "SELECT partition, count(*) AS n FROM kafkalog GROUP BY 1", {})
    assert one.splitlines()[2].split() == ["0", "|", "30"]
    assert seen[-1] == ["partition"]
    count = _duckdb_table(path, "SELECT count(*) AS n FROM kafkalog", {})
    assert count.splitlines()[2].split() == ["30"]
    assert seen[-1] == ["partition"]  # no column at all: a constant one, the cheapest
    star = _duckdb_table(path, "SELECT * EXCLUDE (headers) FROM kafkalog LIMIT 1", {})
    assert seen[-1] == ["key", "value", "topic", "partition", "offset", "timestamp",
                        "timestampType"]  # fmt: skip
    assert star.splitlines()[0].split(" | ")[0].strip() == "key"
    # a self-join reads the view twice: it gets a table, and the rows are right
    join = _duckdb_table(
        path, "SELECT count(*) AS n FROM kafkalog a JOIN kafkalog b ON a.offset = b.offset", {}
    )
    assert join.splitlines()[2].strip() == "30"


def test_a_bare_offset_column_is_quoted_and_the_clause_kept() -> None:
    cases = {
        "SELECT min(offset) FROM kafkalog": 'SELECT min("offset") FROM kafkalog',
        "SELECT k.offset FROM kafkalog k WHERE Offset > 5 ORDER BY offset LIMIT 3 OFFSET 2": (
            'SELECT k."offset" FROM kafkalog k WHERE "offset" > 5 ORDER BY "offset" LIMIT 3 '
            "OFFSET 2"
        ),
        "SELECT 'offset', \"offset\" -- offset\nFROM kafkalog OFFSET ?": (
            "SELECT 'offset', \"offset\" -- offset\nFROM kafkalog OFFSET ?"
        ),
        "SELECT offset-1 AS o FROM kafkalog OFFSET (1)": (
            'SELECT "offset"-1 AS o FROM kafkalog OFFSET (1)'
        ),
    }
    for sql, quoted in cases.items():
        assert quote_offset_column(duckdb, sql) == quoted


def test_duckdb_engine_errors_and_exit_codes(tmp_path: Path) -> None:
    manifest = json.loads((_samples() / "MANIFEST.json").read_text())["files"]
    name = "magic2-none-0/00000000000000000000.log"
    shutil.copytree(SAMPLES / "magic2-none-0", tmp_path / "magic2-none-0")
    target = tmp_path / name
    data = bytearray(target.read_bytes())
    position = manifest[name]["batches"][1]["position"]
    data[position + 100] ^= 0xFF
    target.write_bytes(bytes(data))
    bad = run_cli("query", str(tmp_path), "SELECT count(*) FROM kafkalog")
    assert bad.returncode == 1, bad.stderr
    errors = [ln for ln in bad.stderr.splitlines() if ln.startswith("kafkalog: error:")]
    assert len(errors) == 1 and str(target) in errors[0] and f"byte {position}" in errors[0]
    kept = run_cli(
        "query", str(tmp_path), "SELECT count(*) AS n FROM kafkalog", "-o", "mode=DROPMALFORMED"
    )
    assert kept.returncode == 0, kept.stderr
    expected = sum(b["count"] for i, b in enumerate(manifest[name]["batches"]) if i != 1)
    assert kept.stdout.splitlines()[-2].strip() == str(expected)
    good = str(SAMPLES / "orders-0")
    for args in (
        ("query", good, "SELECT nope FROM kafkalog"),  # binder error
        ("query", good, "SELEC 1"),  # parser error
        ("query", good, "SELECT 1", "--master", "local[1]"),  # a Spark-only flag
    ):
        out = run_cli(*args)
        assert out.returncode == 2, (args, out.stderr)
        assert out.stderr.startswith("kafkalog: error:"), out.stderr
    missing = subprocess.run(
        [sys.executable, "-c",
         "import sys; sys.modules['duckdb'] = None\n"
         "from kafkalog_source.cli.main import main\n"
         f"sys.exit(main(['query', {good!r}, 'SELECT 1']))"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert missing.returncode == 2
    assert "pip install duckdb" in missing.stderr and "--engine spark" in missing.stderr
