"""``group-history``: a consumer group's committed offsets through time, from every copy of ``__consumer_offsets``.

Why: after a bad offset reset, an expired group or a restore, the question is where the group was, and when it
moved. ``kafka-consumer-groups`` shows only the current value, and only on a running cluster. The coordinator's log
keeps every commit until the cleaner removes it, and the copies a fleet still holds (other replicas, uncleaned
tails, ``.deleted`` segments of an unfinished clean) keep more.

The engine (``history(paths, group=None, at=None, topic=None) -> GroupHistory``) reads each ``__consumer_offsets``
partition once, every copy merged by log offset (identical records across copies are one record; different records
at one offset are a ``conflict``), decodes the records with ``internal_topics/consumer_offsets.py``'s tables
(``coordinator.deserialize``: OffsetCommit v0-v4, GroupMetadata v0-v4, the KIP-848 / share / streams records), and
keeps per group x topic-partition:

* commit *ranges*: runs of non-decreasing commits (first and last commit: offset, leader epoch, metadata, commit and
  expire time, where the record is), broken by
* *resets* (a commit below the one before: the records between are read again), *tombstones* (the offset was
  deleted: DeleteOffsets/DeleteGroups or expiry after offsets.retention.minutes; the log does not say which), a commit
  after a tombstone (compared with the last commit before it);
* *forward moves*: the largest ones per partition are kept; with the data partition's log among the paths each is
  checked against it (a commit naming records written after the commit was made, or beyond the log end, is
  ``unexplained``); without it, what happened to the records in between is unknowable offline and is said so;
* ``unknown``: offsets missing from every copy below the first surviving record of a key (the cleaner keeps only the
  last record per key, LogCleaner's ``shouldRetainRecord``: a record survives unless a later one of its key is in the
  offset map; so between two surviving records of one key no record of that key was removed, and only the prefix
  before the first is unknown).

Transactional offset commits (``TxnOffsetCommit``) count once the COMMIT marker of their producer is read, as the
coordinator replays them. Group-level events: classic generations (members, leader, assignment), KIP-848 group and
member epochs, member joins and leaves, group tombstones. Nothing here prints.
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kafkalog_cli.errors import KafkalogError, UnreadableFileError
from kafkalog_cli.format import control
from kafkalog_cli.format.layouts import SCHEMA_VERSION
from kafkalog_cli.internal_topics import coordinator as co
from kafkalog_cli.internal_topics import schema as sc
from kafkalog_cli.internal_topics import schemas_group as sg
from kafkalog_cli.internal_topics.consumer_offsets import KEYS, VALUES
from kafkalog_cli.internal_topics.locate import DEFAULT_PARTITIONS, partition_for
from kafkalog_cli.internal_topics.offsets_fast import OffsetCommitReader
from kafkalog_cli.storage import layout
from kafkalog_cli.storage.partition_name import parse_topic_partition_name
from kafkalog_cli.storage.paths import log_files, partition_copies
from kafkalog_cli.storage.segment import MappedFile, entries
from kafkalog_cli.timefmt import iso_utc

OFFSETS_TOPIC = "__consumer_offsets"
#: forward moves kept per group x partition (the largest), checked against the data log when it is given
KEEP_FORWARD = 16
#: group-level events kept per group (the newest; older ones are counted)
KEEP_GROUP_EVENTS = 2000
#: record types of the group coordinator (consumer_offsets.KEYS): 0/1 offset commits, 2 classic group metadata,
#: 3 consumer group (KIP-848) metadata, 5 its members, 8 their current assignment, 11 share and 17 streams groups
GROUP_KIND_BY_TYPE = {2: "classic", 3: "consumer", 11: "share", 17: "streams"}
MEMBER_TYPES = {5: "consumer", 10: "share", 19: "streams"}


# ------------------------------------------------------------------------------------------------ values
@dataclass(frozen=True)
class Where:
    """Where a record is: the ``__consumer_offsets`` partition, its log offset, one file holding it (and the byte
    position of its batch there), and how many copies hold the identical record."""

    partition: int
    offset: int
    file: str
    position: int
    copies: int = 1

    def as_dict(self) -> dict[str, Any]:
        return {"partition": self.partition, "log_offset": self.offset, "file": self.file,
                "batch_position": self.position, "copies": self.copies}


@dataclass(frozen=True)
class Commit:
    offset: int
    leader_epoch: int | None  # None: the record has no epoch (value v0-v2) or -1 (the client sent none)
    metadata: str
    commit_ms: int
    expire_ms: int | None  # value v1 only
    value_version: int
    at: Where
    transactional: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"offset": self.offset, "leader_epoch": self.leader_epoch, "metadata": self.metadata,
                "commit_timestamp": self.commit_ms, "expire_timestamp": self.expire_ms,
                "value_version": self.value_version, "transactional": self.transactional, "record": self.at.as_dict()}


@dataclass
class Range:
    """A run of non-decreasing commits."""

    first: Commit
    last: Commit
    commits: int = 1
    epochs: list[int | None] = field(default_factory=list)  # distinct leader epochs in order (at most 8 kept)
    metadata_values: int = 1  # distinct metadata strings seen (consecutive changes)
    kind: str = "range"

    def add(self, c: Commit) -> None:
        if c.metadata != self.last.metadata:
            self.metadata_values += 1
        if c.leader_epoch != self.epochs[-1] and len(self.epochs) < 8:
            self.epochs.append(c.leader_epoch)
        self.last = c
        self.commits += 1

    def as_dict(self) -> dict[str, Any]:
        return {"kind": "range", "first": self.first.as_dict(), "last": self.last.as_dict(), "commits": self.commits,
                "leader_epochs": self.epochs, "metadata_changes": self.metadata_values - 1}


@dataclass
class Change:
    """One event of a partition's timeline other than a range: reset, forward (a large move), unexplained,
    deleted, recommit (the first commit after a tombstone), unknown, conflict."""

    kind: str
    time_ms: int | None
    text: str
    at: Where | None = None
    before: Commit | None = None
    after: Commit | None = None
    delta: int | None = None
    evidence: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "time": self.time_ms, "text": self.text,
                "record": None if self.at is None else self.at.as_dict(),
                "before": None if self.before is None else self.before.as_dict(),
                "after": None if self.after is None else self.after.as_dict(),
                "delta": self.delta, "evidence": self.evidence}


@dataclass
class PartitionHistory:
    """One group's history on one topic-partition."""

    group: str
    topic: str
    partition: int
    timeline: list[Range | Change] = field(default_factory=list)
    current: Commit | None = None  # the committed offset at the end of the log (None: none or deleted)
    deleted: Change | None = None  # the tombstone that removed it, when the last record is one
    commits: int = 0
    #: offsets missing from every copy below this key's first surviving record (0: the history is complete)
    unknown_before: int = 0
    forward: list[tuple[int, int, Commit, Commit]] = field(default_factory=list)  # heap (delta, seq, before, after)
    resets: int = 0
    unexplained: int = 0
    first_record_ms: int | None = None
    #: with history(at=T): the commit in force at T, or the tombstone that had deleted it
    at_commit: Commit | None = None
    at_deleted: Change | None = None

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group, "topic": self.topic, "partition": self.partition, "commits": self.commits,
                "current": None if self.current is None else self.current.as_dict(),
                "deleted": None if self.deleted is None else self.deleted.as_dict(),
                "complete": self.unknown_before == 0, "unknown_offsets_before_first": self.unknown_before,
                "resets": self.resets, "unexplained_jumps": self.unexplained,
                "timeline": [t.as_dict() for t in self.timeline]}


