#!/usr/bin/env python3
"""Benchmark: `recover` (the loader model) and `salvage` plans on a generated partition with one corrupt batch in
the middle segment, page-cached, in this process.

    python bench/recover_bench.py [--mib 256] [--segments 8] [--producers]

Not a test: it prints figures (MiB/s of segment data planned).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafkalog_cli.broker import loader  # noqa: E402
from kafkalog_cli.format.encoder import RecordSpec, encode_batch  # noqa: E402
from kafkalog_cli.ops import salvage  # noqa: E402
from kafkalog_cli.ops.rebuild_index import rebuild_segment  # noqa: E402


def generate(pdir: Path, mib: int, segments: int, producers: bool) -> tuple[int, int]:
    pdir.mkdir(parents=True)
    per_seg = (mib << 20) // segments
    off, batches, seq = 0, 0, 0
    value = b"v" * 1000
    for s in range(segments):
        base = off
        parts, size = [], 0
        while size < per_seg:
            recs = [RecordSpec(key=b"k%d" % i, value=value, timestamp=1_700_000_000_000 + off, offset_delta=i)
                    for i in range(4)]
            pid = 7 if producers else -1
            data = encode_batch(recs, base_offset=off, producer_id=pid, producer_epoch=0 if producers else -1,
                                base_sequence=seq if producers else -1, partition_leader_epoch=s // 3)
            seq += 4
            parts.append(data)
            size += len(data)
            off += 4
            batches += 1
        blob = b"".join(parts)
        if s == segments // 2:
            mid = bytearray(blob)
            mid[sum(len(p) for p in parts[: len(parts) // 2]) + 100] ^= 0xFF  # a record byte of the middle batch
            blob = bytes(mid)
        stem = pdir / f"{base:020d}"
        (stem.with_suffix(".log")).write_bytes(blob)
        rb = rebuild_segment(blob if s != segments // 2 else b"".join(parts), base)
        (stem.with_suffix(".index")).write_bytes(rb.index)
        (stem.with_suffix(".timeindex")).write_bytes(rb.timeindex)
    return batches, off


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--segments", type=int, default=8)
    ap.add_argument("--producers", action="store_true")
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="recover-bench-"))
    try:
        pdir = root / "logs" / "bench-0"
        batches, records = generate(pdir, a.mib, a.segments, a.producers)
        total = sum(p.stat().st_size for p in pdir.glob("*.log")) / (1 << 20)
        for p in pdir.glob("*.log"):
            p.read_bytes()  # page cache
        print(f"partition: {total:.0f} MiB, {a.segments} segments, {batches} batches, {records} records, "
              f"producers={a.producers}")
        t = time.perf_counter()
        plan = loader.plan_load(str(pdir))
        dt = time.perf_counter() - t
        print(f"recover plan: {dt:.2f} s ({total / dt:.0f} MiB/s); broker loses {plan.lost_records} records, "
              f"{len(plan.deleted_segments)} segments deleted")
        t = time.perf_counter()
        sp = salvage.plan_salvage(str(pdir))
        dt = time.perf_counter() - t
        print(f"salvage plan: {dt:.2f} s ({total / dt:.0f} MiB/s); keeps {sp.kept_records} records, loses "
              f"{sp.salvage_lost_bytes} bytes")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
