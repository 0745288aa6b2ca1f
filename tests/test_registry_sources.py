"""Schema sources, continued from test_registry.py (issue 23; its records and registries
shared): the ``_schemas`` topic loaded from segments, a real partition and an S3 store,
schema-file directories, and a live registry over HTTP (whose secrets no message shows).
"""

from __future__ import annotations

import base64
import json
import pickle
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from conftest import BROKER_WRITTEN, require_shared
from test_registry import (
    AVRO_V1,
    AVRO_V2,
    BASE_PROTO,
    COMMON_PROTO,
    default_registry,
    load_registry,
    registry_records,
    schema_history,
    schema_key,
    write_schemas_topic,
)

from kafkalog_source.errors import AccessDeniedError, SchemasRecordError
from kafkalog_source.format.registry import (
    RegisteredSchema,
    SchemaNotFoundError,
)
from kafkalog_source.format.replay import replay
from kafkalog_source.options import parse_options
from kafkalog_source.payloads.sources import LiveRegistry, find_schemas_partition


def test_load_from_segments(tmp_path: Path) -> None:
    part = write_schemas_topic(tmp_path / "logs", schema_history())
    expected = replay(registry_records(schema_history())).describe()
    for spec in (part, tmp_path / "logs"):
        reg = load_registry(str(spec))
        assert reg.describe() == expected and reg.end_offset == len(schema_history())
    found = find_schemas_partition([str(tmp_path / "logs" / "orders-value-0")])
    assert found == [str(part)]
    assert find_schemas_partition([str(tmp_path / "logs")]) == [str(part)]
    seg = tmp_path / "logs" / "orders-value-0" / f"{0:020d}.log"
    assert find_schemas_partition([str(seg)]) == [str(part)]
    assert find_schemas_partition([str(tmp_path / "nowhere")]) == []
    reg = default_registry([str(tmp_path / "logs" / "orders-value-0")])
    assert reg is not None and reg.by_id(5).schema_type == "PROTOBUF"


def test_bad_record_in_segments_names_its_offset(tmp_path: Path) -> None:
    pairs = schema_history()[:3] + [(schema_key("x", 1), b"{oops")] + schema_history()[3:]
    part = write_schemas_topic(tmp_path / "logs", pairs)
    with pytest.raises(SchemasRecordError, match="offset 3"):
        load_registry(str(part))
    reg = load_registry(str(part), lenient=True)
    assert [s.offset for s in reg.skipped] == [3] and "orders-value" in reg.subjects()


def test_real_noop_only_schemas_partition() -> None:
    """A broker-written _schemas-0 (a registry that registered nothing: 63 NOOP records)."""
    part = require_shared(
        BROKER_WRITTEN / "mscaldas2012-kafka-connect-spooldir" / "kafka-data" / "_schemas-0"
    )
    reg = load_registry(str(part))
    assert reg.subjects() == [] and reg.describe() == [] and reg.skipped == []
    assert reg.counts == {"NOOP": 63}
    assert find_schemas_partition([str(part.parent)]) == [str(part)]


def test_load_from_s3(s3_server: Any, tmp_path: Path) -> None:
    write_schemas_topic(tmp_path / "logs", schema_history())
    uri = s3_server.upload(tmp_path / "logs", "registry-test/logs")
    store = parse_options(s3_server.options).store
    found = find_schemas_partition([f"{uri}/orders-value-0"], store)
    assert found == [f"{uri}/_schemas-0"]
    expected = replay(registry_records(schema_history())).describe()
    assert load_registry(uri, store).describe() == expected
    assert load_registry(found[0], store).describe() == expected


# -- schema files -----------------------------------------------------------------------------


def _answer(subject: str | None, version: int | None, schema_id: int, text: str, t: str) -> dict:
    out: dict[str, Any] = {}
    if subject is not None:
        out.update(subject=subject, version=version, id=schema_id)
    if t != "AVRO":
        out["schemaType"] = t
    out["schema"] = text
    return out


