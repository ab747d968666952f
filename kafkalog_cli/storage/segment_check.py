"""One segment's check, as data: every corrupt byte range of a ``.log`` file, its indexes against it, and the resync
map (every intact entry, every skipped region).

Kafka's own scanner (and DumpLogSegments) stops at the first bad length field and hides every good batch after
it. Here the segment is walked header by header on a read-only mmap; where an entry fails a check, we resync:
search forward for the next position whose header is plausible *and* whose CRC verifies, report the bytes in
between as one region ``[start, end)`` with the last good offset before it and the first good offset after it,
and go on. Record bytes are decoded only with ``deep=True``.

Why in storage/: it is the one reading of a damaged segment every layer above shares: ``verify-crc`` and ``scan``
(``verify_segment``), the broker model's description of what recovery removes (``broker/loader.py``:
``map_segment``), salvage's cut list, dump's and seek's resync (``find_next_valid``). ``ops/verify.py`` expands the
PATH arguments and adds the cross-file checks. Nothing here prints; problems are ``Problem`` values
(``storage/verify_model.py``).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

from kafkalog_cli.errors import UNREADABLE, FileVanishedError, KafkalogError, ReadFinding, UnreadableFileError
from kafkalog_cli.format.crc import crc32, crc32c
from kafkalog_cli.format.layouts import (
    BATCH_V2,
    ENTRY_PREFIX,
    HEADER_SIZE_UP_TO_MAGIC,
    INT64,
    LEGACY_CRC_START,
    LEGACY_TIMESTAMP_OFFSET,
    LEGACY_V0,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    V2_ATTRIBUTES_OFFSET,
    V2_HEADER_SIZE,
    V2_MIN_BATCH_LENGTH,
)
from kafkalog_cli.format.legacy import RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1
from kafkalog_cli.storage import accel
from kafkalog_cli.storage.safe_read import vanished_finding
from kafkalog_cli.storage.segment import MappedFile
from kafkalog_cli.storage.verify_index import OffsetIndexCheck, TimeIndexCheck
from kafkalog_cli.storage.verify_model import (
    DEFAULT_MAX_PROBLEMS,
    ERROR,
    INFO,
    REGION_KINDS,
    WARNING,
    Problem,
    SegmentReport,
)

DEFAULT_MAX_BATCH_SIZE = 256 * 1024 * 1024
INT32_MAX = 2147483647
FUTURE_SLACK_MS = 366 * 24 * 3600 * 1000  # a timestamp more than a year ahead of the clock is implausible


_PREFIX = ENTRY_PREFIX.struct  # baseOffset, size, partitionLeaderEpoch | legacy crc, magic
_V2 = BATCH_V2.struct  # the 61-byte v2 header
_LEGACY = LEGACY_V0.struct  # offset, size, crc, magic, attributes
_I64 = INT64.struct
# positions in the tuple _V2 returns (the loops keep the tuple and hand it to on_v2)
_CRC, _ATTRS, _LOD, _COUNT = (BATCH_V2.index(f) for f in ("crc", "attributes", "last_offset_delta", "records_count"))
V2_HEADER = V2_HEADER_SIZE
V2_MIN_SIZE = V2_MIN_BATCH_LENGTH
LEGACY_MIN_SIZE = {0: RECORD_OVERHEAD_V0, 1: RECORD_OVERHEAD_V1}
_HEADER = HEADER_SIZE_UP_TO_MAGIC  # 17
_MAGIC2 = re.compile(b"\x02")
_MAGIC_LEGACY = re.compile(b"[\x00\x01]")
_NONZERO = re.compile(b"[^\x00]")
_ZEROS = bytes(1 << 20)
PROGRESS_EVERY = 32 << 20
try:  # the zero scan is a safety/speed primitive of the accelerator, used even with KAFKALOG_NO_ACCEL
    from kafkalog_cli._accel import first_nonzero as _first_nonzero
except ImportError:  # pragma: no cover - depends on the build
    _first_nonzero = None  # type: ignore[assignment]  # the stub types the built function


# ---------------------------------------------------------------------------------------------------- segment
class _Walker:
    """State of one segment walk; a class only to keep the hot loop's locals together."""

    def __init__(self, buf: Any, report: SegmentReport, *, deep: bool, max_batch_size: int, max_problems: int,
                 observers: list[Any], progress: Callable[[int], None] | None,
                 extents: Callable[[], list[tuple[int, int]]] | None = None,
                 progress_every: int = PROGRESS_EVERY) -> None:
        self.buf = buf
        self.extents = extents  # the file's data extents (SEEK_DATA/SEEK_HOLE), asked for on the first zero run
        self.n = len(buf)
        self.r = report
        self.file = report.path
        self.deep = deep
        self.max_size = max(max_batch_size, V2_MIN_SIZE)
        self.max_problems = max_problems
        self.observers = observers
        self.progress = progress
        self.progress_every = max(progress_every, 1)
        self.base = report.base_offset if report.base_offset is not None else 0
        self.prev_last: int | None = None  # last offset of the previous good entry
        self.prev_epoch = -1
        self.magics: set[int] = set()
        self.resync_cache: tuple[int, int | None] | None = None  # (start, earliest valid position >= start)
        self.now_ms = int(time.time() * 1000)
        # the compiled fast path over runs of clean v2 batches (not with --deep: that parses every batch anyway)
        self.fast: Callable[..., Any] | None = None
        mod = accel.module()
        if mod is not None and not deep and accel.fits_int64(self.base, self.now_ms + FUTURE_SLACK_MS):
            self.fast = mod.verify_run
        # --deep: the compiled record walk says "certainly clean" or hands the batch to the Python walk (issue 20)
        self.check_records = getattr(mod, "check_records", None) if deep and mod is not None else None

    def problem(self, position: int, end: int, kind: str, message: str, severity: str = ERROR, **kw: Any) -> None:
        self.r.add(Problem(self.file, position, end, kind, message, severity, **kw), self.max_problems)

    # ------------------------------------------------------------------------------------------- entry checks
    def valid_at(self, p: int) -> bool:
        """True when a plausible entry whose CRC verifies starts at ``p`` (the resync criterion)."""
        buf, n = self.buf, self.n
        if n - p < _HEADER + 5:
            return False
        off, size, _x, magic = _PREFIX.unpack_from(buf, p)
        if off < 0 or size > self.max_size or p + LOG_OVERHEAD + size > n:
            return False
        if magic == 2:
            if size < V2_MIN_SIZE:
                return False
            h = _V2.unpack_from(buf, p)
            if h[_ATTRS] & 0x07 > 4 or h[_LOD] < 0 or h[_COUNT] < 0:
                return False
            return h[_CRC] == crc32c(buf[p + V2_ATTRIBUTES_OFFSET : p + LOG_OVERHEAD + size])
        if magic == 0 or magic == 1:
            if size < LEGACY_MIN_SIZE[magic]:
                return False
            _o, _s, crc, _m, attrs = _LEGACY.unpack_from(buf, p)
            if attrs & 0x07 > 3:
                return False
            return crc == crc32(buf[p + LEGACY_CRC_START : p + LOG_OVERHEAD + size])
        return False

    def diagnose(self, p: int) -> tuple[str, str, int | None]:
        """Why the entry at ``p`` is bad: (kind, message, declared end or None). Called only on failures."""
        buf, n = self.buf, self.n
        left = n - p
        if left < _HEADER:
            return "truncated", f"{left} bytes at the end of the file are too few for an entry header ({_HEADER} bytes)", None
        off, size, _x, magic = _PREFIX.unpack_from(buf, p)
        if magic not in (0, 1, 2):
            return "bad-magic", f"magic byte is {magic}, expected 0, 1 or 2 (size field {size})", None
        minimum = V2_MIN_SIZE if magic == 2 else LEGACY_MIN_SIZE[magic]
        if size < minimum:
            return "bad-size", f"size field {size} is below the minimum {minimum} for magic v{magic}", None
        if size > self.max_size:
            return ("size-too-large",
                    f"size field {size} is above --max-batch-size {self.max_size} (not read)", None)
        end = p + LOG_OVERHEAD + size
        if end > n:
            return ("truncated",
                    f"magic v{magic} entry declares {LOG_OVERHEAD + size} bytes but only {left} remain in the file", None)
        if magic == 2:
            h = BATCH_V2.read(buf, p)  # a cold path: fields by name
            computed = crc32c(buf[p + V2_ATTRIBUTES_OFFSET : end])
            if computed != h.crc:
                return ("crc-mismatch",
                        f"batch baseOffset {off}: stored CRC-32C {h.crc} != computed {computed}", end)
            if h.attributes & 0x07 > 4:
                return "bad-codec", f"batch baseOffset {off}: unknown compression codec id {h.attributes & 7}", end
            return ("bad-size",
                    f"batch baseOffset {off}: recordsCount {h.records_count} / lastOffsetDelta {h.last_offset_delta} "
                    "negative", end)
        _o, _s, crc, _m, attrs = _LEGACY.unpack_from(buf, p)
        computed = crc32(buf[p + LEGACY_CRC_START : end])
        if computed != crc:
            return "crc-mismatch", f"v{magic} message offset {off}: stored CRC-32 {crc} != computed {computed}", end
        return "bad-codec", f"v{magic} message offset {off}: codec id {attrs & 7} is not allowed", end

    # ------------------------------------------------------------------------------------------- resync
    def resync(self, start: int) -> int | None:
        """Earliest position >= start where ``valid_at`` holds, or None. Candidates are found with ``re``
        searches for magic bytes at offset 16 (C speed); legacy magics are searched only before the next v2
        candidate and only when the file has legacy entries (or none seen yet), and zero runs are skipped whole.
        """
        cache = self.resync_cache
        if cache is not None and cache[0] <= start and (cache[1] is None or start <= cache[1]):
            return cache[1]
        found = self._search(start, _MAGIC2, self.n)
        legacy_wanted = not self.magics or bool(self.magics & {0, 1})
        if legacy_wanted:
            limit = found if found is not None else self.n
            legacy = self._search(start, _MAGIC_LEGACY, limit)
            if legacy is not None and (found is None or legacy < found):
                found = legacy
        self.resync_cache = (start, found)
        return found

    def _search(self, start: int, pattern: re.Pattern[bytes], limit: int) -> int | None:
        buf, n = self.buf, self.n
        q = start + MAGIC_OFFSET
        stop = min(limit + MAGIC_OFFSET, n)
        while q < stop:
            m = pattern.search(buf, q, stop)
            if m is None:
                return None
            j = m.start()
            h = j - MAGIC_OFFSET
            if pattern is _MAGIC_LEGACY and buf[h:j] == _ZEROS[:MAGIC_OFFSET]:
                q = self.zero_end(j)  # skip a zero run in one C-speed sweep
                if q >= stop:
                    return None
                q = max(q, j + 1)
                continue
            if self.valid_at(h):
                return h
            q = j + 1
        return None

    # ------------------------------------------------------------------------------------------- main loop
    def run(self) -> None:
        buf, n, r = self.buf, self.n, self.r
        pos = 0
        every = self.progress_every
        next_report = every
        reported = 0
        unpack_prefix = _PREFIX.unpack_from
        unpack_v2 = _V2.unpack_from
        max_size = self.max_size
        i_crc, i_attrs, i_lod, i_count = _CRC, _ATTRS, _LOD, _COUNT  # locals: the loop below is the hot path
        overhead, crc_from = LOG_OVERHEAD, V2_ATTRIBUTES_OFFSET
        while pos < n:
            if self.progress is not None and pos >= next_report:
                self.progress(pos - reported)
                reported = pos
                next_report = pos + every
            # ---- compiled fast path: a run of v2 batches on which on_v2 would report nothing
            if self.fast is not None:
                npos = self._fast_run(pos, next_report if self.progress is not None else n)
                if npos != pos:
                    pos = npos
                    continue  # the loop top handles progress; then the batch C stopped at goes the Python way
            # ---- fast path: a v2 batch whose header is sane and whose CRC verifies
            if n - pos >= V2_HEADER:
                off, size, _x, magic = unpack_prefix(buf, pos)
                if magic == 2 and V2_MIN_SIZE <= size <= max_size and pos + overhead + size <= n:
                    h = unpack_v2(buf, pos)
                    if (h[i_crc] == crc32c(buf[pos + crc_from : pos + overhead + size]) and h[i_attrs] & 7 <= 4
                            and h[i_lod] >= 0 and h[i_count] >= 0):
                        self.on_v2(pos, size + overhead, h)
                        pos += size + overhead
                        continue
            if self.valid_at(pos):  # a legacy entry
                size = self.on_legacy(pos)
                pos += size
                continue
            pos = self.on_bad(pos)
        r.bytes_checked = n
        if self.progress is not None and n > reported:
            self.progress(n - reported)

    def _fast_run(self, pos: int, stop_at: int) -> int:
        """Let ``_accel.verify_run`` take the clean v2 batches from ``pos`` on; apply what ``on_v2`` would have done
        for them (counters, offsets, epochs, index observers) and return where it stopped. It stops before the first
        batch on which any check of ``on_v2``/``_offsets``/``_timestamps`` would report something, so that batch and
        its exact problem text come from the Python code."""
        fast = self.fast
        assert fast is not None  # called only when the compiled fast path was found
        prev_last = self.prev_last
        has_prev = prev_last is not None
        if prev_last is not None and not accel.fits_int64(prev_last):
            return pos
        (npos, count, records, first_base, last, first_epoch, prev_epoch, saw_epoch, entries) = fast(
            self.buf, pos, stop_at, min(self.max_size, accel.INT64_MAX), self.base, has_prev,
            prev_last if has_prev else 0, self.prev_epoch, self.now_ms + FUTURE_SLACK_MS, bool(self.observers))
        if count:
            r = self.r
            r.batches += count
            r.records += records
            if not has_prev:
                r.first_offset = first_base
            self.prev_last = r.last_offset = last
            self.magics.add(2)
            if saw_epoch:
                if r.first_epoch is None:
                    r.first_epoch = first_epoch
                self.prev_epoch = r.last_epoch = prev_epoch
            if entries:
                observers = self.observers
                for p, size, base, b_last, max_ts in accel.iter_run_entries(entries):
                    for obs in observers:
                        obs.on_entry(p, size, base, b_last, max_ts)
        return npos

    def on_bad(self, pos: int) -> int:
        """Report the corrupt region starting at ``pos``; return where the walk continues."""
        kind, message, declared_end = self.diagnose(pos)
        z = self.zero_end(pos)
        # an entry starting inside a zero run has at most its 11 leading bytes (baseOffset and the size field's high
        # bytes) zero, so the resync may start there: a preallocated or sparse tail is skipped at memory speed
        nxt = self.resync(max(pos + 1, z - 11)) if z < self.n else None
        end = nxt if nxt is not None else self.n
        # a chain of corrupt batches whose own lengths still link up is reported batch by batch
        if declared_end is not None and declared_end < end and self._plausible_header(declared_end, end):
            end = declared_end
        first_good = _PREFIX.unpack_from(self.buf, nxt)[0] if nxt is not None else None
        if kind == "truncated" and nxt is not None and declared_end is None and self.n - pos >= _HEADER:
            kind = "bad-size"  # the size field points past EOF, yet valid data follows: the field is corrupt
            message = message.replace("entry declares", "entry's size field declares")
        if z >= end:
            if end == self.n:
                kind, severity = "zero-tail", INFO
                message = (f"{end - pos} zero bytes at the end of the segment (preallocated or unwritten tail; "
                           "Kafka's recovery truncates them)")
            else:
                kind, severity = "zero-filled", ERROR
                message = f"{end - pos} zero bytes in the middle of the segment"
        else:
            severity = ERROR
            if nxt is None:
                message += "; no valid entry follows"
            elif end == nxt and declared_end is not None and declared_end != nxt:
                message += f"; the next valid entry starts at byte {nxt}, not at the declared end {declared_end}"
        self.r.regions += severity != INFO
        if severity != INFO:
            self.r.corrupt_bytes += end - pos
        # a whole entry whose check failed (CRC, codec, counts) still names its base offset: the problem's offset
        offset = _PREFIX.unpack_from(self.buf, pos)[0] if declared_end is not None else None
        self.problem(pos, end, kind, message, severity, last_good_offset=self.prev_last, first_good_offset=first_good,
                     offset=offset)
        for obs in self.observers:
            obs.on_region(pos, end, severity != INFO)
        return end

    def zero_end(self, p: int) -> int:
        """The end of the run of zero bytes starting at ``p`` (``p`` itself when ``buf[p]`` is not zero). Holes of a
        sparse file are skipped without reading them; data is scanned by ``_accel.first_nonzero`` (memory speed)."""
        n = self.n
        if p >= n or self.buf[p]:
            return p
        if self.extents is not None and self._extents is None:
            self._extents = self.extents()
        for a, b in self._extents or ((0, n),):
            if b <= p:
                continue
            if a > p:
                p = a  # a hole up to the next data extent: zeros without I/O
                if p >= n:
                    return n
            q = _next_nonzero(self.buf, p, min(b, n))
            if q < min(b, n):
                return q
            p = min(b, n)
        return n

    _extents: list[tuple[int, int]] | None = None

    def _plausible_header(self, p: int, limit: int) -> bool:
        if self.n - p < _HEADER:
            return False
        _o, size, _x, magic = _PREFIX.unpack_from(self.buf, p)
        if magic == 2:
            return V2_MIN_SIZE <= size <= self.max_size and p + LOG_OVERHEAD + size <= limit
        if magic in (0, 1):
            return LEGACY_MIN_SIZE[magic] <= size <= self.max_size and p + LOG_OVERHEAD + size <= limit
        return False

    # ------------------------------------------------------------------------------------------- good entries
    def _offsets(self, pos: int, end: int, base: int, last: int) -> None:
        r = self.r
        if self.prev_last is None:
            if base < self.base:
                self.problem(pos, end, "offset-below-base",
                             f"first entry's offset {base} is below the segment's base offset {self.base} (file name)",
                             offset=base)
            r.first_offset = base
        elif base <= self.prev_last:
            self.problem(pos, end, "offset-order",
                         f"entry offset {base} does not follow the previous entry's last offset {self.prev_last}",
                         offset=base)
        if last - self.base > INT32_MAX or last < base:
            self.problem(pos, end, "offset-overflow",
                         f"last offset {last} is not within [{base}, base offset {self.base} + 2^31-1]", offset=base)
        self.prev_last = last
        r.last_offset = last

    def on_v2(self, pos: int, size: int, h: tuple) -> None:
        (base, _s, epoch, _m, _crc, attrs, lod, base_ts, max_ts, _pid, _pe, _seq, count) = h
        end = pos + size
        r = self.r
        r.batches += 1
        r.records += count
        last = base + lod
        self.magics.add(2)
        self._offsets(pos, end, base, last)
        if count > lod + 1:
            self.problem(pos, end, "bad-count",
                         f"batch baseOffset {base}: recordsCount {count} > lastOffsetDelta {lod} + 1", offset=base)
        if epoch >= 0:
            if epoch < self.prev_epoch:
                self.problem(pos, end, "leader-epoch",
                             f"batch baseOffset {base}: partitionLeaderEpoch {epoch} is below the previous batch's "
                             f"{self.prev_epoch} (the field is not covered by the CRC)", WARNING, offset=base)
            if r.first_epoch is None:
                r.first_epoch = epoch
            self.prev_epoch = max(self.prev_epoch, epoch)
            r.last_epoch = self.prev_epoch
        self._timestamps(pos, end, base, attrs, base_ts, max_ts, count)
        if self.deep:
            self._deep(pos, end, base, last)
        for obs in self.observers:
            obs.on_entry(pos, size, base, last, max_ts)

    def _timestamps(self, pos: int, end: int, base: int, attrs: int, base_ts: int, max_ts: int, count: int) -> None:
        horizon = attrs & 0x40
        limit = self.now_ms + FUTURE_SLACK_MS
        bad = None
        if max_ts < -1 or (base_ts < -1 and not horizon):
            bad = f"negative timestamp (baseTimestamp {base_ts}, maxTimestamp {max_ts})"
        elif max_ts > limit:
            bad = f"maxTimestamp {max_ts} is more than a year in the future"
        elif not horizon and not attrs & 0x08 and count > 0 and base_ts >= 0 and max_ts < base_ts:
            bad = f"CreateTime maxTimestamp {max_ts} is below baseTimestamp {base_ts}"
        if bad:
            self.problem(pos, end, "timestamp", f"batch baseOffset {base}: {bad}", WARNING, offset=base)

    def _deep(self, pos: int, end: int, base: int, last: int) -> None:
        from kafkalog_cli.format.batch import Batch

        batch = Batch(self.buf, pos)
        check = self.check_records
        # a payload decoded as a stream (Batch.streams_payload) is never held whole: Python walks it
        if check is not None and batch.records_count > 0 and accel.fits_int64(base, last) and not batch.streams_payload:
            try:
                data, start = batch.payload(self.buf, self.max_size)
            except KafkalogError:
                data = None  # the Python walk below reports it
            if data is not None:
                stop = end if data is self.buf else len(data)
                if check(data, start, stop, batch.records_count, base, last):
                    return
                del data  # a decompressed payload is not held twice while Python re-walks the batch
        prev = None
        try:
            for rec in batch.iter_records(self.buf, self.max_size, copy=False):
                if rec.offset < base or rec.offset > last or (prev is not None and rec.offset <= prev):
                    self.problem(pos, end, "bad-records",
                                 f"batch baseOffset {base}: record offset {rec.offset} is outside [{base}, {last}] "
                                 f"or not increasing", offset=base)
                    return
                prev = rec.offset
        except KafkalogError as exc:
            where = exc.position if exc.position is not None and pos <= exc.position < end else pos
            self.problem(where, end, "bad-records", f"batch baseOffset {base}: {exc.message}", offset=base)

    def on_legacy(self, pos: int) -> int:
        off, size, _crc, magic, attrs = _LEGACY.unpack_from(self.buf, pos)
        size += LOG_OVERHEAD
        end = pos + size
        r = self.r
        r.batches += 1
        self.magics.add(magic)
        ts = _I64.unpack_from(self.buf, pos + LEGACY_TIMESTAMP_OFFSET)[0] if magic == 1 else -1
        first = off
        if self.deep:
            first, count = self._deep_legacy(pos, end, off)
            r.records += count
        else:
            r.records += 1
        self._offsets(pos, end, first, off)
        if magic == 1 and (ts < -1 or ts > self.now_ms + FUTURE_SLACK_MS):
            self.problem(pos, end, "timestamp", f"v1 message offset {off}: implausible timestamp {ts}", WARNING,
                         offset=off)
        for obs in self.observers:
            obs.on_entry(pos, size, first, off, ts)
        return size

    def _deep_legacy(self, pos: int, end: int, off: int) -> tuple[int, int]:
        from kafkalog_cli.format.legacy import LegacyEntry

        first, count, prev = off, 0, None
        try:
            entry = LegacyEntry(self.buf, pos, end)
            for rec in entry.iter_records(self.buf, self.max_size, copy=False):
                if count == 0:
                    first = rec.offset
                count += 1
                if rec.is_valid is False:
                    self.problem(pos, end, "bad-records", f"v{entry.magic} wrapper offset {off}: inner message "
                                 f"offset {rec.offset} fails its CRC-32", offset=off)
                if prev is not None and rec.offset <= prev:
                    self.problem(pos, end, "bad-records", f"v{entry.magic} wrapper offset {off}: inner offsets "
                                 f"not increasing ({prev} then {rec.offset})", offset=off)
                prev = rec.offset
            if prev is not None and prev != off:
                self.problem(pos, end, "bad-records", f"wrapper offset {off} differs from its last inner offset {prev}",
                             WARNING, offset=off)
        except KafkalogError as exc:
            self.problem(pos, end, "bad-records", f"v0/v1 entry offset {off}: {exc.message}", offset=off)
            return off, 1
        return min(first, off), max(count, 1)


