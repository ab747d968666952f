"""The text and JSON of ``find-key`` and ``audit-partitioning`` (the engines are ops/find_key.py, ops/partitioning.py)."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from kafkalog_cli.render.jsondoc import versioned
from kafkalog_cli.timefmt import iso_utc


def _where(h: Any) -> str:
    who = f"broker {h.broker} " if h.broker is not None else ""
    tp = f"{h.topic}-{h.partition} " if h.topic is not None else ""
    return f"{tp}{who}{h.file} @{h.position}"


def _wrap(text: str) -> list[str]:
    """Prose under a hit, indented, at 80 columns (words are never split: a path stays whole)."""
    return textwrap.wrap(text, 80, initial_indent="    ", subsequent_indent="      ", break_long_words=False,
                         break_on_hyphens=False)


def find_key_lines(result: Any) -> list[str]:
    out: list[str] = []
    key = result.key
    shown = "(none)" if key is None else repr(key.decode("utf-8", "replace"))
    out.append(f"key {shown} (hex {key.hex() if key is not None else '-'})")
    for topic, t in result.targets.items():
        chosen = ", ".join(f"{name} -> {p if p is not None else 'any'}" for name, p in t["chosen"].items())
        n = t["partitions"]
        out.append(f"  {topic}: {n} partition{'' if n == 1 else 's'} ({t['source']}); {chosen}")
    searched = sum(1 for loc in result.locations if loc.searched)
    skipped = len(result.locations) - searched
    out.append(f"searched {searched} file(s), skipped {skipped}, read {result.bytes_read} bytes")
    if not result.hits:
        out.append("no copy found")
    for h in result.hits:
        ts = f" {iso_utc(h.timestamp)}" if h.timestamp is not None and h.timestamp >= 0 else ""
        off = f"offset {h.offset}" if h.offset is not None else "no offset"
        what = "tombstone" if h.tombstone else (f"value {h.value_size} B" if h.match == "key" else h.match)
        out.append(f"HIT {h.state:<22} {off}{ts} {what} [{h.kind}]")
        out.append(f"    at {_where(h)}")  # a line of its own: paths are long (80 columns)
        if h.detail:
            out.extend(_wrap(h.detail))
        if h.removed_by:
            out.extend(_wrap(f"removed by: {h.removed_by}"))
    if result.verdict is not None:
        out.append("")
        for v in result.verdicts:
            out.append(f"{v.verdict:<8} {v.location}: {v.reason}")
        out.append(f"verdict: {result.verdict}")
    return out


def find_key_json(result: Any) -> str:
    return json.dumps(versioned(result.as_dict()))


def audit_lines(report: Any) -> list[str]:
    from kafkalog_cli.ops.partitioning import show

    out: list[str] = []
    for t in report.topics:
        out.append(f"{t.topic}: {t.partitions} partitions, {t.keyed_records} keyed records, {t.keys} keys")
        for name, n in t.explained.items():
            out.append(f"  {name:<18} explains {n} of {t.keyed_records} records")
        def copies(k: dict[str, Any]) -> str:
            return "; ".join(f"p{c['partition']} producers {c['producer_ids']} {c['first']}..{c['last']}"
                             for c in k["copies"])

        sections = [
            (t.unexplained_count, t.unexplained, "record(s) in a partition no single partitioner explains",
             lambda r: f"partition {r['partition']} offset {r['offset']} key {show(r['key'])!r} "
                       f"(would be {r['expected']})"),
            (len(t.multi_partition_keys), t.multi_partition_keys, "key(s) in more than one partition", lambda k: f"{show(k['key'])!r}: {copies(k)}"),
            (len(t.moved_keys), t.moved_keys, "key(s) whose partition changed when the partition count grew",
             lambda k: f"{show(k['key'])!r}: partition {k['old_partition']} under {k['old_count']} partitions, "
                       f"{k['new_partition']} under {k['new_count']}"),
        ]
        for count, items, title, line in sections:
            if items:
                out.append(f"  {count} {title}, e.g.:")
                out.extend(f"    {line(x)}" for x in items[:10])
        for p, hot in sorted(t.hottest.items()):
            keys = ", ".join(f"{show(k)!r}x{n}" for k, n in hot[:3])
            big = ", ".join(f"offset {o} ({s} B)" for o, s in t.largest.get(p, [])[:3])
            out.append(f"  p{p}: hottest {keys}; largest {big}")
        if t.likely:
            out.append(f"  likely producer partitioner: {t.likely}")
    for n in report.notes:
        out.append(f"note: {n}")
    return out


def audit_json(report: Any) -> str:
    return json.dumps(versioned(report.as_dict()))
