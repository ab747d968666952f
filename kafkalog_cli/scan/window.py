"""Reading a segment in windows of a few MiB with ``pread``, instead of keeping the whole file mapped.

Why: a mapped page counts in the process's RSS once touched, so walking a 1 GiB segment through one mmap costs
1 GiB of RSS (and evicts that much of a live broker's page cache from everyone else's working set). A ``pread``
window is a private buffer that is dropped when the next one is read, so memory stays flat in the segment size.

``read_window`` is the one place the row walk touches the file, and it reads through ``storage.safe_read.read_into``
(the same ddrescue-style prober every other read path uses, not a second implementation): a failing window is
probed page by page, unreadable pages come back as zeros and as located ``unreadable`` findings rounded to 4 KiB
pages, and a file that shrank under us gives the bytes still there and a ``truncated-during-read`` note.
"""

from __future__ import annotations

import errno
import os
import stat

from kafkalog_cli.errors import ReadFinding
from kafkalog_cli.storage.safe_read import merge_pages, read_into, unreadable_findings

WINDOW = 4 << 20  # bytes per pread window (a few MiB: big enough that the per-window Python work is noise)
PAGE = 4096


def open_segment(path: str) -> tuple[int, int]:
    """(fd, size) of a segment opened read-only for sequential windows. Raises OSError (FileNotFoundError when the
    file vanished after it was listed)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)  # read-ahead, since every window follows the last
        return fd, st.st_size
    except BaseException:
        os.close(fd)
        raise


def read_window(fd: int, path: str, offset: int, length: int, size: int | None = None,
                into: bytearray | None = None) -> tuple[bytearray | memoryview, list[ReadFinding]]:
    """(bytes, findings) for ``length`` bytes at ``offset``. Unreadable pages are zeros in the bytes and
    ``unreadable`` findings (page-rounded, clipped to ``size``, the file size the caller saw); fewer bytes than asked means the file
    ends there (the caller, who knows the size it saw at open, tells whether it shrank: ``shrink_finding``).

    ``into``: a buffer of at least ``length`` bytes to read into, reused from window to window by the caller (the
    bytes come back as a view of it, valid until the next read into it). A fresh 4 MiB buffer per window cost a
    zero-fill and a page fault per page, about 5 % of a scan's CPU. The window is read with one ``preadv``; only
    when that fails or comes back short does the careful path below run (page-by-page probing, the file's end)."""
    if into is not None and len(into) >= length:
        view = memoryview(into)[:length]
        try:
            got = os.preadv(fd, [view], offset)
        except OSError:
            got = -1
        if got == length:
            return view, []
        view.release()
    buf = bytearray(length)
    got, pages = read_into(fd, memoryview(buf), offset)
    end = offset + got if got < length else max(offset + length, size or 0)  # pages are whole up to the file end
    findings = unreadable_findings(path, merge_pages(pages, end), "I/O error reading with pread")
    if got < length:
        del buf[got:]
    return buf, findings
