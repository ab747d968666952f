"""A model of the broker's LogLoader: what one partition directory becomes at the broker's next start.

Why a model and not a guess: after a crash the broker truncates at the first invalid batch of each segment past the
recovery point and DELETES every later segment (spec §8, errata E2/E3), and the only way to see that today is to
restart it. This module replays the loader's steps over the files on disk, in the broker's order, and returns the
plan as data (``LoaderPlan``): nothing here writes or prints. ``ops/recover.py`` executes the plan.

The steps, with their sources (apache/kafka 1eb7644 ``storage/.../log/LogLoader.java`` unless stated):

1. leftovers (``removeTempFilesAndCollectSwapFiles``, 260-313): ``*.deleted`` removed, ``.swap`` files at or above
   the smallest ``.cleaned`` base removed, every ``.cleaned`` removed. Then (3.0+, ``load`` 140-191) the range
   [min ``.log.swap`` base, max swap next offset) is computed, every non-swap file whose name starts with an
   offset in it is removed (errata E12) and every ``.swap`` is renamed. Kafka <= 2.8 (``Log.scala``) instead deletes
   the index files of every ``.swap``'s base, recovers each ``.log.swap`` segment and replaces the old segments it
   overlaps (the "index-swap deletion" that 3.0 dropped).
2. ``loadSegmentFiles`` (356-389): orphan index files deleted; a missing ``.timeindex`` is created empty; a missing
   ``.index`` or a ``.txnindex`` entry below the base recovers that segment at once (truncation there keeps later
   segments, errata E2); a ``.txnindex`` entry of version > 0 stops the broker (errata E8).
3. ``recoverLog`` (464-520), only without ``.kafka_cleanshutdown``: recover every segment from the one holding the
   recovery point; the first one that loses a byte ends it and every later segment is deleted.
   ``LogSegment.recover`` (472-520) = ``rebuild_index.rebuild_segment`` (same stop rules), plus producer state,
   leader epochs and the rebuilt ``.txnindex``; an InvalidOffsetException empties the segment.
4. log end < log start checkpoint: everything deleted; no segment: an empty one at the log start.
5. leader-epoch cache ``truncateFromEnd(LEO)`` / ``truncateFromStart(log start checkpoint)``; producer snapshots:
   ``removeStraySnapshots`` then ``rebuildProducerState`` (UnifiedLog.java 43-130; ProducerStateManager.java).
   Every temporary ProducerStateManager of step 2/3 runs ``truncateAndReload``, which deletes the snapshots above
   the segment's base, and takes snapshots; that is simulated exactly (``ProducerStateManager``).

Version differences modelled by ``--kafka-version``: the swap handling of <= 2.8; ``removeStraySnapshots`` only
from 2.8 (2.7.x leaves stray snapshots in place); the producer map's iteration
order in written snapshots (Scala HashMap before 3.5); IOException during recovery empties the segment only in
4.0+ (errata E3; an I/O error cannot be predicted offline, it is named in the notes).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import asdict, dataclass, field

from kafkalog_cli import versions
from kafkalog_cli.broker import leader_epoch_cache as lec
from kafkalog_cli.broker import log_segment as ri
from kafkalog_cli.broker import producer_state_manager as pst
from kafkalog_cli.broker.checkpoints import LOG_START_FILE, RECOVERY_POINT_FILE, read_offset_checkpoint
from kafkalog_cli.broker.producer_state_manager import (
    ProducerStateManager,
    SnapshotStore,
    rebuild_producer_state,
    remove_stray_snapshots,
)
from kafkalog_cli.errors import CheckpointError, KafkalogError, cannot_list
from kafkalog_cli.format.batch import Batch
from kafkalog_cli.format.layouts import INT32, INT64, MAGIC_OFFSET, V2_LAST_OFFSET_DELTA_OFFSET, V2_RECORDS_COUNT_OFFSET
from kafkalog_cli.storage import companions as comp
from kafkalog_cli.storage import layout
from kafkalog_cli.storage.index import OffsetIndex
from kafkalog_cli.storage.paths import live_partition, require_directory
from kafkalog_cli.storage.segment import MappedFile, read_entry, walk
from kafkalog_cli.storage.segment_check import map_segment

CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
DEFAULT_VERSION = versions.DEFAULT_VERSION  # one default for every command (kafkalog_cli/versions.py)


# ------------------------------------------------------------------------------------------------ versions
@dataclass(frozen=True)
class KafkaVersion:
    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> KafkaVersion:
        m = re.match(r"^(\d+)\.(\d+)(?:\.\d+)?(?:-\S*)?$", text.strip())
        if not m:
            raise ValueError(f"not a Kafka version: {text!r} (e.g. 3.9, 3.6.2, 4.0)")
        return cls(int(m.group(1)), int(m.group(2)))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def legacy_swap(self) -> bool:
        """<= 2.8: Log.scala's swap handling (index files deleted, swap segment recovered)."""
        return (self.major, self.minor) <= (2, 8)

    @property
    def java_producer_map(self) -> bool:
        """3.5+: ProducerStateManager in Java (java.util.HashMap order in snapshots)."""
        return (self.major, self.minor) >= (3, 5)

    @property
    def removes_stray_snapshots(self) -> bool:
        """2.8+: ProducerStateManager.removeStraySnapshots runs at load (absent from 2.7.x Log.scala)."""
        return (self.major, self.minor) >= (2, 8)

    @property
    def catches_ioexception(self) -> bool:
        return self.major >= 4


@dataclass(frozen=True)
class TopicConfig:
    """The topic configs the loader reads (a broker has them from metadata, not from the partition directory):
    ``index.interval.bytes`` (LogSegment.recover adds an index entry past that many bytes) and
    ``segment.index.bytes`` (the index capacity, and the size the active segment's indexes are preallocated to)."""

    index_interval_bytes: int = ri.DEFAULT_INTERVAL
    segment_index_bytes: int = ri.DEFAULT_SEGMENT_INDEX_BYTES
    #: the broker's producer.id.expiration.ms (ProducerStateManager.loadFromSnapshot drops producers idle this long)
    producer_id_expiration_ms: int = pst.DEFAULT_PRODUCER_ID_EXPIRATION_MS

    #: the keys ``from_pairs`` takes; every other topic config is accepted and ignored (the loader does not read it)
    KEYS = ("index.interval.bytes", "segment.index.bytes")

    @classmethod
    def from_pairs(cls, pairs: list[str] | tuple[str, ...]) -> TopicConfig:
        """``k=v`` strings as ``kafka-configs.sh --add-config`` takes them (ValueError names a bad one)."""
        vals: dict[str, int] = {}
        for p in pairs:
            k, sep, v = p.partition("=")
            k = k.strip()
            if not sep or not k:
                raise ValueError(f"--config {p!r}: expected KEY=VALUE, e.g. index.interval.bytes=4096")
            if k not in cls.KEYS:
                continue
            try:
                n = int(v.strip())
            except ValueError:
                raise ValueError(f"--config {p!r}: {k} takes an integer") from None
            low = 0 if k == "index.interval.bytes" else 4
            if n < low:
                raise ValueError(f"--config {p!r}: {k} must be at least {low} (as Kafka's LogConfig)")
            vals[k] = n
        return cls(vals.get("index.interval.bytes", ri.DEFAULT_INTERVAL),
                   vals.get("segment.index.bytes", ri.DEFAULT_SEGMENT_INDEX_BYTES))


# ------------------------------------------------------------------------------------------------ plan values
@dataclass
class FileChange:
    """One file change the broker's loader makes. ``kind``: delete | rename | write | truncate | create-empty | copy
    (``size`` bytes of ``source`` from byte ``start``: a piece of a split segment)."""

    kind: str
    name: str
    detail: str = ""
    size: int = 0
    source: str | None = None  # rename: the file renamed; copy: the file copied from
    phase: str = "load"  # "leftovers" (done first) or "load"
    data: bytes | None = field(default=None, repr=False)
    start: int = 0  # copy: the first byte of ``source`` copied

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("data")
        return d


@dataclass
class Lost:
    """Data the broker removes from one segment (a cut tail or a whole deleted segment)."""

    segment: int
    first_offset: int | None
    last_offset: int | None
    batches: int
    records: int
    bytes: int
    whole_segment: bool
    corrupt_bytes: int = 0  # bytes in regions verify-crc cannot read (their offsets are unknown)


@dataclass
class SegmentRecovery:
    base: int
    reason: str
    size: int
    valid_bytes: int
    outcome: str  # intact | truncated | emptied
    stop: str | None = None
    stop_position: int | None = None
    next_offset: int = 0
    index_entries: int = 0
    time_entries: int = 0
    txn_entries: int = 0
    lost: Lost | None = None
    truncate_offset: int | None = None  # the first offset the cut removes (the kept prefix's next offset)


