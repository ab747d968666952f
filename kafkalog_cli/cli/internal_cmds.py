"""``locate-group``, ``locate-txn`` and ``transactions``: questions about Kafka's internal topics.

Thin click wrappers over ``kafkalog_cli.internal_topics``: the engine computes, this module prints. Bad input gives one
line on stderr and exit 2, never a traceback.
"""

from __future__ import annotations

import json
import sys

import click

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.internal_topics.locate import DEFAULT_PARTITIONS, locate
from kafkalog_cli.render.jsondoc import versioned

_FORMAT = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
                       help="Output format.")
_PARTITIONS = click.option("--partitions", type=click.IntRange(min=1), default=DEFAULT_PARTITIONS, show_default=True,
                           help="Partition count of the internal topic (offsets/transaction.state.log.num.partitions).")


_HINT = ("give a __transaction_state-<n> or data partition directory, a log directory, or one .log segment; "
         "kafkalog verify-crc checks its files")


def _fail(message: str, hint: str | None = _HINT) -> None:
    """The project's one error format (``kafkalog: error:`` + ``hint:``), exit 2."""
    from kafkalog_cli.cli.common import fail

    fail(message, hint)


def _locate(ident: str, kind: str, partitions: int, fmt: str) -> None:
    if ident == "":
        _fail("the id must not be empty", "give the group id or transactional.id exactly as the clients use it")
    info = locate(ident, kind, partitions)
    if fmt == "json":
        click.echo(json.dumps(versioned(info), ensure_ascii=False))
    else:
        from kafkalog_cli.render.internal import locate_line

        click.echo(locate_line(info, partitions))


@click.command("locate-group")
@click.argument("group")
@_PARTITIONS
@_FORMAT
def locate_group(group: str, partitions: int, fmt: str) -> None:
    """Print the __consumer_offsets partition that stores GROUP's offsets and metadata.

    Kafka's rule: Utils.abs(group.hashCode()) % partitions, with Java's String.hashCode.

    \b
    Example:
      kafkalog locate-group my-consumer-group
      kafkalog locate-group my-consumer-group --partitions 100 --format json
    """
    _locate(group, "group", partitions, fmt)


@click.command("locate-txn")
@click.argument("txn_id", metavar="TXN_ID")
@_PARTITIONS
@_FORMAT
def locate_txn(txn_id: str, partitions: int, fmt: str) -> None:
    """Print the __transaction_state partition that stores TXN_ID's transaction metadata.

    Kafka's rule: Utils.abs(transactionalId.hashCode()) % partitions, with Java's String.hashCode.

    \b
    Example:
      kafkalog locate-txn orders-producer-1
      kafkalog locate-txn orders-producer-1 --partitions 50 --format json
    """
    _locate(txn_id, "txn", partitions, fmt)


@click.command("transactions")
@click.argument("paths", nargs=-1, required=True, type=click.Path(), metavar="LOGDIR...")
@_PARTITIONS
@click.option("--bootstrap-server", "bootstrap", default="<broker:9092>", show_default=True,
              help="Put into the kafka-transactions.sh abort commands printed for hanging transactions.")
