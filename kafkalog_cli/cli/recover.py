"""``kafkalog recover`` and ``kafkalog salvage``: what the broker's loader will do at restart, and a way to lose
less (dry run by default; both write only through the safety framework)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

import click

from kafkalog_cli.cli.common import EXIT_CLEAN, EXIT_PROBLEMS, assumed_kafka_version, kafka_version_option, line_writers
from kafkalog_cli.cli.repair_errors import engine_call

_COMMON_EXIT = """\b
Exit codes: dry run 0 when nothing would change, 1 when something would
change; --execute 0 when done; 2 usage error, unreadable input, or refused
(locked log dir, a state the broker would not load, or an inconsistent result)."""
_VERBOSE_HELP = ("Over several partitions (a log dir), print every partition's block before the summary "
                 "(--format json always has them).")
T = TypeVar("T")


def _errors(fn: Callable[[], T]) -> T:
    """Run the engine; every typed error becomes one located line and exit 2 (nothing written)."""
    from kafkalog_cli.errors import KafkalogError, RepairRefused, UnreadableFileError

    return engine_call(fn, [
        (RepairRefused, "nothing was changed"),
        (UnreadableFileError, "give a partition directory (e.g. /var/lib/kafka/orders-0) or a log directory"),
        (KafkalogError, "nothing was changed; run 'kafkalog verify-crc' on the partition to see the damage"),
        (ValueError, "kafkalog recover --help lists the accepted values"),
    ])


@click.command(
    "recover",
    epilog="""\b
Examples:
  kafkalog recover /var/lib/kafka/orders-0
  kafkalog recover --kafka-version 3.6 --format json /var/lib/kafka
  kafkalog recover --execute --backup-dir /srv/kafkalog-backups orders-0

\b
Shows, per partition, exactly what the broker's log loader does at its next
start: leftovers (.deleted/.cleaned/.swap), clean or unclean shutdown, the
recovery point, per recovered segment where the log is cut and what is lost,
every later segment deleted, index/txnindex rebuilds, producer snapshots
deleted and written, leader-epoch truncation, the resulting log start and end
offsets. --execute does exactly that offline (removed files are backed up).
""" + _COMMON_EXIT,
)
@click.argument("paths", nargs=-1, required=True, type=click.Path(), metavar="PATH...")
@kafka_version_option("Model the loader")
@click.option("--execute", is_flag=True, help="Do it now, offline (default: dry run).")
@click.option("--backup-dir", type=click.Path(file_okay=False), default=None,
              help="Where removed and replaced files go (default: <parent of log dir>/kafkalog-backups).")
@click.option("--now-ms", type=int, default=None, help="Clock for producer-id expiry when snapshots are loaded.")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="A topic config the loader reads (index.interval.bytes, segment.index.bytes; a broker has them "
                   "from metadata); repeatable, other keys are ignored. Default: Kafka's defaults (4096, 10485760).")
@click.option("--recovery-point", type=click.IntRange(min=0), default=None, metavar="OFFSET",
              help="Model an unclean start whose recovery-point checkpoint is OFFSET (default: the log dir's "
                   "checkpoint): the broker only recovers segments from the one holding it.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--verbose", "-v", is_flag=True, help=_VERBOSE_HELP)
def recover(paths: tuple[str, ...], kafka_version: str | None, execute: bool, backup_dir: str | None, now_ms: int | None,
            configs: tuple[str, ...], recovery_point: int | None, fmt: str, verbose: bool) -> None:
    """Show (or do) what the broker's loader will do to a partition at its next start."""
    from kafkalog_cli.broker import loader as ld
    from kafkalog_cli.ops import recover as rc
    from kafkalog_cli.render import repairs as rr

    out, err = line_writers()
    kafka_version = assumed_kafka_version(kafka_version, paths=list(paths))
    results = _errors(lambda: rc.run(list(paths), kafka_version, execute=execute, backup_dir=backup_dir,
                                     now_ms=now_ms, config=ld.TopicConfig.from_pairs(configs),
                                     recovery_point=recovery_point))
    for line in rr.recovered_lines(line for _plan, recovered, _used in results for line in recovered):
        err(line)
    plans = [plan for plan, _recovered, _used in results]
    if fmt == "json":
        out(rr.json_docs([rr.recover_doc(plan, execute=execute, used=used) for plan, _recovered, used in results]))
    else:
        for line in rr.recover_lines([(plan, used) for plan, _recovered, used in results], execute=execute,
                                     verbose=verbose):
            out(line)
    sys.stdout.flush()
    if any(plan.fatal for plan in plans):
        sys.exit(2)
    changed = any(rc.changes_data(plan) for plan in plans)
    unrepaired = any(plan.unrepaired for plan in plans)
    sys.exit(EXIT_PROBLEMS if (changed and not execute) or unrepaired else EXIT_CLEAN)


