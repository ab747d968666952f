"""The end-of-scan report as data, aggregated from the written datasets (so it is the same for both engines).

Why streaming group-bys: the report must cost memory in the number of partitions, never in the number of batches.
So the Parquet files are read one record batch of the needed columns at a time, each batch is aggregated with
``pyarrow`` group-bys (per partition: counts, sums, min/max, the distinct producers and leader epochs), and the
partial results are merged into one small entry per partition. Partitions whose segments hold no batch at all come
from the list of scanned segments, so an empty partition is listed too (with zeros), not just counted.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafkalog_cli.scan.paths import locate
from kafkalog_cli.scan.schema import DATASETS

KEY = ["log_dir", "partition_dir"]
PROBLEMS_SHOWN = 20
BATCH_ROWS = 1 << 17
_PROBLEM_ORDER = ("log_dir", "partition_dir", "segment", "position", "kind")


def iter_dataset(out_dir: str, name: str, columns: list[str]) -> Iterator[pa.Table]:
    """A dataset's ``columns`` as tables of at most BATCH_ROWS rows, cast to our schema (Spark's files differ only in
    nullability and list metadata), timestamps as int64 milliseconds."""
    path = os.path.join(out_dir, name)
    schema = pa.schema([DATASETS[name].field(c) for c in columns])
    if not os.path.isdir(path):
        return
    for f in sorted(os.listdir(path)):
        if not f.endswith(".parquet") or f.startswith(("_", ".")):
            continue
        pf = pq.ParquetFile(os.path.join(path, f))
        for rb in pf.iter_batches(batch_size=BATCH_ROWS, columns=columns):
            t = pa.Table.from_batches([rb]).select(columns).cast(schema)
            for i, field in enumerate(t.schema):
                if pa.types.is_timestamp(field.type):
                    t = t.set_column(i, field.name, t.column(i).cast(pa.int64()))
            yield t


def _groups(t: pa.Table, aggs: list[tuple[str, str]], extra: list[str] | None = None) -> list[dict[str, Any]]:
    if t.num_rows == 0:
        return []
    return t.group_by(KEY + (extra or []), use_threads=False).aggregate(aggs).to_pylist()


def _entry(parts: dict[tuple[str, str], dict[str, Any]], log_dir: str, partition_dir: str) -> dict[str, Any]:
    key = (log_dir, partition_dir)
    e = parts.get(key)
    if e is None:
        e = parts[key] = {"log_dir": log_dir, "partition_dir": partition_dir, "topic": None, "partition": None,
                          "segments": 0, "batches": 0, "records": 0, "bytes": 0, "first_offset": None,
                          "last_offset": None, "first_timestamp": None, "last_timestamp": None, "bytes_by_codec": {},
                          "producers": set(), "leader_epochs": set(), "problems": 0, "problems_by_kind": {},
                          "_segments": set()}
    return e


def _lo(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _hi(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def summarize(out_dir: str, segments: list[str] | None = None) -> dict[str, Any]:
    """{"partitions": [...], "problems": {...}, "totals": {...}} for ``out_dir``. ``segments``: the scanned segment
    paths (their partitions are listed even without rows; segment counts come from them)."""
    parts: dict[tuple[str, str], dict[str, Any]] = {}
    listed: dict[tuple[str, str], int] = {}
    for p in segments or []:
        loc = locate(p)
        e = _entry(parts, loc.log_dir, loc.partition_dir)
        e["topic"], e["partition"] = loc.topic, loc.partition
        listed[(loc.log_dir, loc.partition_dir)] = listed.get((loc.log_dir, loc.partition_dir), 0) + 1
    total_batches = 0
    cols = ["log_dir", "topic", "partition", "partition_dir", "segment", "size", "base_offset", "last_offset", "count",
            "codec", "first_timestamp", "max_timestamp", "producer_id", "partition_leader_epoch", "crc_ok"]
    for b in iter_dataset(out_dir, "batches", cols):
        total_batches += b.num_rows
        _batches_chunk(parts, b)
    by_kind: dict[str, int] = {}
    severities: dict[str, int] = {}
    shown: list[tuple[tuple, int, dict[str, Any]]] = []
    total_problems = unreadable = 0
    seq = 0
    for pr in iter_dataset(out_dir, "problems", DATASETS["problems"].names):
        total_problems += pr.num_rows
        unreadable += int(pc.sum(pc.equal(pr.column("kind"), "unreadable")).as_py() or 0)
        for r in pc.value_counts(pr.column("severity")).to_pylist():
            severities[r["values"]] = severities.get(r["values"], 0) + r["counts"]
        for r in _groups(pr, [("position", "count")], ["kind"]):
            e = _entry(parts, r["log_dir"], r["partition_dir"])
            e["problems_by_kind"][r["kind"]] = e["problems_by_kind"].get(r["kind"], 0) + r["position_count"]
            e["problems"] += r["position_count"]
            by_kind[r["kind"]] = by_kind.get(r["kind"], 0) + r["position_count"]
        for r in _groups(pr, [("topic", "min"), ("partition", "min")]):
            e = _entry(parts, r["log_dir"], r["partition_dir"])
            e["topic"] = e["topic"] or r["topic_min"]
            e["partition"] = e["partition"] if e["partition"] is not None else r["partition_min"]
        top = pr.sort_by([(c, "ascending") for c in _PROBLEM_ORDER]).slice(0, PROBLEMS_SHOWN).to_pylist()
        for r in top:
            seq += 1
            shown.append((tuple(r[c] for c in _PROBLEM_ORDER), seq, r))
        shown = heapq.nsmallest(PROBLEMS_SHOWN, shown, key=lambda x: (x[0], x[1]))
    for key, e in parts.items():
        e["segments"] = listed[key] if key in listed else len(e["_segments"])
        del e["_segments"]
        e["producers"] = len(e["producers"])
        e["leader_epochs"] = sorted(e["leader_epochs"])
        e["bytes_by_codec"] = dict(sorted(e["bytes_by_codec"].items()))
        e["problems_by_kind"] = dict(sorted(e["problems_by_kind"].items()))
    partitions = sorted(parts.values(), key=lambda e: (e["log_dir"], e["topic"] or "",
                                                       -1 if e["partition"] is None else e["partition"],
                                                       e["partition_dir"]))
    first = [{k: v for k, v in r.items() if k != "log_dir"} for _k, _s, r in shown]
    return {
        "partitions": partitions,
        "problems": {
            "total": total_problems,
            "by_kind": dict(sorted(by_kind.items())),
            "by_severity": dict(sorted(severities.items())),
            "first": first,
        },
        "totals": {
            "partitions": len(partitions),
            "segments": sum(e["segments"] for e in partitions),
            "batches": total_batches,
            "records": sum(e["records"] for e in partitions),
            "bytes": sum(e["bytes"] for e in partitions),
            "unreadable": unreadable,
        },
    }


def _batches_chunk(parts: dict[tuple[str, str], dict[str, Any]], b: pa.Table) -> None:
    """Merge one chunk of batch rows into the per-partition entries."""
    for r in _groups(b, [("topic", "min"), ("partition", "min"), ("size", "sum"), ("count", "sum"),
                         ("base_offset", "count")]):
        e = _entry(parts, r["log_dir"], r["partition_dir"])
        e["topic"] = e["topic"] or r["topic_min"]
        e["partition"] = e["partition"] if e["partition"] is not None else r["partition_min"]
        e["bytes"] += r["size_sum"]
        e["records"] += r["count_sum"]
        e["batches"] += r["base_offset_count"]
    for r in _groups(b, [("size", "count")], ["segment"]):
        _entry(parts, r["log_dir"], r["partition_dir"])["_segments"].add(r["segment"])
    for r in _groups(b, [("size", "sum")], ["codec"]):
        codecs = _entry(parts, r["log_dir"], r["partition_dir"])["bytes_by_codec"]
        codecs[r["codec"]] = codecs.get(r["codec"], 0) + r["size_sum"]
    good = b.filter(pc.field("crc_ok"))
    for r in _groups(good, [("base_offset", "min"), ("last_offset", "max")]):
        e = _entry(parts, r["log_dir"], r["partition_dir"])
        e["first_offset"] = _lo(e["first_offset"], r["base_offset_min"])
        e["last_offset"] = _hi(e["last_offset"], r["last_offset_max"])
    ts = good.filter(pc.field("max_timestamp") >= 0)
    for r in _groups(ts.filter(pc.field("first_timestamp") >= 0), [("first_timestamp", "min")]):
        e = _entry(parts, r["log_dir"], r["partition_dir"])
        e["first_timestamp"] = _lo(e["first_timestamp"], r["first_timestamp_min"])
    for r in _groups(ts, [("max_timestamp", "max")]):
        e = _entry(parts, r["log_dir"], r["partition_dir"])
        e["last_timestamp"] = _hi(e["last_timestamp"], r["max_timestamp_max"])
    for r in _groups(good.filter(pc.field("producer_id") >= 0), [("producer_id", "distinct")]):
        _entry(parts, r["log_dir"], r["partition_dir"])["producers"].update(r["producer_id_distinct"])
    for r in _groups(good.filter(pc.field("partition_leader_epoch") >= 0), [("partition_leader_epoch", "distinct")]):
        _entry(parts, r["log_dir"], r["partition_dir"])["leader_epochs"].update(r["partition_leader_epoch_distinct"])
