"""``compare-replicas``: align copies of one topic-partition from several brokers and say where they diverge, and
what Kafka's follower truncation would do to each (data-loss accounting).

Why it is built this way:

* Replicas are compared batch by batch on a header walk (no record decoding): two batches at the same base offset
  with equal 61-byte headers (base offset, length, partition leader epoch, CRC) and a valid CRC hold the same bytes.
  Records are decoded only where headers differ but the batch identity the log cleaner keeps is the same
  (``MemoryRecords.buildRetainedRecordsInto`` keeps base offset, last offset, producer id/epoch, base sequence, leader
  epoch, flags: clients/.../MemoryRecords.java:292-318), i.e. where one copy may be a compacted form of the other.
* Compaction-aware: an offset held by one replica and not by the other is normal when the lacking replica's cleaner
  had a reason to drop it (a later record with the same key in that replica, a keyless record, data of an aborted
  transaction: LogCleaner.shouldRetainRecord, core/.../LogCleaner.scala:905-935). Anything else is divergence:
  ``cleaning-divergence`` when it concerns what cleaning kept (a key whose latest value differs, a tombstone or a
  transaction marker present on one replica only, a record dropped from a batch the other replica holds),
  ``missing-range`` when a replica simply lacks offsets.
* Truncation is simulated with the broker's own rules, using ``end_offset_for`` (LeaderEpochFileCache.endOffsetFor)
  and ``truncate_from_end`` from ``broker.leader_epoch_cache``: the leader's fetch validation (Partition.readRecords,
  core/.../cluster/Partition.scala:1533-1565) and the follower's AbstractFetcherThread.getOffsetTruncationState
  (core/.../server/AbstractFetcherThread.scala:583-631), repeated until the leader accepts the fetch (KIP-279).
* A lagging follower is not divergence; a replica holding offsets the leader will make it truncate is (the leader is
  missing that range: the records are lost when the replica becomes a follower).

Only reads. The engine returns a ``Comparison``; rendering is in ``render.replicas``.
"""

from __future__ import annotations

import os
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from kafkalog_cli.broker.checkpoints import high_watermark
from kafkalog_cli.broker.leader_epoch_cache import end_offset_for, first_of_each_higher_epoch, truncate_from_end
from kafkalog_cli.errors import CheckpointError, CorruptRecordError, KafkalogError, UnreadableFileError
from kafkalog_cli.format.batch import ATTR_CONTROL, ATTR_TIMESTAMP_TYPE, ATTR_TRANSACTIONAL, HEADER_SIZE, Batch, Record
from kafkalog_cli.format.control import ABORT, COMMIT, parse_control_key
from kafkalog_cli.format.text import increment_sequence
from kafkalog_cli.ops.truncate import CHECKPOINT
from kafkalog_cli.storage.companions import (
    parse_leader_epoch_checkpoint,
    read_checkpoint_text,
)
from kafkalog_cli.storage.layout import segment_logs
from kafkalog_cli.storage.meta_properties import broker_id_of
from kafkalog_cli.storage.paths import require_directory
from kafkalog_cli.storage.segment import MappedFile, read_entry, walk

DIFFERENT_BATCH = "different-batch"
DIFFERENT_EPOCH = "different-epoch"
MISSING_RANGE = "missing-range"
CLEANING_DIVERGENCE = "cleaning-divergence"
CORRUPT_BATCH = "corrupt-batch"
KINDS = (DIFFERENT_BATCH, DIFFERENT_EPOCH, MISSING_RANGE, CLEANING_DIVERGENCE, CORRUPT_BATCH)
_KIND_RANK = {CORRUPT_BATCH: 0, DIFFERENT_EPOCH: 1, DIFFERENT_BATCH: 2, MISSING_RANGE: 3, CLEANING_DIVERGENCE: 4}
_IDENTITY_ATTRS = ATTR_TRANSACTIONAL | ATTR_CONTROL | ATTR_TIMESTAMP_TYPE
MAX_ROUNDS = 1000


# ------------------------------------------------------------------------------------------ loading
@dataclass(slots=True)
class BatchRef:
    """One entry of a replica's log: where it is and the header fields the comparison needs."""

    seg: str
    position: int
    size: int
    base: int
    last: int
    epoch: int
    magic: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: int
    attributes: int
    base_ts: int
    max_ts: int
    valid: bool
    header: bytes  # the 61 header bytes (v2), the whole entry (v0/v1)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & ATTR_CONTROL)

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & ATTR_TRANSACTIONAL)

    def identity(self) -> tuple:
        """What the log cleaner keeps when it rewrites a batch (MemoryRecords.java:301-316)."""
        return (self.base, self.last, self.magic, self.epoch, self.producer_id, self.producer_epoch,
                self.base_sequence, self.attributes & _IDENTITY_ATTRS)


@dataclass
class Corruption:
    """A batch the broker would reject (bad CRC, bad size), located for the operator."""

    file: str
    position: int
    offset: int
    message: str

    def to_dict(self) -> dict:
        return {"file": self.file, "position": self.position, "offset": self.offset, "message": self.message}


