"""Every fixed-width on-disk layout kafkalog reads or writes, declared once.

Why: the v2 batch header used to be spelled out in three Python modules and the C accelerator, and ~30 places read
fields by tuple index or raw byte offset (``buf[p + 21 :]``, ``h[4]``). Here each layout is a list of named,
big-endian fields; offsets, sizes and the ``struct.Struct`` that reads them are *derived* from that list, so a field
cannot be at one offset in one module and another offset elsewhere. ``scripts/gen_layouts_h.py`` writes the same
numbers into ``kafkalog_cli/accel/layouts.h`` for the C side, and ``tests/test_layouts.py`` checks the committed
header and the compiled module (``_accel.layout_constants()``) against this declaration.

Hot paths keep one ``unpack_from`` per batch: they bind ``LAYOUT.unpack_from`` (the struct's own bound method) once
and unpack the whole header into locals, exactly as before; the named views (``LAYOUT.read``) are for the cold
paths that want field names more than speed.

Sources (Kafka trunk 1eb7644): Records.java:46-56 (log overhead, magic offset), DefaultRecordBatch.java:103-130
(v2 header), LegacyRecord.java:44-57 (v0/v1 message), DefaultRecord.java (record varints), OffsetIndex.java /
TimeIndex.java (entry sizes 8 and 12), AbortedTxn.java:25-36 (txnindex entry), ProducerSnapshot.json (producer
snapshot v1), EndTransactionMarker.java / ControlRecordType.java (control record key and marker value).
"""

from __future__ import annotations

import struct
from collections import namedtuple
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_SIZES = {"b": 1, "B": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8}
# called through a plain callable: the views' field names are data here, which type checkers' namedtuple support
# (string literals only) cannot follow; the views are typed Any
_make_view: Callable[[str, list[str]], Any] = namedtuple


@dataclass(frozen=True, slots=True)
class Field:
    """One fixed-width field: its Java name, ``struct`` code and the offset derived from the fields before it."""

    name: str
    code: str
    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size


class Layout:
    """A fixed-width big-endian layout: named fields in order, with derived offsets, a reader and a named view.

    ``unpack_from`` is the ``struct.Struct`` bound method (a tuple in declaration order: the fast path);
    ``read`` returns a named tuple (field access by name: the readable path); ``offset``/``end`` give a field's
    byte range, for located errors and for the CRC ranges.
    """

    def __init__(self, name: str, fields: Sequence[tuple[str, str]], doc: str) -> None:
        self.name = name
        self.doc = doc
        pos = 0
        declared: list[Field] = []
        for fname, code in fields:
            declared.append(Field(fname, code, pos, _SIZES[code]))
            pos += _SIZES[code]
        self.fields: tuple[Field, ...] = tuple(declared)
        self.struct = struct.Struct(">" + "".join(f.code for f in declared))
        assert self.struct.size == pos, name  # big-endian '>' has no padding: derived offsets are the real ones
        self.size = pos
        self.unpack_from: Callable[..., tuple[Any, ...]] = self.struct.unpack_from
        self.pack: Callable[..., bytes] = self.struct.pack
        self.pack_into: Callable[..., None] = self.struct.pack_into
        self.view: Any = _make_view(name, [f.name for f in declared])
        self._by_name = {f.name: f for f in declared}

    def field(self, name: str) -> Field:
        return self._by_name[name]

    def index(self, name: str) -> int:
        """Position of a field in the tuple ``unpack_from`` returns (for hot loops that keep the tuple)."""
        return self.fields.index(self._by_name[name])

    def offset(self, name: str) -> int:
        return self._by_name[name].offset

    def end(self, name: str) -> int:
        return self._by_name[name].end

    def read(self, buf: bytes | bytearray | memoryview, position: int = 0) -> Any:
        """The fields at ``position`` as a named tuple (``.base_offset``, ``.crc`` ...)."""
        return self.view._make(self.struct.unpack_from(buf, position))

    def __repr__(self) -> str:
        return f"Layout({self.name}, {self.size} bytes)"


# ------------------------------------------------------------------------------------------------ log entries
LOG_ENTRY = Layout("LogEntry", [("offset", "q"), ("size", "i")],
                   "Every log entry starts with offset and size (Records.LOG_OVERHEAD = 12); size counts what follows.")

ENTRY_PREFIX = Layout(
    "EntryPrefix", [("offset", "q"), ("size", "i"), ("leader_epoch_or_crc", "i"), ("magic", "b")],
    "The 17 bytes FileLogInputStream reads before it knows the magic (Records.HEADER_SIZE_UP_TO_MAGIC): bytes 12..16 "
    "are the partition leader epoch of a v2 batch and the CRC of a v0/v1 message.",
)

BATCH_V2 = Layout(
    "BatchHeaderV2",
    [
        ("base_offset", "q"),
        ("batch_length", "i"),
        ("partition_leader_epoch", "i"),
        ("magic", "b"),
        ("crc", "I"),
        ("attributes", "h"),
        ("last_offset_delta", "i"),
        ("base_timestamp", "q"),
        ("max_timestamp", "q"),
        ("producer_id", "q"),
        ("producer_epoch", "h"),
        ("base_sequence", "i"),
        ("records_count", "i"),
    ],
    "The 61-byte magic v2 record batch header (DefaultRecordBatch.RECORD_BATCH_OVERHEAD); the records follow. "
    "The CRC-32C covers bytes [attributes, end of batch).",
)

