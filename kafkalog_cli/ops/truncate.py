"""``truncate-to-epoch``: cut a partition back to the end of a leader epoch, as a follower's ``truncateTo`` does
(spec §10.1, §10.2, errata E7, E9), offline.

Why it is built this way:

* The target comes from the leader-epoch cache's own ``endOffsetFor`` (same branches as the broker), so the cut is
  the one a follower would make; ``--to-offset`` skips the lookup.
* The whole batch holding the target goes, so the plan names the new log end offset and every offset lost, per
  segment, before anything is written. The rest follows Kafka 4.0's ``UnifiedLog.truncateTo`` as run (issue 26,
  tests/test_oracle_truncate.py): leader epochs, producer snapshot and index entries are cut at the target itself,
  also inside a batch; the time index keeps only what ``LogSegment.truncateTo`` and ``close`` leave; ``.deleted``
  leftovers are deleted first, as the loader deletes them; ``now_ms`` expires idle producers of the reloaded snapshot.
* Files are changed through ``safety.Transaction`` (later segments removed into the backup, the cut segment and
  its indexes rewritten, ``leader-epoch-checkpoint`` rewritten), so a crash leaves the old or the new state.
* Producer snapshots are deleted and written as the broker's own truncation does (``_plan_snapshots``): the
  snapshot at the new log end offset holds the kept log's producer state, staged with the cut segment, so a broker
  starting with ``.kafka_cleanshutdown`` loads it and the marker stays. Only when the kept log cannot be replayed is
  no snapshot written; then, if no snapshot <= the new end would remain, the marker is removed as part of the
  transaction (backed up first, removed as the commit starts, put back by a rollback; its backup survives
  ``--no-backup``) so that the broker replays producer state from the log (spec §7.2 danger).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from kafkalog_cli.broker import loader as ld
from kafkalog_cli.broker import producer_state_manager as pst
from kafkalog_cli.broker import repair_view as ps
from kafkalog_cli.broker.checkpoints import LOG_START_FILE, read_offset_checkpoint
from kafkalog_cli.broker.leader_epoch_cache import end_offset_for, truncate_from_end
from kafkalog_cli.errors import KafkalogError, RepairRefused
from kafkalog_cli.format.batch import Batch
from kafkalog_cli.ops import repair_plan
from kafkalog_cli.ops.load_first import NOTHING, dry_run_after_load, load_first, load_note, refused_after_load
from kafkalog_cli.storage import layout
from kafkalog_cli.storage.companions import (
    SEGMENT_NAME,
    encode_leader_epoch_checkpoint,
    encode_txn_index,
    parse_leader_epoch_checkpoint,
    read_checkpoint_text,
)
from kafkalog_cli.storage.index import (
    WARM_BYTES,
    OffsetIndex,
    TimeIndex,
    encode_offset_index,
    encode_time_index,
    largest_lower_bound,
)
from kafkalog_cli.storage.paths import live_partition, require_directory
from kafkalog_cli.storage.segment import MappedFile, entries

CHECKPOINT = "leader-epoch-checkpoint"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"


@dataclass
class LostRange:
    segment: str
    first_offset: int
    last_offset: int
    records: int
    batches: int
    bytes: int
    whole_segment: bool


@dataclass
class SnapshotWrite:
    """A producer snapshot the broker's truncation writes (``ProducerStateManager.takeSnapshot``)."""

    name: str
    offset: int
    producers: int
    data: bytes = field(repr=False)


