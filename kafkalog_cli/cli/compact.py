"""``kafkalog compact``: run one LogCleaner round offline (dry run by default)."""

from __future__ import annotations

import sys

import click

from kafkalog_cli.cli.common import EXIT_CLEAN, EXIT_PROBLEMS, ByteProgress, fail, line_writers, recover_first_option
from kafkalog_cli.cli.repair_errors import engine_call


@click.command(
    "compact",
    epilog="""\b
Examples:
  kafkalog compact /var/lib/kafka/orders-0
  kafkalog compact --now-ms 1700000000000 --format json orders-0 | jq .totals
  kafkalog compact --execute --backup-dir /srv/kafkalog-backups orders-0

\b
Applies the broker's log-cleaner rules (latest value per key, tombstones kept
until their delete horizon, aborted transactions removed, each producer's last
batch kept) to every segment below the first uncleanable offset (the active
segment is left alone unless --include-active). Memory is bounded by
--dedupe-buffer-bytes like the broker's cleaner; a segment whose offsets
overflow 32 bits is split first, as Kafka splits it. Offsets never change. Refuses
when the .txnindex files miss an aborted transaction the log holds (compaction
would then destroy committed data). A partition left by a crash (no
.kafka_cleanshutdown) is first recovered as the broker's start-up recovers it
('kafkalog recover --execute'; the dry run says what that changes);
--no-recover-first compacts the files as they are. Without --execute nothing
is written.

\b
Exit codes: 0 done, or nothing to do; 1 dry run that would change files (plan
printed); 2 usage error, unreadable input, corrupt batch, or refused repair
(locked log dir, a .txnindex missing an aborted transaction, overlapping segments or offsets going backwards).""",
)
@click.argument("partition_dir", type=click.Path(), metavar="PARTITION_DIR")
@click.option("--execute/--dry-run", default=False, help="Write the compacted segments, or only print the plan (the default).")
@click.option("--delete-retention-ms", type=click.IntRange(min=0), default=86_400_000, show_default=True,
              help="The topic's delete.retention.ms: tombstones and markers live this long after their first clean.")
@click.option("--min-compaction-lag-ms", type=click.IntRange(min=0), default=0, show_default=True,
              help="The topic's min.compaction.lag.ms: younger segments are not cleaned.")
@click.option("--now-ms", type=int, default=None, help="Clock for delete horizons and lag (default: now).")
@click.option("--include-active", is_flag=True, help="Also clean the active (last) segment; the broker never does.")
@click.option("--segment-bytes", type=click.IntRange(min=1), default=1 << 30, show_default=True,
              help="The topic's segment.bytes: cleaned segments are merged up to this size.")
@click.option("--segment-index-bytes", type=click.IntRange(min=12), default=10 * 1024 * 1024, show_default=True,
              help="The topic's segment.index.bytes (also limits merging).")
@click.option("--index-interval-bytes", type=click.IntRange(min=0), default=4096, show_default=True,
              help="The topic's index.interval.bytes, for the new indexes.")
@click.option("--dedupe-buffer-bytes", type=click.IntRange(min=1), default=128 * 1024 * 1024, show_default=True,
              help="The broker's log.cleaner.dedupe.buffer.size: memory of the offset map (24 bytes a key, filled to "
                   "90%). When the keys do not fit, only the part of the log that fits is cleaned, as in Kafka.")
@click.option("--io-buffer-bytes", type=click.IntRange(min=2), default=512 * 1024, show_default=True,
              help="The broker's log.cleaner.io.buffer.size: half of it is one read of the cleaner, and each read is "
                   "one append to the new segment (where its index entries go).")
@click.option("--max-message-bytes", type=click.IntRange(min=1), default=1_048_588, show_default=True,
              help="The topic's max.message.bytes: the cleaner's read buffer grows up to it for a larger batch, then "
                   "to the batch's size.")
