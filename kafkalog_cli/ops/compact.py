"""``compact``: one round of the broker's LogCleaner over a partition directory, offline (spec §9, errata E1, E5,
E6, E11, E13, E17).

Why it is built this way:

* The rules are the cleaner's, decision for decision (offset map, record retention, batch retention with one
  transaction tracker per round, RETAIN_EMPTY for producers' last batches and for the batch ending the round,
  delete horizons), so that what the broker does with the result next is exactly what it would do after its own
  clean.
* Aborted transactions come from the ``.txnindex`` files, as in the broker, but first the log is replayed and the
  indexes are cross-checked against it: compaction with a missing or wrong entry destroys committed data for good
  (errata E1), so such a partition is refused, never "cleaned". So are overlapping segments and offsets going
  backwards (the output would go backwards too).
* Offsets never change; retained batches are copied byte for byte when nothing in them changes, and re-encoded
  keeping every header field the cleaner keeps otherwise.
* Memory is bounded like the cleaner's: the offset map is Kafka's SkimpyOffsetMap (MD5 digests, 24 bytes a slot,
  ``--dedupe-buffer-bytes``); when it fills, the round stops where Kafka's would (``buildOffsetMap``) and the plan
  says so. Nothing is held per batch: every pass streams the segments again (``compact_io``).
* A segment whose offsets overflow the 32-bit relative range is split first, at the batch boundaries
  ``LocalLog.splitOverflowedSegment`` chooses, and the parts are cleaned in the same round; the split is part of the
  plan, so a dry run shows exactly what ``--execute`` writes.
* The plan is computed without writing anything; ``execute`` runs the same filtering again and streams it into
  ``safety.Transaction``'s staged files, checking that every group comes out the size the plan said.

* Checked file for file against Kafka 4.0's own cleaner (kafka-real ``Clean``, tests/test_oracle_compact.py): the
  new segments' indexes are built per ``LogSegment.append`` as the cleaner appends (one append per read-buffer
  chunk, ``_Chunk``), every segment of the round is rewritten when its indexes are not those, producers of the
  snapshot idle for ``producer.id.expiration.ms`` are expired as the broker's load expires them, and ``.deleted``
  leftovers are deleted first as the loader deletes them.

Differences from the broker, all on the safe side: the first dirty offset is the log start (a full clean gives
the same survivors as a clean from the checkpoint, while the map does not fill); a split keeps the ``.txnindex``
entries of the split segment (Kafka's split copies only the records and drops them).
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import BinaryIO

from kafkalog_cli.broker import producer_state_manager as pst
from kafkalog_cli.broker import repair_view as ps
from kafkalog_cli.broker.checkpoints import high_watermark, log_start_offset
from kafkalog_cli.errors import CorruptRecordError, KafkalogError, RepairRefused
from kafkalog_cli.format import codecs
from kafkalog_cli.format.batch import ATTR_TIMESTAMP_TYPE, LOG_APPEND_TIME, Batch, Record
from kafkalog_cli.format.control import ABORT, COMMIT
from kafkalog_cli.format.encoder import RecordSpec, encode_batch, encode_legacy_message
from kafkalog_cli.format.legacy import LegacyEntry
from kafkalog_cli.ops import repair_plan
from kafkalog_cli.ops.compact_io import (
    DEFAULT_DEDUPE_BUFFER_BYTES,
    LOAD_FACTOR,
    AppendIndexBuilder,
    IndexBuilder,
    SegmentReader,
    SkimpyOffsetMap,
)
from kafkalog_cli.ops.load_first import NOTHING, dry_run_after_load, load_first, load_note, refused_after_load
from kafkalog_cli.storage import layout
from kafkalog_cli.storage.companions import AbortedTxn, encode_txn_index
from kafkalog_cli.storage.paths import require_directory
from kafkalog_cli.storage.segment import MappedFile

DEFAULT_DELETE_RETENTION_MS = 86_400_000
DEFAULT_SEGMENT_BYTES = 1 << 30
DEFAULT_SEGMENT_INDEX_BYTES = 10 * 1024 * 1024
INT_MAX = 2**31 - 1
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000  # the broker's producer.id.expiration.ms
DEFAULT_IO_BUFFER_BYTES = 512 * 1024  # the broker's log.cleaner.io.buffer.size (halved per read/write buffer)
NEVER_EXPIRES = pst.NEVER_EXPIRES  # producer.id.expiration.ms that expires nobody
DEFAULT_MAX_MESSAGE_BYTES = 1_048_588  # max.message.bytes / message.max.bytes: how far the cleaner's read buffer grows
CROSS_CHECK_BYTES = 16 << 20  # outputs up to this size are also checked with rebuild_index.rebuild_segment


@dataclass
class CompactOptions:
    delete_retention_ms: int = DEFAULT_DELETE_RETENTION_MS
    min_compaction_lag_ms: int = 0
    now_ms: int | None = None
    include_active: bool = False
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES
    index_interval_bytes: int = 4096
    dedupe_buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_BYTES
    producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS
    io_buffer_bytes: int = DEFAULT_IO_BUFFER_BYTES
    #: the topic's max.message.bytes (the cleaner's maxLogMessageSize) and the broker's message.max.bytes (its
    #: maxIoBufferSize, LogCleaner.scala:360): how far the read buffer grows for a large batch (``_Chunk``)
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    message_max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    recover_first: bool = False  # apply the broker's start-up recovery first (ops/load_first.py)


class Progress:
    """Where the passes report how far they got, in bytes of segment read; the command draws the bar (issue 19), the
    engine never prints. A pass adds what it will read to the total when it knows it (the later passes read only the
    cleanable part, which pass 1 finds), then advances by each segment or part it finished. Both callbacks are
    optional, so the engine calls them unconditionally."""

    def __init__(self, advance: Callable[[int], None] | None = None,
                 set_total: Callable[[int], None] | None = None) -> None:
        self._advance = advance
        self._set_total = set_total
        self.total = 0
        self.done = 0

    def add_total(self, n: int) -> None:
        self.total += n
        if self._set_total is not None:
            self._set_total(self.total)

    def advance(self, n: int) -> None:
        self.done += n
        if self._advance is not None:
            self._advance(n)


@dataclass
class SegmentStats:
    """What happens to one source segment (the dry run prints one line per segment)."""

    base: int
    batches_before: int = 0
    batches_after: int = 0
    records_before: int = 0
    records_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    batches_rewritten: int = 0
    batches_emptied: int = 0
    horizons_set: int = 0
    aborted_records_removed: int = 0
    tombstones_removed: int = 0
    keyless_removed: int = 0
    markers_removed: int = 0
    superseded_removed: int = 0  # records with a later value of the same key: what compaction is for


@dataclass
class Part:
    """A source segment as the cleaner sees it: a whole ``.log``, or one piece of a segment split for offset overflow
    (a byte range of that file, named after its first batch's base offset)."""

    base: int
    seg: ps.Segment
    start: int
    end: int
    next_offset: int  # readNextOffset: the offset after its last batch (its base when empty)
    index_size: int
    timeindex_size: int
    split: bool = False

    @property
    def size(self) -> int:
        return self.end - self.start


# A piece of an output log: a byte range of a source segment, or new bytes.
Piece = tuple[str, int, int] | bytes


@dataclass
class OutputGroup:
    """Source segments (or parts) merged into one cleaned segment named after the first (spec §9.5)."""

    bases: list[int]
    size: int = 0
    changed: bool = False
    mtime_ns: int = 0
    had_txnindex: bool = False
    existed: bool = True  # ``<out_base>.log`` exists before the change (not so for a split part based elsewhere)
    txn_entries: list[AbortedTxn] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list, repr=False)
    # the cleaner's LogSegment.append calls into the new segment: (bytes, largest offset, max timestamp, its offset)
    appends: list[tuple[int, int, int, int]] = field(default_factory=list, repr=False)

    @property
    def out_base(self) -> int:
        return self.bases[0]


