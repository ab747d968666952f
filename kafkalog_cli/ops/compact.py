"""``compact``: one round of the broker's LogCleaner over a partition directory, offline (spec §9, errata E1, E5,
E6, E11, E13, E17).

Why it is built this way:

* The rules are the cleaner's, decision for decision (offset map, record retention, batch retention with
  transaction tracking, RETAIN_EMPTY for producers' last batches and for the batch ending the round, delete
  horizons), so that what the broker does with the result next is exactly what it would do after its own clean.
* Aborted transactions come from the ``.txnindex`` files, as in the broker, but first the log is replayed and the
  indexes are cross-checked against it: compaction with a missing or wrong entry destroys committed data for good
  (errata E1), so such a partition is refused, never "cleaned".
* Offsets never change; retained batches are copied byte for byte when nothing in them changes, and re-encoded
  keeping every header field the cleaner keeps otherwise.
* The plan is computed without writing anything; ``execute`` writes through ``safety.Transaction``.

Differences from the broker, all on the safe side: the offset map is exact (keys, not MD5 digests) and never
fills, so one round covers the whole cleanable range; the first dirty offset is the log start (a full clean gives
the same survivors as a clean from the checkpoint); producers never expire; index entries of the new segments follow
the recovery rule (spec §6.5) rather than the cleaner's per-chunk entries (E11) — both are valid for lookups.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import BinaryIO

from kafkalog_cli.errors import CheckpointError, CorruptRecordError, RepairRefused, UnreadableFileError
from kafkalog_cli.format import codecs
from kafkalog_cli.format.batch import LOG_APPEND_TIME, Batch, Record
from kafkalog_cli.format.control import ABORT, COMMIT
from kafkalog_cli.format.encoder import RecordSpec, encode_batch
from kafkalog_cli.ops import partition_scan as ps
from kafkalog_cli.storage import layout
from kafkalog_cli.storage.companions import AbortedTxn, encode_txn_index, parse_checkpoint
from kafkalog_cli.storage.segment import MappedFile

DEFAULT_DELETE_RETENTION_MS = 86_400_000
DEFAULT_SEGMENT_BYTES = 1 << 30
DEFAULT_SEGMENT_INDEX_BYTES = 10 * 1024 * 1024
INT_MAX = 2**31 - 1


@dataclass
class CompactOptions:
    delete_retention_ms: int = DEFAULT_DELETE_RETENTION_MS
    min_compaction_lag_ms: int = 0
    now_ms: int | None = None
    include_active: bool = False
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES
    index_interval_bytes: int = 4096


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


# A piece of an output log: a byte range copied from a source segment, or new bytes.
Piece = tuple[str, int, int] | bytes


@dataclass
class OutputGroup:
    """Source segments merged into one cleaned segment named after the first (spec §9.5)."""

    bases: list[int]
    pieces: list[Piece] = field(default_factory=list)
    txn_entries: list[AbortedTxn] = field(default_factory=list)
    size: int = 0
    changed: bool = False
    mtime_ns: int = 0
    had_txnindex: bool = False

    @property
    def out_base(self) -> int:
        return self.bases[0]

    def write_log(self, f: BinaryIO) -> None:
        """Stream the new ``.log``: copied ranges straight from the source files, new batches from memory."""
        handles: dict[str, BinaryIO] = {}
        try:
            for p in self.pieces:
                if isinstance(p, bytes):
                    f.write(p)
                    continue
                path, pos, size = p
                src = handles.get(path)
                if src is None:
                    src = handles[path] = open(path, "rb")  # noqa: SIM115 - closed in finally
                src.seek(pos)
                data = src.read(size)
                if len(data) != size:
                    raise UnreadableFileError("source segment shrank while being compacted", file=path, position=pos)
                f.write(data)
        finally:
            for h in handles.values():
                h.close()


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
    notes: list[str] = field(default_factory=list)
    index_interval_bytes: int = 4096

    @property
    def changed_groups(self) -> list[OutputGroup]:
        return [g for g in self.groups if g.changed]

    @property
    def has_changes(self) -> bool:
        return bool(self.changed_groups)

    def totals(self) -> dict[str, int]:
        keys = ("records_before", "records_after", "bytes_before", "bytes_after", "batches_before", "batches_after")
        return {k: sum(getattr(s, k) for s in self.stats) for k in keys}

    def to_dict(self) -> dict:
        return {
            "partition_dir": self.partition_dir,
            "now_ms": self.now_ms,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "last_stable_offset": self.last_stable_offset,
            "first_uncleanable_offset": self.first_uncleanable_offset,
            "segments": [asdict(s) for s in self.stats],
            "groups": [
                {"bases": g.bases, "output": ps.seg_name(g.out_base, "log"), "size": g.size, "changed": g.changed,
                 "aborted_txns_indexed": len(g.txn_entries)}
                for g in self.groups
            ],
            "snapshot_deletes": self.snapshot_deletes,
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
def _high_watermark(partition_dir: str) -> tuple[int | None, str]:
    """The partition's entry in ``replication-offset-checkpoint`` (the cleaner never goes past the HW), or
    ``(None, why)`` when it is unknown.

    Only a missing/unreadable file (OSError) or one the broker itself would refuse (CheckpointError, non-UTF-8,
    a non-numeric offset) counts as unknown; any other exception is a bug and must surface, not silently drop the
    cap. The caller says so in the plan.
    """
    from kafkalog_cli.ops import safety

    path = os.path.join(safety.log_dir_of(partition_dir), "replication-offset-checkpoint")
    topic, _, part = os.path.basename(os.path.realpath(partition_dir)).rpartition("-")
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None, f"{path} does not exist"
    except OSError as exc:
        return None, f"{path} is unreadable ({exc.strerror or exc})"
    try:
        cp = parse_checkpoint(raw.decode("utf-8"), path, columns=3)
    except UnicodeDecodeError:
        return None, f"{path} is not UTF-8 text (the broker would refuse it)"
    except CheckpointError as exc:
        return None, f"{path} is malformed ({exc.describe()})"
    found: str | None = None
    for t, p, off in cp.entries:
        if t == topic and p == part:
            found = off  # the broker reads the file into a map: the last entry wins
    if found is None:
        return None, f"{path} has no entry for {topic}-{part}"
    try:
        return int(found), ""
    except ValueError:
        return None, f"{path} has a non-numeric offset {found!r} for {topic}-{part}"


def _check_txn_indexes(segments: list[ps.Segment], facts: ps.LogFacts, log_start: int,
                       ranges: list[tuple[int, int]]) -> None:
    """Errata E1: every aborted transaction the log proves must be in the ``.txnindex`` files the cleaner reads,
    and every entry there must describe an ABORT the log holds. Otherwise refuse: compaction would delete committed
    data (or keep aborted data) for good.

    ``ranges`` are exactly the (start, upper) searches the planner then makes: the offset map's, and one per source
    segment as ``cleanSegments`` makes them. An entry whose lastStableOffset exceeds lastOffset + 1 cannot have been
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
                "early and hide later aborted transactions (errata E1)",
                file=s.path("txnindex"), expected=f"lastStableOffset <= {e.last_offset + 1}",
                found=str(e.last_stable_offset),
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
            )
        earlier = [o for o in markers_by_pid.get(e.producer_id, []) if o < e.last_offset]
        if earlier and earlier[-1] >= e.first_offset:
            raise RepairRefused(
                f".txnindex entry of producer {e.producer_id} starts at {e.first_offset}, before that producer's "
                f"previous marker at {earlier[-1]}; compaction would delete a committed transaction",
                file=s.path("txnindex"), expected=f"first offset > {earlier[-1]}", found=str(e.first_offset),
            )
    # what the cleaner will learn, range by range, with its own early-stopping search
    for start, end in ranges:
        known = {(e.producer_id, e.last_offset): e for e in ps.collect_aborted(segments, start, end)}
        for t in facts.txns:
            if not t.aborted or not (t.first_offset < end and t.marker_offset >= start):
                continue
            if t.records == 0:
                # only empty batches are left of it (a cleaner kept them for producer state after removing the data,
                # and dropped the index entry when the marker fell into a later group): no key can be taken for
                # committed, so a missing entry loses nothing
                continue
            e = known.get((t.producer_id, t.marker_offset))
            if e is None or e.first_offset > t.first_offset:
                marker_seg = max((s for s in segments if s.base <= t.marker_offset), key=lambda s: s.base)
                raise RepairRefused(
                    f"the log holds an aborted transaction of producer {t.producer_id} (offsets {t.first_offset}.."
                    f"{t.marker_offset}) that the .txnindex files do not record (or an earlier entry's lastStableOffset "
                    "hides it); the cleaner would treat its data as committed and delete older values for good",
                    file=marker_seg.path("txnindex"),
                    expected=f"entry producer {t.producer_id} first<={t.first_offset} last={t.marker_offset}",
                    found="missing" if e is None else f"first offset {e.first_offset}",
                )


