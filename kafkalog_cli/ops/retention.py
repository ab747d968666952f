"""``explain-retention``: which segments the broker's retention would delete at time T, and why.

The rules are UnifiedLog's (core/src/main/scala/kafka/log/UnifiedLog.scala at Kafka 1eb7644), applied in its order
and with its stopping rule, so that the answer is the broker's, not an approximation:

* ``deleteOldSegments`` (:1576-1584): log-start-offset breach, then (only when cleanup.policy has ``delete``)
  size, then time; each pass sees the log left by the previous one;
* ``deletableSegments`` (:1487-1533): oldest first, stop at the first segment the rule keeps; a segment is only
  deletable when the high watermark >= its upper bound (next segment's base, or the log end for the last one);
  an empty last segment is never deleted;
* ``deleteSegments`` (:1540-1568): deleting every segment first rolls a new empty active segment at the log end,
  so a breached non-empty active segment goes and the log start becomes the log end; otherwise the new log start
  is the base of the first segment kept;
* start offset (:1617-1627): a segment goes when the next segment's base <= log start offset;
* size (:1600-1615): nothing unless size >= retention.bytes; then oldest first while the excess still covers the
  whole segment;
* time (:1586-1598): ``now - largestTimestamp > retention.ms``, largestTimestamp being the last time-index entry,
  else the ``.log`` mtime (LogSegment.java:855-860; ``ops.seek`` implements it); a segment with a future
  timestamp is kept, and so is everything after it.

Tiered storage (remote.storage.enable) changes eligibility (a segment must be uploaded first); that state is not on
local disk, so it is reported as a note and the local rule is applied. Nothing here prints.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field

from kafkalog_cli.broker.checkpoints import HIGH_WATERMARK_FILE, LOG_START_FILE
from kafkalog_cli.errors import KafkalogError, UnreadableFileError
from kafkalog_cli.internal_topics.logdir import PartitionCopy, checkpoint_offset, discover
from kafkalog_cli.ops import seek
from kafkalog_cli.storage.segment import MappedFile, entries
from kafkalog_cli.timefmt import duration, iso_utc

DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000  # log.retention.hours=168
DEFAULTS = {"retention.ms": str(DEFAULT_RETENTION_MS), "retention.bytes": "-1", "cleanup.policy": "delete"}


@dataclass
class RetentionConfig:
    retention_ms: int = DEFAULT_RETENTION_MS
    retention_bytes: int = -1
    cleanup_policy: str = "delete"
    log_start_offset: int | None = None  # overrides log-start-offset-checkpoint
    high_watermark: int | None = None  # overrides replication-offset-checkpoint
    now_ms: int | None = None
    remote_storage: bool = False
    policy_explicit: bool = False  # cleanup.policy given (flag or config): not replaced for internal topics

    @property
    def delete_enabled(self) -> bool:
        return "delete" in [p.strip() for p in self.cleanup_policy.split(",")]


def parse_config_text(text: str) -> dict[str, str]:
    """``key=value`` pairs from a properties file or from ``kafka-configs.sh --describe`` output (lines like
    ``  retention.ms=1000 sensitive=false synonyms={...}``; header lines are skipped)."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "!")) or "=" not in line:
            continue
        if line.startswith(("Dynamic configs", "All configs", "Static configs")):
            continue
        token = line.split()[0] if " sensitive=" in line or " synonyms=" in line else line
        key, _, value = token.partition("=")
        out[key.strip()] = value.strip()
    return out


def config_from(props: dict[str, str]) -> RetentionConfig:
    """The retention settings among topic configs (unknown keys are ignored: kafka-configs prints many)."""
    merged = {**DEFAULTS, **props}

    def num(key: str) -> int:
        try:
            return int(merged[key])
        except ValueError:
            raise UnreadableFileError(f"config {key} is not a number", expected="an integer", found=merged[key]) from None

    cfg = RetentionConfig(num("retention.ms"), num("retention.bytes"), merged["cleanup.policy"])
    cfg.policy_explicit = "cleanup.policy" in props
    cfg.remote_storage = merged.get("remote.storage.enable", "false").lower() == "true"
    return cfg


# where a segment's largest timestamp (its age) comes from, as the broker's LogSegment.largestTimestamp takes it
_SOURCE = {"timeindex": "from its last time-index entry", "mtime": "the .log file's mtime: its time index is empty"}


@dataclass
class SegmentFate:
    base_offset: int
    size: int
    largest_timestamp: int
    timestamp_source: str  # "timeindex" or "mtime"
    deleted: bool = False
    rule: str | None = None  # "log-start-offset" | "retention.bytes" | "retention.ms" when deleted
    reason: str = ""
    active: bool = False
    ms_until_deleted: int | None = None  # by retention.ms, once every older segment has gone (None: never)
    bytes_until_deleted: int | None = None  # more bytes appended before retention.bytes takes it (None: never)


