"""ProtobufDecoder: values written by confluent-kafka's ProtobufSerializer (a mock:// registry),
decoded with the .proto text a registry stores; expectations come from the serializer's input
messages."""

from __future__ import annotations

import datetime as dt
import importlib
import json
import pickle
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

pytest.importorskip("google.protobuf")
pytest.importorskip("grpc_tools")
pytest.importorskip("confluent_kafka.schema_registry.protobuf")

from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402
from payload_registry import FakeRegistry, RegisteredSchema, from_mock  # noqa: E402

from kafkalog_source.errors import KafkaLogError, OptionError  # noqa: E402
from kafkalog_source.payloads import protobuf as pbmod  # noqa: E402
from kafkalog_source.payloads.protobuf import ProtobufDecoder, read_message_indexes  # noqa: E402

COMMON = """syntax = "proto3";
package kltest.common;

message Money {
  string currency = 1;
  int64 units = 2;
  int32 nanos = 3;
}
"""

ORDER = """syntax = "proto3";
package kltest;

import "kltest/common.proto";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

enum Status {
  STATUS_UNKNOWN = 0;
  PAID = 1;
  SHIPPED = 2;
}

message Order {
  message Line {
    message Note { string text = 1; }
    string sku = 1;
    int32 n = 2;
    Note note = 3;
  }
  string id = 1;
  int32 qty = 2;
  uint64 big = 3;
  sint64 delta = 4;
  double price = 5;
  float ratio = 6;
  bool paid = 7;
  bytes blob = 8;
  Status status = 9;
  kltest.common.Money total = 10;
  repeated Line lines = 11;
  map<string, int64> attrs = 12;
  map<int32, Line> by_pos = 13;
  oneof pay {
    string card = 14;
    int64 account = 15;
  }
  google.protobuf.Timestamp at = 16;
  google.protobuf.Int64Value maybe = 17;
  optional string note = 18;
  repeated int32 codes = 19;
  Node tree = 20;
  uint32 u32 = 21;
  fixed64 f64 = 22;
}

message Node {
  string name = 1;
  repeated Node kids = 2;
}
"""

TEXTS = {"kltest/common.proto": COMMON, "kltest/order.proto": ORDER}


@pytest.fixture(scope="module")
def pb2(tmp_path_factory):
    """The generated _pb2 modules of ORDER and COMMON (grpc_tools.protoc --python_out)."""
    d = tmp_path_factory.mktemp("pb2")
    for name, text in TEXTS.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(text)
    import grpc_tools

    include = str(Path(grpc_tools.__file__).parent / "_proto")
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{d}", f"-I{include}", f"--python_out={d}"]
        + list(TEXTS),
        cwd=d,
        check=True,
    )
    (d / "kltest" / "__init__.py").write_text("")
    sys.path.insert(0, str(d))
    try:
        yield importlib.import_module("kltest.order_pb2")
    finally:
        sys.path.remove(str(d))


def _ctx(topic: str = "orders") -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def _source_text(subject: str, stored: str) -> str:
    """What a real registry stores for a subject: the .proto text."""
    return TEXTS.get(subject) or ORDER


@pytest.fixture(scope="module")
def written(pb2):
    """Values of three message types of one file, the registry as .proto text, the inputs."""
    client = SchemaRegistryClient.new_client({"url": "mock://x"})
    ser = ProtobufSerializer(pb2.Order, client, {"use.deprecated.format": False})
    line_ser = ProtobufSerializer(pb2.Order.Line, client)
    node_ser = ProtobufSerializer(pb2.Node, client)
    ts = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.timezone.utc)
    o1 = pb2.Order(
        id="o-1",
        qty=3,
        big=2**64 - 1,
        delta=-5,
        price=9.5,
        ratio=0.25,
        paid=True,
        blob=b"\x00\x01",
        status=pb2.PAID,
        lines=[
            pb2.Order.Line(sku="a", n=1, note=pb2.Order.Line.Note(text="hi")),
            pb2.Order.Line(sku="b", n=2),
        ],
        attrs={"x": 1, "y": -2},
        card="4111",
        note="fragile",
        codes=[1, 2, 3],
        tree=pb2.Node(name="root", kids=[pb2.Node(name="leaf")]),
        u32=2**32 - 1,
        f64=7,
    )
    o1.total.currency = "EUR"
    o1.total.units = 12
    o1.by_pos[4].sku = "z"
    o1.at.FromDatetime(ts)
    o1.maybe.value = 42
    o2 = pb2.Order(id="o-2", account=77)  # defaults elsewhere, the other oneof member
    o3 = pb2.Order(id="o-3", status=9)  # an enum number the enum does not name
    values = [ser(o1, _ctx()), ser(o2, _ctx()), None, ser(o3, _ctx())]
    line = pb2.Order.Line(sku="q", n=5, note=pb2.Order.Line.Note(text="nested"))
    node = pb2.Node(name="n", kids=[pb2.Node(name="k")])
    line_value = line_ser(line, SerializationContext("lines", MessageField.VALUE))
    node_value = node_ser(node, SerializationContext("nodes", MessageField.VALUE))
    return {
        "client": client,
        "values": values,
        "inputs": [o1, o2, None, o3],
        "line": (line_value, line),
        "node": (node_value, node),
        "ts": ts,
        "registry": from_mock(client, _source_text),
        "registry_b64": from_mock(client),
    }


