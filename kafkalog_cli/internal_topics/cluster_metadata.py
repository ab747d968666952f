"""``--cluster-metadata-decoder``: KRaft ``__cluster_metadata`` records and ``.checkpoint`` snapshots.

Value framing (``AbstractApiMessageSerde``): uvarint frame version (1; 0 in 2.8, errata E11), uvarint apiKey,
uvarint record version, then the record in the flexible encoding with no trailing bytes. Kafka 2.8 (the KRaft
preview, ``raft/.../metadata/MetadataRecordSerde.java`` at tag 2.8.0) reads frame version 0 with its own schemas
(``schemas_metadata_28``: mostly not flexible, so fixed-width length prefixes), and checks neither the size of the
varints nor trailing bytes. Output is
``{"type":"<ENUM_NAME>","version":<v>,"data":{...}}``; every failure is printed inline as
``Error at <offset>, skipping. <message>`` (the tool never aborts here).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from kafkalog_cli.errors import InvalidRecordError, KafkalogError
from kafkalog_cli.format.varint import read_uvarint
from kafkalog_cli.internal_topics import coordinator as co
from kafkalog_cli.internal_topics import schema as sc
from kafkalog_cli.internal_topics.releases import release_for
from kafkalog_cli.internal_topics.schemas_metadata import MESSAGES
from kafkalog_cli.internal_topics.schemas_metadata_28 import BY_KEY_28
from kafkalog_cli.internal_topics.schemas_metadata_30 import MESSAGES as MESSAGES_30
from kafkalog_cli.internal_topics.schemas_metadata_36 import MESSAGES as MESSAGES_36

BY_KEY: dict[int, sc.Message] = {m.api_key: m for m in MESSAGES if m.api_key is not None}


def _unchecked(messages: list[sc.Message]) -> dict[int, sc.Message]:
    """An older release's record schemas as its generated readers read them: the record's own ``read`` checks no
    version (3.6.2's PartitionChangeRecord, valid version 0, reads a version-1 record with its version-0 fields);
    each nested struct's reader does ("Can't read version 3 of BrokerEndpoint", checked with 3.6.2's classes), which
    ``ClusterMetadataParser`` applies after the read (``_RELEASE_VALID``)."""
    return {m.api_key: dataclasses.replace(m, valid=(0, 0x7FFF), name=m.name) for m in messages if m.api_key is not None}


def _has_struct(v: Any) -> bool:
    """Whether a decoded value holds a nested struct (a dict, or a list with a dict) that its reader read."""
    if isinstance(v, dict):
        return True
    if isinstance(v, list):
        return any(isinstance(x, dict) for x in v)
    return False


RELEASE_SCHEMAS: dict[str, dict[int, sc.Message]] = {
    "newest": BY_KEY,
    "3.0": _unchecked(MESSAGES_30),
    "3.6": _unchecked(MESSAGES_36),
}
# the versions each older release's nested-struct readers accept (the record's validVersions)
_RELEASE_VALID: dict[str, dict[int, tuple[int, int]]] = {
    "3.0": {m.api_key: m.valid for m in MESSAGES_30 if m.api_key is not None},
    "3.6": {m.api_key: m.valid for m in MESSAGES_36 if m.api_key is not None},
}


def enum_name(msg: sc.Message) -> str:
    """MetadataRecordType constant: the message name in upper snake case (RegisterBrokerRecord -> REGISTER_BROKER_RECORD)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", msg.name).upper()


class MetadataParseError(Exception):
    pass


def _uvarint_short(buf: bytes, pos: int, entity: str) -> tuple[int, int]:
    try:
        v, pos = read_uvarint(buf, pos, len(buf))
    except (KafkalogError, IndexError, ValueError):
        raise MetadataParseError(f"Error while reading {entity}") from None
    if v > 0x7FFF:
        raise MetadataParseError(f"Value for {entity} was too large.")
    return v, pos


def read_frame(value: bytes | None, frame_version: int = 1, by_key: dict[int, sc.Message] = BY_KEY,
               unknown: str = "Unknown metadata id",
               struct_valid: dict[int, tuple[int, int]] | None = None) -> tuple[sc.Message, int, dict[str, Any]]:
    """``AbstractApiMessageSerde.read``: (schema, record version, values) or MetadataParseError(Kafka's text)."""
    if value is None:
        raise MetadataParseError("Error while reading frame version")
    frame, pos = _uvarint_short(value, 0, "frame version")
    if frame != frame_version:
        if frame == 0:
            raise MetadataParseError(
                "Could not deserialize metadata record with frame version 0. Note that upgrades from the preview "
                "release of KRaft in 2.8 to newer versions are not supported."
            )
        raise MetadataParseError(
            f"Could not deserialize metadata record due to unknown frame version {frame}"
            f"(only frame version {frame_version} is supported)"
        )
    api_key, pos = _uvarint_short(value, pos, "type")
    version, pos = _uvarint_short(value, pos, "version")
    msg = by_key.get(api_key)
    if msg is None:
        raise MetadataParseError(f"org.apache.kafka.common.errors.UnsupportedVersionException: {unknown} {api_key}")
    try:
        values, end = sc.read(value, msg, version, pos=pos)
        co.check_non_nullable(msg.fields, values, version)
    except (InvalidRecordError, ValueError):
        raise MetadataParseError(f"Failed to deserialize record with type {api_key}") from None
    valid = struct_valid.get(api_key) if struct_valid is not None else None
    if valid is not None and not valid[0] <= version <= valid[1] and any(map(_has_struct, values.values())):
        raise MetadataParseError(f"Failed to deserialize record with type {api_key}")  # a nested struct's reader
    if end != len(value):
        raise MetadataParseError(f"Found {len(value) - end} byte(s) of garbage after {api_key}")
    return msg, version, values


def read_frame_28(value: bytes | None) -> tuple[sc.Message, int, dict[str, Any]]:
    """Kafka 2.8's ``MetadataRecordSerde.read`` (tag 2.8.0, raft/src/main/java/org/apache/kafka/raft/metadata/
    MetadataRecordSerde.java:50-63) with 2.8's schemas. Java's messages: an unknown frame version, "Unknown metadata
    id", the generated read's "Can't read version"; a buffer underflow has no message ("null")."""
    if value is None:
        raise MetadataParseError("null")
    try:
        frame, pos = read_uvarint(value, 0, len(value))
        if frame != 0:
            raise MetadataParseError(
                f"Could not deserialize metadata record due to unknown frame version {frame}"
                "(only frame version 0 is supported)"
            )
        api_key, pos = read_uvarint(value, pos, len(value))
        version, pos = read_uvarint(value, pos, len(value))
    except (KafkalogError, IndexError, ValueError):
        raise MetadataParseError("null") from None
    api_key, version = _java_short(api_key), _java_short(version)
    msg = BY_KEY_28.get(api_key)
    if msg is None:
        raise MetadataParseError(f"Unknown metadata id {api_key}")
    try:
        values, _end = sc.read(value, msg, version, pos=pos)
    except sc.UnsupportedVersion as exc:
        raise MetadataParseError(exc.message) from None
    except (InvalidRecordError, ValueError):
        raise MetadataParseError("null") from None
    return msg, version, values


def _java_short(v: int) -> int:
    """Java's ``(short)`` cast of an int."""
    v &= 0xFFFF
    return v - 0x10000 if v >= 0x8000 else v


class ClusterMetadataParser:
    """DumpLogSegments' ClusterMetadataLogMessageParser: no key, payload = JSON or the inline error."""

    def __init__(self, version: tuple[int, int, int]) -> None:
        release = release_for(version)
        self.frame_version = release.metadata_frame_version
        self.by_key = RELEASE_SCHEMAS[release.metadata_schemas]
        self.valid = _RELEASE_VALID.get(release.metadata_schemas)

    def parse(self, record, batch) -> tuple[str | None, str | None]:  # noqa: ANN001
        try:
            value = None if record.value is None else bytes(record.value)
            if self.frame_version == 0:
                msg, ver, values = read_frame_28(value)
            else:
                msg, ver, values = read_frame(value, self.frame_version, self.by_key, struct_valid=self.valid)
        except MetadataParseError as exc:
            return None, f"Error at {record.offset}, skipping. {exc}"
        return None, sc.java_json({"type": enum_name(msg), "version": ver, "data": sc.to_json(msg.fields, values, ver)})


def make(version: tuple[int, int, int]) -> ClusterMetadataParser:
    return ClusterMetadataParser(version)


def decode_json(record) -> dict[str, Any]:  # noqa: ANN001
    """One record for ``--format json``; a frame version 0 value is read as Kafka 2.8 wrote it."""
    value = None if record.value is None else bytes(record.value)
    try:
        if value and value[0] == 0:
            msg, ver, values = read_frame_28(value)
        else:
            msg, ver, values = read_frame(value)
    except MetadataParseError as exc:
        return {"offset": record.offset, "error": str(exc)}
    return {
        "offset": record.offset,
        "type": enum_name(msg),
        "api_key": msg.api_key,
        "version": ver,
        "data": sc.plain_json(sc.to_json(msg.fields, values, ver)),
    }


def encode_frame(msg: sc.Message, values: dict[str, Any], version: int, frame_version: int = 1) -> bytes:
    """Inverse of ``read_frame`` (tests and fixtures)."""
    from kafkalog_cli.format.varint import write_uvarint

    out = bytearray()
    write_uvarint(frame_version, out)
    write_uvarint(msg.api_key or 0, out)
    write_uvarint(version, out)
    return bytes(out) + sc.encode(msg, values, version)
