"""Redpanda archives found by :mod:`.discovery`: segment files in ``<ns>/<topic>/<p>_<rev>/``
directories of a data directory, tiered-storage segment objects below hash prefixes, and
partition manifests (``meta/<ns>/<topic>/<p>_<rev>/manifest.json``). Each partition's segments
are translated together (:func:`~.redpanda.translate_partition`) into :class:`SegmentFile`\\ s
whose base offset is a Kafka offset and whose size is their Kafka view's."""

from __future__ import annotations

import fnmatch
import logging
import os
from dataclasses import dataclass, field
from typing import Any

from ..errors import CorruptDataError, OptionError
from ..format.redpanda import (
    HASH_PREFIX,
    INTERNAL_NAMESPACES,
    KAFKA_NAMESPACE,
    MANIFEST_BIN,
    MANIFEST_JSON,
    META_DIR,
    PartitionManifest,
    parse_partition_dir,
    parse_segment_name,
)
from ..stats import ReadEvent
from ..transport.source import open_stored
from .listing import Entry, SegmentFile
from .redpanda import manifest_prefix, read_manifest, translate_partition

log = logging.getLogger("kafkalog")

# how deep below a directory discovery looks for <p>_<rev> directories: hash/meta/ns/topic/p_rev
REDPANDA_DEPTH = 5


def rp_partition_dir(name: str) -> tuple[int, int] | None:
    """``<partition>_<revision>`` parsed; None for another name."""
    return parse_partition_dir(name)


def looks_redpanda_dir(name: str, depth: int) -> bool:
    """Whether a directory ``depth`` levels below a named one may hold Redpanda partitions: at
    the first level a namespace (``kafka``, ``kafka_internal``, ``redpanda``), a tiered-storage
    hash prefix or ``meta``; below such a one, any directory."""
    if depth >= 2:
        return True
    return (
        name in (KAFKA_NAMESPACE, *INTERNAL_NAMESPACES)
        or name == META_DIR
        or HASH_PREFIX.match(name) is not None
    )


def _parts(path: str) -> list[str]:
    return path.rstrip("/").split("/") if "://" in path else os.path.abspath(path).split(os.sep)


@dataclass
class _Group:
    """One partition's segments (by the path of its ``<p>_<rev>`` level)."""

    namespace: str | None
    topic: str | None
    partition: int | None
    revision: int | None
    entries: list[tuple[Entry, Any]] = field(default_factory=list)


