"""JsonDecoder: values written by confluent-kafka's JSONSerializer (a mock:// registry) and
plain JSON values; expectations come from the serializer's input objects."""

from __future__ import annotations

import json
import pickle

import pyarrow as pa
import pytest

pytest.importorskip("confluent_kafka.schema_registry.json_schema")

from confluent_kafka.schema_registry import (  # noqa: E402
    Schema,
    SchemaReference,
    SchemaRegistryClient,
)
from confluent_kafka.schema_registry.json_schema import JSONSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from payload_registry import FakeRegistry, RegisteredSchema, from_mock  # noqa: E402

from kafkalog_source.errors import KafkaLogError  # noqa: E402
from kafkalog_source.payloads import jsonschema as jsmod  # noqa: E402
from kafkalog_source.payloads.jsonschema import JsonDecoder, infer_json_type  # noqa: E402

ADDRESS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "zip": {"type": ["string", "null"]}},
}

PERSON_V1 = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Person",
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "score": {"type": ["number", "null"]},
        "active": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "home": {"$ref": "address.json"},
        "work": {"$ref": "#/definitions/Place"},
        "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
        "born": {"type": "string", "format": "date-time"},
        "extra": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        "maybe": {"anyOf": [{"type": "null"}, {"type": "integer"}]},
        "free": {},
    },
    "required": ["name"],
    "definitions": {
        "Place": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "floor": {"type": "integer"}},
        }
    },
}

PERSON_V2 = {  # "age" removed, "email" added
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "email": {"type": ["string", "null"]},
    },
}


def _ctx(topic: str = "people") -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


@pytest.fixture(scope="module")
def written():
    client = SchemaRegistryClient.new_client({"url": "mock://json"})
    client.register_schema("address.json", Schema(json.dumps(ADDRESS), "JSON"))
    v1 = Schema(json.dumps(PERSON_V1), "JSON", [SchemaReference("address.json", "address.json", 1)])
    ser1 = JSONSerializer(v1, client)
    ser2 = JSONSerializer(json.dumps(PERSON_V2), client)
    inputs = [
        {
            "name": "Ada",
            "age": 36,
            "score": 9.5,
            "active": True,
            "tags": ["a", "b"],
            "home": {"city": "London", "zip": None},
            "work": {"name": "Lab", "floor": 2},
            "attrs": {"x": 1, "y": 2},
            "born": "1815-12-10T00:00:00+01:00",
            "extra": 7,
            "maybe": 3,
            "free": {"deep": [1, {"x": None}]},
        },
        {"name": "Bob", "age": 40, "tags": [], "extra": "seven", "maybe": None},
    ]
    values = [ser1(inputs[0], _ctx()), ser1(inputs[1], _ctx()), None]
    v2_input = {"name": "Cy", "email": "cy@example.com"}
    values.append(ser2(v2_input, _ctx()))
    return {
        "client": client,
        "registry": from_mock(client),
        "values": values,
        "inputs": inputs,
        "v2": v2_input,
    }


def _reader(reg: FakeRegistry, version: int = 1) -> RegisteredSchema:
    return reg.version("people-value", version)[1]


def test_schema_types(written) -> None:
    dec = JsonDecoder(written["registry"], _reader(written["registry"]))
    t = dec.type
    assert [f.name for f in t] == list(PERSON_V1["properties"])
    assert t.field("age").type == pa.int64() and t.field("score").type == pa.float64()
    assert t.field("tags").type == pa.list_(pa.string())
    assert t.field("home").type == pa.struct([("city", pa.string()), ("zip", pa.string())])
    assert t.field("work").type == pa.struct([("name", pa.string()), ("floor", pa.int64())])
    assert t.field("attrs").type == pa.map_(pa.string(), pa.int64())
    assert t.field("born").type == pa.string()
    assert t.field("extra").type == pa.string() and t.field("free").type == pa.string()
    assert t.field("maybe").type == pa.int64()
    types = pytest.importorskip("pyspark.sql.pandas.types")
    types.from_arrow_type(t)


def test_serializer_values_into_the_reader_type(written) -> None:
    reg = written["registry"]
    dec = JsonDecoder(reg, _reader(reg))
    got = dec.decode(pa.array(written["values"], type=pa.binary()))
    assert got.errors == []
    rows = got.values.to_pylist()
    a, b = written["inputs"]
    r = rows[0]
    assert {k: r[k] for k in ("name", "age", "score", "active", "tags", "home", "work")} == {
        k: a[k] for k in ("name", "age", "score", "active", "tags", "home", "work")
    }
    assert dict(r["attrs"]) == a["attrs"] and r["born"] == a["born"]
    assert json.loads(r["extra"]) == 7 and r["maybe"] == 3
    assert json.loads(r["free"]) == a["free"]
    assert rows[1]["name"] == "Bob" and rows[1]["tags"] == [] and rows[1]["home"] is None
    assert json.loads(rows[1]["extra"]) == "seven" and rows[1]["maybe"] is None
    assert rows[2] is None
    # written with the newer schema: read by property name ("email" not in v1)
    assert rows[3]["name"] == "Cy" and rows[3]["age"] is None
    ids = got.schema_ids.to_pylist()
    assert ids[2] is None and ids[3] != ids[0] == ids[1]
    v2 = JsonDecoder(reg, _reader(reg, 2)).decode(pa.array(written["values"]))
    assert v2.values.to_pylist()[0] == {"name": "Ada", "email": None}  # a field removed
    assert v2.values.to_pylist()[3] == written["v2"]  # a field added


