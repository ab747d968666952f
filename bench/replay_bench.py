#!/usr/bin/env python3
"""Issue 31's replay throughput ("bounded by the client, report it"; issue 31.2: within 0.7x of the bare client):
records/s of ``kafkalog replay --execute`` into librdkafka's mock cluster, against the client alone (the same
records produced by a bare confluent-kafka loop with the same producer settings: key, value and timestamp, the
issue's figure; and again with the offset header replay adds), and the plan pass alone (the inputs read once).

Input (generated under /tmp, deleted after): one partition directory, batches of ``--batch`` records of
``--value`` bytes. The mock cluster (``test.mock.num.brokers``) runs in this process's client threads, so the
figures include the broker's side on the same 2 cores: a real cluster over a network is slower per request but
does not share the CPU.

Usage: python bench/replay_bench.py [--records 200000] [--batch 100] [--value 100] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from kafkalog_cli.format.encoder import RecordSpec, encode_batch  # noqa: E402


def build(root: str, n: int, batch: int, size: int) -> str:
    pdir = os.path.join(root, "orders-0")
    os.makedirs(pdir)
    value = b"v" * size
    with open(os.path.join(pdir, "00000000000000000000.log"), "wb") as f:
        for b in range(0, n, batch):
            recs = [RecordSpec(key=b"key-%d" % j, value=value, timestamp=1_700_000_000_000 + j)
                    for j in range(b, min(n, b + batch))]
            f.write(encode_batch(recs, base_offset=b, base_timestamp=1_700_000_000_000))
    return pdir


def bare(bootstrap: str, opts: object, topic: str, recs: list, headers: bool) -> tuple[float, float]:
    """Seconds (wall, CPU of the process: the mock brokers' threads included) for a bare confluent-kafka loop to produce ``recs`` with replay's producer settings and a delivery
    callback each (plus their headers with ``headers``), until every report arrived."""
    from confluent_kafka import Producer

    from kafkalog_cli.ops import replay as rp

    conf = dict(rp.client_config(opts))  # type: ignore[arg-type]
    conf["bootstrap.servers"] = bootstrap
    p = Producer({**conf, "log_level": 0})
    acked = [0]

    def cb(err, msg, acked=acked) -> None:  # noqa: ANN001
        acked[0] += 1

    t0, c0 = time.perf_counter(), time.process_time()
    for k, v, ts, hs in recs:
        while True:
            try:
                if headers:
                    p.produce(topic, value=v, key=k, partition=0, timestamp=ts, headers=hs, on_delivery=cb)
                else:
                    p.produce(topic, value=v, key=k, partition=0, timestamp=ts, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.05)
    p.flush(120)
    assert acked[0] == len(recs)
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--value", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    from confluent_kafka.admin import AdminClient

    from kafkalog_cli.ops import replay as rp

    owner = AdminClient({"test.mock.num.brokers": 3, "log_level": 0})
    md = owner.list_topics(timeout=30)
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in md.brokers.values())
    tmp = tempfile.mkdtemp(prefix="replay-bench-")
    try:
        pdir = build(tmp, a.records, a.batch, a.value)
        for i in range(a.repeat):
            topic = f"bench-{i}"
            AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=30)  # auto-created
            opts = rp.ReplayOptions(bootstrap=bootstrap, topic=topic, state_dir=os.path.join(tmp, f"state-{i}"))
            sources, _ = rp.open_sources([pdir])
            t0 = time.perf_counter()
            plan = rp.plan(sources, opts, 4)
            t_plan = time.perf_counter() - t0
            t0, c0 = time.perf_counter(), time.process_time()
            res = rp.execute(plan)
            t_exec, c_exec = time.perf_counter() - t0, time.process_time() - c0
            assert res.produced == a.records and res.error is None, res.error
            # the client alone: the same records, settings and delivery callbacks, from memory; once as the issue's
            # figure (key, value, timestamp), once with the offset header replay adds (what replay sends)
            recs = [(r.key, r.value, r.timestamp, [*r.headers, (rp.DEFAULT_OFFSET_HEADER,
                                                               rp.offset_header_value(r.topic, r.partition, r.offset))])
                    for r, _dp in rp.stream(sources, opts, 4)]
            t_raw, c_raw = bare(bootstrap, opts, f"{topic}-raw", recs, False)
            t_hdr, c_hdr = bare(bootstrap, opts, f"{topic}-rawh", recs, True)
            print(f"run {i + 1}: {a.records} records of {a.value} B: plan {t_plan:.2f} s "
                  f"({a.records / t_plan:,.0f}/s), replay --execute {t_exec:.2f} s ({a.records / t_exec:,.0f}/s), "
                  f"client alone {t_raw:.2f} s ({a.records / t_raw:,.0f}/s): replay/client "
                  f"{t_raw / t_exec:.2f}; client with the offset header {t_hdr:.2f} s ({a.records / t_hdr:,.0f}/s): "
                  f"replay/client {t_hdr / t_exec:.2f}; CPU s (all threads, the mock brokers' too): replay "
                  f"{c_exec:.2f}, client {c_raw:.2f} ({c_raw / c_exec:.2f}), with the header {c_hdr:.2f} "
                  f"({c_hdr / c_exec:.2f}); load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
