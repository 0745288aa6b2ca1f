"""The fastavro path of :class:`~.avro.AvroDecoder`, made to agree with the compiled program on
every value, valid or not (tests/test_avro_differential.py checks it over random evolutions).

fastavro parses each value with the writer's schema alone and *without logical types*
(:func:`~.avro_schema.strip_logical`): it returns the writer's raw ints, strings, bytes, dicts
and lists (named types in unions as ``(name, value)``) and cannot fail where the kernel does not
(a date past year 9999, a malformed uuid). :func:`converter` then resolves them into the reader
schema by the kernel's rules (:mod:`.avro_program`), not fastavro's:

* fields pair by name, then by the reader's aliases, a writer field once; a reader-only field
  takes its default as the kernel encodes it (:func:`encode_default`: a ``bytes`` or ``fixed``
  default's code points 0-255 as bytes, a union default in the first branch it fits);
* a writer value goes to the reader union branch :func:`reader_branch` chooses (its exact type
  before one it promotes to, as Java; fastavro takes the first it can promote to); in a writer
  union, the raw value's Python type (or its name) tells the writer branch, which is ambiguous
  only for a writer union holding both an ``int`` and a ``long``, or a ``float`` and a
  ``double``, that resolve into different reader branches (the first is taken);
* enum symbols map by name, to the reader's default when it lacks one; promotions as the
  specification lists them;
* a timestamp's unit is the writer's logical type when it names one, else the reader's
  (:func:`~.avro_program.time_scale`); a decimal is the writer's unscaled value at the
  writer's scale, rescaled exactly to the reader's by ``pa.array`` (which refuses a value that
  would lose digits or pass the precision, as the kernel does:
  :func:`~.avro_program.decimal_shift`).

:func:`check_bounds` walks every value with the writer schema before fastavro reads it and
refuses what the kernel refuses: a length or block count past the bytes there, values nested
past :data:`MAX_DEPTH`, a varint past 64 bits, a boolean byte other than 0 and 1, an ``int``
past 32 bits, an enum or union index out of range, a map that holds a key twice (by its text).
:func:`duplicate_key_rows` finds the last in the kernel's output, whose maps keep every entry.
A writer-only field (the reader skips it) is walked as Java's decoder skips it instead, as the
kernel does (the rules and their Avro version: ``kernel/csrc/kl_avro.h``): its booleans, string
bytes and enum indexes are not looked at, a sized block's items are not parsed. fastavro then
reads the value with each such field's bytes replaced by :func:`filler` (fastavro would look).
"""

from __future__ import annotations

import decimal
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..format.registry import WIRE_PREFIX
from ..kernel import avro as K
from .avro_program import decimal_shift, encode_default, min_size, time_scale
from .avro_schema import FieldNode, Node, matches, non_null, reader_branch, union_shape


class Bounds(Exception):
    """A value whose structure does not fit its bytes or its type (see :func:`check_bounds`)."""


MAX_DEPTH = 256  # nested values (recursive schemas) a value may hold
_INT32 = (-(1 << 31), (1 << 31) - 1)


Span = tuple[int, int, Node]
"""The bytes ``[start, end)`` of a writer-only field's value, and its writer schema."""


