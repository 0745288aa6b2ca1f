"""kafka-dump-log's decoder flags (``--offsets-decoder``, ``--transaction-log-decoder``,
``--cluster-metadata-decoder``, ``--remote-log-metadata-decoder``,
``--share-group-state-decoder``): a record's key and payload as the Java tool prints them.

Coordinator records (offsets, transactions, share group state) print ``key:
{"type":"<record type>","data":{...}}`` and ``payload: {"version":"<version>","data":{...}}``,
or ``payload: <DELETE>`` for a tombstone; metadata-log records (cluster metadata, remote log
metadata) print no key and ``payload: {"type":"TOPIC_RECORD","version":0,"data":{...}}``. A
record that does not decode prints ``key: Unknown record type N at offset O, skipping.`` or
``Error at offset O, skipping. <reason>``, as Kafka's do. Deviations: Kafka prints the
transaction log as ``transaction_metadata::...`` text and remote log metadata with the Java
objects' ``toString``; kafkalog prints both in the JSON form above, with Kafka's field names.
"""

from __future__ import annotations

import json
from typing import Any

from ..format.messages.decode import to_json
from ..format.messages.topics import RecordDecodeError, decode_record, metadata_type_name
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
    """The ``key:`` and ``payload:`` texts of one record (None: not printed)."""
    framed = interp in ("cluster_metadata", "remote_log_metadata")
    try:
        d = decode_record(interp, key, value)
    except RecordDecodeError as e:
        if not framed and e.part == "key" and e.record_type is not None and e.version is None:
            return f"Unknown record type {e.record_type} at offset {offset}, skipping.", None
        text = f"Error at offset {offset}, skipping. {e.reason}"
        return (None, text) if framed else (text, None)
    if framed:
        rtype = metadata_type_name(d.record_type) if interp == "cluster_metadata" else d.record_type
        body = {"type": rtype, "version": d.record_version, "data": d.value}
        return None, to_json(body)
    k = to_json({"type": str(d.key_version), "data": d.key})
    if d.tombstone:
        return k, "<DELETE>"
    return k, to_json({"version": str(d.record_version), "data": d.value})


def decoded_object(interp: str, key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """The ``decoded`` field of a jsonl record object."""
    try:
        d = decode_record(interp, key, value)
    except RecordDecodeError as e:
        return {"recordType": e.record_type, "recordVersion": e.version, "error": e.reason}
    return {
        "recordType": d.record_type,
        "recordVersion": d.record_version,
        "tombstone": d.tombstone,
        "key": json.loads(to_json(d.key)),
        "value": json.loads(to_json(d.value)),
    }
