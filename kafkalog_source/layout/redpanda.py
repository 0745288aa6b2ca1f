"""Redpanda segments read as Kafka segments: the walk of a segment's headers (both CRCs' first,
the header_crc, checked here), the Kafka view of its bytes (:class:`RedpandaSource`), and the
partition-level offset translation (:func:`translate_partition`). Facts in
:mod:`..format.redpanda`.

**The Kafka view.** Redpanda's batch header is 61 bytes, as Kafka's v2 header is, and its
records are Kafka v2 records under Kafka's CRC; so a ``raft_data`` batch becomes a Kafka batch
by rewriting its header alone (big-endian, base offset = its Kafka offset, leader epoch = the
segment's term, the same CRC), and every layer above (framing, CRC check, decompression, the
record kernels, transactions, failOnDataLoss) reads it as it reads Kafka's. A batch of a type
that takes Kafka offsets but holds no client record (tx_fence, tx_prepare, ...) becomes an
empty Kafka batch over the same offsets (a gap a consumer sees, as Redpanda's fetch shows it);
a batch of a type that takes no Kafka offset (raft_configuration, ...) is left out. The view is
therefore shorter than the file: byte positions in it (``batchPosition``, positions in errors)
are positions in the view; :meth:`RedpandaSource.file_position` maps one back, and ``kafkalog
dump`` prints both.

**Damage.** A header whose header_crc fails is presented as a Kafka batch over the bytes up to
the next good header with a CRC that fails, so the Kafka layers report it (and failOnDataLoss,
``mode``, ReadStats apply) as any damaged batch; a cut last batch stays cut (quiet only at the
end of a partition's last segment, as for Kafka); a zero header ends the data, and the bytes
from it on are kept (zeros end quietly, anything else is damage). In ``raw`` mode (Redpanda's
own namespaces, or ``redpanda=raw``) every batch is presented, based at its raft offset, with
its control and transactional bits cleared (the CRC recomputed when it held).
"""

from __future__ import annotations

import bisect
import contextvars
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import crc32c as _crc32c
import numpy as np

from ..errors import CorruptDataError, OptionError
from ..format.batch import CONTROL_BIT, LOG_OVERHEAD, TRANSACTIONAL_BIT
from ..format.redpanda import (
    ATTRS_AT,
    ATTRS_TAIL,
    ATTRS_TAIL_BE,
    BASE_OFFSET_AT,
    HASH_PREFIX,
    HEADER,
    HEADER_SIZE,
    INTERNAL_NAMESPACES,
    MANIFEST_BIN,
    MANIFEST_JSON,
    MAX_TYPE,
    META_DIR,
    NO_KAFKA_OFFSET,
    RAFT_DATA,
    SIZE_AT,
    TYPE_AT,
    ZERO_HEADER,
    PartitionManifest,
    SegmentName,
    crc_input_of_header,
    header_columns,
    kafka_header,
    kafka_headers,
    parse_manifest_json,
    parse_partition_dir,
    parse_segment_name,
    takes_kafka_offset,
    type_name,
    with_crc,
)
from ..kernel.redpanda import chain_headers, put_rows
from ..transport.base import ByteSource
from ..transport.filesystems import is_remote

_SCAN_CHUNK = 1 << 20


def crc32c(data: Any, value: int = 0) -> int:
    """CRC-32C of ``data`` (continuing from ``value``)."""
    return _crc32c.crc32c(data, value)


# ---- where a segment is ------------------------------------------------------------------------


@dataclass(frozen=True)
class RedpandaPath:
    """What a Redpanda segment's path says: namespace, topic, partition, revision, the name."""

    namespace: str | None
    topic: str | None
    partition: int | None
    revision: int | None
    name: SegmentName
    remote_prefix: str | None = None  # a tiered-storage object: the bucket's root below which

    @property
    def internal(self) -> bool:
        """A partition of Redpanda's own state (namespace ``kafka_internal`` or ``redpanda``;
        a partition directory whose grandparent is another directory is a user topic's)."""
        return self.namespace in INTERNAL_NAMESPACES


def _parts(path: str) -> list[str]:
    return path.rstrip("/").split("/") if "://" in path else os.path.abspath(path).split(os.sep)


def redpanda_path(path: str) -> RedpandaPath | None:
    """A Redpanda segment file or tiered-storage object's path parsed: its name must be a
    Redpanda segment name; namespace, topic and partition come from
    ``<ns>/<topic>/<p>_<rev>/`` above it when they are there. None for another name."""
    parts = _parts(path)
    name = parse_segment_name(parts[-1])
    if name is None:
        return None
    pr = parse_partition_dir(parts[-2]) if len(parts) >= 2 else None
    if pr is None or len(parts) < 4:
        return RedpandaPath(None, None, None, None, name)
    return RedpandaPath(parts[-4], parts[-3], pr[0], pr[1], name)


def partition_home(path: str) -> str | None:
    """The directory that stands for a Redpanda segment's partition: its ``<p>_<rev>``
    directory, without the hash prefix of a tiered-storage key (every object of a partition
    is under a hash of its own key); None for another path."""
    parts = _parts(path)
    if parse_segment_name(parts[-1]) is None or len(parts) < 2:
        return None
    if parse_partition_dir(parts[-2]) is None or len(parts) < 5 or "://" not in path:
        return os.path.dirname(path) if "://" not in path else "/".join(parts[:-1])
    if HASH_PREFIX.match(parts[-5]):
        return "/".join(parts[:-5] + parts[-4:-1])
    return "/".join(parts[:-1])


def is_redpanda_segment(path: str) -> bool:
    """Whether ``path`` is named as a Redpanda segment (``<base>-<term>-v1.log``, tiered names)."""
    return redpanda_path(path) is not None


# ---- the walk ------------------------------------------------------------------------------------