def check_bounds(node: Node, payload: memoryview | bytes, reader: Node | None = None) -> list[Span]:
    """Walk an Avro value of ``node`` without building it, and raise :class:`Bounds` when a
    length or block count asks for more than the bytes left could hold (the kernel's rules:
    ``n`` items of at least ``min_size`` bytes each, at most ``ZERO_SIZE_ITEMS`` items of zero
    bytes), when nesting goes deeper than :data:`MAX_DEPTH`, or where the kernel refuses a
    value: a boolean byte other than 0 and 1, an ``int`` past 32 bits, an enum or union index
    out of range, a map key twice in a map that ``reader`` (default: ``node``, all of it) reads,
    the first in the value's bytes, named by its field path in the reader. A field of a record
    the reader reads that the reader does not have is walked as Java's decoder skips it
    (``skip_unread``: unchecked but for what Java checks, see ``kernel/csrc/kl_avro.h``), and
    its span returned, in the value's order, for :func:`fill_unread`. What it does not check
    (the UTF-8 of strings read, ...) fastavro reports itself."""
    buf = bytes(payload)
    end = len(buf)
    zero = [0]
    spans: list[Span] = []

    def long_at(p: int) -> tuple[int, int]:
        shift = result = 0
        while True:
            if p >= end:
                raise Bounds(f"the value ends early ({end} bytes) at byte {p + WIRE_PREFIX}")
            b = buf[p]
            p += 1
            if shift == 63 and b > 1:
                raise Bounds("a varint is longer than 10 bytes or holds more than 64 bits")
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return (result >> 1) ^ -(result & 1), p
            shift += 7

    def need(p: int, size: int) -> int:
        if size > end - p:
            raise Bounds(f"the value ends early ({end} bytes) at byte {p + WIRE_PREFIX}")
        return p + size

    def java_varint(p: int, most: int, bits: int) -> tuple[int, int]:
        """Java's BinaryDecoder.readInt (``most`` 5, ``bits`` 32) or readLong (10, 64): at most
        ``most`` bytes, the bits past ``bits`` dropped, zig-zag decoded."""
        u = 0
        for i in range(most):
            if p >= end:
                raise Bounds(f"the value ends early ({end} bytes) at byte {p + WIRE_PREFIX}")
            b = buf[p]
            p += 1
            u |= (b & 0x7F) << (7 * i)
            if b < 0x80:
                u &= (1 << bits) - 1
                return (u >> 1) ^ -(u & 1), p
        if most == 5:
            raise Bounds("an int's varint is longer than 5 bytes (Java's readInt)")
        raise Bounds("a varint is longer than 10 bytes")

    def fits(count: int, least: int, p: int) -> None:
        """A block of ``count`` items of at least ``least`` bytes each (the kernel's limits)."""
        if least == 0:
            zero[0] += count
            if zero[0] > K.ZERO_SIZE_ITEMS:
                raise Bounds(f"an array or map block of {count} items of no bytes")
        elif count > (end - p) // least:
            raise Bounds(f"an array or map block of {count} items does not fit in the value")

    def skip_unread(n: Node, p: int, depth: int) -> int:
        """A value the reader skips, walked as Java's decoder skips it (kl_avro.h's rules)."""
        if depth > MAX_DEPTH:
            raise Bounds(f"values nested deeper than {MAX_DEPTH}")
        k = n.kind
        if k == "null":
            return p
        if k == "boolean":
            return need(p, 1)  # readBoolean: any byte
        if k in ("int", "enum"):
            return java_varint(p, 5, 32)[1]  # readInt; an enum's index is not checked
        if k == "long":
            return java_varint(p, 10, 64)[1]
        if k == "float":
            return need(p, 4)
        if k == "double":
            return need(p, 8)
        if k == "fixed":
            return need(p, n.size)
        if k in ("bytes", "string"):  # doSkipBytes(readLong()): no UTF-8 check
            size, p = java_varint(p, 10, 64)
            return need(p, size) if size > 0 else p
        if k == "record":
            for f in n.fields:
                p = skip_unread(f.node, p, depth + 1)
            return p
        if k == "union":
            i, p = java_varint(p, 5, 32)
            if not 0 <= i < len(n.branches):
                raise Bounds(f"union branch {i} does not exist")
            return skip_unread(n.branches[i], p, depth + 1)
        assert n.items is not None  # an array or a map: doSkipItems
        least = min_size(n.items) + (1 if k == "map" else 0)
        while True:
            count, p = java_varint(p, 10, 64)
            while count < 0:  # a sized block: its bytes are skipped, its items not parsed
                if count == -(1 << 63):
                    raise Bounds(f"negative length {count}")
                size, p = java_varint(p, 10, 64)
                if size < 0:
                    raise Bounds(f"negative length {size}")
                p = need(p, size)
                count, p = java_varint(p, 10, 64)
            if count == 0:
                return p
            fits(count, least, p)
            for _ in range(count):
                if k == "map":  # the key: skipString
                    p = skip_unread(_STRING, p, depth + 1)
                p = skip_unread(n.items, p, depth + 1)

    def skip(n: Node, r: Node | None, p: int, depth: int, path: str) -> int:
        if depth > MAX_DEPTH:
            raise Bounds(f"values nested deeper than {MAX_DEPTH}")
        k = n.kind
        if r is not None and r.kind == "union" and k != "union":
            j = reader_branch(n, r)
            r = None if j is None else r.branches[j]
        if r is not None and (r.kind != k if k in ("record", "array", "map") else False):
            r = None  # does not resolve: the value is an error of its own
        if k == "null":
            return p
        if k == "boolean":
            need(p, 1)
            if buf[p] > 1:
                raise Bounds(
                    f"a boolean is the byte {buf[p]} (Avro's booleans are the bytes 0 and 1) "
                    f"at byte {p + WIRE_PREFIX}"
                )
            return p + 1
        if k == "int":
            v, q = long_at(p)
            if not _INT32[0] <= v <= _INT32[1]:
                raise Bounds(f"the int {v} is out of the 32-bit range")
            return q
        if k == "enum":
            v, q = long_at(p)
            if not 0 <= v < len(n.symbols):  # fastavro would index from the end
                raise Bounds(f"enum index {v} does not exist")
            return q
        if k == "long":
            return long_at(p)[1]
        if k == "float":
            return need(p, 4)
        if k == "double":
            return need(p, 8)
        if k == "fixed":
            return need(p, n.size)
        if k in ("bytes", "string"):
            size, p = long_at(p)
            if size < 0:
                raise Bounds(f"negative length {size}")
            return need(p, size)
        if k == "record":
            pairs = _pairs(n, r) if r is not None else {}
            for f in n.fields:
                rf = pairs.get(f.name)
                if r is not None and rf is None:  # a writer-only field: skipped as Java skips
                    q = skip_unread(f.node, p, depth + 1)
                    spans.append((p, q, f.node))
                    p = q
                    continue
                sub = None if rf is None else (f"{path}.{rf.name}" if path else rf.name)
                p = skip(f.node, None if rf is None else rf.node, p, depth + 1, sub or "")
            return p
        if k == "union":
            i, p = long_at(p)
            if not 0 <= i < len(n.branches):
                raise Bounds(f"union branch {i} does not exist")
            return skip(n.branches[i], r, p, depth + 1, path)
        if k in ("array", "map"):
            assert n.items is not None
            least = min_size(n.items) + (1 if k == "map" else 0)
            keys: set[bytes] = set()
            while True:
                count, p = long_at(p)
                if count == 0:
                    return p
                if count < 0:
                    count = -count
                    size, p = long_at(p)  # the block's size in bytes
                    if size < 0:
                        raise Bounds(f"negative length {size}")
                fits(count, least, p)
                for _ in range(count):
                    if k == "map":  # the key's text, however its length is encoded
                        size, q = long_at(p)
                        if size < 0:
                            raise Bounds(f"negative length {size}")
                        p = need(q, size)
                        key = buf[q:p]
                        if r is not None and key in keys:
                            raise Bounds(duplicate_reason(key, path))
                        keys.add(key)
                    p = skip(n.items, None if r is None else r.items, p, depth + 1, path)
        return p

    skip(node, node if reader is None else reader, 0, 0, "")
    return spans


