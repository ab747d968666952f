"""``kafkalog verify-crc``: map every corrupt byte range of segments, partitions or a whole log directory."""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any

import click

from kafkalog_cli.cli.common import ByteProgress, fail, line_writers
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
def verify_crc(paths: tuple[str, ...], deep: bool, fmt: str, plain: bool, jobs: int, max_batch_size: int,
               max_problems: int, no_index: bool, show_notes: bool) -> None:
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
    if fmt == "json":
        out(json.dumps(versioned(_document(result)), separators=(",", ":")))
    elif sys.stdout.isatty() and not plain and shutil.get_terminal_size().columns >= TABLE_MIN_COLUMNS:
        _rich_report(result, show_notes)
    else:
        for line in _lines(result, show_notes):
            out(line)
    for f in result.files:
        if f.unreadable:
            for p in f.problems:
                err(f"kafkalog: error: {p.message}")
    if result.unreadable:
        err("hint: check the path and its permissions (verify-crc only needs read access)")
    sys.stdout.flush()
    sys.exit(result.exit_code())


# ---------------------------------------------------------------------------------------------------- output
# below this width the six-column table folds every cell into a column of a few characters (73 broken lines for a
# 6-line report at 80 columns, the usual SSH window): one problem per line reads better there
TABLE_MIN_COLUMNS = 120


def _next(result: Any) -> list[str]:
    from kafkalog_cli.render.next_steps import next_steps

    return next_steps(result.all_problems())


def _summary(result: Any) -> dict[str, Any]:
    from kafkalog_cli.storage.verify_model import SegmentReport

    segs = [f for f in result.files if isinstance(f, SegmentReport)]
    return {
        "files": len(result.files),
        "segments": len(segs),
        "bytes": sum(f.bytes_checked for f in result.files),
        "batches": sum(s.batches for s in segs),
        "records": sum(s.records for s in segs),
        "problems": result.problem_count,
        "notes": len(result.all_notes()),
        "corrupt_bytes": sum(s.corrupt_bytes for s in segs),
        "corrupt_regions": sum(s.regions for s in segs),
        "unreadable": result.unreadable,
        "exit_code": result.exit_code(),
    }


def _document(result: Any) -> dict[str, Any]:
    return {
        "files": [f.to_dict() for f in result.files],
        "problems": [p.to_dict() for p in result.all_problems()],
        "notes": [p.to_dict() for p in result.all_notes()],
        "next_steps": _next(result),
        "summary": _summary(result),
    }


def _offsets(p: Any) -> str:
    if p.last_good_offset is None and p.first_good_offset is None:
        return ""
    last = "none" if p.last_good_offset is None else str(p.last_good_offset)
    first = "none" if p.first_good_offset is None else str(p.first_good_offset)
    return f" [last good offset {last}, first good offset {first}]"


# notes about the input itself, not about healthy data: shown in the default view too
INPUT_NOTES = frozenset({"no-segment"})


def _shown_notes(result: Any, show_notes: bool) -> list[Any]:
    """Healthy data prints no info note (issue 27); beside problems the notes are context, so they are listed."""
    if show_notes or result.all_problems():
        return result.all_notes()
    return [n for n in result.all_notes() if n.kind in INPUT_NOTES]


def _lines(result: Any, show_notes: bool = True) -> list[str]:
    """Healthy data prints no info notes by default (issue 27): the summary counts them, ``--notes`` lists them
    (``_shown_notes``)."""
    lines = []
    for p in result.all_problems() + _shown_notes(result, show_notes):
        lines.append(f"{p.file}:{p.position}-{p.end}: {p.severity} {p.kind}: {p.message}{_offsets(p)}")
    lines += [f"next: {step}" for step in _next(result)]
    s = _summary(result)
    status = "OK" if s["exit_code"] == 0 else "UNREADABLE" if s["unreadable"] else "PROBLEMS"
    lines.append(
        f"{status}: {s['files']} files, {s['bytes']} bytes, {s['batches']} batches verified; {s['problems']} problems, "
        f"{s['notes']} notes" + (" (--notes lists them)" if len(_shown_notes(result, show_notes)) < s["notes"] else "")
        + f", {s['corrupt_bytes']} corrupt bytes in {s['corrupt_regions']} regions"
    )
    return lines


def _rich_report(result: Any, show_notes: bool = True) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(file=sys.stdout, highlight=False, no_color=bool(os.environ.get("NO_COLOR")) or None)
    rows = result.all_problems() + _shown_notes(result, show_notes)
    if rows:
        table = Table(show_lines=False, header_style="bold")
        for col in ("File", "Bytes [start, end)", "Severity", "Kind", "Offsets (last good / first good)", "Message"):
            table.add_column(col, overflow="fold")
        style = {"error": "red", "warning": "yellow", "info": "dim"}
        for p in rows:
            offs = ""
            if p.last_good_offset is not None or p.first_good_offset is not None:
                offs = f"{p.last_good_offset if p.last_good_offset is not None else '-'} / " \
                       f"{p.first_good_offset if p.first_good_offset is not None else '-'}"
            table.add_row(os.path.relpath(p.file) if not p.file.startswith("..") else p.file,
                          f"[{p.position}, {p.end})", f"[{style.get(p.severity, '')}]{p.severity}[/]", p.kind, offs,
                          p.message)
        console.print(table)
    for step in _next(result):
        console.print(f"[bold]next:[/] {escape(step)}")
    s = _summary(result)
    colour = "green" if s["exit_code"] == 0 else "red"
    console.print(
        f"[{colour}]{'clean' if s['exit_code'] == 0 else 'problems found'}[/]: {s['files']} files, "
        f"{s['bytes']:,} bytes, {s['batches']:,} batches; {s['problems']} problems, {s['notes']} notes, "
        f"{s['corrupt_bytes']:,} corrupt bytes in {s['corrupt_regions']} regions"
    )

