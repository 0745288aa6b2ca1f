"""A growing Kafka archive for the stream tests, written with kafka-python's record builders.

It drives ``sample_segments/generate.py``'s broker emulation (kafka-python's
``DefaultRecordBatchBuilder``, the broker's marker and index bookkeeping) and writes each
partition directory the way a broker's files grow: the active segment's ``.log`` is appended to
in place, and a rolled segment gets its ``.index`` and ``.timeindex``. The expected rows come
from the emulation's own bookkeeping (which record is committed, aborted or still open), not
from kafkalog.
"""

from __future__ import annotations

import importlib.util
import os
import struct
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location(
    "kafkalog_generate", ROOT / "sample_segments" / "generate.py"
)
gen = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["kafkalog_generate"] = gen
_spec.loader.exec_module(gen)  # type: ignore[union-attr]

Rec = gen.Rec
ProducerId = gen.ProducerId
COMMIT = gen.CONTROL_COMMIT
ABORT = gen.CONTROL_ABORT
T0 = 1_700_000_000_000


class Archive:
    """Partition logs under ``root`` that grow between stream runs."""

    def __init__(self, root: Path, topic: str = "orders") -> None:
        self.root = root
        self.topic = topic
        self.logs: dict[int, Any] = {}
        self._written: dict[tuple[int, int], int] = {}  # (partition, segment base) -> bytes
        self._n = 0

    def log(self, partition: int) -> Any:
        """The partition's log (created empty on first use)."""
        if partition not in self.logs:
            self.logs[partition] = gen.PartitionLog(self.topic, partition, "stream test")
        return self.logs[partition]

    def _records(self, n: int) -> list[Any]:
        out = []
        for _ in range(n):
            self._n += 1
            value = b"value-%06d " % self._n + b"lorem ipsum dolor " * 4  # compressible
            out.append(Rec(T0 + self._n, b"k%d" % self._n, value))
        return out

    def append(
        self,
        partition: int,
        batches: int = 1,
        per_batch: int = 3,
        codec: str = "none",
        producer: Any = None,
    ) -> None:
        """Append ``batches`` batches (transactional when ``producer`` is given)."""
        for _ in range(batches):
            self.log(partition).append_v2(
                self._records(per_batch),
                codec,
                producer=producer,
                transactional=producer is not None,
            )

    def marker(self, partition: int, producer: Any, kind: int) -> None:
        """Append a COMMIT or ABORT marker for ``producer``'s open transaction."""
        self.log(partition).append_marker(producer, kind, T0 + self._n)

    def roll(self, partition: int) -> None:
        """Close the active segment and start a new one (written at the next sync)."""
        self.log(partition).roll()

    def truncate(self, partition: int, offset: int) -> None:
        """Cut the partition's active segment before ``offset`` (a batch's base offset), as a
        follower truncates its log after a leader change; the next :meth:`sync` rewrites the
        file in place (shorter), and later appends reuse the offsets from ``offset`` on."""
        plog = self.log(partition)
        seg = plog.active
        keep = [e for e in seg.entries if e.last_offset < offset]
        assert len(keep) < len(seg.entries) and offset > seg.base_offset
        assert seg.entries[len(keep)].base_offset == offset, "cut at a batch boundary"
        cut = seg.entries[len(keep)].position
        del seg.log[cut:]
        seg.entries = keep
        seg.index = [(o, q) for o, q in seg.index if q < cut]
        seg.timeindex = [(t, o) for t, o in seg.timeindex if o < offset]
        plog.next_offset = offset
        self._written[(partition, seg.base_offset)] = -1  # rewrite the whole file

    def sync(self, atomic: bool = False) -> None:
        """Write what is new: appended bytes to each ``.log``, indexes of closed segments; a
        truncated segment (:meth:`truncate`) is written again in place (same inode), or with
        ``atomic`` as a new file renamed over the old one (a reader never sees it half done)."""
        for partition, plog in self.logs.items():
            d = self.root / plog.name
            d.mkdir(parents=True, exist_ok=True)
            for i, seg in enumerate(plog.segments):
                stem = f"{seg.base_offset:020d}"
                done = self._written.get((partition, seg.base_offset), 0)
                if done < 0 and atomic:
                    tmp = self.root / f".{plog.name}-{stem}.tmp"
                    tmp.write_bytes(bytes(seg.log))
                    os.replace(tmp, d / f"{stem}.log")
                    done = len(seg.log)
                    self._written[(partition, seg.base_offset)] = done
                elif done < 0:
                    with open(d / f"{stem}.log", "r+b") as f:
                        f.truncate(0)
                    done = 0
                if done < len(seg.log) or not (d / f"{stem}.log").exists():
                    with open(d / f"{stem}.log", "ab") as f:
                        f.write(bytes(seg.log[done:]))
                    self._written[(partition, seg.base_offset)] = len(seg.log)
                closed = i < len(plog.segments) - 1
                if closed and not (d / f"{stem}.index").exists():
                    (d / f"{stem}.index").write_bytes(
                        b"".join(struct.pack(">ii", o - seg.base_offset, p) for o, p in seg.index)
                    )
                    (d / f"{stem}.timeindex").write_bytes(
                        b"".join(
                            struct.pack(">qi", t, o - seg.base_offset) for t, o in seg.timeindex
                        )
                    )

    def expected(self, committed_only: bool = True) -> list[tuple[str, int, int, bytes]]:
        """``(topic, partition, offset, value)`` of every data record (read_committed: without
        aborted and still-open transactions), from the emulation's bookkeeping."""
        out = []
        for partition, plog in sorted(self.logs.items()):
            for seg in plog.segments:
                for e in seg.entries:
                    for row in e.rows:
                        if row["isControl"]:
                            continue
                        if committed_only and row["txn"] in ("aborted", "open"):
                            continue
                        value = bytes.fromhex(row["value"])
                        out.append((self.topic, partition, row["offset"], value))
        return out
