#!/usr/bin/env python3
"""Issue 30's speed target: records/s of ``kafkalog dump --value-decoder schema-registry`` against a plain fastavro
decode loop over the same values, in one run (target >= 0.8), and the dump's peak RSS at two sizes 10x apart (flat:
each schema parsed once per id, the output streamed).

Input (generated under /tmp, deleted after): a log dir with ``_schemas-0`` (one Avro schema, the corpus' ``orders``
shape), ``orders-0`` (``--records`` records) and ``orders-1`` (a tenth of them), batches of ``--batch`` records,
Confluent-framed Avro values.

Rates: ``steady`` is the dump's records/s over the records the large dump has beyond the small one
((N - N/10) / (t(N) - t(N/10))): the per-record cost, without the start-up both dumps pay once (interpreter,
imports, the registry replay, the schema compile; ~0.3 s, more where PYTHONDONTWRITEBYTECODE makes every start
compile the sources); ``end-to-end`` divides N by the large dump's whole wall time. Wall time and CPU time (the
child's user+sys, the loop's process time) are both given: on a shared machine CPU time is the steadier of the two.

Usage: python bench/schemas_bench.py [--records 200000] [--batch 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import fastavro  # noqa: E402

from kafkalog_cli.format.encoder import RecordSpec, encode_batch  # noqa: E402

SCHEMA = {"type": "record", "name": "shoe_orders", "namespace": "shoes", "fields": [
    {"name": "order_id", "type": "int"}, {"name": "product_id", "type": "string"},
    {"name": "customer_id", "type": "string"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}


def build(root: str, n: int, batch: int, partition: int = 0) -> tuple[str, list[bytes]]:
    parsed = fastavro.parse_schema(SCHEMA)
    sdir = os.path.join(root, "_schemas-0")
    os.makedirs(sdir, exist_ok=True)
    key = json.dumps({"keytype": "SCHEMA", "subject": "orders-value", "version": 1, "magic": 1}).encode()
    val = json.dumps({"subject": "orders-value", "version": 1, "id": 2, "schema": json.dumps(SCHEMA),
                      "deleted": False}).encode()
    with open(os.path.join(sdir, "00000000000000000000.log"), "wb") as f:
        f.write(encode_batch([RecordSpec(key=key, value=val)], base_offset=0))
    values = []
    for i in range(n):
        bio = io.BytesIO()
        fastavro.schemaless_writer(bio, parsed, {"order_id": i, "product_id": f"7406e1f6-6ec0-4f8e-bcd9-{i:012d}",
                                                 "customer_id": f"b62a86cb-ba69-467f-99f3-{i:012d}",
                                                 "ts": 1_700_000_000_000 + i})
        values.append(b"\x00\x00\x00\x00\x02" + bio.getvalue())
    ddir = os.path.join(root, f"orders-{partition}")
    os.makedirs(ddir)
    path = os.path.join(ddir, "00000000000000000000.log")
    with open(path, "wb") as f:
        for b in range(0, n, batch):
            recs = [RecordSpec(key=str(1000 + j).encode(), value=values[j]) for j in range(b, min(n, b + batch))]
            f.write(encode_batch(recs, base_offset=b, base_timestamp=1_700_000_000_000))
    return path, values


def fastavro_loop(values: list[bytes]) -> tuple[float, float]:
    """Wall and CPU seconds of fastavro's schemaless_reader over the values (the prefix cut off, as a consumer
    that knows the schema would)."""
    parsed = fastavro.parse_schema(SCHEMA)
    reader, bio = fastavro.schemaless_reader, io.BytesIO
    t, c = time.perf_counter(), time.process_time()
    for v in values:
        reader(bio(v[5:]), parsed, None)
    return time.perf_counter() - t, time.process_time() - c


def dump(path: str, *extra: str) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + sys) and peak RSS (KiB) of one dump with stdout to /dev/null."""
    t = time.perf_counter()
    with open(os.devnull, "wb") as null:
        proc = subprocess.Popen([sys.executable, "-m", "kafkalog_cli", "dump", *extra, path], stdout=null, cwd=ROOT)
        _pid, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"dump exited {proc.returncode}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="kafkalog-schemas-bench-")
    dec = ("--value-decoder", "schema-registry")
    try:
        path, values = build(root, a.records, a.batch)
        small, _ = build(root, a.records // 10, a.batch, partition=1)
        n, m = len(values), a.records // 10
        rows = []
        for _ in range(a.repeat):
            base_w, base_c = fastavro_loop(values)
            big_w, big_c, big_rss = dump(path, *dec)
            small_w, small_c, small_rss = dump(small, *dec)
            rows.append((base_w, base_c, big_w, big_c, small_w, small_c, big_rss, small_rss))
        best = [0.0, 0.0, 0.0]  # each ratio's best run
        for base_w, base_c, big_w, big_c, small_w, small_c, big_rss, small_rss in rows:
            steady_w, steady_c = (n - m) / max(big_w - small_w, 1e-9), (n - m) / max(big_c - small_c, 1e-9)
            loop_w, loop_c = n / base_w, n / base_c
            e2e = n / big_w
            best = [max(b, r) for b, r in zip(best, (steady_c / loop_c, steady_w / loop_w, e2e / loop_w))]
            print(f"fastavro loop {loop_w / 1e3:6.1f} k rec/s wall {loop_c / 1e3:6.1f} k rec/s cpu | dump "
                  f"--value-decoder schema-registry steady {steady_w / 1e3:6.1f} k rec/s wall (ratio "
                  f"{steady_w / loop_w:.2f}) {steady_c / 1e3:6.1f} k rec/s cpu (ratio {steady_c / loop_c:.2f}), "
                  f"end-to-end {e2e / 1e3:6.1f} k rec/s (ratio {e2e / loop_w:.2f}) | peak RSS {small_rss / 1024:.0f} "
                  f"MiB at {m} records, {big_rss / 1024:.0f} MiB at {n}")
        print(f"best ratio over {a.repeat} run(s), {n} records: steady cpu {best[0]:.2f}, steady wall {best[1]:.2f}, "
              f"end-to-end wall {best[2]:.2f}; load {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
