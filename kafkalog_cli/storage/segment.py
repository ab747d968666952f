"""Segment files on disk: read-only mmap and the entry walk of Kafka's FileLogInputStream (spec §3.2).

``open_readonly`` maps a file without copying it; ``walk`` yields (position, size, magic) of each entry exactly as
Kafka's scanner does (no CRC check, no magic validation, silent stop on a truncated tail), and ``read_entry`` turns
one into a ``Batch`` (magic >= 2) or a ``LegacyEntry`` (magic 0/1).
"""

from __future__ import annotations

import errno
import mmap
import os
from collections.abc import Iterator

from kafkalog_cli.errors import (
    TRUNCATED_DURING_READ,
    UNREADABLE,
    CorruptRecordError,
    KafkalogError,
    ReadFinding,
    UnreadableFileError,
    unreadable,
)
from kafkalog_cli.format.batch import HEADER_SIZE, Batch, Record
from kafkalog_cli.format.entry import Entry
from kafkalog_cli.format.layouts import ENTRY_PREFIX, HEADER_SIZE_UP_TO_MAGIC, LEGACY_V0_RECORD_OVERHEAD, LOG_OVERHEAD
from kafkalog_cli.format.legacy import LegacyEntry
from kafkalog_cli.storage.safe_read import (
    Guard,
    classify_faults,
    data_extents,
    guard_available,
    merge_pages,
    read_into,
    shrink_finding,
    unreadable_findings,
    vanished_finding,
)

MIN_RECORD_OVERHEAD = LEGACY_V0_RECORD_OVERHEAD  # 14: the scanner's minimum size field
_PREFIX = ENTRY_PREFIX.struct  # offset, size, epoch | crc, magic


_STRICT_READS = False


def strict_reads(on: bool = True) -> None:
    """Writing commands (repairs and their plans) switch this on: a file in which a byte could not be read (it read as
    zeros through the SIGBUS guard or the pread fallback) or that shrank while read then raises
    ``UnreadableFileError`` when it is closed, so that no repair is planned or written from zeros the disk made up
    (salvage would otherwise cut good batches out, rebuild-index would stop an index early). Read-only commands
    leave it off: they report such bytes as located findings and go on."""
    global _STRICT_READS
    _STRICT_READS = on