def _reader(reg: FakeRegistry, subject: str) -> RegisteredSchema:
    return reg.version(subject)[1]


def test_message_indexes_as_the_serializer_writes_them(written) -> None:
    assert written["values"][0][5] == 0  # [0]: a single 0 byte
    assert read_message_indexes(written["values"][0], 5) == ([0], 6)
    line_value = written["line"][0]
    assert read_message_indexes(line_value, 5) == ([0, 0], 8)
    assert read_message_indexes(written["node"][0], 5) == ([1], 7)
    with pytest.raises(ValueError):
        read_message_indexes(b"\x00\x00\x00\x00\x01\x04", 5)  # count 2, no indexes


@pytest.mark.parametrize("stored", ["registry", "registry_b64"])
def test_typed_struct_from_serializer_values(written, stored) -> None:
    reg = written[stored]
    dec = ProtobufDecoder(reg, _reader(reg, "orders-value"))
    got = dec.decode(pa.array(written["values"], type=pa.binary()))
    assert got.errors == []
    assert got.values.type == dec.type
    rows = got.values.to_pylist()
    o1 = written["inputs"][0]
    r = rows[0]
    assert r["id"] == o1.id and r["qty"] == 3
    assert r["big"] == Decimal(2**64 - 1) and r["u32"] == 2**32 - 1 and r["f64"] == 7
    assert r["delta"] == -5 and r["price"] == 9.5 and r["ratio"] == 0.25
    assert r["paid"] is True and r["blob"] == b"\x00\x01"
    assert r["status"] == "PAID"
    assert r["total"] == {"currency": "EUR", "units": 12, "nanos": 0}
    assert r["lines"] == [
        {"sku": "a", "n": 1, "note": {"text": "hi"}},
        {"sku": "b", "n": 2, "note": None},
    ]
    assert dict(r["attrs"]) == {"x": 1, "y": -2}
    assert dict(r["by_pos"]) == {"4": {"sku": "z", "n": 0, "note": None}}
    assert r["card"] == "4111" and r["account"] is None
    assert r["at"] == written["ts"]
    assert r["maybe"] == 42 and r["note"] == "fragile" and r["codes"] == [1, 2, 3]
    assert json.loads(r["tree"]["kids"][0]) == {"name": "leaf", "kids": []}
    # proto3 defaults without presence; fields with presence null when unset
    r2 = rows[1]
    assert r2["qty"] == 0 and r2["id"] == "o-2" and r2["status"] == "STATUS_UNKNOWN"
    assert r2["card"] is None and r2["account"] == 77
    assert r2["total"] is None and r2["at"] is None and r2["maybe"] is None
    assert r2["note"] is None and r2["lines"] == [] and r2["attrs"] == []
    assert rows[2] is None
    assert rows[3]["status"] == "9"
    assert got.schema_ids.to_pylist() == [written["values"][0][4]] * 2 + [None] + [
        written["values"][0][4]
    ]


def test_arrow_types(written) -> None:
    reg = written["registry"]
    t = ProtobufDecoder(reg, _reader(reg, "orders-value")).type
    assert t.field("big").type == pa.decimal128(20, 0)
    assert t.field("u32").type == pa.int64() and t.field("qty").type == pa.int32()
    assert t.field("delta").type == pa.int64() and t.field("ratio").type == pa.float32()
    assert t.field("blob").type == pa.binary() and t.field("status").type == pa.string()
    assert t.field("attrs").type == pa.map_(pa.string(), pa.int64())
    assert pa.types.is_map(t.field("by_pos").type)
    assert t.field("at").type == pa.timestamp("us", tz="UTC")
    assert t.field("maybe").type == pa.int64()
    assert t.field("tree").type == pa.struct(
        [pa.field("name", pa.string()), pa.field("kids", pa.list_(pa.string()))]
    )