def _segment_ranges(group: list[ps.Segment], headers: dict[int, list[Batch]]) -> list[tuple[int, int]]:
    """``cleanSegments``' bounds per source segment: [base, next segment of the group's base), the last one up to
    its own ``readNextOffset`` (the offset after its last batch; its base when empty)."""
    out = []
    for i, s in enumerate(group):
        if i + 1 < len(group):
            out.append((s.base, group[i + 1].base))
        else:
            hs = headers[s.base]
            out.append((s.base, hs[-1].next_offset if hs else s.base))
    return out


def _group_segments(segs: list[ps.Segment], upper: int, opts: CompactOptions) -> list[list[ps.Segment]]:
    """LogCleaner.groupSegmentsBySize (spec §9.5, errata E13)."""
    groups: list[list[ps.Segment]] = []
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


def _largest_timestamp(seg: ps.Segment, batches: list[Batch]) -> int:
    ts = max((b.max_timestamp for b in batches), default=-1)
    return ts if ts >= 0 else seg.mtime_ns // 1_000_000  # errata E14/E17: the .log mtime stands in


def plan_compaction(partition_dir: str, opts: CompactOptions | None = None) -> CompactPlan:
    """Compute everything ``compact`` would write, without writing. Raises RepairRefused when it must not run."""
    opts = opts or CompactOptions()
    pdir = os.path.abspath(partition_dir)
    if not os.path.isdir(pdir):
        raise UnreadableFileError("not a directory", file=pdir, expected="a partition directory", found="no such directory")
    left = ps.leftovers(pdir)
    if left:
        raise RepairRefused(
            "an unfinished clean, split or delete is in the partition directory",
            file=pdir, expected="no .cleaned/.swap/.deleted files", found=", ".join(left[:5]),
        )
    segments = ps.list_segments(pdir)
    if not segments:
        raise layout.no_segment(pdir)
    now = opts.now_ms if opts.now_ms is not None else int(time.time() * 1000)

    # pass 1: validate every batch, replay producers and transactions, collect headers
    headers: dict[int, list[Batch]] = {}
    ctypes: dict[int, int | None] = {}
    replay_items: list[tuple[Batch, int | None]] = []
    for seg, mf, batches in ps.iter_segment_batches(segments):
        headers[seg.base] = batches
        for b in batches:
            ct = ps.control_type(b, mf.buf) if b.is_control else None
            if b.is_control:
                ctypes[b.base_offset] = ct
            replay_items.append((b, ct))
    leo = segments[-1].base
    for seg in reversed(segments):
        if headers[seg.base]:
            leo = max(leo, headers[seg.base][-1].next_offset)
            break
    facts = ps.replay_log(replay_items, leo)
    log_start = segments[0].base

    lso = min(facts.open_txns.values(), default=leo)
    cap = lso
    notes: list[str] = []
    hw, hw_unknown = _high_watermark(pdir)
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
        for s in segments:
            if s.base >= cap:
                break
            if _largest_timestamp(s, headers[s.base]) > now - opts.min_compaction_lag_ms:
                cap = s.base
                notes.append(f"segment {s.base} is younger than min.compaction.lag.ms; cleaning stops before it")
                break
    if cap < leo:
        cap = max((s.base for s in segments if s.base <= cap), default=log_start)
    upper = max(cap, log_start)
    if lso < leo:
        notes.append(f"open transaction(s) hold the last stable offset at {lso}: nothing at or after it is cleaned")

    plan = CompactPlan(pdir, now, log_start, leo, lso, upper, notes=notes,
                       index_interval_bytes=opts.index_interval_bytes)
    clean_segs = [s for s in segments if s.base < upper]
    if not clean_segs:
        plan.notes.append("nothing is cleanable (only the active segment, or everything is above the last stable offset)")
        return plan

    # the broker's searches of the .txnindex files: one for the offset map, one per source segment (cleanSegments
    # collects each segment's aborted transactions with that segment's own bounds, not the group's)
    groups = _group_segments(clean_segs, upper, opts)
    seg_ranges = {s.base: r for g in groups for s, r in zip(g, _segment_ranges(g, headers))}
    _check_txn_indexes(segments, facts, log_start, [(log_start, upper), *seg_ranges.values()])

    # producers' last batches, as the broker's producer state has them (newest snapshot, then the log after it)
    last_batches = _active_producers(pdir, replay_items, leo, facts)

    # pass 2: the offset map over [log start, upper)
    offset_map: dict[bytes, int] = {}
    tracker = TxnTracker(ps.collect_aborted(segments, log_start, upper))
    for seg in clean_segs:
        with MappedFile(seg.path("log")) as mf:
            for b in headers[seg.base]:
                if b.is_control:
                    tracker.on_control(b, ctypes.get(b.base_offset))
                    continue
                if tracker.on_batch(b):
                    continue
                for r in b.iter_records(mf.buf):
                    if r.key is not None:
                        offset_map[r.key] = r.offset
    latest_offset = upper - 1

    # pass 3: group and filter
    for group in groups:
        last = group[-1]
        out = OutputGroup([s.base for s in group], mtime_ns=last.mtime_ns, had_txnindex=group[0].has_txnindex)
        tracker = TxnTracker()
        for seg in group:
            tracker.add(ps.collect_aborted(segments, *seg_ranges[seg.base]))
            st = SegmentStats(seg.base, bytes_before=seg.size)
            plan.stats.append(st)
            with MappedFile(seg.path("log")) as mf:
                for b in headers[seg.base]:
                    piece = _filter_batch(b, mf.buf, seg.path("log"), tracker, ctypes.get(b.base_offset), offset_map,
                                          latest_offset, last_batches, upper, now, opts, st)
                    if piece is None:
                        out.changed = True
                        continue
                    size = piece[2] if isinstance(piece, tuple) else len(piece)
                    if isinstance(piece, bytes):
                        out.changed = True
                    out.pieces.append(piece)
                    out.size += size
                    st.bytes_after += size
        out.txn_entries = tracker.cleaned_index
        if len(group) > 1:
            out.changed = True
        plan.groups.append(out)

    # errata E13: snapshots at the bases of merged-away segments go (but never the newest one)
    snaps = sorted(n for n in os.listdir(pdir) if n.endswith(".snapshot"))
    newest = snaps[-1] if snaps else None
    for g in plan.changed_groups:
        for base in g.bases[1:]:
            name = ps.seg_name(base, "snapshot")
            if name in snaps and name != newest:
                plan.snapshot_deletes.append(name)
    plan.notes.append(
        "cleaner-offset-checkpoint is left unchanged: the broker re-reads the cleaned range on its next clean and "
        "finds nothing more to remove (same survivors), it only costs one extra pass"
    )
    return plan