_STRING = Node("string")
_FILLERS: weakref.WeakKeyDictionary[Node, bytes | None] = weakref.WeakKeyDictionary()


def filler(node: Node) -> bytes | None:
    """The shortest encoding of a value of ``node`` (zeros, empty strings and containers, a
    union's first branch that has one; None for a record that contains itself without a way
    out, whose values check_bounds never passes): what fastavro reads in place of a writer-only
    field, whose bytes it would check where Java does not."""
    got = _FILLERS.get(node, b"?")
    if got != b"?":
        return got

    def make(n: Node, seen: frozenset[int]) -> bytes | None:
        k = n.kind
        if k == "null":
            return b""
        if k in ("boolean", "int", "long", "string", "bytes", "array", "map"):
            return b"\x00"
        if k == "enum":  # (one of no symbols has a placeholder in fastavro's schema)
            return b"\x00"
        if k in ("float", "double", "fixed"):
            return bytes({"float": 4, "double": 8}.get(k, n.size))
        if k == "record":
            if id(n) in seen:
                return None
            out = b""
            for f in n.fields:
                part = make(f.node, seen | {id(n)})
                if part is None:
                    return None
                out += part
            return out
        for i, b in enumerate(n.branches):  # a union: its index, zig-zag varint
            part = make(b, seen)
            if part is not None:
                index, u = bytearray(), i << 1
                while u >= 0x80:
                    index.append(u & 0x7F | 0x80)
                    u >>= 7
                return bytes(index) + bytes([u]) + part
        return None

    got = _FILLERS[node] = make(node, frozenset())
    return got


