"""``kafkalog report``: what Kafka's internal topics say, from their decoded records.

* ``__consumer_offsets`` (``decode=consumer_offsets``): each consumer group's last
  ``GroupMetadata`` (protocol, generation, leader, members with their client, host and assigned
  partitions; a tombstone: the group was deleted) and its last committed offset per partition
  (``OffsetCommit``; a tombstone removes it), against the partition's log end at the moment of
  the archive (after its last batch, or later when the reader's evidence says the log went on:
  a cut last segment): the lag at the moment of the archive. A partition the archive does not
  hold has no log end (and no lag). When ``__consumer_offsets`` itself has gaps or losses, the
  commits in them are not seen: the page and the notes say so (``incomplete``).
* ``__cluster_metadata`` (``decode=cluster_metadata``): brokers (registrations, fencing,
  unregistrations), topics (created, partitions, removed) and configuration changes over time
  (``ConfigRecord``: a null value deletes the setting; a value that may be a secret is shown as
  ``(redacted)``, as Kafka's own tools show it: :func:`config_is_secret`), plus a count of
  records per type.

Both are folded row by row from a streamed read of those partitions only, into state that is as
big as the groups, partitions and brokers are (not the topic's history).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from typing import Any

from ...errors import KafkaLogError

log = logging.getLogger("kafkalog")

MAX_CHANGES = 5_000  # configuration changes listed (the rest are counted)
MAX_BROKER_EVENTS = 2_000
CONFIG_RESOURCE_TYPES = {
    2: "topic",
    4: "broker",
    8: "broker logger",
    16: "client metrics",
    32: "group",
}
# A ConfigRecord's value is shown unless it may be a secret. Kafka's own tools redact the value
# of a configuration whose type is PASSWORD, or whose type they do not know
# (metadata/.../util/RecordRedactor.java and KafkaConfigSchema.isSensitive, apache/kafka
# 0aca8ef): the report has no ConfigDef, so it masks by name, erring towards masking: any name
# holding one of these words, and any broker setting of the SSL, SASL or per-listener families.
REDACTED = "(redacted)"
SECRET_WORDS = (
    "password",
    "passwd",
    "secret",
    "jaas",
    "key",
    "token",
    "credential",
    "certificate",
    "private",
)
SECRET_BROKER_PREFIXES = ("ssl.", "sasl.", "listener.name.", "password.")


def config_is_secret(resource_type: str, name: str | None) -> bool:
    """Whether the value of configuration ``name`` of a ``resource_type`` resource ("topic",
    "broker", ...) may hold a secret, and is shown as :data:`REDACTED` (see above)."""
    if not name:
        return True
    low = name.lower()
    if any(w in low for w in SECRET_WORDS):
        return True
    if resource_type not in ("topic", "group", "broker logger", "client metrics"):
        return low.startswith(SECRET_BROKER_PREFIXES)
    return False


OFFSETS_COLUMNS = (
    "offset",
    "timestamp",
    "record_type",
    "group",
    "committed_topic",
    "committed_partition",
    "committed_offset",
    "commit_timestamp",
    "protocol_type",
    "generation",
    "tombstone",
    "decoded",
    "error",
)
METADATA_COLUMNS = (
    "offset",
    "timestamp",
    "record_type",
    "topic_name",
    "topic_id",
    "partition_id",
    "broker_id",
    "config_resource_type",
    "config_resource_name",
    "config_name",
    "config_value",
    "tombstone",
    "decoded",
    "error",
)


def _ms(v: Any) -> int | None:
    """A timestamp cell as epoch milliseconds."""
    if v is None:
        return None
    return int(v.timestamp() * 1000)


def _rows(dirs: list[str], decode: str, columns: tuple[str, ...], extra: dict[str, str]) -> Any:
    """The decoded rows of the partition directories ``dirs``, as dicts, in log order, read
    with the pass's options (``extra``: the store's ``fs.*`` options above all, the files it
    selected) but its own decoding and error handling."""
    from ...reader import iter_batches

    own = {"decode": decode, "mode": "DROPMALFORMED", "failOnDataLoss": "false"}
    fixed = {k.lower() for k in own}
    options = {**{k: v for k, v in extra.items() if k.lower() not in fixed}, **own}
    for rb in iter_batches(dirs if len(dirs) > 1 else dirs[0], columns=list(columns), **options):
        yield from rb.to_pylist()


def internal_topics(
    data: dict[str, Any], groups: dict[str, list[Any]], extra: dict[str, str]
) -> None:
    """Add ``consumer_groups`` and ``cluster_metadata`` to the report's ``data``."""
    by_topic: dict[str, list[str]] = {}
    for directory, segs in groups.items():
        if segs and segs[0].topic in ("__consumer_offsets", "__cluster_metadata"):
            by_topic.setdefault(segs[0].topic, []).append(directory)
    ends = {
        (p["topic"], p["partition"]): p["log_end_offset"]
        for p in data["partitions"]
        if p["topic"] is not None
    }
    data["consumer_groups"] = None
    data["cluster_metadata"] = None
    if "__consumer_offsets" in by_topic:
        try:
            data["consumer_groups"] = consumer_groups(
                _rows(by_topic["__consumer_offsets"], "consumer_offsets", OFFSETS_COLUMNS, extra),
                ends,
            )
        except KafkaLogError as exc:  # damage the verified pass reported already
            data["notes"].append(f"__consumer_offsets could not be decoded in full: {exc}")
    if "__cluster_metadata" in by_topic:
        try:
            data["cluster_metadata"] = cluster_metadata(
                _rows(by_topic["__cluster_metadata"], "cluster_metadata", METADATA_COLUMNS, extra)
            )
        except KafkaLogError as exc:
            data["notes"].append(f"__cluster_metadata could not be decoded in full: {exc}")
    for topic, key, what in (
        ("__consumer_offsets", "consumer_groups", "the groups' commits and lag"),
        ("__cluster_metadata", "cluster_metadata", "the brokers, topics and configuration"),
    ):
        if data[key] is None:
            continue
        lost = incomplete(data["gaps"], topic)
        data[key]["incomplete"] = lost
        if lost:
            data["notes"].append(
                f"{topic} has gaps or losses ({', '.join(g['where'] for g in lost[:5])}"
                f"{', ...' if len(lost) > 5 else ''}): {what} shown are as of the records "
                "the archive holds, and may be older than the archive"
            )