def test_fast_path_and_per_value_path_agree(written, monkeypatch) -> None:
    reg = FakeRegistry()
    simple = {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {
                "type": "object",
                "properties": {"c": {"type": "array", "items": {"type": "number"}}},
            },
        },
    }
    reg.add("s-value", 1, RegisteredSchema(1, "JSON", json.dumps(simple)))
    values = [
        b'{"a": 1, "b": {"c": [1, 2.5]}, "zz": 3}',
        b'{"a":2}',
        b'{\n "a": 3\n}',  # a newline: per value
        b'{"a": 4.0}',  # an integer written as 4.0: per value, fits
        b'{"a": "five"}',  # does not fit
        b'{"a": 6, "b": {"c": ["x"]}}',  # does not fit, nested
        b"null",  # JSON null: a null value, not an error
        b"[1]",
        b'{"a": 9223372036854775808}',
        b'{"a": NaN}',
        b'{"a": "\xff"}',
        b'{"a": 1',
        b"",
        b"\x00\x00\x00\x00\x01" + b'{"a": 12}',
    ]
    dec = JsonDecoder(reg, reg.by_id(1))
    got = dec.decode(pa.array(values, type=pa.binary()))
    monkeypatch.setattr(jsmod, "_one_line_object", lambda p: False)
    slow = dec.decode(pa.array(values, type=pa.binary()))
    assert got.values.equals(slow.values) and got.errors == slow.errors
    rows = got.values.to_pylist()
    assert rows[:4] == [
        {"a": 1, "b": {"c": [1.0, 2.5]}},
        {"a": 2, "b": None},
        {"a": 3, "b": None},
        {"a": 4, "b": None},
    ]
    assert rows[13] == {"a": 12, "b": None}
    reasons = {e.row: e.reason for e in got.errors}
    assert sorted(reasons) == [4, 5, *range(7, 13)] and rows[6] is None
    assert (
        reasons[4] == "does not fit the reader schema (id 1): field a: expected integer, got string"
    )
    assert reasons[5].endswith("field b.c[0]: expected number, got string")
    assert reasons[7].endswith("expected object, got array")
    assert "out of the int64 range" in reasons[8]
    for row in (9, 10, 11, 12):
        assert reasons[row].startswith("does not parse as JSON: "), reasons[row]
    assert all(e.schema_id is None for e in got.errors)
    assert got.schema_ids.to_pylist()[13] == 1


def test_plain_json_with_an_inferred_type() -> None:
    samples = [
        b'{"id": 1, "name": "a", "tags": ["x"], "nested": {"v": 1}, "mixed": 1}',
        b'{"id": 2, "price": 2.5, "nested": {"v": 1.5, "w": true}, "mixed": "s", "nul": null}',
        b"not json",
    ]
    t = infer_json_type(samples)
    assert t == pa.struct(
        [
            ("id", pa.int64()),
            ("name", pa.string()),
            ("tags", pa.list_(pa.string())),
            ("nested", pa.struct([("v", pa.float64()), ("w", pa.bool_())])),
            ("mixed", pa.string()),
            ("price", pa.float64()),
            ("nul", pa.string()),
        ]
    )
    dec = JsonDecoder(None, None, inferred=t)
    got = dec.decode(pa.array(samples + [b'{"id": "x"}', b'{"mixed": [1, 2]}']))
    rows = got.values.to_pylist()
    assert rows[0]["mixed"] == "1" and rows[1]["mixed"] == "s" and rows[1]["price"] == 2.5
    assert rows[4]["mixed"] == "[1,2]"  # a string column takes other kinds as JSON text
    assert [(e.row, e.reason) for e in got.errors] == [
        (2, "does not parse as JSON: Expecting value: line 1 column 1 (char 0)"),
        (3, "does not fit the inferred type: field id: expected integer, got string"),
    ]
    assert got.schema_ids.null_count == 5
    assert infer_json_type([b"1", b"2.5"]) == pa.float64()
    assert infer_json_type([b'"a"', b"1"]) == pa.string()
    assert infer_json_type([]) == pa.string()


def test_as_json_keeps_the_text_as_written(written) -> None:
    reg = written["registry"]
    dec = JsonDecoder(reg, None, as_json=True)
    assert dec.type == pa.string()
    values = written["values"] + [b'{"plain": true}', b"{broken"]
    got = dec.decode(pa.array(values))
    texts = got.values.to_pylist()
    assert json.loads(texts[0]) == written["inputs"][0]
    assert texts[0] == written["values"][0][5:].decode()
    assert texts[2] is None and texts[4] == '{"plain": true}' and texts[5] is None
    assert [e.row for e in got.errors] == [5]


