"""One cached walk per segment file, shared by the planner's completeness check, a stream's end
and ``read_committed``'s markers (issue 19: one view of a partition's log).

Each asks :func:`~kafkalog_source.planning.logview.segment_walk`; a file that did not change is
not walked again by anyone, a file that grew is walked from where the last walk stopped, and a
rewritten file is walked from byte 0 and compared with what an older walk saw.
"""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest
from stream_archive import Archive, ProducerId

import kafkalog_source as kl
from kafkalog_source.errors import CorruptDataError
from kafkalog_source.options import parse_options
from kafkalog_source.planning import logview
from kafkalog_source.planning.transactions import log_transactions
from kafkalog_source.streaming.source import Limit, StreamSource

KEY = ("orders", 0)


def _checkpoint(path: Path, entries: list[tuple[str, int, int]]) -> None:
    lines = ["0", str(len(entries))] + [f"{t} {p} {o}" for t, p, o in entries]
    path.write_text("\n".join(lines) + "\n")


def _archive(root: Path) -> tuple[Archive, Path]:
    a = Archive(root)
    a.append(0, batches=30, per_batch=4)  # offsets 0..119
    a.sync()
    return a, root / "orders-0" / f"{0:020d}.log"


def test_planner_stream_and_markers_share_one_walk(tmp_path: Path) -> None:
    a, seg = _archive(tmp_path / "logs")
    # a recovery point makes the planner check where the last segment ends
    _checkpoint(tmp_path / "logs" / "recovery-point-offset-checkpoint", [("orders", 0, 120)])
    logview.forget()
    src = StreamSource(parse_options(paths=str(tmp_path / "logs")))
    assert src.latest(src.initial(), Limit()) == {KEY: 120}
    walks = logview.walk_count()
    assert kl.read_table(str(tmp_path / "logs")).num_rows == 120  # the planner's end check
    assert logview.walk_count() == walks  # the stream's walk answered it
    # read_committed needs the walk from byte 0 (its markers); the active segment has no
    # .index, so the stream's walk started there and answers the markers too
    log_transactions([str(seg)])
    kl.read_table(str(tmp_path / "logs"), isolationLevel="read_committed")
    assert logview.walk_count() == walks
    # the file grows: one walk of the appended bytes, whoever asks first
    size = seg.stat().st_size
    a.append(0, batches=2, per_batch=4)
    a.sync()
    grown = seg.stat().st_size - size
    before = logview.bytes_walked()
    assert src.latest({KEY: 120}, Limit()) == {KEY: 128}
    assert logview.bytes_walked() - before == grown
    assert log_transactions([str(seg)]).last_stable_offset > 128  # nothing undecided
    assert logview.bytes_walked() - before == grown
    assert logview.walk_count() == walks + 1


def test_a_walk_from_the_index_is_extended_to_byte_0_once(tmp_path: Path) -> None:
    a, seg = _archive(tmp_path / "logs")
    plog = a.log(0)
    seg.with_suffix(".index").write_bytes(
        b"".join(struct.pack(">ii", o, q) for o, q in plog.active.index)
    )
    assert plog.active.index, "index entries to start from"
    logview.forget()
    src = StreamSource(parse_options(paths=str(tmp_path / "logs")))
    assert src.latest(src.initial(), Limit()) == {KEY: 120}
    w = logview.segment_walk(str(seg), 0)
    assert w is not None and not w.from_start and w.walked < seg.stat().st_size
    walks = logview.walk_count()
    assert log_transactions([str(seg)]).last_stable_offset > 120
    assert logview.walk_count() == walks + 1
    w2 = logview.segment_walk(str(seg), 0, from_start=True)
    assert w2 is not None and w2.from_start and w2.epoch == w.epoch  # the same bytes
    assert logview.segment_walk(str(seg), 0) is w2  # and it answers the end too
    assert logview.walk_count() == walks + 1


