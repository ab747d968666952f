"""``audit-partitioning``: is every keyed record in the partition its producer's partitioner gives?

Why: mixed fleets (Java's murmur2 beside librdkafka's crc32-based default, confluent-kafka-dotnet#1103,
librdkafka#4510) and partitions added to a topic put records of one key into several partitions, which silently
breaks compaction (the cleaner dedupes per partition) and co-partitioned joins. Per keyed record this computes the
partition under each of ``format/partitioners.PARTITIONERS`` for the topic's partition count and reports:

* records in a partition no single partitioner explains (for a record whose partitioner is random, e.g. an empty
  key under ``consistent_random``, any partition is explained);
* keys present in more than one partition of a topic, with the producer ids and time ranges of each copy;
* keys whose partition changed when the partition count grew: a record some partitioner explains under an earlier
  count (``previous``, or else the smallest count below the current one that explains it);
* the hottest keys and largest records per partition.

The files are the live partition directories (``storage/paths.log_dir_partitions``); one copy per partition is
read (the first broker's in path order: replicas hold the same records). Nothing here prints.
"""

from __future__ import annotations

import base64
import os
from dataclasses import asdict, dataclass, field

from kafkalog_cli.format import partitioners
from kafkalog_cli.internal_topics.logdir import discover
from kafkalog_cli.storage import layout
from kafkalog_cli.storage.segment import data_records
from kafkalog_cli.timefmt import iso_utc

MAX_LISTED = 1000  # examples kept per finding kind (counts are exact)


@dataclass
class TopicAudit:
    topic: str
    partitions: int
    keyed_records: int = 0
    keys: int = 0
    explained: dict[str, int] = field(default_factory=dict)
    unexplained_count: int = 0
    unexplained: list[dict[str, object]] = field(default_factory=list)
    multi_partition_keys: list[dict[str, object]] = field(default_factory=list)
    moved_keys: list[dict[str, object]] = field(default_factory=list)
    hottest: dict[int, list[tuple[bytes, int]]] = field(default_factory=dict)
    largest: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    likely: str | None = None


@dataclass
class AuditReport:
    topics: list[TopicAudit]
    notes: list[str]

    @property
    def problems(self) -> bool:
        return any(t.unexplained_count or t.multi_partition_keys or t.moved_keys for t in self.topics)

    def as_dict(self) -> dict[str, object]:
        return {"topics": [_jsonable(asdict(t)) for t in self.topics], "notes": self.notes, "problems": self.problems}


def show(key: bytes) -> str:
    """A key as text: UTF-8 when printable, else ``0x`` + hex."""
    text = key.decode("utf-8", "replace")
    return text if text.isprintable() and "\ufffd" not in text else "0x" + key.hex()


def _jsonable(v: object) -> object:
    """Keys (bytes) as record objects (``{"type": "record", "key": ..., "key_b64": ...}``), the shape
    ``render/redact.py`` recognises, so that ``kafkalog mcp`` redacts them like every other record key."""
    if isinstance(v, bytes):
        return {"type": "record", "key": show(v), "key_b64": base64.b64encode(v).decode()}
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    return v


def explains(key: bytes | None, partition: int, count: int) -> list[str]:
    """The partitioners that put ``key`` in ``partition`` of ``count`` (a random choice explains any partition)."""
    out = []
    for name, fn in partitioners.PARTITIONERS.items():
        p = fn(key, count)
        if p is None or p == partition:
            out.append(name)
    return out


def earlier_count(key: bytes, partition: int, count: int, previous: int | None,
                  only: list[str] | None = None) -> tuple[int, str] | None:
    """(partition count, partitioner) under which ``key`` would have gone to ``partition``: ``previous`` only, when
    given, else the smallest count from 2 below ``count`` that explains it (``only``: these partitioners)."""
    counts = [previous] if previous is not None else list(range(max(2, partition + 1), count))
    for m in counts:
        if m <= partition:
            continue
        names = [n for n in explains(key, partition, m) if only is None or n in only]
        if names:
            return m, names[0]
    return None




def _moved(ta: TopicAudit, key: bytes, partition: int, count: int, previous: int | None, offset: int | None,
           only: list[str] | None) -> None:
    found = earlier_count(key, partition, count, previous, only)
    if found is None or len(ta.moved_keys) >= MAX_LISTED:
        return
    m, name = found
    ta.moved_keys.append({"key": key, "old_count": m, "old_partition": partition, "new_count": count,
                          "partitioner": name, "new_partition": partitioners.PARTITIONERS[name](key, count),
                          "offset": offset})


@dataclass
class Group:
    """The records of one key in one partition of a topic: what the audit needs of them (the partitioners' choice
    depends on the key and the partition only). The local walk, the scan datasets' pyarrow group-by and Spark's
    groupBy all produce these, so the three give one report."""

    topic: str
    partition: int
    key: bytes
    count: int
    first_offset: int
    first_ts: int
    last_ts: int
    pids: set[int]


