"""Payload decoding against an independent oracle: confluent-kafka's own schema_registry serializers (Avro, Protobuf,
JSON Schema; the prefix and the Confluent 8.x header-GUID form) against its MockSchemaRegistryClient, whose
registered ids, versions and GUIDs become the ``_schemas`` records kafkalog replays; the deserializers' output is
what kafkalog must print. Then the failure reasons, the dump options and the audit."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from schema_world import (
    AVRO_V1,
    AVRO_V2,
    AVRO_V3_BREAKING,
    config_key,
    schema_key,
    schema_record,
    schema_value,
    write_segment,
)

from kafkalog_cli.cli.main import cli
from kafkalog_cli.format.schema_wire import confluent_prefix
from kafkalog_cli.internal_topics.schema_decode import Decoder
from kafkalog_cli.ops.schemas import audit, load_registry

sr = pytest.importorskip("confluent_kafka.schema_registry")
from confluent_kafka.schema_registry import header_schema_id_serializer  # noqa: E402
from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402


def _client() -> Any:
    return MockSchemaRegistryClient({"url": f"mock://{id(object())}"})


def _schemas_records(client: Any, texts: dict[str, str] | None = None) -> list[tuple[bytes, bytes]]:
    """The mock registry's state as the ``_schemas`` records the real registry would have written."""
    out = []
    for subject in client.get_subjects():
        for version in client.get_versions(subject):
            rs = client.get_version(subject, version)
            s = rs.schema
            refs = [{"name": r.name, "subject": r.subject, "version": r.version} for r in (s.references or [])]
            text = (texts or {}).get(subject, s.schema_str)
            out.append((schema_key(subject, version),
                        schema_value(subject, version, rs.schema_id, text, schema_type=s.schema_type or "AVRO",
                                     references=refs, guid=str(rs.guid) if rs.guid else None)))
    out.sort(key=lambda kv: json.loads(kv[1])["id"])
    return out


def _ctx(topic: str, headers: list | None = None, field: Any = MessageField.VALUE) -> Any:
    return SerializationContext(topic, field, headers)


