"""A lake table in a bucket (moto's S3 server on 127.0.0.1): ``convert --format iceberg|delta``
to ``s3://`` with the read's ``-o fs.s3.*`` options, a second run that finds nothing new, and
``query`` over the table giving the archive's answer; the store's secret in no output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES

pytest.importorskip("pyiceberg")
pytest.importorskip("deltalake")

from lake_support import cli  # noqa: E402

SECRET = "testing-secret-value"  # moto's secret key in S3Server.options
SQL = (
    "SELECT partition, count(*) AS n, min(offset) AS lo, max(offset) AS hi FROM kafkalog GROUP BY 1"
)


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_a_table_in_a_bucket(
    fmt: str, s3_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    o = [x for k, v in s3_server.options.items() for x in ("-o", f"{k}={v}")]
    out = f"{s3_server.bucket('kafkalog-lake')}/orders-{fmt}"
    table = ["--catalog", str(tmp_path / "catalog.db")] if fmt == "iceberg" else []
    src = str(SAMPLES / "orders-0")
    first = cli(capsys, "convert", src, out, "--format", fmt, *table, *o)
    assert first.returncode == 0, first.stderr
    assert f"kafkalog: wrote {out} (created {fmt} table" in first.stderr
    again = cli(capsys, "convert", src, out, "--format", fmt, *table, *o)
    assert again.returncode == 0 and "is up to date" in again.stderr, again.stderr
    archive = cli(capsys, "query", src, SQL)
    back = cli(capsys, "query", out, SQL, *table, *o)
    assert back.returncode == 0, back.stderr
    assert back.stdout == archive.stdout
    for done in (first, again, back):
        assert SECRET not in done.stdout + done.stderr
    if fmt == "iceberg":  # the embedded catalog cannot live in the bucket
        bad = cli(capsys, "convert", src, out + "-2", "--format", fmt, *o)
        assert bad.returncode == 2 and "is in a store" in bad.stderr, bad.stderr


def test_a_retried_run_lists_the_archive_again(
    s3_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing one attempt of ``convert`` made is not the next attempt's: a run that another
    run beat to the commit starts over from a new listing of the bucket (it went on with the
    first attempt's, as the command's, and missed a segment written in between)."""
    import threading

    from lake_support import offsets_of
    from test_lake_runs import write_segment

    from kafkalog_source.lake import TableTarget, convert_table
    from kafkalog_source.lake import sink as lake_sink

    local = tmp_path / "logs"
    nxt = write_segment(local / "a-0", 0, 2)
    prefix = "kafkalog-lake/retried"
    uri = s3_server.upload(local, prefix)
    out = tmp_path / "t"
    calls: list[int] = []

    def before_commit(location: str, files: list[str]) -> None:
        calls.append(1)
        if len(calls) == 1:  # our first attempt: a rival run commits what is there, then a
            # segment arrives; our commit then loses, and the next attempt must see it
            rival = threading.Thread(
                target=convert_table, args=(uri, TableTarget("delta", str(out)), s3_server.options)
            )
            rival.start()
            rival.join(120)
            write_segment(local / "a-0", nxt, 3)
            s3_server.upload(local / "a-0" / f"{nxt:020d}.log", f"{prefix}/a-0/{nxt:020d}.log")

    monkeypatch.setattr(lake_sink, "before_commit", before_commit)
    o = [x for k, v in s3_server.options.items() for x in ("-o", f"{k}={v}")]
    done = cli(capsys, "convert", uri, str(out), "--format", "delta", *o)
    assert done.returncode == 0, done.stderr
    end = nxt + 3 * 500
    assert offsets_of(out, "delta") == [("a", 0, o) for o in range(end)]


def test_a_library_error_is_one_plain_line_when_stderr_is_not_a_terminal(
    s3_server: Any, capsys: pytest.CaptureFixture
) -> None:
    """deltalake says a store's failure as a chain of causes, each marked with a red arrow
    (``\\x1b[31m↳\\x1b[0m``): on stderr that is not a terminal (a file, a pipe, a CI log) the
    line carries the whole chain with no escape sequence and no secret (issue 40 item 7c)."""
    out = f"{s3_server.bucket('kafkalog-lake')}/plain-errors"
    s3_server.put(out.removeprefix("s3://") + "/_delta_log/" + f"{0:020d}.json", b"{}\n")
    o = [x for k, v in s3_server.options.items() for x in ("-o", f"{k}={v}")]
    # the table's storage points deltalake at a port nothing listens on; the listing that finds
    # the table goes to the server (-o fs.s3.*)
    nowhere = ["--table-option", "AWS_ENDPOINT_URL=http://127.0.0.1:9"]
    nowhere += ["--table-option", "retry_timeout=1500ms"]  # retries end after 1.5 s
    done = cli(capsys, "query", out, "SELECT 1", *o, *nowhere)
    assert done.returncode != 0
    line = done.stderr.strip()
    assert line.startswith(f"kafkalog: error: cannot open the Delta table at {out}: "), line
    assert "\n" not in line and "\x1b" not in line and SECRET not in line, repr(line)
    assert "Connection refused" in line or "connect" in line, line

    # on a terminal the colours stay (they are colours there)
    import io

    from kafkalog_source.cli.report import for_stream

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    coloured = "a \x1b[31m↳\x1b[0m b"
    assert for_stream(coloured, Terminal()) == coloured
    assert for_stream(coloured, io.StringIO()) == "a ↳ b"
