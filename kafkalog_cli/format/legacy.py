"""Message format v0/v1 ("legacy") messages, including compressed wrapper messages.

A legacy log entry is ``offset(8) size(4)`` followed by one message ``crc(4) magic(1) attributes(1)
[timestamp(8), v1 only] keyLength(4) key valueLength(4) value``. A compressed wrapper's value is a codec stream
of inner entries of the same shape. v1 inner offsets are relative and resolved from the wrapper offset (the absolute
offset of the last inner message; 0 is special-cased for old librdkafka); v0 inner offsets are absolute.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar, Literal

from kafkalog_cli.errors import CorruptRecordError, InvalidRecordError, KafkalogError
from kafkalog_cli.format import codecs
from kafkalog_cli.format.batch import CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP_TYPE, Record
from kafkalog_cli.format.crc import crc32
from kafkalog_cli.format.layouts import (
    INT32,
    INT64,
    LEGACY_CRC_START,
    LEGACY_TIMESTAMP_OFFSET,
    LEGACY_V0,
    LEGACY_V0_RECORD_OVERHEAD,
    LEGACY_V1,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    SIZE_OFFSET,
)
from kafkalog_cli.format.text import int64

RECORD_OVERHEAD_V0 = LEGACY_V0_RECORD_OVERHEAD  # 14 (LegacyRecord.RECORD_OVERHEAD_V0)
RECORD_OVERHEAD_V1 = RECORD_OVERHEAD_V0 + LEGACY_V1.size - LEGACY_V0.size  # 22: plus the timestamp
_unpack_entry = LEGACY_V0.unpack_from  # offset, size, crc, magic, attributes
_unpack_i32 = INT32.unpack_from
_unpack_i64 = INT64.unpack_from
# the key length follows the message header: v0 attributes or v1 timestamp, counted from the entry's start
_KEY_LENGTH_AT = {0: LEGACY_V0.size, 1: LEGACY_V1.size}
_V1_HEADER = LEGACY_V1.size  # 26: a v1 message's fixed part, with the log overhead
_I32_SIZE = INT32.size  # the key and value length fields


class LegacyEntry:
    """One shallow v0/v1 entry (a plain message or a compressed wrapper) at ``position``."""

    __slots__ = ("position", "offset", "message_size", "crc", "magic", "attributes", "_timestamp", "_buf_end")

    is_legacy: ClassVar[Literal[True]] = True  # the tag of format.entry.Entry

    def __init__(self, buf: bytes | bytearray | memoryview, position: int, end: int | None = None) -> None:
        self.offset, self.message_size, self.crc, self.magic, attrs = _unpack_entry(buf, position)
        self.attributes = attrs & 0xFF
        self.position = position
        self._buf_end = len(buf) if end is None else end
        if self.magic not in (0, 1):
            raise InvalidRecordError(f"Invalid magic used in LegacyRecord: {self.magic}", position=position + MAGIC_OFFSET)
        if self.magic == 1:
            if position + _V1_HEADER > self._buf_end:
                raise CorruptRecordError("legacy v1 header runs past the end of the file", position=position)
            (self._timestamp,) = _unpack_i64(buf, position + LEGACY_TIMESTAMP_OFFSET)
        else:
            self._timestamp = -1

    @property
    def size(self) -> int:
        return self.message_size + LOG_OVERHEAD

    @property
    def base_offset(self) -> int:
        return self.offset

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def next_offset(self) -> int:
        return self.offset + 1

    @property
    def codec(self) -> int:
        return self.attributes & 0x07

    @property
    def timestamp_type(self) -> int:
        if self.magic == 0:
            return NO_TIMESTAMP_TYPE
        return LOG_APPEND_TIME if self.attributes & 0x08 else CREATE_TIME

    @property
    def timestamp(self) -> int:
        return self._timestamp

    max_timestamp = timestamp

    @property
    def is_control(self) -> bool:
        return False

    @property
    def is_transactional(self) -> bool:
        return False

    # Kafka's values for a legacy entry (AbstractLegacyRecordBatch): no delete horizon, no producer fields
    has_delete_horizon = False
    delete_horizon_ms: int | None = None
    partition_leader_epoch = -1
    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    last_sequence = -1

    def computed_crc(self, buf: bytes | memoryview) -> int:
        return crc32(buf[self.position + LEGACY_CRC_START : self.position + self.size])

    def is_valid(self, buf: bytes | memoryview) -> bool:
        if self.message_size < RECORD_OVERHEAD_V0 or self.position + self.size > len(buf):
            return False
        return self.crc == self.computed_crc(buf)

    def __repr__(self) -> str:
        return f"LegacyEntry(position={self.position}, offset={self.offset}, magic={self.magic}, size={self.size})"

    # ------------------------------------------------------------------------------------------------ records
    def key_value(self, buf: bytes | memoryview, copy: bool = True) -> tuple[bytes | None, bytes | None]:
        return _key_value(buf, self.position, self.magic, self.position + self.size, copy)

    def iter_records(self, buf: bytes | memoryview, limit: int = codecs.DEFAULT_LIMIT, *,
                     copy: bool = True) -> Iterator[Record]:
        """The message itself, or for a compressed wrapper its inner messages with absolute offsets. ``copy=False``:
        the inner keys and values are views into the decompressed payload (held once, see ``Batch.iter_records``)."""
        key, value = self.key_value(buf)
        valid = self.is_valid(buf)
        if self.codec == codecs.NONE:
            yield Record(
                offset=self.offset,
                timestamp=self._timestamp,
                key=key,
                value=value,
                crc=self.crc,
                is_valid=valid,
                magic=self.magic,
                attributes=self.attributes,
                position=self.position,
            )
            return
        yield from self._deep(value, limit, copy)

    def _deep(self, value: bytes | None, limit: int, copy: bool = True) -> Iterator[Record]:
        """The inner records, as Kafka's DeepRecordsIterator returns them: every inner message is read (and a bad
        one raises) before the first record; then the records one by one, a compressed one raising when reached."""
        codec = self.codec
        pos = self.position
        if codec == codecs.ZSTD:
            raise InvalidRecordError(
                f"Invalid wrapper compressionType found in legacy deep record iterator {self.magic}", position=pos
            )
        codecs.codec_name(codec)
        if value is None:
            raise InvalidRecordError(
                f"Found invalid compressed record set with null value (magic = {self.magic})", position=pos
            )
        try:
            data = memoryview(codecs.decompress(codec, value, limit, magic=self.magic))  # slices: views, not copies
        except KafkalogError as exc:
            exc.position = pos
            raise
        inner: list[tuple[int, bytes | None, bytes | None, LegacyEntry]] = []
        n = len(data)
        ipos = 0
        while n - ipos >= LOG_OVERHEAD:
            (isize,) = _unpack_i32(data, ipos + SIZE_OFFSET)
            if isize < RECORD_OVERHEAD_V0:
                raise CorruptRecordError(
                    f"Record size is less than the minimum record overhead ({RECORD_OVERHEAD_V0})",
                    position=pos,
                    expected=f"inner message size >= {RECORD_OVERHEAD_V0}",
                    found=f"{isize} at byte {ipos} of the decompressed payload",
                )
            if n - ipos < isize + LOG_OVERHEAD:
                break
            try:
                entry = LegacyEntry(data, ipos)
                ikey, ival = entry.key_value(data, copy)
            except KafkalogError as exc:
                exc.message += f" (inner message at byte {ipos} of the decompressed payload)"
                exc.position = pos
                raise
            inner.append((entry.offset, ikey, ival, entry))  # a compressed one fails when iterated (below)
            ipos += entry.size
        if not inner:
            raise InvalidRecordError("Found invalid compressed record set with no inner records", position=pos)
        if self.magic == 1:
            if self.offset == 0:
                abs_base = 0
            else:
                last_inner = inner[-1][0]
                if self.offset < last_inner:
                    raise InvalidRecordError(
                        f"Found invalid wrapper offset in compressed v1 message set, wrapper offset '{self.offset}' "
                        f"is less than the last inner message offset '{last_inner}' and it is not zero.",
                        position=pos,
                    )
                abs_base = self.offset - last_inner
        else:
            abs_base = -1
        log_append = self.timestamp_type == LOG_APPEND_TIME
        for ioff, ikey, ival, entry in inner:
            if entry.codec != codecs.NONE:
                # Kafka reads every inner message first and rejects a compressed one only when the iterator reaches
                # it (AbstractLegacyRecordBatch.DeepRecordsIterator.makeNext): the records before it are returned
                raise InvalidRecordError("Inner messages must not be compressed", position=pos)
            if entry.magic == 1:
                ts = self._timestamp if log_append else entry.timestamp
            else:
                ts = -1
            yield Record(
                offset=int64(abs_base + ioff) if abs_base >= 0 else ioff,
                timestamp=ts,
                key=ikey,
                value=ival,
                crc=entry.crc,
                is_valid=entry.is_valid(data),
                magic=entry.magic,
                attributes=entry.attributes,
                position=pos,
            )


def _sized(buf: bytes | memoryview, p: int, end: int, what: str, copy: bool = True) -> tuple[bytes | None, int]:
    """Read an int32 length and that many bytes (a negative length is null, as Kafka reads it)."""
    if p + _I32_SIZE > end:
        raise InvalidRecordError(f"legacy message is too short for its {what} length", position=p)
    (n,) = _unpack_i32(buf, p)
    p += _I32_SIZE
    if n < 0:
        return None, p
    if p + n > end:
        raise InvalidRecordError(f"legacy message {what} runs past the message", position=p, expected=f"{n} bytes", found=f"{end - p}")
    return (bytes(buf[p : p + n]) if copy else buf[p : p + n]), p + n  # type: ignore[return-value]  # as Record's


def _key_value(buf: bytes | memoryview, position: int, magic: int, end: int,
               copy: bool = True) -> tuple[bytes | None, bytes | None]:
    # key length follows the header: log overhead, crc, magic, attributes (+ timestamp for v1)
    p = position + _KEY_LENGTH_AT[magic]
    if p + _I32_SIZE > end:
        raise CorruptRecordError("legacy message is too short for its key length", position=position, found=f"{end - position} bytes")
    key, p = _sized(buf, p, end, "key", copy)
    value, _p = _sized(buf, p, end, "value", copy)
    return key, value
