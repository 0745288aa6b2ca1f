"""kafka-dump-log's decoder flags (``--offsets-decoder``, ``--transaction-log-decoder``,
``--cluster-metadata-decoder``, ``--remote-log-metadata-decoder``,
``--share-group-state-decoder``) and its KRaft control records: a record's key and payload as
the Java tool (``tools/.../DumpLogSegments.java``) prints them.

* Coordinator records (``--offsets-decoder``, ``--transaction-log-decoder``,
  ``--share-group-state-decoder``; the tool's ``CoordinatorRecordMessageParser``): ``key:
  {"type":"<record type id>","data":{...}}`` and ``payload: {"version":"<version>","data":
  {...}}``, or ``payload: <DELETE>`` for a tombstone. A record that does not decode prints
  ``key: Unknown record type N at offset O, skipping.`` or ``key: Error at offset O, skipping.
  <reason>``, and no payload.
* Metadata log records (``--cluster-metadata-decoder``): no key, ``payload:
  {"type":"TOPIC_RECORD","version":0,"data":{...}}``; ``payload: Error at O, skipping.
  <reason>`` (Kafka's words: no "offset").
* Remote log metadata (``--remote-log-metadata-decoder``): no key, ``payload:`` the Java
  object the tool's serde makes, as its ``toString`` prints it
  (``RemoteLogSegmentMetadata{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition=<topic
  id>:<topic>-<partition>, id=<segment id>}, startOffset=..., ...}``, with Kafka's checks of
  the values: an empty ``segmentLeaderEpochs`` or an unknown state is an error, as there);
  ``payload: Error at offset O, skipping. <reason>``.
* KRaft control records, in every dump with deep iteration (as the Java tool; not only under a
  decoder flag): `` LeaderChange: {json}``, `` SnapshotHeader {json}``, `` SnapshotFooter
  {json}``, `` KRaftVersion {json}``, `` KRaftVoters {json}``; the 2024 Scala tool
  (``--format scala``) printed a leader change as `` controlType: LEADER_CHANGE(2)``.

The JSON is Kafka's generated converters' (``XJsonConverter.write``): the specs' field names in
their order, tagged fields only when not at their default, bytes as base64, non-ASCII text as
it is; a classic consumer group's member subscription and assignment decoded in place.

Deviations: a coordinator record without a key prints ``key: Error at offset O, skipping. a
record without a key ...`` where the Java tool stops with an exception; a KRaft control record
whose value does not decode prints `` controlType: <TYPE>(<id>)`` where it stops too.
"""

from __future__ import annotations

import json
from typing import Any

from ..format.messages.decode import to_kafka_json
from ..format.messages.topics import (
    REMOTE_PARTITION_DELETE_STATES,
    REMOTE_SEGMENT_STATES,
    Decoded,
    RecordDecodeError,
    decode_control,
    decode_record,
    metadata_type_name,
)
from .common import CommandError

# flag -> interpretation (the decode option's value)
FLAGS = {
    "offsets_decoder": "consumer_offsets",
    "transaction_log_decoder": "transaction_state",
    "cluster_metadata_decoder": "cluster_metadata",
    "remote_log_metadata_decoder": "remote_log_metadata",
    "share_group_state_decoder": "share_group_state",
}
HELP = {
    "offsets_decoder": "decode records as __consumer_offsets records (implies --print-data-log)",
    "transaction_log_decoder": "decode records as __transaction_state records",
    "cluster_metadata_decoder": "decode records as KRaft __cluster_metadata records",
    "remote_log_metadata_decoder": "decode records as __remote_log_metadata records",
    "share_group_state_decoder": "decode records as __share_group_state records",
}
# how the Java tool introduces each KRaft control record's JSON
CONTROL_LABEL = {
    "LeaderChange": " LeaderChange: ",
    "SnapshotHeader": " SnapshotHeader ",
    "SnapshotFooter": " SnapshotFooter ",
    "KRaftVersion": " KRaftVersion ",
    "KRaftVoters": " KRaftVoters ",
}


def add_flags(p: Any) -> None:
    """Add the decoder flags to the ``dump`` parser."""
    for dest, text in HELP.items():
        p.add_argument("--" + dest.replace("_", "-"), dest=dest, action="store_true", help=text)


