"""``kafkalog scan``: fleet-scale forensics into Parquet datasets, on an embedded process pool or on Spark."""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import TYPE_CHECKING

import click

from kafkalog_cli.cli.common import (
    EXIT_CLEAN,
    EXIT_PROBLEMS,
    EXIT_USAGE,
    color_enabled,
    color_option,
    fail,
    install_hint,
    line_writers,
)
from kafkalog_cli.errors import KafkalogError

if TYPE_CHECKING:
    from kafkalog_cli.scan.listing import Listing


@click.command(
    "scan",
    epilog="""\b
Examples:
  kafkalog scan /var/lib/kafka --out /tmp/scan
  kafkalog scan '/mnt/brokers/*/kafka-logs/orders-*' --records --out /tmp/scan --format json
  kafkalog scan /var/lib/kafka --engine spark --master local[4] --out /tmp/scan
  kafkalog scan /mnt/nfs/kafka --engine spark --master spark://head:7077 --out /mnt/nfs/scan-out \
    --conf spark.archives=kafkalog-env.tar.gz#kafkalog_env --conf spark.pyspark.python=./kafkalog_env/bin/python
  kafkalog scan /var/lib/kafka --out s3://bucket/fleet --low-impact --max-read-rate 50M   # on every broker host
  kafkalog report s3://bucket/fleet                                                     # the fleet report

\b
Datasets: DIR/batches, DIR/problems and (with --records) DIR/records, Parquet,
columns documented in docs/scan.md ("Datasets").

Exit codes: 0 clean, 1 problems found, 2 usage error or unreadable input.""",
)
@click.argument("paths", nargs=-1, type=click.Path(), metavar="PATH...")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="local = process pool, no Java; spark = PySpark (the '[spark]' extra and Java 17).")
@click.option("--master", default=None, metavar="URL",
              help="Spark master (local[N], spark://host:7077, yarn, k8s://...). Default local[--jobs].")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE",
              help="A Spark setting (repeatable); it wins over spark-defaults.conf and kafkalog's own defaults.")
@click.option("--out", "out_dir", default=None, metavar="DIR|URI",
              help="Write the Parquet datasets here: a path, file:///path or s3://bucket/prefix (default: a "
                   "temporary directory, removed after the report). Many hosts may share one --out.")
@click.option("--endpoint-url", default=None, metavar="URL",
              help="S3 endpoint for s3:// paths (default: $AWS_ENDPOINT_URL_S3, then $AWS_ENDPOINT_URL, then AWS).")
@click.option("--broker-id", type=int, default=None, metavar="ID",
              help="Broker id of every row (default: node.id / broker.id of each log dir's meta.properties).")
@click.option("--low-impact", is_flag=True,
              help="Leave the page cache as found: drop the pages the scan brought in after each segment.")
@click.option("--max-read-rate", default=None, metavar="BYTES/s",
              help="Average read rate bound for the whole scan, e.g. 50M (MiB/s); 'kafkalog scan' sleeps to keep it.")
@click.option("--records", is_flag=True, help="Also write one row per record (DIR/records): slower, decodes batches.")
@click.option("--decode", is_flag=True,
              help="With --records: schema-registry decode columns (value_json, ids, subjects; docs/schemas.md).")
@click.option("--schemas", "schemas_dirs", multiple=True, type=click.Path(), metavar="LOGDIR",
              help="--decode: log dir(s) holding _schemas (default: the _schemas found in the scanned log dirs).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Parallel workers: processes (local) or local[N] cores (spark). Default: the CPU count.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Report format: text (lines fitting the terminal, a full table at 160+ columns) or one JSON document.")
