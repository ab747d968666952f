"""Benchmark of verify-crc (not a test): throughput against plain mmap reads, and peak memory vs segment size.

Generates a segment of 16 KiB v2 batches in /tmp (1 GiB by default), reads it once so it is page-cached, then
measures in this process (best of --repeat runs each):
  * baselines over a fresh read-only mmap: numpy sum of a uint64 view (touches every byte), crc32c of 1 MiB slices,
    and a 1 MiB-chunk copy; plus os.readv into one reused 1 MiB buffer (read(2) from the page cache); the fastest
    one is the baseline;
  * ``verify_segment`` (header walk + CRC-32C of every batch, index checks off since there is no index).
Then runs verify_segment on the big file and on a 64 MiB file in child processes and reports their peak RSS
(``ru_maxrss`` of the child). Deletes the files afterwards.

    python bench/verify_bench.py            # 1 GiB
    python bench/verify_bench.py --mib 256  # quicker
    KAFKALOG_NO_ACCEL=1 python bench/verify_bench.py   # the pure-Python walk, for comparison
    KAFKALOG_ACCEL_THREADS=1 python bench/verify_bench.py   # the compiled walk with its CRCs on one thread
    python bench/verify_bench.py --mib 512 --threads-ab 8     # one vs two CRC threads, verify and rebuild-index
"""

from __future__ import annotations

import argparse
import mmap
import os
import struct
import subprocess
import sys
import time

from benchio import readv_file  # bench/benchio.py: the readv baseline shared with seek_bench.py

from kafkalog_cli.format.crc import crc32c
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.ops.verify import verify_segment

BATCH_TARGET = 16 * 1024


def make_file(path: str, size: int) -> int:
    """Write ``size`` bytes of 16 KiB batches: one encoded batch, its baseOffset patched per copy (not under CRC)."""
    recs = [RecordSpec(key=b"key-%d" % i, value=os.urandom(1000), timestamp=1_700_000_000_000 + i) for i in range(16)]
    template = bytearray(encode_batch(recs, base_offset=0))
    pad = BATCH_TARGET - len(template)
    if pad > 0:  # grow the last value so the batch is exactly 16 KiB
        recs[-1] = RecordSpec(key=recs[-1].key, value=os.urandom(1000 + pad - 1), timestamp=recs[-1].timestamp)
        template = bytearray(encode_batch(recs, base_offset=0))
    n = size // len(template)
    with open(path, "wb") as f:
        chunk = bytearray()
        for i in range(n):
            struct.pack_into(">q", template, 0, i * 16)
            chunk += template
            if len(chunk) >= 8 << 20:
                f.write(chunk)
                chunk.clear()
        f.write(chunk)
    return n


def page_cache(path: str) -> None:
    with open(path, "rb") as f:
        while f.read(8 << 20):
            pass


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def baselines(path: str, repeat: int) -> dict[str, float]:
    size = os.path.getsize(path)
    out: dict[str, float] = {}

    def with_map(body):
        def run():
            with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                mv = memoryview(mm)
                try:
                    body(mv)
                finally:
                    mv.release()
        return run

    try:
        import numpy as np

        def np_sum(mv):
            np.frombuffer(mv[: size - size % 8], dtype=np.uint64).sum()

        out["numpy uint64 sum"] = size / best(with_map(np_sum), repeat)
    except ImportError:
        pass

    def crc_chunks(mv):
        for p in range(0, size, 1 << 20):
            crc32c(mv[p:p + (1 << 20)])

    out["crc32c 1 MiB slices"] = size / best(with_map(crc_chunks), repeat)

    def copy_chunks(mv):
        buf = bytearray(1 << 20)
        for p in range(0, size, 1 << 20):
            piece = mv[p:p + (1 << 20)]
            buf[: len(piece)] = piece

    out["1 MiB chunk copy"] = size / best(with_map(copy_chunks), repeat)

    out["os.readv 1 MiB reused"] = size / best(lambda: readv_file(path), repeat)
    return out


CHILD = """
import sys
from kafkalog_cli.ops.verify import verify_segment
r = verify_segment(sys.argv[1])
assert not r.problems, r.problems[:3]
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
print(int(status["VmHWM"].split()[0]), int(status["RssAnon"].split()[0]), int(status["RssFile"].split()[0]))
"""


def child_memory_kib(path: str) -> tuple[int, int, int]:
    """(VmHWM, RssAnon, RssFile) of a fresh child after verifying ``path``. VmHWM is per address space, so unlike
    ru_maxrss it is not inherited from this (big) parent across fork+exec; RssFile is page cache mapped by the
    read-only mmap (shared, reclaimable), RssAnon is what the process itself allocated."""
    out = subprocess.run([sys.executable, "-c", CHILD, path], check=True, capture_output=True, text=True)
    hwm, anon, filed = (int(x) for x in out.stdout.split())
    return hwm, anon, filed


