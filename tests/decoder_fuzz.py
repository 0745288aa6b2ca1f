"""A fuzz harness for the decoders above the segment decoder, as tests/test_fuzz.py is for
segments: Kafka's internal topics (``decode=``), payload values (Avro, Protobuf, JSON) and the
Schema Registry's ``_schemas`` records.

Each family builds valid seeds, mutates them and feeds them to the decoder in batches, in every
mode. The only exceptions allowed out of a decoder are ``KafkaLogError`` subclasses (and, for
:func:`~kafkalog_source.format.replay.replay` alone, ``RegistryRecordError``, which the reader
turns into one); every output must be a valid Arrow batch (``validate(full=True)``: offsets,
UTF-8), the modes must agree on how many records there are, and one batch of inputs may not
take more than :data:`SLOW_SECONDS` of CPU. Families:

* ``internal``: records of every interpretation (each record type and version of the pinned
  release, KRaft control records, transaction markers), key and value mutated inside what would
  be a valid batch CRC, with extreme record timestamps, topics for ``decode=auto`` and KRaft
  snapshot file names with extreme ids; decoded by the reader's ``InternalDecoder``; one batch
  in 200 is also written as a segment file (valid CRC) and read with ``read_table``.
* ``avro``: values of several writer schemas resolved into readers (evolutions), mutated; the
  compiled program and the fastavro path must also agree value for value and error for error.
* ``protobuf``: values of messages with every field kind and the well-known types, mutated
  (message indexes too), decoded typed and as ProtoJSON.
* ``json``: values of JSON Schemas (and of an inferred type), mutated as bytes and as JSON
  (huge numbers, lone surrogates, deep nesting, wrong kinds), typed and as JSON text.
* ``schemas``: ``_schemas`` record sequences, mutated as JSON (wrong kinds, huge versions and
  ids, missing fields) and in the schemas they hold (Avro and JSON Schema documents mutated
  node by node, Protobuf descriptors as bytes); replayed, then every schema used as reader and
  writer by the decoders; one input in 100 is also written as a log directory and read with
  ``read_table``.

The families live in decoder_fuzz.py (``internal``), decoder_fuzz_payloads.py (``avro``,
``protobuf``, ``json``) and decoder_fuzz_schemas.py (``schemas``).

Standalone, for long campaigns (prints the inputs and distinct failures per family)::

    nice -n 10 python tests/decoder_fuzz.py --family all --inputs 1000000 --seed 1 --out DIR

Each failing input is kept in ``DIR`` as ``<family>-<n>.pkl`` (a pickled ``Failure``) to be
turned into a regression test; tests/test_fuzz_decoders.py runs a short campaign.
"""

from __future__ import annotations

import argparse
import json
import logging
import pickle
import random
import struct
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kafkalog_source.errors import KafkaLogError  # noqa: E402

SLOW_SECONDS = 10.0  # CPU seconds for one batch of inputs: more is a hang
FAMILIES = ("internal", "avro", "protobuf", "json", "schemas")

# --------------------------------------------------------------------------------- bookkeeping


@dataclass
class Failure:
    """One input that broke a rule: the family, what happened and enough to replay it."""

    family: str
    signature: str
    message: str
    trace: str
    data: Any = None