@dataclass
class BatchInfo:
    """One batch of a walked segment."""

    file_pos: int
    size: int  # bytes in the file (a cut batch: what its header says)
    raft_base: int
    raft_last: int
    type: int
    attrs: int
    record_count: int
    kafka_base: int | None  # None: takes no Kafka offset (or raw mode: the raft base)
    view_pos: int | None  # None: left out of the view
    damage: str | None = None  # why the batch is damaged, when it is


@dataclass
class SegmentView:
    """A Redpanda segment walked: its batches, the Kafka view's byte map and headers, and the
    offset translation across it."""

    path: str
    file_size: int
    term: int
    raw: bool
    delta_start: int  # offsets before the segment that took no Kafka offset
    delta_end: int = 0
    next_raft: int | None = None  # one past the last raft offset of a batch in it
    view_size: int = 0
    # the batches walked by the vectorised path (numpy arrays by field), then those walked one
    # by one (after damage, at the end)
    fast: dict[str, np.ndarray] | None = None
    slow: list[BatchInfo] = field(default_factory=list)
    # contiguous file runs of the view: (view start, file start, length), by view start
    runs: list[tuple[int, int, int]] = field(default_factory=list)
    patch_pos: Any = None  # view positions of rewritten headers (int64 array, sorted)
    patches: Any = None  # their 61 bytes each (uint8 array, one row each)
    tail_kind: str = "clean"  # clean, zeros (a zero header), cut
    left_out: int = 0  # batches of types with no Kafka offset
    damaged: int = 0
    _batches: list[BatchInfo] | None = None

    @property
    def kafka_next(self) -> int | None:
        """The Kafka offset after the segment's last batch."""
        return None if self.next_raft is None else self.next_raft - self.delta_end

    @property
    def batches(self) -> list[BatchInfo]:
        """Every batch, in file order."""
        if self._batches is None:
            out = []
            f = self.fast
            if f is not None:
                for i in range(len(f["file_pos"])):
                    kb, vp = int(f["kafka_base"][i]), int(f["view_pos"][i])
                    out.append(
                        BatchInfo(
                            int(f["file_pos"][i]),
                            int(f["size"][i]),
                            int(f["raft_base"][i]),
                            int(f["raft_last"][i]),
                            int(f["type"][i]),
                            int(f["attrs"][i]),
                            int(f["count"][i]),
                            None if kb < 0 else kb,
                            None if vp < 0 else vp,
                        )
                    )
            self._batches = out + self.slow
        return self._batches

    def type_counts(self) -> dict[int, int]:
        """How many batches of each Redpanda batch type the segment holds (damaged ones by
        what their header says)."""
        out: dict[int, int] = {}
        f = self.fast
        if f is not None and len(f["type"]):
            types, counts = np.unique(f["type"], return_counts=True)
            out = dict(zip(types.tolist(), counts.tolist(), strict=True))
        for b in self.slow:
            out[b.type] = out.get(b.type, 0) + 1
        return out

    def shown(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
        """View positions, file positions and types of the batches in the view (by view
        position), and the indexes in :attr:`batches` of those walked one by one."""
        f = self.fast
        vp, fp, ty = [], [], []
        if f is not None:
            keep = f["view_pos"] >= 0
            vp, fp, ty = [f["view_pos"][keep]], [f["file_pos"][keep]], [f["type"][keep]]
        slow = [b for b in self.slow if b.view_pos is not None]
        vp.append(np.array([b.view_pos for b in slow], dtype=np.int64))
        fp.append(np.array([b.file_pos for b in slow], dtype=np.int64))
        ty.append(np.array([b.type for b in slow], dtype=np.int64))
        return (
            np.concatenate(vp).astype(np.int64),
            np.concatenate(fp).astype(np.int64),
            np.concatenate(ty).astype(np.int64),
            [i for i, b in enumerate(self.slow) if b.view_pos is not None],
        )


class _Reader:
    """Headers read from a source: whole windows for small batches, one header for big ones."""

    def __init__(self, src: ByteSource, data: bytes | None = None) -> None:
        self.src = src
        self.data = data  # the whole file, when it was read at once (remote objects)
        self.win_start = 0
        self.win = b"" if data is None else data

    def read(self, pos: int, n: int, window: int) -> bytes:
        if self.data is not None:
            return self.data[pos : pos + n]
        if not (self.win_start <= pos and pos + n <= self.win_start + len(self.win)):
            self.win_start = pos
            self.win = self.src.read(pos, max(n, window))
        at = pos - self.win_start
        return self.win[at : at + n]


def _is_zero(reader: _Reader, pos: int, end: int) -> bool:
    while pos < end:
        n = min(_SCAN_CHUNK, end - pos)
        data = reader.read(pos, n, n)
        if data.count(0) != len(data):
            return False
        pos += n
    return True


def _good_header(reader: _Reader, q: int, size: int) -> bool:
    hb = reader.read(q, HEADER_SIZE, HEADER_SIZE)
    if len(hb) < HEADER_SIZE:
        return False
    if hb == ZERO_HEADER:
        return True
    h = HEADER.unpack_from(hb)
    return HEADER_SIZE <= h[1] and crc32c(hb[4:]) == h[0]


def _next_good(reader: _Reader, start: int, size: int) -> int:
    """The first position from ``start`` where a header whose header_crc holds (or a zero
    header) starts; ``size`` when none does."""
    q = start
    while q + HEADER_SIZE <= size:
        chunk = reader.read(q, min(_SCAN_CHUNK + HEADER_SIZE, size - q), _SCAN_CHUNK + HEADER_SIZE)
        last = len(chunk) - HEADER_SIZE
        a = np.frombuffer(chunk, dtype=np.uint8)
        m = last + 1
        # cheap tests first, at every position at once: a small type byte, and a size field
        # that frames a batch within the file (or a zero header's zero)
        sz = a[SIZE_AT : SIZE_AT + m].astype(np.int64)
        for k in range(1, 4):
            sz |= a[SIZE_AT + k : SIZE_AT + k + m].astype(np.int64) << (8 * k)
        room = size - (q + np.arange(m, dtype=np.int64))
        cand = np.flatnonzero(
            (a[TYPE_AT : TYPE_AT + m] <= MAX_TYPE)
            & (((sz >= HEADER_SIZE) & (sz <= room)) | (sz == 0))
        )
        for i in cand.tolist():
            hb = chunk[i : i + HEADER_SIZE]
            h0, n = HEADER.unpack_from(hb)[:2]
            if hb == ZERO_HEADER or (n >= HEADER_SIZE and crc32c(hb[4:]) == h0):
                return q + i
        q += last + 1
    return size


class _Builder:
    """Accumulates a :class:`SegmentView`'s byte map."""

    def __init__(self, view: SegmentView) -> None:
        self.v = view
        self.vpos = 0
        self.run: list[int] | None = None  # [view start, file start, length]
        self.patch_pos: list[int] = []
        self.patches = bytearray()
        self.fast_pos: np.ndarray | None = None
        self.fast_patches: np.ndarray | None = None

    def file_bytes(self, file_pos: int, n: int) -> None:
        r = self.run
        if r is not None and r[1] + r[2] == file_pos and r[0] + r[2] == self.vpos:
            r[2] += n
        else:
            self.close()
            self.run = [self.vpos, file_pos, n]
        self.vpos += n

    def header(self, hdr: bytes, file_pos: int | None, n: int) -> int:
        """A rewritten header at the current position; ``file_pos`` None: the view's bytes are
        the header alone (``n`` 61), else the batch's ``n`` file bytes follow it."""
        at = self.vpos
        self.patch_pos.append(at)
        self.patches += hdr
        if file_pos is None:
            self.close()
            self.vpos += HEADER_SIZE
        else:
            self.file_bytes(file_pos, n)
        return at

    def close(self) -> None:
        if self.run is not None:
            self.v.runs.append((self.run[0], self.run[1], self.run[2]))
            self.run = None

    def finish(self) -> None:
        self.close()
        self.v.view_size = self.vpos
        slow_pos = np.array(self.patch_pos, dtype=np.int64)
        slow = np.frombuffer(bytes(self.patches), dtype=np.uint8).reshape(-1, HEADER_SIZE)
        if self.fast_pos is not None:
            self.v.patch_pos = np.concatenate([self.fast_pos, slow_pos])
            self.v.patches = np.concatenate([self.fast_patches, slow])
        else:
            self.v.patch_pos, self.v.patches = slow_pos, slow


_AR61 = np.arange(HEADER_SIZE, dtype=np.int64)


def _file_array(src: ByteSource, data: bytes | None) -> tuple[np.ndarray, Any] | None:
    """The whole file as a uint8 array (its bytes given, or a local file mapped), with what
    must stay open while it is used; None when the file cannot be mapped."""
    if data is not None:
        return np.frombuffer(data, dtype=np.uint8), None
    fd = getattr(src, "fd", None)
    if fd is None or fd < 0 or not src.size:
        return None
    import mmap

    try:
        # populated at once: one call maps the file's cached pages, not a fault per page
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        mm = mmap.mmap(fd, src.size, flags=flags, prot=mmap.PROT_READ)
    except (OSError, ValueError, AttributeError):
        try:
            mm = mmap.mmap(fd, src.size, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None
    return np.frombuffer(mm, dtype=np.uint8), mm


def _fast_walk(
    view: SegmentView, b: _Builder, arr: np.ndarray, term: int, delta: int
) -> tuple[int, int, int | None]:
    """The batches from byte 0 walked at once (numpy): every header whose header_crc holds,
    up to the first one that does not, a zero header, or the end. Returns where the walk one
    by one goes on, the delta there and the next raft offset."""
    fpos, raw_hdr, pos = chain_headers(arr, HEADER_SIZE)
    if not len(fpos):
        return 0, delta, None
    c = header_columns(raw_hdr)
    bad = (c["last_offset_delta"] < 0) | (c["base_offset"] < 0)
    if bad.any():  # framed, its header CRC holds, and yet absurd: walked one by one
        first_bad = int(np.argmax(bad))
        pos = int(fpos[first_bad])
        fpos, raw_hdr = fpos[:first_bad], raw_hdr[:first_bad]
        c = {k: v[:first_bad] for k, v in c.items()}
        if not len(fpos):
            return 0, delta, None
    types, sizes, lod, base = c["type"], c["size"], c["last_offset_delta"], c["base_offset"]
    data_kind = types == RAFT_DATA
    dropped = np.isin(types, list(NO_KAFKA_OFFSET))
    empty = ~data_kind & ~dropped
    took = np.where(dropped, lod + 1, 0)
    before = delta + np.cumsum(took) - took  # the delta at each batch
    kafka_base = np.where(dropped, -1, base - before)
    vsize = np.where(data_kind, sizes, np.where(empty, HEADER_SIZE, 0))
    vpos = b.vpos + np.cumsum(vsize) - vsize
    shown = ~dropped
    lengths = np.where(data_kind, sizes, HEADER_SIZE) - LOG_OVERHEAD
    if shown.all():
        patches = kafka_headers(raw_hdr, kafka_base, lengths, term)
    else:
        patches = kafka_headers(raw_hdr[shown], kafka_base[shown], lengths[shown], term)
    row = np.cumsum(shown) - 1  # each batch's row among the patches
    for i in np.flatnonzero(empty).tolist():  # offset-taking non-data: empty batches
        e = kafka_header(raw_hdr[i].tobytes(), 0, int(kafka_base[i]), term,
                         size=HEADER_SIZE, empty=True)  # fmt: skip
        patches[int(row[i])] = np.frombuffer(with_crc(e, crc32c(crc_input_of_header(e))), np.uint8)
    # the file runs: consecutive raft_data batches are contiguous in the file and the view
    idx = np.flatnonzero(data_kind)
    if len(idx):
        breaks = np.flatnonzero(np.diff(idx) != 1) + 1
        for chunk in np.split(idx, breaks):
            i0, i1 = int(chunk[0]), int(chunk[-1])
            b.close()
            b.run = [int(vpos[i0]), int(fpos[i0]), int(fpos[i1] + sizes[i1] - fpos[i0])]
            if i1 != len(fpos) - 1:
                b.close()
    b.vpos = int(vpos[-1] + vsize[-1])
    if not data_kind[-1]:
        b.close()
    b.fast_pos = vpos[shown].astype(np.int64)
    b.fast_patches = patches
    view.left_out += int(dropped.sum())
    view.fast = {
        "file_pos": fpos,
        "size": sizes,
        "raft_base": base,
        "raft_last": base + lod,
        "type": types,
        "attrs": c["attrs"],
        "count": c["record_count"],
        "kafka_base": kafka_base,
        "view_pos": np.where(shown, vpos, -1),
    }
    return pos, int(delta + took.sum()), int(base[-1] + lod[-1] + 1)


def walk_segment(
    src: ByteSource,
    term: int,
    delta_start: int,
    raw: bool = False,
    data: bytes | None = None,
) -> SegmentView:
    """Walk the Redpanda segment ``src``: its batches with their raft and Kafka offsets (the
    delta before it ``delta_start``), the Kafka view of its bytes (``raw``: every batch, at
    its raft offsets). Reads headers only (with windows for small batches); ``data``: the whole
    file, already read."""
    size = src.size
    view = SegmentView(src.uri, size, term, raw, delta_start)
    b = _Builder(view)
    delta = delta_start
    pos = 0
    window = 64 << 10
    next_raft: int | None = None
    kafka_next: int | None = None
    mapped = None if raw else _file_array(src, data)
    if mapped is not None:
        arr, keep = mapped
        try:
            pos, delta, next_raft = _fast_walk(view, b, arr, term, delta)
        finally:
            mapped = arr = None  # the map's last views, before it closes
            if keep is not None:
                try:
                    keep.close()
                except BufferError:  # a view still held (an error's traceback): left to GC
                    pass
        if next_raft is not None:
            kafka_next = next_raft - delta
    reader = _Reader(src, data)
    while pos < size:
        left = size - pos
        hb = reader.read(pos, min(HEADER_SIZE, left), window)
        if hb == ZERO_HEADER or (left < HEADER_SIZE and hb.count(0) == len(hb)):
            # a zero header ends the data; the bytes from here on are kept for the Kafka tail
            # rules (zeros: quiet; anything else: damage)
            view.tail_kind = "zeros"
            b.file_bytes(pos, left)
            break
        if left < HEADER_SIZE:
            # a header cut by the end of the file: what it has, as Kafka's header would have
            # it (a batch running past the end: quiet at the end of a partition, as for Kafka)
            view.tail_kind = "cut"
            padded = hb + bytes(HEADER_SIZE - left)
            if left >= BASE_OFFSET_AT + 8:
                raft_base = HEADER.unpack_from(padded)[2]
                khdr = kafka_header(padded, 0, raft_base - (0 if raw else delta), term)
            else:
                khdr = bytes(HEADER_SIZE)
            b.header(khdr[:left] + bytes(HEADER_SIZE - left), pos, left)
            break
        h = HEADER.unpack_from(hb)
        hsize, raft_base, btype, _crc, attrs, last_delta, *_rest, count = h[1:]
        if crc32c(hb[4:]) != h[0] or hsize < HEADER_SIZE or last_delta < 0:
            # a damaged header: the bytes up to the next good header are one damaged batch
            nxt = pos + hsize if HEADER_SIZE <= hsize <= left else None
            if nxt is None or not (nxt == size or _good_header(reader, nxt, size)):
                nxt = _next_good(reader, pos + HEADER_SIZE, size)
            span = nxt - pos
            base = kafka_next if kafka_next is not None else max(0, raft_base - delta)
            raft_after = None
            if nxt < size:
                nh = reader.read(nxt, HEADER_SIZE, window)
                if nh != ZERO_HEADER:
                    raft_after = HEADER.unpack_from(nh)[2]
            # the Kafka offsets the damaged bytes held, as far as the next good header says
            # (the delta across them is taken as unchanged: they cannot say otherwise)
            lod = 0
            if raft_after is not None and next_raft is not None and raft_after > next_raft:
                lod = raft_after - next_raft - 1
            rest = reader.read(pos + HEADER_SIZE, span - HEADER_SIZE, span)
            # the batch CRC covers attrs..record_count: when it holds over these bytes, the
            # header's last_offset_delta is the batch's (only fields outside it were damaged)
            trusted = span == hsize and crc32c(rest, crc32c(_attrs_be(hb))) == h[4]
            if trusted and last_delta >= 0:
                lod = last_delta
            fake = kafka_header(hb, 0, base, term, size=span, last_offset_delta=lod)
            good = crc32c(rest, crc32c(crc_input_of_header(fake)))
            fake = with_crc(fake, ~good)  # a CRC that fails: the Kafka layers report damage
            at = b.header(fake, pos, span)
            reason = (
                f"Redpanda batch header at byte {pos} fails its header_crc "
                f"(stored {h[0]:#010x}, computed {crc32c(hb[4:]):#010x})"
                + (
                    "; its batch CRC holds, so it held offsets as its header says, but its base "
                    "offset or size cannot be trusted"
                    if trusted
                    else f"; {span} bytes up to the next good header are unreadable"
                )
            )
            view.slow.append(
                BatchInfo(pos, span, raft_base, raft_base, btype, attrs, count, base, at, reason)
            )
            view.damaged += 1
            if raft_after is not None:
                next_raft = raft_after
                kafka_next = raft_after - delta
            elif trusted and next_raft is not None:  # the offsets its header says it held
                next_raft += lod + 1
                kafka_next = next_raft - delta
            pos = nxt
            continue
        raft_last = raft_base + last_delta
        if next_raft is not None and raft_base < next_raft:
            pass  # offsets going back: the Kafka layers report them (base offsets in the view)
        if raw:
            khdr = kafka_header(hb, 0, raft_base, term, clear_bits=CONTROL_BIT | TRANSACTIONAL_BIT)
            if attrs & (CONTROL_BIT | TRANSACTIONAL_BIT) and hsize <= left:
                records = reader.read(pos + HEADER_SIZE, hsize - HEADER_SIZE, window)
                old = crc32c(records, crc32c(_attrs_be(hb)))
                if old == h[4]:  # the CRC held: it holds for the bits cleared too
                    khdr = with_crc(khdr, crc32c(records, crc32c(crc_input_of_header(khdr))))
            at = b.header(khdr, pos, min(hsize, left))
            view.slow.append(
                BatchInfo(pos, hsize, raft_base, raft_last, btype, attrs, count, raft_base, at)
            )
        elif btype == RAFT_DATA:
            kb = raft_base - delta
            at = b.header(kafka_header(hb, 0, kb, term), pos, min(hsize, left))
            view.slow.append(
                BatchInfo(pos, hsize, raft_base, raft_last, btype, attrs, count, kb, at)
            )
        elif takes_kafka_offset(btype):
            kb = raft_base - delta
            empty = kafka_header(hb, 0, kb, term, size=HEADER_SIZE, empty=True)
            empty = with_crc(empty, crc32c(crc_input_of_header(empty)))
            at = b.header(empty, None, HEADER_SIZE)
            view.slow.append(
                BatchInfo(pos, hsize, raft_base, raft_last, btype, attrs, count, kb, at)
            )
        else:
            view.slow.append(
                BatchInfo(pos, hsize, raft_base, raft_last, btype, attrs, count, None, None)
            )
            view.left_out += 1
            delta += last_delta + 1
        next_raft = raft_last + 1
        kafka_next = next_raft - (0 if raw else delta)
        if hsize > left:
            view.tail_kind = "cut"
            break
        window = HEADER_SIZE if hsize > (16 << 10) else 64 << 10
        pos += hsize
    b.finish()
    view.delta_end = delta
    view.next_raft = next_raft
    return view


def _attrs_be(hb: bytes) -> bytes:
    """Kafka's CRC input's header part (big-endian attrs..record_count) of a Redpanda header."""
    return ATTRS_TAIL_BE.pack(*ATTRS_TAIL.unpack_from(hb, ATTRS_AT))


# ---- the Kafka view as a byte source ---------------------------------------------------------


class RedpandaSource(ByteSource):
    """A Redpanda segment's Kafka view (see the module's docstring), read by ranges: the file's
    bytes with the batches' headers rewritten, left-out batches skipped."""

    zero_tail_normal = True  # Redpanda preallocates its segments: zeros end the data

    def __init__(self, inner: ByteSource, view: SegmentView, data: bytes | None = None) -> None:
        """The Kafka view ``view`` of ``inner``; ``data``: the file's bytes, when they were
        fetched whole already (a remote object walked), read from memory."""
        super().__init__(inner.path, view.view_size)
        self.inner = inner
        self.view = view
        self._data = data
        self._run_starts = [r[0] for r in view.runs]
        self._patch_pos = view.patch_pos
        self._patches = view.patches
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray, list[int]] | None = None

    @property
    def uri(self) -> str:
        """The inner source's location."""
        return self.inner.uri

    def _batch_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
        if self._arrays is None:
            self._arrays = self.view.shown()
        return self._arrays

    def _batch_at(self, positions: Any) -> np.ndarray:
        vpos = self._batch_arrays()[0]
        return np.clip(np.searchsorted(vpos, positions, side="right") - 1, 0, max(len(vpos) - 1, 0))

    def file_position(self, pos: int) -> int:
        """The file position of view position ``pos``."""
        i = bisect.bisect_right(self._run_starts, pos) - 1
        if i >= 0:
            vs, fs, n = self.view.runs[i]
            if pos < vs + n:
                return fs + pos - vs
        vpos, fpos, _, _ = self._batch_arrays()
        if len(vpos):
            j = int(self._batch_at(np.array([pos]))[0])
            if vpos[j] <= pos:
                return int(fpos[j] + (pos - vpos[j]))
        return pos

    def file_positions(self, positions: Any) -> Any:
        """See :meth:`ByteSource.file_positions` (a number or an array)."""
        if np.isscalar(positions):
            return self.file_position(int(positions))
        vpos, fpos, _, _ = self._batch_arrays()
        if not len(vpos):
            return positions
        i = self._batch_at(positions)
        return np.where(positions >= vpos[i], fpos[i] + (positions - vpos[i]), positions)

    def view_positions(self, positions: Any) -> Any:
        """See :meth:`ByteSource.view_positions`: a file byte inside a run of the view (a
        raft_data batch, a tail) maps into it; any other (a batch left out, the header of a
        batch shown as an empty one) to the view's first byte at or after it."""
        scalar = np.isscalar(positions)
        pos = np.atleast_1d(np.asarray(positions, dtype=np.int64))
        vpos, fpos, _, _ = self._batch_arrays()
        runs = np.array(self.view.runs, dtype=np.int64).reshape(-1, 3)
        # the view's starts of things with a file position: runs, and batches shown
        starts_f = np.concatenate([runs[:, 1], fpos])
        starts_v = np.concatenate([runs[:, 0], vpos])
        order = np.argsort(starts_f, kind="stable")
        starts_f, starts_v = starts_f[order], starts_v[order]
        out = np.full(len(pos), self.size, dtype=np.int64)
        nxt = np.searchsorted(starts_f, pos, side="left")
        ok = nxt < len(starts_f)
        out[ok] = starts_v[nxt[ok]]
        for vs, fs, n in self.view.runs:  # inside a run: its own byte
            inside = (pos >= fs) & (pos < fs + n)
            out[inside] = vs + pos[inside] - fs
        return int(out[0]) if scalar else out

    @property
    def stored_size(self) -> int:
        """The Redpanda file's size."""
        return self.view.file_size

    def batch_labels(self, positions: Any) -> Any:
        """The Redpanda batch type of each batch start in ``positions``."""
        vpos, _, types, _ = self._batch_arrays()
        if not len(vpos):
            return np.zeros(len(positions), dtype=np.int64)
        return types[self._batch_at(positions)]

    def explain(self, exc: Any) -> Any:
        """See :meth:`ByteSource.explain`: the error at the file's byte, with what the Redpanda
        header says (a header_crc that fails, the batch type and raft offsets)."""
        if (
            not isinstance(exc, CorruptDataError)
            or exc.position is None
            or getattr(exc, "_redpanda", False)
        ):
            return exc
        pos = int(exc.position)
        vpos = self._batch_arrays()[0]
        batch = None
        if len(vpos):
            j = int(self._batch_at(np.array([pos]))[0])
            if vpos[j] <= pos:
                fp = int(self._batch_arrays()[1][j])
                batch = next((b for b in self.view.batches if b.file_pos == fp), None)
        where = self.file_position(pos)
        if batch is not None and batch.damage is not None:
            reason = batch.damage
        elif batch is not None:
            reason = (
                f"{exc.reason} (Redpanda {type_name(batch.type)} batch, raft offsets "
                f"{batch.raft_base}-{batch.raft_last}; byte {pos} of its Kafka view)"
            )
        else:
            reason = f"{exc.reason} (byte {pos} of the Redpanda segment's Kafka view)"
        out = type(exc).__new__(type(exc))
        CorruptDataError.__init__(out, reason, exc.path, where, exc.base_offset)
        out.resume_at = exc.resume_at
        out._redpanda = True
        return out

    def read_into(self, pos: int, buffer: Any) -> int:
        """See :meth:`ByteSource.read_into`."""
        out = memoryview(buffer).cast("B")
        end = min(pos + len(out), self.size)
        if end <= pos:
            return 0
        runs = self.view.runs
        i = max(0, bisect.bisect_right(self._run_starts, pos) - 1)
        while i < len(runs):
            vs, fs, n = runs[i]
            if vs >= end:
                break
            a, z = max(pos, vs), min(end, vs + n)
            if a < z:
                at = fs + (a - vs)
                if self._data is not None:
                    chunk = self._data[at : at + (z - a)]
                    got = len(chunk)
                    out[a - pos : a - pos + got] = chunk
                else:
                    got = self.inner.read_into(at, out[a - pos : z - pos])
                if got < z - a:
                    return a - pos + got
            i += 1
        pp = self._patch_pos
        j0 = int(np.searchsorted(pp, pos - HEADER_SIZE, side="right"))
        j1 = int(np.searchsorted(pp, end, side="left"))
        if j1 > j0:
            sel = pp[j0:j1]
            whole = (sel >= pos) & (sel + HEADER_SIZE <= end)
            if whole.all():  # every header inside the range: one compiled call
                put_rows(np.frombuffer(out, dtype=np.uint8), pos, sel, self._patches[j0:j1])
            elif whole.any():
                k = np.flatnonzero(whole) + j0
                put_rows(np.frombuffer(out, dtype=np.uint8), pos, pp[k], self._patches[k])
            for j in np.flatnonzero(~whole) + j0:  # a header cut by the range's ends
                p = int(pp[j])
                a, z = max(pos, p), min(end, p + HEADER_SIZE)
                if a < z:
                    out[a - pos : z - pos] = self._patches[j][a - p : z - p].tobytes()
        return end - pos

    def read(self, pos: int, n: int) -> bytes:
        """See :meth:`ByteSource.read`."""
        n = max(0, min(n, self.size - pos))
        buf = bytearray(n)
        got = self.read_into(pos, buf)
        return bytes(buf[:got])

    def will_need(self, pos: int, n: int) -> None:
        """Passed on for the file range the view range maps to."""
        if self._data is None:
            self.inner.will_need(self.file_position(pos), n)

    def prefetch(self, pos: int, n: int) -> None:
        """Passed on for the file range the view range maps to (nothing when the file's bytes
        are in memory)."""
        if self._data is None:
            self.inner.prefetch(self.file_position(pos), n)

    def sequential(self, start: int = 0, end: int | None = None) -> None:
        """Passed on (the whole file)."""
        self.inner.sequential(0, None)

    def current_size(self) -> int:
        """The view's size while the file keeps its size; -1 when it changed."""
        now = self.inner.current_size()
        return self.size if now == self.view.file_size else now

    def close(self) -> None:
        """Close the file."""
        self.inner.close()

    @property
    def bytes_read(self) -> int:  # type: ignore[override]
        """Bytes the file's source read."""
        return self.inner.bytes_read

    @bytes_read.setter
    def bytes_read(self, value: int) -> None:
        pass

    @property
    def requests(self) -> int:  # type: ignore[override]
        """Requests the file's source made."""
        return self.inner.requests

    @requests.setter
    def requests(self, value: int) -> None:
        pass


# ---- the translation of a partition ---------------------------------------------------------

_VIEWS: OrderedDict[tuple, SegmentView] = OrderedDict()
_VIEWS_LOCK = threading.Lock()
_VIEWS_MAX = 512
# the delta at each segment's start, as the plan that found it translated its partition
_DELTAS: dict[str, tuple[int, bool]] = {}  # the last translation of each path
_DELTAS_BY_MODE: dict[tuple[str, bool], int] = {}  # each path's, raw and not
# what a read asks: "kafka" or "raw"
_MODE: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "kafkalog_redpanda", default=None
)