def _active_producers(pdir: str, items: list[tuple[Batch, int | None]], leo: int,
                      facts: ps.LogFacts) -> dict[int, ps.ProducerState]:
    snap = ps.newest_snapshot(pdir, at_most=leo)
    if snap is None:
        return facts.producers
    off, entries = snap
    state = {e.producer_id: ps.ProducerState(e.producer_id, e.producer_epoch, e.last_offset, e.current_txn_first_offset)
             for e in entries}
    for b, ct in items:
        if b.base_offset >= off:
            ps.replay_batch(state, b, ct)
    return state


def _is_producer_last(b: Batch, producers: dict[int, ps.ProducerState]) -> bool:
    p = producers.get(b.producer_id)
    if p is None:
        return False
    if p.last_data_offset >= 0:
        return b.last_offset == p.last_data_offset
    return b.is_control and b.producer_epoch == p.epoch


def _filter_batch(b: Batch, buf: bytes | memoryview, path: str, tracker: TxnTracker, ctype: int | None,
                  offset_map: dict[bytes, int], latest_offset: int, producers: dict[int, ps.ProducerState],
                  upper: int, now: int, opts: CompactOptions, st: SegmentStats) -> Piece | None:
    """The cleaner's checkBatchRetention + shouldRetainRecord + filterTo for one batch: the output piece or None."""
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
        elif r.offset > latest_offset:
            keep = True
        elif r.key is None:
            keep = False
            st.keyless_removed += 1
        else:
            latest = r.offset >= offset_map.get(r.key, -1)
            horizon = b.delete_horizon_ms
            keep = latest and (r.value is not None or horizon is None or now < horizon)
            if latest and not keep:
                st.tombstones_removed += 1
        if keep:
            retained.append(r)
            tombstones |= r.value is None
        else:
            write_original = False
    original = bytes(buf[b.position : b.position + b.size])
    if retained:
        st.records_after += len(retained)
        st.batches_after += 1
        need_horizon = (tombstones or (can_discard and b.is_control)) and b.delete_horizon_ms is None
        if write_original and not need_horizon:
            return (path, b.position, b.size)
        horizon = now + opts.delete_retention_ms if need_horizon else b.delete_horizon_ms
        if need_horizon:
            st.horizons_set += 1
        st.batches_rewritten += 1
        return _rebuild(b, retained, horizon)
    if retention == "RETAIN_EMPTY":
        st.batches_after += 1
        empty = encode_batch(
            [], base_offset=b.base_offset, last_offset_delta=b.last_offset_delta, base_timestamp=-1,
            max_timestamp=b.max_timestamp, codec=codecs.NONE, timestamp_type=b.timestamp_type,
            transactional=b.is_transactional, control=b.is_control, producer_id=b.producer_id,
            producer_epoch=b.producer_epoch, base_sequence=b.base_sequence,
            partition_leader_epoch=b.partition_leader_epoch, records_count=0,
        )
        if empty == original:
            return (path, b.position, b.size)
        st.batches_emptied += 1
        return empty
    if b.is_control:
        st.markers_removed += 1
    return None


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
        partition_leader_epoch=b.partition_leader_epoch, last_offset_delta=b.last_offset_delta,
    )