@dataclass
class Campaign:
    """Counts of inputs and failures, per family; failures by signature (distinct)."""

    out: Path | None = None
    inputs: dict[str, int] = field(default_factory=dict)
    failures: dict[str, dict[str, Failure]] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=dict)

    def count(self, family: str, n: int) -> None:
        self.inputs[family] = self.inputs.get(family, 0) + n

    def fail(self, family: str, exc: BaseException | str, data: Any) -> None:
        """Record a failure (an exception that is not allowed, or a broken rule)."""
        if isinstance(exc, BaseException):
            tb = traceback.extract_tb(exc.__traceback__)
            ours = [f for f in tb if "kafkalog_source" in f.filename] or tb[-1:]
            where = f"{Path(ours[-1].filename).name}:{ours[-1].name}" if ours else "?"
            text = f"{type(exc).__name__}: {exc}"
            sig = f"{family}: {type(exc).__name__} in {where}: {_shape(str(exc))}"
            trace = "".join(traceback.format_exception(exc))
        else:
            text = sig = f"{family}: {exc}"
            trace = ""
        self.hits[sig] = self.hits.get(sig, 0) + 1
        seen = self.failures.setdefault(family, {})
        if sig in seen:
            return
        failure = Failure(family, sig, text[:2000], trace[-6000:], data)
        seen[sig] = failure
        if self.out is not None:
            self.out.mkdir(parents=True, exist_ok=True)
            path = self.out / f"{family}-{len(seen)}.pkl"
            try:
                path.write_bytes(pickle.dumps(failure))
            except Exception:  # noqa: BLE001 - an unpicklable input: keep the text
                failure.data = repr(data)[:100_000]
                path.write_bytes(pickle.dumps(failure))

    def report(self) -> str:
        lines = []
        for fam in FAMILIES:
            if fam not in self.inputs:
                continue
            found = self.failures.get(fam, {})
            lines.append(f"{fam}: {self.inputs[fam]} inputs, {len(found)} distinct failures")
            for sig in found:
                lines.append(f"    {self.hits[sig]}x {sig[:300]}")
        return "\n".join(lines)


def _shape(msg: str) -> str:
    """A message with numbers and quoted text blanked, so one bug is one signature."""
    import re

    msg = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", msg)
    return re.sub(r"\d+", "N", msg)[:80]


def guarded(camp: Campaign, family: str, data: Any, fn: Callable[[], Any]) -> Any:
    """``fn()``; an exception other than a ``KafkaLogError`` is a failure (None returned)."""
    t0 = time.monotonic()
    try:
        return fn()
    except KafkaLogError:
        return None
    except Exception as e:  # noqa: BLE001 - anything else is what the campaign looks for
        camp.fail(family, e, data)
        return None
    finally:
        if time.monotonic() - t0 > SLOW_SECONDS:  # a shared machine's waits are not a hang:
            _slow(camp, family, data, fn)  # what counts is the CPU it takes


def _slow(camp: Campaign, family: str, data: Any, fn: Callable[[], Any]) -> None:
    """Run ``fn`` again, timing its CPU (which costs a system call, so only for suspects)."""
    c0 = time.process_time()
    try:
        fn()
    except Exception:  # noqa: BLE001, S110 - reported by the first run
        pass
    took = time.process_time() - c0
    if took > SLOW_SECONDS:
        camp.fail(family, f"slow: one call took {took:.1f} s of CPU", data)


# ------------------------------------------------------------------------------------ mutation

INTERESTING_8 = [0x00, 0x01, 0x7F, 0x80, 0xFF, 0x02]
BOUNDARY = [
    0,
    1,
    -1,
    2,
    127,
    128,
    255,
    256,
    0x7FFF,
    0x8000,
    0xFFFF,
    (1 << 31) - 1,
    1 << 31,
    (1 << 32) - 1,
    1 << 32,
    1 << 53,
    (1 << 62),
    (1 << 63) - 1,
    1 << 63,
    (1 << 64) - 1,
    -(1 << 31),
    -(1 << 63),
    253_402_300_800_000,
    9_999_999_999,
]


def uvarint(n: int) -> bytes:
    n &= (1 << 70) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zigzag(n: int) -> bytes:
    return uvarint((n << 1) ^ (n >> 63) if -(1 << 63) <= n < (1 << 63) else n << 1)


