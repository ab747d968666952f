"""``kafkalog schemas``: the Schema Registry rebuilt from ``_schemas`` segments; ``--audit``, ``--export``."""

from __future__ import annotations

import json

import click

from kafkalog_cli.cli.common import EXIT_CLEAN, EXIT_PROBLEMS, fail, line_writers


def parse_at(text: str) -> tuple[int | None, int | None, str]:
    """``--at``: a bare number is an offset of ``_schemas``; anything else a time (``cli/timespec``: ISO-8601,
    ``1718446827s``, ``1718446827000ms``, ``-2h``). Returns (offset, time ms, how it was read)."""
    from kafkalog_cli.cli.timespec import iso_utc, parse_time

    t = text.strip()
    if t.isdigit():
        return int(t), None, f"offset {int(t)}"
    ts = parse_time(t)
    return None, ts.ms, f"time {iso_utc(ts.ms)} ({ts.how})"


@click.command(
    "schemas",
    epilog="""\b
Examples:
  kafkalog schemas /var/lib/kafka
  kafkalog schemas --at 2024-06-15T10:00:00Z /var/lib/kafka --format json
  kafkalog schemas --audit /var/lib/kafka /mnt/broker2/kafka
  kafkalog schemas --export /tmp/registry-bundle --include-hard-deleted /var/lib/kafka

Exit codes: 0 clean, 1 the audit found problems, 2 usage error, no _schemas
partition or unreadable input.""",
)
@click.argument("paths", nargs=-1, required=True, type=click.Path(), metavar="LOGDIR...")
@click.option("--at", "at", default=None, metavar="OFFSET|TIME",
              help="The registry's state at this _schemas offset (a bare number) or time (ISO-8601, 1718446827s, -2h).")
@click.option("--audit", is_flag=True, help="Check the data in the log dirs against the registry (exit 1 on findings).")
@click.option("--export", "export_dir", default=None, type=click.Path(), metavar="DIR",
              help="Write a restore bundle (REST payloads + restore.sh) for a fresh registry in IMPORT mode.")
@click.option("--include-hard-deleted", is_flag=True,
              help="--export: also restore hard-deleted schemas still readable in the segments (soft-deleted).")
@click.option("--schemas-topic", default="_schemas", show_default=True, metavar="TOPIC",
              help="The registry's topic (kafkastore.topic).")
@click.option("--wire", type=click.Choice(["confluent", "apicurio"]), default="confluent", show_default=True,
              help="--audit: the id prefix: Confluent's 4-byte id or Apicurio's 8-byte global id.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def schemas(paths: tuple[str, ...], at: str | None, audit: bool, export_dir: str | None, include_hard_deleted: bool,
            schemas_topic: str, wire: str, fmt: str) -> None:
    """Rebuild the Schema Registry (subjects, versions, ids, types, references, soft and hard deletes, CONFIG and
    MODE) from every copy of the _schemas topic under LOGDIR... (uncleaned segments, the cleaner's leftovers,
    other replicas), print it, audit the data against it or export it for re-registration."""
    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.ops import schemas as ops
    from kafkalog_cli.render import schemas as render

    out, _err = line_writers()
    at_offset = at_time = None
    at_text = None
    if at is not None:
        try:
            at_offset, at_time, at_text = parse_at(at)
        except ValueError as exc:
            fail(f"--at {at!r}: {exc}", "a bare number is a _schemas offset; a time is ISO-8601, 1718446827s or -2h")
    if include_hard_deleted and export_dir is None:
        fail("--include-hard-deleted needs --export DIR")
    try:
        reg = ops.load_registry(list(paths), topic=schemas_topic, at_offset=at_offset, at_time=at_time)
        if export_dir is not None:
            res = ops.export(reg, export_dir, include_hard_deleted=include_hard_deleted)
            if fmt == "json":
                out(json.dumps(render.export_json(res), ensure_ascii=False))
            else:
                for line in render.export_lines(res):
                    out(line)
        if audit:
            rep = ops.audit(list(paths), reg, topic=schemas_topic, wire=wire)
            if fmt == "json":
                out(json.dumps(render.audit_json(rep), ensure_ascii=False))
            else:
                for line in render.audit_lines(rep):
                    out(line)
            raise SystemExit(EXIT_PROBLEMS if rep.problems else EXIT_CLEAN)
        if export_dir is None:
            if fmt == "json":
                out(json.dumps(render.registry_json(reg, at=at_text), ensure_ascii=False))
            else:
                for line in render.registry_lines(reg, at=at_text):
                    out(line)
    except KafkalogError as exc:
        fail(exc.describe(), exc.hint or "give the log dir that holds _schemas-0 (kafkalog verify-crc checks its files)")
