"""``LogSegment.recover``'s index rule: the ``.index`` and ``.timeindex`` the broker's segment recovery writes for
one ``.log``, and where recovery stops (spec §6.5 "On recovery", errata E4, E10, E11, E16, E18), plus the
comparison of a rebuilt index with the one on disk.

Why here: the broker's loader model (``broker/loader.py``: which segments recovery truncates or empties) and the
``rebuild-index`` command (``ops/rebuild_index.py``) apply the same rule; it is written once, in the broker's
model, below both (apache/kafka 1eb7644 ``storage/.../log/LogSegment.java`` ``recover`` 472-520).

The rule: walk the batch headers; at each batch whose start lies *strictly more* than ``index.interval.bytes``
after the last indexed batch's start, append (batch LAST offset, batch START position) to the offset index and
(running max timestamp, last offset of the batch that first reached it) to the time index if that timestamp is
larger than the last time entry; the first batch is never indexed; a final time entry follows the loop. Timestamps
of -1 are never written. Only headers are read (one ``unpack_from`` and one CRC-32C per batch over the mmap).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkalog_cli.errors import CorruptRecordError, KafkalogError
from kafkalog_cli.format.crc import crc32c
from kafkalog_cli.format.layouts import (
    BATCH_V2_TO_MAX_TIMESTAMP,
    ENTRY_PREFIX,
    HEADER_SIZE_UP_TO_MAGIC,
    LEGACY_V0_RECORD_OVERHEAD,
    LOG_OVERHEAD,
    V2_ATTRIBUTES_OFFSET,
    V2_HEADER_SIZE,
)
from kafkalog_cli.format.legacy import LegacyEntry
from kafkalog_cli.storage import accel
from kafkalog_cli.storage.index import OFFSET_ENTRY, OFFSET_SIZE, TIME_ENTRY, TIME_SIZE

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


class IndexBuilder:
    """The same rule fed one batch at a time, for a writer that has each batch's header at hand (``export --format
    kafka``): no second read of the segment it wrote, so memory stays flat in the segment's size (mapping a 1 GiB
    ``.log`` to rebuild its indexes made 1 GiB resident). Only for whole v2 batches whose CRC is known good (the
    writer's own): the CRC and legacy checks of ``rebuild_segment_py`` are left out, every other step is the same,
    and a problem stops the indexing where ``rebuild_segment`` stops (``finish`` returns what it would)."""

    def __init__(self, base_offset: int, interval: int = DEFAULT_INTERVAL, *, file: str | None = None,
                 segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES) -> None:
        self.base = base_offset
        self.interval = interval
        self.file = file
        self.max_off_entries = segment_index_bytes // OFFSET_SIZE
        self.max_time_entries = segment_index_bytes // TIME_SIZE - 1
        self.index = bytearray()
        self.tindex = bytearray()
        self.valid = 0
        self.last_indexed = 0
        self.max_ts = -1
        self.max_ts_off = base_offset
        self.last_index_off = -1
        self.last_time_ts = -1
        self.last_time_off = base_offset
        self.batches = 0
        self.last: int | None = None
        self.problem: KafkalogError | None = None

    def _stop(self, message: str, expected: str, found: str) -> None:
        self.problem = CorruptRecordError(message, file=self.file, position=self.valid, expected=expected, found=found)

    def add(self, last_offset: int, max_timestamp: int, size: int) -> None:
        """One batch: its last offset, max timestamp and size in bytes, in log order."""
        if self.problem is not None:
            return
        valid = self.valid
        if valid > INT_MAX:
            self._stop(POSITION_MESSAGE, f"position <= {INT_MAX}", str(valid))
            return
        rel = last_offset - self.base
        if rel < 0 or rel > INT_MAX:
            self._stop("batch offset outside the segment's 32-bit relative range",
                       f"offset in [{self.base}, {self.base + INT_MAX}]", str(last_offset))
            return
        if max_timestamp > self.max_ts:
            self.max_ts, self.max_ts_off = max_timestamp, last_offset
        if valid - self.last_indexed > self.interval:
            index, tindex = self.index, self.tindex
            if len(index) // OFFSET_SIZE >= self.max_off_entries:
                self._stop("offset index over capacity (segment.index.bytes)", f"<= {self.max_off_entries} entries",
                           "more")
                return
            if index and last_offset <= self.last_index_off:
                self._stop("non-increasing offset at an index point (the broker would empty the segment)",
                           f"offset > {self.last_index_off}", str(last_offset))
                return
            index += _OFF(rel, valid)
            self.last_index_off = last_offset
            if len(tindex) // TIME_SIZE >= self.max_time_entries:
                self._stop("time index over capacity (segment.index.bytes)", f"<= {self.max_time_entries} entries",
                           "more")
                return
            if tindex and self.max_ts_off < self.last_time_off:
                self._stop("time index offset going backwards", f">= {self.last_time_off}", str(self.max_ts_off))
                return
            if self.max_ts > self.last_time_ts:
                tindex += _TIME(self.max_ts, self.max_ts_off - self.base)
                self.last_time_ts, self.last_time_off = self.max_ts, self.max_ts_off
            self.last_indexed = valid
        self.valid = valid + size
        self.batches += 1
        self.last = last_offset

    def finish(self, log_size: int | None = None) -> Rebuilt:
        out = Rebuilt(self.base, self.valid if log_size is None else log_size, self.valid, self.batches, self.last)
        tindex = self.tindex
        if tindex and self.max_ts_off < self.last_time_off:  # as the reference: after a stop too
            if self.problem is None:
                self._stop(FINAL_TIME_MESSAGE, f">= {self.last_time_off}", str(self.max_ts_off))
        elif self.max_ts > self.last_time_ts:
            tindex = tindex + _TIME(self.max_ts, self.max_ts_off - self.base)
        out.problem = self.problem
        out.index = bytes(self.index)
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
