"""Kafka tiered-storage objects in the Aiven plugin's layout (layout/tiered.py).

Test data comes from real segments (sample_segments/, ../shared) laid out by tests/tiered_writer.py,
which follows the plugin's formats; the literals marked "plugin test vector" are copied from the
plugin's own tests (github.com/Aiven-Open/tiered-storage-for-apache-kafka, core/src/test/java/io/
aiven/kafka/tieredstorage/...), so the writer and the parser are both checked against the plugin.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import zstandard
from conftest import BROKER_WRITTEN, SAMPLES, require_shared
from tiered_writer import (
    encode_chunk_sizes,
    fixed_chunk_index,
    kafka_uuid,
    main_path,
    manifest_json,
    segment_indexes,
    segment_metadata,
    write_tiered,
)

from kafkalog_source.errors import (
    CorruptDataError,
    DecompressionError,
    EncryptedSegmentError,
    FileChangedError,
)
from kafkalog_source.layout.tiered import (
    ChunkedSource,
    decode_chunk_sizes,
    is_tiered_log,
    load_manifest,
    open_chunked,
    open_tiered_log,
    parse_manifest,
    parse_tiered_key,
    read_manifest,
    read_tiered_index,
    tiered_index_bytes,
    tiered_index_target,
    tiered_sibling,
)
from kafkalog_source.reader import read_table
from kafkalog_source.stats import ReadStats
from kafkalog_source.transport.source import ByteSource, LocalFileSource, open_stored

# plugin test vectors ---------------------------------------------------------------------------
# ObjectKeyFactoryTest: Uuid.METADATA_TOPIC_ID (0, 1) and Uuid.ZERO_UUID, topic "topic", partition 7
PLUGIN_KEY = "prefix/topic-AAAAAAAAAAAAAAAAAAAAAQ/7/00000000000000001234-AAAAAAAAAAAAAAAAAAAAAA.log"
# ChunkIndexSerializationTest.ENCODED_CHUNKS: the sizes 10, 20, 30
PLUGIN_ENCODED_CHUNKS = "KLUv/SAPeQAAAAAAAwAAAAoBAAoAAAAe"
# SegmentManifestV1SerdeTest.WITHOUT_ENCRYPTION_JSON
PLUGIN_META = (
    '{"remoteLogSegmentId":{"topicIdPartition":{"topicId":"lZ6vvmajTWKDBUTV6SQAtQ",'
    '"topicPartition":{"topic":"topic1","partition":42}},"id":"adh9f8BMS4anaUnD8KWfWg"},'
    '"startOffset":0,"endOffset":1000,"maxTimestampMs":1000000000,"brokerId":2,'
    '"eventTimestampMs":2000000000,"segmentLeaderEpochs":{"0":100,"1":200,"2":300}}'
)
PLUGIN_MANIFEST = (
    '{"version":"1","chunkIndex":{"type":"fixed","originalChunkSize":100,"originalFileSize":1000,'
    '"transformedChunkSize":110,"finalTransformedChunkSize":110},"segmentIndexes":{'
    '"offset":{"position":0,"size":1},"timestamp":{"position":1,"size":1},'
    '"producerSnapshot":{"position":2,"size":1},"leaderEpoch":{"position":3,"size":1},'
    '"transaction":{"position":4,"size":1}},"compression":false,"remoteLogSegmentMetadata":'
    + PLUGIN_META
    + "}"
)

SAMPLE_LOGS = sorted(SAMPLES.glob("*-0/*.log"))


def test_plugin_key_vector_parses_and_writer_builds_it() -> None:
    k = parse_tiered_key(PLUGIN_KEY)
    assert k is not None
    assert (k.topic, k.partition, k.base_offset) == ("topic", 7, 1234)
    assert (k.topic_id, k.segment_id, k.suffix) == ("A" * 21 + "Q", "A" * 22, ".log")
    assert k.stem + ".log" == PLUGIN_KEY
    tid, sid = kafka_uuid(bytes(15) + b"\x01"), kafka_uuid(bytes(16))
    assert "prefix/" + main_path("topic", tid, 7, 1234, sid) + ".log" == PLUGIN_KEY
    assert tiered_sibling(PLUGIN_KEY, ".rsm-manifest") == PLUGIN_KEY[:-4] + ".rsm-manifest"
    assert tiered_sibling(PLUGIN_KEY[:-4] + ".indexes", ".log") == PLUGIN_KEY


@pytest.mark.parametrize(
    "key,expect",
    [
        ("s3://b/p/my-topic.v2-MWJ6FHTfRYy67jzwZdeqSQ/12/00000000000000000042-tqimKeZwStOEOwRzT3L5oQ.indexes",
         ("my-topic.v2", 12, 42, ".indexes")),
        ("orders--_-_-_-_-_-_-_-_-_-_-w/0/00000000000000000000-abcdefghijklmnopqrstug.rsm-manifest",
         ("orders", 0, 0, ".rsm-manifest")),
    ],
)  # fmt: skip
def test_key_forms(key: str, expect: tuple) -> None:
    k = parse_tiered_key(key)
    assert k is not None and (k.topic, k.partition, k.base_offset, k.suffix) == expect


@pytest.mark.parametrize(
    "key",
    [
        "orders-0/00000000000000000000.log",  # a broker's own layout
        "t-AAAAAAAAAAAAAAAAAAAAAQ/7/0000000000000001234-AAAAAAAAAAAAAAAAAAAAAA.log",  # 19 digits
        "t-AAAAAAAAAAAAAAAAAAAAAQ/07/00000000000000001234-AAAAAAAAAAAAAAAAAAAAAA.log",  # 07
        "t-AAAAAAAAAAAAAAAAAAAAAB/7/00000000000000001234-AAAAAAAAAAAAAAAAAAAAAA.log",  # not a Uuid
        "t-AAAAAAAAAAAAAAAAAAAAAQ/7/00000000000000001234-AAAAAAAAAAAAAAAAAAAAA.log",  # 21 chars
        "AAAAAAAAAAAAAAAAAAAAAQ/7/00000000000000001234-AAAAAAAAAAAAAAAAAAAAAA.log",  # no topic
        "t-AAAAAAAAAAAAAAAAAAAAAQ/7/00000000000000001234-AAAAAAAAAAAAAAAAAAAAAA.index",
        "00000000000000001234-AAAAAAAAAAAAAAAAAAAAAA.log",
    ],
)
def test_not_tiered_keys(key: str) -> None:
    assert parse_tiered_key(key) is None


def test_plugin_chunk_index_vector() -> None:
    assert decode_chunk_sizes(PLUGIN_ENCODED_CHUNKS) == [10, 20, 30]
    assert encode_chunk_sizes([10, 20, 30]) == PLUGIN_ENCODED_CHUNKS  # the writer packs alike
    doc = json.loads(PLUGIN_MANIFEST)
    doc["chunkIndex"] = {
        "type": "variable", "originalChunkSize": 100, "originalFileSize": 250,
        "transformedChunks": PLUGIN_ENCODED_CHUNKS,
    }  # fmt: skip
    m = parse_manifest(json.dumps(doc), "m")
    # ChunkIndexSerializationTest: Chunk(0, 0, 100, 0, 10), (1, 100, 100, 10, 20), (2, 200, 50, 30, 30)
    assert [(*m.original_range(i), *m.stored_range(i)) for i in range(m.chunk_count)] == [
        (0, 100, 0, 10), (100, 100, 10, 20), (200, 50, 30, 30)
    ]  # fmt: skip


@pytest.mark.parametrize("sizes", [[], [213], [2**31 - 1], [0, 1000, 2, 44002, 369],
                                   [1, 0xFFFFFF + 10, 0xFFFFFF + 20, 2**31 - 1]])  # fmt: skip
def test_chunk_sizes_round_trip_every_width(sizes: list[int]) -> None:
    assert decode_chunk_sizes(encode_chunk_sizes(sizes)) == sizes


def test_plugin_manifest_vector() -> None:
    m = parse_manifest(PLUGIN_MANIFEST, "s3://b/x.rsm-manifest")
    assert (m.original_size, m.chunk_size, m.chunk_count) == (1000, 100, 10)
    assert m.stored_sizes == (110,) * 10 and m.stored_range(9) == (990, 110)
    assert not m.compression and not m.encrypted and (m.start_offset, m.end_offset) == (0, 1000)
    assert m.indexes == {
        "offset": (0, 1), "timestamp": (1, 1), "producerSnapshot": (2, 1),
        "leaderEpoch": (3, 1), "transaction": (4, 1),
    }  # fmt: skip
    # the writer produces the plugin's exact bytes for the same manifest
    meta = segment_metadata(
        "topic1", "lZ6vvmajTWKDBUTV6SQAtQ", 42, "adh9f8BMS4anaUnD8KWfWg", 0, 1000,
        max_timestamp_ms=1000000000, broker_id=2, event_timestamp_ms=2000000000,
        leader_epochs={0: 100, 1: 200, 2: 300},
    )  # fmt: skip
    ci = fixed_chunk_index(100, 1000, 110, 110)
    assert manifest_json(ci, segment_indexes([1, 1, 1, 1, 1]), False, meta) == PLUGIN_MANIFEST
    # SegmentManifestV1SerdeTest.WITHOUT_ENCRYPTION_WITHOUT_TXN_INDEX_JSON: "transaction":null
    no_txn = PLUGIN_MANIFEST.replace('"transaction":{"position":4,"size":1}', '"transaction":null')
    assert manifest_json(ci, segment_indexes([1, 1, 1, 1, None]), False, meta) == no_txn
    assert parse_manifest(no_txn, "m").indexes["transaction"] is None
    # ...WITH_ENCRYPTION_WITHOUT_SECRET_KEY_JSON (dataKey removed by that test)
    enc = PLUGIN_MANIFEST.replace(
        '"compression":false,', '"compression":false,"encryption":{"aad":"CgsMDQ=="},'
    )
    assert parse_manifest(enc, "m").encrypted


def _mutate(path: list, value: object) -> str:
    doc = json.loads(PLUGIN_MANIFEST)
    obj = doc
    for p in path[:-1]:
        obj = obj[p]
    if value is KeyError:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value
    return json.dumps(doc)


@pytest.mark.parametrize(
    "text,reason",
    [
        ("{not json", "not JSON"),
        ("[1]", "not an object"),
        (_mutate(["version"], "2"), "version is '2'"),
        (_mutate(["chunkIndex"], KeyError), "no chunkIndex"),
        (_mutate(["segmentIndexes"], KeyError), "no segmentIndexes"),
        (_mutate(["compression"], KeyError), "no compression"),
        (_mutate(["compression"], "yes"), "compression is 'yes'"),
        (_mutate(["chunkIndex", "type"], "zigzag"), "chunkIndex.type is 'zigzag'"),
        (_mutate(["chunkIndex", "originalChunkSize"], 0), "originalChunkSize is 0"),
        (_mutate(["chunkIndex", "originalFileSize"], -1), "originalFileSize is -1"),
        (_mutate(["chunkIndex", "transformedChunkSize"], "110"), "transformedChunkSize is '110'"),
        (_mutate(["chunkIndex", "finalTransformedChunkSize"], KeyError), "finalTransformedChunkSize is None"),
        (_mutate(["segmentIndexes", "offset"], KeyError), "no segmentIndexes.offset"),
        (_mutate(["segmentIndexes", "leaderEpoch", "size"], -3), "leaderEpoch.size is -3"),
        (_mutate(["encryption"], "x"), "encryption is 'x'"),
        (_mutate(["chunkIndex"], {"type": "variable", "originalChunkSize": 100,
                                  "originalFileSize": 300, "transformedChunks": PLUGIN_ENCODED_CHUNKS + "!"}),
         "not base64"),
        (_mutate(["chunkIndex"], {"type": "variable", "originalChunkSize": 100,
                                  "originalFileSize": 300, "transformedChunks": "AAAA"}),
         "not a zstd frame"),
        (_mutate(["chunkIndex"], {"type": "variable", "originalChunkSize": 100,
                                  "originalFileSize": 301, "transformedChunks": PLUGIN_ENCODED_CHUNKS}),
         "lists 3 stored chunks, but 301 bytes in chunks of 100 make 4"),
    ],
)  # fmt: skip
def test_malformed_manifests_name_the_manifest_and_reason(text: str, reason: str) -> None:
    with pytest.raises(CorruptDataError) as e:
        parse_manifest(text, "s3://bkt/t-x/0/a.rsm-manifest")
    assert str(e.value).startswith(
        "s3://bkt/t-x/0/a.rsm-manifest: malformed tiered-storage manifest"
    )
    assert reason in str(e.value)


def test_truncated_chunk_sizes_packing_is_malformed() -> None:
    cctx = zstandard.ZstdCompressor(write_content_size=True)
    import base64

    bad = base64.b64encode(
        cctx.compress(bytes.fromhex("00000003 0000000a 01 00 0a 000000"))
    ).decode()
    with pytest.raises(CorruptDataError, match=r"14 bytes for 3 sizes \(15 expected\)"):
        decode_chunk_sizes(bad, "m")
    bad = base64.b64encode(cctx.compress(bytes.fromhex("00000003 0000000a 07"))).decode()
    with pytest.raises(CorruptDataError, match="7 bytes per value"):
        decode_chunk_sizes(bad, "m")


# ChunkedSource over real segments -------------------------------------------------------------


def _open(seg) -> ByteSource:
    manifest = read_manifest(LocalFileSource(str(seg.manifest)))
    return open_chunked(LocalFileSource(str(seg.log)), manifest)


@pytest.mark.parametrize("chunk_size", [1, 97, 512, 4096, 1 << 20])
def test_every_alignment_reads_the_original_bytes(tmp_path: Path, chunk_size: int) -> None:
    seg = write_tiered(tmp_path, SAMPLES / "magic2-none-0" / "00000000000000000000.log",
                       chunk_size=chunk_size)  # fmt: skip
    data = seg.original
    with _open(seg) as src:
        assert isinstance(src, ChunkedSource) and src.size == len(data)
        assert src.manifest.chunk_count == -(-len(data) // chunk_size)
        # around the first chunk boundaries, the middle and the last (short) chunk, and past the end
        bounds = [
            b
            for k in range(4)
            for b in (k * chunk_size, (len(data) // chunk_size - k) * chunk_size)
        ]
        starts = sorted({max(0, b + d) for b in bounds for d in (-1, 0, 1, chunk_size // 2)}
                        | {len(data) // 2, len(data) - 1, len(data), len(data) + 2})  # fmt: skip
        lengths = {1, 2, chunk_size - 1, chunk_size, chunk_size + 1, 2 * chunk_size + 5, 3000} - {0}
        for pos in starts:
            for n in sorted(lengths):
                buf = bytearray(n)
                got = src.read_into(pos, buf)
                want = data[pos : pos + n]
                assert got == len(want) and bytes(buf[:got]) == want, (pos, n)
                assert src.read(pos, n) == want
        # the last, short chunk and reads past the end
        last = (len(data) - 1) // chunk_size * chunk_size
        assert src.read(last, chunk_size) == data[last:]
        assert src.read(len(data), 10) == b"" and src.read(len(data) + 100, 1) == b""
        with pytest.raises(FileChangedError):
            src.read_fully_into(len(data) - 5, np.zeros(10, np.uint8))
        assert src.read(0, len(data) + 50) == data  # byte for byte


@pytest.mark.parametrize("log", SAMPLE_LOGS, ids=lambda p: p.parent.name)
def test_reconstruction_byte_for_byte_every_sample(tmp_path: Path, log: Path) -> None:
    seg = write_tiered(tmp_path, log, chunk_size=777)
    with _open(seg) as src:
        assert src.read(0, src.size) == log.read_bytes()


def test_sequential_windows_fetch_each_chunk_once(tmp_path: Path) -> None:
    log = require_shared(
        BROKER_WRITTEN / "rjmfernandes-flink-on-prem/data/orders-0/00000000000000000000.log"
    )
    seg = write_tiered(tmp_path, log, chunk_size=1 << 20)
    stored = seg.log.stat().st_size
    assert stored < len(seg.original)  # the segment compresses
    with _open(seg) as src:
        out = bytearray()
        window = 2 << 20  # the reader's window
        for pos in range(0, src.size, window - 1000):  # overlapping windows, as re-reads do
            out[pos:] = src.read(pos, window)
        assert bytes(out) == seg.original
        assert src.chunks_fetched == src.manifest.chunk_count == 4
        assert src.requests == 4 and src.bytes_read == stored


def test_uncompressed_layout_is_the_log_object_itself(tmp_path: Path) -> None:
    log = SAMPLES / "transactions-0" / "00000000000000000019.log"
    seg = write_tiered(tmp_path, log, compression=False, chunk_size=100)
    m = read_manifest(LocalFileSource(str(seg.manifest)))
    assert not m.transformed and m.stored_size == m.original_size == log.stat().st_size
    raw = json.loads(seg.manifest.read_text())["chunkIndex"]
    assert raw["type"] == "fixed" and raw["transformedChunkSize"] == 100
    with _open(seg) as src:
        assert isinstance(src, LocalFileSource) and src.read(0, src.size) == log.read_bytes()


def test_index_bytes_from_the_indexes_object(tmp_path: Path) -> None:
    log = SAMPLES / "transactions-0" / "00000000000000000000.log"
    seg = write_tiered(tmp_path, log)
    m = read_manifest(LocalFileSource(str(seg.manifest)))
    with LocalFileSource(str(seg.indexes)) as idx:
        for suffix in (".index", ".timeindex", ".txnindex"):
            before = idx.requests
            assert tiered_index_bytes(idx, m, suffix) == log.with_suffix(suffix).read_bytes()
            assert idx.requests == before + 1  # one ranged read each
        assert tiered_index_bytes(idx, m, ".snapshot") == b""
        assert tiered_index_bytes(idx, m, "leader-epoch-checkpoint") == b"0\n1\n0 0\n"
    seg2 = write_tiered(tmp_path / "b", SAMPLES / "orders-0" / "00000000000000000000.log")
    m2 = read_manifest(LocalFileSource(str(seg2.manifest)))
    assert m2.indexes["transaction"] is None
    with LocalFileSource(str(seg2.indexes)) as idx:
        assert tiered_index_bytes(idx, m2, ".txnindex") is None
        assert tiered_index_bytes(idx, m2, ".index") == seg2.index_files[".index"]
    # an .indexes object shorter than the manifest says
    seg.indexes.write_bytes(seg.indexes.read_bytes()[:10])
    with (
        LocalFileSource(str(seg.indexes)) as idx,
        pytest.raises(CorruptDataError, match="transaction index at"),
    ):
        tiered_index_bytes(idx, m, ".txnindex")


def _damage(seg, chunk: int, how: str) -> tuple[int, int]:
    m = read_manifest(LocalFileSource(str(seg.manifest)))
    start, size = m.stored_range(chunk)
    blob = bytearray(seg.log.read_bytes())
    if how == "magic":
        blob[start] ^= 0xFF
    else:  # a valid frame of the wrong content size, padded/cut to the same stored size
        other = zstandard.ZstdCompressor(write_content_size=True).compress(b"\0" * 10)
        blob[start : start + size] = (other + b"\0" * size)[:size]
    seg.log.write_bytes(bytes(blob))
    return start, size


@pytest.mark.parametrize("how", ["magic", "wrong size"])
def test_damaged_chunk_is_a_clear_error(tmp_path: Path, how: str) -> None:
    seg = write_tiered(tmp_path, SAMPLES / "magic2-none-0" / "00000000000000000000.log",
                       chunk_size=1000)  # fmt: skip
    start, size = _damage(seg, 2, how)
    with _open(seg) as src:
        assert src.read(0, 2000) == seg.original[:2000]  # chunks 0 and 1 are fine
        with pytest.raises(DecompressionError) as e:
            src.read(1990, 100)
    msg = str(e.value)
    assert msg.startswith(str(seg.log)) and e.value.position == start
    assert f"tiered chunk 2 (stored bytes [{start}, {start + size}))" in msg


def test_log_object_size_must_match_the_chunk_index(tmp_path: Path) -> None:
    seg = write_tiered(tmp_path, SAMPLES / "orders-0" / "00000000000000000000.log")
    seg.log.write_bytes(seg.log.read_bytes()[:-1])
    with pytest.raises(CorruptDataError, match="holds .* bytes but its manifest"):
        _open(seg)


@pytest.mark.parametrize("compression", [False, True])
def test_encrypted_segment_names_the_manifest(tmp_path: Path, compression: bool) -> None:
    log = SAMPLES / "transactions-0" / "00000000000000000000.log"
    seg = write_tiered(tmp_path, log, encryption=True, compression=compression, chunk_size=500)
    m = read_manifest(LocalFileSource(str(seg.manifest)))
    assert m.encrypted and (compression or m.stored_sizes[0] == 500 + 12 + 16)
    with pytest.raises(EncryptedSegmentError) as e:
        open_chunked(LocalFileSource(str(seg.log)), m)
    assert str(e.value).startswith(str(seg.manifest) + ": ") and "cannot decrypt" in str(e.value)
    with LocalFileSource(str(seg.indexes)) as idx, pytest.raises(EncryptedSegmentError):
        tiered_index_bytes(idx, m, ".index")


# through the Arrow API ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "log", [*SAMPLE_LOGS, SAMPLES / "transactions-0" / "00000000000000000019.log"],
    ids=lambda p: p.parent.name + "/" + p.name[16:20],
)  # fmt: skip
def test_arrow_read_of_tiered_equals_original(tmp_path: Path, log: Path) -> None:
    seg = write_tiered(tmp_path, log, chunk_size=333, topic=log.parent.name.rsplit("-", 1)[0])
    want = read_table(str(log))
    stats = ReadStats()
    got = read_table(str(seg.log), stats=stats)
    assert got.num_rows == want.num_rows > 0 and got.equals(want)
    assert stats.bytes_total == len(seg.original)  # the segment's size, not the object's


def test_flip_inside_a_chunk_is_caught_downstream(tmp_path: Path) -> None:
    """zstd frames carry no checksum (the plugin sets none): a flipped byte inside a chunk may
    decompress, and then the Kafka batch CRC catches it; nothing is returned silently."""
    seg = write_tiered(tmp_path, SAMPLES / "magic2-none-0" / "00000000000000000000.log",
                       chunk_size=1000)  # fmt: skip
    start, size = read_manifest(LocalFileSource(str(seg.manifest))).stored_range(2)
    blob = bytearray(seg.log.read_bytes())
    blob[start + size // 2] ^= 0x01
    seg.log.write_bytes(bytes(blob))
    with pytest.raises(CorruptDataError):
        read_table(str(seg.log))
    stats = ReadStats()
    kept = read_table(str(seg.log), stats=stats, ignoreCorruptFiles="true")
    assert (
        stats.corrupt_files == 1
        and kept.num_rows
        < read_table(str(SAMPLES / "magic2-none-0" / "00000000000000000000.log")).num_rows
    )


def test_store_helpers_index_paths_and_manifest_cache(tmp_path: Path) -> None:
    log = SAMPLES / "transactions-0" / "00000000000000000000.log"
    seg = write_tiered(tmp_path, log)
    path = str(seg.log)
    assert (
        is_tiered_log(path) and not is_tiered_log(str(seg.manifest)) and not is_tiered_log(str(log))
    )
    stem = path[:-4]
    assert tiered_index_target(stem + ".timeindex") == (path, ".timeindex")
    assert tiered_index_target(str(log.with_suffix(".index"))) is None
    assert tiered_index_target(stem + ".snapshot") is None
    opened: list[str] = []

    def opener(p: str) -> ByteSource:
        opened.append(p)
        return open_stored(p)

    m = load_manifest(path, opener)
    assert load_manifest(stem + ".indexes", opener) is m  # cached: opened, not read again
    for suffix in (".index", ".timeindex", ".txnindex"):
        assert read_tiered_index(path, suffix, opener) == log.with_suffix(suffix).read_bytes()
    assert set(opened) == {stem + ".rsm-manifest", stem + ".indexes"}
    with open_tiered_log(path, opener) as src:
        assert isinstance(src, ChunkedSource) and src.read(0, src.size) == log.read_bytes()
    seg.manifest.unlink()
    assert read_tiered_index(path, ".index", open_stored) is None  # no manifest: no index


# a bucket's worth of tiered segments, local and in S3 ---------------------------------------------

# (sample dir, topic, partition, compression, chunk size)
TREE = [
    ("multi-segment-0", "multi-segment", 0, True, 1000),
    ("transactions-0", "transactions", 0, False, 4096),
    ("orders-0", "orders", 0, True, 512),
    ("orders-1", "orders", 1, True, 300),
]


def _bucket(root: Path, prefix: str = "tiered/") -> dict[str, Path]:
    """TREE laid out as the plugin would under ``root/prefix``; returns original .log by key."""
    out = {}
    for n, (d, topic, part, comp, chunk) in enumerate(TREE):
        for k, log in enumerate(sorted((SAMPLES / d).glob("*.log"))):
            seg = write_tiered(
                root, log, prefix=prefix, topic=topic, partition=part, compression=comp,
                chunk_size=chunk, topic_id=(topic.encode() * 16)[:16],
                segment_id=bytes([n, k] * 8),
            )  # fmt: skip
            out[str(seg.log)] = log
    return out


def _originals() -> list[str]:
    return [str(SAMPLES / d) for d, *_ in TREE]


def _sorted(t):
    return t.sort_by([("topic", "ascending"), ("partition", "ascending"), ("offset", "ascending")])


def test_discovery_finds_the_layout_with_topic_partition_and_segment_size(tmp_path: Path) -> None:
    from kafkalog_source.layout.discovery import discover
    from kafkalog_source.options import parse_options

    written = _bucket(tmp_path)
    found = discover(parse_options({}, paths=str(tmp_path / "tiered")))
    assert sorted(s.path for s in found) == sorted(written)
    for s in found:
        log = written[s.path]
        assert (s.topic, s.partition) == {(d): (t, p) for d, t, p, *_ in TREE}[log.parent.name]
        assert s.base_offset == int(log.name[:20]) and s.size == log.stat().st_size
    # a topic directory, a partition directory, one object, and recursiveFileLookup
    topic_dir = next(p for p in (tmp_path / "tiered").iterdir() if p.name.startswith("orders-"))
    assert len(discover(parse_options({}, paths=str(topic_dir)))) == 2
    assert len(discover(parse_options({}, paths=str(topic_dir / "1")))) == 1
    one = next(iter(written))
    assert [s.path for s in discover(parse_options({}, paths=one))] == [one]
    deep = discover(parse_options({"recursiveFileLookup": "true"}, paths=str(tmp_path)))
    assert sorted(s.path for s in deep) == sorted(written)
    # pathGlobFilter and modifiedAfter apply to the .log object
    assert not discover(
        parse_options({"pathGlobFilter": "0*.log", "allowEmpty": "true"}, paths=str(tmp_path))
    )
    later = {"modifiedAfter": "2999-01-01T00:00:00", "allowEmpty": "true"}
    assert not discover(parse_options(later, paths=str(tmp_path / "tiered")))
    # verify's view of a partition directory: the base offsets of its segments
    from kafkalog_source.layout.discovery import segment_bases

    multi = next(p for p in (tmp_path / "tiered").iterdir() if p.name.startswith("multi-"))
    assert segment_bases(str(multi / "0")) == [1000, 1048, 1096]


def test_arrow_read_of_a_tiered_bucket_equals_the_broker_dirs(tmp_path: Path) -> None:
    _bucket(tmp_path)
    root = str(tmp_path / "tiered")
    for opts in ({}, {"isolationLevel": "read_committed"}, {"maxPartitionBytes": "1k", "openCostInBytes": "0"}):  # fmt: skip
        got = _sorted(read_table(root, **opts))
        want = _sorted(read_table(_originals(), **opts))
        assert got.num_rows == want.num_rows > 0 and got.equals(want), opts


def test_planning_uses_the_indexes_object_and_cuts_as_for_local_files(tmp_path: Path) -> None:
    from kafkalog_source.layout.indexes import read_offset_index, read_txn_index, sibling_path
    from kafkalog_source.options import parse_options
    from kafkalog_source.planning.planner import plan
    from kafkalog_source.planning.request import batch_request

    written = _bucket(tmp_path)
    for tiered, log in written.items():
        for read, suffix in ((read_offset_index, ".index"), (read_txn_index, ".txnindex")):
            a, b = read(sibling_path(tiered, suffix)), read(sibling_path(str(log), suffix))
            assert (a is None and b is None) or all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))  # fmt: skip
    opts = {"maxPartitionBytes": "1k", "openCostInBytes": "0"}

    def pieces(paths):
        splits = plan(batch_request(parse_options(opts, paths=paths)))
        return sorted((r.topic, r.partition, r.segment_base_offset, r.start, r.end)
                      for s in splits for r in s.ranges)  # fmt: skip

    assert pieces(str(tmp_path / "tiered")) == pieces(_originals())


def test_orphans_and_encrypted_segments_in_a_bucket(tmp_path: Path) -> None:
    from kafkalog_source.layout.discovery import discover
    from kafkalog_source.options import parse_options

    written = _bucket(tmp_path)
    orphan = sorted(written)[0]
    Path(orphan[:-4] + ".rsm-manifest").unlink()
    stats = ReadStats()
    found = discover(parse_options({}, paths=str(tmp_path / "tiered")), stats)
    assert orphan not in {s.path for s in found} and len(found) == len(written) - 1
    assert [e.path for e in stats.events if e.kind == "tiered orphan"] == [orphan]
    enc = write_tiered(tmp_path, SAMPLES / "orders-0" / "00000000000000000000.log",
                       topic="secret", encryption=True)  # fmt: skip
    with pytest.raises(EncryptedSegmentError, match=str(enc.manifest)):
        read_table(str(tmp_path / "tiered"))
    Path(str(enc.manifest)).write_text("{}")
    with pytest.raises(CorruptDataError, match="malformed tiered-storage manifest: version"):
        read_table(str(tmp_path / "tiered"))
    stats = ReadStats()
    opts = parse_options({"ignoreCorruptFiles": "true"}, paths=str(tmp_path / "tiered"))
    assert len(discover(opts, stats)) == len(written) - 1 and stats.corrupt_files == 1
    assert [e.path for e in stats.events if e.kind == "corrupt file"] == [str(enc.manifest)]
    t = read_table(str(tmp_path / "tiered"), ignoreCorruptFiles="true")
    assert t.num_rows > 0


def test_s3_bucket_end_to_end(s3_server, tmp_path: Path) -> None:
    """The plugin's layout in a real S3 server: discovery, planning inside segments, Arrow read."""
    from kafkalog_source.layout.discovery import discover
    from kafkalog_source.options import parse_options
    from kafkalog_source.planning.planner import plan
    from kafkalog_source.planning.request import batch_request
    from kafkalog_source.transport.source import remote_totals

    _bucket(tmp_path)
    uri = s3_server.upload(tmp_path / "tiered", "kafkalog-tiered/tiered")
    opts = s3_server.options
    found = discover(parse_options(opts, paths=uri))
    local = discover(parse_options({}, paths=str(tmp_path / "tiered")))
    assert [(s.topic, s.partition, s.base_offset, s.size) for s in found] == [
        (s.topic, s.partition, s.base_offset, s.size) for s in local
    ]
    for extra in ({}, {"isolationLevel": "read_committed"}, {"maxPartitionBytes": "1k", "openCostInBytes": "0"}):  # fmt: skip
        stats = ReadStats()
        got = _sorted(read_table(uri, stats=stats, **opts, **extra))
        assert got.equals(_sorted(read_table(_originals(), **extra))), extra
        assert stats.source_requests > 0
    # planning reads the .indexes objects: cuts inside compressed segments, as for local files
    before = remote_totals()
    splits = plan(
        batch_request(
            parse_options(dict(opts, maxPartitionBytes="1k", openCostInBytes="0"), paths=uri)
        )
    )
    fetched = remote_totals()[0] - before[0]
    assert sum(len(s.ranges) for s in splits) > len(found)
    assert fetched > 0