def test_schema_file_directory(tmp_path: Path) -> None:
    d = tmp_path / "schemas"
    d.mkdir()
    (d / "1.avsc").write_text(AVRO_V1)
    (d / "3.proto").write_text(COMMON_PROTO)
    (d / "8.json").write_text('{"type": "object", "properties": {"a": {"type": "string"}}}')
    (d / "9.json").write_text(json.dumps(_answer(None, None, 9, AVRO_V2, "AVRO")))
    (d / "README.txt").write_text("not a schema")
    for subject, version, sid, text, t, refs in (
        ("common", 1, 3, COMMON_PROTO, "PROTOBUF", []),
        ("base", 1, 4, BASE_PROTO, "PROTOBUF", [("common.proto", "common", 1)]),
        ("orders-value", 1, 1, AVRO_V1, "AVRO", []),
        ("orders-value", 2, 9, AVRO_V2, "AVRO", []),
    ):
        sdir = d / "subjects" / subject
        sdir.mkdir(parents=True, exist_ok=True)
        ans = _answer(subject, version, sid, text, t)
        ans["references"] = [{"name": n, "subject": s, "version": v} for n, s, v in refs]
        (sdir / f"{version}.json").write_text(json.dumps(ans))
    reg = load_registry(str(d))
    assert reg.by_id(1) == RegisteredSchema(1, "AVRO", AVRO_V1)
    assert not any(reg.by_id(i).deleted for i in (1, 3, 4, 8, 9))
    assert reg.by_id(3).schema_type == "PROTOBUF"
    assert reg.by_id(8).schema_type == "JSON" and '"object"' in reg.by_id(8).text
    assert reg.by_id(9).text == AVRO_V2
    assert reg.version("orders-value") == (2, reg.by_id(9))
    assert reg.subjects() == ["base", "common", "orders-value"]
    assert reg.referenced(reg.by_id(4))["common.proto"].id == 3
    # GET /schemas, one file
    index = tmp_path / "all.json"
    index.write_text(
        json.dumps(
            [
                _answer("orders-value", 1, 1, AVRO_V1, "AVRO"),
                _answer("orders-value", 2, 9, AVRO_V2, "AVRO"),
            ]
        )
    )
    reg = load_registry(str(index))
    assert reg.version("orders-value")[1].id == 9 and reg.by_id(1).text == AVRO_V1
    (d / "subjects" / "base" / "1.json").write_text('{"schema": 1}')
    with pytest.raises(ValueError, match="not a registered schema"):
        load_registry(str(d))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="holds no _schemas partition and no schema"):
        load_registry(str(empty))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_registry(str(tmp_path / "absent"))


# -- a live registry ----------------------------------------------------------------------------

USER, PASSWORD = "reader", "s3cr3t-Pa55word"


class _Registry(BaseHTTPRequestHandler):
    """GET /schemas/ids/{id}, /subjects, /subjects/{s}/versions/{v} as the registry answers
    them (io.confluent.kafka.schemaregistry.rest.resources), behind basic auth."""

    versions = {
        ("orders-value", 1): (1, AVRO_V1, "AVRO", []),
        ("orders-value", 2): (2, AVRO_V2, "AVRO", []),
        ("common", 1): (3, COMMON_PROTO, "PROTOBUF", []),
        ("base", 1): (4, BASE_PROTO, "PROTOBUF", [("common.proto", "common", 1)]),
    }
    requests: list[str] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        want = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        if self.headers.get("Authorization") != want:
            self._send(401, {"error_code": 401, "message": "Unauthorized"})
            return
        path = self.path.split("?", 1)[0]
        type(self).requests.append(path)
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if parts[:2] == ["schemas", "ids"] and len(parts) == 3:
            for sid, text, t, refs in self.versions.values():
                if sid == int(parts[2]):
                    body: dict[str, Any] = {"schema": text}
                    if t != "AVRO":
                        body["schemaType"] = t
                    if refs:
                        body["references"] = [
                            {"name": n, "subject": s, "version": v} for n, s, v in refs
                        ]
                    self._send(200, body)
                    return
            self._send(404, {"error_code": 40403, "message": "Schema not found"})
            return
        if parts == ["subjects"]:
            self._send(200, sorted({s for s, _ in self.versions}))
            return
        if len(parts) == 4 and parts[0] == "subjects" and parts[2] == "versions":
            subject = parts[1]
            have = sorted(v for s, v in self.versions if s == subject)
            if not have:
                self._send(404, {"error_code": 40401, "message": f"Subject '{subject}' not found."})
                return
            version = have[-1] if parts[3] == "latest" else int(parts[3])
            if (subject, version) not in self.versions:
                self._send(404, {"error_code": 40402, "message": "Version not found."})
                return
            sid, text, t, refs = self.versions[(subject, version)]
            body = {"subject": subject, "version": version, "id": sid, "schema": text}
            if t != "AVRO":
                body["schemaType"] = t
            body["references"] = [{"name": n, "subject": s, "version": v} for n, s, v in refs]
            self._send(200, body)
            return
        self._send(404, {"error_code": 404, "message": "HTTP 404 Not Found"})


