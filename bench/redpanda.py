"""Reading a Redpanda segment against reading the same records as a Kafka segment (issue 42's
goal: at most 1.1x the CPU).

One Kafka segment is built with kafka-python's builders (``segments.py``), then rewritten batch
by batch as Redpanda stores it: the 61-byte little-endian header (header_crc, size_bytes, raft
base offset, type 1, the same crc, attrs..record_count) before the same records, with a
``raft_configuration`` batch first (as every Redpanda segment of a new term starts) so the
offsets are translated. Both are read with ``kafkalog_source.read_table`` in the same process,
alternately, each as a new process would (no header walk remembered), and the CPU time (``time.process_time``) of each read is taken; the ratio of the
medians is printed.

    .venv/bin/python bench/redpanda.py --mib 64 --codec none --rounds 5

The Redpanda read's extra work is the walk of its headers (one per batch: the header CRC
checked by a compiled chain), the Kafka headers made from them and laid over the file's bytes
as they are read; the records cost the same (the same kernels decode the same bytes).
"""

from __future__ import annotations

import argparse
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

import crc32c

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from segments import build_segment  # noqa: E402

import kafkalog_source as kl  # noqa: E402

_KAFKA = struct.Struct(">qiiBIhiqqqhii")
_REDPANDA_REST = struct.Struct("<iqbIhiqqqhii")  # the header after header_crc


def _redpanda_batch(raft_base: int, batch_type: int, crc: int, tail: tuple, body: bytes) -> bytes:
    rest = _REDPANDA_REST.pack(61 + len(body), raft_base, batch_type, crc, *tail)
    return struct.pack("<I", crc32c.crc32c(rest)) + rest + body


def to_redpanda(kafka: bytes) -> bytes:
    """The Kafka segment ``kafka`` as a Redpanda segment: a raft_configuration batch at raft
    offset 0, then every batch at raft offset (Kafka offset + 1)."""
    config_tail = (0, 0, 0, 0, -1, -1, -1, 1)
    config_body = b"\x0e\x00\x00\x00\x02\x00\x00\x00"  # one small record (not decoded)
    config_crc = crc32c.crc32c(config_body, crc32c.crc32c(struct.pack(">hiqqqhii", *config_tail)))
    out = [_redpanda_batch(0, 2, config_crc, config_tail, config_body)]
    pos = 0
    view = memoryview(kafka)
    while pos + 61 <= len(kafka):
        h = _KAFKA.unpack_from(kafka, pos)
        base, length, crc, tail = h[0], h[1], h[4], h[5:]
        end = pos + 12 + length
        out.append(_redpanda_batch(base + 1, 1, crc, tail, bytes(view[pos + 61 : end])))
        pos = end
    return b"".join(out)


def _forget() -> None:
    """As a new process: no header walk remembered (the planner's, the Redpanda views)."""
    from kafkalog_source.layout import checkpoints, redpanda
    from kafkalog_source.planning import logview

    logview.forget()
    checkpoints.forget()
    redpanda.forget()


def _cpu(path: Path) -> tuple[float, int]:
    _forget()
    t = time.process_time()
    table = kl.read_table(str(path), threads=1)
    return time.process_time() - t, table.num_rows


def main(argv: list[str] | None = None) -> int:
    """Build the two segments, read each ``--rounds`` times alternately, print the ratio."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--codec", default="none", choices=("none", "gzip", "snappy", "lz4", "zstd"))
    ap.add_argument("--shape", default="A", choices=("A", "B"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch-bytes", type=int, default=16 << 10)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kafkalog-redpanda-bench-") as tmp:
        root = Path(tmp)
        kdir = root / "kafka" / "orders-0"
        info = build_segment(
            kdir / "00000000000000000000.log", args.shape, 2, args.codec, args.mib << 20,
            args.batch_bytes,
        )  # fmt: skip
        rdir = root / "redpanda" / "kafka" / "orders" / "0_1"
        rdir.mkdir(parents=True)
        rpath = rdir / "0-1-v1.log"
        rpath.write_bytes(to_redpanda(info.path.read_bytes()))
        kafka_t, redpanda_t = [], []
        for _ in range(args.rounds):
            t, n = _cpu(info.path)
            kafka_t.append(t)
            t2, n2 = _cpu(rpath)
            redpanda_t.append(t2)
            if n != n2 or n != info.records:
                raise SystemExit(f"rows differ: Kafka {n}, Redpanda {n2}, built {info.records}")
        k, r = statistics.median(kafka_t), statistics.median(redpanda_t)
        print(
            f"{info.records} records in {info.batches} batches ({info.size_bytes >> 20} MiB, "
            f"codec {args.codec}, shape {args.shape}); CPU median of {args.rounds}: "
            f"Kafka {k * 1000:.1f} ms, Redpanda {r * 1000:.1f} ms; redpanda/kafka {r / k:.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
