"""``seek-offset`` and ``seek-time``: find a batch the way the broker's fetch and ListOffsets paths do (spec §6.4).

Cost model (why it stays fast on 10,000-segment partitions and multi-GiB segments):

* the segment is chosen by a binary search over the sorted base offsets from ONE directory listing; no file of
  another segment is opened (seek-time reads the last time-index entry of each skipped segment, or the ``.log``
  mtime when that index is empty, as the broker's ``largestTimestamp`` does);
* inside the segment, ``largest_lower_bound`` (Kafka's warm-section binary search) over the mmap'd index gives a
  start position, and a header-only walk goes forward from there; records are decoded only for the one batch whose
  record is asked for.

A missing or corrupt index (sanity check fails, the entry points past the end or not at a valid batch) falls back to
a walk from position 0 with a warning. Every read is counted in ``SeekStats`` for ``--verbose``.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from kafkalog_cli.broker.checkpoints import log_start_offset
from kafkalog_cli.errors import (
    CompressionError,
    CorruptIndexError,
    CorruptRecordError,
    KafkalogError,
    ReadFinding,
    UnreadableFileError,
)
from kafkalog_cli.format.batch import Record
from kafkalog_cli.format.layouts import (
    HEADER_SIZE_UP_TO_MAGIC,
    LEGACY_V0,
    OFFSET_INDEX_ENTRY,
    TIME_INDEX_ENTRY,
    V2_ATTRIBUTES_OFFSET,
    V2_HEADER_SIZE,
)
from kafkalog_cli.storage import layout
from kafkalog_cli.storage.index import (
    OFFSET_ENTRY,
    OFFSET_SIZE,
    TIME_ENTRY,
    TIME_SIZE,
    WARM_BYTES,
    OffsetIndex,
    TimeIndex,
    largest_lower_bound,
    trimmed_count,
)
from kafkalog_cli.storage.paths import require_directory
from kafkalog_cli.storage.segment import Entry, MappedFile, read_entry, walk

_LEGACY_ATTRIBUTES = LEGACY_V0.offset("attributes")  # 17
_V2_CODEC_BYTE = V2_ATTRIBUTES_OFFSET + 1  # 22: the low byte of the int16 attributes holds the codec


class OffsetNotFound(KafkalogError):
    """The requested offset or timestamp is outside the log (exit code 1, not an error of the input)."""


@dataclass
class SeekStats:
    files_opened: int = 0
    index_probes: int = 0
    bytes_scanned: int = 0
    batches_read: int = 0
    records_decoded: int = 0
    segments: int = 0

    def line(self) -> str:
        return (
            f"read: {self.segments} segment names listed, {self.files_opened} files opened, "
            f"{self.index_probes} index entries probed, {self.batches_read} batch headers read, "
            f"{self.bytes_scanned} bytes scanned, {self.records_decoded} records decoded"
        )


@dataclass
class SeekResult:
    segment: str
    position: int
    entry: Entry
    record: Record | None = None
    warnings: list[str] = field(default_factory=list)
    exact: bool = True
    valid: bool = True
    computed_crc: int = 0
    findings: list[ReadFinding] = field(default_factory=list)  # what the disk did to the reads (storage/safe_read)
    #: Kafka's RecordBatch.baseOffset of the answer: for a legacy compressed wrapper (whose own offset is its LAST
    #: inner record's) the first inner record's offset (AbstractLegacyRecordBatch.baseOffset loads the inner
    #: messages), else the entry's base offset; None until ``seek_offset``/``seek_time`` set it
    batch_base_offset: int | None = None

    @property
    def disk_problems(self) -> bool:
        """True when bytes could not be read (exit 1: the answer may have skipped them)."""
        return any(not f.is_note for f in self.findings)

    @property
    def offset(self) -> int | None:
        return self.record.offset if self.record is not None else None

    @property
    def timestamp(self) -> int | None:
        return self.record.timestamp if self.record is not None else None


# ------------------------------------------------------------------------------------------------ helpers
def list_segments(partition_dir: str) -> list[int]:
    """Sorted base offsets of the ``.log`` segments: one directory listing, no file opened."""
    require_directory(partition_dir)
    bases = layout.segment_bases(partition_dir)
    if not bases:
        err = layout.no_segment(partition_dir)
        if layout.looks_like_partition_dir(partition_dir):  # an empty log holds no offset: not found, as past its end
            raise OffsetNotFound(err.message, file=partition_dir, expected=err.expected, found=err.found)
        raise err
    return bases


def seg_path(partition_dir: str, base: int, ext: str) -> str:
    return os.path.join(partition_dir, f"{base:020d}{ext}")


def _safe_walk(log: MappedFile, pos: int, path: str) -> Iterator[tuple[int, int, int]]:
    """``walk`` that goes on after unreadable bytes: where it stops on a header that reads as zeros because its page
    could not be read, the walk resumes at the next valid entry after those bytes (verify-crc's resync). The bytes
    are reported with the result (``SeekResult.findings``)."""
    from kafkalog_cli.storage.segment_check import find_next_valid

    start = pos
    while True:
        try:
            yield from walk(log.buf, start, log.size, file=path)
            return
        except CorruptRecordError as exc:
            at = exc.position if exc.position is not None else start
            ends = [b for a, b in log.unreadable_ranges() if a < at + HEADER_SIZE_UP_TO_MAGIC and b > at]
            if not ends:
                raise
            nxt = find_next_valid(log.buf, max(ends))
            if nxt is None:
                return
            start = nxt


def _open_optional(path: str, stats: SeekStats) -> MappedFile | None:
    try:
        mf = MappedFile(path)
    except UnreadableFileError:
        return None
    stats.files_opened += 1
    return mf


def _start_position(
    partition_dir: str, base: int, offset: int, log: MappedFile, stats: SeekStats, warnings: list[str]
) -> int:
    """Kafka's offset-index lookup, validated: the position of the largest entry <= offset, or 0."""
    path = seg_path(partition_dir, base, ".index")
    mf = _open_optional(path, stats)
    if mf is None:
        warnings.append(f"{os.path.basename(path)} is missing: scanning the segment from position 0")
        return 0
    with mf:
        idx = OffsetIndex(base, mf.buf, path)
        try:
            idx.sanity_check()
        except CorruptIndexError as exc:
            warnings.append(f"{exc.describe()}: scanning the segment from position 0")
            return 0
        n = trimmed_count(mf.buf, OFFSET_INDEX_ENTRY)

        def key(i: int) -> int:
            stats.index_probes += 1
            return base + OFFSET_ENTRY.unpack_from(mf.buf, i * OFFSET_SIZE)[0]

        slot = largest_lower_bound(n, key, offset, WARM_BYTES // OFFSET_SIZE)
        if slot < 0:
            return 0
        entry_off, pos = idx.entry(slot)
    if not _plausible_batch(log, pos, base, entry_off):
        warnings.append(
            f"{os.path.basename(path)} entry {slot} (offset {entry_off} position {pos}) does not point at a valid batch "
            "start: scanning the segment from position 0"
        )
        return 0
    return pos


def _plausible_batch(log: MappedFile, pos: int, base: int, entry_off: int) -> bool:
    """An index position must hold a whole, CRC-valid batch of this segment whose last offset is <= the entry's."""
    if pos < 0 or pos > log.size - HEADER_SIZE_UP_TO_MAGIC:
        return pos == log.size  # an entry at the very end is possible only if nothing follows
    try:
        for p, _size, magic in walk(log.buf, pos, log.size):
            e = read_entry(log.buf, p, magic)
            return e.is_valid(log.buf) and base <= e.base_offset and e.last_offset <= entry_off
    except KafkalogError:
        return False
    return False


def _check(res: SeekResult, buf: bytes | memoryview) -> None:
    e = res.entry
    if e.codec > 4:  # no batch line can name it: a located error, as DumpLogSegments aborts on it (found by fuzzing)
        raise CompressionError(
            f"Unknown compression type id: {e.codec}", file=res.segment,
            position=res.position + (_LEGACY_ATTRIBUTES if e.is_legacy else _V2_CODEC_BYTE), expected="a codec id 0..4", found=str(e.codec))
    res.computed_crc = e.computed_crc(buf) if e.is_legacy or e.size >= V2_HEADER_SIZE else 0
    res.valid = e.is_valid(buf)
    if not res.valid:
        res.warnings.append(f"the batch at position {res.position} fails its CRC check (the broker would truncate here)")


def batch_base_offset(entry: Entry, buf: bytes | memoryview) -> int:
    """RecordBatch.baseOffset as Kafka's lookups report it: a legacy compressed wrapper's first inner record (the
    wrapper's own offset is the last one's); an unreadable wrapper keeps its own offset."""
    if not entry.is_legacy or entry.codec == 0:
        return entry.base_offset
    try:
        first = next(iter(entry.iter_records(buf)), None)
    except KafkalogError:
        return entry.base_offset
    return first.offset if first is not None else entry.base_offset


def _first_record(entry: Entry, buf: bytes | memoryview, pred, stats: SeekStats) -> Record | None:  # noqa: ANN001
    for rec in entry.iter_records(buf):
        stats.records_decoded += 1
        if pred(rec):
            return rec
    return None


# ------------------------------------------------------------------------------------------------ seek-offset
def _lost_between(log: MappedFile, start: int, end: int) -> str:
    """The unreadable ranges met between the search start and the answer, as text ("" when none): the answer may
    then lie in them, which the result must say instead of calling it a gap."""
    lost = [(a, b) for a, b in log.unreadable_ranges() if a < end and b > start]
    return ", ".join(f"[{a}, {b})" for a, b in lost)


def seek_offset(partition_dir: str, offset: int, *, want_record: bool = False, stats: SeekStats | None = None) -> SeekResult:
    """The batch holding ``offset`` (first batch whose lastOffset >= offset), searching from the segment whose base
    is the greatest <= offset; later segments if it lies in a gap. Raises OffsetNotFound outside the log."""
    stats = stats if stats is not None else SeekStats()
    bases = list_segments(partition_dir)
    stats.segments = len(bases)
    i = bisect.bisect_right(bases, offset) - 1
    start, start_src = log_start_offset(partition_dir, bases)
    if i >= 0 and offset < start:
        # UnifiedLog.read: an offset below the log start is out of range, although its batch may still be on disk
        # until retention deletes the segment (UnifiedLog.scala checkLogStartOffset; DeleteRecords moves the start)
        raise OffsetNotFound(
            f"offset {offset} is below the log start offset {start} ({start_src}): the broker answers "
            "OFFSET_OUT_OF_RANGE; the bytes may still be in the segment until retention deletes it "
            "(kafkalog dump shows them)",
            file=partition_dir,
            expected=f"offset >= {start}",
            found=str(offset),
        )
    if i < 0:
        raise OffsetNotFound(
            f"offset {offset} is before the first segment of the log (base offset {bases[0]})",
            file=partition_dir,
            expected=f"offset >= {bases[0]}",
            found=str(offset),
        )
    warnings: list[str] = []
    log_end = None
    for base in bases[i:]:
        path = seg_path(partition_dir, base, ".log")
        with MappedFile(path) as log:
            stats.files_opened += 1
            pos = _start_position(partition_dir, base, offset, log, stats, warnings) if base <= offset else 0
            after = pos  # the end of the last readable batch before the answer
            for p, size, magic in _safe_walk(log, pos, path):
                stats.batches_read += 1
                stats.bytes_scanned += size
                e = read_entry(log.buf, p, magic, file=path)
                log_end = e.next_offset
                if e.last_offset < offset:
                    after = p + size
                    continue
                res = SeekResult(path, p, e, warnings=warnings, batch_base_offset=batch_base_offset(e, log.buf))
                _check(res, log.buf)
                if res.batch_base_offset is not None and res.batch_base_offset > offset:
                    res.exact = False
                    lost = _lost_between(log, after, p)
                    if lost:
                        res.warnings.append(f"offset {offset} may lie in the unreadable bytes {lost} of "
                                            f"{os.path.basename(path)} (they could not be read, so this is not known to "
                                            f"be a gap); the next readable batch starts at {res.batch_base_offset}")
                    else:
                        res.warnings.append(f"offset {offset} is not in the log (a gap, e.g. compacted away); the next batch starts at {res.batch_base_offset}")
                if want_record or not res.exact:
                    rec = _first_record(e, log.buf, lambda r: r.offset >= offset, stats)
                    res.record = rec
                    if rec is not None and rec.offset != offset and res.exact:
                        res.exact = False
                        res.warnings.append(f"offset {offset} is not in its batch (compacted away); the next record is {rec.offset}")
                res.findings = log.findings()
                return res
    raise OffsetNotFound(
        f"offset {offset} is beyond the end of the log (log end offset {log_end if log_end is not None else bases[-1]})",
        file=partition_dir,
        expected=f"offset < {log_end if log_end is not None else bases[-1]}",
        found=str(offset),
    )


# ------------------------------------------------------------------------------------------------ seek-time
def largest_timestamp(partition_dir: str, base: int, log: MappedFile, stats: SeekStats, warnings: list[str]) -> int:
    """The broker's ``LogSegment.largestTimestamp``: the last time-index entry's timestamp, or, when the time index
    is missing or empty, the ``.log`` file's mtime in milliseconds (errata E14).

    The mtime is what the broker uses to choose the segment for ListOffsets by timestamp, so we use it too rather
    than scanning the batch headers: a scan would pick a segment the broker skips (or the reverse) and answer with a
    different offset than the broker gives. No header-scan fallback is kept: an mtime always exists.
    """
    path = seg_path(partition_dir, base, ".timeindex")
    mf = _open_optional(path, stats)
    if mf is not None:
        with mf:
            n = trimmed_count(mf.buf, TIME_INDEX_ENTRY)
            if n > 0:
                stats.index_probes += 1
                ts = TIME_ENTRY.unpack_from(mf.buf, (n - 1) * TIME_SIZE)[0]
                if ts >= 0:
                    return ts
    mtime_ms = os.stat(log.path).st_mtime_ns // 10**6
    warnings.append(
        f"{os.path.basename(path)} is missing or empty: the .log mtime {mtime_ms} stands in for the segment's largest "
        "timestamp when choosing the segment, as in the broker"
    )
    return mtime_ms


def _time_lookup(partition_dir: str, base: int, target: int, stats: SeekStats, warnings: list[str]) -> int:
    """Offset of the largest time-index entry with timestamp <= target, else the base offset."""
    path = seg_path(partition_dir, base, ".timeindex")
    mf = _open_optional(path, stats)
    if mf is None:
        return base
    with mf:
        idx = TimeIndex(base, mf.buf, path)
        n = trimmed_count(mf.buf, TIME_INDEX_ENTRY)
        if n == 0:
            return base
        try:
            TimeIndex(base, mf.buf[: n * TIME_SIZE], path).sanity_check()
        except CorruptIndexError as exc:
            warnings.append(f"{exc.describe()}: ignoring the time index")
            return base

        def key(i: int) -> int:
            stats.index_probes += 1
            return TIME_ENTRY.unpack_from(mf.buf, i * TIME_SIZE)[0]

        slot = largest_lower_bound(n, key, target, WARM_BYTES // TIME_SIZE)
        if slot < 0:
            return base
        return max(base, idx.entry(slot)[1])


def seek_time(partition_dir: str, target: int, *, stats: SeekStats | None = None) -> SeekResult:
    """ListOffsets by timestamp: the first record whose timestamp >= target (LogAppendTime batches: every record has
    the batch timestamp). Raises OffsetNotFound when no record is that late."""
    stats = stats if stats is not None else SeekStats()
    bases = list_segments(partition_dir)
    stats.segments = len(bases)
    warnings: list[str] = []
    log_start, _src = log_start_offset(partition_dir, bases)
    for k, base in enumerate(bases):
        path = seg_path(partition_dir, base, ".log")
        with MappedFile(path) as log:
            stats.files_opened += 1
            # the last segment is always searched: a live broker's in-memory max can exceed its last time-index entry
            # (after a clean close the last entry is the max: LogSegment.close appends it)
            if k < len(bases) - 1 and largest_timestamp(partition_dir, base, log, stats, warnings) < target:
                continue
            # the broker searches this segment only, the first whose largest timestamp is >= target, from
            # max(time-index offset, log start) and for a record at or above the log start
            # (UnifiedLog.searchOffsetInLocalLog, LogSegment.findOffsetByTimestamp, FileRecords.searchForTimestamp)
            start_off = max(_time_lookup(partition_dir, base, target, stats, warnings), log_start)
            pos = _start_position(partition_dir, base, start_off, log, stats, warnings)
            after = pos  # the end of the last readable batch before the answer
            for p, size, magic in _safe_walk(log, pos, path):
                stats.batches_read += 1
                stats.bytes_scanned += size
                e = read_entry(log.buf, p, magic, file=path)
                if e.max_timestamp < target:
                    after = p + size
                    continue
                rec = _first_record(e, log.buf, lambda r: r.timestamp >= target and r.offset >= log_start, stats)
                if rec is not None:
                    res = SeekResult(path, p, e, rec, warnings, batch_base_offset=batch_base_offset(e, log.buf))
                    _check(res, log.buf)
                    lost = _lost_between(log, after, p)
                    if lost:
                        res.warnings.append(f"the records in the unreadable bytes {lost} of {os.path.basename(path)} "
                                            f"could not be checked: the first record with timestamp >= {target} may "
                                            "be among them (this is the first readable one)")
                    res.findings = log.findings()
                    return res
        raise OffsetNotFound(
            f"no record of {os.path.basename(path)}, the first segment whose largest timestamp is >= {target}, has a "
            f"timestamp >= {target}{f' at or above the log start offset {log_start}' if log_start > bases[0] else ''}:"
            " the broker searches that segment only and answers with no offset",
            file=path,
            expected=f"a record with timestamp >= {target} in {os.path.basename(path)}",
            found="none",
        )
    raise OffsetNotFound(
        f"no record has a timestamp >= {target}",
        file=partition_dir,
        expected=f"a record with timestamp >= {target}",
        found="none",
    )