@dataclass
class PartitionRetention:
    topic: str
    partition: int
    path: str
    broker: str | None
    now_ms: int
    log_start_offset_before: int
    log_start_offset_after: int
    log_end_offset: int
    high_watermark: int
    size_before: int
    bytes_freed: int
    size_after: int
    rolled: bool
    config: dict[str, object]
    segments: list[SegmentFate] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _log_end(copy: PartitionCopy, last_base: int) -> int:
    """Next offset after the last batch of the last non-empty segment."""
    from kafkalog_cli.storage.layout import segment_logs

    leo = last_base
    for _base, path in reversed(segment_logs(copy.path)):
        with MappedFile(path) as mf:
            last = None
            try:
                for e in entries(mf.buf, file=path):
                    last = e
            except KafkalogError:
                pass  # a damaged tail: what was read so far is the log end
            if last is not None:
                nxt = last.next_offset  # a legacy entry's is its offset + 1
                return max(leo, nxt)
    return leo


def _segments(copy: PartitionCopy) -> list[SegmentFate]:
    out = []
    for base in seek.list_segments(copy.path):
        path = seek.seg_path(copy.path, base, ".log")
        warnings: list[str] = []
        with MappedFile(path) as mf:
            ts = seek.largest_timestamp(copy.path, base, mf, seek.SeekStats(), warnings)  # the broker's rule
        out.append(SegmentFate(base, os.path.getsize(path), ts, "mtime" if warnings else "timeindex"))
    return out


def explain(copy: PartitionCopy, cfg: RetentionConfig) -> PartitionRetention:
    """What one run of UnifiedLog.deleteOldSegments would do to this partition at ``cfg.now_ms``."""
    now = cfg.now_ms if cfg.now_ms is not None else int(time.time() * 1000)
    notes: list[str] = []
    segs = _segments(copy)
    leo = _log_end(copy, segs[-1].base_offset)
    segs[-1].active = True
    if cfg.log_start_offset is not None:
        lso = max(cfg.log_start_offset, segs[0].base_offset)
        if lso != cfg.log_start_offset:
            notes.append(f"--log-start-offset {cfg.log_start_offset} is below the first segment's base: the broker's "
                         f"log start offset is never below it, {lso} is used")
    else:
        ck, _why = checkpoint_offset(copy, LOG_START_FILE)
        lso = max(ck if ck is not None else 0, segs[0].base_offset)  # LogLoader.java:221
    if cfg.high_watermark is not None:
        hw = cfg.high_watermark
    else:
        hw_ck, why = checkpoint_offset(copy, HIGH_WATERMARK_FILE)
        if hw_ck is None:
            notes.append(f"high watermark unknown ({why}): assumed to be the log end offset {leo}; pass "
                         "--high-watermark to change it (the broker deletes nothing at or above it)")
            hw = leo
        else:
            hw = min(hw_ck, leo)
    if cfg.remote_storage:
        notes.append("remote.storage.enable=true: the broker also requires a segment to be uploaded before deleting "
                     "it locally (and uses local.retention.*); upload state is not on local disk, the local rule is shown")
    if not cfg.delete_enabled:
        notes.append(f"cleanup.policy={cfg.cleanup_policy}: only the log-start-offset rule deletes segments")
    start_before = lso
    live = list(segs)  # the log as each pass sees it
    rolled = False

    def upper(i: int) -> int:
        return live[i + 1].base_offset if i + 1 < len(live) else leo

    def run_pass(rule: str, pred) -> None:  # noqa: ANN001
        nonlocal live, lso, rolled
        doomed: list[SegmentFate] = []
        for i, s in enumerate(live):
            last_and_empty = i + 1 == len(live) and s.size == 0
            if hw < upper(i):
                break
            why = pred(s, live[i + 1] if i + 1 < len(live) else None)
            if why is None or last_and_empty:
                break
            s.deleted, s.rule, s.reason = True, rule, why
            doomed.append(s)
        if not doomed:
            return
        if len(doomed) == len(live):
            rolled = True  # deleteSegments rolls a new empty active segment at the log end first
            live = [SegmentFate(leo, 0, -1, "new", active=True)]
            lso = max(lso, leo)
        else:
            live = live[len(doomed):]
            lso = max(lso, live[0].base_offset)

    def start_pred(s: SegmentFate, nxt: SegmentFate | None) -> str | None:
        if nxt is not None and nxt.base_offset <= lso:
            return f"log-start-offset: the next segment's base {nxt.base_offset} <= log start offset {lso}"
        return None

    run_pass("log-start-offset", start_pred)
    if cfg.delete_enabled and cfg.retention_bytes >= 0:
        size = sum(s.size for s in live)
        if size >= cfg.retention_bytes:
            diff = size - cfg.retention_bytes

            def size_pred(s: SegmentFate, _nxt: SegmentFate | None) -> str | None:
                nonlocal diff
                if diff - s.size >= 0:
                    text = (f"retention.bytes: log size over retention.bytes {cfg.retention_bytes} by {diff} bytes "
                            f">= this segment's {s.size}")
                    diff -= s.size
                    return text
                return None

            run_pass("retention.bytes", size_pred)
    if cfg.delete_enabled and cfg.retention_ms >= 0:

        def time_pred(s: SegmentFate, _nxt: SegmentFate | None) -> str | None:
            age = now - s.largest_timestamp
            if age > cfg.retention_ms:
                return (f"retention.ms: largest timestamp {iso_utc(s.largest_timestamp)} ({_SOURCE[s.timestamp_source]}) "
                        f"is {duration(age)} old ({age} ms) > retention.ms {cfg.retention_ms} ({duration(cfg.retention_ms)})")
            return None

        run_pass("retention.ms", time_pred)
    _explain_kept(segs, cfg, now, hw, leo)
    freed = sum(s.size for s in segs if s.deleted)
    size_before = sum(s.size for s in segs)
    return PartitionRetention(
        copy.topic, copy.partition, copy.path, copy.broker, now, start_before, lso, leo, hw, size_before, freed,
        size_before - freed, rolled,
        {"retention.ms": cfg.retention_ms, "retention.bytes": cfg.retention_bytes,
         "cleanup.policy": cfg.cleanup_policy}, segs, notes)