@dataclass
class CompactPlan:
    partition_dir: str
    now_ms: int
    log_start_offset: int
    log_end_offset: int
    last_stable_offset: int
    first_uncleanable_offset: int
    groups: list[OutputGroup] = field(default_factory=list)
    stats: list[SegmentStats] = field(default_factory=list)
    snapshot_deletes: list[str] = field(default_factory=list)
    file_deletes: list[tuple[str, str]] = field(default_factory=list)  # (name, why) of segment files that go
    stray_deletes: list[str] = field(default_factory=list)  # .deleted leftovers, deleted first as the loader does
    splits: list[tuple[int, list[int]]] = field(default_factory=list)  # (segment base, bases of its parts)
    offset_map: dict = field(default_factory=dict)  # slots, entries, full, cleaned_up_to
    notes: list[str] = field(default_factory=list)
    index_interval_bytes: int = 4096
    segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES
    cleaner: _Cleaner | None = field(default=None, repr=False)
    #: the files the broker's start-up (LogLoader) changes before its cleaner runs: a crash-shutdown partition's
    #: recovery, leftovers; ``--execute`` applies them first, as ``recover --execute`` does (``load_first``)
    load_first: list[str] = field(default_factory=list)

    @property
    def changed_groups(self) -> list[OutputGroup]:
        return [g for g in self.groups if g.changed]

    @property
    def has_changes(self) -> bool:
        return bool(self.changed_groups) or bool(self.stray_deletes) or bool(self.load_first)

    def totals(self) -> dict[str, int]:
        keys = ("records_before", "records_after", "bytes_before", "bytes_after", "batches_before", "batches_after",
                "superseded_removed", "tombstones_removed", "aborted_records_removed", "keyless_removed")
        return {k: sum(getattr(s, k) for s in self.stats) for k in keys}

    def to_dict(self) -> dict:
        return {
            "partition_dir": self.partition_dir,
            "now_ms": self.now_ms,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "last_stable_offset": self.last_stable_offset,
            "first_uncleanable_offset": self.first_uncleanable_offset,
            "offset_map": self.offset_map,
            "splits": [{"segment": b, "parts": parts} for b, parts in self.splits],
            "segments": [asdict(s) for s in self.stats],
            "groups": [
                {"bases": g.bases, "output": ps.seg_name(g.out_base, "log"), "size": g.size, "changed": g.changed,
                 "aborted_txns_indexed": len(g.txn_entries)}
                for g in self.groups
            ],
            "snapshot_deletes": self.snapshot_deletes,
            "stray_deletes": self.stray_deletes,
            "notes": self.notes,
            "totals": self.totals(),
        }


# ------------------------------------------------------------------------------------------ transaction tracking
class TxnTracker:
    """The cleaner's CleanedTransactionMetadata: which batches belong to aborted transactions, which markers may go.

    ``aborted`` are the ``.txnindex`` entries in range; a transaction becomes "ongoing aborted" once the pass reaches
    its first offset, and its ABORT marker is kept (and re-indexed) only if some of its batches were seen this pass.
    """

    def __init__(self, aborted: list[AbortedTxn] | None = None) -> None:
        self.queue: deque[AbortedTxn] = deque()
        self.ongoing_aborted: dict[int, list] = {}  # pid -> [txn, last observed batch offset or None]
        self.ongoing_committed: set[int] = set()
        self.cleaned_index: list[AbortedTxn] = []
        self.add(aborted or [])

    def add(self, aborted: list[AbortedTxn]) -> None:
        """CleanedTransactionMetadata.addAbortedTransactions: a priority queue by first offset (duplicates are
        harmless: a transaction already ongoing is not restarted)."""
        self.queue = deque(sorted([*self.queue, *aborted], key=lambda t: t.first_offset))

    def _consume(self, offset: int) -> None:
        while self.queue and self.queue[0].first_offset <= offset:
            t = self.queue.popleft()
            self.ongoing_aborted.setdefault(t.producer_id, [t, None])

    def on_control(self, b: Batch, ctype: int | None) -> bool:
        """True when the marker is discardable (its transaction has no data left in this pass)."""
        self._consume(b.last_offset)
        if ctype is None:
            return True  # an empty control batch was already cleaned
        if ctype == ABORT:
            meta = self.ongoing_aborted.pop(b.producer_id, None)
            if meta is not None and meta[1] is not None:
                self.cleaned_index.append(meta[0])
                return False
            return True
        if ctype == COMMIT:
            if b.producer_id in self.ongoing_committed:
                self.ongoing_committed.discard(b.producer_id)
                return False
            return True
        return False

    def on_legacy(self, e: LegacyEntry) -> None:
        """onBatchRead of a v0/v1 entry: the aborted transactions up to its last offset start; it is never
        transactional itself."""
        self._consume(e.last_offset)

    def on_batch(self, b: Batch) -> bool:
        """True when the data batch belongs to an aborted transaction."""
        self._consume(b.last_offset)
        if not b.is_transactional:
            return False
        meta = self.ongoing_aborted.get(b.producer_id)
        if meta is not None:
            meta[1] = b.last_offset
            return True
        self.ongoing_committed.add(b.producer_id)
        return False


# ------------------------------------------------------------------------------------------ planning
TXNINDEX_HINT = ("nothing was changed; rebuild the .txnindex files from the log's own ABORT markers with 'kafkalog "
                 "rebuild-index PARTITION_DIR' (dry run, then --execute), then run compact again")


class OffsetOrderRefused(RepairRefused):
    """Overlapping segments or offsets going backwards: the cleaner would write a log whose offsets go backwards."""

    hint = ("nothing was changed; run 'kafkalog verify-crc' on the directory to see every segment-order / offset-order "
            "problem, and move the segment that does not belong aside (it is often a stray copy) before compacting")


class _OrderCheck:
    """Refuse, while pass 1 streams the batches, what ``verify-crc`` reports as segment-order, offset-order or
    offset-below-base problems.

    The cleaner copies batches in file order into segments named after the first base; with overlapping segments or
    backwards offsets that output has offsets going backwards (and a map that takes an older value for the latest
    one), which no reader can use. Nothing is planned, nothing is written."""

    def __init__(self) -> None:
        self.prev: ps.Segment | None = None  # the last non-empty segment and its offsets
        self.prev_first = self.prev_last = 0
        self.seg: ps.Segment | None = None
        self.first: Batch | LegacyEntry | None = None
        self.last: Batch | LegacyEntry | None = None
        self.below_last = -1  # last offset of the last batch below the segment's base

    def start(self, seg: ps.Segment) -> None:
        self.seg, self.first, self.last, self.below_last = seg, None, None, -1

    def _name(self, seg: ps.Segment) -> str:
        return os.path.basename(seg.path("log"))

    def _overlap(self, low: int, high: int, empty: bool) -> None:
        seg, prev = self.seg, self.prev
        assert seg is not None
        if prev is None or low > self.prev_last:
            return
        name, pname = self._name(seg), self._name(prev)
        raise OffsetOrderRefused(
            f"segment {name} (offsets {low}..{high}{', empty' if empty else ''}) overlaps segment {pname} "
            f"(offsets {self.prev_first}..{self.prev_last}): overlapping range {max(low, self.prev_first)}.."
            f"{min(high, self.prev_last)}",
            file=seg.path("log"), expected=f"offsets > {self.prev_last} (the end of {pname})", found=str(low))

    def batch(self, b: Batch | LegacyEntry) -> None:
        seg = self.seg
        assert seg is not None
        name = self._name(seg)
        if b.last_offset < b.base_offset:
            raise OffsetOrderRefused(
                f"batch in {name} has offsets going backwards ({b.base_offset}..{b.last_offset})",
                file=seg.path("log"), position=b.position, expected="lastOffsetDelta >= 0", found=str(b.last_offset - b.base_offset))
        last = self.last
        if last is None:
            self.first = b
        elif b.base_offset <= last.last_offset:
            raise OffsetOrderRefused(
                f"offsets go backwards inside {name}: the batch at byte {b.position} (offsets {b.base_offset}.."
                f"{b.last_offset}) does not follow the batch at byte {last.position} (offsets {last.base_offset}.."
                f"{last.last_offset}); overlapping range {b.base_offset}..{min(b.last_offset, last.last_offset)}",
                file=seg.path("log"), position=b.position, expected=f"base offset > {last.last_offset}",
                found=str(b.base_offset))
        if b.base_offset < seg.base:
            self.below_last = b.last_offset
        self.last = b

    def end(self) -> None:
        seg, first, last = self.seg, self.first, self.last
        assert seg is not None
        if first is None or last is None:
            self._overlap(seg.base, seg.base, True)
            return
        self._overlap(min(seg.base, first.base_offset), last.last_offset, False)
        if first.base_offset < seg.base:
            raise OffsetOrderRefused(
                f"segment {self._name(seg)} starts below its base offset: its first batch has offsets "
                f"{first.base_offset}..{first.last_offset}; overlapping range {first.base_offset}.."
                f"{min(seg.base - 1, self.below_last)} lies before the segment's name",
                file=seg.path("log"), position=first.position, expected=f"offset >= {seg.base}",
                found=str(first.base_offset))
        self.prev, self.prev_first, self.prev_last = seg, min(seg.base, first.base_offset), last.last_offset


@dataclass
class _SegFacts:
    """What pass 1 keeps of one segment (never its batches)."""

    batches: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    next_offset: int = 0


