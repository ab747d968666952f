"""``kafkalog export``: the records of segments, partition directories, log dirs, tiered objects or salvage output,
as NDJSON, Parquet or a Kafka partition directory (docs/export.md)."""

from __future__ import annotations

import sys
from typing import IO, Any

import click

from kafkalog_cli.cli.common import ByteProgress, fail, line_writers

FORMATS = ("ndjson", "parquet", "kafka")


@click.command(
    "export",
    epilog="""\b
Examples:
  kafkalog export /var/lib/kafka/orders-0 --out /tmp/orders.ndjson
  kafkalog export /var/lib/kafka/orders-0.9f1c2a3b4d5e6f708192a3b4c5d6e7f8-delete --out /tmp/rescue/
  kafkalog export /var/lib/kafka --format parquet --out /tmp/records/
  kafkalog export orders-0/ --format kafka --out /tmp/restored-logdir
  kafkalog export orders-0/ --isolation read_uncommitted --keep-control --out - | jq .

Exit codes: 0 clean, 1 corrupt batches skipped (each reported), 2 usage error, unreadable
input or refused output (it exists, or another export is writing it), 130 interrupted
(nothing is left under --out).""",
)
@click.argument("sources", nargs=-1, required=True, type=click.Path(), metavar="SOURCE...")
@click.option("--out", "out", required=True, metavar="DEST",
              help="A new file (name.ndjson / name.parquet, or - for stdout with ndjson) or a new directory "
                   "(one file per partition; a log dir with --format kafka).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="ndjson", show_default=True,
              help="ndjson: one kcat -J style object per record; parquet: scan --records' columns plus values; "
                   "kafka: partition directories Kafka's loader accepts.")
@click.option("--isolation", type=click.Choice(["read_committed", "read_uncommitted"]), default=None,
              help="What a consumer of that isolation level sees: read_committed drops aborted and open "
                   "transactions. Default: read_committed (ndjson, parquet); read_uncommitted for --format kafka "
                   "(a faithful copy: Kafka's consumers apply their own isolation).")
@click.option("--keep-control", is_flag=True,
              help="With read_uncommitted: write the transaction markers too (control records; a Kafka "
                   "directory always keeps them).")
@click.option("--leftovers", is_flag=True,
              help="Also read the loader's leftovers (*.log.deleted, *.log.cleaned, *.log.swap) of each directory, "
                   "for offsets no segment holds.")
@click.option("--below-log-start", is_flag=True,
              help="Also the records below a partition's log start offset (its log dir's "
                   "log-start-offset-checkpoint: deleted by DeleteRecords or retention, still in the first segment; "
                   "a consumer never reads them, so they are left out by default).")
@click.option("--merge", is_flag=True,
              help="Merge several source directories of one topic-partition in offset order (else refused).")
@click.option("--topic", default=None, metavar="T", help="The topic name when the directory names none.")
@click.option("--partition", "partition", type=int, default=None, metavar="N",
              help="The partition number when the directory names none.")
@click.option("--offset", "win_offset", type=int, default=None, metavar="N", help="Window: offsets >= N only.")
@click.option("--count", "win_count", type=click.IntRange(min=1), default=None, metavar="K",
              help="Window: at most K records per partition.")
@click.option("--start-time", default=None, metavar="T",
              help="Window: timestamps >= T (ISO-8601 UTC, epoch s or ms, -1h).")
