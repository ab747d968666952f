"""The text of ``group-history --connect``: per connector and source partition, its offsets through time."""

from __future__ import annotations

import json
import os

from kafkalog_cli.ops.connect_history import ConnectHistory, OffsetChange
from kafkalog_cli.timefmt import iso_utc


def _offset(c: OffsetChange) -> str:
    return "null (tombstone: offset reset)" if c.offset is None else json.dumps(c.offset, ensure_ascii=False)


def _where(topic: str, c: OffsetChange) -> str:
    return f"[{topic}-{c.at.partition} offset {c.at.offset}: {os.path.basename(c.at.file)}]"


_LABEL = {"offset": "offset", "tombstone": "RESET", "backward": "BACKWARD"}


def connect_lines(h: ConnectHistory, *, verbose: bool = False) -> list[str]:
    out = [f"read {', '.join(h.topics)}: {len(h.copies)} copy(ies), {h.records} record(s)"
           + (f", {h.ignored} the worker ignores" if h.ignored else "")]
    for conflict in h.conflicts:
        out.append(f"CONFLICT: {conflict.text}")
    for name, parts in sorted(h.connectors.items()):
        out.append("")
        out.append(f"connector {name!r}: {len(parts)} source partition(s)")
        for _pid, sp in sorted(parts.items()):
            out.append(f"  partition {json.dumps(sp.partition, ensure_ascii=False)} ({sp.topic})"
                       + ("" if sp.unknown_before else "; history complete from the log's first offset"))
            if sp.unknown_before:
                out.append(f"    (before) UNKNOWN: compacted before {iso_utc(sp.first_ms or 0)}: {sp.unknown_before} "
                           "offset(s) of the topic below the first surviving record are in no copy")
            if sp.dropped:
                out.append(f"    ({sp.dropped} older change(s) not kept)")
            shown = sp.changes if verbose or len(sp.changes) <= 12 else sp.changes[:2] + sp.changes[-10:]
            for i, c in enumerate(shown):
                if shown is not sp.changes and i == 2:
                    out.append(f"    ... {len(sp.changes) - 12} more change(s) (--verbose shows them; the resets and "
                               "backward moves among them are counted below)")
                times = f" (x{c.records})" if c.records > 1 else ""
                out.append(f"    {iso_utc(c.time_ms or 0)}  {_LABEL[c.kind]} {_offset(c)}{times}  {_where(sp.topic, c)}")
            if h.at is not None:
                if sp.at_offset is not None:
                    out.append(f"    at {iso_utc(h.at)}: {_offset(sp.at_offset)}")
                elif sp.unknown_before:
                    out.append(f"    at {iso_utc(h.at)}: UNKNOWN (compacted before {iso_utc(sp.first_ms or 0)})")
                else:
                    out.append(f"    at {iso_utc(h.at)}: no offset yet")
    out.append("")
    parts_n = sum(len(p) for p in h.connectors.values())
    back = sum(p.backward for c in h.connectors.values() for p in c.values())
    tomb = sum(p.tombstones for c in h.connectors.values() for p in c.values())
    out.append(f"summary: {len(h.connectors)} connector(s), {parts_n} source partition(s); {tomb} reset(s) "
               f"(tombstones), {back} backward move(s), {len(h.conflicts)} copy conflict(s)")
    return out