@dataclass
class Unrepaired:
    """A damaged batch the broker's loader does not look at (below the recovery point, or a clean start): it stays,
    and every read of it fails (LogLoader.java:467 recovers only ``segments.values(recoveryPointCheckpoint, ..)``)."""

    segment: int
    position: int
    offset: int  # the first offset it makes unreadable (the kept prefix's next offset)
    problem: str

    def advice(self, pdir: str, recovery_point: int, clean: bool) -> str:
        where = ("the broker starts cleanly (.kafka_cleanshutdown) and recovers no segment" if clean else
                 f"segment {self.segment} lies below the recovery point {recovery_point}, which the broker does not "
                 "re-check at start-up")
        return (f"the broker will NOT repair the corrupt batch at byte {self.position} of segment {self.segment} "
                f"(offset {self.offset}): {where}, so it keeps it; fetches from offset {self.offset} fail "
                "(CorruptRecordException) and followers replicating it stop; keep every intact batch with "
                f"'kafkalog salvage {pdir}', or have the broker's recovery cut the segment there (and delete every "
                f"later segment) with 'kafkalog recover --recovery-point {self.segment} {pdir}' "
                "(both write only with --execute)")


@dataclass(frozen=True)
class RecoveryReach:
    """Which segments an unclean start recovers: those from the one holding the recovery point on (LogLoader.java
    464-476; ``segments.values(from, ..)`` starts at the floor segment of ``from``, LogSegments.java)."""

    clean_shutdown: bool
    recovery_point: int
    source: str

    def first_recovered(self, bases: list[int]) -> int | None:
        """The base of the first segment recovered (None: none is, a clean start or no segment)."""
        if self.clean_shutdown or not bases:
            return None
        floor = [b for b in sorted(bases) if b <= self.recovery_point]
        return floor[-1] if floor else min(bases)


def recovery_reach(partition_dir: str, recovery_point: int | None = None) -> RecoveryReach:
    """The shutdown marker and recovery point the broker's next start reads for ``partition_dir``;
    ``recovery_point`` overrides the checkpoint (and models an unclean start: ``recover --recovery-point``)."""
    pdir = os.path.abspath(partition_dir)
    logdir = os.path.dirname(os.path.realpath(pdir))
    if recovery_point is not None:
        return RecoveryReach(False, recovery_point, f"--recovery-point {recovery_point}, as an unclean start")
    clean = os.path.exists(os.path.join(logdir, CLEAN_SHUTDOWN))
    rp, src = read_offset_checkpoint(logdir, RECOVERY_POINT_FILE, live_partition(pdir))
    return RecoveryReach(clean, rp if rp is not None else 0, src if rp is not None else f"{src}: 0 (recover every segment)")


@dataclass
class LoaderPlan:
    partition_dir: str
    kafka_version: str
    clean_shutdown: bool
    recovery_point: int
    recovery_point_source: str
    log_start_checkpoint: int
    recovered: list[SegmentRecovery] = field(default_factory=list)
    deleted_segments: list[Lost] = field(default_factory=list)
    changes: list[FileChange] = field(default_factory=list)
    snapshots_deleted: list[int] = field(default_factory=list)
    snapshots_written: list[int] = field(default_factory=list)
    #: the final rebuildProducerState replayed the log after the snapshot it reloaded (that snapshot is below the log
    #: end: a segment recovery's temporary ProducerStateManager deleted the later ones, or they were missing), so the
    #: snapshot it writes at the log end holds those producers unexpired, as the broker's memory does
    log_end_state_replayed: bool = False
    epochs_before: list[tuple[int, int]] = field(default_factory=list)
    epochs_after: list[tuple[int, int]] = field(default_factory=list)
    log_start_offset: int = 0
    log_end_offset: int = 0
    log_end_before: int = 0
    new_recovery_point: int = 0
    #: the recovery-point checkpoint entry is above the new log end: the broker holds min(checkpoint, log end) and
    #: writes it at its next checkpoint; recover --execute writes it (None: the entry stays as it is)
    recovery_point_rewrite: int | None = None
    recovery_point_rewrite_why: str = "above"  # the entry is above the new log end, or "below" it (or absent)
    fatal: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unrepaired: list[Unrepaired] = field(default_factory=list)

    @property
    def has_changes(self) -> bool:
        return bool(self.changes) or self.recovery_point_rewrite is not None

    @property
    def lost_records(self) -> int:
        return sum(r.lost.records for r in self.recovered if r.lost) + sum(d.records for d in self.deleted_segments)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["changes"] = [c.to_dict() for c in self.changes]
        d["has_changes"] = self.has_changes
        d["lost_records"] = self.lost_records
        return d


# ------------------------------------------------------------------------------------------------ segments
_TRUNCATE = ("record size below", "partial batch", "v2 batch smaller", "batch CRC mismatch", "trailing bytes",
             "legacy message CRC", "unreadable legacy")
_INVALID_OFFSET = ("non-increasing offset", "time index offset going backwards")


def _stop_kind(problem: KafkalogError | None) -> str | None:
    """How LogSegment.recover ends at rebuild_segment's problem: truncate, empty (InvalidOffsetException), fatal."""
    if problem is None:
        return None
    msg = problem.message
    if msg.startswith(_TRUNCATE):
        return "truncate"
    if msg.startswith(_INVALID_OFFSET):
        return "empty"
    if msg.startswith("batch offset outside"):
        return "overflow"
    return "fatal"


@dataclass
class Scan:
    """One segment as recovery sees it: where it stops, the indexes it writes, and of the batches it keeps those
    the loader model needs (producer batches, leader-epoch rises, the last one)."""

    base: int
    path: str
    size: int
    valid_bytes: int
    infos: list[pst.BatchInfo]
    index: bytes
    timeindex: bytes
    stop: str | None  # truncate | empty | overflow | fatal
    problem: KafkalogError | None
    last: int | None = None  # last offset of the valid prefix (legacy entries included)
    reader_next: int | None = None  # readNextOffset of the files as they are (None: as ``next_offset``)
    reader_error: str | None = None  # readNextOffset throws (CorruptRecordException) on the files as they are
    reader_infos: list[pst.BatchInfo] | None = None  # the producer replay's batches when NOT recovered (None: infos)
    #: a piece of an overflowed segment Kafka split (``split_overflowed``): its bytes are [split_start, split_start +
    #: size) of the ``.log`` at ``path`` (the old segment's), written as a new file
    split_start: int | None = None
    #: the offset index as the producer-state replay looks offsets up in it when the segment is NOT recovered (whole
    #: entries; empty: none, or recovery rebuilt it) and the positions of it that are batch starts of the valid prefix
    disk_index: bytes = b""
    aligned: frozenset[int] = frozenset((0,))
    #: where the reader walk of a segment that is NOT recovered meets a size field below 14 (junk after the batches):
    #: a replay that reads the segment throws CorruptRecordException there
    walk_error: KafkalogError | None = None

    @property
    def replay_infos(self) -> list[pst.BatchInfo]:
        return self.reader_infos if self.reader_infos is not None else self.infos

    def replay_batches(self, start: int, last_offset: int | None) -> list[pst.BatchInfo]:
        """The producer batches ``rebuildProducerState`` loads from this segment (UnifiedLog.java:116-131):
        ``segment.read(start, MAX, maxPosition)`` translates ``start`` through the offset index (LogSegment.java:
        388-391: the position of the largest entry <= start, then FileRecords.searchForOffsetWithSize, the first
        batch from there whose last offset reaches it; none: nothing is read) and, in the segment of ``last_offset``
        (the log end), stops the read at the position ``translateOffset(last_offset)`` gives (none: the segment's
        size). An index whose looked-up entries name batch starts (a sound one, none, a zero-filled one) gives the
        batches with last offset >= start (and < last_offset); a garbage index that passes the sanity check
        gives other positions, from which the file is walked as Kafka's reader walks it. Raises KafkalogError where
        Kafka's read throws (CorruptRecordException of a size field below 14, IllegalArgumentException of a slice of
        negative size): the broker fails to start."""
        batches = [b for b in self.replay_infos if b.last_offset >= start]
        stops = False  # translateOffset(last_offset) finds a batch before the walk's end: the read stops there
        if last_offset is not None:
            stops = any(b.last_offset >= last_offset for b in self.replay_infos)
            batches = [b for b in batches if b.last_offset < last_offset]
        idx = OffsetIndex(self.base, self.disk_index)
        p0 = max(idx.lookup(start)[1], 0)
        q0 = max(idx.lookup(last_offset)[1], 0) if last_offset is not None else 0
        if not self.disk_index or self.split_start is not None or p0 in self.aligned and q0 in self.aligned:
            if self.walk_error is not None and not stops:
                raise self.walk_error  # the batch iterator (or translateOffset's search) walks into it
            return batches
        with MappedFile(self.path) as mf:
            buf = mf.buf
            found = _search_offset(buf, start, p0, self.path)
            max_pos = len(buf)
            if last_offset is not None:
                at = _search_offset(buf, last_offset, q0, self.path)
                max_pos = at if at is not None else len(buf)
            if found is None:
                return []
            if max_pos < found:
                raise KafkalogError(f"the producer-state replay reads from byte {found} up to byte {max_pos} "
                                    "(translateOffset through a garbage offset index): IllegalArgumentException "
                                    "(Invalid size) in FileRecords.slice", file=self.path, position=found)
            if p0 in self.aligned:
                if self.walk_error is not None and (self.walk_error.position or 0) < max_pos - _HEADER_UP_TO_MAGIC:
                    raise self.walk_error
                return [b for b in self.replay_infos if b.position >= found and b.position + b.size <= max_pos]
            return _reader_producer_batches(buf[:max_pos], found, [], self.path, strict=True)[0]

    def translate(self, offset: int) -> int | None:
        """LogSegment.translateOffset(offset) (LogSegment.java:388-391) on the segment as the loader left it: the
        position of the first batch from the offset index's lookup whose last offset reaches ``offset``, None when
        there is none. The index is the one on disk for a segment that is not recovered, else the rebuilt one.
        Raises KafkalogError where Kafka's walk throws (CorruptRecordException)."""
        if self.split_start is not None:
            return next((b.position for b in self.infos if b.last_offset >= offset), None)
        idx = OffsetIndex(self.base, self.disk_index if self.disk_index else self.index)
        p0 = max(idx.lookup(offset)[1], 0)
        with MappedFile(self.path) as mf:
            return _search_offset(mf.buf[:self.size], offset, p0, self.path)

    @property
    def next_offset(self) -> int:
        return self.last + 1 if self.last is not None else self.base

    @property
    def reader_next_offset(self) -> int:
        """LogSegment.readNextOffset of a segment that is NOT recovered (``read_next_offset``): from the offset
        index's last entry, batch headers without CRC checks, so a bad batch that recovery would cut still counts,
        and an index entry past the end gives the base offset (LogSegment.java:605-613)."""
        return self.reader_next if self.reader_next is not None else self.next_offset