# The first fields of the v2 header, up to maxTimestamp (43 bytes): all that the index rebuild needs.
BATCH_V2_TO_MAX_TIMESTAMP = Layout(
    "BatchHeaderV2ToMaxTimestamp", [(f.name, f.code) for f in BATCH_V2.fields[:9]],
    "The v2 header up to and including maxTimestamp (the index rebuild reads no further).",
)

LEGACY_V0 = Layout(
    "LegacyMessageV0",
    [("offset", "q"), ("size", "i"), ("crc", "I"), ("magic", "b"), ("attributes", "b")],
    "A magic v0 message with its log overhead; key length (int32), key, value length (int32), value follow. "
    "The CRC-32 covers bytes [magic, end of message).",
)

LEGACY_V1 = Layout(
    "LegacyMessageV1",
    [("offset", "q"), ("size", "i"), ("crc", "I"), ("magic", "b"), ("attributes", "b"), ("timestamp", "q")],
    "A magic v1 message with its log overhead: v0 plus an int64 timestamp before the key.",
)

INT32 = Layout("Int32", [("value", "i")], "A big-endian int32 (legacy key/value lengths, array counts).")
INT64 = Layout("Int64", [("value", "q")], "A big-endian int64.")
UINT32 = Layout("UInt32", [("value", "I")], "A big-endian unsigned int32 (a CRC, written in place).")

# ------------------------------------------------------------------------------------------------ index files
OFFSET_INDEX_ENTRY = Layout("OffsetIndexEntry", [("relative_offset", "i"), ("position", "i")],
                            "One .index entry (OffsetIndex.ENTRY_SIZE = 8): offset - base offset, file position.")
TIME_INDEX_ENTRY = Layout("TimeIndexEntry", [("timestamp", "q"), ("relative_offset", "i")],
                          "One .timeindex entry (TimeIndex.ENTRY_SIZE = 12).")
TXN_INDEX_ENTRY = Layout(
    "TxnIndexEntry",
    [("version", "h"), ("producer_id", "q"), ("first_offset", "q"), ("last_offset", "q"),
     ("last_stable_offset", "q")],
    "One .txnindex entry (AbortedTxn.TOTAL_SIZE = 34), version 0.",
)

# ------------------------------------------------------------------------------------------------ producer snapshot
PRODUCER_SNAPSHOT_HEADER = Layout(
    "ProducerSnapshotHeader", [("version", "h"), ("crc", "I"), ("producer_entries", "i")],
    "The .snapshot file head (ProducerSnapshot.json v1): the CRC-32C covers the entry count and every entry.",
)
PRODUCER_SNAPSHOT_ENTRY = Layout(
    "ProducerSnapshotEntry",
    [("producer_id", "q"), ("epoch", "h"), ("last_sequence", "i"), ("last_offset", "q"), ("offset_delta", "i"),
     ("timestamp", "q"), ("coordinator_epoch", "i"), ("current_txn_first_offset", "q")],
    "One producer entry of a .snapshot file (ProducerSnapshot.json v1), 46 bytes.",
)

# ------------------------------------------------------------------------------------------------ control records
CONTROL_KEY = Layout("ControlRecordKey", [("version", "h"), ("type", "h")],
                     "The key of a control record (ControlRecordType): version 0, then the type.")
END_TXN_MARKER = Layout("EndTxnMarkerValue", [("version", "h"), ("coordinator_epoch", "i")],
                        "The value of a COMMIT/ABORT control record (EndTransactionMarker), version 0.")
SCHEMA_VERSION = Layout("SchemaVersion", [("version", "h")],
                        "The int16 version that starts every internal-topic key and value.")

# ------------------------------------------------------------------------------------------------ v2 records
# A v2 record is not fixed-width: every field is a (zig-zag) varint or bytes of a varint length, in this order
# (DefaultRecord.java readFrom / writeTo). Declared as data so that the decoder and the docs name the same sequence.
RECORD_V2_FIELDS: tuple[tuple[str, str], ...] = (
    ("length", "varint"),  # bytes of the record after this field
    ("attributes", "int8"),  # unused, 0
    ("timestamp_delta", "varlong"),  # from the batch's base timestamp
    ("offset_delta", "varint"),  # from the batch's base offset
    ("key_length", "varint"),  # -1: null key
    ("key", "bytes[key_length]"),
    ("value_length", "varint"),  # -1: null value
    ("value", "bytes[value_length]"),
    ("headers_count", "varint"),
    ("headers", "headers_count x (key_length varint, key utf-8, value_length varint, value)"),
)
# The record's fixed rules, for the C record decoder (accel/record.h via layouts.h): the attributes field is one
# byte (DefaultRecord.java:317, read and ignored), a varint takes at most 5 bytes and a varlong at most 10
# (ByteUtils.java readVarint / readVarlong: the 5th / 10th byte may not have its high bit set).
RECORD_V2_ATTRIBUTES_SIZE = 1
VARINT_MAX_BYTES = 5
VARLONG_MAX_BYTES = 10

