"""``kafkalog verify-crc``: map every corrupt byte range of segments, partitions or a whole log directory."""

from __future__ import annotations

import json
import shutil
import sys
from typing import Any

import click

from kafkalog_cli.cli.common import ByteProgress, color_enabled, color_option, fail, line_writers
from kafkalog_cli.render.jsondoc import versioned


@click.command(
    "verify-crc",
    epilog="""\b
Examples:
  kafkalog verify-crc /var/lib/kafka/orders-0/00000000000000368769.log
  kafkalog verify-crc --jobs 2 /var/lib/kafka
  kafkalog verify-crc --deep orders-0/
  kafkalog verify-crc --format json /var/lib/kafka | jq '.problems[] | select(.kind=="crc-mismatch")'

\b
Each corrupt region is reported as [start, end) bytes with the last good offset
before it and the first good offset after it; the walk resyncs on the next entry
whose header is plausible and whose CRC verifies, so intact batches after the
damage are still checked. Zero-filled (preallocated) tails are info, not problems.

\b
Exit codes: 0 clean, 1 problems found, 2 usage error or a path cannot be read.""",
)
@click.argument("paths", nargs=-1, type=click.Path(), metavar="PATH...")
@click.option("--deep", is_flag=True, help="Also decompress each batch and parse every record to its end.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text = a table on a terminal of 120 columns or more, one line per problem otherwise; "
                   "json = one JSON document.")
@click.option("--plain", is_flag=True, help="One line per problem even on a wide terminal (no table, no colour).")
@click.option("--jobs", "-j", type=int, default=1, show_default=True, help="Verify segments in N processes.")
@click.option("--max-batch-size", type=int, default=256 * 1024 * 1024, show_default=True,
              help="Largest declared or decompressed batch accepted; larger ones are reported, never allocated.")
@click.option("--max-problems", type=int, default=10_000, show_default=True,
              help="Problems kept per file (more are counted, not listed). Given, it also lists an index's "
                   "findings slot by slot (default: one finding per kind with slot ranges).")
@click.option("--no-index", is_flag=True, help="Skip the .index/.timeindex checks.")
@click.option("--notes", "show_notes", is_flag=True,
              help="Also list the info notes (preallocated tails, leftovers the broker deletes, ...); by default "
                   "they are only counted, JSON always lists them.")
@color_option
def verify_crc(paths: tuple[str, ...], deep: bool, fmt: str, plain: bool, jobs: int, max_batch_size: int,
               max_problems: int, no_index: bool, show_notes: bool, color: str) -> None:
    """Verify CRCs, lengths, offsets, timestamps, indexes and companion files of Kafka log data.

    PATH is a segment (.log), a partition directory or a whole log directory."""
    from kafkalog_cli.ops import verify as ops

    if not paths:
        fail("no path given", "kafkalog verify-crc /var/lib/kafka/orders-0")
    if jobs < 1:
        fail(f"--jobs must be at least 1, found {jobs}", "use --jobs 2 on a two-core host")
    if max_batch_size < 61:
        fail(f"--max-batch-size must be at least 61 (a v2 batch header), found {max_batch_size}")
    if max_problems < 1:
        fail(f"--max-problems must be at least 1, found {max_problems}")
    out, err = line_writers()
    progress_ctx = ByteProgress("verifying") if sys.stderr.isatty() else None
    given = click.get_current_context().get_parameter_source("max_problems") != click.core.ParameterSource.DEFAULT
    kwargs: dict[str, Any] = dict(deep=deep, max_batch_size=max_batch_size, jobs=jobs, max_problems=max_problems,
                                  indexes=not no_index, group_index=not given)
    if progress_ctx is not None:
        with progress_ctx as (advance, set_total):
            result = ops.verify_paths(list(paths), progress=advance, on_total=set_total, **kwargs)
    else:
        result = ops.verify_paths(list(paths), **kwargs)
    from kafkalog_cli.render import verify as text
    from kafkalog_cli.render.colour import Palette

    if fmt == "json":
        out(json.dumps(versioned(text.document(result)), separators=(",", ":")))
    elif sys.stdout.isatty() and not plain and shutil.get_terminal_size().columns >= text.TABLE_MIN_COLUMNS \
            and color != "never":
        text.rich_report(result, show_notes, color=color_enabled(color))
    else:
        for line in text.lines(result, show_notes, Palette(color_enabled(color) and not plain)):
            out(line)
    for f in result.files:
        if f.unreadable:
            for p in f.problems:
                err(f"kafkalog: error: {p.message}")
    if result.unreadable:
        err("hint: check the path and its permissions (verify-crc only needs read access)")
    sys.stdout.flush()
    sys.exit(result.exit_code())
