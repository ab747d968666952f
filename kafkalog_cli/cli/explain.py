"""``explain-retention`` and ``explain-cleaner``: what the broker's retention and log cleaner would do, and why.

Thin click wrappers: ``ops.retention`` and ``ops.cleaner_explain`` compute, this module prints. Both are reports:
exit 0 whatever they find, 2 for unreadable input or bad flags.
"""

from __future__ import annotations

import json
import sys

import click

from kafkalog_cli.errors import KafkalogError

_FORMAT = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
                       help="Output format.")


def _fail(message: str, code: int = 2) -> None:
    click.echo(f"kafkalog: {message}", err=True)
    sys.exit(code)


def _read_config(path: str | None) -> dict[str, str]:
    if path is None:
        return {}
    from kafkalog_cli.ops.retention import parse_config_text

    try:
        with open(path, encoding="utf-8") as f:
            return parse_config_text(f.read())
    except (OSError, UnicodeDecodeError) as exc:
        _fail(f"{path}: cannot read the config file ({exc})")
        return {}


@click.command("explain-retention")
@click.argument("paths", nargs=-1, required=True, type=click.Path(), metavar="PATH...")
@click.option("--config", "config_file", type=click.Path(), default=None,
              help="Topic config as key=value lines (a properties file, or kafka-configs.sh --describe output).")
@click.option("--retention-ms", type=int, default=None, help="retention.ms (-1: no time limit). Default 604800000.")
@click.option("--retention-bytes", type=int, default=None, help="retention.bytes (-1: no size limit). Default -1.")
@click.option("--cleanup-policy", default=None, help="cleanup.policy (delete, compact, or compact,delete). Default delete.")
@click.option("--log-start-offset", type=click.IntRange(min=0), default=None,
              help="Log start offset (default: log-start-offset-checkpoint, else the first segment's base).")
@click.option("--high-watermark", type=click.IntRange(min=0), default=None,
              help="High watermark (default: replication-offset-checkpoint, else the log end offset).")
@click.option("--now-ms", type=int, default=None, help="The time T retention runs at (default: now).")
@_FORMAT
def explain_retention(paths: tuple[str, ...], config_file: str | None, retention_ms: int | None,
                      retention_bytes: int | None, cleanup_policy: str | None, log_start_offset: int | None,
                      high_watermark: int | None, now_ms: int | None, fmt: str) -> None:
    """Which segments the broker's retention would delete at time T, and why.

    PATH is a partition directory or a log dir (every partition in it). The broker's rules in its order
    (UnifiedLog.deleteOldSegments): log start offset, then retention.bytes (oldest first until the log fits), then
    retention.ms (largest timestamp from the time index, else the .log mtime; a future timestamp stops it). A
    breached non-empty active segment is rolled and deleted; nothing at or above the high watermark goes. Flags
    override --config. Exit status 0 (a report), 2 for unreadable input.

    \b
    Example:
      kafkalog explain-retention /var/lib/kafka/orders-0 --retention-ms 86400000
      kafka-configs.sh --bootstrap-server b:9092 --describe --all --topic orders > orders.cfg
      kafkalog explain-retention /var/lib/kafka/orders-0 --config orders.cfg --format json
    """
    from kafkalog_cli.ops.retention import config_from, explain_paths

    props = _read_config(config_file)
    for key, val in (("retention.ms", retention_ms), ("retention.bytes", retention_bytes),
                     ("cleanup.policy", cleanup_policy)):
        if val is not None:
            props[key] = str(val)
    try:
        cfg = config_from(props)
        cfg.log_start_offset, cfg.high_watermark, cfg.now_ms = log_start_offset, high_watermark, now_ms
        results, notes = explain_paths(list(paths), cfg)
    except KafkalogError as exc:
        _fail(exc.describe())
        return
    for n in notes:
        click.echo(f"kafkalog: warning: {n}", err=True)
    if fmt == "json":
        click.echo(json.dumps({"partitions": [r.as_dict() for r in results]}))
        return
    for r in results:
        who = f", broker {r.broker}" if r.broker is not None else ""
        click.echo(f"{r.topic}-{r.partition} ({r.path}{who}) at {r.now_ms}: retention.ms={r.config['retention.ms']} "
                   f"retention.bytes={r.config['retention.bytes']} cleanup.policy={r.config['cleanup.policy']}")
        click.echo(f"  log start {r.log_start_offset_before} -> {r.log_start_offset_after}, log end {r.log_end_offset}, "
                   f"high watermark {r.high_watermark}; {r.size_before} bytes -> {r.size_after} "
                   f"({r.bytes_freed} freed)" + ("; the active segment is rolled first" if r.rolled else ""))
        for s in r.segments:
            tag = "DELETE" if s.deleted else "keep  "
            act = " (active)" if s.active else ""
            until = []
            if not s.deleted and s.ms_until_deleted is not None:
                until.append(f"goes by time in {s.ms_until_deleted} ms")
            if not s.deleted and s.bytes_until_deleted is not None:
                until.append(f"by size after {s.bytes_until_deleted} more bytes")
            extra = f" [{', '.join(until)}]" if until else ""
            click.echo(f"  {tag} {s.base_offset:020d}.log{act} {s.size} bytes: {s.reason}{extra}")
        for n in r.notes:
            click.echo(f"  note: {n}")
