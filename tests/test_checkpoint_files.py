"""A log directory's offset checkpoint files as Kafka reads them (issue 40 item 4).

Kafka creates ``cleaner-offset-checkpoint`` empty, and its ``CheckpointFile.CheckpointReadBuffer``
reads an empty file (or a version line alone) as a checkpoint with no entries: no warning. A file
with other content that is not a checkpoint is ignored with one warning per read, however many
partitions the read looks the log directory up for (a read of a Kafka 4.x data directory warned
145 times). The expectations are Kafka's reading rules and counts of log records, never what
kafkalog said before.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from conftest import SAMPLES

import kafkalog_source as kl
from kafkalog_source.layout.checkpoints import (
    parse_leader_epochs,
    parse_offset_checkpoint,
    read_log_dir_checkpoints,
)
from kafkalog_source.options import parse_options
from kafkalog_source.streaming.admission import Limit
from kafkalog_source.streaming.source import StreamSource

PARTITIONS = 6
WARNING = "not an offset checkpoint file; ignoring it"


@pytest.fixture()
def logdir(tmp_path: Path) -> Path:
    """A log directory of ``PARTITIONS`` partitions (copies of a sample partition of three
    segments) with Kafka's other checkpoint files absent."""
    root = tmp_path / "kafka-logs"
    for p in range(PARTITIONS):
        shutil.copytree(SAMPLES / "multi-segment-0", root / f"events-{p}")
    return root


def _checkpoint_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and "checkpoint" in r.getMessage()
    ]


def test_kafka_reads_an_empty_file_as_no_entries() -> None:
    # CheckpointReadBuffer.read: end of file before the version line, or before the count line,
    # is an empty list; anything else must be version 0, a count and that many entries
    assert parse_offset_checkpoint("") == {}
    assert parse_offset_checkpoint("0\n") == {}
    assert parse_offset_checkpoint("0\n0\n") == {}
    assert parse_offset_checkpoint("0\n1\nevents 3 42\n") == {("events", 3): 42}
    assert parse_leader_epochs("") == []
    for garbage in ("garbage\n", "1\n0\n", "0\n2\nevents 3 42\n", "\x00\x00\x00"):
        assert parse_offset_checkpoint(garbage) is None, garbage


@pytest.mark.parametrize("content", ["", "0\n"])
def test_an_empty_cleaner_checkpoint_is_read_silently(
    logdir: Path, content: str, caplog: pytest.LogCaptureFixture
) -> None:
    (logdir / "cleaner-offset-checkpoint").write_text(content)
    caplog.set_level(logging.DEBUG, "kafkalog")
    expected = PARTITIONS * len(kl.read_table(str(SAMPLES / "multi-segment-0")))
    assert kl.read_table(str(logdir), threads=1).num_rows == expected
    assert kl.read_table(str(logdir)).num_rows == expected
    # a stream, whose timestamp start plans each partition on its own
    src = StreamSource(parse_options({"startingTimestamp": "0"}, paths=str(logdir)))
    start = src.initial()
    src.plan(start, src.latest(start, Limit()))
    assert not _checkpoint_warnings(caplog)
    cleaner = f"{logdir}/cleaner-offset-checkpoint"
    assert not [r for r in caplog.records if cleaner in r.getMessage()]  # not even at debug
    ckpt = read_log_dir_checkpoints(str(logdir))
    assert "cleaner-offset-checkpoint" in ckpt.present and ckpt.cleaner == {}


def test_a_garbage_checkpoint_is_one_warning_per_read(
    logdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (logdir / "cleaner-offset-checkpoint").write_text("this is not a checkpoint\n")
    path = f"{logdir}/cleaner-offset-checkpoint"
    caplog.set_level(logging.WARNING, "kafkalog")
    for threads in (1, 4):  # each read says it once
        caplog.clear()
        kl.read_table(str(logdir), threads=threads)
        assert _checkpoint_warnings(caplog) == [f"{path}: {WARNING}"]
    # a stream looks the log directory up for every partition (startingTimestamp) and at every
    # trigger: once in the query
    caplog.clear()
    src = StreamSource(parse_options({"startingTimestamp": "0"}, paths=str(logdir)))
    start = src.initial()
    for _ in range(3):
        end = src.latest(start, Limit("offsets", 100))
        src.plan(start, end)
        start = end
    assert _checkpoint_warnings(caplog) == [f"{path}: {WARNING}"]
    # the file ignored: no evidence from it, the rows all there
    expected = PARTITIONS * len(kl.read_table(str(SAMPLES / "multi-segment-0")))
    assert kl.read_table(str(logdir)).num_rows == expected


def test_a_garbage_leader_epoch_checkpoint_is_one_warning_per_file(
    logdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for p in range(PARTITIONS):
        (logdir / f"events-{p}" / "leader-epoch-checkpoint").write_text("nonsense\n")
    (logdir / "events-0" / "leader-epoch-checkpoint").write_text("")  # Kafka: no entries
    caplog.set_level(logging.WARNING, "kafkalog")
    kl.read_table(str(logdir))
    warned = sorted(_checkpoint_warnings(caplog))
    assert warned == sorted(
        f"{logdir}/events-{p}/leader-epoch-checkpoint: not a leader epoch checkpoint; ignoring it"
        for p in range(1, PARTITIONS)
    )
