"""The locks held for a whole ``--execute``: kafkalog's own flock on the partition directory and the broker's
``.lock`` in the log directory.

Why: a broker holding the log directory's ``.lock`` has every segment mmap'd; changing files under it corrupts data
(there is deliberately no ``--force``). Two kafkalog commands on one partition must never interleave, and recovery
must never run while the change it would finish or undo is still being made. ``.lock`` is created when missing and
locked as Kafka's ``FileLock`` does, so a broker starting mid-repair fails its ``tryLock``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kafkalog_cli.errors import RepairRefused, unreadable
from kafkalog_cli.ops.safety import files
from kafkalog_cli.storage import lock as locks
from kafkalog_cli.storage.layout import log_dir_of


def _held(state: locks.LockState, message: Callable[[str], str], file: str, expected: str, lock: str) -> RepairRefused:
    """A refusal because another process holds a lock; ``message`` is given who holds it."""
    who = f"pid {state.pid}" if state.pid else "pid unknown"
    return RepairRefused(message(who), file=file, expected=expected, found=f"{lock} held by {who}")


def _lock_refusal(logdir: str, lock_path: str, state: locks.LockState) -> RepairRefused:
    return _held(state, lambda who: f"log directory {logdir} is locked by a running broker ({who}, {state.kind} lock "
                 "on .lock; or by another kafkalog command writing in that log directory)", lock_path,
                 "no process holding the lock", f"{state.kind} lock")


def _lock_error(logdir: str, lock_path: str, exc: OSError) -> RepairRefused:
    return RepairRefused(
        f"cannot check whether log directory {logdir} is locked by a broker: {exc.strerror}",
        file=lock_path,
        expected="a readable .lock file",
        found=exc.strerror or str(exc),
    )


def ensure_unlocked(partition_dir: str) -> None:
    """Refuse (RepairRefused) when another process holds ``<logdir>/.lock`` the way a running broker does.

    A probe only: it must not be called while this process holds the lock through ``locked_log_dir`` (closing the
    probe's descriptor would drop our POSIX lock).
    """
    logdir = log_dir_of(partition_dir)
    lock_path = os.path.join(logdir, ".lock")
    try:
        state = locks.probe(lock_path)
    except OSError as exc:
        raise _lock_error(logdir, lock_path, exc) from None
    if state.locked:
        raise _lock_refusal(logdir, lock_path, state)


_created_locks: set[str] = set()  # .lock files this process created (and removes again): not evidence of a broker


def _own_lock_refusal(real: str, state: locks.LockState) -> RepairRefused:
    return _held(state, lambda who: f"another kafkalog command ({who}) is changing this partition: two writing "
                 "commands must not interleave; wait for it to finish", real, "no other kafkalog command writing this partition",
                 "kafkalog's partition lock")


@contextmanager

def locked_log_dir(partition_dir: str) -> Iterator[None]:
    """Hold kafkalog's partition lock and ``<logdir>/.lock`` for the whole ``--execute`` (recovery included).

    1. kafkalog's own lock: an exclusive flock on the partition directory itself (``lock.lock_directory``), so two
       writing commands on the same partition never interleave and recovery never runs while the change it would
       finish or undo is still being made. The second command is refused and told the holder's pid.
    2. the broker's lock: ``.lock`` taken exactly as Kafka's ``FileLock`` takes it (created when missing, mode
       0666 minus umask, exclusive POSIX ``tryLock``, plus an flock), so a broker that starts during the repair
       fails to lock the directory instead of loading half-written files. Kafka 3.8+ deletes ``.lock`` on a clean
       shutdown, so a missing file means "unlocked now", not "never locked". A ``.lock`` this call created is
       removed again (while still held) so the directory is left as found.
    """
    real = os.path.realpath(partition_dir)
    try:
        own, own_state = locks.lock_directory(real)
    except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        raise unreadable(exc, partition_dir, want="directory") from None
    except OSError as exc:
        raise RepairRefused(
            f"cannot lock the partition directory: {exc.strerror}", file=real, expected="a directory kafkalog can open",
            found=exc.strerror or str(exc),
        ) from None
    if own is None:
        raise _own_lock_refusal(real, own_state)
    try:
        logdir = log_dir_of(partition_dir)
        lock_path = os.path.join(logdir, ".lock")
        created = False
        try:
            created = locks.create_lock_file(lock_path)
            held, state = locks.acquire(lock_path)
        except OSError as exc:
            raise _lock_error(logdir, lock_path, exc) from None
        if state.locked:
            raise _lock_refusal(logdir, lock_path, state)
        if created:
            _created_locks.add(lock_path)
            files.count_step()
        try:
            yield
        finally:
            if held is not None:
                if created:
                    _created_locks.discard(lock_path)
                    try:
                        os.unlink(lock_path)
                    except OSError:
                        pass
                held.release()
    finally:
        own.release()


def log_dir_warnings(partition_dir: str) -> list[str]:
    """Plan notes about the log directory itself: without ``.lock`` and ``meta.properties`` it may not be a Kafka
    log directory at all (a wrong path, or a copy). A ``.lock`` that ``locked_log_dir`` created for the duration of
    the command does not count."""
    logdir = log_dir_of(partition_dir)
    lock = os.path.join(logdir, ".lock")
    if (os.path.exists(lock) and lock not in _created_locks) or os.path.exists(os.path.join(logdir, "meta.properties")):
        return []
    return [
        f"WARNING: {logdir} has neither .lock nor meta.properties: it may not be a Kafka log directory (check the "
        "path); kafkalog holds a .lock there only while it writes"
    ]