@dataclass
class GroupEvent:
    kind: str  # generation | group-epoch | member-joined | member-left | member-epoch | group-deleted
    time_ms: int | None
    at: Where
    text: str
    data: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "time": self.time_ms, "record": self.at.as_dict(), "text": self.text,
                "data": self.data}


@dataclass
class GroupState:
    """What the group looked like at a point of its log (for the context of a reset)."""

    kind: str | None = None
    generation: int | None = None
    members: int | None = None
    protocol_type: str | None = None

    def text(self) -> str:
        if self.kind is None:
            return "no group metadata before it in the log"
        if self.kind == "classic":
            state = "Empty (no members)" if not self.members else f"{self.members} member(s)"
            return f"classic group, generation {self.generation}, {state}"
        return f"{self.kind} group, epoch {self.generation}, {self.members or 0} member(s)"


@dataclass
class Group:
    name: str
    coordinator_partition: int | None = None
    kind: str | None = None
    protocol_type: str | None = None
    events: list[GroupEvent] = field(default_factory=list)
    events_dropped: int = 0
    partitions: dict[tuple[str, int], PartitionHistory] = field(default_factory=dict)
    state: GroupState = field(default_factory=GroupState)
    members: dict[str, dict[str, Any]] = field(default_factory=dict)  # KIP-848 members (id -> metadata)

    def add_event(self, ev: GroupEvent) -> None:
        self.events.append(ev)
        if len(self.events) > KEEP_GROUP_EVENTS:
            del self.events[0]
            self.events_dropped += 1

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.name, "kind": self.kind, "protocol_type": self.protocol_type,
                "coordinator_partition": self.coordinator_partition, "events": [e.as_dict() for e in self.events],
                "events_dropped": self.events_dropped,
                "partitions": [p.as_dict() for _k, p in sorted(self.partitions.items())]}


@dataclass
class CopyInfo:
    path: str
    partition: int
    files: list[str]
    broker: str | None = None


@dataclass
class DataLog:
    """What the data partition's log says, for the forward moves (the largest copy given)."""

    path: str
    start: int
    end: int
    timestamp_type: str | None  # "LogAppendTime" | "CreateTime" | None (unknown)


