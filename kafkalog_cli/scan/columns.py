"""Batch rows as Arrow columns: from the compiled walk (``_accel.scan_table``) or from the pure-Python reference.

Why columns: a Python dict per batch cost ~2 KB of RAM and most of the scan's time. The compiled walk writes every
column in its final Arrow layout (derived ones included: codec and timestamp-type indices, flag bitmaps, null
timestamps), which ``accel_table`` wraps without creating an object per value or running a compute kernel. The
Python walk (``py_walk``, used with ``KAFKALOG_NO_ACCEL=1`` or without the extension) is the reference: same
entries, same stop rules, same values, finished by ``batch_table`` on whole arrays; the tests compare the two.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from kafkalog_cli.format.codecs import CODEC_NAMES
from kafkalog_cli.format.crc import crc32c
from kafkalog_cli.format.layouts import BATCH_V2, ENTRY_PREFIX, V2_ATTRIBUTES_OFFSET
from kafkalog_cli.format.text import increment_sequence
from kafkalog_cli.scan.lazy_compute import pc
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
CODEC_LABELS = [CODEC_NAMES.get(c, f"unknown-{c}") for c in range(8)]  # by attributes & 7
_CODECS = pa.array(CODEC_LABELS, pa.string())
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
_PREFIX = ENTRY_PREFIX.struct
_V2 = BATCH_V2.struct  # the 61-byte v2 header
V2_HEADER = BATCH_V2.size

def py_walk(w: Any, pos: int, end: int, origin: int = 0, crc: bool = True) -> tuple[list[tuple], int, str]:
    """The reference of ``_accel.scan_table``: v2 batch rows of ``w[pos:end]`` in walk order
    (positions + ``origin``, the window's place in the file), where the walk stopped and why ("end", "bad-size",
    "magic", "small", "overflow"), with exactly the C rules. ``crc=False``: the checksums are known sound (verify's
    pass computed them), crc_ok is True without computing them again."""
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
        base, _s, epoch, _m, h_crc, attrs, lod, base_ts, max_ts, pid, pepoch, seq, count = unpack_v2(w, pos)
        last = base + lod
        if not INT64_MIN <= last <= INT64_MAX:
            why = "overflow"
            break
        rows.append(v2_row(origin + pos, esize, base, last, count, attrs, base_ts, max_ts, pid, pepoch, seq, lod, epoch,
                           not crc or crc32c(w[pos + V2_ATTRIBUTES_OFFSET : pos + esize]) == h_crc))
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


# _accel.scan_table: its columns in buffer order (see the C comment), cap slots each
SCAN_TABLE_I64 = ["position", "size", "base_offset", "last_offset", "first_timestamp", "max_timestamp", "producer_id"]
SCAN_TABLE_I32 = ["count", "base_sequence", "last_sequence", "partition_leader_epoch", "codec", "timestamp_type"]
SCAN_TABLE_BITS = ["first_timestamp", "max_timestamp", "transactional", "control", "crc_ok"]
FACTS_KEY = b"kafkalog.facts"
# the names of scan_table's facts tuple, in order
FACT_NAMES = ("n_bad", "first_ts_nulls", "max_ts_nulls", "size_sum", "count_sum", "good_base_min", "good_last_max",
              "first_ts_min", "max_ts_max", "pids", "epochs", "codec_bytes", "timed", "sequences")


def accel_table(loc: dict[str, Any], data: bytes, n: int, cap: int, facts: tuple) -> pa.Table:
    """The ``batches`` table (``schema.WIRE``) of one ``_accel.scan_table`` call: every column wraps a slice of its
    buffer, no value is touched in Python and no compute kernel runs. The window's facts ride along in the schema
    metadata (``FACTS_KEY``, see ``facts_of``) for the report and the partition pass."""
    buf = pa.py_buffer(data)
    cols: dict[str, Any] = dict(location_columns(loc, n))
    off = 0
    i64 = {}
    for name in SCAN_TABLE_I64:
        i64[name] = buf.slice(off, cap * 8)
        off += cap * 8
    i32 = {}
    for name in SCAN_TABLE_I32:
        i32[name] = buf.slice(off, cap * 4)
        off += cap * 4
    epoch, off = buf.slice(off, cap * 2), off + cap * 2
    magic, off = buf.slice(off, cap), off + cap
    bits = {}
    for name in SCAN_TABLE_BITS:
        bits[name] = buf.slice(off, cap // 8)
        off += cap // 8
    for name in ("position", "size", "base_offset", "last_offset", "producer_id"):
        cols[name] = pa.Array.from_buffers(pa.int64(), n, [None, i64[name]], 0)
    for name, nulls in (("first_timestamp", facts[1]), ("max_timestamp", facts[2])):
        cols[name] = pa.Array.from_buffers(TIMESTAMP, n, [bits[name] if nulls else None, i64[name]], nulls)
    for name in ("count", "base_sequence", "last_sequence", "partition_leader_epoch"):
        cols[name] = pa.Array.from_buffers(pa.int32(), n, [None, i32[name]], 0)
    cols["codec"] = pa.DictionaryArray.from_arrays(pa.Array.from_buffers(pa.int32(), n, [None, i32["codec"]], 0),
                                                   _CODECS, safe=False)
    cols["timestamp_type"] = pa.DictionaryArray.from_arrays(
        pa.Array.from_buffers(pa.int32(), n, [None, i32["timestamp_type"]], 0), _TS_TYPES, safe=False)
    cols["producer_epoch"] = pa.Array.from_buffers(pa.int16(), n, [None, epoch], 0)
    cols["magic"] = pa.Array.from_buffers(pa.int8(), n, [None, magic], 0)
    for name in ("transactional", "control", "crc_ok"):
        cols[name] = pa.Array.from_buffers(pa.bool_(), n, [None, bits[name]], 0)
    schema = WIRE["batches"]
    meta = dict(schema.metadata or {})
    meta[FACTS_KEY] = json.dumps([n, loc.get("segment"), *facts]).encode()
    return pa.Table.from_arrays([cols[f.name] for f in schema], schema=schema.with_metadata(meta))


def facts_of(table: pa.Table) -> dict[str, Any] | None:
    """The facts ``accel_table`` attached to ``table``, when they still describe it (same row count: a table built by
    concatenating or slicing loses them, see ``strip_facts``), else None."""
    meta = table.schema.metadata
    raw = meta.get(FACTS_KEY) if meta else None
    if raw is None:
        return None
    values = json.loads(raw)
    if values[0] != table.num_rows:
        return None
    out = dict(zip(FACT_NAMES, values[2:]))
    out["segment"] = values[1]
    return out


def strip_facts(table: pa.Table) -> pa.Table:
    """``table`` without window facts (for a table made of several pieces)."""
    meta = table.schema.metadata
    if not meta or FACTS_KEY not in meta:
        return table
    return table.replace_schema_metadata({k: v for k, v in meta.items() if k != FACTS_KEY})


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
    about a tenth of a 1 GiB scan (profile in bench/HISTORY.md); a slice of the segment's longest ones is free."""
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