@contextmanager
def redpanda_mode(mode: str) -> Iterator[None]:
    """Within the block, Redpanda segments open in ``mode`` ("kafka" or "raw")."""
    token = _MODE.set(mode)
    try:
        yield
    finally:
        _MODE.reset(token)


def note_segment_base(path: str, kafka_base: int | None, mode: str | None = None) -> None:
    """Record, for :func:`open_redpanda`, that the plan put ``path``'s first offset at Kafka
    offset ``kafka_base`` (the delta before it is its name's raft base minus it), unless this
    process translated it already (the planning process). ``mode``: the read's ``redpanda``
    option (default: the one :func:`redpanda_mode` set)."""
    rp = redpanda_path(path)
    if rp is None or kafka_base is None:
        return
    raw = (mode or _MODE.get() or "kafka") == "raw" or rp.internal
    if (path, raw) in _DELTAS_BY_MODE:
        return
    _note(path, 0 if raw else rp.name.base - kafka_base, raw)


def _note(path: str, delta: int, raw: bool) -> None:
    _DELTAS[path] = (delta, raw)
    _DELTAS_BY_MODE[(path, raw)] = delta


def _mtime(src: ByteSource) -> int:
    try:
        return os.stat(src.path).st_mtime_ns if not is_remote(src.path) else 0
    except OSError:
        return 0


