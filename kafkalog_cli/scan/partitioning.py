"""``audit-partitioning --from-scan``: the partitioning audit over ``scan --records`` datasets of a fleet, on the
local engine (pyarrow) or on Spark.

Why here and not as columns written by the scan: a record's partition under a partitioner depends on the topic's
partition count, which no single partition directory (the scan's unit of work) knows; it is a property of the
fleet, known once every dataset is read. So the audit reduces the ``records`` rows (joined with their batch's
``producer_id`` and ``control`` flag from ``batches``) to one group per (topic, partition, key): count, first
offset, first and last timestamp, producer ids; plus the largest records per partition. The partitioners
(``format/partitioners.py``) are then applied once per group by ``ops/partitioning.Auditor``, the same code as the
audit of log dirs, so both engines and the direct audit give one report. One copy of each partition is taken
(the smallest ``log_dir``): replicas hold the same records. Only live ``<topic>-<n>`` directories count.
"""

from __future__ import annotations

import os
from typing import Any

from kafkalog_cli.ops.partitioning import Auditor, AuditReport, Group

_REC = ["log_dir", "topic", "partition", "partition_dir", "segment", "batch_position", "offset", "timestamp", "key",
        "key_size", "value_size"]
_BAT = ["log_dir", "partition_dir", "segment", "position", "producer_id", "control"]


def _dirs(paths: list[str], name: str) -> list[str]:
    out = [os.path.join(p, name) for p in paths if os.path.isdir(os.path.join(p, name))]
    if not out:
        from kafkalog_cli.errors import UnreadableFileError

        raise UnreadableFileError(f"no {name} dataset here (written by kafkalog scan --records)", file=paths[0],
                                  expected=f"{name}/ under the scan's --out", found="none")
    return out


def _feed(aud: Auditor, groups: list[tuple[Any, ...]], sizes: list[tuple[Any, ...]], topics: set[str]) -> None:
    for topic, partition, key, count, first_offset, first_ts, last_ts, pids in groups:
        if topics and topic not in topics:
            continue
        aud.add(Group(topic, int(partition), bytes(key), int(count), int(first_offset), int(first_ts), int(last_ts),
                      {int(p) for p in pids}))
    by_tp: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for topic, partition, offset, size in sizes:
        if topics and topic not in topics:
            continue
        by_tp.setdefault((topic, int(partition)), []).append((int(offset), int(size)))
    for (topic, partition), rows in by_tp.items():
        aud.add_sizes(topic, partition, rows)


def audit_local(paths: list[str], *, partitions: int | None = None, previous: int | None = None,
                topics: set[str] | None = None, top: int = 5) -> AuditReport:
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafkalog_cli.scan.summary import iter_dataset

    _dirs(paths, "records")

    def read(name: str, columns: list[str]) -> pa.Table:  # the scan's own reader: our schema, hive columns
        tables = [t for p in paths for t in iter_dataset(p, name, columns)]
        if not tables:
            from kafkalog_cli.scan.schema import DATASETS

            return pa.table({c: pa.array([], DATASETS[name].field(c).type) for c in columns})
        return pa.concat_tables(tables)

    rec, bat = read("records", _REC), read("batches", _BAT)
    live = pc.equal(rec["partition_dir"], pc.binary_join_element_wise(
        rec["topic"], pc.cast(rec["partition"], pa.string()), "-"))
    rec = rec.filter(pc.fill_null(live, False))
    # one copy per (topic, partition): the smallest log_dir
    first = rec.group_by(["topic", "partition"]).aggregate([("log_dir", "min")])
    rec = rec.join(first, ["topic", "partition"]).filter(pc.equal(pc.field("log_dir"), pc.field("log_dir_min")))
    bat = bat.rename_columns(["log_dir", "partition_dir", "segment", "batch_position", "producer_id", "control"])
    rec = rec.join(bat, ["log_dir", "partition_dir", "segment", "batch_position"]).filter(pc.invert(pc.field("control")))
    ts = pc.fill_null(rec["timestamp"], -1)
    size = pc.add(pc.max_element_wise(rec["key_size"], 0), pc.max_element_wise(rec["value_size"], 0))
    rec = rec.append_column("ts", ts).append_column("size", size)
    keyed = rec.filter(pc.is_valid(rec["key"]))
    g = keyed.group_by(["topic", "partition", "key"]).aggregate(
        [("offset", "count"), ("offset", "min"), ("ts", "min"), ("ts", "max"), ("producer_id", "distinct")])
    groups = list(zip(*(g[c].to_pylist() for c in ("topic", "partition", "key", "offset_count", "offset_min",
                                                    "ts_min", "ts_max", "producer_id_distinct"))))
    sizes = list(zip(*(rec[c].to_pylist() for c in ("topic", "partition", "offset", "size"))))
    aud = Auditor(partitions=partitions, previous=previous, top=top)
    _feed(aud, groups, sizes, topics or set())
    return aud.finish()


def audit_spark(paths: list[str], spark: Any, *, partitions: int | None = None, previous: int | None = None,
                topics: set[str] | None = None, top: int = 5) -> AuditReport:
    """The same reduction in Spark SQL (the rows never leave the executors; only groups are collected)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from kafkalog_cli.scan.spark_summary import _read

    _dirs(paths, "records")
    rec, bat = _read(spark, paths, "records"), _read(spark, paths, "batches")  # timestamps as epoch ms
    rec = rec.select(*_REC).where(F.col("partition_dir") == F.concat_ws("-", "topic", F.col("partition").cast("string")))
    w = Window.partitionBy("topic", "partition")
    rec = rec.withColumn("_first", F.min("log_dir").over(w)).where(F.col("log_dir") == F.col("_first"))
    bat = bat.select(*_BAT).withColumnRenamed("position", "batch_position")
    rec = rec.join(bat, ["log_dir", "partition_dir", "segment", "batch_position"]).where(~F.col("control"))
    rec = rec.withColumn("ts", F.coalesce(F.col("timestamp"), F.lit(-1)))
    rec = rec.withColumn("size", F.greatest("key_size", F.lit(0)) + F.greatest("value_size", F.lit(0)))
    g = (rec.where(F.col("key").isNotNull()).groupBy("topic", "partition", "key")
         .agg(F.count("*").alias("n"), F.min("offset").alias("o"), F.min("ts").alias("t0"), F.max("ts").alias("t1"),
              F.collect_set("producer_id").alias("pids")))
    groups = [tuple(r) for r in g.collect()]
    rank = Window.partitionBy("topic", "partition").orderBy(F.col("size").desc(), F.col("offset").asc())
    s = rec.withColumn("_r", F.row_number().over(rank)).where(F.col("_r") <= top).select("topic", "partition",
                                                                                         "offset", "size")
    sizes = [tuple(r) for r in s.collect()]
    aud = Auditor(partitions=partitions, previous=previous, top=top)
    _feed(aud, groups, sizes, topics or set())
    return aud.finish()
