"""Control records under ``decode=`` (issue 40 item 11): every record of a control batch goes
through ``mode`` like any other record, whatever it holds.

A control record whose key does not parse vanished under ``decode=auto`` (and under any
``decode=`` without ``includeControlRecords``): it was taken for a transaction marker not asked
for. Now only a record that *is* a transaction marker (its key names type 0 or 1 and its value
holds a version and a coordinator epoch, as Kafka's ``EndTransactionMarker`` reads it) is left
out without ``includeControlRecords``; a record whose key is null or shorter than Kafka's
4-byte control key (``ControlRecordType.parseTypeId`` throws ``InvalidRecordException``), or
whose value does not parse, is undecodable: FAILFAST raises naming file, byte, offset and
reason, DROPMALFORMED drops and counts it, PERMISSIVE keeps its row with the error.

The expectations come from the bytes the tests write and Kafka's rules for control keys and
marker values, never from kafkalog's own parse.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import pytest
from conftest import SHARED, kp_v2_batch, require_shared

import kafkalog_source as kl
from kafkalog_source.errors import KafkaLogError, UndecodableRecordError
from kafkalog_source.format.messages.topics import INTERPRETATIONS

FIXTURE = SHARED / "fixtures" / "fuzz-findings" / "control-batch-two-records"
MODES = ("FAILFAST", "DROPMALFORMED", "PERMISSIVE")
V2_HEADER = 61  # bytes of a v2 batch header before its first record (SEGMENT_SPEC §3)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint of ``data`` at ``pos``: (value, position after it)."""
    shift = u = 0
    while True:
        b = data[pos]
        pos += 1
        u |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (u >> 1) ^ -(u & 1), pos


def _read(path: Path, **options: Any) -> tuple[Any, kl.ReadStats]:
    stats = kl.ReadStats()
    return kl.read_table(str(path), stats=stats, **options), stats


# ------------------------------------------------------------------------- the fuzz finding


@pytest.mark.parametrize(
    "options",
    [
        {"decode": "auto"},
        {"decode": "cluster_metadata"},
        {"decode": "cluster_metadata", "includeControlRecords": "true"},
        {"decode": "auto", "includeControlRecords": "true"},
    ],
)
def test_control_batch_of_two_records_accounts_for_both(options: dict[str, str]) -> None:
    """The fuzz finding: one control batch of two records at offsets 28515 and 28516 (CRCs
    valid), the first of unknown control type 17025, the second with a null key (its
    int16 type runs past the end). Before: one row in every mode under decode=auto, the
    second record neither an error, nor a count, nor a row."""
    part = require_shared(FIXTURE / "__cluster_metadata-0")
    log = part / "00000000000000000000.log"
    data = log.read_bytes()
    # independently of kafkalog: the batch's offsets, and where its second record starts
    base = struct.unpack_from(">q", data, 0)[0]
    count = struct.unpack_from(">i", data, 57)[0]
    attributes = struct.unpack_from(">h", data, 21)[0]
    assert (base, count, attributes & 0x20) == (28515, 2, 0x20)  # bit 5: a control batch
    length, after = _varint(data, V2_HEADER)
    second = after + length  # the first record: its length varint, then that many bytes
    length, after = _varint(data, second)
    assert after + length == len(data)  # the second record ends the file
    value = data[-31:-1]  # its 30-byte value, before its header count (0)
    got = {}
    for mode in MODES:
        try:
            got[mode] = _read(part, mode=mode, **options)
        except KafkaLogError as e:
            got[mode] = e
    e = got["FAILFAST"]
    assert isinstance(e, UndecodableRecordError), e
    assert e.path == str(log) and e.position == second
    assert f"byte {second}" in str(e) and "offset 28516" in str(e) and "key" in str(e)
    table, st = got["DROPMALFORMED"]
    assert table.column("offset").to_pylist() == [28515]
    assert table.column("record_type").to_pylist() == ["unknown:control:17025"]
    assert (st.undecodable_records, st.unknown_records) == (1, 1)
    assert st.records + st.control_records == count  # both read, as control records
    assert st.control_records == count
    table, st = got["PERMISSIVE"]
    assert table.column("offset").to_pylist() == [28515, 28516]
    errors = table.column("error").to_pylist()
    assert "unknown control record type 17025" in errors[0]
    assert "key" in errors[1] and "runs past the end" in errors[1]
    assert table.column("value").to_pylist()[1] == value  # its bytes kept
    assert (st.undecodable_records, st.unknown_records) == (1, 1)


# ------------------------------------------------------------------------------------- fuzz

TS = 1_700_000_000_000
MARKER_VALUE = struct.pack(">hi", 0, 7)  # EndTransactionMarker v0: version, coordinatorEpoch


def _kraft_seeds() -> list[tuple[bytes, bytes]]:
    """Valid KRaft control records: (key, value) of each type and version of the pinned specs."""
    from internal_encoder import encode, sample

    from kafkalog_source.format.messages.schema import by_name
    from kafkalog_source.format.messages.topics import RAFT_CONTROL

    out = []
    for cid, (spec_name, _) in RAFT_CONTROL.items():
        spec = by_name(spec_name)
        for v in range(spec.valid[0], spec.valid[1] + 1):
            val = sample(spec.fields, v)
            val["version"] = v
            out.append((struct.pack(">hh", 0, cid), encode(spec, v, val)))
    return out


