"""What the remote request tests share (tests/test_remote_requests.py,
test_remote_links.py): the test bucket, small segments of kafka-python batches, and forgetting
what this process learnt of the files."""

from __future__ import annotations

from conftest import kp_v2_batch

from kafkalog_source.planning import logview

BUCKET = "kafkalog-requests"
SECRET = "testing-secret-value"  # conftest's S3 secret key
BATCHES = 4  # per segment
RECORDS = 5  # per batch


def _segment(base: int) -> tuple[bytes, list[tuple[int, int, int]]]:
    """Segment bytes from offset ``base``, and (position, base offset, first timestamp) of each
    batch."""
    data = b""
    batches = []
    for b in range(BATCHES):
        offset = base + b * RECORDS
        ts = 1_700_000_000_000 + offset
        batches.append((len(data), offset, ts))
        recs = [(ts + i, b"k%d" % (offset + i), b"v%d" % (offset + i), []) for i in range(RECORDS)]
        data += kp_v2_batch(recs, offset)
    return data, batches


def _as_a_new_process() -> None:
    """Forget what this process learnt of the files (header walks, checkpoint texts)."""
    from kafkalog_source.layout import checkpoints

    logview.forget()
    checkpoints.forget()