def mutate_bytes(rnd: random.Random, data: bytes, others: list[bytes], start: int = 0) -> bytes:
    """One to three mutations of ``data`` at or after byte ``start``: bit flips, overwritten
    bytes, boundary integers (big- and little-endian, 2, 4 or 8 bytes, varints), insertions,
    deletions, truncations, appended bytes, duplicated or spliced pieces."""
    b = bytearray(data)
    for _ in range(rnd.randint(1, 3)):
        how = rnd.randrange(11)
        p = rnd.randrange(start, max(len(b), start + 1))
        if how == 0 and p < len(b):
            b[p] ^= 1 << rnd.randrange(8)
        elif how == 1 and p < len(b):
            b[p] = rnd.choice(INTERESTING_8 + [rnd.randrange(256)])
        elif how == 2:
            width = rnd.choice((2, 4, 8))
            v = rnd.choice(BOUNDARY) & ((1 << (8 * width)) - 1)
            raw = v.to_bytes(width, rnd.choice(("big", "little")))
            b[p : p + width] = raw
        elif how == 3:
            v = rnd.choice(BOUNDARY)
            b[p:p] = zigzag(v) if rnd.random() < 0.5 else uvarint(v)
        elif how == 4:
            b[p:p] = rnd.randbytes(rnd.randint(1, 8))
        elif how == 5:
            del b[p : p + rnd.randint(1, 8)]
        elif how == 6:
            del b[p:]
        elif how == 7:
            b += rnd.randbytes(rnd.randint(1, 9))
        elif how == 8 and len(b) > start + 1:
            q = rnd.randrange(start, len(b))
            b[p:p] = b[min(p, q) : max(p, q)][:64]
        elif how == 9 and others:
            o = rnd.choice(others)
            q = rnd.randrange(len(o) + 1)
            b[p:] = o[q:]
        else:
            b[p : p + 1] = bytes([0xFF]) * rnd.randint(1, 10)
    return bytes(b)


