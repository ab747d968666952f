"""``group-history`` over a large ``__consumer_offsets`` partition against ``dump --offsets-decoder`` on it (issue
34 item 3: < 2x the dump's time, memory flat apart from the per-group state).

The partition is generated under /tmp and deleted: GROUPS groups x PARTS topic-partitions each committing in turn
(OffsetCommitValue v3, five commits per batch as a coordinator writes one batch per OffsetCommit request, a
generation record now and then, a reset every 50,000 commits). Each command runs once, in a fresh process, with
its output to /dev/null; the script prints wall and CPU times, the CPU ratio (on a machine shared with other work
the wall time measures the neighbours) and each process's peak RSS (``wait4``) and peak anonymous RSS (sampled).

    python bench/group_history_bench.py [--mib 1024] [--small 64] [--keep DIR] [--only group,all,dump]
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from kafkalog_cli.format.encoder import RecordSpec, encode_batch  # noqa: E402
from kafkalog_cli.internal_topics import schema as sc  # noqa: E402
from kafkalog_cli.internal_topics import schemas_group as sg  # noqa: E402
from kafkalog_cli.internal_topics.locate import partition_for  # noqa: E402

GROUPS = 40
PARTS = 24
PER_BATCH = 5
T0 = 1_700_000_000_000
GROUP = "bench-group-7"


def _key(group: str, topic: str, part: int) -> bytes:
    return struct.pack(">h", 1) + sc.encode(sg.OffsetCommitKey, {"group": group, "topic": topic, "partition": part}, 1)


def generate(directory: str, mib: int) -> tuple[str, int, int]:
    """Write __consumer_offsets-<GROUP's partition>/00000000000000000000.log of about ``mib`` MiB; returns (partition
    dir, bytes, records)."""
    pdir = os.path.join(directory, f"__consumer_offsets-{partition_for(GROUP)}")
    os.makedirs(pdir, exist_ok=True)
    keys = [_key(f"bench-group-{g}", f"topic-{p % 6}", p) for g in range(GROUPS) for p in range(PARTS)]
    template = struct.pack(">h", 3) + sc.encode(sg.OffsetCommitValue, {"offset": 0, "leaderEpoch": 3,
                                                                     "metadata": "", "commitTimestamp": 0}, 3)
    ts_at = len(template) - 8
    gen_key = struct.pack(">h", 2) + sc.encode(sg.GroupMetadataKey, {"group": GROUP}, 2)
    target = mib << 20
    size = records = 0
    offset = 0
    position = [0] * len(keys)
    k = 0
    with open(os.path.join(pdir, "00000000000000000000.log"), "wb") as f:
        while size < target:
            specs = []
            now = T0 + offset * 10
            for _ in range(PER_BATCH):
                i = k % len(keys)
                k += 1
                position[i] += 7
                if k % 50_000 == 0:
                    position[i] = max(0, position[i] - 1000)  # a reset
                v = bytearray(template)
                struct.pack_into(">q", v, 2, position[i])
                struct.pack_into(">q", v, ts_at, now)
                specs.append(RecordSpec(key=keys[i], value=bytes(v)))
            if offset % 100_000 == 0:
                gval = struct.pack(">h", 3) + sc.encode(sg.GroupMetadataValue, {
                    "protocolType": "consumer", "generation": offset // 100_000, "protocol": "range",
                    "leader": "m-1", "currentStateTimestamp": now, "members": []}, 3)
                specs.append(RecordSpec(key=gen_key, value=gval))
            b = encode_batch(specs, base_offset=offset, base_timestamp=now)
            f.write(b)
            size += len(b)
            offset += len(specs)
            records += len(specs)
    return pdir, size, records


def _anon_kib(pid: int) -> int:
    """The process's anonymous resident memory now (RssAnon): the mapped segment's page cache is not in it."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run(argv: list[str]) -> tuple[float, float, float, float]:
    """Wall seconds, CPU seconds (user + system: the figure that stays put on a shared machine), peak RSS (MiB, the
    mapped file's pages included) and peak anonymous RSS (MiB, sampled every 0.2 s) of one command, stdout to
    /dev/null."""
    t = time.perf_counter()
    anon = 0
    with open(os.devnull, "wb") as null, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(argv, stdout=null, stderr=err)
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            anon = max(anon, _anon_kib(p.pid))
            time.sleep(0.2)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t
        err.seek(0)
        text = err.read().decode(errors="replace")
    if p.returncode not in (0, 1):
        raise SystemExit(f"{argv[:3]}: exit {p.returncode}: {text[-400:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, anon / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--small", type=int, default=64, help="a small partition first, for the memory comparison")
    ap.add_argument("--keep", default=None, help="generate into this directory and keep it")
    ap.add_argument("--only", default="group,all,dump", help="which runs: group, all, dump (comma-separated)")
    a = ap.parse_args()
    kafkalog = [sys.executable, "-m", "kafkalog_cli"]
    for mib in ([a.small] if a.small else []) + [a.mib]:
        base = a.keep or tempfile.mkdtemp(prefix="kafkalog-ghb-")
        try:
            t = time.perf_counter()
            pdir, size, records = generate(os.path.join(base, f"{mib}"), mib)
            print(f"{mib} MiB: {size / 2**20:.0f} MiB, {records} records, generated in {time.perf_counter() - t:.1f} s",
                  flush=True)
            log = os.path.join(pdir, "00000000000000000000.log")
            cpu_of: dict[str, float] = {}
            for key, label, argv in (("group", "group-history GROUP", ["group-history", GROUP, pdir]),
                                     ("all", "group-history --all-groups", ["group-history", "--all-groups", pdir]),
                                     ("dump", "dump --offsets-decoder", ["dump", "--offsets-decoder", log])):
                if key not in a.only.split(","):
                    continue
                wall, cpu, rss, anon = run(kafkalog + argv)
                cpu_of[key] = cpu
                print(f"  {label:28s} wall {wall:8.2f} s  CPU {cpu:8.2f} s  peak RSS {rss:5.0f} MiB (anonymous "
                      f"{anon:4.0f} MiB)", flush=True)
            if "dump" in cpu_of:
                print("  CPU ratio to the dump: " + ", ".join(f"{k} {v / cpu_of['dump']:.2f}" for k, v in cpu_of.items()
                                                              if k != "dump"), flush=True)
            print(f"  load average {os.getloadavg()[0]:.1f}")
        finally:
            if not a.keep:
                shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