@dataclass
class GroupHistory:
    groups: dict[str, Group]
    copies: list[CopyInfo]
    partitions_read: list[int]
    records: int = 0
    undecodable: int = 0
    conflicts: list[Change] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    data_logs: dict[tuple[str, int], DataLog] = field(default_factory=dict)
    group_filter: str | None = None
    topic_filter: str | None = None
    offsets_partitions: int = DEFAULT_PARTITIONS
    at: int | None = None

    def problems(self) -> int:
        """Events an operator should look at: resets, unexplained jumps, deletions, copy conflicts."""
        n = len(self.conflicts)
        for g in self.groups.values():
            for p in g.partitions.values():
                n += p.resets + p.unexplained + (1 if p.deleted is not None else 0)
        return n

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group_filter, "topic": self.topic_filter, "at": self.at,
                "offsets_partitions_read": self.partitions_read,
                "copies": [{"path": c.path, "partition": c.partition, "files": c.files, "broker": c.broker}
                           for c in self.copies],
                "records": self.records, "undecodable_records": self.undecodable,
                "data_logs": [{"topic": t, "partition": p, "path": d.path, "log_start_offset": d.start,
                               "log_end_offset": d.end, "timestamp_type": d.timestamp_type}
                              for (t, p), d in sorted(self.data_logs.items())],
                "conflicts": [c.as_dict() for c in self.conflicts],
                "groups": [g.as_dict() for _n, g in sorted(self.groups.items())],
                "warnings": self.warnings}


# ------------------------------------------------------------------------------------------------ reading
@dataclass(slots=True)
class _Item:
    """One record (or control batch) of a coordinator partition, as the merge sees it."""

    offset: int
    key: bytes | None
    value: bytes | None
    file: str
    position: int
    producer_id: int
    transactional: bool
    control: int | None  # control type of a control batch (ABORT/COMMIT), else None
    timestamp: int


def _file_items(path: str, warnings: list[str]) -> Iterator[_Item]:
    """The records of one log file in offset order; a damaged entry stops the file with a warning (the records
    before it count)."""
    try:
        mf = MappedFile(path)
    except (OSError, KafkalogError) as exc:
        warnings.append(f"{path}: cannot read: {exc}")
        return
    with mf:
        buf = mf.buf
        bad = 0
        try:
            for batch in entries(buf, file=path):
                if not batch.is_valid(buf):
                    bad += 1
                    if bad <= 3:
                        warnings.append(f"{path}: the entry at byte {batch.position} (offsets {batch.base_offset}.."
                                        f"{batch.last_offset}) fails its CRC: its records are not read (kafkalog "
                                        "verify-crc maps the damage)")
                    continue
                if batch.is_legacy:
                    for rec in batch.iter_records(buf):
                        yield _Item(rec.offset, rec.key, rec.value, path, batch.position, -1, False, None,
                                    rec.timestamp)
                    continue
                if batch.is_control:
                    ctype = None
                    for rec in batch.iter_records(buf):
                        ctype = control.parse_control_key(rec.key)[1]
                        break
                    yield _Item(batch.base_offset, None, None, path, batch.position, batch.producer_id, True,
                                -1 if ctype is None else ctype, batch.max_timestamp)
                    continue
                pid, txn, pos = batch.producer_id, batch.is_transactional, batch.position
                for rec in batch.iter_records(buf):
                    yield _Item(rec.offset, rec.key, rec.value, path, pos, pid, txn, None, rec.timestamp)
        except KafkalogError as exc:
            warnings.append(f"{path}: stopped reading: {exc.describe()}")
        if bad > 3:
            warnings.append(f"{path}: {bad} entries in all fail their CRC; their records are not read")
        for f in mf.findings():
            if not f.is_note:
                warnings.append(f"{path}: {f}")


def _chain(paths: list[str], warnings: list[str]) -> Iterator[_Item]:
    for p in paths:
        yield from _file_items(p, warnings)


def _streams(copies: list[CopyInfo], warnings: list[str]) -> list[Iterator[_Item]]:
    """One stream per copy's live segments (in base-offset order, not overlapping) and one per leftover file."""
    out: list[Iterator[_Item]] = []
    for c in copies:
        live = [os.path.join(c.path, n) for n in c.files if layout.is_segment_name(n)]
        live.sort(key=lambda p: layout.offset_from_name(os.path.basename(p)))
        if live:
            out.append(_chain(live, warnings))
        for n in c.files:
            if not layout.is_segment_name(n):
                out.append(_file_items(os.path.join(c.path, n), warnings))
    return out


def _merged(streams: list[Iterator[_Item]]) -> Iterator[tuple[_Item, int, list[_Item]]]:
    """(item, copies holding it identically, different items at the same offset) in offset order."""
    if len(streams) == 1:
        for it in streams[0]:
            yield it, 1, []
        return
    merged = heapq.merge(*streams, key=lambda i: i.offset)
    cur: _Item | None = None
    same = 0
    other: list[_Item] = []
    for it in merged:
        if cur is not None and it.offset == cur.offset:
            if (it.key, it.value, it.control) == (cur.key, cur.value, cur.control):
                same += 1
            elif not any((o.key, o.value, o.control) == (it.key, it.value, it.control) for o in other):
                other.append(it)
            continue
        if cur is not None:
            yield cur, same, other
        cur, same, other = it, 1, []
    if cur is not None:
        yield cur, same, other


# ------------------------------------------------------------------------------------------------ decoding
def _read_value(msg: sc.Message, value: bytes) -> tuple[int, dict[str, Any]]:
    if len(value) < 2:
        raise co.CoordinatorDecodeError("Could not read version from value's buffer.")
    (ver,) = SCHEMA_VERSION.unpack_from(value, 0)
    try:
        return ver, co.read_checked(value, msg, ver, 2)
    except (KafkalogError, ValueError) as exc:
        raise co.CoordinatorDecodeError(f"value version {ver}: {co.java_message(exc)}") from None


