"""Magic v2 record batches and their records (DefaultRecordBatch / DefaultRecord).

The 61-byte header (``layouts.BATCH_V2``) is read with one ``unpack_from`` on the segment's memoryview; records are
decoded only when asked for (``iter_records``), so header walks (verify, index rebuild, seek) never touch record bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from kafkalog_cli.errors import CorruptRecordError, InvalidRecordError, KafkalogError
from kafkalog_cli.format import codecs
from kafkalog_cli.format.crc import crc32c
from kafkalog_cli.format.layouts import BATCH_V2, LOG_OVERHEAD, V2_RECORDS_COUNT_OFFSET
from kafkalog_cli.format.text import increment_sequence, int64

# the names the rest of the code (and the tests) import from here (and LOG_OVERHEAD), derived from the declaration
HEADER = BATCH_V2.struct
HEADER_SIZE = BATCH_V2.size  # 61
CRC_OFFSET = BATCH_V2.offset("crc")  # 17
ATTRIBUTES_OFFSET = BATCH_V2.offset("attributes")  # 21
_unpack_header = BATCH_V2.unpack_from

CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP_TYPE = 0, 1, -1
TIMESTAMP_TYPE_NAMES = {CREATE_TIME: "CreateTime", LOG_APPEND_TIME: "LogAppendTime", NO_TIMESTAMP_TYPE: "NoTimestampType"}

ATTR_CODEC_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40


@dataclass(slots=True)
class Record:
    """One record, v2 or legacy. ``key``/``value`` are None for null; sizes are -1 then."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[bytes, bytes | None]] = field(default_factory=list)
    sequence: int = -1
    attributes: int = 0
    # legacy (v0/v1) messages only
    crc: int | None = None
    is_valid: bool | None = None
    magic: int = 2
    position: int = -1  # byte position of the record within the decoded payload (diagnostics)

    @property
    def key_size(self) -> int:
        return -1 if self.key is None else len(self.key)

    @property
    def value_size(self) -> int:
        return -1 if self.value is None else len(self.value)


class Batch:
    """Header of one magic >= 2 record batch at ``position`` in a segment."""

    __slots__ = (
        "position",
        "base_offset",
        "batch_length",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "records_count",
        "size",
        "last_offset",
    )

    def __init__(self, buf: bytes | memoryview, position: int) -> None:
        (
            self.base_offset,
            self.batch_length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.records_count,
        ) = _unpack_header(buf, position)
        self.attributes = attributes & 0xFF  # Kafka reads only the low byte
        self.position = position
        # derived once: these are read several times per batch on every hot path
        self.size = self.batch_length + LOG_OVERHEAD
        self.last_offset = int64(self.base_offset + self.last_offset_delta)

    # ----------------------------------------------------------------------------------------- derived fields
    is_legacy: ClassVar[Literal[False]] = False  # the tag of format.entry.Entry

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def codec(self) -> int:
        return self.attributes & ATTR_CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & ATTR_TIMESTAMP_TYPE else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & ATTR_DELETE_HORIZON)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.attributes & ATTR_DELETE_HORIZON else None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == -1:
            return -1
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def timestamp(self) -> int:
        """The timestamp DumpLogSegments prints on the batch line (MaxTimestamp)."""
        return self.max_timestamp

    def computed_crc(self, buf: bytes | memoryview) -> int:
        return crc32c(buf[self.position + ATTRIBUTES_OFFSET : self.position + self.size])

    def is_valid(self, buf: bytes | memoryview) -> bool:
        """Kafka's isValid: size >= 61 and the stored CRC equals CRC-32C of bytes [21, size)."""
        if self.size < HEADER_SIZE or self.position + self.size > len(buf):
            return False
        return self.crc == self.computed_crc(buf)

    def __repr__(self) -> str:
        return (
            f"Batch(position={self.position}, base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"count={self.records_count}, size={self.size}, codec={self.codec}, crc={self.crc})"
        )

    # ----------------------------------------------------------------------------------------- records
    def payload(self, buf: bytes | memoryview, limit: int = codecs.DEFAULT_LIMIT) -> tuple[bytes | memoryview, int]:
        """Return (records bytes, start) : a view into ``buf`` when uncompressed, decompressed bytes otherwise."""
        start = self.position + HEADER_SIZE
        end = self.position + self.size
        if self.codec == codecs.NONE:
            return buf, start
        codecs.codec_name(self.codec)  # raises for ids 5..7
        try:
            data = codecs.decompress(self.codec, buf[start:end], limit, magic=2)
        except KafkalogError as exc:
            exc.position = start
            raise
        return memoryview(data), 0  # slices of a view do not copy (slices of a bytearray would)

    def iter_records(self, buf: bytes | memoryview, limit: int = codecs.DEFAULT_LIMIT, *,
                     copy: bool = True) -> Iterator[Record]:
        """Decode the batch's records.

        Mirrors DefaultRecordBatch's iterators: uncompressed records are yielded one by one (an error surfaces after
        the good records before it), compressed batches are decoded completely before the first record is yielded.
        The error after the last declared record ("records still remaining") is raised before that record is
        yielded, as Kafka does. ``copy=False`` (callers that only look at sizes and offsets): keys and values of a
        compressed batch are views into the decompressed payload instead of copies, so a decompression bomb is held
        in memory once, not twice.
        """
        if self.records_count < 0:
            raise InvalidRecordError(
                f"Found invalid record count {self.records_count} in magic v{self.magic} batch",
                position=self.position + V2_RECORDS_COUNT_OFFSET,
            )
        if self.size < HEADER_SIZE:
            raise CorruptRecordError(
                "batch is smaller than the v2 header",
                position=self.position,
                expected=f"size >= {HEADER_SIZE}",
                found=str(self.size),
            )
        if self.records_count == 0:
            return  # Kafka yields nothing for a count of 0, whatever the payload bytes (errata-dump E14)
        if self.streams_payload:
            yield from self._stream_records(buf, limit, copy)
            return
        data, start = self.payload(buf, limit)
        if data is buf:
            yield from _decode_records(self, buf, start, self.position + self.size, 0)
            return
        records: list[Record] | None = None
        try:
            if self.records_count <= LIST_RECORDS:
                records = list(_decode_records(self, data, 0, len(data), 0, copy=copy))
            else:  # check them all first (Kafka's full decode), then decode again one at a time: no list of them
                for _ in _decode_records(self, data, 0, len(data), 0, copy=False):
                    pass
        except InvalidRecordError as exc:
            exc.message += f" (at byte {exc.position} of the decompressed payload)"
            exc.position = self.position + HEADER_SIZE
            raise
        if records is not None:
            yield from records
        else:
            yield from _decode_records(self, data, 0, len(data), 0, copy=copy)

    @property
    def streams_payload(self) -> bool:
        """A compressed payload of ``codecs.STREAM_THRESHOLD`` bytes or more is decoded as a stream (never whole)."""
        return codecs.streams(self.codec, self.size - HEADER_SIZE)

    def _stream_records(self, buf: bytes | memoryview, limit: int, copy: bool) -> Iterator[Record]:
        """``iter_records`` of a large compressed payload in bounded memory: one pass decompresses and checks every
        record (Kafka decodes the whole batch before the first record, so an error still comes before any record),
        a second pass decompresses again and yields them; neither holds the payload or a list of records."""
        start, end = self.position + HEADER_SIZE, self.position + self.size
        codecs.codec_name(self.codec)  # raises for ids 5..7
        try:
            for _ in _stream_decode(self, codecs.iter_decompress(self.codec, buf[start:end], limit)):
                pass
        except InvalidRecordError as exc:
            exc.message += f" (at byte {exc.position} of the decompressed payload)"
            exc.position = start
            raise
        except KafkalogError as exc:
            exc.position = start
            raise
        yield from _stream_decode(self, codecs.iter_decompress(self.codec, buf[start:end], limit))