def test_message_index_paths_other_than_zero(written) -> None:
    reg = written["registry"]
    value, line = written["line"]
    dec = ProtobufDecoder(reg, _reader(reg, "lines-value"), message_name="Order.Line")
    got = dec.decode(pa.array([value]))
    assert got.errors == []
    assert got.values.to_pylist() == [{"sku": "q", "n": 5, "note": {"text": "nested"}}]
    full = ProtobufDecoder(reg, _reader(reg, "lines-value"), message_name="kltest.Order.Line")
    assert full.type == dec.type
    node_value, _ = written["node"]
    nodes = ProtobufDecoder(reg, _reader(reg, "nodes-value"), message_name="Node")
    assert nodes.decode(pa.array([node_value])).values.to_pylist()[0]["name"] == "n"
    # the default reader message is the file's first: Order, not what was written
    order = ProtobufDecoder(reg, _reader(reg, "orders-value"))
    got = order.decode(pa.array([value, node_value]))
    assert got.values.to_pylist() == [None, None]
    assert [e.row for e in got.errors] == [0, 1]
    assert "wrote message kltest.Order.Line, not the reader's kltest.Order" in got.errors[0].reason
    assert "kltest.Node" in got.errors[1].reason
    with pytest.raises(OptionError):
        ProtobufDecoder(reg, _reader(reg, "orders-value"), message_name="Nope")


def test_references_registered_as_their_own_subject(written) -> None:
    reg = written["registry"]
    main = _reader(reg, "orders-value")
    assert [r.name for r in main.references] == ["kltest/common.proto"]
    assert "kltest/common.proto" in reg.subjects()
    assert set(reg.referenced(main)) == {"kltest/common.proto"}


def test_as_json_is_protojson_with_proto_field_names(written) -> None:
    reg = written["registry"]
    dec = ProtobufDecoder(reg, None, as_json=True)
    assert dec.type == pa.string()
    values = written["values"] + [written["line"][0]]
    got = dec.decode(pa.array(values))
    assert got.errors == []
    docs = [None if s is None else json.loads(s) for s in got.values.to_pylist()]
    d = docs[0]
    assert d["id"] == "o-1" and d["big"] == str(2**64 - 1) and d["delta"] == -5
    assert (
        d["blob"] == "AAE=" and d["status"] == "PAID" and d["by_pos"] == {"4": {"sku": "z", "n": 0}}
    )
    assert d["at"] == "2024-05-06T07:08:09.123456Z" and d["maybe"] == 42
    assert d["total"]["currency"] == "EUR"
    assert docs[1]["qty"] == 0 and "card" not in docs[1]  # fields without presence printed
    assert docs[2] is None
    assert docs[4] == {"sku": "q", "n": 5, "note": {"text": "nested"}}  # its own writer message


def _classes(text: str, name: str = "evo/item.proto"):
    """Message classes of ``text`` in a pool of their own (two versions share full names)."""
    import tempfile

    import grpc_tools

    include = str(Path(grpc_tools.__file__).parent / "_proto")
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / name).parent.mkdir(parents=True, exist_ok=True)
        (Path(d) / name).write_text(text)
        out = Path(d) / "set.pb"
        subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", f"-I{d}", f"-I{include}"]
            + ["--include_imports", f"--descriptor_set_out={out}", name],
            check=True,
            cwd=d,
        )
        fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    file = pool.FindFileByName(name)
    return {n: message_factory.GetMessageClass(d) for n, d in file.message_types_by_name.items()}


V1 = """syntax = "proto3";
package evo;
message Item { string name = 1; int32 qty = 2; string gone = 3; }
"""
V2 = """syntax = "proto3";
package evo;
message Item { string name = 1; int32 qty = 2; reserved 3; string added = 4; }
"""
V3 = """syntax = "proto3";
package evo;
message Item { string name = 1; string qty = 2; }
"""


@pytest.fixture(scope="module")
def evolved():
    client = SchemaRegistryClient.new_client({"url": "mock://evo"})
    vals = []
    texts = {}
    for v, text in enumerate([V1, V2, V3], 1):
        cls = _classes(text)["Item"]
        kw = {"name": f"v{v}", "qty": v} if v < 3 else {"name": "v3", "qty": "three"}
        if v == 1:
            kw["gone"] = "bye"
        if v == 2:
            kw["added"] = "new"
        vals.append(ProtobufSerializer(cls, client)(cls(**kw), _ctx("items")))
        texts[v] = text
    reg = from_mock(client, lambda subject, stored: None)
    fixed = FakeRegistry()
    for subject in reg.subjects():
        for v in (1, 2, 3):
            try:
                _, s = reg.version(subject, v)
            except KeyError:
                continue
            fixed.add(subject, v, RegisteredSchema(s.id, s.schema_type, texts[v], s.references))
    return fixed, vals


