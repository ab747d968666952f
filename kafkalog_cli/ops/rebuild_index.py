"""``rebuild-index``: rebuild ``.index``/``.timeindex`` from the ``.log`` exactly as the broker's segment recovery does.

The rule (spec §6.5 "On recovery", errata E4, E10, E11, E16, E18): walk the batch headers; at each batch whose start
lies *strictly more* than ``index.interval.bytes`` after the last indexed batch's start, append (batch LAST offset,
batch START position) to the offset index and (running max timestamp, last offset of the batch that first reached
it) to the time index if that timestamp is larger than the last time entry; the first batch is never indexed; a final
time entry follows the loop. Timestamps of -1 are never written.

Only headers are read (one ``unpack_from`` of ``layouts.BATCH_V2_TO_MAX_TIMESTAMP`` and one CRC-32C per batch over the mmap), so memory does not grow
with the segment, and the index bytes are staged one segment at a time.

Where recovery would stop (a batch that fails its size or CRC check, a partial batch at the end, an offset outside
the segment's 32-bit range, a non-increasing offset at an index point, an index over capacity), we stop too and
report a problem: the broker would truncate the log there, so an index built past it would describe data the broker
deletes. Such segments are never rewritten by ``--execute``.

The rule itself (``rebuild_segment``) and the byte comparison (``compare``) are the broker's, in
``broker/log_segment.py`` (the loader model applies them too); this module is the command around them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from kafkalog_cli.broker.log_segment import (
    DEFAULT_INTERVAL,
    DEFAULT_SEGMENT_INDEX_BYTES,
    Comparison,
    Rebuilt,
    compare,
    rebuild_segment,
    rebuild_segment_py,
)
from kafkalog_cli.errors import KafkalogError, UnreadableFileError
from kafkalog_cli.format.layouts import (
    BATCH_V2_TO_MAX_TIMESTAMP,
    ENTRY_PREFIX,
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    OFFSET_INDEX_ENTRY,
    TIME_INDEX_ENTRY,
)
from kafkalog_cli.format.legacy import LegacyEntry
from kafkalog_cli.storage import companions as comp
from kafkalog_cli.storage import layout
from kafkalog_cli.storage.index import OFFSET_ENTRY, OFFSET_SIZE, TIME_ENTRY, TIME_SIZE, valid_count
from kafkalog_cli.storage.layout import segment_logs
from kafkalog_cli.storage.paths import segment_groups
from kafkalog_cli.storage.segment import MappedFile

if TYPE_CHECKING:
    from kafkalog_cli.ops.repair_plan import RepairPlan, Step

__all__ = ["Rebuilt", "rebuild_segment", "rebuild_segment_py"]  # the broker's rule, re-exported for importers
_PREFIX = ENTRY_PREFIX.struct  # offset, size, epoch | crc, magic
_V2 = BATCH_V2_TO_MAX_TIMESTAMP.struct  # baseOffset .. maxTimestamp (43 bytes)


# ------------------------------------------------------------------------------------------------ comparison
def check_lookup_validity(
    buf: bytes | memoryview, base: int, valid_bytes: int, index: bytes | memoryview | None, timeindex: bytes | memoryview | None
) -> tuple[bool, str, bool, str]:
    """Are an existing index's (trimmed) entries safe for Kafka's lookups, even if not what recovery writes?

    Offset entry (off, pos): pos is a batch start inside the valid data and off is above the last offset of the batch
    before pos (so the forward scan from pos finds every target >= off). Time entry (ts, off): off lies inside a
    batch whose maxTimestamp == ts and no earlier batch reached ts (errata E4: accepts the recovery form, the <= 3.6
    leader form and the per-append-chunk form). A file whose size is not a multiple of its entry size is never
    valid: the broker's load-time sanity check (OffsetIndex/TimeIndex.sanityCheck) throws CorruptIndexException for
    it and the loader recovers the segment, rebuilding the index.
    """
    o_size, t_size = _size_invalid(index, OFFSET_SIZE, ".index"), _size_invalid(timeindex, TIME_SIZE, ".timeindex")
    if o_size or t_size:
        o_ok, o_note, t_ok, t_note = check_lookup_validity(
            buf, base, valid_bytes, None if o_size else index, None if t_size else timeindex)
        return (not o_size and o_ok), (o_size or o_note), (not t_size and t_ok), (t_size or t_note)
    oents = []
    if index is not None:
        for i in range(valid_count(index, OFFSET_INDEX_ENTRY)):
            rel, p = OFFSET_ENTRY.unpack_from(index, i * OFFSET_SIZE)
            oents.append((base + rel, p))
    tents = []
    if timeindex is not None:
        for i in range(valid_count(timeindex, TIME_INDEX_ENTRY)):
            ts, rel = TIME_ENTRY.unpack_from(timeindex, i * TIME_SIZE)
            tents.append((ts, base + rel))
    o_ok, o_note = True, ""
    t_ok, t_note = True, ""
    for i in range(1, len(oents)):
        if oents[i][0] <= oents[i - 1][0] or oents[i][1] < oents[i - 1][1]:
            o_ok, o_note = False, f"entry {i} is not above entry {i - 1}"
            break
    for i in range(1, len(tents)):
        if tents[i][0] <= tents[i - 1][0] or tents[i][1] < tents[i - 1][1]:
            t_ok, t_note = False, f"entry {i} is not above entry {i - 1}"
            break
    oi = ti = 0
    prev_last = base - 1
    run_max = -1
    for pos, b_base, b_last, b_max in _headers(buf, valid_bytes):
        while o_ok and oi < len(oents) and oents[oi][1] <= pos:
            off, p = oents[oi]
            if p != pos:
                o_ok, o_note = False, f"entry {oi} (offset {off}) points at byte {p}, which is not a batch start"
            elif off <= prev_last:
                o_ok, o_note = False, f"entry {oi} (offset {off}) points after the batch that holds it (at byte {p})"
            oi += 1
        while t_ok and ti < len(tents) and tents[ti][1] <= b_last:
            ts, off = tents[ti]
            if off < b_base or ts != b_max or run_max >= ts:
                t_ok, t_note = False, f"entry {ti} (timestamp {ts} offset {off}) is not inside the batch that first reached that timestamp"
            ti += 1
        run_max = max(run_max, b_max)
        prev_last = b_last
    if o_ok and oi < len(oents):
        o_ok, o_note = False, f"entry {oi} points past the valid data (byte {oents[oi][1]})"
    if t_ok and ti < len(tents):
        t_ok, t_note = False, f"entry {ti} (offset {tents[ti][1]}) is past the last batch"
    return o_ok, o_note, t_ok, t_note


def _size_invalid(data: bytes | memoryview | None, entry: int, what: str) -> str:
    """The reason a ``what`` file of this size cannot be loaded, or "" when its size is whole entries."""
    if data is None or len(data) % entry == 0:
        return ""
    return (f"size-invalid {what}: {len(data)} bytes is not a multiple of the {entry}-byte entry size (the broker's "
            "sanity check throws CorruptIndexException and it rebuilds the index when it loads the log)")


def _headers(buf: bytes | memoryview, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(position, base offset, last offset, max timestamp) of each entry in buf[:end] (already validated)."""
    pos = 0
    while pos < end - HEADER_SIZE_UP_TO_MAGIC:
        _o, length, _e, magic = _PREFIX.unpack_from(buf, pos)
        if magic >= 2:
            b_off, _l, _e, _m, _c, _a, delta, _bts, b_max = _V2.unpack_from(buf, pos)
            yield pos, b_off, b_off + delta, b_max
        else:
            e = LegacyEntry(buf, pos)
            yield pos, e.base_offset, e.last_offset, e.timestamp
        pos += length + LOG_OVERHEAD


