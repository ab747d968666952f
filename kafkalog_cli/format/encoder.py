"""The only place that writes batch bytes: v2 record batches and v0/v1 messages.

Used by the tests (fixtures, round trips), by ``compact`` (re-encoding retained records) and by fixture generation.
Decoding and encoding share the constants of ``batch``/``legacy`` so that a round trip is byte-exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kafkalog_cli.format import codecs
from kafkalog_cli.format.batch import (
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    HEADER,
    HEADER_SIZE,
)
from kafkalog_cli.format.crc import crc32, crc32c
from kafkalog_cli.format.layouts import (
    INT32,
    INT64,
    LOG_ENTRY,
    LOG_OVERHEAD,
    UINT32,
    V2_ATTRIBUTES_OFFSET,
    V2_CRC_OFFSET,
)
from kafkalog_cli.format.varint import write_varint, write_varlong


@dataclass
class RecordSpec:
    """A record to encode. ``offset_delta``/``timestamp`` default to the position in the batch / base timestamp."""

    key: bytes | None = None
    value: bytes | None = None
    headers: Sequence[tuple[bytes | str, bytes | None]] = field(default_factory=list)
    timestamp: int | None = None
    offset_delta: int | None = None
    attributes: int = 0


def encode_record(offset_delta: int, timestamp_delta: int, rec: RecordSpec) -> bytes:
    body = bytearray()
    body.append(rec.attributes & 0xFF)
    write_varlong(timestamp_delta, body)
    write_varint(offset_delta, body)
    if rec.key is None:
        write_varint(-1, body)
    else:
        write_varint(len(rec.key), body)
        body += rec.key
    if rec.value is None:
        write_varint(-1, body)
    else:
        write_varint(len(rec.value), body)
        body += rec.value
    write_varint(len(rec.headers), body)
    for hk, hv in rec.headers:
        hkb = hk.encode() if isinstance(hk, str) else hk
        write_varint(len(hkb), body)
        body += hkb
        if hv is None:
            write_varint(-1, body)
        else:
            write_varint(len(hv), body)
            body += hv
    out = bytearray()
    write_varint(len(body), out)
    out += body
    return bytes(out)


def encode_batch(
    records: Sequence[RecordSpec],
    *,
    base_offset: int = 0,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    codec: int = codecs.NONE,
    timestamp_type: int = 0,
    transactional: bool = False,
    control: bool = False,
    delete_horizon_ms: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    last_offset_delta: int | None = None,
    records_count: int | None = None,
    magic: int = 2,
    attributes_extra: int = 0,
    kafka_codec: bool = False,
) -> bytes:
    """Encode one v2 batch (``kafka_codec``: compressed with Kafka's own bytes, ``codecs.compress_kafka``). Timestamps are absolute per record; the delta base is ``base_timestamp``.

    With ``delete_horizon_ms`` the batch carries attribute bit 6 and baseTimestamp holds the horizon (record
    deltas are then relative to it and may be negative), as the log cleaner writes it. An empty ``records`` list
    produces the cleaner's empty batch (baseTimestamp -1 unless given).
    """
    ts_list = [r.timestamp for r in records]
    first_ts = next((t for t in ts_list if t is not None), -1)
    if base_timestamp is None:
        base_timestamp = first_ts
    delta_base = delete_horizon_ms if delete_horizon_ms is not None else base_timestamp
    body = bytearray()
    deltas = []
    for i, rec in enumerate(records):
        od = i if rec.offset_delta is None else rec.offset_delta
        ts = rec.timestamp if rec.timestamp is not None else base_timestamp
        deltas.append(od)
        body += encode_record(od, ts - delta_base, rec)
    if last_offset_delta is None:
        last_offset_delta = max(deltas) if deltas else 0
    if max_timestamp is None:
        real = [r.timestamp if r.timestamp is not None else base_timestamp for r in records]
        max_timestamp = max(real) if real else -1
    payload = bytes(body)
    if codec != codecs.NONE:
        payload = (codecs.compress_kafka if kafka_codec else codecs.compress)(codec, payload)
    attributes = (codec & 0x07) | attributes_extra
    if timestamp_type == 1:
        attributes |= ATTR_TIMESTAMP_TYPE
    if transactional:
        attributes |= ATTR_TRANSACTIONAL
    if control:
        attributes |= ATTR_CONTROL
    if delete_horizon_ms is not None:
        attributes |= ATTR_DELETE_HORIZON
    header_base_ts = delete_horizon_ms if delete_horizon_ms is not None else base_timestamp
    size = HEADER_SIZE + len(payload)
    head = bytearray(
        HEADER.pack(
            base_offset,
            size - LOG_OVERHEAD,
            partition_leader_epoch,
            magic,
            0,
            attributes,
            last_offset_delta,
            header_base_ts,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records) if records_count is None else records_count,
        )
    )
    out = head + payload
    UINT32.pack_into(out, V2_CRC_OFFSET, crc32c(memoryview(out)[V2_ATTRIBUTES_OFFSET:]))
    return bytes(out)


def reseal_crc(batch: bytes | bytearray) -> bytes:
    """Recompute a v2 batch's CRC after its bytes were patched (tests build odd batches this way)."""
    b = bytearray(batch)
    UINT32.pack_into(b, V2_CRC_OFFSET, crc32c(memoryview(b)[V2_ATTRIBUTES_OFFSET:]))
    return bytes(b)


def encode_legacy_message(
    *,
    offset: int,
    key: bytes | None,
    value: bytes | None,
    magic: int = 1,
    timestamp: int = -1,
    attributes: int = 0,
) -> bytes:
    """Encode one v0/v1 log entry (offset, size, crc, magic, attributes, [timestamp], key, value)."""
    msg = bytearray()
    msg.append(magic & 0xFF)
    msg.append(attributes & 0xFF)
    if magic == 1:
        msg += INT64.pack(timestamp)
    if key is None:
        msg += INT32.pack(-1)
    else:
        msg += INT32.pack(len(key)) + key
    if value is None:
        msg += INT32.pack(-1)
    else:
        msg += INT32.pack(len(value)) + value
    crc = crc32(bytes(msg))
    body = UINT32.pack(crc) + bytes(msg)
    return LOG_ENTRY.pack(offset, len(body)) + body


def encode_legacy_wrapper(
    inner: Sequence[tuple[bytes | None, bytes | None, int]],
    *,
    offset: int,
    codec: int,
    magic: int = 1,
    timestamp_type: int = 0,
    wrapper_timestamp: int | None = None,
    relative_offsets: bool | None = None,
    first_offset: int | None = None,
) -> bytes:
    """A compressed wrapper holding ``inner`` = [(key, value, timestamp)].

    ``offset`` is the wrapper's offset field (absolute offset of the last inner message). v1 inner offsets are
    relative (0..n-1) as producers write them; v0 inner offsets are absolute.
    """
    n = len(inner)
    if relative_offsets is None:
        relative_offsets = magic == 1
    start = first_offset if first_offset is not None else offset - (n - 1)
    stream = bytearray()
    for i, (k, v, ts) in enumerate(inner):
        ioff = i if relative_offsets else start + i
        stream += encode_legacy_message(offset=ioff, key=k, value=v, magic=magic, timestamp=ts)
    payload = codecs.compress(codec, bytes(stream), magic=magic)
    attrs = codec | (ATTR_TIMESTAMP_TYPE if timestamp_type == 1 else 0)
    if wrapper_timestamp is None:
        wrapper_timestamp = max((t for _, _, t in inner), default=-1)
    return encode_legacy_message(offset=offset, key=None, value=payload, magic=magic, timestamp=wrapper_timestamp, attributes=attrs)