@dataclass
class Replica:
    """One partition directory, read once: its batches in offset order, epochs and identity."""

    path: str
    name: str
    broker_id: int | str | None
    log_start_offset: int
    log_end_offset: int
    epochs: list[tuple[int, int]]
    epochs_source: str
    batches: list[BatchRef]
    corrupt: list[Corruption] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    _maps: dict[str, MappedFile] = field(default_factory=dict, repr=False)
    _keys: dict[bytes, list[int]] | None = field(default=None, repr=False)
    _qmin: float | None = field(default=None, repr=False)
    _txn: dict[int, list[int]] | None = field(default=None, repr=False)
    _markers: dict[int, list[tuple[int, int]]] | None = field(default=None, repr=False)

    @property
    def latest_epoch(self) -> int:
        return self.epochs[-1][0] if self.epochs else -1

    @property
    def label(self) -> str:
        """The replica in a sentence: ``broker 2`` when its name is a broker id (``--names 0,1,2``), so that a broker
        id is never read as an offset or an epoch; else its name."""
        return f"broker {self.name}" if self.name.isdigit() else self.name

    @property
    def compacted(self) -> bool:
        """Whether the cleaner visibly rewrote any batch here (fewer records than offsets, or a delete horizon)."""
        return any(b.magic >= 2 and not b.is_control and (b.records < b.last - b.base + 1 or b.attributes & 0x40)
                   for b in self.batches if b.valid)

    def buf(self, seg: str) -> memoryview | bytes:
        mf = self._maps.get(seg)
        if mf is None:
            mf = self._maps[seg] = MappedFile(seg)
        return mf.buf

    def close(self) -> None:
        for mf in self._maps.values():
            mf.close()
        self._maps.clear()

    def records(self, b: BatchRef) -> list[Record]:
        """Decoded records of a v2 batch (legacy entries compare as bytes and have none here)."""
        if b.magic < 2 or not b.valid:
            return []
        buf = self.buf(b.seg)
        batch = Batch(buf, b.position)
        try:
            return list(batch.iter_records(buf))
        except KafkalogError as exc:
            raise exc.located(b.seg) from None

    def key_offsets(self) -> dict[bytes, list[int]]:
        """key -> sorted offsets of the data records with that key, over the whole log (built on demand)."""
        if self._keys is None:
            keys: dict[bytes, list[int]] = {}
            for b in self.batches:
                if b.is_control or not b.valid:
                    continue
                for r in self.records(b):
                    if r.key is not None:
                        keys.setdefault(r.key, []).append(r.offset)
            for v in keys.values():
                v.sort()
            self._keys = keys
        return self._keys

    def first_superseding_kept(self) -> float:
        """The lowest offset of a record that supersedes a record this log still keeps (the second occurrence of a
        key). The cleaner drops every superseded record whose successor lies in the range it cleaned, so a record it
        dropped must have been superseded below this offset (see ``_unexplained``); +inf when nothing kept is
        superseded."""
        if self._qmin is None:
            self._qmin = min((v[1] for v in self.key_offsets().values() if len(v) > 1), default=float("inf"))
        return self._qmin

    def txn_data(self) -> dict[int, list[int]]:
        """producer id -> sorted last offsets of its non-empty transactional data batches."""
        if self._txn is None:
            out: dict[int, list[int]] = {}
            for b in self.batches:
                if b.is_transactional and not b.is_control and b.records > 0 and b.valid:
                    out.setdefault(b.producer_id, []).append(b.last)
            for v in out.values():
                v.sort()
            self._txn = out
        return self._txn

    def markers(self) -> dict[int, list[tuple[int, int]]]:
        """producer id -> [(offset, ABORT|COMMIT)] of the transaction markers in this log."""
        if self._markers is None:
            out: dict[int, list[tuple[int, int]]] = {}
            for b in self.batches:
                if b.is_control and b.valid:
                    for r in self.records(b):
                        try:
                            ctype = parse_control_key(r.key)[1]
                        except KafkalogError:
                            continue
                        if ctype in (ABORT, COMMIT):
                            out.setdefault(b.producer_id, []).append((r.offset, ctype))
            for v in out.values():
                v.sort()
            self._markers = out
        return self._markers


def _read_epochs(pdir: str, batches: list[BatchRef], notes: list[str]) -> tuple[list[tuple[int, int]], str]:
    path = os.path.join(pdir, CHECKPOINT)
    if os.path.isfile(path):
        return parse_leader_epoch_checkpoint(read_checkpoint_text(path), path), "checkpoint"
    # LogSegment.recover assigns each batch's epoch (LogSegment.java:497-501)
    cache = first_of_each_higher_epoch((b.epoch, b.base) for b in batches if b.valid and b.magic >= 2)
    notes.append(f"no {CHECKPOINT}: leader epochs rebuilt from the batches' partition leader epochs, as the "
                 "broker's log recovery assigns them (LogSegment.recover)")
    return cache, "batches"


