"""Batch rows as Arrow columns: from the compiled walk (``_accel.scan_columns``) or from the pure-Python reference.

Why columns: a Python dict per batch cost ~2 KB of RAM and most of the scan's time. The compiled walk fills one
buffer per column, which becomes an Arrow array without creating an object per value; the derived columns (codec
name, timestamp type, flags, null timestamps) are then computed on whole arrays with ``pyarrow.compute``. The
Python walk (``py_walk``, used with ``KAFKALOG_NO_ACCEL=1`` or without the extension) is the reference: same
entries, same stop rules, same values, finished by the same ``batch_table``; the tests compare the two.
"""

from __future__ import annotations

import struct
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafkalog_cli.format.codecs import CODEC_NAMES
from kafkalog_cli.format.crc import crc32c
from kafkalog_cli.format.text import increment_sequence
from kafkalog_cli.scan.schema import BATCHES, TIMESTAMP, WIRE

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
# the columns a walk produces, in order (a Python row is a tuple in this order)
RAW = [
    ("position", pa.int64()), ("size", pa.int64()), ("base_offset", pa.int64()), ("last_offset", pa.int64()),
    ("count", pa.int32()), ("magic", pa.int8()), ("codec_id", pa.int8()), ("ts_type", pa.int8()),
    ("first_timestamp", pa.int64()), ("max_timestamp", pa.int64()), ("producer_id", pa.int64()),
    ("producer_epoch", pa.int16()), ("base_sequence", pa.int32()), ("last_sequence", pa.int32()),
    ("partition_leader_epoch", pa.int32()), ("transactional", pa.bool_()), ("control", pa.bool_()),
    ("crc_ok", pa.bool_()),
]
RAW_NAMES = [n for n, _t in RAW]
_CODECS = pa.array([CODEC_NAMES.get(c, f"unknown-{c}") for c in range(8)], pa.string())
_TS_TYPES = pa.array(["NoTimestampType", "CreateTime", "LogAppendTime"], pa.string())  # index: timestamp type + 1
_LITERALS: dict[tuple[Any, pa.DataType], pa.Scalar] = {}


def lit(value: Any, typ: pa.DataType) -> pa.Scalar:
    """A typed Arrow scalar (cached). Always pass these, never bare Python values, to ``pyarrow.compute``: an
    untyped value makes pyarrow infer its type, which tries ``import pandas`` (and dateutil) on every call, a full
    failed search of sys.path each time when they are not installed (a third of the scan's time, measured)."""
    key = (value, typ)
    s = _LITERALS.get(key)
    if s is None:
        s = _LITERALS[key] = pa.scalar(value, typ)
    return s
_PREFIX = struct.Struct(">qiib")
_V2 = struct.Struct(">qiibIhiqqqhii")  # the 61-byte v2 header
V2_HEADER = 61

# _accel.scan_columns: the layout of its column buffer (see the C comment)
_ACCEL_I64 = ["position", "size", "base_offset", "last_offset", "first_timestamp", "max_timestamp", "producer_id"]
_ACCEL_I32 = ["count", "base_sequence", "last_sequence", "partition_leader_epoch"]
_ACCEL_I16 = ["attributes", "producer_epoch"]


def py_walk(w: Any, pos: int, end: int, origin: int = 0) -> tuple[list[tuple], int, str]:
    """The reference of ``_accel.scan_columns``: v2 batch rows of ``w[pos:end]`` in walk order (positions + ``origin``,
    the window's place in the file), where the walk stopped and why ("end", "bad-size", "magic", "small",
    "overflow"), with exactly the C rules."""
    rows: list[tuple] = []
    why = "end"
    unpack_prefix, unpack_v2 = _PREFIX.unpack_from, _V2.unpack_from
    while pos < end - 17:
        _o, size, _e, magic = unpack_prefix(w, pos)
        if size < 14:
            why = "bad-size"
            break
        if pos > end - 12 - size:
            break
        if magic != 2:
            why = "magic"
            break
        esize = size + 12
        if esize < V2_HEADER:
            why = "small"
            break
        base, _s, epoch, _m, crc, attrs, lod, base_ts, max_ts, pid, pepoch, seq, count = unpack_v2(w, pos)
        last = base + lod
        if not INT64_MIN <= last <= INT64_MAX:
            why = "overflow"
            break
        rows.append(v2_row(origin + pos, esize, base, last, count, attrs, base_ts, max_ts, pid, pepoch, seq, lod, epoch,
                           crc32c(w[pos + 21 : pos + esize]) == crc))
        pos += esize
    return rows, pos, why