# ------------------------------------------------------------------------------------------ execution
def plan_actions(plan: CompactPlan) -> list:
    """The file-level view of the plan, as ``safety.FileAction`` values (what a dry run lists)."""
    from kafkalog_cli.ops import safety

    acts = []
    for g in plan.changed_groups:
        name = ps.seg_name(g.out_base, "log")
        merged = f" (merges {', '.join(str(b) for b in g.bases)})" if len(g.bases) > 1 else ""
        acts.append(safety.FileAction("replace", os.path.join(plan.partition_dir, name), g.size,
                                      f"cleaned segment{merged}"))
        for ext in ("index", "timeindex"):
            acts.append(safety.FileAction("replace", os.path.join(plan.partition_dir, ps.seg_name(g.out_base, ext)),
                                          0, "rebuilt by the recovery rule"))
        if g.txn_entries:
            acts.append(safety.FileAction("replace", os.path.join(plan.partition_dir, ps.seg_name(g.out_base, "txnindex")),
                                          34 * len(g.txn_entries), f"{len(g.txn_entries)} aborted transaction(s)"))
        elif g.had_txnindex:
            acts.append(safety.FileAction("delete", os.path.join(plan.partition_dir, ps.seg_name(g.out_base, "txnindex")),
                                          detail="no aborted transaction left"))
        for base in g.bases[1:]:
            for ext in ("log", "index", "timeindex", "txnindex"):
                p = os.path.join(plan.partition_dir, ps.seg_name(base, ext))
                if os.path.exists(p):
                    acts.append(safety.FileAction("delete", p, detail=f"merged into {ps.seg_name(g.out_base, 'log')}"))
    for name in plan.snapshot_deletes:
        acts.append(safety.FileAction("delete", os.path.join(plan.partition_dir, name),
                                      detail="its segment base no longer exists (errata E13)"))
    return acts


