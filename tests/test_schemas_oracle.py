"""The registry's topic and a data topic written by Kafka's own storage code (../shared/kafka-real's Write), then
compacted by Kafka's own cleaner (Clean): the ``_schemas`` records follow the registry's documented key/value JSON,
the payloads come from confluent-kafka's serializers (prefix and header GUID) against its mock registry."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from kafka_real import write_partition
from schema_world import AVRO_V1, AVRO_V2, config_key, mode_key, schema_key, schema_value

from kafkalog_cli.cli.main import cli
from kafkalog_cli.ops.schemas import load_registry

pytestmark = pytest.mark.oracle
pytest.importorskip("confluent_kafka.schema_registry")


def _s(b: bytes | None) -> str | None:
    return None if b is None else b.decode()


def _plan_records(topic: str, recs: list[dict], *, compact: bool) -> dict:
    ops: list[dict] = [{"op": "append", "records": [r]} for r in recs]
    ops.append({"op": "roll"})
    cfg = {"cleanup.policy": "compact"} if compact else {}
    return {"topic": topic, "partition": 0, "config": cfg, "ops": ops, "shutdown": "clean"}


def test_registry_and_payloads_written_by_kafka(kafka_real, tmp_path: Path) -> None:
    from confluent_kafka.schema_registry import header_schema_id_serializer
    from confluent_kafka.schema_registry._sync.mock_schema_registry_client import MockSchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = MockSchemaRegistryClient({"url": "mock://oracle"})
    s1, s2 = AvroSerializer(client, AVRO_V1), AvroSerializer(client, AVRO_V2,
                                                            conf={"schema.id.serializer": header_schema_id_serializer})
    data, expect = [], []
    for i in range(4):
        hdrs: list = []
        ctx = SerializationContext("orders", MessageField.VALUE, hdrs)
        v = s1({"id": i, "item": f"item-number-{i}"}, ctx) if i < 2 else s2({"id": i, "item": f"item-number-{i}", "qty": i}, ctx)
        rec: dict = {"key": f"k{i}", "value": {"hex": v.hex()}}
        if hdrs:
            rec["headers"] = [[k, {"hex": hv.hex()}] for k, hv in hdrs]
        data.append(rec)
        expect.append(AvroDeserializer(client)(v, SerializationContext("orders", MessageField.VALUE, hdrs)))
    v1, v2 = (client.get_version("orders-value", n) for n in (1, 2))
    sch = [
        (schema_key("orders-value", 1), schema_value("orders-value", 1, v1.schema_id, AVRO_V1, guid=str(v1.guid))),
        (schema_key("orders-value", 2), schema_value("orders-value", 2, v2.schema_id, AVRO_V2, guid=str(v2.guid))),
        (config_key(None), b'{"compatibilityLevel":"BACKWARD_TRANSITIVE"}'),
        (mode_key("orders-value"), b'{"mode":"IMPORT"}'),
        (schema_key("orders-value", 1), schema_value("orders-value", 1, v1.schema_id, AVRO_V1, deleted=True,
                                                     guid=str(v1.guid))),
        (schema_key("orders-value", 1), None),  # hard delete
    ]
    logs = tmp_path / "logs"
    pdir = write_partition(kafka_real, logs, _plan_records(
        "_schemas", [{"key": _s(k), "value": _s(v)} for k, v in sch], compact=True))
    other = write_partition(kafka_real, tmp_path / "w2", _plan_records("orders", data, compact=False))
    shutil.move(str(other), str(logs / "orders-0"))

    r = CliRunner().invoke(cli, ["schemas", "--format", "json", str(logs)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    state = {(v["subject"], v["version"]): v for v in doc["versions"]}
    assert state[("orders-value", 1)]["hard_deleted"] and state[("orders-value", 1)]["schema"] == AVRO_V1
    assert not state[("orders-value", 2)]["deleted"]
    assert doc["global_compatibility"] == "BACKWARD_TRANSITIVE" and doc["mode"] == {"orders-value": "IMPORT"}

    r = CliRunner().invoke(cli, ["dump", "--value-decoder", "schema-registry", "--format", "json",
                                 str(logs / "orders-0")])
    assert r.exit_code == 0, r.output
    got = [json.loads(ln)["decoded"]["value"] for ln in r.output.splitlines() if '"type":"record"' in ln]
    assert [g["value"] for g in got] == expect
    assert [g["source"] for g in got] == ["prefix", "prefix", "header", "header"]

    r = CliRunner().invoke(cli, ["schemas", "--audit", "--format", "json", str(logs)])
    assert r.exit_code == 1
    audit = json.loads(r.output)
    assert [(u["schema_id"], u["state"], u["first_offset"], u["last_offset"]) for u in audit["id_uses"]] == [
        (v1.schema_id, "hard-deleted", 0, 1)]
    assert audit["mixed_id_forms"] == ["orders-0"]

    # Kafka's cleaner compacts the registry's topic: the replaced segment stays as a .deleted leftover, where the
    # hard-deleted schema's content is still readable; without the leftover it is gone
    res = kafka_real.json("Clean", "--in", str(pdir), "--work", str(tmp_path / "clean"), "--now-ms", "1800000000000",
                          "--first-dirty", "0", "--config", "min.cleanable.dirty.ratio=0.01",
                          "--config", "min.compaction.lag.ms=0", "--config", "delete.retention.ms=0")
    assert not res.get("error"), res
    cleaned = Path(res["partitionDir"])
    assert any(p.name.endswith(".log.deleted") for p in cleaned.iterdir()), sorted(p.name for p in cleaned.iterdir())
    reg = load_registry([str(cleaned)])
    v = reg.find("orders-value", 1)
    assert v is not None and v.hard_deleted and v.schema == AVRO_V1
    for p in cleaned.iterdir():
        if p.name.endswith(".deleted"):
            p.unlink()
    reg = load_registry([str(cleaned)])
    assert reg.find("orders-value", 1) is None  # the cleaner kept only the tombstone of version 1
    assert any("hard delete of orders-value version 1" in n and "compacted away" in n for n in reg.notes)
    assert reg.find("orders-value", 2) is not None
