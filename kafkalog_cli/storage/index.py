"""Offset index (``.index``: int32 relativeOffset, int32 position) and time index (``.timeindex``: int64
timestamp, int32 relativeOffset), read from mmap'd files. Spec §6.

Entry count = floor(length / entry size), zero slots included (what the broker assumes); ``valid_entries`` stops
at the first slot i > 0 whose relative offset is 0 (what DumpLogSegments does with a preallocated tail).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from kafkalog_cli.errors import CorruptIndexError

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
WARM_BYTES = 8192


@dataclass
class OffsetIndex:
    base_offset: int
    buf: bytes | memoryview
    path: str = ""
    entry_size = 8

    @property
    def entries(self) -> int:
        return len(self.buf) // 8

    def entry(self, i: int) -> tuple[int, int]:
        """(absolute offset, position) of slot i."""
        rel, pos = OFFSET_ENTRY.unpack_from(self.buf, i * 8)
        return self.base_offset + rel, pos

    def key(self, i: int) -> int:
        return self.base_offset + OFFSET_ENTRY.unpack_from(self.buf, i * 8)[0]

    def valid_entries(self) -> int:
        """Entries before the zero-filled tail (first slot i > 0 with relative offset 0)."""
        n = self.entries
        for i in range(1, n):
            if struct.unpack_from(">i", self.buf, i * 8)[0] == 0:
                return i
        return n

    def lookup(self, target: int) -> tuple[int, int, int]:
        """Kafka's lookup: largest entry with offset <= target, else (base, 0). Returns (offset, position, slot)."""
        slot = largest_lower_bound(self.entries, self.key, target, WARM_BYTES // 8)
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
        if len(self.buf) % 8:
            raise CorruptIndexError(
                f"Index file {self.path} is corrupt, found {len(self.buf)} bytes which is neither positive nor a multiple of 8",
                file=self.path,
            )


@dataclass
class TimeIndex:
    base_offset: int
    buf: bytes | memoryview
    path: str = ""
    entry_size = 12

    @property
    def entries(self) -> int:
        return len(self.buf) // 12

    def entry(self, i: int) -> tuple[int, int]:
        """(timestamp, absolute offset) of slot i."""
        ts, rel = TIME_ENTRY.unpack_from(self.buf, i * 12)
        return ts, self.base_offset + rel

    def key(self, i: int) -> int:
        return TIME_ENTRY.unpack_from(self.buf, i * 12)[0]

    def valid_entries(self) -> int:
        n = self.entries
        for i in range(1, n):
            if struct.unpack_from(">i", self.buf, i * 12 + 8)[0] == 0:
                return i
        return n

    def lookup(self, ts: int) -> tuple[int, int, int]:
        """Largest entry with timestamp <= ts, else (-1, base). Returns (timestamp, offset, slot)."""
        slot = largest_lower_bound(self.entries, self.key, ts, WARM_BYTES // 12)
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
        if len(self.buf) % 12:
            raise CorruptIndexError(
                f"Time index file {self.path} is corrupt, found {len(self.buf)} bytes which is neither positive nor a multiple of 12",
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
