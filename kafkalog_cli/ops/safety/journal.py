"""Where a repair records what it is doing: the journal in the backup directory, the pointer that finds it, the
backups themselves, and the identity of the writing process.

Why: a run killed at any step must be finished or undone by the next run, whatever ``$KAFKALOG_BACKUP_DIR`` says
then. So the journal (``journal.json``, with the state ``staging`` / ``backing-up`` / ``committing`` / ``deleting`` /
``done``) lives in the backup directory, and a pointer to it at a location derived from the partition's real path
alone (``pointer_paths``). Backups never go inside the Kafka log directory, because the broker refuses folder names
it does not know there (and treats ``*.deleted``/``*.cleaned``/``*.swap`` files as its own, errata E15). The pid and
start time of the writer are recorded so that recovery never undoes the change of a process still running.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from datetime import datetime, timezone

from kafkalog_cli.errors import RepairRefused
from kafkalog_cli.ops.safety.files import read_json, unlink_quiet, write_json_atomic
from kafkalog_cli.storage.layout import log_dir_of

JOURNAL_NAME = "journal.json"
JOURNAL_VERSION = 2  # the only journal format recovery reads; any other is refused, never guessed at
_JOURNAL_KEYS = ("state", "backup_dir", "suffix", "keep_backup", "replace", "create", "delete", "early_delete",
                 "log_dir", "log_dir_delete", "backups", "digests", "exchange_dir", "old_ino")


BACKUP_ENV = "KAFKALOG_BACKUP_DIR"


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


def pointer_paths(partition_dir: str) -> list[str]:
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


def write_pointer(partition_dir: str, data: dict) -> None:
    """Write the pointer at the first location whose directory can be created (see ``pointer_paths``)."""
    paths = pointer_paths(partition_dir)
    for i, path in enumerate(paths):
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError:
            if i == len(paths) - 1:
                raise
            continue
        write_json_atomic(path, data)
        for other in paths[i + 1:]:  # a stale pointer elsewhere must not shadow this one
            unlink_quiet(other)
        return


def read_pointer(partition_dir: str) -> tuple[str | None, dict | None]:
    for path in pointer_paths(partition_dir):
        data = read_json(path)
        if data is not None:
            return path, data
    return None, None


def unlink_pointer(partition_dir: str) -> None:
    for path in pointer_paths(partition_dir):
        unlink_quiet(path)


def backup_file(src: str, backup_dir: str) -> None:
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


def drop_backup(backup_dir: str, keep: list[str]) -> None:
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


def writer_identity() -> dict:
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


def writer_alive(data: dict) -> int | None:
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
