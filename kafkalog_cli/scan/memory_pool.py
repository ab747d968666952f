"""Which allocator Arrow uses in a scan: jemalloc, chosen before pyarrow is loaded.

Why: the scan's Parquet encoders allocate and free a row group's buffers again and again. Arrow's default pool in
the Linux wheels (mimalloc) keeps freed pages until told to release them; told after every row group, to keep the
RSS flat, it zeroes and faults them in again, which cost more CPU than the encoding saved. jemalloc gives pages back
by itself. Measured on 1 GiB of 100-byte batches, one run each way (BENCHMARKS.md, "Issue 14, session 4"): 2.0 s of
CPU and 163 MB peak RSS with jemalloc against 2.3-2.7 s and 184-194 MB with mimalloc.

The choice must be made through ``ARROW_DEFAULT_MEMORY_POOL`` before pyarrow is imported: ``pyarrow.set_memory_pool``
changes only what pyarrow's Python calls use, while Arrow's C++ (the Parquet encoders among it) keeps the pool it
started with, and two allocators side by side hold more memory than either.
"""

from __future__ import annotations

import os
import sys

ENV = "ARROW_DEFAULT_MEMORY_POOL"


def prefer_jemalloc() -> None:
    """Ask for jemalloc unless the user chose a pool, pyarrow is already loaded (too late to choose), or this is
    not Linux (the wheels elsewhere may lack jemalloc, and Arrow would print a warning). Spawned scan workers inherit
    the choice through the environment."""
    if ENV in os.environ or "pyarrow" in sys.modules or not sys.platform.startswith("linux"):
        return
    os.environ[ENV] = "jemalloc"
