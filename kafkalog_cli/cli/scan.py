"""``kafkalog scan``: fleet-scale forensics into Parquet datasets, on an embedded process pool or on Spark."""

from __future__ import annotations

import os
import sys
import time

import click

from kafkalog_cli.cli.common import EXIT_CLEAN, EXIT_PROBLEMS, EXIT_USAGE, fail, line_writers


@click.command(
    "scan",
    epilog="""\b
Examples:
  kafkalog scan /var/lib/kafka --out /tmp/scan
  kafkalog scan '/mnt/brokers/*/kafka-logs/orders-*' --records --out /tmp/scan --format json
  kafkalog scan /var/lib/kafka --engine spark --master local[4] --out /tmp/scan
  kafkalog scan /mnt/nfs/kafka --engine spark --master spark://head:7077 --out /mnt/nfs/scan-out

\b
Datasets: DIR/batches, DIR/problems and (with --records) DIR/records, Parquet,
columns documented in the README ("kafkalog scan").

Exit codes: 0 clean, 1 problems found, 2 usage error or unreadable input.""",
)
@click.argument("paths", nargs=-1, type=click.Path(), metavar="PATH...")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="local = process pool, no Java; spark = PySpark (pip install 'kafkalog[spark]').")
@click.option("--master", default=None, metavar="URL",
              help="Spark master (local[N], spark://host:7077, yarn, k8s://...). Default local[--jobs].")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Write the Parquet datasets here (default: a temporary directory, removed after the report).")
@click.option("--records", is_flag=True, help="Also write one row per record (DIR/records): slower, decodes batches.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Parallel workers: processes (local) or local[N] cores (spark). Default: the CPU count.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Report format: text (rich tables on a terminal, plain in a pipe) or one JSON document.")
def scan(paths: tuple[str, ...], engine: str, master: str | None, out_dir: str | None, records: bool,
         jobs: int | None, fmt: str) -> None:
    """Scan log directories, partition directories or segment files (globs expanded, quoted or not) and write
    what every batch is, every problem found, and optionally every record, as Parquet datasets; then print a
    report per partition: offset and time range, bytes by codec, producers, leader epochs, problem counts.

    Problems: everything verify-crc reports per segment, plus producer sequence gaps, out-of-order batch
    timestamps and offsets across segment boundaries, checked per partition."""
    from kafkalog_cli.scan.paths import expand

    if not paths:
        fail("no PATH given", "kafkalog scan /var/lib/kafka --out /tmp/scan")
    if master is not None and engine != "spark":
        fail("--master applies to --engine spark only")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        fail("kafkalog scan writes Parquet and needs pyarrow, which is not installed",
             "pip install 'kafkalog[parquet]'")
    if engine == "spark":
        from kafkalog_cli.scan.spark_engine import INSTALL_HINT, missing_requirements

        missing = missing_requirements()
        if missing:
            fail(missing, INSTALL_HINT)
    from kafkalog_cli.scan.listing import Listing

    listing = Listing()  # unlistable directories and leftover files met while listing: problem rows
    segments, unmatched = expand(list(paths), listing)
    for arg in unmatched:
        click.echo(f"kafkalog: error: {arg}: no such file, or no segment files (<20 digits>.log) in it", err=True)
    if not segments:
        fail("no segment files to scan", "give a log directory, a partition directory or a .log file")

    from kafkalog_cli.scan.local_engine import default_jobs

    jobs = jobs or default_jobs()
    import tempfile

    tmp = None
    if out_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="kafkalog-scan-")
        target = tmp.name
    else:
        target = out_dir
    try:
        from kafkalog_cli.scan import output

        try:
            output.prepare(target, records)
        except (ValueError, OSError) as exc:
            fail(str(exc))
        t0 = time.perf_counter()
        if engine == "spark":
            from kafkalog_cli.scan.spark_engine import run_spark

            run_spark(segments, target, records=records, master=master, parallelism=jobs)
        else:
            from kafkalog_cli.scan.local_engine import run_local
            from kafkalog_cli.scan.summary import Summary

            acc = Summary(segments)  # aggregated from the chunks as they are written: no second read
            run_local(segments, target, records=records, jobs=jobs, summary=acc)
        listed = listing.write(target)
        if engine != "spark":
            acc.add("problems", listed)
        seconds = time.perf_counter() - t0
        if engine == "spark":
            from kafkalog_cli.scan.summary import summarize

            summary = summarize(target, segments)  # Spark SQL wrote the files; aggregate them, streaming
        else:
            summary = acc.result()
    finally:
        if tmp is not None:
            tmp.cleanup()
    summary["totals"]["with_records"] = records
    code = EXIT_CLEAN
    if any(n for sev, n in summary["problems"]["by_severity"].items() if sev != "info"):  # notes are not problems
        code = EXIT_PROBLEMS
    if unmatched or summary["totals"]["unreadable"]:
        code = EXIT_USAGE
    shown_dir = os.path.abspath(out_dir) if out_dir else None
    out, _err = line_writers()
    from kafkalog_cli.render import scan_report

    if fmt == "json":
        scan_report.render_json(summary, out, out_dir=shown_dir, engine=engine, seconds=seconds, exit_code=code)
    elif sys.stdout.isatty():
        scan_report.render_rich(summary, out_dir=shown_dir, engine=engine, seconds=seconds)
    else:
        scan_report.render_text(summary, out, out_dir=shown_dir, engine=engine, seconds=seconds)
    sys.stdout.flush()
    sys.exit(code)