@pytest.fixture()
def live_url() -> Any:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_live_registry_lookups(live_url: str) -> None:
    pytest.importorskip("confluent_kafka.schema_registry")
    _Registry.requests = []
    reg = load_registry(
        live_url, config={"basic.auth.user.info": f"{USER}:{PASSWORD}", "max.retries": 0}
    )
    assert isinstance(reg, LiveRegistry)
    assert reg.by_id(1) == RegisteredSchema(1, "AVRO", AVRO_V1)
    assert reg.by_id(1) is reg.by_id(1)  # cached
    assert reg.version("orders-value") == (2, RegisteredSchema(2, "AVRO", AVRO_V2))
    assert reg.version("orders-value", 1)[1].id == 1
    assert reg.subjects() == ["base", "common", "orders-value"]
    assert reg.referenced(reg.by_id(4))["common.proto"].text == COMMON_PROTO
    assert _Registry.requests.count("/schemas/ids/1") == 1
    with pytest.raises(SchemaNotFoundError, match="schema id 77 is not in the registry") as e:
        reg.by_id(77)
    assert PASSWORD not in str(e.value)
    with pytest.raises(KeyError):
        reg.version("nope")
    # pickles as URL and configuration; the copy builds its own client
    back = pickle.loads(pickle.dumps(reg))
    assert back._client is None and back.by_id(3).schema_type == "PROTOBUF"


def test_live_registry_never_shows_secrets(live_url: str) -> None:
    pytest.importorskip("confluent_kafka.schema_registry")
    host = live_url.removeprefix("http://")
    in_url = LiveRegistry(f"http://{USER}:{PASSWORD}@{host}", {"max.retries": 0})
    assert in_url.by_id(2).text == AVRO_V2
    in_conf = LiveRegistry(
        live_url,
        {"basic.auth.user.info": f"{USER}:{PASSWORD}", "max.retries": 0, "timeout": 5},
    )
    for reg in (in_url, in_conf):
        assert PASSWORD not in repr(reg) and "****" in repr(reg)
    assert "timeout=5" in repr(in_conf)
    wrong = LiveRegistry(f"http://{USER}:not-{PASSWORD}@{host}", {"max.retries": 0})
    with pytest.raises(AccessDeniedError) as e:
        wrong.by_id(1)
    assert "access denied" in str(e.value) and PASSWORD not in str(e.value)
    closed = LiveRegistry(
        "http://127.0.0.1:9",
        {"basic.auth.user.info": f"{USER}:{PASSWORD}", "max.retries": 0, "timeout": 2},
    )
    with pytest.raises(OSError) as e:
        closed.version("orders-value")
    assert PASSWORD not in str(e.value) and "127.0.0.1:9" in str(e.value)
    bad = LiveRegistry(live_url, {"basic.auth.user.info": PASSWORD})  # no ':'
    with pytest.raises(ValueError) as e:
        bad.by_id(1)
    assert PASSWORD not in str(e.value)


# -- the replay's indexes against the plain rules ----------------------------------------------
