"""Bounded-memory building blocks of ``compact``: a segment reader that gives pages back, Kafka's SkimpyOffsetMap,
and the recovery rule's index builder fed one batch at a time.

Why a module of its own: ``compact`` must run in memory bounded like the broker's cleaner (the dedupe buffer plus
a little), whatever the partition's size. That rules out what the read-only commands do freely:

* holding every batch header of a partition (a ``Batch`` is ~200 bytes; a 1 GiB segment of small batches has
  millions of them), so every pass streams the segments again instead;
* leaving a segment's pages mapped: ``ru_maxrss`` counts file pages mapped into the process, so a pass over a
  1 GiB segment would show 1 GiB resident. ``SegmentReader`` hands the pages behind it back (``MADV_DONTNEED``);
* an exact ``dict`` of keys (~150 bytes per key in CPython): ``SkimpyOffsetMap`` is Kafka's map, 24 bytes per slot
  (16-byte MD5 of the key + 8-byte offset) in one anonymous mapping of ``--dedupe-buffer-bytes``, probed the same way;
* ``rebuild_index.rebuild_segment`` over a whole mapped output: ``IndexBuilder`` applies the same recovery rule batch
  by batch (``compact`` cross-checks it with ``rebuild_segment`` whenever the output is small enough to map).
"""

from __future__ import annotations

import hashlib
import mmap
import struct
from collections.abc import Iterator

from kafkalog_cli.broker.repair_view import DAMAGE_HINT, LEGACY_HINT, TORN_TAIL_HINT
from kafkalog_cli.errors import CorruptRecordError, RepairRefused
from kafkalog_cli.format.batch import Batch
from kafkalog_cli.format.legacy import LegacyEntry
from kafkalog_cli.storage.index import OFFSET_ENTRY, TIME_ENTRY
from kafkalog_cli.storage.segment import MappedFile, read_entry, walk

INT_MAX = 2**31 - 1
DROP_EVERY = 8 << 20  # give pages back every 8 MiB read
LOAD_FACTOR = 0.9  # log.cleaner.io.buffer.load.factor (CleanerConfig.LOG_CLEANER_DEDUPE_BUFFER_LOAD_FACTOR)
DEFAULT_DEDUPE_BUFFER_BYTES = 128 * 1024 * 1024  # log.cleaner.dedupe.buffer.size


class SegmentReader:
    """A read-only map of one ``.log`` whose already-read pages are returned to the kernel as the reader advances."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._mf = MappedFile(path)  # its checks: missing, directory, FIFO, permission
        self.buf = self._mf.buf
        self._dropped = 0

    def release_before(self, pos: int) -> None:
        """Drop the mapping's resident pages below ``pos`` (they are re-read from the page cache if touched again)."""
        if pos - self._dropped < DROP_EVERY:
            return
        end = pos // mmap.PAGESIZE * mmap.PAGESIZE
        if end > self._dropped and self._mf.release_pages(self._dropped, end - self._dropped):
            self._dropped = end

    def batches(self, start: int = 0, end: int | None = None, *, validate: bool = False) -> Iterator[Batch]:
        """The v2 batches in ``[start, end)`` in file order. With ``validate``, the checks of
        ``repair_view.read_batches`` (v2 only, size and CRC, no trailing bytes), without keeping the headers."""
        for e in self.entries(start, end, validate=validate):
            if e.is_legacy:
                raise RepairRefused(
                    "legacy (v0/v1) message found; this repair handles magic v2 segments only",
                    file=self.path, position=e.position, expected="magic 2", found=f"magic {e.magic}",
                    hint=LEGACY_HINT,
                )
            yield e

    def entries(self, start: int = 0, end: int | None = None, *,
                validate: bool = False) -> Iterator[Batch | LegacyEntry]:
        """Every entry in ``[start, end)`` in file order: v2 batches and v0/v1 messages (a compressed wrapper is one
        entry), as the cleaner's ``MemoryRecords.batches`` iterates them. With ``validate``: size and CRC, no
        trailing bytes."""
        buf = self.buf
        last_end = start
        for pos, size, magic in walk(buf, start, end, file=self.path):
            b = read_entry(buf, pos, magic, file=self.path)
            if validate and not b.is_valid(buf):
                raise CorruptRecordError(
                    "batch fails its CRC or size check",
                    file=self.path, position=pos, expected=f"crc {b.crc}", found=f"crc {b.computed_crc(buf)}",
                    hint=DAMAGE_HINT,
                )
            yield b
            last_end = pos + size
            self.release_before(last_end)
        stop = len(buf) if end is None else end
        if validate and last_end != stop:
            raise RepairRefused(
                f"{stop - last_end} bytes after the last complete batch (a torn write?)",
                file=self.path, position=last_end, expected="end of file", found=f"{stop - last_end} trailing bytes",
                hint=TORN_TAIL_HINT,
            )

    def close(self) -> None:
        self.buf = b""
        self._mf.close()

    def __enter__(self) -> SegmentReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ------------------------------------------------------------------------------------------ the offset map
