"""``dump``'s window (``--offset``, ``--count``, ``--start-time``, ``--end-time``, ``--producer-id``): which batches and
records of a partition are printed, and where in which segment the walk starts.

Why a module of its own: the window is a question about offsets and times ("what did producer 4001 write around
10:00"), answered the way the broker's fetch and ListOffsets paths answer it (``ops/seek.py``): the first segment by
a binary search over the base offsets (or the segments' largest timestamps), the first byte by the offset index
(after the time index for a time), then a walk forward that stops as soon as the window is complete. Segments before
the start and bytes before the indexed position are never read. The text stays DumpLogSegments' own lines: the
window only removes batches and records from the output, it never changes a line.

Rules (docs/dump.md, "Dump a window"):

* a record is in the window when ``offset >= --offset``, ``--start-time <= timestamp <= --end-time`` and its
  batch's producer id is ``--producer-id`` (each rule only when its option is given);
* a batch is printed when at least one of its records is (``--deep-iteration`` prints those records only);
* ``--count K`` ends the window after K records (control records are printed but not counted);
* the walk ends at the first batch that starts after ``--end-time`` (its first record's timestamp; with
  CreateTime a producer may write older timestamps later, which a window by time cannot see, as ListOffsets
  cannot);
* the window holds per partition directory: two partitions each get their own ``--count``.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field
from typing import Literal

from kafkalog_cli.format.batch import LOG_APPEND_TIME, Record
from kafkalog_cli.storage import layout
from kafkalog_cli.storage.segment import Entry, MappedFile

Verdict = Literal["take", "skip", "stop"]


@dataclass(frozen=True)
class Window:
    offset: int | None = None
    count: int | None = None
    start_ms: int | None = None
    end_ms: int | None = None
    producer_id: int | None = None

    def judge(self, entry: Entry) -> Verdict:
        """From the batch header alone: ``stop`` (the batch starts after the window's end: nothing later is
        printed), ``skip`` (no record of it can be in the window) or ``take`` (decode its records)."""
        if self.end_ms is not None and first_timestamp(entry) > self.end_ms:
            return "stop"
        if self.producer_id is not None and entry.producer_id != self.producer_id:
            return "skip"
        if self.offset is not None and entry.last_offset < self.offset:
            return "skip"
        if self.start_ms is not None and entry.max_timestamp < self.start_ms:
            return "skip"
        return "take"

    def holds(self, rec: Record) -> bool:
        """Whether a record of a taken batch is in the window (offset and time; the producer is the batch's)."""
        if self.offset is not None and rec.offset < self.offset:
            return False
        if self.start_ms is not None and rec.timestamp < self.start_ms:
            return False
        return not (self.end_ms is not None and rec.timestamp > self.end_ms)


def first_timestamp(entry: Entry) -> int:
    """The timestamp a batch starts at: its first record's (CreateTime), the batch's (LogAppendTime), a legacy
    entry's own."""
    if entry.is_legacy:
        return entry.timestamp
    return entry.max_timestamp if entry.timestamp_type == LOG_APPEND_TIME else entry.base_timestamp


@dataclass
class WindowState:
    """How much of one partition's window has been printed."""

    window: Window
    taken: int = 0

    @property
    def done(self) -> bool:
        return self.window.count is not None and self.taken >= self.window.count

    def choose(self, entry: Entry, records: list[Record]) -> list[Record]:
        """The records of a taken batch to print, up to the rest of ``--count`` (control records not counted)."""
        chosen = []
        for rec in records:
            if self.done:
                break
            if self.window.holds(rec):
                chosen.append(rec)
                if not entry.is_control:
                    self.taken += 1
        return chosen


@dataclass
class Target:
    """One segment of a window: its ``.log`` and the byte position the walk starts at."""

    path: str
    position: int
    partition: str  # the partition directory the window's count belongs to


@dataclass
class Plan:
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _start(partition_dir: str, base: int, log: MappedFile, window: Window, notes: list[str]) -> int:
    """The byte position in the segment at ``base`` where the window can start: the offset index's entry for
    ``--offset``, the time index then the offset index for ``--start-time``; the later of the two."""
    from kafkalog_cli.ops.seek import SeekStats, _start_position, _time_lookup

    stats = SeekStats()
    pos = 0
    if window.offset is not None and window.offset >= base:
        pos = _start_position(partition_dir, base, window.offset, log, stats, notes)
    if window.start_ms is not None:
        off = _time_lookup(partition_dir, base, window.start_ms, stats, notes)
        pos = max(pos, _start_position(partition_dir, base, off, log, stats, notes))
    return pos


def plan_partition(partition_dir: str, window: Window, notes: list[str]) -> list[Target]:
    """The segments of a partition directory the window needs, the first from its indexed start position."""
    from kafkalog_cli.ops.seek import SeekStats, largest_timestamp, seg_path

    bases = layout.segment_bases(partition_dir)
    first = 0
    if window.offset is not None:
        first = max(0, bisect.bisect_right(bases, window.offset) - 1)
    if window.start_ms is not None:
        stats = SeekStats()
        k = first
        while k < len(bases) - 1:  # the broker's rule: skip segments whose largest timestamp is before the target
            with MappedFile(seg_path(partition_dir, bases[k], ".log")) as log:
                if largest_timestamp(partition_dir, bases[k], log, stats, notes) >= window.start_ms:
                    break
            k += 1
        first = k
    targets = []
    for k, base in enumerate(bases[first:]):
        path = seg_path(partition_dir, base, ".log")
        pos = 0
        if k == 0:
            with MappedFile(path) as log:
                pos = _start(partition_dir, base, log, window, notes)
        targets.append(Target(path, pos, partition_dir))
    return targets


def plan(args: list[str], window: Window) -> Plan:
    """The segments to walk for ``args``: a partition directory by ``plan_partition``; a log directory as each of
    its partition directories; a ``.log`` file from its indexed start; any other file as given (position 0)."""
    p = Plan()
    for arg in args:
        if os.path.isdir(arg):
            if layout.segment_bases(arg) or layout.looks_like_partition_dir(arg):
                p.targets += plan_partition(arg, window, p.notes)
                continue
            for name in sorted(os.listdir(arg)):
                sub = os.path.join(arg, name)
                if os.path.isdir(sub) and layout.segment_bases(sub):
                    p.targets += plan_partition(sub, window, p.notes)
            continue
        partition = os.path.dirname(os.path.abspath(arg))
        pos = 0
        if layout.classify(os.path.basename(arg)) == "log" and os.path.isfile(arg):
            try:
                base = int(os.path.basename(arg)[:20])
            except ValueError:
                base = None
            if base is not None:
                with MappedFile(arg) as log:
                    pos = _start(partition, base, log, window, p.notes)
        p.targets.append(Target(arg, pos, partition))
    return p