# ------------------------------------------------------------------------------------------------ derived constants
LOG_OVERHEAD = LOG_ENTRY.size  # 12
SIZE_OFFSET = LOG_ENTRY.offset("size")  # 8
MAGIC_OFFSET = ENTRY_PREFIX.offset("magic")  # 16
HEADER_SIZE_UP_TO_MAGIC = ENTRY_PREFIX.size  # 17
V2_HEADER_SIZE = BATCH_V2.size  # 61
V2_CRC_OFFSET = BATCH_V2.offset("crc")  # 17
V2_ATTRIBUTES_OFFSET = BATCH_V2.offset("attributes")  # 21: the CRC-32C starts here
V2_LAST_OFFSET_DELTA_OFFSET = BATCH_V2.offset("last_offset_delta")  # 23
V2_RECORDS_COUNT_OFFSET = BATCH_V2.offset("records_count")  # 57
V2_MIN_BATCH_LENGTH = V2_HEADER_SIZE - LOG_OVERHEAD  # 49: the smallest batchLength a v2 header fits in
V2_CRC_SKIP = V2_ATTRIBUTES_OFFSET - LOG_OVERHEAD  # 9: batchLength bytes not covered by the CRC
# LegacyRecord.RECORD_OVERHEAD_V0 = 14: the smallest size field FileLogInputStream accepts for any entry (crc, magic,
# attributes, and the two int32 lengths of a null key and value)
LEGACY_V0_RECORD_OVERHEAD = LEGACY_V0.size - LOG_OVERHEAD + 2 * INT32.size
LEGACY_CRC_OFFSET = LEGACY_V0.offset("crc")  # 12
LEGACY_CRC_START = LEGACY_V0.offset("magic")  # 16: the CRC-32 starts at the magic byte
LEGACY_TIMESTAMP_OFFSET = LEGACY_V1.offset("timestamp")  # 18
LEGACY_ATTRIBUTES_OFFSET = LEGACY_V0.offset("attributes")  # 17: the codec bits (v0 and v1 alike)
V2_CODEC_BYTE = V2_ATTRIBUTES_OFFSET + 1  # 22: the low byte of the int16 attributes holds the codec bits
OFFSET_INDEX_ENTRY_SIZE = OFFSET_INDEX_ENTRY.size  # 8
TIME_INDEX_ENTRY_SIZE = TIME_INDEX_ENTRY.size  # 12
TXN_INDEX_ENTRY_SIZE = TXN_INDEX_ENTRY.size  # 34

ALL_LAYOUTS: tuple[Layout, ...] = (
    LOG_ENTRY, ENTRY_PREFIX, BATCH_V2, LEGACY_V0, LEGACY_V1, OFFSET_INDEX_ENTRY, TIME_INDEX_ENTRY, TXN_INDEX_ENTRY,
    PRODUCER_SNAPSHOT_HEADER, PRODUCER_SNAPSHOT_ENTRY, CONTROL_KEY, END_TXN_MARKER,
)


def c_constants() -> dict[str, int]:
    """The numbers the C accelerator uses, by their ``#define`` names (``<LAYOUT>_<FIELD>_OFFSET|_SIZE``, ``_SIZE``).

    One source for ``scripts/gen_layouts_h.py`` (the committed header) and for the test comparing it with
    ``_accel.layout_constants()`` (the compiled module).
    """
    out: dict[str, int] = {}
    for prefix, layout in (("LOG_ENTRY", LOG_ENTRY), ("ENTRY_PREFIX", ENTRY_PREFIX), ("V2", BATCH_V2),
                           ("LEGACY_V1", LEGACY_V1), ("OFFSET_INDEX_ENTRY", OFFSET_INDEX_ENTRY),
                           ("TIME_INDEX_ENTRY", TIME_INDEX_ENTRY)):
        for f in layout.fields:
            out[f"{prefix}_{f.name.upper()}_OFFSET"] = f.offset
            out[f"{prefix}_{f.name.upper()}_SIZE"] = f.size
        out[f"{prefix}_SIZE"] = layout.size
    out["LOG_OVERHEAD"] = LOG_OVERHEAD
    out["HEADER_SIZE_UP_TO_MAGIC"] = HEADER_SIZE_UP_TO_MAGIC
    out["V2_HEADER_SIZE"] = V2_HEADER_SIZE
    out["V2_MIN_BATCH_LENGTH"] = V2_MIN_BATCH_LENGTH
    out["V2_CRC_SKIP"] = V2_CRC_SKIP
    out["LEGACY_V0_RECORD_OVERHEAD"] = LEGACY_V0_RECORD_OVERHEAD
    out["RECORD_V2_ATTRIBUTES_SIZE"] = RECORD_V2_ATTRIBUTES_SIZE
    out["VARINT_MAX_BYTES"] = VARINT_MAX_BYTES
    out["VARLONG_MAX_BYTES"] = VARLONG_MAX_BYTES
    return out
