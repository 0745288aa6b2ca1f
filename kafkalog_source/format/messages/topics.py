"""Kafka's internal topics as record types: how each frames its records, which spec each record
type and version is, and the fields users filter on.

Framings (as Kafka's serdes write them):

* ``__consumer_offsets``, ``__transaction_state``, ``__share_group_state`` (coordinator
  records): the key is ``int16 record type`` + the key message (Kafka 4's specs: the
  ``coordinator-key`` whose ``apiKey`` is the type, read at version 0: ``LegacyOffsetCommitKey``
  0, ``OffsetCommitKey`` 1, ``GroupMetadataKey`` 2, ``ConsumerGroupMetadataKey`` 3, ...; older
  specs: the key spec whose valid versions hold the type, read at that version); the value is
  ``int16 version`` + the value message (the ``coordinator-value`` of the same ``apiKey``, or
  the key spec's name with ``Value``); a null value is a tombstone (a deleted offset or group).
* ``__cluster_metadata`` and ``__remote_log_metadata``: no key; the value is unsigned varints
  ``frame version`` (0), ``api key``, ``version``, then the message with that api key.
* KRaft control records (in ``__cluster_metadata`` and its snapshots): the key is ``int16
  version`` + ``int16 control type``, the value the message of that type, whose first field
  (``Version``, an int16) is its version.

A record of a type, api key or version the pinned specs do not define is not an error: it
decodes to a :class:`Decoded` whose ``unknown`` says why, ``record_type`` ``unknown:<type>``
(``unknown:24``; ``unknown:control:<type>`` for a KRaft control record) or, for a version of a
known type, ``unknown:<name>`` with ``record_version`` the version, and no value (Kafka's
coordinator loader logs an unknown record type and skips it, "a left over from an aborted
upgrade"; an archive reader keeps the row). Bytes of a known type and version that do not parse
raise :class:`RecordDecodeError`.

Decoded keys and values are as Kafka's generated JSON converters write them
(``XJsonConverter.write``, :func:`.decode.converter_view`): a tagged field only when its value is
not its default, so that "not set" is told from "set to the default".

A classic group's member subscription and assignment (``GroupMetadata`` with protocol type
``consumer``) are ``int16 version`` + ``ConsumerProtocolSubscription``/``Assignment``; decoded in
place when they parse, kept as bytes when not (as kafka-dump-log does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .decode import MessageError, converter_view, read_int16, read_message, read_uvarint
from .schema import Message, by_api_key, by_name, coordinator_keys, key_for_type, value_for_key

# decode option value -> (topic name, spec family)
INTERPRETATIONS = {
    "consumer_offsets": ("__consumer_offsets", "group"),
    "transaction_state": ("__transaction_state", "transaction"),
    "cluster_metadata": ("__cluster_metadata", "metadata"),
    "remote_log_metadata": ("__remote_log_metadata", "remote"),
    "share_group_state": ("__share_group_state", "share"),
}
TOPIC_INTERPRETATION = {topic: name for name, (topic, _) in INTERPRETATIONS.items()}

# KRaft control record types (Kafka's ControlRecordType) -> (spec, record_type as
# kafka-dump-log prints it); 0/1 are transaction markers (format/control.py)
RAFT_CONTROL = {
    2: ("LeaderChangeMessage", "LeaderChange"),
    3: ("SnapshotHeaderRecord", "SnapshotHeader"),
    4: ("SnapshotFooterRecord", "SnapshotFooter"),
    5: ("KRaftVersionRecord", "KRaftVersion"),
    6: ("VotersRecord", "KRaftVoters"),
}
MARKERS = {0: "AbortMarker", 1: "CommitMarker"}

TRANSACTION_STATES = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}
REMOTE_SEGMENT_STATES = {
    0: "COPY_SEGMENT_STARTED",
    1: "COPY_SEGMENT_FINISHED",
    2: "DELETE_SEGMENT_STARTED",
    3: "DELETE_SEGMENT_FINISHED",
}
REMOTE_PARTITION_DELETE_STATES = {
    0: "DELETE_PARTITION_MARKED",
    1: "DELETE_PARTITION_STARTED",
    2: "DELETE_PARTITION_FINISHED",
}
CONFIG_RESOURCE_TOPIC = 2
FRAME_VERSION = 1  # of metadata-log style records (Kafka's AbstractApiMessageSerde)  # ConfigResource.Type.TOPIC

# the typed columns of each interpretation, in order (their Arrow types: arrow/internal.py)
TYPED_COLUMNS = {
    "consumer_offsets": (
        "group",
        "committed_topic",
        "committed_partition",
        "committed_offset",
        "committed_leader_epoch",
        "committed_metadata",
        "commit_timestamp",
        "expire_timestamp",
        "member_id",
        "protocol_type",
        "generation",
    ),
    "transaction_state": (
        "transactional_id",
        "producer_id",
        "producer_epoch",
        "previous_producer_id",
        "next_producer_id",
        "transaction_timeout_ms",
        "transaction_state",
        "transaction_start_timestamp",
        "transaction_last_update_timestamp",
        "client_transaction_version",
    ),
    "cluster_metadata": (
        "topic_name",
        "topic_id",
        "partition_id",
        "broker_id",
        "controller_id",
        "leader",
        "replicas",
        "isr",
        "config_resource_type",
        "config_resource_name",
        "config_name",
        "config_value",
        # not fields of a record: the id of the KRaft snapshot file a row comes from (null for
        # the log's rows), filled by the reader from the file name (reader/internal.py)
        "snapshot_end_offset",
        "snapshot_end_epoch",
    ),
    "remote_log_metadata": (
        "topic_name",
        "topic_id",
        "partition_id",
        "segment_id",
        "start_offset",
        "end_offset",
        "broker_id",
        "state",
    ),
    "share_group_state": (
        "group",
        "topic_id",
        "partition_id",
        "snapshot_epoch",
        "state_epoch",
        "leader_epoch",
        "start_offset",
    ),
}


class RecordDecodeError(MessageError):
    """A record of an internal topic that does not decode: bytes of a known type and version
    that do not parse (a type or version the specs do not define is a :class:`Decoded` with
    ``unknown`` set). ``part`` is ``key`` or ``value``; ``record_type`` and
    ``version`` are what the bytes claim (None when unreadable)."""

    def __init__(
        self,
        reason: str,
        part: str,
        position: int,
        record_type: Any = None,
        version: int | None = None,
    ) -> None:
        super().__init__(reason, position)
        self.part = part
        self.record_type = record_type
        self.version = version


@dataclass
class Decoded:
    """One record of an internal topic, decoded."""

    record_type: str
    record_version: int | None  # the value's version; None for a tombstone
    key: dict[str, Any] | None
    value: dict[str, Any] | None
    tombstone: bool = False
    typed: dict[str, Any] = field(default_factory=dict)
    key_version: int | None = None  # the record type of coordinator keys
    # a type, api key or version the pinned specs do not define: why (the row is kept raw)
    unknown: str | None = None

    def document(self) -> dict[str, Any]:
        """The whole record (key and value) with Kafka's field names: the ``decoded`` column."""
        return {"key": self.key, "value": self.value}