# ------------------------------------------------------------------------------------------------ segments
@dataclass
class SegmentReport:
    log_path: str
    base_offset: int
    active: bool
    log_size: int
    valid_bytes: int
    batches: int
    index_entries: int
    time_entries: int
    index: Comparison
    timeindex: Comparison
    problem: KafkalogError | None = None
    written: list[str] = field(default_factory=list)
    rewrite_valid: bool = False  # also rewrite an index that differs but is valid for lookups

    def keeps(self, c: Comparison) -> bool:
        """Is the file on disk kept? A byte-identical (or only preallocated) index is; so is one that differs but
        whose every entry is valid for lookups (the broker keeps such an index too: it only rebuilds missing or
        sanity-check-failing ones, and segments it recovers), unless ``rewrite_valid``."""
        if c.status == "match":
            return True
        if c.status == "match-trimmed":
            # the broker's recovery resets and trims a preallocated index (LogSegment.recover, LogSegment.java:473-519):
            # --rewrite-valid writes exactly those bytes
            return not self.rewrite_valid
        return c.status == "differs" and c.lookup_valid is True and not self.rewrite_valid

    @property
    def differs(self) -> bool:
        """Would this segment get a file written (the dry run's exit code 1)?"""
        return not (self.keeps(self.index) and self.keeps(self.timeindex))

    def to_dict(self) -> dict:
        return {
            "log": self.log_path,
            "base_offset": self.base_offset,
            "active": self.active,
            "log_size": self.log_size,
            "valid_bytes": self.valid_bytes,
            "batches": self.batches,
            "rebuilt_index_entries": self.index_entries,
            "rebuilt_time_entries": self.time_entries,
            "index": self.index.__dict__,
            "timeindex": self.timeindex.__dict__,
            "problem": self.problem.describe() if self.problem else None,
            "written": self.written,
        }