def find_next_valid(buf: Any, start: int, max_batch_size: int = DEFAULT_MAX_BATCH_SIZE) -> int | None:
    """The earliest position >= ``start`` where an entry with a plausible header and a verifying CRC begins, or None:
    the resync of verify-crc, for other read paths (dump resumes there after unreadable bytes)."""
    report = SegmentReport(path="", kind="log")
    return _Walker(buf, report, deep=False, max_batch_size=max_batch_size, max_problems=1, observers=[],
                   progress=None).resync(start)


def intact_walk(buf: Any, start: int = 0, *, file: str = "", max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
                last_offset: int | None = None) -> Iterator[tuple[int, int, Problem | None]]:
    """The resync walk of verify-crc as a stream, for readers that act on each intact entry as it comes (``export``):
    yields ``(position, size, None)`` for each entry whose header is plausible and whose CRC verifies, and
    ``(start, end, problem)`` for each region skipped (the ``Problem`` verify-crc reports there: kind, message, last
    and first good offsets; ``zero-tail`` is an ``info`` one). ``last_offset``: the last offset of the intact entry
    before ``start`` (a walk resumed there). Memory does not grow with the file."""
    report = SegmentReport(path=file, kind="log")
    w = _Walker(buf, report, deep=False, max_batch_size=max_batch_size, max_problems=1 << 62, observers=[],
                progress=None)
    w.prev_last = last_offset
    n = w.n
    pos = start
    prefix = _PREFIX.unpack_from
    while pos < n:
        if w.valid_at(pos):
            size = LOG_OVERHEAD + prefix(buf, pos)[1]
            yield pos, size, None
            w.prev_last = _entry_last_offset(buf, pos)
            pos += size
            continue
        end = w.on_bad(pos)
        found = report.problems.pop() if report.problems else report.notes.pop()
        yield pos, end, found
        pos = end


