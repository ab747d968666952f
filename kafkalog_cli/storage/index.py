"""Offset index (``.index``: int32 relativeOffset, int32 position) and time index (``.timeindex``: int64
timestamp, int32 relativeOffset), read from mmap'd files. Spec §6.

Entry count = floor(length / entry size), zero slots included (what the broker assumes); ``valid_entries`` stops
at the first slot i > 0 whose relative offset is 0 (what DumpLogSegments does with a preallocated tail).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kafkalog_cli.errors import CorruptIndexError
from kafkalog_cli.format.layouts import INT32, OFFSET_INDEX_ENTRY, TIME_INDEX_ENTRY, Layout

OFFSET_ENTRY = OFFSET_INDEX_ENTRY.struct  # relativeOffset, position
TIME_ENTRY = TIME_INDEX_ENTRY.struct  # timestamp, relativeOffset
OFFSET_SIZE = OFFSET_INDEX_ENTRY.size  # 8
TIME_SIZE = TIME_INDEX_ENTRY.size  # 12
WARM_BYTES = 8192
_unpack_i32 = INT32.unpack_from


def valid_count(buf: bytes | memoryview, entry: Layout) -> int:
    """Slots of an index before its zero-filled tail: the first slot i > 0 whose relative offset is 0 (a linear
    scan, as DumpLogSegments stops; ``trimmed_count`` is the binary-search variant for well-formed indexes)."""
    size, rel_at = entry.size, entry.offset("relative_offset")
    n = len(buf) // size
    for i in range(1, n):
        if _unpack_i32(buf, i * size + rel_at)[0] == 0:
            return i
    return n


def trimmed_count(buf: bytes | memoryview, entry: Layout) -> int:
    """Slots before a zero-filled (preallocated) tail, by binary search: in a well-formed index every slot i > 0
    has a relative offset > 0 and the tail is all zeros, so "slot i is in the tail" is monotonic."""
    size, rel_at = entry.size, entry.offset("relative_offset")
    n = len(buf) // size
    lo, hi = 1, n  # answer in [1, n]
    if n == 0:
        return 0
    while lo < hi:
        mid = (lo + hi) // 2
        if _unpack_i32(buf, mid * size + rel_at)[0] == 0:
            hi = mid
        else:
            lo = mid + 1
    return lo


@dataclass
class OffsetIndex:
    base_offset: int
    buf: bytes | memoryview
    path: str = ""
    entry_size = OFFSET_SIZE

    @property
    def entries(self) -> int:
        return len(self.buf) // OFFSET_SIZE

    def entry(self, i: int) -> tuple[int, int]:
        """(absolute offset, position) of slot i."""
        rel, pos = OFFSET_ENTRY.unpack_from(self.buf, i * OFFSET_SIZE)
        return self.base_offset + rel, pos

    def key(self, i: int) -> int:
        return self.base_offset + OFFSET_ENTRY.unpack_from(self.buf, i * OFFSET_SIZE)[0]

    def valid_entries(self) -> int:
        """Entries before the zero-filled tail (first slot i > 0 with relative offset 0)."""
        return valid_count(self.buf, OFFSET_INDEX_ENTRY)

    def lookup(self, target: int) -> tuple[int, int, int]:
        """Kafka's lookup: largest entry with offset <= target, else (base, 0). Returns (offset, position, slot)."""
        slot = largest_lower_bound(self.entries, self.key, target, WARM_BYTES // OFFSET_SIZE)
        if slot < 0:
            return self.base_offset, 0, -1
        off, pos = self.entry(slot)
        return off, pos, slot

    def sanity_check(self) -> None:
        n = self.entries
        if n and self.key(n - 1) < self.base_offset:
            raise CorruptIndexError(
                f"Corrupt index found, index file {self.path} has non-zero size but the last offset is "
                f"{self.key(n - 1)} which is less than the base offset {self.base_offset}",
                file=self.path,
            )
        if len(self.buf) % OFFSET_SIZE:
            raise CorruptIndexError(
                f"Index file {self.path} is corrupt, found {len(self.buf)} bytes which is neither positive nor a multiple of {OFFSET_SIZE}",
                file=self.path,
            )


@dataclass
class TimeIndex:
    base_offset: int
    buf: bytes | memoryview
    path: str = ""
    entry_size = TIME_SIZE

    @property
    def entries(self) -> int:
        return len(self.buf) // TIME_SIZE

    def entry(self, i: int) -> tuple[int, int]:
        """(timestamp, absolute offset) of slot i."""
        ts, rel = TIME_ENTRY.unpack_from(self.buf, i * TIME_SIZE)
        return ts, self.base_offset + rel

    def key(self, i: int) -> int:
        return TIME_ENTRY.unpack_from(self.buf, i * TIME_SIZE)[0]

    def valid_entries(self) -> int:
        return valid_count(self.buf, TIME_INDEX_ENTRY)

    def lookup(self, ts: int) -> tuple[int, int, int]:
        """Largest entry with timestamp <= ts, else (-1, base). Returns (timestamp, offset, slot)."""
        slot = largest_lower_bound(self.entries, self.key, ts, WARM_BYTES // TIME_SIZE)
        if slot < 0:
            return -1, self.base_offset, -1
        t, off = self.entry(slot)
        return t, off, slot

    def sanity_check(self) -> None:
        n = self.entries
        if n:
            last_ts, last_off = self.entry(n - 1)
            first_ts = self.entry(0)[0]
            if last_ts < first_ts:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({self.path}) has non-zero size but the last timestamp "
                    f"is {last_ts} which is less than the first timestamp {first_ts}",
                    file=self.path,
                )
            if last_off < self.base_offset:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({self.path}) has non-zero size but the last offset "
                    f"is {last_off} which is less than the first offset {self.base_offset}",
                    file=self.path,
                )
        if len(self.buf) % TIME_SIZE:
            raise CorruptIndexError(
                f"Time index file {self.path} is corrupt, found {len(self.buf)} bytes which is neither positive nor a multiple of {TIME_SIZE}",
                file=self.path,
            )


def largest_lower_bound(n: int, key: Callable[[int], int], target: int, warm_entries: int) -> int:
    """AbstractIndex.largestLowerBoundSlotFor with the warm-section split (spec §6.4). -1 when none."""
    if n == 0:
        return -1
    hot = max(0, n - 1 - warm_entries)
    if key(hot) < target:
        return _bsearch(key, target, hot, n - 1)
    if key(0) > target:
        return -1
    return _bsearch(key, target, 0, hot)


def _bsearch(key: Callable[[int], int], target: int, lo: int, hi: int) -> int:
    while lo < hi:
        mid = (lo + hi + 1) // 2
        k = key(mid)
        if k > target:
            hi = mid - 1
        elif k < target:
            lo = mid
        else:
            return mid
    return lo


def encode_offset_index(base_offset: int, entries: list[tuple[int, int]]) -> bytes:
    return b"".join(OFFSET_ENTRY.pack(off - base_offset, pos) for off, pos in entries)


def encode_time_index(base_offset: int, entries: list[tuple[int, int]]) -> bytes:
    return b"".join(TIME_ENTRY.pack(ts, off - base_offset) for ts, off in entries)
