#!/usr/bin/env python3
"""Benchmark (not a test): verify-crc of a segment that is NOT in the page cache, against
``dd if=SEG of=/dev/null bs=1M`` of the same file in the same run (issue 20: the 3 a.m. case, a broker whose cache
holds other data).

Writes a segment of 16 KiB v2 batches (1 GiB by default) next to --dir, fsyncs it, then per round: drops the file's
pages (``posix_fadvise(DONTNEED)``, checked with mincore through a read-only map), times ``dd``; drops again, times
``kafkalog verify-crc SEG`` (a child process, start-up included and also reported apart); best of --repeat.

    python bench/cold_bench.py              # 1 GiB
    python bench/cold_bench.py --mib 256    # quicker
    KAFKALOG_NO_READAHEAD=1 python bench/cold_bench.py   # without the readahead hints, for a before/after
"""

from __future__ import annotations

import argparse
import ctypes
import mmap
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from verify_bench import make_file  # noqa: E402


def drop(path: str) -> float:
    """Evict the file from the page cache; returns the fraction of its pages still resident afterwards."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return resident(fd)
    finally:
        os.close(fd)


def resident(fd: int) -> float:
    size = os.fstat(fd).st_size
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    try:
        pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
        vec = ctypes.create_string_buffer(pages)
        if libc.mincore(addr, size, vec) != 0:
            return -1.0
        return sum(b & 1 for b in vec.raw) / pages
    finally:
        libc.munmap(addr, size)


def timed(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default="/tmp")
    args = ap.parse_args()
    d = os.path.join(args.dir, "kafkalog-cold-bench")
    os.makedirs(d, exist_ok=True)
    seg = os.path.join(d, "00000000000000000000.log")
    tiny = os.path.join(d, "tiny", "00000000000000000000.log")
    os.makedirs(os.path.dirname(tiny), exist_ok=True)
    cli = [sys.executable, "-m", "kafkalog_cli"]
    try:
        make_file(seg, args.mib << 20)
        make_file(tiny, 16 << 10)
        size = os.path.getsize(seg)
        print(f"segment {size} bytes; load average {os.getloadavg()[0]:.1f}; readahead hints "
              f"{'off' if os.environ.get('KAFKALOG_NO_READAHEAD') else 'on'}")
        rows: dict[str, list[float]] = {"dd": [], "verify": [], "start": [], "left": []}
        for _ in range(args.repeat):
            rows["left"].append(drop(seg))
            rows["dd"].append(timed(["dd", f"if={seg}", "of=/dev/null", "bs=1M"]))
            rows["left"].append(drop(seg))
            rows["verify"].append(timed(cli + ["verify-crc", seg]))
            rows["start"].append(timed(cli + ["verify-crc", tiny]))
        dd, ver, start = min(rows["dd"]), min(rows["verify"]), min(rows["start"])
        print(f"pages resident after each drop: max {max(rows['left']) * 100:.1f} %")
        print(f"dd bs=1M (cold)               {dd:7.3f} s  {size / dd / 1e6:7.0f} MB/s   runs {rows['dd']}")
        print(f"kafkalog verify-crc (cold)    {ver:7.3f} s  {size / ver / 1e6:7.0f} MB/s   runs {rows['verify']}")
        print(f"  start-up (page-cached tiny segment) {start:.3f} s; without it {size / (ver - start) / 1e6:.0f} MB/s")
        print(f"ratio verify-crc / dd         {dd / ver:7.2f}   (target >= 0.8; start-up subtracted: "
              f"{dd / (ver - start):.2f})")
    finally:
        for p in (seg, tiny):
            try:
                os.remove(p)
            except OSError:
                pass


if __name__ == "__main__":
    main()
