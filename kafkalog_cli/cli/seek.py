"""``kafkalog seek-offset`` / ``seek-time``: find a batch by offset or by time through the indexes."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone

import click

from kafkalog_cli.cli.common import EXIT_CLEAN, EXIT_PROBLEMS, fail, line_writers
from kafkalog_cli.render.versions import DEFAULT_VERSION


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds, or ISO-8601 (a naive time is UTC). Raises ValueError."""
    t = text.strip()
    if t.lstrip("-").isdigit():
        return int(t)
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    dt = datetime.fromisoformat(t)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    delta = dt - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000


def _json_events(res, profile, print_data_log: bool) -> dict:  # noqa: ANN001
    """The batch (and record) as the dump command's JSON objects."""
    from kafkalog_cli.ops import dump as d
    from kafkalog_cli.render.jsonl import JsonRenderer
    from kafkalog_cli.render.parsers import DecoderParser

    lines: list[str] = []
    opts = d.DumpOptions(print_data_log=True, deep_iteration=True,
                         parser=DecoderParser(tombstone_key=bool(profile.tombstone_key)))
    r = JsonRenderer(opts, lines.append, lambda _s: None)
    e = res.entry
    r.on_BatchEvent(d.BatchEvent(e, res.valid, res.computed_crc, res.segment))
    out = {"segment": res.segment, "position": res.position, "batch": json.loads(lines[-1])}
    if res.record is not None:
        ev = d.Dumper(profile, opts)._record_event(e, res.record)
        r.on_RecordEvent(ev)
        out["record"] = json.loads(lines[-1])
        out["offset"] = res.record.offset
        out["timestamp"] = res.record.timestamp
    out["exact"] = res.exact
    return out


def _text_lines(res, profile, print_data_log: bool, out) -> None:  # noqa: ANN001
    from kafkalog_cli.ops import dump as d
    from kafkalog_cli.render.dls import DlsRenderer
    from kafkalog_cli.render.parsers import DecoderParser

    opts = d.DumpOptions(print_data_log=print_data_log, deep_iteration=print_data_log,
                         parser=DecoderParser(tombstone_key=bool(profile.tombstone_key)))
    r = DlsRenderer(profile, opts, out, lambda _s: None)
    e = res.entry
    out(f"Segment: {res.segment}")
    r.on_BatchEvent(d.BatchEvent(e, res.valid, res.computed_crc, res.segment))
    if print_data_log and res.record is not None:
        r.on_RecordEvent(d.Dumper(profile, opts)._record_event(e, res.record))


def _finish(res, stats, verbose: bool, err) -> None:  # noqa: ANN001
    for w in res.warnings if res is not None else []:
        err(f"kafkalog: warning: {w}")
    for f in res.findings if res is not None else []:
        err(f"kafkalog: {'note' if f.is_note else 'error'}: {f.describe()}")
    if verbose:
        err(stats.line())
    if res is not None and res.disk_problems:  # the answer may have skipped bytes that could not be read
        sys.stdout.flush()
        sys.exit(EXIT_PROBLEMS)


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
@click.option("--kafka-version", default=DEFAULT_VERSION, show_default=True, metavar="V",
              help="Print the lines as DumpLogSegments of this Kafka release does.")
def seek_offset(partition_dir: str, offset: int, print_data_log: bool, fmt: str, verbose: bool, kafka_version: str) -> None:
    """Find the batch holding OFFSET the way a broker serves a fetch: segment by base offset, offset-index lookup,
    then a forward walk over batch headers."""
    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.ops import seek
    from kafkalog_cli.render.versions import profile_for

    try:
        profile = profile_for(kafka_version)
    except ValueError as exc:
        fail(str(exc), "try --kafka-version 3.6")
    out, err = line_writers()
    stats = seek.SeekStats()
    try:
        res = seek.seek_offset(partition_dir, offset, want_record=print_data_log or fmt == "json", stats=stats)
    except seek.OffsetNotFound as exc:
        err(f"kafkalog: {exc.describe()}")
        if verbose:
            err(stats.line())
        sys.exit(EXIT_PROBLEMS)
    except KafkalogError as exc:
        fail(exc.describe(), "check the partition directory (kafkalog dump shows what is there)")
    try:
        if fmt == "json":
            out(json.dumps(_json_events(res, profile, print_data_log)))
        else:
            _text_lines(res, profile, print_data_log, out)
    except KafkalogError as exc:
        fail(exc.describe(), "the batch could not be decoded; kafkalog dump --deep-iteration shows it")
    _finish(res, stats, verbose, err)
    sys.stdout.flush()
    sys.exit(EXIT_CLEAN)


@click.command(
    "seek-time",
    epilog="""\b
Examples:
  kafkalog seek-time /var/lib/kafka/orders-0 1700000000000
  kafkalog seek-time orders-0 2024-11-02T08:00:00Z
  kafkalog seek-time --format json orders-0 '2024-11-02 09:00:00+01:00'

TIMESTAMP is epoch milliseconds or ISO-8601; a time without a zone is UTC.

Exit codes: 0 found, 1 no record at or after that time, 2 usage error or unreadable input.""",
)
@click.argument("partition_dir", type=click.Path())
@click.argument("timestamp")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--verbose", is_flag=True, help="Report on stderr how much was read (files, index probes, bytes).")
def seek_time(partition_dir: str, timestamp: str, fmt: str, verbose: bool) -> None:
    """Find the first offset whose timestamp is >= TIMESTAMP (ListOffsets semantics): the first segment whose
    largest timestamp reaches it, time-index lookup, offset-index lookup, then a scan of the candidate batches."""
    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.ops import seek

    try:
        target = parse_timestamp(timestamp)
    except ValueError:
        fail(f"cannot parse timestamp {timestamp!r}", "use epoch milliseconds or ISO-8601, e.g. 2024-11-02T08:00:00Z")
    out, err = line_writers()
    stats = seek.SeekStats()
    try:
        res = seek.seek_time(partition_dir, target, stats=stats)
    except seek.OffsetNotFound as exc:
        err(f"kafkalog: {exc.describe()}")
        if verbose:
            err(stats.line())
        sys.exit(EXIT_PROBLEMS)
    except KafkalogError as exc:
        fail(exc.describe(), "check the partition directory (kafkalog dump shows what is there)")
    rec = res.record
    if fmt == "json":
        out(json.dumps({"offset": rec.offset, "timestamp": rec.timestamp, "target": target, "segment": res.segment,
                        "position": res.position, "batch_base_offset": res.entry.base_offset,
                        "batch_last_offset": res.entry.last_offset}))
    else:
        out(f"offset: {rec.offset} timestamp: {rec.timestamp} segment: {res.segment} position: {res.position}")
    _finish(res, stats, verbose, err)
    sys.stdout.flush()
    sys.exit(EXIT_CLEAN)
