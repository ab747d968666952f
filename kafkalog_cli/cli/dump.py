"""``kafkalog dump``: DumpLogSegments-compatible output for segments, indexes, snapshots and companion files."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from kafkalog_cli.cli.common import (
    EXIT_USAGE,
    ByteProgress,
    StdoutSink,
    assumed_kafka_version,
    complete_decoder_class,
    fail,
    kafka_version_option,
    resolve_profile,
)
from kafkalog_cli.render.dump_notes import dump_hints

if TYPE_CHECKING:
    from kafkalog_cli.render.dls import DlsRenderer
    from kafkalog_cli.render.jsonl import JsonRenderer
    from kafkalog_cli.render.records import RecordRenderer

DECODER_FLAGS = (
    ("offsets_decoder", "offsets"),
    ("transaction_log_decoder", "transaction-log"),
    ("cluster_metadata_decoder", "cluster-metadata"),
    ("remote_log_metadata_decoder", "remote-log-metadata"),
    ("share_group_state_decoder", "share-group-state"),
)


@click.command(
    "dump",
    epilog="""\b
Examples:
  kafkalog dump /var/lib/kafka/orders-0/00000000000000000000.log
  kafkalog dump --deep-iteration --print-data-log --kafka-version 3.6 orders-0/
  kafkalog dump --files 00000000000000000000.index,00000000000000000000.timeindex
  kafkalog dump --format json --print-data-log 00000000000000000000.log | jq .
  kafkalog dump --deep-iteration --producer-id 4001 --start-time 2024-06-15T09:55Z \
      --end-time 2024-06-15T10:05Z orders-0/
  kafkalog dump --records --offset 368800 --count 10 orders-0/
  kafkalog dump --records -f '%o %I %k=%s\\n' orders-0/

