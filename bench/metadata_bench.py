"""``kafkalog metadata`` replay speed and memory: a metadata log of N records over P partitions (TopicRecord +
PartitionRecord per partition, then PartitionChangeRecords: leader elections and ISR changes), generated under /tmp
and deleted. Each size is replayed in a fresh process (the engine's ``ops.metadata.load``, no snapshot), which
prints its wall time and peak RSS: memory must be flat in N (the image holds P partitions; the records stream).

    python bench/metadata_bench.py [--records 1000000] [--partitions 100000] [--small 200000] [--repeat 2] [--compare]

The replay takes the compiled path (``_accel.metadata_apply``) where the accelerator is built; ``--compare`` also
replays each size once with ``KAFKALOG_NO_ACCEL=1`` (the pure-Python reference), the baseline of the same run.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from kafkalog_cli.format.encoder import RecordSpec, encode_batch  # noqa: E402
from kafkalog_cli.internal_topics import schemas_metadata as sm  # noqa: E402
from kafkalog_cli.internal_topics.cluster_metadata import encode_frame  # noqa: E402

PER_TOPIC = 10


def _uuid(i: int) -> str:
    import base64

    return base64.urlsafe_b64encode(b"\x00\x00\x00\x01" + i.to_bytes(12, "big")).decode().rstrip("=")


def generate(directory: str, records: int, partitions: int, per_batch: int = 100) -> int:
    """Write the log; returns its size in bytes."""
    rng = random.Random(1)
    os.makedirs(directory, exist_ok=True)
    topics = partitions // PER_TOPIC
    brokers = [1, 2, 3, 4, 5, 6]
    values: list[bytes] = [encode_frame(sm.FeatureLevelRecord, {"name": "metadata.version", "featureLevel": 19}, 0)]
    for b in brokers:
        values.append(encode_frame(sm.RegisterBrokerRecord, {
            "brokerId": b, "isMigratingZkBroker": False, "incarnationId": _uuid(10**9 + b), "brokerEpoch": b,
            "endPoints": [{"name": "PLAINTEXT", "host": f"b{b}", "port": 9092, "securityProtocol": 0}],
            "features": [], "rack": None, "fenced": False, "inControlledShutdown": False, "logDirs": []}, 3))
    replicas: dict[tuple[int, int], list[int]] = {}
    for t in range(topics):
        tid = _uuid(t)
        values.append(encode_frame(sm.TopicRecord, {"name": f"topic-{t}", "topicId": tid}, 0))
        for p in range(PER_TOPIC):
            r = rng.sample(brokers, 3)
            replicas[(t, p)] = r
            values.append(encode_frame(sm.PartitionRecord, {
                "partitionId": p, "topicId": tid, "replicas": r, "isr": r, "removingReplicas": [],
                "addingReplicas": [], "leader": r[0], "leaderRecoveryState": 0, "leaderEpoch": 0, "partitionEpoch": 0,
                "directories": [], "eligibleLeaderReplicas": None, "lastKnownElr": None}, 2))
    cache: dict[tuple, bytes] = {}
    while len(values) < records:
        t, p = rng.randrange(topics), rng.randrange(PER_TOPIC)
        r = replicas[(t, p)]
        if rng.random() < 0.5:
            key = (t, p, "leader", rng.choice(r))
            change = {"partitionId": p, "topicId": _uuid(t), "leader": key[3]}
        else:
            isr = tuple(sorted(rng.sample(r, rng.randint(1, 3))))
            key = (t, p, "isr", isr)
            change = {"partitionId": p, "topicId": _uuid(t), "isr": list(isr)}
        v = cache.get(key)
        if v is None:
            v = encode_frame(sm.PartitionChangeRecord, change, 1)
            if len(cache) < 200_000:
                cache[key] = v
        values.append(v)
    size = 0
    with open(os.path.join(directory, "00000000000000000000.log"), "wb") as f:
        ts = 1_700_000_000_000
        for i in range(0, len(values), per_batch):
            chunk = values[i:i + per_batch]
            data = encode_batch([RecordSpec(None, v, timestamp=ts + i) for v in chunk], base_offset=i,
                                base_timestamp=ts + i, partition_leader_epoch=1)
            f.write(data)
            size += len(data)
    return size


def _peak_rss_mib() -> int:
    """This process's peak RSS: VmHWM of /proc/self/status (the high-water mark of this program's memory). Not
    ru_maxrss: Linux carries a forked parent's peak across exec into the child's ru_maxrss (the bench parent holds
    the generated records, ~150 MiB at 1 M), which is what the bench reported before."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def child(directory: str) -> None:
    from kafkalog_cli.ops import metadata as md

    base = _peak_rss_mib()  # the interpreter and the imports, before the replay
    t0, c0 = time.perf_counter(), time.process_time()
    loaded = md.load(directory)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    parts = sum(len(t.partitions) for t in loaded.image.topics.values())
    print(f"{dt:.3f} {_peak_rss_mib()} {loaded.records} {parts} {len(loaded.problems)} {cpu:.3f} {base}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--small", type=int, default=200_000, help="a second, shorter log over the same partitions")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--compare", action="store_true", help="also replay each size once with KAFKALOG_NO_ACCEL=1")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child)
        return
    root = tempfile.mkdtemp(prefix="metadata-bench-")
    try:
        for n in sorted({a.small, a.records}):
            d = os.path.join(root, f"n{n}", "__cluster_metadata-0")
            t0 = time.perf_counter()
            size = generate(d, n, a.partitions)
            print(f"generated {n} records over {a.partitions} partitions: {size / 2**20:.1f} MiB in "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
            runs = [("compiled", {}) for _ in range(a.repeat)]
            if a.compare:
                runs.append(("python (KAFKALOG_NO_ACCEL=1)", {"KAFKALOG_NO_ACCEL": "1"}))
            for label, env in runs:
                out = subprocess.run([sys.executable, __file__, "--child", d], capture_output=True, text=True,
                                     check=True, env={**os.environ, **env}).stdout.split()
                dt, rss, recs, parts, probs, cpu, base = out
                print(f"  {label}: replay {recs} records, {parts} partitions in the image: {float(dt):.2f} s wall, "
                      f"{float(cpu):.2f} s CPU ({int(recs) / float(dt) / 1e6:.2f} M records/s wall), peak RSS {rss} "
                      f"MiB ({base} MiB before the replay), problems {probs}, load average {os.getloadavg()[0]:.1f}",
                      flush=True)
            shutil.rmtree(os.path.dirname(d))
        print(f"load average {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
