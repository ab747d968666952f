"""``group-history --connect``: a Kafka Connect source connector's offsets through time, per source partition.

The Connect offsets topic (``internal_topics/connect_offsets.py``) is compacted like ``__consumer_offsets``, so it
is read the same way (``ops/group_history.replay_copies``: every copy merged by log offset, the offsets missing
below a key's first surviving record make its earlier history unknown). Per connector x source partition: each
change of the offset (runs of an unchanged offset are one entry), tombstones (an offset reset: KIP-875), a move
backwards by the offset's numeric fields (e.g. a file position or a row id going down), the offset at ``--at`` and
the KIP-875 ``PATCH /connectors/{c}/offsets`` body that puts it back (ConnectorOffsets / ConnectorOffset:
connect/runtime/.../rest/entities/ConnectorOffsets.java:54-63, ConnectorOffset.java:41-58 at 1eb7644). Times are
the records' timestamps (the worker's clock when it flushed the offsets). Nothing here prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafkalog_cli.internal_topics import connect_offsets as cx
from kafkalog_cli.ops.group_history import Change, CopyInfo, Where, conflict, replay_copies, topic_copies

#: offset changes kept per source partition (the newest; older ones are counted)
KEEP_CHANGES = 500


@dataclass
class OffsetChange:
    time_ms: int
    offset: dict[str, Any] | None  # None: tombstone
    at: Where
    records: int = 1  # identical offsets written in a row (one entry)
    kind: str = "offset"  # offset | tombstone | backward

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "time": self.time_ms, "offset": self.offset, "records": self.records,
                "record": self.at.as_dict()}


@dataclass
class SourcePartition:
    connector: str
    partition: dict[str, Any]
    topic: str
    changes: list[OffsetChange] = field(default_factory=list)
    dropped: int = 0
    unknown_before: int = 0
    first_ms: int | None = None
    backward: int = 0
    tombstones: int = 0
    at_offset: OffsetChange | None = None

    @property
    def current(self) -> OffsetChange | None:
        return self.changes[-1] if self.changes else None

    def as_dict(self) -> dict[str, Any]:
        return {"connector": self.connector, "partition": self.partition, "topic": self.topic,
                "current": None if self.current is None else self.current.as_dict(),
                "complete": self.unknown_before == 0, "unknown_offsets_before_first": self.unknown_before,
                "backward": self.backward, "tombstones": self.tombstones, "changes_dropped": self.dropped,
                "changes": [c.as_dict() for c in self.changes],
                "at": None if self.at_offset is None else self.at_offset.as_dict()}


@dataclass
class ConnectHistory:
    topics: list[str]
    copies: list[CopyInfo]
    connectors: dict[str, dict[str, SourcePartition]]
    at: int | None
    records: int = 0
    ignored: int = 0  # keys the worker ignores, values it cannot read
    conflicts: list[Change] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def problems(self) -> int:
        return len(self.conflicts) + sum(p.backward + p.tombstones for c in self.connectors.values()
                                         for p in c.values())

    def as_dict(self) -> dict[str, Any]:
        return {"topics": self.topics, "at": self.at, "records": self.records, "ignored_records": self.ignored,
                "copies": [{"path": c.path, "partition": c.partition, "files": c.files, "broker": c.broker}
                           for c in self.copies],
                "conflicts": [c.as_dict() for c in self.conflicts],
                "connectors": [{"connector": n, "partitions": [p.as_dict() for _k, p in sorted(ps.items())]}
                               for n, ps in sorted(self.connectors.items())],
                "warnings": self.warnings}


def _backward(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    """The new offset is below the old one by its numeric fields: the same keys, every number <= and one <."""
    if old is None or set(old) != set(new):
        return False
    nums = [(old[k], new[k]) for k in new if isinstance(new[k], (int, float)) and not isinstance(new[k], bool)
            and isinstance(old[k], (int, float)) and not isinstance(old[k], bool)]
    others_same = all(old[k] == new[k] for k in new if not (isinstance(new[k], (int, float))
                                                             and not isinstance(new[k], bool)))
    return bool(nums) and others_same and all(b <= a for a, b in nums) and any(b < a for a, b in nums)


def connect_history(paths: list[str], connector: str | None = None, at: int | None = None,
                    offsets_topic: str | None = None) -> ConnectHistory:
    """Every connector's (or ``connector``'s) source offsets through time from the Connect offsets topic copies under
    ``paths``; ``offsets_topic`` names the topic (default: topics named ``*connect-offsets*``)."""
    found, _others, notes = topic_copies(paths, lambda t: cx.is_offsets_topic(t, offsets_topic))
    out = ConnectHistory(sorted({t for t, _p in found}), [], {}, at)
    out.warnings.extend(notes)
    for (topic, cp), copies in sorted(found.items()):
        out.copies.extend(copies)
        for it, n, other, missing in replay_copies(copies, out.warnings):
            if it.control is not None:
                continue
            out.records += 1
            if other:
                out.conflicts.append(conflict(topic, cp, it, n, other))
            k = cx.decode_key(None if it.key is None else bytes(it.key))
            if k is None:
                out.ignored += 1
                continue
            name, part = k
            if connector is not None and name != connector:
                continue
            ok, value = cx.decode_value(None if it.value is None else bytes(it.value))
            if not ok:
                out.ignored += 1
                continue
            pid = cx.partition_id(part)
            parts = out.connectors.setdefault(name, {})
            sp = parts.get(pid)
            if sp is None:
                sp = parts[pid] = SourcePartition(name, part, topic, unknown_before=missing, first_ms=it.timestamp)
            where = Where(cp, it.offset, it.file, it.position, n)
            cur = sp.current
            if cur is not None and cur.offset == value and (value is not None or cur.kind == "tombstone"):
                cur.records += 1
                ch = cur
            else:
                kind = "tombstone" if value is None else (
                    "backward" if cur is not None and _backward(cur.offset, value) else "offset")
                ch = OffsetChange(it.timestamp, value, where, kind=kind)
                if kind == "tombstone":
                    sp.tombstones += 1
                elif kind == "backward":
                    sp.backward += 1
                sp.changes.append(ch)
                if len(sp.changes) > KEEP_CHANGES:
                    del sp.changes[0]
                    sp.dropped += 1
            if at is not None and it.timestamp <= at:
                sp.at_offset = ch
    return out


def patch_body(h: ConnectHistory, connector: str) -> dict[str, Any]:
    """The KIP-875 ``PATCH /connectors/{connector}/offsets`` body that puts every source partition back to its offset
    at ``h.at``: ``{"offsets": [{"partition": {...}, "offset": {...}}]}``; a partition with no offset then (none yet,
    or a tombstone in force) gets ``"offset": null``, which resets it (the connector starts it afresh). Partitions
    whose offset at that time is unknown (compacted) are left out."""
    offsets = []
    for _pid, sp in sorted(h.connectors.get(connector, {}).items()):
        if sp.at_offset is not None:
            offsets.append({"partition": sp.partition, "offset": sp.at_offset.offset})
        elif sp.unknown_before == 0:
            offsets.append({"partition": sp.partition, "offset": None})
    return {"offsets": offsets}