@click.command(
    "salvage",
    epilog="""\b
Examples:
  kafkalog salvage /var/lib/kafka/orders-0
  kafkalog salvage --execute --backup-dir /srv/kafkalog-backups orders-0

\b
Keeps every intact batch and cuts out only the corrupt byte ranges that
verify-crc's resync map finds (offset gaps are legal), then rebuilds indexes,
.txnindex, producer snapshots and leader-epoch-checkpoint so that the broker
loads the partition without truncating. The plan compares what salvage loses
with what the broker's own recovery would lose. Refuses (nothing written) when
the result would be inconsistent, e.g. a cut range whose readable header is the
COMMIT/ABORT marker of an open transaction (--allow-lost-marker), or unreadable
bytes inside an open transaction (--allow-unknown-in-transaction).
""" + _COMMON_EXIT,
)
@click.argument("paths", nargs=-1, required=True, type=click.Path(), metavar="PATH...")
@kafka_version_option("Write for the loader")
@click.option("--execute", is_flag=True, help="Write the salvaged partition (default: dry run).")
@click.option("--backup-dir", type=click.Path(file_okay=False), default=None,
              help="Where replaced files go (default: <parent of log dir>/kafkalog-backups).")
@click.option("--now-ms", type=int, default=None, help="Clock for producer-id expiry when snapshots are loaded.")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="A topic config the rebuilt indexes follow and the loader reads (index.interval.bytes, "
                   "segment.index.bytes); repeatable, other keys are ignored. Default: Kafka's defaults (4096, "
                   "10485760).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--allow-lost-marker", is_flag=True,
              help="Salvage even when a cut holds the COMMIT/ABORT marker of an open transaction (its header is "
                   "readable); the plan names the transaction and the abort command.")
@click.option("--allow-unknown-in-transaction", is_flag=True,
              help="Salvage even when unreadable bytes lie inside an open transaction (they may have held its "
                   "marker); the plan warns which transaction and its consumers are at risk.")
@click.option("--verbose", "-v", is_flag=True, help=_VERBOSE_HELP)
def salvage(paths: tuple[str, ...], kafka_version: str | None, execute: bool, backup_dir: str | None, now_ms: int | None,
            configs: tuple[str, ...], fmt: str, allow_lost_marker: bool, allow_unknown_in_transaction: bool,
            verbose: bool) -> None:
    """Keep every intact batch; cut out only the corrupt ranges; rebuild what the loader needs."""
    from kafkalog_cli.broker import loader as ld
    from kafkalog_cli.ops import salvage as sv
    from kafkalog_cli.render import repairs as rr

    out, err = line_writers()
    kafka_version = assumed_kafka_version(kafka_version, paths=list(paths))
    results = _errors(lambda: sv.run(list(paths), kafka_version=kafka_version, execute=execute,
                                     backup_dir=backup_dir, now_ms=now_ms, allow_lost_marker=allow_lost_marker,
                                     allow_unknown_in_transaction=allow_unknown_in_transaction,
                                     config=ld.TopicConfig.from_pairs(configs)))
    for line in rr.recovered_lines(line for _plan, recovered, _written in results for line in recovered):
        err(line)
    plans = [plan for plan, _recovered, _written in results]
    if fmt == "json":
        out(rr.json_docs([rr.salvage_doc(plan, execute=execute, written=written)
                          for plan, _recovered, written in results]))
    else:
        for line in rr.salvage_lines([(plan, written) for plan, _recovered, written in results], execute=execute,
                                     verbose=verbose):
            out(line)
    sys.stdout.flush()
    changed = any(plan.has_changes for plan in plans)
    sys.exit(EXIT_PROBLEMS if changed and not execute else EXIT_CLEAN)
