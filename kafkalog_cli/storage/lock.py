"""Is a Kafka broker holding its log directory's ``.lock``?

Kafka's ``FileLock`` calls ``FileChannel.tryLock()``, which on Linux is an fcntl POSIX record lock (F_SETLK) over
the whole file. We probe the same way: open the existing file read-write (never create or truncate it), try a
non-blocking exclusive ``lockf`` and release it at once. An flock(2)-style lock (taken by other tools, or by some
JVMs on other platforms) is probed too, because it costs one more system call.

``acquire`` takes the same two locks and *keeps* them, so that a broker cannot start on the log directory while a
writing command changes files in it (Kafka's ``tryLock`` then fails and the broker refuses the directory).

Caveat of POSIX locks: closing *any* descriptor of a file drops every lock the calling process holds on it, so
``probe`` must never be called on a file this process holds with ``acquire``.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
from dataclasses import dataclass

# struct flock on Linux (x86_64 and aarch64): short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid
_FLOCK = struct.Struct("hhqqi4x")


@dataclass
class LockState:
    locked: bool
    kind: str = ""  # "fcntl" | "flock"
    pid: int | None = None


def _holder_pid(fd: int, lock_type: int) -> int | None:
    """The pid holding a conflicting POSIX lock (F_GETLK), or None when the kernel does not say."""
    try:
        probe = _FLOCK.pack(lock_type, os.SEEK_SET, 0, 0, 0)
        res = fcntl.fcntl(fd, fcntl.F_GETLK, probe)
        l_type, _w, _s, _l, pid = _FLOCK.unpack(res[: _FLOCK.size])
        if l_type != fcntl.F_UNLCK and pid > 0:
            return pid
    except (OSError, struct.error):
        pass
    return None


def probe(path: str) -> LockState:
    """Probe ``path`` for a lock held by another process. A missing file is unlocked.

    Raises OSError (e.g. PermissionError) when the file exists but cannot be opened at all.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        exclusive = True
    except FileNotFoundError:
        return LockState(False)
    except PermissionError:
        # a shared (read) lock conflicts with the broker's exclusive lock just as well
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        exclusive = False
    try:
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        try:
            fcntl.lockf(fd, mode | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                return LockState(True, "fcntl", _holder_pid(fd, fcntl.F_WRLCK if exclusive else fcntl.F_RDLCK))
            raise
        fcntl.lockf(fd, fcntl.LOCK_UN)
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return LockState(True, "flock", None)
            raise
        fcntl.flock(fd, fcntl.LOCK_UN)
        return LockState(False)
    finally:
        os.close(fd)


@dataclass
class HeldLock:
    """A lock taken by ``acquire``; ``release`` (closing the descriptor) drops it."""

    fd: int
    path: str

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def acquire(path: str) -> tuple[HeldLock | None, LockState]:
    """Take and keep a non-blocking exclusive fcntl lock and flock on ``path``, as the broker's ``tryLock`` would.

    Returns ``(held, LockState(False))`` on success, ``(None, LockState(True, kind, pid))`` when another process
    holds either lock, and ``(None, LockState(False))`` when the file does not exist (it is never created: a missing
    ``.lock`` is the caller's to judge). A file we may only read is locked shared, which blocks an exclusive
    ``tryLock`` just as well. Raises OSError when the file exists but cannot be opened or locked.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        exclusive = True
    except FileNotFoundError:
        return None, LockState(False)
    except PermissionError:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        exclusive = False
    ok = False
    try:
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        try:
            fcntl.lockf(fd, mode | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                return None, LockState(True, "fcntl", _holder_pid(fd, fcntl.F_WRLCK if exclusive else fcntl.F_RDLCK))
            raise
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return None, LockState(True, "flock", None)
            raise
        ok = True
        return HeldLock(fd, path), LockState(False)
    finally:
        if not ok:
            os.close(fd)
