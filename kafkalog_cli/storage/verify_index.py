"""``.index`` / ``.timeindex`` checks for verify-crc, run as observers of the segment walk.

Both indexes are sorted, so they are checked by merging them with the batch walk (one cursor each): no list of
batch positions is kept, and memory stays flat whatever the segment size. What counts as valid follows the
broker, not the recovery rule alone (spec §6.5 and errata-repair E4/E11):

* offset index: an entry must point at a batch start, and the batch just before that position must end below the
  entry's offset (otherwise a lookup would start after the data it looks for). Brokers <= 3.9 index per append
  chunk: (last offset of the chunk, start of the chunk), and cleaners the highest retained offset; such entries are
  safe and only counted in an info note.
* time index: entry (ts, off) is valid if ``off`` lies inside a batch whose maxTimestamp == ts and no earlier batch
  reached ts (covers the recovery rule and the <= 3.6 leader form that stores a record offset inside the batch).
* a zero-filled tail (preallocated index of an active segment or an unclean shutdown) is an info note.
"""

from __future__ import annotations

from typing import Any

from kafkalog_cli.format.layouts import OFFSET_INDEX_ENTRY, TIME_INDEX_ENTRY
from kafkalog_cli.storage import verify_model as v

_OFF = OFFSET_INDEX_ENTRY.struct  # relativeOffset, position
_TIME = TIME_INDEX_ENTRY.struct  # timestamp, relativeOffset
_OSIZE, _TSIZE = OFFSET_INDEX_ENTRY.size, TIME_INDEX_ENTRY.size


def _used_slots(buf: Any, entry_size: int) -> int:
    """Number of slots before the trailing run of zero bytes (scanning back in 1 MiB chunks, no full copy)."""
    end = len(buf) - len(buf) % entry_size
    p = end
    step = 1 << 20
    while p > 0:
        a = max(0, p - step)
        chunk = bytes(buf[a:p]).rstrip(b"\x00")
        if chunk:
            last_byte = a + len(chunk) - 1
            return last_byte // entry_size + 1
        p = a
    return 0


class _Group:
    """The findings of one kind in one index file: the first, how many, their slot ranges (the first few)."""

    SHOWN = 6

    def __init__(self, p: v.Problem) -> None:
        self.first, self.count, self.end = p, 0, p.end
        self.ranges: list[list[int]] = []
        self.nranges = 0
        self.last: list[int] | None = None
        self.add(p, 0)

    def add(self, p: v.Problem, es: int) -> None:
        if self.count:
            self.end = max(self.end, p.end)
        self.count += 1
        es = es or max(p.end - p.position, 1)
        a, b = p.position // es, max(p.end - 1, p.position) // es
        if self.last is not None and self.last[0] <= a <= self.last[1] + 1:
            self.last[1] = max(self.last[1], b)
            return
        self.last = [a, b]
        self.nranges += 1
        if len(self.ranges) < self.SHOWN:
            self.ranges.append(self.last)


