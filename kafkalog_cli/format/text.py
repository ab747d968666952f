"""Byte-to-text helpers that reproduce Java's behaviour (UTF-8 replacement, int32 wrap-around)."""

from __future__ import annotations

import re

_JAVA_SURROGATE = re.compile(rb"\xED[\xA0-\xBF][\x80-\xBF]?")


def java_utf8(data: bytes | memoryview) -> str:
    """Decode UTF-8 like Java's ``new String(bytes, UTF_8)``.

    Python's ``errors="replace"`` agrees with Java except for encoded UTF-16 surrogates (``ED A0..BF xx``), which
    Java replaces by one U+FFFD per unit (measured with OpenJDK 17, errata-dump E17).
    """
    b = bytes(data)
    if b"\xed" in b:
        b = _JAVA_SURROGATE.sub("\ufffd".encode(), b)
    return b.decode("utf-8", errors="replace")


def int32(v: int) -> int:
    """Wrap an integer to Java's signed 32-bit range."""
    v &= 0xFFFFFFFF
    return v - 0x100000000 if v & 0x80000000 else v


def int64(v: int) -> int:
    """Wrap an integer to Java's signed 64-bit range (long arithmetic overflows silently in Kafka's code)."""
    v &= 0xFFFFFFFFFFFFFFFF
    return v - 0x10000000000000000 if v & 0x8000000000000000 else v


INT_MAX = 0x7FFFFFFF


def increment_sequence(sequence: int, increment: int) -> int:
    """DefaultRecordBatch.incrementSequence, evaluated in Java int arithmetic."""
    if sequence > int32(INT_MAX - increment):
        return int32(increment - int32(INT_MAX - sequence) - 1)
    return int32(sequence + increment)


def decrement_sequence(sequence: int, decrement: int) -> int:
    """DefaultRecordBatch.decrementSequence (used for a producer snapshot's firstSequence)."""
    if sequence < decrement:
        return int32(INT_MAX - int32(decrement - sequence) + 1)
    return int32(sequence - decrement)