def fill_unread(payload: memoryview | bytes, spans: list[Span]) -> bytes:
    """``payload`` with each writer-only field's bytes (``spans``, from :func:`check_bounds`)
    replaced by :func:`filler`'s value of its type: the reader never uses them, and fastavro
    would refuse what Java's decoder skips unread (a boolean byte 2, a string that is not
    UTF-8, an enum index out of range, a sized block's bytes)."""
    out = bytearray()
    at = 0
    for start, stop, node in spans:
        fill = filler(node)
        if fill is None:  # no finite value (check_bounds passes none): leave the bytes
            continue
        out += payload[at:start]
        out += fill
        at = stop
    out += payload[at:]
    return bytes(out)


def _pairs(w: Node, r: Node) -> dict[str, FieldNode]:
    """The reader field of each writer field of record ``w`` read into record ``r`` (the
    kernel's pairing, as :func:`_record`'s: by name, then by alias, a writer field once)."""
    by_name = {f.name: f for f in w.fields}
    out: dict[str, FieldNode] = {}
    for rf in r.fields:
        wf = by_name.get(rf.name)
        if wf is None:
            wf = next((by_name[a] for a in rf.aliases if a in by_name), None)
        if wf is not None and wf.name not in out:
            out[wf.name] = rf
    return out


def duplicate_reason(key: bytes, path: str = "") -> str:
    """The reason of a map (at the reader's field ``path``) that holds ``key`` (its encoded
    form) twice."""
    text = key.decode("utf-8", "replace")
    if len(text) > 40:
        text = text[:40] + "..."
    return (
        f"{path or 'the value'}: a map holds a key twice ({text!r}; Spark's maps refuse that, "
        "Java keeps the last)"
    )


def duplicate_key_rows(values: pa.Array) -> dict[int, str]:
    """Rows of the kernel's output whose value holds a map with a key twice, and a why (the
    kernel keeps every entry; the fastavro path's dict cannot); the decoder names the first
    such key in the value's bytes with :func:`check_bounds`, as the fastavro path does."""
    found: dict[int, str] = {}

    def walk(arr: pa.Array, rows: np.ndarray) -> None:
        t = arr.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(arr.field(i), rows)
        elif pa.types.is_map(t) or pa.types.is_list(t):
            offs = np.asarray(arr.offsets)
            owner = np.repeat(np.arange(len(arr)), np.diff(offs))
            child_rows = rows[owner]
            if pa.types.is_map(t):
                keys = arr.keys
                table = pa.table({"m": pa.array(owner, pa.int64()), "k": keys})
                counts = table.group_by(["m", "k"]).aggregate([("m", "count")])
                dup = counts.filter(pc.greater(counts["m_count"], 1))
                for m, k in zip(dup["m"].to_pylist(), dup["k"].to_pylist(), strict=True):
                    found.setdefault(int(rows[m]), duplicate_reason(k.encode()))
                walk(arr.items, child_rows)
            else:
                walk(arr.values, child_rows)

    if _has_map(values.type):
        walk(values, np.arange(len(values)))
    return found