def _fail(e: MessageError, part: str, rtype: Any, version: int | None) -> RecordDecodeError:
    what = f"{part} of record type {rtype}" + (f" version {version}" if version is not None else "")
    return RecordDecodeError(f"{what}: {e.reason}", part, e.position, rtype, version)


def _coordinator(family: str, key: bytes | None, value: bytes | None) -> Decoded:
    if key is None:
        raise RecordDecodeError("a record without a key (coordinator records have one)", "key", 0)
    try:
        rtype, pos = read_int16(key, 0)
    except MessageError as e:
        raise _fail(e, "key", None, None) from None
    found = key_for_type(family, rtype)
    if found is None:
        version = _value_version(value)
        why = f"unknown record type {rtype} (not defined by the pinned Kafka specs)"
        return Decoded(
            f"unknown:{rtype}", version, None, None, value is None, key_version=rtype, unknown=why
        )
    key_spec, key_version = found
    value_spec = value_for_key(key_spec)
    name = key_spec.name[: -len("Key")]
    try:
        k, _ = read_message(key_spec, key_version, key, pos)
    except MessageError as e:
        raise _fail(e, "key", name, rtype) from None
    k = converter_view(key_spec.fields, key_version, k)
    if value is None:
        return Decoded(name, None, k, None, True, key_version=rtype)
    version = None
    try:
        version, pos = read_int16(value, 0)
        if not value_spec.valid_in(version):
            return Decoded(
                f"unknown:{name}",
                version,
                k,
                None,
                False,
                key_version=rtype,
                unknown=_unknown_version(value_spec, version),
            )
        v, _ = read_message(value_spec, version, value, pos)
    except MessageError as e:
        raise _fail(e, "value", name, version) from None
    if name == "GroupMetadata" and v.get("protocolType") == "consumer":
        for member in v.get("members") or ():
            member["subscription"] = _embedded(
                "ConsumerProtocolSubscription", member, "subscription"
            )
            member["assignment"] = _embedded("ConsumerProtocolAssignment", member, "assignment")
    v = converter_view(value_spec.fields, version, v)
    return Decoded(name, version, k, v, False, key_version=rtype)