_ZERO = bytes(24)
_OFFSET = struct.Struct(">q")
_INT = struct.Struct(">i")


class SkimpyOffsetMap:
    """Kafka's SkimpyOffsetMap: ``memory // 24`` slots of (MD5(key), offset), open addressing with its probe
    sequence (the first 4-byte windows of the digest, then linear), an all-zero slot meaning empty.

    The memory is an anonymous mapping, so only the slots in use become resident. Keys are MD5 digests as in Kafka:
    two keys with the same digest are one key to the cleaner (the broker accepts that risk; so do we)."""

    def __init__(self, memory: int) -> None:
        self.memory = min(memory, INT_MAX)  # LogCleaner: math.min(dedupeBufferSize / numThreads, Int.MaxValue)
        self.slots = self.memory // 24
        self.max_entries = int(self.slots * LOAD_FACTOR)  # buildOffsetMapForSegment's maxDesiredMapSize
        self._mm = mmap.mmap(-1, max(self.slots * 24, mmap.PAGESIZE))
        self.entries = 0
        self.latest_offset = -1

    def _slot(self, digest: bytes, attempt: int) -> int:
        if attempt < 12:
            probe = _INT.unpack_from(digest, attempt)[0]
        else:
            probe = (_INT.unpack_from(digest, 12)[0] + attempt - 12 + 2**31) % 2**32 - 2**31  # Java int addition
        return (0 if probe == -(2**31) else abs(probe)) % self.slots * 24

    def put(self, key: bytes, offset: int) -> None:
        if self.entries >= self.slots:
            raise ValueError(f"attempted to add a new entry to a full offset map ({self.entries} of {self.slots})")
        digest = hashlib.md5(key).digest()  # noqa: S324 - Kafka's choice of hash, not a security use
        mm = self._mm
        attempt = 0
        pos = self._slot(digest, 0)
        while mm[pos : pos + 24] != _ZERO:
            if mm[pos : pos + 16] == digest:
                mm[pos + 16 : pos + 24] = _OFFSET.pack(offset)
                self.latest_offset = offset
                return
            attempt += 1
            pos = self._slot(digest, attempt)
        mm[pos : pos + 24] = digest + _OFFSET.pack(offset)
        self.latest_offset = offset
        self.entries += 1

    def get(self, key: bytes) -> int:
        """The offset stored for the key's digest, -1 when absent."""
        digest = hashlib.md5(key).digest()  # noqa: S324 - Kafka's choice of hash
        mm = self._mm
        for attempt in range(self.slots + 12):
            pos = self._slot(digest, attempt)
            slot = mm[pos : pos + 24]
            if slot == _ZERO:
                return -1
            if slot[:16] == digest:
                return _OFFSET.unpack_from(slot, 16)[0]
        return -1

    @property
    def full(self) -> bool:
        return self.entries >= self.max_entries

    def close(self) -> None:
        self._mm.close()


