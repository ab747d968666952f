"""The text and JSON of ``verify-crc`` (cli/verify.py prints them): one line per finding (coloured by severity when
asked), the next steps and the verdict; the rich table on a wide terminal; the JSON document."""

from __future__ import annotations

import os
import sys
from typing import Any

from kafkalog_cli.render.colour import PLAIN, Palette

# below this width the six-column table folds every cell into a column of a few characters (73 broken lines for a
# 6-line report at 80 columns, the usual SSH window): one problem per line reads better there
TABLE_MIN_COLUMNS = 120


def next_lines(result: Any) -> list[str]:
    from kafkalog_cli.render.next_steps import next_steps

    return next_steps(result.all_problems())


def summary(result: Any) -> dict[str, Any]:
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


def document(result: Any) -> dict[str, Any]:
    return {
        "files": [f.to_dict() for f in result.files],
        "problems": [p.to_dict() for p in result.all_problems()],
        "notes": [p.to_dict() for p in result.all_notes()],
        "next_steps": next_lines(result),
        "summary": summary(result),
    }


def offsets(p: Any) -> str:
    if p.last_good_offset is None and p.first_good_offset is None:
        return ""
    last = "none" if p.last_good_offset is None else str(p.last_good_offset)
    first = "none" if p.first_good_offset is None else str(p.first_good_offset)
    return f" [last good offset {last}, first good offset {first}]"


# notes about the input itself, not about healthy data: shown in the default view too
INPUT_NOTES = frozenset({"no-segment"})


def shown_notes(result: Any, show_notes: bool) -> list[Any]:
    """Healthy data prints no info note (issue 27); beside problems the notes are context, so they are listed."""
    if show_notes or result.all_problems():
        return result.all_notes()
    return [n for n in result.all_notes() if n.kind in INPUT_NOTES]


def lines(result: Any, show_notes: bool = True, palette: Palette = PLAIN) -> list[str]:
    """Healthy data prints no info notes by default (issue 27): the summary counts them, ``--notes`` lists them
    (``_shown_notes``)."""
    out = []
    for p in result.all_problems() + shown_notes(result, show_notes):
        out.append(f"{p.file}:{p.position}-{p.end}: {palette.severity(p.severity + ' ' + p.kind, p.severity)}: "
                   f"{p.message}{offsets(p)}")
    out += [f"next: {step}" for step in next_lines(result)]
    s = summary(result)
    status = "OK" if s["exit_code"] == 0 else "UNREADABLE" if s["unreadable"] else "PROBLEMS"
    out.append(
        f"{palette.severity(status, 'ok' if status == 'OK' else 'error')}: {s['files']} files, {s['bytes']} bytes, {s['batches']} batches verified; {s['problems']} problems, "
        f"{s['notes']} notes" + (" (--notes lists them)" if len(shown_notes(result, show_notes)) < s["notes"] else "")
        + f", {s['corrupt_bytes']} corrupt bytes in {s['corrupt_regions']} regions"
    )
    return out


def rich_report(result: Any, show_notes: bool = True, color: bool | None = None) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(file=sys.stdout, highlight=False, no_color=not color if color is not None else None)
    rows = result.all_problems() + shown_notes(result, show_notes)
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
    for step in next_lines(result):
        console.print(f"[bold]next:[/] {escape(step)}")
    s = summary(result)
    colour = "green" if s["exit_code"] == 0 else "red"
    console.print(
        f"[{colour}]{'clean' if s['exit_code'] == 0 else 'problems found'}[/]: {s['files']} files, "
        f"{s['bytes']:,} bytes, {s['batches']:,} batches; {s['problems']} problems, {s['notes']} notes, "
        f"{s['corrupt_bytes']:,} corrupt bytes in {s['corrupt_regions']} regions"
    )