def _value_version(value: bytes | None) -> int | None:
    """The int16 version a coordinator value starts with (None: no value, or too short)."""
    return int.from_bytes(value[:2], "big", signed=True) if value and len(value) >= 2 else None


def _unknown_version(spec: Message, version: int) -> str:
    lo, hi = spec.valid
    span = f"{lo}" if lo == hi else f"{lo}-{hi}"
    return (
        f"{spec.name} version {version} is not defined by the pinned Kafka specs (they define "
        f"{span})"
    )


def _embedded(spec: str, member: dict[str, Any], name: str) -> Any:
    """A member's subscription or assignment decoded; the bytes when they do not parse."""
    raw = member.get(name)
    if not raw:
        return raw
    try:
        version, pos = read_int16(raw, 0)
        message = by_name(spec)
        return converter_view(
            message.fields, version, read_message(message, version, raw, pos, whole=False)[0]
        )
    except MessageError:
        return raw


def _framed(family: str, value: bytes | None) -> Decoded:
    """A metadata-log style record: frame version, api key, version (unsigned varints)."""
    if value is None:
        raise RecordDecodeError("a record without a value", "value", 0)
    try:
        frame, pos = read_uvarint(value, 0)
        api, pos = read_uvarint(value, pos)
        version, pos = read_uvarint(value, pos)
    except MessageError as e:
        raise _fail(e, "value", None, None) from None
    if frame != FRAME_VERSION:
        raise RecordDecodeError(
            f"unknown frame version {frame} (only {FRAME_VERSION} is defined)", "value", 0
        )
    spec = by_api_key(family, api)
    if spec is None:
        why = f"unknown api key {api} (not defined by the pinned Kafka specs)"
        return Decoded(f"unknown:{api}", version, None, None, False, unknown=why)
    if not spec.valid_in(version):
        why = _unknown_version(spec, version)
        return Decoded(f"unknown:{spec.name}", version, None, None, False, unknown=why)
    try:
        v, _ = read_message(spec, version, value, pos)
    except MessageError as e:
        raise _fail(e, "value", spec.name, version) from None
    return Decoded(spec.name, version, None, converter_view(spec.fields, version, v), False)