def scan_segment(path: str, base: int, interval: int, sib: int, index_path: str | None = None) -> Scan:
    """Run the recovery rule over one ``.log``; also the reader's view of segments that are not recovered
    (``read_next_offset`` with the offset index at ``index_path``, None: no index, as a newly created one)."""
    with MappedFile(path) as mf:
        return _scan_buffer(mf.buf, path, base, interval, sib, file_bytes(index_path))


def _scan_buffer(buf: bytes | memoryview, path: str, base: int, interval: int, sib: int, index: bytes) -> Scan:
    """``scan_segment`` of the segment bytes ``buf`` (a whole ``.log``, or a piece of one: ``split_overflowed``)."""
    rb = ri.rebuild_segment(buf, base, interval, file=path, segment_index_bytes=sib)
    infos: list[pst.BatchInfo] = []
    problem = rb.problem
    stop = _stop_kind(problem)
    valid = rb.valid_bytes
    top_epoch = -1
    for pos, size, magic in walk(buf, 0, valid, file=path):
        if magic < 2:
            continue
        b = read_entry(buf, pos, magic, file=path)
        assert isinstance(b, Batch)
        if b.producer_id < 0 and b.partition_leader_epoch <= top_epoch and pos + size < valid:
            continue  # memory: only producer batches, epoch rises and the last batch matter to the loader
        top_epoch = max(top_epoch, b.partition_leader_epoch)
        info = pst.safe_batch_info(b, buf)
        if isinstance(info, KafkalogError):
            # InvalidRecordException in updateProducerState: thrown after this batch was counted valid
            valid = pos + size
            rb = ri.rebuild_segment(bytes(buf[:valid]), base, interval, file=path, segment_index_bytes=sib)
            problem = KafkalogError(f"unreadable control record ({info.message}): InvalidRecordException",
                                    file=path, position=pos)
            stop = "truncate"
            infos.append(pst.BatchInfo(pos, size, b.base_offset, b.last_offset, b.records_count, -1, -1, -1,
                                       b.max_timestamp, b.partition_leader_epoch, b.is_transactional, True))
            break
        infos.append(info)
    size = len(buf)
    reader_next, reader_error = read_next_offset(buf, base, index, path)
    reader_infos, walk_error = _reader_producer_batches(buf, valid, infos, path) if valid < size else (None, None)
    disk = bytes(index[: len(index) - len(index) % 8])
    return Scan(base, path, size, valid, infos, rb.index, rb.timeindex, stop, problem, rb.last_offset, reader_next,
                reader_error, reader_infos, disk_index=disk, aligned=_aligned(buf, valid, base, disk, path),
                walk_error=walk_error)


def _aligned(buf: bytes | memoryview, valid: int, base: int, disk: bytes, path: str) -> frozenset[int]:
    """0 and the positions named by the offset index ``disk`` that are batch starts of the first ``valid`` bytes
    (where ``Scan.replay_batches`` may take the batches it already read)."""
    idx = OffsetIndex(base, disk)
    named = {idx.entry(i)[1] for i in range(idx.entries)}
    named.discard(0)
    if not named:
        return frozenset((0,))
    hits = {0}
    for pos, _size, _magic in walk(buf, 0, valid, file=path):
        if pos in named:
            hits.add(pos)
    return frozenset(hits)


def _search_offset(buf: bytes | memoryview, target: int, start: int, path: str) -> int | None:
    """FileRecords.searchForOffsetWithSize (headers only): the position of the first entry from ``start`` whose last
    offset reaches ``target``; None when there is none. Raises KafkalogError where Kafka's walk throws."""
    return next((p for p, _s, last in _reader_batches(buf, start, path) if last >= target), None)


def _reader_producer_batches(buf: bytes | memoryview, valid: int, infos: list[pst.BatchInfo], path: str,
                             strict: bool = False) -> tuple[list[pst.BatchInfo], KafkalogError | None]:
    """The producer batches ``rebuildProducerState`` reads from a segment it does NOT recover: ``segment.read`` and
    ``loadProducersFromRecords`` walk the file with FileLogInputStream (headers only, no CRC check,
    UnifiedLog.java:116-131), so the batches past the first invalid one count as they read. ``infos`` (the valid
    prefix) then every entry the reader walk finds from ``valid`` on; it ends where that walk ends or a header does
    not parse. Also returns the error that ends the walk (a size field below 14: Kafka's batch iterator throws
    CorruptRecordException where the replay reaches it), raised instead when ``strict``."""
    out = list(infos)
    try:
        for pos, _size, _last in _reader_batches(buf, valid, path):
            magic = buf[pos + MAGIC_OFFSET]
            if not 2 <= magic < 128:
                continue  # legacy entries carry no producer id
            b = read_entry(buf, pos, magic, file=path)
            assert isinstance(b, Batch)
            if b.producer_id < 0:
                continue
            info = pst.safe_batch_info(b, buf)
            if isinstance(info, KafkalogError):
                # ProducerAppendInfo.append reads a control batch's first record: where the replay reaches this batch
                # the load throws (Scan.replay_batches' caller raises)
                out.append(pst.BatchInfo(pos, _size + 12, b.base_offset, b.last_offset, b.records_count, -1, -1, -1,
                                         b.max_timestamp, b.partition_leader_epoch, b.is_transactional, True,
                                         unreadable=info.describe()))
                break
            out.append(info)
    except KafkalogError as exc:
        if strict:  # loadProducersFromRecords' batch iterator throws: the load fails
            raise
        return out, exc
    return out, None


#: FileLogInputStream.HEADER_SIZE_UP_TO_MAGIC (offset, size, partition leader epoch / crc, magic)
_HEADER_UP_TO_MAGIC = 17


def _reader_batches(buf: bytes | memoryview, start: int, path: str):  # noqa: ANN202
    """FileLogInputStream.nextBatch from ``start`` (FileLogInputStream.java:63-93): (position, size, last offset) of
    each entry by its header alone; ends where fewer than 17 bytes are left or an entry does not fit; a size below
    14 raises KafkalogError (Kafka: CorruptRecordException)."""
    end = len(buf)
    pos = start
    while pos < end - _HEADER_UP_TO_MAGIC:
        size = INT32.unpack_from(buf, pos + 8)[0]
        if size < 14:
            raise KafkalogError(f"Found record size {size} smaller than minimum record overhead (14)", file=path,
                                position=pos)
        if pos > end - 12 - size:
            return
        offset = INT64.unpack_from(buf, pos)[0]
        magic = buf[pos + MAGIC_OFFSET]
        if 2 <= magic < 128 and pos + V2_LAST_OFFSET_DELTA_OFFSET + 4 <= end:  # a Java byte: 0x80.. is below 2
            offset += INT32.unpack_from(buf, pos + V2_LAST_OFFSET_DELTA_OFFSET)[0]
        yield pos, size, offset
        pos += 12 + size


