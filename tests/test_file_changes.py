"""A segment that shrinks while it is read: a library error or a counted skip, never a signal.

Kafka truncates segments (log truncation after a leader change, retention). A reader that
memory-maps the file dies with SIGBUS when it touches a page past the new end, so each read runs
in a subprocess: a signal shows up as a negative exit code instead of killing pytest. The
subprocess reads the first record batch, truncates the file, then reads on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from kafka.record import MemoryRecords
from test_fuzz import kp_legacy, kp_v2

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
SHRUNK = 1000  # bytes left after the truncation

CHILD = r"""
import json, os, sys
from kafkalog_source import KafkaLogError, ReadStats, iter_batches
from kafkalog_source.reader import Tuning

SMALL_WINDOWS = Tuning(window_bytes=16 << 10)  # several windows in a small file
for path, options in json.loads(sys.argv[1]):
    stats = ReadStats()
    offsets = []
    values = []
    result = {}
    try:
        for n, batch in enumerate(iter_batches(path, stats, recordsPerBatch=50, tuning=SMALL_WINDOWS, **options)):
            offsets += batch.column("offset").to_pylist()
            values += batch.column("value").to_pylist()
            if n == 0:
                os.truncate(path, int(sys.argv[2]))
    except KafkaLogError as exc:
        result["error"] = type(exc).__name__
        result["message"] = str(exc)
        result["path"] = exc.path
        result["position"] = exc.position
    result["offsets"] = offsets
    result["values"] = [v.hex() if v is not None else None for v in values]
    result["corrupt_files"] = stats.corrupt_files
    print(json.dumps(result), flush=True)
"""


def _segment(magic: int, codec: int) -> bytes:
    """About 256 KiB of batches built by kafka-python: 50 records each."""
    out = bytearray()
    base = 0
    while len(out) < 256 << 10:
        out += kp_v2(codec, base, 50) if magic == 2 else kp_legacy(magic, codec, base, 50)
        base += 50
    return bytes(out)


def _expected(data: bytes) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every record, decoded by kafka-python."""
    out = []
    records = MemoryRecords(data)
    while records.has_next():
        for r in records.next_batch():
            out.append((r.offset, r.value))
    return out


def _run(jobs: list[tuple[str, dict[str, str]]]) -> subprocess.CompletedProcess:
    """Run the child on ``jobs`` (path, options), each in turn, in one fresh interpreter."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(jobs), str(SHRUNK)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    ("magic", "codec"),
    [(2, NONE), (2, LZ4), (2, ZSTD), (2, GZIP), (1, NONE), (1, GZIP), (0, SNAPPY)],
)
def test_segment_truncated_while_read(tmp_path: Path, magic: int, codec: int) -> None:
    """FAILFAST raises FileChangedError naming the file, the byte and both sizes;
    ignoreCorruptFiles returns the rows before the change, in order, and counts the file."""
    data = _segment(magic, codec)
    expected = _expected(data)
    jobs = []
    for options in ({}, {"ignoreCorruptFiles": "true"}):
        path = tmp_path / f"{len(options)}" / "00000000000000000000.log"
        path.parent.mkdir()
        path.write_bytes(data)
        jobs.append((str(path), options))
    res = _run(jobs)
    assert res.returncode == 0, f"exit {res.returncode} (a signal if < 0): {res.stderr[-3000:]}"
    results = [json.loads(line) for line in res.stdout.strip().splitlines()[-2:]]
    for (path, options), got in zip(jobs, results, strict=True):
        n = len(got["offsets"])
        assert 0 < n < len(expected)
        assert list(zip(got["offsets"], got["values"], strict=True)) == [
            (o, v.hex() if v is not None else None) for o, v in expected[:n]
        ]
        if options:
            assert "error" not in got
            assert got["corrupt_files"] == 1
        else:
            assert got["error"] == "FileChangedError"
            assert got["path"] == path
            assert SHRUNK <= got["position"] < len(data)
            assert path in got["message"]
            assert f"byte {got['position']}" in got["message"]
            assert (
                f"file shrank/changed while being read: size was {len(data)}, now {SHRUNK}"
                in got["message"]
            )
