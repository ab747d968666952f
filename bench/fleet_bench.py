"""Benchmark of ``kafkalog scan --low-impact`` (not a test): how much of the page cache a scan leaves behind.

A log dir of --segments segments of --mib MiB each (incompressible 64 KiB records) is written and evicted from the
page cache (fsync + posix_fadvise DONTNEED). Then ``kafkalog scan`` runs over it, once plain and once with
``--low-impact``, each time from a cold cache, and the bytes of the input files that are cached afterwards are
counted with mincore (the files' own pages: other processes on the machine do not disturb the figure). A third run
warms the last segment first (a broker's hot tail) and checks it is still cached after a ``--low-impact`` scan.
Also reported: /proc/meminfo Cached before/after (machine-wide, so noisy on a shared host).

    python bench/fleet_bench.py                       # 8 x 64 MiB
    python bench/fleet_bench.py --segments 4 --mib 32 # quicker
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.scan import impact

KAFKALOG = [sys.executable, "-m", "kafkalog_cli"]


def build(root: Path, segments: int, mib: int) -> list[Path]:
    part = root / "kafka-logs" / "bench-0"
    part.mkdir(parents=True)
    paths, offset = [], 0
    payload = os.urandom(64 << 10)
    for _ in range(segments):
        base = offset
        with open(part / f"{base:020d}.log", "wb") as f:
            for _b in range(mib * 4):
                recs = [RecordSpec(key=None, value=payload[i:] + payload[:i], timestamp=1_700_000_000_000 + offset + i)
                        for i in range(4)]
                f.write(encode_batch(recs, base_offset=offset))
                offset += 4
        paths.append(part / f"{base:020d}.log")
    return paths


def evict(paths: list[Path]) -> None:
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


def cached(paths: list[Path]) -> int:
    return sum(sum(b & 1 for b in (impact.resident(str(p)) or b"")) * impact.PAGE for p in paths)


def meminfo_cached() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Cached:"):
                return int(line.split()[1]) * 1024
    return 0


def run(root: Path, extra: list[str]) -> tuple[float, int]:
    before = meminfo_cached()
    t0 = time.perf_counter()
    r = subprocess.run([*KAFKALOG, "scan", str(root / "kafka-logs"), "-j", "2", *extra], capture_output=True,
                       text=True)
    if r.returncode not in (0, 1):
        sys.exit(r.stderr)
    return time.perf_counter() - t0, meminfo_cached() - before


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--segments", type=int, default=8)
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--dir", default=None, help="where to write the log dir (default: a temp dir; not tmpfs)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kafkalog-fleet-bench-", dir=args.dir) as tmp:
        root = Path(tmp)
        paths = build(root, args.segments, args.mib)
        total = sum(p.stat().st_size for p in paths)
        print(f"input: {len(paths)} segments, {total / 2**20:.0f} MiB")
        for label, extra in (("plain", []), ("--low-impact", ["--low-impact"])):
            evict(paths)
            cold = cached(paths)
            secs, machine = run(root, extra)
            after = cached(paths)
            print(f"{label:13s} {secs:6.2f} s  input pages cached: before {cold / 2**20:7.1f} MiB, after "
                  f"{after / 2**20:7.1f} MiB = {100 * (after - cold) / total:5.1f}% of bytes read; "
                  f"machine Cached delta {machine / 2**20:+8.1f} MiB")
        evict(paths)
        with open(paths[-1], "rb") as f:  # the hot tail
            while f.read(1 << 20):
                pass
        hot = cached([paths[-1]])
        run(root, ["--low-impact"])
        print(f"hot tail kept: {cached([paths[-1]]) / 2**20:.1f} of {hot / 2**20:.1f} MiB still cached; "
              f"rest: {cached(paths[:-1]) / 2**20:.1f} MiB cached")


if __name__ == "__main__":
    main()