def _has_map(t: pa.DataType) -> bool:
    if pa.types.is_map(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_map(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t):
        return _has_map(t.value_type)
    return False


# ------------------------------------------------------------------------------- conversion


class _Branch:
    """A union value with its writer branch known (defaults carry it)."""

    def __init__(self, index: int, value: Any) -> None:
        self.index = index
        self.value = value


def _signed_be(b: bytes) -> int:
    n = int(b.hex() or "0", 16)
    return n - (1 << (8 * len(b))) if b and b[0] & 0x80 else n


def _as_bytes(v: Any) -> bytes:
    return v.encode("utf-8") if isinstance(v, str) else bytes(v)


def _leaf(node: Node, writer: Node | None = None) -> Callable[[Any], Any]:
    """A raw fastavro value (plain schema) of ``writer`` (default: ``node`` itself) read into a
    non-union, non-container reader schema ``node`` -> the value pa.array takes."""
    k, lg = node.kind, node.logical
    w = node if writer is None else writer
    if k in ("int", "long"):
        scale = time_scale(w, node)
        if isinstance(scale, str):
            return _fail(scale)
        if scale != 1:
            return lambda v: int(v) * scale
        return int
    if k in ("float", "double"):
        return float
    if k in ("string", "enum"):
        return lambda v: v.decode() if isinstance(v, (bytes, bytearray)) else str(v)
    if k in ("bytes", "fixed"):
        if lg == "decimal":
            scale = node.scale - decimal_shift(w, node)  # the writer's
            exact = decimal.Context(prec=100)  # scaleb rounds to its context's precision
            return lambda v: decimal.Decimal(_signed_be(_as_bytes(v))).scaleb(-scale, exact)
        return _as_bytes
    return lambda v: v  # null, boolean


def _fail(why: str) -> Callable[[Any], Any]:
    def fail(v: Any) -> Any:
        raise ValueError(why)

    return fail


def _unnamed(v: Any) -> Any:
    return v[1] if isinstance(v, tuple) else v


def converter(writer: Node, reader: Node) -> Callable[[Any], Any]:
    """A function from fastavro's raw value of the writer schema ``writer`` (read with the
    plain writer schema alone, ``return_named_type=True``) to the value ``pa.array`` takes for
    :func:`~.avro_schema.arrow_type` of ``reader``, resolved by Avro's rules as the kernel
    applies them (see the module docstring). A value the kernel refuses raises."""
    w, r = writer, reader
    if w.kind == "union":
        branches = [(wb, converter(wb, r)) for wb in w.branches]

        def by_branch(v: Any) -> Any:
            if isinstance(v, _Branch):  # a default: its branch is known
                return branches[v.index][1](v.value)
            for wb, conv in branches:
                if _fits(wb, v):
                    return conv(v)
            raise ValueError(f"no writer union branch for a {type(v).__name__} value")

        return by_branch
    if r.kind == "union":
        j = reader_branch(w, r)
        if j is None:
            return _fail(f"a writer {w.name or w.kind} is none of the reader union's branches")
        rb = r.branches[j]
        if rb.kind == "null":
            return lambda v: None
        inner = converter(w, rb)
        shape, nn = union_shape(r), non_null(r)
        if shape == "single":
            return inner
        if shape == "merged":
            cast = float if nn[0].kind in ("float", "double") else int
            return lambda v: cast(inner(v))
        names = [f"member{i}" for i in range(len(nn))]
        m = nn.index(rb)

        def member(v: Any) -> Any:
            out = dict.fromkeys(names)
            out[names[m]] = inner(v)
            return out

        return member
    if not matches(w, r):
        return _fail(f"a writer {w.name or w.kind} does not resolve into the reader's {r.kind}")
    k = w.kind
    if k == "record":
        return _record(w, r)
    if k == "enum":
        table = {}
        for sym in w.symbols:
            if sym in r.symbols:
                table[sym] = sym
            elif r.enum_default in r.symbols:
                table[sym] = r.enum_default

        def enum(v: Any) -> Any:
            sym = _unnamed(v)
            if sym not in table:
                raise ValueError(f"the symbol {sym} is not in the reader's enum (no default)")
            return table[sym]

        return enum
    if k in ("array", "map"):
        assert w.items is not None and r.items is not None
        item = converter(w.items, r.items)
        if k == "array":
            return lambda v: [item(x) for x in v]
        return lambda v: [(key, item(x)) for key, x in v.items()]
    leaf = _leaf(r, w)
    if k in ("int", "long") and r.kind in ("float", "double"):
        return float
    if k == "fixed":
        return lambda v: leaf(_unnamed(v))
    return leaf


def _record(writer: Node, reader: Node) -> Callable[[Any], Any]:
    by_name = {f.name: f for f in writer.fields}
    taken: set[str] = set()
    parts: list[tuple[str, str | None, Any]] = []
    for rf in reader.fields:  # the kernel's pairing: by name, then by alias, a writer field once
        wf = by_name.get(rf.name)
        if wf is None:
            wf = next((by_name[a] for a in rf.aliases if a in by_name), None)
        if wf is None or wf.name in taken:
            parts.append((rf.name, None, _default(rf)))
        else:
            taken.add(wf.name)
            parts.append((rf.name, wf.name, converter(wf.node, rf.node)))

    def record(v: Any) -> Any:
        v = _unnamed(v)
        out = {}
        for name, wname, conv in parts:
            if wname is not None:
                out[name] = conv(v.get(wname))
            elif isinstance(conv, Exception):
                raise conv
            else:
                out[name] = conv
        return out

    return record


def _default(rf: FieldNode) -> Any:
    """A reader-only field's value, as the kernel reads its default (or the error it gives)."""
    if not rf.has_default:
        return ValueError(f"the reader's field {rf.name} has no default and the writer lacks it")
    try:
        blob = encode_default(rf.node, rf.default)
        raw, end = read_raw(rf.node, blob, 0)
        if end != len(blob):
            raise ValueError("trailing bytes")
        return converter(rf.node, rf.node)(raw)
    except Exception as e:  # noqa: BLE001 - the kernel fails every value that needs it
        return ValueError(f"the default {rf.default!r} does not fit the field's type ({e})")


def _fits(b: Node, v: Any) -> bool:
    """Whether fastavro's raw value ``v`` can come from union branch ``b`` (named types come
    as ``(name, value)`` tuples)."""
    k = b.kind
    if isinstance(v, tuple):
        return b.name is not None and (b.name == v[0] or b.short_name == v[0].rsplit(".", 1)[-1])
    if isinstance(v, bool):
        return k == "boolean"
    if isinstance(v, int):
        return k in ("int", "long")
    if isinstance(v, float):
        return k in ("float", "double")
    if isinstance(v, str):
        return k == "string"
    if isinstance(v, (bytes, bytearray)):
        return k == "bytes"
    if isinstance(v, list):
        return k == "array"
    if isinstance(v, dict):
        return k == "map"
    return v is None and k == "null"


def read_raw(node: Node, buf: bytes, p: int) -> tuple[Any, int]:
    """A value of ``node`` in ``buf`` at ``p`` as fastavro's raw form (plain schema, named
    types in unions as ``(name, value)``; a union's value as a :class:`_Branch`), and the
    position after it. For defaults the kernel encoded: no bounds are checked beyond Python's
    own."""

    def long_at(p: int) -> tuple[int, int]:
        shift = result = 0
        while True:
            b = buf[p]
            p += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return (result >> 1) ^ -(result & 1), p
            shift += 7

    k = node.kind
    if k == "null":
        return None, p
    if k == "boolean":
        return buf[p] == 1, p + 1
    if k in ("int", "long"):
        return long_at(p)
    if k in ("float", "double"):
        n = 4 if k == "float" else 8
        arr = np.frombuffer(buf[p : p + n], "<f4" if k == "float" else "<f8")
        return float(arr[0]), p + n
    if k == "fixed":
        return bytes(buf[p : p + node.size]), p + node.size
    if k in ("bytes", "string"):
        n, p = long_at(p)
        raw = bytes(buf[p : p + n])
        return (raw.decode() if k == "string" else raw), p + n
    if k == "enum":
        i, p = long_at(p)
        return node.symbols[i], p
    if k == "record":
        out = {}
        for f in node.fields:
            out[f.name], p = read_raw(f.node, buf, p)
        return out, p
    if k in ("array", "map"):
        assert node.items is not None
        items: Any = [] if k == "array" else {}
        while True:
            n, p = long_at(p)
            if n == 0:
                return items, p
            for _ in range(n):
                if k == "map":
                    key, p = read_raw(Node("string"), buf, p)
                    items[key], p = read_raw(node.items, buf, p)
                else:
                    x, p = read_raw(node.items, buf, p)
                    items.append(x)
    i, p = long_at(p)  # a union
    b = node.branches[i]
    v, p = read_raw(b, buf, p)
    return _Branch(i, (b.name, v) if b.name is not None else v), p