def _control_batch(records: list[tuple[bytes | None, bytes | None]], base: int) -> bytes:
    """A v2 control batch (attributes bit 5, CRC-32C recomputed) of ``(key, value)`` records."""
    from kafka.record.util import calc_crc32c

    data = bytearray(kp_v2_batch([(TS, k, v, []) for k, v in records], base_offset=base))
    struct.pack_into(">h", data, 21, struct.unpack_from(">h", data, 21)[0] | 0x20)
    struct.pack_into(">I", data, 17, calc_crc32c(bytes(data[21:])))
    return bytes(data)


def _mutated(rnd: random.Random, kraft: list[tuple[bytes, bytes]]) -> tuple[Any, Any, bool]:
    """One control record, mutated: ``(key, value, is_marker)``. ``is_marker``: a transaction
    marker by the layout Kafka reads (``ControlRecordType.parseTypeId``: a key of at least 4
    bytes, its type 0 or 1; ``EndTransactionMarker.deserializeValue``: a value of at least 6
    bytes, version and coordinator epoch). Kafka also refuses a negative key or value version
    as corruption; kafkalog reads versions as they are (a known difference, not checked)."""
    pick = rnd.random()
    if pick < 0.35:
        key, value = (
            struct.pack(">hh", rnd.choice([0, 0, 1, 7, 0x7FFF]), rnd.randint(0, 1)),
            (MARKER_VALUE),
        )
    elif pick < 0.7:
        key, value = rnd.choice(kraft)
    else:  # a type no spec defines, or a negative one
        key = struct.pack(">hh", rnd.choice([0, 3, -1, -2588]), rnd.choice([7, 99, 17025, -5]))
        value = bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 12)))
    cut = rnd.random()
    if cut < 0.15:
        key = key[: rnd.randint(0, 3)] if rnd.random() < 0.8 else None  # a key cut short
    elif cut < 0.3 and value:
        value = value[: rnd.randrange(len(value))]  # a value cut short
    elif cut < 0.4:
        value = value + bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 5)))  # trailing
    elif cut < 0.5 and value and len(value) >= 2:  # a wrong (value) version
        value = struct.pack(">h", rnd.choice([-1, 99, 0x7FFF])) + value[2:]
    elif cut < 0.55 and value:
        value = None
    marker = (
        key is not None
        and len(key) >= 4
        and struct.unpack_from(">h", key, 2)[0] in (0, 1)
        and value is not None
        and len(value) >= 6
    )
    return key, value, marker


@pytest.mark.parametrize("interp", [*INTERPRETATIONS, "orders"])
def test_fuzz_control_records_every_interpretation(tmp_path: Path, interp: str) -> None:
    """Control batches of mutated records (keys and values cut short, unknown and negative
    types, wrong versions, trailing bytes, null values) read with ``decode=<interpretation>``
    and ``decode=auto`` (``orders``: a topic auto reads raw), with and without
    includeControlRecords, in every mode: only KafkaLogError comes out, and every record is a
    row, a counted drop or (FAILFAST) the error, or a transaction marker not asked for."""
    rnd = random.Random(f"control-{interp}")
    kraft = _kraft_seeds()
    topic = INTERPRETATIONS[interp][0] if interp in INTERPRETATIONS else interp
    decodes = [interp, "auto"] if interp in INTERPRETATIONS else ["auto"]
    for trial in range(8):
        part = tmp_path / str(trial) / f"{topic}-0"
        part.mkdir(parents=True)
        data = b""
        total = markers = 0
        for _ in range(rnd.randint(1, 6)):
            recs = [_mutated(rnd, kraft) for _ in range(rnd.randint(1, 4))]
            data += _control_batch([(k, v) for k, v, _ in recs], base=total)
            total += len(recs)
            markers += sum(m for _, _, m in recs)
        (part / "00000000000000000000.log").write_bytes(data)
        for decode in decodes:
            for include in ("false", "true"):
                opts = {"decode": decode, "includeControlRecords": include}
                got: dict[str, Any] = {}
                for mode in MODES:
                    try:
                        got[mode] = _read(part, mode=mode, **opts)
                    except KafkaLogError as e:
                        got[mode] = e
                    # anything else (TypeError, IndexError, ...) fails the test here
                where = (interp, trial, opts)
                (pt, ps), (dt, ds) = got["PERMISSIVE"], got["DROPMALFORMED"]
                for st in (ps, ds):  # the raw read under the decode: every record, as control
                    assert (st.records, st.control_records) == (0, total), where
                assert ps.undecodable_records == ds.undecodable_records, where
                assert pt.num_rows == dt.num_rows + ds.undecodable_records, where
                errors = [e for e in pt.column("error").to_pylist() if e is not None]
                assert len(errors) == ps.undecodable_records + ps.unknown_records, where
                if isinstance(got["FAILFAST"], KafkaLogError):
                    e = got["FAILFAST"]
                    assert ds.undecodable_records, (where, e)
                    assert e.path is not None and e.path.endswith(".log") and "offset" in str(e)
                else:
                    assert ds.undecodable_records == 0, where
                    assert got["FAILFAST"][0].num_rows == dt.num_rows, where
                if decode == "auto" and interp not in INTERPRETATIONS:
                    continue  # a topic read raw: its control records as a raw read has them
                left_out = markers if include == "false" else 0
                assert pt.num_rows + left_out == total, (where, pt.num_rows, left_out, total)
                assert dt.num_rows + ds.undecodable_records + left_out == total, where