def random_json(rnd: random.Random, depth: int = 0) -> Any:
    """A JSON value of any kind, with the awkward ones favoured."""
    r = rnd.randrange(14)
    if r == 0:
        return None
    if r == 1:
        return rnd.choice([True, False])
    if r == 2:
        return rnd.choice(BOUNDARY) * rnd.choice((1, -1))
    if r == 3:
        return rnd.choice([0.5, -0.0, 1e308, 1e-320, 3.0, float(1 << 63)])
    if r == 4:
        return rnd.choice(["", "a", "\udc80", "\ud800x", "é", "\x00", "a.b", "1x", "int", "null"])
    if r == 5 and depth < 3:
        return [random_json(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    if r == 6 and depth < 3:
        return {rnd.choice(["a", "b", "type", "name", ""]): random_json(rnd, depth + 1)}
    if r == 7:
        return rnd.randrange(-5, 40)
    return rnd.choice(["x", "string", "record", "fixed", "A", "B"])


def mutate_json(rnd: random.Random, doc: Any) -> Any:
    """``doc`` with one node replaced, deleted, duplicated or retyped (a copy)."""
    doc = json.loads(json.dumps(doc))
    holders: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k in list(node):
                holders.append((node, k))
                walk(node[k])
        elif isinstance(node, list):
            for i in range(len(node)):
                holders.append((node, i))
                walk(node[i])

    walk(doc)
    if not holders:
        return random_json(rnd)
    for _ in range(rnd.randint(1, 2)):
        parent, k = rnd.choice(holders)
        how = rnd.randrange(6)
        try:
            if how == 0:
                parent[k] = random_json(rnd)
            elif how == 1 and isinstance(parent, dict):
                del parent[k]
            elif how == 2 and isinstance(parent, list):
                parent.insert(k, json.loads(json.dumps(parent[k])))  # a duplicate
            elif how == 3:
                parent[k] = [parent[k]] if rnd.random() < 0.5 else {"type": parent[k]}
            elif how == 4 and isinstance(parent[k], int) and not isinstance(parent[k], bool):
                parent[k] = rnd.choice(BOUNDARY) * rnd.choice((1, -1))
            elif how == 5 and isinstance(parent[k], str):
                parent[k] = rnd.choice(["", "\udc80", parent[k] * 2, parent[k] + ".x", "int"])
        except (IndexError, KeyError):
            pass
    return doc


def dumps(doc: Any) -> bytes:
    """JSON text; lone surrogates kept as their ``\\u`` escapes, as a JSON writer may emit."""
    return json.dumps(doc).encode()


# ---------------------------------------------------------------------------- internal topics


def _internal_seeds() -> dict[str, list[tuple[bytes | None, bytes | None, str | None]]]:
    """Per interpretation: (key, value, control type) of every record type and version of
    the pinned specs, every field set (tests/internal_encoder.py)."""
    from internal_encoder import encode, sample
    from internal_encoder import uvarint as kuvarint

    from kafkalog_source.format.messages.schema import by_name
    from kafkalog_source.format.messages.topics import INTERPRETATIONS, RAFT_CONTROL, record_types

    control_ids = {rtype: cid for cid, (_, rtype) in RAFT_CONTROL.items()}
    names = {2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER"}
    names.update({5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"})
    out: dict[str, list[tuple[bytes | None, bytes | None, str | None]]] = {}
    for interp in INTERPRETATIONS:
        seeds: list[tuple[bytes | None, bytes | None, str | None]] = []
        for rtype, key_spec, value_spec in record_types(interp):
            if rtype in control_ids:
                cid = control_ids[rtype]
                spec = by_name(RAFT_CONTROL[cid][0])
                for v in range(spec.valid[0], spec.valid[1] + 1):
                    val = sample(spec.fields, v)
                    val["version"] = v
                    seeds.append((struct.pack(">hh", 0, cid), encode(spec, v, val), names[cid]))
                continue
            if value_spec is None:
                for v in range(key_spec.valid[0], key_spec.valid[1] + 1):
                    val = sample(key_spec.fields, v)
                    head = kuvarint(1) + kuvarint(key_spec.api_key) + kuvarint(v)
                    seeds.append((None, head + encode(key_spec, v, val), None))
                continue
            for kv in range(key_spec.valid[0], key_spec.valid[1] + 1):
                key = struct.pack(">h", kv) + encode(key_spec, kv, sample(key_spec.fields, kv))
                for v in range(value_spec.valid[0], value_spec.valid[1] + 1):
                    val = sample(value_spec.fields, v, seed=7)
                    if rtype == "GroupMetadata" and v % 2:
                        val["protocolType"] = "consumer"
                    seeds.append((key, struct.pack(">h", v) + encode(value_spec, v, val), None))
                seeds.append((key, None, None))  # a tombstone
        if interp == "transaction_state":  # markers ride in every topic
            marker = struct.pack(">hi", 0, 5)
            seeds += [(struct.pack(">hh", 0, 0), marker, "ABORT")]
            seeds += [(struct.pack(">hh", 0, 1), marker, "COMMIT")]
        out[interp] = seeds
    return out


_TIMESTAMPS = [
    1_700_000_000_000_000,
    -1,
    0,
    (253_402_300_800_000 + 1) * 1000,  # year 10000, in microseconds
    (1 << 63) - 1,
    -(1 << 63),
]


def fuzz_internal(camp: Campaign, rnd: random.Random, inputs: int, batch: int = 64) -> None:
    """The ``internal`` family (see the module docstring)."""
    from kafkalog_source.arrow.internal import decoded_schema
    from kafkalog_source.arrow.schema import ALL_COLUMNS
    from kafkalog_source.format.messages.topics import INTERPRETATIONS
    from kafkalog_source.options import parse_options
    from kafkalog_source.reader.internal import RAW_PROJECTION, InternalDecoder
    from kafkalog_source.stats import ReadStats

    seeds = _internal_seeds()
    interps = list(INTERPRETATIONS)
    raw_schema = pa.schema([ALL_COLUMNS[n] for n in RAW_PROJECTION.names])
    snapshot_names = [
        "00000000000000000978-0000000003.checkpoint",
        "00000000000000000978-9999999999.checkpoint",
        "99999999999999999999-0000000003.checkpoint",
        "00000000000000000978-2147483648.checkpoint.deleted",
    ]
    done = 0
    while done < inputs:
        interp = rnd.choice(interps)
        pool = seeds[interp]
        everything = [s for v in seeds.values() for s in v]
        rows: dict[str, list[Any]] = {n: [] for n in RAW_PROJECTION.names}
        for _ in range(batch):
            key, value, ctype = rnd.choice(pool if rnd.random() < 0.9 else everything)
            others = [s[1] for s in pool if s[1]]
            if key is not None and rnd.random() < 0.5:
                key = mutate_bytes(rnd, key, [s[0] for s in pool if s[0]])
            if value is not None and rnd.random() < 0.8:
                value = mutate_bytes(rnd, value, others)
            if rnd.random() < 0.02:
                key, value = value, key
            topic = (
                INTERPRETATIONS[interp][0]
                if rnd.random() < 0.9
                else rnd.choice(["orders", "_schemas", "__consumer_offsets", "__cluster_metadata"])
            )
            path = "/nowhere/seg/00000000000000000000.log"
            if rnd.random() < 0.1:
                path = "/nowhere/__cluster_metadata-0/" + rnd.choice(snapshot_names)
            ctl = None
            if ctype is not None:
                ctl = {"type": ctype, "version": 0, "coordinatorEpoch": None}
            rows["rawKey"].append(key)
            rows["rawValue"].append(value)
            rows["topic"].append(topic)
            rows["partition"].append(0)
            rows["offset"].append(len(rows["offset"]))
            rows["timestamp"].append(
                rnd.choice(_TIMESTAMPS) if rnd.random() < 0.2 else 1_700_000_000_000_000
            )
            rows["control"].append(ctl)
            rows["segmentPath"].append(path)
            rows["batchPosition"].append(0)
        arrays = []
        for f in raw_schema:
            if f.name == "timestamp":
                arrays.append(pa.array(rows[f.name], pa.int64()).cast(f.type))
            else:
                arrays.append(pa.array(rows[f.name], f.type))
        raw = pa.RecordBatch.from_arrays(arrays, schema=raw_schema)
        data = {"interp": interp, "rows": rows}
        counts = {}
        for decode in (interp, "auto"):
            for mode in ("PERMISSIVE", "DROPMALFORMED", "FAILFAST"):
                opts = parse_options({"decode": decode, "mode": mode}, paths=["/nowhere"])
                stats = ReadStats()
                dec = InternalDecoder(opts, decoded_schema(decode), stats)

                def run(dec: Any = dec, raw: pa.RecordBatch = raw) -> pa.RecordBatch:
                    out = dec.batch(raw)
                    out.validate(full=True)
                    return out

                out = guarded(camp, "internal", data, run)
                if out is not None and mode != "FAILFAST":
                    counts[(decode, mode)] = (out.num_rows, stats.undecodable_records)
            if (decode, "PERMISSIVE") in counts and (decode, "DROPMALFORMED") in counts:
                p, pu = counts[(decode, "PERMISSIVE")]
                d, du = counts[(decode, "DROPMALFORMED")]
                if pu != du or d + du != p:
                    camp.fail(
                        "internal",
                        f"modes disagree: PERMISSIVE {p} rows ({pu} undecodable), "
                        f"DROPMALFORMED {d} rows ({du} undecodable)",
                        data,
                    )
        if rnd.random() < 1 / 200:
            _internal_through_files(camp, rnd, interp, rows)
        done += batch
        camp.count("internal", batch)


def _internal_through_files(
    camp: Campaign, rnd: random.Random, interp: str, rows: dict[str, list[Any]]
) -> None:
    """The same records as a segment file (a valid CRC) read by ``read_table``."""
    from conftest import kp_v2_batch

    import kafkalog_source as kl
    from kafkalog_source.format.messages.topics import INTERPRETATIONS

    records = [
        (1_700_000_000_000 + i, k, v, [])
        for i, (k, v, c) in enumerate(
            zip(rows["rawKey"], rows["rawValue"], rows["control"], strict=True)
        )
        if c is None
    ]
    if not records:
        return
    with tempfile.TemporaryDirectory(prefix="kafkalog-fuzz-") as tmp:
        d = Path(tmp) / f"{INTERPRETATIONS[interp][0]}-0"
        d.mkdir()
        (d / "00000000000000000000.log").write_bytes(kp_v2_batch(records))
        for mode in ("FAILFAST", "DROPMALFORMED", "PERMISSIVE"):
            decode = rnd.choice([interp, "auto"])
            guarded(
                camp,
                "internal",
                {"interp": interp, "records": records},
                lambda decode=decode, mode=mode: kl.read_table(d, decode=decode, mode=mode),
            )


# --------------------------------------------------------------------------------- running


def runners() -> dict[str, Callable[[Campaign, random.Random, int], None]]:
    """Each family's runner."""
    from decoder_fuzz_payloads import fuzz_avro, fuzz_json, fuzz_protobuf
    from decoder_fuzz_schemas import fuzz_schemas

    return {
        "internal": fuzz_internal,
        "avro": fuzz_avro,
        "protobuf": fuzz_protobuf,
        "json": fuzz_json,
        "schemas": fuzz_schemas,
    }


def warm_up() -> None:
    """Run each family's code once (a segment read, the Avro program), untimed, so that the
    first timed input does not pay for imports and schema compilation, which the harness would
    take for a hang."""
    from conftest import kp_v2_batch
    from decoder_fuzz_payloads import Registry, _wire

    import kafkalog_source as kl
    from kafkalog_source.payloads.avro import AvroDecoder

    with tempfile.TemporaryDirectory(prefix="kafkalog-fuzz-") as tmp:
        d = Path(tmp) / "t-0"
        d.mkdir()
        (d / "00000000000000000000.log").write_bytes(kp_v2_batch([(1, b"k", b"v", [])]))
        kl.read_table(d)
    reg = Registry()
    text = '{"type": "record", "name": "W", "fields": [{"name": "a", "type": "int"}]}'
    dec = AvroDecoder(reg, reg.add("w", 1, 1, text, "AVRO"))
    dec.use_kernel = True
    dec.decode(pa.array([_wire(1, b"\x02")], pa.binary()))


def run(
    families: list[str], inputs: int, seed: int, out: Path | None = None, chunk: int = 20_000
) -> Campaign:
    """Run ``inputs`` inputs of each family (in chunks, printing progress when standalone)."""
    camp = Campaign(out)
    logging.disable(logging.WARNING)  # DROPMALFORMED logs every bad record
    warm_up()
    for fam in families:
        rnd = random.Random(f"{seed}:{fam}")
        left = inputs
        while left > 0:
            n = min(chunk, left)
            runners()[fam](camp, rnd, n)
            left -= n
            if out is not None:
                print(
                    f"{time.strftime('%H:%M:%S')} {fam}: {camp.inputs.get(fam, 0)} inputs, "
                    f"{len(camp.failures.get(fam, {}))} distinct failures",
                    flush=True,
                )
    return camp


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--family", default="all", help=f"one of {', '.join(FAMILIES)}, or all")
    p.add_argument("--inputs", type=int, default=100_000, help="inputs per family")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "kafkalog-fuzz")
    a = p.parse_args(argv)
    families = list(FAMILIES) if a.family == "all" else a.family.split(",")
    t0 = time.monotonic()
    camp = run(families, a.inputs, a.seed, a.out)
    print(f"--- seed {a.seed}, {time.monotonic() - t0:.0f} s; failures kept in {a.out}")
    print(camp.report())
    return 1 if any(camp.failures.values()) else 0


def iter_failures(directory: Path) -> Iterator[Failure]:
    """The failures a campaign kept."""
    for path in sorted(directory.glob("*.pkl")):
        yield pickle.loads(path.read_bytes())


if __name__ == "__main__":  # through the module's own name, so that failures unpickle
    import decoder_fuzz

    sys.exit(decoder_fuzz.main())
