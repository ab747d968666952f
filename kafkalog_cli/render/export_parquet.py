"""``export --format parquet``: the ``records`` columns of ``scan --records`` that apply to a record (location, batch
position, offset, timestamp, sizes, key, header names), plus the value, the header values and the batch's fields
(docs/export.md, "Parquet"). Rows are written in row groups of ``ROW_GROUP_ROWS`` rows (or ``ROW_GROUP_BYTES`` of
keys and values), so memory stays flat whatever the segment size.
"""

from __future__ import annotations

import array
import os
import sys
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from kafkalog_cli.ops.export import BatchItem, PartitionStats, SourcePartition, record_control
from kafkalog_cli.render.parquet_parts import ParallelParquetWriter
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
# the batch columns with few distinct values: in memory, dictionary arrays whose dictionary is the distinct values
# met so far in the export (``Dictionaries``), the same object from one row group to the next, with per-row indices
# (``_accel.export_codes``). pyarrow writes such a column's indices as they are; a dictionary that changes with every
# row group (one entry per batch, as before) made it materialise and re-hash every row: a third of its time.
# ``transactional`` is a boolean: its code is 0 for true and -1 (null) for false, so that the validity bits of the
# codes are its values.
CODE_COLUMNS = ("log_dir", "broker_id", "topic", "partition", "partition_dir", "segment", "timestamp_type",
                "transactional", "txn", "control_type", "magic", "codec")
# the batch columns with a value per batch (positions, offsets, producer fields): dictionary arrays over the row
# group's batches (index: each row's batch entry), fixed-width buffers per batch (``ColumnBuffers.bouts``)
_PER_BATCH = ("batch_position", "leader_epoch", "producer_id", "producer_epoch", "batch_base_offset")
assert set(CODE_COLUMNS) | set(_PER_BATCH) == set(_BATCH_COLUMNS)
# what the rows are in memory: the batch's fields as dictionary arrays (booleans aside); in the file they are
# SCHEMA's plain types (no Arrow schema stored), as scan writes its datasets
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


class Dictionaries:
    """The distinct values of each of CODE_COLUMNS met so far in the export, in the order met, and their Arrow
    dictionaries, rebuilt only when a value is added (one per output file: a file's row groups share them)."""

    def __init__(self) -> None:
        self.values: list[list[Any]] = [[] for _ in CODE_COLUMNS]
        self.index: list[dict[Any, int]] = [{} for _ in CODE_COLUMNS]
        self._arrays: list[pa.Array | None] = [None] * len(CODE_COLUMNS)

    def codes(self, row: tuple[Any, ...]) -> bytes:
        """The i32 codes (native order) of one batch entry's values, in CODE_COLUMNS order (None: -1)."""
        out = []
        for j, v in enumerate(row):
            if v is None:
                out.append(-1)
                continue
            k = self.index[j].get(v)
            if k is None:
                k = self.index[j][v] = len(self.values[j])
                self.values[j].append(v)
                self._arrays[j] = None
            out.append(k)
        return array.array("i", out).tobytes()  # native order, as the C walk's

    def array(self, j: int) -> pa.Array:
        a = self._arrays[j]
        if a is None:
            typ = SCHEMA.field(CODE_COLUMNS[j]).type
            vals = self.values[j] or ["" if pa.types.is_string(typ) else 0]  # all null so far: one unused value
            a = self._arrays[j] = pa.array(vals, typ)
        return a


def code_row(loc: tuple[Any, ...], segment: str, timestamp_type: str, transactional: bool, txn: str | None,
             control_type: str | None, magic: int, codec: str) -> tuple[Any, ...]:
    """One batch entry's values in CODE_COLUMNS order (``transactional``: True or None, see CODE_COLUMNS)."""
    return (*loc, segment, timestamp_type, True if transactional else None, txn, control_type, magic, codec)


