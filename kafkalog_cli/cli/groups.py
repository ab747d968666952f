"""``group-history``: a consumer group's (or a Kafka Connect source connector's) committed offsets through time.

Thin click wrapper over ``ops/group_history.py`` (and ``ops/connect_history.py`` for ``--connect``): the engine
computes, ``render/group_history.py`` words it, this module chooses the exit code and writes the files asked for.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Protocol, TypeVar

import click

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.internal_topics.locate import DEFAULT_PARTITIONS, partition_for
from kafkalog_cli.render.jsondoc import versioned


class _Warns(Protocol):
    warnings: list[str]


T = TypeVar("T", bound=_Warns)
_HINT = ("give broker log dirs (one per broker: every copy is read), __consumer_offsets-N partition directories, or a "
         "folder of log dirs")


def _fail(message: str, hint: str | None = _HINT) -> None:
    from kafkalog_cli.cli.common import fail

    fail(message, hint)


def _engine(call: Callable[[], T]) -> T:
    """Run the engine: a typed error is the one-line failure (exit 2); its warnings go to stderr."""
    try:
        result = call()
    except KafkalogError as exc:
        _fail(exc.describe())
        raise AssertionError("unreachable") from None
    for w in result.warnings:
        click.echo(f"kafkalog: warning: {w}", err=True)
    return result


def _write(path: str, text: str) -> None:
    """Write an output file whole (a temporary name, then a rename: never half a plan)."""
    tmp = f"{path}.kafkalog-tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        _fail(f"{path}: cannot write: {exc.strerror or exc}", "choose a writable path")


@click.command("group-history")
@click.argument("group")
@click.argument("paths", nargs=-1, type=click.Path(), metavar="LOGDIR...")
@click.option("--all-groups", is_flag=True, help="Every group (then GROUP is left out: every argument is a LOGDIR).")
@click.option("--topic", default=None, help="Only this data topic's partitions.")
@click.option("--at", "at_text", default=None, metavar="TIME",
              help="Also print each partition's committed offset at TIME (epoch s/ms, ISO-8601, -1h, now).")
@click.option("--emit-reset", "emit_reset", default=None, metavar="FILE", type=click.Path(dir_okay=False),
              help="With --at: write a kafka-consumer-groups --reset-offsets --from-file CSV that puts the group back.")
@click.option("--connect", "connect", is_flag=True,
              help="GROUP is a Kafka Connect source connector: read the Connect offsets topic instead.")
@click.option("--offsets-topic", "offsets_topic", default=None, metavar="NAME",
              help="With --connect: the worker's offset.storage.topic (default: topics named *connect-offsets*).")
@click.option("--emit-connect-patch", "emit_patch", default=None, metavar="FILE", type=click.Path(dir_okay=False),
              help="With --connect --at: write the KIP-875 PATCH /connectors/GROUP/offsets body.")
@click.option("--partitions", "offsets_partitions", type=click.IntRange(min=1), default=DEFAULT_PARTITIONS,
              show_default=True, help="Partition count of __consumer_offsets (offsets.topic.num.partitions).")
@click.option("--verbose", is_flag=True, help="Every group event and forward move, not only the last 20 / the unexplained.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Output format.")
def group_history(group: str, paths: tuple[str, ...], all_groups: bool, topic: str | None, at_text: str | None,
                  emit_reset: str | None, connect: bool, offsets_topic: str | None, emit_patch: str | None,
                  offsets_partitions: int, verbose: bool, fmt: str) -> None:
    """The committed offsets of GROUP per partition over time, from every copy of __consumer_offsets given.

    Each LOGDIR is a broker log dir (give one per broker: other replicas, uncleaned tails and .deleted leftovers
    add history), a __consumer_offsets-N directory, or a folder of log dirs. Per partition: commit ranges (offset,
    leader epoch, metadata, times, the record's log offset and file), resets (backward jumps), the largest forward
    moves (checked against the data partition's log when its directory is among the LOGDIRs), deletions and
    expiries (tombstones), and "unknown: compacted before T" where the log no longer knows. Per group: generations
    and members (classic), group and member epochs (KIP-848).

    --at TIME prints each partition's committed offset at TIME; --emit-reset FILE writes it as the CSV that
    `kafka-consumer-groups --reset-offsets --from-file FILE --group GROUP --execute` reads. --connect reads a
    Kafka Connect offsets topic instead (GROUP = the connector name) and --emit-connect-patch FILE writes the
    body of `PATCH /connectors/GROUP/offsets` (KIP-875).

    Exit status: 0 a steady history, 1 resets, unexplained jumps, deletions, copy conflicts, or no record of the
    group, 2 unreadable path or usage error.

    \b
    Example:
      kafkalog group-history orders-app broker1/data broker2/data broker3/data
      kafkalog group-history orders-app /var/lib/kafka/data --at 2024-06-15T10:00:00Z --emit-reset reset.csv
      kafkalog group-history --connect my-source /var/lib/kafka/data --at -2h --emit-connect-patch patch.json
    """
    name: str | None = group
    if all_groups:
        name, dirs = None, [group, *paths]
    else:
        dirs = list(paths)
        if not dirs:
            _fail("give GROUP and at least one LOGDIR (or --all-groups and LOGDIRs)",
                  "kafkalog group-history GROUP LOGDIR... (kafkalog locate-group GROUP names its partition)")
            return
        if group == "":
            _fail("the group id must not be empty", "give the group id exactly as the clients use it")
            return
    _run(name, dirs, topic, at_text, emit_reset, connect, offsets_topic, emit_patch, offsets_partitions, verbose, fmt)


def _run(group: str | None, paths: list[str], topic: str | None, at_text: str | None, emit_reset: str | None,
         connect: bool, offsets_topic: str | None, emit_patch: str | None, offsets_partitions: int, verbose: bool,
         fmt: str) -> None:
    at_ms = None
    if at_text is not None:
        from kafkalog_cli.cli.timespec import parse_time

        try:
            spec = parse_time(at_text)
        except ValueError as exc:
            _fail(f"--at: {exc}", None)
            return
        at_ms = spec.ms
        click.echo(f"kafkalog: {spec.echo(at_text)}", err=True)
    if emit_reset is not None and (at_ms is None or connect):
        _fail("--emit-reset needs --at TIME (the positions to go back to), and is for consumer groups (not --connect)",
              "kafkalog group-history GROUP LOGDIR... --at TIME --emit-reset reset.csv")
        return
    if emit_patch is not None and (at_ms is None or not connect or group is None):
        _fail("--emit-connect-patch needs --connect, a connector name and --at TIME",
              "kafkalog group-history --connect CONNECTOR LOGDIR... --at TIME --emit-connect-patch patch.json")
        return
    if offsets_topic is not None and not connect:
        _fail("--offsets-topic is for --connect", None)
        return
    if connect:
        _connect(group, paths, at_ms, offsets_topic, emit_patch, fmt, verbose)
        return
    from kafkalog_cli.ops.group_history import history, positions_at, reset_csv

    h = _engine(lambda: history(paths, group, at_ms, topic, offsets_partitions=offsets_partitions))
    if not h.partitions_read:
        _fail(f"no __consumer_offsets partition directory found in {', '.join(paths)}")
        return
    if group is not None and group not in h.groups:
        home = partition_for(group, offsets_partitions)
        if home not in h.partitions_read:
            _fail(f"group {group!r} is stored in __consumer_offsets-{home} (of {offsets_partitions} partitions), and "
                  f"no copy of it is among the paths (read: "
                  f"{', '.join(f'__consumer_offsets-{p}' for p in h.partitions_read)})",
                  f"add the log dir of a broker holding __consumer_offsets-{home}, or pass --partitions N if the "
                  "topic has another partition count")
            return
    positions = positions_at(h) if at_ms is not None else None
    if emit_reset is not None and positions is not None:
        _write(emit_reset, reset_csv(positions, single_group=group is not None))
        skipped = [p for p in positions if p.state != "committed"]
        written = len(positions) - len(skipped)
        click.echo(f"kafkalog: wrote {emit_reset}: {written} partition(s)"
                   + (f"; not in it: {', '.join(f'{p.topic}-{p.partition} ({p.state})' for p in skipped)}"
                      if skipped else ""), err=True)
    if fmt == "json":
        doc = h.as_dict()
        if positions is not None:
            from kafkalog_cli.render.group_history import positions_doc

            doc["at_positions"] = positions_doc(at_ms or 0, positions)
        click.echo(json.dumps(versioned(doc), ensure_ascii=False))
    else:
        from kafkalog_cli.render.group_history import history_lines, positions_lines

        for line in history_lines(h, verbose=verbose):
            click.echo(line)
        if positions is not None:
            click.echo("")
            for line in positions_lines(at_ms or 0, positions):
                click.echo(line)
        if group is not None and group not in h.groups:
            click.echo(f"no record of group {group!r} in __consumer_offsets-{partition_for(group, offsets_partitions)}: "
                       "it never committed there, or every record of it was removed (compacted after its tombstones)")
    missing = group is not None and group not in h.groups
    sys.exit(1 if h.problems() or missing else 0)


def _connect(connector: str | None, paths: list[str], at_ms: int | None, offsets_topic: str | None,
             emit_patch: str | None, fmt: str, verbose: bool) -> None:
    from kafkalog_cli.ops.connect_history import connect_history, patch_body

    h = _engine(lambda: connect_history(paths, connector, at_ms, offsets_topic))
    if not h.topics:
        _fail(f"no Kafka Connect offsets topic found in {', '.join(paths)}"
              + (f" (named {offsets_topic!r})" if offsets_topic else " (topics named *connect-offsets*)"),
              "pass --offsets-topic NAME: the workers' offset.storage.topic")
        return
    if emit_patch is not None and connector is not None:
        body = patch_body(h, connector)
        _write(emit_patch, json.dumps(body, ensure_ascii=False, indent=2) + "\n")
        click.echo(f"kafkalog: wrote {emit_patch}: {len(body['offsets'])} source partition(s); send it with "
                   f"curl -X PATCH -H 'Content-Type: application/json' --data @{emit_patch} "
                   f"http://<worker>:8083/connectors/{connector}/offsets (the connector must be STOPPED)", err=True)
    if fmt == "json":
        click.echo(json.dumps(versioned(h.as_dict()), ensure_ascii=False))
    else:
        from kafkalog_cli.render.connect_history import connect_lines

        for line in connect_lines(h, verbose=verbose):
            click.echo(line)
    missing = connector is not None and connector not in h.connectors
    if missing and fmt == "text":
        click.echo(f"no record of connector {connector!r} in {', '.join(h.topics)}")
    sys.exit(1 if h.problems() or missing else 0)
