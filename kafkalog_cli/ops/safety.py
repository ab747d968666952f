"""The safety framework every writing command goes through (rebuild-index, compact, truncate-to-epoch, recover,
salvage). The commands do not drive it by hand: their plans become ``ops/repair_plan`` steps, and
``repair_plan.execute_steps`` is the one caller of ``Transaction`` (see that module for the life of a repair).

Why each piece exists:

* ``ensure_unlocked``: a broker holding the log directory's ``.lock`` has every segment mmap'd; changing files under
  it corrupts data. There is deliberately no ``--force``.
* ``safe_child``: partition directories are often symlink farms; we refuse to follow a link out of the directory.
* ``default_backup_dir``: backups never go inside the Kafka log directory, because the broker refuses folder names
  it does not know there (and treats ``*.deleted``/``*.cleaned``/``*.swap`` files as its own, errata E15).
* ``Transaction``: new contents are built as ``<final>.cleaned`` (Kafka's suffix for output being built, deleted by
  the broker's loader), renamed to ``<final>.swap`` (Kafka's suffix for output ready to be installed, finished by the
  loader) and then renamed over the final name. Every intermediate state is therefore one the broker's own loader
  resolves the same way we do (spec §8 steps 1-2, errata E12), and ``recover_interrupted`` finishes or discards it.
  Only files whose names start with a 20-digit offset are staged that way: Kafka's loader parses the text before the
  first '.' of *every* ``*.cleaned``/``*.swap`` file as a number (``LogFileUtils.offsetFromFile``), so a
  ``leader-epoch-checkpoint.cleaned`` would make the broker fail to start (NumberFormatException, errata E15).
  Other files (checkpoints, ``partition.metadata``) are staged as ``<name>.tmp``, the suffix Kafka's own checkpoint
  writer uses and its loader ignores, and renamed into place together with the ``.swap`` files.

Locks (``locked_log_dir``, held for the whole ``--execute``): kafkalog's own flock on the partition directory (two
writing commands never interleave) and the broker's ``.lock``, created when missing and locked as Kafka's
``FileLock`` does (a broker starting mid-repair fails its ``tryLock``).

Commit order (each step durable before the next; docs/safety.md "Commit order and crash safety" has the table):

0. a pointer (state ``staging``, pid and start time of this process) at a location derived from the partition's
   real path alone, never from ``$KAFKALOG_BACKUP_DIR`` (``_pointer_paths``);
1. staged files are written as ``<final>.cleaned`` (``<final>.tmp`` for names without an offset) and fsync'd
   (``stage``); a failed write removes the half-written file and names it; every kept offset-named file inside the
   offset range of a new ``.log`` (a producer snapshot, an unchanged ``.txnindex``) is staged too, with its own
   bytes, because the broker's loader deletes the non-``.swap`` files of that range while a ``.log.swap`` exists
   (``_stage_covered``);
2. the journal (state ``backing-up``) is written to the backup dir and the pointer updated;
3. every file to be replaced or deleted is hard-linked (same filesystem) or copied into the backup dir, fsync'd;
4. the journal moves to state ``committing``;
then either the in-place commit:
5. ``.cleaned -> .swap`` in descending file-name order (Kafka deletes a ``.swap`` whose base is >= the smallest
   remaining ``.cleaned`` base, so a crash half-way through this step is rolled back by both kafkalog and Kafka),
   directory fsync'd. Once the last ``.cleaned`` is gone the transaction is committed;
6. deleted files are unlinked (their backups exist since step 3; each lies in the offset range of a new
   ``.log.swap``, which the broker's loader deletes itself);
7. ``.swap -> final`` per segment ``.log`` first (``_install_key``), then ``.tmp -> final``, directory fsync'd;
or, when a deleted segment file lies outside every new segment's offset range (truncation; a merged segment whose
records were all cleaned away), the exchange commit (``_commit_by_exchange``): the new directory is built beside the
old one as ``<name>.<uuid>-delete/<name>`` from hard links (nested, so that a broker's loader never opens a file
sharing an inode with a live one), then swapped in with ``renameat2(RENAME_EXCHANGE)``;
8. journal state ``done``, pointer removed (and the backup removed when ``keep_backup`` is false).

The backup is complete before the commit point (step 3 before step 5), so rolling forward never has to copy.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import BinaryIO

from kafkalog_cli.errors import RepairRefused, WriteFailedError, unreadable
from kafkalog_cli.format import layouts as L
from kafkalog_cli.storage import lock as locks
from kafkalog_cli.storage.layout import log_dir_of

BUILD_SUFFIX = ".cleaned"
PLAIN_SUFFIX = ".tmp"  # staging suffix of files whose names carry no offset (Kafka's checkpoint-write suffix)
_OFFSET_NAME = re.compile(r"[0-9]{20}\.")
JOURNAL_NAME = "journal.json"
JOURNAL_VERSION = 2  # the only journal format recovery reads; any other is refused, never guessed at
_JOURNAL_KEYS = ("state", "backup_dir", "suffix", "keep_backup", "replace", "create", "delete", "early_delete",
                 "log_dir", "log_dir_delete", "backups", "digests", "exchange_dir", "old_ino")
BACKUP_ENV = "KAFKALOG_BACKUP_DIR"
SLOW_ENV = "KAFKALOG_TEST_SLOW_COMMIT"  # test-only: seconds to sleep between commit steps
KILL_ENV = "KAFKALOG_TEST_KILL_AT_STEP"  # test-only: SIGKILL after the k-th file-changing step
STEP_LOG_ENV = "KAFKALOG_TEST_STEP_LOG"  # test-only: append a line per file-changing step to this file
NO_EXCHANGE_ENV = "KAFKALOG_NO_EXCHANGE"  # use the in-place commit even when RENAME_EXCHANGE would work
DELETE_DIR_SUFFIX = "-delete"  # Kafka's suffix of a partition directory scheduled for deletion (UnifiedLog)
# checkpoint files Kafka writes as ``<name>.tmp`` and renames (CheckpointFile): a left-over ``.tmp`` is never read
CHECKPOINT_NAMES = ("leader-epoch-checkpoint", "partition.metadata")


# ------------------------------------------------------------------------------------------------ lock and paths
def _lock_refusal(logdir: str, lock_path: str, state: locks.LockState) -> RepairRefused:
    who = f"pid {state.pid}" if state.pid else "pid unknown"
    return RepairRefused(
        f"log directory {logdir} is locked by a running broker ({who}, {state.kind} lock on .lock; or by another "
        "kafkalog command writing in that log directory)",
        file=lock_path,
        expected="no process holding the lock",
        found=f"{state.kind} lock held by {who}",
    )


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
    who = f"pid {state.pid}" if state.pid else "pid unknown"
    return RepairRefused(
        f"another kafkalog command ({who}) is changing this partition: two writing commands must not interleave; "
        "wait for it to finish",
        file=real,
        expected="no other kafkalog command writing this partition",
        found=f"kafkalog's partition lock held by {who}",
    )


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
            _slow()
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


def safe_child(partition_dir: str, name: str) -> str:
    """Path of ``name`` inside ``partition_dir``; refuses separators, '.', '..', NUL and symlinks leading outside."""
    if not name or name in (".", "..") or "/" in name or "\0" in name or (os.sep != "/" and os.sep in name):
        raise RepairRefused(
            "unsafe file name for a partition directory", file=partition_dir, expected="a plain file name", found=repr(name)
        )
    path = os.path.join(partition_dir, name)
    if os.path.islink(path):
        real_dir = os.path.realpath(partition_dir)
        target = os.path.realpath(path)
        if os.path.dirname(target) != real_dir:
            raise RepairRefused(
                "refusing to write through a symlink that leads outside the partition directory",
                file=path,
                expected=f"a file inside {real_dir}",
                found=f"symlink to {target}",
            )
    return path


def default_backup_dir(partition_dir: str) -> str:
    """``$KAFKALOG_BACKUP_DIR/<partition>-<UTC>`` or ``<parent of logdir>/kafkalog-backups/<partition>-<UTC>``."""
    root = backup_root(partition_dir)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    name = os.path.basename(os.path.abspath(partition_dir))
    path = os.path.join(root, f"{name}-{stamp}")
    n = 1
    candidate = path
    while os.path.exists(candidate):
        candidate = f"{path}-{n}"
        n += 1
    return candidate


def backup_subdir(backup_dir: str | None, partition_dir: str) -> str | None:
    """A fresh ``<backup-dir>/<partition>-<UTC time>`` for ``--backup-dir`` (None without one: the default applies).

    Every writing command uses it, so a second run never writes into, skips over or rolls back files of an earlier
    run's backup, which may be the only copy of what that run replaced.
    """
    if not backup_dir:
        return None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    path = os.path.join(os.path.abspath(backup_dir), f"{os.path.basename(os.path.abspath(partition_dir))}-{stamp}")
    candidate, n = path, 1
    while os.path.exists(candidate):
        candidate = f"{path}-{n}"
        n += 1
    return candidate


def backup_root(partition_dir: str) -> str:
    env = os.environ.get(BACKUP_ENV)
    if env:
        return os.path.abspath(env)
    return os.path.join(os.path.dirname(log_dir_of(partition_dir)), "kafkalog-backups")


def _pointer_paths(partition_dir: str) -> list[str]:
    """Where a pointer to an in-flight journal may live, in the order they are tried; none depends on
    ``$KAFKALOG_BACKUP_DIR``, so the next run finds the journal whatever that variable says then.

    1. ``<parent of the log dir>/kafkalog-backups/.journals/`` (outside the log dir, derived from the partition's
       real path alone);
    2. ``~/.local/state/kafkalog/journals/`` when 1 cannot be created (a read-only parent).
    """
    real = os.path.realpath(partition_dir)
    key = hashlib.sha1(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    name = f"{os.path.basename(real)}-{key}.json"
    return [
        os.path.join(os.path.dirname(log_dir_of(partition_dir)), "kafkalog-backups", ".journals", name),
        os.path.join(os.path.expanduser("~"), ".local", "state", "kafkalog", "journals", name),
    ]


def _write_pointer(partition_dir: str, data: dict) -> None:
    """Write the pointer at the first location whose directory can be created (see ``_pointer_paths``)."""
    paths = _pointer_paths(partition_dir)
    for i, path in enumerate(paths):
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError:
            if i == len(paths) - 1:
                raise
            continue
        _write_json_atomic(path, data)
        for other in paths[i + 1:]:  # a stale pointer elsewhere must not shadow this one
            _unlink_quiet(other)
        return


def _read_pointer(partition_dir: str) -> tuple[str | None, dict | None]:
    for path in _pointer_paths(partition_dir):
        data = _read_json(path)
        if data is not None:
            return path, data
    return None, None


def _unlink_quiet(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


# ------------------------------------------------------------------------------------------------ plans
@dataclass
class FileAction:
    kind: str  # "create" | "replace" | "delete" | "rename"
    path: str
    size: int = 0
    detail: str = ""
    source: str | None = None


@dataclass
class Plan:
    partition_dir: str
    actions: list[FileAction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summary: dict = field(default_factory=dict)

    def lines(self) -> list[str]:
        """The human plan text; a dry run prints exactly this."""
        out = [f"Plan for {self.partition_dir}:"]
        if not self.actions:
            out.append("  (no file changes)")
        for a in self.actions:
            text = f"  {a.kind:<7} {os.path.basename(a.path)}"
            if a.kind != "delete":
                text += f" ({a.size} bytes)"
            if a.source:
                text += f" from {os.path.basename(a.source)}"
            if a.detail:
                text += f": {a.detail}"
            out.append(text)
        for n in self.notes:
            out.append(f"  note: {n}")
        if self.summary:
            out.append("  summary: " + ", ".join(f"{k}={v}" for k, v in self.summary.items()))
        return out

    def to_dict(self) -> dict:
        return asdict(self)


# ------------------------------------------------------------------------------------------------ fs helpers
def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_steps = 0


def _slow() -> None:
    """Called after every file-changing step of a write (create, write+fsync, link, rename, unlink).

    Test hooks only: ``KAFKALOG_TEST_SLOW_COMMIT`` sleeps that many seconds; ``KAFKALOG_TEST_KILL_AT_STEP=k``
    SIGKILLs this process right after the k-th step (deterministic crash tests: k = 1..N covers every step), and
    ``KAFKALOG_TEST_STEP_LOG`` appends one line per step to that file (how a test learns N).
    """
    global _steps
    _steps += 1
    log = os.environ.get(STEP_LOG_ENV)
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{_steps}\n")
    kill_at = os.environ.get(KILL_ENV)
    if kill_at and int(kill_at) == _steps:
        os.kill(os.getpid(), signal.SIGKILL)
    delay = os.environ.get(SLOW_ENV)
    if delay:
        time.sleep(float(delay))


def _write_json_atomic(path: str, data: dict, *, step: bool = True) -> None:
    """Write ``path`` via ``<path>.tmp`` + rename, durably; ``step``: a commit step (see ``_slow``), not recovery."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    if step:
        _slow()
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(path))
    if step:
        _slow()


