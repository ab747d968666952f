"""Coordinator records (``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``).

All three topics share one framing: key = int16 record type + key message (read at version = record type, as
Kafka's ``CoordinatorRecordSerde`` does), value = int16 value version + value message, null value = tombstone.
This module decodes that framing with Kafka's error texts and renders the JSON form DumpLogSegments prints from
3.8 (offsets) / 4.0 (transactions, share state).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.format.flexible import Field
from kafkalog_cli.format.layouts import SCHEMA_VERSION
from kafkalog_cli.internal_topics import schema as sc
from kafkalog_cli.internal_topics.releases import release_for
from kafkalog_cli.internal_topics.schema import Message


class UnknownRecordType(Exception):
    """Kafka's ``UnknownRecordTypeException``: a key type the serde has no schema for."""

    def __init__(self, record_type: int) -> None:
        super().__init__(f"Unknown record type {record_type}")
        self.record_type = record_type


class CoordinatorDecodeError(Exception):
    """A ``RuntimeException`` from the serde; ``str()`` is Kafka's message."""


@dataclass
class Decoded:
    record_type: int
    key_schema: Message
    key: dict[str, Any]
    value_version: int | None
    value_schema: Message | None
    value: dict[str, Any] | None
    #: the version the key message is read at: the record type for the keys of Kafka before 4.0 (their schemas'
    #: version is the type), 0 for 4.0's ``coordinator-key`` schemas (``"apiKey": N``, ``"validVersions": "0"``)
    key_version: int = 0

    @property
    def value_layout(self) -> int:
        """The version whose fields the value was read with: a negative version is read (and written as JSON) with
        version 0's, as Kafka's generated ``read``/``write`` test only ``_version >= N`` for fields added in version
        N (> 0), so no such field is present, and fields of version 0 on carry no lower check; its own version is
        still the one printed."""
        return 0 if self.value_version is None or self.value_version < 0 else self.value_version


def key_version(msg: Message, record_type: int) -> int:
    """The version a key schema reads ``record_type``'s key at (the same bytes either way: int16 type + fields)."""
    return record_type if msg.supports(record_type) else msg.valid[0]


def record_types(messages: list[Message]) -> tuple[dict[int, Message], dict[int, Message]]:
    """Record type -> key schema and value schema, from a generated table: a key's ``apiKey`` (4.0+ schemas), else
    the versions it declares (before 4.0 the key version is the record type); its value is the ``...Value`` twin."""
    by_name = {m.name: m for m in messages}
    keys: dict[int, Message] = {}
    values: dict[int, Message] = {}
    for m in messages:
        if not m.name.endswith("Key"):
            continue
        value = by_name.get(m.name[: -len("Key")] + "Value")
        if value is None:
            continue
        types = [m.api_key] if m.api_key is not None else list(range(m.valid[0], m.valid[1] + 1))
        for t in types:
            keys[t] = m
            values[t] = value
    return keys, values


def java_message(exc: Exception) -> str:
    """The ``getMessage()`` Java would give for the equivalent failure of a generated ``read``."""
    if isinstance(exc, sc.UnsupportedVersion):
        return exc.message
    if isinstance(exc, InvalidRecordError) and exc.message == "message ends early":
        return "null"  # BufferUnderflowException carries no message
    if isinstance(exc, InvalidRecordError):
        return exc.message
    return str(exc)


def check_non_nullable(fields: list[Field], values: dict[str, Any], version: int) -> None:
    """Raise Kafka's 'non-nullable field X was serialized as null' where flexible.decode returned None."""
    for f in fields:
        if f.name not in values or f.tag is not None:
            continue
        v = values[f.name]
        nullable = f.nullable is not None and f.nullable[0] <= version <= f.nullable[1]
        if v is None and not nullable and (isinstance(f.type, tuple) or f.type in ("string", "bytes", "records")):
            raise InvalidRecordError(f"non-nullable field {f.name} was serialized as null")
        if isinstance(f.type, tuple) and v is not None:
            kind, sub = f.type
            if kind == "struct":
                check_non_nullable(sub, v, version)
            elif isinstance(sub, tuple) and sub[0] == "struct":
                for item in v:
                    check_non_nullable(sub[1], item, version)


def read_checked(buf: bytes, msg: Message, version: int, pos: int) -> dict[str, Any]:
    values, _ = sc.read(buf, msg, version, pos=pos, strict_nulls=True)
    check_non_nullable(msg.fields, values, version)
    return values


def _read_any_version(value: bytes, msg: Message, version: int) -> dict[str, Any]:
    """A value at ``version``: the generated coordinator records' ``read`` checks no version, nor do their nested
    structs' (generated OffsetCommitValue.java:129-160 and GroupMetadataValue.MemberMetadata at 1eb7644: a v9
    OffsetCommitValue is read with the newest layout, "non-nullable field metadata was serialized as null"; a v5
    GroupMetadataValue decodes, members included; checked against 1eb7644's and 3.9.0-rc3's tools). A negative
    version is read with version 0's fields (``Decoded.value_layout``; checked against 1eb7644's and 3.9.0-rc3's
    tools, tests/test_dump_oracle_coordinator.py)."""
    if version < 0:
        return read_checked(value, dataclasses.replace(msg, valid=(0, max(msg.valid[1], 0))), 0, 2)
    if msg.supports(version) or msg.name.startswith(("ShareSnapshot", "ShareUpdate")):
        # share-group state (__share_group_state) keeps the version check: 1eb7644's ShareCoordinator wrote
        # ShareUpdateValue v1, a layout no release reads (KAFKA-18437), reported rather than misread
        # (tests/test_kafka44_oracle.py); the share groups' records of __consumer_offsets are read at any version
        return read_checked(value, msg, version, 2)
    return read_checked(value, dataclasses.replace(msg, valid=(msg.valid[0], version)), version, 2)


