"""``locate-group``, ``locate-txn`` and ``transactions``: questions about Kafka's internal topics.

Thin click wrappers over ``kafkalog_cli.internal``: the engine computes, this module prints. Bad input gives one
line on stderr and exit 2, never a traceback.
"""

from __future__ import annotations

import json
import sys

import click

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.internal.locate import DEFAULT_PARTITIONS, locate

_FORMAT = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
                       help="Output format.")
_PARTITIONS = click.option("--partitions", type=click.IntRange(min=1), default=DEFAULT_PARTITIONS, show_default=True,
                           help="Partition count of the internal topic (offsets/transaction.state.log.num.partitions).")


def _fail(message: str, code: int = 2) -> None:
    click.echo(f"kafkalog: {message}", err=True)
    sys.exit(code)


def _locate(ident: str, kind: str, partitions: int, fmt: str) -> None:
    if ident == "":
        _fail("the id must not be empty")
    info = locate(ident, kind, partitions)
    if fmt == "json":
        click.echo(json.dumps(info, ensure_ascii=False))
    else:
        click.echo(f"{info['topic']} partition {info['partition']} (directory {info['directory']}, "
                   f"hashCode {info['hashCode']}, {partitions} partitions)")


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
@click.argument("path", type=click.Path())
@_FORMAT
def transactions(path: str, fmt: str) -> None:
    """Find open (hanging) transactions in a partition directory or a .log segment.

    A transaction is open when a producer wrote transactional data and no COMMIT/ABORT marker followed.
    Exit status: 0 none open, 1 open transactions found, 2 unreadable path.

    \b
    Example:
      kafkalog transactions /var/lib/kafka/orders-0
      kafkalog transactions /var/lib/kafka/orders-0/00000000000000000000.log --format json
    """
    from kafkalog_cli.internal.transactions import find_open, segment_files

    try:
        files = segment_files(path)
        found, warnings = find_open(files)
    except KafkalogError as exc:
        _fail(exc.describe())
        return
    for w in warnings:
        click.echo(f"kafkalog: warning: {w}", err=True)
    if fmt == "json":
        click.echo(json.dumps({"path": path, "segments": len(files), "open": [t.as_dict() for t in found]}))
    elif not found:
        click.echo(f"No open transactions in {path} ({len(files)} segment(s)).")
    else:
        for t in found:
            click.echo(f"producerId: {t.producer_id} producerEpoch: {t.producer_epoch} firstOffset: {t.first_offset} "
                       f"lastOffset: {t.last_offset} lastTimestamp: {t.last_timestamp} batches: {t.batches} "
                       f"segment: {t.segment}")
    sys.exit(1 if found else 0)