def _read_json(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def _backup_file(src: str, backup_dir: str) -> None:
    """Hard-link (same filesystem) or copy ``src`` into ``backup_dir``, durably; idempotent.

    An existing file of that name is kept only when it *is* ``src`` (same inode). Anything else is replaced
    atomically (via ``.partial``): equal size says nothing about equal content. ``Transaction.commit`` refuses a
    backup dir that already holds such a name from elsewhere, so the replaced file is always one of ours.
    """
    dst = os.path.join(backup_dir, os.path.basename(src))
    st = os.stat(src)
    try:
        dst_st = os.stat(dst)
        if dst_st.st_ino == st.st_ino and dst_st.st_dev == st.st_dev:
            return
    except FileNotFoundError:
        pass
    tmp = dst + ".partial"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    try:
        if os.stat(backup_dir).st_dev == st.st_dev:
            os.link(src, tmp)
            os.replace(tmp, dst)
            return
    except OSError:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    with open(src, "rb") as fin, open(tmp, "wb") as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)
        fout.flush()
        os.fsync(fout.fileno())
    shutil.copystat(src, tmp)
    os.replace(tmp, dst)


def check_backup_dir(partition_dir: str, backup_dir: str | None) -> str:
    """The backup directory a transaction uses (``backup_dir`` or the default); refused inside the log directory."""
    path = os.path.abspath(backup_dir) if backup_dir else default_backup_dir(partition_dir)
    real_logdir = os.path.realpath(log_dir_of(os.path.abspath(partition_dir)))
    real_backup = os.path.realpath(path)
    if real_backup == real_logdir or real_backup.startswith(real_logdir + os.sep):
        raise RepairRefused(
            "the backup directory must be outside the Kafka log directory (the broker refuses unknown folders there)",
            file=path,
            expected=f"a path outside {real_logdir}",
            found=real_backup,
        )
    return path