def _entry_last_offset(buf: Any, pos: int) -> int:
    """The last offset of the intact entry at ``pos`` (v2: base + lastOffsetDelta; legacy: its offset field)."""
    off, _size, _x, magic = _PREFIX.unpack_from(buf, pos)
    if magic == 2:
        return off + _V2.unpack_from(buf, pos)[_LOD]
    return off


def _next_nonzero(buf: Any, p: int, n: int) -> int:
    """Position of the first non-zero byte in ``[p, n)`` (``n`` when none): the compiled scan, else 1 MiB compares
    and a regex."""
    if _first_nonzero is not None:
        return _first_nonzero(buf, p, n)
    step = 4096
    while p < n:
        q = min(n, p + step)
        if buf[p:q] != _ZEROS[: q - p]:
            m = _NONZERO.search(buf, p, q)
            return m.start() if m else q
        p = q
        step = min(step * 4, len(_ZEROS))
    return n


def _segment_base(path: str) -> int | None:
    from kafkalog_cli.storage.companions import base_offset_of

    try:
        return base_offset_of(os.path.basename(path))
    except ValueError:
        return None


def verify_segment(path: str, *, deep: bool = False, max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
                   indexes: bool = True, max_problems: int = DEFAULT_MAX_PROBLEMS,
                   progress: Callable[[int], None] | None = None,
                   extra_observers: list[Any] | None = None,
                   started: Callable[[SegmentReport], None] | None = None,
                   progress_every: int = PROGRESS_EVERY, group_index: bool = True,
                   release_behind: bool = False) -> SegmentReport:
    """Verify one ``.log`` segment (and, with ``indexes``, its ``.index``/``.timeindex`` against it).

    Never raises for corrupt content; an unreadable file gives a report with ``unreadable=True`` and one problem.
    The walk is read-only (mmap ACCESS_READ) and its memory does not grow with the segment size.
    ``started`` gets the report before anything is checked: problems are appended to it as they are found (corrupt
    regions in walk order), so another thread can follow the walk (the scan's row walk runs beside this pass,
    ``scan.verify_pass.Background``). What the disk did to the mapping is merged in only at the end. ``progress``
    is called about every ``progress_every`` bytes of the walk.
    """
    t0 = time.perf_counter()
    report = SegmentReport(path=path, kind="log", base_offset=_segment_base(path))
    if started is not None:
        started(report)
    if report.base_offset is None:
        report.add(Problem(path, 0, 0, "file-name", "segment file name does not start with a 20-digit base offset",
                           WARNING))
    from kafkalog_cli.storage.tiered import encoding_problem

    encoded = encoding_problem(path)  # a tiered-storage object of compressed/encrypted chunks: not a segment's bytes
    if encoded is not None:
        report.size = os.path.getsize(path) if os.path.exists(path) else 0
        report.add(Problem(path, 0, report.size, "remote-encoded", encoded, WARNING))
        return report
    try:
        mf = MappedFile(path)
    except FileVanishedError:
        report.add(_finding_problem(vanished_finding(path)))
        return report
    except UnreadableFileError as exc:
        report.unreadable = True
        report.add(Problem(path, 0, 0, "unreadable", exc.describe()))
        return report
    observers: list[Any] = list(extra_observers or [])
    opened: list[MappedFile] = []
    mf.advise_sequential()  # read front to back: a cold segment is read ahead at disk speed
    try:
        report.size = mf.size
        if indexes and report.base_offset is not None:
            stem = path[: -len(".log")] if path.endswith(".log") else path
            for suffix, cls in ((".index", OffsetIndexCheck), (".timeindex", TimeIndexCheck)):
                ipath = stem + suffix
                if not os.path.exists(ipath):
                    missing = _missing_index(ipath, suffix, mf.size)
                    if missing is not None:
                        report.add(missing, max_problems)
                    continue
                try:
                    imf = MappedFile(ipath)
                except FileVanishedError:
                    report.add(_finding_problem(vanished_finding(ipath)))
                    continue
                except UnreadableFileError as exc:
                    report.add(Problem(ipath, 0, 0, "unreadable", exc.describe(), WARNING))
                    continue
                opened.append(imf)
                chk = cls(ipath, imf.buf, report.base_offset, mf.size, report, max_problems)
                chk.group = group_index
                observers.append(chk)
        if release_behind:
            progress, progress_every = _releasing(mf, progress), min(progress_every, RELEASE_EVERY)
        walker = _Walker(mf.buf, report, deep=deep, max_batch_size=max_batch_size, max_problems=max_problems,
                         observers=observers, progress=progress, extents=mf.data_extents,
                         progress_every=progress_every)
        walker.run()
        report.magics = sorted(walker.magics)
        for obs in observers:
            if hasattr(obs, "finish"):
                obs.finish(report.last_offset)
            if hasattr(obs, "flush"):
                obs.flush()
        apply_read_findings(report, mf.findings(), max_problems)
        for imf in opened:
            for f in imf.findings():
                report.add(_finding_problem(f), max_problems)
    finally:
        for imf in opened:
            imf.close()
        mf.close()
    report.seconds = time.perf_counter() - t0
    return report


