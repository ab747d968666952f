"""The transaction coordinator's view, rebuilt from ``__transaction_state`` partitions found on disk.

The coordinator loads each ``__transaction_state`` partition by reading it from the start and keeping, per
transactional id, the last ``TransactionMetadata`` record (a null value removes the id: it expired)
(TransactionStateManager.loadTransactionMetadata). We do the same with the existing decoder
(``transaction_log`` / ``coordinator``), and also remember every producer id each transactional id ever had, so an
open transaction of an older producer id can still be named. Nothing here prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.internal_topics import coordinator as co
from kafkalog_cli.internal_topics import transaction_log as tl
from kafkalog_cli.internal_topics.logdir import PartitionCopy
from kafkalog_cli.storage.layout import segment_logs
from kafkalog_cli.storage.segment import MappedFile, entries

TOPIC = "__transaction_state"
# states in which the coordinator still owes markers to the partitions it lists (TransactionMetadata.scala:94-125)
LIVE_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")


@dataclass
class TxnMetadata:
    """One TransactionLogValue as the coordinator holds it after loading."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    previous_producer_id: int
    next_producer_id: int
    state: str
    partitions: list[tuple[str, int]]
    timeout_ms: int
    last_update_ms: int
    start_ms: int
    coordinator_partition: int
    offset: int
    #: the client's transaction version (TransactionLogValue v1 tag 2): 2 = transactions v2 (KIP-890), whose
    #: coordinator bumps the producer epoch at every transaction end and rotates the producer id there when the
    #: epoch is exhausted (the markers keep the old id, the metadata moves on to ``producer_id`` = the next id)
    client_transaction_version: int = 0

    @property
    def transactions_v2(self) -> bool:
        return self.client_transaction_version >= 2

    def as_dict(self) -> dict[str, object]:
        return {"transactional_id": self.transactional_id, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "state": self.state,
                "partitions": [f"{t}-{p}" for t, p in self.partitions], "timeout_ms": self.timeout_ms,
                "last_update_ms": self.last_update_ms, "start_ms": self.start_ms,
                "coordinator_partition": self.coordinator_partition, "offset": self.offset,
                "client_transaction_version": self.client_transaction_version}


@dataclass
class CoordinatorView:
    """Latest metadata per transactional id over every ``__transaction_state`` partition given."""

    latest: dict[str, TxnMetadata | None] = field(default_factory=dict)  # None: tombstone (id expired)
    ids_by_pid: dict[int, set[str]] = field(default_factory=dict)  # every producer id ever seen -> ids
    partitions_present: dict[int, str] = field(default_factory=dict)  # partition -> the copy read
    warnings: list[str] = field(default_factory=list)

    def by_producer(self, pid: int) -> TxnMetadata | None:
        """The current metadata whose producer id (or previous / next id, during an epoch-exhaustion rotation) is
        ``pid``."""
        for md in self.latest.values():
            if md is not None and pid in (md.producer_id, md.previous_producer_id, md.next_producer_id):
                return md
        return None

    def missing(self, partition_count: int) -> list[int]:
        return [p for p in range(partition_count) if p not in self.partitions_present]


def _partitions(value: dict) -> list[tuple[str, int]]:
    out = []
    for g in value.get("transactionPartitions") or []:
        for p in g.get("partitionIds") or []:
            out.append((g["topic"], p))
    return sorted(set(out))


def read_partition(copy: PartitionCopy, view: CoordinatorView) -> int:
    """Load one ``__transaction_state`` partition copy into ``view``; returns its log end offset."""
    leo = 0
    for _base, path in segment_logs(copy.path):
        with MappedFile(path) as mf:
            try:
                for batch in entries(mf.buf, file=path):
                    leo = max(leo, batch.last_offset + 1)
                    if batch.is_legacy or batch.is_control:
                        continue
                    for rec in batch.iter_records(mf.buf):
                        _load_record(copy, rec, view)
            except KafkalogError as exc:
                view.warnings.append(f"{path}: stopped reading the coordinator log: {exc.describe()}")
    return leo


def _load_record(copy: PartitionCopy, rec, view: CoordinatorView) -> None:  # noqa: ANN001
    if rec.key is None:
        return
    try:
        d = co.deserialize(bytes(rec.key), None if rec.value is None else bytes(rec.value), tl.KEYS, tl.VALUES)
    except (co.UnknownRecordType, co.CoordinatorDecodeError) as exc:
        view.warnings.append(f"{copy.path}: offset {rec.offset}: skipped ({exc})")
        return
    txn_id = d.key["transactionalId"]
    if d.value is None:
        view.latest[txn_id] = None
        return
    v = d.value
    status = v["transactionStatus"]
    state = tl.STATES[status] if 0 <= status < len(tl.STATES) else f"Unknown({status})"
    md = TxnMetadata(txn_id, v["producerId"], v["producerEpoch"], v.get("previousProducerId", -1),
                     v.get("nextProducerId", -1), state, _partitions(v), v["transactionTimeoutMs"],
                     v["transactionLastUpdateTimestampMs"], v["transactionStartTimestampMs"], copy.partition,
                     rec.offset, v.get("clientTransactionVersion", 0))
    view.latest[txn_id] = md
    view.ids_by_pid.setdefault(md.producer_id, set()).add(txn_id)


def load(copies: list[PartitionCopy]) -> CoordinatorView:
    """The coordinator view over every ``__transaction_state`` copy; of several copies of one partition (replicas
    from several brokers) the one with the highest log end offset is used, as the leader's would be."""
    view = CoordinatorView()
    best: dict[int, tuple[int, PartitionCopy, CoordinatorView]] = {}
    for c in copies:
        if c.topic != TOPIC:
            continue
        sub = CoordinatorView()
        leo = read_partition(c, sub)
        if c.partition not in best or leo > best[c.partition][0]:
            best[c.partition] = (leo, c, sub)
    for part in sorted(best):
        _leo, c, sub = best[part]
        view.partitions_present[part] = c.where
        view.latest.update(sub.latest)
        for pid, ids in sub.ids_by_pid.items():
            view.ids_by_pid.setdefault(pid, set()).update(ids)
        view.warnings.extend(sub.warnings)
    return view