class Auditor:
    """Builds the report from groups and the largest records; ``finish`` orders everything deterministically."""

    def __init__(self, *, partitions: int | None = None, previous: int | None = None, top: int = 5) -> None:
        self.partitions, self.previous, self.top = partitions, previous, top
        self.groups: dict[str, list[Group]] = {}
        self.sizes: dict[tuple[str, int], list[tuple[int, int]]] = {}
        self.seen: dict[str, set[int]] = {}
        self.notes: list[str] = []

    def partition_seen(self, topic: str, partition: int) -> None:
        self.seen.setdefault(topic, set()).add(partition)

    def add(self, g: Group) -> None:
        self.partition_seen(g.topic, g.partition)
        self.groups.setdefault(g.topic, []).append(g)

    def add_sizes(self, topic: str, partition: int, sizes: list[tuple[int, int]]) -> None:
        """(offset, key + value bytes) of records of a partition (any number: the largest ``top`` are kept)."""
        self.partition_seen(topic, partition)
        cur = self.sizes.setdefault((topic, partition), []) + list(sizes)
        self.sizes[(topic, partition)] = sorted(cur, key=lambda t: (-t[1], t[0]))[: self.top]

    def finish(self) -> AuditReport:
        out: list[TopicAudit] = []
        for topic in sorted(self.seen):
            parts = sorted(self.seen[topic])
            n = self.partitions or parts[-1] + 1
            if self.partitions is None and len(parts) != n:
                self.notes.append(f"{topic}: partitions {sorted(set(range(n)) - set(parts))[:10]} are not in the "
                                  f"input: the count {n} may be wrong (pass --partitions)")
            ta = TopicAudit(topic, n, explained=dict.fromkeys(partitioners.PARTITIONERS, 0))
            groups = sorted(self.groups.get(topic, []), key=lambda g: (g.partition, g.first_offset, g.key))
            hot: dict[int, list[Group]] = {}
            where: dict[bytes, list[Group]] = {}
            for g in groups:
                ta.keyed_records += g.count
                hot.setdefault(g.partition, []).append(g)
                where.setdefault(g.key, []).append(g)
                names = explains(g.key, g.partition, n)
                for name in names:
                    ta.explained[name] += g.count
                if names:
                    continue
                ta.unexplained_count += g.count
                if len(ta.unexplained) < MAX_LISTED:
                    ta.unexplained.append({"partition": g.partition, "offset": g.first_offset, "key": g.key,
                                           "records": g.count,
                                           "expected": {k: fn(g.key, n) for k, fn in partitioners.PARTITIONERS.items()}})
                if self.previous is not None:
                    _moved(ta, g.key, g.partition, n, self.previous, g.first_offset, None)
            for p in parts:
                ranked = sorted(hot.get(p, []), key=lambda g: (-g.count, g.key))[: self.top]
                ta.hottest[p] = [(g.key, g.count) for g in ranked]
                ta.largest[p] = self.sizes.get((topic, p), [])
            ta.keys = len(where)
            for key, copies_of in sorted(where.items()):
                if len(copies_of) < 2:
                    continue
                if len(ta.multi_partition_keys) < MAX_LISTED:
                    ta.multi_partition_keys.append({"key": key, "copies": [
                        {"partition": g.partition, "producer_ids": sorted(g.pids), "records": g.count,
                         "first": iso_utc(g.first_ts), "last": iso_utc(g.last_ts)} for g in copies_of]})
                if self.previous is None:  # a copy the current count explains, another an earlier count: it grew
                    now_names = {name for g in copies_of for name in explains(key, g.partition, n)}
                    for g in copies_of:
                        if not explains(key, g.partition, n):
                            _moved(ta, key, g.partition, n, None, g.first_offset, sorted(now_names))
            if ta.keyed_records:
                name = max(ta.explained, key=lambda k: ta.explained[k])
                ta.likely = f"{name} ({ta.explained[name]} of {ta.keyed_records} records)"
            out.append(ta)
        return AuditReport(out, self.notes)


def audit(paths: list[str], *, partitions: int | None = None, previous: int | None = None,
          topics: set[str] | None = None, top: int = 5) -> AuditReport:
    """The audit of the live partition directories under ``paths`` (one copy of each partition)."""
    copies, notes = discover(paths)
    by_tp: dict[tuple[str, int], str] = {}
    for c in copies:
        if c.partition < 0 or (topics and c.topic not in topics):
            continue
        if (c.topic, c.partition) in by_tp:
            notes.append(f"{c.path}: another copy of {c.name} is read already ({by_tp[(c.topic, c.partition)]})")
            continue
        by_tp[(c.topic, c.partition)] = c.path
    aud = Auditor(partitions=partitions, previous=previous, top=top)
    aud.notes += notes
    for (topic, p), pdir in sorted(by_tp.items()):
        aud.partition_seen(topic, p)
        groups: dict[bytes, Group] = {}
        sizes: list[tuple[int, int]] = []
        files = [path for _base, path in layout.segment_logs(pdir)]
        for _f, entry, rec in data_records(files, aud.notes):
            sizes.append((rec.offset, len(rec.key or b"") + len(rec.value or b"")))
            if rec.key is None:
                continue
            key = bytes(rec.key)
            g = groups.get(key)
            if g is None:
                groups[key] = Group(topic, p, key, 1, rec.offset, rec.timestamp, rec.timestamp, {entry.producer_id})
                continue
            g.count += 1
            g.first_ts, g.last_ts = min(g.first_ts, rec.timestamp), max(g.last_ts, rec.timestamp)
            g.pids.add(entry.producer_id)
        for g in groups.values():
            aud.add(g)
        aud.add_sizes(topic, p, sizes)
    if not aud.seen:
        aud.notes.append("no partition directories found: " + ", ".join(os.path.basename(p) for p in paths))
    return aud.finish()
