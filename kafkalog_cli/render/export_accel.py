"""The compiled fast paths of ``export`` (``_accel.export_ndjson``, accel/export_records.c; ``_accel.export_columns``,
accel/export_columns.c):
a whole v2 batch's selected records formatted without a Python object per record. Each returns None where it
declines (no accelerator, ``KAFKALOG_NO_ACCEL=1``, a legacy entry, a payload streamed in pieces, anything the C
walk declines), and the Python reference (``render/export_ndjson.python_lines``, ``export_parquet.ColumnBuffers.add_python``)
runs instead; tests/test_export_accel.py compares the two on every fixture and on generated partitions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.ops.export import BatchItem
from kafkalog_cli.storage import accel

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def _module() -> Any:
    mod = accel.module()
    return mod if mod is not None and hasattr(mod, "export_ndjson") else None


def _batch_args(item: BatchItem) -> tuple[Any, ...] | None:
    """The arguments both walks start with: (records buffer, start, end, count, base offset, base timestamp, max
    timestamp, log append time, base sequence), the records decompressed when compressed; None to decline."""
    e = item.entry
    if e.is_legacy or e.records_count < 0 or e.streams_payload:
        return None
    try:
        data, start = e.payload(item.buf, item.decompress_limit)
    except KafkalogError as exc:
        raise exc.located(item.file) from None
    end = e.position + e.size if data is item.buf else len(data)
    return (data, start, end, e.records_count, e.base_offset, e.base_timestamp, e.max_timestamp,
            e.timestamp_type == 1, e.base_sequence)


def _bounds(item: BatchItem) -> tuple[int, int, int, int]:
    s = item.selection
    return (INT64_MIN if s.lo_offset is None else s.lo_offset, INT64_MIN if s.start_ms is None else s.start_ms,
            INT64_MAX if s.end_ms is None else s.end_ms, -1 if s.limit is None else max(s.limit, 0))


def ndjson_fast() -> Callable[[BatchItem, int], tuple[bytes, int] | None] | None:
    from kafkalog_cli.render.export_ndjson import line_pieces

    mod = _module()  # once per export (the environment is read here, not per batch)
    if mod is None:
        return None

    def fast(item: BatchItem, broker: int) -> tuple[bytes, int] | None:
        args = _batch_args(item)
        if args is None:
            return None
        return mod.export_ndjson(*args, line_pieces(item, broker), *_bounds(item))

    return fast


def ndjson_run() -> Callable[..., Any] | None:
    """``_accel.export_ndjson_run`` (NdjsonSink.run), or None without the accelerator."""
    mod = _module()
    return None if mod is None or not hasattr(mod, "export_ndjson_run") else mod.export_ndjson_run


def parquet_fast() -> Callable[[BatchItem, Any], int | None] | None:
    mod = _module()
    if mod is None:
        return None

    def fast(item: BatchItem, cols: Any) -> int | None:
        args = _batch_args(item)
        if args is None:
            return None
        n = mod.export_columns(*args, *_bounds(item), cols.outs)
        return None if n < 0 else n

    return fast


def parquet_kernels() -> Any:
    """The accelerator module for ``ParquetSink`` (``export_columns_run``, ``export_codes``, ``export_valid``), or
    None without it (the sink then computes the same arrays in Python)."""
    mod = _module()
    return mod if mod is not None and hasattr(mod, "export_columns_run") else None
