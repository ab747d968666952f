"""``export``'s summary: records written per partition, batches skipped as corrupt (each located), records dropped
by the isolation level, as text lines or one JSON document (``schema_version``, snake_case keys)."""

from __future__ import annotations

from typing import Any

from kafkalog_cli.ops.export import ExportSummary

SCHEMA_VERSION = 1


def summary_doc(s: ExportSummary, fmt: str, out: str) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "command": "export",
        "format": fmt,
        "out": out,
        "isolation": s.isolation,
        "records": s.records,
        "corrupt_batches": s.corrupt_batches,
        "partitions": [p.as_dict() for p in s.partitions],
        "notes": list(s.notes),
        "exit_code": s.exit_code(),
    }


def summary_lines(s: ExportSummary, fmt: str, out: str) -> list[str]:
    lines = []
    for p in s.partitions:
        rng = f" (offsets {p.first_offset}..{p.last_offset})" if p.first_offset is not None else ""
        dropped = []
        if p.aborted_records:
            dropped.append(f"{p.aborted_records} aborted")
        if p.open_records:
            dropped.append(f"{p.open_records} in open transactions")
        if p.control_dropped:
            dropped.append(f"{p.control_dropped} control")
        if p.duplicate_records:
            dropped.append(f"{p.duplicate_records} duplicate offsets")
        if p.below_log_start:
            dropped.append(f"{p.below_log_start} below the log start offset {p.log_start}")
        extra = f"; dropped {', '.join(dropped)}" if dropped else ""
        markers = f", {p.control_records} markers" if p.control_records else ""
        conv = f", {p.converted_entries} v0/v1 entries converted to v2" if p.converted_entries else ""
        where = f" -> {p.output}" if p.output else ""
        lines.append(f"{p.topic}-{p.partition}: {p.records} records in {p.batches} batches{rng}{markers}{conv}"
                     f"{extra}{where}")
        for f in p.findings:
            at = f" offset {f.offset}" if f.offset is not None else ""
            lines.append(f"  SKIPPED {f.kind} {f.file} bytes [{f.position}, {f.end}){at}: {f.message}")
        for note in p.notes:
            lines.append(f"  note: {note}")
    for note in s.notes:
        lines.append(f"note: {note}")
    total = (f"exported {s.records} records of {len(s.partitions)} partition(s) as {fmt} ({s.isolation})"
             f"{' to ' + out if out != '-' else ''}")
    if s.corrupt_batches:
        hint = next((f.hint for p in s.partitions for f in p.findings), "")
        total += f"; {s.corrupt_batches} corrupt batch(es) or range(s) skipped (listed above): {hint}"
    lines.append(total)
    return lines
