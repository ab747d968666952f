"""Test helpers for the Schema Registry tests: ``_schemas`` records as the registry writes them (its documented
key/value JSON: Confluent's SchemaRegistryKey/SchemaValue/ConfigValue/ModeValue/DeleteSubjectValue) and log dirs
holding them next to data partitions, written with the project's encoder (the oracle tests write the same records
through Kafka's own Write instead)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kafkalog_cli.format.encoder import RecordSpec, encode_batch


def _j(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def schema_key(subject: str, version: int) -> bytes:
    return _j({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1})


def schema_value(subject: str, version: int, schema_id: int, schema: str, *, schema_type: str | None = None,
                 references: list[dict] | None = None, deleted: bool = False, guid: str | None = None) -> bytes:
    v: dict[str, Any] = {"subject": subject, "version": version, "id": schema_id}
    if schema_type is not None:
        v["schemaType"] = schema_type
    if references:
        v["references"] = references
    v["schema"] = schema
    v["deleted"] = deleted
    if guid is not None:
        v["guid"] = guid
    return _j(v)


def config_key(subject: str | None) -> bytes:
    return _j({"keytype": "CONFIG", "subject": subject, "magic": 0})


def mode_key(subject: str | None) -> bytes:
    return _j({"keytype": "MODE", "subject": subject, "magic": 0})


def delete_subject_key(subject: str) -> bytes:
    return _j({"keytype": "DELETE_SUBJECT", "subject": subject, "magic": 0})


NOOP_KEY = _j({"keytype": "NOOP", "magic": 0})


def schema_record(subject: str, version: int, schema_id: int, schema: str, **kw: Any) -> tuple[bytes, bytes]:
    return schema_key(subject, version), schema_value(subject, version, schema_id, schema, **kw)


def write_segment(pdir: Path, records: list[tuple[bytes | None, bytes | None] | tuple[bytes | None, bytes | None, list]],
                  *, base_offset: int = 0, name: str | None = None, ts: int = 1_700_000_000_000) -> Path:
    """One batch per record (as the registry's producer sends them), offsets from ``base_offset``."""
    pdir.mkdir(parents=True, exist_ok=True)
    out = bytearray()
    for i, rec in enumerate(records):
        key, value = rec[0], rec[1]
        headers = rec[2] if len(rec) > 2 else []  # type: ignore[misc]
        out += encode_batch([RecordSpec(key=key, value=value, headers=headers)], base_offset=base_offset + i,
                            base_timestamp=ts + base_offset + i, max_timestamp=ts + base_offset + i)
    path = pdir / (name or f"{base_offset:020d}.log")
    path.write_bytes(bytes(out))
    return path


AVRO_V1 = json.dumps({"type": "record", "name": "Order", "namespace": "shop",
                      "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}]})
AVRO_V2 = json.dumps({"type": "record", "name": "Order", "namespace": "shop",
                      "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"},
                                 {"name": "qty", "type": "int", "default": 1}]})
# breaks BACKWARD: a new field without a default cannot be read from v2 data... by v3's reader from v2's bytes
AVRO_V3_BREAKING = json.dumps({"type": "record", "name": "Order", "namespace": "shop",
                               "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"},
                                          {"name": "qty", "type": "int", "default": 1},
                                          {"name": "price", "type": "double"}]})
