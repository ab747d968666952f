"""The ``records`` dataset's rows as column buffers (``scan --records``), filled by the compiled record walk.

Why: decoding each record into a Python ``Record`` and appending six Python values to lists ran at 0.09 M records/s.
``_accel.scan_records_run`` (uncompressed batches of a window) and ``_accel.scan_records`` (one batch's decompressed
payload) append every record's values to these ten bytearrays, which become Arrow arrays without a Python object per
value (``table``). Batches the compiled walk declines (anything the Python walk might report: see
``accel/scan_records.c``) are decoded by the Python walk, the reference, whose records are appended to the same
buffers (``add``), so the row order is the walk order either way and the rows equal the pure-Python scan's (tests
compare them with the accelerator on and off, on corrupt and malformed records too).
"""

from __future__ import annotations

import struct
from typing import Any

import pyarrow as pa

from kafkalog_cli.scan import columns as C
from kafkalog_cli.scan.lazy_compute import pc
from kafkalog_cli.scan.schema import WIRE

_Q = struct.Struct("=q").pack
_I = struct.Struct("=i").pack
_ZERO = b"\0\0\0\0"
_I64, _I32 = pa.int64(), pa.int32()


class RecordBuffers:
    """Column buffers of records rows (the layout of ``accel/scan_records.c``): batch_position, offset, timestamp
    (int64, -1 for null), key_size, value_size (int32), key bytes and end offsets, header-key bytes and end offsets,
    header-list end offsets."""

    def __init__(self) -> None:
        self.outs: tuple[bytearray, ...] = tuple(bytearray() for _ in range(10))

    @property
    def rows(self) -> int:
        return len(self.outs[1]) // 8

    @property
    def nbytes(self) -> int:
        return sum(len(b) for b in self.outs)

    def add(self, position: int, r: Any) -> None:
        """One record decoded by the Python walk (``format.batch.Record``)."""
        bpos, off, ts, ksz, vsz, kdata, koff, hdata, hoff, hlist = self.outs
        bpos += _Q(position)
        off += _Q(r.offset)
        ts += _Q(r.timestamp)
        ksz += _I(r.key_size)
        vsz += _I(r.value_size)
        if r.key is not None:
            kdata += r.key
        koff += _I(len(kdata))
        for k, _v in r.headers:
            hdata += bytes(k).decode("utf-8", "replace").encode("utf-8")
            hoff += _I(len(hdata))
        hlist += _I(len(hoff) // 4)

    def table(self, loc: dict[str, Any]) -> pa.Table:
        """The rows gathered so far as a ``records`` table (``schema.WIRE``); the buffers start empty again."""
        bpos, off, ts, ksz, vsz, kdata, koff, hdata, hoff, hlist = self.outs
        self.outs = tuple(bytearray() for _ in range(10))
        n = len(off) // 8
        cols: dict[str, Any] = dict(C.location_columns(loc, n))
        cols["batch_position"] = pa.Array.from_buffers(_I64, n, [None, pa.py_buffer(bpos)], 0)
        cols["offset"] = pa.Array.from_buffers(_I64, n, [None, pa.py_buffer(off)], 0)
        raw_ts = pa.Array.from_buffers(_I64, n, [None, pa.py_buffer(ts)], 0)
        cols["timestamp"] = pa.Array.from_buffers(C.TIMESTAMP, n, [_valid(raw_ts, _I64), pa.py_buffer(ts)], -1)
        key_size = pa.Array.from_buffers(_I32, n, [None, pa.py_buffer(ksz)], 0)
        cols["key_size"] = key_size
        cols["value_size"] = pa.Array.from_buffers(_I32, n, [None, pa.py_buffer(vsz)], 0)
        cols["key"] = pa.Array.from_buffers(pa.binary(), n, [_valid(key_size, _I32), pa.py_buffer(_ZERO + koff),
                                                             pa.py_buffer(kdata)], -1)
        m = len(hoff) // 4
        keys = pa.Array.from_buffers(pa.string(), m, [None, pa.py_buffer(_ZERO + hoff), pa.py_buffer(hdata)], 0)
        cols["header_keys"] = pa.Array.from_buffers(pa.list_(pa.string()), n, [None, pa.py_buffer(_ZERO + hlist)], 0,
                                                    children=[keys])
        schema = WIRE["records"]
        for f in schema:
            if f.name not in cols:  # the decoded columns (scan/decode.py fills them afterwards, with --decode)
                cols[f.name] = pa.nulls(n, f.type)
        return pa.Table.from_arrays([cols[f.name] for f in schema], schema=schema)


def _valid(values: pa.Array, typ: pa.DataType) -> pa.Buffer | None:
    """Validity bitmap of "not -1" (Kafka's null), or None when no value is -1."""
    valid = pc.not_equal(values, C.lit(-1, typ))
    if valid.false_count == 0:
        return None
    return valid.buffers()[1]
