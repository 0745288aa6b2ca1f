"""The two Avro paths agree on every value (issue 31): the compiled program
(kernel/avro.py, payloads/avro_program.py) and the fastavro path (payloads/avro_reference.py:
recursive writer schemas, ``KAFKALOG_AVRO_KERNEL=0``), over random writer schemas, random
reader evolutions of them and random values, valid and damaged.

Evolutions are the ones Avro's resolution defines: fields dropped, added with defaults (of every
type: bytes and fixed defaults with code points up to 255, union defaults in any branch),
renamed with aliases, reordered; promotions (int -> long -> float -> double, string <-> bytes);
a type widened into a union or a union narrowed; enum symbols added and removed, with and
without a default; decimal scales changed; time units changed (a reader's unit for a long); nested
records, arrays, maps and unions; every logical type. Values are written by fastavro (an independent encoder) with the writer schema,
raw (no logical conversion), with extreme numbers (dates past year 9999, timestamps at the
64-bit limits, decimals past their precision), then damaged.

Both paths must mark the same rows as errors and give the same Arrow values for the others;
the known cases where a raw value cannot tell (an int and a long of one writer union resolving
into different reader branches) are not generated.
"""

from __future__ import annotations

import io
import json
import random
import sys
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from payload_registry import FakeRegistry, RegisteredSchema

from kafkalog_source.errors import KafkaLogError
from kafkalog_source.payloads.avro import AvroDecoder
from kafkalog_source.payloads.avro_schema import strip_logical

sys.path.insert(0, str(Path(__file__).resolve().parent))
from decoder_fuzz import mutate_bytes  # noqa: E402
from decoder_fuzz_payloads import first_difference  # noqa: E402

PRIMS = ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
LOGICAL = [
    {"type": "int", "logicalType": "date"},
    {"type": "int", "logicalType": "time-millis"},
    {"type": "long", "logicalType": "time-micros"},
    {"type": "long", "logicalType": "timestamp-millis"},
    {"type": "long", "logicalType": "timestamp-micros"},
    {"type": "long", "logicalType": "local-timestamp-millis"},
    {"type": "long", "logicalType": "local-timestamp-micros"},
    {"type": "long", "logicalType": "timestamp-nanos"},
    {"type": "string", "logicalType": "uuid"},
]
LONG_UNITS = [d["logicalType"] for d in LOGICAL if d["type"] == "long"] + [None]
PROMOTE = {"int": ["long", "float", "double"], "long": ["float", "double"], "float": ["double"]}
PROMOTE.update({"string": ["bytes"], "bytes": ["string"]})
AMBIGUOUS = [("int", "long"), ("float", "double")]  # branches fastavro returns alike


