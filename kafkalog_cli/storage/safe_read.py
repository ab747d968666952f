"""Reading files on a failing disk: I/O errors, SIGBUS, files that shrink or vanish while read.

Why: a forensic tool runs on the disk that is failing. A bad sector under a mapped page raises SIGBUS (the process
dies, exit 135, no output); a segment truncated by the broker while mapped does the same; retention deletes
segments between our listing and our open. Every read path of kafkalog reads through ``MappedFile``
(storage/segment.py), which uses the two primitives here:

* ``Guard``: the mapping is registered with the SIGBUS guard of the compiled accelerator (``_accel.c``), which turns
  a faulting page into a page of zeros and records it; ``Guard.findings`` then reports the recorded pages as located
  ``unreadable`` / ``truncated-during-read`` findings. No copy, no cost on the fast path: verify-crc keeps its speed.
* ``read_into``: a pread-based reader that fills a buffer window by window (``posix_fadvise`` SEQUENTIAL, holes of a
  sparse file skipped with SEEK_DATA/SEEK_HOLE) and, on EIO, probes the failing window page by page (ddrescue
  style), leaving unreadable pages as zeros and resuming at the first readable page. It is the reader when the
  accelerator is not built (or ``KAFKALOG_NO_MMAP=1``), and the primitive a streaming caller (``kafkalog scan``) can
  call on its own windows.

Both give the same findings: page-rounded ``[start, end)`` byte ranges, clipped to the file size.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable

from kafkalog_cli.errors import PAGE, TRUNCATED_DURING_READ, UNREADABLE, VANISHED, ReadFinding

WINDOW = 8 << 20  # pread window of the sequential reader


def _accel():  # noqa: ANN202 - the extension module, or None
    if os.environ.get("KAFKALOG_NO_MMAP"):
        return None
    try:
        from kafkalog_cli import _accel as mod
    except ImportError:  # pragma: no cover - depends on the build
        return None
    return mod if hasattr(mod, "guard_register") else None


def guard_available() -> bool:
    """True when maps can be guarded against SIGBUS (the compiled accelerator is built, on a POSIX system)."""
    return _accel() is not None


def merge_pages(pages: Iterable[int], size: int) -> list[tuple[int, int]]:
    """Sorted page offsets -> merged ``[start, end)`` ranges, each end clipped to ``size``."""
    out: list[tuple[int, int]] = []
    for p in sorted(set(pages)):
        if p >= size:
            continue
        end = min(p + PAGE, size)
        if out and out[-1][1] >= p:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((p, end))
    return out


def unreadable_findings(path: str, ranges: Iterable[tuple[int, int]], how: str) -> list[ReadFinding]:
    return [ReadFinding(UNREADABLE, path, a, b, f"{b - a} bytes ({(b - a + PAGE - 1) // PAGE} pages of 4 KiB) "
                        f"could not be read ({how}); they were read as zeros and the walk resumed after them")
            for a, b in ranges]


def shrink_finding(path: str, now: int, before: int) -> ReadFinding:
    return ReadFinding(TRUNCATED_DURING_READ, path, now, before,
                       f"the file shrank from {before} to {now} bytes while it was read (the broker truncated or "
                       "rewrote it); bytes past the new end were read as zeros")


def vanished_finding(path: str, during: bool = False) -> ReadFinding:
    what = ("was deleted while it was read (normal on a live broker: retention or compaction removed it); what had "
            "been read is reported") if during else (
            "was listed but is gone when opened (normal on a live broker: retention or compaction deleted it)")
    return ReadFinding(VANISHED, path, 0, 0, what)


# ------------------------------------------------------------------------------------------------ pread reader
def _pread_into(fd: int, view: memoryview, offset: int) -> int:
    """Read into all of ``view`` from ``offset``; returns bytes read (short only at end of file)."""
    done = 0
    n = len(view)
    while done < n:
        got = os.preadv(fd, [view[done:]], offset + done)
        if got == 0:
            break
        done += got
    return done


def data_extents(fd: int, start: int, end: int) -> list[tuple[int, int]]:
    """The ``[a, b)`` ranges of ``[start, end)`` that hold data (SEEK_DATA/SEEK_HOLE); the whole range where the
    file system cannot tell. Holes of a sparse file read as zeros without any I/O."""
    if not hasattr(os, "SEEK_DATA"):
        return [(start, end)]
    out = []
    pos = start
    try:
        while pos < end:
            try:
                a = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # no data after pos: the rest is a hole
                    break
                raise
            if a >= end:
                break
            b = min(os.lseek(fd, a, os.SEEK_HOLE), end)
            out.append((a, b))
            pos = b
    except OSError:
        return [(start, end)]
    return out


def read_into(fd: int, buf: memoryview, start: int = 0, *, window: int = WINDOW) -> tuple[int, list[int]]:
    """Fill ``buf`` with the file's bytes from ``start`` on; returns (bytes available, unreadable page offsets).

    Windows of ``window`` bytes are read with pread; when one fails with EIO (or another I/O error), it is probed
    page by page (4 KiB aligned in the file): a page that fails stays zero and is listed, the next readable page
    resumes the big windows. A short read means the file ended (shrank) there: the count says where. ``buf`` must
    be zero-filled beforehand (holes are not written).
    """
    n = len(buf)
    bad: list[int] = []
    try:
        os.posix_fadvise(fd, start, n, os.POSIX_FADV_SEQUENTIAL)
    except (OSError, AttributeError):
        pass
    end_seen = start + n
    try:  # a file that shrank: the extents stop at its end, and the bytes after it are not a hole
        end_seen = max(start, min(end_seen, os.fstat(fd).st_size))
    except OSError:
        pass
    for a, b in data_extents(fd, start, end_seen):
        pos = a
        while pos < b:
            q = min(b, pos + window)
            try:
                got = _pread_into(fd, buf[pos - start : q - start], pos)
            except OSError:
                pos, short = _probe(fd, buf, start, pos, q, bad)
                if short is not None:
                    return short - start, bad
                continue
            if got < q - pos:
                return pos + got - start, bad
            pos = q
    return end_seen - start, bad


def _probe(fd: int, buf: memoryview, start: int, pos: int, end: int, bad: list[int]) -> tuple[int, int | None]:
    """Page by page over ``[pos, end)`` after a failed window: (where to resume, end of file if it was reached)."""
    p = pos
    seen_bad = False
    while p < end:
        q = min(end, (p // PAGE + 1) * PAGE)
        try:
            got = _pread_into(fd, buf[p - start : q - start], p)
        except OSError:
            bad.append(p // PAGE * PAGE)
            seen_bad = True
            p = q
            continue
        if got < q - p:
            return p + got, p + got
        p = q
        if seen_bad:
            return p, None  # the first readable page after a bad run: back to big windows
    return p, None


# ------------------------------------------------------------------------------------------------ the guard
class Guard:
    """A read-only map registered with the SIGBUS guard (see ``_accel.c``); ``release`` before closing the map."""

    def __init__(self, mm: object) -> None:
        mod = _accel()
        self.slot = -1
        if mod is not None:
            self.slot = mod.guard_register(mm)

    @property
    def active(self) -> bool:
        return self.slot >= 0

    def faulted_pages(self, fd: int | None) -> list[int]:
        """Offsets of the pages that faulted since the last call (consumed). When more faults happened than the
        guard could record, the bounded range is probed with pread to find each bad page."""
        mod = _accel()
        if mod is None or self.slot < 0:
            return []
        pages, overflow = mod.guard_faults(self.slot)
        if overflow is not None and fd is not None:
            lo, hi = overflow
            scratch = memoryview(bytearray(PAGE))
            for p in range(lo, hi, PAGE):
                try:
                    os.preadv(fd, [scratch], p)
                except OSError:
                    pages.append(p)
        return sorted(set(pages))

    def release(self) -> None:
        mod = _accel()
        if mod is not None and self.slot >= 0:
            mod.guard_release(self.slot)
        self.slot = -1


def classify_faults(path: str, pages: list[int], mapped_size: int, fd: int | None) -> list[ReadFinding]:
    """Turn faulted pages into findings: past the file's current end, the file shrank; before it, I/O error."""
    now = mapped_size
    gone = False
    if fd is not None:
        try:
            st = os.fstat(fd)
            now = min(st.st_size, mapped_size)
            gone = st.st_nlink == 0
        except OSError:
            pass
    out: list[ReadFinding] = []
    inside = [p for p in pages if p < now]  # a page past the new end faults because the file shrank
    out.extend(unreadable_findings(path, merge_pages(inside, now),
                                   "I/O error: SIGBUS through the mapping"))
    if now < mapped_size:
        out.append(shrink_finding(path, now, mapped_size))
    if gone:
        out.append(vanished_finding(path, during=True))
    return out
