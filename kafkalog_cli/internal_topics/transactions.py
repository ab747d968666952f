"""Open ("hanging") transactions: in one segment file, or across whole log dirs with the coordinator's view.

A hanging transaction blocks ``read_committed`` consumers at its first offset (the last stable offset cannot pass
it) and stops the cleaner from compacting past it, so finding one from the files alone is a common forensic need.

* ``find_open`` (one ``.log`` file, kept for ``transactions FILE``): a transactional non-control batch opens a
  transaction for its producer id if none is open; a COMMIT/ABORT marker of that producer closes it.
* ``analyse`` (log dirs / partition dirs): the producer state the broker would load (newest producer snapshot above
  the log start, then the log after it, ProducerStateManager.truncateAndReload), so a transaction whose first
  batches retention already deleted is still seen, at the first offset the broker (and KIP-664's
  ``--start-offset``) uses; then each open transaction is classified against the coordinator's
  ``__transaction_state`` (see ``classify``). Nothing is printed here.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from kafkalog_cli.broker import producer_state_manager as pst
from kafkalog_cli.broker.checkpoints import HIGH_WATERMARK_FILE, LOG_START_FILE
from kafkalog_cli.errors import KafkalogError, UnreadableFileError
from kafkalog_cli.format import control
from kafkalog_cli.format.batch import Batch
from kafkalog_cli.storage.layout import segment_logs
from kafkalog_cli.storage.segment import MappedFile, entries

if TYPE_CHECKING:
    from kafkalog_cli.internal_topics.logdir import PartitionCopy
    from kafkalog_cli.internal_topics.txn_state import CoordinatorView


@dataclass
class OpenTransaction:
    producer_id: int
    producer_epoch: int
    first_offset: int
    last_offset: int
    last_timestamp: int
    segment: str
    batches: int = 1

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def segment_files(path: str) -> list[str]:
    """The ``.log`` files of a partition directory in base-offset order (or the given file list)."""
    if os.path.isdir(path):
        return [p for _base, p in segment_logs(path)]
    if not os.path.exists(path):
        raise UnreadableFileError("no such file or directory", file=path)
    return [path]


def _marker(batch, buf) -> int | None:  # noqa: ANN001
    """Control type of the batch's first record (ABORT=0 / COMMIT=1 / KRaft types), or None if unreadable."""
    for rec in batch.iter_records(buf):
        _ver, ctype = control.parse_control_key(rec.key)
        return ctype
    return None


def find_open(paths: list[str]) -> tuple[list[OpenTransaction], list[str]]:
    """(open transactions sorted by first offset, warnings). Files are processed in the order given."""
    open_txns: dict[int, OpenTransaction] = {}
    warnings: list[str] = []
    for f in paths:
        with MappedFile(f) as mf:
            try:
                for batch in entries(mf.buf, file=f):
                    if batch.is_legacy or not batch.is_transactional:
                        continue
                    pid = batch.producer_id
                    if batch.is_control:
                        try:
                            ctype = _marker(batch, mf.buf)
                        except KafkalogError as exc:
                            warnings.append(f"{f}: unreadable control batch at offset {batch.base_offset}: {exc.message}")
                            continue
                        if ctype in (control.ABORT, control.COMMIT):
                            open_txns.pop(pid, None)
                        continue
                    txn = open_txns.get(pid)
                    if txn is None:
                        open_txns[pid] = OpenTransaction(pid, batch.producer_epoch, batch.base_offset, batch.last_offset,
                                                         batch.max_timestamp, f)
                    else:
                        txn.last_offset = batch.last_offset
                        txn.last_timestamp = max(txn.last_timestamp, batch.max_timestamp)
                        txn.producer_epoch = batch.producer_epoch
                        txn.segment = f
                        txn.batches += 1
            except KafkalogError as exc:
                warnings.append(f"{f}: stopped reading: {exc.describe()}")
    return sorted(open_txns.values(), key=lambda t: t.first_offset), warnings


