"""The compiled header walks and CRC-32C of ``kafkalog_cli/_accel.c`` used by verify-crc and rebuild-index.

Why: the pure-Python walks pay ~2-3 µs per batch (a memoryview slice, a ``crc32c()`` call, a struct unpack, the
checks), five times the cost of the CRC itself on 16 KiB batches. The C functions walk a whole run of batches with the
GIL released and hand back aggregates or packed structs. The Python code stays the reference: every C function stops
(or returns None) at the first entry it does not reproduce exactly, and the caller continues with the Python code
there. ``KAFKALOG_NO_ACCEL=1`` disables the accelerator (read at each call, so tests can compare both paths).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from types import ModuleType
from typing import NamedTuple

_mod: ModuleType | None
try:  # pragma: no cover - depends on the build
    from kafkalog_cli import _accel as _built

    _mod = _built
except ImportError:  # pragma: no cover
    _mod = None

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# one record of scan_v2, see the C comment: little-endian, no padding (70 bytes)
SCAN_FORMAT = struct.Struct("<qiBBhqiiqqiqhiI")
# one record of verify_run: position, entry size, base offset, last offset, max timestamp (36 bytes)
RUN_FORMAT = struct.Struct("<qiqqq")


def module() -> ModuleType | None:
    """The extension when it is built, has the walk functions and is not disabled; else None."""
    if _mod is None or os.environ.get("KAFKALOG_NO_ACCEL") or not hasattr(_mod, "verify_run"):
        return None
    return _mod


def fits_int64(*values: int) -> bool:
    """C takes int64 arguments; Python ints are unbounded, so anything outside stays on the Python path."""
    return all(INT64_MIN <= v <= INT64_MAX for v in values)


class Parallel(NamedTuple):
    threads: int  # threads computing the CRCs of a window (1: the sequential walk only)
    min_bytes: int  # a walk CRCs this many bytes on its own before it predicts windows
    window: int  # largest window of predicted batches, in bytes
    windows: int  # windows that ran on more than one thread since import


def parallel_config(threads: int | None = None, min_bytes: int | None = None, window: int | None = None) -> Parallel:
    """Set how the C walks split their CRCs over threads (None: unchanged); return the settings before the call.

    The defaults (2 threads when more than one CPU is online, 4 MiB, 32 MiB; ``KAFKALOG_ACCEL_THREADS=N`` at import
    overrides the thread count) suit page-cached segments. Tests force tiny thresholds and windows with it, so that
    small segments cross many window boundaries; results never depend on these settings.
    """
    if _mod is None or not hasattr(_mod, "parallel_config"):
        raise RuntimeError("the compiled accelerator is not available")
    args = [-1 if v is None else v for v in (threads, min_bytes, window)]
    return Parallel(*_mod.parallel_config(*args))


def implementation() -> str:
    """Which CRC-32C the extension chose at import ("sse4.2-3way" or "slicing-by-8"), or why there is none."""
    if _mod is None or not hasattr(_mod, "crc_implementation"):
        return "not built"
    if os.environ.get("KAFKALOG_NO_ACCEL"):
        return "disabled (KAFKALOG_NO_ACCEL)"
    return str(_mod.crc_implementation())


class ScannedBatch(NamedTuple):
    position: int
    size: int  # whole entry, including the 12-byte offset+length prefix
    magic: int
    crc_ok: bool
    attributes: int
    base_offset: int
    last_offset_delta: int
    records_count: int
    base_timestamp: int
    max_timestamp: int
    partition_leader_epoch: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    crc: int


def scan_v2(buf: bytes | memoryview, start: int = 0, end: int | None = None) -> tuple[list[ScannedBatch], int, str]:
    """The C header walk over ``buf[start:end]``: (v2 batches, where it stopped, why).

    ``why`` is "end" (the walk of ``storage.segment.walk`` is over), "bad-size" (a size field below 14, where ``walk``
    raises), "magic" (an entry that is not magic 2) or "small" (a v2 entry shorter than its 61-byte header); from the
    stop position on, ``storage.segment.walk``/``read_entry`` take over. Raises RuntimeError without the accelerator.
    """
    mod = module()
    if mod is None:
        raise RuntimeError("the compiled accelerator is not available")
    data, stop, why = mod.scan_v2(buf, start, len(buf) if end is None else end)
    out = [ScannedBatch(*t) for t in SCAN_FORMAT.iter_unpack(data)]
    return [b._replace(crc_ok=bool(b.crc_ok)) for b in out], stop, why


def iter_run_entries(entries: bytes) -> Iterator[tuple[int, int, int, int, int]]:
    """(position, size, base offset, last offset, max timestamp) of each batch a ``verify_run`` call accepted."""
    return RUN_FORMAT.iter_unpack(entries)