def load_replica(pdir: str, name: str | None = None, broker_id: int | str | None = None) -> Replica:
    """Read one partition directory: every entry header (CRC checked), the epoch cache and the broker id."""
    pdir = os.path.abspath(pdir)
    require_directory(pdir, "a partition directory such as orders-0")
    notes: list[str] = []
    if broker_id is None:
        broker_id = broker_id_of(os.path.dirname(pdir))
    batches: list[BatchRef] = []
    corrupt: list[Corruption] = []
    segs = segment_logs(pdir)
    if not segs and not any(n.endswith(".log") or n == "leader-epoch-checkpoint" for n in os.listdir(pdir)):
        from kafkalog_cli.storage.partition_name import names_a_partition

        if not names_a_partition(pdir):  # an empty partition is an empty replica; this is not one
            raise UnreadableFileError("not a partition directory", file=pdir, expected="a directory such as orders-0",
                                      found="no segment, no leader-epoch-checkpoint and not a <topic>-<n> name")
    leo = 0
    for base, path in segs:
        seg_last = None
        with MappedFile(path) as mf:
            buf = mf.buf
            end = 0
            try:
                for pos, size, magic in walk(buf, file=path):
                    end = pos + size
                    ref = _ref(buf, path, pos, size, magic, corrupt)
                    batches.append(ref)
                    seg_last = ref.last if seg_last is None else max(seg_last, ref.last)
            except CorruptRecordError as exc:
                at = exc.position if exc.position is not None else end
                corrupt.append(Corruption(path, at, (seg_last + 1) if seg_last is not None else base,
                                          f"{exc.message}: the rest of the segment cannot be read"))
                end = len(buf)
            if end < len(buf):
                notes.append(f"{os.path.basename(path)}: {len(buf) - end} bytes after the last complete batch "
                             "(a torn write; the broker's recovery drops them)")
        leo = max(leo, base) if seg_last is None else max(leo, seg_last + 1)
    epochs, source = _read_epochs(pdir, batches, notes)
    batches.sort(key=lambda b: b.base)  # stable: file order is kept for equal bases
    start = segs[0][0] if segs else 0
    label = name if name is not None else (str(broker_id) if broker_id is not None else pdir)
    return Replica(pdir, label, broker_id, start, leo, epochs, source, batches, corrupt, notes)


def _ref(buf: bytes | memoryview, path: str, pos: int, size: int, magic: int, corrupt: list[Corruption]) -> BatchRef:
    e = read_entry(buf, pos, magic, file=path)
    if isinstance(e, Batch):
        valid = e.is_valid(buf)
        ref = BatchRef(path, pos, size, e.base_offset, e.last_offset, e.partition_leader_epoch, e.magic, e.producer_id,
                       e.producer_epoch, e.base_sequence, e.records_count, e.attributes, e.base_timestamp,
                       e.max_timestamp, valid, bytes(buf[pos:pos + min(size, HEADER_SIZE)]))
        if not valid:
            what = "batch is shorter than its header" if size < HEADER_SIZE else \
                f"CRC mismatch (stored {e.crc}, computed {e.computed_crc(buf)})"
            corrupt.append(Corruption(path, pos, e.base_offset, f"batch {e.base_offset}..{e.last_offset}: {what}"))
        return ref
    valid = e.is_valid(buf)
    if not valid:
        corrupt.append(Corruption(path, pos, e.base_offset, f"message at offset {e.base_offset}: CRC mismatch"))
    return BatchRef(path, pos, size, e.base_offset, e.last_offset, -1, e.magic, -1, -1, -1, 1, e.attributes, -1, -1,
                    valid, bytes(buf[pos:pos + size]))


# ------------------------------------------------------------------------------------------ pairwise comparison
@dataclass
class Finding:
    offset: int
    kind: str
    detail: str


@dataclass
class PairResult:
    a: str
    b: str
    compared_from: int
    compared_to: int  # exclusive: min of the two log end offsets
    finding: Finding | None

    def to_dict(self) -> dict:
        f = self.finding
        return {"replicas": [self.a, self.b], "compared_from": self.compared_from, "compared_to": self.compared_to,
                "first_divergent_offset": f.offset if f else None, "divergence_kind": f.kind if f else None,
                "detail": f.detail if f else None}


def _rec_key(r: Record) -> tuple:
    return (r.timestamp, r.key, r.value, tuple(r.headers))


def _earliest(findings: list[Finding]) -> Finding | None:
    return min(findings, key=lambda f: (f.offset, _KIND_RANK[f.kind])) if findings else None