class Gen:
    """Random schemas, evolutions, defaults and values from one ``random.Random``."""

    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd
        self.n = 0

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    # -- schemas

    def schema(self, depth: int = 0, union_ok: bool = True) -> Any:
        r = self.rnd.random()
        if depth > 2 or r < 0.35:
            return self.rnd.choice(PRIMS[1:])
        if r < 0.45:
            return dict(self.rnd.choice(LOGICAL))
        if r < 0.5:
            p = self.rnd.randint(1, 20)
            d = {"type": "bytes", "logicalType": "decimal", "precision": p}
            d["scale"] = self.rnd.randint(0, p)
            if self.rnd.random() < 0.3:
                d = {"type": "fixed", "name": self.name("D"), "size": self.rnd.randint(1, 9), **d}
                d["type"] = "fixed"
            return d
        if r < 0.58:
            syms = self.rnd.sample("ABCDE", self.rnd.randint(1, 4))
            e = {"type": "enum", "name": self.name("E"), "symbols": syms}
            if self.rnd.random() < 0.5:
                e["default"] = self.rnd.choice(syms)
            return e
        if r < 0.63:
            return {"type": "fixed", "name": self.name("F"), "size": self.rnd.randint(0, 4)}
        if r < 0.7:
            return {"type": "array", "items": self.schema(depth + 1)}
        if r < 0.76:
            return {"type": "map", "values": self.schema(depth + 1)}
        if r < 0.88 and union_ok:
            return self.union(depth)
        return self.record(depth + 1)

    def union(self, depth: int) -> list:
        out: list[Any] = []
        seen: set[str] = set()
        for _ in range(self.rnd.randint(2, 3)):
            s = "null" if self.rnd.random() < 0.3 else self.schema(depth + 1, union_ok=False)
            key = self.branch_key(s)
            if key in seen or any(key in p and set(p) & seen for p in AMBIGUOUS):
                continue  # a raw int (float) cannot tell an int (float) from a long (double)
            seen.add(key)
            out.append(s)
        return out if len(out) >= 1 else ["null"]

    @staticmethod
    def branch_key(s: Any) -> str:
        if isinstance(s, str):
            return s
        if s.get("name") and s["type"] in ("record", "enum", "fixed"):
            return s["name"]
        return s["type"]

    def record(self, depth: int) -> dict:
        fields = []
        for i in range(self.rnd.randint(0, 4)):
            fields.append({"name": f"f{i}", "type": self.schema(depth)})
        return {"type": "record", "name": self.name("R"), "fields": fields}

    # -- evolution

    def evolve(self, s: Any, depth: int = 0, in_union: bool = False) -> Any:
        """A reader for writer schema ``s`` (often one it resolves from; sometimes not)."""
        rnd = self.rnd
        if isinstance(s, str):
            if s in PROMOTE and rnd.random() < 0.3:
                return rnd.choice(PROMOTE[s])
            if rnd.random() < 0.1 and s != "null" and not in_union:
                return ["null", s] if rnd.random() < 0.5 else [s, "null"]
            return s
        if isinstance(s, list):
            branches = [self.evolve(b, depth + 1, in_union=True) for b in s]
            if rnd.random() < 0.2 and len(branches) > 1:
                branches.pop(rnd.randrange(len(branches)))
            if rnd.random() < 0.2:
                extra = rnd.choice(["string", "null", "double"])
                if all(self.branch_key(b) != extra for b in branches):
                    branches.append(extra)
            keys = [self.branch_key(b) for b in branches]
            if len(set(keys)) != len(keys) or any(set(p) <= set(keys) for p in AMBIGUOUS):
                return s
            return branches
        t = s["type"]
        out = dict(s)
        if t == "record":
            fields = []
            for f in s["fields"]:
                r = rnd.random()
                if r < 0.15:
                    continue  # dropped
                g = {"name": f["name"], "type": self.evolve(f["type"], depth + 1)}
                if r < 0.25:
                    g = {"name": f["name"] + "x", "aliases": [f["name"]], "type": g["type"]}
                if rnd.random() < 0.3:
                    g["default"] = self.default(g["type"])
                fields.append(g)
            for i in range(rnd.randint(0, 2)):
                typ = self.schema(depth + 1)
                fields.append({"name": f"n{i}", "type": typ, "default": self.default(typ)})
            if rnd.random() < 0.3:
                rnd.shuffle(fields)
            out["fields"] = fields
        elif t == "enum":
            syms = list(s["symbols"])
            if rnd.random() < 0.3 and len(syms) > 1:
                syms.pop(rnd.randrange(len(syms)))
            if rnd.random() < 0.3:
                syms.append(rnd.choice([c for c in "ABCDEFG" if c not in syms]))
            out["symbols"] = syms
            out.pop("default", None)
            if rnd.random() < 0.5:
                out["default"] = rnd.choice(syms)
        elif t in ("array", "map"):
            k = "items" if t == "array" else "values"
            out[k] = self.evolve(s[k], depth + 1)
        elif s.get("logicalType") == "decimal" and rnd.random() < 0.3:
            out["scale"] = rnd.randint(0, out["precision"])
        elif t == "long" and s.get("logicalType") in LONG_UNITS and rnd.random() < 0.3:
            out.pop("logicalType")  # another time unit (or none) for the reader
            unit = rnd.choice(LONG_UNITS)
            if unit is not None:
                out["logicalType"] = unit
        return out

    def default(self, s: Any) -> Any:
        """A default for a field of schema ``s`` (JSON, as a registry stores it)."""
        rnd = self.rnd
        if isinstance(s, list):
            return self.default(s[0] if rnd.random() < 0.7 else rnd.choice(s))
        if isinstance(s, dict) and s["type"] in ("record", "error"):
            return {f["name"]: self.default(f["type"]) for f in s["fields"]}
        t = s if isinstance(s, str) else s["type"]
        if isinstance(s, dict) and t == "enum":
            return rnd.choice(s["symbols"])
        if t == "fixed":
            return "".join(chr(rnd.choice([0x41, 0xFF, 0x80, 0])) for _ in range(s["size"]))
        if t == "array":
            return [self.default(s["items"]) for _ in range(rnd.randint(0, 2))]
        if t == "map":
            return {f"k{i}": self.default(s["values"]) for i in range(rnd.randint(0, 2))}
        return {
            "null": None,
            "boolean": rnd.random() < 0.5,
            "int": rnd.choice([0, -1, 7, (1 << 31) - 1]),
            "long": rnd.choice([0, 1 << 40, -(1 << 62)]),
            "float": rnd.choice([0.5, -1.0]),
            "double": rnd.choice([0.25, 1e300]),
            "bytes": rnd.choice(["", "\u00ff\u0080", "ab"]),
            "string": rnd.choice(["", "é", "x"]),
        }[t]

    # -- values (raw: no logical conversion)

    def value(self, s: Any, depth: int = 0) -> Any:
        rnd = self.rnd
        if isinstance(s, list):
            b = rnd.choice(s)
            v = self.value(b, depth + 1)
            if isinstance(b, dict) and b.get("name") and b["type"] in ("record", "enum", "fixed"):
                return (b["name"], v)
            return v
        t = s if isinstance(s, str) else s["type"]
        if t == "null":
            return None
        if t == "boolean":
            return rnd.random() < 0.5
        if t == "int":
            return rnd.choice(
                [0, 1, -1, (1 << 31) - 1, -(1 << 31), 2_932_897, rnd.randint(-99, 99)]
            )
        if t == "long":
            big = [(1 << 63) - 1, -(1 << 63), 253_402_300_800_000, 9_223_372_036_854_776]
            return rnd.choice([0, -1, rnd.randint(-(10**6), 10**6), *big])
        if t in ("float", "double"):
            return rnd.choice([0.0, -0.5, 1e38, float("inf"), float("nan"), 3.25])
        if t == "string":
            return rnd.choice(["", "é", "x" * rnd.randint(0, 9), "00000000-0000-0000-0000-0"])
        if t == "bytes":
            n = rnd.choice([0, 1, 2, 8, 17])
            return bytes(rnd.randrange(256) for _ in range(n))
        if t == "fixed":
            return bytes(rnd.randrange(256) for _ in range(s["size"]))
        if t == "enum":
            return rnd.choice(s["symbols"])
        if t == "array":
            return [self.value(s["items"], depth + 1) for _ in range(rnd.randint(0, 3))]
        if t == "map":
            n = rnd.randint(0, 3)
            return {f"k{rnd.randint(0, 5)}": self.value(s["values"], depth + 1) for _ in range(n)}
        return {f["name"]: self.value(f["type"], depth + 1) for f in s["fields"]}


