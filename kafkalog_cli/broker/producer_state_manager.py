"""Producer-state replay and ``.snapshot`` writing, as the broker's ProducerStateManager does them (spec §7.2).

Why a model of its own: ``recover`` must say which snapshots the broker's loader deletes and writes, and ``salvage``
must leave snapshots the loader accepts without replaying anything surprising. Both need the broker's producer map,
built batch by batch exactly as ``ProducerAppendInfo``/``ProducerStateEntry`` build it (storage/.../log/
ProducerAppendInfo.java, ProducerStateEntry.java at apache/kafka 1eb7644):

* a data batch: epoch change clears the batch metadata; the batch (lastSeq, lastOffset, offsetDelta, maxTimestamp)
  is added (5 kept); ``lastTimestamp`` = the batch's max timestamp; the first transactional batch opens a
  transaction at its base offset;
* a control batch with a record: (epoch, coordinator epoch, the record's timestamp) replace the entry's, batch
  metadata survives unless the epoch changed, the open transaction (if any) completes; an empty control batch
  leaves the entry unchanged (but creates an empty entry for an unknown producer);
* the ``.snapshot`` holds one 46-byte entry per producer in the iteration order of the broker's producer map: a
  ``java.util.HashMap<Long, _>`` since 3.5 (ProducerStateManager moved to Java), a Scala 2.13 ``mutable.HashMap``
  before. Byte compatibility needs that order, so it is reproduced here.

The pieces, named after Kafka's: ``ProducerStateEntry`` (one producer), ``ProducerState`` (the producer map and
ongoing transactions of one manager: replay, last stable offset, snapshot content), ``ProducerStateManager``
(its view of the snapshot files: take, load with expiry, ``truncateAndReload``) over a ``SnapshotStore`` (the
partition's ``.snapshot`` files as a simulation changes them), ``rebuild_producer_state``
(``UnifiedLog.rebuildProducerState``) and ``remove_stray_snapshots``. The repairs' lighter replay over parsed
headers (``replay_for_repair``) uses the same entries; its three differences are named in its docstring.

Reading and encoding the file format lives in ``storage/companions.py``; this module only decides the content.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.format.batch import Batch
from kafkalog_cli.format.control import ABORT, COMMIT, parse_control_key, parse_end_txn_marker
from kafkalog_cli.format.javahash import int32, scala213_order
from kafkalog_cli.storage import companions as comp
from kafkalog_cli.storage import layout
from kafkalog_cli.storage.companions import ProducerEntry, encode_producer_snapshot

NUM_BATCHES_TO_RETAIN = 5
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000
NEVER_EXPIRES = 1 << 62  # a producer.id.expiration.ms that expires nobody (a state read back as it was held)


class InvalidTxnStateError(KafkalogError):
    """ProducerAppendInfo.appendDataBatch's InvalidTxnStateException: a non-transactional batch from a producer
    whose transaction is open. Nothing in the loader catches it: the broker does not start (errata E3)."""


# ------------------------------------------------------------------------------------------------ batches
@dataclass(frozen=True)
class BatchInfo:
    """What producer-state replay (and the loader) needs from one v2 batch; built once per batch."""

    position: int
    size: int
    base_offset: int
    last_offset: int
    records: int
    producer_id: int
    producer_epoch: int
    last_sequence: int
    max_timestamp: int
    leader_epoch: int
    transactional: bool
    control: bool
    control_type: int | None = None  # type of the first control record; None for an empty control batch
    coordinator_epoch: int = -1
    control_timestamp: int = -1
    #: a control batch whose first record does not read (found by the reader walk of a segment that is not
    #: recovered): where the replay reaches it, ProducerAppendInfo.append throws and the broker does not start
    unreadable: str | None = None


def batch_info(b: Batch, buf: bytes | memoryview) -> BatchInfo:
    """A BatchInfo from a parsed header; reads the first control record (as ProducerAppendInfo.append does).

    An unreadable control record raises InvalidRecordError, which the broker's recovery treats like a corrupt batch
    (LogSegment.recover catches InvalidRecordException and truncates there).
    """
    ctype = None
    cepoch = -1
    cts = -1
    if b.is_control and b.producer_id >= 0:
        for rec in b.iter_records(buf):
            ctype = parse_control_key(rec.key)[1]
            if ctype in (ABORT, COMMIT):
                cepoch = parse_end_txn_marker(rec.value)[1]
            cts = rec.timestamp
            break
    return BatchInfo(b.position, b.size, b.base_offset, b.last_offset, b.records_count, b.producer_id,
                     b.producer_epoch, b.last_sequence, b.max_timestamp, b.partition_leader_epoch,
                     b.is_transactional, b.is_control, ctype, cepoch, cts)


# ------------------------------------------------------------------------------------------------ entries
@dataclass
class ProducerStateEntry:
    """ProducerStateEntry: the broker's per-producer state (batch metadata: (lastSeq, lastOffset, delta, ts))."""

    producer_id: int
    epoch: int = -1
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int = -1
    batches: list[tuple[int, int, int, int]] = field(default_factory=list)

    @property
    def last_data_offset(self) -> int:
        """``lastDataOffset``: the last offset of the producer's last data batch, -1 when no batch is kept."""
        return self.batches[-1][1] if self.batches else -1

    def snapshot_entry(self) -> ProducerEntry:
        """The 46-byte entry ``writeSnapshot`` writes: the last batch's metadata, or -1/-1/0 when there is none."""
        if self.batches:
            last_seq, last_off, delta, _ts = self.batches[-1]
        else:
            last_seq, last_off, delta = -1, -1, 0
        return ProducerEntry(self.producer_id, self.epoch, last_seq, last_off, delta, self.last_timestamp,
                             self.coordinator_epoch, self.current_txn_first_offset)

    @classmethod
    def from_snapshot(cls, e: ProducerEntry) -> ProducerStateEntry:
        """``readSnapshot``: batch metadata only when lastOffset >= 0."""
        batches = [(e.last_sequence, e.last_offset, e.offset_delta, e.timestamp)] if e.last_offset >= 0 else []
        return cls(e.producer_id, e.producer_epoch, e.coordinator_epoch, e.timestamp, e.current_txn_first_offset,
                   batches)