def v2_row(pos: int, esize: int, base: int, last: int, count: int, attrs: int, base_ts: int, max_ts: int, pid: int,
           pepoch: int, seq: int, lod: int, epoch: int, crc_ok: bool) -> tuple:
    last_seq = -1 if seq == -1 else increment_sequence(seq, lod)  # DefaultRecordBatch.incrementSequence (wraps)
    return (pos, esize, base, last, count, 2, attrs & 7, (attrs >> 3) & 1, base_ts, max_ts, pid, pepoch, seq, last_seq,
            epoch, bool(attrs & 0x10), bool(attrs & 0x20), crc_ok)


def v2_header_row(w: Any, position: int, crc_ok: bool) -> tuple | None:
    """The row of the v2 header at the start of ``w`` (at least 61 bytes; ``position`` in the file), with a given
    crc_ok (a crc-mismatch region)."""
    base, size, epoch, _m, _crc, attrs, lod, base_ts, max_ts, pid, pepoch, seq, count = _V2.unpack_from(w, 0)
    last = base + lod
    if not INT64_MIN <= last <= INT64_MAX:
        return None
    return v2_row(position, size + 12, base, last, count, attrs, base_ts, max_ts, pid, pepoch, seq, lod, epoch, crc_ok)


def legacy_row(e: Any, position: int, crc_ok: bool) -> tuple:
    """The row of a v0/v1 message (a compressed wrapper is one row); ``position`` in the file."""
    return (position, e.size, e.offset, e.offset, 1, e.magic, e.codec, e.timestamp_type, e.timestamp,
            e.max_timestamp, -1, -1, -1, -1, -1, False, False, crc_ok)


def rows_to_raw(rows: list[tuple]) -> dict[str, pa.Array]:
    cols: list[Any] = list(zip(*rows)) if rows else [[] for _ in RAW]
    return {name: pa.array(col, type=t) for (name, t), col in zip(RAW, cols)}


def accel_to_raw(data: bytes, n: int, base: int) -> dict[str, pa.Array]:
    """Wrap the column buffer of ``_accel.scan_columns`` (positions relative to a window at ``base``)."""
    buf = pa.py_buffer(data)
    raw: dict[str, pa.Array] = {}
    off = 0
    for names, typ, width in ((_ACCEL_I64, pa.int64(), 8), (_ACCEL_I32, pa.int32(), 4), (_ACCEL_I16, pa.int16(), 2)):
        for name in names:
            raw[name] = pa.Array.from_buffers(typ, n, [None, buf.slice(off, n * width)])
            off += n * width
    ok = pa.Array.from_buffers(pa.uint8(), n, [None, buf.slice(off, n)])
    attrs = raw.pop("attributes")
    if base:
        raw["position"] = pc.add(raw["position"], pa.scalar(base, pa.int64()))
    raw["magic"] = pa.repeat(pa.scalar(2, pa.int8()), n)
    i16 = pa.int16()
    raw["codec_id"] = pc.bit_wise_and(attrs, lit(7, i16)).cast(pa.int8())
    raw["ts_type"] = pc.bit_wise_and(pc.shift_right(attrs, lit(3, i16)), lit(1, i16)).cast(pa.int8())
    raw["transactional"] = pc.not_equal(pc.bit_wise_and(attrs, lit(0x10, i16)), lit(0, i16))
    raw["control"] = pc.not_equal(pc.bit_wise_and(attrs, lit(0x20, i16)), lit(0, i16))
    raw["crc_ok"] = pc.not_equal(ok, lit(0, pa.uint8()))
    return raw


