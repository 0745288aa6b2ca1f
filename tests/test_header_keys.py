"""Header keys that are not UTF-8: a corruption of their batch, handled by every mode.

Kafka's header keys are Java Strings. The segments here are written by kafka-python's real
record builder; a ``str`` whose ``encode`` returns raw bytes makes it store a key that is not
UTF-8, with a correct CRC and real compression around it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import kp_v2_batch

import kafkalog_source as kl
from kafkalog_source.errors import RecordStructureError

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
VALUE = b"a compressible value " * 15
BAD_KEYS = [b"\xff", b"ok-\xc3", b"\xed\xa0\x80surrogate", b"\xc0\x80overlong", b"\xf4\x90\x80\x80"]


class RawKey(str):
    """A header key that kafka-python writes as the given bytes, whatever they are."""

    raw: bytes

    def __new__(cls, raw: bytes) -> RawKey:
        out = super().__new__(cls, "raw")
        out.raw = raw
        return out

    def encode(self, *args: object, **kwargs: object) -> bytes:  # type: ignore[override]
        return self.raw


def _segment(tmp_path: Path, codec: str, bad_key: bytes) -> tuple[Path, list[int]]:
    """Three batches of 4 records at offsets 0, 4, 8; record 6 has the bad header key.

    Returns the partition directory and the byte position of each batch.
    """
    part = tmp_path / "events-0"
    part.mkdir()
    out = bytearray()
    positions = []
    for b in range(3):
        records = []
        for offset in range(b * 4, b * 4 + 4):
            key = RawKey(bad_key) if offset == 6 else f"h{offset}"
            records.append((1_700_000_000_000 + offset, b"k%d" % offset, VALUE, [(key, b"x")]))
        data = kp_v2_batch(records, base_offset=b * 4, codec=CODECS[codec])
        # kafka-python stores a batch uncompressed when compression would not shrink it
        assert data[22] & 7 == CODECS[codec], "the batch must really be compressed"
        positions.append(len(out))
        out += data
    (part / "00000000000000000000.log").write_bytes(bytes(out))
    return part, positions


@pytest.mark.parametrize("codec", list(CODECS))
@pytest.mark.parametrize("bad_key", BAD_KEYS)
def test_failfast_names_file_byte_and_batch(tmp_path: Path, codec: str, bad_key: bytes) -> None:
    part, positions = _segment(tmp_path, codec, bad_key)
    with pytest.raises(RecordStructureError) as info:
        kl.read_table(part)
    err = info.value
    assert err.path.endswith("00000000000000000000.log")
    assert err.base_offset == 4
    assert "header key of the record at offset 6 is not valid UTF-8" in str(err)
    if codec == "none":  # the record's byte in the file
        assert positions[1] + 61 <= err.position < positions[2]
    else:  # the batch's position, and where in its decompressed records
        assert err.position == positions[1]
        assert f"codec {codec}" in str(err)


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd"])
def test_dropmalformed_skips_the_batch_in_every_projection(tmp_path: Path, codec: str) -> None:
    part, _ = _segment(tmp_path, codec, b"\xff")
    stats = kl.ReadStats()
    full = kl.read_table(part, mode="DROPMALFORMED", stats=stats)
    assert full.column("offset").to_pylist() == [0, 1, 2, 3, 8, 9, 10, 11]
    assert stats.malformed_batches == 1
    assert stats.records == 8
    # without the headers column the same batch is dropped: projections agree
    narrow = kl.read_table(part, mode="DROPMALFORMED", includeHeaders=False)
    assert narrow.column("offset").to_pylist() == [0, 1, 2, 3, 8, 9, 10, 11]
    headers = full.column("headers").to_pylist()
    assert headers[0] == [{"key": "h0", "value": b"x"}]


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_permissive_gives_one_row_for_the_batch(tmp_path: Path, codec: str) -> None:
    """The row holds the batch as stored (compressed, if it was), and the reason."""
    part, positions = _segment(tmp_path, codec, b"\xff")
    rows = kl.read_table(part, mode="PERMISSIVE").to_pylist()
    assert [r["offset"] for r in rows] == [0, 1, 2, 3, 4, 8, 9, 10, 11]
    bad = rows[4]
    assert bad["headers"][0]["key"] == "kafkalog.error"
    assert b"not valid UTF-8" in bad["headers"][0]["value"]
    raw = (part / "00000000000000000000.log").read_bytes()
    assert bad["value"] == raw[positions[1] : positions[2]]
    assert bad["key"] is None and bad["timestamp"] is None


def test_ignore_corrupt_files_keeps_the_rows_before_the_damage(tmp_path: Path) -> None:
    part, _ = _segment(tmp_path, "lz4", b"\xff")
    stats = kl.ReadStats()
    got = kl.read_table(part, ignoreCorruptFiles=True, stats=stats)
    assert got.column("offset").to_pylist() == [0, 1, 2, 3]
    assert stats.corrupt_files == 1


def test_valid_non_ascii_keys_are_kept(tmp_path: Path) -> None:
    part, _ = _segment(tmp_path, "snappy", "ключ-😀-é".encode())
    headers = kl.read_table(part).column("headers").to_pylist()
    assert headers[6] == [{"key": "ключ-😀-é", "value": b"x"}]