@dataclass(frozen=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    aborted: bool


class ProducerState:
    """The producer map of one ProducerStateManager: replay, ongoing transactions, map end offset, snapshot content.

    ``inserted`` keeps every producer id in first-insertion order and ``capacity`` the largest table size reached,
    which is all the broker's HashMap iteration order depends on (clear() keeps the table).
    """

    def __init__(self, map_end_offset: int = 0) -> None:
        self.producers: dict[int, ProducerStateEntry] = {}
        self.ongoing: dict[int, int] = {}  # first offset -> producer id
        #: first offsets of transactions completed by this replay: ProducerStateManager's unreplicatedTxns (above the
        #: high watermark, which is 0 at load), part of firstUnstableOffset
        self.unreplicated: set[int] = set()
        self.map_end_offset = map_end_offset
        self.inserted: list[int] = []
        self.max_size = 0

    # ---------------------------------------------------------------------------------------- map bookkeeping
    def _add(self, e: ProducerStateEntry) -> None:
        if e.producer_id not in self.producers:
            self.inserted.append(e.producer_id)
        self.producers[e.producer_id] = e
        self.max_size = max(self.max_size, len(self.producers))

    def clear(self) -> None:
        """clearProducerIds + ongoingTxns.clear(): the table keeps its size, insertion history restarts."""
        self.producers.clear()
        self.ongoing.clear()
        self.unreplicated.clear()
        self.inserted = []

    def load_entry(self, e: ProducerStateEntry) -> None:
        """loadProducerEntry: an entry read from a snapshot (its open transaction becomes ongoing)."""
        self._add(e)
        if e.current_txn_first_offset >= 0:
            self.ongoing[e.current_txn_first_offset] = e.producer_id

    # ---------------------------------------------------------------------------------------- replay
    def apply(self, b: BatchInfo) -> CompletedTxn | None:
        """One batch (LogSegment.updateProducerState without the map end offset): returns a completed transaction."""
        if b.producer_id < 0:
            return None
        cur = self.producers.get(b.producer_id)
        if cur is None:
            cur = ProducerStateEntry(b.producer_id)
            self._add(cur)
        if b.control:
            if b.control_type is None:
                return None  # an empty control batch: nothing appended
            done = None
            if cur.current_txn_first_offset >= 0:
                done = CompletedTxn(b.producer_id, cur.current_txn_first_offset, b.base_offset, b.control_type == ABORT)
            if cur.epoch != b.producer_epoch:
                cur.batches.clear()
                cur.epoch = b.producer_epoch
            cur.coordinator_epoch = b.coordinator_epoch
            cur.current_txn_first_offset = -1
            cur.last_timestamp = b.control_timestamp
            return done
        if cur.current_txn_first_offset >= 0 and not b.transactional:
            raise InvalidTxnStateError(
                f"producer {b.producer_id} writes a non-transactional batch at offset {b.base_offset} while its "
                f"transaction from offset {cur.current_txn_first_offset} is open (InvalidTxnStateException)",
                position=b.position, expected="a transactional batch or a marker", found="non-transactional batch")
        if cur.epoch != b.producer_epoch:
            cur.batches.clear()
            cur.epoch = b.producer_epoch
        if len(cur.batches) == NUM_BATCHES_TO_RETAIN:
            cur.batches.pop(0)
        cur.batches.append((b.last_sequence, b.last_offset, int32(b.last_offset - b.base_offset), b.max_timestamp))
        cur.last_timestamp = b.max_timestamp
        if b.transactional and cur.current_txn_first_offset < 0:
            cur.current_txn_first_offset = b.base_offset
            self.ongoing[b.base_offset] = b.producer_id
        return None

    def last_stable_offset(self, txn: CompletedTxn) -> int:
        """ProducerStateManager.lastStableOffset: first ongoing transaction of another producer, else marker + 1."""
        for first in sorted(self.ongoing):
            if self.ongoing[first] != txn.producer_id:
                return first
        return txn.last_offset + 1

    def complete(self, txn: CompletedTxn) -> None:
        self.ongoing.pop(txn.first_offset, None)
        self.unreplicated.add(txn.first_offset)

    def replay(self, batches: Iterable[BatchInfo], on_abort: list | None = None) -> None:
        """Apply batches and advance the map end offset; aborted transactions go to ``on_abort`` as
        (producer id, first offset, marker offset, last stable offset), the ``.txnindex`` entry recovery writes."""
        for b in batches:
            done = self.apply(b)
            if done is not None:
                if done.aborted and on_abort is not None:
                    on_abort.append((done.producer_id, done.first_offset, done.last_offset, self.last_stable_offset(done)))
                self.complete(done)
            self.map_end_offset = b.last_offset + 1

    # ---------------------------------------------------------------------------------------- snapshots
    def snapshot_entries(self, java_map: bool = True) -> list[ProducerEntry]:
        """Entries in the broker's map iteration order (java.util.HashMap since 3.5, Scala 2.13 HashMap before)."""
        ids = [p for p in self.inserted if p in self.producers]
        order = java_hashmap_order(ids, self.max_size) if java_map else scala213_order(ids, long_hash)
        return [self.producers[p].snapshot_entry() for p in order]

    def snapshot_bytes(self, java_map: bool = True) -> bytes:
        return encode_producer_snapshot(self.snapshot_entries(java_map))


def replay_for_repair(state: dict[int, ProducerStateEntry], b: Batch, ctype: int | None) -> None:
    """The repairs' and explanations' replay of one batch over parsed headers (``compact``'s last-batch rule,
    ``explain transactions``): the epoch, the last data batch and the open transaction, as ``ProducerAppendInfo``
    sets them, without reading the marker's value.

    It differs from ``ProducerState.apply`` (the loader's, exact) in three places, kept as the commands had them:
    an empty control batch (``ctype`` None) still takes the batch's producer epoch (and so drops the batch
    metadata when it changes; the broker leaves the entry alone, ProducerAppendInfo.java ``append``); a control
    batch of another type than ABORT/COMMIT closes no transaction; a non-transactional batch in an open
    transaction is applied instead of raising ``InvalidTxnStateError``."""
    if b.producer_id < 0:
        return
    e = state.get(b.producer_id)
    if e is None:
        e = state[b.producer_id] = ProducerStateEntry(b.producer_id, b.producer_epoch)
    if e.epoch != b.producer_epoch:
        e.epoch = b.producer_epoch
        e.batches.clear()
    if b.is_control:
        if ctype in (ABORT, COMMIT):
            e.current_txn_first_offset = -1
        return
    if len(e.batches) == NUM_BATCHES_TO_RETAIN:
        e.batches.pop(0)
    e.batches.append((b.last_sequence, b.last_offset, int32(b.last_offset - b.base_offset), b.max_timestamp))
    if b.is_transactional and e.current_txn_first_offset < 0:
        e.current_txn_first_offset = b.base_offset


def entries_from_snapshot(entries: Iterable[ProducerEntry]) -> dict[int, ProducerStateEntry]:
    """The producer map of a ``.snapshot``'s entries, every one kept (``readSnapshot``; no expiry)."""
    return {e.producer_id: ProducerStateEntry.from_snapshot(e) for e in entries}


def long_hash(v: int) -> int:
    """``Long.hashCode``: (int)(v ^ (v >>> 32)). Scala's ``##`` of a Long agrees with it for every int-range value
    and for all others too (it falls back to the same formula)."""
    u = v & 0xFFFFFFFFFFFFFFFF
    return int32(u ^ (u >> 32))


def java_hashmap_order(keys: list[int], max_size: int | None = None) -> list[int]:
    """Iteration order of a ``java.util.HashMap<Long, _>`` whose keys were first inserted in ``keys`` order.

    The table starts at 16 buckets and doubles once the size exceeds 0.75 of it; iteration walks buckets in index
    order (spread hash & (n - 1)) and each bucket in insertion order (resizes split buckets keeping that order).
    Bins of 8+ colliding keys are treeified by Java; their order is not modelled (sequential producer ids never
    collide that much).
    """
    size = max(max_size or 0, len(keys))
    cap = 16
    while size > cap * 3 // 4:
        cap *= 2

    def bucket(k: int) -> int:
        h = long_hash(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (cap - 1)

    return [k for _i, k in sorted(((bucket(k), i), k) for i, k in enumerate(keys))]


def load_snapshot_state(entries: list[ProducerEntry], offset: int, now_ms: int | None,
                        expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS) -> ProducerState:
    """loadFromSnapshot: entries of producers that have expired (no open transaction and idle for
    ``producer.id.expiration.ms``) are dropped; ``now_ms`` None keeps every entry."""
    st = ProducerState(offset)
    for e in entries:
        if now_ms is not None and e.current_txn_first_offset < 0 and now_ms - e.timestamp >= expiration_ms:
            continue
        st.load_entry(ProducerStateEntry.from_snapshot(e))
    return st


def safe_batch_info(b: Batch, buf: bytes | memoryview) -> BatchInfo | KafkalogError:
    """``batch_info`` or the error that makes recovery stop at this batch."""
    try:
        return batch_info(b, buf)
    except KafkalogError as exc:
        return exc


class LoadedSegment(Protocol):
    """What producer-state rebuilding needs of a loaded segment (``broker/loader.Scan``)."""

    base: int
    infos: list[BatchInfo]

    @property
    def replay_infos(self) -> list[BatchInfo]:
        """The batches the producer replay reads (without CRC checks for a segment that is not recovered)."""
        ...

    def replay_batches(self, start: int, last_offset: int | None) -> list[BatchInfo]:
        """The producer batches ``segment.read(start, ..)`` gives, up to ``last_offset`` in its segment."""
        ...


# ------------------------------------------------------------------------------------------------ snapshots
class SnapshotStore:
    """The partition's ``.snapshot`` files as the simulation changes them (content read lazily from disk)."""

    def __init__(self, pdir: str, names: list[str]) -> None:
        self.pdir = pdir
        self.present: dict[int, bytes | None] = {}
        for n in names:
            if layout.loader_file_kind(n) == "snapshot":
                off = layout.loader_offset(n)
                if off is not None and n == f"{off:020d}.snapshot":
                    self.present[off] = None
        self.written: dict[int, bytes] = {}

    def offsets(self) -> list[int]:
        return sorted(self.present)

    def read(self, off: int) -> list[comp.ProducerEntry]:
        data = self.present[off]
        path = os.path.join(self.pdir, f"{off:020d}.snapshot")
        if data is None:
            with open(path, "rb") as f:
                data = f.read()
        return comp.parse_producer_snapshot(data, path).entries

    def delete(self, off: int) -> None:
        self.present.pop(off, None)
        self.written.pop(off, None)

    def write(self, off: int, data: bytes) -> None:
        self.present[off] = data
        self.written[off] = data


class ProducerStateManager:
    """One ``ProducerStateManager`` (ProducerStateManager.java): its own view of the snapshot files, the producer
    map (``ProducerState``), the map end offset and the last snapshot offset. The loader runs several (one per
    segment it recovers, then the log's own), all over one ``SnapshotStore``."""

    def __init__(self, store: SnapshotStore, java_map: bool, now_ms: int | None) -> None:
        self.store = store
        self.view = set(store.offsets())
        self.state = ProducerState(0)
        self.last_snap = 0
        self.java_map = java_map
        self.now_ms = now_ms
        self.expiration_ms = DEFAULT_PRODUCER_ID_EXPIRATION_MS  # producer.id.expiration.ms

    def remove(self, off: int) -> None:
        self.view.discard(off)
        self.store.delete(off)

    def take_snapshot(self) -> None:
        if self.state.map_end_offset > self.last_snap:
            off = self.state.map_end_offset
            self.store.write(off, self.state.snapshot_bytes(self.java_map))
            self.view.add(off)
            self.last_snap = off

    def load_from_snapshot(self, log_start: int) -> None:
        while True:
            live = sorted(o for o in self.view if o in self.store.present)
            if not live:
                self.last_snap = self.state.map_end_offset = log_start
                return
            off = live[-1]
            try:
                entries = self.store.read(off)
            except KafkalogError:
                self.remove(off)  # CorruptSnapshotException: deleted, the next older one tried
                continue
            loaded = load_snapshot_state(entries, off, self.now_ms, self.expiration_ms)
            self.state.producers, self.state.ongoing = loaded.producers, loaded.ongoing
            self.state.inserted = loaded.inserted
            self.state.max_size = max(self.state.max_size, loaded.max_size)
            self.last_snap = self.state.map_end_offset = off
            return

    def truncate_and_reload(self, log_start: int, log_end: int) -> None:
        for off in sorted(self.view):
            if off > log_end or off <= log_start:
                self.remove(off)
        if log_end != self.state.map_end_offset:
            self.state.clear()
            self.load_from_snapshot(log_start)

    def is_empty(self) -> bool:
        return not self.state.producers


def rebuild_producer_state(psm: ProducerStateManager, segs: Sequence[LoadedSegment], log_start: int, last_offset: int,
                           clean: bool, read: list[int] | None = None) -> bool:
    """UnifiedLog.rebuildProducerState over ``segs`` (the segments loaded so far, in order). ``read`` collects the
    base offsets of the segments it reads (``segment.read`` looks the start offset up in the segment's offset index,
    LogSegment.translateOffset, so the broker opens that index and trims it at its close). Returns whether it replayed
    records after the snapshot it reloaded (UnifiedLog.java:103-130): the producers of that replay are in the state
    without the expiry check loadFromSnapshot applies, so the snapshot it then takes at ``last_offset`` is that state
    as it is (read back, it must not be expired again)."""
    to_snap: list[int] = []
    if segs:
        if len(segs) > 1:
            to_snap.append(segs[-2].base)
        to_snap.append(segs[-1].base)
    to_snap.append(last_offset)
    if not psm.view.intersection(psm.store.present) and clean:
        for off in to_snap:
            psm.state.map_end_offset = off
            psm.take_snapshot()
        return False
    empty_before = psm.is_empty() and psm.state.map_end_offset >= last_offset
    psm.truncate_and_reload(log_start, last_offset)
    replayed = last_offset > psm.state.map_end_offset and not empty_before
    if replayed:
        floor = [s for s in segs if s.base <= last_offset]
        floor_seg = floor[-1] if floor else None
        start_from = psm.state.map_end_offset
        chosen = [s for s in segs if s.base < last_offset]
        lower = [s for s in chosen if s.base <= start_from]
        if lower:
            chosen = [s for s in chosen if s.base >= lower[-1].base]
        for s in chosen:
            if read is not None:
                read.append(s.base)
            start = max(s.base, psm.state.map_end_offset, log_start)
            psm.state.map_end_offset = start
            if s.base in to_snap:
                psm.take_snapshot()
            batches = s.replay_batches(start, last_offset if s is floor_seg else None)
            bad = next((b for b in batches if b.unreadable is not None), None)
            if bad is not None:
                raise KafkalogError(f"{bad.unreadable}: the replay's ProducerAppendInfo.append reads that control "
                                    "record and throws (InvalidRecordException)", position=bad.position)
            end_keep = psm.state.map_end_offset
            psm.state.replay(batches)
            psm.state.map_end_offset = end_keep  # loadProducersFromRecords does not move the map end offset
    psm.state.map_end_offset = last_offset
    psm.take_snapshot()
    return replayed


def remove_stray_snapshots(store: SnapshotStore, bases: list[int]) -> None:
    """ProducerStateManager.removeStraySnapshots."""
    base_set = set(bases)
    stray: int | None = None
    for off in store.offsets():
        if off not in base_set:
            if stray is not None:
                store.delete(stray)
            stray = off
    if stray is not None and bases and stray < max(bases):
        store.delete(stray)
