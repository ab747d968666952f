"""``export --format parquet``: the ``records`` columns of ``scan --records`` that apply to a record (location, batch
position, offset, timestamp, sizes, key, header names), plus the value, the header values and the batch's fields
(docs/export.md, "Parquet"). Rows are written in row groups of ``ROW_GROUP_ROWS`` rows (or ``ROW_GROUP_BYTES`` of
keys and values), so memory stays flat whatever the segment size.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafkalog_cli.ops.export import BatchItem, PartitionStats, SourcePartition
from kafkalog_cli.scan.schema import LOCATION_FIELDS, RECORDS, TIMESTAMP, VERSION_KEY

ROW_GROUP_ROWS = 128 * 1024
ROW_GROUP_BYTES = 64 << 20
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


class _Rows:
    """Column lists of the rows not yet written."""

    def __init__(self) -> None:
        self.cols: dict[str, list[Any]] = {f.name: [] for f in SCHEMA}
        self.n = 0
        self.nbytes = 0


class ParquetSink:
    """One Parquet file per partition (``open_path``) or one for all (the same path every time)."""

    keeps_markers = False

    def __init__(self, open_path: Callable[[SourcePartition], tuple[str, str]], single: bool,
                 fast: Callable[[BatchItem, dict[str, list[Any]]], int | None] | None = None) -> None:
        self.open_path = open_path
        self.single = single
        self.fast = fast
        self.writer: pq.ParquetWriter | None = None
        self.rows = _Rows()
        self.output = ""
        self.loc: dict[str, Any] = {}

    def begin(self, part: SourcePartition) -> None:
        path, self.output = self.open_path(part)
        if self.writer is None:
            self.writer = pq.ParquetWriter(path, SCHEMA, compression="zstd")
        d = part.dirs[0]
        self.loc = {"log_dir": os.path.dirname(d), "broker_id": part.broker if part.broker >= 0 else None,
                    "topic": part.topic, "partition": part.partition if part.partition >= 0 else None,
                    "partition_dir": os.path.basename(d)}

    def batch(self, item: BatchItem) -> int:
        rows = self.rows
        before = rows.n
        got = self.fast(item, rows.cols) if self.fast is not None else None
        if got is None:
            recs = item.records()  # raises (nothing appended) for malformed records
            got = _append_python(item, recs, rows.cols)
        # the batch's own fields, once per batch: repeated into the rows just appended
        e = item.entry
        n = got
        cols = rows.cols
        seg = os.path.basename(item.file)
        for name, value in (("log_dir", self.loc["log_dir"]), ("broker_id", self.loc["broker_id"]),
                            ("topic", self.loc["topic"]), ("partition", self.loc["partition"]),
                            ("partition_dir", self.loc["partition_dir"]), ("segment", seg),
                            ("batch_position", e.position), ("timestamp_type", item.timestamp_type_name),
                            ("leader_epoch", e.partition_leader_epoch), ("producer_id", e.producer_id),
                            ("producer_epoch", e.producer_epoch),
                            ("transactional", bool(not e.is_legacy and e.is_transactional)), ("txn", item.txn),
                            ("control_type", item.control[0] if item.control else None), ("magic", e.magic),
                            ("codec", item.codec_name), ("batch_base_offset", e.base_offset)):
            cols[name].extend([value] * n)
        rows.n = before + n
        rows.nbytes += e.size  # about the bytes the rows hold (a compressed batch's records: more)
        if rows.n >= ROW_GROUP_ROWS or rows.nbytes >= ROW_GROUP_BYTES:
            self.flush()
        return n

    def flush(self) -> None:
        rows = self.rows
        if not rows.n or self.writer is None:
            return
        arrays = []
        for f in SCHEMA:
            vals = rows.cols[f.name]
            if f.name == "timestamp":
                vals = [None if t == -1 else t for t in vals]
            arrays.append(pa.array(vals, type=f.type))
        self.writer.write_table(pa.Table.from_arrays(arrays, schema=SCHEMA))
        self.rows = _Rows()

    def end(self, part: SourcePartition, stats: PartitionStats) -> None:
        stats.output = self.output
        if not self.single:
            self.close()

    def close(self) -> None:
        self.flush()
        if self.writer is not None:
            self.writer.close()
        self.writer = None


def _append_python(item: BatchItem, recs: list[Any], cols: dict[str, list[Any]]) -> int:
    """The per-record columns of ``recs`` (the reference path)."""
    off, ts, ksz, vsz = cols["offset"], cols["timestamp"], cols["key_size"], cols["value_size"]
    key, value, hk, hv, seq = cols["key"], cols["value"], cols["header_keys"], cols["header_values"], cols["sequence"]
    for r in recs:
        off.append(r.offset)
        ts.append(r.timestamp)
        ksz.append(r.key_size)
        vsz.append(r.value_size)
        key.append(None if r.key is None else bytes(r.key))
        value.append(None if r.value is None else bytes(r.value))
        hk.append([bytes(k).decode("utf-8", "replace") for k, _v in r.headers])
        hv.append([None if v is None else bytes(v) for _k, v in r.headers])
        seq.append(r.sequence)
    return len(recs)
