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
    kind: str = ""  # "fcntl" | "flock"; a lock_file taken without any lock: "unsupported"
    pid: int | None = None


def _holder_pid(fd: int, lock_type: int, start: int = 0, length: int = 0) -> int | None:
    """The pid holding a POSIX lock that conflicts with ``lock_type`` over ``length`` bytes from ``start`` (0: to the
    end of the file) (F_GETLK), or None when the kernel does not say."""
    try:
        probe = _FLOCK.pack(lock_type, os.SEEK_SET, start, length, 0)
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
    remove: bool = False  # a lock file of ``lock_file``: unlinked (while still locked) on release

    def release(self) -> None:
        if self.fd < 0:
            return
        try:
            if self.remove and _same_file(self.fd, self.path):
                os.unlink(self.path)  # still locked: a run that opened it meanwhile sees a stale inode and retries
        except OSError:
            pass  # a lock file left behind is harmless: empty, unlocked, reused by the next run
        finally:
            os.close(self.fd)
            self.fd = -1


def _same_file(fd: int, path: str) -> bool:
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    fst = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (fst.st_dev, fst.st_ino)


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


# ------------------------------------------------------------------------------------------------ kafkalog's own lock
def _flock_holder(fd: int) -> int | None:
    """The pid holding an flock(2) on the file behind ``fd``, from ``/proc/locks`` (Linux), or None.

    flock(2) has no F_GETLK; the kernel lists every lock with its owner in ``/proc/locks`` as
    ``N: FLOCK ADVISORY WRITE <pid> <major>:<minor>:<inode> 0 EOF`` (major/minor in hex). Blocked waiters are
    listed with ``->`` and skipped.
    """
    try:
        st = os.fstat(fd)
        key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 6 or "->" in parts or parts[1] != "FLOCK":
                    continue
                if parts[5] == key and parts[4].isdigit() and int(parts[4]) > 0:
                    return int(parts[4])
    except OSError:
        pass
    return None


def lock_directory(path: str) -> tuple[HeldLock | None, LockState]:
    """Take and keep a non-blocking exclusive flock(2) on the directory ``path`` itself.

    This is kafkalog's own lock of a partition: two writing commands on the same partition must never interleave,
    whether or not the log directory has a ``.lock``. Locking the directory inode needs no file at all (nothing the
    broker could trip on is created in or beside the log directory), is keyed by the real directory (every path,
    symlink or bind mount that leads to it finds the same lock) and is dropped by the kernel when the process dies,
    so a killed run never leaves a stale lock. Returns ``(held, LockState(False))`` or ``(None, LockState(True,
    "flock", pid))`` when another process holds it.
    """
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        try:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return None, LockState(True, "flock", _flock_holder(fd))
            raise
        finally:
            os.close(fd)
    return HeldLock(fd, path), LockState(False)


def lock_file(path: str) -> tuple[HeldLock | None, LockState]:
    """Take and keep a non-blocking exclusive flock(2) on the lock file ``path``, created when missing (mode 0644);
    the holder's pid is written into it. ``release`` unlinks it while still holding the lock, so a finished run
    leaves nothing; a killed one leaves an empty unlocked file (the kernel drops the lock), which the next run takes
    over. A run that opened the file just before its holder unlinked it locks a deleted inode: it sees that (the
    path no longer names its descriptor's file) and opens the path again. Returns ``(held, LockState(False))`` or
    ``(None, LockState(True, "flock", pid))``; raises OSError when the file cannot be created or locked."""
    for _ in range(100):
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        kind = "flock"
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in UNSUPPORTED_LOCK_ERRNOS:
                kind = _posix_lock_fallback(fd)  # a file system without flock(2) (some FUSE and network ones)
                if kind == "locked":
                    try:
                        return None, LockState(True, "fcntl", _holder_pid(fd, fcntl.F_WRLCK) or _pid_in(fd))
                    finally:
                        os.close(fd)
            else:
                try:
                    if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                        return None, LockState(True, "flock", _flock_holder(fd) or _pid_in(fd))
                    raise
                finally:
                    os.close(fd)
        if not _same_file(fd, path):
            os.close(fd)
            continue
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # the pid is a courtesy for a reader of the file; /proc/locks names the holder anyway
        return HeldLock(fd, path, remove=True), LockState(False, kind)
    raise OSError(errno.EAGAIN, "the lock file was replaced 100 times while it was being locked", path)


# flock(2) / fcntl(2) locks the file system does not provide (not "held by another process")
UNSUPPORTED_LOCK_ERRNOS = frozenset(e for e in (getattr(errno, "EOPNOTSUPP", None), getattr(errno, "ENOTSUP", None),
                                                getattr(errno, "ENOSYS", None), getattr(errno, "ENOLCK", None))
                                    if e is not None)


def _posix_lock_fallback(fd: int) -> str:
    """Where flock(2) is not supported, an exclusive POSIX record lock (fcntl F_SETLK) on the same file, which
    some file systems provide instead: ``"fcntl"`` (held), ``"locked"`` (another process holds it) or
    ``"unsupported"`` (no lock of either kind: the caller proceeds unlocked, with a warning)."""
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            return "locked"
        if exc.errno in UNSUPPORTED_LOCK_ERRNOS:
            return "unsupported"
        raise
    return "fcntl"


def _pid_in(fd: int) -> int | None:
    """The pid a ``lock_file`` holder wrote into the file (where ``/proc/locks`` cannot say)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None


def create_lock_file(path: str) -> bool:
    """Create ``path`` as Kafka's ``FileLock`` does (``FileChannel.open`` with CREATE, READ, WRITE: mode 0666 minus
    the umask, never truncated); True when this call created it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def lock_ranges(path: str, keys: list[int]) -> tuple[HeldLock | None, LockState]:
    """Take and keep a non-blocking exclusive POSIX record lock (fcntl F_SETLK) of one byte at each offset of
    ``keys`` in the lock file ``path`` (created when missing, mode 0666 so that every user's runs share it; it is
    never unlinked: other runs may hold other bytes of it). One file holds the locks of many unrelated runs, each
    keyed by what it must not share with another run (``keys`` below 2**62); the kernel drops them when the process
    dies. Returns ``(held, LockState(False))``, or ``(None, LockState(True, "fcntl", pid))`` when another process holds
    one of the bytes (what it took so far is released). Raises OSError when the file cannot be opened or locked
    (a file system without POSIX locks: ``UNSUPPORTED_LOCK_ERRNOS``)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    ok = False
    try:
        try:
            if os.fstat(fd).st_uid == os.geteuid():
                os.fchmod(fd, 0o666)  # the umask narrowed it: another user's replay must be able to lock it too
        except OSError:
            pass
        for key in sorted(set(keys)):
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, key, os.SEEK_SET)
            except OSError as exc:
                if exc.errno in (errno.EACCES, errno.EAGAIN):
                    return None, LockState(True, "fcntl", _holder_pid(fd, fcntl.F_WRLCK, key, 1))
                raise
        ok = True
        return HeldLock(fd, path), LockState(False)
    finally:
        if not ok:
            os.close(fd)