def _explain_kept(segs: list[SegmentFate], cfg: RetentionConfig, now: int, hw: int, leo: int) -> None:
    """Why each kept segment stays, and how long (ms) / how many more bytes until it goes."""
    kept = [s for s in segs if not s.deleted]
    size = sum(s.size for s in kept)
    eta_ms: int | None = 0
    cum = 0
    blocked = False  # an older kept segment stops every rule before this one
    for i, s in enumerate(kept):
        cum += s.size
        nxt_base = kept[i + 1].base_offset if i + 1 < len(kept) else leo
        last_empty = i + 1 == len(kept) and s.size == 0
        if cfg.delete_enabled and cfg.retention_ms >= 0 and eta_ms is not None and not last_empty:
            eta_ms = max(eta_ms, s.largest_timestamp + cfg.retention_ms + 1 - now)
            s.ms_until_deleted = eta_ms
        else:
            eta_ms = None
        if cfg.delete_enabled and cfg.retention_bytes >= 0 and not last_empty:
            s.bytes_until_deleted = max(0, cum + cfg.retention_bytes - size)
        if last_empty:
            s.reason = "kept: the last segment is empty (never deleted)"
        elif hw < nxt_base:
            s.reason = (f"kept: its upper bound {nxt_base} is above the high watermark {hw} (retention never deletes "
                        "at or beyond it)")
        elif blocked:
            s.reason = "kept: an older segment is kept, and retention stops at the first segment it keeps"
        elif not cfg.delete_enabled:
            s.reason = f"kept: cleanup.policy={cfg.cleanup_policy} has no delete, and the log start offset is not past it"
        else:
            parts = []
            if cfg.retention_ms >= 0:
                age = now - s.largest_timestamp
                if age < 0:
                    parts.append(f"largest timestamp {iso_utc(s.largest_timestamp)} ({_SOURCE[s.timestamp_source]}) is "
                                 f"in the future ({duration(-age)} ahead): time retention stops here")
                else:
                    parts.append(f"{duration(age)} old ({age} ms; largest timestamp {iso_utc(s.largest_timestamp)}, "
                                 f"{_SOURCE[s.timestamp_source]}) <= retention.ms {cfg.retention_ms} "
                                 f"({duration(cfg.retention_ms)})")
            else:
                parts.append("retention.ms=-1 (no time limit)")
            if cfg.retention_bytes >= 0 and size < cfg.retention_bytes:
                parts.append(f"log size {size} < retention.bytes {cfg.retention_bytes}")
            elif cfg.retention_bytes >= 0:
                parts.append(f"the log is {size - cfg.retention_bytes} bytes over retention.bytes "
                             f"{cfg.retention_bytes}, less than this segment's {s.size}")
            else:
                parts.append("retention.bytes=-1 (no size limit)")
            s.reason = "kept: " + "; ".join(parts)
        blocked = True


# Kafka's internal topics are created with cleanup.policy=compact (GroupCoordinator / TransactionStateManager /
# ShareCoordinator topic configs); the KRaft metadata log has its own retention (metadata.max.retention.*).
INTERNAL_COMPACTED = ("__consumer_offsets", "__transaction_state", "__share_group_state")


def explain_paths(paths: list[str], cfg: RetentionConfig) -> tuple[list[PartitionRetention], list[str]]:
    """Every partition under ``paths`` with the same config, except that internal topics keep their own
    cleanup.policy=compact unless one was given, and ``__cluster_metadata`` is skipped."""
    from dataclasses import replace

    copies, notes = discover(paths)
    out = []
    for c in copies:
        if c.topic == "__cluster_metadata":
            notes.append(f"{c.path}: the KRaft metadata log is trimmed by snapshots (metadata.max.retention.*), "
                         "not by topic retention: skipped")
            continue
        this = cfg
        if c.topic in INTERNAL_COMPACTED and not cfg.policy_explicit:
            this = replace(cfg, cleanup_policy="compact")
        out.append(explain(c, this))
    return out, notes