def _decoders(writer: Any, reader: Any) -> tuple[AvroDecoder, AvroDecoder] | None:
    reg = FakeRegistry()
    reg.add("w", 1, RegisteredSchema(1, "AVRO", json.dumps(writer)))
    r = reg.add("r", 1, RegisteredSchema(2, "AVRO", json.dumps(reader)))
    try:
        kernel, ref = AvroDecoder(reg, r), AvroDecoder(reg, r)
    except KafkaLogError:
        return None  # a reader schema fastavro or Avro refuses: both paths refuse it alike
    kernel.use_kernel, ref.use_kernel = True, False
    return kernel, ref


def _compare(kernel: AvroDecoder, ref: AvroDecoder, blobs: list[bytes]) -> str | None:
    """Why the two paths disagree on ``blobs`` (None: they agree)."""
    arr = pa.array(blobs, pa.binary())
    k, r = kernel.decode(arr), ref.decode(arr)
    ke, re_ = {e.row: e.reason for e in k.errors}, {e.row: e.reason for e in r.errors}
    if ke.keys() != re_.keys():
        row = min(ke.keys() ^ re_.keys())
        return f"row {row}: kernel {ke.get(row)!r}, fastavro {re_.get(row)!r}"
    k.values.validate(full=True)
    row = first_difference(k.values, r.values)
    if row is not None:
        return f"row {row}: kernel {k.values.slice(row, 1)}, fastavro {r.values.slice(row, 1)}"
    return None