def _scan(segments: list[ps.Segment], progress: Progress | None = None
          ) -> tuple[dict[int, _SegFacts], dict[int, int | None], ps.LogFacts]:
    """Pass 1: validate every batch (size, CRC, offset order), replay producers and transactions, keep per-segment
    offsets and the control types (one per marker)."""
    seg_facts: dict[int, _SegFacts] = {}
    ctypes: dict[int, int | None] = {}
    order = _OrderCheck()
    progress = progress or Progress()
    progress.add_total(sum(seg.size for seg in segments))

    def items():  # noqa: ANN202
        for seg in segments:
            sf = seg_facts[seg.base] = _SegFacts(next_offset=seg.base)
            order.start(seg)
            with SegmentReader(seg.path("log")) as r:
                for b in r.entries(validate=True):
                    order.batch(b)
                    if sf.first_offset is None:
                        sf.first_offset = b.base_offset
                    sf.last_offset = b.last_offset
                    sf.next_offset = b.next_offset
                    sf.batches += 1
                    if b.is_legacy:
                        continue  # a v0/v1 entry has no producer and no transaction: nothing to replay
                    ct = ps.control_type(b, r.buf) if b.is_control else None
                    if b.is_control:
                        ctypes[b.base_offset] = ct
                    yield b, ct
            order.end()
            progress.advance(seg.size)

    facts = ps.replay_log(items(), 0)
    return seg_facts, ctypes, facts


def _split_parts(seg: ps.Segment, opts: CompactOptions) -> list[Part]:
    """LocalLog.splitOverflowedSegment: from the first batch, a new segment based at that batch's base offset takes
    batches while their last offset fits its 32-bit relative range (LogSegment.appendFromFile stops at the first
    that does not); the next one starts there. Index sizes are the recovery rule's for each part."""
    parts: list[Part] = []
    cur: tuple[int, int, int, IndexBuilder] | None = None  # base, start, next offset, builder
    pos = 0

    def close(end: int) -> None:
        assert cur is not None
        index, timeindex = cur[3].finish()
        parts.append(Part(cur[0], seg, cur[1], end, cur[2], len(index), len(timeindex), split=True))

    with SegmentReader(seg.path("log")) as r:
        for b in r.batches():
            if cur is None or b.last_offset - cur[0] > INT_MAX:
                if cur is not None:
                    close(b.position)
                cur = (b.base_offset, b.position, b.next_offset,
                       IndexBuilder(b.base_offset, opts.index_interval_bytes, opts.segment_index_bytes, seg.path("log")))
            cur[3].add(b.size, b.last_offset, b.max_timestamp)
            cur = (cur[0], cur[1], b.next_offset, cur[3])
            pos = b.position + b.size
    if cur is not None:
        close(pos)
    return parts


def _check_txn_indexes(segments: list[ps.Segment], facts: ps.LogFacts, log_start: int,
                       ranges: list[tuple[int, int]], fetch: int | None = None) -> None:
    """Errata E1: every aborted transaction the log proves must be in the ``.txnindex`` files the cleaner reads,
    and every entry there must describe an ABORT the log holds. Otherwise refuse: compaction would delete committed
    data (or keep aborted data) for good.

    ``ranges`` are exactly the (start, upper) searches the planner then makes: the offset map's, and one per source
    segment as ``cleanSegments`` makes them, each keeping entries that end at or after ``fetch`` (the broker's log
    start offset: an aborted transaction that ended below it is taken for committed by the cleaner, as by Kafka's). An entry whose lastStableOffset exceeds lastOffset + 1 cannot have been
    written by a broker (the LSO is the first offset of the earliest *other* open transaction, or lastOffset + 1);
    it would end the broker's early-stopping search too soon and hide later entries, so it is refused outright."""
    entries: list[tuple[ps.Segment, AbortedTxn]] = []
    for s in segments:
        for e in ps.read_txn_index(s.path("txnindex")):
            entries.append((s, e))
    markers_by_pid: dict[int, list[int]] = {}
    for off, (pid, _t) in sorted(facts.markers.items()):
        markers_by_pid.setdefault(pid, []).append(off)
    for s, e in entries:
        if e.last_stable_offset > e.last_offset + 1:
            raise RepairRefused(
                f".txnindex entry of producer {e.producer_id} ending at offset {e.last_offset} has lastStableOffset "
                f"{e.last_stable_offset} > lastOffset + 1, which no broker writes; it would stop the cleaner's search "
                "early and hide later aborted transactions",
                file=s.path("txnindex"), expected=f"lastStableOffset <= {e.last_offset + 1}",
                found=str(e.last_stable_offset),
                hint=TXNINDEX_HINT,
            )
        if e.last_offset < log_start or e.last_offset >= facts.log_end_offset:
            continue
        m = facts.markers.get(e.last_offset)
        if m is None or m[0] != e.producer_id or m[1] != ABORT:
            found = "no marker" if m is None else f"{'COMMIT' if m[1] == COMMIT else 'control'} marker of producer {m[0]}"
            raise RepairRefused(
                f".txnindex lists an aborted transaction of producer {e.producer_id} ending at offset {e.last_offset}, "
                "but the log has no ABORT marker there; compaction would delete committed data",
                file=s.path("txnindex"), expected=f"ABORT marker of producer {e.producer_id}", found=found,
                hint=TXNINDEX_HINT,
            )
        earlier = [o for o in markers_by_pid.get(e.producer_id, []) if o < e.last_offset]
        if earlier and earlier[-1] >= e.first_offset:
            raise RepairRefused(
                f".txnindex entry of producer {e.producer_id} starts at {e.first_offset}, before that producer's "
                f"previous marker at {earlier[-1]}; compaction would delete a committed transaction",
                file=s.path("txnindex"), expected=f"first offset > {earlier[-1]}", found=str(e.first_offset),
                hint=TXNINDEX_HINT,
            )
    # what the cleaner will learn, range by range, with its own early-stopping search
    for start, end in ranges:
        known = {(e.producer_id, e.last_offset): e for e in ps.collect_aborted(segments, start, end, fetch)}
        for t in facts.txns:
            if not t.aborted or not (t.first_offset < end and t.marker_offset >= max(start, fetch or start)):
                continue
            if t.records == 0:
                # only empty batches are left of it (a cleaner kept them for producer state after removing the data,
                # and dropped the index entry when the marker fell into a later group): no key can be taken for
                # committed, so a missing entry loses nothing
                continue
            entry = known.get((t.producer_id, t.marker_offset))
            if entry is None or entry.first_offset > t.first_offset:
                marker_seg = max((s for s in segments if s.base <= t.marker_offset), key=lambda s: s.base)
                raise RepairRefused(
                    f"the log holds an aborted transaction of producer {t.producer_id} (offsets {t.first_offset}.."
                    f"{t.marker_offset}) that the .txnindex files do not record (or an earlier entry's lastStableOffset "
                    "hides it); the cleaner would treat its data as committed and delete older values for good",
                    file=marker_seg.path("txnindex"),
                    expected=f"entry producer {t.producer_id} first<={t.first_offset} last={t.marker_offset}",
                    found="missing" if entry is None else f"first offset {entry.first_offset}",
                    hint=TXNINDEX_HINT,
                )


def _segment_ranges(group: list[Part]) -> list[tuple[int, int]]:
    """``cleanSegments``' bounds per source segment: [base, next segment of the group's base), the last one up to
    its own ``readNextOffset`` (the offset after its last batch; its base when empty)."""
    return [(p.base, group[i + 1].base if i + 1 < len(group) else p.next_offset) for i, p in enumerate(group)]


def _group_segments(segs: list[Part], upper: int, opts: CompactOptions) -> list[list[Part]]:
    """``LogCleaner.groupSegmentsBySize`` (LogCleaner.scala:976-1001; spec §9.5, errata E13)."""
    groups: list[list[Part]] = []
    i = 0
    while i < len(segs):
        group = [segs[i]]
        log_size, idx_size, tidx_size = segs[i].size, segs[i].index_size, segs[i].timeindex_size
        i += 1
        while i < len(segs):
            nxt = segs[i]
            last_off = segs[i + 1].base - 1 if i + 1 < len(segs) else upper - 1
            if not (
                log_size + nxt.size <= opts.segment_bytes
                and idx_size + nxt.index_size <= opts.segment_index_bytes
                and tidx_size + nxt.timeindex_size <= opts.segment_index_bytes
                and (nxt.size == 0 or last_off - group[0].base <= INT_MAX)
            ):
                break
            group.append(nxt)
            log_size += nxt.size
            idx_size += nxt.index_size
            tidx_size += nxt.timeindex_size
            i += 1
        groups.append(group)
    return groups


