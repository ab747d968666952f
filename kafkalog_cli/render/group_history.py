"""The text of ``group-history``: per group its events, per topic-partition its timeline, the positions at ``--at``.

Times are RFC 3339 UTC (``timefmt.iso_utc``); every event names the ``__consumer_offsets`` record it comes from
(partition, log offset, file) so that ``kafkalog dump --offsets-decoder`` can show it.
"""

from __future__ import annotations

import os
from typing import Any

from kafkalog_cli.ops.group_history import (
    OFFSETS_TOPIC,
    Change,
    Commit,
    GroupHistory,
    Position,
    Range,
    Where,
)
from kafkalog_cli.timefmt import iso_utc


def _t(ms: int | None) -> str:
    return "-" if ms is None or ms < 0 else iso_utc(ms)


def _where(w: Where | None) -> str:
    if w is None:
        return ""
    copies = f", {w.copies} copies" if w.copies > 1 else ""
    return f"[{OFFSETS_TOPIC}-{w.partition} offset {w.offset}: {os.path.basename(w.file)}{copies}]"


def _commit(c: Commit) -> str:
    epoch = "-" if c.leader_epoch is None else str(c.leader_epoch)
    meta = f", metadata {c.metadata!r}" if c.metadata else ""
    exp = f", expires {_t(c.expire_ms)}" if c.expire_ms is not None else ""
    txn = ", transactional" if c.transactional else ""
    return f"{c.offset} (epoch {epoch}{meta}{exp}{txn})"


def _range_line(r: Range) -> str:
    if r.commits == 1:
        return f"{_t(r.first.commit_ms)}  commit {_commit(r.first)}  {_where(r.first.at)}"
    epochs = ", ".join("-" if e is None else str(e) for e in r.epochs)
    meta = f", metadata changed {r.metadata_values - 1}x" if r.metadata_values > 1 else ""
    return (f"{_t(r.first.commit_ms)} .. {_t(r.last.commit_ms)}  {r.commits} commits {r.first.offset} -> "
            f"{_commit(r.last)}, epochs {epochs}{meta}  {_where(r.first.at)} .. log offset {r.last.at.offset}")


_LABEL = {"reset": "RESET", "unexplained": "UNEXPLAINED", "deleted": "DELETED", "recommit": "RECOMMIT",
          "unknown": "UNKNOWN", "forward": "forward", "conflict": "CONFLICT"}


def _change_line(c: Change) -> str:
    when = _t(c.time_ms) if c.time_ms is not None else "(before)"
    return f"{when}  {_LABEL.get(c.kind, c.kind)}: {c.text}  {_where(c.at)}".rstrip()


def history_lines(h: GroupHistory, *, verbose: bool = False) -> list[str]:
    out: list[str] = []
    parts = ", ".join(f"{OFFSETS_TOPIC}-{p}" for p in h.partitions_read) or "none"
    out.append(f"read {parts}: {len(h.copies)} copy(ies), {h.records} record(s)"
               + (f", {h.undecodable} undecodable" if h.undecodable else ""))
    for d in sorted(h.data_logs.values(), key=lambda d: d.path):
        out.append(f"data log {d.path}: offsets {d.start} .. {d.end} ({d.timestamp_type or 'timestamp type unknown'})")
    for c in h.conflicts:
        out.append(_change_line(c))
    for name, g in sorted(h.groups.items()):
        kind = g.kind or "kind unknown (no group metadata record)"
        ptype = f", protocol type {g.protocol_type!r}" if g.protocol_type else ""
        out.append("")
        out.append(f"group {name!r}: {kind}{ptype}, {OFFSETS_TOPIC}-{g.coordinator_partition}, "
                   f"{len(g.partitions)} partition(s)")
        events = g.events if verbose else g.events[-20:]
        if g.events:
            skipped = len(g.events) - len(events) + g.events_dropped
            out.append(f"  group events ({len(g.events) + g.events_dropped}"
                       + (f"; the last {len(events)}, --verbose for all" if skipped else "") + "):")
            for e in events:
                out.append(f"    {_t(e.time_ms)}  {e.text}  {_where(e.at)}")
        for (_t2, _p), ph in sorted(g.partitions.items()):
            cur = ("deleted" if ph.deleted is not None else
                   "none" if ph.current is None else f"{_commit(ph.current)} at {_t(ph.current.commit_ms)}")
            out.append(f"  {ph.name}: {ph.commits} commit(s); now {cur}"
                       + ("" if ph.unknown_before else "; history complete from the log's first offset"))
            quiet = [t for t in ph.timeline if isinstance(t, Change) and t.kind == "forward"]
            if quiet and not verbose:
                big = max(quiet, key=lambda c: c.delta or 0)
                checked = ("checked against the data log" if big.evidence.get("checked") else
                           "not checked: no data log given")
                out.append(f"    largest forward move +{big.delta} at {_t(big.time_ms)} ({checked}; --verbose lists "
                           f"the {len(quiet)} largest)")
            for item in ph.timeline:
                if isinstance(item, Change) and item.kind == "forward" and not verbose:
                    continue
                line = _range_line(item) if isinstance(item, Range) else _change_line(item)
                out.append(f"    {line}")
    if not h.groups:
        out.append("")
        out.append("no group records" + (f" of {h.group_filter!r}" if h.group_filter else "") + " found")
    out.append("")
    out.append(summary_line(h))
    return out


def summary_line(h: GroupHistory) -> str:
    parts = sum(len(g.partitions) for g in h.groups.values())
    commits = sum(p.commits for g in h.groups.values() for p in g.partitions.values())
    resets = sum(p.resets for g in h.groups.values() for p in g.partitions.values())
    unexplained = sum(p.unexplained for g in h.groups.values() for p in g.partitions.values())
    deleted = sum(1 for g in h.groups.values() for p in g.partitions.values() if p.deleted is not None)
    unknown = sum(1 for g in h.groups.values() for p in g.partitions.values() if p.unknown_before)
    return (f"summary: {len(h.groups)} group(s), {parts} partition(s), {commits} commit(s); {resets} reset(s), "
            f"{unexplained} unexplained jump(s), {deleted} deleted now, {len(h.conflicts)} copy conflict(s), "
            f"{unknown} partition(s) with a compacted prefix (unknown before their first commit)")


def positions_lines(at_ms: int, positions: list[Position]) -> list[str]:
    out = [f"positions at {_t(at_ms)}:"]
    for p in positions:
        if p.commit is not None:
            out.append(f"  {p.group}  {p.topic}-{p.partition}  {_commit(p.commit)}  {p.text}  {_where(p.commit.at)}")
        else:
            out.append(f"  {p.group}  {p.topic}-{p.partition}  {p.state.upper()}: {p.text}")
    if not positions:
        out.append("  (no partition)")
    return out


def positions_doc(at_ms: int, positions: list[Position]) -> dict[str, Any]:
    return {"at": at_ms, "positions": [p.as_dict() for p in positions]}