def read_next_offset(buf: bytes | memoryview, base: int, index: bytes, path: str) -> tuple[int, str | None]:
    """LogSegment.readNextOffset (LogSegment.java:605-613) on the files as they are: ``read(offsetIndex.lastOffset)``
    looks the index's last entry up (AbstractIndex: entries = size rounded down to 8 bytes; none: the base offset at
    position 0), searches forward from its position for the first batch whose last offset reaches it
    (FileRecords.searchForOffsetWithSize; none: the base offset), then the last batch of the rest of the file gives
    the next offset. Returns (next offset, None), or (base, why) when Kafka's walk throws CorruptRecordException
    (an entry whose size field is below 14: the load fails)."""
    idx = OffsetIndex(base, index[: len(index) - len(index) % 8])
    target = idx.key(idx.entries - 1) if idx.entries else base
    _off, pos, _slot = idx.lookup(target)
    try:
        found = next((p for p, _s, last in _reader_batches(buf, max(pos, 0), path) if last >= target), None)
        if found is None:
            return base, None
        nxt = base
        for _p, _s, last in _reader_batches(buf, found, path):
            nxt = last + 1
        return nxt, None
    except KafkalogError as exc:
        return base, f"{exc.message} at byte {exc.position}"


_INT_MAX = (1 << 31) - 1


def _relative_ok(offset: int, base: int) -> bool:
    """AbstractIndex.canAppendOffset (AbstractIndex.java:320-321, 555-561): ``offset - base`` (a Java long
    subtraction) in [0, Integer.MAX_VALUE]."""
    rel = ((offset - base + (1 << 63)) % (1 << 64)) - (1 << 63)
    return 0 <= rel <= _INT_MAX


@dataclass
class SplitPiece:
    """One segment ``LocalLog.splitOverflowedSegment`` makes of an overflowed one: bytes [start, end) of its .log."""

    base: int
    start: int
    end: int


def split_overflowed(buf: bytes | memoryview, base: int, path: str) -> tuple[list[SplitPiece], str | None]:
    """What Kafka does with a segment whose recovery threw LogSegmentOffsetOverflowException (a batch's last offset
    outside the 32-bit range relative to the segment's base; recovery resets the offset index first): LogLoader's
    ``retryOnOffsetOverflow`` (LogLoader.java:325-343) calls ``LocalLog.splitOverflowedSegment`` (LocalLog.java
    157-214), which requires ``hasOverflow`` (LogSegment.java:525-528: readNextOffset with the reset index, i.e. the
    file's LAST batch, overflows), then from position 0 opens a new segment at the first batch's base offset and
    ``appendFromFile``s (LogSegment.java:280-340) the following batches while their last offset fits relative to
    it, until the file is covered; the pieces replace the segment (``replaceSegments``) and the load is retried.
    Returns (pieces, None), or ([], why) where Kafka's split throws and the broker fails to start."""
    nxt, err = read_next_offset(buf, base, b"", path)
    if err:
        return [], f"the split's readNextOffset throws CorruptRecordException ({err})"
    if not (nxt > base and not _relative_ok(nxt - 1, base)):
        return [], ("the segment's last batch does not overflow, so LocalLog.splitOverflowedSegment's require("
                    "hasOverflow) throws IllegalArgumentException")
    pieces: list[SplitPiece] = []
    covered = 0
    try:
        for pos, size, last in _reader_batches(buf, 0, path):
            magic = buf[pos + MAGIC_OFFSET]
            if not 2 <= magic < 128:
                return [], "the segment holds v0/v1 entries (kafkalog does not model their split)"
            first = INT64.unpack_from(buf, pos)[0]
            if not pieces or not _relative_ok(last, pieces[-1].base):
                if not _relative_ok(last, first):
                    return [], (f"the batch at byte {pos} (offsets {first}..{last}) fits no segment of its own base "
                                "offset: the split's appendFromFile appends nothing and throws IllegalStateException")
                pieces.append(SplitPiece(first, pos, pos))
            pieces[-1].end = pos + size + 12
            covered = pos + size + 12
    except KafkalogError as exc:
        return [], f"the split's batch walk throws CorruptRecordException ({exc.message} at byte {exc.position})"
    if covered != len(buf):
        return [], (f"{len(buf) - covered} bytes after the last whole batch (byte {covered}): the split's batch "
                    "iterator has no next batch there and throws NoSuchElementException")
    return pieces, None


def _header_last_offset(buf: bytes | memoryview, start: int, path: str) -> int | None:
    """Last offset of the entries from ``start`` on, by their headers only (readNextOffset's view); None when
    there are none or the walk meets a size < 14 (the broker's read throws there)."""
    last = None
    try:
        for pos, _size, magic in walk(buf, start, None, file=path):
            if magic >= 2:
                last = INT64.unpack_from(buf, pos)[0] + INT32.unpack_from(buf, pos + V2_LAST_OFFSET_DELTA_OFFSET)[0]
            else:
                last = INT64.unpack_from(buf, pos)[0]
    except KafkalogError:
        return None
    return last


def _count_records(path: str, entries: list[tuple[int, int, int, int]]) -> int:
    n = 0
    with open(path, "rb") as f:
        for pos, _size, _base, _last in entries:
            f.seek(pos + MAGIC_OFFSET)
            magic = f.read(1)
            if magic and magic[0] >= 2:
                f.seek(pos + V2_RECORDS_COUNT_OFFSET)
                n += max(INT32.unpack_from(f.read(INT32.size))[0], 0)
            else:
                n += 1
    return n


def lost_after(path: str, base: int, cut: int, whole: bool, from_offset: int | None = None) -> Lost:
    """What the bytes from ``cut`` on hold, by verify-crc's resync map (intact batches beyond a bad one count).
    ``from_offset``: the first offset the cut removes (the kept prefix's next offset), when known."""
    _rep, m = map_segment(path)
    ents = [e for e in m.entries if e[0] >= cut]
    size = os.path.getsize(path)
    corrupt = sum(min(e, size) - max(s, cut) for s, e, err in m.regions if err and e > cut)
    first = min((e[2] for e in ents), default=None)
    if from_offset is not None and (first is None or corrupt):
        first = from_offset if first is None else min(first, from_offset)
    last = max((e[3] for e in ents), default=None)
    if first is not None and last is None:
        last = first if corrupt else None
    return Lost(base, first, last, len(ents), _count_records(path, ents), size - cut, whole, corrupt)


# ------------------------------------------------------------------------------------------------ the loader
def _file_bytes(pdir: str, name: str) -> bytes | None:
    try:
        with open(os.path.join(pdir, name), "rb") as f:
            return f.read()
    except OSError:
        return None


def _read_epochs(pdir: str, plan: LoaderPlan) -> tuple[list[tuple[int, int]], bool]:
    path = os.path.join(pdir, EPOCH_CHECKPOINT)
    if not os.path.isfile(path):
        return [], False
    try:
        raw = comp.parse_leader_epoch_checkpoint(comp.read_checkpoint_text(path), path)
    except CheckpointError as exc:
        plan.fatal.append(f"{EPOCH_CHECKPOINT}: {exc.message} (the broker takes the log directory offline or fails "
                          "to start)")
        return [], True
    cache: list[tuple[int, int]] = []
    for e, s in raw:
        cache = lec.assign(cache, e, s)
    return cache, True


def plan_load(partition_dir: str, kafka_version: str = DEFAULT_VERSION, *, now_ms: int | None = None,
              index_interval_bytes: int = ri.DEFAULT_INTERVAL,
              segment_index_bytes: int = ri.DEFAULT_SEGMENT_INDEX_BYTES, lost_detail: bool = True,
              config: TopicConfig | None = None, recovery_point: int | None = None) -> LoaderPlan:
    """Simulate the broker's load of ``partition_dir``; return every file change and what is lost. ``config``
    (when given) overrides ``index_interval_bytes`` / ``segment_index_bytes``. ``recovery_point``: model an unclean
    start with this recovery-point checkpoint instead of the one on disk."""
    expiration = pst.DEFAULT_PRODUCER_ID_EXPIRATION_MS
    if config is not None:
        index_interval_bytes, segment_index_bytes = config.index_interval_bytes, config.segment_index_bytes
        expiration = config.producer_id_expiration_ms
    holder: list[LoaderPlan] = []
    try:
        return _plan_load(holder, partition_dir, kafka_version, now_ms, index_interval_bytes, segment_index_bytes,
                          lost_detail, recovery_point, expiration)
    except pst.InvalidTxnStateError as exc:
        plan = holder[0]
        plan.fatal.append(f"{exc.message}: producer-state replay at load throws it and nothing catches it, the "
                          "broker fails to start")
        plan.changes.clear()
        return plan


