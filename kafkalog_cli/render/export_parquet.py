"""``export --format parquet``: the ``records`` columns of ``scan --records`` that apply to a record (location, batch
position, offset, timestamp, sizes, key, header names), plus the value, the header values and the batch's fields
(docs/export.md, "Parquet"). Rows are written in row groups of ``ROW_GROUP_ROWS`` rows (or ``ROW_GROUP_BYTES`` of
keys and values), so memory stays flat whatever the segment size.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafkalog_cli.ops.export import BatchItem, PartitionStats, SourcePartition, record_control
from kafkalog_cli.scan.schema import LOCATION_FIELDS, RECORDS, TIMESTAMP, VERSION_KEY

ROW_GROUP_ROWS = 64 * 1024
ROW_GROUP_BYTES = 32 << 20
EXPORT_SCHEMA_VERSION = "1"

_RECORD_COLUMNS = ("batch_position", "offset", "timestamp", "key_size", "value_size", "key", "header_keys")
SCHEMA = pa.schema(
    LOCATION_FIELDS
    + [RECORDS.field(n) for n in _RECORD_COLUMNS]
    + [
        pa.field("value", pa.binary()),  # null for a tombstone
        pa.field("header_values", pa.list_(pa.binary()), nullable=False),  # parallel to header_keys; null: null value
        pa.field("timestamp_type", pa.string(), nullable=False),  # CreateTime | LogAppendTime | NoTimestampType
        pa.field("leader_epoch", pa.int32(), nullable=False),  # -1: none
        pa.field("producer_id", pa.int64(), nullable=False),
        pa.field("producer_epoch", pa.int16(), nullable=False),
        pa.field("sequence", pa.int32(), nullable=False),  # baseSequence + offsetDelta, -1: none
        pa.field("transactional", pa.bool_(), nullable=False),
        pa.field("txn", pa.string()),  # committed | aborted | open | null (not transactional)
        pa.field("control_type", pa.string()),  # null | COMMIT | ABORT (--keep-control)
        pa.field("magic", pa.int8(), nullable=False),
        pa.field("codec", pa.string(), nullable=False),
        pa.field("batch_base_offset", pa.int64(), nullable=False),
    ],
    metadata={VERSION_KEY: EXPORT_SCHEMA_VERSION.encode(), b"kafkalog.dataset": b"export"},
)
assert SCHEMA.field("timestamp").type == TIMESTAMP
_BATCH_COLUMNS = ("log_dir", "broker_id", "topic", "partition", "partition_dir", "segment", "batch_position",
                  "timestamp_type", "leader_epoch", "producer_id", "producer_epoch", "transactional", "txn",
                  "control_type", "magic", "codec", "batch_base_offset")
# what the rows are in memory: the batch's fields as dictionary arrays over the batches' values (booleans aside); in
# the file they are SCHEMA's plain types (no Arrow schema stored), as scan writes its datasets
WIRE = pa.schema([f.with_type(pa.dictionary(pa.int32(), f.type)) if f.name in _BATCH_COLUMNS
                  and not pa.types.is_boolean(f.type) else f for f in SCHEMA], metadata=SCHEMA.metadata)


# dictionary-encoded columns: those with few distinct values. Trying a dictionary on keys, values and offsets
# tripled the write time (2.27 s against 0.84 s for 270,000 records, zstd, same file size)
# no min/max statistics for keys, values and headers (large, opaque bytes; a query filters on offsets and times)
STATISTICS_COLUMNS = [f for f in ("log_dir", "broker_id", "topic", "partition", "partition_dir", "segment",
                                  "batch_position", "offset", "timestamp", "key_size", "value_size", "timestamp_type",
                                  "leader_epoch", "producer_id", "producer_epoch", "sequence", "transactional", "txn",
                                  "control_type", "magic", "codec", "batch_base_offset")]
DICTIONARY_COLUMNS = ("log_dir", "broker_id", "topic", "partition", "partition_dir", "segment", "timestamp_type",
                      "leader_epoch", "producer_id", "producer_epoch", "transactional", "txn", "control_type",
                      "magic", "codec", "header_keys")
_I64, _I32 = pa.int64(), pa.int32()
_ZERO = b"\0\0\0\0"


def _Q(v: int) -> bytes:  # native-order int64 / int32 of the Arrow buffers (the C walk's byte order)
    return v.to_bytes(8, sys.byteorder, signed=True)


def _L(v: int) -> bytes:
    return v.to_bytes(4, sys.byteorder, signed=True)




class ColumnBuffers:
    """The rows not yet written: the per-record columns as the 15 bytearrays ``_accel.export_columns`` appends to
    (its layout: offset, timestamp, key_size, value_size, key bytes + end offsets, value bytes + end offsets,
    header-key bytes + end offsets, header-value bytes + end offsets + sizes, header-list end offsets, sequence),
    the batch's fields one value per batch, and each row's batch index."""

    def __init__(self) -> None:
        self.outs: tuple[bytearray, ...] = tuple(bytearray() for _ in range(15))
        self.batch_index = bytearray()
        self.batches: list[tuple[Any, ...]] = []  # one tuple per batch, in _BATCH_COLUMNS order
        self.n = 0
        self.nbytes = 0

    def add_python(self, recs: list[Any]) -> int:
        """The reference path's records (``format.batch.Record``) into the same buffers."""
        off, ts, ksz, vsz, kd, ko, vd, vo, hkd, hko, hvd, hvo, hvs, hl, seq = self.outs
        for r in recs:
            off += _Q(r.offset)
            ts += _Q(r.timestamp)
            ksz += _L(r.key_size)
            vsz += _L(r.value_size)
            if r.key is not None:
                kd += r.key
            ko += _L(len(kd))
            if r.value is not None:
                vd += r.value
            vo += _L(len(vd))
            for k, v in r.headers:
                hkd += bytes(k).decode("utf-8", "replace").encode("utf-8")
                hko += _L(len(hkd))
                if v is not None:
                    hvd += v
                hvo += _L(len(hvd))
                hvs += _L(-1 if v is None else len(v))
            hl += _L(len(hko) // 4)
            seq += _L(r.sequence)
        return len(recs)

    def table(self) -> pa.Table:
        off, ts, ksz, vsz, kd, ko, vd, vo, hkd, hko, hvd, hvo, hvs, hl, seq = self.outs
        n = len(off) // 8
        m = len(hko) // 4
        cols: dict[str, Any] = {}
        cols["offset"] = pa.Array.from_buffers(_I64, n, [None, pa.py_buffer(off)], 0)
        raw_ts = pa.Array.from_buffers(_I64, n, [None, pa.py_buffer(ts)], 0)
        cols["timestamp"] = pa.Array.from_buffers(TIMESTAMP, n, [_valid(raw_ts, _I64), pa.py_buffer(ts)])
        key_size = pa.Array.from_buffers(_I32, n, [None, pa.py_buffer(ksz)], 0)
        value_size = pa.Array.from_buffers(_I32, n, [None, pa.py_buffer(vsz)], 0)
        cols["key_size"], cols["value_size"] = key_size, value_size
        cols["key"] = pa.Array.from_buffers(pa.binary(), n, [_valid(key_size, _I32), pa.py_buffer(_ZERO + ko),
                                                             pa.py_buffer(kd)])
        cols["value"] = pa.Array.from_buffers(pa.binary(), n, [_valid(value_size, _I32), pa.py_buffer(_ZERO + vo),
                                                               pa.py_buffer(vd)])
        hkeys = pa.Array.from_buffers(pa.string(), m, [None, pa.py_buffer(_ZERO + hko), pa.py_buffer(hkd)], 0)
        hv_size = pa.Array.from_buffers(_I32, m, [None, pa.py_buffer(hvs)], 0)
        hvals = pa.Array.from_buffers(pa.binary(), m, [_valid(hv_size, _I32), pa.py_buffer(_ZERO + hvo),
                                                       pa.py_buffer(hvd)])
        lists = pa.py_buffer(_ZERO + hl)
        cols["header_keys"] = pa.Array.from_buffers(pa.list_(pa.string()), n, [None, lists], 0, children=[hkeys])
        cols["header_values"] = pa.Array.from_buffers(pa.list_(pa.binary()), n, [None, lists], 0, children=[hvals])
        cols["sequence"] = pa.Array.from_buffers(_I32, n, [None, pa.py_buffer(seq)], 0)
        idx = pa.Array.from_buffers(_I32, n, [None, pa.py_buffer(self.batch_index)], 0)
        for name, column in zip(_BATCH_COLUMNS, zip(*self.batches)):
            typ = SCHEMA.field(name).type
            values = list(column)
            if pa.types.is_boolean(typ):
                cols[name] = pa.array(values, type=typ).take(idx)
                continue
            # a dictionary over the batches' values: nothing copied or hashed per row (0.59 s against 1.05-1.19 s
            # for the batch columns of 1 M rows as plain or dictionary-hashed values)
            index = idx
            if None in values:  # a null value: a null index (the dictionary itself holds no null)
                valid = pa.array([v is not None for v in values], pa.bool_()).take(idx)
                index = pa.Array.from_buffers(_I32, n, [valid.buffers()[1], pa.py_buffer(self.batch_index)], -1)
                blank = "" if pa.types.is_string(typ) else 0
                values = [blank if v is None else v for v in values]
            cols[name] = pa.DictionaryArray.from_arrays(index, pa.array(values, typ))
        return pa.Table.from_arrays([cols[f.name] for f in WIRE], schema=WIRE)


def _valid(values: pa.Array, typ: pa.DataType) -> pa.Buffer | None:
    """Validity bitmap of "not -1" (Kafka's null), or None when no value is -1."""
    valid = pc.not_equal(values, pa.scalar(-1, typ))
    if valid.false_count == 0:
        return None
    return valid.buffers()[1]


class ParquetSink:
    """One Parquet file per partition (``open_path``) or one for all (the same path every time)."""

    keeps_markers = False

    def __init__(self, open_path: Callable[[SourcePartition], tuple[Any, str]], single: bool,
                 fast: Callable[[BatchItem, ColumnBuffers], int | None] | None = None) -> None:
        self.open_path = open_path
        self.single = single
        self.fast = fast
        self.writer: pq.ParquetWriter | None = None
        self.rows = ColumnBuffers()
        self.output = ""
        self.loc: tuple[Any, ...] = ()  # log_dir, broker_id, topic, partition, partition_dir
        self._file = ""
        self._segment = ""
        self._pending: Any = None  # the row group being written on the writer thread
        self._sink: Any = None  # the file object the writer writes to (None: it opened a path itself)

    def begin(self, part: SourcePartition) -> None:
        if self.writer is None:
            path, self.output = self.open_path(part)
            self._sink = path if not isinstance(path, str) else None
            self.writer = pq.ParquetWriter(path, WIRE, compression="snappy",
                                           use_dictionary=[*DICTIONARY_COLUMNS, *_BATCH_COLUMNS],
                                           write_statistics=STATISTICS_COLUMNS, store_schema=False)
            self.writer.add_key_value_metadata({k.decode(): v.decode() for k, v in (SCHEMA.metadata or {}).items()})
        d = part.dirs[0]
        self.loc = (os.path.dirname(d), part.broker if part.broker >= 0 else None, part.topic,
                    part.partition if part.partition >= 0 else None, os.path.basename(d))

    def batch(self, item: BatchItem) -> int:
        rows = self.rows
        e = item.entry
        if item.file != self._file:
            self._file, self._segment = item.file, os.path.basename(item.file)
        head = (*self.loc, self._segment, e.position, item.timestamp_type_name, e.partition_leader_epoch,
                e.producer_id, e.producer_epoch, bool(not e.is_legacy and e.is_transactional), item.txn)
        tail = (e.magic, item.codec_name, e.base_offset)
        if item.control is not None:  # each control record under its own type (a KRaft batch may hold several)
            recs = item.records()
            types = [record_control(r)[0] for r in recs]  # raises (nothing appended) for a malformed record
            got = rows.add_python(recs)
            for ctype in types:
                rows.batch_index += _L(len(rows.batches))
                rows.batches.append((*head, ctype, *tail))
        else:
            fast = self.fast(item, rows) if self.fast is not None else None
            got = rows.add_python(item.records()) if fast is None else fast  # raises (nothing appended): malformed
            rows.batch_index += _L(len(rows.batches)) * got
            rows.batches.append((*head, None, *tail))
        rows.n += got
        rows.nbytes += e.size  # about the bytes the rows hold (a compressed batch's records: more)
        if rows.n >= ROW_GROUP_ROWS or rows.nbytes >= ROW_GROUP_BYTES:
            self.flush()
        return got

    def flush(self, *, last: bool = False) -> None:
        """Hand the rows to the writer thread (pyarrow encodes and compresses without the GIL, beside the walk of
        the next row group); at most one row group waits, so memory holds two. The ``last`` row group of a file is
        written here: nothing walks beside it, and a thread per file cost a log dir of 20,000 small partitions
        more than their rows (bench/export_scale_bench.py)."""
        rows = self.rows
        if not rows.n or self.writer is None:
            return
        table = rows.table()
        self.rows = ColumnBuffers()
        self._wait()
        import threading

        writer = self.writer
        if last:
            writer.write_table(table)
            return
        box: list[BaseException] = []

        def write() -> None:
            try:
                writer.write_table(table)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the walk's thread by _wait
                box.append(exc)

        t = threading.Thread(target=write, name="kafkalog-parquet", daemon=True)
        t.start()
        self._pending = (t, box)

    def _wait(self) -> None:
        if self._pending is None:
            return
        t, box = self._pending
        self._pending = None
        t.join()
        if box:
            raise box[0]

    def end(self, part: SourcePartition, stats: PartitionStats) -> None:
        stats.output = self.output
        if not self.single:
            self.close()

    def close(self) -> None:
        self.flush(last=True)
        self._wait()
        if self.writer is not None:
            self.writer.close()
            if self._sink is not None:
                self._sink.close()  # a file object ParquetWriter was given: flushed and closed here
        self.writer = None
        self._sink = None
