"""A table-driven reader/writer for Kafka's message encoding (the generated ``*Data`` classes).

Schemas are data: a list of ``Field(name, type, versions, ...)``. Used for KRaft control records here and reused by
the internal-topic decoders. Output dictionaries keep schema order and the lowerCamelCase names that Kafka's
generated JSON converters print.
"""

from __future__ import annotations

import base64
import struct
import uuid as _uuid
from dataclasses import dataclass
from typing import Any

from kafkalog_cli.errors import InvalidRecordError
from kafkalog_cli.format.varint import read_uvarint, write_uvarint


@dataclass(frozen=True)
class Field:
    name: str  # lowerCamelCase JSON name
    type: Any  # "int8" | "int16" | "uint16" | "int32" | "uint32" | "int64" | "float64" | "bool" | "string" | "bytes"
    #           | "uuid" | "records" | ("array", T) | ("struct", [Field...])
    versions: tuple[int, int] = (0, 0x7FFF)  # inclusive range; a field outside is skipped
    nullable: tuple[int, int] | None = None  # versions where the field may be null
    tag: int | None = None  # tagged field id (flexible versions only)
    default: Any = None


def _in(v: int, rng: tuple[int, int] | None) -> bool:
    return rng is not None and rng[0] <= v <= rng[1]


def kafka_uuid(raw: bytes) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def uuid_bytes(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "==")


# the fixed-width scalars by schema type name (also read by internal_topics/metadata_fast.py)
FIXED_WIDTH = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}