# ------------------------------------------------------------------------------------------ log-dir analysis
ABORT_TEMPLATE = ("kafka-transactions.sh --bootstrap-server {bootstrap} abort --topic {topic} --partition {partition} "
                  "--start-offset {offset}")


@dataclass
class TxnFinding:
    """One open transaction of one partition copy, classified."""

    topic: str
    partition: int
    path: str
    broker: str | None
    producer_id: int
    producer_epoch: int
    first_offset: int
    last_offset: int  # last data offset seen in the log (-1 when all of it is below the log start)
    first_timestamp: int | None
    last_timestamp: int | None
    batches: int
    data_start_removed: bool  # the first offset is below the log start: retention deleted the data's start
    classification: str = ""
    reason: str = ""
    transactional_id: str | None = None
    coordinator_state: str | None = None
    abort_command: str | None = None
    age_ms: int | None = None
    blocked_consumers: list[dict[str, object]] = field(default_factory=list)
    # the coordinator COMMITTED it (its COMMIT marker is missing here): aborting would hide committed records
    committed_by_coordinator: bool = False
    abort_warning: str | None = None
    complete_advice: str | None = None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class PartitionReport:
    """Producer state, last stable offset and open transactions of one partition copy."""

    topic: str
    partition: int
    path: str
    broker: str | None
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    high_watermark_known: bool
    last_stable_offset: int
    lso_lag: int
    snapshot_offset: int | None
    open: list[TxnFinding] = field(default_factory=list)
    markers: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)  # pid -> (offset, epoch, type)
    groups: list[dict[str, object]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d.pop("markers")
        d["open"] = [t.as_dict() for t in self.open]
        return d


@dataclass
class TxnReport:
    partitions: list[PartitionReport]
    coordinator: CoordinatorView
    txn_partition_count: int
    warnings: list[str]

    @property
    def findings(self) -> list[TxnFinding]:
        return [t for p in self.partitions for t in p.open]

    @property
    def hanging(self) -> list[TxnFinding]:
        return [t for t in self.findings if t.classification == "hanging"]


def _scan_txn_batches(copy: PartitionCopy, warnings: list[str]) -> tuple[list[tuple[Batch, int | None]], int]:
    """Transactional batches (data and markers) of a partition copy with their control types, and the log end
    offset. Damaged bytes stop the walk of that segment with a warning (a forensic read, not a repair)."""
    from kafkalog_cli.broker import repair_view as ps

    items: list[tuple[Batch, int | None]] = []
    leo = 0
    bases = segment_logs(copy.path)
    if bases:
        leo = bases[0][0]
    for base, f in bases:
        leo = max(leo, base)
        with MappedFile(f) as mf:
            try:
                for batch in entries(mf.buf, file=f):
                    leo = max(leo, batch.next_offset)
                    try:
                        item = ps.txn_item(batch, mf.buf)
                    except KafkalogError as exc:
                        warnings.append(f"{f}: unreadable control batch at offset {batch.base_offset}: {exc.message}")
                        continue
                    if item is not None:
                        items.append(item)
            except KafkalogError as exc:
                warnings.append(f"{f}: stopped reading: {exc.describe()}")
    return items, leo


def _snapshot(copy: PartitionCopy, log_start: int, leo: int) -> tuple[int, list] | None:
    """The producer snapshot the broker would load: the newest readable one with log start < offset <= log end
    (ProducerStateManager.truncateAndReload deletes the others, ProducerStateManager.java:355-361)."""
    from kafkalog_cli.broker import repair_view as ps

    return ps.newest_snapshot(copy.path, at_most=leo, above=log_start)


def scan_partition(copy: PartitionCopy) -> PartitionReport:
    """Producer state as the broker loads it, open transactions and the last stable offset of one copy."""
    from kafkalog_cli.internal_topics.logdir import checkpoint_offset

    notes: list[str] = []
    items, leo = _scan_txn_batches(copy, notes)
    bases = segment_logs(copy.path)
    log_start = bases[0][0] if bases else 0
    ckpt, _why = checkpoint_offset(copy, LOG_START_FILE)
    if ckpt is not None and ckpt > log_start:
        log_start = ckpt  # LogLoader.java:221: max(checkpoint, first segment base)
    snap = _snapshot(copy, log_start, leo)
    state: dict[int, pst.ProducerStateEntry] = {}
    snap_off = None
    if snap is not None:
        snap_off, snap_entries = snap
        state = pst.entries_from_snapshot(snap_entries)
    info: dict[tuple[int, int], list] = {}  # (pid, first offset) -> [first ts, last ts, last offset, batches]
    markers: dict[int, list[tuple[int, int, int]]] = {}
    for b, ct in items:
        if b.is_control and ct in (control.ABORT, control.COMMIT):
            markers.setdefault(b.producer_id, []).append((b.base_offset, b.producer_epoch, ct))
        if (snap_off is not None and b.base_offset < snap_off) or b.last_offset < log_start:
            continue  # the broker replays from the snapshot, else from the log start offset (LogLoader)
        pst.replay_for_repair(state, b, ct)
        if not b.is_control:
            first = state[b.producer_id].current_txn_first_offset
            rec = info.setdefault((b.producer_id, first), [b.max_timestamp if first == b.base_offset else None,
                                                          b.max_timestamp, b.last_offset, 0])
            rec[1] = max(rec[1], b.max_timestamp)
            rec[2] = b.last_offset
            rec[3] += 1
    first_batch_ts = {(b.producer_id, b.base_offset): b.max_timestamp for b, _ct in items if not b.is_control}
    hw, hw_why = checkpoint_offset(copy, HIGH_WATERMARK_FILE)
    hw_known = hw is not None
    if hw is None:
        notes.append(f"high watermark unknown ({hw_why}): the log end offset stands in for it")
        hw = leo
    elif hw > leo:
        notes.append(f"replication-offset-checkpoint says {hw}, past the log end {leo}: the log end is used")
        hw = leo
    found: list[TxnFinding] = []
    for p in state.values():
        if p.current_txn_first_offset < 0:
            continue
        first_ts, last_ts, last_off, nb = info.get((p.producer_id, p.current_txn_first_offset), [None, None, -1, 0])
        if first_ts is None:  # the transaction began before the snapshot: its first batch may still be in the log
            first_ts = first_batch_ts.get((p.producer_id, p.current_txn_first_offset))
        found.append(TxnFinding(copy.topic, copy.partition, copy.path, copy.broker, p.producer_id, p.epoch,
                                p.current_txn_first_offset, last_off, first_ts, last_ts, nb,
                                p.current_txn_first_offset < log_start))
    found.sort(key=lambda t: (t.first_offset, t.producer_id))
    first_unstable = min((t.first_offset for t in found), default=None)
    if first_unstable is not None and first_unstable < log_start:
        first_unstable = log_start  # UnifiedLog.scala:962-967 (maybeIncrementFirstUnstableOffset)
    lso = first_unstable if first_unstable is not None and first_unstable < hw else hw  # UnifiedLog.scala:425-430
    return PartitionReport(copy.topic, copy.partition, copy.path, copy.broker, log_start, leo, hw, hw_known, lso,
                           leo - lso, snap_off, found, markers, notes=notes)


# ------------------------------------------------------------------------------------------ classification
def _marker_elsewhere(t: TxnFinding, others: list[PartitionReport]) -> str | None:
    """A COMMIT/ABORT of this producer after the transaction's first offset in another copy of the partition."""
    for o in others:
        for off, epoch, ctype in o.markers.get(t.producer_id, []):
            if off > t.first_offset and epoch >= t.producer_epoch:
                kind = "COMMIT" if ctype == control.COMMIT else "ABORT"
                cut = (f"; retention removed the data's start there (log start {o.log_start_offset} > first offset "
                       f"{t.first_offset})" if o.log_start_offset > t.first_offset else "")
                return (f"{kind} marker at offset {off} (epoch {epoch}) in {o.path}"
                        f"{f' (broker {o.broker})' if o.broker is not None else ''}{cut}; this copy lacks it: "
                        "it is behind or was copied before the marker was written")
    return None


def classify(t: TxnFinding, view, txn_partitions: int, others: list[PartitionReport],  # noqa: ANN001
             now_ms: int | None = None) -> None:
    """Set ``classification`` and ``reason``:

    * ``marker-retained-elsewhere``: another copy of this partition holds the producer's marker;
    * ``ongoing``: the coordinator's current metadata for this producer is Ongoing (or Prepare*, markers being
      written) at this epoch and lists this partition;
    * ``hanging``: the coordinator completed, aborted or fenced it, moved to another producer id, expired the
      transactional id, does not list this partition, or (every ``__transaction_state`` partition present) does
      not know the producer at all;
    * ``coordinator-missing``: the producer is in none of the ``__transaction_state`` partitions given, and some
      are missing.
    """
    from kafkalog_cli.internal_topics.txn_state import LIVE_STATES

    where = _marker_elsewhere(t, others)
    if where is not None:
        t.classification, t.reason = "marker-retained-elsewhere", where
        return
    tp = (t.topic, t.partition)
    md = view.by_producer(t.producer_id)
    if md is not None:
        t.transactional_id, t.coordinator_state = md.transactional_id, md.state
        listed = tp in md.partitions
        epochs = (t.producer_epoch,) if md.state == "Ongoing" else (t.producer_epoch, t.producer_epoch + 1)
        if md.state in LIVE_STATES and listed and md.producer_id == t.producer_id and md.producer_epoch in epochs:
            t.classification = "ongoing"
            t.reason = (f"coordinator ({md.state}, __transaction_state-{md.coordinator_partition} offset {md.offset}) "
                        f"lists {t.topic}-{t.partition} at epoch {md.producer_epoch}")
            if md.state != "Ongoing":
                t.reason += ": the coordinator is writing the markers"
            elif now_ms is not None and md.start_ms > 0 and now_ms - md.start_ms > md.timeout_ms:
                t.reason += (f"; it started {now_ms - md.start_ms} ms ago, past its transaction.timeout.ms "
                             f"{md.timeout_ms}: the coordinator should abort it (if this persists, check the "
                             "coordinator)")
            return
        # transactions v2 (KIP-890): a transaction that exhausted the epoch ends with the producer id rotated: the
        # coordinator's Complete* metadata has the next id and names this one as previous (TransactionMetadata
        # .prepareComplete); its outcome is this transaction's
        rotated = (md.transactions_v2 and md.state in ("CompleteCommit", "CompleteAbort")
                   and md.producer_id != t.producer_id and md.previous_producer_id == t.producer_id)
        if rotated:
            outcome, marker = ("COMMITTED", "COMMIT") if md.state == "CompleteCommit" else ("ABORTED", "ABORT")
            t.committed_by_coordinator = md.state == "CompleteCommit"
            t.classification = "hanging"
            t.reason = (f"the coordinator {outcome} this transaction ({md.state}, transactions v2: producer id "
                        f"{t.producer_id} rotated to {md.producer_id} at its end; __transaction_state-"
                        f"{md.coordinator_partition} offset {md.offset}) but this copy of {t.topic}-{t.partition} has "
                        f"no {marker} marker for it; no marker will come")
            return
        if md.producer_id != t.producer_id:
            why = f"the coordinator now has producer id {md.producer_id} for {md.transactional_id!r}"
        elif md.state not in LIVE_STATES:
            why = f"the coordinator's transaction is {md.state}"
        elif md.producer_epoch not in epochs:
            why = f"the coordinator is at epoch {md.producer_epoch}, this transaction at {t.producer_epoch}"
        else:
            why = f"the coordinator's {md.state} transaction does not list {t.topic}-{t.partition}"
        t.classification = "hanging"
        t.reason = f"{why} (__transaction_state-{md.coordinator_partition} offset {md.offset}); no marker will come"
        if md.state == "CompleteCommit" and md.producer_id == t.producer_id and md.producer_epoch in epochs:
            # the coordinator's outcome is COMMIT: this copy lost (or never got) the marker
            t.committed_by_coordinator = True
            t.reason = (f"the coordinator COMMITTED this transaction (CompleteCommit, __transaction_state-"
                        f"{md.coordinator_partition} offset {md.offset}) but this copy of {t.topic}-{t.partition} has "
                        "no COMMIT marker for it; no marker will come")
        return
    ids = sorted(view.ids_by_pid.get(t.producer_id, ()))
    if ids:
        t.transactional_id = ids[0]
        gone = [i for i in ids if view.latest.get(i) is None]
        t.classification = "hanging"
        t.reason = (f"transactional id {ids[0]!r} " + ("expired (tombstone in the coordinator log)" if gone else
                    "has moved to another producer id") + "; no marker will come")
        return
    missing = view.missing(txn_partitions)
    if not missing:
        t.classification = "hanging"
        t.reason = (f"producer id {t.producer_id} is in none of the {txn_partitions} __transaction_state partitions "
                    "(its transactional id expired or the metadata was lost); no marker will come")
        return
    t.classification = "coordinator-missing"
    shown = ", ".join(f"__transaction_state-{p}" for p in missing[:8]) + (" ..." if len(missing) > 8 else "")
    t.reason = (f"producer id {t.producer_id} is in none of the {len(view.partitions_present)} __transaction_state "
                f"partition(s) given; {len(missing)} missing: {shown}. Find the transactional id with `kafka-transactions.sh "
                f"describe-producers --topic {t.topic} --partition {t.partition}` (or `list`), then `kafkalog "
                f"locate-txn ID --partitions {txn_partitions}` names the __transaction_state partition; add the log "
                "dir of the broker leading it (`kafka-topics.sh --describe --topic __transaction_state`)")


# ------------------------------------------------------------------------------------------ consumer groups
#: the group kind a __consumer_offsets record type names (the group coordinator's record types, up to 4.4): classic
#: groups write GroupMetadata (2), KIP-848 consumer groups ConsumerGroupMetadata (3), KIP-932 share groups
#: ShareGroupMetadata (11), KIP-1071 streams groups StreamsGroupMetadata (17)
GROUP_KIND_BY_TYPE = {2: "classic", 3: "consumer", 11: "share", 17: "streams"}


def _best_copies(copies: list[PartitionCopy], topic: str) -> list[PartitionCopy]:
    """Of several copies of one partition (replicas from several brokers), the largest, as the leader's would be."""
    best: dict[int, tuple[int, PartitionCopy]] = {}
    for c in copies:
        if c.topic != topic:
            continue
        size = sum(os.path.getsize(p) for _b, p in segment_logs(c.path))
        if c.partition not in best or size > best[c.partition][0]:
            best[c.partition] = (size, c)
    return [c for _size, c in best.values()]


def coordinator_records(copies: list[PartitionCopy], topic: str, keys: dict, values: dict, warnings: list[str]):  # noqa: ANN202
    """(copy, batch, control type or None, decoded record or None) over the best copy of each partition of a
    coordinator topic; undecodable records are skipped, damaged bytes stop that segment with a warning."""
    from kafkalog_cli.internal_topics import coordinator as co

    for c in _best_copies(copies, topic):
        for _base, f in segment_logs(c.path):
            with MappedFile(f) as mf:
                try:
                    for batch in entries(mf.buf, file=f):
                        if batch.is_legacy:
                            continue
                        if batch.is_control:
                            yield c, batch, _marker(batch, mf.buf), None
                            continue
                        for rec in batch.iter_records(mf.buf):
                            if rec.key is None:
                                continue
                            try:
                                d = co.deserialize(bytes(rec.key), None if rec.value is None else bytes(rec.value),
                                                   keys, values)
                            except (co.UnknownRecordType, co.CoordinatorDecodeError):
                                continue
                            yield c, batch, None, d
                except KafkalogError as exc:
                    warnings.append(f"{f}: stopped reading {topic}: {exc.describe()}")


def committed_offsets(copies: list[PartitionCopy]) -> tuple[dict[tuple[str, int], dict[str, int]], list[str]]:
    """(topic, partition) -> {group: committed offset} from the ``__consumer_offsets`` copies given (the group
    coordinator's load rule: last record per key wins, a tombstone deletes; transactional commits count only once
    their COMMIT marker is read). Classic, consumer (KIP-848) and streams (KIP-1071) groups all commit offsets with
    OffsetCommit records (types 0/1)."""
    out, _kinds, warnings = group_offsets(copies)
    return out, warnings


def group_offsets(copies: list[PartitionCopy], *, deleted: dict[tuple[str, str, int], list] | None = None
                  ) -> tuple[dict[tuple[str, int], dict[str, int]], dict[str, str], list[str]]:
    """:func:`committed_offsets` plus each group's kind (``GROUP_KIND_BY_TYPE``; "classic:<protocolType>" is not
    kept: the protocol type is the member protocol, not the group kind) as the group coordinator last wrote it.
    With ``deleted`` (replay's reset CSV), a tombstone keeps the commit before it and records (group, topic,
    partition) -> [the offset before the last tombstone, whether a commit came after it]: the group coordinator
    tombstones a deleted topic's offsets (OffsetMetadataManager.onPartitionsDeleted, group-coordinator/src/main/
    java/org/apache/kafka/coordinator/group/OffsetMetadataManager.java:910-935 at 1eb7644), and they are the
    positions a rescue restores; a commit after it may be the recreated topic's."""
    from kafkalog_cli.internal_topics import consumer_offsets as cof

    latest: dict[tuple[str, str, int], int] = {}
    kinds: dict[str, str] = {}
    warnings: list[str] = []
    pending: dict[tuple[str, int], list[tuple[tuple[str, str, int], int | None]]] = {}
    for c, batch, ctype, d in coordinator_records(copies, "__consumer_offsets", cof.KEYS, cof.VALUES, warnings):
        slot = (c.path, batch.producer_id)
        if d is None:
            for k, v in pending.pop(slot, []) if ctype == control.COMMIT else []:
                _apply(latest, k, v, deleted)
            pending.pop(slot, None)
            continue
        kind = GROUP_KIND_BY_TYPE.get(d.record_type)
        if kind is not None:
            group = d.key.get("groupId", d.key.get("group"))
            if d.value is None:
                kinds.pop(group, None)
            else:
                kinds[group] = kind
            continue
        if d.record_type not in (0, 1):
            continue
        k = (d.key["group"], d.key["topic"], d.key["partition"])
        v = None if d.value is None else d.value["offset"]
        if batch.is_transactional:
            pending.setdefault(slot, []).append((k, v))
        else:
            _apply(latest, k, v, deleted)
    out: dict[tuple[str, int], dict[str, int]] = {}
    for (g, t, p), off in latest.items():
        out.setdefault((t, p), {})[g] = off
    return out, kinds, warnings


def share_group_progress(copies: list[PartitionCopy]) -> tuple[dict[tuple[str, int], dict[str, int]], list[str]]:
    """(topic, partition) -> {share group: share-partition start offset} from the ``__share_group_state`` copies
    given: a share group has no committed offset, its progress is the start offset the share coordinator keeps
    (the last ShareSnapshot's, moved by a later ShareUpdate's unless -1; ShareCoordinatorShard's replay). The key
    names the topic by id: ``partition.metadata`` of the copies given names it; an unknown id stays an id."""
    from kafkalog_cli.internal_topics import share_group_state as sgs
    from kafkalog_cli.storage.companions import parse_partition_metadata

    names: dict[str, str] = {}
    for c in copies:
        pm = os.path.join(c.path, "partition.metadata")
        try:
            with open(pm, encoding="utf-8") as fh:
                names[parse_partition_metadata(fh.read(), pm)[1]] = c.topic
        except (OSError, KafkalogError, UnicodeDecodeError):
            continue
    warnings: list[str] = []
    spso: dict[tuple[str, str, int], int] = {}
    for _c, _batch, _ctype, d in coordinator_records(copies, "__share_group_state", sgs.KEYS, sgs.VALUES, warnings):
        if d is None:
            continue
        k = (d.key["groupId"], d.key["topicId"], d.key["partition"])
        if d.value is None:
            spso.pop(k, None)
        elif d.record_type == 0 or d.value["startOffset"] >= 0:
            spso[k] = d.value["startOffset"]
    out: dict[tuple[str, int], dict[str, int]] = {}
    for (g, tid, p), off in spso.items():
        out.setdefault((names.get(tid, tid), p), {})[g] = off
    return out, warnings


def _apply(latest: dict, k: tuple[str, str, int], v: int | None, deleted: dict | None = None) -> None:
    if v is None and deleted is not None:
        if k in latest:
            deleted[k] = [latest[k], False]
    elif v is None:
        latest.pop(k, None)
    else:
        latest[k] = v
        if deleted is not None and k in deleted:
            deleted[k][1] = True


# ------------------------------------------------------------------------------------------ entry point
def analyse(paths: list[str], *, txn_partitions: int = 50, now_ms: int | None = None,
            bootstrap: str = "<broker:9092>") -> TxnReport:
    """Every open transaction in the partitions under ``paths`` (log dirs or partition dirs), classified."""
    import time

    from kafkalog_cli.internal_topics import txn_state
    from kafkalog_cli.internal_topics.logdir import discover

    now = now_ms if now_ms is not None else int(time.time() * 1000)
    copies, warnings = discover(paths)
    view = txn_state.load(copies)
    warnings += view.warnings
    groups, kinds, gw = group_offsets(copies)
    warnings += gw
    shares, sw = share_group_progress(copies)
    warnings += sw
    reports = [scan_partition(c) for c in copies
               if c.topic not in (txn_state.TOPIC, "__cluster_metadata")]
    for r in reports:
        others = [o for o in reports if o is not r and (o.topic, o.partition) == (r.topic, r.partition)]
        # a blocked group may be a classic, consumer (KIP-848), streams (KIP-1071) or share (KIP-932) group: the
        # first three wait at their committed offset, a share group at its share-partition start offset
        r.groups = [{"group": g, "committed_offset": off, "blocked": off >= r.last_stable_offset,
                     "kind": kinds.get(g, "unknown")}
                    for g, off in sorted(groups.get((r.topic, r.partition), {}).items())]
        r.groups += [{"group": g, "committed_offset": off, "blocked": off >= r.last_stable_offset, "kind": "share"}
                     for g, off in sorted(shares.get((r.topic, r.partition), {}).items())]
        for t in r.open:
            classify(t, view, txn_partitions, others, now)
            start = t.first_timestamp
            md = view.by_producer(t.producer_id)
            if start is None and md is not None and md.start_ms > 0:
                start = md.start_ms
            if start is None:
                start = t.last_timestamp
            t.age_ms = None if start is None else now - start
            if t.classification in ("hanging", "coordinator-missing"):  # both keep read_committed consumers waiting
                t.blocked_consumers = [g for g in r.groups if g["blocked"]]
            if t.classification == "hanging":
                part = t.partition if t.partition >= 0 else "<partition>"
                t.abort_command = ABORT_TEMPLATE.format(bootstrap=bootstrap, topic=t.topic, partition=part,
                                                        offset=t.first_offset)
                if t.committed_by_coordinator:
                    t.abort_warning = (
                        f"aborting writes an ABORT marker: read_committed consumers then SKIP the committed records "
                        f"of this transaction (offsets {t.first_offset}..{t.last_offset}), which the coordinator and "
                        "the producer's application consider delivered")
                    t.complete_advice = (
                        "prefer the coordinator's outcome: a replica of this partition that holds the COMMIT marker "
                        f"serves the committed records ('kafkalog transactions' on its log dir shows it as "
                        "marker-retained-elsewhere); make it the leader, or let this broker re-fetch the partition "
                        f"from it (broker stopped: move {t.path} away, it replicates again). Abort only when no copy "
                        "has the marker and the records may be lost to read_committed consumers")
    return TxnReport(reports, view, txn_partitions, warnings)