def _looks_like_partition(d: str) -> bool:
    """A directory the broker loads (not a lone copied ``.log``): some index or partition state file is there."""
    try:
        names = os.listdir(d)
    except OSError:
        return False
    return any(n.endswith((".index", ".timeindex")) or n in ("leader-epoch-checkpoint", "partition.metadata")
               for n in names)


def _missing_index(ipath: str, suffix: str, log_size: int) -> Problem | None:
    """A segment's missing ``.index`` / ``.timeindex``, as rebuild-index reports it ("missing"), with what the
    broker's loader does (LogLoader.java:372-382 loadSegmentFiles, LogSegment.sanityCheck)."""
    d = os.path.dirname(ipath) or "."
    if not _looks_like_partition(d):
        return None
    if suffix == ".index":
        kind, what = "index-missing", (
            f"offset index missing: the broker rebuilds it at its next start by recovering the segment (a full read "
            f"of its {log_size} bytes, also after a clean shutdown); 'kafkalog rebuild-index {d}' writes it now")
    else:
        kind, what = "timeindex-missing", (
            "time index missing: the broker creates it empty and rebuilds it only when it recovers the segment "
            "(unclean shutdown, at or above the recovery point); until then lookups by timestamp and time-based "
            f"retention do not see this segment's timestamps; 'kafkalog rebuild-index {d}' writes it now")
    return Problem(ipath, 0, 0, kind, what, WARNING)