def _plan_load(holder: list[LoaderPlan], partition_dir: str, kafka_version: str, now_ms: int | None, index_interval_bytes: int,
               segment_index_bytes: int, lost_detail: bool, recovery_point: int | None = None,
               expiration_ms: int = pst.DEFAULT_PRODUCER_ID_EXPIRATION_MS) -> LoaderPlan:
    """``LogLoader.load`` (LogLoader.java:128-256) as data: the leftovers (``_leftovers``), ``loadSegmentFiles``,
    ``recoverLog``, then the leader-epoch cache and producer state (``_LoadModel``)."""
    pdir = os.path.abspath(partition_dir)
    require_directory(pdir)
    version = KafkaVersion.parse(kafka_version)
    logdir = os.path.dirname(os.path.realpath(pdir))
    tp = live_partition(pdir)
    reach = recovery_reach(pdir, recovery_point)
    ls, _ls_src = read_offset_checkpoint(logdir, LOG_START_FILE, tp)
    plan = LoaderPlan(pdir, str(version), reach.clean_shutdown, reach.recovery_point, reach.source, ls or 0)
    holder.append(plan)  # for plan_load's InvalidTxnStateError path
    try:
        names = sorted(n for n in os.listdir(pdir) if os.path.isfile(os.path.join(pdir, n)))
    except OSError as exc:
        raise cannot_list(exc, pdir) from None
    files: dict[str, str] = {n: os.path.join(pdir, n) for n in names}  # final name -> file holding its content
    recover_now: dict[int, str] = {}
    _leftovers(plan, files, version, recover_now, segment_index_bytes)
    logs = _segment_names(plan, files)
    plan.epochs_before, epoch_file = _read_epochs(pdir, plan)
    if plan.fatal:
        return plan
    model = _LoadModel(plan, files, version, int(time.time() * 1000) if now_ms is None else now_ms,
                       index_interval_bytes, segment_index_bytes, lost_detail, expiration_ms)
    if not model.load_segment_files(logs, recover_now) or not model.recover_log():
        return plan
    model.finish_load(epoch_file)
    # the checkpoint file's own entry above the new log end (also under a --recovery-point model: the file keeps its
    # entry, which the broker clips and writes at its next checkpoint)
    rp, src = read_offset_checkpoint(logdir, RECOVERY_POINT_FILE, tp)
    if rp is not None and rp > plan.log_end_offset:
        plan.recovery_point_rewrite = plan.new_recovery_point
    elif (recovery_point is None and not plan.clean_shutdown and plan.changes and tp is not None
          and (rp is not None or src.endswith(" missing") or src.startswith("no entry"))
          and (rp is None or rp < plan.log_end_offset)):
        # --execute leaves every segment recovered and synced, as the broker's start-up and clean close do, and the
        # close checkpoints the recovery point at the log end (UnifiedLog.close -> flush; LogManager.shutdown):
        # left below (or absent), the next unclean start recovers those segments again and rewrites their producer
        # snapshots at its own clock (tests/test_oracle_fuzz.py, seed 459)
        plan.recovery_point_rewrite = plan.log_end_offset
        plan.recovery_point_rewrite_why = "below"
    return plan


def _segment_names(plan: LoaderPlan, files: dict[str, str]) -> list[tuple[int, str]]:
    """The name checks of ``loadSegmentFiles`` (LogLoader.java:356-370): an index file without its ``.log`` is
    deleted, a name whose offset does not parse is fatal; returns the segments (base, name) in offset order."""
    for n in sorted(files):
        if layout.loader_file_kind(n) == "index":
            off = layout.loader_offset(n)
            if off is None:
                plan.fatal.append(f"{n}: the name does not start with an offset (NumberFormatException: the broker "
                                  "fails to start)")
                continue
            if f"{off:020d}.log" not in files:
                plan.changes.append(FileChange("delete", n, "orphaned index file (no .log)"))
                del files[n]
    logs = []
    for n in sorted(files):
        if layout.loader_file_kind(n) != "log":
            continue
        off = layout.loader_offset(n)
        if off is None or n != f"{off:020d}.log":
            plan.fatal.append(f"{n}: not a segment name the loader handles (it parses the text before the first '.' "
                              "as an offset); move it out of the partition directory")
            continue
        logs.append((off, n))
    return logs