def _key(key: bytes, cache: dict[bytes, tuple[int, str, Any] | None]) -> tuple[int, str, Any] | None:
    """(record type, group, detail) of a coordinator key; detail: (topic, partition) of an offset commit, the
    member id of a member record, else None. None: not a key of the group coordinator."""
    got = cache.get(key, False)
    if got is not False:
        return got  # type: ignore[return-value]
    res: tuple[int, str, Any] | None = None
    try:
        if len(key) >= 2:
            (rtype,) = SCHEMA_VERSION.unpack_from(key, 0)
            kmsg = KEYS.get(rtype)
            if kmsg is not None:
                k = co.read_checked(key, kmsg, co.key_version(kmsg, rtype), 2)
                group = k.get("group", k.get("groupId"))
                if isinstance(group, str):
                    if rtype in (0, 1):
                        res = (rtype, group, (k["topic"], k["partition"]))
                    else:
                        res = (rtype, group, k.get("memberId"))
    except (KafkalogError, ValueError, KeyError):
        res = None
    if len(cache) < 1_000_000:
        cache[key] = res
    return res


def _assignment(raw: Any) -> list[tuple[str, int]]:
    """The partitions of a classic consumer member's assignment (ConsumerProtocolAssignment), [] if not one."""
    if not isinstance(raw, (bytes, bytearray)) or len(raw) < 2:
        return []
    try:
        (ver,) = SCHEMA_VERSION.unpack_from(raw, 0)
        ver = min(ver, sg.ConsumerProtocolAssignment.valid[1])
        vals, _ = sc.read(bytes(raw), sg.ConsumerProtocolAssignment, ver, pos=2)
    except (KafkalogError, ValueError):
        return []
    return [(tp["topic"], p) for tp in vals.get("assignedPartitions") or [] for p in tp.get("partitions") or []]