def segment_view(
    src: ByteSource, term: int, delta_start: int, raw: bool, data: bytes | None = None
) -> SegmentView:
    """:func:`walk_segment`, remembered for the file (by path, size, mtime) in this process."""
    key = (src.path, src.size, _mtime(src), delta_start, raw)
    with _VIEWS_LOCK:
        found = _VIEWS.get(key)
        if found is not None:
            _VIEWS.move_to_end(key)
            return found
    if data is None and is_remote(src.path) and src.size:
        # a remote object is walked whole, with one request; its bytes are kept for the reads
        # that follow in this process (:func:`open_redpanda`: planning, then reading), within
        # a budget (the oldest dropped first)
        data = src.read(0, src.size)
        _keep_bytes(src.path, src.size, data)
    view = walk_segment(src, term, delta_start, raw, data)
    with _VIEWS_LOCK:
        _VIEWS[key] = view
        while len(_VIEWS) > _VIEWS_MAX:
            _VIEWS.popitem(last=False)
    return view


_BYTES: OrderedDict[tuple[str, int], bytes] = OrderedDict()
_BYTES_BUDGET = 256 << 20


def _keep_bytes(path: str, size: int, data: bytes) -> None:
    with _VIEWS_LOCK:
        _BYTES[(path, size)] = data
        while sum(len(v) for v in _BYTES.values()) > _BYTES_BUDGET and len(_BYTES) > 1:
            _BYTES.popitem(last=False)