def _read_optional(path: str) -> MappedFile | None:
    try:
        return MappedFile(path)
    except UnreadableFileError as exc:
        if exc.message == "no such file":
            return None
        raise


def examine_segment(
    log_path: str, active: bool, interval: int, segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES
) -> tuple[SegmentReport, Rebuilt]:
    """Rebuild one segment's indexes in memory and compare them with the files on disk."""
    name = os.path.basename(log_path)
    base = comp.base_offset_of(name)
    stem = log_path[: -len(".log")]
    with MappedFile(log_path) as log:
        log.advise_sequential()
        rb = rebuild_segment(log.buf, base, interval, file=log_path, segment_index_bytes=segment_index_bytes)
        idx_mf = _read_optional(stem + ".index")
        tim_mf = _read_optional(stem + ".timeindex")
        try:
            ic = compare("index", stem + ".index", base, idx_mf.buf if idx_mf is not None else None, rb.index)
            tc = compare("timeindex", stem + ".timeindex", base, tim_mf.buf if tim_mf is not None else None, rb.timeindex)
            if ic.status == "differs" or tc.status == "differs":
                o_ok, o_note, t_ok, t_note = check_lookup_validity(
                    log.buf, base, rb.valid_bytes, idx_mf.buf if idx_mf is not None else None, tim_mf.buf if tim_mf is not None else None
                )
                if ic.status == "differs":
                    ic.lookup_valid = o_ok
                    ic.lookup_note = o_note or "e.g. written per append chunk by a broker <= 4.0 or by the cleaner"
                if tc.status == "differs":
                    tc.lookup_valid = t_ok
                    tc.lookup_note = t_note or "e.g. offsets of another append path, e.g. a <= 3.6 leader"
        finally:
            for mf in (idx_mf, tim_mf):
                if mf is not None:
                    mf.close()
    rep = SegmentReport(
        log_path, base, active, rb.log_size, rb.valid_bytes, rb.batches, rb.index_entries, rb.time_entries, ic, tc, rb.problem
    )
    return rep, rb


@dataclass
class RebuildResult:
    segments: list[SegmentReport] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    plans: list[IndexPlan] = field(default_factory=list)  # one per partition
    backup_dirs: list[str] = field(default_factory=list)

    @property
    def problems(self) -> int:
        return sum(1 for s in self.segments if s.problem is not None)

    txn_differences: int = 0  # .txnindex files missing or different (rebuild_txnindex)

    @property
    def differences(self) -> int:
        return sum(1 for s in self.segments if s.differs) + self.txn_differences


def _needs_write(rep: SegmentReport, kind: str) -> bool:
    c = rep.index if kind == "index" else rep.timeindex
    if c.status == "match" or (c.status == "differs" and rep.keeps(c)):
        return False
    if c.status == "match-trimmed" and rep.active and not rep.rewrite_valid:
        return False  # the broker preallocates the active segment's indexes itself (spec §6.2, §8 step 6)
    return True