def check_one(seed: int, damaged: int = 20) -> None:
    """One random writer, one evolved reader, values and damaged values: both paths agree."""
    g = Gen(random.Random(seed))
    writer = g.record(0)
    reader = g.evolve(writer) if g.rnd.random() < 0.85 else writer
    pair = _decoders(writer, reader)
    if pair is None:
        return
    plain = fastavro.parse_schema(strip_logical(writer))
    blobs = []
    for _ in range(12):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, plain, g.value(writer))
        blobs.append(b"\0\0\0\0\1" + buf.getvalue())
    blobs += [mutate_bytes(g.rnd, g.rnd.choice(blobs), blobs, start=5) for _ in range(damaged)]
    why = _compare(*pair, blobs)
    assert why is None, (
        f"seed {seed}: {why}\nwriter {json.dumps(writer)}\nreader {json.dumps(reader)}"
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32))
def test_paths_agree_on_random_evolutions(seed: int) -> None:
    """Hypothesis picks the seed of one writer, one reader and 32 values; both paths must
    agree (see the module docstring)."""
    check_one(seed)


# Defaults the paths read differently before issue 31 (spelled out: the random test covers
# them, these say it plainly)
W = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}


def _with(field: dict) -> dict:
    return {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, field]}


@pytest.mark.parametrize(
    "field,expected",
    [
        ({"name": "b", "type": "bytes", "default": "\u00ff\u0080"}, b"\xff\x80"),
        (
            {
                "name": "b",
                "type": {"type": "fixed", "name": "F", "size": 2},
                "default": "\u00ff\u0080",
            },
            b"\xff\x80",
        ),
        (
            {"name": "b", "type": ["bytes", "double"], "default": "\u00ff"},
            {"member0": b"\xff", "member1": None},
        ),
        (
            {"name": "b", "type": {"type": "array", "items": "bytes"}, "default": ["\u00ff"]},
            [b"\xff"],
        ),
    ],
)
def test_bytes_and_fixed_defaults_are_code_points(field: dict, expected: Any) -> None:
    """A reader-only field's bytes or fixed default: Avro's specification maps the JSON
    string's code points 0-255 to bytes (``'\\u00ff\\u0080'`` is ``b'\\xff\\x80'``). The
    fastavro path gave the UTF-8 bytes (``b'\\xc3\\xbf\\xc2\\x80'``), and a ``[bytes, double]``
    union default failed every row there."""
    kernel, ref = _decoders(W, _with(field))
    for d in (kernel, ref):
        out = d.decode(pa.array([b"\0\0\0\0\1\x02"], pa.binary()))
        assert out.errors == [] and out.values.to_pylist() == [{"a": 1, "b": expected}]


def test_units_and_scales_are_the_writers() -> None:
    """A writer's timestamp-micros read as timestamp-millis keeps its microseconds (the
    writer's logical type says the unit it was written in; review 1, item 3); a decimal of
    scale 2 read with scale 3 is the same number (rescaled exactly, item 4); on both paths."""
    us = {"type": "long", "logicalType": "timestamp-micros"}
    ms = {"type": "long", "logicalType": "timestamp-millis"}
    d2 = {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}
    d3 = dict(d2, scale=3)
    writer = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "t", "type": us}, {"name": "d", "type": d2}],
    }
    reader = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "t", "type": ms}, {"name": "d", "type": d3}],
    }
    import decimal

    blob = b"\0\0\0\0\1" + b"\x04" + b"\x04\x00\x7b"  # t = 2, d = 123 (unscaled)
    for d in _decoders(writer, reader):
        out = d.decode(pa.array([blob], pa.binary()))
        assert out.errors == []
        [row] = out.values.to_pylist()
        assert row["d"] == decimal.Decimal("1.23") and str(row["d"]) == "1.230"
        assert out.values.field("t").cast(pa.int64()).to_pylist() == [2]


