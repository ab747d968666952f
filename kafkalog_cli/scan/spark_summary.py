"""``kafkalog report DATASET... --engine spark``: the scan report aggregated by Spark SQL over the datasets.

Why: a fleet's shared dataset may be too big for one host to read, even streaming (``summary.summarize_many``
reads every batch row on the driver). Here the executors aggregate: one group-by per partition directory over the
batch rows, one per (partition, codec), one per (partition, problem kind), counts per severity, and the first 20
problems by a sort + limit. Only those aggregates (a row per partition, per codec, per kind; 20 problem rows) reach
the driver. They are merged into ``summary.Summary``, whose ``result`` builds the report, so the text and JSON are
the local engine's by construction (same keys, same order, same sorting).

The rules are the local engine's (``summary._batches_chunk``): a batch whose CRC fails counts in bytes, records and
batches but gives no offsets, timestamps, producers or epochs; timestamps count when >= 0, ``first_timestamp`` only
when ``max_timestamp`` does too; producer ids and leader epochs when >= 0. Problems per kind count the rows with a
position, as pyarrow's ``count`` does (every problem row has one: ``position`` is not nullable).

The datasets are read with our schema (``spark_engine.spark_schema``), so the ``key=value`` directories
(``broker_id=``, ``topic=``) give the partition columns with our types (a topic named ``0001`` stays a string), and a
dataset without any part file is an empty table, not an error.
"""

from __future__ import annotations

import heapq
import os
from typing import Any

from kafkalog_cli.scan.schema import DATASETS
from kafkalog_cli.scan.summary import _PROBLEM_ORDER, KEY, PROBLEMS_SHOWN, Summary, _entry, _merge


def _read(spark: Any, out_dirs: list[str], name: str) -> Any:
    """The union of dataset ``name`` of every directory, with our schema and timestamps as epoch milliseconds."""
    from pyspark.sql import functions as F

    from kafkalog_cli.scan.spark_engine import spark_schema

    schema = spark_schema(name)
    df: Any = None  # a pyspark DataFrame (pyspark ships no type stubs)
    for d in out_dirs:
        path = os.path.join(os.path.abspath(d), name)
        part = spark.read.schema(schema).parquet(path) if os.path.isdir(path) else spark.createDataFrame([], schema)
        df = part if df is None else df.unionByName(part)
    for f in DATASETS[name]:
        if str(f.type).startswith("timestamp"):
            df = df.withColumn(f.name, F.unix_millis(F.col(f.name)))
    return df


def summarize_spark(spark: Any, out_dirs: list[str]) -> dict[str, Any]:
    """``summary.summarize_many(out_dirs)``, computed by Spark: the same dict."""
    from pyspark.sql import functions as F

    acc = Summary(None)
    b = _read(spark, out_dirs, "batches")
    good = F.col("crc_ok")
    timed = good & (F.col("max_timestamp") >= 0)

    def when(cond: Any, name: str) -> Any:
        return F.when(cond, F.col(name))

    rows = b.groupBy(*KEY, "topic", "partition").agg(
        F.sum("size").alias("size"), F.sum("count").alias("count"), F.count(F.lit(1)).alias("batches"),
        F.min(when(good, "base_offset")).alias("first_offset"), F.max(when(good, "last_offset")).alias("last_offset"),
        F.min(when(timed & (F.col("first_timestamp") >= 0), "first_timestamp")).alias("first_ts"),
        F.max(when(timed, "max_timestamp")).alias("last_ts"),
        F.collect_set(when(good & (F.col("producer_id") >= 0), "producer_id")).alias("pids"),
        F.collect_set(when(good & (F.col("partition_leader_epoch") >= 0), "partition_leader_epoch")).alias("epochs"),
        F.collect_set("segment").alias("segments"),
    ).collect()
    for r in rows:
        d = r.asDict()
        _merge(acc.parts, d, d["size"] or 0, d["count"] or 0, d["batches"], d["first_offset"], d["last_offset"],
               d["first_ts"], d["last_ts"], d["pids"], d["epochs"])
        _entry(acc.parts, d["log_dir"], d["partition_dir"])["_segments"].update(d["segments"])
        acc.batches += d["batches"]
    for r in b.select("log_dir", "broker_id").distinct().collect():  # the broker each log dir's rows name
        if r["broker_id"] is not None or r["log_dir"] not in acc.brokers:
            acc.brokers[r["log_dir"]] = r["broker_id"]
    for r in b.groupBy(*KEY, "codec").agg(F.sum("size").alias("size")).collect():
        codecs = _entry(acc.parts, r["log_dir"], r["partition_dir"])["bytes_by_codec"]
        codecs[r["codec"]] = codecs.get(r["codec"], 0) + (r["size"] or 0)

    pr = _read(spark, out_dirs, "problems")
    for r in pr.groupBy("severity").count().collect():
        acc.severities[r["severity"]] = acc.severities.get(r["severity"], 0) + r["count"]
    acc.problems = sum(acc.severities.values())
    for r in pr.groupBy(*KEY, "kind").agg(F.count("position").alias("n")).collect():
        e = _entry(acc.parts, r["log_dir"], r["partition_dir"])
        e["problems_by_kind"][r["kind"]] = e["problems_by_kind"].get(r["kind"], 0) + r["n"]
        e["problems"] += r["n"]
        acc.by_kind[r["kind"]] = acc.by_kind.get(r["kind"], 0) + r["n"]
        if r["kind"] == "unreadable":
            acc.unreadable += r["n"]
    for r in pr.groupBy(*KEY, "topic", "partition").count().collect():
        e = _entry(acc.parts, r["log_dir"], r["partition_dir"])
        e["topic"] = e["topic"] or r["topic"]
        e["partition"] = e["partition"] if e["partition"] is not None else r["partition"]
    order = [F.col(c).asc_nulls_last() for c in _PROBLEM_ORDER]
    first = pr.orderBy(*order).limit(PROBLEMS_SHOWN).collect()
    names = DATASETS["problems"].names
    for r in first:
        d = {c: r[c] for c in names}
        acc.seq += 1
        acc.shown.append((tuple(d[c] for c in _PROBLEM_ORDER), acc.seq, d))
    acc.shown = heapq.nsmallest(PROBLEMS_SHOWN, acc.shown, key=lambda x: (x[0], x[1]))
    return acc.result()
