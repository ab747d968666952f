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
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafkalog_cli.errors import CorruptRecordError, KafkalogError, UnreadableFileError
from kafkalog_cli.format.crc import crc32c
from kafkalog_cli.format.layouts import (
    BATCH_V2_TO_MAX_TIMESTAMP,
    ENTRY_PREFIX,
    HEADER_SIZE_UP_TO_MAGIC,
    LEGACY_V0_RECORD_OVERHEAD,
    LOG_OVERHEAD,
    OFFSET_INDEX_ENTRY,
    TIME_INDEX_ENTRY,
    V2_ATTRIBUTES_OFFSET,
    V2_HEADER_SIZE,
)
from kafkalog_cli.format.legacy import LegacyEntry
from kafkalog_cli.storage import accel, layout
from kafkalog_cli.storage import companions as comp
from kafkalog_cli.storage.index import OFFSET_ENTRY, OFFSET_SIZE, TIME_ENTRY, TIME_SIZE, valid_count
from kafkalog_cli.storage.layout import segment_logs
from kafkalog_cli.storage.segment import MappedFile

if TYPE_CHECKING:
    from kafkalog_cli.ops.repair_plan import Step

INT_MAX = 2147483647
DEFAULT_INTERVAL = 4096
DEFAULT_SEGMENT_INDEX_BYTES = 10 * 1024 * 1024
_PREFIX = ENTRY_PREFIX.struct  # offset, size, epoch | crc, magic
_V2 = BATCH_V2_TO_MAX_TIMESTAMP.struct  # baseOffset .. maxTimestamp (43 bytes)
_OFF = OFFSET_ENTRY.pack
_TIME = TIME_ENTRY.pack


# ------------------------------------------------------------------------------------------------ the rule
@dataclass
class Rebuilt:
    """The indexes recovery would write for one segment, and where (if anywhere) it would stop."""

    base_offset: int
    log_size: int
    valid_bytes: int = 0
    batches: int = 0
    last_offset: int | None = None
    index: bytes = b""
    timeindex: bytes = b""
    problem: KafkalogError | None = None

    @property
    def index_entries(self) -> int:
        return len(self.index) // OFFSET_SIZE

    @property
    def time_entries(self) -> int:
        return len(self.timeindex) // TIME_SIZE


def rebuild_segment(
    buf: bytes | memoryview,
    base_offset: int,
    interval: int = DEFAULT_INTERVAL,
    *,
    file: str | None = None,
    segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES,
) -> Rebuilt:
    """Run LogSegment.recover's index rule over ``buf`` (a whole ``.log``).

    The compiled loop (``_accel.rebuild_index``) is used when available; it returns None for what it does not
    reproduce (a legacy entry, numbers beyond int64), and ``rebuild_segment_py``, the reference, runs instead.
    """
    mod = accel.module()
    if mod is not None and accel.fits_int64(interval) and -(1 << 62) < base_offset < 1 << 62 and 0 <= segment_index_bytes < 1 << 62:
        got = mod.rebuild_index(buf, base_offset, interval, segment_index_bytes)
        if got is not None:
            return _from_accel(got, base_offset, len(buf), file)
    return rebuild_segment_py(buf, base_offset, interval, file=file, segment_index_bytes=segment_index_bytes)


def _from_accel(got: tuple, base_offset: int, end: int, file: str | None) -> Rebuilt:
    """A ``Rebuilt`` from the C result, with the same problem text as ``rebuild_segment_py`` (stop codes in _accel.c)."""
    valid, batches, last, index, timeindex, code, pos, a, b = got
    out = Rebuilt(base_offset, end, valid, batches, last, index, timeindex)
    if code:
        message, expected, found = {
            1: ("record size below the minimum record overhead", f"size >= {LEGACY_V0_RECORD_OVERHEAD}", str(a)),
            2: ("partial batch at the end of the log", f"{a} bytes", f"{b} bytes left"),
            3: ("v2 batch smaller than its header", f"size >= {V2_HEADER_SIZE}", str(a)),
            4: ("batch CRC mismatch", f"crc {a}", f"crc {b}"),
            5: ("batch offset outside the segment's 32-bit relative range",
                f"offset in [{base_offset}, {base_offset + INT_MAX}]", str(a)),
            6: ("non-increasing offset at an index point (the broker would empty the segment)", f"offset > {a}", str(b)),
            7: ("offset index over capacity (segment.index.bytes)", f"<= {a} entries", "more"),
            8: ("time index offset going backwards", f">= {a}", str(b)),
            9: ("time index over capacity (segment.index.bytes)", f"<= {a} entries", "more"),
            10: ("trailing bytes after the last batch", "a batch header", f"{a} bytes"),
            11: (POSITION_MESSAGE, f"position <= {INT_MAX}", str(a)),
            12: (FINAL_TIME_MESSAGE, f">= {a}", str(b)),
        }[code]
        out.problem = CorruptRecordError(message, file=file, position=pos, expected=expected, found=found)
    return out