def _take_bytes(path: str, size: int) -> bytes | None:
    with _VIEWS_LOCK:
        return _BYTES.get((path, size))


def forget() -> None:
    """Forget the walks, translations and object bytes this process remembers (as a new
    process: benchmarks, tests)."""
    with _VIEWS_LOCK:
        _VIEWS.clear()
        _BYTES.clear()
        _DELTAS.clear()
        _DELTAS_BY_MODE.clear()


class UnknownDeltaError(CorruptDataError):
    """A Redpanda segment whose Kafka offsets cannot be known: the offsets before it that took
    no Kafka offset are not in the files read."""


def unknown_delta(path: str, raft_base: int, why: str) -> UnknownDeltaError:
    """The error of a segment whose translation is unknown."""
    return UnknownDeltaError(
        f"the Kafka offsets of this Redpanda segment cannot be known: {why}. Kafka offset = "
        "raft offset minus the offsets taken before it by raft_configuration and other "
        "batches that take no Kafka offset; Redpanda keeps that count in its kvstore, not in "
        f"the segments, and the segments before raft offset {raft_base} are not here. Read the "
        "partition's whole directory (every segment from raft offset 0), its tiered-storage "
        "partition manifest, or read it with redpanda=raw (offsets are then raft offsets)",
        path,
        0,
        raft_base,
    )