def accel_state() -> str:
    """Whether verify_segment runs the compiled walk (KAFKALOG_NO_ACCEL=1 turns it off for a before/after run)."""
    from kafkalog_cli.storage import accel

    if accel.module() is None:
        return "off (" + accel.implementation() + ")"
    par = accel.parallel_config()
    return f"on, CRC {accel.implementation()}, {par.threads} CRC thread(s) after {par.min_bytes >> 20} MiB"


def threads_ab(path: str, rounds: int) -> None:
    """The keep-target under load (issue 20): in ONE run, rounds in alternating order of os.readv (the page-cache
    read speed), verify_segment and rebuild-index's rebuild_segment each with two CRC threads and with one; wall
    MB/s, best and median, and the load average next to them. Says whether the second CRC thread helps or hurts
    on this machine now."""
    import statistics

    from kafkalog_cli.ops.rebuild_index import rebuild_segment
    from kafkalog_cli.storage import accel

    size = os.path.getsize(path)

    def readv() -> None:
        readv_file(path)

    def verify(threads: int):  # noqa: ANN202
        def run() -> None:
            accel.parallel_config(threads)
            assert not verify_segment(path, indexes=False).problems
        return run

    def rebuild(threads: int):  # noqa: ANN202
        def run() -> None:
            accel.parallel_config(threads)
            with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
                view = memoryview(m)
                try:
                    rebuild_segment(view, 0)
                finally:
                    view.release()
        return run

    before = accel.parallel_config()
    tests = {"os.readv 1 MiB": readv, "verify, 2 CRC threads": verify(2), "verify, 1 CRC thread": verify(1),
             "rebuild-index, 2 threads": rebuild(2), "rebuild-index, 1 thread": rebuild(1)}
    rates: dict[str, list[float]] = {k: [] for k in tests}
    loads = []
    try:
        for r in range(rounds):
            items = list(tests.items())
            for name, fn in (items if r % 2 == 0 else items[::-1]):
                t = time.perf_counter()
                fn()
                rates[name].append(size / (time.perf_counter() - t))
            loads.append(os.getloadavg()[0])
    finally:
        accel.parallel_config(before.threads)
    base_best, base_med = max(rates["os.readv 1 MiB"]), statistics.median(rates["os.readv 1 MiB"])
    print(f"{size >> 20} MiB page-cached, {rounds} rounds in alternating order, load average "
          f"{min(loads):.1f}-{max(loads):.1f}")
    for name, v in rates.items():
        print(f"  {name:26s} best {max(v) / 1e6:7.0f} MB/s  median {statistics.median(v) / 1e6:7.0f} MB/s   "
              f"÷ readv: best {max(v) / base_best:.2f}, median {statistics.median(v) / base_med:.2f}  (target >= 0.6)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=1024, help="size of the big segment in MiB (default 1024)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--threads-ab", type=int, default=0, metavar="ROUNDS",
                    help="instead: the one-vs-two CRC threads A/B of verify and rebuild-index against readv")
    args = ap.parse_args()
    big = os.path.join(args.dir, "kafkalog-bench-big", "00000000000000000000.log")
    small = os.path.join(args.dir, "kafkalog-bench-small", "00000000000000000000.log")
    os.makedirs(os.path.dirname(big), exist_ok=True)
    os.makedirs(os.path.dirname(small), exist_ok=True)
    try:
        n = make_file(big, args.mib << 20)
        make_file(small, 64 << 20)
        size = os.path.getsize(big)
        page_cache(big)
        page_cache(small)
        if args.threads_ab:
            threads_ab(big, args.threads_ab)
            return
        print(f"segment: {size} bytes, {n} batches of {size // n} bytes, crc32c implementation: "
              f"{__import__('kafkalog_cli.format.crc', fromlist=['x']).implementation()}, "
              f"accelerator (_accel walk/CRC): {accel_state()}")
        base = baselines(big, args.repeat)
        for name, bps in base.items():
            print(f"baseline {name:24s} {bps / 1e6:9.0f} MB/s")
        report = verify_segment(big, indexes=False)
        assert not report.problems and report.batches == n, report.problems[:3]
        t = best(lambda: verify_segment(big, indexes=False), args.repeat)
        vbps = size / t
        fastest = max(base.values())
        print(f"verify_segment                    {vbps / 1e6:9.0f} MB/s  ({t:.3f} s)")
        for name, bps in base.items():
            print(f"ratio verify / {name:24s} {vbps / bps:6.2f}")
        print(f"ratio verify / fastest baseline   {vbps / fastest:9.2f}   (target >= 0.6)")
        for name, path in ((f"{args.mib} MiB", big), ("64 MiB", small)):
            hwm, anon, filed = child_memory_kib(path)
            print(f"child verifying {name:9s}: VmHWM {hwm / 1024:7.1f} MiB, RssAnon {anon / 1024:6.1f} MiB, "
                  f"RssFile {filed / 1024:7.1f} MiB (mapped page cache)")
    finally:
        for p in (big, small):
            try:
                os.remove(p)
                os.rmdir(os.path.dirname(p))
            except OSError:
                pass


if __name__ == "__main__":
    main()