# ------------------------------------------------------------------------------------------------ the replay
class _Replay:
    """The state of one pass over the coordinator partitions."""

    def __init__(self, out: GroupHistory, group: str | None, topic: str | None, at: int | None = None) -> None:
        self.out = out
        self.at = at
        self.group = group
        self.topic = topic
        self.cache: dict[bytes, tuple[int, str, Any] | None] = {}
        self.pending: dict[int, list[tuple[_Item, int, tuple[str, str, int], Commit | None]]] = {}
        self.missing = 0  # offsets absent from every copy so far in this partition
        self.seq = 0
        self.prev_deleted: dict[tuple[str, str, int], Commit] = {}
        self.fast = OffsetCommitReader(VALUES[1])

    # -- groups
    def group_of(self, name: str, partition: int) -> Group:
        g = self.out.groups.get(name)
        if g is None:
            g = self.out.groups[name] = Group(name, partition)
        return g

    def history_of(self, g: Group, topic: str, part: int) -> PartitionHistory:
        h = g.partitions.get((topic, part))
        if h is None:
            h = g.partitions[(topic, part)] = PartitionHistory(g.name, topic, part, unknown_before=self.missing)
            if self.missing:
                h.timeline.append(Change(
                    "unknown", None,
                    f"unknown before the first surviving commit: {self.missing} offset(s) of this "
                    f"{OFFSETS_TOPIC} partition below it are in no copy given (compacted by the log cleaner, which "
                    "keeps only the last commit per key, or deleted): earlier commits of this partition, and their "
                    "values, are not known", evidence={"missing_offsets": self.missing}))
        return h

    # -- one record
    def record(self, cp: int, it: _Item, copies: int) -> None:
        if it.control is not None:
            batch = self.pending.pop(it.producer_id, [])
            if it.control == control.COMMIT:
                for p_it, p_copies, k3, c in batch:
                    self.apply_commit(cp, p_it, p_copies, k3, c)
            return
        if it.key is None:
            return
        k = _key(bytes(it.key), self.cache)
        if k is None:
            if len(it.key) >= 2 and SCHEMA_VERSION.unpack_from(it.key, 0)[0] not in KEYS:
                return  # a record type this table does not know: not counted as damage
            self.out.undecodable += 1
            return
        rtype, group, detail = k
        if self.group is not None and group != self.group:
            return
        where = Where(cp, it.offset, it.file, it.position, copies)
        if rtype in (0, 1):
            topic, part = detail[0], int(detail[1])
            if self.topic is not None and topic != self.topic:
                return
            commit = None
            if it.value is not None:
                raw = bytes(it.value)
                fast = self.fast.read(raw)
                if fast is not None:
                    ver, v = fast
                else:
                    try:
                        ver, v = _read_value(VALUES[rtype], raw)
                    except co.CoordinatorDecodeError:
                        self.out.undecodable += 1
                        return
                epoch = v.get("leaderEpoch", -1)
                expire = v.get("expireTimestamp", -1) if ver == 1 else None
                commit = Commit(v["offset"], None if epoch is None or epoch < 0 else epoch, v.get("metadata") or "",
                                v["commitTimestamp"], None if expire is None or expire < 0 else expire, ver, where,
                                it.transactional)
            key3 = (group, topic, part)
            if it.transactional:
                self.pending.setdefault(it.producer_id, []).append((it, copies, key3, commit))
            else:
                self.apply_commit(cp, it, copies, key3, commit)
            return
        self.group_record(cp, it, where, rtype, group, detail)

    def apply_commit(self, cp: int, it: _Item, copies: int, k: tuple[str, str, int], c: Commit | None) -> None:
        group, topic, part = k
        g = self.group_of(group, cp)
        h = self.history_of(g, topic, part)
        if h.first_record_ms is None:
            h.first_record_ms = it.timestamp if c is None else c.commit_ms
        last = h.current
        at = self.at
        if at is not None:
            if c is not None and c.commit_ms <= at:
                h.at_commit, h.at_deleted = c, None
        if c is None:
            if last is None and h.deleted is not None:
                return  # a second tombstone
            where = Where(cp, it.offset, it.file, it.position, copies)
            age = "" if last is None else f" {_span(it.timestamp - last.commit_ms)} after the last commit"
            ev = Change("deleted", it.timestamp,
                        f"offset deleted (tombstone){age}: DeleteOffsets/DeleteGroups, or expiry after "
                        "offsets.retention.minutes (the log does not say which); a consumer without a committed "
                        "offset starts where auto.offset.reset says",
                        at=where, before=last)
            h.timeline.append(ev)
            h.deleted = ev
            if at is not None and it.timestamp <= at:
                h.at_commit, h.at_deleted = None, ev
            if last is not None:
                self.prev_deleted[k] = last
            h.current = None
            return
        h.commits += 1
        h.deleted = None
        if last is None:
            before = self.prev_deleted.pop(k, None)
            if before is not None:
                d = c.offset - before.offset
                what = ("the same offset" if d == 0 else f"{-d} offset(s) below it: those records are read again"
                        if d < 0 else f"{d} offset(s) above it: the records between were skipped or consumed "
                        "without a commit (unknowable offline)")
                h.timeline.append(Change("recommit", c.commit_ms,
                                         f"first commit after the deletion, at {what} (the last commit before the "
                                         f"deletion was {before.offset})", at=c.at, before=before, after=c, delta=d))
                if d < 0:
                    h.resets += 1
            h.timeline.append(Range(c, c, epochs=[c.leader_epoch]))
            h.current = c
            return
        d = c.offset - last.offset
        if d < 0:
            h.resets += 1
            h.timeline.append(Change(
                "reset", c.commit_ms,
                f"reset: committed {c.offset} after {last.offset} ({-d} offset(s) back: those records are read "
                f"again); the group then: {g.state.text()}", at=c.at, before=last, after=c, delta=d,
                evidence={"group_state": g.state.text()}))
            h.timeline.append(Range(c, c, epochs=[c.leader_epoch]))
        else:
            rng = h.timeline[-1]
            if isinstance(rng, Range):
                rng.add(c)
            else:
                h.timeline.append(Range(c, c, epochs=[c.leader_epoch]))
            if d > 0:
                self.seq += 1
                entry = (d, self.seq, last, c)
                if len(h.forward) < KEEP_FORWARD:
                    heapq.heappush(h.forward, entry)
                elif d > h.forward[0][0]:
                    heapq.heapreplace(h.forward, entry)
        h.current = c

    def group_record(self, cp: int, it: _Item, where: Where, rtype: int, group: str, detail: Any) -> None:
        kind = GROUP_KIND_BY_TYPE.get(rtype)
        if kind is None and rtype not in MEMBER_TYPES:
            return
        g = self.group_of(group, cp)
        value = None
        if it.value is not None:
            try:
                _ver, value = _read_value(VALUES[rtype], bytes(it.value))
            except co.CoordinatorDecodeError:
                self.out.undecodable += 1
                return
        if kind is not None:
            if value is None:
                g.add_event(GroupEvent("group-deleted", it.timestamp, where,
                                       f"{kind} group metadata deleted (tombstone): the group was deleted or expired"))
                g.state = GroupState()
                g.members.clear()
                return
            g.kind = kind
            if rtype == 2:
                members = value.get("members") or []
                assignment = {f"{t}-{p}": m["memberId"] for m in members for t, p in _assignment(m.get("assignment"))}
                ptype = value.get("protocolType") or ""
                g.protocol_type = ptype
                data = {"generation": value["generation"], "protocol_type": ptype, "protocol": value.get("protocol"),
                        "leader": value.get("leader"), "members": [
                            {"member_id": m["memberId"], "client_id": m.get("clientId"),
                             "client_host": m.get("clientHost"), "group_instance_id": m.get("groupInstanceId")}
                            for m in members], "assignment": assignment,
                        "state_timestamp": value.get("currentStateTimestamp")}
                prev = g.state
                g.state = GroupState("classic", value["generation"], len(members), ptype)
                if prev.kind == "classic" and prev.generation == value["generation"] and prev.members == len(members):
                    return
                state = f"{len(members)} member(s)" if members else "Empty (no members)"
                clients = sorted({str(m.get("clientId")) for m in members})
                g.add_event(GroupEvent("generation", value.get("currentStateTimestamp") or it.timestamp, where,
                                       f"generation {value['generation']}: {state}"
                                       + (f" (clients {', '.join(clients[:4])}{' ...' if len(clients) > 4 else ''})"
                                          if clients else ""), data))
                return
            epoch = value.get("epoch")
            prev = g.state
            g.state = GroupState(kind, epoch, len(g.members), None)
            if prev.kind == kind and prev.generation == epoch:
                return
            g.add_event(GroupEvent("group-epoch", it.timestamp, where, f"{kind} group epoch {epoch}",
                                   {"epoch": epoch}))
            return
        member = str(detail)
        if value is None:
            g.members.pop(member, None)
            g.state = GroupState(g.state.kind, g.state.generation, len(g.members), g.state.protocol_type)
            g.add_event(GroupEvent("member-left", it.timestamp, where, f"member {member} left (tombstone)",
                                   {"member_id": member}))
            return
        known = member in g.members
        g.members[member] = {"client_id": value.get("clientId"), "client_host": value.get("clientHost")}
        g.state = GroupState(g.state.kind or MEMBER_TYPES[rtype], g.state.generation, len(g.members),
                             g.state.protocol_type)
        if not known:
            g.add_event(GroupEvent("member-joined", it.timestamp, where,
                                   f"member {member} joined (client {value.get('clientId')}, "
                                   f"{value.get('clientHost')})", {"member_id": member, **g.members[member]}))