@dataclass
class TruncatePlan:
    partition_dir: str
    requested_epoch: int | None
    target_offset: int
    old_log_end_offset: int
    new_log_end_offset: int
    cut_segment: int | None = None
    cut_position: int = 0
    lost: list[LostRange] = field(default_factory=list)
    deleted_segments: list[int] = field(default_factory=list)
    checkpoint_before: list[tuple[int, int]] = field(default_factory=list)
    checkpoint_after: list[tuple[int, int]] = field(default_factory=list)
    snapshot_deletes: list[str] = field(default_factory=list)
    snapshot_writes: list[SnapshotWrite] = field(default_factory=list)
    remove_clean_shutdown: bool = False
    stray_deletes: list[str] = field(default_factory=list)  # .deleted leftovers, deleted first as the loader does
    notes: list[str] = field(default_factory=list)
    #: the files the broker's start-up changes first (a crash-shutdown partition's recovery; ops/load_first.py)
    load_first: list[str] = field(default_factory=list)
    #: the segments that start-up recovered (LogSegment.recover): their max timestamp is known to the truncation
    recovered_segments: list[int] = field(default_factory=list)
    #: that start-up's producer-state rebuild replayed the log after an older snapshot (LoaderPlan.
    #: log_end_state_replayed): the broker's live state is the log-end snapshot it wrote, with no expiry applied again
    state_replayed: bool = False
    #: the new entry of the log dir's log-start-offset-checkpoint: a target below the log start lowers it
    log_start_rewrite: int | None = None

    @property
    def has_changes(self) -> bool:
        return (bool(self.lost) or self.checkpoint_after != self.checkpoint_before or bool(self.snapshot_deletes)
                or bool(self.snapshot_writes) or bool(self.stray_deletes) or bool(self.load_first)
                or self.log_start_rewrite is not None)

    def to_dict(self) -> dict:
        d = asdict(self)
        for w in d["snapshot_writes"]:
            w.pop("data")
        d["has_changes"] = self.has_changes
        return d


def _read_cache(pdir: str) -> list[tuple[int, int]] | None:
    path = os.path.join(pdir, CHECKPOINT)
    if not os.path.isfile(path):
        return None
    return parse_leader_epoch_checkpoint(read_checkpoint_text(path), path)


def _headers(path: str) -> list:
    """Shallow entries of a segment without CRC checks: truncation removes them, it never interprets them."""
    with MappedFile(path) as mf:
        out = []
        for e in entries(mf.buf, file=path):
            count = e.records_count if isinstance(e, Batch) else len(list(e.iter_records(mf.buf)))
            out.append((e.position, e.size, e.base_offset, e.last_offset, count, getattr(e, "producer_id", -1)))
        return out


def plan_truncation(partition_dir: str, epoch: int | None = None, to_offset: int | None = None, *,
                    now_ms: int | None = None,
                    producer_id_expiration_ms: int = pst.DEFAULT_PRODUCER_ID_EXPIRATION_MS,
                    recovered_segments: list[int] | None = None, state_replayed: bool = False) -> TruncatePlan:
    """What ``UnifiedLog.truncateTo`` (UnifiedLog.scala:1827-1862) does to this partition when it truncates to the end
    offset of ``epoch`` (or to ``to_offset``), as data: each step is a function named after the broker's.
    ``recovered_segments``: the segments the same start-up recovered before the truncation (``--recover-first``);
    ``state_replayed``: that start-up's producer state was replayed (``TruncatePlan.state_replayed``)."""
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
    heads = {s.base: _headers(s.path("log")) for s in segments}
    leo = segments[-1].base
    for s in reversed(segments):
        if heads[s.base]:
            leo = max(leo, heads[s.base][-1][3] + 1)
            break
    cache = _read_cache(pdir)
    target = to_offset if to_offset is not None else _end_offset_for(pdir, cache, epoch, leo)
    plan = TruncatePlan(pdir, epoch, target, leo, leo, checkpoint_before=list(cache or []),
                        checkpoint_after=list(cache or []), stray_deletes=stray,
                        recovered_segments=sorted(recovered_segments or []), state_replayed=state_replayed)
    if stray:
        plan.notes.append(f"{len(stray)} file(s) already scheduled for deletion (.deleted) are deleted first, as the "
                          "broker's loader deletes them at start-up")
    if target >= leo:
        plan.notes.append(f"offset {target} is at or past the log end offset {leo}: no record is removed")
        plan.checkpoint_after = truncate_from_end(plan.checkpoint_before, leo)
        return plan
    log_start = segments[0].base
    if target < log_start:
        raise RepairRefused(
            f"offset {target} is below the first segment's base offset {log_start}: truncating would delete the "
            "whole log (the broker would start an empty segment there); refusing",
            file=pdir, expected=f"offset >= {log_start}", found=str(target),
        )
    broker_start = _log_start(pdir, log_start)
    if target < broker_start:
        # UnifiedLog.truncateTo: logStartOffset = min(targetOffset, logStartOffset) (UnifiedLog.scala:1853), which the
        # broker's next checkpoint writes; left above the new log end, the next load would delete every segment
        # (LogLoader.java:425-434)
        plan.log_start_rewrite = target
        plan.notes.append(f"the target is below the log start offset {broker_start} ({LOG_START_FILE}): the entry "
                          f"is lowered to {target}, as the broker's truncation lowers its log start")
    seg = max((s for s in segments if s.base <= target), key=lambda s: s.base)
    cut = _truncate_segment(plan, seg, heads[seg.base], target)
    _delete_later_segments(plan, segments, seg, heads)
    _truncate_epochs_from_end(plan, target)
    _rebuild_producer_state(plan, pdir, segments, seg, heads, cut, target, now_ms, producer_id_expiration_ms)
    plan.notes.append(
        "recovery-point-offset-checkpoint and replication-offset-checkpoint are not rewritten: the broker clips both "
        f"to the new log end offset {plan.new_log_end_offset} when it loads the log"
    )
    open_after = _open_transactions(segments, seg, cut, pdir)
    if open_after:
        plan.notes.append(
            "transactions left without their marker by the cut (open until the coordinator writes it again, which "
            "holds the last stable offset): " + ", ".join(f"producer {p} from offset {o}" for p, o in open_after.items())
        )
    return plan


