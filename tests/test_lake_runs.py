"""Exactly once into a lake table: a run killed (SIGKILL) at any point, then run again, leaves
every offset once; two runs at the same time on one table: one commits, the other starts over
from its offsets (or, out of attempts, fails saying so), nothing doubled; a catalog that cannot
be reached, and a table kafkalog did not write: one line, nothing written."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, SAMPLES, kp_v2_batch

pytest.importorskip("pyiceberg")
pytest.importorskip("deltalake")

from lake_support import offsets_of  # noqa: E402

from kafkalog_source.lake import ConcurrentRunError, TableTarget, convert_table  # noqa: E402
from kafkalog_source.lake import run as lake_run  # noqa: E402
from kafkalog_source.lake import sink as lake_sink  # noqa: E402

FORMATS = ("iceberg", "delta")
RECORDS_PER_BATCH = 500

# A conversion in a child process; with "pause", it stops between writing its data files and
# committing them (touching MARKER first), to be killed there.
CHILD = r"""
import sys, time
from pathlib import Path
import kafkalog_source.lake.sink as sink
from kafkalog_source.cli.main import main

logs, out, fmt, mode, marker = sys.argv[1:6]
if mode == "pause":
    def before_commit(location, files):
        Path(marker).write_text("files written")
        time.sleep(120)
    sink.before_commit = before_commit