class ColumnBuffers:
    """The rows not yet written: the per-record columns as the 15 bytearrays ``_accel.export_columns`` appends to
    (its layout: offset, timestamp, key_size, value_size, key bytes + end offsets, value bytes + end offsets,
    header-key bytes + end offsets, header-value bytes + end offsets + sizes, header-list end offsets, sequence),
    and the batch fields as the 7 bytearrays ``_accel.export_columns_run`` appends to (each row's batch entry; per
    batch entry: position, leader epoch, producer id, producer epoch, base offset, the CODE_COLUMNS codes)."""

    def __init__(self) -> None:
        self.outs: tuple[bytearray, ...] = tuple(bytearray() for _ in range(15))
        self.bouts: tuple[bytearray, ...] = tuple(bytearray() for _ in range(7))
        self.entries = 0  # batch entries (a batch with records, or one control record)
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

    def add_entry(self, rows: int, position: int, leader_epoch: int, producer_id: int, producer_epoch: int,
                  base_offset: int, codes: bytes) -> None:
        """One batch entry of ``rows`` rows (the reference path's batch fields, as the compiled run writes them)."""
        bno, pos, epoch, pid, pepoch, base, cds = self.bouts
        bno += _L(self.entries) * rows
        pos += _Q(position)
        epoch += _L(leader_epoch)
        pid += _Q(producer_id)
        pepoch += producer_epoch.to_bytes(2, sys.byteorder, signed=True)
        base += _Q(base_offset)
        cds += codes
        self.entries += 1

    def table(self, dicts: Dictionaries, kernels: Any = None) -> pa.Table:
        """The row group as an Arrow table of WIRE's schema (``kernels``: the accelerator's export_codes and
        export_valid, or None: the same arrays computed here)."""
        off, ts, ksz, vsz, kd, ko, vd, vo, hkd, hko, hvd, hvo, hvs, hl, seq = self.outs
        n = len(off) // 8
        m = len(hko) // 4
        valid = _valid_python if kernels is None else kernels.export_valid
        cols: dict[str, Any] = {}
        cols["offset"] = pa.Array.from_buffers(_I64, n, [None, pa.py_buffer(off)], 0)
        cols["timestamp"] = pa.Array.from_buffers(TIMESTAMP, n, [_bitmap(valid(ts, 8)), pa.py_buffer(ts)])
        cols["key_size"] = pa.Array.from_buffers(_I32, n, [None, pa.py_buffer(ksz)], 0)
        cols["value_size"] = pa.Array.from_buffers(_I32, n, [None, pa.py_buffer(vsz)], 0)
        cols["key"] = pa.Array.from_buffers(pa.binary(), n, [_bitmap(valid(ksz, 4)), pa.py_buffer(_ZERO + ko),
                                                             pa.py_buffer(kd)])
        cols["value"] = pa.Array.from_buffers(pa.binary(), n, [_bitmap(valid(vsz, 4)), pa.py_buffer(_ZERO + vo),
                                                               pa.py_buffer(vd)])
        hkeys = pa.Array.from_buffers(pa.string(), m, [None, pa.py_buffer(_ZERO + hko), pa.py_buffer(hkd)], 0)
        hvals = pa.Array.from_buffers(pa.binary(), m, [_bitmap(valid(hvs, 4)), pa.py_buffer(_ZERO + hvo),
                                                       pa.py_buffer(hvd)])
        lists = pa.py_buffer(_ZERO + hl)
        cols["header_keys"] = pa.Array.from_buffers(pa.list_(pa.string()), n, [None, lists], 0, children=[hkeys])
        cols["header_values"] = pa.Array.from_buffers(pa.list_(pa.binary()), n, [None, lists], 0, children=[hvals])
        cols["sequence"] = pa.Array.from_buffers(_I32, n, [None, pa.py_buffer(seq)], 0)
        bno, *per_batch, cds = self.bouts
        idx = pa.Array.from_buffers(_I32, n, [None, pa.py_buffer(bno)], 0)
        for name, buf in zip(_PER_BATCH, per_batch):
            typ = SCHEMA.field(name).type
            values = pa.Array.from_buffers(typ, self.entries, [None, pa.py_buffer(buf)], 0)
            cols[name] = pa.DictionaryArray.from_arrays(idx, values)
        k = len(CODE_COLUMNS)
        expanded = kernels.export_codes(cds, k, bno) if kernels is not None else _codes_python(cds, k, bno)
        for j, (name, (indices, bits, nulls)) in enumerate(zip(CODE_COLUMNS, expanded)):
            if name == "transactional":  # the validity bits of its codes are its values (CODE_COLUMNS)
                cols[name] = pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bits)], 0)
                continue
            index = pa.Array.from_buffers(_I32, n, [pa.py_buffer(bits) if nulls else None, pa.py_buffer(indices)],
                                          nulls)
            cols[name] = pa.DictionaryArray.from_arrays(index, dicts.array(j))
        return pa.Table.from_arrays([cols[f.name] for f in WIRE], schema=WIRE)