def run(
    paths: list[str],
    *,
    interval: int = DEFAULT_INTERVAL,
    execute: bool = False,
    backup_dir: str | None = None,
    segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES,
    rewrite_valid: bool = False,
) -> RebuildResult:
    """Dry run (compare) or execute (write through ``repair_plan.drive``) for each partition directory in ``paths``."""
    from kafkalog_cli.ops import repair_plan

    result = RebuildResult()
    for pdir, selected in segment_groups(paths).items():
        # with --execute the lock is held from recovery to the last rename, so that a broker cannot start on
        # half-written files
        o = repair_plan.drive(pdir, partial(plan_repair, pdir, selected, interval, execute, backup_dir,
                                            segment_index_bytes, rewrite_valid),
                              execute=execute, backup_dir=backup_dir)
        result.recovered += [f"{pdir}: {line}" for line in o.recovered]
        result.segments += o.report.segments
        result.txn_differences += o.report.txn_differences
        result.backup_dirs += o.backup_dirs
        result.plans.append(o.report)
    return result


@dataclass
class IndexPlan:
    """rebuild-index's findings for one partition (the report of its ``repair_plan.RepairPlan``): the files to write
    (``repair_plan.actions`` of its steps), notes and a summary; ``segments``: what was found per segment."""

    partition_dir: str
    actions: list = field(default_factory=list)  # repair_plan.FileAction
    notes: list[str] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    segments: list[SegmentReport] = field(default_factory=list)
    txn_differences: int = 0

    @property
    def has_changes(self) -> bool:
        return bool(self.actions)

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return {"partition_dir": self.partition_dir, "actions": [asdict(a) for a in self.actions],
                "notes": self.notes, "summary": self.summary}


def plan_repair(
    pdir: str,
    selected: list[str] | None,
    interval: int,
    execute: bool,
    backup_dir: str | None,
    segment_index_bytes: int,
    rewrite_valid: bool = False,
) -> RepairPlan[IndexPlan]:
    """Compare one partition directory's indexes with the rebuilt ones: the plan of the files to write.

    The files to write are ``repair_plan`` steps: the dry run's actions are those steps, ``--execute`` performs them."""
    from kafkalog_cli.ops import repair_plan, safety

    logs = segment_logs(pdir)
    if not logs:
        raise layout.no_segment(pdir)
    active_base = logs[-1][0]
    chosen = [(b, p) for b, p in logs if selected is None or p in selected]
    plan = IndexPlan(pdir)
    if execute:  # refused before anything is compared, even when nothing is to be written
        safety.check_backup_dir(pdir, safety.backup_subdir(backup_dir, pdir))
    steps: list[repair_plan.Step] = []
    for base, log_path in chosen:
        rep, rb = examine_segment(log_path, base == active_base, interval, segment_index_bytes)
        rep.rewrite_valid = rewrite_valid
        plan.segments.append(rep)
        if rep.problem is not None:
            plan.notes.append(f"{os.path.basename(log_path)} skipped: {rep.problem.describe()}")
            continue
        stem = os.path.basename(log_path)[: -len(".log")]
        for kind, data in (("index", rb.index), ("timeindex", rb.timeindex)):
            if not _needs_write(rep, kind):
                continue
            name = f"{stem}.{kind}"
            c = rep.index if kind == "index" else rep.timeindex
            steps.append(repair_plan.write(name, data, shown="create" if c.status == "missing" else "replace",
                                           size=len(data), detail=c.status))
            if execute:
                rep.written.append(name)
    txn_steps = _txn_index_steps(pdir, [b for b, _ in chosen])
    plan.txn_differences = len(txn_steps)
    steps += txn_steps
    plan.actions = repair_plan.actions(pdir, steps)
    if active_base in [b for b, _ in chosen]:
        plan.notes.append(
            "the active segment's indexes are written trimmed to their entries; the broker preallocates them "
            "to segment.index.bytes again when it loads the log"
        )
    plan.summary = {
        "segments": len(chosen),
        "files_to_write": len(plan.actions),
        "segments_skipped": sum(1 for r in plan.segments if r.problem),
    }
    return repair_plan.RepairPlan(pdir, plan, lambda: steps)


def _txn_index_steps(pdir: str, bases: list[int]) -> list[Step]:
    """The ``.txnindex`` call site (rebuild_txnindex.py): a step for every one that is missing or differs."""
    from kafkalog_cli.ops import repair_plan
    from kafkalog_cli.ops.rebuild_txnindex import rebuild_txn_indexes

    return [repair_plan.write(t.name, t.data, shown="create" if t.status == "missing" else "replace",
                              size=len(t.data),
                              detail=f"{t.status}: rebuilt from the log's ABORT markers ({len(t.data) // 34} entries)")
            for t in rebuild_txn_indexes(pdir)
            if t.base in bases and t.needs_write and t.data is not None]
