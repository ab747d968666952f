"""Benchmark (not a test): seek-offset cost vs. segment count, and rebuild-index throughput vs. raw mmap reads.

    python bench/seek_bench.py            # both
    python bench/seek_bench.py --quick    # 256 MiB segment instead of 1 GiB
    python bench/seek_bench.py --rebuild-only                       # only part 2
    KAFKALOG_NO_ACCEL=1 python bench/seek_bench.py --rebuild-only   # part 2 with the pure-Python loop
    KAFKALOG_ACCEL_THREADS=1 python bench/seek_bench.py --rebuild-only   # part 2, compiled, CRCs on one thread

1. seek-offset wall time on a 10,000-segment partition / on a 10-segment partition (target <= 2), in-process
   (``ops.seek.seek_offset``) and end to end (``kafkalog seek-offset`` in a subprocess, Python start-up included).
2. rebuild-index MB/s / mmap-read MB/s on a page-cached segment of 16 KiB batches (target >= 0.6). "mmap read" is
   the cheapest pass that touches every byte: numpy sum over the mmap (and, for reference, CRC-32C over it in 1 MiB
   slices, which recovery must do anyway).

Everything is generated under a temporary directory in /tmp and deleted at the end.
"""

from __future__ import annotations

import mmap
import os
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

from benchio import readv_file  # bench/benchio.py: the readv baseline shared with verify_bench.py

from kafkalog_cli.format.crc import crc32c
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.ops import seek
from kafkalog_cli.ops.rebuild_index import rebuild_segment
from kafkalog_cli.storage.segment import MappedFile


def make_tiny_partition(pdir: str, segments: int, batches: int = 3) -> int:
    os.makedirs(pdir)
    off = 0
    for _ in range(segments):
        base = off
        data = b"".join(
            encode_batch([RecordSpec(b"k", b"v" * 2000, timestamp=1000 + off + i)], base_offset=off + i) for i in range(batches)
        )
        off += batches
        stem = os.path.join(pdir, f"{base:020d}")
        with open(stem + ".log", "wb") as f:
            f.write(data)
        rb = rebuild_segment(data, base, 1024)
        with open(stem + ".index", "wb") as f:
            f.write(rb.index)
        with open(stem + ".timeindex", "wb") as f:
            f.write(rb.timeindex)
    return off


def time_seeks(pdir: str, end: int, n: int = 300) -> float:
    rng = random.Random(1)
    targets = [rng.randrange(end) for _ in range(n)]
    samples = []
    for t in targets:
        t0 = time.perf_counter()
        seek.seek_offset(pdir, t)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def time_cli(pdir: str, end: int, n: int = 7) -> float:
    samples = []
    for i in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "kafkalog_cli", "seek-offset", pdir, str((i * 7919) % end)],
                       check=True, stdout=subprocess.DEVNULL)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def bench_seek(tmp: str) -> None:
    small = os.path.join(tmp, "small-0")
    big = os.path.join(tmp, "big-0")
    end_s = make_tiny_partition(small, 10)
    t0 = time.perf_counter()
    end_b = make_tiny_partition(big, 10_000)
    print(f"generated 10,000 segments ({3 * 10_000} files) in {time.perf_counter() - t0:.1f} s")
    s, b = time_seeks(small, end_s), time_seeks(big, end_b)
    print(f"seek-offset in-process median: 10 segments {s * 1e3:.3f} ms, 10,000 segments {b * 1e3:.3f} ms, ratio {b / s:.2f}")
    cs, cb = time_cli(small, end_s), time_cli(big, end_b)
    print(f"kafkalog seek-offset end to end median: 10 segments {cs * 1e3:.0f} ms, 10,000 segments {cb * 1e3:.0f} ms, ratio {cb / cs:.2f}")


def make_big_segment(path: str, size: int) -> int:
    rng = random.Random(2)
    recs = [RecordSpec(b"key-%d" % i, rng.randbytes(1000), timestamp=1_700_000_000_000 + i) for i in range(16)]
    proto = bytearray(encode_batch(recs, base_offset=0))  # ~16.2 KiB; the CRC does not cover the base offset
    n = size // len(proto)
    chunk = 4096
    with open(path, "wb") as f:
        off = 0
        for start in range(0, n, chunk):
            buf = bytearray()
            for _ in range(min(chunk, n - start)):
                struct.pack_into(">q", proto, 0, off)
                buf += proto
                off += 16
            f.write(buf)
    return len(proto)


def bench_rebuild(tmp: str, size: int) -> None:
    path = os.path.join(tmp, "00000000000000000000.log")
    bsize = make_big_segment(path, size)
    actual = os.path.getsize(path)
    with open(path, "rb") as f:  # page-cache it
        while f.read(1 << 24):
            pass
    import numpy as np

    def best(fn, reps=3):
        return min(_timed(fn) for _ in range(reps))

    def _timed(fn):
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        t_np = best(lambda: int(np.frombuffer(mm, dtype=np.uint64, count=actual // 8).sum()))
        mv = memoryview(mm)
        t_crc = best(lambda: [crc32c(mv[p : p + (1 << 20)]) for p in range(0, actual, 1 << 20)])
        mv.release()
        mm.close()

    t_rd = best(lambda: readv_file(path))

    def rebuild():
        with MappedFile(path) as mf:
            rb = rebuild_segment(mf.buf, 0, 4096)
            assert rb.problem is None

    t_rb = best(rebuild)
    mb = actual / 1e6
    from kafkalog_cli.storage import accel

    if accel.module() is None:
        state = "off (" + accel.implementation() + ")"
    else:
        par = accel.parallel_config()
        state = f"on, CRC {accel.implementation()}, {par.threads} CRC thread(s) after {par.min_bytes >> 20} MiB"
    print(f"segment {actual / 2**30:.2f} GiB, {actual // bsize} batches of {bsize} bytes; accelerator: {state}")
    print(f"os.readv into a reused 1 MiB buffer: {mb / t_rd:.0f} MB/s")
    print(f"mmap read (numpy sum): {mb / t_np:.0f} MB/s; mmap CRC-32C in 1 MiB slices: {mb / t_crc:.0f} MB/s")
    print(f"rebuild-index (header walk + per-batch CRC + index build): {mb / t_rb:.0f} MB/s")
    print(f"ratio rebuild / mmap read = {t_np / t_rb:.2f} (target >= 0.6); rebuild / CRC pass = {t_crc / t_rb:.2f}; "
          f"rebuild / readv = {t_rd / t_rb:.2f}")


def main() -> None:
    quick = "--quick" in sys.argv
    tmp = tempfile.mkdtemp(prefix="kafkalog-bench-", dir="/tmp")
    try:
        if "--rebuild-only" not in sys.argv:
            bench_seek(tmp)
        if "--seek-only" not in sys.argv:
            bench_rebuild(tmp, (256 if quick else 1024) * 2**20)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