def compare_pair(a: Replica, b: Replica) -> PairResult:
    """First divergence between two replicas over the offsets both hold ([max log start, min log end))."""
    lo = max(a.log_start_offset, b.log_start_offset)
    hi = min(a.log_end_offset, b.log_end_offset)
    findings: list[Finding] = []
    for r in (a, b):
        for c in r.corrupt:
            if lo <= c.offset < hi:
                findings.append(Finding(c.offset, CORRUPT_BATCH, f"{r.label}: {c.file} at byte {c.position}: {c.message}"))
    missing: list[tuple[Replica, Replica, BatchRef, Record | None, bool]] = []  # holder, lacker, batch, record, covered
    ia = [x for x in a.batches if x.last >= lo and x.base < hi]
    ib = [x for x in b.batches if x.last >= lo and x.base < hi]
    i = j = 0
    while i < len(ia) or j < len(ib):
        limit = min((f.offset for f in findings), default=None)
        x = ia[i] if i < len(ia) else None
        y = ib[j] if j < len(ib) else None
        here = min(z.base for z in (x, y) if z is not None)
        if limit is not None and here > limit:
            break
        if y is None or (x is not None and x.last < y.base):
            assert x is not None  # y is None only past ib's end, and the loop runs while one list has more
            missing.append((a, b, x, None, False))
            i += 1
            continue
        if x is None or y.last < x.base:
            missing.append((b, a, y, None, False))
            j += 1
            continue
        i += 1
        j += 1
        if x.base != y.base:
            off = max(lo, min(x.base, y.base))
            kind = DIFFERENT_EPOCH if x.epoch != y.epoch else DIFFERENT_BATCH
            findings.append(Finding(off, kind, f"{a.label} has batch {x.base}..{x.last} (leader epoch {x.epoch}), "
                                               f"{b.label} has batch {y.base}..{y.last} (leader epoch {y.epoch})"))
            break
        if not (x.valid and y.valid):
            continue  # already a corrupt-batch finding
        if x.header == y.header:
            continue
        if x.epoch != y.epoch:
            findings.append(Finding(x.base, DIFFERENT_EPOCH, f"batch at {x.base}: leader epoch {x.epoch} on {a.label}, "
                                                             f"leader epoch {y.epoch} on {b.label}"))
            break
        if x.identity() != y.identity() or x.magic < 2:
            findings.append(Finding(x.base, DIFFERENT_BATCH, _describe_difference(a, x, b, y)))
            break
        f = _compare_records(a, x, b, y, missing)
        if f is not None:
            findings.append(f)
            break
    limit = min((f.offset for f in findings), default=None)
    explained = {a.name: [0], b.name: [0]}
    missing.sort(key=lambda m: m[3].offset if m[3] is not None else m[2].base)
    for holder, lacker, batch, rec, covered in missing:
        if limit is not None and batch.base > limit:
            continue
        f = _judge_missing(holder, lacker, batch, rec, covered, lo, hi, limit, explained[lacker.name])
        if f is not None:
            findings.append(f)
            limit = min(limit, f.offset) if limit is not None else f.offset
    return PairResult(a.name, b.name, lo, hi, _earliest(findings))


def _describe_difference(a: Replica, x: BatchRef, b: Replica, y: BatchRef) -> str:
    parts = []
    if x.last != y.last:
        parts.append(f"last offset {x.last} vs {y.last}")
    if x.producer_id != y.producer_id or x.producer_epoch != y.producer_epoch:
        parts.append(f"producer {x.producer_id}/{x.producer_epoch} vs {y.producer_id}/{y.producer_epoch}")
    if x.base_sequence != y.base_sequence:
        parts.append(f"base sequence {x.base_sequence} vs {y.base_sequence}")
    if (x.attributes & _IDENTITY_ATTRS) != (y.attributes & _IDENTITY_ATTRS):
        parts.append(f"attributes {x.attributes:#x} vs {y.attributes:#x}")
    if x.magic != y.magic:
        parts.append(f"magic {x.magic} vs {y.magic}")
    if not parts:
        parts.append("bytes differ")
    return f"batch at {x.base} differs between {a.label} and {b.label}: " + ", ".join(parts)


def _compare_records(a: Replica, x: BatchRef, b: Replica, y: BatchRef,
                     missing: list[tuple[Replica, Replica, BatchRef, Record | None, bool]]) -> Finding | None:
    """Same cleaner identity, different bytes: one may be a compacted form of the other. Records at the same offset
    must be equal; a record on one side only goes to the compaction check."""
    try:
        ra = {r.offset: r for r in a.records(x)}
        rb = {r.offset: r for r in b.records(y)}
    except KafkalogError as exc:
        return Finding(x.base, CORRUPT_BATCH, f"batch at {x.base}: records cannot be decoded: {exc.describe()}")
    for off in sorted(set(ra) | set(rb)):
        p, q = ra.get(off), rb.get(off)
        if p is not None and q is not None:
            if _rec_key(p) != _rec_key(q):
                what = [w for w, u, v in (("key", p.key, q.key), ("value", p.value, q.value),
                                          ("timestamp", p.timestamp, q.timestamp), ("headers", p.headers, q.headers))
                        if u != v]
                return Finding(off, DIFFERENT_BATCH, f"record {off} differs between {a.label} and {b.label} ("
                               + ", ".join(what) + ")")
        elif p is not None:
            missing.append((a, b, x, p, True))
        else:
            assert q is not None
            missing.append((b, a, y, q, True))
    return None


def _aborted(pid: int, offset: int, *replicas: Replica) -> bool:
    """Whether the first marker of ``pid`` after ``offset`` (in any of the replicas) is an ABORT."""
    best: tuple[int, int] | None = None
    for r in replicas:
        for off, ctype in r.markers().get(pid, []):
            if off > offset:
                if best is None or off < best[0]:
                    best = (off, ctype)
                break
    return best is not None and best[1] == ABORT