def chosen(args: Any) -> str | None:
    """The interpretation the flags choose (None: none); CommandError for more than one."""
    picked = [interp for dest, interp in FLAGS.items() if getattr(args, dest, False)]
    if len(picked) > 1:
        raise CommandError("dump: give at most one decoder flag")
    return picked[0] if picked else None


def key_and_payload(
    interp: str, key: bytes | None, value: bytes | None, offset: int
) -> tuple[str | None, str | None]:
    """The ``key:`` and ``payload:`` texts of one data record (None: not printed)."""
    framed = interp in ("cluster_metadata", "remote_log_metadata")
    try:
        d = decode_record(interp, key, value)
        if d.unknown is not None:
            if not framed and d.key is None:  # a record type the specs do not know
                return f"Unknown record type {d.key_version} at offset {offset}, skipping.", None
            raise RecordDecodeError(d.unknown, "value", 0, d.record_type, d.record_version)
        remote = _remote_text(d) if interp == "remote_log_metadata" else None
    except RecordDecodeError as e:
        if not framed and e.part == "key" and e.record_type is not None and e.version is None:
            return f"Unknown record type {e.record_type} at offset {offset}, skipping.", None
        at = f"{offset}" if interp == "cluster_metadata" else f"offset {offset}"
        text = f"Error at {at}, skipping. {e.reason}"
        return (None, text) if framed else (text, None)
    if remote is not None:
        return None, remote
    if framed:
        body = {
            "type": metadata_type_name(d.record_type),
            "version": d.record_version,
            "data": d.value,
        }
        return None, to_kafka_json(body)
    k = to_kafka_json({"type": str(d.key_version), "data": d.key})
    if d.tombstone:
        return k, "<DELETE>"
    return k, to_kafka_json({"version": str(d.record_version), "data": d.value})


def control_text(key: bytes | None, value: bytes | None, scala: bool = False) -> str | None:
    """The Java tool's text of a KRaft control record (`` LeaderChange: {...}``, ``
    SnapshotHeader {...}``, ...); None when it is not one, or does not decode (the caller
    prints the ``controlType`` form), and for a leader change in the Scala tool's format."""
    try:
        d = decode_control(key, value)
    except RecordDecodeError:
        return None
    label = CONTROL_LABEL.get(d.record_type)
    if label is None or (scala and d.record_type == "LeaderChange"):
        return None
    return label + to_kafka_json(d.value)


def decoded_object(
    interp: str, key: bytes | None, value: bytes | None, control: bool = False
) -> dict[str, Any]:
    """The ``decoded`` field of a jsonl record object (``control``: a control record's)."""
    try:
        d = decode_record(interp, key, value, control=control)
    except RecordDecodeError as e:
        return {"recordType": e.record_type, "recordVersion": e.version, "error": e.reason}
    if d.unknown is not None:
        return {"recordType": d.record_type, "recordVersion": d.record_version, "error": d.unknown}
    return {
        "recordType": d.record_type,
        "recordVersion": d.record_version,
        "tombstone": d.tombstone,
        "key": json.loads(to_kafka_json(d.key)),
        "value": json.loads(to_kafka_json(d.value)),
    }


# ------------------------------------------------------------------ remote log metadata


class _JavaError(Exception):
    """What the Java objects' constructors throw, as ``getMessage`` says it."""


def _optional_custom(v: bytes | None) -> str:
    """``Optional<CustomMetadata>.toString()``."""
    return "Optional.empty" if v is None else f"Optional[CustomMetadata{{{len(v)} bytes}}]"


def _tip(t: dict[str, Any]) -> str:
    """``TopicIdPartition.toString()``: ``<topic id>:<topic>-<partition>``."""
    return f"{t['id']}:{t['name']}-{t['partition']}"


def _segment_id(s: dict[str, Any]) -> str:
    return f"RemoteLogSegmentId{{topicIdPartition={_tip(s['topicIdPartition'])}, id={s['id']}}}"