def _largest_timestamp(seg: ps.Segment, notes: list[str]) -> int:
    """The broker's ``LogSegment.largestTimestamp``, which ``LogCleanerManager.cleanableOffsets`` compares with
    min.compaction.lag.ms: the last ``.timeindex`` entry, else the ``.log`` mtime (errata E14/E17) — not the
    batches' max timestamp. The rule is ``seek``'s (seek-time chooses segments by the same value)."""
    from kafkalog_cli.ops.seek import SeekStats, largest_timestamp

    warnings: list[str] = []
    with MappedFile(seg.path("log")) as mf:
        ts = largest_timestamp(seg.dir, seg.base, mf, SeekStats(), warnings)
    if warnings:
        notes.append(f"segment {seg.base}: {ps.seg_name(seg.base, 'timeindex')} is missing or empty, so its .log mtime "
                     f"{ts} stands in for its largest timestamp (the broker's rule for min.compaction.lag.ms)")
    return ts


def check_dedupe_buffer(memory: int) -> None:
    """LogCleaner's requirement: the map must hold at least one entry at the load factor."""
    if min(memory, INT_MAX) // 24 * LOAD_FACTOR <= 1:
        raise ValueError(f"--dedupe-buffer-bytes {memory} is too small: the offset map must hold at least one entry "
                         f"at the load factor {LOAD_FACTOR} (24 bytes a slot, so at least 48 bytes)")


def plan_compaction(partition_dir: str, opts: CompactOptions | None = None,
                    progress: Progress | None = None) -> CompactPlan:
    """Compute everything ``compact`` would write, without writing. Raises RepairRefused when it must not run.
    ``progress`` hears of every segment each pass finished (pass 1, the offset map, the dry-run filter)."""
    opts = opts or CompactOptions()
    progress = progress or Progress()
    check_dedupe_buffer(opts.dedupe_buffer_bytes)
    pdir = os.path.abspath(partition_dir)
    require_directory(pdir)
    left = ps.leftovers(pdir)
    stray = layout.deleted_leftovers(left)  # the broker's loader deletes these first; so does this repair
    left = [n for n in left if n not in stray]
    if left:
        raise RepairRefused(
            "an unfinished clean, split or swap is in the partition directory",
            file=pdir, expected="no .cleaned/.swap files", found=", ".join(left[:5]),
        )
    segments = ps.list_segments(pdir)
    if not segments:
        raise layout.no_segment(pdir)
    now = opts.now_ms if opts.now_ms is not None else int(time.time() * 1000)

    # pass 1: validate every batch, replay producers and transactions
    seg_facts, ctypes, facts = _scan(segments, progress)
    leo = segments[-1].base
    for seg in reversed(segments):
        if seg_facts[seg.base].batches:
            leo = max(leo, seg_facts[seg.base].next_offset)
            break
    facts.log_end_offset = leo
    # the broker's logStartOffset (a DeleteRecords moves it into a segment): the first dirty offset of a round with no
    # cleaner checkpoint (LogCleanerManager.scala:625-644), where the offset map starts (LogCleaner.scala:612)
    log_start, _src = log_start_offset(pdir, [s.base for s in segments])

    notes: list[str] = []
    # producers' last batches, as the broker's producer state has them (newest snapshot, then the log after it); its
    # ongoing transactions hold the last stable offset, also one whose batches a DeleteRecords already removed
    last_batches = _active_producers(pdir, segments, seg_facts, ctypes, leo, facts, now, opts.producer_id_expiration_ms)
    ongoing = [e.current_txn_first_offset for e in last_batches.values() if e.current_txn_first_offset >= 0]
    lso, upper = _cleanable_offsets(pdir, segments, facts, leo, opts, now, notes, log_start, ongoing)
    plan = CompactPlan(pdir, now, log_start, leo, lso, upper, notes=notes,
                       index_interval_bytes=opts.index_interval_bytes, segment_index_bytes=opts.segment_index_bytes,
                       stray_deletes=stray)
    if stray:
        plan.notes.append(f"{len(stray)} file(s) already scheduled for deletion (.deleted) are deleted first, as the "
                          "broker's loader deletes them at start-up")
    # nothing cleanable below the first dirty offset: Kafka's map over logSegments(firstDirty, firstDirty) is empty,
    # so its round cleans logSegments(0, 0) (LogCleaner.scala:612-624)
    clean_segs = [s for s in segments if s.base < upper] if upper > log_start else []
    if not clean_segs:
        plan.notes.append("nothing is cleanable (only the active segment, or everything is above the last stable offset)")
        return plan
    parts = _split_overflowed_segments(plan, clean_segs, seg_facts, opts)
    cleaner = _Cleaner(parts, segments, ctypes, last_batches, upper, now, opts, log_start)
    cleaned_parts = _build_offset_map(plan, cleaner, parts, progress)
    # the broker's searches of the .txnindex files: one for the offset map, one per source segment (cleanSegments
    # collects each segment's aborted transactions with that segment's own bounds, not the group's)
    groups = _group_segments(cleaned_parts, upper, opts)
    cleaner.groups = groups
    cleaner.seg_ranges = {p.base: r for g in groups for p, r in zip(g, _segment_ranges(g))}
    _check_txn_indexes(segments, facts, segments[0].base, [(log_start, upper), *cleaner.seg_ranges.values()],
                       fetch=log_start)
    _clean_segments(plan, cleaner, groups, progress)
    _replace_segments(plan)
    plan.notes.append(
        "cleaner-offset-checkpoint is left unchanged: the broker re-reads the cleaned range on its next clean and "
        + ("cleans what this limited round left" if cleaner.full else
           "finds nothing more to remove (same survivors), it only costs one extra pass")
    )
    return plan


def _cleanable_offsets(pdir: str, segments: list[ps.Segment], facts: ps.LogFacts, leo: int, opts: CompactOptions,
                       now: int, notes: list[str], log_start: int,
                       ongoing: list[int] | None = None) -> tuple[int, int]:
    """``LogCleanerManager.cleanableOffsets`` (LogCleanerManager.scala:622-683): (last stable offset, first
    uncleanable offset). Cleaning stops at the last stable offset, the high watermark, the active segment (unless
    ``include_active``) and the first segment younger than min.compaction.lag.ms among those from the first dirty
    offset (``log_start``) on, rounded down to a segment base; never below the first dirty offset. ``ongoing``: the
    first offsets of the producer state's open transactions; a first unstable offset below the log start counts as
    the log start (maybeIncrementFirstUnstableOffset, UnifiedLog.scala:959-973)."""
    lso = min([*facts.open_txns.values(), *(ongoing or [])], default=leo)
    lso = min(max(lso, log_start), leo)
    cap = lso
    hw, hw_unknown = high_watermark(pdir)
    if hw is None:
        notes.append(
            f"WARNING: the high watermark is unknown: {hw_unknown}. The broker never cleans past it; without it the "
            f"cleanable range is capped at the last stable offset {lso} (and the active segment) only"
        )
    elif hw < cap:
        cap = hw
        notes.append(f"high watermark {hw} (replication-offset-checkpoint) bounds the cleanable range")
    if not opts.include_active:
        cap = min(cap, segments[-1].base)
    if opts.min_compaction_lag_ms > 0:
        for i, s in enumerate(segments):
            if s.base >= cap:
                break
            if i + 1 < len(segments) and segments[i + 1].base <= log_start:
                continue  # nonActiveLogSegmentsFrom(firstDirtyOffset): from the segment holding it
            largest = _largest_timestamp(s, notes)
            if largest > now - opts.min_compaction_lag_ms:
                cap = s.base
                notes.append(f"segment {s.base} is younger than min.compaction.lag.ms (largest timestamp {largest} > "
                             f"now - lag = {now - opts.min_compaction_lag_ms}); cleaning stops before it")
                break
    if cap < leo:
        cap = max((s.base for s in segments if s.base <= cap), default=log_start)
    upper = max(cap, log_start)
    if lso < leo:
        notes.append(f"open transaction(s) hold the last stable offset at {lso}: nothing at or after it is cleaned")
    return lso, upper


def _split_overflowed_segments(plan: CompactPlan, clean_segs: list[ps.Segment], seg_facts: dict[int, _SegFacts],
                               opts: CompactOptions) -> list[Part]:
    """The cleanable segments as parts: a segment whose offsets overflow the 32-bit relative range is split first
    (``LogCleaner.cleanSegments`` catches LogSegmentOffsetOverflowException and calls ``splitOverflowedSegment``,
    LogCleaner.scala:689-694, LocalLog.java:157; the broker cleans the parts on its next round, here in this one)."""
    parts: list[Part] = []
    for s in clean_segs:
        sf = seg_facts[s.base]
        if sf.next_offset > s.base and sf.next_offset - 1 - s.base > INT_MAX:  # LogSegment.hasOverflow
            pieces = _split_parts(s, opts)
            plan.splits.append((s.base, [p.base for p in pieces]))
            plan.notes.append(
                f"segment {s.base} holds offsets up to {sf.next_offset - 1}, beyond its base + 2^31-1: it is split into "
                f"{len(pieces)} segments at bases {', '.join(str(p.base) for p in pieces)} at the batch boundaries "
                "Kafka's LocalLog.splitOverflowedSegment chooses, and the parts are cleaned in the same round")
            parts.extend(pieces)
        else:
            parts.append(Part(s.base, s, 0, s.size, sf.next_offset, s.index_size, s.timeindex_size))
    return parts


