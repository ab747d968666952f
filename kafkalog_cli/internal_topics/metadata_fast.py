"""A fast reader of the common ``__cluster_metadata`` records, for the replay of long logs (``kafkalog metadata``).

Why a module of its own: the generic schema reader (``schema.read`` over ``format.flexible``) costs ~14 µs per
record, and a metadata log of a large cluster is a million PartitionChangeRecords. This reader is compiled from the
same schema tables (``schemas_metadata.MESSAGES``: whatever versions and fields they hold) per (apiKey, version),
for flexible messages whose fields are all fixed-width numbers, bools, uuids, strings or arrays of int32/uuid
(PartitionChangeRecord, PartitionRecord, TopicRecord, Fence/Unfence, ConfigRecord, FeatureLevelRecord, ...). It
returns the same dict the generic reader does, or None to decline: a record it does not cover, a tag it does not
know for that version, a length that does not add up, trailing bytes. The caller then uses the generic reader,
which words the problem exactly (``tests/test_metadata_fast.py`` checks both agree).

``CompiledReplay`` goes one step further for the three records a long log is made of (TopicRecord, PartitionRecord,
PartitionChangeRecord): the compiled accelerator (``_accel.metadata_apply``, ``accel/metadata_replay.c``) walks a
plain batch's records, decodes them by a program compiled here from the same schema tables (``compile_program``) and
applies them to the image as ``metadata_image.Replayer`` does (a PartitionChangeRecord changes the ``Partition`` in
place, where the reference makes a new one: so it runs only where nothing outside the image holds a Partition, i.e.
without ``Replayer.on_partition``), stopping at the first record it does not take, which the Python path then
applies. It is None where the accelerator is not built or ``KAFKALOG_NO_ACCEL=1``; the replay is
the same either way (``tests/test_metadata_accel.py`` compares the images).
"""

from __future__ import annotations

import base64
import os
import struct
from collections.abc import Callable
from typing import Any

from kafkalog_cli.format.flexible import FIXED_WIDTH, Field
from kafkalog_cli.internal_topics.metadata_image import MIGRATING, Image, Partition, Replayer, Topic
from kafkalog_cli.internal_topics.schema import Message

try:  # pragma: no cover - depends on the build
    from kafkalog_cli import _accel
except ImportError:  # pragma: no cover
    _accel = None  # type: ignore[assignment]  # the stub (_accel.pyi) types the built module

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

# ------------------------------------------------------------------------------------------------- compiled replay
# The record types the compiled replay applies (MetadataRecordType names -> the kind codes of metadata_replay.c) and
# the fields it knows: slot order and type codes shared with metadata_replay.c (MS_*, MT_*); a field of another name
# or type in some version leaves that version to Python.
KINDS = {"TOPIC_RECORD": 1, "PARTITION_RECORD": 2, "PARTITION_CHANGE_RECORD": 3}
_INT32, _INT8, _UUID, _STRING, _ARRAY_INT32, _ARRAY_UUID = 1, 2, 3, 4, 5, 6
_NULLABLE = 0x80
SLOTS: tuple[tuple[str, int], ...] = (
    ("partitionId", _INT32), ("topicId", _UUID), ("replicas", _ARRAY_INT32), ("isr", _ARRAY_INT32),
    ("removingReplicas", _ARRAY_INT32), ("addingReplicas", _ARRAY_INT32), ("leader", _INT32),
    ("leaderRecoveryState", _INT8), ("leaderEpoch", _INT32), ("partitionEpoch", _INT32),
    ("directories", _ARRAY_UUID), ("eligibleLeaderReplicas", _ARRAY_INT32), ("lastKnownElr", _ARRAY_INT32),
    ("name", _STRING),
)
_TYPE_CODES: dict[Any, int] = {"int32": _INT32, "int8": _INT8, "uuid": _UUID, "string": _STRING,
                               ("array", "int32"): _ARRAY_INT32, ("array", "uuid"): _ARRAY_UUID}