def incomplete(gaps: list[dict[str, Any]], topic: str) -> list[dict[str, Any]]:
    """The gaps and losses of ``topic``'s partitions (records of it the decoded read cannot
    see: a later commit, a later configuration), each as ``where`` (partition and offsets),
    ``kind`` and ``path``."""
    out = []
    for g in gaps:
        if g.get("topic") != topic:
            continue
        a, b = g.get("first_offset"), g.get("last_offset")
        span = f" offsets {a}..{b}" if a is not None and b is not None else ""
        span = span or (f" from offset {a}" if a is not None else "")
        out.append(
            {"where": f"{topic}-{g['partition']}{span}", "kind": g["title"], "path": g["path"]}
        )
    return out


def consumer_groups(rows: Any, ends: dict[tuple[str, int], int | None]) -> dict[str, Any]:
    """Fold ``__consumer_offsets`` rows into each group's last state and committed offsets."""
    groups: dict[str, dict[str, Any]] = {}
    commits: dict[tuple[str, str, int], dict[str, Any]] = {}
    undecoded = 0
    for r in rows:
        if r["error"]:
            undecoded += 1
            continue
        kind = r["record_type"]
        if kind == "OffsetCommit" and r["committed_topic"] is not None:
            key = (r["group"], r["committed_topic"], r["committed_partition"])
            if r["tombstone"]:
                commits.pop(key, None)
                continue
            commits[key] = {
                "committed_offset": r["committed_offset"],
                "commit_timestamp_ms": _ms(r["commit_timestamp"]) or _ms(r["timestamp"]),
                "record_offset": r["offset"],
            }
        elif kind == "GroupMetadata" and r["group"] is not None:
            g = groups.setdefault(r["group"], {"group": r["group"]})
            g["record_offset"] = r["offset"]
            g["timestamp_ms"] = _ms(r["timestamp"])
            if r["tombstone"]:
                g.update(state="Dead (deleted)", members=[], generation=None, protocol=None)
                continue
            value = (json.loads(r["decoded"]) if r["decoded"] else {}).get("value") or {}
            members = []
            for m in value.get("members") or []:
                assignment = m.get("assignment")
                assigned = []
                if isinstance(assignment, dict):
                    for a in assignment.get("assignedPartitions") or []:
                        assigned += [f"{a.get('topic')}-{p}" for p in a.get("partitions") or []]
                members.append(
                    {
                        "member_id": m.get("memberId"),
                        "group_instance_id": m.get("groupInstanceId"),
                        "client_id": m.get("clientId"),
                        "client_host": m.get("clientHost"),
                        "session_timeout_ms": m.get("sessionTimeout"),
                        "assigned": assigned,
                    }
                )
            g.update(
                state="Stable" if members else "Empty",
                protocol_type=r["protocol_type"],
                protocol=value.get("protocol"),
                generation=r["generation"],
                leader=value.get("leader"),
                members=members,
                state_timestamp_ms=value.get("currentStateTimestamp"),
            )
    out = []
    for name in sorted({k[0] for k in commits} | set(groups)):
        g = groups.get(name, {"group": name, "state": "unknown (no GroupMetadata)", "members": []})
        offsets = []
        for (grp, topic, part), c in sorted(commits.items()):
            if grp != name:
                continue
            end = ends.get((topic, part))
            offsets.append(
                {
                    "topic": topic,
                    "partition": part,
                    **c,
                    "log_end_offset": end,
                    "lag": (end - c["committed_offset"]) if end is not None else None,
                }
            )
        known = [o["lag"] for o in offsets if o["lag"] is not None]
        out.append({**g, "offsets": offsets, "total_lag": sum(known) if known else None})
    return {"groups": out, "undecoded_records": undecoded}


