"""Helpers shared by the benchmarks in bench/ (not tests): the page-cache read baseline and the A/B CPU-time loop.

Why: verify_bench.py and seek_bench.py each carried their own copy of the os.readv loop, and layouts_bench.py and
records_bench.py the same alternating A/B loop (issue 21: `duplicates` listed them); one definition each here.
"""

from __future__ import annotations

import os
from collections.abc import Callable

CHUNK = 1 << 20


def readv_file(path: str, chunk: int = CHUNK) -> None:
    """Read ``path`` with read(2) (os.readv) into one reused ``chunk``-byte buffer: the "page-cache read speed" of
    the field notes, the baseline verify-crc and rebuild-index are compared with."""
    buf = bytearray(chunk)
    fd = os.open(path, os.O_RDONLY)
    try:
        while os.readv(fd, [buf]):
            pass
    finally:
        os.close(fd)


def ab_min(base: str, new: str, repeat: int, measure: Callable[[str], float]) -> tuple[float, float]:
    """``measure(tree)`` for the base and the new tree alternately, ``repeat`` times each, so that both see the same
    machine load; the smallest figure of each (base, new)."""
    times: dict[str, list[float]] = {base: [], new: []}
    for _ in range(repeat):
        for tree in (base, new):
            times[tree].append(measure(tree))
    return min(times[base]), min(times[new])
