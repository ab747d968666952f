"""The end-of-scan report as data, computed from the written datasets (so it is the same for both engines).

Why from the Parquet output and with pyarrow group-bys: it then depends only on what was written, whichever engine
wrote it, and it reads only the columns it needs, in columnar form, however many batches a fleet has.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafkalog_cli.scan.output import read_dataset

KEY = ["log_dir", "partition_dir"]
PROBLEMS_SHOWN = 20


def _by_key(table: pa.Table, aggs: list[tuple[str, str]], extra_key: list[str] | None = None) -> list[dict[str, Any]]:
    if table.num_rows == 0:
        return []
    return table.group_by(KEY + (extra_key or [])).aggregate(aggs).to_pylist()


def summarize(out_dir: str) -> dict[str, Any]:
    """{"partitions": [...], "problems": {...}, "totals": {...}} for ``out_dir``."""
    cols = ["log_dir", "topic", "partition", "partition_dir", "segment", "size", "base_offset", "last_offset", "count",
            "codec", "first_timestamp", "max_timestamp", "producer_id", "partition_leader_epoch", "crc_ok"]
    b = read_dataset(out_dir, "batches", cols)
    problems = read_dataset(out_dir, "problems")
    parts: dict[tuple[str, str], dict[str, Any]] = {}

    def entry(row: dict[str, Any]) -> dict[str, Any]:
        key = (row["log_dir"], row["partition_dir"])
        if key not in parts:
            parts[key] = {"log_dir": row["log_dir"], "partition_dir": row["partition_dir"], "topic": row.get("topic"),
                          "partition": row.get("partition"), "segments": 0, "batches": 0, "records": 0, "bytes": 0,
                          "first_offset": None, "last_offset": None, "first_timestamp": None, "last_timestamp": None,
                          "bytes_by_codec": {}, "producers": 0, "leader_epochs": [], "problems": 0,
                          "problems_by_kind": {}}
        return parts[key]

    for r in _by_key(b, [("topic", "min"), ("partition", "min"), ("segment", "count_distinct"), ("size", "sum"),
                         ("count", "sum"), ("base_offset", "count")]):
        e = entry(r)
        e.update(topic=r["topic_min"], partition=r["partition_min"], segments=r["segment_count_distinct"],
                 bytes=r["size_sum"], records=r["count_sum"], batches=r["base_offset_count"])
    good = b.filter(pc.field("crc_ok"))
    for r in _by_key(good, [("base_offset", "min"), ("last_offset", "max")]):
        entry(r).update(first_offset=r["base_offset_min"], last_offset=r["last_offset_max"])
    ts = good.filter(pc.field("max_timestamp") >= 0)
    for r in _by_key(ts.filter(pc.field("first_timestamp") >= 0), [("first_timestamp", "min")]):
        entry(r)["first_timestamp"] = r["first_timestamp_min"]
    for r in _by_key(ts, [("max_timestamp", "max")]):
        entry(r)["last_timestamp"] = r["max_timestamp_max"]
    for r in _by_key(b, [("size", "sum")], ["codec"]):
        entry(r)["bytes_by_codec"][r["codec"]] = r["size_sum"]
    for r in _by_key(good.filter(pc.field("producer_id") >= 0), [("producer_id", "count_distinct")]):
        entry(r)["producers"] = r["producer_id_count_distinct"]
    for r in _by_key(good.filter(pc.field("partition_leader_epoch") >= 0), [("partition_leader_epoch", "distinct")]):
        entry(r)["leader_epochs"] = sorted(r["partition_leader_epoch_distinct"])
    for r in _by_key(problems, [("position", "count")], ["kind"]):
        e = entry(r)
        e["problems_by_kind"][r["kind"]] = r["position_count"]
        e["problems"] += r["position_count"]
    for r in _by_key(problems, [("topic", "min"), ("partition", "min")]):
        e = entry(r)
        e["topic"] = e["topic"] or r["topic_min"]
        e["partition"] = e["partition"] if e["partition"] is not None else r["partition_min"]
    for e in parts.values():
        e["bytes_by_codec"] = dict(sorted(e["bytes_by_codec"].items()))
        e["problems_by_kind"] = dict(sorted(e["problems_by_kind"].items()))
    partitions = sorted(parts.values(), key=lambda e: (e["log_dir"], e["topic"] or "",
                                                       -1 if e["partition"] is None else e["partition"],
                                                       e["partition_dir"]))
    by_kind: dict[str, int] = {}
    for e in partitions:
        for k, v in e["problems_by_kind"].items():
            by_kind[k] = by_kind.get(k, 0) + v
    shown = problems.sort_by([("log_dir", "ascending"), ("partition_dir", "ascending"), ("segment", "ascending"),
                              ("position", "ascending"), ("kind", "ascending")]).slice(0, PROBLEMS_SHOWN)
    severities = pc.value_counts(problems["severity"]).to_pylist() if problems.num_rows else []
    return {
        "partitions": partitions,
        "problems": {
            "total": problems.num_rows,
            "by_kind": dict(sorted(by_kind.items())),
            "by_severity": {s["values"]: s["counts"] for s in sorted(severities, key=lambda s: s["values"])},
            "first": shown.drop_columns(["log_dir"]).to_pylist(),
        },
        "totals": {
            "partitions": len(partitions),
            "segments": sum(e["segments"] for e in partitions),
            "batches": b.num_rows,
            "records": sum(e["records"] for e in partitions),
            "bytes": sum(e["bytes"] for e in partitions),
            "unreadable": int(pc.sum(pc.equal(problems["kind"], "unreadable")).as_py() or 0) if problems.num_rows else 0,
        },
    }