def cluster_metadata(rows: Any) -> dict[str, Any]:
    """Fold ``__cluster_metadata`` rows into brokers, topics and configuration changes."""
    brokers: dict[int, dict[str, Any]] = {}
    broker_events: list[dict[str, Any]] = []
    topics: dict[str, dict[str, Any]] = {}
    names: dict[str, str] = {}  # topic id -> name
    changes: list[dict[str, Any]] = []
    dropped = 0
    types: Counter[str] = Counter()
    undecoded = 0
    for r in rows:
        if r["error"]:
            undecoded += 1
            continue
        kind = r["record_type"] or "unknown"
        types[kind] += 1
        ts = _ms(r["timestamp"])
        if kind in (
            "RegisterBrokerRecord",
            "UnregisterBrokerRecord",
            "BrokerRegistrationChangeRecord",
            "FenceBrokerRecord",
            "UnfenceBrokerRecord",
        ):
            bid = r["broker_id"]
            value = (json.loads(r["decoded"]) if r["decoded"] else {}).get("value") or {}
            if bid is None:
                bid = (
                    value.get("brokerId") if value.get("brokerId") is not None else value.get("id")
                )
            if bid is None:
                continue
            b = brokers.setdefault(bid, {"broker_id": bid, "first_seen_ms": ts})
            b["last_change_ms"] = ts
            if kind == "RegisterBrokerRecord":
                b["endpoints"] = [
                    f"{e.get('name')}://{e.get('host')}:{e.get('port')}"
                    for e in value.get("endPoints") or []
                ]
                b["rack"] = value.get("rack")
                b["fenced"] = value.get("fenced")
                b["in_controlled_shutdown"] = bool(value.get("inControlledShutdown"))
                b["registered"] = True
                b["epoch"] = value.get("brokerEpoch")
            elif kind == "UnregisterBrokerRecord":
                b["registered"] = False
            elif kind == "FenceBrokerRecord":
                b["fenced"] = True
            elif kind == "UnfenceBrokerRecord":
                b["fenced"] = False
            else:
                # BrokerRegistrationChangeRecord (apache/kafka metadata/src/main/resources/
                # common/metadata/BrokerRegistrationChangeRecord.json, at 120e688 as at the
                # specs' e6d2421): Fenced int8 "-1 if the broker has been unfenced, 0 if no
                # change, 1 if the broker has been fenced"; InControlledShutdown (v1+) "0 if no
                # change, 1 if the broker is in controlled shutdown"
                if value.get("fenced") in (1, -1):
                    b["fenced"] = value["fenced"] == 1
                if value.get("inControlledShutdown") == 1:
                    b["in_controlled_shutdown"] = True
            if len(broker_events) < MAX_BROKER_EVENTS:
                broker_events.append(
                    {"timestamp_ms": ts, "offset": r["offset"], "broker_id": bid, "record": kind}
                )
        elif kind == "TopicRecord" and r["topic_name"]:
            topics[r["topic_name"]] = {
                "topic": r["topic_name"],
                "topic_id": r["topic_id"],
                "created_ms": ts,
                "partitions": 0,
                "removed_ms": None,
            }
            if r["topic_id"]:
                names[r["topic_id"]] = r["topic_name"]
        elif kind == "PartitionRecord" and r["topic_id"] in names:
            topics[names[r["topic_id"]]]["partitions"] += 1
        elif kind == "RemoveTopicRecord" and r["topic_id"] in names:
            topics[names[r["topic_id"]]]["removed_ms"] = ts
        elif kind == "ConfigRecord":
            if len(changes) >= MAX_CHANGES:
                dropped += 1
                continue
            rtype = CONFIG_RESOURCE_TYPES.get(r["config_resource_type"])
            rtype = rtype or str(r["config_resource_type"])
            value = r["config_value"]
            secret = value is not None and config_is_secret(rtype, r["config_name"])
            changes.append(
                {
                    "timestamp_ms": ts,
                    "offset": r["offset"],
                    "resource_type": rtype,
                    "resource": r["config_resource_name"] or "(cluster default)",
                    "name": r["config_name"],
                    "value": REDACTED if secret else value,
                    "redacted": secret,
                }
            )
    return {
        "brokers": sorted(brokers.values(), key=lambda b: b["broker_id"]),
        "broker_events": broker_events,
        "topics": sorted(topics.values(), key=lambda t: t["topic"]),
        "config_changes": changes,
        "config_changes_not_listed": dropped,
        "record_types": dict(sorted(types.items())),
        "undecoded_records": undecoded,
    }
