"""A fast reader of the common ``__cluster_metadata`` records, for the replay of long logs (``kafkalog metadata``).

Why a module of its own: the generic schema reader (``schema.read`` over ``format.flexible``) costs ~14 µs per
record, and a metadata log of a large cluster is a million PartitionChangeRecords. This reader is compiled from the
same schema tables (``schemas_metadata.MESSAGES``: whatever versions and fields they hold) per (apiKey, version),
for flexible messages whose fields are all fixed-width numbers, bools, uuids, strings or arrays of int32/uuid
(PartitionChangeRecord, PartitionRecord, TopicRecord, Fence/Unfence, ConfigRecord, FeatureLevelRecord, ...). It
returns the same dict the generic reader does, or None to decline: a record it does not cover, a tag it does not
know for that version, a length that does not add up, trailing bytes. The caller then uses the generic reader,
which words the problem exactly (``tests/test_metadata_fast.py`` checks both agree).
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from typing import Any

from kafkalog_cli.format.flexible import FIXED_WIDTH, Field
from kafkalog_cli.internal_topics.schema import Message

_b64 = base64.urlsafe_b64encode
_I32 = FIXED_WIDTH["int32"].unpack_from
_INTS: dict[int, Callable[[bytes, int], tuple[int, ...]]] = {}


class _Decline(Exception):
    pass


def _uv(buf: bytes, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    v, shift = 0, 0
    while True:
        if pos >= len(buf) or shift > 28:
            raise _Decline
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v, pos
        shift += 7


Step = Callable[[bytes, int], tuple[Any, int]]


def _length(buf: bytes, pos: int, nullable: bool) -> tuple[int, int]:
    """A compact length (uvarint N+1; 0 is null, -1 returned, declined where the field is not nullable)."""
    n, pos = _uv(buf, pos)
    if n == 0 and not nullable:
        raise _Decline
    return n - 1, pos


def _step(t: Any, nullable: bool) -> Step | None:
    if not isinstance(t, str | tuple) or (isinstance(t, tuple) and not all(isinstance(x, str) for x in t)):
        return None  # structs: the generic reader
    if t in FIXED_WIDTH:
        st = FIXED_WIDTH[t]
        size, unpack = st.size, st.unpack_from

        def fixed(buf: bytes, pos: int) -> tuple[Any, int]:
            if pos + size > len(buf):
                raise _Decline
            return unpack(buf, pos)[0], pos + size
        return fixed
    if t == "bool":
        def boolean(buf: bytes, pos: int) -> tuple[Any, int]:
            if pos >= len(buf):
                raise _Decline
            return buf[pos] != 0, pos + 1
        return boolean
    if t == "uuid":
        cache: dict[bytes, str] = {}

        def uuid(buf: bytes, pos: int) -> tuple[Any, int]:
            if pos + 16 > len(buf):
                raise _Decline
            raw = buf[pos:pos + 16]
            text = cache.get(raw)
            if text is None:
                text = _b64(raw).decode()[:22]
                if len(cache) < 1 << 16:
                    cache[raw] = text
            return text, pos + 16
        return uuid
    if t == "string":
        def string(buf: bytes, pos: int) -> tuple[Any, int]:
            n, pos = _length(buf, pos, nullable)
            if n < 0:
                return None, pos
            if pos + n > len(buf):
                raise _Decline
            try:
                return buf[pos:pos + n].decode("utf-8"), pos + n
            except UnicodeDecodeError:
                raise _Decline from None
        return string
    if t == ("array", "int32") or t == ("array", "uuid"):
        width = 4 if t[1] == "int32" else 16
        is_int = t[1] == "int32"

        def array(buf: bytes, pos: int) -> tuple[Any, int]:
            n, pos = _length(buf, pos, nullable)
            if n < 0:
                return None, pos
            end = pos + n * width
            if end > len(buf):
                raise _Decline
            if is_int:
                if n == 0:
                    return [], end
                if n == 1:
                    return [_I32(buf, pos)[0]], end
                st = _INTS.get(n)
                if st is None:
                    st = _INTS[n] = struct.Struct(f">{n}i").unpack_from
                return list(st(buf, pos)), end
            return [_b64(buf[p:p + 16]).decode()[:22] for p in range(pos, end, 16)], end
        return array
    return None


def _in(v: int, rng: tuple[int, int] | None) -> bool:
    return rng is not None and rng[0] <= v <= rng[1]


def compile_reader(msg: Message, version: int) -> Callable[[bytes, int], dict[str, Any]] | None:
    """A reader of ``msg`` at ``version`` from ``buf[pos:]`` to the end, or None when it is not covered."""
    if not msg.supports(version) or not msg.is_flexible(version):
        return None
    fixed: list[tuple[str, Step]] = []
    tagged: dict[int, tuple[str, Step]] = {}
    for f in msg.fields:
        if not _in(version, f.versions):
            continue
        step = _step(f.type, _in(version, f.nullable))
        if step is None:
            return None
        if f.tag is None:
            fixed.append((f.name, step))
        else:
            tagged[f.tag] = (f.name, step)

    def read(buf: bytes, pos: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, step in fixed:
            out[name], pos = step(buf, pos)
        ntags, pos = _uv(buf, pos)
        for _ in range(ntags):
            tag, pos = _uv(buf, pos)
            size, pos = _uv(buf, pos)
            tf = tagged.get(tag)
            if tf is None:
                raise _Decline  # unknown tagged fields: the generic reader skips them
            value, end = tf[1](buf, pos)
            if end != pos + size:
                raise _Decline
            out[tf[0]] = value
            pos = end
        if pos != len(buf):
            raise _Decline
        return out
    return read


class FastReader:
    """``read(value) -> (MetadataRecordType name, values)`` or None to decline, for frame version 1 values."""

    def __init__(self, messages: list[Message], enum_name: Callable[[Message], str]) -> None:
        self._by_key = {m.api_key: m for m in messages if m.api_key is not None}
        self._names = {k: enum_name(m) for k, m in self._by_key.items()}
        self._readers: dict[tuple[int, int], Callable[[bytes, int], dict[str, Any]] | None] = {}

    def read(self, value: bytes | None) -> tuple[str, dict[str, Any]] | None:
        if not value or len(value) < 3 or value[0] != 1 or value[1] >= 0x80 or value[2] >= 0x80:
            return None
        key = (value[1], value[2])
        reader = self._readers.get(key, _MISSING)
        if reader is _MISSING:
            msg = self._by_key.get(key[0])
            reader = None if msg is None else compile_reader(msg, key[1])
            self._readers[key] = reader
        if reader is None:
            return None
        try:
            return self._names[key[0]], reader(value, 3)
        except (_Decline, IndexError, struct.error):
            return None


def _missing(buf: bytes, pos: int) -> dict[str, Any]:
    raise AssertionError("sentinel")


_MISSING: Callable[[bytes, int], dict[str, Any]] = _missing
__all__ = ["FastReader", "compile_reader", "Field"]
