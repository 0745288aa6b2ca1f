"""valueFormat/keyFormat end to end: the Arrow API, Spark, the CLI and DuckDB, modes and stats.

The per-format decoders have their own tests (test_payload_avro.py, test_payload_protobuf.py,
test_payload_json.py); here the values are written into real segments and read as a user does.
Plain JSON values are written by the test (JSON text needs no serializer); the registry-framed
samples under ``sample_segments/payloads/`` were written by confluent-kafka's serializers (see
test_payload_samples.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import kp_v2_batch, run_cli

import kafkalog_source as kl
from kafkalog_source.errors import OptionError, UndecodablePayloadError

TS = 1_700_000_000_000


def _plain_json_partition(root: Path, topic: str = "events") -> Path:
    """``topic``-0 with ten JSON objects, one value that does not parse and one tombstone."""
    d = root / f"{topic}-0"
    d.mkdir(parents=True)
    recs = [
        (
            TS + i,
            f"k{i}".encode(),
            json.dumps(
                {"id": i, "name": f"n{i}", "tags": ["a"] * (i % 3), "price": i * 1.5}
            ).encode(),
            [],
        )
        for i in range(10)
    ]
    recs.append((TS + 10, b"k10", b'{"id": "oops"', []))
    recs.append((TS + 11, b"k11", None, []))
    (d / "00000000000000000000.log").write_bytes(kp_v2_batch(recs))
    return d


EXPECTED = [
    {"id": i, "name": f"n{i}", "tags": ["a"] * (i % 3), "price": i * 1.5} for i in range(10)
]


def test_plain_json_values_become_a_typed_struct(tmp_path: Path) -> None:
    """No registry: the struct's type is inferred from the values; every value that parses is
    its JSON object; the tombstone is null without an error; PERMISSIVE keeps the bad value's
    row with its bytes and the reason, and counts it."""
    d = _plain_json_partition(tmp_path)
    st = kl.ReadStats()
    t = kl.read_table(d, stats=st, valueFormat="json", mode="PERMISSIVE")
    assert t.schema.names[-3:] == ["value_schema_id", "value_decoded", "value_error"]
    assert t.schema.field("value_decoded").type == pa.struct(
        [
            ("id", pa.int64()),
            ("name", pa.string()),
            ("tags", pa.list_(pa.string())),
            ("price", pa.float64()),
        ]
    )
    rows = t.to_pylist()
    assert [r["value_decoded"] for r in rows[:10]] == EXPECTED
    assert all(r["value_schema_id"] is None and r["value_error"] is None for r in rows[:10])
    assert rows[10]["value_decoded"] is None and rows[10]["value"] == b'{"id": "oops"'
    assert "does not parse as JSON" in rows[10]["value_error"]
    assert rows[11]["value"] is None and rows[11]["value_decoded"] is None
    assert rows[11]["value_error"] is None
    assert st.undecodable_payloads == 1
    [event] = st.events_of("undecodable payload")
    assert event.path.endswith("00000000000000000000.log") and "offset 10" in event.reason


def test_modes_for_a_value_that_does_not_decode(tmp_path: Path) -> None:
    """FAILFAST names the file, the batch's byte, the offset and the schema id; DROPMALFORMED
    drops the row and counts it."""
    d = _plain_json_partition(tmp_path)
    with pytest.raises(UndecodablePayloadError) as e:
        kl.read_table(d, valueFormat="json")
    assert e.value.offset == 10 and e.value.schema_id is None and e.value.position == 0
    assert str(e.value).startswith(str(d / "00000000000000000000.log") + ": byte 0: ")
    assert "the value at offset 10" in str(e.value) and "(schema id none)" in str(e.value)
    st = kl.ReadStats()
    t = kl.read_table(d, stats=st, valueFormat="json", mode="DROPMALFORMED")
    assert t.column("offset").to_pylist() == [*range(10), 11]
    assert st.undecodable_payloads == 1 and "did not decode" in st.summary()


def test_columns_choose_among_raw_and_decoded(tmp_path: Path) -> None:
    """``columns`` may name only decoded columns; the raw ones the step needs are read anyway
    and not returned. payloadAs=json gives each value's JSON text."""
    d = _plain_json_partition(tmp_path)
    t = kl.read_table(d, valueFormat="json", mode="DROPMALFORMED", columns=["value_decoded"])
    assert t.schema.names == ["value_decoded"]
    assert t.column(0).to_pylist()[:10] == EXPECTED
    t = kl.read_table(
        d, valueFormat="json", payloadAs="json", mode="DROPMALFORMED", columns=["value_decoded"]
    )
    assert t.schema.field(0).type == pa.string()
    assert [json.loads(v) for v in t.column(0).to_pylist()[:10]] == EXPECTED
    with pytest.raises(OptionError, match="unknown column.*value_decoded"):
        kl.read_table(d, valueFormat="json", columns=["key_decoded"])
    reader = kl.open_reader(d, valueFormat="json", mode="PERMISSIVE", columns=["value_error"])
    assert reader.read_all().column(0).null_count == 11