def test_s3_bucket_read_with_one_listing_and_no_head(s3_server, tmp_path: Path) -> None:
    """Behind a proxy that records every request: the manifests, the .indexes and .log objects
    are opened by their listed sizes (one listing, no HEAD), in planning and in the read."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from delayproxy import DelayProxy, request_kind

    _bucket(tmp_path)
    uri = s3_server.upload(tmp_path / "tiered", "kafkalog-tiered-nohead/tiered")
    port = int(s3_server.endpoint.rsplit(":", 1)[1])
    with DelayProxy(port, delay=0) as proxy:
        opts = {**s3_server.options, "fs.s3.endpoint_override": f"http://127.0.0.1:{proxy.port}"}
        for extra in ({}, {"maxPartitionBytes": "1k", "openCostInBytes": "0"}):
            proxy.reset()
            got = _sorted(read_table(uri, **opts, **extra))
            assert got.equals(_sorted(read_table(_originals(), **extra))), extra
            kinds = [request_kind(line) for line in proxy.request_lines]
            assert kinds.count("LIST") == 1 and "HEAD" not in kinds, proxy.request_lines


def test_s3_big_compressed_segment_split_inside(s3_server, tmp_path: Path) -> None:
    from kafkalog_source.options import parse_options
    from kafkalog_source.planning.planner import plan
    from kafkalog_source.planning.request import batch_request

    log = require_shared(
        BROKER_WRITTEN / "rjmfernandes-flink-on-prem/data/orders-0/00000000000000000000.log"
    )
    seg = write_tiered(tmp_path, log, chunk_size=1 << 20, topic="orders")
    uri = s3_server.upload(tmp_path / "tiered", "kafkalog-tiered-big/tiered")
    opts = dict(s3_server.options, maxPartitionBytes="512k", openCostInBytes="0")
    splits = plan(batch_request(parse_options(opts, paths=uri)))
    pieces = sorted((r.start, r.end) for s in splits for r in s.ranges)
    assert len(pieces) > 1 and pieces[0][0] == 0 and pieces[-1][1] == len(seg.original)
    assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:], strict=False))
    stats = ReadStats()
    got = read_table(uri, stats=stats, **opts).sort_by("offset")
    assert got.equals(read_table(str(log)))
    # every range fetches only the chunks it needs: far less than one object per range
    assert stats.source_bytes < 2 * seg.log.stat().st_size + len(pieces) * (2 << 20)


@pytest.mark.spark
def test_spark_read_of_a_tiered_bucket_in_s3(spark, s3_server, tmp_path: Path) -> None:
    """Spark over the plugin's layout in S3, split inside (compressed) segments: every record
    once, as from the broker directories."""
    _bucket(tmp_path)
    uri = s3_server.upload(tmp_path / "tiered", "kafkalog-tiered-spark/tiered")
    df = (
        spark.read.format("kafkalog")
        .options(**s3_server.options, maxPartitionBytes="1k", openCostInBytes="0")
        .load(uri)
    )
    assert df.rdd.getNumPartitions() > sum(1 for d, *_ in TREE for _ in (SAMPLES / d).glob("*.log"))
    cols = ["topic", "partition", "offset", "timestamp", "key", "value", "headers"]
    got = sorted((tuple(r) for r in df.select(*cols).collect()), key=repr)
    want = _sorted(read_table(_originals())).select(cols).to_pylist()
    assert len(got) == len(want) > 100
    assert sorted((r["topic"], r["partition"], r["offset"]) for r in want) == sorted(
        (t, p, o) for t, p, o, *_ in got
    )


def test_cli_verify_and_dump_read_the_layout(tmp_path: Path) -> None:
    from conftest import run_cli

    for i, log in enumerate(sorted((SAMPLES / "transactions-0").glob("*.log"))):
        write_tiered(tmp_path, log, topic="transactions", chunk_size=700,
                     segment_id=bytes([i] * 16))  # fmt: skip
    root = tmp_path / "tiered"
    ok = run_cli("verify", str(root))
    want = run_cli("verify", str(SAMPLES / "transactions-0"))
    assert ok.returncode == want.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[-1] == want.stdout.splitlines()[-1]  # the same totals
    log19 = next(root.glob("*/0/00000000000000000019-*.log"))
    dump = run_cli("dump", str(log19))
    assert dump.returncode == 0 and "Log starting offset: 19" in dump.stdout
    assert "no base offset" not in dump.stdout + dump.stderr
    # verify checks the .index held in the .indexes object
    indexes = next(root.glob("*/0/00000000000000000000-*.indexes"))
    blob = bytearray(indexes.read_bytes())
    blob[4] ^= 0x7F  # the position of offset index entry 0
    indexes.write_bytes(bytes(blob))
    bad = run_cli("verify", str(root))
    assert bad.returncode != 0 and "entry 0" in bad.stdout + bad.stderr
