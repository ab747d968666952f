"""``kafkalog metadata`` and ``kafkalog inventory``: options in, engine call, renderer, exit code."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from kafkalog_cli.cli.common import EXIT_CLEAN, EXIT_PROBLEMS, EXIT_USAGE, fail
from kafkalog_cli.errors import KafkalogError

_FORMAT = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
                       help="text for people, json (one document) for programs.")


def _point(text: str | None):  # noqa: ANN202
    """A plain integer is an offset; anything else a time (ISO-8601, epoch with unit, -1h, now)."""
    from kafkalog_cli.ops.metadata import END, Point

    if text is None:
        return END
    t = text.strip()
    if t.isdigit():
        return Point(offset=int(t))
    from kafkalog_cli.cli.timespec import parse_time

    try:
        return Point(time_ms=parse_time(t).ms)
    except ValueError as exc:
        raise click.BadParameter(f"{exc}; or a plain integer offset") from None


def _out(line: str) -> None:
    click.echo(line)


@click.command("metadata")
@click.argument("path", type=click.Path(), metavar="LOGDIR|METADATA_DIR")
@click.option("--at", "at", default=None, metavar="OFFSET|TIME",
              help="The point: a plain integer is an offset (every record at or below it), anything else a time "
                   "(2024-06-15T10:20:00Z, 1718446800000ms, -1h, now: every record at or before it). Default: the end.")
@click.option("--diff", "diff", nargs=2, default=None, metavar="A B", help="What changed between two points.")
@click.option("--history", "history", default=None, metavar="TOPIC[-P]",
              help="The timeline of a topic's or partition's leader, ISR, epochs and directories.")
@click.option("--partitions", is_flag=True, help="List every topic and partition (default: the summary only).")
@click.option("--topic", default=None, help="List this topic's partitions only.")
@click.option("--check-snapshots", is_flag=True,
              help="Replay the log to each snapshot's offset and compare with the snapshot's content.")
@_FORMAT
def metadata(path: str, at: str | None, diff: tuple[str, str] | None, history: str | None, partitions: bool,
             topic: str | None, check_snapshots: bool, fmt: str) -> None:
    """The KRaft cluster image at any point of __cluster_metadata: topics with ids and configs, partitions
    (replicas, ISR, ELR, leader, epochs, directories), brokers, features, quorum voters.

    The image is loaded as a KRaft node does: the newest snapshot at or below the point, then the log records
    after it, under Kafka's rules per record type.

    Exit status: 0 clean, 1 problems (damaged or undecodable records, records Kafka's replay refuses, a gap between
    snapshot and log; with --check-snapshots a snapshot that differs from the replayed log), 2 unreadable path.

    \b
    Example:
      kafkalog metadata /var/lib/kafka/meta
      kafkalog metadata /var/lib/kafka/meta/__cluster_metadata-0 --at 2024-06-15T10:20:00Z --partitions
      kafkalog metadata /var/lib/kafka/meta --diff 1200 -1h
      kafkalog metadata /var/lib/kafka/meta --history orders-3
    """
    from kafkalog_cli.ops import metadata as ops
    from kafkalog_cli.render import metadata as render

    try:
        directory = ops.metadata_dir(path)
        if check_snapshots:
            code = EXIT_CLEAN
            results = ops.check_snapshots(directory)
            docs: list[dict[str, Any]] = []
            for snap, changes in results:
                name = os.path.basename(snap.path)
                if changes is None:
                    docs.append({"snapshot": name, "result": "not checked: the log does not reach it from offset 0"})
                elif changes:
                    code = EXIT_PROBLEMS
                    docs.append({"snapshot": name, "result": "differs", "changes": [c.as_dict() for c in changes]})
                else:
                    docs.append({"snapshot": name, "result": "equal"})
            if fmt == "json":
                click.echo(render.snapshot_checks_json(docs))
            else:
                render.snapshot_checks_text(docs, _out)
            sys.exit(code)
        if diff is not None:
            la, lb, changes = ops.diff_points(directory, _point(diff[0]), _point(diff[1]))
            if fmt == "json":
                click.echo(render.diff_json(la, lb, changes))
            else:
                render.diff_text(la, lb, changes, _out)
            sys.exit(EXIT_CLEAN if la.clean and lb.clean else EXIT_PROBLEMS)
        if history is not None:
            loaded, events, name, part = ops.history(directory, history, _point(at))
            if fmt == "json":
                click.echo(render.history_json(loaded, events))
            else:
                render.history_text(loaded, events, name, part, _out)
            sys.exit(EXIT_CLEAN if loaded.clean else EXIT_PROBLEMS)
        loaded = ops.load(directory, _point(at))
    except KafkalogError as exc:
        fail(exc.describe(), exc.hint)
        return
    if fmt == "json":
        click.echo(render.image_json(loaded))
    else:
        render.summary(loaded, _out, partitions=partitions, topic=topic)
    sys.exit(EXIT_CLEAN if loaded.clean else EXIT_PROBLEMS)


@click.command("inventory")
@click.argument("paths", nargs=-1, required=True, type=click.Path(), metavar="LOGDIR...")
@click.option("--metadata", "metadata_path", default=None, type=click.Path(), metavar="DIR",
              help="A controller's metadata.log.dir (or its __cluster_metadata-0); default: a LOGDIR that holds "
                   "__cluster_metadata-0 (a combined node), else the log dirs are checked against each other only.")
@click.option("--at", "at", default=None, metavar="OFFSET|TIME", help="Check against the image at this point.")
@click.option("--node-id", type=int, default=None, help="The broker's node.id (default: from meta.properties).")
@click.option("--all", "show_all", is_flag=True, help="Also list the partition directories that are as expected.")
@_FORMAT
def inventory(paths: tuple[str, ...], metadata_path: str | None, at: str | None, node_id: int | None,
              show_all: bool, fmt: str) -> None:
    """Check every partition directory of ONE broker's log dirs against the cluster's KRaft metadata.

    Classes: expected, missing (assigned here, absent), stray-deleted / stray-unassigned, topic-id-mismatch
    (recreated topic), missing-partition-metadata, wrong-directory (JBOD directory.id), duplicate, leftover
    -delete/-stray/-future, and every meta.properties (cluster.id, node.id, directory.id, version) against the
    others and the quorum's. Each finding says what the broker does at start-up and the next step.

    Exit status: 0 everything as expected, 1 findings, 2 unreadable path.

    \b
    Example:
      kafkalog inventory /data/kafka-1 /data/kafka-2 --metadata /var/lib/kafka/meta
      kafkalog inventory /var/lib/kafka/combined
    """
    from kafkalog_cli.ops import inventory as inv_ops
    from kafkalog_cli.ops import metadata as ops
    from kafkalog_cli.render import metadata as render
    from kafkalog_cli.storage.meta_properties import read_meta_properties

    try:
        mdir = ops.metadata_dir(metadata_path) if metadata_path else ops.find_metadata_dir(list(paths))
        image = None
        quorum_cluster = None
        loaded = None
        if mdir is not None:
            loaded = ops.load(mdir, _point(at))
            image = loaded.image
            props = read_meta_properties(os.path.dirname(os.path.abspath(mdir)))
            quorum_cluster = (props or {}).get("cluster.id")
        report = inv_ops.take(list(paths), image, metadata_source=mdir, node_id=node_id,
                              quorum_cluster=quorum_cluster)
    except KafkalogError as exc:
        fail(exc.describe(), exc.hint)
        return
    if loaded is not None and not loaded.clean:
        report.notes.append(f"the metadata image has problems ({len(loaded.findings)} findings, "
                            f"{len(loaded.problems)} refused records): run kafkalog metadata {mdir}")
    if fmt == "json":
        click.echo(render.inventory_json(report))
    else:
        render.inventory_text(report, _out, verbose=show_all)
    sys.exit(report.exit_code())


__all__ = ["metadata", "inventory", "EXIT_USAGE"]