def open_redpanda(
    inner: ByteSource, opener: Callable[[str], ByteSource] | None = None
) -> ByteSource:
    """``inner``, a Redpanda segment, as its Kafka view (:class:`RedpandaSource`). The delta
    before it comes from the plan (:func:`note_segment_base`), else from its siblings (a local
    partition directory) or its partition manifest."""
    rp = redpanda_path(inner.path)
    assert rp is not None
    mode = _MODE.get()
    if mode is None:  # no read asked (planning, verify's walk): as the last plan translated it
        noted = _DELTAS.get(inner.path)
        raw = rp.internal if noted is None else noted[1]
    else:
        raw = mode == "raw" or rp.internal
        known = _DELTAS_BY_MODE.get((inner.path, raw))
        noted = None if known is None else (known, raw)
    if noted is not None:
        delta, raw = noted
    elif raw:
        delta = 0
    else:
        try:
            delta = _delta_from_siblings(inner.path, rp, opener)
        except BaseException:
            inner.close()
            raise
    try:
        view = segment_view(inner, rp.name.term, delta, raw)
    except BaseException:
        inner.close()
        raise
    return RedpandaSource(inner, view, _take_bytes(inner.path, inner.size))


def _delta_from_siblings(
    path: str, rp: RedpandaPath, opener: Callable[[str], ByteSource] | None
) -> int:
    """The delta at ``path``'s start, from the segments before it in its local partition
    directory (walked), or from its partition manifest (remote). Raises
    :class:`UnknownDeltaError` when neither tells."""
    if rp.name.base == 0:
        return 0
    if is_remote(path):
        raise unknown_delta(path, rp.name.base, "it was opened without its partition's plan")
    directory = os.path.dirname(os.path.abspath(path))
    names = []
    try:
        listed = os.listdir(directory)
    except OSError:
        listed = []
    for n in listed:
        sn = parse_segment_name(n)
        if sn is not None and sn.base < rp.name.base:
            names.append((sn.base, n, sn))
    names.sort()
    if not names or names[0][0] != 0:
        raise unknown_delta(path, rp.name.base, "its partition's first segment does not start at 0")
    delta = 0
    expected = 0
    from ..transport.source import LocalFileSource

    for base, n, sn in names:
        if base != expected:
            raise unknown_delta(
                path, rp.name.base, f"raft offsets {expected}-{base - 1} are missing"
            )
        with LocalFileSource(os.path.join(directory, n)) as src:
            v = segment_view(src, sn.term, delta, False)
        delta = v.delta_end
        expected = v.next_raft if v.next_raft is not None else base
    if expected != rp.name.base:
        raise unknown_delta(
            path, rp.name.base, f"raft offsets {expected}-{rp.name.base - 1} are missing"
        )
    return delta