@color_option
def scan(paths: tuple[str, ...], engine: str, master: str | None, confs: tuple[str, ...], out_dir: str | None,
         endpoint_url: str | None, broker_id: int | None, low_impact: bool, max_read_rate: str | None, records: bool,
         jobs: int | None, fmt: str, color: str, decode: bool = False, schemas_dirs: tuple[str, ...] = ()) -> None:
    """Scan log directories, partition directories or segment files (globs expanded, quoted or not) and write
    what every batch is, every problem found, and optionally every record, as Parquet datasets; then print a
    report per partition: offset and time range, bytes by codec, producers, leader epochs, problem counts.

    Problems: everything verify-crc reports per segment, plus producer sequence gaps, out-of-order batch
    timestamps and offsets across segment boundaries, checked per partition."""
    if not paths:
        fail("no PATH given", "kafkalog scan /var/lib/kafka --out /tmp/scan")
    if (master is not None or confs) and engine != "spark":
        fail("--master and --conf apply to --engine spark only", "add --engine spark")
    from kafkalog_cli.scan.spark_conf import parse_conf_args

    try:
        spark_settings = parse_conf_args(confs)
    except ValueError as exc:
        fail(str(exc))
    from kafkalog_cli.scan.memory_pool import prefer_jemalloc

    prefer_jemalloc()  # before pyarrow is loaded (see memory_pool.py)
    import importlib.util

    if "pyarrow" not in sys.modules and importlib.util.find_spec("pyarrow") is None:  # loaded later (_start_first_pass)
        fail("kafkalog scan writes Parquet and needs pyarrow, which is not installed",
             install_hint("parquet", "kafkalog scan (Parquet output)"))
    if engine == "spark":
        try:
            from kafkalog_cli.scan.spark_engine import missing_requirements
        except ImportError:
            fail("the Spark engine cannot be loaded", install_hint("spark", "the Spark engine", "a Java 17 runtime on PATH"))
        missing = missing_requirements()
        if missing:
            fail(missing, install_hint("spark", "the Spark engine", "pyspark >= 3.5 (about 450 MB) and a Java 17 "
                                                                   "runtime on PATH"))
    from kafkalog_cli.scan import uri

    remote_out = None
    if out_dir is not None:
        try:
            out_dir = uri.local_path(out_dir)
        except ValueError as exc:
            fail(str(exc))
        if uri.is_object_uri(out_dir):
            remote_out = out_dir = out_dir.rstrip("/")
            if engine == "spark" and not (master or "local").startswith("local"):
                fail("--out s3://... with a Spark cluster: the executors' part files would stay on their local "
                     "disks", "give --out a path every executor and this host share, or use --engine local")
        elif uri.is_uri(out_dir):
            fail(f"{out_dir}: unsupported --out URI (use a path, file:///path or s3://bucket/prefix)")
    from kafkalog_cli.scan.settings import ScanSettings, applied

    # the scan's settings, applied in this process (listing s3:// input, the log dirs' check) and handed by the
    # engines to their workers: no environment variable carries them (scan/settings.py)
    settings = ScanSettings(broker_id=broker_id, low_impact=low_impact, endpoint_url=endpoint_url or None)
    with applied(settings):
        listing, strays, segments, unmatched, empty = _list_input(paths)
    if not segments and empty and not unmatched:
        click.echo(f"Nothing to scan: {len(empty)} empty partition director{'y' if len(empty) == 1 else 'ies'}.")
        sys.exit(EXIT_CLEAN)
    if not segments:
        fail("no segment files to scan", "every PATH was reported above")
    if engine == "local" and not low_impact and max_read_rate is None:
        _start_first_pass(segments, jobs)

    from kafkalog_cli.scan import identity
    from kafkalog_cli.scan.local_engine import default_jobs
    from kafkalog_cli.scan.paths import locate

    with applied(settings):
        try:
            identity.check_log_dirs(sorted({locate(s).log_dir for s in segments}))
        except KafkalogError as exc:
            fail(exc.describe(), "fix meta.properties or give --broker-id")

    jobs = jobs or default_jobs()
    if max_read_rate is not None:
        from kafkalog_cli.scan import impact

        try:
            settings = dataclasses.replace(settings, max_read_rate=impact.parse_rate(max_read_rate))
        except ValueError as exc:
            fail(str(exc))
    if decode or schemas_dirs:
        settings = dataclasses.replace(settings, decode_schemas=_decode_schemas(decode, records, schemas_dirs,
                                                                               segments))
    from kafkalog_cli.scan.run import ScanRefused, run_scan

    try:
        result = run_scan(segments, listing, settings, engine=engine, records=records, jobs=jobs,
                          out_dir=out_dir, remote_out=remote_out, master=master, spark_conf=spark_settings)
    except ScanRefused as exc:
        fail(exc.message, exc.hint)
    _report(result.summary, records, unmatched, out_dir, engine, result.seconds, fmt, strays, color)


