"""Test helpers for ``kafkalog replay``: source partitions with a model of what a read_committed consumer of them
sees, ``__consumer_offsets`` with group commits, NDJSON per the export schema written from kafkalog's engine, and
librdkafka's mock cluster (confluent-kafka, ``test.mock.num.brokers``) with an independent consumer.

The model is the builder's own record of what it wrote (offset, key, value, headers, timestamp, outcome), never
replay's view of the files. The mock cluster lives in the test process (it runs in the threads of the client that
created it); subprocesses reach it through its bootstrap addresses.
"""

from __future__ import annotations

import base64
import json
import os
import time
from dataclasses import dataclass, field

from partition_gen import PartitionBuilder

from kafkalog_cli.format.control import ABORT, COMMIT, encode_control_key, encode_end_txn_marker
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.ops.rebuild_index import rebuild_segment

TS = 1_700_000_000_000
MOCK_PARTITIONS = 4  # librdkafka's mock cluster auto-creates topics with 4 partitions (rdkafka_mock.c defaults)


@dataclass
class Rec:
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    ts: int
    outcome: str = "none"  # none | committed | aborted | open | corrupt
    control: bool = False


@dataclass
class Part(PartitionBuilder):
    """One source partition written batch by batch, with its model (``Rec`` values in ``records``): the repair
    tests' builder with headers, LogAppendTime batches and corrupt batches."""

    corrupt_bases: list[int] = field(default_factory=list)

    def batch(self, kvs: list[tuple[bytes | None, bytes | None]], *, headers: list[tuple[str, bytes | None]] | None = None,
              pid: int = -1, txn: bool = False, log_append: bool = False, codec: int = 0) -> int:
        base = self.next_offset
        specs, recs = [], []
        for i, (k, v) in enumerate(kvs):
            self.ts += 7
            hs = list(headers or [])
            specs.append(RecordSpec(key=k, value=v, headers=[(n.encode(), hv) for n, hv in hs], timestamp=self.ts,
                                    offset_delta=i))
            recs.append(Rec(base + i, k, v, hs, self.ts, "open" if txn else "none"))
        seq = -1
        if pid >= 0:
            seq = self.seq.get(pid, 0)
            self.seq[pid] = seq + len(kvs)
        max_ts = None
        if log_append:
            max_ts = self.ts + 1000  # the broker's append time: every record reads it
            for r in recs:
                r.ts = max_ts
        self.segments[-1].append(encode_batch(specs, base_offset=base, codec=codec, transactional=txn, producer_id=pid,
                                              producer_epoch=0 if pid >= 0 else -1, base_sequence=seq,
                                              timestamp_type=1 if log_append else 0, max_timestamp=max_ts,
                                              partition_leader_epoch=0))
        if base in self.corrupt_bases:
            for r in recs:
                r.outcome = "corrupt"
        self.records += recs
        if txn:
            self.open_txn.setdefault(pid, []).extend(recs)
        self.next_offset += len(kvs)
        return base

    def marker(self, pid: int, *, abort: bool) -> None:
        off = self.next_offset
        spec = RecordSpec(key=encode_control_key(ABORT if abort else COMMIT), value=encode_end_txn_marker(0),
                          timestamp=self.ts, offset_delta=0)
        self.segments[-1].append(encode_batch([spec], base_offset=off, transactional=True, control=True,
                                              producer_id=pid, producer_epoch=0, partition_leader_epoch=0))
        for r in self.open_txn.pop(pid, []):
            if r.outcome != "corrupt":
                r.outcome = "aborted" if abort else "committed"
        self.records.append(Rec(off, None, None, [], self.ts, control=True))
        self.next_offset += 1

    def corrupt_next(self) -> None:
        """Mark the batch appended next for corruption (a flipped payload byte: its CRC fails)."""
        self.corrupt_bases.append(self.next_offset)

    def write(self) -> None:
        os.makedirs(self.path, exist_ok=True)
        for base, batches in zip(self.bases, self.segments):
            data = bytearray(b"".join(batches))
            rb = rebuild_segment(bytes(data), base)
            stem = os.path.join(self.path, f"{base:020d}")
            with open(stem + ".index", "wb") as f:
                f.write(rb.index)
            with open(stem + ".timeindex", "wb") as f:
                f.write(rb.timeindex)
            pos = 0
            for b in batches:
                if int.from_bytes(b[:8], "big") in self.corrupt_bases:
                    data[pos + len(b) - 1] ^= 0xFF  # the last value byte: the batch's CRC fails
                pos += len(b)
            with open(stem + ".log", "wb") as f:
                f.write(bytes(data))

    def committed_view(self) -> list[Rec]:
        """What a read_committed consumer of the source reads (corrupt batches aside): non-transactional and
        committed records, no markers."""
        return [r for r in self.records if not r.control and r.outcome in ("none", "committed")]


