"""``kafkalog replay``: produce exported records (or partition directories) into a live topic, with an offset map."""

from __future__ import annotations

import json
import os
import sys

import click

from kafkalog_cli.cli.common import EXIT_CLEAN, EXIT_PROBLEMS, EXIT_USAGE, fail, line_writers

EXIT_INTERRUPTED = 130


def _props(values: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    out = []
    for v in values:
        k, sep, val = v.partition("=")
        if not sep or not k.strip():
            fail(f"--producer-property {v!r}: expected KEY=VALUE", "e.g. -X security.protocol=SASL_SSL")
        out.append((k.strip(), val.strip()))
    return tuple(out)


@click.command(
    "replay",
    epilog="""\b
Examples:
  kafkalog replay /tmp/rescue --bootstrap-server kafka1:9092 --topic orders
  kafkalog replay /tmp/rescue --bootstrap-server kafka1:9092 --topic orders --execute
  kafkalog replay /var/lib/kafka/orders-0.4f1c...-delete --bootstrap-server kafka1:9092 \\
      --topic orders --partitioner murmur2 --rate 5000 --execute

\b
Dry run by default: prints what would be produced. Run the same command again
after an interruption: it resumes from the checkpoint in --state-dir.
Exit codes: 0 clean (dry run: nothing to produce), 1 findings (records not
replayable) or, dry run, records to produce, 2 usage error, unreadable input,
refused or client error, 130 interrupted (resumable).""",
)
@click.argument("inputs", nargs=-1, required=True, type=click.Path(), metavar="EXPORT...")
@click.option("--bootstrap-server", "bootstrap", required=True, metavar="HOST:PORT",
              help="The destination cluster (comma-separated list).")
@click.option("--topic", required=True, metavar="TOPIC", help="The destination topic (it must exist).")
@click.option("--execute", is_flag=True, help="Produce (without it: a dry run that prints the plan).")
@click.option("--partitioner", type=click.Choice(["same", "murmur2"]), default="same", show_default=True,
              help="same: the source partition number; murmur2: the Java producer's partition for the key.")
@click.option("--offset-header", default="kafkalog.source.offset", show_default=True, metavar="NAME",
              help="Header added to every record: '<topic>-<partition>@<offset>' of its source.")
@click.option("--no-offset-header", is_flag=True,
              help="Add no header (an interrupted replay may then duplicate the last records acknowledged).")
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), default=None, metavar="N",
              help="At most N records per second.")
@click.option("--isolation", type=click.Choice(["read_committed", "read_uncommitted"]), default="read_committed",
              show_default=True, help="read_committed leaves out aborted and open transactions.")
@click.option("--source-topic", "source_topics", multiple=True, metavar="NAME",
              help="Replay only this source topic (repeatable; needed when the inputs hold several).")
@click.option("--state-dir", default=None, type=click.Path(file_okay=False), metavar="DIR",
              help="Checkpoint, offset map and reset CSVs.  [default: ./kafkalog-replay-TOPIC]")
@click.option("--partitions", type=click.IntRange(min=1), default=None, metavar="N",
              help="The destination's partition count (the dry run then needs no cluster).")
@click.option("--groups-from", multiple=True, type=click.Path(), metavar="PATH",
              help="Log dir(s) or __consumer_offsets-N dirs whose groups get a reset CSV [default: the inputs' log dirs].")
@click.option("-X", "--producer-property", "props", multiple=True, metavar="KEY=VALUE",
              help="A librdkafka producer setting (security, compression, ...); repeatable.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=30.0, show_default=True, metavar="SECONDS",
              help="Metadata lookups' timeout.")
@click.option("--below-log-start", is_flag=True,
              help="Also a partition directory's records below its log start offset (its log dir's "
                   "log-start-offset-checkpoint; left out by default: no consumer of the source reads them).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def replay(inputs: tuple[str, ...], bootstrap: str, topic: str, execute: bool, partitioner: str, offset_header: str,
           no_offset_header: bool, rate: float | None, isolation: str, source_topics: tuple[str, ...],
           state_dir: str | None, partitions: int | None, groups_from: tuple[str, ...], props: tuple[str, ...],
           timeout: float, below_log_start: bool, fmt: str) -> None:
    """Produce the records of EXPORT... (kafkalog export's NDJSON or Parquet, partition directories, -delete
    copies, log dirs) into TOPIC with an idempotent producer, keeping keys, values, headers and timestamps; write an
    offset map and, for the consumer groups of the source's __consumer_offsets, kafka-consumer-groups reset CSVs."""
    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.ops import replay as ops
    from kafkalog_cli.render import replay as render

    out, err = line_writers()
    if not offset_header.strip():
        fail("--offset-header needs a name", "or --no-offset-header")
    opts = ops.ReplayOptions(
        bootstrap=bootstrap, topic=topic, partitioner=partitioner,
        offset_header=None if no_offset_header else offset_header, isolation=isolation,
        source_topics=tuple(source_topics), rate=rate,
        state_dir=os.path.abspath(state_dir or f"kafkalog-replay-{topic}"), partitions=partitions,
        producer_props=_props(props), groups_from=tuple(groups_from), timeout_s=timeout,
        below_log_start=below_log_start)
    try:
        ops.client_config(opts)  # refuse a contradicting -X before reading anything
        sources, notes = ops.open_sources(list(inputs))
        for n in notes:
            err(f"note: {n}")
        count = partitions
        if count is None or execute:
            live = ops.partition_count(opts, err)
            if count is not None and count != live:
                fail(f"--partitions {count}, but {topic!r} has {live} partitions at {bootstrap}")
            count = live
        plan = ops.plan(sources, opts, count)
        state = ops.ReplayState.load(opts.state_dir)
        ops.check_resume(state, opts.identity(sources, count))
        plan.resume = state
        if not execute:
            if fmt == "json":
                out(json.dumps(render.plan_doc(plan), ensure_ascii=False))
            else:
                for line in render.plan_lines(plan):
                    out(line)
            pending = plan.records > (sum(state.counts.values()) if state is not None else 0)
            sys.exit(EXIT_PROBLEMS if plan.findings or pending else EXIT_CLEAN)
        res = _execute(ops, plan, err)
    except KafkalogError as exc:
        fail(exc.describe(), exc.hint or "kafkalog replay --help shows the inputs it takes")
        return
    if fmt == "json":
        out(json.dumps(render.result_doc(res), ensure_ascii=False))
    else:
        for line in render.result_lines(res):
            out(line)
    if res.interrupted:
        sys.exit(EXIT_INTERRUPTED)
    if res.error:
        sys.exit(EXIT_USAGE)
    sys.exit(EXIT_PROBLEMS if plan.findings else EXIT_CLEAN)


def _execute(ops, plan, err):  # noqa: ANN001, ANN202
    """--execute, with a records bar on a terminal."""
    total = plan.records
    if not sys.stderr.isatty():
        return ops.execute(plan, log=err)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=Console(file=sys.stderr), transient=True) as bar:
        task = bar.add_task("replay", total=total)

        def progress(acked: int) -> None:
            bar.update(task, completed=acked)

        return ops.execute(plan, progress=progress, log=err)