def _finding_problem(f: ReadFinding, **kw: Any) -> Problem:
    """A disk finding as a verify-crc problem: ``unreadable`` is an error, the other kinds are notes (info)."""
    return Problem(f.file, f.start, f.end, f.kind, f.message, INFO if f.is_note else ERROR, **kw)


def apply_read_findings(report: SegmentReport, findings: list[ReadFinding], max_problems: int) -> None:
    """Merge what the disk did (storage/safe_read.py) into a segment's report.

    The walk saw unreadable pages as zeros, so the region it reported around them (a CRC mismatch of the batch that
    runs into them, zeros, the tail of a batch whose start was lost) is split: each ``unreadable`` range is reported
    exactly (page-rounded), with the last good offset before it and the first good offset after it; the readable
    bytes of that region between the last good entry and the next valid one are ``partial-entry`` (their entry
    cannot be checked), zero runs keep their zero kinds. Notes (``truncated-during-read``, ``vanished``) are added.
    """
    if not findings:
        return
    bad = sorted(((f.start, f.end, f) for f in findings if f.kind == UNREADABLE), key=lambda t: (t[0], t[1]))
    for f in findings:
        if f.kind != UNREADABLE:
            report.add(_finding_problem(f), max_problems)
    if not bad:
        return
    covered: set[int] = set()
    extra: list[Problem] = []
    for target in (report.problems, report.notes):
        out: list[Problem] = []
        for p in target:
            hits = [(a, b, f) for a, b, f in bad if p.kind in REGION_KINDS and a < p.end and b > p.position]
            if not hits:
                out.append(p)
                continue
            cur = p.position
            for a, b, f in hits:
                if a > cur:
                    out.append(_piece(p, cur, a, f))
                if id(f) not in covered:
                    covered.add(id(f))
                    extra.append(_finding_problem(f, last_good_offset=p.last_good_offset,
                                                  first_good_offset=p.first_good_offset))
                cur = max(cur, b)
            if cur < p.end:
                out.append(_piece(p, cur, p.end, hits[-1][2]))
        target[:] = out
    extra += [_finding_problem(f) for _a, _b, f in bad if id(f) not in covered]
    for x in extra:
        report.add(x, max_problems)
    report.problems.sort(key=lambda q: (q.position, q.end))
    regions = [p for p in report.problems if p.kind in REGION_KINDS]
    report.regions = len(regions)
    report.corrupt_bytes = sum(p.end - p.position for p in regions)