def _end_offset_for(pdir: str, cache: list[tuple[int, int]] | None, epoch: int | None, leo: int) -> int:
    """The truncation target of ``epoch``: ``LeaderEpochFileCache.endOffsetFor`` (LeaderEpochFileCache.java:286),
    as a follower asks its leader for; refused when the cache cannot answer."""
    if cache is None:
        raise RepairRefused("no leader-epoch-checkpoint in the partition directory", file=pdir,
                            expected=CHECKPOINT, found="missing")
    _e, target = end_offset_for(cache, epoch if epoch is not None else -1, leo)
    if target < 0:
        latest = cache[-1][0] if cache else "none"
        raise RepairRefused(
            f"the leader-epoch cache has no end offset for epoch {epoch} (latest epoch {latest}): it is above every "
            "cached epoch, negative, or the cache is empty",
            file=os.path.join(pdir, CHECKPOINT), expected="a cached epoch", found=str(epoch),
        )
    return target


def _truncate_segment(plan: TruncatePlan, seg: ps.Segment, hs: list, target: int) -> int:
    """``LogSegment.truncateTo`` (LogSegment.java:553-575) of the segment holding ``target``: ``translateOffset``
    finds the first batch *in file order* whose last offset is >= target and the log is cut at its position (with
    offsets that are not monotonic everything after that position goes too, even batches below the target).
    Sets the plan's cut, new log end offset and lost range; returns the cut position."""
    plan.cut_segment = seg.base
    idx = next((i for i, h in enumerate(hs) if h[3] >= target), len(hs))
    kept, gone = hs[:idx], hs[idx:]
    cut = gone[0][0] if gone else (kept[-1][0] + kept[-1][1] if kept else 0)
    plan.cut_position = cut
    new_leo = max([seg.base] + [h[3] + 1 for h in kept])
    plan.new_log_end_offset = new_leo
    if gone and gone[0][2] < target:
        plan.notes.append(
            f"offset {target} lies inside the batch {gone[0][2]}..{gone[0][3]}: the whole batch goes, so the segment "
            f"ends at offset {new_leo}; as the broker's truncateTo does, the leader epochs are truncated and the "
            f"producer snapshot is written at the target {target} itself (the broker's next start finds the log "
            f"ending at {new_leo} and deletes a snapshot above it)"
        )
    backwards, high = [], -1
    for i, h in enumerate(hs):
        if i >= idx and h[2] <= high:
            backwards.append(h)
        high = max(high, h[3])
    if backwards:
        plan.notes.append(
            f"offsets in {os.path.basename(seg.path('log'))} are not monotonic: {len(backwards)} batch(es) after the "
            "cut position go back below an earlier batch's offsets (" + ", ".join(f"{h[2]}..{h[3]}" for h in backwards[:5])
            + "); they are removed too, as the broker's cut at that position removes them"
        )
    if gone:
        plan.lost.append(LostRange(os.path.basename(seg.path("log")), min(h[2] for h in gone),
                                   max(h[3] for h in gone), sum(h[4] for h in gone), len(gone), seg.size - cut,
                                   cut == 0))
    return cut