def _build_offset_map(plan: CompactPlan, cleaner: _Cleaner, parts: list[Part], progress: Progress) -> list[Part]:
    """Pass 2, ``LogCleaner.buildOffsetMap`` (LogCleaner.scala:1035-1079): the offset map over [log start, first
    uncleanable offset), bounded like the broker's dedupe buffer; returns the parts this round cleans
    (``doClean``: ``logSegments(0, endOffset)``, LogCleaner.scala:594-625)."""
    end_offset = cleaner.build_offset_map(plan.log_start_offset, progress)
    omap = cleaner.omap
    plan.offset_map = {"bytes": omap.memory, "slots": omap.slots, "max_entries": omap.max_entries,
                       "entries": omap.entries, "full": cleaner.full, "cleaned_up_to": end_offset}
    if cleaner.full:
        untouched = [p.base for p in parts if p.base >= end_offset]
        plan.notes.append(
            f"the offset map is full ({omap.entries} keys, the limit for --dedupe-buffer-bytes {omap.memory} is "
            f"{omap.max_entries} = {omap.slots} slots x {LOAD_FACTOR}): this round deduplicates keys only up to offset "
            f"{end_offset - 1}, as Kafka limits a round; records after it are kept as they are"
            + (f", and segments from {untouched[0]} on are not touched" if untouched else "")
            + ". Give a larger --dedupe-buffer-bytes to clean the rest")
    return [p for p in parts if p.base < end_offset]


def _clean_segments(plan: CompactPlan, cleaner: _Cleaner, groups: list[list[Part]], progress: Progress) -> None:
    """Pass 3, ``LogCleaner.cleanSegments`` (LogCleaner.scala:650-735) per group, without a sink: every batch is
    filtered (``cleanInto``/``shouldRetainRecord``, in ``_Cleaner.clean_group``) and only sizes and statistics are
    kept; ``compaction_steps`` runs the same filter again into the staged files."""
    pdir = plan.partition_dir
    tracker = TxnTracker()
    progress.add_total(sum(p.size for g in groups for p in g))
    reindexed: list[int] = []
    for group in groups:
        out = OutputGroup([p.base for p in group], mtime_ns=group[-1].seg.mtime_ns, parts=group,
                          had_txnindex=os.path.isfile(os.path.join(pdir, ps.seg_name(group[0].base, "txnindex"))),
                          existed=os.path.isfile(os.path.join(pdir, ps.seg_name(group[0].base, "log"))))
        stats = [SegmentStats(p.base, bytes_before=p.size) for p in group]
        plan.stats.extend(stats)
        cleaner.clean_group(group, out, tracker, stats, None)
        progress.advance(sum(p.size for p in group))
        if len(group) > 1 or any(p.split for p in group):
            out.changed = True
        elif not out.changed and _indexes_differ(plan, out, group[0]):
            # the broker rewrites every group of the round (cleanSegments per group, LogCleaner.scala:594-625), so
            # a segment whose records all stay still gets the cleaner's per-append indexes and .txnindex
            out.changed = True
            reindexed.append(group[0].base)
        plan.groups.append(out)
    plan.cleaner = cleaner
    if reindexed:
        plan.notes.append(f"{len(reindexed)} segment(s) keep every record but not the indexes the cleaner writes when "
                          "it rewrites them (per append): rewritten, as the broker rewrites every segment of a round ("
                          + ", ".join(str(b) for b in reindexed[:5]) + (", ..." if len(reindexed) > 5 else "") + ")")


def _indexes_differ(plan: CompactPlan, out: OutputGroup, part: Part) -> bool:
    """Whether the source segment's ``.index``/``.timeindex``/``.txnindex`` differ from what the cleaner's rewrite of
    it writes (``_indexes_of``'s rule over ``out.appends``; the aborted transactions it re-indexes)."""
    builder = AppendIndexBuilder(out.out_base, plan.index_interval_bytes, plan.segment_index_bytes, part.seg.path("log"))
    for n, largest, max_ts, shallow in out.appends:
        builder.append(n, largest, max_ts, shallow)
    index, timeindex = builder.finish()
    want = {"index": index, "timeindex": timeindex, "txnindex": encode_txn_index(out.txn_entries)}
    for ext, data in want.items():
        path = part.seg.path(ext)
        have: bytes | None
        try:
            with open(path, "rb") as f:
                have = f.read()
        except FileNotFoundError:
            have = b"" if ext == "txnindex" else None
        except OSError:
            return True
        if have != data:
            return True
    return False


def _replace_segments(plan: CompactPlan) -> None:
    """The files ``replaceSegments`` (LogCleaner.scala:709, LocalLog.java:201-260) removes: those of source segments
    whose base is no longer a segment's (merged away, or split with the first part based elsewhere); errata E13: so
    do their producer snapshots (never the newest one)."""
    pdir = plan.partition_dir
    new_bases = {g.out_base for g in plan.groups}
    gone: list[int] = []
    for g in plan.changed_groups:
        for p in g.parts:
            if p.seg.base not in new_bases and p.seg.base not in gone:
                gone.append(p.seg.base)
                into = ps.seg_name(g.out_base, "log")
                for ext in ("log", "index", "timeindex", "txnindex"):
                    if os.path.exists(p.seg.path(ext)):
                        why = f"split into {into} and others" if p.split else f"merged into {into}"
                        plan.file_deletes.append((ps.seg_name(p.seg.base, ext), why))
    snaps = sorted(n for n in os.listdir(pdir) if n.endswith(".snapshot"))
    newest = snaps[-1] if snaps else None
    for base in gone:
        name = ps.seg_name(base, "snapshot")
        if name in snaps and name != newest:
            plan.snapshot_deletes.append(name)


def _active_producers(pdir: str, segments: list[ps.Segment], seg_facts: dict[int, _SegFacts],
                      ctypes: dict[int, int | None], leo: int, facts: ps.LogFacts, now: int,
                      expiration_ms: int) -> dict[int, pst.ProducerStateEntry]:
    """The newest snapshot at or below the log end, then the batches after it (a header walk of the tail only).

    A producer of the snapshot idle for ``producer.id.expiration.ms`` (no open transaction, ``now - lastTimestamp >=
    expiration``) is dropped as the broker's load drops it (ProducerStateManager.loadFromSnapshot filters with
    isProducerExpired, ProducerStateManager.java:297-333 at 1eb7644), so its last batch is not kept;
    producers replayed from the log after the snapshot are never expired at load."""
    snap = ps.newest_snapshot(pdir, at_most=leo)
    if snap is None:
        return facts.producers
    off, entries = snap
    state = pst.entries_from_snapshot(
        e for e in entries if e.current_txn_first_offset >= 0 or now - e.timestamp < expiration_ms)
    for seg in segments:
        sf = seg_facts[seg.base]
        if not sf.batches or sf.next_offset <= off:
            continue
        with SegmentReader(seg.path("log")) as r:
            for b in r.entries():
                if not b.is_legacy and b.base_offset >= off:
                    pst.replay_for_repair(state, b, ctypes.get(b.base_offset))
    return state