sys.exit(main(["convert", logs, out, "--format", fmt, "-q"]))
"""


def write_segment(part: Path, base: int, batches: int) -> int:
    """A segment of ``batches`` batches of RECORDS_PER_BATCH records from offset ``base``; the
    next offset."""
    part.mkdir(parents=True, exist_ok=True)
    n = RECORDS_PER_BATCH
    data = b"".join(
        kp_v2_batch(
            [(1_700_000_000_000 + base + b * n + i, b"k", b"v" * 64, []) for i in range(n)],
            base_offset=base + b * n,
        )
        for b in range(batches)
    )
    (part / f"{base:020d}.log").write_bytes(data)
    return base + batches * n


def child(logs: Path, out: Path, fmt: str, mode: str, marker: Path) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(logs), str(out), fmt, mode, str(marker)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def assert_exactly_once(out: Path, fmt: str, ends: dict[str, int]) -> None:
    got = offsets_of(out, fmt)
    want = [(t, 0, o) for t in sorted(ends) for o in range(ends[t])]
    assert len(got) == len(want) and got == want


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_run_killed_anywhere_then_run_again_leaves_every_offset_once(
    fmt: str, tmp_path: Path
) -> None:
    logs, out, marker = tmp_path / "logs", tmp_path / "t", tmp_path / "marker"
    ends = {"a": write_segment(logs / "a-0", 0, 20), "b": write_segment(logs / "b-0", 0, 20)}
    # 1. killed between its data files written and their commit: the table is as it was (none)
    p = child(logs, out, fmt, "pause", marker)
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert p.poll() is None, p.stderr.read().decode() if p.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert any(f.suffix == ".parquet" for f in out.rglob("*"))  # its files were written
    target = TableTarget(fmt, str(out))
    assert convert_table(logs, target, {}).rows == sum(ends.values())  # all of it, once
    assert_exactly_once(out, fmt, ends)
    # 2. killed at random points of incremental runs, each then run again
    rng = random.Random(36)
    for _ in range(2):
        ends["a"] = write_segment(logs / "a-0", ends["a"], 10)
        ends["b"] = write_segment(logs / "b-0", ends["b"], 4)
        p = child(logs, out, fmt, "run", marker)
        time.sleep(rng.uniform(0.5, 4.0))
        p.send_signal(signal.SIGKILL)
        p.wait()
        convert_table(logs, target, {})
        assert_exactly_once(out, fmt, ends)


def _racing(monkeypatch: pytest.MonkeyPatch, runs: int = 2) -> threading.Barrier:
    """Make ``runs`` runs wait for each other between writing their files and committing."""
    barrier = threading.Barrier(runs, timeout=60)
    seen: list[int] = []

    def before_commit(location: str, files: list[str]) -> None:
        seen.append(1)
        if len(seen) <= runs:  # the first attempts meet; a retry goes on alone
            barrier.wait()

    monkeypatch.setattr(lake_sink, "before_commit", before_commit)
    return barrier


def _run_both(logs: Path, out: Path, fmt: str, stats: list[Any] | None = None) -> list[Any]:
    results: list[Any] = [None, None]

    def go(i: int) -> None:
        try:
            st = None if stats is None else stats[i]
            results[i] = convert_table(logs, TableTarget(fmt, str(out)), {}, st)
        except BaseException as e:  # kept for the test to look at
            results[i] = e

    threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


@pytest.mark.parametrize("fmt", FORMATS)
def test_two_runs_at_once_one_commits_the_other_starts_over(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs, out = tmp_path / "logs", tmp_path / "t"
    ends = {"a": write_segment(logs / "a-0", 0, 4)}
    _racing(monkeypatch)
    first = _run_both(logs, out, fmt)  # both create the table
    assert not [r for r in first if isinstance(r, BaseException)], first
    assert sorted(r.rows for r in first) == [0, ends["a"]]
    loser = next(r for r in first if r.rows == 0)
    assert loser.committed is None and loser.attempts == 2
    assert_exactly_once(out, fmt, ends)

    ends["a"] = write_segment(logs / "a-0", ends["a"], 3)
    _racing(monkeypatch)
    second = _run_both(logs, out, fmt)  # both append the same new offsets
    assert sorted(r.rows for r in second) == [0, 3 * 500]
    assert_exactly_once(out, fmt, ends)

    # out of attempts, the loser fails saying so, and nothing of it is in the table
    monkeypatch.setattr(lake_run, "ATTEMPTS", 1)
    ends["a"] = write_segment(logs / "a-0", ends["a"], 2)
    _racing(monkeypatch)
    third = _run_both(logs, out, fmt)
    errors = [r for r in third if isinstance(r, BaseException)]
    assert len(errors) == 1 and isinstance(errors[0], ConcurrentRunError), third
    assert "another run committed to" in str(errors[0])
    assert_exactly_once(out, fmt, ends)


# -- one line, nothing written ---------------------------------------------------------------


def _cli(*args: str) -> tuple[int, str]:
    import io
    from contextlib import redirect_stderr

    from kafkalog_source.cli.main import main

    err = io.StringIO()
    with redirect_stderr(err):
        code = main(list(args))
    return code, err.getvalue()


def test_a_catalog_that_cannot_be_reached_is_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "t"
    src = str(SAMPLES / "orders-0")
    code, err = _cli(
        "convert", src, str(out), "--format", "iceberg", "--table-option", "type=rest",
        "--table-option", f"uri=http://127.0.0.1:{port}", "--table-option", "credential=id:SECRET",
    )  # fmt: skip
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1, err
    assert lines[0].startswith(
        f"kafkalog: error: cannot reach the rest catalog at http://127.0.0.1:{port}"
    )
    assert "SECRET" not in err and not out.exists()
    code, err = _cli(
        "convert", src, str(out), "--format", "iceberg", "--catalog", str(tmp_path / "no" / "c.db")
    )
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "cannot open the SQLite catalog" in err and "directory does not exist" in err
    assert not out.exists() and not (tmp_path / "no").exists()


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_table_kafkalog_did_not_write_is_refused(fmt: str, tmp_path: Path) -> None:
    import pyarrow as pa

    out = tmp_path / "t"
    data = pa.table({"x": [1, 2]})
    if fmt == "delta":
        from deltalake import write_deltalake

        write_deltalake(str(out), data)
    else:
        from pyiceberg.catalog.sql import SqlCatalog

        out.mkdir()
        catalog = SqlCatalog("kafkalog", uri=f"sqlite:///{out}/catalog.db")
        catalog.create_namespace("kafkalog")
        catalog.create_table("kafkalog.t", schema=data.schema, location=str(out)).append(data)
    before = sorted(str(p) for p in out.rglob("*"))
    code, err = _cli("convert", str(SAMPLES / "orders-0"), str(out), "--format", fmt)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "that kafkalog did not write" in err
    assert sorted(str(p) for p in out.rglob("*")) == before
    # it is still a table the query command reads
    code, _ = _cli("query", str(out), "SELECT sum(x) FROM kafkalog")
    assert code == 0


def test_convert_and_query_print_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from kafkalog_source.cli.main import main

    out = tmp_path / "orders"
    src = str(SAMPLES / "orders-0")
    assert main(["convert", src, str(out), "--format", "iceberg"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"kafkalog: wrote {out} (created iceberg table kafkalog.orders;"
    )
    assert err[0].endswith(
        "30 new rows in 1 data file from 1 topic-partition; the table holds 30 rows)"
    )
    assert main(["convert", src, str(out), "--format", "iceberg"]) == 0
    assert capsys.readouterr().err.strip() == (
        f"kafkalog: {out} is up to date (iceberg table kafkalog.orders: nothing new since its last commit)"
    )
    sql = "SELECT partition, count(*) AS n, min(offset) AS lo, max(offset) AS hi FROM kafkalog GROUP BY 1"
    assert main(["query", src, sql]) == 0
    archive = capsys.readouterr().out
    assert main(["query", str(out), sql]) == 0
    assert capsys.readouterr().out == archive


def test_a_namespace_created_by_a_concurrent_run_is_used() -> None:
    """PyIceberg's SQL catalog reports a namespace inserted by another run between its check and
    its insert as SQLAlchemy's IntegrityError (seen in CI): the run goes on when the namespace is
    there, and raises when it is not."""
    from kafkalog_source.lake.catalogs import ensure_namespace

    class Raced:
        def __init__(self, exists: bool) -> None:
            self.exists = exists

        def create_namespace_if_not_exists(self, namespace: str) -> None:
            raise RuntimeError("UNIQUE constraint failed: iceberg_namespace_properties")

        def namespace_exists(self, namespace: str) -> bool:
            return self.exists

    ensure_namespace(Raced(True), "kafkalog")
    with pytest.raises(RuntimeError, match="UNIQUE"):
        ensure_namespace(Raced(False), "kafkalog")


def test_pyiceberg_does_not_retry_a_commit_by_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Iceberg tables kafkalog creates say ``commit.retry.num-retries=0``: a commit that
    another writer's commit beat fails in PyIceberg and the run starts over itself (review 1,
    item 12), rather than PyIceberg retrying it unseen."""
    from kafkalog_source.lake.iceberg import IcebergSink

    logs, out = tmp_path / "logs", tmp_path / "t"
    ends = {"a": write_segment(logs / "a-0", 0, 3)}
    convert_table(logs, TableTarget("iceberg", str(out)), {})
    sink = IcebergSink(TableTarget("iceberg", str(out)))
    assert sink.load()
    assert sink.table.properties["commit.retry.num-retries"] == "0"
    before = ends["a"]
    ends["a"] = write_segment(logs / "a-0", before, 2)
    seen: list[int] = []

    def before_commit(location: str, files: list[str]) -> None:
        seen.append(1)
        if len(seen) == 1:  # another writer commits first (a snapshot without offsets)
            other = IcebergSink(TableTarget("iceberg", str(out)))
            other.load()
            with other.table.transaction() as tx:
                tx.set_properties({"owner": "someone"})
                tx.update_snapshot().fast_append().commit()

    monkeypatch.setattr(lake_sink, "before_commit", before_commit)
    run = convert_table(logs, TableTarget("iceberg", str(out)), {})
    assert run.attempts == 2 and run.rows == ends["a"] - before and len(seen) == 2
    assert_exactly_once(out, "iceberg", ends)


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_abandoned_attempt_is_not_in_the_run_summary(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs at once: the one that starts over reports only what its last attempt read,
    not the records of the attempt it abandoned as well (review 1, item 15)."""
    from kafkalog_source.stats import ReadStats

    logs, out = tmp_path / "logs", tmp_path / "t"
    ends = {"a": write_segment(logs / "a-0", 0, 4)}
    convert_table(logs, TableTarget(fmt, str(out)), {})
    ends["a"] = write_segment(logs / "a-0", ends["a"], 3)
    _racing(monkeypatch)
    stats = [ReadStats(), ReadStats()]
    results = _run_both(logs, out, fmt, stats)
    assert not [r for r in results if isinstance(r, BaseException)], results
    won, lost = (0, 1) if results[0].rows else (1, 0)
    assert results[lost].attempts == 2 and results[lost].rows == 0
    assert stats[won].records == results[won].rows == 3 * 500
    assert stats[lost].records == 0, stats[lost].summary()
    assert_exactly_once(out, fmt, ends)


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_archive_given_as_out_is_said_so_changing_nothing(fmt: str, tmp_path: Path) -> None:
    """OUT an archive (segment files at its top, or in partition directories): one line saying
    it is an archive (it said "not empty and holds no Delta table (orders-0)")."""
    import shutil

    src = SAMPLES / "orders-0"
    for out in (tmp_path / "flat", tmp_path / "nested"):
        shutil.copytree(src, out if out.name == "flat" else out / "orders-0")
        before = sorted((str(p), p.stat().st_mtime_ns) for p in out.rglob("*"))
        code, err = _cli("convert", str(src), str(out), "--format", fmt)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "is an archive (it holds Kafka segment files), not a table" in err, err
        assert sorted((str(p), p.stat().st_mtime_ns) for p in out.rglob("*")) == before
