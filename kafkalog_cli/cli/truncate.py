"""``kafkalog truncate-to-epoch``: cut a partition back to the end of a leader epoch (dry run by default)."""

from __future__ import annotations

import sys

import click

from kafkalog_cli.cli.common import EXIT_CLEAN, EXIT_PROBLEMS, fail, line_writers, recover_first_option
from kafkalog_cli.cli.repair_errors import WRITE_FAILED_HINT, engine_call


@click.command(
    "truncate-to-epoch",
    epilog="""\b
Examples:
  kafkalog truncate-to-epoch /var/lib/kafka/orders-0 7
  kafkalog truncate-to-epoch --to-offset 123456 orders-0
  kafkalog truncate-to-epoch --execute --backup-dir /srv/kafkalog-backups orders-0 7

\b
The end offset of EPOCH is what the leader-epoch cache answers (endOffsetFor:
the latest epoch ends at the log end offset; an unknown epoch ends where the
next higher epoch starts). The whole batch holding the target goes; as the
broker does, the leader epochs are truncated and the producer snapshot written
at the target itself. With --now-ms, producers idle longer than
--producer-id-expiration-ms are left out of that snapshot, as the broker's
reload drops them. The plan lists every offset that would be lost, per segment.
A partition left by a crash (no .kafka_cleanshutdown) is first recovered as the
broker's start-up recovers it ('kafkalog recover --execute'; the dry run says
what that changes); --no-recover-first truncates the files as they are.
Without --execute nothing is written; removed files go to the backup directory.

\b
Exit codes: 0 done, or nothing to do; 1 dry run that would change files (plan
printed); 2 usage error, unreadable input, unknown epoch, or refused repair
(locked log dir).""",
)
@click.argument("partition_dir", type=click.Path(), metavar="PARTITION_DIR")
@click.argument("epoch", type=int, required=False, metavar="EPOCH")
@click.option("--to-offset", type=click.IntRange(min=0), default=None,
              help="Truncate to this offset directly instead of an epoch's end.")
@click.option("--execute/--dry-run", default=False, help="Truncate, or only print the plan (the default).")
@click.option("--now-ms", type=int, default=None,
              help="The broker's clock at the truncation: producers of the reloaded snapshot idle for "
                   "--producer-id-expiration-ms are expired, as the broker's reload expires them (default: no clock, "
                   "every producer is kept).")
@click.option("--producer-id-expiration-ms", type=click.IntRange(min=0), default=86_400_000, show_default=True,
              help="The broker's producer.id.expiration.ms (used with --now-ms).")
@recover_first_option("truncate", "follower", "truncated")
@click.option("--index-interval-bytes", type=click.IntRange(min=0), default=4096, show_default=True,
              help="The topic's index.interval.bytes, for the indexes the broker's start-up rebuilds first (a "
                   "partition left by a crash is recovered before it is truncated, as the broker does).")
@click.option("--segment-index-bytes", type=click.IntRange(min=4), default=10 * 1024 * 1024, show_default=True,
              help="The topic's segment.index.bytes (the active segment's index preallocation at that start-up).")
@click.option("--backup-dir", type=click.Path(file_okay=False), default=None,
              help="Where removed and replaced files go (default: <parent of log dir>/kafkalog-backups).")
@click.option("--no-backup", is_flag=True, help="Delete removed files once the change is committed.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def truncate_to_epoch(partition_dir: str, epoch: int | None, to_offset: int | None, execute: bool,
                      now_ms: int | None, producer_id_expiration_ms: int, recover_first: bool,
                      index_interval_bytes: int,
                      segment_index_bytes: int, backup_dir: str | None, no_backup: bool, fmt: str) -> None:
    """Truncate a partition to the end offset of leader epoch EPOCH, as a follower would."""
    from kafkalog_cli.broker.loader import TopicConfig
    from kafkalog_cli.errors import KafkalogError, RepairRefused, UnreadableFileError, WriteFailedError
    from kafkalog_cli.ops import truncate as tr
    from kafkalog_cli.render import repairs as rr

    out, err = line_writers()
    if (epoch is None) == (to_offset is None):
        fail("give exactly one of EPOCH or --to-offset", "e.g. kafkalog truncate-to-epoch orders-0 7")
    plan, recovered, written = engine_call(
        lambda: tr.run(partition_dir, epoch, to_offset, execute=execute, backup_dir=backup_dir,
                       keep_backup=not no_backup, now_ms=now_ms,
                       producer_id_expiration_ms=producer_id_expiration_ms,
                       config=TopicConfig(index_interval_bytes, segment_index_bytes, producer_id_expiration_ms),
                       recover_first=recover_first), [
            (RepairRefused, "nothing was changed; stop the broker or pick another epoch / --to-offset"),
            (WriteFailedError, WRITE_FAILED_HINT),
            (UnreadableFileError, "give a partition directory such as /var/lib/kafka/orders-0; nothing was changed"),
            (KafkalogError, "nothing was changed; run 'kafkalog dump' on the file to see the damage"),
        ], os_file=partition_dir)
    for line in rr.recovered_lines(recovered):
        err(line)
    if fmt == "json":
        out(rr.json_text(rr.truncate_doc(plan, execute=execute, written=written)))
    else:
        for line in rr.truncate_text(plan, epoch=epoch, execute=execute, written=written, keep_backup=not no_backup):
            out(line)
    sys.stdout.flush()
    # the one dry-run rule of every repair command: 1 when --execute would change something, 0 when nothing to do
    sys.exit(EXIT_PROBLEMS if not execute and plan.has_changes else EXIT_CLEAN)
