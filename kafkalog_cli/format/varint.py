"""Zig-zag varints/varlongs (Kafka's ByteUtils) and unsigned varints (flexible message encoding)."""

from __future__ import annotations

from kafkalog_cli.errors import InvalidRecordError


def read_varint(buf: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, int]:
    """Decode a zig-zag varint (at most 5 bytes) at ``pos``; return (value, next position)."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise InvalidRecordError("premature end of buffer while reading a varint", position=pos)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 28:
            raise InvalidRecordError("Varint is too long, the most significant bit in the 5th byte is set", position=pos)
    result &= 0xFFFFFFFF
    return (result >> 1) ^ -(result & 1), pos


def read_varlong(buf: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, int]:
    """Decode a zig-zag varlong (at most 10 bytes) at ``pos``; return (value, next position)."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise InvalidRecordError("premature end of buffer while reading a varlong", position=pos)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 63:
            raise InvalidRecordError("Varlong is too long, most significant bit in the 10th byte is set", position=pos)
    result &= 0xFFFFFFFFFFFFFFFF
    return (result >> 1) ^ -(result & 1), pos


def read_uvarint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    """Decode an unsigned LEB128 varint (at most 5 bytes) at ``pos``."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise InvalidRecordError("premature end of buffer while reading an unsigned varint", position=pos)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & 0xFFFFFFFF, pos
        shift += 7
        if shift > 28:
            # ByteUtils.illegalVarintException: the int the five bytes made, in hex (every release 2.8-4.0)
            raise InvalidRecordError("Varint is too long, the most significant bit in the 5th byte is set, converted "
                                     f"value: {result & 0xFFFFFFFF:x}", position=pos)


def write_uvarint(value: int, out: bytearray) -> None:
    value &= 0xFFFFFFFFFFFFFFFF
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_varint(value: int, out: bytearray) -> None:
    """Zig-zag encode a signed 32-bit value."""
    write_uvarint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF, out)


def write_varlong(value: int, out: bytearray) -> None:
    """Zig-zag encode a signed 64-bit value."""
    write_uvarint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF, out)


def varint_size(value: int) -> int:
    v = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n