# Partition's fields in its declaration order (metadata_replay.c's PF_*)
PARTITION_FIELDS = ("replicas", "directories", "isr", "removing_replicas", "adding_replicas", "leader",
                    "leader_recovery_state", "leader_epoch", "partition_epoch", "elr", "last_known_elr")


def compile_program(msg: Message, version: int, kind: int) -> bytes | None:
    """The field program of ``msg`` at ``version`` for ``metadata_apply``: ``[kind, nfixed, (slot, type)*, ntagged,
    (tag, slot, type)*]``, or None where ``compile_reader`` would not read it or a field is not one it knows."""
    if not msg.supports(version) or not msg.is_flexible(version):
        return None
    slots = {name: (i, code) for i, (name, code) in enumerate(SLOTS)}
    fixed: list[int] = []
    tagged: list[int] = []
    for f in msg.fields:
        if not _in(version, f.versions):
            continue
        known = slots.get(f.name)
        code = _TYPE_CODES.get(f.type)
        if known is None or code != known[1] or (f.tag is not None and not 0 <= f.tag < 256):
            return None
        code |= _NULLABLE if _in(version, f.nullable) else 0
        if f.tag is None:
            fixed += [known[0], code]
        else:
            tagged += [f.tag, known[0], code]
    if len(fixed) // 2 > 255 or len(tagged) // 3 > 255:
        return None
    return bytes([kind, len(fixed) // 2, *fixed, len(tagged) // 3, *tagged])


def accel_enabled() -> bool:
    return _accel is not None and hasattr(_accel, "metadata_apply") and not os.environ.get("KAFKALOG_NO_ACCEL")


_NO_STOP = (1 << 63) - 1


class CompiledReplay:
    """Applies the hot records of plain batches to a ``Replayer``'s image in C (see the module head).

    ``apply(buf, pos, end, batch, count, skip, start, stop_offset, stop_time)`` -> (pos, applied, first, last) or
    None: ``metadata_apply`` over ``buf[pos:end]``, the batch's last ``count`` records; it sets the image's offset and
    time to the last record applied. It takes nothing while the replayer is inside a metadata transaction (the
    records wait for the EndTransactionRecord) or reports each partition change (``--history``)."""

    def __init__(self, rep: Replayer, messages: list[Message], enum_name: Callable[[Message], str]) -> None:
        self._rep = rep
        by_key = {m.api_key: m for m in messages if m.api_key is not None and enum_name(m) in KINDS}
        programs: list[tuple[bytes | None, ...] | None] = [None] * 128
        for key, m in by_key.items():
            if 0 <= key < 128:
                top = min(m.valid[1], 127)
                programs[key] = tuple(compile_program(m, v, KINDS[enum_name(m)]) for v in range(top + 1))
        im: Image = rep.image
        self._ctx = (im.topics, im.names, Topic, Partition, MIGRATING, tuple(programs),
                     tuple(Partition.__dict__[f] for f in PARTITION_FIELDS), Topic.__dict__["partitions"])
        self._apply = _accel.metadata_apply

    def apply(self, buf: Any, pos: int, end: int, base_offset: int, base_ts: int, max_ts: int, log_append: bool,
              count: int, skip: bool, start: int, stop_offset: int | None,
              stop_time: int | None) -> tuple[int, int, int, int] | None:
        rep = self._rep
        if rep.in_transaction or rep.on_partition is not None:
            return None
        got = self._apply(buf, pos, end, base_offset, base_ts, max_ts, log_append, count, skip, start,
                          _NO_STOP if stop_offset is None else stop_offset,
                          _NO_STOP if stop_time is None else stop_time, self._ctx)
        if got is None:
            return None
        pos, n, first, last, ts = got
        if n:
            rep.image.offset = last
            rep.image.time_ms = ts
        return pos, n, first, last


def compiled_replay(rep: Replayer, messages: list[Message],
                    enum_name: Callable[[Message], str]) -> CompiledReplay | None:
    """A ``CompiledReplay`` of ``rep``, or None where the accelerator is not built or is turned off."""
    return CompiledReplay(rep, messages, enum_name) if accel_enabled() else None


__all__ = ["CompiledReplay", "FastReader", "compile_program", "compile_reader", "compiled_replay", "Field"]