@click.option("--now-ms", type=int, default=None, help="The time the ages are computed at (default: now).")
@_FORMAT
def transactions(paths: tuple[str, ...], partitions: int, bootstrap: str, now_ms: int | None, fmt: str) -> None:
    """Find open transactions in log dirs and say which are hanging, and how to abort them.

    Each LOGDIR is a broker log dir (several: one per broker), a partition directory, or one .log segment. The
    producer state is the broker's (newest producer snapshot, then the log); each open transaction is classified
    against the __transaction_state partitions found: ongoing, hanging, coordinator-missing (that partition is not
    here) or marker-retained-elsewhere (another copy of the partition has its marker). Per partition: the last
    stable offset and its lag; for hanging transactions the KIP-664 abort command and the consumer groups whose
    committed offset has reached the last stable offset.

    Exit status: 0 nothing to act on, 1 a hanging or coordinator-missing transaction (for a single .log file: any
    open transaction), 2 unreadable path.

    \b
    Example:
      kafkalog transactions /var/lib/kafka/data
      kafkalog transactions broker1/data broker2/data broker3/data --format json
      kafkalog transactions /var/lib/kafka/data/orders-0
    """
    import os

    if len(paths) == 1 and os.path.isfile(paths[0]):
        from kafkalog_cli.storage import layout

        name = os.path.basename(paths[0])
        if not name.endswith(".log"):
            _fail(f"{paths[0]}: not a .log segment ({layout.classify(name)} file): transactions reads a log dir, a "
                  "partition directory or one .log segment")
            return
        strays = layout.stray_logs([name])
        for st in strays:  # read as asked, then the verdict: the broker never reads it (verify-crc's stray-log)
            click.echo(f"kafkalog: note: {paths[0]}: not a segment name: {st.fate}", err=True)
        _transactions_file(paths[0], fmt, stray=bool(strays))
        return
    from kafkalog_cli.internal_topics.transactions import analyse

    try:
        report = analyse(list(paths), txn_partitions=partitions, now_ms=now_ms, bootstrap=bootstrap)
    except KafkalogError as exc:
        _fail(exc.describe())
        return
    from kafkalog_cli.storage.paths import empty_partition

    empty = [p for p in paths if empty_partition(p)]
    if not report.partitions and not report.coordinator.partitions_present and len(empty) == len(paths):
        for p in empty:
            click.echo(f"kafkalog: note: {p}: no segment in this partition directory: an empty log (no transaction)",
                       err=True)
        click.echo(f"No open transactions in {len(empty)} empty partition(s).")
        sys.exit(0)
    if not report.partitions and not report.coordinator.partitions_present:
        # nothing to look at is not an all-clear (issue 27)
        _fail(f"no partition directories found in {', '.join(paths)}: expected a broker log dir (topic-N "
              "directories holding .log segments), a folder of log dirs (one per broker), a partition directory or "
              "one .log segment")
        return
    for w in report.warnings:
        click.echo(f"kafkalog: warning: {w}", err=True)
    findings = report.findings
    problems = [t for t in findings if t.classification in ("hanging", "coordinator-missing")]
    if fmt == "json":
        counts: dict[str, int] = {}
        for t in findings:
            counts[t.classification] = counts.get(t.classification, 0) + 1
        view = report.coordinator
        click.echo(json.dumps(versioned({
            "paths": list(paths),
            "path": paths[0] if len(paths) == 1 else None,
            "open": [t.as_dict() for t in findings],
            "partitions": [p.as_dict() for p in report.partitions],
            "coordinator": {"transaction_state_partitions": sorted(view.partitions_present),
                            "transaction_state_partition_count": partitions,
                            "transactional_ids": {k: (None if v is None else v.as_dict())
                                                  for k, v in sorted(view.latest.items())}},
            "counts": counts,
        })))
    else:
        from kafkalog_cli.render.transactions import transactions_lines

        for line in transactions_lines(report, partitions):
            click.echo(line)
    sys.exit(1 if problems else 0)


def _transactions_file(path: str, fmt: str, stray: bool = False) -> None:
    """One .log segment: the log-only rule (no producer snapshot, no coordinator)."""
    from kafkalog_cli.internal_topics.transactions import find_open, segment_files

    try:
        files = segment_files(path)
        found, warnings = find_open(files)
    except KafkalogError as exc:
        _fail(exc.describe())
        return
    for w in warnings:
        click.echo(f"kafkalog: warning: {w}", err=True)
    if fmt == "json":
        click.echo(json.dumps(versioned({"path": path, "segments": len(files), "open": [t.as_dict() for t in found]})))
    else:
        from kafkalog_cli.render.internal import segment_open_lines

        for line in segment_open_lines(path, len(files), found):
            click.echo(line)
    sys.exit(1 if found or stray else 0)