# a compressed batch of more records than this is checked, then decoded again record by record (not listed)
LIST_RECORDS = 4096
_WINDOW_KEEP = 1 << 20  # consumed bytes dropped from the stream window once this many accumulate


def _stream_decode(batch: Batch, chunks: Iterator[bytes | bytearray | memoryview]) -> Iterator[Record]:
    """``_decode_records`` over a payload that arrives in pieces: a window holds the record being decoded (and at
    most the rest of one piece); positions in errors are those in the whole decompressed payload."""
    from kafkalog_cli.format.varint import read_varint

    w = bytearray()
    wbase = 0  # payload position of w[0]
    p = 0
    more = True
    count = batch.records_count

    def fill(need: int) -> bool:
        nonlocal more
        while more and len(w) < need:
            piece = next(chunks, None)
            if piece is None:
                more = False
            else:
                w.extend(piece)
        return len(w) >= need

    for i in range(count):
        if p >= _WINDOW_KEEP:
            del w[:p]
            wbase += p
            p = 0
        fill(p + 5)  # the size varint: at most 5 bytes
        try:
            size, body = read_varint(w, p, len(w))
        except InvalidRecordError as exc:
            exc.position = wbase + p if exc.position is None else wbase + exc.position
            raise
        if size > 0:
            fill(body + size)
        if size < 0 or body + size > len(w):
            raise InvalidRecordError(
                "Incorrect declared batch size, premature EOF reached",
                position=wbase + p,
                expected=f"record {i} of {count} with {size} bytes",
                found=f"{len(w) - body} bytes left",
            )
        try:
            rec = next(_decode_records(batch, w, p, body + size, 0, count=1))
        except InvalidRecordError as exc:
            if exc.position is not None:
                exc.position += wbase
            raise
        rec.position += wbase  # keys and values are copies (copy=True): the window moves on
        p = body + size
        yield rec
    left = len(w) - p
    while more:
        piece = next(chunks, None)
        if piece is None:
            break
        left += len(piece)
    if left:
        raise InvalidRecordError(
            "Incorrect declared batch size, records still remaining in file",
            position=wbase + p,
            expected=f"{count} records ending at the batch end",
            found=f"{left} more bytes",
        )


