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
from conftest import SAMPLES
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


# ---------------------------------------------------------------- found by review (session 8)
def _index(seg: Path, a: Archive) -> None:
    seg.with_suffix(".index").write_bytes(
        b"".join(struct.pack(">ii", o, q) for o, q in a.log(0).active.index)
    )


@pytest.mark.parametrize("lost", ["forget", "evicted"])
def test_a_stream_survives_the_cache_losing_its_walk(
    tmp_path: Path, lost: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pure appends while the shared cache loses the file (forget, or evicted by other files):
    no false rewrite, the stream goes on from its own walk."""
    a, seg = _archive(tmp_path / "logs")
    _index(seg, a)
    if lost == "evicted":
        monkeypatch.setattr(logview, "_CACHE_FILES", 1)
        a.append(1, batches=5, per_batch=4)  # another partition's segment evicts this one
        a.sync()
    logview.forget()
    src = StreamSource(parse_options(paths=str(tmp_path / "logs")))
    end = src.latest(src.initial(), Limit())
    assert end[KEY] == 120
    a.append(0, batches=30, per_batch=4)
    a.sync()
    _index(seg, a)
    if lost == "forget":
        logview.forget()
    assert src.latest(end, Limit())[KEY] == 240
    assert src.lost == 0


def test_a_legacy_walk_from_the_middle_matches_a_full_walk(tmp_path: Path) -> None:
    """A v0/v1 entry's header holds its last offset only: a walk from an .index entry does not
    claim the segment's base as its first offset, and is not taken for a rewrite."""
    src = SAMPLES / "magic1-gzip-0" / "00000000000000000000.log"
    seg = tmp_path / "magic1-gzip-0" / src.name
    seg.parent.mkdir()
    shutil.copy(src, seg)
    logview.forget()
    full = logview.segment_walk(str(seg), 0)
    assert full is not None and len(full.prints) > 2
    mid = full.prints[-1][2]
    logview.forget()
    part = logview.segment_walk(str(seg), 0, start_at=lambda: mid)
    assert part is not None and part.prints[0][0] == part.prints[0][1]  # no guessed first
    logview.forget()
    again = logview.segment_walk(str(seg), 0)
    assert again is not None and logview.changed_since(part, again) is None


def test_a_deep_truncation_is_reported_from_the_segment_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the batches the stream knew are older than what the new walk keeps, a changed
    header means anything from the segment's start may differ: not just the last batch."""
    monkeypatch.setattr(logview, "PRINTS", 8)
    a, seg = _archive(tmp_path / "logs")
    logview.forget()
    known = logview.segment_walk(str(seg), 0)
    assert known is not None
    a.truncate(0, 20)
    a.append(0, batches=40, per_batch=4)  # grows past the old end again
    a.sync()
    now = logview.segment_walk(str(seg), 0)
    rw = logview.changed_since(known, now)
    assert rw is not None and (rw.changed, rw.exact) == (0, False)


def test_read_committed_cache_keys_are_the_walked_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transaction appended between a segment's walk and the cache's key: the next call sees
    it (the result is cached under the versions it was made from)."""
    from kafkalog_source.planning import transactions

    a = Archive(tmp_path / "logs")
    a.append(0, batches=5, per_batch=2)
    a.sync()
    seg = str(tmp_path / "logs" / "orders-0" / f"{0:020d}.log")
    real = transactions.summarize_segment
    fired: list[int] = []

    def racing(path, base=None):  # noqa: ANN001, ANN202
        s = real(path, base)
        if not fired:  # the broker appends an open transaction right after the walk
            fired.append(1)
            a.append(0, batches=1, per_batch=2, producer=ProducerId(7))
            a.sync()
        return s

    monkeypatch.setattr(transactions, "summarize_segment", racing)
    transactions.log_transactions([seg])
    monkeypatch.setattr(transactions, "summarize_segment", real)
    assert transactions.log_transactions([seg]).last_stable_offset == 10


def test_a_selected_part_of_a_partition_is_not_called_cut(tmp_path: Path) -> None:
    """Reading or verifying one segment file (or a glob of some) of a partition: the evidence
    about the log's end is for the directory's last segment, not the last one selected."""
    from conftest import run_cli

    a = Archive(tmp_path / "logs")
    a.append(0, batches=10, per_batch=4)
    a.roll(0)
    a.append(0, batches=10, per_batch=4)
    a.sync()
    _checkpoint(tmp_path / "logs" / "recovery-point-offset-checkpoint", [("orders", 0, 80)])
    first = tmp_path / "logs" / "orders-0" / f"{0:020d}.log"
    stats = kl.ReadStats()
    assert kl.read_table(str(first), stats=stats, failOnDataLoss=True).num_rows == 40
    assert stats.missing_offsets == 0
    glob = kl.read_table(
        str(tmp_path / "logs"), pathGlobFilter=first.name, failOnDataLoss=True
    ).num_rows
    assert glob == 40
    assert run_cli("verify", str(first), "--quiet").returncode == 0
    # the directory's real last segment cut: still reported
    last = tmp_path / "logs" / "orders-0" / f"{40:020d}.log"
    last.write_bytes(last.read_bytes()[: last.stat().st_size // 2])
    with pytest.raises(kl.DataLossError, match="recovery-point"):
        kl.read_table(str(tmp_path / "logs"), failOnDataLoss=True)
