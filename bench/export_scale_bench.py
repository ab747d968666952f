#!/usr/bin/env python3
"""Scale runs of ``kafkalog export`` (every format) and ``kafkalog replay --execute``: a partition of one big
segment (1 GiB by default) and a log dir of many one-segment partitions (20,000 by default). Wall time, records/s,
peak RSS and peak open file descriptors of each command; memory and descriptors must stay flat (not grow with the
segment size or the partition count): give two sizes (``--gib 0.125,1``, ``--partitions 2000,20000``) to see it.

Each command runs as a subprocess of this interpreter (``python -m kafkalog_cli``, so PYTHONPATH chooses the tree),
its output under --dir; peak RSS (``VmHWM``, the high-water mark of the command's own address space: ``ru_maxrss``
would count the forked parent's pages before the exec) and the open descriptors are sampled from ``/proc/PID`` every
10 ms (a descriptor peak between two samples can be missed; a leak that grows with the partitions is not), with
the peak of the anonymous part (``RssAnon``: the heap, without the mapped page cache of the segments read). The replay goes into librdkafka's mock cluster (``test.mock.num.brokers``), which runs in this process's client
threads (its memory and CPU are this process's, not the replay's): the big partition with ``--partitioner same``, the
many partitions (one topic, partitions 0..N-1) with ``--partitioner murmur2`` into the mock's 4 partitions.

Inputs: the big segment is bench/segments.py's generator (100-record v2 batches, 100 B values, a header on every
4th record), a 64 MiB block written again and again with its batches' base offsets moved on (the base offset is
outside the CRC); each small partition holds one batch of --records-per-partition records.

    python bench/export_scale_bench.py [--gib 1] [--partitions 20000] [--formats ndjson,parquet,kafka]
        [--no-replay] [--dir /tmp/export-scale] [--only big|many]
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from segments import generate  # noqa: E402

from kafkalog_cli.format.encoder import RecordSpec, encode_batch  # noqa: E402

BLOCK_MIB = 64
KAFKALOG = [sys.executable, "-m", "kafkalog_cli"]


def big_partition(pdir: Path, gib: float, work: Path) -> int:
    """One segment of about ``gib`` GiB; returns its record count."""
    pdir.mkdir(parents=True)
    block_path = work / "block.log"
    per_block = generate(block_path, min(BLOCK_MIB, gib * 1024), 0, 100)
    block = bytearray(block_path.read_bytes())
    block_path.unlink()
    starts = []
    pos = 0
    while pos + 12 <= len(block):
        starts.append(pos)
        pos += 12 + struct.unpack_from(">i", block, pos + 8)[0]
    copies = max(1, round(gib * 1024 / BLOCK_MIB))
    with open(pdir / ("0" * 20 + ".log"), "wb") as f:
        for k in range(copies):
            if k:
                for s in starts:
                    base = struct.unpack_from(">q", block, s)[0]
                    struct.pack_into(">q", block, s, base + per_block)
            f.write(block)
    return per_block * copies


def many_partitions(logs: Path, n: int, per: int) -> int:
    """``n`` partition directories ``many-0`` .. ``many-{n-1}``, one segment of one batch each."""
    recs = [RecordSpec(b"key-%06d" % i, b"v" * 100, timestamp=1_700_000_000_000 + i) for i in range(per)]
    data = encode_batch(recs, base_offset=0, partition_leader_epoch=0)
    for p in range(n):
        d = logs / f"many-{p}"
        d.mkdir(parents=True)
        (d / ("0" * 20 + ".log")).write_bytes(data)
    return n * per


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float, int, int]:
    """(wall s, peak RSS MiB, peak anonymous RSS MiB, peak open fds, exit code) of one command."""
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        p = subprocess.Popen(cmd, stdout=devnull, stderr=subprocess.PIPE, env=env)
    peak = [0, 0, 0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            try:
                peak[0] = max(peak[0], len(os.listdir(f"/proc/{p.pid}/fd")))
                with open(f"/proc/{p.pid}/status") as f:
                    st = dict(ln.split(":", 1) for ln in f if ln.startswith(("VmHWM:", "RssAnon:")))
                peak[1] = max(peak[1], int(st["VmHWM"].split()[0]))
                peak[2] = max(peak[2], int(st["RssAnon"].split()[0]))
            except (OSError, KeyError, ValueError):
                pass
            stop.wait(0.01)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    assert p.stderr is not None
    err = p.stderr.read()
    _pid, status, _usage = os.wait4(p.pid, 0)
    stop.set()
    t.join()
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"{' '.join(cmd)}: exit {code}: {err.decode(errors='replace')[-2000:]}")
    return wall, peak[1] / 1024, peak[2] / 1024, peak[0], code


def line(what: str, n: int, res: tuple[float, float, float, int, int]) -> None:
    wall, rss, anon, fds, _code = res
    print(f"  {what:26s} {wall:8.2f} s  {n / wall / 1e6:6.3f} M records/s  peak RSS {rss:7.1f} MiB (anon "
          f"{anon:6.1f})  peak fds {fds:4d}  (load {os.getloadavg()[0]:.1f})", flush=True)


def exports(src: Path, n: int, out: Path, formats: list[str], label: str) -> None:
    for fmt in formats:
        dest = out / f"{label}-{fmt}"
        res = run([*KAFKALOG, "export", str(src), "--format", fmt, "--out", str(dest)])
        line(f"export {fmt}", n, res)
        shutil.rmtree(dest, ignore_errors=True)
        if dest.is_file():
            dest.unlink()


def replay(inputs: list[str], n: int, bootstrap: str, topic: str, state: Path, partitioner: str) -> None:
    from confluent_kafka.admin import AdminClient

    AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=30)  # auto-created, 4 partitions
    res = run([*KAFKALOG, "replay", *inputs, "--bootstrap-server", bootstrap, "--topic", topic, "--execute",
               "--partitioner", partitioner, "--state-dir", str(state)])
    line(f"replay --execute ({partitioner})", n, res)
    with open(state / "offset-map.csv", "rb") as f:
        rows = sum(1 for _ in f) - 1
    if rows != n:
        sys.exit(f"replay: {rows} offset map rows, expected {n}")
    shutil.rmtree(state)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gib", default="1", help="big-segment size(s) in GiB, comma-separated")
    ap.add_argument("--partitions", default="20000", help="partition count(s), comma-separated")
    ap.add_argument("--records-per-partition", type=int, default=20)
    ap.add_argument("--formats", default="ndjson,parquet,kafka")
    ap.add_argument("--only", choices=["big", "many"], default=None)
    ap.add_argument("--no-replay", action="store_true")
    ap.add_argument("--dir", default="/tmp/export-scale")
    a = ap.parse_args()
    formats = [f for f in a.formats.split(",") if f]  # --formats "": the replay alone
    base = Path(a.dir)
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    print(f"load average {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]}; nice {os.nice(0)}", flush=True)
    bootstrap = ""
    owner = None
    if not a.no_replay:
        from confluent_kafka.admin import AdminClient

        owner = AdminClient({"test.mock.num.brokers": 3, "log_level": 0})
        md = owner.list_topics(timeout=30)
        bootstrap = ",".join(f"{b.host}:{b.port}" for b in md.brokers.values())
    try:
        if a.only in (None, "big"):
            for gib in [float(x) for x in a.gib.split(",")]:
                src = base / "big" / "big-0"
                t0 = time.perf_counter()
                n = big_partition(src, gib, base)
                print(f"one partition, one segment of {gib:g} GiB ({os.path.getsize(src / ('0' * 20 + '.log')):,} "
                      f"bytes), {n:,} records (generated in {time.perf_counter() - t0:.0f} s):", flush=True)
                exports(src, n, base, formats, "big")
                if not a.no_replay:
                    replay([str(src)], n, bootstrap, f"big-{gib:g}", base / "state-big", "same")
                shutil.rmtree(base / "big")
        if a.only in (None, "many"):
            for count in [int(x) for x in a.partitions.split(",")]:
                logs = base / "many"
                t0 = time.perf_counter()
                n = many_partitions(logs, count, a.records_per_partition)
                print(f"a log dir of {count:,} one-segment partitions, {n:,} records (generated in "
                      f"{time.perf_counter() - t0:.0f} s):", flush=True)
                exports(logs, n, base, formats, "many")
                if not a.no_replay:
                    replay([str(logs)], n, bootstrap, f"many-{count}", base / "state-many", "murmur2")
                shutil.rmtree(logs)
    finally:
        shutil.rmtree(base, ignore_errors=True)
        del owner


if __name__ == "__main__":
    main()
