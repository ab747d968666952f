"""compare-replicas throughput: two replicas of one partition, identical (header walk only) and one compacted
(records decoded where batches differ), generated under /tmp and deleted. Prints batches/s and MiB/s.

    python bench/replicas_bench.py [--batches 200000] [--records-per-batch 10]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from kafkalog_cli.format.encoder import RecordSpec, encode_batch  # noqa: E402
from kafkalog_cli.ops import replicas as rp  # noqa: E402


def write_partition(pdir: str, batches: int, per: int, keys: int, drop_superseded_below: int = -1) -> int:
    """Keyed batches of ``per`` records; with ``drop_superseded_below`` >= 0, every record whose key occurs again
    before that offset is left out (a cleaner's output, batches rewritten in place). Returns bytes written."""
    os.makedirs(pdir, exist_ok=True)
    last: dict[int, int] = {}
    if drop_superseded_below >= 0:
        for off in range(min(batches * per, drop_superseded_below)):
            last[off % keys] = off
    size = 0
    ts = 1_700_000_000_000
    with open(os.path.join(pdir, "00000000000000000000.log"), "wb") as f:
        for b in range(batches):
            base = b * per
            specs = []
            for i in range(per):
                off = base + i
                if drop_superseded_below >= 0 and off < drop_superseded_below and last[off % keys] != off:
                    continue
                specs.append(RecordSpec(key=b"key-%d" % (off % keys), value=b"value-%d" % off, timestamp=ts + off,
                                        offset_delta=i))
            data = encode_batch(specs, base_offset=base, last_offset_delta=per - 1, partition_leader_epoch=0,
                                base_timestamp=ts + base) if specs else b""
            f.write(data)
            size += len(data)
    with open(os.path.join(pdir, "leader-epoch-checkpoint"), "w") as f:
        f.write("0\n1\n0 0\n")
    return size


def timed(dirs: list[str]) -> tuple[float, rp.Comparison]:
    t0 = time.perf_counter()
    cmp = rp.compare(dirs, ["1", "2"])
    return time.perf_counter() - t0, cmp


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=200_000)
    ap.add_argument("--records-per-batch", type=int, default=10)
    ap.add_argument("--keys", type=int, default=50_000)
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="replicas-bench-")
    try:
        a = os.path.join(root, "b1", "orders-0")
        b = os.path.join(root, "b2", "orders-0")
        c = os.path.join(root, "b3", "orders-0")
        n = write_partition(a, args.batches, args.records_per_batch, args.keys)
        shutil.copytree(a, b)
        cut = args.batches * args.records_per_batch // 2
        write_partition(c, args.batches, args.records_per_batch, args.keys, drop_superseded_below=cut)
        secs, cmp = timed([a, b])
        assert not cmp.diverged
        print(f"identical: {args.batches} batches x2, {n / 2**20:.1f} MiB each: {secs:.2f} s = "
              f"{2 * args.batches / secs:,.0f} batches/s, {2 * n / 2**20 / secs:.1f} MiB/s")
        secs, cmp = timed([a, c])
        assert not cmp.diverged, cmp.detail
        print(f"compacted half (records decoded in rewritten batches): {secs:.2f} s = "
              f"{2 * args.batches / secs:,.0f} batches/s")
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