def test_payload_options_are_refused_where_they_do_not_apply(tmp_path: Path) -> None:
    """decode= with valueFormat, and streams, refuse by name; avro without any schemas says
    where it looked and what to give."""
    from kafkalog_source.streaming.source import StreamSource

    d = _plain_json_partition(tmp_path)
    with pytest.raises(OptionError, match="'decode' and 'valueFormat'"):
        kl.read_table(d, valueFormat="json", decode="auto")
    with pytest.raises(OptionError, match="needs the schemas.*schemaRegistry"):
        kl.read_table(d, valueFormat="avro")
    with pytest.raises(OptionError, match="'valueFormat' is for batch reads only"):
        StreamSource(kl.parse_options({"path": str(d), "valueFormat": "json"})).latest()


def test_registry_secrets_never_show(tmp_path: Path) -> None:
    """A registry URL's password and schemaRegistry.* credentials are masked in ReadOptions'
    repr."""
    opts = kl.parse_options(
        {
            "path": str(tmp_path),
            "valueFormat": "avro",
            "schemaRegistry": "https://user:hunter2@registry.example:8081",
            "schemaRegistry.basic.auth.user.info": "user:s3cret",
            "schemaRegistry.timeout.ms": "5000",
        }
    )
    shown = repr(opts)
    assert "hunter2" not in shown and "s3cret" not in shown
    assert "('timeout.ms', '5000')" in shown


@pytest.mark.spark
def test_spark_reads_plain_json_as_a_struct(spark, tmp_path: Path) -> None:
    """Spark's schema has the decoded struct; its fields are SQL columns; a user schema may
    pick the decoded columns alone."""
    d = _plain_json_partition(tmp_path)
    df = (
        spark.read.format("kafkalog")
        .option("valueFormat", "json")
        .option("mode", "DROPMALFORMED")
        .load(str(d))
    )
    assert df.schema["value_decoded"].dataType.simpleString() == (
        "struct<id:bigint,name:string,tags:array<string>,price:double>"
    )
    got = df.orderBy("offset").select("value_decoded.name", "value_decoded.price").collect()
    assert [(r["name"], r["price"]) for r in got][:10] == [
        (e["name"], e["price"]) for e in EXPECTED
    ]
    assert got[10]["name"] is None  # the tombstone
    narrow = (
        spark.read.format("kafkalog")
        .schema("value_decoded struct<id:bigint,name:string,tags:array<string>,price:double>")
        .option("valueFormat", "json")
        .option("mode", "DROPMALFORMED")
        .load(str(d))
    )
    assert narrow.where("value_decoded.id >= 5").count() == 5
    # names match case-insensitively (the user's spelling kept); a wrong type fails planning
    mixed = (
        spark.read.format("kafkalog")
        .schema(
            "OFFSET bigint, Value_Decoded struct<id:bigint,name:string,tags:array<string>,price:double>"
        )
        .option("valueFormat", "json")
        .option("mode", "DROPMALFORMED")
        .load(str(d))
    )
    assert mixed.columns == ["OFFSET", "Value_Decoded"]
    assert mixed.where("Value_Decoded.id >= 5").count() == 5
    with pytest.raises(Exception, match="has type string, expected struct"):
        spark.read.format("kafkalog").schema("value_decoded string").option(
            "valueFormat", "json"
        ).load(str(d)).collect()


