"""The compiled fast paths of ``export`` (``_accel.export_ndjson``, ``_accel.export_columns``): whole v2 batches
formatted without a Python object per record. Each returns None where it declines, and the Python reference runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkalog_cli.ops.export import BatchItem


def ndjson_fast() -> Callable[[BatchItem, int], tuple[bytes, int] | None] | None:
    return None


def parquet_fast() -> Callable[[BatchItem, dict[str, list[Any]]], int | None] | None:
    return None
