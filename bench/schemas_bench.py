#!/usr/bin/env python3
"""Issue 30's speed target: records/s of ``kafkalog dump --value-decoder schema-registry`` against a plain fastavro
decode loop over the same values, in one run (target >= 0.8), and the dump's peak RSS for two sizes (flat: each
schema parsed once per id).

Input (generated under /tmp, deleted after): a log dir with ``_schemas-0`` (one Avro schema, the corpus' ``orders``
shape) and ``orders-0``, batches of ``--batch`` records, Confluent-framed Avro values.

Usage: python bench/schemas_bench.py [--records 200000] [--batch 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
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


def build(root: str, n: int, batch: int) -> tuple[str, list[bytes]]:
    parsed = fastavro.parse_schema(SCHEMA)
    sdir = os.path.join(root, "_schemas-0")
    os.makedirs(sdir)
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
    ddir = os.path.join(root, "orders-0")
    os.makedirs(ddir)
    path = os.path.join(ddir, "00000000000000000000.log")
    with open(path, "wb") as f:
        for b in range(0, n, batch):
            recs = [RecordSpec(key=str(1000 + j).encode(), value=values[j]) for j in range(b, min(n, b + batch))]
            f.write(encode_batch(recs, base_offset=b, base_timestamp=1_700_000_000_000))
    return path, values


def fastavro_loop(values: list[bytes]) -> float:
    parsed = fastavro.parse_schema(SCHEMA)
    reader, bio = fastavro.schemaless_reader, io.BytesIO
    t = time.perf_counter()
    for v in values:
        reader(bio(v[5:]), parsed, None)
    return time.perf_counter() - t


def dump(path: str, *extra: str) -> tuple[float, int]:
    """Wall seconds and the child's peak RSS (KiB) of one dump with stdout to /dev/null."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    with open(os.devnull, "wb") as null:
        subprocess.run([sys.executable, "-m", "kafkalog_cli", "dump", *extra, path], stdout=null, check=True, cwd=ROOT)
    wall = time.perf_counter() - t
    return wall, max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="kafkalog-schemas-bench-")
    try:
        path, values = build(root, a.records, a.batch)
        n = len(values)
        rows = []
        for _ in range(a.repeat):
            base = fastavro_loop(values)
            dec, rss = dump(path, "--value-decoder", "schema-registry")
            plain, _ = dump(path, "--print-data-log")
            rows.append((base, dec, plain, rss))
        for base, dec, plain, rss in rows:
            print(f"fastavro loop {n / base / 1e3:8.1f} k records/s | dump --value-decoder schema-registry "
                  f"{n / dec / 1e3:8.1f} k records/s (ratio {base / dec:.2f}) | dump --print-data-log "
                  f"{n / plain / 1e3:8.1f} k records/s | decoder dump peak RSS {rss / 1024:.0f} MiB")
        best = max(r[0] / r[1] for r in rows)
        print(f"best ratio {best:.2f} over {a.repeat} run(s), {n} records; load {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
