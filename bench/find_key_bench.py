"""find-key's two speed targets (issue 32 item 4) on a generated fleet of 100 partitions:

1. with murmur2 pruning, bytes read <= 1/100 of the data + the indexes: counted two ways, the bytes of the files
   find-key maps (``FindResult.bytes_read``) and the kernel's ``read_bytes`` of the process (``/proc/self/io``)
   with the page cache dropped first (``echo 3 > /proc/sys/vm/drop_caches``, root only; skipped otherwise);
2. a full ``--any-partition`` search >= 0.5x the throughput of ``verify-crc --deep`` on the same fleet (both as the
   installed command, warm cache, best of ``--repeat``).

    python bench/find_key_bench.py [--partitions 100] [--mib-per-partition 2] [--codec none|lz4|zstd|mixed]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

from kafkalog_cli.format import codecs
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.format.partitioners import java_default
from kafkalog_cli.ops.rebuild_index import rebuild_segment

KEY = b"customer-424242"
CODECS = {"none": [codecs.NONE], "lz4": [codecs.LZ4], "zstd": [codecs.ZSTD], "mixed": [codecs.NONE, codecs.LZ4]}


def _segment(mib: float, codec_list: list[int]) -> bytes:
    out = bytearray()
    off, i = 0, 0
    while len(out) < mib * 1024 * 1024:
        recs = [RecordSpec(key=f"user-{(off + j) % 5000}".encode(), value=b"v" * 100,
                           timestamp=1_700_000_000_000 + off + j) for j in range(100)]
        out += encode_batch(recs, base_offset=off, codec=codec_list[i % len(codec_list)])
        off += 100
        i += 1
    return bytes(out)


def build(root: str, partitions: int, mib: float, codec: str) -> tuple[int, int]:
    """The fleet under ``root/kafka``; returns (data bytes, index bytes)."""
    seg = _segment(mib, CODECS[codec])
    rb = rebuild_segment(seg, 0)
    target = java_default(KEY, partitions)
    extra = encode_batch([RecordSpec(key=KEY, value=b"the-value", timestamp=1_700_000_000_000)],
                         base_offset=10**9)
    data = index = 0
    for p in range(partitions):
        d = os.path.join(root, "kafka", f"orders-{p}")
        os.makedirs(d)
        body = seg
        if p == target:
            with open(os.path.join(d, f"{10**9:020d}.log"), "wb") as f:
                f.write(extra)
            data += len(extra)
        with open(os.path.join(d, "00000000000000000000.log"), "wb") as f:
            f.write(body)
        for ext, blob in (("index", rb.index), ("timeindex", rb.timeindex)):
            with open(os.path.join(d, f"00000000000000000000.{ext}"), "wb") as f:
                f.write(blob)
            index += len(blob)
        data += len(body)
    return data, index


def _child_bytes(logdir: str) -> None:
    """In a fresh process: one search (the imports), drop the page cache, the pruned search again; print its mapped
    and kernel-read bytes."""
    from kafkalog_cli.ops.find_key import Options, find_key

    def read_bytes() -> int:
        with open("/proc/self/io") as f:
            return int(next(line for line in f if line.startswith("read_bytes")).split()[1])

    find_key([logdir], Options(KEY))  # imports every module the search uses: their files are not counted
    dropped = False
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        dropped = True
    except OSError:
        pass
    before = read_bytes()
    res = find_key([logdir], Options(KEY))
    after = read_bytes()
    assert [h.partition for h in res.hits if h.match == "key"], "the planted key was not found"
    print(res.bytes_read, after - before if dropped else -1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--mib-per-partition", type=float, default=2.0)
    ap.add_argument("--codec", choices=sorted(CODECS), default="mixed")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/find-key-bench")
    ap.add_argument("--child-bytes", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child_bytes:
        _child_bytes(a.child_bytes)
        return
    shutil.rmtree(a.dir, ignore_errors=True)
    try:
        t0 = time.time()
        data, index = build(a.dir, a.partitions, a.mib_per_partition, a.codec)
        logdir = os.path.join(a.dir, "kafka")
        print(f"fleet: {a.partitions} partitions, {data / 2**20:.1f} MiB data, {index / 2**10:.0f} KiB indexes, "
              f"codec {a.codec} (built in {time.time() - t0:.1f} s); load {os.getloadavg()[0]:.1f}")
        out = subprocess.run([sys.executable, __file__, "--child-bytes", logdir], capture_output=True, text=True,
                             check=True).stdout.split()
        mapped, kernel = int(out[0]), int(out[1])
        budget = data / a.partitions + index
        print(f"pruned: mapped {mapped} B, kernel read_bytes {kernel if kernel >= 0 else 'n/a (not root)'} B; "
              f"budget (1/{a.partitions} of the data + indexes) {budget:.0f} B -> "
              f"mapped/budget {mapped / budget:.3f}" + (f", kernel/budget {kernel / budget:.3f}" if kernel >= 0 else ""))
        exe = os.path.join(os.path.dirname(sys.executable), "kafkalog")

        def best(args: list[str]) -> float:
            times = []
            for _ in range(a.repeat):
                t = time.perf_counter()
                subprocess.run([exe, *args], capture_output=True)
                times.append(time.perf_counter() - t)
            return min(times)

        v = best(["verify-crc", "--deep", logdir])
        f = best(["find-key", KEY.decode(), logdir, "--any-partition"])
        print(f"verify-crc --deep {v:.2f} s ({data / v / 2**20:.0f} MiB/s); find-key --any-partition {f:.2f} s "
              f"({data / f / 2**20:.0f} MiB/s): ratio {v / f:.2f} (target >= 0.5)")
    finally:
        shutil.rmtree(a.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