@dataclass
class _LoadModel:
    """The state of one simulated ``LogLoader.load`` after the leftovers: the segments as recovery sees them, the
    leader-epoch cache and the snapshot files as the simulation changes them. Each method is one of LogLoader's
    steps; a fatal condition is appended to ``plan.fatal`` and the method returns False."""

    plan: LoaderPlan
    files: dict[str, str]
    version: KafkaVersion
    now: int
    interval: int
    sib: int
    lost_detail: bool
    expiration_ms: int = pst.DEFAULT_PRODUCER_ID_EXPIRATION_MS
    segs: list[Scan] = field(default_factory=list)
    scans: dict[int, Scan] = field(default_factory=dict)
    recovered_bases: set[int] = field(default_factory=set)
    split: list[SplitPiece] = field(default_factory=list)  # the pieces of the segment recover_segment found overflowed
    split_deleted: list[str] = field(default_factory=list)  # the old files of split segments
    split_retry: bool = False  # recoverLog runs again after a split
    epochs_flushed: bool = False  # the load writes the leader-epoch checkpoint even when its entries stay the same
    replay_read: list[int] = field(default_factory=list)  # segments a producer-state replay read (their .index opened)

    def __post_init__(self) -> None:
        self.cache = list(self.plan.epochs_before)
        self.store = SnapshotStore(self.plan.partition_dir, list(self.files))
        self.before_snaps = set(self.store.offsets())

    def scan(self, base: int) -> Scan:
        if base not in self.scans:
            self.scans[base] = scan_segment(self.files[f"{base:020d}.log"], base, self.interval, self.sib,
                                            self.files.get(f"{base:020d}.index"))
        return self.scans[base]

    def load_segment_files(self, logs: list[tuple[int, str]], recover_now: dict[int, str]) -> bool:
        """``loadSegmentFiles`` (LogLoader.java:356-395): open every segment; one with a missing ``.index``, a
        ``.txnindex`` failing its sanity check, or completed from a ``.swap`` is recovered right away (errata E2:
        that truncation keeps the later segments); a missing ``.timeindex`` is created empty."""
        plan, files = self.plan, self.files
        for base, _n in logs:
            s = self.scan(base)
            tname, iname, xname = f"{base:020d}.timeindex", f"{base:020d}.index", f"{base:020d}.txnindex"
            if iname in files and tname not in files:
                plan.changes.append(FileChange("create-empty", tname, "missing time index created empty, NOT rebuilt "
                                               "(retention then uses the .log mtime); run rebuild-index to rebuild it"))
                files[tname] = ""
            reason = None
            if iname not in files:
                reason = recover_now.get(base, "the .index file is missing")
            else:
                txn_err = _txn_sanity(files.get(xname), base)
                if txn_err == "fatal":
                    plan.fatal.append(f"{xname}: an entry has a version > 0 (KafkaException at load: the broker fails "
                                      "to start)")
                    return False
                if txn_err:
                    reason = txn_err
                elif base in recover_now:
                    reason = recover_now[base]
            if reason:
                self.recover_segment(s, reason + " (recovered at load; truncation here keeps later segments)",
                                     self.segs, True)
            self.segs.append(s)
        if plan.fatal:
            return False
        plan.log_end_before = max((s.reader_next_offset for s in self.segs), default=0)
        return True

    def recover_segment(self, s: Scan, reason: str, loaded: list[Scan], at_load: bool = False) -> SegmentRecovery:
        """``recoverSegment`` (LogLoader.java:399-421): producer state rebuilt up to the segment, then
        ``LogSegment.recover`` (indexes rebuilt, the log cut at the first invalid batch, epochs assigned)."""
        plan, store = self.plan, self.store
        psm = ProducerStateManager(store, self.version.java_producer_map, self.now)
        psm.expiration_ms = self.expiration_ms
        rec = SegmentRecovery(s.base, reason, s.size, s.valid_bytes, "intact")
        if not self.replay(psm, loaded, plan.log_start_checkpoint, s.base, False):
            return rec
        again = s.base in self.recovered_bases
        self.recovered_bases.add(s.base)
        if s.stop == "overflow" and s.split_start is None:
            with MappedFile(s.path) as mf:
                pieces, why = split_overflowed(mf.buf, s.base, s.path)
            if pieces and not at_load:
                rec.outcome = "split"
                self.split = pieces
                return rec
            what = (f"{why}: the broker fails to start" if why else
                    "Kafka splits it into segments " + ", ".join(str(p.base) for p in pieces) + " during the load-time "
                    "recovery, reloads and keeps the split segments' own indexes (kafkalog does not model a split at "
                    "load; remove the segment's .index from the cases it models by restoring the .index, or let the "
                    "broker split it)")
            plan.fatal.append(f"{s.base:020d}.log: {s.problem.describe() if s.problem else s.stop}: {what}")
            return rec
        if s.stop in ("fatal", "overflow"):
            plan.fatal.append(f"{s.base:020d}.log: {s.problem.describe() if s.problem else s.stop}: the broker fails "
                              "to start")
            return rec
        if s.stop == "empty" and at_load:
            # loadSegmentFiles calls recoverSegment inside its catch blocks and catches nothing around it: the
            # InvalidOffsetException escapes LogLoader.load and LogManager.loadLogs rethrows it (LogLoader.java
            # 371-386, errata E3): the broker does not start
            plan.fatal.append(f"{s.base:020d}.log: {s.problem.describe() if s.problem else 'invalid offset'}: during the "
                              "load-time recovery this InvalidOffsetException is not caught: the broker fails to start")
            return rec
        stop_at = s.problem.position if s.stop == "empty" and s.problem is not None else None
        aborted: list[tuple[int, int, int, int]] = []
        for b in s.infos:
            if stop_at is not None and b.position >= stop_at:
                break
            if b.leader_epoch >= 0 and (not self.cache or b.leader_epoch > self.cache[-1][0]):
                self.cache = lec.assign(self.cache, b.leader_epoch, b.base_offset)
            if stop_at is None:
                psm.state.replay([b], aborted)
        if s.stop == "empty":
            rec.outcome, rec.valid_bytes = "emptied", 0
            rec.stop = (f"{s.problem.message if s.problem else 'invalid offset'}: InvalidOffsetException, the "
                        "segment is truncated to its base offset")
            rec.stop_position = stop_at
            s.valid_bytes, s.infos, s.index, s.timeindex, s.last = 0, [], b"", b"", None
        else:
            psm.take_snapshot()
            if s.valid_bytes < s.size:
                rec.outcome = "truncated"
                rec.stop = s.problem.message if s.problem else "bytes after the last complete batch"
                rec.stop_position = s.valid_bytes
        if rec.outcome != "intact" and self.lost_detail and s.split_start is not None:
            rec.lost = Lost(s.base, s.next_offset, None, 0, 0, s.size - s.valid_bytes, s.valid_bytes == 0)
        elif rec.outcome != "intact" and self.lost_detail:
            rec.lost = lost_after(s.path, s.base, s.valid_bytes, s.valid_bytes == 0, s.next_offset)
        # recovery cuts the file and rebuilds its index
        s.reader_next, s.reader_error, s.reader_infos, s.disk_index, s.walk_error = None, None, None, b"", None
        rec.next_offset = s.next_offset
        if rec.outcome != "intact":
            rec.truncate_offset = s.next_offset
        rec.index_entries, rec.time_entries, rec.txn_entries = len(s.index) // 8, len(s.timeindex) // 12, len(aborted)
        if again:
            # recovered at load already (its file is cut now): recovering it again changes no file
            prev = next(r for r in plan.recovered if r.base == s.base)
            again_why = "after the offset-overflow split" if self.split_retry else "by the unclean-shutdown pass"
            if again_why not in prev.reason:
                prev.reason += f"; recovered again {again_why} (no further change)"
            return rec
        _segment_file_changes(plan, self.files, s, aborted, rec)
        plan.recovered.append(rec)
        s.size = s.valid_bytes  # the file is cut now: recovering it again finds nothing
        s.stop, s.problem = None, None
        return rec

    def recover_log(self) -> bool:
        """``recoverLog`` (LogLoader.java:464-534): after an unclean shutdown every segment from the one holding the
        recovery point is recovered, and the segments after the first one cut are deleted; then
        ``deleteSegmentsIfLogStartGreaterThanLogEnd`` (LogLoader.java:423-440) and, with no segment left, a new empty
        active segment at the log start offset."""
        plan, segs, clean = self.plan, self.segs, self.plan.clean_shutdown
        restart = not clean and bool(segs)
        while restart:
            restart = False
            first = RecoveryReach(clean, plan.recovery_point, "").first_recovered([s.base for s in segs])
            todo = [s for s in segs if first is not None and s.base >= first]
            for i, s in enumerate(todo):
                rec = self.recover_segment(s, "unclean shutdown: at or above the recovery point", segs)
                if plan.fatal:
                    return False
                if rec.outcome == "split":
                    self.apply_split(s)
                    self.split_retry = True
                    restart = True  # retryOnOffsetOverflow runs recoverLog again from the start
                    break
                if rec.outcome != "intact":
                    for later in todo[i + 1:]:
                        _delete_segment(plan, self.files, later, self.lost_detail)
                        segs.remove(later)
                    break
        if clean:
            plan.notes.append(f"{CLEAN_SHUTDOWN} is present: no segment is recovered except those with a missing "
                              ".index or a .txnindex that fails its check")
        if segs and segs[-1].reader_error:
            # deleteSegmentsIfLogStartGreaterThanLogEnd calls readNextOffset on the active segment; its walk throws
            # out of LogLoader.load (LogLoader.java:425, FileLogInputStream.java:76-78)
            last = segs[-1]
            plan.fatal.append(f"{last.base:020d}.log: {last.reader_error}: the broker's readNextOffset (no recovery "
                              f"{'after a clean shutdown' if clean else 'of this segment'}) throws "
                              "CorruptRecordException and the partition does not load; remove "
                              f"{CLEAN_SHUTDOWN} so that recovery cuts these bytes, or run 'kafkalog salvage'")
            return False
        leo = segs[-1].reader_next_offset if segs else plan.log_start_checkpoint
        if segs and leo < plan.log_start_checkpoint:
            for s in list(segs):
                _delete_segment(plan, self.files, s, self.lost_detail)
            segs.clear()
            self.cache = []
            self.epochs_flushed = True  # leaderEpochCache.clearAndFlush (LogLoader.java:434): written, even empty
            for off in self.store.offsets():
                self.store.delete(off)
            plan.notes.append(f"log end offset {leo} is below the log start offset checkpoint "
                              f"{plan.log_start_checkpoint}: the broker deletes every segment")
        if not segs:
            base = plan.log_start_checkpoint
            plan.changes.append(FileChange("create-empty", f"{base:020d}.log",
                                           "no segment left: a new empty active segment"))
            for ext in ("index", "timeindex"):  # resizeIndexes on the active segment creates them (LogLoader.load)
                plan.changes.append(FileChange("create-empty", f"{base:020d}.{ext}", "index of the new active segment"))
            segs.append(Scan(base, "", 0, 0, [], b"", b"", None, None))
        elif clean and not self.before_snaps and any(b.producer_id >= 0 for s in segs for b in s.infos):
            plan.notes.append("DANGER: clean shutdown marker present but no producer snapshot: the broker skips "
                              "rebuilding producer state and writes empty snapshots (idempotence/transaction state "
                              f"lost); remove {CLEAN_SHUTDOWN} first to make it replay the log")
        if self._active_index_overflows(segs[-1]):
            return False
        self._trim_active_indexes(segs[-1])
        leo = segs[-1].reader_next_offset
        plan.log_end_offset = leo
        plan.log_start_offset = max(plan.log_start_checkpoint, segs[0].base)
        for s in segs:  # damage in a segment the loader did not recover stays (its reader walks past it)
            if s.base not in self.recovered_bases and s.stop is not None and s.valid_bytes < s.size:
                plan.unrepaired.append(Unrepaired(s.base, s.valid_bytes, s.next_offset,
                                                  s.problem.message if s.problem else "unreadable bytes"))
        # LogLoader's recovery offsets (LogLoader.java:522-529), then UnifiedLog's constructor: updateLogStartOffset
        # raises a recovery point below the log start offset to it (UnifiedLog.scala:169, 534-543; Log.scala of 2.8)
        plan.new_recovery_point = max(leo if clean else min(plan.recovery_point, leo), plan.log_start_offset)
        return True

    def apply_split(self, s: Scan) -> None:
        """``splitOverflowedSegment`` + ``replaceSegments`` (LocalLog.java:157-214, 237-303) in the model: the
        pieces (``self.split``) take the overflowed segment's place among the segments (ordered by base offset), each
        a new ``.log`` copied from its byte range (written when recovery has run on it, ``_segment_file_changes``);
        the old segment's files are deleted (``deleteSegmentFiles``) except where a piece of the same base writes the
        name again, and its producer snapshot goes with it when no piece has its base (``deleteProducerSnapshotsAsync``
        of ``deletedSegments``, LogLoader.java:339-341; only a snapshot the loader's producer-state manager listed)."""
        plan, files = self.plan, self.files
        pieces, self.split = self.split, []
        stem = f"{s.base:020d}"
        mine = {f"{stem}.{ext}" for ext in ("log", "index", "timeindex", "txnindex")}
        plan.changes[:] = [c for c in plan.changes if not (c.phase == "load" and c.name in mine)]
        for n in sorted(mine):
            src = files.pop(n, None)
            if src and (src.startswith(ZEROS) or os.path.lexists(src)):
                self.split_deleted.append(n)
        self.segs.remove(s)
        self.scans.pop(s.base, None)
        self.recovered_bases.discard(s.base)
        with MappedFile(s.path) as mf:
            for p in pieces:
                piece = _scan_buffer(mf.buf[p.start:p.end], s.path, p.base, self.interval, self.sib, b"")
                piece.split_start = p.start
                self.segs.append(piece)
                self.scans[p.base] = piece
        self.segs.sort(key=lambda x: x.base)
        if s.base not in {p.base for p in pieces} and s.base in self.before_snaps and s.base in self.store.present:
            self.store.delete(s.base)
        plan.notes.append(f"{stem}.log: a batch's last offset overflows the segment's 32-bit relative range: Kafka "
                          "splits the segment (LocalLog.splitOverflowedSegment) into "
                          + ", ".join(f"{p.base:020d}.log (bytes {p.start}-{p.end})" for p in pieces)
                          + " and recovers again; recover --execute does the same")

    def finish_split(self) -> None:
        """The old files of a split segment that no piece writes again are deleted."""
        written = {c.name for c in self.plan.changes if c.kind in ("write", "copy", "create-empty")}
        for n in self.split_deleted:
            if n not in written:
                self.plan.changes.append(FileChange("delete", n, "replaced by the segments Kafka split it into"))

    def _active_index_overflows(self, s: Scan) -> bool:
        """``resizeIndexes(segment.index.bytes)`` on the active segment (LogLoader.java:210, LogSegment.java:172-175):
        an index the load did not rewrite is open with its position at its whole entries (AbstractIndex.java:472-478);
        ``resize`` maps it to ``segment.index.bytes`` rounded down to whole entries and puts the position back
        (AbstractIndex.java:195-211), which throws IllegalArgumentException (``newPosition > limit``) when the file
        holds more whole entries than that size: the broker does not start. True (and a FATAL line) then."""
        if s.base in self.recovered_bases or not s.path:
            return False
        for ext, size in (("index", 8), ("timeindex", 12)):
            name = f"{s.base:020d}.{ext}"
            path = self.files.get(name)
            if not path or path.startswith(ZEROS) or not os.path.isfile(path):
                continue
            if any(c.name == name and c.kind in ("truncate", "write") for c in self.plan.changes):
                continue
            n = os.path.getsize(path)
            position, limit = n - n % size, self.sib - self.sib % size
            if position > limit:
                self.plan.fatal.append(
                    f"{name}: {n} bytes hold {position // size} entries, more than segment.index.bytes {self.sib} "
                    f"holds ({limit // size}): the broker's resizeIndexes of the active segment throws "
                    f"IllegalArgumentException (newPosition > limit: ({position} > {limit})) and the partition does "
                    f"not load; cut it to whole entries within that size, or delete it (the broker then recreates it)")
                return True
        return False

    def _trim_active_indexes(self, s: Scan, exts: tuple[str, ...] = ("index", "timeindex"), why: str = "active") -> None:
        """The active segment's indexes at the broker's clean close, when recovery did not rewrite them: the load
        opens them with ``entries = size / entry size`` rounded down (AbstractIndex.java:472-478), preallocates them,
        and the close trims them to those entries (``trimToValidSize``): an odd length is cut to whole entries.
        Any other index the broker opens is closed the same way (``exts``; see ``finish_load``)."""
        if s.base in self.recovered_bases or not s.path:
            return
        for ext, size in (("index", 8), ("timeindex", 12)):
            name = f"{s.base:020d}.{ext}"
            path = self.files.get(name)
            if ext not in exts or not path or path.startswith(ZEROS) or not os.path.isfile(path):
                continue
            if any(c.name == name and c.kind in ("truncate", "write") for c in self.plan.changes):
                continue
            n = os.path.getsize(path)
            if n % size:
                self.plan.changes.append(FileChange("truncate", name, f"{n} bytes are not whole {size}-byte entries: "
                                                    f"the broker opens this index ({why}) and trims it to "
                                                    f"{n - n % size} bytes at its clean close", n - n % size))

    def replay(self, psm: ProducerStateManager, segs: list[Scan], log_start: int, last_offset: int,
               clean: bool, main: bool = False) -> bool:
        """``rebuild_producer_state``; False (and a FATAL line) where Kafka's read of a segment throws. ``main``: the
        loader's own ProducerStateManager (not a segment recovery's temporary one), whose replay is recorded in
        ``LoaderPlan.log_end_state_replayed``."""
        try:
            replayed = rebuild_producer_state(psm, segs, log_start, last_offset, clean, self.replay_read)
            if main:
                self.plan.log_end_state_replayed = replayed
        except KafkalogError as exc:
            self.plan.fatal.append(f"{exc.describe()}: the producer-state replay (UnifiedLog.rebuildProducerState, "
                                   "reading through the segment's offset index) throws: the broker fails to start")
            return False
        return True

    def finish_load(self, epoch_file: bool) -> None:
        """The rest of ``LogLoader.load`` (LogLoader.java:208-256): the leader-epoch cache truncated to the log's
        range, stray snapshots removed (3.x+), producer state rebuilt to the log end with its snapshots."""
        plan, segs, clean, version = self.plan, self.segs, self.plan.clean_shutdown, self.version
        leo = plan.log_end_offset
        changes = plan.changes
        after_end = lec.truncate_from_end(self.cache, leo)
        cache = lec.truncate_from_start(after_end, plan.log_start_checkpoint)
        plan.epochs_after = cache
        text = comp.encode_leader_epoch_checkpoint(cache).encode()
        # truncateFromStart removes every entry at or below the log start checkpoint and puts the first one back at
        # it, so the cache is dirty and written even when its entries are the same (LeaderEpochFileCache.java:369-400):
        # a file in another spelling (a torn last newline) is rewritten in Kafka's (tests/test_oracle_fuzz.py, 2574)
        dirty = after_end != self.cache or any(s <= plan.log_start_checkpoint for _e, s in after_end)
        on_disk = _file_bytes(plan.partition_dir, EPOCH_CHECKPOINT)
        if (cache != plan.epochs_before or (dirty and epoch_file and on_disk != text)
                or (self.epochs_flushed and on_disk != text)):
            changes.append(FileChange("write", EPOCH_CHECKPOINT, "leader-epoch cache after recovery and truncation",
                                      len(text), data=text))
        elif not epoch_file:
            changes.append(FileChange("create-empty", EPOCH_CHECKPOINT, "missing: the broker creates it empty"))
        if version.removes_stray_snapshots:
            remove_stray_snapshots(self.store, [s.base for s in segs])
        main = ProducerStateManager(self.store, version.java_producer_map, self.now)
        main.expiration_ms = self.expiration_ms
        if not self.replay(main, segs, plan.log_start_offset, leo, clean, main=True):
            return
        for base in sorted(set(self.replay_read)):
            # the replay's segment.read opened these offset indexes (LogSegment.translateOffset): trimmed at close
            held = [x for x in segs if x.base == base]
            if held and held[0] is not segs[-1]:
                self._trim_active_indexes(held[0], ("index",), "read by the producer-state replay")
        unstable = set(main.state.ongoing) | main.state.unreplicated
        if unstable:
            # UnifiedLog's start-up maybeIncrementFirstUnstableOffset converts the first unstable offset (ongoing or
            # completed-but-unreplicated transactions, ProducerStateManager.firstUnstableOffset) to offset metadata
            # (convertToOffsetMetadataOrThrow -> LocalLog.read -> LogSegment.translateOffset): the offset index of the
            # segment holding it is opened, and trimmed at the close
            fuo = max(min(unstable), plan.log_start_offset)
            # LocalLog.read (LocalLog.scala:346-396) reads from the floor segment on while translateOffset finds no
            # batch there; a walk that throws fails the load
            for x in [x for x in segs if x.base <= fuo][-1:] + [x for x in segs if x.base > fuo]:
                if x is not segs[-1]:
                    self._trim_active_indexes(x, ("index",), f"the segment of the first unstable offset {fuo}")
                try:
                    if fuo >= leo or x.translate(fuo) is not None:
                        break
                except KafkalogError as exc:
                    plan.fatal.append(f"{exc.describe()}: the start-up's lookup of the first unstable offset {fuo} "
                                      "(convertToOffsetMetadataOrThrow, through the segment's offset index) throws: "
                                      "the broker fails to start")
                    return
        self.finish_split()
        _snapshot_changes(plan, self.store, self.before_snaps)
        written = {c.name for c in plan.changes if c.kind == "write"}
        plan.changes = [c for c in plan.changes if not (c.kind == "create-empty" and c.name in written)]
        if not clean and plan.recovered:
            plan.notes.append("without .kafka_cleanshutdown the broker recovers these segments again at its next "
                              "start; after 'recover --execute' it finds nothing left to change")
        if not version.catches_ioexception:
            plan.notes.append(f"Kafka {version}: an I/O error while recovering a segment takes the log directory "
                              "offline (only 4.0+ empties the segment instead)")