def consumer_offsets(log_dir: str, commits: list[tuple[str, str, int, int | None]], partition: int = 0) -> str:
    """``__consumer_offsets-N`` with one OffsetCommit per (group, topic, partition, offset); None: a tombstone."""
    from txn_scenarios import offset_commit, write_records

    recs = []
    for g, t, p, off in commits:
        k, v = offset_commit(g, t, p, 0 if off is None else off)
        recs.append((k, None if off is None else v))
    pdir = os.path.join(log_dir, f"__consumer_offsets-{partition}")
    write_records(pdir, recs)
    return pdir


def export_ndjson(pdir: str, out: str) -> None:
    """NDJSON per the export schema, written from kafkalog's engine (verify-crc's walk: corrupt batches skipped),
    every record kept (``--isolation read_uncommitted --keep-control``) with its ``txn`` outcome."""
    from kafkalog_cli.ops.replay_source import resolve

    (src,), _ = resolve([pdir])
    with open(out, "w", encoding="utf-8") as f:
        for r in src.records():
            d: dict = {"topic": r.topic, "partition": r.partition, "offset": r.offset, "tstype": r.tstype,
                       "ts": r.timestamp, "broker": -1}
            hl, encs = [], []
            for n, v in r.headers:
                hl.append(n)
                if v is None:
                    hl.append(None)
                    encs.append("utf8")
                    continue
                try:
                    hl.append(v.decode("utf-8"))
                    encs.append("utf8")
                except UnicodeDecodeError:
                    hl.append(base64.b64encode(v).decode())
                    encs.append("base64")
            if hl:
                d["headers"] = hl
            if "base64" in encs:
                d["header_encodings"] = encs
            for name, b in (("key", r.key), ("payload", r.value)):
                if b is None:
                    d[name] = None
                    continue
                try:
                    d[name] = b.decode("utf-8")
                except UnicodeDecodeError:
                    d[name] = base64.b64encode(b).decode()
                    d[f"{name}_encoding"] = "base64"
            d["transactional"] = r.txn is not None
            d["txn"] = r.txn
            d["control"] = {"type": "COMMIT", "coordinator_epoch": 0} if r.control else None
            f.write(json.dumps(d) + "\n")


# ------------------------------------------------------------------------------------------ the mock cluster
class MockCluster:
    """librdkafka's mock cluster, owned by an AdminClient of this process."""

    def __init__(self, brokers: int = 3) -> None:
        from confluent_kafka.admin import AdminClient

        self._owner = AdminClient({"test.mock.num.brokers": brokers, "log_level": 0})
        md = self._owner.list_topics(timeout=30)
        self.bootstrap = ",".join(f"{b.host}:{b.port}" for b in sorted(md.brokers.values(), key=lambda b: b.id))

    def create_topic(self, name: str) -> int:
        """The mock has no CreateTopics: a metadata request for the topic auto-creates it (4 partitions)."""
        from confluent_kafka.admin import AdminClient

        md = AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(name, timeout=30)
        return len(md.topics[name].partitions)

    def consume(self, topic: str, *, isolation: str = "read_committed",
                start: dict[int, int] | None = None, timeout: float = 60.0) -> list:
        """Every record of ``topic`` (all partitions, from ``start`` or the beginning to the end), read by an
        independent confluent-kafka Consumer: (partition, offset, key, value, headers, (tstype, ts))."""
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"check-{time.monotonic_ns()}",
                      "isolation.level": isolation, "enable.auto.commit": False, "enable.partition.eof": True,
                      "auto.offset.reset": "earliest", "log_level": 0})
        try:
            parts = range(MOCK_PARTITIONS)
            ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in parts}
            todo = {p for p in parts if ends[p] > (start or {}).get(p, 0)}
            if not todo:
                return []
            c.assign([TopicPartition(topic, p, (start or {}).get(p, 0)) for p in sorted(todo)])
            out = []
            deadline = time.monotonic() + timeout
            while todo and time.monotonic() < deadline:
                m = c.poll(1.0)
                if m is None:
                    continue
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        todo.discard(m.partition())
                        continue
                    raise AssertionError(m.error())
                out.append((m.partition(), m.offset(), m.key(), m.value(), m.headers() or [], m.timestamp()))
            assert not todo, f"partitions {todo} not read to the end"
            return out
        finally:
            c.close()
