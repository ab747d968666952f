"""``explain-retention`` and ``explain-cleaner``: what the broker's retention and log cleaner would do, and why.

Thin click wrappers: ``ops.retention`` and ``ops.cleaner_explain`` compute, this module prints. Both are reports:
exit 0 whatever they find, 2 for unreadable input or bad flags.
"""

from __future__ import annotations

import json
import sys

import click

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.render.jsondoc import versioned

_FORMAT = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
                       help="Output format.")


_HINT = "give a partition directory (<topic>-<partition>) or a log directory; kafkalog verify-crc checks its files"


def _fail(message: str, hint: str | None = _HINT) -> None:
    """The project's one error format (``kafkalog: error:`` + ``hint:``), exit 2."""
    from kafkalog_cli.cli.common import fail

    fail(message, hint)


def _read_config(path: str | None) -> dict[str, str]:
    if path is None:
        return {}
    from kafkalog_cli.ops.retention import parse_config_text

    try:
        with open(path, encoding="utf-8") as f:
            return parse_config_text(f.read())
    except (OSError, UnicodeDecodeError) as exc:
        _fail(f"{path}: cannot read the config file ({exc})",
              "give a file of key=value lines, e.g. the output of kafka-configs.sh --describe")
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
    _nothing_found(paths, results, notes)
    for n in notes:
        click.echo(f"kafkalog: warning: {n}", err=True)
    if fmt == "json":
        click.echo(json.dumps(versioned({"partitions": [r.as_dict() for r in results]})))
        return
    from kafkalog_cli.render.explain import retention_lines

    for r in results:
        for line in retention_lines(r):
            click.echo(line)


@click.command("explain-cleaner")
@click.argument("paths", nargs=-1, required=True, type=click.Path(), metavar="PATH...")
@click.option("--config", "config_file", type=click.Path(), default=None,
              help="Topic config as key=value lines (a properties file, or kafka-configs.sh --describe output).")
@click.option("--min-cleanable-dirty-ratio", type=click.FloatRange(0, 1), default=None,
              help="min.cleanable.dirty.ratio. Default 0.5.")
@click.option("--min-compaction-lag-ms", type=click.IntRange(min=0), default=None, help="min.compaction.lag.ms. Default 0.")
@click.option("--max-compaction-lag-ms", type=click.IntRange(min=1), default=None,
              help="max.compaction.lag.ms. Default 9223372036854775807 (never forces).")
@click.option("--delete-retention-ms", type=click.IntRange(min=0), default=None,
              help="delete.retention.ms (tombstone delete horizon). Default 86400000.")
@click.option("--cleanup-policy", default=None, help="cleanup.policy. Default compact.")
@click.option("--dedupe-buffer-size", type=click.IntRange(min=1), default=None,
              help="log.cleaner.dedupe.buffer.size (broker). Default 134217728.")
@click.option("--cleaner-threads", type=click.IntRange(min=1), default=None, help="log.cleaner.threads. Default 1.")
@click.option("--no-estimate", is_flag=True, help="Skip the size-after-cleaning estimate (the compact plan).")
@click.option("--now-ms", type=int, default=None, help="The time the cleaner runs at (default: now).")
@_FORMAT
def explain_cleaner(paths: tuple[str, ...], config_file: str | None, min_cleanable_dirty_ratio: float | None,
                    min_compaction_lag_ms: int | None, max_compaction_lag_ms: int | None,
                    delete_retention_ms: int | None, cleanup_policy: str | None, dedupe_buffer_size: int | None,
                    cleaner_threads: int | None, no_estimate: bool, now_ms: int | None, fmt: str) -> None:
    """What the log cleaner would decide about a compacted partition now, and why.

    PATH is a partition directory or a log dir. Per partition: the cleaner checkpoint and first dirty offset, the
    first uncleanable offset (last stable offset, min.compaction.lag.ms, active segment) rounded down to a segment
    base as the cleaner uses it, dirty and total bytes and the dirty ratio, whether the cleaner would pick it now
    (and whether max.compaction.lag.ms forces it), the offset map's capacity against the dirty keys, tombstones by
    delete-horizon state, and the size after cleaning estimated by compact's own plan (nothing is written). Flags
    override --config. Exit status 0 (a report), 2 for unreadable input.

    \b
    Example:
      kafkalog explain-cleaner /var/lib/kafka/users-0
      kafkalog explain-cleaner /var/lib/kafka --min-cleanable-dirty-ratio 0.1 --format json
    """
    from kafkalog_cli.ops.cleaner_explain import config_from, explain_paths

    props = _read_config(config_file)
    for key, val in (("min.cleanable.dirty.ratio", min_cleanable_dirty_ratio),
                     ("min.compaction.lag.ms", min_compaction_lag_ms),
                     ("max.compaction.lag.ms", max_compaction_lag_ms), ("delete.retention.ms", delete_retention_ms),
                     ("cleanup.policy", cleanup_policy)):
        if val is not None:
            props[key] = str(val)
    try:
        cfg = config_from(props)
        cfg.now_ms = now_ms
        if dedupe_buffer_size is not None:
            cfg.dedupe_buffer_size = dedupe_buffer_size
        if cleaner_threads is not None:
            cfg.cleaner_threads = cleaner_threads
        results, notes = explain_paths(list(paths), cfg, estimate=not no_estimate)
    except KafkalogError as exc:
        _fail(exc.describe())
        return
    _nothing_found(paths, results, notes)
    for n in notes:
        click.echo(f"kafkalog: warning: {n}", err=True)
    if fmt == "json":
        click.echo(json.dumps(versioned({"partitions": [r.as_dict() for r in results]})))
        return
    from kafkalog_cli.render.explain import cleaner_lines

    for r in results:
        for line in cleaner_lines(r):
            click.echo(line)


def _nothing_found(paths: tuple[str, ...], results: list, notes: list[str]) -> None:
    """No partition under any path is not an answer (issue 27): exit 2 naming what was expected, except for empty
    partition directories (an empty log: a note, exit 0), as verify-crc."""

    from kafkalog_cli.storage.paths import empty_partition

    if results:
        return
    empty = [p for p in paths if empty_partition(p)]
    if len(empty) == len(paths):
        for p in empty:
            click.echo(f"kafkalog: note: {p}: no segment in this partition directory: an empty log", err=True)
        sys.exit(0)
    _fail(f"no partition directories found in {', '.join(paths)}: expected a broker log dir (topic-N directories "
          "holding .log segments), a folder of log dirs or a partition directory")