def _span(ms: int) -> str:
    """A duration for a sentence: 3.2 s, 12 min, 7.0 d."""
    ms = abs(ms)
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    if ms < 3_600_000:
        return f"{ms / 60_000:.0f} min"
    if ms < 86_400_000:
        return f"{ms / 3_600_000:.1f} h"
    return f"{ms / 86_400_000:.1f} d"


# ------------------------------------------------------------------------------------------------ data logs
def _data_log(path: str) -> DataLog | None:
    """Log start (first offset of the first segment, or the log-start checkpoint when higher), log end and the
    timestamp type of the last batch, of one data partition directory; None when it holds no readable batch."""
    from kafkalog_cli.internal_topics.logdir import checkpoint_offset

    bases = layout.segment_bases(path)
    if not bases:
        return None
    start = end = None
    tstype = None
    with MappedFile(os.path.join(path, layout.segment_name(bases[0]))) as mf:
        try:
            for e in entries(mf.buf):
                start = e.base_offset if not e.is_legacy else e.last_offset
                break
        except KafkalogError:
            pass
    for base in reversed(bases):
        with MappedFile(os.path.join(path, layout.segment_name(base))) as mf:
            try:
                for e in entries(mf.buf):
                    if not e.is_control:
                        tstype = "LogAppendTime" if e.timestamp_type == 1 else "CreateTime"
                    end = e.next_offset
            except KafkalogError:
                pass
        if end is not None:
            break
    if start is None or end is None:
        return None
    cp, _why = checkpoint_offset(path, "log-start-offset-checkpoint")
    if cp is not None and cp > start:
        start = cp
    return DataLog(path, start, end, tstype)


def _record_ts(path: str, offset: int) -> int | None:
    """The timestamp of the record at ``offset`` (or the next one present) in a data partition, None if none."""
    from kafkalog_cli.ops.seek import seek_offset

    try:
        res = seek_offset(path, offset, want_record=True)
    except KafkalogError:
        return None
    return None if res.record is None else res.record.timestamp


def _check_forward(h: PartitionHistory, data: DataLog | None) -> None:
    """The largest forward moves of a partition, against the data log when it is given."""
    moves = sorted(h.forward, key=lambda e: e[1])
    beyond_seen = False
    for d, _seq, before, after in moves:
        dt = after.commit_ms - before.commit_ms
        ev = Change("forward", after.commit_ms, "", at=after.at, before=before, after=after, delta=d,
                    evidence={"ms_between": dt, "checked": data is not None})
        if data is None:
            ev.text = (f"+{d} offsets in {_span(dt)} ({before.offset} -> {after.offset}): whether those records were "
                       "consumed or skipped is unknowable offline (give the data partition's log dir too)")
        elif after.offset > data.end:
            ev.evidence.update(log_end_offset=data.end)
            if before.offset > data.end:
                ev.text = f"+{d} offsets to {after.offset}, still beyond the data log's end ({data.end})"
            else:
                ev.kind = "unexplained"
                ev.text = (f"+{d} offsets to {after.offset}, beyond the data log's end ({data.end}, {data.path}): "
                           "records this log does not have (it lost them, it is older than the offsets, or the "
                           "topic was deleted and created again since)")
            beyond_seen = True
        elif after.offset <= data.start:
            ev.text = (f"+{d} offsets to {after.offset}, at or below the data log's start ({data.start}): the records "
                       "between are no longer in the log")
        else:
            ts = _record_ts(data.path, after.offset - 1)
            ev.evidence.update(timestamp_of_previous_record=ts, timestamp_type=data.timestamp_type)
            if ts is not None and ts > after.commit_ms and data.timestamp_type == "LogAppendTime":
                ev.kind = "unexplained"
                ev.text = (f"+{d} offsets to {after.offset}: the record before it was appended at {iso_utc(ts)}, "
                           f"{_span(ts - after.commit_ms)} after this commit (LogAppendTime): the consumer cannot "
                           "have read it; the offset was set, not consumed (a reset --to-offset/--shift-by or "
                           "--to-latest, or offsets restored from elsewhere)")
            elif ts is not None and ts > after.commit_ms:
                ev.text = (f"+{d} offsets to {after.offset}: the record before it has CreateTime {iso_utc(ts)}, "
                           f"{_span(ts - after.commit_ms)} after this commit: set rather than consumed, unless "
                           "the producers' clocks run ahead (CreateTime is the producer's clock)")
                ev.evidence["create_time_after_commit"] = True
            else:
                ev.text = (f"+{d} offsets in {_span(dt)} ({before.offset} -> {after.offset}): the records between "
                           f"are in the data log (the last one's timestamp {'-' if ts is None else iso_utc(ts)}, before the "
                           "commit); consistent with consumption")
        if ev.kind == "unexplained":
            h.unexplained += 1
        _insert(h, ev)
    if data is not None:
        _annotate_resets(h, data, beyond_seen)