def decode_control(key: bytes | None, value: bytes | None) -> Decoded:
    """A control record: KRaft's (leader change, snapshot header and footer, KRaft version,
    voters) decoded by their specs; a transaction marker as its version and coordinator epoch."""
    try:
        kversion, pos = read_int16(key or b"", 0)
        ctype, _ = read_int16(key or b"", pos)
    except MessageError as e:
        raise _fail(e, "key", "control", None) from None
    k = {"version": kversion, "type": ctype}
    if ctype in MARKERS:
        try:
            version, pos = read_int16(value or b"", 0)
            if pos + 4 > len(value or b""):
                raise MessageError("marker value shorter than 6 bytes", pos)
            epoch = int.from_bytes(value[pos : pos + 4], "big", signed=True)
        except MessageError as e:
            raise _fail(e, "value", MARKERS[ctype], None) from None
        return Decoded(MARKERS[ctype], version, k, {"coordinatorEpoch": epoch}, False)
    if ctype not in RAFT_CONTROL:
        why = f"unknown control record type {ctype} (not defined by the pinned Kafka specs)"
        version = _value_version(value)
        return Decoded(f"unknown:control:{ctype}", version, k, None, False, unknown=why)
    spec_name, rtype = RAFT_CONTROL[ctype]
    spec = by_name(spec_name)
    version = None
    try:
        # the value is the message itself; its first field, Version, says its version
        version, _ = read_int16(value or b"", 0)
        if not spec.valid_in(version):
            why = _unknown_version(spec, version)
            return Decoded(f"unknown:{rtype}", version, k, None, False, unknown=why)
        v, _ = read_message(spec, version, value or b"", 0)
    except MessageError as e:
        raise _fail(e, "value", rtype, version) from None
    return Decoded(rtype, version, k, converter_view(spec.fields, version, v), False)


def decode_record(
    interpretation: str, key: bytes | None, value: bytes | None, control: bool = False
) -> Decoded:
    """Decode one record of an internal topic; ``control``: it is the record of a control
    batch. A type or version the pinned specs do not define gives a :class:`Decoded` whose
    ``unknown`` says so (key typed columns filled when the key decodes); bytes of a known type
    and version that do not parse raise :class:`RecordDecodeError`."""
    if control:
        d = decode_control(key, value)
    else:
        family = INTERPRETATIONS[interpretation][1]
        if family in ("metadata", "remote"):
            d = _framed(family, value)
        else:
            d = _coordinator(family, key, value)
    d.typed = TYPED[interpretation](d)
    return d


def _ms(v: Any) -> int | None:
    return v if isinstance(v, int) and v >= 0 else None


def _group_typed(d: Decoded) -> dict[str, Any]:
    k, v = d.key or {}, d.value or {}
    out = {
        "group": k.get("group", k.get("groupId")),
        "member_id": k.get("memberId", v.get("memberId")),
    }
    name = d.record_type.removeprefix("unknown:")  # an unknown version: its key's columns
    if name in ("OffsetCommit", "LegacyOffsetCommit"):
        out.update(
            committed_topic=k.get("topic"),
            committed_partition=k.get("partition"),
            committed_offset=v.get("offset"),
            committed_leader_epoch=v.get("leaderEpoch"),
            committed_metadata=v.get("metadata"),
            commit_timestamp=_ms(v.get("commitTimestamp")),
            expire_timestamp=_ms(v.get("expireTimestamp")),
        )
    elif d.record_type == "GroupMetadata":
        out.update(protocol_type=v.get("protocolType"), generation=v.get("generation"))
    elif "groupEpoch" in v:
        out["generation"] = v.get("groupEpoch")
    return out


def _txn_typed(d: Decoded) -> dict[str, Any]:
    k, v = d.key or {}, d.value or {}
    status = v.get("transactionStatus")
    return {
        "transactional_id": k.get("transactionalId"),
        "producer_id": v.get("producerId"),
        "producer_epoch": v.get("producerEpoch"),
        "previous_producer_id": v.get("previousProducerId"),
        "next_producer_id": v.get("nextProducerId"),
        "transaction_timeout_ms": v.get("transactionTimeoutMs"),
        "transaction_state": TRANSACTION_STATES.get(
            status, None if status is None else str(status)
        ),
        "transaction_start_timestamp": _ms(v.get("transactionStartTimestampMs")),
        "transaction_last_update_timestamp": _ms(v.get("transactionLastUpdateTimestampMs")),
        "client_transaction_version": v.get("clientTransactionVersion"),
    }