@click.option("--end-time", default=None, metavar="T", help="Window: timestamps <= T.")
@click.option("--producer-id", type=int, default=None, metavar="P", help="Window: only batches of producer id P.")
@click.option("--summary-format", "summary_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="The summary on stdout (stderr with --out -): text or one JSON document.")
@click.option("--max-batch-size", type=int, default=256 * 1024 * 1024, show_default=True,
              help="Largest batch accepted; a larger size field is reported as corrupt.")
@click.option("--max-decompressed-size", type=int, default=256 * 1024 * 1024, show_default=True,
              help="Largest decompressed batch accepted; larger ones are reported, never allocated.")
def export(sources: tuple[str, ...], out: str, fmt: str, isolation: str | None, keep_control: bool, leftovers: bool,
           below_log_start: bool, merge: bool, topic: str | None, partition: int | None, win_offset: int | None, win_count: int | None,
           start_time: str | None, end_time: str | None, producer_id: int | None, summary_format: str,
           max_batch_size: int, max_decompressed_size: int) -> None:
    """Export the records of SOURCE (segments, partition directories including -delete/-stray/-future ones, log
    dirs, tiered-storage objects, salvage output) with their offsets, timestamps, headers and producer fields."""
    from kafkalog_cli.cli.dump import _window
    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.ops import export as ex

    iso = isolation or ("read_uncommitted" if fmt == "kafka" else "read_committed")
    if keep_control and iso != "read_uncommitted":
        fail("--keep-control writes the transaction markers a read_uncommitted consumer sees",
             "add --isolation read_uncommitted")
    if out == "-" and fmt != "ndjson":
        fail(f"--out - (stdout) is for --format ndjson; {fmt} writes files", "give a file or directory to --out")
    window = _window(win_offset, win_count, start_time, end_time, producer_id, False)
    opts = ex.ExportOptions(window=window, isolation=iso, keep_control=keep_control,  # type: ignore[arg-type]
                            leftovers=leftovers, merge=merge, topic=topic, partition=partition,
                            below_log_start=below_log_start,
                            max_batch_size=max_batch_size, decompress_limit=max_decompressed_size)
    _out, err = line_writers()
    report = sys.stderr if out == "-" else sys.stdout
    try:
        plan = ex.plan(list(sources), opts)
    except KafkalogError as exc:
        fail(exc.describe(), exc.hint)
    if not plan.partitions:
        for note in plan.notes:
            err(f"kafkalog: note: {note}")
        fail("nothing to export: no segment found in " + ", ".join(sources))
    inside = ex.output_inside_source(plan, out) if out != "-" else None
    if inside is not None:
        fail(f"{out}: --out is inside the source directory {inside} (expected an output outside the partition "
             "directories and log dirs it reads, found a path inside one)",
             "write the export elsewhere (another disk, or beside the log dir): in a partition directory or log dir "
             "a broker would load or trip on it, and a later export of that directory would read it as a source")
    if fmt == "kafka":
        unnamed = [p for p in plan.partitions if p.partition < 0 or not p.named]
        if unnamed:
            fail(f"{unnamed[0].dirs[0]} does not name a topic-partition, which a Kafka partition directory needs",
                 "give --topic T --partition N")
    try:
        dest, sink, finish = _sink(fmt, out, plan)
    except KafkalogError as exc:
        fail(exc.describe(), exc.hint)
    for warning in dest.warnings if dest is not None else []:
        err(f"kafkalog: warning: {warning}")
    total = sum(_size(s.path) - s.position for p in plan.partitions for s in p.files)
    summary = None
    try:
        if sys.stderr.isatty() and out != "-":
            with ByteProgress("exporting") as (advance, set_total):
                set_total(total)
                summary = ex.Exporter(opts, sink, progress=advance).run(plan)
        else:
            summary = ex.Exporter(opts, sink).run(plan)
        finish()
        if dest is not None:
            dest.commit()
    except KafkalogError as exc:
        if dest is not None:
            dest.abort()
        fail(exc.describe(), exc.hint)
    except OSError as exc:
        if dest is not None:
            dest.abort()
        fail(f"cannot write {out}: {exc.strerror or exc}", "check the free space and permissions of --out's directory")
    except BaseException:
        if dest is not None:
            dest.abort()
        raise
    from kafkalog_cli.render.export import summary_doc, summary_lines

    assert summary is not None  # the walk ran: every other way out of the try above exits

    if summary_format == "json":
        import json

        report.write(json.dumps(summary_doc(summary, fmt, out), indent=2) + "\n")
    else:
        for line in summary_lines(summary, fmt, out):
            report.write(line + "\n")
    report.flush()
    sys.exit(summary.exit_code())


def _size(path: str) -> int:
    import os

    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _sink(fmt: str, out: str, plan: Any) -> tuple[Any, Any, Any]:
    """(the Destination or None for stdout, the sink, what to call when the walk is done)."""
    from kafkalog_cli.ops.export import Destination

    if fmt == "kafka":
        from kafkalog_cli.ops.export_kafka import KafkaDirSink

        dest = Destination(out, directory=True)
        ksink = KafkaDirSink(dest)
        return dest, ksink, ksink.close
    single = out == "-" or out.endswith((".ndjson", ".jsonl", ".json", ".parquet", ".pq"))
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            from kafkalog_cli.cli.common import install_hint

            fail("--format parquet needs pyarrow", install_hint("parquet", "pyarrow"))
        from kafkalog_cli.render.export_accel import parquet_fast, parquet_kernels
        from kafkalog_cli.render.export_parquet import ParquetSink

        dest = Destination(out, directory=not single)

        def open_path(part: Any) -> tuple[Any, str]:
            name = f"{part.name}.parquet"
            return (dest.open_file(dest.path()), dest.final()) if single else \
                (dest.open_file(dest.path(name)), dest.final(name))

        psink = ParquetSink(open_path, single, fast=parquet_fast(), kernels=parquet_kernels())
        return dest, psink, psink.close
    from kafkalog_cli.render.export_accel import ndjson_fast, ndjson_run
    from kafkalog_cli.render.export_ndjson import NdjsonSink

    if out == "-":
        stream: IO[bytes] = sys.stdout.buffer
        return None, NdjsonSink(lambda part: (stream, "-"), lambda f: f.flush(), fast=ndjson_fast(),
                                 run_fast=ndjson_run()), lambda: None
    dest = Destination(out, directory=not single)
    shared: dict[str, Any] = {}

    def open_part(part: Any) -> tuple[Any, str]:
        if single:
            if "f" not in shared:
                shared["f"] = dest.open_file(dest.path())  # closed in done()
            return shared["f"], dest.final()
        name = f"{part.name}.ndjson"
        return dest.open_file(dest.path(name)), dest.final(name)  # closed by the sink

    def close_part(f: Any) -> None:
        if not single:
            f.close()

    def done() -> None:
        if "f" in shared:
            shared["f"].close()
        elif single:
            open(dest.path(), "xb").close()

    return dest, NdjsonSink(open_part, close_part, fast=ndjson_fast(), run_fast=ndjson_run()), done