def _annotate_resets(h: PartitionHistory, data: DataLog, beyond_seen: bool) -> None:
    """Name the data log's own offsets a reset went to (its start now: ``--to-earliest``; its end now)."""
    for t in h.timeline:
        if isinstance(t, Change) and t.kind in ("reset", "recommit") and t.after is not None:
            if t.after.offset == data.start:
                t.text += f"; {t.after.offset} is the data log's start now (a reset --to-earliest)"
            elif t.after.offset == data.end:
                t.text += f"; {t.after.offset} is the data log's end now (a reset --to-latest)"
            elif t.after.offset < data.start:
                t.text += (f"; {t.after.offset} is below the data log's start now ({data.start}): a consumer "
                           "resuming there goes where auto.offset.reset says")
    if h.current is not None and h.current.offset > data.end and not beyond_seen:
        h.unexplained += 1
        h.timeline.append(Change(
            "unexplained", h.current.commit_ms,
            f"the committed offset {h.current.offset} is beyond the data log's end ({data.end}, {data.path}): "
            "records this log does not have (it lost them, it is older than the offsets, or the topic was deleted "
            "and created again since)", at=h.current.at, after=h.current, evidence={"log_end_offset": data.end}))


def _insert(h: PartitionHistory, ev: Change) -> None:
    """Put a forward move into the timeline after the range holding its commit, in log-offset order."""
    assert ev.at is not None
    key = (ev.at.partition, ev.at.offset)

    def pos(c: Commit) -> tuple[int, int]:
        return (c.at.partition, c.at.offset)

    for i, t in enumerate(h.timeline):
        if isinstance(t, Range) and pos(t.first) <= key <= pos(t.last):
            j = i + 1
            while j < len(h.timeline):
                n = h.timeline[j]
                if not (isinstance(n, Change) and n.kind in ("forward", "unexplained") and n.at is not None
                        and (n.at.partition, n.at.offset) < key):
                    break
                j += 1
            h.timeline.insert(j, ev)
            return
    h.timeline.append(ev)


# ------------------------------------------------------------------------------------------------ entry point
def topic_copies(paths: list[str], match: Callable[[str], bool]) -> tuple[dict[tuple[str, int], list[CopyInfo]],
                                                                      list[tuple[str, int, str]], list[str]]:
    """The copies of the partitions of the topics ``match`` takes under the paths ((topic, partition) -> copies,
    through ``storage/paths.partition_copies``), the other partitions' live directories (topic, partition, path: for
    the data logs) and notes. A directory reached twice (a symlink) counts once."""
    from kafkalog_cli.internal_topics.logdir import broker_id

    pairs, notes = partition_copies(paths)
    by_part: dict[tuple[str, int], list[CopyInfo]] = {}
    others: list[tuple[str, int, str]] = []
    seen: set[str] = set()
    for path, log_dir in pairs:
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        tp = parse_topic_partition_name(os.path.basename(path))
        if tp is None:
            continue
        if match(tp.topic):
            by_part.setdefault((tp.topic, tp.partition), []).append(
                CopyInfo(path, tp.partition, log_files(path), broker_id(log_dir)))
        elif tp.is_live:
            others.append((tp.topic, tp.partition, path))
    return by_part, others, notes


def replay_copies(copies: list[CopyInfo], warnings: list[str]) -> Iterator[tuple[_Item, int, list[_Item], int]]:
    """Every record of one partition's copies merged by log offset: (item, identical copies, different items at the
    same offset, offsets missing from every copy so far)."""
    missing = 0
    expected = 0
    for it, n, other in _merged(_streams(copies, warnings)):
        if it.offset > expected:
            missing += it.offset - expected
        if it.offset >= expected:
            expected = it.offset + 1
        yield it, n, other, missing


def conflict(topic: str, cp: int, it: _Item, n: int, other: list[_Item]) -> Change:
    return Change("conflict", it.timestamp,
                  f"{topic}-{cp} offset {it.offset}: the copies hold different records ({it.file} and "
                  f"{', '.join(o.file for o in other)}): divergent replicas; the history has the first copy's record "
                  "(the copies in the order given)",
                  at=Where(cp, it.offset, it.file, it.position, n), evidence={"files": [it.file, *(o.file for o in other)]})