@click.option("--message-max-bytes", type=click.IntRange(min=1), default=1_048_588, show_default=True,
              help="The broker's message.max.bytes: the cleaner's buffers grow to at least this much when they grow.")
@recover_first_option("compact", "cleaner", "compacted")
@click.option("--producer-id-expiration-ms", type=click.IntRange(min=0), default=86_400_000, show_default=True,
              help="The broker's producer.id.expiration.ms: a producer of the snapshot idle this long at --now-ms is "
                   "expired when the broker loads the log, and its last batch is not kept.")
@click.option("--backup-dir", type=click.Path(file_okay=False), default=None,
              help="Where replaced files go (default: <parent of log dir>/kafkalog-backups or $KAFKALOG_BACKUP_DIR).")
@click.option("--no-backup", is_flag=True, help="Delete the replaced files once the change is committed.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def compact(partition_dir: str, execute: bool, delete_retention_ms: int, min_compaction_lag_ms: int,
            now_ms: int | None, include_active: bool, segment_bytes: int, segment_index_bytes: int,
            index_interval_bytes: int, dedupe_buffer_bytes: int, io_buffer_bytes: int, max_message_bytes: int,
            message_max_bytes: int, recover_first: bool,
            producer_id_expiration_ms: int, backup_dir: str | None, no_backup: bool, fmt: str) -> None:
    """Compact a partition directory the way the broker's log cleaner would, losing nothing it would keep."""
    from kafkalog_cli.errors import KafkalogError, RepairRefused, UnreadableFileError
    from kafkalog_cli.ops import compact as cp
    from kafkalog_cli.render import repairs as rr

    out, err = line_writers()
    opts = cp.CompactOptions(delete_retention_ms=delete_retention_ms, min_compaction_lag_ms=min_compaction_lag_ms,
                             now_ms=now_ms, include_active=include_active, segment_bytes=segment_bytes,
                             segment_index_bytes=segment_index_bytes, index_interval_bytes=index_interval_bytes,
                             dedupe_buffer_bytes=dedupe_buffer_bytes, io_buffer_bytes=io_buffer_bytes,
                             producer_id_expiration_ms=producer_id_expiration_ms, recover_first=recover_first,
                             max_message_bytes=max_message_bytes, message_max_bytes=message_max_bytes)
    try:
        cp.check_dedupe_buffer(dedupe_buffer_bytes)
    except ValueError as exc:
        fail(str(exc), "give --dedupe-buffer-bytes 48 or more (the broker's default is 134217728)")
    def call() -> tuple:
        # a progress bar on stderr only when it is a terminal (pipes and logs never see it), as dump and verify-crc
        if sys.stderr.isatty():
            with ByteProgress("compacting") as (advance, set_total):
                return cp.run(partition_dir, opts, execute=execute, backup_dir=backup_dir, keep_backup=not no_backup,
                              progress=cp.Progress(advance, set_total))
        return cp.run(partition_dir, opts, execute=execute, backup_dir=backup_dir, keep_backup=not no_backup)

    plan, recovered, written = engine_call(call, [
        (RepairRefused, "nothing was changed; stop the broker (or the other kafkalog command) if it holds the log "
                        "directory, and run again"),
        (UnreadableFileError, "give a partition directory such as /var/lib/kafka/orders-0; nothing was changed"),
        (KafkalogError, "nothing was changed; 'kafkalog verify-crc PARTITION_DIR' maps the damage"),
    ], os_file=partition_dir)
    for line in rr.recovered_lines(recovered):
        err(line)
    actions = cp.plan_actions(plan)
    if fmt == "json":
        out(rr.json_text(rr.compact_doc(plan, actions, execute=execute, written=written)))
    else:
        for line in rr.compact_text(plan, actions, execute=execute, written=written, keep_backup=not no_backup):
            out(line)
    sys.stdout.flush()
    # the one dry-run rule of every repair command: 1 when --execute would change something, 0 when nothing to do
    sys.exit(EXIT_PROBLEMS if not execute and (actions or plan.load_first) else EXIT_CLEAN)