def deserialize(key: bytes, value: bytes | None, keys: dict[int, Message], values: dict[int, Message]) -> Decoded:
    """``CoordinatorRecordSerde.deserialize`` with its exceptions (UnknownRecordType / CoordinatorDecodeError)."""
    if len(key) < 2:
        raise CoordinatorDecodeError("Could not read version from key's buffer.")
    (rtype,) = SCHEMA_VERSION.unpack_from(key, 0)
    kmsg = keys.get(rtype)
    if kmsg is None:
        raise UnknownRecordType(rtype)
    kver = key_version(kmsg, rtype)
    try:
        kvals = read_checked(key, kmsg, kver, 2)
    except (InvalidRecordError, ValueError) as exc:
        raise CoordinatorDecodeError(
            f"Could not read record with version {rtype} from key's buffer due to: {java_message(exc)}."
        ) from None
    if value is None:
        return Decoded(rtype, kmsg, kvals, None, None, None, kver)
    vmsg = values.get(rtype)
    if vmsg is None:
        raise UnknownRecordType(rtype)
    if len(value) < 2:
        raise CoordinatorDecodeError("Could not read version from value's buffer.")
    (vver,) = SCHEMA_VERSION.unpack_from(value, 0)
    try:
        vvals = _read_any_version(value, vmsg, vver)
    except (InvalidRecordError, ValueError) as exc:
        raise CoordinatorDecodeError(
            f"Could not read record with version {vver} from value's buffer due to: {java_message(exc)}."
        ) from None
    return Decoded(rtype, kmsg, kvals, vver, vmsg, vvals, kver)


def key_json_text(d: Decoded) -> str:
    return sc.java_json({"type": str(d.record_type), "data": sc.to_json(d.key_schema.fields, d.key, d.key_version)})


def value_json_text(d: Decoded, data: dict[str, Any] | None = None) -> str:
    assert d.value_schema is not None and d.value_version is not None
    if data is None:
        data = sc.to_json(d.value_schema.fields, d.value, d.value_layout)
    return sc.java_json({"version": str(d.value_version), "data": data})


def missing_key_message(offset: int, decoder: str, version: tuple[int, int, int]) -> str:
    """The abort text for a null key (3.8+ JSON parsers)."""
    if release_for(version).missing_key_generic:
        return f"Failed to decode message at offset {offset} using the specified decoder (message had a missing key)"
    return f"Failed to decode message at offset {offset} using {decoder} decoder (message had a missing key)"


class JsonCoordinatorParser:
    """DumpLogSegments' JSON coordinator parser (offsets 3.8+, transactions and share state 4.0+)."""

    decoder_name = "offset topic"

    def __init__(self, keys: dict[int, Message], values: dict[int, Message], version: tuple[int, int, int]) -> None:
        self.keys = keys
        self.values = values
        self.version = version

    def value_data(self, d: Decoded) -> dict[str, Any] | None:
        """Hook for per-type rewriting of the value JSON (GroupMetadataValue's embedded protocol)."""
        return None

    def parse(self, record, batch) -> tuple[str | None, str | None]:  # noqa: ANN001
        if record.key is None:
            raise InvalidRecordError(missing_key_message(record.offset, self.decoder_name, self.version))
        try:
            d = deserialize(bytes(record.key), None if record.value is None else bytes(record.value), self.keys, self.values)
            key_text = key_json_text(d)
            if d.value is None:
                return key_text, "<DELETE>"
            return key_text, value_json_text(d, self.value_data(d))
        except UnknownRecordType as exc:
            return f"Unknown record type {exc.record_type} at offset {record.offset}, skipping.", None
        except CoordinatorDecodeError as exc:
            return f"Error at offset {record.offset}, skipping. {exc}", None


def structured(d: Decoded) -> dict[str, Any]:
    """The ``--format json`` view: always the full decoded key and value."""
    return {
        "key_type": d.record_type,
        "key_schema": d.key_schema.name,
        "key": sc.plain_json(sc.to_json(d.key_schema.fields, d.key, d.key_version)),
        "value_version": d.value_version,
        "value_schema": None if d.value_schema is None else d.value_schema.name,
        "value": None
        if d.value is None or d.value_schema is None
        else sc.plain_json(sc.to_json(d.value_schema.fields, d.value, d.value_layout)),
    }


def structured_any_layout(record, keys: dict[int, Message], values: dict[int, Message],  # noqa: ANN001
                          older: dict[int, Message], older_name: str) -> dict[str, Any]:
    """``--format json``'s decode with the newest layouts; a value only an older release's layout of its record type
    reads (``older``: type -> value schema) is decoded with that one and says so (``"layout": older_name``), so a
    partition of any release reads without ``--kafka-version``. Neither: the newest layout's error."""
    d = structured_or_error(record, keys, values)
    if "error" in d and record.key is not None and record.value is not None:
        old = structured_or_error(record, keys, {**values, **older})
        if "error" not in old and old.get("key_type") in older:
            return {**old, "layout": older_name}
    return d


def structured_or_error(record, keys: dict[int, Message], values: dict[int, Message]) -> dict[str, Any]:  # noqa: ANN001
    if record.key is None:
        return {"offset": record.offset, "error": "missing key"}
    try:
        d = deserialize(bytes(record.key), None if record.value is None else bytes(record.value), keys, values)
    except UnknownRecordType as exc:
        return {"offset": record.offset, "error": f"unknown record type {exc.record_type}"}
    except CoordinatorDecodeError as exc:
        return {"offset": record.offset, "error": str(exc)}
    return {"offset": record.offset, **structured(d)}