POSITION_MESSAGE = (
    "batch position above 2^31-1 (the broker's positions are 32-bit: it refuses a segment larger than "
    "Integer.MAX_VALUE bytes)"
)
FINAL_TIME_MESSAGE = (
    "time index offset going backwards at the final entry (InvalidOffsetException: the broker's recovery would "
    "empty the segment)"
)


def rebuild_segment_py(
    buf: bytes | memoryview,
    base_offset: int,
    interval: int = DEFAULT_INTERVAL,
    *,
    file: str | None = None,
    segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES,
) -> Rebuilt:
    """The reference implementation of ``rebuild_segment`` (pure Python; the C loop must match it exactly)."""
    end = len(buf)
    out = Rebuilt(base_offset, end)
    index = bytearray()
    tindex = bytearray()
    max_off_entries = segment_index_bytes // OFFSET_SIZE
    max_time_entries = segment_index_bytes // TIME_SIZE - 1
    valid = 0
    last_indexed = 0
    max_ts = -1
    max_ts_off = base_offset  # E18: the emptied time index reads back as (-1, baseOffset)
    last_index_off = -1
    last_time_ts = -1
    last_time_off = base_offset
    unpack_prefix = _PREFIX.unpack_from
    unpack_v2 = _V2.unpack_from
    # the declared sizes as locals: the loop below runs once per batch (~1 µs each matters)
    walk_end, v2_end = end - HEADER_SIZE_UP_TO_MAGIC, end - _V2.size
    min_length, overhead, v2_size, crc_from = LEGACY_V0_RECORD_OVERHEAD, LOG_OVERHEAD, V2_HEADER_SIZE, V2_ATTRIBUTES_OFFSET
    pos = 0
    batches = 0
    last = None

    def stop(message: str, expected: str, found: str, cls: type[KafkalogError] = CorruptRecordError) -> None:
        out.problem = cls(message, file=file, position=pos, expected=expected, found=found)

    while pos < walk_end:
        if pos > INT_MAX:
            stop(POSITION_MESSAGE, f"position <= {INT_MAX}", str(pos))
            break
        if pos <= v2_end:  # one unpack for the common v2 case
            b_off, length, _e, magic, crc, _a, delta, _bts, b_max = unpack_v2(buf, pos)
        else:
            _o, length, _e, magic = unpack_prefix(buf, pos)
            b_off = -1
        if length < min_length:
            stop("record size below the minimum record overhead", f"size >= {min_length}", str(length))
            break
        size = length + overhead
        if pos > end - size:
            stop("partial batch at the end of the log", f"{size} bytes", f"{end - pos} bytes left")
            break
        if magic >= 2:
            if size < v2_size:
                stop("v2 batch smaller than its header", f"size >= {v2_size}", str(size))
                break
            computed = crc32c(buf[pos + crc_from : pos + size])
            if computed != crc:
                stop("batch CRC mismatch", f"crc {crc}", f"crc {computed}")
                break
            b_last = b_off + delta
        else:
            try:
                entry = LegacyEntry(buf, pos)
            except KafkalogError as exc:
                stop(f"unreadable legacy message: {exc.message}", "a v0/v1 message", "unparsable")
                break
            if not entry.is_valid(buf):
                stop("legacy message CRC mismatch", f"crc {entry.crc}", f"crc {entry.computed_crc(buf)}")
                break
            b_last = entry.last_offset
            b_max = entry.timestamp
        rel = b_last - base_offset
        if rel < 0 or rel > INT_MAX:
            stop("batch offset outside the segment's 32-bit relative range", f"offset in [{base_offset}, {base_offset + INT_MAX}]", str(b_last))
            break
        if b_max > max_ts:
            max_ts, max_ts_off = b_max, b_last
        if valid - last_indexed > interval:
            # the broker's order: OffsetIndex.append checks isFull, then the offset; TimeIndex.maybeAppend checks
            # isFull (whatever the timestamp), then the offset, and appends only a larger timestamp
            if len(index) // OFFSET_SIZE >= max_off_entries:
                stop("offset index over capacity (segment.index.bytes)", f"<= {max_off_entries} entries", "more")
                break
            if index and b_last <= last_index_off:
                stop("non-increasing offset at an index point (the broker would empty the segment)", f"offset > {last_index_off}", str(b_last))
                break
            index += _OFF(rel, valid)
            last_index_off = b_last
            if len(tindex) // TIME_SIZE >= max_time_entries:
                stop("time index over capacity (segment.index.bytes)", f"<= {max_time_entries} entries", "more")
                break
            if tindex and max_ts_off < last_time_off:
                stop("time index offset going backwards", f">= {last_time_off}", str(max_ts_off))
                break
            if max_ts > last_time_ts:
                tindex += _TIME(max_ts, max_ts_off - base_offset)
                last_time_ts, last_time_off = max_ts, max_ts_off
            last_indexed = valid
        valid += size
        pos += size
        batches += 1
        last = b_last
    else:
        if pos < end:
            stop("trailing bytes after the last batch", "a batch header", f"{end - pos} bytes")
    # the final maybeAppend (full check skipped) still throws InvalidOffsetException for an offset below the last
    # entry's: recovery then empties the segment, so it is a problem, never a silently skipped entry
    if tindex and max_ts_off < last_time_off:
        if out.problem is None:
            pos = valid
            stop(FINAL_TIME_MESSAGE, f">= {last_time_off}", str(max_ts_off))
    elif max_ts > last_time_ts:
        tindex += _TIME(max_ts, max_ts_off - base_offset)
    out.valid_bytes = valid
    out.batches = batches
    out.last_offset = last
    out.index = bytes(index)
    out.timeindex = bytes(tindex)
    return out