def test_a_map_key_twice_is_reported_alike_on_both_paths() -> None:
    """A map key twice (review 1, item 6): an invalid value only in a map the reader reads (a
    field the reader drops is skipped on both paths), and both paths name the same map (its
    field in the reader) and the first duplicate key in the value's bytes, whatever the
    reader's field order."""
    m = {"type": "map", "values": "int"}
    writer = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "a", "type": m},
            {"name": "b", "type": {"type": "array", "items": m}},
            {"name": "c", "type": m},
        ],
    }

    def zz(n: int) -> bytes:
        return bytes([(n << 1) ^ (n >> 63)])

    def mp(*keys: bytes) -> bytes:
        if not keys:
            return zz(0)
        return zz(len(keys)) + b"".join(zz(len(k)) + k + zz(1) for k in keys) + zz(0)

    prefix = b"\0\0\0\0\1"
    blobs = [
        prefix + mp(b"x", b"x") + zz(0) + mp(),  # twice in a
        prefix + mp(b"y") + zz(1) + mp(b"q", b"p", b"q", b"p") + zz(0) + mp(),  # in b[0]
        prefix + mp(b"z", b"z") + zz(1) + mp(b"k", b"k") + zz(0) + mp(b"w", b"w"),  # in all
        prefix + mp(b"y") + zz(0) + mp(b"v", b"v"),  # in c
    ]
    readers = {  # reader fields -> {row: (field, key)}
        ("b", "c"): {1: ("b", "q"), 2: ("b", "k"), 3: ("c", "v")},  # a dropped
        ("c", "b"): {1: ("b", "q"), 2: ("b", "k"), 3: ("c", "v")},  # the bytes' order
        ("a", "b", "c"): {0: ("a", "x"), 1: ("b", "q"), 2: ("a", "z"), 3: ("c", "v")},
        ("c",): {2: ("c", "w"), 3: ("c", "v")},
    }
    for names, want in readers.items():
        fields = {f["name"]: f for f in writer["fields"]}
        reader = {"type": "record", "name": "R", "fields": [fields[n] for n in names]}
        pair = _decoders(writer, reader)
        assert pair is not None
        got = []
        for d in pair:
            out = d.decode(pa.array(blobs, pa.binary()))
            got.append({e.row: e.reason for e in out.errors})
            assert out.values.null_count == len(want)
        assert got[0] == got[1], names
        assert set(got[0]) == set(want), names
        for row, (field, key) in want.items():
            assert f"{field}: a map holds a key twice ('{key}';" in got[0][row], (names, row)


# Writer-only fields damaged as Java's decoder skips them unread (issue 40 item 10). The rules
# are written here from Apache Avro's Java source (release-1.12.1: GenericDatumReader.skip over
# BinaryDecoder, what a Java consumer runs for a field its reader schema does not have), not
# from kafkalog's code: a boolean is one byte of any value; an int (and an enum or union index)
# is readInt, at most 5 bytes, the bits past 32 dropped; a long is readLong, at most 10 bytes;
# a string or bytes is skipped by its length, unread (a length <= 0 skips nothing); an enum
# index is not checked; a union index must name a branch; an array or map block of a negative
# count is skipped by its byte size, its items unread.