def _list_input(paths: tuple[str, ...]) -> tuple[Listing, int, list[str], list[str], list[str]]:
    """(listing, stray .log files named, segments, arguments that matched nothing, empty partition directories);
    the notes and errors of the arguments (scan/inputs.py, worded by render/scan_inputs.py) printed on stderr."""
    from kafkalog_cli.render import scan_inputs
    from kafkalog_cli.scan import inputs
    from kafkalog_cli.scan.listing import Listing
    from kafkalog_cli.scan.paths import expand

    listing = Listing()  # unlistable directories and leftover files met while listing: problem rows
    chk = inputs.check_named_files(list(paths))
    refused = scan_inputs.refused_lines(chk)
    if refused is not None:
        fail(*refused)
    try:
        segments, unmatched = expand(list(paths), listing)
    except (OSError, ValueError) as exc:
        fail(f"cannot list the input: {exc}", "check the URI and the AWS_* credentials / --endpoint-url")
    inputs.sort_unmatched(chk, unmatched)
    for line in scan_inputs.note_lines(chk):
        click.echo(line, err=True)
    return listing, len(chk.strays), segments, [u.arg for u in chk.unmatched], chk.empty


def _start_first_pass(segments: list[str], jobs: int | None) -> None:
    """When this process will walk the first segment itself (one partition, or ``--jobs 1``: ``run_local``), start
    its verify pass now, while pyarrow and the writers load (``verify_pass.start_early``). Not with --low-impact or
    --max-read-rate (the caller checks): they account for each segment's reads around its walk."""
    from kafkalog_cli.scan import verify_pass

    first = segments[0]
    if "://" in first:
        return
    if jobs == 1 or len({os.path.dirname(s) for s in segments}) == 1:
        verify_pass.start_early(first)


def _decode_schemas(decode: bool, records: bool, schemas_dirs: tuple[str, ...],
                    segments: list[str]) -> tuple[tuple[int, str], ...]:
    """``--decode``: the ``_schemas`` copies (partition, directory) the workers replay (docs/schemas.md)."""
    if not decode or not records:
        fail("--decode and --schemas need --records (the decoded values are columns of DIR/records)",
             "kafkalog scan --records --decode /var/lib/kafka --out /tmp/scan")
    from kafkalog_cli.ops.schemas import schema_copies
    from kafkalog_cli.scan.paths import locate

    where = list(schemas_dirs) or sorted({locate(s).log_dir for s in segments if "://" not in s})
    try:
        copies, _notes = schema_copies(where)
    except KafkalogError as exc:
        fail(exc.describe(), "give the registry's log dir with --schemas LOGDIR")
    if not copies:
        fail(f"no _schemas partition in {', '.join(where)}", "give the registry's log dir with --schemas LOGDIR")
    return tuple(copies)


def _report(summary: dict, records: bool, unmatched: list[str], out_dir: str | None, engine: str, seconds: float,
            fmt: str, strays: int = 0, color: str = "auto") -> None:
    summary["totals"]["with_records"] = records
    code = EXIT_CLEAN
    if any(n for sev, n in summary["problems"]["by_severity"].items() if sev != "info"):  # notes are not problems
        code = EXIT_PROBLEMS
    if strays:  # a .log the broker never reads: a verdict, as verify-crc's stray-log
        code = EXIT_PROBLEMS
    if unmatched or summary["totals"]["unreadable"]:
        code = EXIT_USAGE
    shown_dir = (out_dir if "://" in out_dir else os.path.abspath(out_dir)) if out_dir else None
    out, _err = line_writers()
    from kafkalog_cli.render import scan_report

    if fmt == "json":
        scan_report.render_json(summary, out, out_dir=shown_dir, engine=engine, seconds=seconds, exit_code=code)
    else:
        screen_report(summary, out, out_dir=shown_dir, engine=engine, seconds=seconds, color=color)
    sys.stdout.flush()
    sys.exit(code)


def screen_report(summary: dict, out, *, out_dir: str | None, engine: str, seconds: float,  # noqa: ANN001
                  color: str) -> None:
    """The text report of scan and report: sized to the terminal (``render/scan_report.render_screen``)."""
    import shutil

    from kafkalog_cli.render import scan_report
    from kafkalog_cli.render.colour import Palette

    try:
        tty = sys.stdout.isatty()
    except (AttributeError, ValueError):
        tty = False
    scan_report.render_screen(summary, out, tty=tty, columns=shutil.get_terminal_size().columns,
                              palette=Palette(color_enabled(color)), out_dir=out_dir, engine=engine, seconds=seconds)