class _IndexCheck:
    entry_size = _OSIZE
    label = "index"

    def __init__(self, path: str, buf: Any, base: int, log_size: int, report: Any, max_problems: int) -> None:
        self.path = path
        self.buf = buf
        self.base = base
        self.log_size = log_size
        self.report = report
        self.max_problems = max_problems
        es = self.entry_size
        self.slots = len(buf) // es
        self.used = _used_slots(buf, es)
        self.i = 0
        self.prev: tuple[int, int] | None = None  # last accepted entry (key fields)
        self.regions: list[tuple[int, int]] = []  # corrupt log regions since the previous good batch
        self.held: dict[tuple[str, str], _Group] = {}  # findings per (kind, severity) until ``flush``
        report.bytes_checked += len(buf)
        if len(buf) % es:
            self.problem(self.slots * es, len(buf), f"{self.label}-size",
                         f"{len(buf)} bytes is not a multiple of the {es}-byte entry size")
        if self.used < self.slots:
            zero = self.slots - self.used
            self.problem(self.used * es, self.slots * es, f"{self.label}-zero-tail",
                         f"{zero} zero-filled slots after {self.used} entries (preallocated index of an active "
                         "segment or an unclean shutdown; the broker rebuilds it)", v.INFO)

    group = True  # per-slot findings of one kind become one finding with slot ranges (``flush``)

    def problem(self, position: int, end: int, kind: str, message: str, severity: str = v.ERROR,
                offset: int | None = None) -> None:
        p = v.Problem(self.path, position, end, kind, message, severity, offset=offset)
        if not self.group:
            self.report.add(p, self.max_problems)
            return
        g = self.held.get((kind, severity))
        if g is None:
            self.held[(kind, severity)] = _Group(p)
        else:
            g.add(p, self.entry_size)

    def flush(self) -> None:
        """One finding per kind: a damaged index gave one line per slot (40 bad bytes: 49 lines, 100 KB of garbage:
        10,003). A kind found once keeps its own message; more become 'N slots (ranges): first message'."""
        for (kind, severity), g in self.held.items():
            if g.count == 1:
                self.report.add(g.first, self.max_problems)
                continue
            shown = ", ".join(f"{a}..{b}" if b > a else str(a) for a, b in g.ranges)
            if g.nranges > len(g.ranges):
                shown += f", ... ({g.nranges} ranges)"
            msg = (f"{g.count} slots ({shown}) with this finding; the first: {g.first.message} (--max-problems N "
                   "lists them one by one)")
            self.report.add(v.Problem(self.path, g.first.position, g.end, kind, msg, severity,
                                      offset=g.first.offset), self.max_problems)
        self.held.clear()

    def on_region(self, start: int, end: int, is_error: bool) -> None:
        if is_error:
            self.regions.append((start, end))

    def _in_region(self, pos: int) -> tuple[int, int] | None:
        for a, b in self.regions:
            if a <= pos < b:
                return a, b
        return None


class OffsetIndexCheck(_IndexCheck):
    entry_size = _OSIZE
    label = "index"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.prev_batch: tuple[int, int, int] | None = None  # (pos, end, last offset) of the previous good batch
        self.pending: list[tuple[int, int]] = []  # (offset, slot) of entries whose offset lies in a later batch
        self.chunk_style = 0

    def _read(self) -> tuple[int, int, int] | None:
        """Next entry that is ordered after the previous accepted one, as (slot, offset, position)."""
        while self.i < self.used:
            i = self.i
            rel, pos = _OFF.unpack_from(self.buf, i * _OSIZE)
            off = self.base + rel
            if rel < 0 or pos < 0:
                self.problem(i * _OSIZE, i * _OSIZE + _OSIZE, "index-order",
                             f"slot {i}: negative relative offset {rel} or position {pos}", offset=off)
            elif self.prev is not None and (off <= self.prev[0] or pos <= self.prev[1]):
                self.problem(i * _OSIZE, i * _OSIZE + _OSIZE, "index-order",
                             f"slot {i}: entry (offset {off}, position {pos}) does not follow slot's predecessor "
                             f"(offset {self.prev[0]}, position {self.prev[1]})", offset=off)
            else:
                return i, off, pos
            self.i += 1
        return None

    def _misplaced(self, i: int, off: int, pos: int) -> None:
        region = self._in_region(pos)
        if pos >= self.log_size:
            self.problem(i * _OSIZE, i * _OSIZE + _OSIZE, "index-position",
                         f"slot {i}: position {pos} is past the end of the log ({self.log_size} bytes)", offset=off)
        elif region is not None:
            self.problem(i * _OSIZE, i * _OSIZE + _OSIZE, "index-position",
                         f"slot {i}: position {pos} points into the corrupt log region [{region[0]}, {region[1]})",
                         v.WARNING, offset=off)
        else:
            inside = ""
            if self.prev_batch is not None and self.prev_batch[0] < pos < self.prev_batch[1]:
                inside = f" (inside the batch at {self.prev_batch[0]})"
            self.problem(i * _OSIZE, i * _OSIZE + _OSIZE, "index-position",
                         f"slot {i}: position {pos} is not the start of a batch{inside}", offset=off)

    def on_entry(self, pos: int, size: int, first: int, last: int, max_ts: int) -> None:
        if self.pending:
            self.pending = [(o, s) for o, s in self.pending if o > last]
        while True:
            got = self._read()
            if got is None:
                break
            i, off, ipos = got
            if ipos > pos:
                break
            self.i += 1
            self.prev = (off, ipos)
            if ipos < pos:
                self._misplaced(i, off, ipos)
                continue
            prev_last = self.prev_batch[2] if self.prev_batch is not None else None
            if prev_last is not None and off <= prev_last:
                self.problem(i * _OSIZE, i * _OSIZE + _OSIZE, "index-offset",
                             f"slot {i}: offset {off} lies before the batch at position {pos} (previous batch ends at "
                             f"offset {prev_last}); lookups would skip it", offset=off)
            elif off != last:
                self.chunk_style += 1
                if off > last and len(self.pending) < self.max_problems:
                    self.pending.append((off, i))
        self.prev_batch = (pos, pos + size, last)
        self.regions.clear()

    def finish(self, last_offset: int | None) -> None:
        while True:
            got = self._read()
            if got is None:
                break
            i, off, ipos = got
            self.i += 1
            self.prev = (off, ipos)
            self._misplaced(i, off, ipos)
        for off, i in self.pending:
            self.problem(i * _OSIZE, i * _OSIZE + _OSIZE, "index-offset",
                         f"slot {i}: offset {off} is beyond the log's last offset {last_offset}", offset=off)
        if self.chunk_style:
            self.problem(0, self.used * _OSIZE, "index-chunk-entries",
                         f"{self.chunk_style} entries store the last offset of a later batch of the same append "
                         "(broker <= 3.9 per-chunk or cleaner indexing): valid for lookups", v.INFO)


