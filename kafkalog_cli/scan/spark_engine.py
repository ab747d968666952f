"""The Spark engine: the same ``scan_segment`` run on executors, Parquet written by Spark.

Imported only on the ``--engine spark`` path (nothing else imports pyspark). Why it is built this way (field notes):
- the driver distributes PATHS, grouped by partition directory (``parallelize(bins, n).mapPartitions``), and each
  executor runs ``work.scan_partition`` on them, the very function the local engine's workers run (windowed reads,
  the verify pass, the streaming partition pass), so both engines produce the same rows by construction; the
  ``binaryFile`` source would load whole segments into the JVM (a 1 GiB segment ran out of memory);
- one scan pass is persisted and feeds the three outputs (batches, problems, records);
- Spark writes the datasets itself (executors write their own part files, nothing is collected on the driver), with
  a ``StructType`` derived from ``schema.py``, so both engines write the same columns and values.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafkalog_cli.scan.schema import DATASETS

if TYPE_CHECKING:
    from kafkalog_cli.scan.settings import ScanSettings

INSTALL_HINT = "pip install '.[spark]' in a kafkalog source checkout (pyspark >= 3.5, about 450 MB) and a Java 17 runtime on PATH"


def missing_requirements() -> str | None:
    """A sentence saying what is missing for the Spark engine, or None. Checked before anything starts a JVM:
    without Java PySpark dies with JAVA_GATEWAY_EXITED and a stack trace."""
    if importlib.util.find_spec("pyspark") is None:
        return "the Spark engine needs pyspark, which is not installed"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "the Spark engine needs Java (no 'java' on PATH and JAVA_HOME is not set)"
    return None


def spark_schema(name: str) -> Any:
    """The pyspark StructType of dataset ``name``, derived from the pyarrow schema."""
    from pyspark.sql import types as T

    simple = {
        pa.string(): T.StringType(), pa.int64(): T.LongType(), pa.int32(): T.IntegerType(),
        pa.int16(): T.ShortType(), pa.int8(): T.ByteType(), pa.bool_(): T.BooleanType(), pa.binary(): T.BinaryType(),
    }

    def conv(t: pa.DataType) -> Any:
        if pa.types.is_list(t):
            return T.ArrayType(conv(t.value_type), containsNull=True)
        if pa.types.is_timestamp(t):
            return T.TimestampType()  # written as TIMESTAMP_MILLIS, UTC-adjusted (see get_session)
        return simple[t]

    schema = DATASETS[name]
    version = {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}
    return T.StructType([T.StructField(f.name, conv(f.type), f.nullable, metadata=version if i == 0 else None)
                         for i, f in enumerate(schema)])


def get_session(master: str | None = None, *, parallelism: int | None = None,
                conf: dict[str, str] | None = None) -> Any:
    """A SparkSession for a scan. What the site configured (spark-defaults.conf) and ``conf`` (the user's
    ``--conf``) win; kafkalog adds only what nobody set (``spark_conf.resolve``)."""
    from pyspark.sql import SparkSession

    from kafkalog_cli.scan import spark_conf

    site = spark_conf.read_defaults(spark_conf.site_defaults_path())
    chosen, settings, env = spark_conf.resolve(master, conf or {}, site, parallelism)
    os.environ.update(env)
    builder = SparkSession.builder.master(chosen)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if "-Dlog4j2.configurationFile" in settings.get("spark.driver.extraJavaOptions", ""):
        spark.sparkContext.setLogLevel("FATAL")  # our quiet logging, not a site's log4j configuration
    return spark


def _scan_partitions(records: bool, settings: ScanSettings | None = None):
    """mapPartitions function over bins of partitions (lists of segment paths): yield (dataset, row tuple).
    A closure over plain values only: ``records`` and the scan's ``ScanSettings`` (pickled with the task and
    applied in the Python worker that runs it; None: the defaults)."""

    def run(bins: Any) -> Any:
        from kafkalog_cli.scan.schema import DATASETS as D
        from kafkalog_cli.scan.settings import ScanSettings, install
        from kafkalog_cli.scan.work import SmallRows, scan_partition

        install(settings if settings is not None else ScanSettings())

        names = {n: D[n].names for n in D}

        def rows(name: str, table: Any) -> Any:
            cols = [table.column(c).to_pylist() for c in names[name]]
            for row in zip(*cols):
                yield name, row

        small = SmallRows()
        for paths in (p for chunk in bins for p in chunk):
            for name, table in scan_partition(paths, records=records, small=small):
                yield from rows(name, table)
            if len(small) >= 1 << 16:
                for name, table, _runs in small.tables():
                    yield from rows(name, table)
        for name, table, _runs in small.tables():
            yield from rows(name, table)

    return run


def run_spark(segments: list[str], out_dir: str, *, records: bool = False, spark: Any = None,
              master: str | None = None, parallelism: int | None = None, conf: dict[str, str] | None = None,
              settings: ScanSettings | None = None) -> None:
    """Scan ``segments`` into ``out_dir`` with Spark. ``spark``: an existing session (tests share one); ``conf``:
    the user's ``--conf`` settings; ``settings``: the scan's ``ScanSettings``, sent to every task (default: this
    process's ``settings.current()``)."""
    from pyspark import StorageLevel

    from kafkalog_cli.scan.local_engine import bins, group_partitions
    from kafkalog_cli.scan.settings import current

    session = spark or get_session(master, parallelism=parallelism, conf=conf)
    sc = session.sparkContext
    out_dir = os.path.abspath(out_dir) if "://" not in out_dir else out_dir
    # a few tasks per core, each a bin of whole partitions balanced by size (largest first into the lightest bin),
    # so one big partition does not start last and tiny inputs do not pay for hundreds of tasks
    parts = group_partitions(segments)
    groups = [[parts[i] for i in b] for b in bins(parts, max(1, min(len(parts), 2 * sc.defaultParallelism)))]
    tagged = sc.parallelize(groups, max(1, len(groups))).mapPartitions(
        _scan_partitions(records, current() if settings is None else settings))
    tagged.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        writes = ["batches", "problems"] + (["records"] if records else [])
        for name in writes:
            rdd = tagged.filter(lambda t, name=name: t[0] == name).map(lambda t: t[1])
            df = session.createDataFrame(rdd, spark_schema(name), verifySchema=False)
            # Hive-style broker_id=<id>/topic=<topic>/ directories, as the local engine writes them (fleet.py);
            # Spark escapes the values as Hive does, and keeps the two columns in the path only
            df.write.mode("overwrite").partitionBy("broker_id", "topic").parquet(os.path.join(out_dir, name))
    except Exception as exc:  # a job failure: name a broken executor environment in one line
        from kafkalog_cli.scan.spark_conf import ExecutorEnvironmentError, executor_env_problem

        why = executor_env_problem(str(exc))
        if why is None:
            raise
        raise ExecutorEnvironmentError(why) from None
    finally:
        tagged.unpersist()
        if spark is None:
            session.stop()
