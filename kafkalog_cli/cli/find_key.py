"""``find-key`` and ``audit-partitioning``: thin click commands over ops/find_key.py and ops/partitioning.py."""

from __future__ import annotations

import sys

import click

from kafkalog_cli.errors import KafkalogError

_PARTITIONERS = ["murmur2", "consistent", "consistent_random", "murmur2_random", "fnv1a"]


def _time(text: str | None, flag: str) -> int | None:
    if text is None:
        return None
    from kafkalog_cli.cli.common import fail
    from kafkalog_cli.cli.timespec import parse_time

    try:
        spec = parse_time(text)
    except ValueError as exc:
        fail(f"{flag}: {exc}")
        return None
    click.echo(f"kafkalog: {flag} {spec.echo(text)}", err=True)
    return spec.ms


@click.command("find-key")
@click.argument("key", required=False)
@click.argument("paths", nargs=-1, type=click.Path(), metavar="LOGDIR...")
@click.option("--key-hex", default=None, help="The key as hex bytes (instead of KEY).")
@click.option("--key-file", type=click.Path(), default=None, help="Read the key's bytes from a file.")
@click.option("--value-regex", default=None,
              help="Also report records whose value matches this regular expression (slower: decodes every record).")
@click.option("--partitions", type=click.IntRange(min=1), default=None,
              help="The topics' partition count (default: the highest partition directory seen + 1).")
@click.option("--any-partition", is_flag=True, help="Search every partition, not only the one the key maps to.")
@click.option("--partitioner", "partitioner_names", multiple=True, type=click.Choice(_PARTITIONERS),
              help="The producers' partitioner(s) that choose the partition searched (default murmur2, Java's).")
@click.option("--since", default=None, help="Only records at or after this time (skips older segments by index).")
@click.option("--until", default=None, help="Only records at or before this time.")
@click.option("--prove-erased", is_flag=True,
              help="Also search every value of the key as raw bytes everywhere, and give an ERASED/PENDING/PRESENT verdict.")
@click.option("--cleanup-policy", default=None, help="cleanup.policy of the topics (default delete, Kafka's).")
@click.option("--config", "config_file", type=click.Path(), default=None,
              help="Topic config as key=value lines (cleanup.policy, delete.retention.ms, retention.ms, ...).")
@click.option("--now-ms", type=int, default=None, help="The time the rules are evaluated at (default: now).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Output format.")
def find_key(key: str | None, paths: tuple[str, ...], key_hex: str | None, key_file: str | None,
             value_regex: str | None, partitions: int | None, any_partition: bool, partitioner_names: tuple[str, ...],
             since: str | None, until: str | None, prove_erased: bool, cleanup_policy: str | None,
             config_file: str | None, now_ms: int | None, fmt: str) -> None:
    """Find every copy of a record key: live segments of every replica, leftovers, -delete/-stray/-future dirs,
    tiered objects, backups and exports; each hit's state and what removes it.

    KEY is the key as UTF-8 text (or give --key-hex / --key-file and omit it). The partition searched is the one
    Java's producer picks (murmur2 of the key modulo the partition count); --any-partition searches all. Exit
    status 0 no copy found (with --prove-erased: ERASED), 1 found (not erased), 2 unreadable input or bad flags.

    \b
    Example:
      kafkalog find-key customer-42 /var/lib/kafka
      kafkalog find-key --key-hex 00000000002a /data/kafka-1 /data/kafka-2 --any-partition
      kafkalog find-key customer-42 /var/lib/kafka --prove-erased --cleanup-policy compact
    """
    from kafkalog_cli.cli.common import fail
    from kafkalog_cli.ops.find_key import Options
    from kafkalog_cli.ops.find_key import find_key as run
    from kafkalog_cli.render.find_key import find_key_json, find_key_lines

    given = [x for x in (key_hex, key_file) if x is not None]
    if len(given) > 1:
        fail("give the key once: --key-hex or --key-file")
    if key is not None and (given or (value_regex is not None and not paths)):
        paths = (key, *paths)  # KEY was a path: the key came from a flag (or only --value-regex is searched)
        key = None
    if not paths:
        fail("no LOGDIR given", "kafkalog find-key KEY LOGDIR... (or --key-hex HEX LOGDIR...)")
    raw: bytes | None = None
    if key_hex is not None:
        try:
            raw = bytes.fromhex(key_hex)
        except ValueError:
            fail(f"--key-hex: not hex bytes: {key_hex!r}", "e.g. --key-hex 00000000002a")
    elif key_file is not None:
        try:
            with open(key_file, "rb") as f:
                raw = f.read()
        except OSError as exc:
            fail(f"--key-file: cannot read {key_file}: {exc.strerror}")
    elif key is not None:
        raw = key.encode("utf-8")
    if raw is None and value_regex is None:
        fail("no key given", "give KEY, --key-hex or --key-file (or --value-regex)")
    props: dict[str, str] = {}
    if config_file is not None:
        from kafkalog_cli.cli.explain import _read_config

        props = _read_config(config_file)
    policy = cleanup_policy or props.get("cleanup.policy", "delete")
    opts = Options(raw, partitions=partitions, any_partition=any_partition,
                   partitioner_names=partitioner_names or ("murmur2",), since_ms=_time(since, "--since"),
                   until_ms=_time(until, "--until"),
                   value_regex=value_regex.encode("utf-8") if value_regex is not None else None,
                   prove_erased=prove_erased, cleanup_policy=policy, cleaner_props=props, now_ms=now_ms)
    if value_regex is not None:
        import re

        try:
            re.compile(opts.value_regex or b"")
        except re.error as exc:
            fail(f"--value-regex: {exc}")
    try:
        result = run(list(paths), opts)
    except KafkalogError as exc:
        fail(exc.describe(), "give log dirs, partition directories or files (kafkalog verify-crc checks them)")
        return
    for n in result.notes:
        click.echo(f"kafkalog: warning: {n}", err=True)
    if fmt == "json":
        click.echo(find_key_json(result))
    else:
        for line in find_key_lines(result):
            click.echo(line)
    if prove_erased:
        sys.exit(0 if result.verdict == "ERASED" else 1)
    sys.exit(1 if result.hits else 0)


