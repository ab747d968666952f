"""The framing schema-registry serializers put around a key or value: which schema wrote these bytes.

Why a module of its own: the framing is bytes (no registry needed to read it), and three forms exist side by side
in real topics, sometimes in one partition:

* **Confluent prefix**: magic byte ``0x00``, a 4-byte big-endian schema id, then (Protobuf only) the message-index
  list, then the Avro binary / Protobuf / JSON bytes (Confluent's ``SchemaId.from_bytes``, confluent-kafka
  ``schema_registry/common/serde.py``; Java ``AbstractKafkaSchemaSerDe``).
* **Header ids** (Confluent 8.x serializers' ``header_schema_id_serializer``): the value is the bare payload; the
  record header ``__value_schema_id`` (``__key_schema_id`` for a key) holds ``0x00`` + int id or ``0x01`` +
  16-byte GUID, then the Protobuf message indexes.
* **Apicurio**: magic ``0x00`` and an 8-byte global id (its default ``IdHandler``), or the global id in the header
  ``apicurio.value.globalId`` / ``apicurio.key.globalId`` (8 bytes, big-endian).

The message-index list is a zig-zag varint count followed by that many zig-zag varints; a count of 0 means
``[0]`` (the first message of the file).  Nothing here decodes the payload itself (``internal_topics/schema_decode``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.format.varint import read_varint

MAGIC_ID = 0  # Confluent magic byte: a 4-byte id follows (Apicurio: an 8-byte global id)
MAGIC_GUID = 1  # Confluent 8.x header form: a 16-byte GUID follows
CONFLUENT_PREFIX_LEN = 5  # the magic byte and the 4-byte id before a Confluent-framed payload
KEY_SCHEMA_ID_HEADER = b"__key_schema_id"
VALUE_SCHEMA_ID_HEADER = b"__value_schema_id"
APICURIO_KEY_HEADER = b"apicurio.key.globalId"
APICURIO_VALUE_HEADER = b"apicurio.value.globalId"
WIRE_FORMS = ("confluent", "apicurio")


class WireError(KafkalogError):
    """Bytes that do not carry a schema reference: ``kind`` is ``bad-magic`` (a poison pill: not written by a
    schema-registry serializer), ``truncated`` or ``bad-indexes``."""

    def __init__(self, kind: str, message: str, **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.kind = kind


@dataclass(frozen=True)
class SchemaRef:
    """Where the schema reference of one key or value came from and what it says."""

    source: str  # "prefix" | "header" | "apicurio-prefix" | "apicurio-header"
    schema_id: int | None
    guid: str | None
    payload_start: int  # where the serialized payload starts in the key/value bytes
    indexes_start: int | None = None  # Protobuf: where the message-index list starts (in the bytes it is read from)
    header: bytes | None = None  # the header value, for the header forms


def read_message_indexes(buf: bytes, pos: int) -> tuple[list[int], int]:
    """The Protobuf message-index list at ``pos``: (indexes, position after it). ``[0]`` for a count of 0."""
    end = len(buf)
    try:
        count, pos = read_varint(buf, pos, end)
        if count < 0 or count > end - pos:
            raise WireError("bad-indexes", "invalid Protobuf message-index count", position=pos,
                            expected=f"0..{end - pos}", found=str(count))
        if count == 0:
            return [0], pos
        out = []
        for _ in range(count):
            v, pos = read_varint(buf, pos, end)
            out.append(v)
        return out, pos
    except WireError:
        raise
    except KafkalogError as exc:
        raise WireError("truncated", "the Protobuf message-index list is cut short", position=exc.position) from None


def _header(headers: list[tuple[bytes, bytes | None]] | None, name: bytes) -> bytes | None:
    """The first header called ``name`` (keys as bytes, or str as the Python clients give them)."""
    for k, v in headers or ():
        key = k.encode() if isinstance(k, str) else bytes(k)
        if key == name and v is not None:
            return bytes(v)
    return None


def header_ref(value: bytes, source: str = "header") -> SchemaRef:
    """A ``__value_schema_id`` / ``__key_schema_id`` header's value: ``0x00`` + int id or ``0x01`` + GUID."""
    if not value:
        raise WireError("truncated", "empty schema-id header", expected="0x00 + 4-byte id or 0x01 + 16-byte GUID",
                        found="0 bytes")
    magic = value[0]
    if magic == MAGIC_ID:
        if len(value) < 5:
            raise WireError("truncated", "schema-id header cut short", expected="5 bytes or more",
                            found=f"{len(value)} bytes")
        return SchemaRef(source, int.from_bytes(value[1:5], "big", signed=True), None, 0, 5, value)
    if magic == MAGIC_GUID:
        if len(value) < 17:
            raise WireError("truncated", "schema-GUID header cut short", expected="17 bytes or more",
                            found=f"{len(value)} bytes")
        return SchemaRef(source, None, str(uuid.UUID(bytes=bytes(value[1:17]))), 0, 17, value)
    raise WireError("bad-magic", "unknown magic byte in the schema-id header", expected="0x00 or 0x01",
                    found=f"0x{magic:02x}")


def find_ref(data: bytes, headers: list[tuple[bytes, bytes | None]] | None = None, *, is_key: bool = False,
             wire: str = "confluent") -> SchemaRef:
    """The schema reference of one key or value: the header forms first (as confluent-kafka's
    ``dual_schema_id_deserializer``), else the prefix of ``data``. ``wire`` picks the prefix form: ``confluent``
    (4-byte id) or ``apicurio`` (8-byte global id). Raises ``WireError``."""
    h = _header(headers, KEY_SCHEMA_ID_HEADER if is_key else VALUE_SCHEMA_ID_HEADER)
    if h is not None:
        return header_ref(h)
    h = _header(headers, APICURIO_KEY_HEADER if is_key else APICURIO_VALUE_HEADER)
    if h is not None:
        if len(h) != 8:
            raise WireError("truncated", "Apicurio global-id header is not 8 bytes", expected="8 bytes",
                            found=f"{len(h)} bytes")
        return SchemaRef("apicurio-header", int.from_bytes(h, "big", signed=True), None, 0, None, h)
    if not data:
        raise WireError("truncated", "empty bytes: no schema-registry framing", expected="magic byte 0x00 + schema id",
                        found="0 bytes")
    if data[0] != MAGIC_ID:
        raise WireError("bad-magic", "not schema-registry framed (bad magic byte: a poison pill)",
                        expected="magic byte 0x00", found=f"0x{data[0]:02x}")
    if wire == "apicurio":
        if len(data) < 9:
            raise WireError("truncated", "cut short inside the Apicurio prefix", expected="9 bytes or more",
                            found=f"{len(data)} bytes")
        return SchemaRef("apicurio-prefix", int.from_bytes(data[1:9], "big", signed=True), None, 9, 9)
    if len(data) < 5:
        raise WireError("truncated", "cut short inside the schema-id prefix", expected="5 bytes or more",
                        found=f"{len(data)} bytes")
    return SchemaRef("prefix", int.from_bytes(data[1:5], "big", signed=True), None, 5, 5)


def confluent_prefix(schema_id: int, indexes: list[int] | None = None) -> bytes:
    """The Confluent prefix for ``schema_id`` (and a Protobuf message-index list): the encoder side, for tests and
    the export bundle's examples."""
    from kafkalog_cli.format.varint import write_varint

    out = bytearray(b"\x00" + schema_id.to_bytes(4, "big", signed=True))
    if indexes is not None:
        if indexes == [0]:
            write_varint(0, out)
        else:
            write_varint(len(indexes), out)
            for i in indexes:
                write_varint(i, out)
    return bytes(out)
