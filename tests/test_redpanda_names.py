"""A Kafka log directory named like a Redpanda namespace, hash prefix or ``meta`` directory
(``/var/lib/kafka``, a bucket prefix ``kafka/``) is read as Kafka's: its partitions keep their
topic and partition, and each directory is listed once. The look for Redpanda's layout found a
Kafka log directory named ``kafka`` and added its segments without a topic (the report then saw
no ``__consumer_offsets``)."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

import kafkalog_source as kl
from kafkalog_source.layout import listing

SAMPLES = Path(__file__).resolve().parent.parent / "sample_segments"
PARTITIONS = ("orders-0", "orders-1", "multi-segment-0", "transactions-0")


def _copy(root: Path) -> Path:
    root.mkdir(parents=True)
    for name in PARTITIONS:
        shutil.copytree(SAMPLES / name, root / name)
    (root / "meta.properties").write_text("version=0\n")
    return root


def _rows(path: str) -> list[tuple]:
    t = kl.read_table(path, columns=["topic", "partition", "offset"])
    return sorted(
        zip(*(t.column(c).to_pylist() for c in ("topic", "partition", "offset")), strict=True)
    )


@pytest.mark.parametrize("name", ["kafka", "redpanda", "kafka_internal", "meta", "0123abcd"])
def test_a_kafka_log_directory_named_like_redpanda_s(
    tmp_path: Path, name: str, monkeypatch
) -> None:
    expected = _rows(str(_copy(tmp_path / "plain" / "logs")))
    assert expected and all(topic is not None for topic, _, _ in expected)
    root = _copy(tmp_path / "named" / name)
    listed: Counter[str] = Counter()
    real = listing.LocalLister.list_dir

    def counting(self, path: str):  # noqa: ANN001, ANN202
        listed[str(Path(path))] += 1
        return real(self, path)

    monkeypatch.setattr(listing.LocalLister, "list_dir", counting)
    assert _rows(str(root)) == expected
    twice = {p: n for p, n in listed.items() if n > 1}
    assert not twice, twice
