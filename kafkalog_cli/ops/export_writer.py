"""The output file of ``export --format ndjson|parquet``: a new file written front to back, gathered into large
page-aligned chunks that a background thread writes with ``O_DIRECT`` (bypassing the page cache), reused buffers.

Why (issue 31 item 4, bench/HISTORY.md "Issue 31: export, by size"): an NDJSON export writes about twice the bytes
of ``dump --deep-iteration --print-data-log`` (1.0 GB for a 256 MiB segment) and then fsyncs it (the rename into
place must not publish a file a crash could leave empty). Through the page cache every MiB of the output is a fresh
MiB of kernel memory; on the benchmark machine (a VM whose free memory is returned to the host) a fresh page costs
8-40 us, so writing 1 GB cost 2-8 s of system time once the output outgrew the memory recently freed, and the
fsync waited for all of it at the end: the ratio to the dump fell with the segment size (0.83 at 128 MiB, 0.46 at
256 MiB). Written directly, the same bytes go from two reused 4 MiB buffers to the device while the walk formats
the next chunk: no page-cache growth (the export does not evict a broker's cached segments either), a system time
that does not grow with the output, and an fsync with nothing left to write.

Where the file system refuses ``O_DIRECT`` (tmpfs before Linux 6.6, some FUSE or network file systems), or
``KAFKALOG_NO_DIRECT_IO=1``, the same chunks are written through the page cache. The bytes are the same either way:
only the path to the disk differs. The tail that does not fill an aligned block is written after ``O_DIRECT`` is
turned off on the descriptor.
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
import queue
import threading
from typing import Any

CHUNK = 4 << 20  # bytes per write: a multiple of every block size O_DIRECT asks for
ALIGN = 4096  # the file offset and length of an O_DIRECT write are multiples of the logical block size (<= 4096)
BUFFERS = 3  # one being filled, one being written, one spare: the walk waits only when the disk is slower


def _direct_allowed() -> bool:
    return hasattr(os, "O_DIRECT") and not os.environ.get("KAFKALOG_NO_DIRECT_IO")


class DirectWriter:
    """A binary file object (``write``, ``tell``, ``flush``, ``close``) over a NEW file (``O_EXCL``: never
    overwrites). ``write`` copies into the current chunk; a full chunk goes to the writer thread. An error of the
    thread (``ENOSPC``, ``EIO``) is raised by the next ``write``, ``flush`` or ``close``."""

    def __init__(self, path: str) -> None:
        self.name = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
        self.direct = False
        if _direct_allowed():
            try:
                fl = fcntl.fcntl(self._fd, fcntl.F_GETFL)
                fcntl.fcntl(self._fd, fcntl.F_SETFL, fl | os.O_DIRECT)
                self.direct = True
            except OSError:
                self.direct = False  # not supported here: the page cache, same bytes
        self._free: queue.Queue[mmap.mmap] = queue.Queue()
        self._buffers = 1  # allocated so far (up to BUFFERS, as chunks are handed off)
        self._todo: queue.Queue[tuple[mmap.mmap, int] | None] = queue.Queue()
        self._cur: mmap.mmap | None = mmap.mmap(-1, CHUNK)  # page-aligned, as O_DIRECT needs; reused for the file
        self._view = memoryview(self._cur)
        self._n = 0  # bytes in the current chunk
        self._written = 0  # bytes handed to the thread
        self._error: BaseException | None = None
        self._closed = False
        # started at the first full chunk: a file smaller than a chunk (a log dir of 20,000 small partitions) is
        # written at close by the caller, without a thread (starting one per file cost more than the file)
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------------------------------ the thread
    def _run(self) -> None:
        while True:
            job = self._todo.get()
            if job is None:
                return
            buf, n = job
            try:
                if self._error is None:
                    self._write_all(buf, n)
            except BaseException as exc:  # noqa: BLE001 - handed to the walk's thread (_check)
                self._error = exc
            finally:
                self._free.put(buf)

    def _write_all(self, buf: mmap.mmap, n: int) -> None:
        view = memoryview(buf)
        try:
            done = 0
            while done < n:
                if self.direct and (n - done) % ALIGN:
                    aligned = (n - done) - (n - done) % ALIGN
                    if aligned:
                        done += self._write(view[done:done + aligned])
                        continue
                    self._buffered()  # the tail: shorter than a block
                done += self._write(view[done:n])
        finally:
            view.release()

    def _write(self, data: memoryview) -> int:
        try:
            k = os.write(self._fd, data)
        except OSError as exc:
            if exc.errno != errno.EINVAL or not self.direct:
                raise
            self._buffered()  # refused at the first write (some file systems accept the flag, not the I/O)
            k = os.write(self._fd, data)
        if k <= 0:
            raise OSError(errno.EIO, "write returned nothing")
        if self.direct and k % ALIGN:
            self._buffered()  # a short direct write: the rest is unaligned
        return k

    def _buffered(self) -> None:
        if self.direct:
            fl = fcntl.fcntl(self._fd, fcntl.F_GETFL)
            fcntl.fcntl(self._fd, fcntl.F_SETFL, fl & ~os.O_DIRECT)
            self.direct = False

    # ------------------------------------------------------------------------------------------ the file object
    def _check(self) -> None:
        if self._error is not None:
            raise self._error  # kept: every later call fails too

    def _hand_off(self) -> None:
        assert self._cur is not None
        self._view.release()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kafkalog-export-writer", daemon=True)
            self._thread.start()
        self._todo.put((self._cur, self._n))
        self._written += self._n
        if self._free.empty() and self._buffers < BUFFERS:
            self._buffers += 1
            self._cur = mmap.mmap(-1, CHUNK)
        else:
            self._cur = self._free.get()
        self._view = memoryview(self._cur)
        self._n = 0
        self._check()

    def write(self, data: Any) -> int:
        if self._closed:
            raise ValueError("write to a closed file")
        self._check()
        src = memoryview(data).cast("B")
        total = len(src)
        pos = 0
        while pos < total:
            k = min(CHUNK - self._n, total - pos)
            self._view[self._n:self._n + k] = src[pos:pos + k]
            self._n += k
            pos += k
            if self._n == CHUNK:
                self._hand_off()
        return total

    def tell(self) -> int:
        return self._written + self._n

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return self._closed

    def flush(self) -> None:
        self._check()  # the bytes are written when a chunk fills and at close (fsync: the caller's)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._thread is None:  # nothing handed off: the one chunk is written here
                if self._n:
                    self._view.release()
                    assert self._cur is not None
                    self._write_all(self._cur, self._n)
            else:
                if self._n and self._error is None:
                    self._view.release()
                    self._todo.put((self._cur, self._n))  # type: ignore[arg-type]
                    self._cur = None
                self._todo.put(None)
                self._thread.join()
            self._check()
        finally:
            os.close(self._fd)
            self._release_buffers()

    def abort(self) -> None:
        """Stop without writing what is buffered (an interrupted or failed export; the file is removed after)."""
        if self._closed:
            return
        self._closed = True
        self._error = self._error or OSError(errno.ECANCELED, "export aborted")
        if self._thread is not None:
            self._todo.put(None)
            self._thread.join()
        os.close(self._fd)
        self._release_buffers()

    def _release_buffers(self) -> None:
        """Unmap the chunk buffers (the thread has ended: every buffer is back in ``_free`` or is ``_cur``). Kept
        after close, they stayed mapped for as long as the writer was referenced: an export of 20,000 partitions
        held 60,000 mappings (near vm.max_map_count's 65,530) and 510 MiB resident (bench/export_scale_bench.py)."""
        self._view.release()
        bufs = [] if self._cur is None else [self._cur]
        self._cur = None
        while True:
            try:
                bufs.append(self._free.get_nowait())
            except queue.Empty:
                break
        for b in bufs:
            try:
                b.close()
            except BufferError:
                pass  # a view of it lives on in a write error's traceback: unmapped when that goes

    def __enter__(self) -> DirectWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:
            self.abort()
