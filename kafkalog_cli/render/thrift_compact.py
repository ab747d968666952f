"""Thrift's compact protocol (Apache Thrift's doc/specs/thrift-compact-protocol.md), generically: a struct read into
a list of ``[field id, type, value]`` and written back byte for byte the same. What ``render/parquet_parts`` needs to
move the offsets of a Parquet footer (a ``FileMetaData`` of parquet-format's parquet.thrift). Values: ints for the
integer types, bytes for binary and for a double (its 8 bytes, never changed), bool, a list for a struct,
``(element type, [values])`` for a list or set, ``(key type, value type, [(k, v)])`` for a map.
"""

from __future__ import annotations

from typing import Any

STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT, UUID = range(14)
BOOL = TRUE  # a list's element type for booleans (compact: 1; elements are a byte each, 1 true 2 false)


class _Reader:
    def __init__(self, data: Any) -> None:
        self.b = bytes(data)
        self.i = 0

    def byte(self) -> int:
        v = self.b[self.i]
        self.i += 1
        return v

    def varint(self) -> int:
        shift = out = 0
        while True:
            c = self.byte()
            out |= (c & 0x7F) << shift
            if not c & 0x80:
                return out
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, t: int) -> Any:
        if t in (TRUE, FALSE):  # inside a list or map: a byte of its own
            return self.byte() == TRUE
        if t == BYTE:
            return self.byte()
        if t in (I16, I32, I64):
            return self.zigzag()
        if t == DOUBLE:  # kept as its 8 bytes (never changed here)
            v = self.b[self.i:self.i + 8]
            self.i += 8
            return v
        if t == BINARY:
            n = self.varint()
            v = self.b[self.i:self.i + n]
            self.i += n
            return v
        if t == UUID:
            v = self.b[self.i:self.i + 16]
            self.i += 16
            return v
        if t in (LIST, SET):
            h = self.byte()
            n, et = h >> 4, h & 0x0F
            if n == 15:
                n = self.varint()
            return (et, [self.value(et) for _ in range(n)])
        if t == MAP:
            n = self.varint()
            if not n:
                return (0, 0, [])
            kv = self.byte()
            kt, vt = kv >> 4, kv & 0x0F
            return (kt, vt, [(self.value(kt), self.value(vt)) for _ in range(n)])
        if t == STRUCT:
            return self.struct()
        raise ValueError(f"thrift compact: unknown type {t}")

    def struct(self) -> list[Any]:
        fields: list[Any] = []
        last = 0
        while True:
            h = self.byte()
            if h == STOP:
                return fields
            delta, t = h >> 4, h & 0x0F
            fid = last + delta if delta else self.zigzag()
            if t in (TRUE, FALSE):
                fields.append([fid, t, t == TRUE])
            else:
                fields.append([fid, t, self.value(t)])
            last = fid


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


def _write_value(out: bytearray, t: int, v: Any) -> None:
    if t in (TRUE, FALSE):
        out.append(TRUE if v else FALSE)
    elif t == BYTE:
        out.append(v & 0xFF)
    elif t in (I16, I32, I64):
        out += _zigzag(v)
    elif t == DOUBLE:
        out += v
    elif t == BINARY:
        out += _varint(len(v)) + v
    elif t == UUID:
        out += v
    elif t in (LIST, SET):
        et, items = v
        out.append((len(items) << 4 | et) if len(items) < 15 else (0xF0 | et))
        if len(items) >= 15:
            out += _varint(len(items))
        for x in items:
            _write_value(out, et, x)
    elif t == MAP:
        kt, vt, items = v
        out += _varint(len(items))
        if items:
            out.append(kt << 4 | vt)
            for k, x in items:
                _write_value(out, kt, k)
                _write_value(out, vt, x)
    elif t == STRUCT:
        _write_struct(out, v)
    else:
        raise ValueError(f"thrift compact: unknown type {t}")


def _write_struct(out: bytearray, fields: list[Any]) -> None:
    last = 0
    for fid, t, v in fields:
        ft = (TRUE if v else FALSE) if t in (TRUE, FALSE) else t
        delta = fid - last
        if 0 < delta <= 15:
            out.append(delta << 4 | ft)
        else:
            out.append(ft)
            out += _zigzag(fid)
        if t not in (TRUE, FALSE):
            _write_value(out, t, v)
        last = fid
    out.append(STOP)


def read_struct(data: Any) -> list[Any]:
    """The struct encoded in ``data`` (which it must fill exactly)."""
    r = _Reader(data)
    s = r.struct()
    if r.i != len(r.b):
        raise ValueError("thrift compact: bytes after the struct")
    return s


def write_struct(fields: list[Any]) -> bytes:
    out = bytearray()
    _write_struct(out, fields)
    return bytes(out)


def get(fields: list[Any], fid: int, default: Any = None) -> Any:
    for f in fields:
        if f[0] == fid:
            return f[2]
    return default


def set_value(fields: list[Any], fid: int, t: int, v: Any) -> None:
    """Set field ``fid`` (added in field-id order when absent)."""
    for f in fields:
        if f[0] == fid:
            f[1], f[2] = t, v
            return
    k = next((i for i, f in enumerate(fields) if f[0] > fid), len(fields))
    fields.insert(k, [fid, t, v])


def add(fields: list[Any], fid: int, delta: int) -> None:
    """Add ``delta`` to integer field ``fid`` when present and not 0 (an offset of 0: none, as Arrow writes the
    deprecated ``ColumnChunk.file_offset``)."""
    for f in fields:
        if f[0] == fid:
            if f[2]:
                f[2] += delta
            return