def _piece(p: Problem, start: int, end: int, f: ReadFinding) -> Problem:
    if p.kind in ("zero-filled", "zero-tail"):
        kind, message = p.kind, f"{end - start} zero bytes next to unreadable bytes [{f.start}, {f.end})"
    else:
        kind = "partial-entry"
        message = (f"{end - start} readable bytes of an entry cut by the unreadable bytes [{f.start}, {f.end}): "
                   "its CRC cannot be checked")
    return Problem(p.file, start, end, kind, message, p.severity if kind != "partial-entry" else ERROR,
                   last_good_offset=p.last_good_offset, first_good_offset=p.first_good_offset)


class SegmentMap:
    """The resync map of one segment as data: every intact entry (position, size, base offset, last offset) and
    every region ``(start, end, is_error)`` the walk skipped, in file order. ``salvage`` and ``recover`` read it."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, int, int, int]] = []
        self.regions: list[tuple[int, int, bool]] = []

    def on_entry(self, pos: int, size: int, base: int, last: int, _max_ts: int) -> None:
        self.entries.append((pos, size, base, last))

    def on_region(self, start: int, end: int, error: bool) -> None:
        self.regions.append((start, end, error))


RELEASE_EVERY = 32 << 20  # ``release_behind``: the mapped pages behind the walk are given back every this many bytes


def _releasing(mf: MappedFile, progress: Callable[[int], None] | None) -> Callable[[int], None]:
    """A progress callback that also gives the mapping's pages behind the walk back to the kernel
    (``MappedFile.release_pages``): the walk's memory then stays flat in the segment size, page cache included."""
    walked = [0, 0]  # bytes walked, bytes released

    def step(n: int) -> None:
        walked[0] += n
        if walked[0] - walked[1] >= RELEASE_EVERY:
            end = walked[0] - walked[0] % 4096
            mf.release_pages(walked[1], end - walked[1])
            walked[1] = end
        if progress is not None:
            progress(n)

    return step


def map_segment(path: str, *, max_batch_size: int = DEFAULT_MAX_BATCH_SIZE) -> tuple[SegmentReport, SegmentMap]:
    """``verify_segment`` (without the index checks) plus its resync map; the mapped pages behind the walk are
    given back as it goes (replay maps each segment twice this way: a 1 GiB segment kept 1 GiB resident)."""
    m = SegmentMap()
    report = verify_segment(path, max_batch_size=max_batch_size, indexes=False, extra_observers=[m],
                            release_behind=True)
    return report, m