@dataclass
class Translated:
    """One Redpanda segment of a partition, translated: where its first offset falls in Kafka's
    offsets (or raft's, raw), the view's size, and what the partition's walk found."""

    path: str
    kafka_base: int
    view_size: int
    raw: bool
    view: SegmentView | None = None
    hole_before: tuple[int, int] | None = None  # raft offsets missing before it


def translate_partition(
    segments: list[tuple[str, SegmentName]],
    opener: Callable[[str], ByteSource],
    raw: bool,
    manifest: PartitionManifest | None = None,
) -> list[Translated]:
    """The segments of one partition (paths and parsed names), translated in raft order: each
    walked with the delta its predecessors left (or the manifest's ``delta_offset``). A
    partition whose first segment does not start at raft offset 0 and has no manifest delta
    raises :class:`UnknownDeltaError` (unless ``raw``); a hole between segments (a missing
    segment) keeps the delta and is reported by the Kafka layers as missing offsets."""
    out: list[Translated] = []
    deltas: dict[int, int] = {}
    if manifest is not None:
        for ms in manifest.segments:
            if ms.delta_offset is not None:
                deltas[ms.base_offset] = ms.delta_offset
    delta: int | None = 0 if raw else None
    expected: int | None = None
    for path, name in sorted(segments, key=lambda s: (s[1].base, s[0])):
        if not raw and name.base in deltas:
            delta = deltas[name.base]
        elif delta is None:
            if name.base == 0:
                delta = 0
            elif not is_remote(path) and (rp := redpanda_path(path)) is not None:
                # a segment named without those before it: they are read beside it (walked)
                delta = _delta_from_siblings(path, rp, None)
            else:
                raise unknown_delta(
                    path,
                    name.base,
                    "its partition's first segment here does not start at raft "
                    "offset 0 and no partition manifest gives its delta",
                )
        hole = None
        if expected is not None and name.base > expected:
            hole = (expected, name.base - 1)
        with opener(path) as src:
            view = segment_view(src, name.term, delta, raw)
        base = name.base - (0 if raw else delta)
        _note(path, 0 if raw else delta, raw)
        out.append(Translated(path, base, view.view_size, raw, view, hole))
        delta = view.delta_end if not raw else 0
        if view.next_raft is not None:
            expected = max(view.next_raft, name.base)
        elif name.committed is not None:
            expected = name.committed + 1
        else:
            expected = name.base
    return out


