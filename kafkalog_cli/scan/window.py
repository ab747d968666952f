"""Reading a segment in windows of a few MiB with ``os.pread``, instead of keeping the whole file mapped.

Why: a mapped page counts in the process's RSS once touched, so walking a 1 GiB segment through one mmap costs
1 GiB of RSS (and evicts that much of a live broker's page cache from everyone else's working set). A ``pread``
window is a private buffer that is dropped when the next one is read, so memory stays flat in the segment size.
And a read error comes back as an ``OSError`` (EIO on a failing disk) instead of a SIGBUS that kills the process.

``read_window`` is the one place that touches the file: it is where the issue-13 reader (located ``unreadable`` /
``vanished`` / ``truncated-during-read`` findings) plugs in later.
"""

from __future__ import annotations

import errno
import os
from typing import Any

WINDOW = 4 << 20  # bytes per pread window (a few MiB: big enough that the per-window Python work is noise)
PAGE = 4096


class WindowError(Exception):
    """A window could not be read; ``problem`` is the located finding (kind ``unreadable``, page-rounded range)."""

    def __init__(self, problem: dict[str, Any]) -> None:
        super().__init__(problem["message"])
        self.problem = problem


def open_segment(path: str) -> tuple[int, int]:
    """(fd, size) of a segment opened read-only for sequential windows. Raises OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        import stat

        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)  # read-ahead, since every window follows the last
        return fd, st.st_size
    except BaseException:
        os.close(fd)
        raise


def read_window(fd: int, path: str, offset: int, length: int) -> bytes:
    """``length`` bytes at ``offset`` (fewer at the end of the file). An OSError becomes a WindowError whose problem
    covers the pages of the failed read, so the caller can report it and go on with the next readable region."""
    try:
        return os.pread(fd, length, offset)
    except OSError as exc:
        start = offset - offset % PAGE
        end = -(-(offset + length) // PAGE) * PAGE
        what = os.strerror(exc.errno) if exc.errno else str(exc)
        raise WindowError({
            "file": os.path.basename(path), "position": start, "end": end, "kind": "unreadable", "severity": "error",
            "message": f"read of bytes {start}..{end} failed: {what} (errno {exc.errno}); the batches in this range "
                       "are not listed; copy the file off the disk (ddrescue) and scan the copy",
            "offset": None,
        }) from None
