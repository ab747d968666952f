"""Text and JSON views of a replica comparison (``ops.replicas.Comparison``); the engine computes, this only words.

Why separate: the JSON keys are a contract (``first_divergent_offset``, ``divergence_kind``, per replica
``broker_id``, ``log_end_offset``, ``truncation_offset``, ``lost_records``) that scripts and the fleet report rely on,
while the text is for an operator reading a terminal during an incident.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from kafkalog_cli.ops.replicas import Comparison, ReplicaReport
from kafkalog_cli.render.jsondoc import versioned
from kafkalog_cli.timefmt import age, iso_utc


def render_json(cmp: Comparison) -> str:
    return json.dumps(versioned(cmp.to_dict()), indent=1)


def _ts(v: int | None) -> str:
    return "-" if v is None else iso_utc(v)


def _span(first: int | None, last: int | None) -> str:
    """A time range in UTC ISO-8601 and how long ago its end was."""
    return f"{_ts(first)} .. {_ts(last)}" + ("" if last is None else f" ({age(last)})")


def _ranges(rs: list[list[int]], limit: int = 6) -> str:
    text = ", ".join(f"{a}..{b}" if a != b else str(a) for a, b in rs[:limit])
    return text + (f" (+{len(rs) - limit} more)" if len(rs) > limit else "")


def _replica_lines(r: ReplicaReport) -> Iterator[str]:
    rep = r.replica
    who = rep.label if rep.broker_id is None or str(rep.broker_id) == rep.name else f"{rep.label} (broker {rep.broker_id})"
    epochs = ", ".join(f"{e} from offset {s}" for e, s in rep.epochs) or "(none)"
    yield (f"  {who}: {r.role}, offsets {rep.log_start_offset}..{rep.log_end_offset - 1} (log end offset "
           f"{rep.log_end_offset}), leader epochs {epochs}" + ("" if rep.epochs_source == "checkpoint" else
                                                                f" [{rep.epochs_source}]"))
    yield f"    path {rep.path}"
    if r.vs_leader is not None and r.vs_leader.finding is not None:
        f = r.vs_leader.finding
        yield f"    diverges from the leader at offset {f.offset}: {f.kind}: {f.detail}"
    if r.role == "follower":
        if r.truncation_offset is None:
            yield "    truncation: unknown (see notes)"
        elif r.lost.batches:
            lost = r.lost
            yield (f"    truncation: to offset {r.truncation_offset}: loses {lost.count} records in {lost.batches} "
                   f"batches, offsets {_ranges(lost.offsets)}, {_span(lost.first_timestamp, lost.last_timestamp)}")
            for p in lost.producers:
                seq = "no sequence" if p["first_sequence"] is None else f"sequences {p['first_sequence']}..{p['last_sequence']}"
                yield (f"      producer {p['producer_id']} (epoch {','.join(map(str, p['producer_epochs']))}): "
                       f"{p['records']} records, {seq}, offsets {p['first_offset']}..{p['last_offset']}")
            if lost.markers:
                yield f"      ({lost.markers} of them transaction markers)"
        elif r.truncation_offset < rep.log_end_offset:
            yield (f"    truncation: to offset {r.truncation_offset}: loses nothing ({r.lost.refetched} records removed "
                   "are held identically by the leader and fetched again)")
        else:
            yield f"    truncation: none (fetches from offset {r.truncation_offset})"
        for s in r.truncation_steps:
            if s.truncate_to is not None:
                yield (f"      fetch epoch {s.fetch_epoch} at {s.fetch_offset}: leader answers epoch {s.leader_epoch} "
                       f"ends at {s.leader_end_offset}: {s.rule} -> {s.truncate_to}")
    for c in rep.corrupt:
        yield f"    CORRUPT {c.file} at byte {c.position} (offset {c.offset}): {c.message}"
    for n in rep.notes + r.notes:
        yield f"    note: {n}"


def render_text(cmp: Comparison) -> Iterator[str]:
    yield f"Replicas of {cmp.partition}: leader {cmp.leader} (chosen by {cmp.leader_chosen_by})"
    for r in cmp.replicas:
        yield from _replica_lines(r)
    if len(cmp.pairs) > 1:
        for p in cmp.pairs:
            f = p.finding
            res = "agree" if f is None else f"diverge at {f.offset} ({f.kind})"
            yield f"  {p.a} vs {p.b}: offsets {p.compared_from}..{p.compared_to - 1} compared: {res}"
    for n in cmp.notes:
        yield f"  note: {n}"
    if cmp.diverged:
        yield f"DIVERGED at offset {cmp.first_divergent_offset}: {cmp.divergence_kind}: {cmp.detail}"
    else:
        tail = f"; {cmp.ahead} is ahead" if cmp.ahead else "; all replicas end at the same offset"
        yield f"replicas agree up to offset {cmp.agree_up_to}{tail}"


def fleet_lines(rows: list[dict[str, Any]], target: str) -> list[str]:
    """``report --replicas``' text: one line per replicated partition (its brokers, the leader, agreement or the
    first divergence), then where the divergence dataset went."""
    out = []
    for r in rows:
        where = f"{r['topic']}-{r['partition']} on brokers {','.join(r['brokers'])} (leader {r['leader']})"
        if r["first_divergent_offset"] is None:
            out.append(f"{where}: agree up to offset {r['agree_up_to']}")
        else:
            out.append(f"{where}: DIVERGED at offset {r['first_divergent_offset']}: {r['divergence_kind']}: "
                       f"{r['detail']}")
    out.append(f"{len(rows)} replicated partitions compared; divergence dataset written to {target}")
    return out