@click.command("audit-partitioning")
@click.argument("paths", nargs=-1, required=True, type=click.Path(), metavar="LOGDIR...")
@click.option("--partitions", type=click.IntRange(min=1), default=None,
              help="The topics' partition count now (default: the highest partition directory seen + 1).")
@click.option("--previous-partitions", type=click.IntRange(min=1), default=None,
              help="The partition count before the topic grew: report keys whose partition changed.")
@click.option("--topic", "topics", multiple=True, help="Only this topic (repeatable).")
@click.option("--top", type=click.IntRange(min=1), default=5, show_default=True,
              help="How many hottest keys and largest records per partition.")
@click.option("--from-scan", is_flag=True,
              help="The PATHs are kafkalog scan --records outputs (a fleet's datasets), not log dirs.")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="With --from-scan: reduce the datasets with pyarrow (local) or Spark.")
@click.option("--master", default=None, metavar="URL", help="Spark master URL for --engine spark (default local[*]).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Output format.")
def audit_partitioning(paths: tuple[str, ...], partitions: int | None, previous_partitions: int | None,
                       topics: tuple[str, ...], top: int, from_scan: bool, engine: str, master: str | None,
                       fmt: str) -> None:
    """Check that every keyed record is in the partition its producer's partitioner gives.

    Per keyed record: the partition under Java's murmur2 and librdkafka's consistent, consistent_random,
    murmur2_random and fnv1a. Reports records no single partitioner explains, keys in more than one partition
    (with the producer ids and time ranges of each copy), keys whose partition changed when the partition count
    grew (--previous-partitions, or inferred), and the hottest keys and largest records per partition. Exit
    status 0 all explained, 1 problems found, 2 unreadable input.

    \b
    Example:
      kafkalog audit-partitioning /var/lib/kafka --topic orders
      kafkalog audit-partitioning /var/lib/kafka --partitions 12 --previous-partitions 6 --format json
      kafkalog audit-partitioning --from-scan /srv/scan/b1 /srv/scan/b2 --engine spark
    """
    from kafkalog_cli.cli.common import fail, install_hint
    from kafkalog_cli.ops.partitioning import audit
    from kafkalog_cli.render.find_key import audit_json, audit_lines

    if not from_scan and (engine != "local" or master is not None):
        fail("--engine and --master apply to --from-scan only", "add --from-scan (PATHs are scan outputs)")
    kw = {"partitions": partitions, "previous": previous_partitions, "topics": set(topics), "top": top}
    try:
        if not from_scan:
            report = audit(list(paths), **kw)  # type: ignore[arg-type]
        elif engine == "local":
            from kafkalog_cli.scan.partitioning import audit_local

            report = audit_local(list(paths), **kw)  # type: ignore[arg-type]
        else:
            from kafkalog_cli.scan.partitioning import audit_spark
            from kafkalog_cli.scan.spark_engine import get_session, missing_requirements

            missing = missing_requirements()
            if missing:
                fail(missing, install_hint("spark", "the Spark engine", "pyspark >= 3.5 (about 450 MB) and a Java 17 "
                                                                       "runtime on PATH"))
            report = audit_spark(list(paths), get_session(master), **kw)  # type: ignore[arg-type]
    except KafkalogError as exc:
        fail(exc.describe(), "give log dirs or partition directories")
        return
    if fmt == "json":
        click.echo(audit_json(report))
    else:
        for line in audit_lines(report):
            click.echo(line)
    sys.exit(1 if report.problems else 0)