def _judge_missing(holder: Replica, lacker: Replica, batch: BatchRef, rec: Record | None, covered: bool,
                   lo: int, hi: int, limit: int | None, explained: list[int]) -> Finding | None:
    """Records ``holder`` has and ``lacker`` does not: the earliest one the lacker's cleaner could not have dropped.
    ``explained`` counts drops found legitimate so far (evidence that the lacker was cleaned)."""
    if rec is None:
        if not batch.valid:
            return None
        if batch.magic < 2:
            return Finding(max(lo, batch.base), MISSING_RANGE, f"{lacker.label} lacks offset {batch.base} "
                           f"that {holder.label} holds")
        try:
            recs = holder.records(batch)
        except KafkalogError as exc:
            return Finding(batch.base, CORRUPT_BATCH, f"batch at {batch.base} on {holder.label}: {exc.describe()}")
    else:
        recs = [rec]
    for r in recs:
        if not lo <= r.offset < hi or (limit is not None and r.offset > limit):
            continue
        cleaned = covered or explained[0] > 0 or lacker.compacted
        why = _unexplained(holder, lacker, batch, r, hi, cleaned)
        if why is None:
            explained[0] += 1
            continue
        kind, text = why
        # a marker or a tombstone on one side only is about what cleaning kept, whatever else the lacker shows;
        # a value is a cleaning matter only when the lacker shows it was cleaned (else it simply lacks the range)
        if kind is None or (not cleaned and not (batch.is_control or r.value is None)):
            kind = CLEANING_DIVERGENCE if covered else MISSING_RANGE
        if kind == MISSING_RANGE:
            end = _run_end(lacker, r.offset, hi)
            text = f"{lacker.label} lacks offsets {r.offset}..{end} that {holder.label} holds ({text})"
        return Finding(r.offset, kind, text)
    return None


def _unexplained(holder: Replica, lacker: Replica, batch: BatchRef, r: Record, hi: int,
                 cleaned: bool) -> tuple[str | None, str] | None:
    """None when the lacker's cleaner had a reason to drop ``r``; else (kind, or None for "missing-range or
    cleaning-divergence by context", why).

    The cleaner rewrites the log from its start up to the end of the dirty range it mapped, dropping every record
    whose key occurs again in that range (LogCleaner.shouldRetainRecord). So in a cleaned log every dropped record
    was superseded below the lowest successor of any record the log still keeps (``first_superseding_kept``); a
    gap above that point is not compaction.
    """
    where = f"offset {r.offset}"
    qmin = lacker.first_superseding_kept()
    if batch.is_control:
        if cleaned and r.offset < qmin and not _txn_data_before(holder, lacker, batch.producer_id, r.offset):
            return None  # the cleaner removes a marker once its transaction's data is gone and its horizon passed
        return CLEANING_DIVERGENCE, (f"transaction marker at {where} kept on {holder.label} only ({lacker.label} "
                                     "still holds data of that transaction, or was not cleaned there)")
    if r.key is None:
        if r.offset < qmin and lacker.compacted:
            return None  # the cleaner drops keyless records (LogCleaner.scala:935)
        return None, f"keyless record at {where}"
    if batch.is_transactional and r.offset < qmin and _aborted(batch.producer_id, r.offset, holder, lacker):
        return None  # data of an aborted transaction
    mine = lacker.key_offsets().get(r.key, [])
    k = bisect_right(mine, r.offset)
    if k < len(mine) and mine[k] < qmin:
        return None  # superseded by a later record with the same key on the lacker
    theirs = holder.key_offsets().get(r.key, [])
    h = bisect_right(theirs, r.offset)
    if h < len(theirs) and theirs[h] < hi and k == len(mine) and theirs[h] < qmin:
        return None  # the holder's next record of this key is missing on the lacker too: judged on its own
    key = r.key[:40].decode("utf-8", "replace")
    if r.value is None and k == 0 and cleaned and r.offset < qmin:
        return None  # a tombstone removed after its delete horizon, with every older value of the key gone too
    if r.value is None:
        return CLEANING_DIVERGENCE, f"tombstone for key {key!r} at {where} present on {holder.label} only"
    if k > 0:
        return CLEANING_DIVERGENCE, (f"latest value of key {key!r} differs: {holder.label} has it at {where}, "
                                     f"{lacker.label} kept an older record at {mine[k - 1]} and dropped this one")
    return None, f"record with key {key!r} at {where}"


def _txn_data_before(holder: Replica, lacker: Replica, pid: int, marker_offset: int) -> bool:
    """Whether the lacker still holds data of the transaction the holder's marker at ``marker_offset`` closes
    (transactional data of ``pid`` after the holder's previous marker of ``pid``)."""
    marks = holder.markers().get(pid, [])
    i = bisect_left(marks, (marker_offset, -1))
    prev = marks[i - 1][0] if i > 0 else -1
    lasts = lacker.txn_data().get(pid, [])
    j = bisect_right(lasts, prev)
    return j < len(lasts) and lasts[j] < marker_offset


def _run_end(lacker: Replica, start: int, hi: int) -> int:
    """Last offset of the range the lacker is missing from ``start`` (up to its next batch or the compared end)."""
    nxt = min((b.base for b in lacker.batches if b.base > start), default=hi)
    return min(nxt, hi) - 1


