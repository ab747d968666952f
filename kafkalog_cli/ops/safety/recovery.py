"""Recovery of interrupted repairs: finish or undo what a killed ``Transaction`` left, before any new plan is made.

Why: every state between two file-changing steps of a commit must load as the old or the new partition, for the
broker's loader and for kafkalog. The broker's loader resolves ``.cleaned``/``.swap`` files by its own rules; this
module resolves them the same way, and uses the journal (``journal.py``) to roll forward past the commit point, to
roll back before it (deleting the staged files and the backups this run made), or to leave alone a change the
broker's loader has already discarded.
"""

from __future__ import annotations

import os
import shutil

from kafkalog_cli.errors import RepairRefused
from kafkalog_cli.ops.safety import transaction as tx
from kafkalog_cli.ops.safety.files import (
    BUILD_SUFFIX,
    CHECKPOINT_NAMES,
    PLAIN_SUFFIX,
    digest,
    fsync_dir,
    name_key,
    offset_named,
    read_json,
    write_json_atomic,
)
from kafkalog_cli.ops.safety.journal import (
    _JOURNAL_KEYS,
    JOURNAL_NAME,
    JOURNAL_VERSION,
    drop_backup,
    read_pointer,
    unlink_pointer,
    writer_alive,
)


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
    pointer, ptr = read_pointer(pdir)
    if ptr is not None:
        alive = writer_alive(ptr)
        if alive is not None:
            raise RepairRefused(
                f"a kafkalog command (pid {alive}) is still changing this partition; its change is not interrupted "
                "and is neither finished nor undone",
                file=pointer, expected="no running writer", found=f"pid {alive} running",
            )
    journal = None
    if ptr and isinstance(ptr.get("backup_dir"), str):
        journal = read_json(os.path.join(ptr["backup_dir"], JOURNAL_NAME))
    if journal and os.path.realpath(journal.get("partition_dir", "")) == os.path.realpath(pdir):
        done += recover_with_journal(pdir, journal)
        unlink_pointer(pdir)
        return done
    if ptr is not None:
        unlink_pointer(pdir)
    names = os.listdir(pdir)
    for name in CHECKPOINT_NAMES:
        if name + PLAIN_SUFFIX in names and os.path.isfile(os.path.join(pdir, name + PLAIN_SUFFIX)):
            os.unlink(os.path.join(pdir, name + PLAIN_SUFFIX))
            done.append(f"deleted {name + PLAIN_SUFFIX} (a checkpoint write that never completed; never read)")
    cleaned = [n for n in names if n.endswith(BUILD_SUFFIX)]
    swaps = [n for n in names if n.endswith(".swap")]
    if cleaned:
        bases = [name_key(n)[0] for n in cleaned]
        low = min(bases)
        for n in swaps:
            if name_key(n)[0] >= low:
                os.unlink(os.path.join(pdir, n))
                done.append(f"deleted {n} (an unfinished write: a .cleaned file at or below its base remained)")
        swaps = [n for n in swaps if name_key(n)[0] < low]
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
        fsync_dir(pdir)
    return done


def recover_with_journal(pdir: str, j: dict) -> list[str]:
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
                fsync_dir(log_dir)
                done.append(f"restored {path} from the backup (rolled back)")
        for n in staged:
            for suf in (BUILD_SUFFIX, suffix) if offset_named(n) else (PLAIN_SUFFIX,):
                p = os.path.join(pdir, n + suf)
                if os.path.exists(p):
                    os.unlink(p)
                    done.append(f"deleted {n + suf} (interrupted before its commit point: rolled back)")
        fsync_dir(pdir)
        j["state"] = "rolled-back"
        write_json_atomic(os.path.join(backup_dir, JOURNAL_NAME), j, step=False)
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
        write_json_atomic(os.path.join(backup_dir, JOURNAL_NAME), j, step=False)
        done.append(
            f"the interrupted change was discarded by someone else (e.g. the broker's loader deleted its "
            f".cleaned/.swap files): {abandoned}; nothing deleted, the partition keeps its current files "
            f"(the old files are in {backup_dir})"
        )
        return done
    tx.finish(pdir, backup_dir, staged, deletes, suffix, j["log_dir"], list(j["log_dir_delete"]), early)
    j["state"] = "done"
    write_json_atomic(os.path.join(backup_dir, JOURNAL_NAME), j, step=False)
    done.append(
        f"finished the interrupted change of {len(staged) + len(deletes) + len(early)} file(s) (rolled forward); "
        f"old versions are in {backup_dir}"
    )
    if not j["keep_backup"]:
        drop_backup(backup_dir, list(j["log_dir_delete"]))
    return done


def _recover_exchange(pdir: str, j: dict) -> list[str] | None:
    """Recovery of an exchange commit (``_commit_by_exchange``); None when the journal is not one."""
    side = j["exchange_dir"]
    if not side or j["state"] not in ("committing", "deleting"):
        return None
    real = os.path.realpath(pdir)
    if os.stat(real).st_ino != j["old_ino"]:
        tx.remove_side(side)
        j["state"] = "done"
        write_json_atomic(os.path.join(j["backup_dir"], JOURNAL_NAME), j, step=False)
        if not j["keep_backup"]:
            drop_backup(j["backup_dir"], list(j["log_dir_delete"]))
        return [f"finished the interrupted change (the new partition directory was already in place; rolled "
                f"forward); old versions are in {j['backup_dir']}"]
    tx.discard_side(side)
    return []  # not exchanged: the caller rolls back as for any change before its commit point


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
        if os.path.exists(cleaned) and (want is None or list(digest(cleaned)) == list(want)):
            continue
        final = os.path.join(pdir, name)
        if want is None:
            continue
        if not os.path.exists(final):
            return f"{name} is missing"
        if list(digest(final)) != list(want):
            return f"{name} is not the file kafkalog wrote (size/CRC differ)"
    return None