# ------------------------------------------------------------------------------------------ the index rule
class _IndexWriter:
    """What both index rules share: the offset and time index being written, the range and capacity checks of one
    index point, and TimeIndex.maybeAppend (only a larger timestamp is added). Any check that fails raises
    CorruptRecordError: our own output must never be one the broker truncates or refuses."""

    def __init__(self, base_offset: int, interval: int, file: str, max_off_entries: int, max_time_entries: int) -> None:
        self.base = base_offset
        self.interval = interval
        self.file = file
        self.max_off_entries = max_off_entries
        self.max_time_entries = max_time_entries
        self.index = bytearray()
        self.timeindex = bytearray()
        self.valid = 0
        self.max_ts = -1  # an empty time index's lastEntry is (-1, base offset)
        self.max_ts_off = base_offset
        self.last_index_off = -1
        self.last_time_ts = -1
        self.last_time_off = base_offset

    def _stop(self, message: str, expected: str, found: str) -> None:
        raise CorruptRecordError(f"compacted output failed validation: {message}", file=self.file, position=self.valid,
                                 expected=expected, found=found)

    def _relative(self, offset: int) -> int:
        """The position and ``offset`` of the next batch as the index stores them (LogSegment.ensureOffsetInRange)."""
        if self.valid > INT_MAX:
            self._stop("batch position above 2^31-1", f"position <= {INT_MAX}", str(self.valid))
        rel = offset - self.base
        if rel < 0 or rel > INT_MAX:
            self._stop("batch offset outside the segment's 32-bit relative range",
                       f"offset in [{self.base}, {self.base + INT_MAX}]", str(offset))
        return rel

    def _index_point(self, rel: int, offset: int) -> None:
        """One offset entry (``offset`` at the current position) and the time entry that goes with it."""
        if len(self.index) // 8 >= self.max_off_entries:
            self._stop("offset index over capacity (segment.index.bytes)", f"<= {self.max_off_entries} entries",
                       "more")
        if self.index and offset <= self.last_index_off:
            self._stop("non-increasing offset at an index point", f"offset > {self.last_index_off}", str(offset))
        self.index += OFFSET_ENTRY.pack(rel, self.valid)
        self.last_index_off = offset
        if len(self.timeindex) // 12 >= self.max_time_entries:
            self._stop("time index over capacity (segment.index.bytes)", f"<= {self.max_time_entries} entries",
                       "more")
        self._time_entry()

    def _time_entry(self) -> None:
        if self.timeindex and self.max_ts_off < self.last_time_off:
            self._stop("time index offset going backwards", f">= {self.last_time_off}", str(self.max_ts_off))
        if self.max_ts > self.last_time_ts:
            self.timeindex += TIME_ENTRY.pack(self.max_ts, self.max_ts_off - self.base)
            self.last_time_ts, self.last_time_off = self.max_ts, self.max_ts_off


class IndexBuilder(_IndexWriter):
    """``rebuild_index.rebuild_segment_py``'s rule (LogSegment.recover, spec §6.5) for v2 batches fed one at a time.

    Raises CorruptRecordError where recovery would stop (our own output must never be one the broker truncates)."""

    def __init__(self, base_offset: int, interval: int, segment_index_bytes: int, file: str) -> None:
        super().__init__(base_offset, interval, file, segment_index_bytes // 8, segment_index_bytes // 12 - 1)
        self.last_indexed = 0

    def add(self, size: int, last_offset: int, max_timestamp: int) -> None:
        rel = self._relative(last_offset)
        if max_timestamp > self.max_ts:
            self.max_ts, self.max_ts_off = max_timestamp, last_offset
        if self.valid - self.last_indexed > self.interval:
            self._index_point(rel, last_offset)
            self.last_indexed = self.valid
        self.valid += size

    def finish(self) -> tuple[bytes, bytes]:
        """(offset index, time index) with the final time entry recovery appends."""
        if self.timeindex and self.max_ts_off < self.last_time_off:
            self._stop("time index offset going backwards at the final entry", f">= {self.last_time_off}",
                       str(self.max_ts_off))
        elif self.max_ts > self.last_time_ts:
            self.timeindex += TIME_ENTRY.pack(self.max_ts, self.max_ts_off - self.base)
        return bytes(self.index), bytes(self.timeindex)


class AppendIndexBuilder(_IndexWriter):
    """The indexes of a segment written by ``LogSegment.append`` calls (the cleaner's new segment), one ``append`` at
    a time: an offset entry (largest offset of the append, position where it starts) and a time entry (the segment's
    max timestamp so far) only when more than ``interval`` bytes were appended since the last entry, checked BEFORE
    the append's bytes are counted (so the first append never gets one); ``finish`` is ``onBecomeInactiveSegment``'s
    final time entry (LogSegment.java:240-268, 677-680; TimeIndex.maybeAppend: only a larger timestamp is added)."""

    def __init__(self, base_offset: int, interval: int, segment_index_bytes: int, file: str) -> None:
        super().__init__(base_offset, interval, file, segment_index_bytes // 8, segment_index_bytes // 12)
        self.since = 0

    def append(self, size: int, largest_offset: int, max_timestamp: int, shallow_offset: int) -> None:
        rel = self._relative(largest_offset)
        if max_timestamp > self.max_ts:
            self.max_ts, self.max_ts_off = max_timestamp, shallow_offset
        if self.since > self.interval:
            self._index_point(rel, largest_offset)
            self.since = 0
        self.since += size
        self.valid += size

    def finish(self) -> tuple[bytes, bytes]:
        self._time_entry()
        return bytes(self.index), bytes(self.timeindex)