Exit codes: 0 clean, 1 invalid batches / index mismatches / trailing bytes / corrupt
input found, 2 usage error or unreadable file.""",
)
@click.argument("paths", nargs=-1, type=click.Path(), metavar="[FILE|DIR]...")
@click.option("--files", "files_opt", help="Comma-separated list of files (as kafka-dump-log.sh takes them).")
@click.option("--print-data-log", is_flag=True, help="Print the key and payload of each record (implies --deep-iteration).")
@click.option("--deep-iteration", is_flag=True, help="Iterate the records inside each batch.")
@click.option("--verify-index-only", is_flag=True, help="For .index/.timeindex: verify against the log, print no entries.")
@click.option("--index-sanity-check", is_flag=True, help="For .index/.timeindex: run only the broker's sanity check.")
@click.option("--max-message-size", type=int, default=5 * 1024 * 1024, show_default=True,
              help="Byte window read at each indexed position when verifying an .index.")
@click.option("--max-bytes", type=int, default=None, help="Examine only the first N bytes of each .log/.checkpoint.")
@click.option("--skip-record-metadata", is_flag=True, help="Print no per-record metadata (and nothing for control records).")
@click.option("--key-decoder-class", is_flag=False, flag_value="", default=None, shell_complete=complete_decoder_class,
              help="StringDecoder (default), IntegerDecoder, LongDecoder or DefaultDecoder. Implies --print-data-log.")
@click.option("--value-decoder-class", is_flag=False, flag_value="", default=None, shell_complete=complete_decoder_class,
              help="As --key-decoder-class, for values. Implies --print-data-log.")
@click.option("--key-decoder", "key_decoder", type=click.Choice(["schema-registry"]), default=None,
              help="Decode keys written by schema-registry serializers (Avro, Protobuf, JSON). Implies --print-data-log.")
@click.option("--value-decoder", "value_decoder", type=click.Choice(["schema-registry"]), default=None,
              help="As --key-decoder, for values; the registry comes from --schemas or the _schemas beside the input.")
@click.option("--schemas", "schemas_dirs", multiple=True, type=click.Path(), metavar="LOGDIR",
              help="Log dir(s) holding the registry's _schemas partition (repeatable; docs/schemas.md).")
@click.option("--schemas-wire", type=click.Choice(["confluent", "apicurio"]), default="confluent", show_default=True,
              help="The id prefix: Confluent's 4-byte id or Apicurio's 8-byte global id.")
@click.option("--validate", is_flag=True, help="With a schema-registry decoder: validate JSON Schema values.")
@click.option("--offsets-decoder", is_flag=True, help="Decode records as __consumer_offsets records.")
@click.option("--transaction-log-decoder", is_flag=True, help="Decode records as __transaction_state records.")
@click.option("--cluster-metadata-decoder", is_flag=True, help="Decode records as KRaft __cluster_metadata records.")
@click.option("--remote-log-metadata-decoder", is_flag=True, help="Decode records as __remote_log_metadata records.")
@click.option("--share-group-state-decoder", is_flag=True, help="Decode records as __share_group_state records.")
@kafka_version_option("Reproduce the output")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text = DumpLogSegments lines; json = one JSON object per line.")
@click.option("--gap-tracker", type=click.Choice(["scala", "java"]), default="scala", show_default=True,
              help="Non-consecutive offset check: Scala tool (ignores each file's first record) or Kafka 4.3's Java port.")
@click.option("--max-decompressed-size", type=int, default=256 * 1024 * 1024, show_default=True,
              help="Largest decompressed batch accepted; larger ones are reported, never allocated.")
@click.option("--offset", "win_offset", type=int, default=None, metavar="N",
              help="Window: only records at offset N or later (the offset index finds where to start).")
@click.option("--count", "win_count", type=click.IntRange(min=1), default=None, metavar="K",
              help="Window: at most K records per partition.")
@click.option("--start-time", default=None, metavar="T",
              help="Window: only records with a timestamp >= T (seek-time's forms: ISO-8601 in UTC, epoch s or ms, -1h).")
@click.option("--end-time", default=None, metavar="T", help="Window: only records with a timestamp <= T.")
@click.option("--producer-id", type=int, default=None, metavar="P", help="Window: only batches of producer id P.")
@click.option("--records", "records_view", is_flag=True,
              help="One line per record (kcat style, see --record-format); with --format json one kcat -J object per record.")
@click.option("-f", "--record-format", default=None, metavar="FMT",
              help="With --records: the line format, kcat's tokens (%t %p %o %T %k %K %s %S %h) and %I %P %E "
                   "[default: '%o %I %k %s\\n'].")
def dump(paths: tuple[str, ...], files_opt: str | None, print_data_log: bool, deep_iteration: bool,
         verify_index_only: bool, index_sanity_check: bool, max_message_size: int, max_bytes: int | None,
         skip_record_metadata: bool, key_decoder_class: str | None, value_decoder_class: str | None,
         offsets_decoder: bool, transaction_log_decoder: bool, cluster_metadata_decoder: bool,
         remote_log_metadata_decoder: bool, share_group_state_decoder: bool, kafka_version: str | None, fmt: str,
         gap_tracker: str, max_decompressed_size: int, win_offset: int | None, win_count: int | None,
         start_time: str | None, end_time: str | None, producer_id: int | None, records_view: bool,
         record_format: str | None, key_decoder: str | None = None,
         value_decoder: str | None = None, schemas_dirs: tuple[str, ...] = (), schemas_wire: str = "confluent",
         validate: bool = False) -> None:
    """Dump log segments, indexes, producer snapshots and companion files, with the exact text
    DumpLogSegments (kafka-dump-log.sh) prints for the chosen Kafka version.

    FILE can be any file of a partition directory; a DIR dumps every file in it in offset order."""
    from kafkalog_cli.ops.dump import Dumper, DumpOptions
    from kafkalog_cli.render.parsers import DecoderParser, resolve_decoder

    profile = resolve_profile(assumed_kafka_version(kafka_version))
    args = list(paths)
    if files_opt is not None:
        items = files_opt.split(",")
        if "," in files_opt:
            while items and items[-1] == "":
                items.pop()  # Java's String.split drops trailing empty strings ("," gives no file at all)
        args += items
    if not args and files_opt is None:
        fail("no files given", "kafkalog dump FILE... or --files A,B")
    if max_bytes is not None and max_bytes < 0:
        fail(f"Invalid size: {max_bytes} for --max-bytes", code=EXIT_USAGE)
    flags = {
        "offsets_decoder": offsets_decoder,
        "transaction_log_decoder": transaction_log_decoder,
        "cluster_metadata_decoder": cluster_metadata_decoder,
        "remote_log_metadata_decoder": remote_log_metadata_decoder,
        "share_group_state_decoder": share_group_state_decoder,
    }
    decoder_kinds = [kind for flag, kind in DECODER_FLAGS if flags[flag]]
    for kind in decoder_kinds:
        if kind in profile.missing_decoders:
            fail(f"--{kind}-decoder is not an option of Kafka {profile.label}'s DumpLogSegments (it came with "
                 f"{profile.missing_decoders[kind]}): that release's tool stops with jopt-simple's "
                 f"UnrecognizedOptionException before it reads a file",
                 f"use --kafka-version {profile.missing_decoders[kind]} or later for the decode", code=EXIT_USAGE)
    print_data = (
        print_data_log or bool(decoder_kinds) or key_decoder_class is not None or value_decoder_class is not None
        or key_decoder is not None or value_decoder is not None or records_view
    )
    window = _window(win_offset, win_count, start_time, end_time, producer_id, records_view)
    if record_format is not None and not records_view:
        fail("--record-format formats the lines of --records", "add --records (one line per record)")
    opts = DumpOptions(
        print_data_log=print_data,
        deep_iteration=deep_iteration or print_data,
        verify_index_only=verify_index_only,
        index_sanity_check=index_sanity_check,
        max_message_size=max_message_size,
        max_bytes=2147483647 if max_bytes is None else max_bytes,
        max_bytes_given=max_bytes is not None and max_bytes != 2147483647,
        skip_record_metadata=skip_record_metadata,
        decompress_limit=max_decompressed_size,
        gap_tracker=gap_tracker,
        timeindex_needs_index=fmt == "text",
        window=window,
    )
    notices: list[str] = []
    if decoder_kinds:
        try:
            from kafkalog_cli.internal_topics import make_parser
        except ImportError:
            fail("internal-topic decoders are not available in this build",
                 "the kafkalog_cli.internal_topics package is missing; reinstall kafkalog from a complete source checkout")
        opts.parser = make_parser(decoder_kinds[0], profile)
        if fmt == "json":
            from kafkalog_cli.internal_topics import decode_json

            kind = decoder_kinds[0]
            opts.json_decoder = lambda record: decode_json(kind, record)
    else:
        try:
            kdec = resolve_decoder(key_decoder_class)
            vdec = resolve_decoder(value_decoder_class)
        except ValueError as exc:
            fail(str(exc), "TAB after --value-decoder-class lists the decoders, e.g. StringDecoder")
        opts.parser = DecoderParser(kdec, vdec, tombstone_key=bool(profile.tombstone_key))
        if key_decoder or value_decoder:
            opts.parser, opts.json_decoder = _schema_registry_parser(args, schemas_dirs, kdec, vdec, key_decoder,
                                                                     value_decoder, schemas_wire, validate,
                                                                     bool(profile.tombstone_key))
        if profile.deprecated_decoder_notice:
            for name in (value_decoder_class, key_decoder_class):
                if name and name.startswith("kafka.serializer."):
                    short = name.rsplit(".", 1)[1]
                    notices.append(f"{name} is deprecated. Please use org.apache.kafka.tools.api.{short} instead")

    sink = StdoutSink()
    out, err = sink.out, sink.err
    renderer: JsonRenderer | DlsRenderer | RecordRenderer
    if records_view:
        from kafkalog_cli.render.dls import DlsRenderer
        from kafkalog_cli.render.records import DEFAULT_FORMAT, FormatError, RecordRenderer

        try:
            renderer = RecordRenderer(None if fmt == "json" else (record_format or DEFAULT_FORMAT), sink.out_bytes,
                                      DlsRenderer(profile, opts, lambda _line: None, err),
                                      opts.parser if key_decoder or value_decoder else None)
        except FormatError as exc:
            fail(str(exc), "e.g. -f '%o %T %k %s\\n' (offset, timestamp, key, value)", code=EXIT_USAGE)
    elif fmt == "json":
        from kafkalog_cli.render.jsonl import JsonRenderer

        renderer = JsonRenderer(opts, out, err, out_bytes=sink.out_bytes if sink.utf8 else None)
        if sink.utf8:
            opts.fast = renderer.fast_formatter()
            opts.fast_run = renderer.fast_run()
    else:
        from kafkalog_cli.render.dls import DlsRenderer

        renderer = DlsRenderer(profile, opts, out, err, out_bytes=sink.out_bytes if sink.utf8 else None)
        if (sys.stdout.encoding or "").lower().replace("-", "") == "utf8":
            opts.fast = renderer.fast_formatter()
            opts.fast_run = renderer.fast_run()
    dumper = Dumper(profile, opts)
    events = dumper.run(args)
    import gc

    gc.freeze()  # the objects of start-up are never garbage: the collector need not walk them again per batch
    try:
        # a progress bar only where it cannot mix with the dump itself: stderr a terminal, stdout redirected
        if sys.stderr.isatty() and not sys.stdout.isatty() and fmt == "text" and window is None:
            with ByteProgress("dumping") as (advance, set_total):
                set_total(_total_bytes(args))
                _run(_with_progress(events, advance), renderer, notices, out)
        else:
            _run(events, renderer, notices, out)
        renderer.summary(dumper.summary)
    except (KeyboardInterrupt, BrokenPipeError):
        raise  # main() drops what is buffered (a reader that stopped reading must not block the exit)
    except BaseException:
        sink.flush()  # what was dumped before an unexpected error still reaches stdout, before the error line
        raise
    finally:
        gc.unfreeze()  # an in-process caller (tests, an embedding tool) gets its collector back as it was
    sink.flush()
    for note in dumper.window_notes:
        err(f"kafkalog: note: {note}")
    if sys.stderr.isatty():  # an operator reading; scripts and Kafka-compatible captures get Kafka's streams only
        for hint in dump_hints(dumper.summary, args):
            err(f"hint: {hint}")
    verdict = _input_verdicts(args, err)
    sys.exit(max(dumper.summary.exit_code(), verdict))


def _schema_registry_parser(args: list[str], schemas_dirs: tuple[str, ...], kdec, vdec, key_decoder: str | None,  # noqa: ANN001
                            value_decoder: str | None, wire: str, validate: bool, tombstone_key: bool):  # noqa: ANN202
    """``--key-decoder``/``--value-decoder schema-registry``: the registry from ``--schemas`` or beside the input
    (docs/schemas.md), and the record parser and JSON decode over it."""
    import os

    from kafkalog_cli.errors import KafkalogError
    from kafkalog_cli.internal_topics.schema_decode import Decoder, SchemaRegistryParser
    from kafkalog_cli.internal_topics.schema_registry import Registry
    from kafkalog_cli.ops.schemas import load_registry, registry_beside

    try:
        if schemas_dirs:
            reg = load_registry(list(schemas_dirs))
        elif any(os.path.exists(a) for a in args):
            reg = registry_beside([a for a in args if os.path.exists(a)])
        else:
            reg = Registry()  # nothing to dump: the dump itself reports the missing files
    except KafkalogError as exc:
        fail(exc.describe(), exc.hint)
    parser = SchemaRegistryParser(Decoder(reg, wire=wire, validate=validate), key=key_decoder is not None,
                                  value=value_decoder is not None, key_fallback=kdec, value_fallback=vdec,
                                  tombstone_key=tombstone_key)
    return parser, parser.json


def _window(offset: int | None, count: int | None, start: str | None, end: str | None, producer_id: int | None,
            records_view: bool):  # noqa: ANN202
    """The window of the options (``ops/dump_window.Window``), or None when none is given (``--records`` alone
    walks every segment's records: a window without limits)."""
    if offset is None and count is None and start is None and end is None and producer_id is None and not records_view:
        return None
    from kafkalog_cli.cli.timespec import FORMATS_HINT, parse_time
    from kafkalog_cli.ops.dump_window import Window

    times: list[int | None] = []
    for name, text in (("--start-time", start), ("--end-time", end)):
        if text is None:
            times.append(None)
            continue
        try:
            times.append(parse_time(text).ms)
        except ValueError as exc:
            fail(f"{name}: {exc}", FORMATS_HINT, code=EXIT_USAGE)
    if times[0] is not None and times[1] is not None and times[1] < times[0]:
        fail(f"--end-time {end} is before --start-time {start}", "give the earlier time to --start-time",
             code=EXIT_USAGE)
    return Window(offset=offset, count=count, start_ms=times[0], end_ms=times[1], producer_id=producer_id)


def _input_verdicts(args: list[str], err) -> int:  # noqa: ANN001
    """What Kafka's tool says nothing about (issue 27; the table of empty and non-Kafka inputs in docs/commands.md): a stray
    ``.log`` (``0.log``) the broker never reads is dumped, then named on stderr (exit 1, as verify-crc's
    ``stray-log``); a directory with no file to dump is an error (exit 2), an empty partition directory a note."""
    import os

    from kafkalog_cli.render import dump_notes as notes
    from kafkalog_cli.storage import layout
    from kafkalog_cli.storage.partition_name import names_a_partition
    from kafkalog_cli.storage.paths import directory_files

    code = 0
    for a in args:
        if os.path.isdir(a):
            try:
                names = os.listdir(a)
                files = directory_files(a)
            except OSError:
                continue  # reported by the dump itself
            strays = layout.stray_logs([n for n in names if os.path.isfile(os.path.join(a, n))])
            where = a
        elif os.path.isfile(a):
            files, strays, where = [a], layout.stray_logs([os.path.basename(a)]), os.path.dirname(a) or "."
        else:
            continue
        for st in strays:
            err(notes.stray_note(os.path.join(where, st.name), st.fate))
            code = max(code, 1)
        if not files and names_a_partition(a):
            err(notes.empty_partition_note(a))
        elif not files:
            for line in notes.nothing_to_dump(a):
                err(line)
            code = 2
    return code


def _run(events, renderer, notices: list[str], out) -> None:  # noqa: ANN001
    from kafkalog_cli.ops.dump import FileBegin

    for ev in events:
        renderer.handle(ev)
        if notices and isinstance(ev, FileBegin) and ev.kind in ("log", "checkpoint"):
            for n in notices:
                out(n)


def _total_bytes(args: list[str]) -> int:
    import os

    from kafkalog_cli.storage.paths import directory_files

    total = 0
    for a in args:
        try:
            files = directory_files(a) if os.path.isdir(a) else [a]
        except OSError:
            continue
        for f in files:
            try:
                total += os.path.getsize(f)
            except OSError:
                pass
    return total


def _with_progress(events, advance, step: int = 4 << 20):  # noqa: ANN001, ANN202
    """Pass events through, advancing the bar by the bytes of each batch (in steps, to keep the cost negligible)."""
    from kafkalog_cli.ops.dump import BatchEvent, FormattedBatch, FormattedRun

    pending = 0
    for ev in events:
        if isinstance(ev, (BatchEvent, FormattedBatch)):
            pending += ev.entry.size
        elif isinstance(ev, FormattedRun):
            pending += ev.size
        if pending >= step:
            advance(pending)
            pending = 0
        yield ev
    if pending:
        advance(pending)