def _delete_later_segments(plan: TruncatePlan, segments: list[ps.Segment], seg: ps.Segment, heads: dict) -> None:
    """``LocalLog.truncateTo`` (LocalLog.scala:552-558): every segment based above the target is deleted."""
    for s in segments:
        if s.base > seg.base:
            plan.deleted_segments.append(s.base)
            hs = heads[s.base]
            if hs:
                plan.lost.append(LostRange(os.path.basename(s.path("log")), min(h[2] for h in hs),
                                           max(h[3] for h in hs), sum(h[4] for h in hs), len(hs), s.size, True))


def _truncate_epochs_from_end(plan: TruncatePlan, target: int) -> None:
    """``leaderEpochCache.truncateFromEndAsyncFlush(targetOffset)`` in ``UnifiedLog.truncateTo``
    (UnifiedLog.scala:1852): the epochs starting at or after the target go from the leader-epoch checkpoint (the
    target itself, also when it lies inside a batch)."""
    plan.checkpoint_after = truncate_from_end(plan.checkpoint_before, target)
    removed = [e for e in plan.checkpoint_before if e not in plan.checkpoint_after]
    if removed:
        plan.notes.append("leader epochs removed from leader-epoch-checkpoint: "
                          + ", ".join(f"{e} (from {s})" for e, s in removed))


def _rebuild_producer_state(plan: TruncatePlan, pdir: str, segments: list[ps.Segment], seg: ps.Segment,
                            heads: dict, cut: int, target: int, now_ms: int | None, expiration_ms: int) -> None:
    """``deleteProducerSnapshots`` + ``rebuildProducerState(targetOffset)`` in ``UnifiedLog.truncateTo``
    (UnifiedLog.scala:1850-1855): the producer snapshots as the broker leaves them (``_plan_snapshots``; when the
    producer state cannot be replayed, ``_plan_snapshots_fallback``)."""
    marker = os.path.join(layout.log_dir_of(pdir), CLEAN_SHUTDOWN)
    try:
        _plan_snapshots(plan, pdir, segments, seg, cut, min(target, _log_start(pdir, segments[0].base)), target,
                        now_ms, expiration_ms)
    except KafkalogError as exc:
        _plan_snapshots_fallback(plan, pdir, segments, seg, heads, marker, exc)
    else:
        if os.path.exists(marker):
            plan.notes.append(
                f"{CLEAN_SHUTDOWN} is present and kept: the broker will load the newest producer snapshot at or "
                f"below {plan.new_log_end_offset} (written or kept here, as the broker's truncation leaves them)"
            )


def _log_start(pdir: str, first_base: int) -> int:
    """The broker's logStartOffset: ``log-start-offset-checkpoint`` (if it names this partition) or the first base."""
    cp, _src = read_offset_checkpoint(layout.log_dir_of(pdir), LOG_START_FILE, live_partition(pdir))
    return max(cp or 0, first_base)


