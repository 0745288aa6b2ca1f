"""The Python header walker (framing/walk.py) and the compiled scan_window (framing/scan.py) give
identical answers: the same batch headers, the same stop position and the same stop reason.

Inputs: every sample segment and kafka-python-built segments of every magic and codec (the fuzz
seeds), mutated with the fuzz campaign's seeded mutator (bit flips, overwrites, truncations,
inserted and deleted bytes, int32 fields set to boundary values), walked from a random start (a
batch start or any byte) to a random end, with walk blocks from a bare header to 16 KiB.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
from conftest import SAMPLES
from test_fuzz import Mutator, batch_starts, seed_segments

from kafkalog_source.format.batch import BatchHeader
from kafkalog_source.framing import scan
from kafkalog_source.framing.walk import HeaderWalk
from kafkalog_source.layout.files import open_source

ITERATIONS = int(os.environ.get("KAFKALOG_WALK_ITERATIONS", "1500"))
SEED = int(os.environ.get("KAFKALOG_WALK_SEED", "20261124"))


def _row(h: BatchHeader) -> list[int]:
    """A walker header as scan_window's matrix row (the columns both fill)."""
    row = [0] * scan.H_WIDTH
    fields = {
        scan.H_POS: h.position,
        scan.H_SIZE: h.size,
        scan.H_MAGIC: h.magic,
        scan.H_ATTRS: h.attributes,
        scan.H_BASE_OFFSET: h.base_offset,
        scan.H_LOD: h.last_offset_delta,
        scan.H_BASE_TS: h.base_timestamp,
        scan.H_MAX_TS: h.max_timestamp,
        scan.H_PID: h.producer_id,
        scan.H_EPOCH: h.producer_epoch,
        scan.H_BASE_SEQ: h.base_sequence,
        scan.H_COUNT: h.records_count,
        scan.H_CRC: h.crc,
        scan.H_PLE: h.partition_leader_epoch,
    }
    for col, value in fields.items():
        row[col] = value
    return row


_COLUMNS = [c for c in range(scan.H_WIDTH) if c != scan.H_WPOS]  # H_WPOS is window-relative


def _scan(data: bytes, start: int, end: int) -> tuple[list[list[int]], int, int]:
    """scan_window over ``data[start:end]`` as the reader calls it: headers, stop, reason."""
    window = np.frombuffer(data[start:end] + bytes(64), np.uint8)
    out = np.empty((len(data) // 14 + 2, scan.H_WIDTH), np.int64)
    rows, stop, why = scan.scan_window(window, end - start, start, out)
    assert why != scan.STOP_FULL
    return out[:rows][:, _COLUMNS].tolist(), start + int(stop), int(why)


def _walk(path: Path, start: int, end: int, block: int) -> tuple[list[list[int]], int, int]:
    with open_source(str(path)) as src:
        walk = HeaderWalk(src, start, end, block)
        rows = [[r[c] for c in _COLUMNS] for r in map(_row, walk)]
    assert walk.stop is not None
    return rows, walk.stop.position, walk.stop.reason


def _inputs() -> list[bytes]:
    out = [p.read_bytes() for p in sorted(SAMPLES.glob("*/*.log"))]
    return out + [seed_segments()[k] for k in sorted(seed_segments())]


def _check(tmp_path: Path, data: bytes, start: int, end: int, block: int, what: str) -> None:
    path = tmp_path / "walk.log"
    path.write_bytes(data)
    expected = _scan(data, start, end)
    got = _walk(path, start, end, block)
    assert got == expected, f"{what}: walker {got[1:]} vs scan_window {expected[1:]}"


def test_walker_matches_scan_window_on_valid_segments(tmp_path: Path) -> None:
    """Every sample segment and every seed, whole: the same headers, ending cleanly."""
    for i, data in enumerate(_inputs()):
        for block in (61, 16 * 1024):
            _check(tmp_path, data, 0, len(data), block, f"input {i} block {block}")
        rows, stop, _ = _scan(data, 0, len(data))
        assert rows and stop == len(data)


def test_walker_matches_scan_window_on_fuzzed_segments(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    inputs = _inputs()
    mutator = Mutator(rng, seed_segments())
    reasons: set[int] = set()
    for i in range(ITERATIONS):
        seed = rng.choice(inputs)
        data, done = mutator.mutate(seed, batch_starts(seed))
        starts = [s for s in batch_starts(seed) if s < len(data)]
        start = (
            rng.choice(starts) if starts and rng.random() < 0.7 else rng.randrange(len(data) + 1)
        )
        end = len(data) if rng.random() < 0.6 else rng.randint(start, len(data))
        block = rng.choice([61, 64, 100, 1024, 16 * 1024])
        _check(tmp_path, data, start, end, block, f"iteration {i} ({done}, {start}..{end})")
        reasons.add(_scan(data, start, end)[2])
    assert reasons == {0, 1, 2, 3, 4}  # every stop reason was exercised


def test_walker_matches_scan_window_at_size_boundaries(tmp_path: Path) -> None:
    """Each batch's size field set to the values around every rule's boundary."""
    for i, seed in enumerate(_inputs()):
        for at in batch_starts(seed)[:4]:
            for size in (-1, 0, 13, 14, 47, 48, 49, 50, len(seed) - at - 12, 2**31 - 1):
                data = bytearray(seed)
                data[at + 8 : at + 12] = size.to_bytes(4, "big", signed=True)
                what = f"input {i} batch at {at} size {size}"
                _check(tmp_path, bytes(data), 0, len(data), 1024, what)


def _walk_from(path: Path, start: int, end: int, target: int | None) -> tuple[list, int, int]:
    """Positions of the batches a walk yields (skipping those before ``target``), and its stop."""
    with open_source(str(path)) as src:
        walk = HeaderWalk(src, start, end, 1024)
        if target is not None:
            walk.skip_before(target)
        positions = [h.position for h in walk]
    assert walk.stop is not None
    return positions, walk.stop.position, walk.stop.reason


def test_skipping_to_a_cut_matches_the_full_walk(tmp_path: Path) -> None:
    """``skip_before`` (the planner's cuts): the same batches at or after the target, and the
    same stop, as the full walk, on valid and fuzzed segments."""
    rng = random.Random(SEED + 1)
    inputs = _inputs()
    mutator = Mutator(rng, seed_segments())
    path = tmp_path / "skip.log"
    for i in range(ITERATIONS // 3):
        seed = rng.choice(inputs)
        data = seed if i % 4 == 0 else mutator.mutate(seed, batch_starts(seed))[0]
        path.write_bytes(data)
        starts = [s for s in batch_starts(seed) if s < len(data)]
        start = rng.choice(starts) if starts else 0
        target = rng.randint(start, len(data) + 1)
        full, stop, why = _walk_from(path, start, len(data), None)
        expected = ([p for p in full if p >= target], stop, why)
        assert _walk_from(path, start, len(data), target) == expected, f"iteration {i}"