# ------------------------------------------------------------------------------------------ truncation
@dataclass
class TruncationStep:
    fetch_epoch: int
    fetch_offset: int
    leader_epoch: int
    leader_end_offset: int
    truncate_to: int | None
    rule: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class LostRecords:
    count: int = 0
    batches: int = 0
    offsets: list[list[int]] = field(default_factory=list)  # merged [first, last] ranges of the removed batches
    producer_ids: list[int] = field(default_factory=list)
    producers: list[dict] = field(default_factory=list)
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    markers: int = 0
    refetched: int = 0  # records removed by the cut that the leader holds identically (fetched again)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def leader_epochs(leader: Replica, replicas: list[Replica]) -> tuple[list[tuple[int, int]], str | None]:
    """The leader's epoch cache as it serves fetches. A replica becomes leader with an epoch above every epoch
    before it and assigns (that epoch, its log end offset) first (Partition.makeLeader ->
    maybeAssignEpochStartOffset, spec §10.1). So a leader whose files show an older latest epoch than some follower
    (named by --leader, its new epoch not yet in its checkpoint) gets that entry here; without it its cache cannot
    answer the follower's newer epoch and the follower's divergent records would wrongly look kept."""
    top = max(r.latest_epoch for r in replicas)
    if leader.latest_epoch >= top:
        return list(leader.epochs), None
    entry = (top + 1, leader.log_end_offset)
    return list(leader.epochs) + [entry], (
        f"the leader {leader.label}'s latest epoch {leader.latest_epoch} is below {top} (seen on a follower): as leader it "
        f"runs at a newer epoch, modelled as {entry[0]} starting at its log end offset {entry[1]}")


def simulate_truncation(follower: Replica, leader: Replica, lcache: list[tuple[int, int]] | None = None,
                        ) -> tuple[int | None, list[TruncationStep], list[str]]:
    """Where the follower's log would end after it fetched from ``leader``: the leader validates the fetch
    (Partition.scala:1533-1565), a diverging epoch makes the follower truncate (AbstractFetcherThread.scala:583-631),
    and the loop repeats until the leader accepts the fetch. ``lcache``: the leader's epochs as leader
    (``leader_epochs``), default its checkpoint. Returns (offset, steps, notes); None when unknowable."""
    cache = list(follower.epochs)
    leo = follower.log_end_offset
    lcache, lleo = (leader.epochs if lcache is None else lcache), leader.log_end_offset
    steps: list[TruncationStep] = []
    notes: list[str] = []
    target = leo
    for _ in range(MAX_ROUNDS):
        if not cache and leo <= follower.log_start_offset:
            return target, steps, notes  # an empty log: whatever the high watermark, nothing is cut
        if not cache:
            hw, _why = high_watermark(follower.path)
            steps.append(TruncationStep(-1, leo, -1, -1, hw, "no leader epoch on the follower: truncate to the high "
                                        "watermark (AbstractFetcherThread.truncateToHighWatermark)"))
            if hw is None:
                notes.append("the follower has no leader epochs and no replication-offset-checkpoint entry: the broker "
                             "would truncate to its high watermark, unknown offline")
                return None, steps, notes
            return min(hw, target), steps, notes
        fetch_epoch = cache[-1][0]
        le, loff = end_offset_for(lcache, fetch_epoch, lleo)
        if le < 0 or loff < 0:
            # the leader cannot answer (OffsetOutOfRange): fetchOffsetAndTruncate cuts to the leader's end offset
            cut = min(lleo, leo)
            steps.append(TruncationStep(fetch_epoch, leo, le, loff, cut, "leader has no end offset for the epoch: "
                                        "out of range, truncate to the leader's log end offset "
                                        "(AbstractFetcherThread.fetchOffsetAndTruncate)"))
            return cut, steps, notes
        if le >= fetch_epoch and loff >= leo:
            steps.append(TruncationStep(fetch_epoch, leo, le, loff, None, "leader accepts the fetch: no truncation"))
            return target, steps, notes
        fe, foff = end_offset_for(cache, le, leo)
        if foff < 0:
            cut, rule, done = min(loff, leo), "epoch below every follower epoch: truncate to the leader's offset", True
        elif fe != le:
            cut, rule, done = min(foff, leo), f"epoch {le} unknown to the follower: truncate to the end of its epoch {fe}", False
        else:
            cut, rule, done = min(foff, loff, leo), f"truncate to min(follower end, leader end) of epoch {le}", True
        steps.append(TruncationStep(fetch_epoch, leo, le, loff, cut, rule + ("" if done else ", then ask again")))
        # UnifiedLog.truncateTo: the log ends at the target (LocalLog.scala:556), the cache loses epochs from it on
        new_cache = truncate_from_end(cache, cut if cut < leo else leo)
        if new_cache == cache and cut >= leo:
            notes.append("the leader keeps answering with a diverging epoch that the follower's log already ends "
                         "before; the broker would loop here")
            return target, steps, notes
        cache = new_cache
        leo = min(leo, cut)
        target = min(target, cut)
    notes.append(f"truncation did not settle in {MAX_ROUNDS} rounds")
    return target, steps, notes


