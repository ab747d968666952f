"""``explain-cleaner``: what the log cleaner would decide about a compacted partition now, and why.

The decisions are LogCleanerManager's (core/src/main/scala/kafka/log/LogCleanerManager.scala at Kafka 1eb7644):

* ``cleanableOffsets`` (:622-679): the first dirty offset is the ``cleaner-offset-checkpoint`` entry, reset to the
  log start when it is below it or above the log end; the first uncleanable offset is the minimum of the last
  stable offset (bounded by the high watermark), the active segment's base and, with min.compaction.lag.ms, the
  base of the first dirty non-active segment whose largest timestamp is within the lag; then max'ed with the first
  dirty offset;
* ``calculateCleanableBytes`` (:685-691) rounds it down to the base of the segment holding it (the active segment
  when none) and sums the dirty bytes; ``LogToClean`` (LogCleaner.scala:1226-1236) the clean bytes and the ratio;
* ``maxCompactionDelay`` (:593-606): max.compaction.lag.ms forces a clean when the earliest first-batch timestamp of
  the dirty non-active segments is older than now - lag;
* ``grabFilthiestCompactedLog`` (:187-223): a log is picked when (forced and cleanable bytes > 0) or dirty ratio >
  min.cleanable.dirty.ratio; the dirtiest such log of the log dir goes first.

The offset map's capacity is SkimpyOffsetMap's (24 bytes a slot, times the load factor) and it fills as
LogCleaner.buildOffsetMapForSegment fills it (:1090-1125). The size after cleaning is estimated by the ``compact``
engine's own plan (``ops.compact.plan_compaction``, nothing written): there is no second compaction here.
Nothing here prints.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field

from kafkalog_cli.broker import repair_view as ps
from kafkalog_cli.broker.checkpoints import CLEANER_OFFSET_FILE
from kafkalog_cli.errors import KafkalogError
from kafkalog_cli.internal_topics.logdir import PartitionCopy, checkpoint_offset, discover
from kafkalog_cli.ops import seek
from kafkalog_cli.storage.segment import MappedFile, entries

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
DEFAULT_DEDUPE_BUFFER = 128 * 1024 * 1024  # log.cleaner.dedupe.buffer.size
BYTES_PER_SLOT = 16 + 8  # SkimpyOffsetMap: MD5 hash + offset


@dataclass
class CleanerConfig:
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    delete_retention_ms: int = 86_400_000
    cleanup_policy: str = "compact"
    now_ms: int | None = None
    dedupe_buffer_size: int = DEFAULT_DEDUPE_BUFFER
    cleaner_threads: int = 1
    load_factor: float = 0.9

    @property
    def compact(self) -> bool:
        return "compact" in [p.strip() for p in self.cleanup_policy.split(",")]

    @property
    def map_capacity(self) -> int:
        """LogCleaner.scala:353-361 and :1090: int(slots * load factor), slots = memory / 24."""
        memory = min(self.dedupe_buffer_size // max(self.cleaner_threads, 1), INT_MAX)
        return int((memory // BYTES_PER_SLOT) * self.load_factor)


KEYS = {"min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", float),
        "min.compaction.lag.ms": ("min_compaction_lag_ms", int),
        "max.compaction.lag.ms": ("max_compaction_lag_ms", int),
        "delete.retention.ms": ("delete_retention_ms", int),
        "cleanup.policy": ("cleanup_policy", str)}


def config_from(props: dict[str, str]) -> CleanerConfig:
    """The cleaner settings among topic configs (unknown keys ignored)."""
    cfg = CleanerConfig()
    for key, (attr, conv) in KEYS.items():
        if key in props:
            try:
                setattr(cfg, attr, conv(props[key]))
            except ValueError:
                raise KafkalogError(f"config {key} is not a valid value", expected=conv.__name__,
                                    found=props[key]) from None
    return cfg


@dataclass
class SegmentInfo:
    base_offset: int
    size: int
    largest_timestamp: int
    first_batch_timestamp: int  # LONG_MAX when the first batch has no timestamp (getFirstBatchTimestamp)
    dirty: bool = False
    cleanable: bool = False


@dataclass
class CleanerExplanation:
    topic: str
    partition: int
    path: str
    broker: str | None
    now_ms: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    last_stable_offset: int
    active_segment_base: int
    checkpoint: int | None
    checkpoint_note: str
    first_dirty_offset: int
    first_uncleanable_offset: int  # rounded down to a segment base, as cleaned
    first_uncleanable_offset_unrounded: int
    uncleanable_reason: str
    clean_bytes: int
    dirty_bytes: int
    total_bytes: int
    dirty_ratio: float
    min_cleanable_dirty_ratio: float
    max_compaction_delay_ms: int
    forced_by_max_lag: bool
    would_clean: bool
    decision: str
    dedupe_capacity: int
    dirty_keys: int
    dirty_keyed_records: int
    map_full_at: int | None  # the offset this round stops at when the map fills, else None
    tombstones: dict[str, int]
    estimate: dict[str, object]
    segments: list[SegmentInfo] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rank: int | None = None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _segments(copy: PartitionCopy) -> list[SegmentInfo]:
    out = []
    for base in seek.list_segments(copy.path):
        path = seek.seg_path(copy.path, base, ".log")
        with MappedFile(path) as mf:
            ts = seek.largest_timestamp(copy.path, base, mf, seek.SeekStats(), [])  # the broker's rule
            first_ts = LONG_MAX
            try:
                for e in entries(mf.buf, file=path):
                    t = getattr(e, "max_timestamp", -1)
                    first_ts = t if t >= 0 else LONG_MAX
                    break
            except KafkalogError:
                pass
        out.append(SegmentInfo(base, os.path.getsize(path), ts, first_ts))
    return out


def _floor(segs: list[SegmentInfo], offset: int) -> int | None:
    """Index of the segment holding ``offset`` (floor by base offset), None when below the first."""
    idx = None
    for i, s in enumerate(segs):
        if s.base_offset <= offset:
            idx = i
    return idx


def _values(segs: list[SegmentInfo], frm: int, to: int) -> list[SegmentInfo]:
    """LogSegments.values(from, to): from the segment holding ``from`` up to those based below ``to``."""
    if frm == to:
        return []
    start = _floor(segs, frm)
    return [s for i, s in enumerate(segs) if (start is None or i >= start) and s.base_offset < to]


def _scan_dirty(copy: PartitionCopy, segs: list[SegmentInfo], first_dirty: int, upper: int, log_start: int,
                capacity: int, now: int) -> tuple[int, int, int | None, dict[str, int], list[str]]:
    """Distinct keys and keyed records the offset map would take from [first dirty, upper) (aborted batches
    skipped, as buildOffsetMapForSegment does), where the map fills, and tombstones by delete-horizon state in
    [log start, upper)."""
    notes: list[str] = []
    plist = ps.list_segments(copy.path)
    try:
        aborted = ps.collect_aborted(plist, first_dirty, upper, log_start)  # fetch: the log start (UnifiedLog.scala:1248-1250)
    except KafkalogError as exc:
        aborted = []
        notes.append(f"aborted transactions unknown ({exc.describe()}): their keys are counted as dirty keys")
    keys: set[bytes] = set()
    keyed = 0
    full_at: int | None = None
    last_done = first_dirty - 1
    tomb = {"horizon_passed": 0, "horizon_pending": 0, "horizon_unset": 0}
    for i, s in enumerate(segs):
        if s.base_offset >= upper or (i + 1 < len(segs) and segs[i + 1].base_offset <= log_start):
            continue
        path = seek.seg_path(copy.path, s.base_offset, ".log")
        with MappedFile(path) as mf:
            try:
                for b in entries(mf.buf, file=path):
                    if b.is_legacy or b.base_offset >= upper:
                        continue
                    if b.is_control:
                        if full_at is None and b.last_offset >= first_dirty:
                            last_done = b.last_offset  # map.updateLatestOffset runs for every batch read
                        continue
                    is_aborted = b.is_transactional and any(
                        a.producer_id == b.producer_id and a.first_offset <= b.base_offset <= a.last_offset
                        for a in aborted)
                    mapping = full_at is None and b.last_offset >= first_dirty and not is_aborted
                    for rec in b.iter_records(mf.buf):
                        if rec.key is not None and rec.value is None and not is_aborted:
                            if b.has_delete_horizon:
                                tomb["horizon_passed" if (b.delete_horizon_ms or 0) <= now else "horizon_pending"] += 1
                            else:
                                tomb["horizon_unset"] += 1
                        if mapping and rec.key is not None and rec.offset >= first_dirty:
                            if len(keys) >= capacity:
                                full_at = last_done + 1
                                mapping = False
                                continue
                            keys.add(bytes(rec.key))
                            keyed += 1
                    if full_at is None and b.last_offset >= first_dirty:
                        last_done = b.last_offset
            except KafkalogError as exc:
                notes.append(f"{path}: stopped reading ({exc.describe()})")
    return len(keys), keyed, full_at, tomb, notes


def _estimate(copy: PartitionCopy, cfg: CleanerConfig, now: int) -> dict[str, object]:
    """The compact engine's plan for this partition, not written: size before and after cleaning."""
    from kafkalog_cli.ops.compact import CompactOptions, plan_compaction

    opts = CompactOptions(delete_retention_ms=cfg.delete_retention_ms, min_compaction_lag_ms=cfg.min_compaction_lag_ms,
                          now_ms=now)
    try:
        plan = plan_compaction(copy.path, opts)
    except KafkalogError as exc:
        return {"available": False, "why": exc.describe()}
    totals = plan.totals()
    kept_bytes = sum(s.size for s in ps.list_segments(copy.path)) - totals["bytes_before"]
    return {"available": True, "cleaned_up_to": plan.first_uncleanable_offset,
            "bytes_before": totals["bytes_before"] + kept_bytes, "bytes_after": totals["bytes_after"] + kept_bytes,
            "records_before": totals["records_before"], "records_after": totals["records_after"],
            "tombstones_removed": sum(s.tombstones_removed for s in plan.stats), "notes": plan.notes}