class MappedFile:
    """A read-only view of a whole file that survives a failing disk. Use as a context manager.

    Normally a memory map registered with the SIGBUS guard (storage/safe_read.py): a page that cannot be read, or
    that is gone because the file shrank, reads as zeros instead of killing the process, and ``findings()`` says
    which bytes those were. Without the compiled guard (or where the file system cannot map), the file is read with
    pread into memory, probing bad windows page by page, with the same findings. An empty file is an empty buffer.
    A file that is gone when opened raises ``FileVanishedError`` (callers that listed it report a ``vanished`` note).
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None
        self._mm: mmap.mmap | None = None
        self._guard: Guard | None = None
        self._pages: set[int] = set()
        self._static: list[ReadFinding] = []
        self._final: list[ReadFinding] | None = None
        try:
            # O_NONBLOCK: opening a FIFO must not hang waiting for a writer (it is refused just below)
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            raise unreadable(exc, path) from None
        try:
            st = os.fstat(fd)
            import stat

            if stat.S_ISDIR(st.st_mode):
                raise UnreadableFileError("is a directory, expected a file", file=path)
            if not stat.S_ISREG(st.st_mode):
                raise UnreadableFileError("not a regular file (a device, FIFO or socket)", file=path)
            self.size = st.st_size
            self.buf: memoryview | bytes = b""
            if self.size > 0:
                self._open_buffer(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _open_buffer(self, fd: int) -> None:
        mm = None
        if guard_available():
            try:
                mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError) as exc:
                if getattr(exc, "errno", None) == errno.EACCES:
                    raise UnreadableFileError("permission denied", file=self.path) from None
                mm = None  # a file system that cannot map (FUSE direct_io, procfs...): read it instead
        if mm is not None:
            guard = Guard(mm)
            if guard.active:
                self._mm, self._guard = mm, guard
                self.buf = memoryview(mm)
                return
            mm.close()
        data = bytearray(self.size)
        view = memoryview(data)
        try:
            got, bad = read_into(fd, view)
        except OSError as exc:
            raise unreadable(exc, self.path) from None
        self._pages.update(bad)
        if got < self.size:
            self._static.append(shrink_finding(self.path, got, self.size))
        self.buf = view

    def advise_sequential(self) -> None:
        """Readahead hints for a front-to-back walk of the whole file (verify-crc, rebuild-index, dump): the file's
        readahead window doubled (POSIX_FADV_SEQUENTIAL) and aggressive readahead on the map's page faults
        (MADV_SEQUENTIAL). Off a cold disk this halved verify-crc's time here (bench/HISTORY.md, issue 20); explicit
        WILLNEED was slower. Not for random access (index lookups): hence a call, not the default.
        ``KAFKALOG_NO_READAHEAD=1`` turns it off (for before/after measurements)."""
        if self._fd is None or not self.size or os.environ.get("KAFKALOG_NO_READAHEAD"):
            return
        try:
            os.posix_fadvise(self._fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        except (OSError, AttributeError):
            pass
        if self._mm is not None:
            try:
                self._mm.madvise(mmap.MADV_SEQUENTIAL)
            except (OSError, AttributeError, ValueError):
                pass

    def release_pages(self, start: int, length: int) -> bool:
        """Give the mapping's resident pages in ``[start, start+length)`` (page-aligned) back to the kernel
        (``MADV_DONTNEED``; re-read from the page cache if touched again), so a streaming reader of a large segment
        does not keep it all resident. False (nothing done) when the file is not memory-mapped."""
        if self._mm is None or not hasattr(mmap, "MADV_DONTNEED"):
            return False
        self._mm.madvise(mmap.MADV_DONTNEED, start, length)
        return True

    def findings(self) -> list[ReadFinding]:
        """What the disk did to the reads so far (``unreadable`` ranges, ``truncated-during-read``, ``vanished``);
        call it again after further reads: pages that faulted since are added."""
        if self._final is not None:
            return self._final
        out: list[ReadFinding] = []
        if self._guard is not None:
            self._pages.update(self._guard.faulted_pages(self._fd))
            if self._pages or self._fd is not None:
                out = classify_faults(self.path, sorted(self._pages), self.size, self._fd)
            return out
        out = unreadable_findings(self.path, merge_pages(self._pages, self.size), "I/O error reading with pread")
        out += self._static
        if self._fd is not None and self.size:
            try:
                if os.fstat(self._fd).st_nlink == 0:
                    out.append(vanished_finding(self.path, during=True))
            except OSError:
                pass
        return out

    def raise_if_unreadable(self) -> None:
        """For writing commands: raise ``UnreadableFileError`` when any byte read so far could not be read (it read
        as zeros) or the file shrank, so that a repair never writes output computed from zeros the disk made up."""
        for f in self.findings():
            if f.kind in (UNREADABLE, TRUNCATED_DURING_READ):
                raise UnreadableFileError(f"{f.kind} bytes [{f.start}, {f.end}): {f.message}", file=self.path,
                                          position=f.start)

    def data_extents(self) -> list[tuple[int, int]]:
        """``[start, end)`` ranges of the file holding data; the gaps are holes of a sparse file (zeros, no I/O)."""
        if self._fd is None or not self.size:
            return [(0, self.size)]
        return data_extents(self._fd, 0, self.size)

    def unreadable_ranges(self) -> list[tuple[int, int]]:
        """The ``[start, end)`` ranges of ``unreadable`` findings so far."""
        return [(f.start, f.end) for f in self.findings() if f.kind == UNREADABLE]

    def close(self) -> None:
        """Unmap now when nothing else holds a slice of the map; otherwise (e.g. a slice kept alive by an exception's
        traceback) leave the unmapping to the garbage collector instead of failing (the map then stays guarded)."""
        if self._final is None:
            self._final = self.findings()  # kept: callers may ask after closing
        buf, mm = self.buf, self._mm
        self.buf = b""
        self._mm = None
        try:
            if isinstance(buf, memoryview):
                buf.release()
            if mm is not None:
                mm.close()
                if self._guard is not None:
                    self._guard.release()
        except BufferError:
            pass
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if _STRICT_READS:
            self.raise_if_unreadable()

    def __enter__(self) -> MappedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self.size

    def __bool__(self) -> bool:
        # an open map is always "something", even of an empty file (``if mf:`` must not mean ``if mf.size:``)
        return True


def walk(buf: bytes | memoryview, start: int = 0, end: int | None = None, *, file: str | None = None) -> Iterator[tuple[int, int, int]]:
    """Yield (position, size, magic) of each entry between ``start`` and ``end`` (FileLogInputStream.nextBatch).

    Stops silently when 17 or fewer bytes are left or when an entry runs past ``end``; raises CorruptRecordError
    when a size field is below 14 (this is where a zero-filled tail aborts Kafka's tool).
    """
    if end is None:
        end = len(buf)
    pos = start
    unpack = _PREFIX.unpack_from
    while pos < end - HEADER_SIZE_UP_TO_MAGIC:
        _offset, size, _x, magic = unpack(buf, pos)
        if size < MIN_RECORD_OVERHEAD:
            raise CorruptRecordError(
                f"Found record size {size} smaller than minimum record overhead ({MIN_RECORD_OVERHEAD})",
                file=file,
                position=pos,
                expected=f"size >= {MIN_RECORD_OVERHEAD}",
                found=str(size),
            )
        if pos > end - LOG_OVERHEAD - size:
            return
        yield pos, size + LOG_OVERHEAD, magic
        pos += size + LOG_OVERHEAD


def read_entry(buf: bytes | memoryview, pos: int, magic: int, *, file: str | None = None) -> Entry:
    """Parse the entry at ``pos``: a v2 batch header (61-byte window, as Kafka reads it) or a legacy message."""
    if magic >= 2:
        if pos + HEADER_SIZE > len(buf):
            raise CorruptRecordError(
                "batch header runs past the end of the file",
                file=file,
                position=pos,
                expected=f"{HEADER_SIZE} header bytes",
                found=f"{len(buf) - pos}",
            )
        return Batch(buf, pos)
    try:
        return LegacyEntry(buf, pos)
    except CorruptRecordError as exc:
        raise exc.located(file) from None


def entries(buf: bytes | memoryview, start: int = 0, end: int | None = None, *, file: str | None = None) -> Iterator[Entry]:
    """Walk and parse: yields Batch / LegacyEntry objects."""
    for pos, _size, magic in walk(buf, start, end, file=file):
        yield read_entry(buf, pos, magic, file=file)


def data_records(files: list[str], notes: list[str]) -> Iterator[tuple[str, Entry, Record]]:
    """(file, entry, record) for every readable data record of the files in order (control batches skipped);
    damage becomes a note in ``notes`` (the records before it are kept) and the walk goes on with the next file."""
    for f in files:
        try:
            with MappedFile(f) as mf:
                for entry in entries(mf.buf, file=f):
                    if entry.is_control:
                        continue
                    for r in entry.iter_records(mf.buf):
                        yield f, entry, r
        except KafkalogError as exc:
            notes.append(f"{f}: stopped reading: {exc.describe()}")
