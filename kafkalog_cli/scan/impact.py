"""Scanning a live broker gently: ``--low-impact`` (leave the page cache as the scan found it) and
``--max-read-rate`` (bound the scan's read bandwidth).

Why (KIP-824): reading every segment of a broker pulls gigabytes of cold log into the page cache and evicts the
pages the broker serves consumers from. ``--low-impact`` takes, before each segment file (and its ``.index`` /
``.timeindex`` / ``.txnindex``) is read, the list of its pages that are already cached (``mincore`` on a mapping
that touches nothing), and after the segment is done drops with ``posix_fadvise(DONTNEED)`` exactly the pages that
were NOT cached before. Pages the broker had cached (the hot tail) stay; what the scan brought in goes. Dirty pages
(a segment the broker is writing) are not dropped by the kernel: that is its rule, not ours.

``--max-read-rate BYTES/s`` is a token rule at segment granularity: after each segment the worker sleeps until its
bytes read so far divided by the time since it started is at most its share of the rate (``scan/run.py`` divides the
rate among the local workers; on Spark each Python worker gets the whole rate). The average is
bounded; within one segment the reads go at disk speed (documented simpler rule).

The settings travel to worker processes and Spark tasks in the scan's settings object (``scan/settings.py``), like
``--broker-id``.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

PAGE = mmap.PAGESIZE
COMPANIONS = (".index", ".timeindex", ".txnindex")

_libc: ctypes.CDLL | bool | None = None  # False: looked for and not available


def _c() -> ctypes.CDLL | None:
    global _libc
    if _libc is None:
        try:
            lib = ctypes.CDLL(None, use_errno=True)
            lib.mmap.restype = ctypes.c_void_p
            lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                 ctypes.c_long]
            lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            lib.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
            _libc = lib
        except (OSError, AttributeError):
            _libc = False
    return _libc if isinstance(_libc, ctypes.CDLL) else None


def resident(path: str) -> bytearray | None:
    """One byte per page of ``path``: bit 0 set when the page is in the page cache. None when unknown (no mincore,
    an empty or unreadable file). Maps the file without touching a page, so the check itself reads nothing."""
    lib = _c()
    if lib is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return None
        addr = lib.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            return None
        try:
            pages = (size + PAGE - 1) // PAGE
            vec = ctypes.create_string_buffer(pages)
            if lib.mincore(addr, size, vec) != 0:
                return None
            return bytearray(vec.raw[:pages])
        finally:
            lib.munmap(addr, size)
    finally:
        os.close(fd)


def drop_new_pages(path: str, before: bytearray | None) -> int:
    """``posix_fadvise(DONTNEED)`` the runs of pages of ``path`` that were not cached in ``before`` (all pages when
    ``before`` is None, i.e. the file was not readable then). Returns the bytes advised."""
    if not hasattr(os, "posix_fadvise"):
        return 0
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return 0
    advised = 0
    try:
        size = os.fstat(fd).st_size
        pages = (size + PAGE - 1) // PAGE
        i = 0
        while i < pages:
            if before is not None and i < len(before) and before[i] & 1:
                i += 1
                continue
            j = i
            while j < pages and not (before is not None and j < len(before) and before[j] & 1):
                j += 1
            os.posix_fadvise(fd, i * PAGE, (j - i) * PAGE, os.POSIX_FADV_DONTNEED)
            advised += (j - i) * PAGE
            i = j
    finally:
        os.close(fd)
    return advised


def files_of(segment: str) -> list[str]:
    stem = segment[: -len(".log")] if segment.endswith(".log") else None
    out = [segment]
    if stem is not None:
        out += [stem + s for s in COMPANIONS if os.path.exists(stem + s)]
    return out


class _Rate:
    """Bytes read by this process since its first segment, against the allowed rate."""

    def __init__(self) -> None:
        self.start: float | None = None
        self.bytes = 0

    def charge(self, n: int, rate: float) -> float:
        now = time.monotonic()
        if self.start is None:
            self.start = now
        self.bytes += n
        wait = self.bytes / rate - (now - self.start)
        if wait > 0:
            time.sleep(wait)
        return max(0.0, wait)


_rate = _Rate()


@contextmanager
def gentle(segment: str) -> Iterator[None]:
    """Around the scan of one local segment: the --low-impact page-cache rule and the --max-read-rate pause."""
    from kafkalog_cli.scan.settings import current

    low = current().low_impact
    rate = float(current().max_read_rate)
    if not low and not rate:
        yield
        return
    files = files_of(segment)
    before = {f: resident(f) for f in files} if low else {}
    try:
        yield
    finally:
        if low:
            for f in files:
                drop_new_pages(f, before.get(f))
        if rate:
            size = 0
            for f in files:
                try:
                    size += os.path.getsize(f)
                except OSError:
                    pass
            _rate.charge(size, rate)


def parse_rate(text: str) -> int:
    """``--max-read-rate`` values: bytes per second, with an optional K/M/G (powers of 1024) and ``/s``."""
    t = text.strip().upper().removesuffix("/S").removesuffix("B").removesuffix("I")
    mult = 1
    if t and t[-1] in "KMG":
        mult = 1024 ** ("KMG".index(t[-1]) + 1)
        t = t[:-1]
    try:
        value = float(t) * mult
    except ValueError:
        raise ValueError(f"--max-read-rate {text!r} is not a rate (e.g. 50M for 50 MiB/s)") from None
    if value <= 0:
        raise ValueError("--max-read-rate must be above 0")
    return int(value)