def explain(copy: PartitionCopy, cfg: CleanerConfig, *, estimate: bool = True) -> CleanerExplanation:
    from kafkalog_cli.internal_topics.transactions import scan_partition

    now = cfg.now_ms if cfg.now_ms is not None else int(time.time() * 1000)
    notes: list[str] = []
    segs = _segments(copy)
    txn = scan_partition(copy)  # the broker's producer state: last stable offset, high watermark
    log_start, leo, hw, lso = txn.log_start_offset, txn.log_end_offset, txn.high_watermark, txn.last_stable_offset
    notes += txn.notes
    active = segs[-1].base_offset
    ck, why = checkpoint_offset(copy, CLEANER_OFFSET_FILE)
    if ck is None:
        first_dirty, ck_note = log_start, f"no checkpoint ({why}): the log start offset {log_start}"
    elif ck < log_start:
        first_dirty, ck_note = log_start, f"checkpoint {ck} is below the log start offset: reset to {log_start}"
    elif ck > leo:
        first_dirty, ck_note = log_start, f"checkpoint {ck} is past the log end {leo}: reset to the log start {log_start}"
    else:
        first_dirty, ck_note = ck, f"checkpoint {ck}"
    # LSO = min(first unstable offset, high watermark): name whichever bound it is
    if any(t.first_offset == lso for t in txn.open):
        lso_why = " (an open transaction)"
    elif lso < leo:
        lso_why = " (the high watermark)"
    else:
        lso_why = ""
    bounds = [(lso, f"last stable offset {lso}{lso_why}"), (active, f"active segment base {active}")]
    non_active = _values(segs, first_dirty, active) if first_dirty <= active else []
    lag = max(cfg.min_compaction_lag_ms, 0)
    if lag > 0:
        for s in non_active:
            if s.largest_timestamp > now - lag:
                bounds.append((s.base_offset, f"min.compaction.lag.ms: segment {s.base_offset} has a record from "
                                              f"{s.largest_timestamp}, within {lag} ms of now"))
                break
    low = min(b for b, _ in bounds)
    reason = "; ".join(r for b, r in bounds if b == low)
    unrounded = max(first_dirty, low)
    if unrounded != low:
        reason += f" (below the first dirty offset {first_dirty}, which bounds it)"
    holding = _values(segs, unrounded, active) if unrounded <= active else []
    rounded = holding[0].base_offset if holding else active
    cleanable = _values(segs, min(first_dirty, rounded), rounded)
    clean = [s for s in segs if s.base_offset < first_dirty]
    for s in cleanable:
        s.cleanable = True
    start_idx = _floor(segs, first_dirty) or 0
    for i, s in enumerate(segs):
        s.dirty = i >= start_idx
    dirty_bytes = sum(s.size for s in cleanable)
    clean_bytes = sum(s.size for s in clean)
    total = clean_bytes + dirty_bytes
    ratio = dirty_bytes / total if total else 0.0
    firsts = [s.first_batch_timestamp for s in non_active if s.first_batch_timestamp > 0]
    earliest = min(firsts, default=LONG_MAX)
    until = now - max(cfg.max_compaction_lag_ms, 0)
    delay = until - earliest if earliest < until else 0
    forced = delay > 0
    if not cfg.compact:
        would, decision = False, f"cleanup.policy={cfg.cleanup_policy}: the cleaner does not compact this log"
    elif total == 0:
        would, decision = False, "nothing to clean (no bytes below the first uncleanable offset)"
    elif forced and dirty_bytes > 0:
        would, decision = True, (f"max.compaction.lag.ms forces it: the earliest dirty segment's first batch is "
                                 f"{delay} ms past the lag")
    elif ratio > cfg.min_cleanable_dirty_ratio:
        would, decision = True, f"dirty ratio {ratio:.4f} > min.cleanable.dirty.ratio {cfg.min_cleanable_dirty_ratio}"
    else:
        would, decision = False, (f"dirty ratio {ratio:.4f} <= min.cleanable.dirty.ratio "
                                  f"{cfg.min_cleanable_dirty_ratio}" + (" (forced by max lag, but no cleanable bytes)"
                                                                        if forced else ""))
    capacity = cfg.map_capacity
    nkeys, keyed, full_at, tomb, more = _scan_dirty(copy, segs, first_dirty, rounded, log_start, capacity, now)
    notes += more
    if full_at is not None:
        notes.append(f"the offset map ({capacity} entries) fills: this round cleans up to offset {full_at} only")
    est = _estimate(copy, cfg, now) if estimate else {"available": False, "why": "not requested"}
    return CleanerExplanation(
        copy.topic, copy.partition, copy.path, copy.broker, now, log_start, leo, hw, lso, active, ck, ck_note,
        first_dirty, rounded, unrounded, reason, clean_bytes, dirty_bytes, total, ratio,
        cfg.min_cleanable_dirty_ratio, delay, forced, would, decision, capacity, nkeys, keyed, full_at, tomb, est,
        segs, notes)


def explain_paths(paths: list[str], cfg: CleanerConfig, *, estimate: bool = True) -> tuple[list[CleanerExplanation], list[str]]:
    """Every partition under ``paths``; per log dir, the cleaner's order (dirtiest eligible first) as ``rank``."""
    copies, notes = discover(paths)
    skipped = [c for c in copies if c.topic == "__cluster_metadata"]
    notes += [f"{c.path}: the KRaft metadata log is not cleaned by the log cleaner: skipped" for c in skipped]
    copies = [c for c in copies if c.topic != "__cluster_metadata"]
    out = [explain(c, cfg, estimate=estimate) for c in copies]
    by_dir: dict[str, list[CleanerExplanation]] = {}
    for c, e in zip(copies, out):
        if e.would_clean:
            by_dir.setdefault(c.log_dir, []).append(e)
    for group in by_dir.values():
        for i, e in enumerate(sorted(group, key=lambda e: -e.dirty_ratio)):
            e.rank = i + 1
    return out, notes