def test_changed_since_tells_append_from_rewrite(tmp_path: Path) -> None:
    a, seg = _archive(tmp_path / "logs")
    logview.forget()
    w0 = logview.segment_walk(str(seg), 0)
    assert w0 is not None and w0.end == 120 and w0.from_start and w0.batches == 30
    assert logview.segment_walk(str(seg), 0) is w0  # unchanged: the cached walk
    a.append(0, batches=1, per_batch=4)
    a.sync()
    w1 = logview.segment_walk(str(seg), 0)
    assert w1 is not None and w1.end == 124 and w1.epoch == w0.epoch
    assert w1.walked == seg.stat().st_size - w0.size  # only the appended bytes
    assert logview.changed_since(w0, w1) is None
    # an identical copy put in place (another inode): walked again, nothing changed
    copy = seg.with_suffix(".copy")
    shutil.copy2(seg, copy)
    os.replace(copy, seg)
    w2 = logview.segment_walk(str(seg), 0)
    assert w2 is not None and w2.epoch != w1.epoch and w2.walked == seg.stat().st_size
    assert logview.changed_since(w1, w2) is None
    # truncated to offset 40 and written again as other batches: exact from offset 40
    a.truncate(0, 40)
    a.append(0, batches=5, per_batch=7)
    a.sync()
    w3 = logview.segment_walk(str(seg), 0)
    assert w3 is not None and w3.end == 75
    rw = logview.changed_since(w2, w3)
    assert rw is not None and (rw.changed, rw.known_end, rw.exact) == (40, 124, True)


def test_a_rewrite_seen_first_by_the_planner_still_reaches_the_stream(tmp_path: Path) -> None:
    """The walk is shared, the comparison is the stream's own: a rewrite the planner walked
    first is still reported to the stream that had delivered the replaced offsets."""
    a, seg = _archive(tmp_path / "logs")
    _checkpoint(tmp_path / "logs" / "recovery-point-offset-checkpoint", [("orders", 0, 10)])
    src = StreamSource(parse_options(paths=str(tmp_path / "logs")), fail_on_data_loss=False)
    end = src.latest(src.initial(), Limit())
    assert end == {KEY: 120}
    a.truncate(0, 100)
    a.append(0, batches=5, per_batch=5)
    a.sync()
    kl.read_table(str(tmp_path / "logs"))  # the planner walks the changed file first
    assert src.latest(end, Limit()) == {KEY: 125}
    assert src.lost == 20  # offsets 100..119, delivered, now hold other records


def test_damage_is_part_of_the_walk(tmp_path: Path) -> None:
    a, seg = _archive(tmp_path / "logs")
    data = bytearray(seg.read_bytes())
    w = logview.segment_walk(str(seg), 0)
    assert w is not None
    pos = w.prints[10][2]
    data[pos + 16] = 7  # an unknown magic byte in the 11th batch
    seg.write_bytes(bytes(data))
    logview.forget()  # (bytes changed in place before the last batch: an append to the cache)
    w = logview.segment_walk(str(seg), 0)
    assert w is not None and w.end == 40 and isinstance(w.error, CorruptDataError)
    assert "magic" in w.error.reason and w.error.position == pos
    src = StreamSource(parse_options(paths=str(tmp_path / "logs")))
    with pytest.raises(CorruptDataError, match="magic"):
        src.latest(src.initial(), Limit())
    lenient = StreamSource(parse_options(paths=str(tmp_path / "logs"), mode="DROPMALFORMED"))
    assert lenient.latest(lenient.initial(), Limit()) == {KEY: 40}


def test_read_committed_markers_come_from_the_shared_walk(tmp_path: Path) -> None:
    a = Archive(tmp_path / "logs")
    txn = ProducerId(7)
    a.append(0, batches=3, per_batch=2)
    a.append(0, batches=2, per_batch=2, producer=txn)  # undecided: the LSO is offset 6
    a.sync()
    seg = tmp_path / "logs" / "orders-0" / f"{0:020d}.log"
    logview.forget()
    lt = log_transactions([str(seg)])
    assert lt.last_stable_offset == 6
    w = logview.segment_walk(str(seg), 0)
    assert w is not None and w.from_start and w.events == ((6, 7, logview.DATA),)