def _metadata_typed(d: Decoded) -> dict[str, Any]:
    v = d.value or {}
    out: dict[str, Any] = {
        "topic_id": v.get("topicId"),
        "partition_id": v.get("partitionId"),
        "broker_id": v.get("brokerId"),
        "controller_id": v.get("controllerId"),
        "replicas": v.get("replicas"),
        "isr": v.get("isr"),
    }
    leader = v.get("leader", v.get("leaderId"))
    if isinstance(leader, int) and leader != -2:  # -2: PartitionChangeRecord's "no change"
        out["leader"] = leader
    if d.record_type == "TopicRecord":
        out["topic_name"] = v.get("name")
    elif d.record_type == "ConfigRecord":
        out.update(
            config_resource_type=v.get("resourceType"),
            config_resource_name=v.get("resourceName"),
            config_name=v.get("name"),
            config_value=v.get("value"),
        )
        if v.get("resourceType") == CONFIG_RESOURCE_TOPIC:
            out["topic_name"] = v.get("resourceName")
    return out


def _remote_typed(d: Decoded) -> dict[str, Any]:
    v = d.value or {}
    seg = v.get("remoteLogSegmentId") or {}
    tip = seg.get("topicIdPartition") or v.get("topicIdPartition") or {}
    if "remotePartitionDeleteState" in v:
        state = REMOTE_PARTITION_DELETE_STATES.get(v["remotePartitionDeleteState"])
    else:
        state = REMOTE_SEGMENT_STATES.get(v.get("remoteLogSegmentState"))
    return {
        "topic_name": tip.get("name"),
        "topic_id": tip.get("id"),
        "partition_id": tip.get("partition"),
        "segment_id": seg.get("id", v.get("segmentId")),
        "start_offset": v.get("startOffset"),
        "end_offset": v.get("endOffset"),
        "broker_id": v.get("brokerId"),
        "state": state,
    }


def _share_typed(d: Decoded) -> dict[str, Any]:
    k, v = d.key or {}, d.value or {}
    return {
        "group": k.get("groupId"),
        "topic_id": k.get("topicId"),
        "partition_id": k.get("partition"),
        "snapshot_epoch": v.get("snapshotEpoch"),
        "state_epoch": v.get("stateEpoch"),
        "leader_epoch": v.get("leaderEpoch"),
        "start_offset": v.get("startOffset"),
    }


TYPED = {
    "consumer_offsets": _group_typed,
    "transaction_state": _txn_typed,
    "cluster_metadata": _metadata_typed,
    "remote_log_metadata": _remote_typed,
    "share_group_state": _share_typed,
}


def record_types(interpretation: str) -> list[tuple[str, Message, Message | None]]:
    """Every record type an interpretation defines in the pinned specs: ``(record_type, key
    or framed spec, value spec or None)``, KRaft control records included for
    ``cluster_metadata``."""
    from .schema import family

    fam = INTERPRETATIONS[interpretation][1]
    out: list[tuple[str, Message, Message | None]] = []
    if fam in ("metadata", "remote"):
        out += [(m.name, m, None) for m in family(fam)]
    else:
        seen = set()
        for _, m in coordinator_keys(fam):
            if m.name not in seen:
                seen.add(m.name)
                out.append((m.name[:-3], m, value_for_key(m)))
    if interpretation == "cluster_metadata":
        out += [(rtype, by_name(spec), None) for spec, rtype in RAFT_CONTROL.values()]
    return out


def metadata_type_name(record_type: str) -> str:
    """A metadata record's name as kafka-dump-log prints its type (``TopicRecord`` →
    ``TOPIC_RECORD``)."""
    out = []
    for i, c in enumerate(record_type):
        if c.isupper() and i and not record_type[i - 1].isupper():
            out.append("_")
        out.append(c.upper())
    return "".join(out)