# ------------------------------------------------------------------------------------------------ comparison
@dataclass
class Comparison:
    kind: str  # "index" | "timeindex"
    path: str
    status: str  # "match" | "match-trimmed" | "missing" | "differs"
    existing_entries: int = 0
    rebuilt_entries: int = 0
    first_difference: dict | None = None  # {"entry": i, "expected": ..., "found": ...}
    lookup_valid: bool | None = None
    lookup_note: str = ""

    def text(self) -> str:
        if self.status == "match":
            return "matches the rebuilt index byte for byte"
        if self.status == "match-trimmed":
            return "matches after trimming the preallocated tail (zero-filled slots)"
        if self.status == "missing":
            return "missing (the rebuilt one would be created)"
        if self.lookup_valid is False and self.lookup_note.startswith("size-invalid"):
            return f"WRONG: {self.lookup_note}; {self.rebuilt_entries} entries rebuilt"
        d = self.first_difference or {}
        text = (
            f"differs at entry {d.get('entry')}: expected {d.get('expected')}, found {d.get('found')} "
            f"({self.existing_entries} entries on disk, {self.rebuilt_entries} rebuilt)"
        )
        if self.lookup_valid is True:
            text += f"; existing entries are valid for lookups ({self.lookup_note}), so the file is kept"
        elif self.lookup_valid is False:
            text += f"; existing index is WRONG for lookups: {self.lookup_note}"
        return text


def _describe(kind: str, base: int, data: bytes | memoryview, i: int) -> str:
    if kind == "index":
        if (i + 1) * OFFSET_SIZE > len(data):
            return "end of index"
        rel, p = OFFSET_ENTRY.unpack_from(data, i * OFFSET_SIZE)
        return f"offset {base + rel} position {p}"
    if (i + 1) * TIME_SIZE > len(data):
        return "end of index"
    ts, rel = TIME_ENTRY.unpack_from(data, i * TIME_SIZE)
    return f"timestamp {ts} offset {base + rel}"


def _all_zero(data: bytes | memoryview, start: int) -> bool:
    chunk = 1 << 20
    zeros = bytes(chunk)
    for p in range(start, len(data), chunk):
        piece = data[p : p + chunk]
        if piece != zeros[: len(piece)]:
            return False
    return True


def compare(kind: str, path: str, base: int, existing: bytes | memoryview | None, rebuilt: bytes) -> Comparison:
    size = OFFSET_SIZE if kind == "index" else TIME_SIZE
    n_new = len(rebuilt) // size
    if existing is None:
        return Comparison(kind, path, "missing", 0, n_new)
    n_old = len(existing) // size
    cmp = Comparison(kind, path, "differs", n_old, n_new)
    if len(existing) == len(rebuilt) and existing == rebuilt:
        cmp.status = "match"
        return cmp
    if len(existing) > len(rebuilt) and existing[: len(rebuilt)] == rebuilt and _all_zero(existing, len(rebuilt)):
        cmp.status = "match-trimmed"
        return cmp
    for i in range(max(n_old, n_new) + 1):
        a = bytes(existing[i * size : (i + 1) * size])
        b = rebuilt[i * size : (i + 1) * size]
        if a != b:
            cmp.first_difference = {
                "entry": i,
                "expected": _describe(kind, base, rebuilt, i),
                "found": _describe(kind, base, existing, i) if len(a) == size else f"{len(a)} trailing bytes" if a else "end of index",
            }
            break
    return cmp


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
    plans: list = field(default_factory=list)  # safety.Plan per partition
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