def _ts(arr: pa.Array) -> pa.Array:
    """int64 milliseconds -> timestamp(ms, UTC), -1 (Kafka's NO_TIMESTAMP) -> null."""
    return pc.if_else(pc.equal(arr, lit(-1, pa.int64())), lit(None, pa.int64()), arr).cast(TIMESTAMP)


def _constant_dict(value: str, n: int) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.repeat(lit(0, pa.int32()), n), pa.array([value], pa.string()))


def _ids_dict(ids: pa.Array, names: pa.Array) -> pa.Array:
    return pa.DictionaryArray.from_arrays(ids.cast(pa.int32()), names)


_LOC_CACHE: dict[tuple, tuple[int, dict[str, pa.Array]]] = {}  # the last segment's columns, sliced per window


def location_columns(loc: dict[str, Any], n: int) -> dict[str, pa.Array]:
    """The location columns of ``n`` rows of one segment (strings as one-entry dictionaries).

    Why cached: they are the same for every window of a segment, and building five constant arrays per window cost
    about a tenth of a 1 GiB scan (profile in BENCHMARKS.md); a slice of the segment's longest ones is free."""
    key = tuple(loc.get(f.name) for f in BATCHES if f.name in LOCATION)
    cap, cols = _LOC_CACHE.get(key, (-1, {}))
    if n > cap:
        cap, cols = max(n, 1 << 16), _location_columns(loc, max(n, 1 << 16))
        _LOC_CACHE.clear()  # one segment at a time per process: keep only its columns
        _LOC_CACHE[key] = (cap, cols)
    return {k: v.slice(0, n) for k, v in cols.items()}


def _location_columns(loc: dict[str, Any], n: int) -> dict[str, pa.Array]:
    out = {}
    for f in BATCHES:
        if f.name in loc:
            value = loc[f.name]
            if value is None:
                out[f.name] = pa.nulls(n, f.type)
            elif pa.types.is_string(f.type):
                out[f.name] = _constant_dict(value, n)
            else:
                out[f.name] = pa.repeat(lit(value, f.type), n)
    return out


def location_columns_of(locs: list[dict[str, Any]], fields: pa.Schema) -> dict[str, pa.Array]:
    """Location columns of rows from many segments (one location dict per row; strings dictionary-encoded)."""
    out = {}
    for f in fields:
        if f.name in LOCATION:
            values = [loc[f.name] for loc in locs]
            out[f.name] = (pa.array(values, pa.string()).dictionary_encode() if pa.types.is_string(f.type)
                           else pa.array(values, f.type))
    return out


LOCATION = ("log_dir", "broker_id", "topic", "partition", "partition_dir", "segment")


def batch_table(loc: dict[str, Any] | dict[str, pa.Array], raw: dict[str, pa.Array]) -> pa.Table:
    """A ``batches`` table (``schema.WIRE``) from walk columns: location columns (one segment's location, or
    ready-made columns), names for ids, null timestamps."""
    n = len(raw["position"])
    cols = loc if loc and isinstance(next(iter(loc.values())), pa.Array) else location_columns(loc, n)
    cols = dict(cols)
    cols.update({k: v for k, v in raw.items() if k in BATCHES.names})
    cols["codec"] = _ids_dict(raw["codec_id"], _CODECS)
    cols["timestamp_type"] = _ids_dict(pc.add(raw["ts_type"].cast(pa.int32()), lit(1, pa.int32())), _TS_TYPES)
    cols["first_timestamp"] = _ts(raw["first_timestamp"])
    cols["max_timestamp"] = _ts(raw["max_timestamp"])
    return pa.Table.from_arrays([cols[f.name] for f in WIRE["batches"]], schema=WIRE["batches"])