def _decode_records(batch: Batch, buf: bytes | bytearray | memoryview, pos: int, end: int, report_base: int, *,
                    copy: bool = True, count: int | None = None) -> Iterator[Record]:
    """Decode ``batch.records_count`` records (or ``count``) from buf[pos:end] (DefaultRecord.readFrom)."""
    from kafkalog_cli.format.varint import read_varint, read_varlong

    if count is None:
        count = batch.records_count
    base_offset = batch.base_offset
    base_ts = batch.base_timestamp
    log_append = batch.timestamp_type == LOG_APPEND_TIME
    max_ts = batch.max_timestamp
    base_seq = batch.base_sequence
    compressed = batch.codec != codecs.NONE
    for i in range(count):
        rec_start = pos
        try:
            size, pos = read_varint(buf, pos, end)
            if size < 0 or pos + size > end:
                if compressed:
                    raise InvalidRecordError(
                        "Incorrect declared batch size, premature EOF reached",
                        position=report_base + rec_start,
                        expected=f"record {i} of {count} with {size} bytes",
                        found=f"{end - pos} bytes left",
                    )
                raise InvalidRecordError(
                    f"Invalid record size: expected {size} bytes in record payload, but instead the buffer has only "
                    f"{end - pos} remaining bytes.",
                    position=report_base + rec_start,
                )
            body_start = pos
            body_end = pos + size
            if size == 0:
                raise InvalidRecordError(
                    "Found invalid record structure: a record body of 0 bytes",
                    position=report_base + rec_start,
                    expected="at least the attributes byte",
                    found="0 bytes",
                )
            attributes = buf[pos]
            pos += 1
            ts_delta, pos = read_varlong(buf, pos, body_end)
            offset_delta, pos = read_varint(buf, pos, body_end)
            klen, pos = read_varint(buf, pos, body_end)
            if klen >= 0:
                if pos + klen > body_end:
                    raise InvalidRecordError("Found invalid record structure: key runs past the record", position=report_base + pos)
                key = bytes(buf[pos : pos + klen]) if copy else buf[pos : pos + klen]
                pos += klen
            else:
                key = None
            vlen, pos = read_varint(buf, pos, body_end)
            if vlen >= 0:
                if pos + vlen > body_end:
                    raise InvalidRecordError("Found invalid record structure: value runs past the record", position=report_base + pos)
                value = bytes(buf[pos : pos + vlen]) if copy else buf[pos : pos + vlen]
                pos += vlen
            else:
                value = None
            nheaders, pos = read_varint(buf, pos, body_end)
            if nheaders < 0:
                raise InvalidRecordError(f"Found invalid number of record headers {nheaders}", position=report_base + pos)
            if nheaders > body_end - pos:
                raise InvalidRecordError(
                    f"Found invalid number of record headers. {nheaders} is larger than the remaining size of the buffer",
                    position=report_base + pos,
                )
            headers: list[tuple[bytes, bytes | None]] = []
            for _ in range(nheaders):
                hklen, pos = read_varint(buf, pos, body_end)
                if hklen < 0:
                    raise InvalidRecordError(f"Invalid negative header key size {hklen}", position=report_base + pos)
                if pos + hklen > body_end:
                    raise InvalidRecordError("Found invalid record structure: header key runs past the record", position=report_base + pos)
                hkey = bytes(buf[pos : pos + hklen])
                pos += hklen
                hvlen, pos = read_varint(buf, pos, body_end)
                if hvlen >= 0:
                    if pos + hvlen > body_end:
                        raise InvalidRecordError("Found invalid record structure: header value runs past the record", position=report_base + pos)
                    hval: bytes | None = bytes(buf[pos : pos + hvlen])
                    pos += hvlen
                else:
                    hval = None
                headers.append((hkey, hval))
            if pos != body_end:
                raise InvalidRecordError(
                    f"Invalid record size: expected to read {size} bytes in record payload, but instead read {pos - body_start}",
                    position=report_base + rec_start,
                )
        except InvalidRecordError as exc:
            if exc.position is None:
                exc.position = report_base + pos
            raise
        if i == count - 1 and pos != end:
            raise InvalidRecordError(
                "Incorrect declared batch size, records still remaining in file",
                position=report_base + pos,
                expected=f"{count} records ending at the batch end",
                found=f"{end - pos} more bytes",
            )
        yield Record(
            offset=int64(base_offset + offset_delta),
            timestamp=max_ts if log_append else int64(base_ts + ts_delta),
            key=key,  # type: ignore[arg-type]  # a memoryview only under copy=False, whose callers read sizes only
            value=value,  # type: ignore[arg-type]  # a memoryview only under copy=False, whose callers read sizes only
            headers=headers,
            sequence=increment_sequence(base_seq, offset_delta) if base_seq >= 0 else -1,
            attributes=attributes,
            position=report_base + rec_start,
        )