class Reader:
    def __init__(self, buf: bytes | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end
        # raise at a null in a non-nullable field, where a generated ``read`` throws ("non-nullable field X was
        # serialized as null"), before reading on; off: the null is returned and the caller decides
        self.strict_nulls = False

    def need(self, n: int) -> None:
        if n < 0 or self.pos + n > self.end:
            raise InvalidRecordError(
                "message ends early", position=self.pos, expected=f"{n} more bytes", found=f"{self.end - self.pos}"
            )

    def fixed(self, kind: str) -> Any:
        st = FIXED_WIDTH[kind]
        self.need(st.size)
        (v,) = st.unpack_from(self.buf, self.pos)
        self.pos += st.size
        return v

    def uvarint(self) -> int:
        v, self.pos = read_uvarint(self.buf, self.pos, self.end)
        return v

    def raw(self, n: int) -> bytes:
        self.need(n)
        b = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return b


def read_struct(r: Reader, fields: list[Field], version: int, flexible: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tagged = {f.tag: f for f in fields if f.tag is not None and _in(version, f.versions)}
    for f in fields:
        if f.tag is not None:
            continue
        if not _in(version, f.versions):
            continue
        out[f.name] = _read_value(r, f.type, version, flexible, _in(version, f.nullable))
        if r.strict_nulls and out[f.name] is None and not _in(version, f.nullable) and (
                isinstance(f.type, tuple) or f.type in ("string", "bytes", "records")):
            raise InvalidRecordError(f"non-nullable field {f.name} was serialized as null", position=r.pos)
    if flexible:
        ntags = r.uvarint()
        for _ in range(ntags):
            tag = r.uvarint()
            size = r.uvarint()
            tf = tagged.get(tag)
            if tf is None:
                # unknown tagged fields are skipped, as Kafka does: read as bytes (Readable.readUnknownTaggedField ->
                # readArray, whose message a size past the end gets)
                _need_array(r, size)
                r.pos += size
                continue
            r.need(size)
            sub = Reader(r.buf, r.pos, r.pos + size)
            out[tf.name] = _read_value(sub, tf.type, version, flexible, _in(version, tf.nullable))
            r.pos += size
    return out


def _need_array(r: Reader, n: int) -> None:
    """ByteBufferAccessor.readArray's check (ByteBufferAccessor.java:57-62 at 1eb7644): a generated ``read`` of
    bytes, or of an unknown tagged field, fails with this message when the size runs past the end."""
    if n > r.end - r.pos:
        raise InvalidRecordError(f"Error reading byte array of {n} byte(s): only {r.end - r.pos} byte(s) available",
                                 position=r.pos)


def _read_len(r: Reader, flexible: bool, wide: bool = False) -> int:
    if flexible:
        return r.uvarint() - 1
    return r.fixed("int32" if wide else "int16")


def _read_value(r: Reader, t: Any, version: int, flexible: bool, nullable: bool) -> Any:
    if isinstance(t, tuple):
        kind, sub = t
        if kind == "array":
            n = r.uvarint() - 1 if flexible else r.fixed("int32")
            if n < 0:
                return None
            if n > r.end - r.pos:
                # the generated read's own check and message (MessageDataGenerator.java:658 at 1eb7644)
                raise InvalidRecordError(f"Tried to allocate a collection of size {n}, but there are only "
                                         f"{r.end - r.pos} bytes remaining.", position=r.pos)
            return [_read_value(r, sub, version, flexible, False) for _ in range(n)]
        if kind == "struct":
            if nullable:
                if r.fixed("int8") < 0:
                    return None
            return read_struct(r, sub, version, flexible)
        raise ValueError(kind)
    if t in FIXED_WIDTH:
        return r.fixed(t)
    if t == "bool":
        return r.fixed("int8") != 0
    if t == "uuid":
        return kafka_uuid(r.raw(16))
    if t == "string":
        n = _read_len(r, flexible)
        if n < 0:
            return None
        _need_array(r, n)  # Readable.readString reads through readArray
        return r.raw(n).decode("utf-8", errors="replace")
    if t in ("bytes", "records"):
        n = _read_len(r, flexible, wide=True)
        if n < 0:
            return None
        _need_array(r, n)
        return r.raw(n)
    raise ValueError(t)


def decode(buf: bytes | memoryview, fields: list[Field], version: int, flexible: bool, *, pos: int = 0, exact: bool = False) -> dict[str, Any]:
    r = Reader(buf, pos)
    out = read_struct(r, fields, version, flexible)
    if exact and r.pos != r.end:
        raise InvalidRecordError(f"{r.end - r.pos} unexpected trailing bytes after the message", position=r.pos)
    return out


# ------------------------------------------------------------------------------------------------------- writer
def write_struct(out: bytearray, fields: list[Field], values: dict[str, Any], version: int, flexible: bool) -> None:
    tagged: list[tuple[int, Field]] = []
    for f in fields:
        if not _in(version, f.versions):
            continue
        if f.tag is not None:
            if f.name in values and values[f.name] is not None:
                tagged.append((f.tag, f))
            continue
        _write_value(out, f.type, values.get(f.name, f.default), version, flexible, _in(version, f.nullable))
    if flexible:
        write_uvarint(len(tagged), out)
        for tag, f in sorted(tagged, key=lambda x: x[0]):
            buf = bytearray()
            _write_value(buf, f.type, values[f.name], version, flexible, _in(version, f.nullable))
            write_uvarint(tag, out)
            write_uvarint(len(buf), out)
            out += buf


def _write_len(out: bytearray, n: int, flexible: bool, wide: bool = False) -> None:
    if flexible:
        write_uvarint(n + 1, out)
    else:
        out += struct.pack(">i" if wide else ">h", n)


def _write_value(out: bytearray, t: Any, v: Any, version: int, flexible: bool, nullable: bool) -> None:
    if isinstance(t, tuple):
        kind, sub = t
        if kind == "array":
            items = v or []
            if v is None and nullable:
                _write_len(out, -1, flexible, wide=True)
                return
            if flexible:
                write_uvarint(len(items) + 1, out)
            else:
                out += struct.pack(">i", len(items))
            for item in items:
                _write_value(out, sub, item, version, flexible, False)
            return
        if kind == "struct":
            if nullable:
                if v is None:
                    out += b"\xff"
                    return
                out += b"\x01"
            write_struct(out, sub, v or {}, version, flexible)
            return
    if t in FIXED_WIDTH:
        out += FIXED_WIDTH[t].pack(0 if v is None else v)
        return
    if t == "bool":
        out += b"\x01" if v else b"\x00"
        return
    if t == "uuid":
        out += uuid_bytes(v) if v else b"\x00" * 16
        return
    if t == "string":
        if v is None:
            _write_len(out, -1, flexible)
            return
        b = v.encode()
        _write_len(out, len(b), flexible)
        out += b
        return
    if t in ("bytes", "records"):
        if v is None:
            _write_len(out, -1, flexible, wide=True)
            return
        _write_len(out, len(v), flexible, wide=True)
        out += v
        return
    raise ValueError(t)


def encode(fields: list[Field], values: dict[str, Any], version: int, flexible: bool) -> bytes:
    out = bytearray()
    write_struct(out, fields, values, version, flexible)
    return bytes(out)


def random_uuid() -> str:
    return kafka_uuid(_uuid.uuid4().bytes)