def test_prefix_problems_and_wrong_schema_types(written) -> None:
    reg = FakeRegistry()
    for subject in written["registry"].subjects():
        reg.add(subject, *written["registry"].version(subject, 1))
    reg.add("avro", 1, RegisteredSchema(500, "AVRO", '"string"'))
    dec = JsonDecoder(reg, _reader(reg))
    values = [
        b"\x00\x00\x00",  # starts like a prefix, too short: not plain JSON either
        b"\x00\x00\x00\x01\xf4" + b'{"name": "x"}',  # an AVRO id
        b"\x00\x00\x00\x03\xe7" + b'{"name": "x"}',  # an unknown id
        b'{"name": "plain"}',  # no prefix: plain JSON, schema id null
    ]
    got = dec.decode(pa.array(values))
    assert [(e.row, e.schema_id, e.reason) for e in got.errors] == [
        (0, None, jsmod.NO_PREFIX),
        (1, 500, "schema id 500 is a AVRO schema, not JSON"),
        (2, 999, "schema id 999 is not in the registry"),
    ]
    assert got.values.to_pylist()[3]["name"] == "plain"
    assert got.schema_ids.to_pylist() == [None, 500, 999, None]
    # without a registry, prefixed values are read without checking their id
    free = JsonDecoder(None, None, inferred=pa.struct([("name", pa.string())]))
    assert free.decode(pa.array(values[1:3])).values.to_pylist() == [{"name": "x"}] * 2


def test_reader_problems_raise_and_decoders_pickle(written) -> None:
    reg = FakeRegistry()
    reg.add("a", 1, RegisteredSchema(1, "PROTOBUF", "syntax = 'proto3';"))
    reg.add("b", 1, RegisteredSchema(2, "JSON", "{not json"))
    reg.add("c", 1, RegisteredSchema(3, "JSON", '{"properties": {"x": {"$ref": "#/nope"}}}'))
    for sid, match in ((1, "PROTOBUF schema, not JSON"), (2, "unusable"), (3, "points to nothing")):
        with pytest.raises(KafkaLogError, match=match):
            JsonDecoder(reg, reg.by_id(sid))
    with pytest.raises(KafkaLogError, match="needs a reader schema"):
        JsonDecoder(None, None)
    dec = JsonDecoder(written["registry"], _reader(written["registry"]))
    again = pickle.loads(pickle.dumps(dec))
    assert again.type == dec.type
    assert again.decode(pa.array(written["values"])).values.equals(
        dec.decode(pa.array(written["values"])).values
    )


def test_recursive_ref_is_a_json_string() -> None:
    tree = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "kids": {"type": "array", "items": {"$ref": "#"}},
        },
    }
    reg = FakeRegistry()
    reg.add("t", 1, RegisteredSchema(1, "JSON", json.dumps(tree)))
    dec = JsonDecoder(reg, reg.by_id(1))
    assert dec.type.field("kids").type == pa.list_(pa.string())
    got = dec.decode(pa.array([b'{"name": "r", "kids": [{"name": "k", "kids": []}]}']))
    assert json.loads(got.values.to_pylist()[0]["kids"][0]) == {"name": "k", "kids": []}


def test_ecma_patterns_python_cannot_compile_are_not_refused(caplog) -> None:
    """A registered schema whose ``pattern`` is valid ECMA-262 but not Python ``re`` syntax
    (``\\p{L}``, a named group and its backreference, ``\\cA``) decodes its values, with a
    warning that the pattern is unchecked (review 1, item 5); an invalid schema is still
    refused."""
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "name": {"type": "string", "pattern": "^\\p{L}+$"},
            "code": {"type": "string", "pattern": "^(?<c>[A-Z])\\k<c>\\d+$"},
            "ctl": {"type": ["string", "null"], "pattern": "\\cA"},
            "after": {"type": "string", "pattern": "(?<=a)b"},
        },
        "patternProperties": {"^\\p{Lu}": {"type": "integer"}},
    }
    reg = FakeRegistry()
    reg.add("people-value", 1, RegisteredSchema(1, "JSON", json.dumps(schema)))
    dec = JsonDecoder(reg, reg.by_id(1))
    value = {"name": "Zoë", "code": "AA12", "ctl": None, "after": "ab"}
    with caplog.at_level("WARNING", logger="kafkalog"):
        got = dec.decode(pa.array([b"\x00\x00\x00\x00\x01" + json.dumps(value).encode()]))
    assert got.errors == []
    assert got.values.to_pylist() == [value]
    assert "\\\\p{L}" in caplog.text and "not checked" in caplog.text
    reg.add("bad-value", 1, RegisteredSchema(2, "JSON", json.dumps({"type": "strin"})))
    with pytest.raises(KafkaLogError, match="not a valid JSON Schema"):
        JsonDecoder(reg, reg.by_id(2))
