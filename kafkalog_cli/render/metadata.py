"""Text and JSON of ``kafkalog metadata`` and ``kafkalog inventory`` (the engine's data in, lines out)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from kafkalog_cli.internal_topics.metadata_image import MIGRATING
from kafkalog_cli.ops.inventory import Inventory
from kafkalog_cli.ops.metadata import Change, HistoryEvent, Loaded, metadata_version_name, to_json_image
from kafkalog_cli.render.jsondoc import versioned
from kafkalog_cli.timefmt import iso_utc

Out = Callable[[str], None]


def _iso(v: int | None) -> str:
    """A time in text: UTC ISO-8601 (timefmt, the one rule for every text output), ``-`` when unknown."""
    return "-" if v is None else iso_utc(v)


def _source(loaded: Loaded) -> str:
    snap = "no snapshot" if loaded.snapshot is None else (
        f"snapshot {os.path.basename(loaded.snapshot.path)} ({loaded.snapshot_records} records)")
    return f"{snap} + {loaded.records} log records, up to offset {loaded.image.offset} ({_iso(loaded.image.time_ms)})"


def problems(loaded: Loaded, out: Out) -> None:
    for f in loaded.findings:
        where = f.file if f.position is None else f"{f.file} at byte {f.position}"
        line = f"problem: {where}: {f.message}"
        if f.expected or f.found:
            line += f" (expected {f.expected or '?'}, found {f.found or '?'})"
        out(line)
        if f.hint:
            out(f"  next: {f.hint}")
    for p in loaded.problems:
        out(f"problem: record at offset {p.offset} ({p.record_type}): {p.message}")
        out("  next: a broker's metadata loader reports this record as a fault and does not apply it; the image "
            "here skips it too")
    for n in loaded.notes:
        out(f"note: {n}")


def summary(loaded: Loaded, out: Out, *, partitions: bool = False, topic: str | None = None) -> None:
    im = loaded.image
    out(f"metadata: {loaded.directory} at {loaded.point.label()}")
    out(f"  from: {_source(loaded)}")
    out(f"  metadata.version: {metadata_version_name(im.features.get('metadata.version'))}")
    other = {k: v for k, v in im.features.items() if k != "metadata.version"}
    if other:
        out("  features: " + ", ".join(f"{k}={v}" for k, v in sorted(other.items())))
    q = im.quorum()
    voters = ", ".join(str(v.get("voter_id")) for v in q["voters"] or []) or "(static: controller.quorum.voters)"
    out(f"  quorum: voters {voters}; leader {(q['leader'] or {}).get('leader_id', '-')}; "
        f"kraft.version {q['kraft_version'] if q['kraft_version'] is not None else 0}")
    qs = loaded.quorum_state
    if qs:
        qv = ", ".join(str(v.get("voterId")) for v in qs.get("currentVoters") or [] if isinstance(v, dict))
        out(f"  quorum-state file (now, not at the point): leader {qs.get('leaderId', '-')} epoch "
            f"{qs.get('leaderEpoch', '-')}" + (f", voters {qv}" if qv else ""))
    fenced = sorted(b for b, v in im.brokers.items() if v.fenced)
    out(f"  brokers: {len(im.brokers)} registered ({', '.join(map(str, sorted(im.brokers))) or 'none'})"
        + (f"; fenced: {', '.join(map(str, fenced))}" if fenced else ""))
    n_parts = sum(len(t.partitions) for t in im.topics.values())
    offline = [(t.name, p) for t in im.topics.values() for p, v in t.partitions.items() if v.leader < 0]
    under = [(t.name, p) for t in im.topics.values() for p, v in t.partitions.items() if len(v.isr) < len(v.replicas)]
    out(f"  topics: {len(im.topics)}, partitions: {n_parts}, without a leader: {len(offline)}, "
        f"under-replicated: {len(under)}")
    if im.next_producer_id is not None:
        out(f"  next producer id block: {im.next_producer_id}")
    if im.acls or im.delegation_tokens or im.scram:
        out(f"  acls: {len(im.acls)}, delegation tokens: {len(im.delegation_tokens)}, scram credentials: {len(im.scram)}")
    for b, v in sorted(im.brokers.items()):
        eps = ", ".join(f"{e.get('name')}://{e.get('host')}:{e.get('port')}" for e in v.endpoints)
        out(f"  broker {b}: epoch {v.epoch}, {'fenced' if v.fenced else 'unfenced'}"
            + (", in controlled shutdown" if v.in_controlled_shutdown else "")
            + (f", rack {v.rack}" if v.rack else "") + f", {eps}"
            + (f", log dirs {', '.join(v.log_dirs)}" if v.log_dirs else ""))
    if partitions or topic:
        for t in sorted(im.topics.values(), key=lambda t: t.name):
            if topic is not None and t.name != topic:
                continue
            cfg = im.configs.get(("2", t.name), {})
            out(f"topic {t.name} id {t.topic_id} partitions {len(t.partitions)}"
                + (" configs " + ",".join(f"{k}={v}" for k, v in sorted(cfg.items())) if cfg else ""))
            for pid, p in sorted(t.partitions.items()):
                dirs = "" if all(d == MIGRATING for d in p.directories) else f" dirs {','.join(p.directories)}"
                elr = f" elr {p.elr} lastKnownElr {p.last_known_elr}" if p.elr or p.last_known_elr else ""
                out(f"  {t.name}-{pid}: leader {p.leader} epoch {p.leader_epoch} replicas {p.replicas} isr {p.isr}"
                    f" partitionEpoch {p.partition_epoch}{elr}{dirs}"
                    + (f" adding {p.adding_replicas}" if p.adding_replicas else "")
                    + (f" removing {p.removing_replicas}" if p.removing_replicas else ""))
    problems(loaded, out)


def image_json(loaded: Loaded) -> str:
    return json.dumps(versioned(to_json_image(loaded)), sort_keys=True, default=str)


def snapshot_checks_text(docs: list[dict[str, Any]], out: Out) -> None:
    """``--check-snapshots``: each snapshot equal to the replayed log, or what differs."""
    for d in docs:
        out(f"{d['snapshot']}: {d['result']}")
        for c in d.get("changes", []):
            out(f"  {c['area']} {c['name']}: {c['kind']} {c['before']} -> {c['after']}")
    if not docs:
        out("no snapshots")


def snapshot_checks_json(docs: list[dict[str, Any]]) -> str:
    return json.dumps(versioned({"snapshots": docs}), sort_keys=True, default=str)


def diff_text(la: Loaded, lb: Loaded, changes: list[Change], out: Out) -> None:
    out(f"metadata diff: {la.point.label()} (offset {la.image.offset}) -> {lb.point.label()} (offset {lb.image.offset})")
    if not changes:
        out("  no changes")
    for c in changes:
        if c.kind == "changed" and isinstance(c.before, dict):
            fields = ", ".join(f"{k} {c.before.get(k)} -> {v}" for k, v in c.after.items())
            gone = [k for k in c.before if k not in c.after]
            out(f"  {c.area} {c.name}: {fields}" + (f" (removed {', '.join(gone)})" if gone else ""))
        elif c.kind == "recreated":
            out(f"  topic {c.name}: recreated, id {c.before} -> {c.after}")
        elif c.kind == "changed":
            out(f"  {c.area} {c.name}: {c.before} -> {c.after}")
        else:
            val = c.after if c.kind == "added" else c.before
            out(f"  {c.area} {c.name}: {c.kind}" + (f" ({val})" if isinstance(val, str | int) else ""))
    problems(la, out)
    problems(lb, out)


def diff_json(la: Loaded, lb: Loaded, changes: list[Change]) -> str:
    return json.dumps(versioned({"from": {"offset": la.image.offset, "time_ms": la.image.time_ms},
                       "to": {"offset": lb.image.offset, "time_ms": lb.image.time_ms},
                       "changes": [c.as_dict() for c in changes],
                       "findings": [f.as_dict() for f in la.findings + lb.findings],
                       "problems": [p.as_dict() for p in la.problems + lb.problems]}), sort_keys=True, default=str)


def history_text(loaded: Loaded, events: list[HistoryEvent], topic: str, part: int | None, out: Out) -> None:
    out(f"history of {topic}" + ("" if part is None else f"-{part}") + f": {len(events)} changes")
    for e in events:
        head = f"  {e.offset:>10} {_iso(e.time_ms)} {e.topic}-{e.partition} ({e.topic_id})"
        if e.state is None:
            out(f"{head}: removed (RemoveTopicRecord)")
            continue
        s = e.state
        dirs = "" if all(d == MIGRATING for d in s["directories"]) else f" dirs {s['directories']}"
        out(f"{head}: leader {s['leader']} epoch {s['leader_epoch']} isr {s['isr']} replicas {s['replicas']} "
            f"partitionEpoch {s['partition_epoch']}{dirs}"
            + (f" elr {s['eligible_leader_replicas']}" if s["eligible_leader_replicas"] else "")
            + f" [{', '.join(e.changed)}]")
    problems(loaded, out)


def history_json(loaded: Loaded, events: list[HistoryEvent]) -> str:
    return json.dumps(versioned({"events": [e.as_dict() for e in events],
                       "findings": [f.as_dict() for f in loaded.findings],
                       "problems": [p.as_dict() for p in loaded.problems]}), sort_keys=True, default=str)


def inventory_text(inv: Inventory, out: Out, *, verbose: bool = False) -> None:
    src = inv.metadata_source or "none (log dirs checked against each other only)"
    out(f"inventory: {len(inv.log_dirs)} log dir(s), node {inv.node_id if inv.node_id is not None else '?'}; "
        f"metadata: {src}")
    for d in inv.log_dirs:
        p = d.props or {}
        out(f"  {d.path}: cluster.id {p.get('cluster.id', '-')} node.id {p.get('node.id', p.get('broker.id', '-'))} "
            f"directory.id {p.get('directory.id', '-')} version {p.get('version', '-')}")
    counts = inv.counts()
    out("  " + (", ".join(f"{k} {v}" for k, v in counts.items()) or "no partition directories"))
    for i in inv.items:
        if i.ok and not verbose:
            continue
        name = f"{i.topic}-{i.partition}" if i.topic is not None and i.partition is not None else (i.topic or "")
        out(f"{'ok' if i.ok else 'problem'}: {i.cls}: {i.path}" + (f" ({name})" if name and name not in i.path else ""))
        if i.detail:
            out(f"  {i.detail}")
        out(f"  broker at start-up: {i.broker_action}")
        if i.next_step and not i.ok:
            out(f"  next: {i.next_step}")
        if i.fix:
            out(f"  write {os.path.join(i.path, 'partition.metadata')} with:")
            for line in i.fix.splitlines():
                out(f"    {line}")
    for n in inv.notes:
        out(f"note: {n}")


def inventory_json(inv: Inventory) -> str:
    doc: dict[str, Any] = {"metadata": inv.metadata_source, "node_id": inv.node_id,
                           "log_dirs": [d.as_dict() for d in inv.log_dirs], "counts": inv.counts(),
                           "items": [i.as_dict() for i in inv.items], "notes": inv.notes}
    return json.dumps(versioned(doc), sort_keys=True)