def execute_compaction(plan: CompactPlan, backup_dir: str | None, keep_backup: bool = True,
                       on_staged: Callable[[], None] | None = None) -> str:
    """Write the plan through ``safety.Transaction``; return the backup directory."""
    from kafkalog_cli.ops import safety
    from kafkalog_cli.ops.rebuild_index import rebuild_segment

    pdir = plan.partition_dir
    with safety.Transaction(pdir, backup_dir, keep_backup=keep_backup) as tx:
        for g in plan.changed_groups:
            log_name = ps.seg_name(g.out_base, "log")
            mtime = g.mtime_ns / 1e9
            tx.stage(log_name, g.write_log, mtime=mtime)
            staged = os.path.join(pdir, log_name + safety.BUILD_SUFFIX)
            with MappedFile(staged) as mf:
                rb = rebuild_segment(mf.buf, g.out_base, plan.index_interval_bytes)
            if rb.problem is not None:  # our own output must pass the broker's recovery checks
                raise CorruptRecordError(f"compacted output failed validation: {rb.problem.describe()}", file=staged)
            tx.stage(ps.seg_name(g.out_base, "index"), rb.index, mtime=mtime)
            tx.stage(ps.seg_name(g.out_base, "timeindex"), rb.timeindex, mtime=mtime)
            if g.txn_entries:
                tx.stage(ps.seg_name(g.out_base, "txnindex"), encode_txn_index(g.txn_entries))
            elif g.had_txnindex:
                tx.delete(ps.seg_name(g.out_base, "txnindex"))
            for base in g.bases[1:]:
                for ext in ("log", "index", "timeindex", "txnindex"):
                    if os.path.exists(os.path.join(pdir, ps.seg_name(base, ext))):
                        tx.delete(ps.seg_name(base, ext))
        for name in plan.snapshot_deletes:
            tx.delete(name)
        if on_staged is not None:
            on_staged()
        tx.commit()
        return tx.backup_dir


def run(partition_dir: str, opts: CompactOptions, *, execute: bool = False, backup_dir: str | None = None,
        keep_backup: bool = True) -> tuple[CompactPlan, list[str], str | None]:
    """The whole command: (plan, lines of recovered interrupted work, backup dir if written)."""
    from kafkalog_cli.ops import safety

    recovered: list[str] = []
    if not execute:
        plan = plan_compaction(partition_dir, opts)
        plan.notes += safety.log_dir_warnings(partition_dir)
        return plan, recovered, None
    written = None
    with safety.locked_log_dir(partition_dir):
        recovered = safety.recover_interrupted(partition_dir)
        plan = plan_compaction(partition_dir, opts)
        plan.notes += safety.log_dir_warnings(partition_dir)
        if plan.has_changes:
            written = execute_compaction(plan, safety.backup_subdir(backup_dir, partition_dir), keep_backup)
    return plan, recovered, written
