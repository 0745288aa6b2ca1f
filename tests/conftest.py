"""Shared test fixtures: the ../shared ground truth and one local SparkSession."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_segments"
SHARED = Path(os.environ.get("KAFKALOG_SHARED", ROOT.parent / "shared"))
CLIENT_WRITTEN = SHARED / "fixtures" / "client-written"
BROKER_WRITTEN = SHARED / "fixtures" / "broker-written"
CONSOLE_SCRIPT = Path(sys.executable).parent / "kafkalog"


def run_cli(*args: str, timeout: float = 300, **kwargs: Any) -> subprocess.CompletedProcess:
    """Run the installed ``kafkalog`` script, or ``python -m kafkalog_source.cli.main``."""
    if CONSOLE_SCRIPT.exists():
        cmd = [str(CONSOLE_SCRIPT), *args]
    else:
        cmd = [sys.executable, "-m", "kafkalog_source.cli.main", *args]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    if "stdout" not in kwargs and "stderr" not in kwargs:
        kwargs["capture_output"] = True
    return subprocess.run(cmd, text=True, timeout=timeout, env=env, cwd=ROOT, **kwargs)


def kp_v2_batch(records: list[tuple[Any, ...]], base_offset: int = 0, codec: int = 0) -> bytes:
    """One v2 batch from kafka-python's record builder (not transactional, no size limit).

    ``records`` are ``(timestamp, key, value, headers)`` at offset deltas 0, 1, ...; the batch is
    stored at ``base_offset`` (outside the CRC). kafka-python stores a batch uncompressed when
    ``codec`` would not shrink it: callers that need compression check byte 22.
    """
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 30,
    )  # fmt: skip
    for delta, (timestamp, key, value, headers) in enumerate(records):
        builder.append(delta, timestamp, key, value, headers)
    data = builder.build()
    data[0:8] = base_offset.to_bytes(8, "big")
    return bytes(data)


def zigzag_varint(n: int) -> bytes:
    """Kafka's zig-zag LEB128 varint (SEGMENT_SPEC §1.7), for hand-built test records."""
    u = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = u & 0x7F
        u >>= 7
        if u:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def require_shared(path: Path) -> Path:
    """Skip the calling test when a ../shared fixture path is absent."""
    if not path.exists():
        pytest.skip(f"shared fixtures not present: {path}")
    return path


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole test session, configured from conf/."""
    pytest.importorskip("pyspark")
    from kafkalog_source.spark.session import local_session

    session = local_session(app_name="kafkalog-tests", master="local[2]")
    yield session
    session.stop()