def test_cli_query_sees_decoded_fields(tmp_path: Path) -> None:
    """kafkalog query (DuckDB): -o valueFormat=json makes the struct's fields SQL columns."""
    d = _plain_json_partition(tmp_path)
    out = run_cli(
        "query",
        str(d),
        "-o",
        "valueFormat=json",
        "-o",
        "mode=DROPMALFORMED",
        "select sum(value_decoded.price) s, max(value_decoded.name) m from kafkalog",
    )
    assert out.returncode == 0, out.stderr
    assert "67.5" in out.stdout and "n9" in out.stdout


# -- the committed samples, written by confluent-kafka's serializers (test_payload_samples.py) ---

SAMPLES = Path(__file__).resolve().parent.parent / "sample_segments" / "payloads"


def _manifest(topic: str) -> list[dict]:
    return json.loads((SAMPLES / "MANIFEST.json").read_text())["topics"][topic]["rows"]


def _proto_json(value: object) -> object:
    """Our decoded struct in the proto3 JSON mapping the manifest uses (64-bit integers as
    strings, bytes as base64, timestamps as RFC 3339, maps as objects), unset fields dropped."""
    import base64
    import datetime
    import decimal

    if isinstance(value, dict):
        return {k: _proto_json(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        if value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
            return {k: _proto_json(v) for k, v in value}
        return [_proto_json(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, datetime.datetime):
        return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def _same(got: object, want: object) -> bool:
    """``got`` (our struct in the JSON mapping) equals ``want`` (the serializer's input as
    json_format prints it): 64-bit integers printed as strings, defaults printed where ours
    are unset."""
    if isinstance(want, dict):
        if not isinstance(got, dict):  # an empty map comes back as [] from _proto_json
            return got in (None, []) and not any(want.values())
        keys = want.keys() | got.keys()
        return all(_same(got.get(k), want.get(k)) for k in keys)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(_same, got, want))
    if isinstance(want, str) and isinstance(got, int) and not isinstance(got, bool):
        return str(got) == want
    if want is None:
        return got in (None, {}, [])
    if got is None:
        return want in ("", 0, False, "0") or want == 0.0
    return got == want


def _no_nulls(value: object) -> object:
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value]
    return value


def test_protobuf_samples_decode_to_what_the_serializer_was_given() -> None:
    """orders-proto-0 (ProtobufSerializer, a referenced money.proto, three message types): the
    default reader message (the file's first, Order) types the struct and its values equal the
    serializer's input; valueMessage picks another; payloadAs=json decodes every type."""
    rows = _manifest("orders-proto-0")
    st = kl.ReadStats()
    t = kl.read_table(
        SAMPLES / "orders-proto-0", stats=st, valueFormat="protobuf", mode="PERMISSIVE"
    )
    got = {r["offset"]: r for r in t.to_pylist()}
    orders = [r for r in rows if r["value"] is not None and r["messageType"] == "shop.orders.Order"]
    assert orders
    for r in orders:
        row = got[r["offset"]]
        assert row["value_schema_id"] == r["valueSchemaId"] and row["value_error"] is None
        assert _same(_proto_json(row["value_decoded"]), r["value"]), r["offset"]
    others = [r for r in rows if r["value"] is not None and r["messageType"] != "shop.orders.Order"]
    assert others and st.undecodable_payloads == len(others)
    assert all(
        "not the reader's shop.orders.Order" in got[r["offset"]]["value_error"] for r in others
    )
    t = kl.read_table(
        SAMPLES / "orders-proto-0",
        valueFormat="protobuf",
        payloadAs="json",
        columns=["offset", "value_decoded", "value_error"],
    )
    assert t.column("value_error").null_count == t.num_rows
    decoded = dict(
        zip(t.column("offset").to_pylist(), t.column("value_decoded").to_pylist(), strict=True)
    )
    for r in rows:
        if r["value"] is None:
            assert decoded[r["offset"]] is None
        else:
            assert json.loads(decoded[r["offset"]]).keys() <= r["value"].keys() | {
                "labels",
                "items",
            }


def test_json_schema_and_plain_json_samples() -> None:
    """orders-json-0 (JSONSerializer): typed from the subject's JSON Schema, ids 7; plain JSON
    events: typed from the values; both equal the serializer's input (nulls aside)."""
    for topic, sid in (("orders-json-0", 7), ("events-plainjson-0", None)):
        rows = _manifest(topic)
        t = kl.read_table(SAMPLES / topic, valueFormat="json")
        got = {r["offset"]: r for r in t.to_pylist()}
        assert len(got) == len(rows)
        for r in rows:
            row = got[r["offset"]]
            if r["value"] is None:
                assert row["value_decoded"] is None and row["value_schema_id"] is None
                continue
            assert row["value_schema_id"] == sid
            assert _no_nulls(row["value_decoded"]) == _no_nulls(r["value"])


def _avro_json(value: object, typ: pa.DataType) -> object:
    """Our decoded Avro value of Arrow type ``typ`` in the manifest's conventions (bytes as
    base64, decimals as strings, dates and timestamps as ISO text, maps as objects, a union's
    struct as its one non-null member)."""
    import base64

    if value is None:
        return None
    if pa.types.is_struct(typ):
        fields = {typ.field(i).name: typ.field(i).type for i in range(typ.num_fields)}
        if all(k.startswith("member") for k in fields):
            present = [(v, fields[k]) for k, v in value.items() if v is not None]
            return _avro_json(*present[0]) if present else None
        return {k: _avro_json(v, fields[k]) for k, v in value.items()}
    if pa.types.is_map(typ):
        return {k: _avro_json(v, typ.item_type) for k, v in value}
    if pa.types.is_list(typ):
        return [_avro_json(v, typ.value_type) for v in value]
    if pa.types.is_binary(typ):
        return base64.b64encode(value).decode()
    if pa.types.is_timestamp(typ):
        return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if pa.types.is_date(typ) or pa.types.is_decimal(typ):
        return value.isoformat() if pa.types.is_date(typ) else str(value)
    return value


def test_avro_samples_resolve_every_version_into_the_latest() -> None:
    """orders-avro-0: three schema versions (a field added with a default, a field removed)
    across three segments, Avro keys. Each value keeps its writer's id and is resolved into the
    subject's latest version exactly as confluent-kafka's AvroDeserializer (use.latest.version)
    resolves it; keys decode with their own subject; tombstones are null."""
    rows = _manifest("orders-avro-0")
    st = kl.ReadStats()
    t = kl.read_table(SAMPLES / "orders-avro-0", stats=st, valueFormat="avro", keyFormat="avro")
    got = {r["offset"]: r for r in t.to_pylist()}
    assert sorted(got) == [r["offset"] for r in rows] and not st.skipped
    key_type = t.schema.field("key_decoded").type
    value_type = t.schema.field("value_decoded").type
    assert {r["valueSchemaId"] for r in rows if r["value"] is not None} == {2, 3, 4}
    for r in rows:
        row = got[r["offset"]]
        assert row["key_schema_id"] == r["keySchemaId"]
        assert _avro_json(row["key_decoded"], key_type) == r["key"]
        if r["value"] is None:
            assert row["value_decoded"] is None and row["value_schema_id"] is None
            continue
        assert row["value_schema_id"] == r["valueSchemaId"]
        assert _avro_json(row["value_decoded"], value_type) == r["valueLatest"], r["offset"]
    # version 1 as the reader: version 2's values resolve back into it (the added field
    # dropped); version 3 removed a field version 1 has without a default, so its values do not
    # resolve, and say why
    st = kl.ReadStats()
    v1 = kl.read_table(
        SAMPLES / "orders-avro-0",
        stats=st,
        valueFormat="avro",
        valueSchemaVersion=1,
        mode="PERMISSIVE",
        columns=["value_schema_id", "value_decoded", "value_error"],
    )
    assert "channel" not in v1.schema.field("value_decoded").type.names  # added in version 2
    ids, errors = v1.column(0).to_pylist(), v1.column(2).to_pylist()
    assert all((e is not None) == (i == 4) for i, e in zip(ids, errors, strict=True))
    assert st.undecodable_payloads == ids.count(4) > 0
    assert "has no default" in next(e for e in errors if e)


def test_avro_damage_goes_through_mode() -> None:
    """orders-avro-bad-0: no prefix, a wrong magic byte, an unknown id, a truncated body, a
    Protobuf schema's id: FAILFAST names file, byte, offset and schema id; DROPMALFORMED keeps
    the two good values and counts five; PERMISSIVE keeps every row with its reason."""
    path = SAMPLES / "orders-avro-bad-0"
    with pytest.raises(UndecodablePayloadError) as e:
        kl.read_table(path, valueFormat="avro")
    assert e.value.offset == 1 and "no schema registry wire-format prefix" in str(e.value)
    assert "00000000000000000000.log: byte 0: the value at offset 1" in str(e.value)
    st = kl.ReadStats()
    t = kl.read_table(path, stats=st, valueFormat="avro", mode="DROPMALFORMED")
    assert t.column("offset").to_pylist() == [0, 7] and st.undecodable_payloads == 6
    t = kl.read_table(
        path, valueFormat="avro", mode="PERMISSIVE", columns=["value_schema_id", "value_error"]
    )
    ids, errors = t.column(0).to_pylist(), t.column(1).to_pylist()
    assert ids[4] == 9999 and "schema id 9999 is not in the registry" in errors[4]
    assert ids[5] == 8 and "does not parse as Avro with schema id 8" in errors[5]
    assert ids[6] == 6 and "is a PROTOBUF schema, not AVRO" in errors[6]
    assert errors[0] is None and errors[7] is None


def test_a_log_directory_of_several_subjects() -> None:
    """The whole sample log directory: topics with different subjects cannot share one struct
    (the error lists them and the ways out); valueFormat=registry with payloadAs=json decodes
    every topic with its own schemas, and leaves _schemas's own records alone."""
    with pytest.raises(OptionError, match="no subject 'events-plainjson-value'.*payloadAs=json"):
        kl.read_table(SAMPLES, valueFormat="avro")
    two = [SAMPLES / "orders-avro-0", SAMPLES / "orders-avro-bad-0"]
    with pytest.raises(OptionError, match="different reader schemas.*payloadAs=json") as e:
        kl.read_table(two, valueFormat="avro")
    assert "orders-avro-value version 3 (id 4)" in str(e.value)
    assert "orders-avro-bad-value version 1 (id 8)" in str(e.value)
    st = kl.ReadStats()
    t = kl.read_table(
        SAMPLES,
        stats=st,
        valueFormat="registry",
        payloadAs="json",
        mode="PERMISSIVE",
        columns=["topic", "offset", "value_decoded", "value_error"],
    )
    bad = {(r["topic"], r["offset"]) for r in t.to_pylist() if r["value_error"]}
    assert {topic for topic, _ in bad} == {
        "orders-avro-bad-0".rsplit("-", 1)[0],
        "events-plainjson",
    }
    schemas = [r for r in t.to_pylist() if r["topic"] == "_schemas"]
    assert schemas and all(r["value_decoded"] is None and r["value_error"] is None for r in schemas)
    orders = {r["offset"]: r for r in t.to_pylist() if r["topic"] == "orders-avro"}
    for r in _manifest("orders-avro-0"):
        if r["value"] is not None:
            assert (
                json.loads(orders[r["offset"]]["value_decoded"])["order_id"]
                == r["value"]["order_id"]
            )


@pytest.mark.spark
def test_spark_reads_avro_samples(spark) -> None:
    """Spark: the Avro struct's fields are SQL columns, with the Arrow API's values."""
    df = (
        spark.read.format("kafkalog")
        .option("valueFormat", "avro")
        .load(str(SAMPLES / "orders-avro-0"))
    )
    got = (
        df.where("value_decoded is not null")
        .orderBy("offset")
        .select(
            "offset",
            "value_schema_id",
            "value_decoded.order_id",
            "value_decoded.price",
            "value_decoded.status",
        )
        .collect()
    )
    want = [r for r in _manifest("orders-avro-0") if r["value"] is not None]
    assert [
        (r["offset"], r["value_schema_id"], r["order_id"], str(r["price"]), r["status"])
        for r in got
    ] == [
        (
            r["offset"],
            r["valueSchemaId"],
            r["value"]["order_id"],
            r["valueLatest"]["price"],
            r["value"]["status"],
        )
        for r in want
    ]


def test_cli_query_over_avro_values() -> None:
    """kafkalog query: a field inside Avro values, grouped, with the DuckDB engine."""
    out = run_cli(
        "query",
        str(SAMPLES / "orders-avro-0"),
        "-o",
        "valueFormat=avro",
        "select value_decoded.status s, count(*) n from kafkalog where value is not null group by 1 order by 1",
    )
    assert out.returncode == 0, out.stderr
    want: dict[str, int] = {}
    for r in _manifest("orders-avro-0"):
        if r["value"] is not None:
            want[r["value"]["status"]] = want.get(r["value"]["status"], 0) + 1
    for status, n in want.items():
        assert any(
            line.split("|")[0].strip() == status and line.split("|")[1].strip() == str(n)
            for line in out.stdout.splitlines()
        ), (status, out.stdout)


def test_a_damaged_schemas_topic_goes_through_mode(tmp_path: Path) -> None:
    """A flipped byte in _schemas-0: FAILFAST fails the read naming the _schemas file;
    DROPMALFORMED reads on without that batch's schemas, and the values whose ids it held go
    through mode as ids not in the registry (never a silent null)."""
    import shutil

    root = tmp_path / "logs"
    shutil.copytree(SAMPLES / "_schemas-0", root / "_schemas-0")
    shutil.copytree(SAMPLES / "orders-avro-0", root / "orders-avro-0")
    log = root / "_schemas-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[200] ^= 0xFF
    log.write_bytes(bytes(data))
    with pytest.raises(kl.CorruptDataError, match="_schemas-0"):
        kl.read_table(root / "orders-avro-0", valueFormat="avro")
    st = kl.ReadStats()
    try:
        t = kl.read_table(root / "orders-avro-0", stats=st, valueFormat="avro", mode="PERMISSIVE")
    except OptionError as e:  # the damaged batch held the subject's versions
        assert "no subject 'orders-avro-value'" in str(e)
        return
    errors = [e for e in t.column("value_error").to_pylist() if e]
    assert len(errors) == st.undecodable_payloads
    assert all("is not in the registry" in e for e in errors)


def test_registry_settings_need_a_live_registry() -> None:
    """schemaRegistry.<setting> with a schemaRegistry that is not a URL is refused, not
    ignored."""
    with pytest.raises(OptionError, match="not an http"):
        kl.read_table(
            SAMPLES / "orders-avro-0",
            valueFormat="avro",
            schemaRegistry=str(SAMPLES / "_schemas-0"),
            **{"schemaRegistry.basic.auth.user.info": "u:p"},
        )


def test_errors_name_the_subject_and_version_of_the_id(tmp_path: Path) -> None:
    """A JSON Schema value cut short (id 7 of the samples' registry): the reason names the id's
    subject and version, found in the replayed _schemas topic."""
    import shutil

    root = tmp_path / "logs"
    shutil.copytree(SAMPLES / "_schemas-0", root / "_schemas-0")
    part = root / "orders-json-0"
    part.mkdir()
    cut = b"\x00\x00\x00\x00\x07" + b'{"order_id": 1, "customer": "c'
    (part / "00000000000000000000.log").write_bytes(kp_v2_batch([(TS, b"k", cut, [])]))
    t = kl.read_table(part, valueFormat="json", mode="PERMISSIVE", columns=["value_error"])
    [reason] = t.column(0).to_pylist()
    assert reason.startswith(
        "does not parse as JSON with schema id 7 (subject orders-json-value version 1): "
    )


def _counting_plans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the payload plans made (each loads the schemas, or samples plain JSON)."""
    from kafkalog_source.reader import payloads

    made: list[int] = []
    real = payloads.payload_plan

    def counting(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        made.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(payloads, "payload_plan", counting)
    return made


def test_a_query_loads_its_schemas_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kafkalog query (DuckDB) fixes a view's column types and decodes with one payload plan
    (before: one for the schema, another for the read; a schema registered in between would
    make the declared and decoded types differ)."""
    from kafkalog_source.cli.query_duckdb import run_query
    from kafkalog_source.cli.sqlview import View

    d = _plain_json_partition(tmp_path)
    made = _counting_plans(monkeypatch)
    sql = "SELECT count(*) AS n, sum(value_decoded.id) AS s FROM kafkalog"
    view = View("kafkalog", str(d), {"valueFormat": "json", "mode": "PERMISSIVE"})
    got = run_query([view], sql, 10, False)
    assert got.to_pylist() == [{"n": 12, "s": sum(range(10))}]
    assert len(made) == 1


def test_spark_reader_decodes_with_the_types_its_dataframe_declared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Spark pickles the data source after ``schema()`` and calls ``reader()`` on the copy
    (pyspark's create_data_source worker). The reader loads the schemas again, so a DataFrame's
    later actions see schemas registered since; when those give other column types than the
    DataFrame declared (here plain JSON values that gained a field), it keeps the plan made for
    the schema and warns, rather than decode into types Spark does not expect. A user's schema
    is matched against a plan made in ``reader()``."""
    import logging
    import pickle

    pytest.importorskip("pyspark")
    from kafkalog_source.spark.datasource import KafkaLogDataSource

    d = _plain_json_partition(tmp_path)
    made = _counting_plans(monkeypatch)
    options = {"path": str(d), "valueFormat": "json", "mode": "PERMISSIVE"}
    source = KafkaLogDataSource(options)
    schema = source.schema()
    declared = source._payload_plan[0].fields
    reader = pickle.loads(pickle.dumps(source)).reader(schema)
    assert len(made) == 2 and reader.payloads.fields == declared
    KafkaLogDataSource(options).reader(schema)  # a user's schema: planned in reader()
    assert len(made) == 3
    # the same fields in another order (plain JSON is typed in the order fields appear): the
    # declared struct is kept, without a warning
    d.joinpath("00000000000000000000.log").write_bytes(
        kp_v2_batch(
            [(TS, b"k", json.dumps(dict(reversed(list(v.items())))).encode(), []) for v in EXPECTED]
        )
    )
    caplog.set_level(logging.WARNING, logger="kafkalog")
    reordered = pickle.loads(pickle.dumps(source)).reader(schema)
    assert reordered.payloads.fields == declared and "changed since" not in caplog.text
    # the values gain a field after the DataFrame was created
    copy = pickle.loads(pickle.dumps(source))
    (d / "00000000000000000000.log").write_bytes(
        kp_v2_batch([(TS, b"k", json.dumps({"id": 1, "extra": True}).encode(), [])])
    )
    kept = copy.reader(schema)
    assert kept.payloads.fields == declared
    assert "payload schemas changed since this DataFrame was created" in caplog.text
    assert "_payload_plan" not in vars(copy)  # not pickled again into every task
    assert len(made) == 5
    # a user's schema that the values no longer match is refused, naming both types
    with pytest.raises(OptionError, match="expected struct<id:bigint,extra:boolean>"):
        KafkaLogDataSource(options).reader(schema)