def test_avro_prefix_and_header_guid_match_confluent_deserializer(tmp_path: Path) -> None:
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer

    client = _client()
    schema = json.dumps({"type": "record", "name": "Pay", "fields": [
        {"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "blob", "type": "bytes"}, {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}}]})
    prefix = AvroSerializer(client, schema)
    header = AvroSerializer(client, schema, conf={"schema.id.serializer": header_schema_id_serializer})
    values = [{"id": i, "note": None if i % 2 else f"n{i}", "blob": bytes([i, 255]), "when": 1_700_000_000_000 + i,
               "kind": "AB"[i % 2]} for i in range(6)]
    data: list[tuple[bytes | None, bytes | None, list]] = []
    for i, v in enumerate(values):
        if i < 3:
            data.append((None, prefix(v, _ctx("pay")), []))
        else:
            hdrs: list = []
            payload = header(v, _ctx("pay", hdrs))
            data.append((None, payload, hdrs))
    logs = tmp_path / "logs"
    write_segment(logs / "_schemas-0", _schemas_records(client))
    write_segment(logs / "pay-0", data)
    reg = load_registry([str(logs)])
    dec = Decoder(reg)
    deser = AvroDeserializer(client)
    for (_k, payload, hdrs), v in zip(data, values):
        d = dec.decode(payload, hdrs)
        assert d.ok, d.reason
        want = deser(payload, _ctx("pay", hdrs))
        assert want["id"] == v["id"]
        assert json.loads(d.text()) == json.loads(json.dumps(want, default=lambda o: o.isoformat() if hasattr(
            o, "isoformat") else bytes(o).decode("latin-1")))
        assert d.subject == "pay-value" and d.source == ("prefix" if not hdrs else "header")
    assert dec.stats()["schemas_compiled"] == 2  # once per id and once per GUID, not per record
    r = CliRunner().invoke(cli, ["dump", "--value-decoder", "schema-registry", str(logs / "pay-0")])
    assert r.exit_code == 0, r.output
    assert r.output.count('payload: {"id":') == 6
    r = CliRunner().invoke(cli, ["schemas", "--audit", str(logs)])
    assert r.exit_code == 1, r.output  # header ids and the prefix in one partition
    assert "MIXED pay-0: 3 key/value(s) carry header ids, 3 the prefix" in r.output


def _proto_module(tmp_path: Path, name: str, text: str, extra: dict[str, str] | None = None) -> Any:
    """The Python module protoc generates from ``text`` (the producer side of the oracle)."""
    from grpc_tools import protoc

    src = tmp_path / "protosrc"
    src.mkdir(exist_ok=True)
    for fname, body in {**(extra or {}), f"{name}.proto": text}.items():
        (src / fname).write_text(body)
    out = tmp_path / "protogen"
    out.mkdir(exist_ok=True)
    import grpc_tools

    inc = str(Path(grpc_tools.__file__).parent / "_proto")
    for fname in [*(extra or {}), f"{name}.proto"]:
        assert protoc.main(["protoc", f"-I{src}", f"-I{inc}", f"--python_out={out}", fname]) == 0
    sys.path.insert(0, str(out))
    try:
        for fname in extra or {}:
            importlib.import_module(fname[:-6] + "_pb2")
        return importlib.import_module(f"{name}_pb2")
    finally:
        sys.path.remove(str(out))


COMMON_PROTO = 'syntax = "proto3";\npackage common;\nmessage Money { int64 cents = 1; string currency = 2; }\n'
SHOP_PROTO = '''syntax = "proto3";
package shop;
import "common.proto";
import "google/protobuf/timestamp.proto";
message Header { string source = 1; }
message Order {
  int64 id = 1;
  common.Money total = 2;
  repeated string items = 3;
  google.protobuf.Timestamp at = 4;
  message Line { string sku = 1; int32 qty = 2; }
  repeated Line lines = 5;
}
'''


def test_protobuf_with_references_and_nested_indexes(tmp_path: Path) -> None:
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
    from google.protobuf.json_format import MessageToDict

    mod = _proto_module(tmp_path, "shop_kl", SHOP_PROTO.replace('"common.proto"', '"common_kl.proto"'),
                        {"common_kl.proto": COMMON_PROTO})
    client = _client()
    ser = ProtobufSerializer(mod.Order, client, {"use.deprecated.format": False})
    o = mod.Order(id=42, items=["a", "b"])
    o.total.cents, o.total.currency = 1999, "EUR"
    o.at.seconds = 1_700_000_000
    o.lines.add(sku="x", qty=2)
    payload = ser(o, _ctx("orders"))
    assert payload[5:7] == b"\x02\x02"  # the serializer's message indexes: [1] (Order, after Header)
    # a nested message (the serializer cannot look one up by itself): indexes [1, 0] = Order.Line, framed by hand
    line_payload = payload[:5] + b"\x04\x02\x00" + mod.Order.Line(sku="y", qty=3).SerializeToString()
    # the registry stores the .proto text (the Java registry's canonical form) with the reference by import name
    texts = {"orders-value": SHOP_PROTO.replace('"common.proto"', '"common_kl.proto"'), "common_kl.proto": COMMON_PROTO}
    recs = _schemas_records(client, texts)
    logs = tmp_path / "logs"
    write_segment(logs / "_schemas-0", recs)
    reg = load_registry([str(logs)])
    main = next(v for v in reg.versions.values() if v.subject == "orders-value")
    assert main.schema_type == "PROTOBUF" and main.references == [
        {"name": "common_kl.proto", "subject": "common_kl.proto", "version": 1}]
    dec = Decoder(reg)
    d = dec.decode(payload)
    assert d.ok, d.reason
    want = MessageToDict(ProtobufDeserializer(mod.Order, {"use.deprecated.format": False})(payload, _ctx("orders")),
                         preserving_proto_field_name=True)
    assert d.value == want
    assert d.value["total"] == {"cents": "1999", "currency": "EUR"} and d.value["at"] == "2023-11-14T22:13:20Z"
    d2 = dec.decode(line_payload)
    assert d2.ok, d2.reason
    assert d2.value == {"sku": "y", "qty": 3}
    # the Python client registers a base64 FileDescriptorProto instead of text: decoded all the same
    logs2 = tmp_path / "logs2"
    write_segment(logs2 / "_schemas-0", _schemas_records(client))
    d3 = Decoder(load_registry([str(logs2)])).decode(payload)
    assert d3.ok, d3.reason
    assert d3.value == want


def test_json_schema_value_and_validation(tmp_path: Path) -> None:
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer

    schema = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                         "properties": {"n": {"type": "integer", "minimum": 0}, "s": {"type": "string"}},
                         "required": ["n"]})
    client = _client()
    payload = JSONSerializer(schema, client)({"n": 3, "s": "é"}, _ctx("j"))
    bad = payload[:5] + b'{"n": -1}'  # framed with the same id, but does not validate
    logs = tmp_path / "logs"
    write_segment(logs / "_schemas-0", _schemas_records(client))
    reg = load_registry([str(logs)])
    d = Decoder(reg).decode(payload)
    assert d.ok and d.schema_type == "JSON"
    assert d.value == JSONDeserializer(schema)(payload, _ctx("j"))
    assert Decoder(reg).decode(bad).ok  # no validation unless asked
    v = Decoder(reg, validate=True).decode(bad)
    assert not v.ok and v.kind == "invalid" and "minimum" in (v.reason or "")


def test_failure_reasons_and_raw_bytes(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    write_segment(logs / "_schemas-0", [schema_record("t-value", 1, 1, AVRO_V1)])
    import fastavro

    good = confluent_prefix(1) + _avro(AVRO_V1, {"id": 1, "item": "x"})
    write_segment(logs / "t-0", [(None, good), (None, b"plain text"), (None, confluent_prefix(99) + b"\x02"),
                                 (None, b"\x00\x00\x00"), (None, confluent_prefix(1) + b"\x02"),
                                 (None, good + b"extra")])
    dec = Decoder(load_registry([str(logs)]))
    kinds = [dec.decode(v).kind for _k, v in [(None, good), (None, b"plain text"), (None, confluent_prefix(99)),
                                              (None, b"\x00\x00\x00"), (None, confluent_prefix(1) + b"\x02"),
                                              (None, good + b"extra")]]
    assert kinds == ["ok", "bad-magic", "unknown-id", "truncated", "mismatch", "mismatch"]
    assert fastavro  # the payloads above are fastavro's
    r = CliRunner().invoke(cli, ["dump", "--value-decoder", "schema-registry", "--schemas", str(logs),
                                 str(logs / "t-0" / "00000000000000000000.log")])
    assert r.exit_code == 0, r.output
    out = r.output
    assert 'payload: {"id":1,"item":"x"}' in out
    assert "payload: <undecoded: not schema-registry framed (bad magic byte: a poison pill)" in out
    assert "base64:cGxhaW4gdGV4dA==" in out  # the raw bytes, losslessly
    assert "unknown schema id 99" in out and "cut short inside the schema-id prefix" in out
    assert "5 bytes left after the Avro value" in out
    r = CliRunner().invoke(cli, ["dump", "--value-decoder", "schema-registry", "--format", "json",
                                 str(logs / "t-0" / "00000000000000000000.log")])
    recs = [json.loads(ln) for ln in r.output.splitlines() if '"type":"record"' in ln]
    assert recs[0]["decoded"]["value"]["value"] == {"id": 1, "item": "x"}
    assert recs[2]["decoded"]["value"]["error"] == "unknown-id"
    r = CliRunner().invoke(cli, ["dump", "--value-decoder", "schema-registry", str(tmp_path / "nowhere" / "t-0")])
    assert "Traceback" not in r.output


def _avro(schema: str, value: dict) -> bytes:
    import io

    import fastavro

    bio = io.BytesIO()
    fastavro.schemaless_writer(bio, fastavro.parse_schema(json.loads(schema)), value)
    return bio.getvalue()


def test_no_registry_beside_the_input_is_exit_2(tmp_path: Path) -> None:
    write_segment(tmp_path / "logs" / "t-0", [(None, b"x")])
    r = CliRunner().invoke(cli, ["dump", "--value-decoder", "schema-registry", str(tmp_path / "logs" / "t-0")])
    assert r.exit_code == 2 and "no _schemas partition beside the input" in r.output and "--schemas" in r.output


def test_avro_references_named_types(tmp_path: Path) -> None:
    money = json.dumps({"type": "record", "name": "Money", "namespace": "m", "fields": [{"name": "c", "type": "long"}]})
    pay = json.dumps({"type": "record", "name": "Pay", "fields": [{"name": "amount", "type": "m.Money"}]})
    logs = tmp_path / "logs"
    write_segment(logs / "_schemas-0", [
        schema_record("money", 1, 1, money),
        schema_record("pay-value", 1, 2, pay, references=[{"name": "m.Money", "subject": "money", "version": 1}])])
    import fastavro

    parsed: dict = {}
    fastavro.parse_schema(json.loads(money), named_schemas=parsed)
    import io

    bio = io.BytesIO()
    fastavro.schemaless_writer(bio, fastavro.parse_schema(json.loads(pay), named_schemas=parsed), {"amount": {"c": 5}})
    d = Decoder(load_registry([str(logs)])).decode(confluent_prefix(2) + bio.getvalue())
    assert d.ok and d.value == {"amount": {"c": 5}}
    # a reference that is not in the registry is a located reason, not a crash
    logs2 = tmp_path / "logs2"
    write_segment(logs2 / "_schemas-0", [
        schema_record("pay-value", 1, 2, pay, references=[{"name": "m.Money", "subject": "money", "version": 1}])])
    d = Decoder(load_registry([str(logs2)])).decode(confluent_prefix(2) + bio.getvalue())
    assert not d.ok and d.kind == "schema" and "money version 1 is not in the registry" in (d.reason or "")


def test_apicurio_global_id(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    write_segment(logs / "_schemas-0", [schema_record("t-value", 1, 300, AVRO_V1)])
    body = _avro(AVRO_V1, {"id": 7, "item": "a"})
    reg = load_registry([str(logs)])
    d = Decoder(reg, wire="apicurio").decode(b"\x00" + (300).to_bytes(8, "big") + body)
    assert d.ok and d.value == {"id": 7, "item": "a"} and d.source == "apicurio-prefix"
    d = Decoder(reg).decode(body, [(b"apicurio.value.globalId", (300).to_bytes(8, "big"))])
    assert d.ok and d.source == "apicurio-header"


def test_audit_findings(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    write_segment(logs / "_schemas-0", [
        schema_record("orders-value", 1, 1, AVRO_V1),
        schema_record("orders-value", 2, 2, AVRO_V2),
        schema_record("orders-value", 3, 3, AVRO_V3_BREAKING),  # registered with NONE, then the level went BACKWARD
        (schema_key("orders-value", 1), schema_value("orders-value", 1, 1, AVRO_V1, deleted=True)),
        (config_key("orders-value"), b'{"compatibilityLevel":"BACKWARD"}'),
    ])
    v1 = confluent_prefix(1) + _avro(AVRO_V1, {"id": 1, "item": "a"})
    v2 = confluent_prefix(2) + _avro(AVRO_V2, {"id": 2, "item": "b", "qty": 4})
    write_segment(logs / "orders-0", [(b"k1", v1), (b"k2", v2), (b"k3", confluent_prefix(77) + b"\x02"),
                                      (b"k4", confluent_prefix(78) + b"\x02"), (b"k5", b"oops"),
                                      (b"k6", confluent_prefix(2) + b"\x02")])
    write_segment(logs / "plain-0", [(b"a", b"hello"), (b"b", b"\x00\x00\x00\x00\x00\x00\x00\x07")])
    reg = load_registry([str(logs)])
    rep = audit([str(logs)], reg)
    assert [p.topic for p in rep.partitions] == ["orders"]  # plain-0 and the string keys are not registry data
    uses = {(u.schema_id, u.state): (u.first_offset, u.last_offset, u.records) for u in rep.id_uses}
    assert uses == {(1, "soft-deleted"): (0, 0, 1), (77, "absent"): (2, 2, 1), (78, "absent"): (3, 3, 1)}
    assert [(b.offset, b.kind) for b in rep.bad] == [(4, "bad-magic"), (5, "mismatch")]
    assert [(c.written_version, c.reader_version) for c in rep.compat] == [(2, 3)]
    r = CliRunner().invoke(cli, ["schemas", "--audit", "--format", "json", str(logs)])
    assert r.exit_code == 1
    doc = json.loads(r.output)
    assert doc["problems"] == 6 and doc["compatibility_breaks"][0]["subject"] == "orders-value"
    # the same data with a registry that knows every id and a level the data respects: clean, exit 0
    clean = tmp_path / "clean"
    write_segment(clean / "_schemas-0", [schema_record("orders-value", 1, 1, AVRO_V1),
                                         schema_record("orders-value", 2, 2, AVRO_V2)])
    write_segment(clean / "orders-0", [(b"k1", v1), (b"k2", v2)])
    r = CliRunner().invoke(cli, ["schemas", "--audit", str(clean)])
    assert r.exit_code == 0, r.output
    assert "no problem found" in r.output