def lost_records(replica: Replica, target: int, leader: Replica | None = None) -> LostRecords:
    """What truncating ``replica`` to ``target`` removes: the first batch in file order whose last offset reaches the
    target, and everything after it (batch aligned, as LogSegment.truncateTo cuts). A removed batch the leader holds
    byte for byte is fetched again, not lost: it is counted in ``refetched`` only."""
    out = LostRecords()
    if target >= replica.log_end_offset:
        return out
    gone = _file_order_from(replica, target)
    same = {b.base: b.header for b in leader.batches if b.valid} if leader is not None else {}
    producers: dict[int, dict] = {}
    ranges: list[list[int]] = []
    for b in gone:
        if b.valid and same.get(b.base) == b.header:
            out.refetched += max(b.records, 0)
            continue
        out.batches += 1
        out.count += max(b.records, 0)
        if b.is_control:
            out.markers += max(b.records, 0)
        if ranges and b.base <= ranges[-1][1] + 1:
            ranges[-1][1] = max(ranges[-1][1], b.last)
        else:
            ranges.append([b.base, b.last])
        first_ts = b.base_ts if b.magic >= 2 and not b.attributes & 0x40 and b.base_ts >= 0 else b.max_ts
        if first_ts >= 0:
            out.first_timestamp = first_ts if out.first_timestamp is None else min(out.first_timestamp, first_ts)
        if b.max_ts >= 0:
            out.last_timestamp = b.max_ts if out.last_timestamp is None else max(out.last_timestamp, b.max_ts)
        if b.producer_id >= 0:
            p = producers.setdefault(b.producer_id, {"producer_id": b.producer_id, "producer_epochs": [],
                                                     "first_sequence": None, "last_sequence": None, "records": 0,
                                                     "first_offset": b.base, "last_offset": b.last,
                                                     "first_timestamp": None, "last_timestamp": None})
            if b.producer_epoch not in p["producer_epochs"]:
                p["producer_epochs"].append(b.producer_epoch)
            p["records"] += max(b.records, 0)
            p["last_offset"] = max(p["last_offset"], b.last)
            if b.base_sequence >= 0:
                last_seq = increment_sequence(b.base_sequence, b.last - b.base)
                p["first_sequence"] = b.base_sequence if p["first_sequence"] is None else min(p["first_sequence"], b.base_sequence)
                p["last_sequence"] = last_seq if p["last_sequence"] is None else max(p["last_sequence"], last_seq)
            if first_ts >= 0:
                p["first_timestamp"] = first_ts if p["first_timestamp"] is None else min(p["first_timestamp"], first_ts)
            if b.max_ts >= 0:
                p["last_timestamp"] = b.max_ts if p["last_timestamp"] is None else max(p["last_timestamp"], b.max_ts)
    out.offsets = ranges
    out.producers = sorted(producers.values(), key=lambda p: p["producer_id"])
    out.producer_ids = [p["producer_id"] for p in out.producers]
    return out


def _file_order_from(replica: Replica, target: int) -> list[BatchRef]:
    by_file: dict[str, list[BatchRef]] = {}
    for b in replica.batches:
        by_file.setdefault(b.seg, []).append(b)
    segs = sorted(by_file, key=lambda p: int(os.path.basename(p)[:20]))
    if not segs:
        return []
    if target < int(os.path.basename(segs[0])[:20]):
        return [b for s in segs for b in sorted(by_file[s], key=lambda b: b.position)]
    cut_seg = max((s for s in segs if int(os.path.basename(s)[:20]) <= target), key=lambda s: int(os.path.basename(s)[:20]))
    out: list[BatchRef] = []
    for s in segs:
        ordered = sorted(by_file[s], key=lambda b: b.position)
        if s == cut_seg:
            idx = next((k for k, b in enumerate(ordered) if b.last >= target), len(ordered))
            out.extend(ordered[idx:])
        elif int(os.path.basename(s)[:20]) > int(os.path.basename(cut_seg)[:20]):
            out.extend(ordered)
    return out


# ------------------------------------------------------------------------------------------ the whole comparison
@dataclass
class ReplicaReport:
    replica: Replica
    role: str
    truncation_offset: int | None
    truncation_steps: list[TruncationStep]
    lost: LostRecords
    vs_leader: PairResult | None
    notes: list[str]

    def to_dict(self) -> dict:
        r = self.replica
        f = self.vs_leader.finding if self.vs_leader else None
        return {
            "name": r.name, "broker_id": r.broker_id, "path": r.path, "role": self.role,
            "log_start_offset": r.log_start_offset, "log_end_offset": r.log_end_offset,
            "latest_epoch": r.latest_epoch, "leader_epochs": [list(e) for e in r.epochs], "epochs_source": r.epochs_source,
            "batches": len(r.batches),
            "first_divergent_offset": f.offset if f else None, "divergence_kind": f.kind if f else None,
            "truncation_offset": self.truncation_offset,
            "truncation_steps": [s.to_dict() for s in self.truncation_steps],
            "lost_records": self.lost.to_dict(),
            "corrupt": [c.to_dict() for c in r.corrupt],
            "notes": r.notes + self.notes,
        }