def _txn_sanity(path: str | None, base: int) -> str | None:
    """TransactionIndex.sanityCheck: 'fatal' for a version > 0 (``AbortedTxn.kafka_version``: the entry's first
    byte), a reason to recover for lastOffset < base."""
    if not path or not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        data = f.read()
    for e in comp.parse_txn_index(data):
        if e.kafka_version > 0:
            return "fatal"
        if e.last_offset < base:
            return f"the .txnindex has an entry (last offset {e.last_offset}) below the base offset"
    return None


def _segment_file_changes(plan: LoaderPlan, files: dict[str, str], s: Scan, aborted: list, rec: SegmentRecovery) -> None:
    """Compare what recovery writes for one segment with the files on disk; add the differences."""
    stem = f"{s.base:020d}"
    if s.split_start is not None:
        source = os.path.basename(s.path).removesuffix(".swap")
        plan.changes.append(FileChange("copy", stem + ".log", f"split from {source} (bytes {s.split_start}-"
                                       f"{s.split_start + s.valid_bytes})", s.valid_bytes, source=source,
                                       start=s.split_start))
    elif s.valid_bytes < s.size:
        plan.changes.append(FileChange("truncate", stem + ".log", f"cut at byte {s.valid_bytes} of {s.size}",
                                       s.valid_bytes))
    for ext, data in (("index", s.index), ("timeindex", s.timeindex)):
        path = files.get(f"{stem}.{ext}")
        existing = file_bytes(path) if path else None
        status = ri.compare(ext, path or "", s.base, existing, data).status
        # A cut N.log takes its indexes along even when they still match: while N.log.swap exists the broker's
        # loader opens N.index.swap / N.timeindex.swap with it (LogLoader.java:145-155), creates a missing one
        # zero-filled (AbstractIndex.java:90-103) and installs that in place of the real index (pass 3).
        # LogSegment.recover resets both indexes and trims them to the rebuilt entries (LogSegment.java:473-519):
        # a preallocated or odd-length file that holds the same entries is rewritten too
        if s.valid_bytes < s.size or status != "match":
            plan.changes.append(FileChange("write", f"{stem}.{ext}", f"rebuilt ({len(data) // (8 if ext == 'index' else 12)}"
                                           f" entries; on disk: {status})", len(data), data=data))
    txn = comp.encode_txn_index([comp.AbortedTxn(0, *a) for a in aborted])
    xpath = files.get(stem + ".txnindex")
    if xpath or txn:
        existing = b""
        if xpath:
            with open(xpath, "rb") as f:
                existing = f.read()
        if existing != txn:
            plan.changes.append(FileChange("write", stem + ".txnindex", f"rebuilt from the log's markers "
                                           f"({len(aborted)} aborted transactions)", len(txn), data=txn))


