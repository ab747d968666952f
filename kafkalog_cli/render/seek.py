"""The text and JSON of ``seek-offset`` and ``seek-time``: the batch (and record) found, as ``dump`` prints them,
and the warnings and read findings on stderr. The commands (cli/seek.py) only choose and print."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kafkalog_cli.ops import dump as d
from kafkalog_cli.render.jsondoc import versioned
from kafkalog_cli.timefmt import when

Write = Callable[[str], None]


def offset_json(res: Any, profile: Any) -> str:
    """seek-offset's JSON document: the batch (and record) as the dump command's JSON objects."""
    from kafkalog_cli.render.jsonl import JsonRenderer
    from kafkalog_cli.render.parsers import DecoderParser

    lines: list[str] = []
    opts = d.DumpOptions(print_data_log=True, deep_iteration=True,
                         parser=DecoderParser(tombstone_key=bool(profile.tombstone_key)))
    r = JsonRenderer(opts, lines.append, lambda _s: None)
    e = res.entry
    r.on_BatchEvent(d.BatchEvent(e, res.valid, res.computed_crc, res.segment))
    out: dict[str, Any] = {"segment": res.segment, "position": res.position, "batch": json.loads(lines[-1]),
                           "batch_base_offset": res.batch_base_offset, "batch_last_offset": e.last_offset}
    if res.record is not None:
        ev = d.Dumper(profile, opts)._record_event(e, res.record)
        r.on_RecordEvent(ev)
        out["record"] = json.loads(lines[-1])
        out["offset"] = res.record.offset
        out["timestamp"] = res.record.timestamp
    out["exact"] = res.exact
    return json.dumps(versioned(out))


def offset_text(res: Any, profile: Any, print_data_log: bool, out: Write) -> None:
    """seek-offset's text: the segment, then the batch line (and the record line) as DumpLogSegments prints them."""
    from kafkalog_cli.render.dls import DlsRenderer
    from kafkalog_cli.render.parsers import DecoderParser

    opts = d.DumpOptions(print_data_log=print_data_log, deep_iteration=print_data_log,
                         parser=DecoderParser(tombstone_key=bool(profile.tombstone_key)))
    r = DlsRenderer(profile, opts, out, lambda _s: None)
    e = res.entry
    out(f"Segment: {res.segment}")
    r.on_BatchEvent(d.BatchEvent(e, res.valid, res.computed_crc, res.segment))
    if print_data_log and res.record is not None:
        r.on_RecordEvent(d.Dumper(profile, opts)._record_event(e, res.record))


def time_json(res: Any, target: int) -> str:
    rec = res.record
    return json.dumps(versioned({"offset": rec.offset, "timestamp": rec.timestamp, "target": target,
                                 "segment": res.segment, "position": res.position,
                                 "batch_base_offset": res.batch_base_offset,
                                 "batch_last_offset": res.entry.last_offset}))


def time_text(res: Any, now_ms: int | None = None) -> str:
    """seek-time's answer: ``offset: N timestamp: MS segment: S position: P time: <UTC ISO-8601> (<age>)``; the
    first four fields as before, the time people read last."""
    rec = res.record
    return (f"offset: {rec.offset} timestamp: {rec.timestamp} segment: {res.segment} position: {res.position} "
            f"time: {when(rec.timestamp, now_ms)}")


def finish_lines(res: Any, stats: Any, verbose: bool) -> list[str]:
    """What follows the answer on stderr: the lookup's warnings, the read findings, the cost with ``--verbose``."""
    lines = [f"kafkalog: warning: {w}" for w in (res.warnings if res is not None else [])]
    lines += [f"kafkalog: {'note' if f.is_note else 'error'}: {f.describe()}" for f in (res.findings if res is not None else [])]
    if verbose:
        lines.append(stats.line())
    return lines
