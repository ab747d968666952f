"""The text of ``explain-retention`` and ``explain-cleaner`` (cli/explain.py prints it): times as UTC ISO-8601 and
human durations beside the raw milliseconds."""

from __future__ import annotations

from typing import Any

from kafkalog_cli.timefmt import duration, iso_utc


def retention_lines(r: Any) -> list[str]:
    """explain-retention's text for one partition: the config, the log start and size before and after, one line per segment (DELETE / keep and why), the notes."""
    out: list[str] = []
    who = f", broker {r.broker}" if r.broker is not None else ""
    out.append(f"{r.topic}-{r.partition} ({r.path}{who}) at {iso_utc(r.now_ms)} ({r.now_ms}): retention.ms={r.config['retention.ms']} "
               f"retention.bytes={r.config['retention.bytes']} cleanup.policy={r.config['cleanup.policy']}")
    out.append(f"  log start {r.log_start_offset_before} -> {r.log_start_offset_after}, log end {r.log_end_offset}, "
               f"high watermark {r.high_watermark}; {r.size_before} bytes -> {r.size_after} "
               f"({r.bytes_freed} freed)" + ("; the active segment is rolled first" if r.rolled else ""))
    for s in r.segments:
        tag = "DELETE" if s.deleted else "keep  "
        act = " (active)" if s.active else ""
        until = []
        if not s.deleted and s.ms_until_deleted is not None:
            until.append(f"goes by time in {duration(s.ms_until_deleted)} ({s.ms_until_deleted} ms)")
        if not s.deleted and s.bytes_until_deleted is not None:
            until.append(f"by size after {s.bytes_until_deleted} more bytes")
        extra = f" [{', '.join(until)}]" if until else ""
        out.append(f"  {tag} {s.base_offset:020d}.log{act} {s.size} bytes: {s.reason}{extra}")
    for n in r.notes:
        out.append(f"  note: {n}")
    return out


def cleaner_lines(r: Any) -> list[str]:
    """explain-cleaner's text for one partition: the offsets that bound cleaning, the dirty ratio and the decision, the offset map, tombstones, the estimate, the notes."""
    out: list[str] = []
    who = f", broker {r.broker}" if r.broker is not None else ""
    out.append(f"{r.topic}-{r.partition} ({r.path}{who}) at {iso_utc(r.now_ms)} ({r.now_ms})")
    out.append(f"  log start {r.log_start_offset}, log end {r.log_end_offset}, high watermark {r.high_watermark}, "
               f"last stable offset {r.last_stable_offset}, active segment {r.active_segment_base}")
    out.append(f"  first dirty offset {r.first_dirty_offset} ({r.checkpoint_note})")
    out.append(f"  first uncleanable offset {r.first_uncleanable_offset} (unrounded {r.first_uncleanable_offset_unrounded}: "
               f"{r.uncleanable_reason})")
    out.append(f"  clean {r.clean_bytes} bytes, dirty {r.dirty_bytes} bytes, total {r.total_bytes}: dirty ratio "
               f"{r.dirty_ratio:.4f} vs min.cleanable.dirty.ratio {r.min_cleanable_dirty_ratio}")
    forced = f"yes ({duration(r.max_compaction_delay_ms)} overdue, {r.max_compaction_delay_ms} ms)" if r.forced_by_max_lag else "no"
    pick = "YES" if r.would_clean else "no"
    rank = f", {r.rank} in this log dir's order" if r.rank else ""
    out.append(f"  would clean now: {pick}{rank} ({r.decision}); forced by max.compaction.lag.ms: {forced}")
    out.append(f"  offset map: {r.dirty_keys} distinct dirty keys ({r.dirty_keyed_records} keyed records) vs "
               f"{r.dedupe_capacity} entries" + (f": full, one cleaning stops at {r.map_full_at}" if r.map_full_at
                                                 is not None else ": fits"))
    t = r.tombstones
    out.append(f"  tombstones below the first uncleanable offset: {t['horizon_passed']} past their delete horizon, "
               f"{t['horizon_pending']} waiting for it, {t['horizon_unset']} without one yet (the next clean sets "
               "it to now + delete.retention.ms)")
    e = r.estimate
    if e.get("available"):
        out.append(f"  estimate after cleaning (compact's plan, up to {e['cleaned_up_to']}): {e['bytes_before']} -> "
                   f"{e['bytes_after']} bytes, {e['records_before']} -> {e['records_after']} records")
    else:
        out.append(f"  estimate unavailable: {e.get('why')}")
    for n in r.notes:
        out.append(f"  note: {n}")
    return out
