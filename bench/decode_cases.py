"""The decode benchmark's cases and files (bench/decode.py, bench/ab.py): record shape, magic
and codec of each case, the segment generated for it under ``bench/_data/`` with
:func:`segments.build_segment`, the spans and compressed payloads inside it, and the result
record of one case's timings."""

from __future__ import annotations

import json
import os
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from segments import build_segment

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DATA = BENCH / "_data"

MiB = 1 << 20
MB = 1e6
ARROW_CHUNK = 65536  # rows per aiokafka -> Arrow record batch (kafkalog's recordsPerBatch)
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
STARTUP_CASE = "B-v2-lz4"  # headers + decompression: exercises most of the v2 kernel
STARTUP_MIB = 1.0


@dataclass(frozen=True)
class Case:
    """One benchmark file: record shape, magic and codec."""

    shape: str
    magic: int
    codec: str

    @property
    def name(self) -> str:
        """The case name used by ``--cases``, e.g. ``A-v2-lz4``."""
        return f"{self.shape}-v{self.magic}-{self.codec}"

    @property
    def compressed(self) -> bool:
        """True when the batches are compressed."""
        return self.codec != "none"

    @property
    def v2_plain(self) -> bool:
        """True for v2 uncompressed (where the aiokafka targets apply)."""
        return self.magic == 2 and not self.compressed


ALL_CASES: tuple[Case, ...] = tuple(
    Case(shape, magic, codec)
    for shape in ("A", "B")
    for magic, codecs in ((2, ("none", "lz4", "zstd", "snappy", "gzip")), (1, ("none", "gzip")))
    for codec in codecs
)


@dataclass
class Segment:
    """A generated segment file and what it holds."""

    path: Path
    size: int
    records: int
    batches: int


@dataclass
class Result:
    """Best-of-N timings (seconds) for one case; decompress is None for uncompressed files."""

    case: Case
    seg: Segment
    ours: float = float("nan")
    narrow: float = float("nan")
    nocrc: float = float("nan")
    copy: float = float("nan")
    aio_iter: float = float("nan")
    aio_arrow: float = float("nan")
    kp: float = float("nan")
    kp_bytes: int = 0
    kp_records: int = 0
    decompress: float | None = None
    decompressed_bytes: int = 0
    warnings: list[str] = field(default_factory=list)

    def rate(self, secs: float, records: int | None = None) -> float:
        """Records per second for a whole-file timing (or ``records`` in ``secs``)."""
        return (self.seg.records if records is None else records) / secs

    @property
    def ours_rps(self) -> float:
        """Our records/s (full schema)."""
        return self.rate(self.ours)

    @property
    def kp_rps(self) -> float:
        """kafka-python records/s, from the prefix."""
        return self.rate(self.kp, self.kp_records)

    @property
    def vs_aio_iter(self) -> float:
        """Our speed-up over aiokafka iterate."""
        return self.aio_iter / self.ours

    @property
    def vs_aio_arrow(self) -> float:
        """Our speed-up over aiokafka -> Arrow."""
        return self.aio_arrow / self.ours

    @property
    def vs_kp(self) -> float:
        """Our speed-up over kafka-python (per record)."""
        return self.ours_rps / self.kp_rps

    @property
    def overhead(self) -> float | None:
        """Our decode time over decompress-only time (compressed cases)."""
        return None if self.decompress is None else self.ours / self.decompress


# ---------------------------------------------------------------------------- segment files
def ensure_segment(case: Case, size_bytes: int, prefix: str = "") -> Segment:
    """Build the case's segment under bench/_data/ unless a matching one is already there."""
    mib = size_bytes / MiB
    stem = f"{prefix}{case.name}-{mib:g}mib"
    path = DATA / f"{stem}.log"
    meta = DATA / f"{stem}.json"
    if path.exists() and meta.exists():
        info = json.loads(meta.read_text())
        if info.get("size") == path.stat().st_size:
            return Segment(path, info["size"], info["records"], info["batches"])
    DATA.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    start = time.perf_counter()
    built = build_segment(partial, case.shape, case.magic, case.codec, size_bytes)
    os.replace(partial, path)
    seg = Segment(path, built.size_bytes, built.records, built.batches)
    meta.write_text(json.dumps({"size": seg.size, "records": seg.records, "batches": seg.batches}))
    print(
        f"  built {path.name}: {seg.size / MiB:.1f} MiB, {seg.records} records "
        f"({time.perf_counter() - start:.1f}s)",
        flush=True,
    )
    return seg


def entry_spans(data: bytes, limit: int | None = None) -> Iterator[tuple[int, int]]:
    """(position, size) of each top-level batch or legacy message, up to ``limit`` bytes."""
    end = len(data) if limit is None else min(limit, len(data))
    unpack = struct.Struct(">i").unpack_from
    pos = 0
    while pos + 12 <= end:
        size = 12 + unpack(data, pos + 8)[0]
        if pos + size > end:
            return
        yield pos, size
        pos += size


def prefix_end(data: bytes, limit: int) -> int:
    """End of the last whole top-level entry within the first ``limit`` bytes (at least one)."""
    end = 0
    for pos, size in entry_spans(data, limit):
        end = pos + size
    if end == 0:
        first = next(entry_spans(data), None)
        end = first[0] + first[1] if first else len(data)
    return end


def compressed_payloads(data: bytes, magic: int) -> list[memoryview]:
    """The compressed payloads: v2 batch bytes 61..end, v1 wrapper message values."""
    mv = memoryview(data)
    out: list[memoryview] = []
    for pos, size in entry_spans(data):
        if magic == 2:
            out.append(mv[pos + 61 : pos + size])
            continue
        q = pos + 18 + (8 if data[pos + 16] == 1 else 0)  # past offset/size/crc/magic/attrs/ts
        klen = struct.unpack_from(">i", data, q)[0]
        q += 4 + max(klen, 0)
        vlen = struct.unpack_from(">i", data, q)[0]
        out.append(mv[q + 4 : q + 4 + vlen])
    return out
