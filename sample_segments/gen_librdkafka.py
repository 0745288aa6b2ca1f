"""librdkafka for ``generate.py``: produce through confluent-kafka into librdkafka's mock
cluster, one batch per round, and fetch the stored record sets back raw with a FetchRequest v4
encoded by kafka-python's protocol classes.
"""

from __future__ import annotations

import socket
import struct
import sys
from collections.abc import Sequence
from typing import Any

from gen_format import FIXED_LIBRDKAFKA_PID, V2_LAST_OFFSET_DELTA, Rec, v2_patch

# --------------------------------------------------------------------------- librdkafka


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            raise ConnectionError("mock broker closed the connection")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def fetch_raw(host: str, port: int, topic: str, partition: int, end_offset: int) -> list[bytes]:
    """Fetch the raw stored batches of a partition with a FetchRequest v4 (kafka-python)."""
    from kafka.protocol.consumer import FetchRequest, FetchResponse

    batches: list[bytes] = []
    offset, correlation = 0, 0
    with socket.create_connection((host, port), timeout=10) as sock:
        while offset < end_offset:
            correlation += 1
            req = FetchRequest[4](
                replica_id=-1,
                max_wait_ms=100,
                min_bytes=0,
                max_bytes=1 << 20,
                isolation_level=0,
                topics=[
                    FetchRequest.FetchTopic(
                        topic=topic,
                        partitions=[
                            FetchRequest.FetchTopic.FetchPartition(
                                partition=partition,
                                fetch_offset=offset,
                                partition_max_bytes=1 << 20,
                            )
                        ],
                    )
                ],
            )
            req.with_header(correlation_id=correlation, client_id="sample-segments")
            sock.sendall(req.encode(header=True, framed=True))
            (size,) = struct.unpack(">i", _recv_exact(sock, 4))
            resp = FetchResponse[4].decode(_recv_exact(sock, size), header=True)
            part = resp.responses[0].partitions[0]
            assert part.error_code == 0, part
            data = bytes(part.records or b"")
            assert data, f"empty fetch at offset {offset}"
            pos = 0
            # Split the record set into batches using only the common 12-byte prefix (§0).
            while pos + 12 <= len(data):
                (length,) = struct.unpack_from(">i", data, pos + 8)
                if pos + 12 + length > len(data):
                    break
                batch = data[pos : pos + 12 + length]
                (base,) = struct.unpack_from(">q", batch, 0)
                (delta,) = struct.unpack_from(">i", batch, V2_LAST_OFFSET_DELTA)
                if base + delta >= offset:
                    batches.append(batch)
                    offset = base + delta + 1
                pos += 12 + length
    return batches


def produce_with_librdkafka(
    topic: str, plan: Sequence[tuple[str, bool, Sequence[Rec]]]
) -> list[bytes]:
    """Produce each (codec, idempotent, records) as one batch into a mock cluster; fetch raw."""
    from confluent_kafka import Producer

    quiet = {"log_level": 2}  # hide the mock's notices and the teardown disconnect errors
    owner = Producer({"test.mock.num.brokers": 1, **quiet})
    broker = next(iter(owner.list_topics(timeout=10).brokers.values()))
    host, port = broker.host, broker.port
    total = 0
    for codec, idempotent, records in plan:
        producer = Producer(
            {
                "bootstrap.servers": f"{host}:{port}",
                "compression.type": codec,
                "enable.idempotence": idempotent,
                "linger.ms": 5000,
                "batch.num.messages": 100000,
                **quiet,
            }
        )
        # Learn the partition leader first, so that records go straight to the partition queue
        # and linger.ms holds them until flush(): one produce round = one batch.
        producer.list_topics(topic, timeout=10)
        errors: list[Any] = []

        def on_delivery(err: Any, _msg: Any, errors: list[Any] = errors) -> None:
            if err is not None:
                errors.append(err)

        for r in records:
            producer.produce(
                topic,
                key=r.key,
                value=r.value,
                partition=0,
                timestamp=r.ts,
                headers=list(r.headers),
                on_delivery=on_delivery,
            )
        assert producer.flush(30) == 0 and not errors, errors
        del producer
        total += len(records)
    batches = fetch_raw(host, port, topic, 0, total)
    del owner
    return batches


def produce_batches_with_librdkafka(
    topic: str, plan: Sequence[tuple[str, bool, Sequence[Rec]]], attempts: int = 5
) -> list[bytes]:
    """Like produce_with_librdkafka, retried until every round landed as exactly one batch."""
    for _ in range(attempts):
        batches = produce_with_librdkafka(topic, plan)
        counts = [struct.unpack_from(">i", b, 57)[0] for b in batches]
        if counts == [len(records) for _, _, records in plan]:
            return batches
        print(f"librdkafka split a batch ({counts}); producing again", file=sys.stderr)
    raise RuntimeError("librdkafka kept splitting batches")


def librdkafka_batch_fixup(raw: bytes, idempotent: bool) -> bytes:
    """Pin the mock broker's random producer id to a fixed value (CRC recomputed)."""
    buf = bytearray(raw)
    if idempotent:
        v2_patch(buf, producer_id=FIXED_LIBRDKAFKA_PID)
    return bytes(buf)