def offset_named(name: str) -> bool:
    """True when Kafka's loader can parse ``name``'s prefix as an offset, so ``.cleaned``/``.swap`` are safe for it."""
    return _OFFSET_NAME.match(name) is not None


def staging_name(name: str) -> str:
    """The name a staged replacement of ``name`` is built under (see the module docstring)."""
    return name + (BUILD_SUFFIX if offset_named(name) else PLAIN_SUFFIX)


def _name_key(name: str) -> tuple[int, str]:
    try:
        return int(name.split(".", 1)[0]), name
    except ValueError:
        return -1, name


# ------------------------------------------------------------------------------------------------ transaction
class Transaction:
    """Stage new file contents beside the old ones, then commit them atomically (see the module docstring)."""

    def __init__(self, partition_dir: str, backup_dir: str | None, *, keep_backup: bool = True, suffix: str = ".swap") -> None:
        self.partition_dir = os.path.abspath(partition_dir)
        self.backup_dir = check_backup_dir(self.partition_dir, backup_dir)
        self.keep_backup = keep_backup
        self.suffix = suffix
        self.staged: dict[str, bool] = {}  # final name -> existed before
        self.digests: dict[str, tuple[int, int]] = {}  # final name -> (size, CRC-32) of the new content
        self.deletes: list[str] = []
        self.early_deletes: list[str] = []  # deleted before the new files become visible (see ``delete``)
        self.log_dir_deletes: list[str] = []  # files of the log dir itself (``.kafka_cleanshutdown``)
        self.committed = False
        self._pointer_written = False
        self.exchange_dir: str | None = None  # see ``_commit_by_exchange``
        self.old_ino = 0

    # ------------------------------------------------------------------------------------------ building
    def stage(self, final_name: str, data: bytes | Callable[[BinaryIO], None], *, mtime: float | None = None) -> None:
        """Write ``<final>.cleaned`` (or ``<final>.tmp``), fsync it, copy the owner/mode of the file it replaces (or
        of the ``.log``).

        Before the first staged byte a pointer (state ``staging``, with this process's pid) is written, so that a
        crash while staging is cleaned up by the next run and a live writer is never rolled back. A failing write
        (ENOSPC, EIO, ...) removes the half-written file and raises ``WriteFailedError`` naming it.
        """
        final = safe_child(self.partition_dir, final_name)
        tmp = safe_child(self.partition_dir, staging_name(final_name))
        if not self._pointer_written:
            try:
                _write_pointer(self.partition_dir, {"backup_dir": self.backup_dir, "state": "staging", **_me()})
            except OSError as exc:
                raise _write_failed(exc, "cannot write kafkalog's journal pointer") from None
            self._pointer_written = True
        ref = final if os.path.exists(final) else None
        if ref is None:
            log = os.path.join(self.partition_dir, final_name.split(".", 1)[0] + ".log")
            ref = log if os.path.exists(log) else None
        try:
            with open(tmp, "wb") as f:
                _slow()
                if callable(data):
                    data(f)
                else:
                    f.write(data)
                f.flush()
                if ref is not None:
                    st = os.stat(ref)
                    os.fchmod(f.fileno(), stat.S_IMODE(st.st_mode))
                    try:
                        os.fchown(f.fileno(), st.st_uid, st.st_gid)
                    except PermissionError:
                        pass
                os.fsync(f.fileno())
            if mtime is not None:
                os.utime(tmp, (mtime, mtime))
        except OSError as exc:
            _unlink_quiet(tmp)
            raise _write_failed(exc, "cannot write the staged file (removed again; nothing was changed)", tmp) from None
        _slow()
        self.staged[final_name] = os.path.exists(final)
        self.digests[final_name] = _digest(tmp)

    def delete(self, name: str, *, early: bool = False) -> None:
        """Delete ``name`` in the commit.

        By default after the new ``.swap`` files exist: the files a segment ``.swap`` replaces lie in that swap's
        offset range, which the broker's loader deletes itself, so a crash between the two is safe for it. With
        ``early`` the file is deleted *before* any new file becomes visible (highest base offset first): for files
        no new segment covers, e.g. the segments after a truncation point. Deleting those after the commit point would
        let a broker starting in between load the new (cut) segment plus the later segments (a gap, resurrected
        data); deleting them first, from the end, only ever shows it the old log minus some of its last segments.
        """
        safe_child(self.partition_dir, name)
        target = self.early_deletes if early else self.deletes
        if name not in self.deletes and name not in self.early_deletes:
            target.append(name)

    def remove_log_dir_file(self, name: str) -> None:
        """Remove ``<logdir>/<name>`` as part of the commit (e.g. ``.kafka_cleanshutdown``).

        It is backed up in step 3 and removed right after the journal reaches ``committing``, before any new file
        becomes visible to the broker, so no state with new files still carries it; a rollback (crash or failure
        before the commit point) puts it back. Its backup is kept even with ``keep_backup=False`` (the file is tiny
        and it is the only copy).
        """
        safe_child(log_dir_of(self.partition_dir), name)
        if name not in self.log_dir_deletes:
            self.log_dir_deletes.append(name)

    # ------------------------------------------------------------------------------------------ commit
    def _journal(self, state: str) -> dict:
        return {
            "version": JOURNAL_VERSION,
            "state": state,
            "partition_dir": self.partition_dir,
            "backup_dir": self.backup_dir,
            "suffix": self.suffix,
            "keep_backup": self.keep_backup,
            "replace": sorted(n for n, e in self.staged.items() if e),
            "create": sorted(n for n, e in self.staged.items() if not e),
            "delete": list(self.deletes),
            "early_delete": list(self.early_deletes),
            "log_dir": log_dir_of(self.partition_dir),
            "log_dir_delete": list(self.log_dir_deletes),
            "backups": self._backup_names(),
            # size and CRC-32 of every new file: recovery rolls forward only onto files that are really ours
            "digests": {n: list(d) for n, d in self.digests.items()},
            "exchange_dir": self.exchange_dir,
            "old_ino": self.old_ino,
            "written_at": datetime.now(timezone.utc).isoformat(),
            **_me(),
        }

    def _set_state(self, state: str) -> None:
        data = self._journal(state)
        _write_json_atomic(os.path.join(self.backup_dir, JOURNAL_NAME), data)
        if state in ("done", "rolled-back"):
            _unlink_pointer(self.partition_dir)
        else:
            _write_pointer(self.partition_dir, {"backup_dir": self.backup_dir, "state": state, **_me()})
            self._pointer_written = True

    def _backup_names(self) -> list[str]:
        """The files this transaction creates in the backup dir: rollback deletes exactly these, nothing else."""
        return ([n for n, e in self.staged.items() if e] + list(self.early_deletes) + list(self.deletes)
                + list(self.log_dir_deletes))

    def commit(self) -> None:
        if self.committed:
            raise RuntimeError("transaction already committed")
        self._stage_covered()
        taken = [n for n in self._backup_names() if os.path.lexists(os.path.join(self.backup_dir, n))]
        if taken:
            raise RepairRefused(
                "the backup directory already holds files of that name (an earlier backup?): refusing to overwrite "
                "them or to mix two backups",
                file=self.backup_dir,
                expected="a new or empty backup directory",
                found=", ".join(taken[:5]),
            )
        logdir = log_dir_of(self.partition_dir)
        sources = [os.path.join(self.partition_dir, n) for n, e in self.staged.items() if e]
        sources += [os.path.join(self.partition_dir, n) for n in self.early_deletes + self.deletes]
        sources += [os.path.join(logdir, n) for n in self.log_dir_deletes]
        current = self.backup_dir
        try:
            os.makedirs(self.backup_dir, exist_ok=True)
            _fsync_dir(os.path.dirname(self.backup_dir))
            self._set_state("backing-up")
            for src in sources:
                if os.path.exists(src):
                    current = os.path.join(self.backup_dir, os.path.basename(src))
                    _backup_file(src, self.backup_dir)
                    _slow()
            current = self.backup_dir
            _fsync_dir(self.backup_dir)
        except OSError as exc:
            # before the commit point: the next run (or abort now) rolls back; say which file could not be written
            try:
                _recover_with_journal(self.partition_dir, self._journal("backing-up"))
                _unlink_pointer(self.partition_dir)
            except Exception:
                pass
            self.staged.clear()
            raise _write_failed(exc, "cannot back up the files to be replaced (nothing was changed)", current) from None
        if (self.early_deletes or self._uncovered_deletes()) and not os.environ.get(NO_EXCHANGE_ENV):
            real = os.path.realpath(self.partition_dir)
            holder = os.path.join(os.path.dirname(real), f"{os.path.basename(real)}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
            self.exchange_dir = os.path.join(holder, os.path.basename(real))  # nested: see ``_commit_by_exchange``
            self.old_ino = os.stat(real).st_ino
        self._set_state("committing")
        self._past_backup = True
        try:
            if self.exchange_dir and _commit_by_exchange(self.partition_dir, self._journal("committing")):
                pass
            else:
                if self.exchange_dir:  # no RENAME_EXCHANGE here: the in-place order (see ``delete``)
                    self.exchange_dir = None
                    self._set_state("committing")
                _finish(self.partition_dir, self.backup_dir, list(self.staged), self.deletes, self.suffix,
                        logdir, self.log_dir_deletes, self.early_deletes,
                        on_early=lambda: self._set_state("deleting"))
        except BaseException as exc:
            # finish or undo now, as recovery after a crash would (any .cleaned left: roll back, which also puts
            # log-dir files such as .kafka_cleanshutdown back); if that fails too, the next run's recovery does it
            state = "deleting" if not self.exchange_dir and any(
                not os.path.lexists(os.path.join(self.partition_dir, n)) for n in self.early_deletes) else "committing"
            try:
                _recover_with_journal(self.partition_dir, self._journal(state))
                _unlink_pointer(self.partition_dir)
            except Exception:
                pass
            self.staged.clear()
            if isinstance(exc, OSError):
                raise _write_failed(exc, "the commit failed (finished or undone again; see the backup)") from None
            raise
        self._set_state("done")
        if not self.keep_backup:
            _drop_backup(self.backup_dir, self.log_dir_deletes)
        self.committed = True

    def _stage_covered(self) -> None:
        """Re-stage every kept offset-named file inside the offset range of the new ``.log.swap`` files.

        While a ``.log.swap`` exists, the broker's loader deletes every file whose name's offset lies in [min swap
        base, max swap next offset) except ``.swap`` files (LogLoader.java:158-178, second pass), then renames every
        ``.swap`` file, whatever its kind (third pass, :180-192). A file this change keeps in that range (a producer
        snapshot at a merged segment's base, e.g. the latest one when there is none at the log end) would be deleted
        by a broker starting in the window; with ``.kafka_cleanshutdown`` present and no snapshot left,
        ``rebuildProducerState`` then writes empty snapshots (0 producers). Staged with its own bytes, it is a
        ``.swap`` in that window: the loader keeps and installs it, as it does the new segment.
        """
        logs = [n for n in self.staged if offset_named(n) and n.endswith(".log")]
        if not logs:
            return
        low = min(_name_key(n)[0] for n in logs)
        high = max(_log_next_offset(os.path.join(self.partition_dir, staging_name(n)), _name_key(n)[0]) for n in logs)
        gone = set(self.deletes) | set(self.early_deletes) | set(self.staged)
        for name in sorted(os.listdir(self.partition_dir)):
            path = os.path.join(self.partition_dir, name)
            if (name in gone or not offset_named(name) or not low <= _name_key(name)[0] < high
                    or name.endswith((BUILD_SUFFIX, ".swap", PLAIN_SUFFIX)) or not os.path.isfile(path)
                    or os.path.islink(path)):
                continue
            def copy(out: BinaryIO, src: str = path) -> None:
                with open(src, "rb") as fin:
                    shutil.copyfileobj(fin, out, 1 << 20)

            self.stage(name, copy, mtime=os.stat(path).st_mtime)

    def _uncovered_deletes(self) -> list[str]:
        """Segment files to delete that lie outside every new segment's offset range [base, next offset).

        The broker's loader only deletes, for a ``.log.swap``, the files inside that range; a merged segment whose
        records were all cleaned away (its base at or above the new segment's next offset) would be loaded again
        beside the new segment by a broker starting between the ``.swap`` renames and the deletes. Such a change is
        committed by directory exchange instead (``_commit_by_exchange``).
        """
        ranges = []
        for name in self.staged:
            if offset_named(name) and name.endswith(".log"):
                base = _name_key(name)[0]
                ranges.append((base, _next_offset_of(os.path.join(self.partition_dir, staging_name(name)), base)))
        out = []
        for name in self.deletes:
            if not offset_named(name) or not name.endswith((".log", ".index", ".timeindex", ".txnindex")):
                continue
            off = _name_key(name)[0]
            if not any(lo <= off < hi for lo, hi in ranges):
                out.append(name)
        return out

    def abort(self) -> None:
        """Remove the staged ``.cleaned``/``.tmp`` files (nothing else was touched yet) and the pointer."""
        if getattr(self, "_past_backup", False):
            return  # past step 4 the journal decides (commit() already finished or undid it)
        for name in self.staged:
            _unlink_quiet(os.path.join(self.partition_dir, staging_name(name)))
        self.staged.clear()
        if self._pointer_written:
            _unlink_pointer(self.partition_dir)
            self._pointer_written = False

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if not self.committed:
            self.abort()


def _next_offset_of(path: str, base: int) -> int:
    """``LogSegment.readNextOffset`` of a log file: the offset after its last complete entry (``base`` if none)."""
    nxt = base
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos + L.HEADER_SIZE_UP_TO_MAGIC <= len(data):
        offset, length = L.LOG_ENTRY.unpack_from(data, pos)
        if length < L.LEGACY_V0_RECORD_OVERHEAD or pos + L.LOG_OVERHEAD + length > len(data):
            break
        if data[pos + L.MAGIC_OFFSET] >= 2 and length >= L.V2_MIN_BATCH_LENGTH:
            (delta,) = L.INT32.unpack_from(data, pos + L.V2_LAST_OFFSET_DELTA_OFFSET)
            nxt = offset + delta + 1
        else:
            nxt = offset + 1  # a legacy entry's offset is its (wrapper's) last offset
        pos += L.LOG_OVERHEAD + length
    return nxt


def _me() -> dict:
    """This process, as recorded in the pointer and the journal: recovery never undoes a live writer's change."""
    return {"pid": os.getpid(), "pid_start": _process_start(os.getpid())}


def _process_start(pid: int) -> str | None:
    """The start time of ``pid`` (field 22 of /proc/<pid>/stat), so a recycled pid is not taken for the writer;
    "dead" for a zombie (killed, not yet reaped: it writes nothing any more)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            text = f.read()
        fields = text[text.rindex(")") + 2:].split()
        return "dead" if fields[0] in ("Z", "X") else fields[19]
    except (OSError, ValueError, IndexError):
        return None


def _writer_alive(data: dict) -> int | None:
    """The pid of the process that wrote ``data`` (pointer or journal) when it still runs and is not us."""
    pid = data.get("pid")
    if not isinstance(pid, int) or pid <= 0 or pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    start, now = data.get("pid_start"), _process_start(pid)
    if now == "dead" or (start is not None and now not in (None, start)):
        return None  # a zombie, or the pid was reused by another process
    return pid


def _write_failed(exc: OSError, what: str, path: str | None = None) -> WriteFailedError:
    name = path or exc.filename or ""
    return WriteFailedError(f"{what}: {exc.strerror or exc}", file=str(name) if name else None,
                            expected="a writable file system with free space", found=exc.strerror or str(exc))


def _unlink_pointer(partition_dir: str) -> None:
    for path in _pointer_paths(partition_dir):
        _unlink_quiet(path)


def _drop_backup(backup_dir: str, keep: list[str]) -> None:
    """``--no-backup``: remove the backup dir, except the backups of log-dir files (their only copy)."""
    if not keep:
        shutil.rmtree(backup_dir, ignore_errors=True)
        return
    for name in os.listdir(backup_dir):
        if name in keep:
            continue
        path = os.path.join(backup_dir, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)


def _digest(path: str) -> tuple[int, int]:
    """(size, CRC-32) of a file, read in 1 MiB chunks: enough to tell our file from the one it replaced."""
    size = 0
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            size += len(chunk)
            crc = zlib.crc32(chunk, crc)
    return size, crc


def _discarded_by_someone_else(pdir: str, j: dict, staged: list[str], suffix: str) -> str | None:
    """Why rolling forward would be wrong, or None.

    Rolling forward deletes the files the change replaces. That is only right while our new files are still there:
    as ``.cleaned`` (state ``deleting``) or ``.swap`` files, or already in place with the content we wrote. If a broker
    started in between, its loader deleted our ``.cleaned``/``.swap`` files and kept the old segments; rolling
    forward would then delete segments whose replacements no longer exist.
    """
    digests = j["digests"]
    for name in staged:
        if not offset_named(name):
            continue
        want = digests.get(name)
        if os.path.exists(os.path.join(pdir, name + suffix)):
            continue
        cleaned = os.path.join(pdir, name + BUILD_SUFFIX)
        if os.path.exists(cleaned) and (want is None or list(_digest(cleaned)) == list(want)):
            continue
        final = os.path.join(pdir, name)
        if want is None:
            continue
        if not os.path.exists(final):
            return f"{name} is missing"
        if list(_digest(final)) != list(want):
            return f"{name} is not the file kafkalog wrote (size/CRC differ)"
    return None


_EXT_ORDER = {"log": 0, "index": 1, "timeindex": 2, "txnindex": 3}


def _log_next_offset(path: str, base: int) -> int:
    """The next offset of a segment file as ``LogSegment.readNextOffset`` finds it in a valid log: the last batch's
    last offset + 1 (the base offset for an empty one)."""
    nxt, pos = base, 0
    head_size = L.V2_LAST_OFFSET_DELTA_OFFSET + 4
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        while pos + head_size <= size:
            f.seek(pos)
            head = f.read(head_size)
            first, length = L.LOG_ENTRY.read(head)
            if length < L.LEGACY_V0_RECORD_OVERHEAD or pos + L.LOG_OVERHEAD + length > size:
                break
            v2 = head[L.MAGIC_OFFSET] >= 2
            delta = int.from_bytes(head[L.V2_LAST_OFFSET_DELTA_OFFSET:head_size], "big", signed=True) if v2 else 0
            nxt = max(nxt, first + delta + 1)
            pos += L.LOG_OVERHEAD + length
    return nxt


def _install_key(name: str) -> tuple[int, int, str]:
    """Per segment, ``.log`` first, then its indexes, in ascending base offset order (Kafka's own
    ``LogSegment.changeFileSuffixes`` order).

    While ``N.log.swap`` exists the broker's loader opens it with ``N.index.swap`` to compute the swap's offset
    range (``LogLoader.load``: ``LogSegment.open(..., SWAP_FILE_SUFFIX)`` then ``readNextOffset``, which reads the
    offset index). Had ``N.index.swap`` already been renamed, ``AbstractIndex`` would create a new, preallocated,
    zero-filled ``N.index.swap`` and the loader would install it as ``N.index``: a full index of (0, 0) entries
    that passes ``OffsetIndex.sanityCheck``. Renaming the ``.log`` first leaves only index ``.swap`` files, which
    the loader simply renames into place.
    """
    base, _ = _name_key(name)
    ext = name.split(".", 1)[1] if "." in name else ""
    return base, _EXT_ORDER.get(ext, 9), name


def _early_key(name: str) -> tuple[int, int, str]:
    """Early deletes: highest base offset first, and per segment the ``.log`` first (an index without its ``.log``
    is an orphan the broker deletes; a ``.log`` without its index is recovered), so the log the broker would load
    is always the old one minus some of its last segments."""
    base, _ = _name_key(name)
    ext = name.split(".", 1)[1] if "." in name else ""
    return -base, _EXT_ORDER.get(ext, 9), name


def _finish(partition_dir: str, backup_dir: str, staged: list[str], deletes: list[str], suffix: str,
            log_dir: str = "", log_dir_deletes: list[str] | None = None, early_deletes: list[str] | None = None,
            on_early: Callable[[], None] | None = None) -> None:
    """Steps 5-8 of the commit; idempotent, so recovery re-runs it to roll forward.

    Log-dir files were backed up in step 3 and are not backed up again here: if one came back since (a broker
    wrote a new marker), re-backing it up would overwrite the original's only copy.
    """
    for name in log_dir_deletes or []:
        path = os.path.join(log_dir, name)
        if os.path.lexists(path) and os.path.exists(os.path.join(backup_dir, name)):
            os.unlink(path)
            _fsync_dir(log_dir)
            _slow()
    early = [n for n in early_deletes or [] if os.path.lexists(os.path.join(partition_dir, n))]
    if early:
        if on_early is not None:
            on_early()  # journal state "deleting": from here on recovery rolls forward
        for name in sorted(early, key=_early_key):
            path = os.path.join(partition_dir, name)
            if os.path.lexists(path):
                _backup_file(path, backup_dir)  # no-op when the backup is already there
                os.unlink(path)
                _slow()
        _fsync_dir(partition_dir)
    segs = [n for n in staged if offset_named(n)]
    plain = [n for n in staged if not offset_named(n)]
    for name in sorted(segs, key=_name_key, reverse=True):
        cleaned = os.path.join(partition_dir, name + BUILD_SUFFIX)
        if os.path.exists(cleaned):
            os.replace(cleaned, os.path.join(partition_dir, name + suffix))
            _slow()
    _fsync_dir(partition_dir)
    for name in deletes:
        path = os.path.join(partition_dir, name)
        if os.path.lexists(path):
            _backup_file(path, backup_dir)  # no-op when the backup is already there
            os.unlink(path)
            _slow()
    for name in sorted(segs, key=_install_key):
        swap = os.path.join(partition_dir, name + suffix)
        if os.path.exists(swap):
            os.replace(swap, os.path.join(partition_dir, name))
            _slow()
    for name in sorted(plain):
        for suf in (PLAIN_SUFFIX, suffix):  # .swap: a journal of an older kafkalog
            tmp = os.path.join(partition_dir, name + suf)
            if os.path.exists(tmp):
                os.replace(tmp, os.path.join(partition_dir, name))
                _slow()
    _fsync_dir(partition_dir)


# ------------------------------------------------------------------------------------------------ exchange commit
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _rename_exchange(a: str, b: str) -> bool:
    """Atomically swap the directories ``a`` and ``b`` (renameat2 RENAME_EXCHANGE); False when the file system or
    the kernel cannot (or ``a`` is a mount point): the caller then uses the in-place order."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV, errno.EBUSY):
        return False
    raise OSError(err, os.strerror(err), a)


def _commit_by_exchange(partition_dir: str, j: dict) -> bool:
    """Commit a change that deletes segments no new segment covers (truncation) in ONE atomic step.

    Deleting several files can never be atomic inside the partition directory, and no ordering of deletes and
    ``.swap`` renames makes every intermediate state load as the old or the new log under the broker's loader (a
    ``.log.swap`` only removes files inside its own offset range, which the later segments are not). So the new
    partition directory is built beside the real one, hard-linking every unchanged file and linking each staged file
    under its final name, fsync'd; then the two directories are swapped with ``renameat2(RENAME_EXCHANGE)``, the
    commit point for both recoverers, and the old contents (every replaced or deleted file backed up) are removed.
    Returns False (nothing done) when the file system cannot exchange directories.

    The side is ``<name>.<uuid>-delete/<name>``: one level *inside* a directory with Kafka's name for a partition
    scheduled for deletion. A broker starting before the side is gone loads every sub-directory of the log dir, the
    ``-delete`` one too (LogManager.loadLogs, then loadLog queues it with addLogToBeDeleted and deletes it
    recursively later), and LogLoader of that directory writes there: its leader-epoch checkpoint through
    ``leader-epoch-checkpoint.tmp`` (LogLoader.java:218 ``truncateFromEndAsyncFlush``; CheckpointFile opens the
    ``.tmp`` for writing), rebuilt indexes of a segment whose ``.index`` is gone, the active segment's preallocated
    indexes. Files there that are hard links of live files (the unchanged files before the exchange, the staged
    ``.tmp``/``.cleaned`` after it) would be written through. LogLoader only ever reads the regular files directly
    in its directory (LogLoader.java:161-164, 181-184, 265-268, 359-361 filter ``File::isFile``), so the nested side
    is never opened by Kafka: it sees an empty ``-delete`` directory, creates its own new files there and deletes it.
    """
    real = os.path.realpath(partition_dir)
    side = j["exchange_dir"]
    holder = _holder_of(side)
    log_dir = j["log_dir"]
    backup_dir = j["backup_dir"]
    for name in j["log_dir_delete"]:
        path = os.path.join(log_dir, name)
        if os.path.lexists(path) and os.path.exists(os.path.join(backup_dir, name)):
            os.unlink(path)
            _fsync_dir(log_dir)
            _slow()
    staged = list(j["replace"]) + list(j["create"])
    gone = set(j["delete"]) | set(j["early_delete"]) | set(staged)
    ours = {staging_name(n) for n in staged}
    st = os.stat(real)
    for d in ([holder] if holder else []) + [side]:
        os.mkdir(d, stat.S_IMODE(st.st_mode))
        try:
            os.chown(d, st.st_uid, st.st_gid)
        except PermissionError:
            pass
        _slow()
    for name in sorted(os.listdir(real)):
        if name in gone or name in ours:
            continue
        src = os.path.join(real, name)
        if os.path.isdir(src) and not os.path.islink(src):
            _discard_side(side)
            return False  # a sub-directory cannot be hard-linked: keep the in-place order
        os.link(src, os.path.join(side, name), follow_symlinks=False)
        _slow()
    for name in staged:
        os.link(os.path.join(real, staging_name(name)), os.path.join(side, name))
        _slow()
    _fsync_dir(side)
    if holder:
        _fsync_dir(holder)
    if not _rename_exchange(real, side):
        _discard_side(side)
        return False
    _fsync_dir(os.path.dirname(real))
    if holder:
        _fsync_dir(holder)
    _slow()
    _remove_side(side)
    return True


def _holder_of(side: str) -> str | None:
    """The ``<name>.<uuid>-delete`` directory holding the exchanged side ``side`` (None: a side of an older
    kafkalog, which was the ``-delete`` directory itself)."""
    holder = os.path.dirname(side)
    return holder if os.path.basename(holder).endswith(DELETE_DIR_SUFFIX) else None


def _discard_side(side: str) -> None:
    """Remove a side that was never exchanged (it holds only links and the holder only what a broker created)."""
    holder = _holder_of(side)
    if os.path.isdir(side):
        shutil.rmtree(side)
    if holder and os.path.isdir(holder):
        shutil.rmtree(holder)


def _remove_side(side: str) -> None:
    """Remove the side holding the old contents (every replaced or deleted file is backed up), then its holder
    (which holds nothing else but what a broker that loaded it meanwhile created there)."""
    holder = _holder_of(side)
    if os.path.isdir(side):
        for name in sorted(os.listdir(side)):
            os.unlink(os.path.join(side, name))
            _slow()
        os.rmdir(side)
        _slow()
    if holder and os.path.isdir(holder):
        shutil.rmtree(holder)
        _slow()
    _fsync_dir(os.path.dirname(holder or side))


def _recover_exchange(pdir: str, j: dict) -> list[str] | None:
    """Recovery of an exchange commit (``_commit_by_exchange``); None when the journal is not one."""
    side = j["exchange_dir"]
    if not side or j["state"] not in ("committing", "deleting"):
        return None
    real = os.path.realpath(pdir)
    if os.stat(real).st_ino != j["old_ino"]:
        _remove_side(side)
        j["state"] = "done"
        _write_json_atomic(os.path.join(j["backup_dir"], JOURNAL_NAME), j, step=False)
        if not j["keep_backup"]:
            _drop_backup(j["backup_dir"], list(j["log_dir_delete"]))
        return [f"finished the interrupted change (the new partition directory was already in place; rolled "
                f"forward); old versions are in {j['backup_dir']}"]
    _discard_side(side)
    return []  # not exchanged: the caller rolls back as for any change before its commit point


# ------------------------------------------------------------------------------------------------ recovery
def recover_interrupted(partition_dir: str) -> list[str]:
    """Finish or discard an interrupted ``Transaction``; return one line per thing done (empty when clean).

    The pointer (found whatever ``$KAFKALOG_BACKUP_DIR`` says now) leads to the journal. Refuses (RepairRefused)
    when the process that wrote it still runs: its change is in progress, not interrupted. With a journal: state
    ``backing-up`` or ``committing`` with a ``.cleaned`` left means the commit point was not reached: delete the
    ``.cleaned``/``.swap`` files and the backup. Otherwise (``deleting``, or no ``.cleaned`` left) roll forward.
    Without a journal, apply Kafka's loader rules (delete ``.cleaned`` and the ``.swap`` files at or above the
    smallest ``.cleaned`` base; install index ``.swap`` files) and remove left-over checkpoint ``.tmp`` files; a
    ``.log.swap`` without a journal is a broker clean/split and is left to the broker (refused).
    """
    pdir = os.path.abspath(partition_dir)
    done: list[str] = []
    pointer, ptr = _read_pointer(pdir)
    if ptr is not None:
        alive = _writer_alive(ptr)
        if alive is not None:
            raise RepairRefused(
                f"a kafkalog command (pid {alive}) is still changing this partition; its change is not interrupted "
                "and is neither finished nor undone",
                file=pointer, expected="no running writer", found=f"pid {alive} running",
            )
    journal = None
    if ptr and isinstance(ptr.get("backup_dir"), str):
        journal = _read_json(os.path.join(ptr["backup_dir"], JOURNAL_NAME))
    if journal and os.path.realpath(journal.get("partition_dir", "")) == os.path.realpath(pdir):
        done += _recover_with_journal(pdir, journal)
        _unlink_pointer(pdir)
        return done
    if ptr is not None:
        _unlink_pointer(pdir)
    names = os.listdir(pdir)
    for name in CHECKPOINT_NAMES:
        if name + PLAIN_SUFFIX in names and os.path.isfile(os.path.join(pdir, name + PLAIN_SUFFIX)):
            os.unlink(os.path.join(pdir, name + PLAIN_SUFFIX))
            done.append(f"deleted {name + PLAIN_SUFFIX} (a checkpoint write that never completed; never read)")
    cleaned = [n for n in names if n.endswith(BUILD_SUFFIX)]
    swaps = [n for n in names if n.endswith(".swap")]
    if cleaned:
        bases = [_name_key(n)[0] for n in cleaned]
        low = min(bases)
        for n in swaps:
            if _name_key(n)[0] >= low:
                os.unlink(os.path.join(pdir, n))
                done.append(f"deleted {n} (an unfinished write: a .cleaned file at or below its base remained)")
        swaps = [n for n in swaps if _name_key(n)[0] < low]
        for n in cleaned:
            os.unlink(os.path.join(pdir, n))
            done.append(f"deleted {n} (output that was never committed)")
    log_swaps = [n for n in swaps if n[: -len(".swap")].endswith(".log")]
    if log_swaps:
        raise RepairRefused(
            "found a segment .swap file with no kafkalog journal: an interrupted broker clean or split",
            file=os.path.join(pdir, log_swaps[0]),
            expected="no .log.swap files",
            found=", ".join(sorted(log_swaps)),
        )
    for n in sorted(swaps):
        os.replace(os.path.join(pdir, n), os.path.join(pdir, n[: -len(".swap")]))
        done.append(f"installed {n} as {n[: -len('.swap')]} (no journal found: the replaced file was not backed up)")
    if done:
        _fsync_dir(pdir)
    return done


def _recover_with_journal(pdir: str, j: dict) -> list[str]:
    if j.get("version") != JOURNAL_VERSION or not all(k in j for k in _JOURNAL_KEYS):
        raise RepairRefused(
            "the interrupted change's journal is not one this kafkalog writes (an older or damaged journal): it is "
            "neither finished nor undone",
            file=os.path.join(str(j.get("backup_dir", "")), JOURNAL_NAME),
            expected=f"journal version {JOURNAL_VERSION} with {', '.join(_JOURNAL_KEYS)}",
            found=f"version {j.get('version')!r}, missing " + ", ".join(k for k in _JOURNAL_KEYS if k not in j),
            hint="finish or undo it with the kafkalog version that wrote it, or by hand from the backup directory "
                 "(its files are the old versions), then remove the pointer named in "
                 "docs/safety.md (\"Commit order and crash safety\")",
        )
    backup_dir = j["backup_dir"]
    suffix = j["suffix"]
    staged = list(j["replace"]) + list(j["create"])
    deletes = list(j["delete"])
    early = list(j["early_delete"])
    state = j["state"]
    done: list[str] = []
    if state in ("done", "rolled-back", "abandoned"):
        return done
    if j["exchange_dir"]:
        exchanged = _recover_exchange(pdir, j)
        if exchanged:
            return exchanged
        state = j["state"] = "backing-up"  # not exchanged (or no commit reached): roll back below
    # the commit point is the journal reaching "deleting" (early deletes started) or else the last offset-named
    # ``.cleaned`` becoming ``.swap``; ``.tmp`` files do not count
    leftover = [n for n in staged if offset_named(n) and os.path.exists(os.path.join(pdir, n + BUILD_SUFFIX))]
    if state == "backing-up" or (leftover and state != "deleting"):
        log_dir = j["log_dir"]
        for n in j["log_dir_delete"]:  # removed right after "committing": put it back
            path, saved = os.path.join(log_dir, n), os.path.join(backup_dir, n)
            if log_dir and not os.path.lexists(path) and os.path.exists(saved):
                tmp = path + ".kafkalog-restore"
                shutil.copy2(saved, tmp)
                with open(tmp, "rb") as f:
                    os.fsync(f.fileno())
                os.replace(tmp, path)
                _fsync_dir(log_dir)
                done.append(f"restored {path} from the backup (rolled back)")
        for n in staged:
            for suf in (BUILD_SUFFIX, suffix) if offset_named(n) else (PLAIN_SUFFIX,):
                p = os.path.join(pdir, n + suf)
                if os.path.exists(p):
                    os.unlink(p)
                    done.append(f"deleted {n + suf} (interrupted before its commit point: rolled back)")
        _fsync_dir(pdir)
        j["state"] = "rolled-back"
        _write_json_atomic(os.path.join(backup_dir, JOURNAL_NAME), j, step=False)
        # the old files are all still in place, so our copies back up nothing; only files this transaction created
        # are removed
        for n in j["backups"]:
            p = os.path.join(backup_dir, n)
            for q in (p, p + ".partial"):
                if os.path.exists(q):
                    os.unlink(q)
        done.append(f"rolled back the interrupted change of {len(staged) + len(deletes) + len(early)} file(s); "
                    "old files unchanged")
        return done
    abandoned = _discarded_by_someone_else(pdir, j, staged, suffix)
    if abandoned:
        j["state"] = "abandoned"
        _write_json_atomic(os.path.join(backup_dir, JOURNAL_NAME), j, step=False)
        done.append(
            f"the interrupted change was discarded by someone else (e.g. the broker's loader deleted its "
            f".cleaned/.swap files): {abandoned}; nothing deleted, the partition keeps its current files "
            f"(the old files are in {backup_dir})"
        )
        return done
    _finish(pdir, backup_dir, staged, deletes, suffix, j["log_dir"], list(j["log_dir_delete"]), early)
    j["state"] = "done"
    _write_json_atomic(os.path.join(backup_dir, JOURNAL_NAME), j, step=False)
    done.append(
        f"finished the interrupted change of {len(staged) + len(deletes) + len(early)} file(s) (rolled forward); "
        f"old versions are in {backup_dir}"
    )
    if not j["keep_backup"]:
        _drop_backup(backup_dir, list(j["log_dir_delete"]))
    return done