def _delete_segment(plan: LoaderPlan, files: dict[str, str], s: Scan, lost_detail: bool) -> None:
    """recoverLog's ``removeAndDeleteSegmentsAsync`` (LogLoader.java:534-550): every file of the segment goes, including
    those this plan wrote for it before (a segment recovered at load, e.g. for a missing .index, then deleted
    because an earlier one was cut: its rebuilt indexes must not be left behind as orphans, issue 27)."""
    stem = f"{s.base:020d}"
    mine = {f"{stem}.{ext}" for ext in ("log", "index", "timeindex", "txnindex")}
    plan.changes[:] = [c for c in plan.changes if not (c.phase == "load" and c.name in mine
                                                         and c.kind in ("write", "truncate", "create-empty", "copy"))]
    for ext in ("log", "index", "timeindex", "txnindex"):
        src = files.pop(f"{stem}.{ext}", None)
        if src and (src.startswith(ZEROS) or os.path.lexists(src)):  # "" = created empty by this plan: dropped above
            plan.changes.append(FileChange("delete", f"{stem}.{ext}", "later segment deleted after a truncation"))
    lost = (lost_after(s.path, s.base, 0, True) if lost_detail and s.path and s.split_start is None
            else Lost(s.base, None, None, 0, 0, s.size, True))
    plan.deleted_segments.append(lost)


def _snapshot_changes(plan: LoaderPlan, store: SnapshotStore, before: set[int]) -> None:
    for off in sorted(before - set(store.present)):
        plan.snapshots_deleted.append(off)
        plan.changes.append(FileChange("delete", f"{off:020d}.snapshot", "producer snapshot removed by the loader"))
    for off in sorted(store.written):
        if off not in store.present:
            continue
        data = store.written[off]
        path = os.path.join(plan.partition_dir, f"{off:020d}.snapshot")
        if off in before and os.path.isfile(path):
            with open(path, "rb") as f:
                if f.read() == data:
                    continue
        plan.snapshots_written.append(off)
        plan.changes.append(FileChange("write", f"{off:020d}.snapshot", f"producer snapshot ({(len(data) - 10) // 46} "
                                       "producers)", len(data), data=data))


def _leftovers(plan: LoaderPlan, files: dict[str, str], version: KafkaVersion, recover_now: dict[int, str],
               segment_index_bytes: int = ri.DEFAULT_SEGMENT_INDEX_BYTES) -> None:
    """Step 1-2 of the load: .deleted/.cleaned/.swap files (see the module docstring)."""
    ch = plan.changes
    cleaned: list[str] = []
    swaps: list[str] = []
    for n in sorted(files):
        kind = layout.loader_file_kind(n)
        if kind == "deleted":
            ch.append(FileChange("delete", n, "stray file marked for deletion", phase="leftovers"))
        elif kind in ("cleaned", "swap"):
            if layout.loader_offset(n) is None:
                plan.fatal.append(f"{n}: the name does not start with an offset (NumberFormatException: the broker "
                                  "fails to start)")
                continue
            (cleaned if kind == "cleaned" else swaps).append(n)
    for c in ch:
        files.pop(c.name, None)
    min_cleaned = min((layout.loader_offset(n) or 0 for n in cleaned), default=None)
    valid = []
    for n in swaps:
        off = layout.loader_offset(n) or 0
        if min_cleaned is not None and off >= min_cleaned:
            ch.append(FileChange("delete", n, f"unfinished split/clean: base >= the smallest .cleaned base {min_cleaned}",
                                 phase="leftovers"))
            files.pop(n, None)
        else:
            valid.append(n)
    for n in cleaned:
        ch.append(FileChange("delete", n, "cleaner output that was never swapped in", phase="leftovers"))
        files.pop(n, None)
    log_swaps = [n for n in valid if n[: -len(".swap")].endswith(".log")]
    if version.legacy_swap:
        for n in valid:
            off = layout.loader_offset(n) or 0
            for ext in ("index", "timeindex", "txnindex"):
                name = f"{off:020d}.{ext}"
                if name in files:
                    ch.append(FileChange("delete", name, f"Kafka {version}: index files of a .swap base are deleted "
                                         "and rebuilt", phase="leftovers"))
                    files.pop(name)
        if not log_swaps:
            for n in valid:
                plan.notes.append(f"Kafka {version}: {n} is left in place (no .log.swap for its base)")
            return
    if log_swaps:
        lo = min(layout.loader_offset(n) or 0 for n in log_swaps)
        his = []
        for n in log_swaps:
            off = layout.loader_offset(n) or 0
            iswap = f"{off:020d}.index.swap"
            if iswap not in files and not version.legacy_swap:
                # LogSegment.open(..., ".swap") then readNextOffset loads the lazy offset index: a missing
                # N.index.swap is created zero-filled at segment.index.bytes (AbstractIndex.java:90-103) and never
                # trimmed; pass 3 renames it to N.index, which then loads as an existing index of that size
                size = segment_index_bytes - segment_index_bytes % 8
                ch.append(FileChange("write", iswap, f"created zero-filled ({size} bytes) by the loader's "
                                     f"readNextOffset on {n}", size, phase="leftovers", data=bytes(size)))
                files[iswap] = f"{ZEROS}{size}"
                valid.append(iswap)
            nxt, err = _swap_next_offset(files[n], off, files.get(iswap))
            if err:
                plan.fatal.append(f"{n}: {err}: the loader's readNextOffset on the swap segment throws "
                                  "CorruptRecordException (LogLoader.java:155): the broker fails to start")
                return
            his.append(nxt)
        hi = max(his)
        for n in sorted(files):
            if n.endswith(".swap"):
                continue
            base = layout.loader_offset(n)
            if version.legacy_swap and layout.loader_file_kind(n) not in ("log", "index"):
                continue  # <= 2.8 replaceSegments deletes only the old segments' files, not snapshots
            if base is not None and lo <= base < hi:
                ch.append(FileChange("delete", n, f"replaced by the interrupted clean/split's .swap files (range "
                                     f"[{lo}, {hi}))", phase="leftovers"))
                files.pop(n)
    for n in sorted(valid):
        if version.legacy_swap and not n[: -len(".swap")].endswith(".log"):
            continue
        final = n[: -len(".swap")]
        ch.append(FileChange("rename", final, "completes an interrupted clean/split", source=n, phase="leftovers"))
        files[final] = files.pop(n)
        if version.legacy_swap:
            recover_now[layout.loader_offset(n) or 0] = f"Kafka {version}: completed .swap segment"
    if version.legacy_swap:
        for n in valid:
            if not n[: -len(".swap")].endswith(".log"):
                files.pop(n, None)
                ch.append(FileChange("delete", n, f"Kafka {version}: index .swap replaced by the recovered segment's "
                                     "rebuilt index", phase="leftovers"))


def _swap_next_offset(path: str, base: int, index_path: str | None) -> tuple[int, str | None]:
    """LogSegment.readNextOffset of a swap segment with its ``.index.swap`` (``read_next_offset``)."""
    with MappedFile(path) as mf:
        return read_next_offset(mf.buf, base, file_bytes(index_path), path)


#: a ``files`` value that is no file on disk but ``int(rest)`` zero bytes the loader creates (an index swap)
ZEROS = "\0zeros:"


def file_bytes(path: str | None) -> bytes:
    """The content the simulation sees under a ``files`` value (b"" for None or a missing file)."""
    if not path:
        return b""
    if path.startswith(ZEROS):
        return bytes(int(path[len(ZEROS):]))
    if not os.path.isfile(path):
        return b""
    with open(path, "rb") as f:
        return f.read()