class _Cleaner:
    """The state of one round shared by the plan and the execution: the offset map, the producers' last batches,
    the groups. ``clean_group`` is the one place batches are filtered; the dry run calls it without a sink, the
    execution with the staged file, so both see the same batches, in the same order, with the same decisions."""

    def __init__(self, parts: list[Part], segments: list[ps.Segment], ctypes: dict[int, int | None],
                 producers: dict[int, pst.ProducerStateEntry], upper: int, now: int, opts: CompactOptions,
                 first_dirty: int | None = None) -> None:
        self.parts = parts
        self.segments = segments
        self.ctypes = ctypes
        self.producers = producers
        self.upper = upper
        self.now = now
        self.opts = opts
        self.omap = SkimpyOffsetMap(opts.dedupe_buffer_bytes)
        self.full = False
        self.groups: list[list[Part]] = []
        self.seg_ranges: dict[int, tuple[int, int]] = {}
        if first_dirty is None:
            first_dirty = segments[0].base if segments else 0
        self.first_dirty = first_dirty  # the log start offset (a kafkalog round has no cleaner checkpoint)
        self.legacy_delete_horizon_ms = legacy_delete_horizon(segments, first_dirty,
                                                              opts.delete_retention_ms)

    def build_offset_map(self, start: int, progress: Progress | None = None) -> int:
        """LogCleaner.buildOffsetMap over the parts below ``upper``; returns the end offset of the round
        (``offsetMap.latestOffset + 1``). When the map reaches slots x load factor, it stops at that record, as
        ``buildOffsetMapForSegment`` returns, and later segments are not read."""
        omap = self.omap
        dirty = [p for p in self.parts if p.base < self.upper]
        tracker = TxnTracker(ps.collect_aborted(self.segments, start, self.upper, self.first_dirty))
        progress = progress or Progress()
        progress.add_total(sum(p.size for p in dirty))
        for i, part in enumerate(dirty):
            next_start = dirty[i + 1].base if i + 1 < len(dirty) else self.upper
            with SegmentReader(part.seg.path("log")) as r:
                for b in r.entries(part.start, part.end):
                    if b.is_legacy:
                        tracker.on_legacy(b)
                        skip = False
                    elif b.is_control:
                        tracker.on_control(b, self.ctypes.get(b.base_offset))
                        skip = True  # no key of a marker enters the map
                    else:
                        skip = tracker.on_batch(b)  # an aborted transaction's data
                    if not skip:
                        for rec in b.iter_records(r.buf):
                            if rec.key is not None and rec.offset >= start:
                                if omap.entries >= omap.max_entries:
                                    self.full = True
                                    return omap.latest_offset + 1
                                omap.put(rec.key, rec.offset)
                    if b.last_offset >= start:
                        omap.latest_offset = b.last_offset
            omap.latest_offset = next_start - 1  # offset gaps: fast forward to the next segment
            progress.advance(part.size)
        return omap.latest_offset + 1

    def clean_group(self, group: list[Part], out: OutputGroup, tracker: TxnTracker, stats: list[SegmentStats],
                    sink: BinaryIO | None) -> None:
        """cleanSegments for one group: filter every batch of its parts, write the survivors to ``sink`` (if any),
        record the group's size, whether anything changed, the aborted transactions it re-indexes, and the appends
        the cleaner makes to the new segment (``out.appends``, what its indexes are built from)."""
        tracker.cleaned_index = []  # the shared tracker's output index switches to this group's
        out.appends = []
        io_buffer = max(1, self.opts.io_buffer_bytes // 2)  # LogCleaner: ioBufferSize / numThreads / 2, one thread
        for part, st in zip(group, stats):
            tracker.add(ps.collect_aborted(self.segments, *self.seg_ranges[part.base], self.first_dirty))
            path = part.seg.path("log")
            chunk = _Chunk(io_buffer, self.opts.max_message_bytes, self.opts.message_max_bytes)
            # cleanSegments' retainLegacyDeletesAndTxnMarkers: the source segment's lastModified (ms, as Java's
            # File.lastModified) after the legacy delete horizon (LogCleaner.scala:679)
            retain_legacy_deletes = part.seg.mtime_ns // 1_000_000 > self.legacy_delete_horizon_ms
            with SegmentReader(path) as r:
                buf = r.buf
                for b in r.entries(part.start, part.end):
                    chunk.before(b.size, out.appends)
                    if b.is_legacy:
                        got = _filter_legacy(b, buf, path, tracker, self.omap, self.upper, retain_legacy_deletes, st)
                    else:
                        got = _filter_batch(b, buf, path, tracker, self.ctypes.get(b.base_offset), self.omap,
                                            self.producers, self.upper, self.now, self.opts, st)
                    if got is None:
                        out.changed = True
                        chunk.after(0, out.appends)
                        continue
                    piece, max_offset = got
                    shallow = b.last_offset
                    if isinstance(piece, bytes):
                        out.changed = True
                        size = len(piece)
                        if b.is_legacy:  # a rebuilt wrapper: its offset is the last retained record's
                            rebuilt = LegacyEntry(piece, 0)
                            max_ts, shallow = rebuilt.timestamp, rebuilt.last_offset
                        else:
                            max_ts = Batch(piece, 0).max_timestamp
                        if sink is not None:
                            sink.write(piece)
                    else:
                        size = piece[2]
                        max_ts = b.max_timestamp
                        if sink is not None:
                            sink.write(buf[piece[1] : piece[1] + size])
                    out.size += size
                    st.bytes_after += size
                    chunk.retain(size, max_offset, max_ts, shallow)
                    chunk.after(size, out.appends)
            chunk.flush(out.appends)
            chunk.restore()
        out.txn_entries = tracker.cleaned_index


class _Chunk:
    """One ``cleanInto`` read (LogCleaner.scala:805-834 at 1eb7644): the batches that fit whole in the read buffer are
    filtered together and what survives is ONE ``LogSegment.append`` (largest offset, max timestamp and its shallow
    offset, as ``MemoryRecords.FilterResult`` sums them up). The read buffer grows for a batch larger than it
    (``growBuffersOrFail``: doubling, up to max.message.bytes or the batch) and is restored after each segment; a
    read also ends after the batch whose output overflows the write buffer (``filterTo``'s early return, KAFKA-5316).
    """

    def __init__(self, capacity: int, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 max_io_buffer: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self.initial = capacity
        self.capacity = capacity
        self.max_message = max_message_bytes  # the topic's max.message.bytes (maxLogMessageSize)
        self.max_io = max_io_buffer  # the broker's message.max.bytes (maxIoBufferSize)
        self.read = 0
        self.written = 0
        self.size = 0
        self.largest = -1
        self.max_ts = -1
        self.shallow = -1

    def before(self, batch_size: int, appends: list[tuple[int, int, int, int]]) -> None:
        if self.read and self.read + batch_size > self.capacity:
            self.flush(appends)
        if not self.read:
            while batch_size > self.capacity:
                # growBuffersOrFail then growBuffers (LogCleaner.scala:853-874, 944-952): up to max.message.bytes
                # while the buffer is below it, else up to the next batch; never beyond max(that, maxIoBufferSize)
                target = batch_size if self.capacity >= self.max_message else self.max_message
                self.capacity = min(self.capacity * 2, max(target, self.max_io))
        self.read += batch_size

    def retain(self, size: int, max_offset: int, max_ts: int, shallow: int) -> None:
        self.size += size
        self.largest = max(self.largest, max_offset)
        if max_ts > self.max_ts:
            self.max_ts, self.shallow = max_ts, shallow

    def after(self, written: int, appends: list[tuple[int, int, int, int]]) -> None:
        self.written += written
        if self.written > self.capacity:
            self.flush(appends)

    def flush(self, appends: list[tuple[int, int, int, int]]) -> None:
        if self.size:
            appends.append((self.size, self.largest, self.max_ts, self.shallow))
        self.read = self.written = self.size = 0
        self.largest = self.max_ts = self.shallow = -1

    def restore(self) -> None:
        self.capacity = self.initial


def _is_producer_last(b: Batch, producers: dict[int, pst.ProducerStateEntry]) -> bool:
    p = producers.get(b.producer_id)
    if p is None:
        return False
    if p.last_data_offset >= 0:
        return b.last_offset == p.last_data_offset
    return b.is_control and b.producer_epoch == p.epoch


def _filter_batch(b: Batch, buf: bytes | memoryview, path: str, tracker: TxnTracker, ctype: int | None,
                  omap: SkimpyOffsetMap, producers: dict[int, pst.ProducerStateEntry],
                  upper: int, now: int, opts: CompactOptions, st: SegmentStats) -> tuple[Piece, int] | None:
    """The cleaner's checkBatchRetention + shouldRetainRecord + filterTo for one batch: the output piece and the
    largest offset ``filterTo`` reports for it (the batch's last offset, or the last retained record's when the batch
    is rebuilt: MemoryRecords.java:188-216), or None."""
    st.batches_before += 1
    st.records_before += b.records_count
    if b.is_control:
        can_discard = tracker.on_control(b, ctype)
        discard_records = can_discard and b.delete_horizon_ms is not None and b.delete_horizon_ms <= now
    else:
        can_discard = tracker.on_batch(b)
        discard_records = can_discard
    if b.producer_id >= 0 and _is_producer_last(b, producers):
        retention = "RETAIN_EMPTY"
    elif b.next_offset == upper:  # errata E5 (KAFKA-17076): the batch ending the round stays, maybe empty
        retention = "RETAIN_EMPTY"
    elif discard_records:
        retention = "DELETE"
    else:
        retention = "DELETE_EMPTY"
    if retention == "DELETE":
        if b.is_control:
            st.markers_removed += 1
        else:
            st.aborted_records_removed += b.records_count
        return None
    records = list(b.iter_records(buf))
    retained: list[Record] = []
    write_original = True
    tombstones = False
    for r in records:
        if discard_records:
            keep = False
            if not b.is_control:
                st.aborted_records_removed += 1
        elif b.is_control:
            keep = True
        else:
            horizon = b.delete_horizon_ms
            keep = _should_retain_record(r, omap, horizon is None or now < horizon, st)
        if keep:
            retained.append(r)
            tombstones |= r.value is None
        else:
            write_original = False
    if retained:
        st.records_after += len(retained)
        st.batches_after += 1
        need_horizon = (tombstones or (can_discard and b.is_control)) and b.delete_horizon_ms is None
        if write_original and not need_horizon:
            return (path, b.position, b.size), b.last_offset
        horizon = now + opts.delete_retention_ms if need_horizon else b.delete_horizon_ms
        if need_horizon:
            st.horizons_set += 1
        st.batches_rewritten += 1
        return _rebuild(b, retained, horizon), max(r.offset for r in retained)
    if retention == "RETAIN_EMPTY":
        st.batches_after += 1
        empty = encode_batch(
            [], base_offset=b.base_offset, last_offset_delta=b.last_offset_delta, base_timestamp=-1,
            max_timestamp=b.max_timestamp, codec=codecs.NONE, timestamp_type=b.timestamp_type,
            transactional=b.is_transactional, control=b.is_control, producer_id=b.producer_id,
            producer_epoch=b.producer_epoch, base_sequence=b.base_sequence,
            partition_leader_epoch=b.partition_leader_epoch, records_count=0,
        )
        if empty == buf[b.position : b.position + b.size]:
            return (path, b.position, b.size), b.last_offset
        st.batches_emptied += 1
        return empty, b.last_offset
    if b.is_control:
        st.markers_removed += 1
    return None


def _should_retain_record(r: Record, omap: SkimpyOffsetMap, retain_deletes: bool, st: SegmentStats) -> bool:
    """The cleaner's shouldRetainRecord (LogCleaner.scala:914-937): past the map's end it stays; a keyless record
    goes; else it stays when it is its key's latest and has a value, or deletes are retained (v2: the batch's delete
    horizon is not set or not reached; v0/v1: the segment's legacy rule)."""
    if r.offset > omap.latest_offset:
        return True
    if r.key is None:
        st.keyless_removed += 1
        return False
    latest = r.offset >= omap.get(r.key)
    keep = latest and (r.value is not None or retain_deletes)
    if latest and not keep:
        st.tombstones_removed += 1
    elif not latest:
        st.superseded_removed += 1
    return keep


def _rebuild(b: Batch, retained: list[Record], horizon: int | None) -> bytes:
    """MemoryRecords.buildRetainedRecordsInto: same base offset, last offset, producer fields, epoch, codec,
    timestamp type; max timestamp recomputed (CreateTime) or kept (LogAppendTime)."""
    specs = [RecordSpec(key=r.key, value=r.value, headers=r.headers, timestamp=r.timestamp,
                        offset_delta=r.offset - b.base_offset, attributes=r.attributes) for r in retained]
    return encode_batch(
        specs, base_offset=b.base_offset, codec=b.codec, timestamp_type=b.timestamp_type,
        max_timestamp=b.max_timestamp if b.timestamp_type == LOG_APPEND_TIME else None,
        transactional=b.is_transactional, control=b.is_control, delete_horizon_ms=horizon,
        producer_id=b.producer_id, producer_epoch=b.producer_epoch, base_sequence=b.base_sequence,
        partition_leader_epoch=b.partition_leader_epoch, last_offset_delta=b.last_offset_delta, kafka_codec=True,
    )


class LegacyEmptyRefused(RepairRefused):
    """The entry ending the cleanable range is a v0/v1 message with nothing left to keep: Kafka's cleaner retains the
    batch ending a round even when empty, which only v2 can express, and fails there."""

    hint = ("nothing was changed; Kafka's own cleaner fails on this partition too (the broker logs the "
            "IllegalStateException and stops cleaning it); 'kafkalog dump --deep-iteration' shows the entry")


def legacy_delete_horizon(segments: list[ps.Segment], first_dirty: int, delete_retention_ms: int) -> int:
    """``doClean``'s legacyDeleteHorizonMs (LogCleaner.scala:596-603): the lastModified of the last segment below the
    first dirty offset (``logSegments(0, firstDirtyOffset)``) minus delete.retention.ms, 0 when there is none. A
    v0/v1 tombstone is removed only in a source segment last modified at or before it (``cleanSegments``,
    LogCleaner.scala:679); a kafkalog round starts at the log start, below which there is such a segment only
    when a DeleteRecords moved the log start into one."""
    below = [s for s in segments if s.base < first_dirty]
    if not below:
        return 0
    return below[-1].mtime_ns // 1_000_000 - delete_retention_ms


def _filter_legacy(e: LegacyEntry, buf: bytes | memoryview, path: str, tracker: TxnTracker, omap: SkimpyOffsetMap,
                   upper: int, retain_deletes: bool, st: SegmentStats) -> tuple[Piece, int] | None:
    """The cleaner's filter for one v0/v1 entry (a message, or a compressed wrapper of inner messages): no producer,
    no transaction, no delete horizon; a tombstone stays while ``retain_deletes`` (shouldRetainRecord,
    LogCleaner.scala:914-937). A message or wrapper whose records all stay is copied as it is; a wrapper of which only
    some stay is rebuilt (``_rebuild_legacy``); the entry ending the round with nothing left fails, as in Kafka
    (MemoryRecords.java:219-221). Returns the piece and the largest retained offset, or None."""
    tracker.on_legacy(e)
    st.batches_before += 1
    records = list(e.iter_records(buf))
    st.records_before += len(records)
    retained: list[Record] = []
    write_original = True
    for r in records:
        if _should_retain_record(r, omap, retain_deletes, st):
            retained.append(r)
            write_original &= r.magic == e.magic  # KAFKA-4298: an inner magic other than the wrapper's is rewritten
        else:
            write_original = False
    if retained:
        st.records_after += len(retained)
        st.batches_after += 1
        if write_original:
            return (path, e.position, e.size), e.last_offset
        st.batches_rewritten += 1
        return _rebuild_legacy(e, retained), retained[-1].offset
    if e.next_offset == upper:
        raise LegacyEmptyRefused(
            f"the entry ending the cleanable range (offset {e.last_offset}) is a v{e.magic} message with no record to "
            "keep; Kafka's cleaner keeps that entry even when empty, which only a v2 batch can be, and fails "
            "('Empty batches are only supported for magic v2 and above', MemoryRecords.java:221)",
            file=path, position=e.position, expected="a record to keep (a key)", found="none")
    return None


def _rebuild_legacy(e: LegacyEntry, retained: list[Record]) -> bytes:
    """MemoryRecords.buildRetainedRecordsInto for a v0/v1 wrapper (MemoryRecords.java:292-318) and the legacy path of
    MemoryRecordsBuilder (appendLegacyRecord, toInnerOffset, writeLegacyCompressedWrapperHeader, info;
    MemoryRecordsBuilder.java:435-450, 767-785): the wrapper's magic and codec; inner offsets relative to the first
    retained record for v1, absolute for v0; with LogAppendTime every inner message takes the wrapper's timestamp
    and the LogAppendTime attribute; the wrapper's offset is the last retained offset, its timestamp the largest
    inner one (CreateTime) or the original wrapper's (LogAppendTime)."""
    magic = e.magic
    log_append = magic > 0 and e.timestamp_type == LOG_APPEND_TIME
    ts_attr = ATTR_TIMESTAMP_TYPE if log_append else 0  # LegacyRecord.computeAttributes
    base = retained[0].offset
    stream = bytearray()
    max_ts = -1
    for r in retained:
        ts = e.timestamp if log_append else r.timestamp
        stream += encode_legacy_message(offset=r.offset - base if magic > 0 else r.offset, key=r.key, value=r.value,
                                        magic=magic, timestamp=ts, attributes=ts_attr)
        if magic > 0 and ts > max_ts:
            max_ts = ts
    payload = codecs.compress_kafka(e.codec, bytes(stream), magic=magic)
    return encode_legacy_message(offset=retained[-1].offset, key=None, value=payload, magic=magic,
                                 timestamp=e.timestamp if log_append else max_ts, attributes=e.codec | ts_attr)


# ------------------------------------------------------------------------------------------ execution
def plan_actions(plan: CompactPlan) -> list:
    """The file-level view of the plan, as ``repair_plan.FileAction`` values (what a dry run lists): exactly the steps
    ``--execute`` performs (``compaction_steps``)."""
    return repair_plan.actions(plan.partition_dir, compaction_steps(plan))


def compaction_steps(plan: CompactPlan, progress: Progress | None = None) -> list[repair_plan.Step]:
    """The plan as file steps, in commit order (``repair_plan``): per changed group its cleaned ``.log``, then the
    ``.index``/``.timeindex`` built from that staged ``.log``, its ``.txnindex``; then the deleted segment files and
    producer snapshots. The writers run in step order (``_GroupWriter``)."""
    writer = _GroupWriter(plan, progress or Progress())
    steps: list[repair_plan.Step] = [repair_plan.delete(name, early=True, detail="already scheduled for deletion; the "
                                                        "broker's loader deletes it") for name in plan.stray_deletes]
    for i, g in enumerate(plan.groups):
        if not g.changed:
            continue
        shown = "replace" if g.existed else "create"
        merged = f" (merges {', '.join(str(b) for b in g.bases)})" if len(g.bases) > 1 else ""
        split = " (part of a split segment)" if any(p.split for p in g.parts) else ""
        mtime = g.mtime_ns / 1e9
        steps.append(repair_plan.write(ps.seg_name(g.out_base, "log"), writer.log(i), mtime=mtime, shown=shown,
                                       size=g.size, detail=f"cleaned segment{merged}{split}"))
        for ext in ("index", "timeindex"):
            steps.append(repair_plan.write(ps.seg_name(g.out_base, ext), writer.index(i, ext), mtime=mtime,
                                           shown=shown, detail="built per append, as the cleaner does"))
        if g.txn_entries:
            steps.append(repair_plan.write(ps.seg_name(g.out_base, "txnindex"), encode_txn_index(g.txn_entries),
                                           shown="replace", size=34 * len(g.txn_entries),
                                           detail=f"{len(g.txn_entries)} aborted transaction(s)"))
        elif g.had_txnindex:
            steps.append(repair_plan.delete(ps.seg_name(g.out_base, "txnindex"), detail="no aborted transaction left"))
    steps += [repair_plan.delete(name, detail=why) for name, why in plan.file_deletes]
    steps += [repair_plan.delete(name, detail="its segment base no longer exists") for name in plan.snapshot_deletes]
    return steps


class _GroupWriter:
    """The writers of ``compaction_steps``: the groups are filtered again in plan order with a fresh round tracker
    (unchanged groups only advance it, changed ones stream into their staged ``.log``, which must come out exactly the
    size the plan computed); a group's indexes are built from its staged ``.log``."""

    def __init__(self, plan: CompactPlan, progress: Progress) -> None:
        self.plan = plan
        self.progress = progress
        self.tracker = TxnTracker()
        self.next_group = 0  # groups before this one went through the tracker
        self.cleaned: dict[int, OutputGroup] = {}  # a changed group as streamed, checked against the plan
        self.indexes: dict[int, dict[str, bytes]] = {}
        self.total_added = False

    def log(self, i: int) -> repair_plan.Writer:
        def write(f: BinaryIO) -> None:
            cleaner = self.plan.cleaner
            assert cleaner is not None
            if not self.total_added:
                last = max(j for j, g in enumerate(self.plan.groups) if g.changed)
                self.progress.add_total(sum(p.size for g in self.plan.groups[:last + 1] for p in g.parts))
                self.total_added = True
            for g in self.plan.groups[self.next_group:i]:  # unchanged: they only advance the round tracker
                cleaner.clean_group(g.parts, OutputGroup(list(g.bases), parts=g.parts), self.tracker,
                                    [SegmentStats(p.base) for p in g.parts], None)
                self.progress.advance(sum(p.size for p in g.parts))
            g = self.plan.groups[i]
            again = OutputGroup(list(g.bases), parts=g.parts)
            cleaner.clean_group(g.parts, again, self.tracker, [SegmentStats(p.base) for p in g.parts], f)
            self.next_group = i + 1
            self.cleaned[i] = again
        return write

    def index(self, i: int, ext: str) -> repair_plan.Writer:
        def write(f: BinaryIO) -> None:
            from kafkalog_cli.ops import safety

            g = self.plan.groups[i]
            if i not in self.indexes:
                staged = os.path.join(self.plan.partition_dir, safety.staging_name(ps.seg_name(g.out_base, "log")))
                again = self.cleaned.pop(i)
                if again.size != g.size or os.path.getsize(staged) != g.size or again.txn_entries != g.txn_entries:
                    raise CorruptRecordError(f"internal error: the cleaned group came out {again.size} bytes, the plan "
                                             f"said {g.size}", file=staged)
                index, timeindex = _indexes_of(staged, g.out_base, self.plan, again.appends)
                self.indexes[i] = {"index": index, "timeindex": timeindex}
            f.write(self.indexes[i].pop(ext))
            if not self.indexes[i]:
                del self.indexes[i]
                self.progress.advance(sum(p.size for p in g.parts))
        return write


def _indexes_of(staged: str, base: int, plan: CompactPlan, appends: list[tuple[int, int, int, int]]) -> tuple[bytes, bytes]:
    """The cleaned segment's indexes as the cleaner builds them: per ``LogSegment.append`` (one per retained read, see
    ``_Chunk``), an offset entry only once more than index.interval.bytes were appended since the last one, then the
    final time entry of ``onBecomeInactiveSegment`` (LogSegment.java:240-268, 677-680 at 1eb7644; errata E11). The
    staged ``.log`` is read back first (sizes, CRCs) and a small output is run through ``rebuild_index``'s recovery
    checks: our own output must never be one the broker's recovery truncates."""
    from kafkalog_cli.ops.rebuild_index import rebuild_segment

    size = 0
    with SegmentReader(staged) as r:
        for b in r.entries(validate=True):
            size += b.size
    if size != sum(a[0] for a in appends):
        raise CorruptRecordError(f"internal error: the cleaner's appends add up to {sum(a[0] for a in appends)} bytes, "
                                 f"the staged segment has {size}", file=staged)
    builder = AppendIndexBuilder(base, plan.index_interval_bytes, plan.segment_index_bytes, staged)
    for n, largest, max_ts, shallow in appends:
        builder.append(n, largest, max_ts, shallow)
    index, timeindex = builder.finish()
    if os.path.getsize(staged) <= CROSS_CHECK_BYTES:
        with MappedFile(staged) as mf:
            rb = rebuild_segment(mf.buf, base, plan.index_interval_bytes, segment_index_bytes=plan.segment_index_bytes)
        # a full index under the recovery rule is not a cut: Kafka's cleaner writes the same segment (its appends are
        # per source segment, LogSegment.append), only a later recovery of it fills the index first
        if rb.problem is not None and not rb.problem.message.endswith("index over capacity (segment.index.bytes)"):
            raise CorruptRecordError(f"compacted output failed validation: {rb.problem.describe()}", file=staged)
    return index, timeindex


def plan_repair(partition_dir: str, opts: CompactOptions, progress: Progress | None = None) -> repair_plan.RepairPlan[CompactPlan]:
    """The repair plan: the cleaner's findings (``plan_compaction``) and their steps (``compaction_steps``)."""
    report = plan_compaction(partition_dir, opts, progress)
    return repair_plan.RepairPlan(partition_dir, report, lambda: compaction_steps(report, progress))


def run(partition_dir: str, opts: CompactOptions, *, execute: bool = False, backup_dir: str | None = None,
        keep_backup: bool = True, progress: Progress | None = None) -> tuple[CompactPlan, list[str], str | None]:
    """The whole command: (plan, lines of recovered interrupted work, backup dir if written). With
    ``opts.recover_first`` the broker's start-up recovery of a crash-shutdown partition comes first
    (``load_first``)."""
    from kafkalog_cli.broker.loader import TopicConfig

    cfg = TopicConfig(opts.index_interval_bytes, opts.segment_index_bytes, opts.producer_id_expiration_ms)
    loaded = load_first(partition_dir, cfg, opts.now_ms, execute=execute, backup_dir=backup_dir,
                        keep_backup=keep_backup) if opts.recover_first else NOTHING
    names, load_backup = loaded.names, loaded.backup_dir
    if names and loaded.log_end_snapshot:
        # the snapshot that load wrote at the log end is the broker's producer state after its load (expired
        # producers of the old snapshot already dropped by loadFromSnapshot, the log after it replayed): Kafka's
        # cleaner runs on that state in the same start, with no second reload to expire producers again
        opts = replace(opts, producer_id_expiration_ms=NEVER_EXPIRES)
    if names and not execute:
        # the dry run plans on a copy of the loaded partition (ops/load_first.loaded_copy): what --execute compacts
        planned = dry_run_after_load(partition_dir, loaded, cfg, opts.now_ms, lambda sim: plan_repair(sim, opts, progress))
        if planned is not None:
            return planned, [], None
    try:
        o = repair_plan.drive(partition_dir, lambda: plan_repair(partition_dir, opts, progress), execute=execute,
                              backup_dir=backup_dir, keep_backup=keep_backup)
    except KafkalogError as exc:
        if names and execute:
            raise refused_after_load(exc, loaded) from None
        if names and not execute and isinstance(exc, RepairRefused):
            again = RepairRefused(f"{exc.message}; the broker's start-up finishes it first, and so does --execute (as "
                                  "'kafkalog recover --execute')", file=exc.file, expected=exc.expected,
                                  found=exc.found)
            again.hint = exc.hint  # the cause's own next step stands
            raise again from exc
        raise
    plan = o.report
    if names:
        plan.load_first = names
        plan.notes.insert(0, load_note(loaded, execute))
    return plan, o.recovered, o.backup_dir or load_backup
