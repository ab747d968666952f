"""Which allocator Arrow uses in a scan: jemalloc, chosen before pyarrow is loaded.

Why: the scan's Parquet encoders allocate and free a row group's buffers again and again. Arrow's default pool in
the Linux wheels (mimalloc) keeps freed pages until told to release them; told after every row group, to keep the
RSS flat, it zeroes and faults them in again, which cost more CPU than the encoding saved. jemalloc gives pages back
by itself. Measured on 1 GiB of 100-byte batches in interleaved rounds (bench/HISTORY.md, "Issue 14, session 4"):
mimalloc releasing after every group 1.44-1.60 s and 2.4-2.7 s of CPU, 180 MiB peak RSS; mimalloc not releasing
1.43 s at 193 MiB; jemalloc 1.27-1.46 s, 2.1-2.45 s of CPU, 157 MiB.

The choice must be made through ``ARROW_DEFAULT_MEMORY_POOL`` before pyarrow is imported (importing it creates the
default pool): ``pyarrow.set_memory_pool`` changes only what pyarrow's Python calls use, while Arrow's C++ (the
Parquet encoders among it) keeps the pool it started with, and two allocators side by side held more memory than
either (184-194 MB). Asking for a pool this Arrow lacks makes it print a warning on every start, so the build is
checked first (``has_jemalloc``).
"""

from __future__ import annotations

import os
import sys

ENV = "ARROW_DEFAULT_MEMORY_POOL"


def prefer_jemalloc() -> None:
    """Ask for jemalloc unless the user chose a pool, pyarrow is already loaded (too late to choose), or this
    pyarrow is built without it (``has_jemalloc``: Arrow would print a warning and fall back). Spawned scan workers
    inherit the choice through the environment."""
    if ENV in os.environ or "pyarrow" in sys.modules or not has_jemalloc():
        return
    os.environ[ENV] = "jemalloc"


def has_jemalloc() -> bool:
    """Whether the installed pyarrow's Arrow has jemalloc, told without importing it: its wheels carry Arrow's build
    configuration (``pyarrow/include/arrow/util/config.h``, ``#define ARROW_JEMALLOC``). The Linux x86_64 wheels
    have it; the ARM ones do not since pyarrow 18 (apache/arrow GH-44342), nor do builds for other systems. Where
    the header is not there (a bundle that left it out), x86_64 Linux is taken to have it, anything else not."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("pyarrow")
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    for base in spec.submodule_search_locations or []:
        config = os.path.join(base, "include", "arrow", "util", "config.h")
        try:
            with open(config, encoding="utf-8", errors="replace") as f:
                return any(line.split()[:2] == ["#define", "ARROW_JEMALLOC"] for line in f)
        except OSError:
            continue
    import platform

    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")
