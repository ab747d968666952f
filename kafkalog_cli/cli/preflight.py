"""``kafkalog preflight``: will this set of log dirs come back right after a restart or a restore (read only)."""

from __future__ import annotations

import sys

import click

from kafkalog_cli.cli.common import fail, kafka_version_option, line_writers


@click.command(
    "preflight",
    epilog="""\b
Examples:
  kafkalog preflight /mnt/b1/kafka-logs /mnt/b2/kafka-logs /mnt/b3/kafka-logs
  kafkalog preflight --auto-offset-reset earliest --isolation read_committed /mnt/b1/kafka-logs
  kafkalog preflight --metadata /mnt/c1/meta --format json /mnt/b*/kafka-logs

\b
Per partition: whether the broker loads each copy and what recovery cuts,
which copy leads and what each follower's truncation loses, hanging
transactions. Per consumer group x partition: what the consumer does on
resume (resume, re-read N, skip N, hang at a stuck last stable offset, fail),
by Kafka's consumer rules and the group's auto.offset.reset. Schema ids in
use but missing from _schemas when it is in the dirs; with --metadata, the
inventory of each broker's log dirs against the KRaft image.

\b
Exit codes: 0 the set comes back right, 1 problems found, 2 usage error or
unreadable input.""",
)
@click.argument("paths", nargs=-1, required=True, type=click.Path(), metavar="LOGDIR...")
@click.option("--auto-offset-reset", "reset", type=click.Choice(["latest", "earliest", "none"]), default="latest",
              show_default=True, help="The consumers' auto.offset.reset (Kafka's default: latest).")
@click.option("--isolation", type=click.Choice(["read_uncommitted", "read_committed"]), default="read_uncommitted",
              show_default=True, help="The consumers' isolation.level.")
@click.option("--group", "groups", multiple=True, metavar="GROUP", help="Only this consumer group (repeatable).")
@click.option("--metadata", "metadata_path", default=None, type=click.Path(), metavar="DIR",
              help="A controller's metadata.log.dir (or its __cluster_metadata-0): check the inventory against it.")
@click.option("--transaction-partitions", "txn_partitions", type=click.IntRange(min=1), default=50,
              show_default=True, help="transaction.state.log.num.partitions (which __transaction_state holds a txn).")
@kafka_version_option("the brokers' loader")
@click.option("--verbose", "-v", is_flag=True, help="List every partition and group x partition, not only problems.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def preflight(paths: tuple[str, ...], reset: str, isolation: str, groups: tuple[str, ...],
              metadata_path: str | None, txn_partitions: int, kafka_version: str | None, verbose: bool,
              fmt: str) -> None:
    """Before a restart or a restore: will the brokers and the consumers come back right?"""
    from kafkalog_cli.cli.common import assumed_kafka_version
    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.ops import preflight as ops
    from kafkalog_cli.render import preflight as render

    out, _err = line_writers()
    version = assumed_kafka_version(kafka_version, paths=list(paths))
    try:
        report = ops.run(list(paths), auto_offset_reset=reset, isolation=isolation, kafka_version=version,
                         metadata_dir=metadata_path, groups=list(groups) or None, txn_partitions=txn_partitions)
    except KafkalogError as exc:
        fail(exc.describe(), exc.hint or "give broker log dirs (log.dirs entries), e.g. /var/lib/kafka/data")
        return
    except OSError as exc:
        fail(f"{exc.filename or ''}: {exc.strerror or exc}", "check the paths and permissions")
        return
    except ValueError as exc:  # --kafka-version that is not a release (KafkaVersion.parse)
        fail(str(exc), "e.g. --kafka-version 3.9")
        return
    if fmt == "json":
        out(render.json_text(report))
    else:
        for line in render.text_lines(report, verbose=verbose):
            out(line)
    sys.stdout.flush()
    sys.exit(report.exit_code())
