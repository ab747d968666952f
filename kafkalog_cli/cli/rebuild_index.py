"""``kafkalog rebuild-index``: compare (dry run) or rewrite ``.index``/``.timeindex`` by the broker's recovery rule."""

from __future__ import annotations

import sys

import click

from kafkalog_cli.cli.common import EXIT_CLEAN, EXIT_PROBLEMS, line_writers
from kafkalog_cli.cli.repair_errors import WRITE_FAILED_HINT, engine_call


@click.command(
    "rebuild-index",
    epilog="""\b
Examples:
  kafkalog rebuild-index /var/lib/kafka/orders-0
  kafkalog rebuild-index orders-0/00000000000000004000.log --format json | jq .
  kafkalog rebuild-index --execute --backup-dir /srv/kafkalog-backups orders-0

\b
Without --execute nothing is written: each segment's .index/.timeindex is compared
with the rebuilt one (first difference, and whether the file on disk is still
valid for lookups). An index that differs but is valid for lookups (e.g. one
entry per append chunk, as brokers write it) is kept, as the broker keeps it,
unless --rewrite-valid. With --execute the broker's log directory must not be locked;
new files are written beside the old ones, fsync'd and renamed into place, and the
old ones are kept in the backup directory (outside the log directory).

Exit codes: 0 nothing to write (or written), 1 the dry run would write a file or
a segment has an invalid batch, 2 usage error, unreadable input or refused repair.""",
)
@click.argument("paths", nargs=-1, required=True, type=click.Path(), metavar="PATH...")
@click.option("--index-interval-bytes", type=click.IntRange(min=0), default=4096, show_default=True,
              help="The topic's index.interval.bytes.")
@click.option("--segment-index-bytes", type=click.IntRange(min=12), default=10 * 1024 * 1024, show_default=True,
              help="The topic's segment.index.bytes (bounds the number of entries).")
@click.option("--execute/--dry-run", default=False, help="Write the rebuilt files, or only compare (the default).")
@click.option("--rewrite-valid", is_flag=True,
              help="Also replace indexes that differ from the rebuilt ones but are valid for lookups.")
@click.option("--backup-dir", type=click.Path(file_okay=False), default=None,
              help="Where the replaced files go (default: <parent of log dir>/kafkalog-backups or $KAFKALOG_BACKUP_DIR).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rebuild_index(paths: tuple[str, ...], index_interval_bytes: int, segment_index_bytes: int, execute: bool,
                  backup_dir: str | None, fmt: str, rewrite_valid: bool) -> None:
    """Rebuild the offset and time indexes of segments exactly as the broker's recovery does.

    PATH is a partition directory or a segment file (.log, .index or .timeindex)."""
    from kafkalog_cli.errors import KafkalogError, RepairRefused, WriteFailedError
    from kafkalog_cli.ops import rebuild_index as rb
    from kafkalog_cli.render import repairs as rr

    out, err = line_writers()
    res = engine_call(
        lambda: rb.run(list(paths), interval=index_interval_bytes, execute=execute, backup_dir=backup_dir,
                       segment_index_bytes=segment_index_bytes, rewrite_valid=rewrite_valid), [
            (RepairRefused, "stop the broker (or wait for it, or the other kafkalog command, to exit) and run again; "
                            "nothing was changed"),
            (WriteFailedError, WRITE_FAILED_HINT),
            (KafkalogError, "check the path; nothing was changed"),
        ], os_file=", ".join(paths))
    for line in rr.recovered_lines(res.recovered):
        err(line)
    if fmt == "json":
        out(rr.json_text(rr.rebuild_index_doc(res, execute=execute)))
    else:
        for line in rr.rebuild_index_text(res, execute=execute):
            out(line)
    sys.stdout.flush()
    if res.problems:
        sys.exit(EXIT_PROBLEMS)
    if not execute and res.differences:
        sys.exit(EXIT_PROBLEMS)
    sys.exit(EXIT_CLEAN)