def _epochs(entries: list[dict[str, Any]]) -> str:
    """``segmentLeaderEpochs`` (a TreeMap built from the entries, the last of a repeated epoch
    kept), as ``AbstractMap.toString`` prints it; Kafka refuses an empty one."""
    m: dict[int, int] = {}
    for e in entries or ():
        m[e["leaderEpoch"]] = e["offset"]
    if not m:
        raise _JavaError("segmentLeaderEpochs can not be null or empty")
    return "{" + ", ".join(f"{k}={m[k]}" for k in sorted(m)) + "}"


def _state(states: dict[int, str], v: Any, message: str | None) -> str:
    if v not in states:
        raise _JavaError("null" if message is None else message)
    return states[v]


def _remote_object(d: Decoded) -> str:
    """The Java object ``RemoteLogMetadataSerde.deserialize`` makes of a record, as its
    ``toString`` prints it (storage/api's RemoteLogSegmentMetadata & co.)."""
    v = d.value or {}
    seg_state = "state can not be null"
    if d.record_type == "RemoteLogSegmentMetadataRecord":
        start, end = v["startOffset"], v["endOffset"]
        if start < 0:
            raise _JavaError(
                f"Unexpected start offset = {start}. StartOffset for a remote segment cannot be "
                "negative"
            )
        if end < start:
            raise _JavaError(
                f"Unexpected end offset = {end}. EndOffset for a remote segment cannot be less "
                f"than startOffset = {start}"
            )
        epochs = _epochs(v["segmentLeaderEpochs"])
        state = _state(REMOTE_SEGMENT_STATES, v["remoteLogSegmentState"], seg_state)
        return (
            f"RemoteLogSegmentMetadata{{remoteLogSegmentId={_segment_id(v['remoteLogSegmentId'])}"
            f", startOffset={start}, endOffset={end}, brokerId={v['brokerId']}, "
            f"maxTimestampMs={v['maxTimestampMs']}, eventTimestampMs={v['eventTimestampMs']}, "
            f"segmentLeaderEpochs={epochs}, segmentSizeInBytes={v['segmentSizeInBytes']}, "
            f"customMetadata={_optional_custom(v.get('customMetadata'))}, state={state}}}"
        )
    if d.record_type == "RemoteLogSegmentMetadataUpdateRecord":
        state = _state(REMOTE_SEGMENT_STATES, v["remoteLogSegmentState"], seg_state)
        return (
            "RemoteLogSegmentMetadataUpdate{remoteLogSegmentId="
            f"{_segment_id(v['remoteLogSegmentId'])}, "
            f"customMetadata={_optional_custom(v.get('customMetadata'))}, state={state}, "
            f"eventTimestampMs={v['eventTimestampMs']}, brokerId={v['brokerId']}}}"
        )
    if d.record_type == "RemotePartitionDeleteMetadataRecord":
        state = _state(REMOTE_PARTITION_DELETE_STATES, v["remotePartitionDeleteState"], None)
        return (
            f"RemotePartitionDeleteMetadata{{topicPartition={_tip(v['topicIdPartition'])}, "
            f"state={state}, eventTimestampMs={v['eventTimestampMs']}, "
            f"brokerId={v['brokerId']}}}"
        )
    if d.record_type == "RemoteLogSegmentMetadataSnapshotRecord":
        state = _state(REMOTE_SEGMENT_STATES, v["remoteLogSegmentState"], seg_state)
        epochs = _epochs(v["segmentLeaderEpochs"])
        return (
            f"RemoteLogSegmentMetadataSnapshot{{segmentId={v['segmentId']}, "
            f"startOffset={v['startOffset']}, endOffset={v['endOffset']}, "
            f"maxTimestampMs={v['maxTimestampMs']}, segmentLeaderEpochs={epochs}, "
            f"segmentSizeInBytes={v['segmentSizeInBytes']}, "
            f"customMetadata={_optional_custom(v.get('customMetadata'))}, state={state}}}"
        )
    raise _JavaError(f"RemoteLogMetadataTransform for apikey: {d.record_type} does not exist.")


def _remote_text(d: Decoded) -> str:
    """:func:`_remote_object`, its Java errors as the decoder's (the caller prints them)."""
    try:
        return _remote_object(d)
    except _JavaError as e:
        raise RecordDecodeError(str(e), "value", 0, d.record_type, d.record_version) from None
