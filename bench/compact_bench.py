"""Benchmark (not a test): peak RSS of ``kafkalog compact --execute`` on a generated partition vs. the cap.

    python bench/compact_bench.py                      # 1 GiB partition, --dedupe-buffer-bytes 128 MiB (the default)
    python bench/compact_bench.py --size-mib 256       # quicker
    python bench/compact_bench.py --dedupe-mib 16      # a map that fills: the round is limited, memory still capped

Issue 12's target: peak RSS of ``compact --execute`` <= dedupe buffer + 64 MiB, whatever the partition's size. The
partition is generated in-process (uncompressed batches of ``--records-per-batch`` records with ``--value-bytes``
values; every key written about twice, so compaction removes about half), then ``kafkalog compact`` runs in a child
process: a dry run, then ``--execute``. Peak RSS is ``ru_maxrss`` of the process tree (RUSAGE_CHILDREN of a small
runner process that starts the command: the largest resident set of any process of the tree, file pages mapped
into it included). Everything lives in a temporary
directory and is deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.ops.rebuild_index import rebuild_segment

MIB = 1 << 20


def generate(pdir: str, size: int, segment: int, per_batch: int, value_bytes: int, keys: int) -> tuple[int, int]:
    """Write segments of ``segment`` bytes until ``size`` bytes, plus a small active segment; (records, bytes)."""
    os.makedirs(pdir)
    rng = random.Random(12)
    value = bytes(rng.randrange(256) for _ in range(value_bytes))
    off = 0
    total = 0
    ts = 1_700_000_000_000
    while total < size:
        base = off
        stem = os.path.join(pdir, f"{base:020d}")
        written = 0
        with open(stem + ".log", "wb") as f:
            while written < segment and total + written < size:
                specs = [RecordSpec(b"key-%09d" % rng.randrange(keys), value, timestamp=ts + off + i, offset_delta=i)
                         for i in range(per_batch)]
                data = encode_batch(specs, base_offset=off, partition_leader_epoch=0)
                f.write(data)
                written += len(data)
                off += per_batch
        total += written
        with open(stem + ".log", "rb") as f:
            rb = rebuild_segment(f.read(), base)
        for ext, data in (("index", rb.index), ("timeindex", rb.timeindex)):
            with open(f"{stem}.{ext}", "wb") as f:
                f.write(data)
    with open(os.path.join(pdir, f"{off:020d}.log"), "wb") as f:  # the active segment
        f.write(encode_batch([RecordSpec(b"active", b"v", timestamp=ts + off)], base_offset=off, partition_leader_epoch=0))
    return off, total


RUNNER = """
import resource, subprocess, sys
with open(sys.argv[1], "w") as out:
    p = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.PIPE, text=True)
sys.stderr.write(p.stderr)
print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def run(argv: list[str], stdout_path: str) -> tuple[int, float, int]:
    """(exit code, seconds, peak RSS in KiB) of one kafkalog command and everything it starts (its stdout goes to
    ``stdout_path``).

    A small runner process starts the command and reads RUSAGE_CHILDREN: a child's ru_maxrss counts the RSS of the
    process it was forked from, so starting kafkalog straight from this process (which held the generated
    segments) would report this process's size, not the command's."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", RUNNER, stdout_path, sys.executable, "-m", "kafkalog_cli", *argv],
                          capture_output=True, text=True)
    secs = time.perf_counter() - t0
    code, rss = (int(x) for x in proc.stdout.split())
    if code not in (0, 1):
        print(proc.stderr, file=sys.stderr)
    return code, secs, rss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--segment-mib", type=int, default=256)
    ap.add_argument("--records-per-batch", type=int, default=16)
    ap.add_argument("--value-bytes", type=int, default=1000)
    ap.add_argument("--dedupe-mib", type=int, default=128)
    ap.add_argument("--dir", default=None, help="where to generate (default: a temporary directory in /tmp)")
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="kafkalog-compact-bench-", dir=args.dir)
    try:
        pdir = os.path.join(root, "kafka-logs", "bench-0")
        size = args.size_mib * MIB
        est_records = size // (args.value_bytes + 30)
        t0 = time.perf_counter()
        records, total = generate(pdir, size, args.segment_mib * MIB, args.records_per_batch, args.value_bytes,
                                  max(1, est_records // 2))
        print(f"generated {total / MIB:.0f} MiB, {records} records in "
              f"{len([n for n in os.listdir(pdir) if n.endswith('.log')])} segments ({time.perf_counter() - t0:.0f} s)")
        cap_kib = (args.dedupe_mib * MIB + 64 * MIB) // 1024
        common = ["compact", "--now-ms", "1800000000000", "--dedupe-buffer-bytes", str(args.dedupe_mib * MIB)]
        plan_path = os.path.join(root, "plan.json")
        code, secs, rss = run([*common, "--format", "json", pdir], plan_path)
        print(f"dry run:   exit {code}, {secs:.0f} s, peak RSS {rss / 1024:.1f} MiB")
        with open(plan_path) as f:
            m = json.load(f)["offset_map"]
        print(f"offset map: {m['entries']} keys of {m['max_entries']} ({m['slots']} slots)"
              + (f", FULL: round limited to offsets < {m['cleaned_up_to']}" if m["full"] else ""))
        code, secs, rss = run([*common, "--execute", "--no-backup", "--backup-dir", os.path.join(root, "bk"), pdir],
                              os.devnull)
        after = sum(os.path.getsize(os.path.join(pdir, n)) for n in os.listdir(pdir) if n.endswith(".log"))
        print(f"--execute: exit {code}, {secs:.0f} s, peak RSS {rss / 1024:.1f} MiB, log {total / MIB:.0f} -> "
              f"{after / MIB:.0f} MiB")
        verdict = "OK" if rss <= cap_kib else "OVER"
        print(f"--execute peak RSS {rss / 1024:.1f} MiB; cap = dedupe buffer {args.dedupe_mib} MiB + 64 MiB "
              f"= {cap_kib / 1024:.0f} MiB: {verdict}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
