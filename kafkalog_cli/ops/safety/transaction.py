"""The transaction: the ordered file-changing steps of one repair's commit.

New contents are built as ``<final>.cleaned`` (Kafka's suffix for output being built, deleted by the broker's
loader), renamed to ``<final>.swap`` (Kafka's suffix for output ready to be installed, finished by the loader) and
then renamed over the final name. Every intermediate state is therefore one the broker's own loader resolves the
same way we do (spec §8 steps 1-2, errata E12), and ``recovery.recover_interrupted`` finishes or discards it. Names
without an offset are staged as ``<name>.tmp`` (``files.py`` says why) and renamed into place together with the
``.swap`` files.

Commit order (each step durable before the next; docs/safety.md "Commit order and crash safety" has the table):

0. a pointer (state ``staging``, pid and start time of this process) at a location derived from the partition's
   real path alone, never from ``$KAFKALOG_BACKUP_DIR`` (``journal.pointer_paths``);
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
``finish`` (steps 5-8) is idempotent: recovery re-runs it to roll forward.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import stat
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from typing import BinaryIO

from kafkalog_cli.errors import RepairRefused
from kafkalog_cli.format import layouts as L
from kafkalog_cli.ops.safety import files
from kafkalog_cli.ops.safety.files import (
    BUILD_SUFFIX,
    PLAIN_SUFFIX,
    digest,
    fsync_dir,
    name_key,
    offset_named,
    safe_child,
    staging_name,
    unlink_quiet,
    write_failed,
    write_json_atomic,
)
from kafkalog_cli.ops.safety.journal import (
    JOURNAL_NAME,
    JOURNAL_VERSION,
    backup_file,
    check_backup_dir,
    drop_backup,
    unlink_pointer,
    write_pointer,
    writer_identity,
)
from kafkalog_cli.storage.layout import log_dir_of

NO_EXCHANGE_ENV = "KAFKALOG_NO_EXCHANGE"  # use the in-place commit even when RENAME_EXCHANGE would work
DELETE_DIR_SUFFIX = "-delete"  # Kafka's suffix of a partition directory scheduled for deletion (UnifiedLog)


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
                write_pointer(self.partition_dir, {"backup_dir": self.backup_dir, "state": "staging", **writer_identity()})
            except OSError as exc:
                raise write_failed(exc, "cannot write kafkalog's journal pointer") from None
            self._pointer_written = True
        ref = final if os.path.exists(final) else None
        if ref is None:
            log = os.path.join(self.partition_dir, final_name.split(".", 1)[0] + ".log")
            ref = log if os.path.exists(log) else None
        try:
            with open(tmp, "wb") as f:
                files.count_step()
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
            unlink_quiet(tmp)
            raise write_failed(exc, "cannot write the staged file (removed again; nothing was changed)", tmp) from None
        except BaseException:
            # a writer that refuses (e.g. its own output check) leaves no half-written staged file either: it is not
            # in self.staged yet, so the abort would not find it (a stray .cleaned the broker's next load deletes)
            unlink_quiet(tmp)
            raise
        files.count_step()
        self.staged[final_name] = os.path.exists(final)
        self.digests[final_name] = digest(tmp)

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
            **writer_identity(),
        }

    def _set_state(self, state: str) -> None:
        data = self._journal(state)
        write_json_atomic(os.path.join(self.backup_dir, JOURNAL_NAME), data)
        if state in ("done", "rolled-back"):
            unlink_pointer(self.partition_dir)
        else:
            write_pointer(self.partition_dir, {"backup_dir": self.backup_dir, "state": state, **writer_identity()})
            self._pointer_written = True

    def _backup_names(self) -> list[str]:
        """The files this transaction creates in the backup dir: rollback deletes exactly these, nothing else."""
        return ([n for n, e in self.staged.items() if e] + list(self.early_deletes) + list(self.deletes)
                + list(self.log_dir_deletes))

    def commit(self) -> None:
        # recovery imports this module (it rolls forward with ``finish``), so it is imported here: a failed commit
        # is finished or undone now, as recovery after a crash would
        from kafkalog_cli.ops.safety import recovery

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
            fsync_dir(os.path.dirname(self.backup_dir))
            self._set_state("backing-up")
            for src in sources:
                if os.path.exists(src):
                    current = os.path.join(self.backup_dir, os.path.basename(src))
                    backup_file(src, self.backup_dir)
                    files.count_step()
            current = self.backup_dir
            fsync_dir(self.backup_dir)
        except OSError as exc:
            # before the commit point: the next run (or abort now) rolls back; say which file could not be written
            try:
                recovery.recover_with_journal(self.partition_dir, self._journal("backing-up"))
                unlink_pointer(self.partition_dir)
            except Exception:
                pass
            self.staged.clear()
            raise write_failed(exc, "cannot back up the files to be replaced (nothing was changed)", current) from None
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
                finish(self.partition_dir, self.backup_dir, list(self.staged), self.deletes, self.suffix,
                        logdir, self.log_dir_deletes, self.early_deletes,
                        on_early=lambda: self._set_state("deleting"))
        except BaseException as exc:
            # finish or undo now, as recovery after a crash would (any .cleaned left: roll back, which also puts
            # log-dir files such as .kafka_cleanshutdown back); if that fails too, the next run's recovery does it
            state = "deleting" if not self.exchange_dir and any(
                not os.path.lexists(os.path.join(self.partition_dir, n)) for n in self.early_deletes) else "committing"
            try:
                recovery.recover_with_journal(self.partition_dir, self._journal(state))
                unlink_pointer(self.partition_dir)
            except Exception:
                pass
            self.staged.clear()
            if isinstance(exc, OSError):
                raise write_failed(exc, "the commit failed (finished or undone again; see the backup)") from None
            raise
        self._set_state("done")
        if not self.keep_backup:
            drop_backup(self.backup_dir, self.log_dir_deletes)
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
        low = min(name_key(n)[0] for n in logs)
        high = max(_log_next_offset(os.path.join(self.partition_dir, staging_name(n)), name_key(n)[0]) for n in logs)
        gone = set(self.deletes) | set(self.early_deletes) | set(self.staged)
        for name in sorted(os.listdir(self.partition_dir)):
            path = os.path.join(self.partition_dir, name)
            if (name in gone or not offset_named(name) or not low <= name_key(name)[0] < high
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
                base = name_key(name)[0]
                ranges.append((base, _next_offset_of(os.path.join(self.partition_dir, staging_name(name)), base)))
        out = []
        for name in self.deletes:
            if not offset_named(name) or not name.endswith((".log", ".index", ".timeindex", ".txnindex")):
                continue
            off = name_key(name)[0]
            if not any(lo <= off < hi for lo, hi in ranges):
                out.append(name)
        return out

    def abort(self) -> None:
        """Remove the staged ``.cleaned``/``.tmp`` files (nothing else was touched yet) and the pointer."""
        if getattr(self, "_past_backup", False):
            return  # past step 4 the journal decides (commit() already finished or undid it)
        for name in self.staged:
            unlink_quiet(os.path.join(self.partition_dir, staging_name(name)))
        self.staged.clear()
        if self._pointer_written:
            unlink_pointer(self.partition_dir)
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


_EXT_ORDER = {"log": 0, "index": 1, "timeindex": 2, "txnindex": 3}


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
    base, _ = name_key(name)
    ext = name.split(".", 1)[1] if "." in name else ""
    return base, _EXT_ORDER.get(ext, 9), name


def _early_key(name: str) -> tuple[int, int, str]:
    """Early deletes: highest base offset first, and per segment the ``.log`` first (an index without its ``.log``
    is an orphan the broker deletes; a ``.log`` without its index is recovered), so the log the broker would load
    is always the old one minus some of its last segments."""
    base, _ = name_key(name)
    ext = name.split(".", 1)[1] if "." in name else ""
    return -base, _EXT_ORDER.get(ext, 9), name


def finish(partition_dir: str, backup_dir: str, staged: list[str], deletes: list[str], suffix: str,
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
            fsync_dir(log_dir)
            files.count_step()
    early = [n for n in early_deletes or [] if os.path.lexists(os.path.join(partition_dir, n))]
    if early:
        if on_early is not None:
            on_early()  # journal state "deleting": from here on recovery rolls forward
        for name in sorted(early, key=_early_key):
            path = os.path.join(partition_dir, name)
            if os.path.lexists(path):
                backup_file(path, backup_dir)  # no-op when the backup is already there
                os.unlink(path)
                files.count_step()
        fsync_dir(partition_dir)
    segs = [n for n in staged if offset_named(n)]
    plain = [n for n in staged if not offset_named(n)]
    for name in sorted(segs, key=name_key, reverse=True):
        cleaned = os.path.join(partition_dir, name + BUILD_SUFFIX)
        if os.path.exists(cleaned):
            os.replace(cleaned, os.path.join(partition_dir, name + suffix))
            files.count_step()
    fsync_dir(partition_dir)
    for name in deletes:
        path = os.path.join(partition_dir, name)
        if os.path.lexists(path):
            backup_file(path, backup_dir)  # no-op when the backup is already there
            os.unlink(path)
            files.count_step()
    for name in sorted(segs, key=_install_key):
        swap = os.path.join(partition_dir, name + suffix)
        if os.path.exists(swap):
            os.replace(swap, os.path.join(partition_dir, name))
            files.count_step()
    for name in sorted(plain):
        for suf in (PLAIN_SUFFIX, suffix):  # .swap: a journal of an older kafkalog
            tmp = os.path.join(partition_dir, name + suf)
            if os.path.exists(tmp):
                os.replace(tmp, os.path.join(partition_dir, name))
                files.count_step()
    fsync_dir(partition_dir)


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
            fsync_dir(log_dir)
            files.count_step()
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
        files.count_step()
    for name in sorted(os.listdir(real)):
        if name in gone or name in ours:
            continue
        src = os.path.join(real, name)
        if os.path.isdir(src) and not os.path.islink(src):
            discard_side(side)
            return False  # a sub-directory cannot be hard-linked: keep the in-place order
        os.link(src, os.path.join(side, name), follow_symlinks=False)
        files.count_step()
    for name in staged:
        os.link(os.path.join(real, staging_name(name)), os.path.join(side, name))
        files.count_step()
    fsync_dir(side)
    if holder:
        fsync_dir(holder)
    if not _rename_exchange(real, side):
        discard_side(side)
        return False
    fsync_dir(os.path.dirname(real))
    if holder:
        fsync_dir(holder)
    files.count_step()
    remove_side(side)
    return True


def _holder_of(side: str) -> str | None:
    """The ``<name>.<uuid>-delete`` directory holding the exchanged side ``side`` (None: a side of an older
    kafkalog, which was the ``-delete`` directory itself)."""
    holder = os.path.dirname(side)
    return holder if os.path.basename(holder).endswith(DELETE_DIR_SUFFIX) else None


def discard_side(side: str) -> None:
    """Remove a side that was never exchanged (it holds only links and the holder only what a broker created)."""
    holder = _holder_of(side)
    if os.path.isdir(side):
        shutil.rmtree(side)
    if holder and os.path.isdir(holder):
        shutil.rmtree(holder)


def remove_side(side: str) -> None:
    """Remove the side holding the old contents (every replaced or deleted file is backed up), then its holder
    (which holds nothing else but what a broker that loaded it meanwhile created there)."""
    holder = _holder_of(side)
    if os.path.isdir(side):
        for name in sorted(os.listdir(side)):
            os.unlink(os.path.join(side, name))
            files.count_step()
        os.rmdir(side)
        files.count_step()
    if holder and os.path.isdir(holder):
        shutil.rmtree(holder)
        files.count_step()
    fsync_dir(os.path.dirname(holder or side))