def _plan_snapshots(plan: TruncatePlan, pdir: str, segments: list[ps.Segment], cut_seg: ps.Segment, cut: int,
                    log_start: int, target: int, now_ms: int | None, expiration_ms: int) -> None:
    """The producer snapshots the broker's ``UnifiedLog.truncateTo`` deletes and writes (apache/kafka 1eb7644).

    truncateTo (core/.../UnifiedLog.scala:1850-1854) deletes the removed segments' snapshots, then runs
    ``rebuildProducerState(targetOffset)`` on its live ProducerStateManager, which holds the whole log's producers
    with its map end at the old log end offset. That is ``UnifiedLog.rebuildProducerState`` (storage/.../
    UnifiedLog.java:57-139): ``truncateAndReload`` removes every snapshot above the end or at/below the log start
    (ProducerStateManager.java:355-372) and reloads the newest one left, the kept log after it is replayed (a
    snapshot taken at the base of either of the last two segments passed), and ``takeSnapshot`` writes one at the
    end unless one is there already (ProducerStateManager.java:436-451). The loader model's ``ProducerStateManager`` simulates
    exactly those steps; here it runs with the pre-truncation state. The end is the requested target, as the broker's
    (its in-memory log end, LocalLog.truncateTo's updateLogEndOffset(targetOffset)), also when the target lies inside
    a batch and the log on disk ends lower (checked against Kafka 4.0's UnifiedLog.truncateTo, issue 26). With
    ``now_ms``, the snapshot's producers idle for ``expiration_ms`` are dropped as loadFromSnapshot drops them
    (ProducerStateManager.java:297-333); without it every producer is kept.
    Raises KafkalogError when the kept log cannot be replayed (InvalidTxnStateException, unreadable marker).
    """
    infos: dict[int, list[pst.BatchInfo | KafkalogError]] = {}
    for s in segments:
        with MappedFile(s.path("log")) as mf:
            infos[s.base] = [pst.safe_batch_info(e, mf.buf) for e in entries(mf.buf, file=s.path("log"))
                             if isinstance(e, Batch)]
    kept = []
    for s in segments:
        if s.base > cut_seg.base:
            break
        bs = [b for b in infos[s.base] if s.base != cut_seg.base or b.position is None or b.position < cut]
        bad = next((b for b in bs if isinstance(b, KafkalogError)), None)
        if bad is not None:
            raise bad
        kept.append(ld.Scan(s.base, s.path("log"), 0, 0, bs, b"", b"", None, None))  # type: ignore[arg-type]
    store = pst.SnapshotStore(pdir, os.listdir(pdir))
    before = set(store.offsets())
    java_map = ld.KafkaVersion.parse(ld.DEFAULT_VERSION).java_producer_map
    psm = pst.ProducerStateManager(store, java_map, now_ms)
    psm.expiration_ms = expiration_ms
    # the live state before the truncation, as the broker's load left it: the newest snapshot at or below the old
    # end with its expired producers dropped (loadFromSnapshot), then the log after it. Only whether it is empty
    # matters (isEmptyBeforeTruncation: empty, the reload is skipped and an empty snapshot is written), so the
    # replay stops at its first unreadable batch or invalid transaction state
    snap = ps.newest_snapshot(pdir, at_most=plan.old_log_end_offset)
    start = 0
    if snap is not None:
        start = snap[0]
        # after a start-up that replayed the log (recovered segments, lost snapshots) the newest snapshot is that
        # state as the broker holds it, its replayed producers not expired: read without expiry
        loaded = pst.load_snapshot_state(snap[1], start, now_ms, pst.NEVER_EXPIRES if plan.state_replayed else expiration_ms)
        psm.state.producers, psm.state.ongoing, psm.state.inserted = loaded.producers, loaded.ongoing, loaded.inserted
    try:
        for s in segments:
            for b in infos[s.base]:
                if isinstance(b, KafkalogError):
                    raise b
                if b.last_offset >= start:
                    psm.state.replay([b])
    except KafkalogError:
        pass
    psm.state.map_end_offset = plan.old_log_end_offset
    psm.last_snap = max((o for o in before if o <= plan.old_log_end_offset), default=0)
    pst.rebuild_producer_state(psm, kept, log_start, target, False)
    plan.snapshot_deletes = [ps.seg_name(o, "snapshot") for o in sorted(before - set(store.present))]
    for off in sorted(store.written):
        if off in store.present:
            data = store.written[off]
            plan.snapshot_writes.append(SnapshotWrite(ps.seg_name(off, "snapshot"), off, (len(data) - 10) // 46, data))
    if target in before and target in store.present:
        plan.notes.append(f"a producer snapshot at the target offset {target} exists already: "
                          "the broker keeps it as it is (takeSnapshot writes none there)")


def _plan_snapshots_fallback(plan: TruncatePlan, pdir: str, segments: list[ps.Segment], seg: ps.Segment,
                             heads: dict[int, list], marker: str, exc: KafkalogError) -> None:
    """No replay possible: delete the snapshots above the new end, write none, and make the broker replay."""
    new_leo = plan.new_log_end_offset
    plan.notes.append(f"producer state cannot be replayed from the kept log ({exc.describe()}): no producer snapshot "
                      "is written at the cut")
    snaps = []
    for name in os.listdir(pdir):
        m = SEGMENT_NAME.match(name)
        if m and m.group(2) == "snapshot":
            snaps.append(int(m.group(1)))
    plan.snapshot_deletes = [ps.seg_name(o, "snapshot") for o in sorted(snaps) if o > new_leo]
    remaining = [o for o in snaps if o <= new_leo]
    producers_below = any(h[5] >= 0 for s in segments if s.base <= seg.base for h in heads[s.base] if h[3] < new_leo)
    if os.path.exists(marker):
        if not remaining and producers_below:
            plan.remove_clean_shutdown = True
            plan.notes.append(
                f"{CLEAN_SHUTDOWN} is present and no producer snapshot <= {new_leo} would remain: with the marker the "
                "broker would skip rebuilding producer state and lose idempotence/transaction state, so "
                "the marker is removed in the commit (kept in the backup, even with --no-backup). The broker will "
                "then recover every partition of this log directory from its recovery point, as after an unclean "
                "shutdown"
            )
        else:
            plan.notes.append(
                f"{CLEAN_SHUTDOWN} is present and kept: the broker will load the newest producer snapshot <= {new_leo} "
                "and replay the log after it, so producer state stays consistent"
            )


def _open_transactions(segments: list[ps.Segment], cut_seg: ps.Segment, cut: int, pdir: str) -> dict[int, int]:
    """Replay the kept part of the log; return transactions the cut leaves open (pid -> first offset)."""
    items: list[tuple[Batch, int | None]] = []
    for s in segments:
        if s.base > cut_seg.base:
            break
        with MappedFile(s.path("log")) as mf:
            end = cut if s.base == cut_seg.base else len(mf.buf)
            for e in entries(mf.buf, 0, end, file=s.path("log")):
                if isinstance(e, Batch):
                    items.append((e, ps.control_type(e, mf.buf) if e.is_control else None))
    facts = ps.replay_log(items, 0)
    before = ps.replay_log(_all_items(segments), 0).open_txns
    return {p: o for p, o in facts.open_txns.items() if before.get(p) != o}


def _all_items(segments: list[ps.Segment]) -> list[tuple[Batch, int | None]]:
    items: list[tuple[Batch, int | None]] = []
    for s in segments:
        with MappedFile(s.path("log")) as mf:
            for e in entries(mf.buf, file=s.path("log")):
                if isinstance(e, Batch):
                    items.append((e, ps.control_type(e, mf.buf) if e.is_control else None))
    return items


def _final_time_entry(seg: ps.Segment, cut: int, kept_time: list[tuple[int, int]],
                      kept_offsets: list[tuple[int, int]], recovered: bool = False) -> tuple[int, int] | None:
    """The time entry the broker appends to the cut segment when it closes it, or None.

    ``LogSegment.truncateTo`` (LogSegment.java:553-584 at 1eb7644) truncates both indexes, then, if the segment's max
    timestamp so far is >= 0, re-reads it with ``readLargestTimestamp`` (586-597): the last kept time entry ((-1,
    base) when none is left, TimeIndex.lastEntry), and a scan of the kept batches from the offset index's floor
    position for that entry's offset for a larger batch max timestamp (FileRecords.largestTimestampAfter).
    ``close`` (759-761) then appends the max so far when it is larger than the last entry (TimeIndex.maybeAppend,
    TimeIndex.java:183-213; an offset below the last entry's throws, which close swallows).

    Whether the max so far is known decides the case of an emptied time index. On a cleanly loaded segment it is
    not known yet (``maxTimestampAndOffsetSoFar`` is UNKNOWN until read, LogSegment.java:194-197), so truncateTo's
    ``maxTimestampSoFar()`` reads the truncated time index's last entry: with no entry left it is (-1, base) and
    nothing is re-read or appended. On a segment the same start-up recovered (``recovered``: the broker's load
    before its truncation, ``--recover-first``), ``LogSegment.recover`` (472-518) set it from the batches, so it is
    >= 0 (when any batch has a timestamp) and the kept batches are scanned from the floor position of (-1, base): their largest timestamp is appended.
    """
    last_ts, last_off = kept_time[-1] if kept_time else (-1, seg.base)
    if last_ts < 0 and not recovered:
        return None
    position = max((p for o, p in kept_offsets if o <= last_off), default=0)
    best_ts, best_off = -1, -1
    with MappedFile(seg.path("log")) as mf:
        for e in entries(mf.buf, position, cut, file=seg.path("log")):
            ts = getattr(e, "max_timestamp", -1)
            if ts > best_ts:
                best_ts, best_off = ts, e.last_offset
    if best_ts > last_ts and best_off >= last_off:
        return best_ts, best_off
    return None


def _kept_entries(n: int, offset_of: Callable[[int], int], entry_size: int, target: int) -> int:
    """The entries ``OffsetIndex/TimeIndex.truncateTo(target)`` keeps (AbstractIndex.java truncateTo: the largest
    lower-bound slot of the target by offset, warm section first; that slot itself goes when it is the target).
    The index holds ``length / entrySize`` entries as the broker opened it (AbstractIndex.createMappedBuffer), so a
    zero-filled tail (a preallocated index the load did not recover: a ``.index.swap`` the loader created) is kept
    whole, as Kafka keeps it: the kept entries are a prefix, not the entries below the target."""
    slot = largest_lower_bound(n, offset_of, target, WARM_BYTES // entry_size)
    if slot < 0:
        return 0
    return slot if offset_of(slot) == target else slot + 1


def _truncated_indexes(seg: ps.Segment, target: int, new_leo: int, cut: int,
                       recovered: bool = False) -> dict[str, bytes]:
    """The cut segment's ``.index``/``.timeindex``/``.txnindex`` as the broker leaves them: entries at or past the
    target removed (OffsetIndex/TimeIndex/TransactionIndex.truncateTo(target)), then the time entry of ``close``
    (``recovered``: the segment was recovered by the same start-up, see ``_final_time_entry``)."""
    out: dict[str, bytes] = {}
    path = seg.path("index")
    kept_offsets: list[tuple[int, int]] = []
    if os.path.isfile(path):
        with open(path, "rb") as f:
            oi = OffsetIndex(seg.base, f.read(), path)
        kept_offsets = [oi.entry(i) for i in range(_kept_entries(oi.entries, oi.key, oi.entry_size, target))]
        out["index"] = encode_offset_index(seg.base, kept_offsets)
    path = seg.path("timeindex")
    if os.path.isfile(path):
        with open(path, "rb") as f:
            ti = TimeIndex(seg.base, f.read(), path)
        ents = [ti.entry(i) for i in range(_kept_entries(ti.entries, lambda i: ti.entry(i)[1], ti.entry_size, target))]
        final = _final_time_entry(seg, cut, ents, kept_offsets, recovered)
        if final is not None:
            ents.append(final)
        out["timeindex"] = encode_time_index(seg.base, ents)
    path = seg.path("txnindex")
    if os.path.isfile(path):
        txns = ps.read_txn_index(path)
        keep = []
        for t in txns:
            if t.last_offset >= target:  # TransactionIndex.truncateTo(target)
                break
            keep.append(t)
        out["txnindex"] = encode_txn_index(keep)
    return out


def truncation_steps(plan: TruncatePlan) -> list[repair_plan.Step]:
    """The plan as file steps (``repair_plan``): the cut segment's prefix and its trimmed indexes
    (``LocalLog.truncateTo`` -> ``LogSegment.truncateTo``), the later segments deleted early (highest first, before
    the cut segment becomes visible: no new segment's offset range covers them, so a broker must never load the cut
    segment beside them; the commit then goes by directory exchange), the leader-epoch checkpoint, the producer
    snapshots above the new end (early) and at the cut, and ``.kafka_cleanshutdown``."""
    pdir = plan.partition_dir
    steps: list[repair_plan.Step] = [repair_plan.delete(name, early=True, detail="already scheduled for deletion; the "
                                                        "broker's loader deletes it") for name in plan.stray_deletes]
    if plan.cut_segment is not None:
        seg = next(s for s in ps.list_segments(pdir) if s.base == plan.cut_segment)
        mtime = seg.mtime_ns / 1e9
        steps.append(repair_plan.write(ps.seg_name(seg.base, "log"), repair_plan.copy_prefix(seg.path("log"),
                                                                                               plan.cut_position),
                                       mtime=mtime, shown="replace", size=plan.cut_position))
        for ext, data in _truncated_indexes(seg, plan.target_offset, plan.new_log_end_offset, plan.cut_position,
                                            seg.base in plan.recovered_segments).items():
            steps.append(repair_plan.write(ps.seg_name(seg.base, ext), data, mtime=mtime if ext != "txnindex" else None,
                                           shown="replace", size=len(data)))
        for base in plan.deleted_segments:
            for ext in ("log", "index", "timeindex", "txnindex"):
                if os.path.exists(os.path.join(pdir, ps.seg_name(base, ext))):
                    steps.append(repair_plan.delete(ps.seg_name(base, ext), early=True))
    if plan.checkpoint_after != plan.checkpoint_before:
        data = encode_leader_epoch_checkpoint(plan.checkpoint_after).encode()
        steps.append(repair_plan.write(CHECKPOINT, data, shown="replace", size=len(data)))
    steps += [repair_plan.delete(name, early=True) for name in plan.snapshot_deletes]
    steps += [repair_plan.write(w.name, w.data, size=len(w.data)) for w in plan.snapshot_writes]
    if plan.remove_clean_shutdown:
        steps.append(repair_plan.Step("remove-log-dir-file", CLEAN_SHUTDOWN))
    return steps


def _after_execute(plan: TruncatePlan) -> None:
    """After the steps, under the lock: the log-start-offset-checkpoint entry a target below it lowers."""
    if plan.log_start_rewrite is not None:
        from kafkalog_cli.ops.recover import write_checkpoint_entry

        write_checkpoint_entry(plan.partition_dir, LOG_START_FILE, plan.log_start_rewrite)


def plan_repair(partition_dir: str, epoch: int | None, to_offset: int | None, *, now_ms: int | None = None,
                producer_id_expiration_ms: int = pst.DEFAULT_PRODUCER_ID_EXPIRATION_MS,
                recovered_segments: list[int] | None = None,
                state_replayed: bool = False) -> repair_plan.RepairPlan[TruncatePlan]:
    """The repair plan: the truncation's findings (``plan_truncation``) and their steps (``truncation_steps``)."""
    report = plan_truncation(partition_dir, epoch, to_offset, now_ms=now_ms,
                             producer_id_expiration_ms=producer_id_expiration_ms,
                             recovered_segments=recovered_segments, state_replayed=state_replayed)
    return repair_plan.RepairPlan(partition_dir, report, lambda: truncation_steps(report))


def run(partition_dir: str, epoch: int | None, to_offset: int | None, *, execute: bool = False,
        backup_dir: str | None = None, keep_backup: bool = True, now_ms: int | None = None,
        producer_id_expiration_ms: int = pst.DEFAULT_PRODUCER_ID_EXPIRATION_MS, config: ld.TopicConfig | None = None,
        recover_first: bool = False) -> tuple[TruncatePlan, list[str], str | None]:
    """The whole command: (plan, lines of recovered interrupted work, backup dir if written). ``recover_first``: the
    broker's start-up recovery of a crash-shutdown partition comes first (ops/load_first.py: Kafka's follower
    truncates a loaded log); ``config``: the topic configs that load reads."""
    def epoch_known(lp: ld.LoaderPlan) -> None:  # an epoch the loaded cache cannot answer: refused before loading
        if epoch is not None:
            _end_offset_for(os.path.abspath(partition_dir), lp.epochs_after, epoch, lp.log_end_offset)

    loaded = load_first(partition_dir, config or ld.TopicConfig(), now_ms, execute=execute, backup_dir=backup_dir,
                        keep_backup=keep_backup, check=epoch_known) if recover_first else NOTHING
    names, load_backup = loaded.names, loaded.backup_dir
    if names and not execute:
        # the dry run plans on a copy of the loaded partition (ops/load_first.loaded_copy): what --execute truncates
        planned = dry_run_after_load(partition_dir, loaded, config or ld.TopicConfig(), now_ms, lambda sim: plan_repair(
            sim, epoch, to_offset, now_ms=now_ms, producer_id_expiration_ms=producer_id_expiration_ms,
            recovered_segments=loaded.recovered, state_replayed=loaded.log_end_snapshot))
        if planned is not None:
            return planned, [], None
    # the segments that load recovered: their max timestamp is known to the truncation (_final_time_entry)
    recovered = loaded.recovered if execute else []
    try:
        o = repair_plan.drive(partition_dir, lambda: plan_repair(partition_dir, epoch, to_offset, now_ms=now_ms,
                                                                 producer_id_expiration_ms=producer_id_expiration_ms,
                                                                 recovered_segments=recovered,
                                                                 state_replayed=bool(names) and loaded.log_end_snapshot),
                              execute=execute, backup_dir=backup_dir, keep_backup=keep_backup, after=_after_execute)
    except KafkalogError as exc:
        if loaded.names and execute:
            raise refused_after_load(exc, loaded) from None
        raise
    plan = o.report
    if names:
        plan.load_first = names
        plan.notes.insert(0, load_note(loaded, execute))
    return plan, o.recovered, o.backup_dir or load_backup