def test_evolution_resolves_by_field_number(evolved) -> None:
    reg, (v1, v2, v3) = evolved
    newer = ProtobufDecoder(reg, reg.version("items-value", 2)[1])
    got = newer.decode(pa.array([v1, v2]))
    assert got.errors == []
    assert got.values.to_pylist() == [
        {"name": "v1", "qty": 1, "added": ""},  # a field added: its default
        {"name": "v2", "qty": 2, "added": "new"},
    ]
    older = ProtobufDecoder(reg, reg.version("items-value", 1)[1])
    assert older.decode(pa.array([v2])).values.to_pylist() == [
        {"name": "v2", "qty": 2, "gone": ""}  # a field removed: its default
    ]
    bad = newer.decode(pa.array([v3, v1]))
    assert [e.row for e in bad.errors] == [0]
    assert "field qty (number 2) is string in the writer, int32 in the reader" in (
        bad.errors[0].reason
    )
    assert bad.values.to_pylist()[1]["name"] == "v1"
    assert json.loads(
        ProtobufDecoder(reg, None, as_json=True).decode(pa.array([v3])).values[0].as_py()
    ) == {"name": "v3", "qty": "three"}


def test_bad_values_are_errors_not_exceptions(written) -> None:
    reg = FakeRegistry()
    for s in written["registry"].subjects():
        v, schema = written["registry"].version(s)
        reg.add(s, v, schema)
    reg.add("avro-value", 1, RegisteredSchema(900, "AVRO", '"string"'))
    good = written["values"][0]
    sid = good[1:5]
    values = [
        b"plain text",  # no prefix
        b"\x00\x00\x00",  # too short for a prefix
        b"\x00\x00\x00\x03\xe7\x00\x0a\x01x",  # unknown id 999
        b"\x00" + (900).to_bytes(4, "big") + b"\x00\x02hi",  # an AVRO schema
        good[:-3],  # truncated
        b"\x00" + sid + b"\x00\x0a\xff\xff",  # a length beyond the end
        b"\x00" + sid + b"\x7f",  # message index count -64
        b"\x00" + sid + b"\x02\x0a",  # index 5 of 2 top-level messages
        good,
    ]
    dec = ProtobufDecoder(reg, _reader(reg, "orders-value"))
    got = dec.decode(pa.array(values, type=pa.binary()))
    reasons = {e.row: e.reason for e in got.errors}
    ids = {e.row: e.schema_id for e in got.errors}
    assert sorted(reasons) == list(range(8))
    assert reasons[0] == pbmod.NO_PREFIX and ids[0] is None
    assert reasons[1] == pbmod.NO_PREFIX
    assert reasons[2] == "schema id 999 is not in the registry" and ids[2] == 999
    assert reasons[3] == "schema id 900 is a AVRO schema, not PROTOBUF"
    for row in (4, 5, 6, 7):
        assert reasons[row].startswith("does not parse as Protobuf with schema id"), reasons[row]
    assert "message index 5 out of range" in reasons[7]
    assert got.values.to_pylist()[:8] == [None] * 8
    assert got.values.to_pylist()[8]["id"] == "o-1"
    assert got.schema_ids.to_pylist()[:3] == [None, None, 999]


def test_reader_schema_problems_raise_at_planning(written) -> None:
    reg = FakeRegistry()
    reg.add("a", 1, RegisteredSchema(1, "AVRO", '"string"'))
    reg.add("b", 1, RegisteredSchema(2, "PROTOBUF", "syntax = 'proto3'; message {"))
    with pytest.raises(KafkaLogError, match="AVRO schema, not PROTOBUF"):
        ProtobufDecoder(reg, reg.by_id(1))
    with pytest.raises(KafkaLogError, match="does not compile"):
        ProtobufDecoder(reg, reg.by_id(2))
    with pytest.raises(KafkaLogError, match="needs a reader schema"):
        ProtobufDecoder(reg, None)


def test_pickles_and_compiles_once_per_process(written, monkeypatch) -> None:
    reg = written["registry"]
    dec = ProtobufDecoder(reg, _reader(reg, "orders-value"))
    calls = []
    real = pbmod._protoc
    monkeypatch.setattr(pbmod, "_protoc", lambda *a: calls.append(a) or real(*a))
    again = pickle.loads(pickle.dumps(dec))
    assert calls == []  # cached by id and text
    assert again.type == dec.type
    got = again.decode(pa.chunked_array([pa.array(written["values"])]))
    assert got.values.to_pylist()[0]["id"] == "o-1"


def test_types_are_spark_compatible(written) -> None:
    types = pytest.importorskip("pyspark.sql.pandas.types")
    reg = written["registry"]
    for subject, name in (("orders-value", None), ("lines-value", "Order.Line")):
        types.from_arrow_type(ProtobufDecoder(reg, _reader(reg, subject), message_name=name).type)