def _uvarint(u: int) -> bytes:
    out = bytearray()
    while u >= 0x80:
        out.append(u & 0x7F | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def _zz(v: int) -> bytes:
    return _uvarint((v << 1) ^ (v >> 63) if v < 0 else v << 1)


class Junk:
    """Encodings of a writer-only field's value that Java skips without complaint, and, with
    ``poison``, one Java refuses (the first union, enum or int met: a union index past its
    branches, or a varint of 6 bytes where readInt takes 5)."""

    def __init__(self, rnd: random.Random, poison: bool = False) -> None:
        self.rnd = rnd
        self.poison = poison
        self.poisoned = False

    def _take_poison(self) -> bool:
        if self.poison and not self.poisoned:
            self.poisoned = True
            return True
        return False

    def varint(self, most: int) -> bytes:
        """1 to ``most`` bytes, any bits (readInt: 5, readLong: 10)."""
        n = self.rnd.randint(1, most)
        body = [self.rnd.randrange(0x80, 0x100) for _ in range(n - 1)]
        return bytes(body + [self.rnd.randrange(0x80)])

    def int32(self) -> bytes:
        if self._take_poison():
            return b"\x80" * 5 + b"\x00"  # 6 bytes: "Invalid int encoding"
        return self.varint(5)

    def of(self, s: Any) -> bytes:
        rnd = self.rnd
        if isinstance(s, list):
            if self._take_poison():
                return _zz(rnd.choice([len(s), len(s) + 5, -1]))
            i = rnd.randrange(len(s))
            u = (i << 1) + (rnd.randrange(8) << 32)  # readInt keeps the low 32 bits
            index = (
                _uvarint(u)
                if u < 1 << 32
                else bytes([(u >> (7 * j)) & 0x7F | 0x80 for j in range(4)] + [u >> 28])
            )
            return index + self.of(s[i])
        t = s if isinstance(s, str) else s["type"]
        if t == "null":
            return b""
        if t == "boolean":
            return bytes([rnd.randrange(256)])
        if t == "int":
            return self.int32()
        if t == "long":
            return self.varint(10)
        if t in ("float", "double"):
            return rnd.randbytes(4 if t == "float" else 8)
        if t == "fixed":
            return rnd.randbytes(s["size"])
        if t in ("string", "bytes"):
            if rnd.random() < 0.3:
                return _zz(-rnd.randint(1, 300))  # skips nothing
            n = rnd.randint(0, 6)
            return _zz(n) + bytes(rnd.choice([0xFF, 0xC3, 0x80, 0x28, 0xED]) for _ in range(n))
        if t == "enum":
            return self.int32()  # any index
        if t == "record":
            return b"".join(self.of(f["type"]) for f in s["fields"])
        if t in ("array", "map"):
            items = s["items"] if t == "array" else s["values"]
            out = b""
            for _ in range(rnd.randint(0, 2)):
                count = rnd.randint(1, 2)
                if rnd.random() < 0.5:  # a sized block: its bytes skipped, never parsed
                    size = rnd.randint(0, 6)
                    out += _zz(-count) + _zz(size) + rnd.randbytes(size)
                else:
                    out += _zz(count)
                    for _ in range(count):
                        out += (self.of("string") if t == "map" else b"") + self.of(items)
            return out + b"\x00"
        raise AssertionError(s)


def check_writer_only(seed: int) -> None:
    """A random writer with 1-3 fields the reader does not have (and its evolutions' dropped
    ones), each value written three ways: valid (fastavro), those fields replaced by bytes Java
    skips (``Junk``) and by bytes Java refuses. Both paths agree on all of them and on damaged
    copies; the skipped junk gives the valid value's row; the refused one is an error."""
    g = Gen(random.Random(seed))
    rnd = g.rnd
    base = g.record(0)
    reader = g.evolve(base)
    fields = list(base["fields"])
    extra = set()
    for i in range(rnd.randint(1, 3)):
        fields.insert(rnd.randint(0, len(fields)), {"name": f"z{i}", "type": g.schema(1)})
        extra.add(f"z{i}")
    writer = {**base, "fields": fields}
    pair = _decoders(writer, reader)
    if pair is None:
        return
    plain = {f["name"]: fastavro.parse_schema(strip_logical(f["type"])) for f in fields}
    blobs: list[bytes] = []
    triples = []
    for _ in range(8):
        value = g.value(writer)
        parts = {}
        for f in fields:
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, plain[f["name"]], value[f["name"]])
            parts[f["name"]] = buf.getvalue()
        junk, poison = Junk(rnd), Junk(rnd, poison=True)
        good = b"".join(parts[f["name"]] for f in fields)
        skipped = b"".join(
            junk.of(f["type"]) if f["name"] in extra else parts[f["name"]] for f in fields
        )
        bad = b"".join(
            poison.of(f["type"]) if f["name"] in extra else parts[f["name"]] for f in fields
        )
        row = len(blobs)
        blobs += [b"\0\0\0\0\1" + good, b"\0\0\0\0\1" + skipped, b"\0\0\0\0\1" + bad]
        triples.append((row, poison.poisoned))
    blobs += [mutate_bytes(rnd, rnd.choice(blobs), blobs, start=5) for _ in range(12)]
    why = _compare(*pair, blobs)
    context = f"seed {seed}\nwriter {json.dumps(writer)}\nreader {json.dumps(reader)}"
    assert why is None, f"{why}\n{context}"
    rows = [blobs[row : row + 3] for row, _ in triples]  # good, skipped junk, refused junk
    outs = [pair[0].decode(pa.array([r[i] for r in rows], pa.binary())) for i in range(3)]
    errors = [{e.row: e.reason for e in out.errors} for out in outs]
    assert errors[0].keys() == errors[1].keys(), (errors[0], errors[1], context)
    same = first_difference(outs[0].values, outs[1].values)
    assert same is None, f"value {same}: {outs[0].values[same]}\n{context}"
    for i, (_, poisoned) in enumerate(triples):
        if poisoned:
            assert i in errors[2], context


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32))
def test_paths_agree_on_damaged_writer_only_fields(seed: int) -> None:
    """Hypothesis picks the seed of one writer with fields its reader does not have and 8
    values written with them valid, damaged as Java skips them unread, and damaged as Java
    refuses (see ``check_writer_only``)."""
    check_writer_only(seed)
