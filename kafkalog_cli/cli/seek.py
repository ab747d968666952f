"""``kafkalog seek-offset`` / ``seek-time``: find a batch by offset or by time through the indexes."""

from __future__ import annotations

import sys

import click

from kafkalog_cli.cli.common import (
    EXIT_CLEAN,
    EXIT_PROBLEMS,
    assumed_kafka_version,
    fail,
    kafka_version_option,
    line_writers,
    resolve_profile,
)
from kafkalog_cli.cli.timespec import parse_time


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds of ``text`` by the rules of ``cli.timespec``. Raises ValueError."""
    return parse_time(text).ms


def _finish(res, stats, verbose: bool, err) -> None:  # noqa: ANN001
    from kafkalog_cli.render.seek import finish_lines

    for line in finish_lines(res, stats, verbose):
        err(line)
    if res is not None and res.disk_problems:  # the answer may have skipped bytes that could not be read
        sys.stdout.flush()
        sys.exit(EXIT_PROBLEMS)


LATE_HINT = ("every record is older than that time: the broker's ListOffsets answers with no offset (-1; a "
             "consumer's offsetsForTimes gives null); 'kafkalog dump PARTITION_DIR' shows the newest batches and their "
             "timestamps")
NOT_FOUND_HINT = ("kafkalog dump PARTITION_DIR lists the offsets the log holds; kafkalog explain-retention PARTITION_DIR "
                  "says whether retention removed older ones")


@click.command(
    "seek-offset",
    epilog="""\b
Examples:
  kafkalog seek-offset /var/lib/kafka/orders-0 123456
  kafkalog seek-offset --print-data-log orders-0 123456
  kafkalog seek-offset --format json --verbose orders-0 123456 | jq .position

Exit codes: 0 found, 1 offset outside the log, 2 usage error or unreadable input.""",
)
@click.argument("partition_dir", type=click.Path())
@click.argument("offset", type=int)
@click.option("--print-data-log", is_flag=True, help="Also print the record with that offset (key and payload).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--verbose", is_flag=True, help="Report on stderr how much was read (files, index probes, bytes).")
@kafka_version_option("Print the lines as DumpLogSegments")
def seek_offset(partition_dir: str, offset: int, print_data_log: bool, fmt: str, verbose: bool, kafka_version: str | None) -> None:
    """Find the batch holding OFFSET the way a broker serves a fetch: segment by base offset, offset-index lookup,
    then a forward walk over batch headers."""
    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.ops import seek

    profile = resolve_profile(assumed_kafka_version(kafka_version))
    out, err = line_writers()
    stats = seek.SeekStats()
    try:
        res = seek.seek_offset(partition_dir, offset, want_record=print_data_log or fmt == "json", stats=stats)
    except seek.OffsetNotFound as exc:
        err(f"kafkalog: error: {exc.describe()}")
        err(f"hint: {NOT_FOUND_HINT}")
        if verbose:
            err(stats.line())
        sys.exit(EXIT_PROBLEMS)
    except KafkalogError as exc:
        fail(exc.describe(), exc.hint or "check the partition directory (kafkalog dump shows what is there)")
    try:
        from kafkalog_cli.render import seek as text

        if fmt == "json":
            out(text.offset_json(res, profile))
        else:
            text.offset_text(res, profile, print_data_log, out)
    except KafkalogError as exc:
        fail(exc.describe(), exc.hint or "the batch could not be decoded; kafkalog dump --deep-iteration shows it")
    _finish(res, stats, verbose, err)
    sys.stdout.flush()
    sys.exit(EXIT_CLEAN)


class _RelativeTimeCommand(click.Command):
    """A relative time (``-1h``) looks like a cluster of short options to click (``-1`` then ``-h``, help!): such an
    argument is rewritten with U+2212 MINUS SIGN, which ``parse_time`` reads as a minus and click as a value."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from kafkalog_cli.cli.timespec import MINUS_SIGN, is_relative

        return super().parse_args(ctx, [MINUS_SIGN + a[1:] if is_relative(a) else a for a in args])


@click.command(
    "seek-time",
    cls=_RelativeTimeCommand,
    epilog="""\b
Examples:
  kafkalog seek-time /var/lib/kafka/orders-0 1700000000000
  kafkalog seek-time orders-0 2024-11-02T08:00:00Z
  kafkalog seek-time --format json orders-0 '2024-11-02 09:00:00+01:00'
  kafkalog seek-time orders-0 -1h

\b
TIMESTAMP is one of: epoch seconds (up to 11 digits, 1718446827) or milliseconds
(12 or more, 1718446827000), or with a unit (1718446827s, 1718446827000ms);
ISO-8601 / RFC 3339 (2024-06-15T10:20:27Z, 2024-06-15 12:20:27+02:00,
2024-06-15); without a zone UTC is assumed; relative to now: -1h, -30m, -2d,
-1h30m, or now. The time understood is always echoed on stderr.

Exit codes: 0 found, 1 no record at or after that time, 2 usage error or unreadable input.""",
)
@click.argument("partition_dir", type=click.Path())
@click.argument("timestamp")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--verbose", is_flag=True, help="Report on stderr how much was read (files, index probes, bytes).")
def seek_time(partition_dir: str, timestamp: str, fmt: str, verbose: bool) -> None:
    """Find the first offset whose timestamp is >= TIMESTAMP (ListOffsets semantics): the first segment whose
    largest timestamp reaches it, time-index lookup, offset-index lookup, then a scan of the candidate batches."""
    from kafkalog_cli.cli.timespec import FORMATS_HINT
    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.ops import seek

    try:
        spec = parse_time(timestamp)
    except ValueError:
        fail(f"cannot read the time {timestamp!r}", FORMATS_HINT)
    target = spec.ms
    out, err = line_writers()
    err(f"kafkalog: {spec.echo(timestamp)}")
    stats = seek.SeekStats()
    try:
        res = seek.seek_time(partition_dir, target, stats=stats)
    except seek.OffsetNotFound as exc:
        err(f"kafkalog: error: {exc.describe()}")
        err(f"hint: {LATE_HINT}")
        if verbose:
            err(stats.line())
        sys.exit(EXIT_PROBLEMS)
    except KafkalogError as exc:
        fail(exc.describe(), exc.hint or "check the partition directory (kafkalog dump shows what is there)")
    from kafkalog_cli.render import seek as text

    assert res.record is not None  # seek_time returns the record it found (it raises OffsetNotFound otherwise)
    out(text.time_json(res, target) if fmt == "json" else text.time_text(res))
    _finish(res, stats, verbose, err)
    sys.stdout.flush()
    sys.exit(EXIT_CLEAN)