def group_targets(paths: list[str]) -> dict[str, list[str] | None]:
    """partition dir -> selected .log paths (None = every segment). Accepts partition dirs and segment files."""
    groups: dict[str, list[str] | None] = {}
    for p in paths:
        if os.path.isdir(p):
            groups[os.path.abspath(p)] = None
            continue
        if not os.path.exists(p):
            raise UnreadableFileError("no such file or directory", file=p)
        d = os.path.dirname(os.path.abspath(p))
        stem = os.path.basename(p).split(".", 1)[0]
        log = os.path.join(d, stem + ".log")
        if not os.path.exists(log):
            raise UnreadableFileError("no .log segment for this file", file=p, expected=f"{stem}.log beside it", found="none")
        if d in groups and groups[d] is None:
            continue
        sel = groups.setdefault(d, [])
        if log not in sel:  # type: ignore[operator]
            sel.append(log)  # type: ignore[union-attr]
    return groups


def run(
    paths: list[str],
    *,
    interval: int = DEFAULT_INTERVAL,
    execute: bool = False,
    backup_dir: str | None = None,
    segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES,
    rewrite_valid: bool = False,
) -> RebuildResult:
    """Dry run (compare) or execute (write through safety.Transaction) for each partition directory in ``paths``."""
    from kafkalog_cli.ops import safety

    result = RebuildResult()
    for pdir, selected in group_targets(paths).items():
        if execute:
            # held from recovery to the last rename, so that a broker cannot start on half-written files
            with safety.locked_log_dir(pdir):
                result.recovered += [f"{pdir}: {line}" for line in safety.recover_interrupted(pdir)]
                _run_partition(result, pdir, selected, interval, execute, backup_dir, segment_index_bytes, rewrite_valid)
        else:
            _run_partition(result, pdir, selected, interval, execute, backup_dir, segment_index_bytes, rewrite_valid)
    return result


def _run_partition(
    result: RebuildResult,
    pdir: str,
    selected: list[str] | None,
    interval: int,
    execute: bool,
    backup_dir: str | None,
    segment_index_bytes: int,
    rewrite_valid: bool = False,
) -> None:
    """Compare (and with ``execute`` rewrite) one partition directory's indexes; appends to ``result``.

    The files to write are ``repair_plan`` steps: the dry run's actions are those steps, ``--execute`` performs them."""
    from kafkalog_cli.ops import repair_plan, safety

    logs = segment_logs(pdir)
    if not logs:
        raise layout.no_segment(pdir)
    active_base = logs[-1][0]
    chosen = [(b, p) for b, p in logs if selected is None or p in selected]
    plan = safety.Plan(pdir)
    if execute:  # refused before anything is compared, even when nothing is to be written
        safety.check_backup_dir(pdir, safety.backup_subdir(backup_dir, pdir))
    steps: list[repair_plan.Step] = []
    for base, log_path in chosen:
        rep, rb = examine_segment(log_path, base == active_base, interval, segment_index_bytes)
        rep.rewrite_valid = rewrite_valid
        result.segments.append(rep)
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
    result.txn_differences += len(txn_steps)
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
        "segments_skipped": sum(1 for r in result.segments if r.problem and os.path.dirname(r.log_path) == pdir),
    }
    if execute and steps:
        result.backup_dirs += repair_plan.execute_steps(pdir, steps, backup_dir)
    plan.notes += safety.log_dir_warnings(pdir)
    result.plans.append(plan)


def _txn_index_steps(pdir: str, bases: list[int]) -> list[Step]:
    """The ``.txnindex`` call site (rebuild_txnindex.py): a step for every one that is missing or differs."""
    from kafkalog_cli.ops import repair_plan
    from kafkalog_cli.ops.rebuild_txnindex import rebuild_txn_indexes

    return [repair_plan.write(t.name, t.data, shown="create" if t.status == "missing" else "replace",
                              size=len(t.data),
                              detail=f"{t.status}: rebuilt from the log's ABORT markers ({len(t.data) // 34} entries)")
            for t in rebuild_txn_indexes(pdir)
            if t.base in bases and t.needs_write and t.data is not None]
