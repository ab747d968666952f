"""``kafkalog compare-replicas``: where copies of one partition from several brokers diverge (read only)."""

from __future__ import annotations

import sys

import click

from kafkalog_cli.cli.common import EXIT_CLEAN, EXIT_PROBLEMS, color_option, fail, line_writers
from kafkalog_cli.render.jsondoc import versioned


@click.command(
    "compare-replicas",
    epilog="""\b
Examples:
  kafkalog compare-replicas /mnt/b1/kafka-logs/orders-0 /mnt/b2/kafka-logs/orders-0
  kafkalog compare-replicas --names 1,2,3 --leader 3 --format json a/orders-0 b/orders-0 c/orders-0

\b
Each DIR is the same topic-partition copied or mounted from a different broker;
the broker id comes from the log dir's meta.properties unless --names is given.
The leader is the replica with the highest latest leader epoch (then the
highest log end offset) unless --leader names it. For every follower the
report shows where Kafka's follower truncation would cut it against the
leader (leader-epoch endOffsetFor rule) and the records it would lose.

\b
Exit codes: 0 replicas agree (a follower that only lags is not divergence),
1 divergence found, 2 usage error or unreadable input.""",
)
@click.argument("dirs", nargs=-1, required=True, type=click.Path(), metavar="DIR DIR...")
@click.option("--names", default=None, metavar="A,B,...", help="Names (broker ids) of the replicas, in DIR order.")
@click.option("--leader", default=None, metavar="NAME", help="The replica that is (or will be) the leader.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def compare_replicas(dirs: tuple[str, ...], names: str | None, leader: str | None, fmt: str) -> None:
    """Align replicas of one partition by offset and leader epoch; report the first divergence."""
    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.ops import replicas as rp
    from kafkalog_cli.render.replicas import render_json, render_text

    out, _err = line_writers()
    if len(dirs) < 2:
        fail("give at least two partition directories", "e.g. kafkalog compare-replicas b1/orders-0 b2/orders-0")
    name_list = None
    if names is not None:
        name_list = [n.strip() for n in names.split(",")]
        if len(name_list) != len(dirs) or not all(name_list):
            fail(f"--names has {len(name_list)} names for {len(dirs)} directories", "give one non-empty name per DIR")
    try:
        cmp = rp.compare(list(dirs), name_list, leader)
    except KafkalogError as exc:
        fail(exc.describe(), "give copies of one partition directory, e.g. /mnt/b1/kafka-logs/orders-0")
    except OSError as exc:
        fail(f"{exc.filename or ''}: {exc.strerror or exc}", "check the paths and permissions")
    if fmt == "json":
        out(render_json(cmp))
    else:
        for line in render_text(cmp):
            out(line)
    sys.stdout.flush()
    sys.exit(EXIT_PROBLEMS if cmp.diverged else EXIT_CLEAN)


@click.command(
    "report",
    epilog="""\b
Examples:
  kafkalog scan --records --out /srv/scan/b1 /mnt/b1/kafka-logs
  kafkalog scan --records --out /srv/scan/b2 /mnt/b2/kafka-logs
  kafkalog report --replicas /srv/scan/b1 /srv/scan/b2 --broker-ids /srv/scan/b1=1,/srv/scan/b2=2
  kafkalog report /srv/scan/fleet --format json                  # the fleet report
  kafkalog report /srv/scan/fleet --engine spark --master spark://head:7077

\b
Without --replicas: the report 'kafkalog scan' prints, from the datasets only
(--engine spark: aggregated by Spark SQL, same text and JSON). With --replicas:
for every topic-partition present on two or more brokers, the first divergent
offset and its kind, as compare-replicas computes them, written as a Parquet
dataset (--out, default DATASET/divergence). Brokers come from --broker-ids
(a dataset directory or a log_dir value = id), else the log_dir path.

\b
Exit codes: 0 every replica set agrees, 1 divergence found, 2 usage error or
unreadable datasets.""",
)
@click.option("--replicas", "replicas", is_flag=True,
              help="Compare replicas across the datasets. Without it: the scan report of the datasets (fleet report).")
@click.argument("datasets", nargs=-1, required=True, type=click.Path(), metavar="DATASET...")
@click.option("--broker-ids", default=None, metavar="DIR=ID,...", help="Broker id of each dataset dir or log_dir.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Where the divergence dataset goes (default: <first DATASET>/divergence).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="Who aggregates the fleet report: this process (streaming), or Spark SQL on the executors.")
@click.option("--master", default=None, metavar="URL",
              help="Spark master URL for --engine spark (default: the site's, else local[*]).")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE",
              help="A Spark setting for --engine spark (repeatable); the site's spark-defaults.conf is kept.")
@color_option
def report(replicas: bool, datasets: tuple[str, ...], broker_ids: str | None, out_dir: str | None, fmt: str,
           engine: str, master: str | None, confs: tuple[str, ...], color: str) -> None:
    """The scan report of one or more scan datasets (a fleet's shared --out), without re-reading segments; with
    --replicas, replica divergence across scan datasets of several brokers (the fleet form of compare-replicas)."""
    import json
    import os

    if replicas and (engine != "local" or master is not None or confs):
        fail("--engine, --master and --conf apply to the fleet report only (without --replicas)", "drop them")
    if engine != "spark" and (master is not None or confs):
        fail("--master and --conf apply to --engine spark only", "add --engine spark")
    if not replicas:
        _fleet_report(datasets, fmt, engine, master, confs, color)

    import pyarrow.parquet as pq

    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.scan.replicas_fleet import divergence

    out, _err = line_writers()
    mapping: dict[str, str] = {}
    for item in (broker_ids or "").split(","):
        if not item.strip():
            continue
        k, eq, v = item.rpartition("=")
        if not eq or not k or not v:
            fail(f"--broker-ids: {item!r} is not DIR=ID", "e.g. --broker-ids /srv/scan/b1=1,/srv/scan/b2=2")
        mapping[k] = v
    try:
        table, _cmps = divergence(list(datasets), mapping)
    except KafkalogError as exc:
        fail(exc.describe(), "give the --out directories of 'kafkalog scan --records'")
    except OSError as exc:
        fail(f"{exc.filename or ''}: {exc.strerror or exc}", "check the dataset paths")
    target = out_dir or os.path.join(datasets[0], "divergence")
    try:
        os.makedirs(target, exist_ok=True)
        pq.write_table(table, os.path.join(target, "part-00000.parquet"))
    except OSError as exc:
        fail(f"{target}: {exc.strerror or exc}", "pick a writable --out directory")
    rows = table.to_pylist()
    if fmt == "json":
        out(json.dumps(versioned({"divergence": rows, "out": target}), indent=1))
    else:
        from kafkalog_cli.render.replicas import fleet_lines

        for line in fleet_lines(rows, target):
            out(line)
    sys.stdout.flush()
    sys.exit(EXIT_PROBLEMS if any(r["first_divergent_offset"] is not None for r in rows) else EXIT_CLEAN)


def _fleet_report(datasets: tuple[str, ...], fmt: str, engine: str = "local", master: str | None = None,
                  confs: tuple[str, ...] = (), color: str = "auto") -> None:
    """``kafkalog report DATASET...``: the same report (text or JSON, same keys) that ``kafkalog scan`` prints,
    aggregated from the datasets' batches and problems (every broker_id=<id>/ part file, every host); with
    ``--engine spark`` by Spark SQL (``scan.spark_summary``), with the same result."""
    import os
    import tempfile
    import time

    from kafkalog_cli.render import scan_report
    from kafkalog_cli.scan import uri
    from kafkalog_cli.scan.summary import summarize_many

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kafkalog-report-") as tmp:
        local: list[str] = []
        for i, ds in enumerate(datasets):
            try:
                path = uri.local_path(ds)
                if uri.is_object_uri(path):  # the batches and problems objects, copied once (no segment is read)
                    path = os.path.join(tmp, str(i))
                    for name in ("batches", "problems"):
                        uri.download_tree(f"{ds.rstrip('/')}/{name}", os.path.join(path, name))
            except (OSError, ValueError) as exc:
                fail(f"{ds}: {exc}", "check the URI and the AWS_* credentials")
            if not os.path.isdir(os.path.join(path, "batches")):
                fail(f"{ds}: not a scan dataset directory (no batches/ inside)",
                     "give the --out directory of kafkalog scan")
            local.append(path)
        try:
            summary = summarize_many(local) if engine == "local" else _spark_summary(local, master, confs)
        except OSError as exc:
            fail(f"{exc.filename or ''}: {exc.strerror or exc}", "check the dataset paths")
    summary["totals"]["with_records"] = all(os.path.isdir(os.path.join(ds, "records")) for ds in datasets)
    code = EXIT_PROBLEMS if summary["problems"]["total"] else EXIT_CLEAN
    if summary["totals"]["unreadable"]:
        code = 2
    seconds = time.perf_counter() - t0
    shown = ",".join(d if "://" in d else os.path.abspath(d) for d in datasets)
    out, _err = line_writers()
    if fmt == "json":
        scan_report.render_json(summary, out, out_dir=shown, engine=engine, seconds=seconds, exit_code=code)
    else:
        from kafkalog_cli.cli.scan import screen_report

        screen_report(summary, out, out_dir=None, engine=engine, seconds=seconds, color=color)  # nothing written
    sys.stdout.flush()
    sys.exit(code)


def _spark_summary(local: list[str], master: str | None, confs: tuple[str, ...]) -> dict:
    """The fleet report's aggregates by Spark SQL. A session that was already running (a test's, a notebook's) is
    used and left running; one started here is stopped. Only SQL runs on the executors (no Python worker), so no
    executor environment is needed."""
    from kafkalog_cli.cli.common import install_hint

    try:
        from kafkalog_cli.scan.spark_conf import parse_conf_args
        from kafkalog_cli.scan.spark_engine import missing_requirements
    except ImportError:
        fail("the Spark engine cannot be loaded", install_hint("spark", "the Spark engine", "a Java 17 runtime on PATH"))
    missing = missing_requirements()
    if missing:
        fail(missing, install_hint("spark", "the Spark engine", "pyspark >= 3.5 (about 450 MB) and a Java 17 runtime "
                                                               "on PATH"))
    try:
        settings = parse_conf_args(confs)
    except ValueError as exc:
        fail(str(exc))
    from pyspark.sql import SparkSession

    from kafkalog_cli.scan.spark_engine import get_session
    from kafkalog_cli.scan.spark_summary import summarize_spark

    running = SparkSession.getActiveSession()
    spark = running or get_session(master, conf=settings)
    try:
        return summarize_spark(spark, local)
    finally:
        if running is None:
            spark.stop()