@dataclass
class Comparison:
    partition: str
    leader: str
    leader_chosen_by: str
    replicas: list[ReplicaReport]
    pairs: list[PairResult]
    first_divergent_offset: int | None
    divergence_kind: str | None
    detail: str | None
    agree_up_to: int
    ahead: str | None
    notes: list[str] = field(default_factory=list)

    @property
    def diverged(self) -> bool:
        return self.first_divergent_offset is not None

    def to_dict(self) -> dict:
        return {
            "partition": self.partition, "leader": self.leader, "leader_chosen_by": self.leader_chosen_by,
            "agree": not self.diverged, "agree_up_to": self.agree_up_to, "ahead": self.ahead,
            "first_divergent_offset": self.first_divergent_offset, "divergence_kind": self.divergence_kind,
            "detail": self.detail,
            "replicas": [r.to_dict() for r in self.replicas],
            "pairs": [p.to_dict() for p in self.pairs],
            "notes": self.notes,
        }


def _pick_leader(replicas: list[Replica], leader: str | None) -> tuple[Replica, str]:
    if leader is not None:
        for r in replicas:
            if leader in (r.name, str(r.broker_id), r.path):
                return r, "--leader"
        raise UnreadableFileError(f"--leader {leader} names no replica", expected=", ".join(r.name for r in replicas),
                                  found=leader)
    best = max(enumerate(replicas), key=lambda ir: (ir[1].latest_epoch, ir[1].log_end_offset, -ir[0]))[1]
    return best, "the highest latest leader epoch, then the highest log end offset"


def _check_same_partition(replicas: list[Replica], notes: list[str]) -> None:
    from kafkalog_cli.storage.companions import parse_partition_metadata

    ids = {}
    for r in replicas:
        path = os.path.join(r.path, "partition.metadata")
        if os.path.isfile(path):
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    ids[r.name] = parse_partition_metadata(f.read(), path)[1]
            except (OSError, CheckpointError):
                continue
    if len(set(ids.values())) > 1:
        raise UnreadableFileError("the directories hold different topics (partition.metadata topic ids differ)",
                                  expected="copies of one topic-partition",
                                  found=", ".join(f"{k}={v}" for k, v in ids.items()))
    names = {os.path.basename(r.path) for r in replicas}
    if len(names) > 1:
        notes.append("directory names differ (" + ", ".join(sorted(names)) + "): compared as one partition anyway")


def compare(dirs: list[str], names: list[str] | None = None, leader: str | None = None) -> Comparison:
    """Compare replicas of one partition; raises UnreadableFileError / CheckpointError for unreadable input."""
    if len(dirs) < 2:
        raise UnreadableFileError("compare-replicas needs at least two partition directories",
                                  expected="2 or more directories", found=str(len(dirs)))
    if names is not None and len(names) != len(dirs):
        raise UnreadableFileError("--names must give one name per directory", expected=str(len(dirs)),
                                  found=str(len(names)))
    replicas: list[Replica] = []
    try:
        for i, d in enumerate(dirs):
            nm = names[i] if names else None
            bid: int | str | None = (int(nm) if nm.lstrip("-").isdigit() else nm) if nm is not None else None
            replicas.append(load_replica(d, nm, bid))
        seen: set[str] = set()
        for r in replicas:
            if r.name in seen:
                r.name = f"{r.name}@{r.path}"
            seen.add(r.name)
        return _compare_loaded(replicas, leader)
    finally:
        for r in replicas:
            r.close()


def _compare_loaded(replicas: list[Replica], leader_name: str | None) -> Comparison:
    notes: list[str] = []
    _check_same_partition(replicas, notes)
    leader, how = _pick_leader(replicas, leader_name)
    lcache, lnote = leader_epochs(leader, replicas)
    if lnote:
        notes.append(lnote)
    pairs = [compare_pair(replicas[i], replicas[j]) for i in range(len(replicas)) for j in range(i + 1, len(replicas))]
    reports = []
    findings: list[Finding] = [p.finding for p in pairs if p.finding is not None]
    for r in replicas:
        vs = next((p for p in pairs if {p.a, p.b} == {r.name, leader.name}), None)
        if r is leader:
            reports.append(ReplicaReport(r, "leader", r.log_end_offset, [], LostRecords(), None, []))
            continue
        target, steps, tnotes = simulate_truncation(r, leader, lcache)
        lost = lost_records(r, target, leader) if target is not None else LostRecords()
        if lost.batches:
            first = lost.offsets[0][0]
            findings.append(Finding(max(first, target or 0), MISSING_RANGE,
                                    f"{leader.label} (leader) lacks offsets {first}..{r.log_end_offset - 1} as {r.label} "
                                    f"holds them: truncation to {target} would lose {lost.count} records of {r.label}"))
        reports.append(ReplicaReport(r, "follower", target, steps, lost, vs, tnotes))
    for r in replicas:
        for c in r.corrupt:
            findings.append(Finding(c.offset, CORRUPT_BATCH, f"{r.label}: {c.file} at byte {c.position}: {c.message}"))
    earliest = _earliest(findings)
    leos = {r.name: r.log_end_offset for r in replicas}
    top = max(leos.values())
    ahead: str | None = leader.name if leos[leader.name] == top else next(n for n, v in leos.items() if v == top)
    if min(leos.values()) == top:
        ahead = None
    agree_up_to = earliest.offset if earliest else min(leos.values())
    partition = os.path.basename(replicas[0].path)
    return Comparison(partition, leader.name, how, reports, pairs, earliest.offset if earliest else None,
                      earliest.kind if earliest else None, earliest.detail if earliest else None, agree_up_to, ahead,
                      notes)