@dataclass
class RedpandaFound:
    """What discovery found of Redpanda: segments by partition, manifests, and the partitions of
    Redpanda's own namespaces it skipped (``redpanda=kafka``)."""

    mode: str = "kafka"
    groups: dict[tuple, _Group] = field(default_factory=dict)
    manifests: dict[tuple, Entry] = field(default_factory=dict)
    binary_manifests: dict[tuple, Entry] = field(default_factory=dict)
    internal: set[tuple[str, str, int]] = field(default_factory=set)

    def take(self, entry: Entry, collector: Any, explicit: bool = False) -> bool:
        """Keep ``entry`` when it is a Redpanda segment or partition manifest; whether it was."""
        if entry.is_dir:
            return False
        name = entry.name
        if name not in (MANIFEST_JSON, MANIFEST_BIN) and ("-v" not in name or ".log" not in name):
            return False  # most files of a Kafka log directory: not looked at further
        parts = _parts(entry.path)
        mp = manifest_prefix(entry.path)
        if mp is not None:
            _, ns, topic, part, rev = mp
            key = ("/".join(parts[:-6]), ns, topic, part, rev)
            if parts[-1] == MANIFEST_BIN:
                self.binary_manifests[key] = entry
            else:
                self.manifests[key] = entry
            return True
        name = parse_segment_name(parts[-1])
        if name is None:
            return False
        pr = parse_partition_dir(parts[-2]) if len(parts) >= 2 else None
        if pr is None or len(parts) < 4:
            if not explicit:
                return False  # a Redpanda-like name outside a partition directory
            key: tuple = (
                os.path.dirname(entry.path) if "://" not in entry.path else "/".join(parts[:-1]),
                None,
                None,
                None,
                None,
            )
            group = self.groups.setdefault(key, _Group(None, None, None, None))
            group.entries.append((entry, name))
            return True
        ns, topic = parts[-4], parts[-3]
        # tiered storage: <root>/<hash>/<ns>/<topic>/<p>_<rev>/<name>: each segment under a
        # hash of its own path, so a partition is (root, ns, topic, p, rev)
        hashed = len(parts) >= 5 and HASH_PREFIX.match(parts[-5]) is not None
        root = "/".join(parts[:-5] if hashed else parts[:-4])
        internal = ns in INTERNAL_NAMESPACES
        if internal and self.mode != "raw":
            self.internal.add((ns, topic, pr[0]))
            return True
        shown_topic = f"{ns}/{topic}" if internal else topic
        if not collector.selected(entry.path, shown_topic, pr[0]):
            return True
        o = collector.options
        if o.path_glob_filter is not None and not fnmatch.fnmatchcase(
            entry.name, o.path_glob_filter
        ):
            collector.filtered += 1
            return True
        if (o.modified_before is not None and not entry.mtime < o.modified_before) or (
            o.modified_after is not None and not entry.mtime > o.modified_after
        ):
            collector.filtered += 1
            return True
        key = (root, ns, topic, pr[0], pr[1])
        group = self.groups.setdefault(key, _Group(ns, shown_topic, pr[0], pr[1]))
        if all(e.key != entry.key for e, _ in group.entries):
            group.entries.append((entry, name))
        return True

    def resolve(self, collector: Any) -> None:
        """Translate every partition found and add its segments to ``collector.found``; refuse
        a read that found Kafka segments too."""
        if not self.groups:
            return
        if collector.found:
            kafka = next(iter(collector.found.values())).path
            rp = next(iter(self.groups.values())).entries[0][0].path
            raise OptionError(
                f"these paths hold both Kafka and Redpanda partitions ({kafka} is Kafka's, "
                f"{rp} Redpanda's); read each archive on its own"
            )
        store = collector.options.store
        raw = self.mode == "raw"

        def opener(path: str) -> Any:
            return open_stored(path, store)

        for key, group in sorted(self.groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
            manifest = self._manifest(key, collector, opener)
            entries = group.entries
            by_name = {e.name: (e, n) for e, n in entries}
            if manifest is not None:
                wanted = [manifest.object_name(ms) for ms in manifest.segments]
                listed = [by_name[w] for w in wanted if w in by_name]
                extra = len(entries) - len(listed)
                if extra:
                    log.info(
                        "%d segment objects of %s/%s/%d are not in its partition manifest "
                        "(replaced or not yet committed): not read",
                        extra,
                        group.namespace,
                        group.topic,
                        group.partition,
                    )
                entries = listed
            else:
                entries = _newest_archiver_terms(entries)
            segs = [(e.path, n) for e, n in entries]
            if not segs:
                continue
            try:
                done = translate_partition(
                    segs, opener, raw or group.namespace in INTERNAL_NAMESPACES, manifest
                )
            except FileNotFoundError as exc:
                raise CorruptDataError(
                    f"a Redpanda segment vanished while listed: {exc}", segs[0][0], 0
                ) from None
            mtimes = {e.path: e.mtime for e, _ in entries}
            for t in done:
                if t.hole_before is not None and not t.raw:
                    _note_hole(collector, t.path, t.hole_before)
                collector.found[t.path] = SegmentFile(
                    t.path, group.topic, group.partition, t.kafka_base, t.view_size, mtimes[t.path]
                )

    def _manifest(self, key: tuple, collector: Any, opener: Any) -> PartitionManifest | None:
        """The group's JSON partition manifest, read; None when there is none (a binary one is
        said so: kafkalog cannot read it yet, and the listing is used)."""
        entry = self.manifests.get(key)
        if entry is None:
            binary = self.binary_manifests.get(key)
            if binary is not None:
                msg = (
                    f"{binary.path}: a binary (serde) Redpanda partition manifest, which kafkalog "
                    "cannot read yet; the segments are taken from the listing instead (their "
                    "deltas from the segments themselves)"
                )
                _note(
                    collector,
                    ReadEvent(
                        "redpanda manifest", "binary manifest not read", binary.path, message=msg
                    ),
                )
            return None
        with opener(entry.path) as src:
            data = src.read(0, src.size)
        return read_manifest(data, entry.path)


def _note_hole(collector: Any, path: str, hole: tuple[int, int]) -> None:
    """A hole in a partition's raft offsets before ``path`` (a missing segment): the Kafka
    layers report the Kafka offsets it held as missing; the offsets after it assume that no
    batch in it took no Kafka offset, which nothing here can tell, so it is said."""
    first, last = hole
    msg = (
        f"{path}: raft offsets {first}..{last} before this Redpanda segment are missing (a "
        "segment not here); the Kafka offsets from here on assume the missing batches all took "
        "Kafka offsets: they are too high by the number of raft_configuration (and other "
        "offset-less) batches that were among them"
    )
    _note(
        collector,
        ReadEvent("redpanda hole", "raft offsets missing between segments", path,
                  base_offset=first, last_offset=last, message=msg),
    )  # fmt: skip


def _note(collector: Any, event: ReadEvent) -> None:
    """A warning of discovery: kept for the read's ReadStats (its first range tells it), and
    recorded in the stats discovery was given, if any."""
    collector.notes.events.append(event)
    if collector.stats is not None:
        collector.stats.record(event, logging.WARNING, capped=False)


def _newest_archiver_terms(entries: list[tuple[Entry, Any]]) -> list[tuple[Entry, Any]]:
    """Tiered-storage objects of the same segment uploaded under several archiver terms: the
    newest term's (what a manifest would name), when no manifest says."""
    best: dict[tuple, tuple[Entry, Any]] = {}
    for e, n in entries:
        k = (n.base, n.term, n.committed)
        cur = best.get(k)
        if cur is None or (n.archiver_term or -1) > (cur[1].archiver_term or -1):
            best[k] = (e, n)
    return list(best.values())


__all__ = ["REDPANDA_DEPTH", "RedpandaFound", "looks_redpanda_dir", "rp_partition_dir"]