def history(paths: list[str], group: str | None = None, at: int | None = None, topic: str | None = None, *,
            offsets_partitions: int = DEFAULT_PARTITIONS) -> GroupHistory:
    """Every group's (or ``group``'s) committed offsets through time from the ``__consumer_offsets`` copies under
    ``paths`` (log dirs, partition dirs, folders of log dirs); ``topic`` keeps one data topic; with ``at`` (epoch ms) each
    partition also records the commit in force then (``positions_at``).
    With a group, only its coordinator partition (``offsets_partitions``: the topic's partition count) is read
    when that copy is given. Raises UnreadableFileError for a path that does not exist."""
    found, others, notes = topic_copies(paths, lambda t: t == OFFSETS_TOPIC)
    by_part = {p: c for (_t, p), c in found.items()}
    out = GroupHistory({}, [], [], group_filter=group, topic_filter=topic, offsets_partitions=offsets_partitions,
                       at=at)
    out.warnings.extend(notes)
    parts = sorted(by_part)
    if group is not None:
        home = partition_for(group, offsets_partitions)
        if home in by_part:
            parts = [home]
    replay = _Replay(out, group, topic, at)
    for cp in parts:
        copies = by_part[cp]
        out.copies.extend(copies)
        out.partitions_read.append(cp)
        replay.pending.clear()
        for it, n, other, missing in replay_copies(copies, out.warnings):
            replay.missing = missing
            out.records += 1
            replay.record(cp, it, n)
            if other:
                out.conflicts.append(conflict(OFFSETS_TOPIC, cp, it, n, other))
        for pid, batch in replay.pending.items():
            if batch:
                out.warnings.append(f"{OFFSETS_TOPIC}-{cp}: {len(batch)} transactional offset commit(s) of producer "
                                    f"{pid} have no marker yet (an open transaction): not counted")
    data: dict[tuple[str, int], DataLog] = {}
    best: dict[tuple[str, int], tuple[int, str]] = {}
    for t, p, path in others:
        size = sum(os.path.getsize(os.path.join(path, n)) for n in log_files(path) if layout.is_segment_name(n))
        if (t, p) not in best or size > best[(t, p)][0]:
            best[(t, p)] = (size, path)
    for g in out.groups.values():
        for (t, p), h in g.partitions.items():
            if (t, p) in best and (t, p) not in data:
                try:
                    dl = _data_log(best[(t, p)][1])
                except (KafkalogError, OSError):
                    dl = None
                if dl is not None:
                    data[(t, p)] = dl
            _check_forward(h, data.get((t, p)))
    out.data_logs = data
    return out


# ------------------------------------------------------------------------------------------------ --at
@dataclass
class Position:
    group: str
    topic: str
    partition: int
    state: str  # committed | none | deleted | unknown
    commit: Commit | None
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group, "topic": self.topic, "partition": self.partition, "state": self.state,
                "commit": None if self.commit is None else self.commit.as_dict(), "text": self.text}


def positions_at(h: GroupHistory) -> list[Position]:
    """Each group x partition's committed offset at ``h.at`` (``history(..., at=T)``): the last commit in log order
    whose commit timestamp (the coordinator's clock) is at or before T, unless a later tombstone at or before T
    deleted it. ``unknown`` where the log no longer knows (no surviving record of the key at or before T and a
    compacted prefix); ``none`` where the complete history has no commit by then."""
    if h.at is None:
        raise ValueError("positions_at needs a history read with at=T")
    out: list[Position] = []
    for gname, g in sorted(h.groups.items()):
        for (t, p), ph in sorted(g.partitions.items()):
            if ph.at_commit is not None:
                c = ph.at_commit
                out.append(Position(gname, t, p, "committed", c, f"committed at {iso_utc(c.commit_ms)}"
                                    f" ({_span(h.at - c.commit_ms)} before T)"))
            elif ph.at_deleted is not None:
                out.append(Position(gname, t, p, "deleted", None,
                                    f"deleted by the tombstone at {iso_utc(ph.at_deleted.time_ms or 0)}: the consumer starts where "
                                    "auto.offset.reset says"))
            elif ph.unknown_before:
                first = ph.first_record_ms
                out.append(Position(gname, t, p, "unknown", None,
                                    f"unknown: compacted before {iso_utc(first or 0)} (the first surviving record of this "
                                    f"partition's key; {ph.unknown_before} offset(s) below it are in no copy)"))
            else:
                out.append(Position(gname, t, p, "none", None,
                                    "no commit by then (the history is complete: the first commit is later)"))
    return out


def reset_csv(positions: list[Position], single_group: bool) -> str:
    """A ``kafka-consumer-groups --reset-offsets --from-file`` plan: ``topic,partition,offset`` lines for one group
    (``group,topic,partition,offset`` for several), as ConsumerGroupCommand.parseResetPlan reads them
    (tools/.../consumer/group/ConsumerGroupCommand.java:951-989 at 1eb7644: split on "\\n", each line one
    CsvUtils record, no header). Only positions with a committed offset are written."""
    lines = []
    for pos in positions:
        if pos.state != "committed" or pos.commit is None:
            continue
        row = [pos.topic, str(pos.partition), str(pos.commit.offset)]
        lines.append(",".join(row if single_group else [pos.group, *row]))
    return "".join(line + "\n" for line in lines)


def to_json(h: GroupHistory) -> str:
    return json.dumps(h.as_dict(), ensure_ascii=False)


__all__ = ["GroupHistory", "Position", "history", "positions_at", "reset_csv", "UnreadableFileError"]