def manifest_prefix(path: str) -> tuple[str, str, str, int, int] | None:
    """For a tiered-storage manifest ``.../meta/<ns>/<topic>/<p>_<rev>/manifest.json``: (its
    directory, ns, topic, partition, revision); None for another path."""
    parts = _parts(path)
    if len(parts) < 6 or parts[-1] not in (MANIFEST_JSON, MANIFEST_BIN) or parts[-5] != META_DIR:
        return None
    pr = parse_partition_dir(parts[-2])
    if pr is None:
        return None
    return "/".join(parts[:-1]), parts[-4], parts[-3], pr[0], pr[1]


def read_manifest(data: bytes, path: str) -> PartitionManifest:
    """A partition manifest's JSON parsed; :class:`CorruptDataError` naming it when it is not
    one."""
    try:
        return parse_manifest_json(data)
    except ValueError as exc:
        raise CorruptDataError(f"not a Redpanda partition manifest: {exc}", path, 0) from None


def check_namespace_option(value: str) -> str:
    """``redpanda``'s value checked: kafka or raw."""
    if value not in ("kafka", "raw"):
        raise OptionError(f"redpanda must be 'kafka' or 'raw', not {value!r}")
    return value


def describe_batch(b: BatchInfo, raw: bool = False) -> str:
    """One line of ``dump``: type, raft offsets, Kafka offset (``-`` for a batch that takes
    none, and in a raw view, whose offsets are raft offsets), position, size, records."""
    kafka = "-" if b.kafka_base is None or raw else str(b.kafka_base)
    return (
        f"type: {b.type} {type_name(b.type)} raftOffset: {b.raft_base}-{b.raft_last} "
        f"kafkaOffset: {kafka} position: {b.file_pos} size: {b.size} records: {b.record_count}"
    )


__all__ = [
    "INTERNAL_NAMESPACES",
    "BatchInfo",
    "RedpandaPath",
    "RedpandaSource",
    "SegmentView",
    "Translated",
    "UnknownDeltaError",
    "is_redpanda_segment",
    "note_segment_base",
    "open_redpanda",
    "redpanda_mode",
    "redpanda_path",
    "segment_view",
    "translate_partition",
    "walk_segment",
]