def _bitmap(got: tuple[bytes, int]) -> pa.Buffer | None:
    """The validity buffer of (bits, null count), or None when nothing is null."""
    bits, nulls = got
    return pa.py_buffer(bits) if nulls else None


def _valid_python(buf: Any, width: int) -> tuple[bytes, int]:
    """``_accel.export_valid`` without the accelerator: the validity bitmap of "not -1" and the null count."""
    vals = array.array("q" if width == 8 else "i")
    vals.frombytes(bytes(buf))  # native order, as the buffers are
    return _pack_bits([v != -1 for v in vals]), sum(1 for v in vals if v == -1)


def _pack_bits(flags: list[bool]) -> bytes:
    out = bytearray((len(flags) + 7) // 8)
    for i, f in enumerate(flags):
        if f:
            out[i >> 3] |= 1 << (i & 7)
    return bytes(out)


def _codes_python(codes: Any, k: int, bno: Any) -> list[tuple[bytes, bytes, int]]:
    """``_accel.export_codes`` without the accelerator: per column, the per-row indices, validity and null count."""
    cv = array.array("i")
    cv.frombytes(bytes(codes))
    rows = array.array("i")
    rows.frombytes(bytes(bno))
    out = []
    for j in range(k):
        per_row = [cv[e * k + j] for e in rows]
        flags = [c >= 0 for c in per_row]
        out.append((array.array("i", [c if c >= 0 else 0 for c in per_row]).tobytes(), _pack_bits(flags),
                    flags.count(False)))
    return out


class ParquetSink:
    """One Parquet file per partition (``open_path``) or one for all (the same path every time). ``fast``: the
    compiled walk of one batch (``export_accel.parquet_fast``); ``kernels``: the accelerator module (its
    ``export_columns_run``, ``export_codes``, ``export_valid``), or None for the Python reference throughout."""

    keeps_markers = False

    def __init__(self, open_path: Callable[[SourcePartition], tuple[Any, str]], single: bool,
                 fast: Callable[[BatchItem, ColumnBuffers], int | None] | None = None, kernels: Any = None) -> None:
        self.open_path = open_path
        self.single = single
        self.fast = fast
        self.kernels = kernels
        self.writer: ParallelParquetWriter | None = None
        self.dicts = Dictionaries()
        self.rows = ColumnBuffers()
        self.output = ""
        self.loc: tuple[Any, ...] = ()  # log_dir, broker_id, topic, partition, partition_dir
        self._file = ""
        self._segment = ""
        self._run_codes: tuple[str, bytes, bytes] | None = None  # (file, CreateTime codes, LogAppendTime codes)
        self._sink: Any = None  # the output file object

    def begin(self, part: SourcePartition) -> None:
        if self.writer is None:
            sink, self.output = self.open_path(part)
            self._sink = open(sink, "xb") if isinstance(sink, str) else sink  # noqa: SIM115 - closed by close()
            self.writer = ParallelParquetWriter(
                self._sink, WIRE, {k.decode(): v.decode() for k, v in (SCHEMA.metadata or {}).items()},
                compression="snappy", use_dictionary=[*DICTIONARY_COLUMNS, *_BATCH_COLUMNS],
                write_statistics=STATISTICS_COLUMNS, store_schema=False)
            self.dicts = Dictionaries()
        d = part.dirs[0]
        self.loc = (os.path.dirname(d), part.broker if part.broker >= 0 else None, part.topic,
                    part.partition if part.partition >= 0 else None, os.path.basename(d))
        self._run_codes = None

    def batch(self, item: BatchItem) -> int:
        rows = self.rows
        e = item.entry
        if item.file != self._file:
            self._file, self._segment = item.file, os.path.basename(item.file)
        transactional = bool(not e.is_legacy and e.is_transactional)
        fields = (e.position, e.partition_leader_epoch, e.producer_id, e.producer_epoch, e.base_offset)
        if item.control is not None:  # each control record under its own type (a KRaft batch may hold several)
            recs = item.records()
            types = [record_control(r)[0] for r in recs]  # raises (nothing appended) for a malformed record
            got = rows.add_python(recs)
            for ctype in types:
                rows.add_entry(1, *fields, self.dicts.codes(code_row(
                    self.loc, self._segment, item.timestamp_type_name, transactional, item.txn, ctype, e.magic,
                    item.codec_name)))
        else:
            fast = self.fast(item, rows) if self.fast is not None else None
            got = rows.add_python(item.records()) if fast is None else fast  # raises (nothing appended): malformed
            if got:
                rows.add_entry(got, *fields, self.dicts.codes(code_row(
                    self.loc, self._segment, item.timestamp_type_name, transactional, item.txn, None, e.magic,
                    item.codec_name)))
        rows.n += got
        rows.nbytes += e.size  # about the bytes the rows hold (a compressed batch's records: more)
        if rows.n >= ROW_GROUP_ROWS or rows.nbytes >= ROW_GROUP_BYTES:
            self.flush()
        return got

    def run(self, buf: Any, pos: int, next_offset: int | None, max_batch_size: int, file: str
            ) -> tuple[int, int, int, int, int, int] | None:
        """The rows of a run of plain v2 batches from ``pos`` in one compiled call (``_accel.export_columns_run``:
        the same rows and batch fields as ``batch`` for each, the same row-group boundaries); the Exporter's
        contract of ``NdjsonSink.run``. None without the accelerator."""
        if self.kernels is None:
            return None
        if file != self._file:
            self._file, self._segment = file, os.path.basename(file)
        if self._run_codes is None or self._run_codes[0] != file:
            create, append = (self.dicts.codes(code_row(self.loc, self._segment, name, False, None, None, 2, "none"))
                              for name in ("CreateTime", "LogAppendTime"))
            self._run_codes = (file, create, append)
        rows = self.rows
        npos, batches, records, first, last_taken, last, walked = self.kernels.export_columns_run(
            buf, pos, len(buf), -(1 << 63) if next_offset is None else next_offset, max_batch_size, rows.outs,
            rows.bouts, self._run_codes[1], self._run_codes[2], rows.entries, rows.n, rows.nbytes, ROW_GROUP_ROWS,
            ROW_GROUP_BYTES)
        rows.entries += batches
        rows.n += records
        rows.nbytes += walked
        if rows.n >= ROW_GROUP_ROWS or rows.nbytes >= ROW_GROUP_BYTES:
            self.flush()
        return npos, batches, records, first, last_taken, last

    def flush(self) -> None:
        """Hand the rows to the encoding threads (``ParallelParquetWriter``: pyarrow encodes and compresses without
        the GIL, beside the walk of the next row group); at most ``parquet_parts.PENDING`` row groups wait."""
        rows = self.rows
        if not rows.n or self.writer is None:
            return
        table = rows.table(self.dicts, self.kernels)
        self.rows = ColumnBuffers()
        self.writer.write_table(table)

    def end(self, part: SourcePartition, stats: PartitionStats) -> None:
        stats.output = self.output
        if not self.single:
            self.close()

    def close(self) -> None:
        self.flush()
        if self.writer is not None:
            self.writer.close()
            self._sink.close()  # flushed and closed here (a DirectWriter: the rest written, its thread joined)
        self.writer = None
        self._sink = None