class TimeIndexCheck(_IndexCheck):
    entry_size = _TSIZE
    label = "timeindex"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.run_max = -1  # largest batch maxTimestamp seen before the current batch
        self.prev_last: int | None = None

    def _read(self) -> tuple[int, int, int] | None:
        while self.i < self.used:
            i = self.i
            ts, rel = _TIME.unpack_from(self.buf, i * _TSIZE)
            off = self.base + rel
            if rel < 0:
                self.problem(i * _TSIZE, i * _TSIZE + _TSIZE, "timeindex-order", f"slot {i}: negative relative offset {rel}",
                             offset=off)
            elif self.prev is not None and (ts <= self.prev[0] or off < self.prev[1]):
                self.problem(i * _TSIZE, i * _TSIZE + _TSIZE, "timeindex-order",
                             f"slot {i}: entry (timestamp {ts}, offset {off}) does not follow its predecessor "
                             f"(timestamp {self.prev[0]}, offset {self.prev[1]})", offset=off)
            else:
                return i, ts, off
            self.i += 1
        return None

    def on_entry(self, pos: int, size: int, first: int, last: int, max_ts: int) -> None:
        while True:
            got = self._read()
            if got is None:
                break
            i, ts, off = got
            if off > last:
                break
            self.i += 1
            self.prev = (ts, off)
            where = (i * _TSIZE, i * _TSIZE + _TSIZE)
            if off >= first:
                if ts != max_ts:
                    self.problem(*where, "timeindex-mismatch",
                                 f"slot {i}: timestamp {ts} differs from maxTimestamp {max_ts} of the batch at "
                                 f"position {pos} holding offset {off}", v.WARNING, offset=off)
                elif self.run_max >= ts:
                    self.problem(*where, "timeindex-mismatch",
                                 f"slot {i}: an earlier batch already reached timestamp {ts}; offset {off} is not "
                                 "where it was first reached", v.WARNING, offset=off)
            elif self.regions:
                self.problem(*where, "timeindex-offset",
                             f"slot {i}: offset {off} lies in a corrupt log region before position {pos}", v.WARNING,
                             offset=off)
            else:
                self.problem(*where, "timeindex-offset",
                             f"slot {i}: offset {off} is in no batch (gap between offset {self.prev_last} and {first})",
                             v.WARNING, offset=off)
        if max_ts > self.run_max:
            self.run_max = max_ts
        self.prev_last = last
        self.regions.clear()

    def finish(self, last_offset: int | None) -> None:
        while True:
            got = self._read()
            if got is None:
                break
            i, ts, off = got
            self.i += 1
            self.prev = (ts, off)
            self.problem(i * _TSIZE, i * _TSIZE + _TSIZE, "timeindex-offset",
                         f"slot {i}: offset {off} is beyond the log's last offset {last_offset}", offset=off)
