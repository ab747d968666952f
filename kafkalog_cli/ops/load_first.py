"""What the broker does to a partition before any of its own repairs run on it (issue 26): ``LogLoader`` at start-up.

Kafka's cleaner and its follower truncation only ever see a LOADED log: after a crash (no ``.kafka_cleanshutdown``)
the loader recovers the segments above the recovery point (torn tails cut, indexes rebuilt, the active segment's
preallocated indexes trimmed at the close, a producer snapshot at the log end) and finishes or undoes an interrupted
clean or swap; kafka-real's ``Clean`` and ``Truncate`` are ``Load`` then the operation. So ``compact --execute``
and ``truncate-to-epoch --execute`` (``--recover-first``, the default; ``--no-recover-first`` turns it off) first
apply the loader's plan (``broker/loader.plan_load``, Kafka 4.0's rules) as ``recover --execute`` applies it (its own
repair transaction: a kill between the two leaves the recovered partition, which is what the broker's own start-up
would make of it), then do their work on the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from kafkalog_cli.broker import loader as ld
from kafkalog_cli.errors import KafkalogError, RepairRefused


class Loaded(NamedTuple):
    """What ``load_first`` found (and, executed, did)."""

    names: list[str]  # the files the load changes ([]: nothing to do)
    backup_dir: str | None  # the backup dir of that step, if it wrote
    summary: str  # what it changes, in a few words (for the dry run's note)
    recovered: list[int]  # the segments it recovers (LogSegment.recover: their max timestamp is known after it)
    #: the load's final producer-state rebuild replays the log after an earlier snapshot and writes the log-end
    #: snapshot of that state (LoaderPlan.log_end_state_replayed): the command must not expire its producers again;
    #: False: the broker's state is the log-end snapshot read with expiry, as the command's own load reads it
    log_end_snapshot: bool = False


NOTHING = Loaded([], None, "", [])


def load_first(partition_dir: str, cfg: ld.TopicConfig, now_ms: int | None, *, execute: bool,
               backup_dir: str | None, keep_backup: bool,
               check: Callable[[ld.LoaderPlan], None] | None = None) -> Loaded:
    """What the broker does before its cleaner or truncation ever runs: ``LogLoader`` at start-up (``broker/loader.plan_load``,
    Kafka 4.0's rules) recovers a partition left by a crash (no ``.kafka_cleanshutdown``: segments above the recovery
    point re-validated, torn tails cut, indexes rebuilt, the active segment's preallocated indexes trimmed at the
    close, a producer snapshot at the log end) and finishes or undoes an interrupted clean or swap. Kafka's cleaner
    then cleans the loaded log (kafka-real ``Clean`` = ``Load`` + ``Cleaner.clean``, tests/test_oracle_compact.py),
    so ``--execute`` first applies that plan as ``recover --execute`` does (its own repair transaction), then the
    command does its work. Returns a ``Loaded``; after a clean shutdown (``.kafka_cleanshutdown`` present) only where
    leftovers or a segment recovery remain (``needs_load_after_clean_shutdown``), else ``NOTHING``. Raises RepairRefused where the broker
    cannot load the partition, or where ``check`` refuses the loaded
    state (before anything is written: the command's own refusal of the result changes nothing either)."""
    from kafkalog_cli.ops import recover as rc

    lp = ld.plan_load(partition_dir, ld.DEFAULT_VERSION, now_ms=now_ms, config=cfg, lost_detail=False)
    if not lp.has_changes or (lp.clean_shutdown and not needs_load_after_clean_shutdown(lp)):
        # after a clean shutdown the start-up only finishes leftovers and recovers segments whose index is missing;
        # its other changes (stale producer snapshots) are the command's own to make, as the cleaner or the
        # truncation makes them: the command's own checks stand as they are, before anything is written
        return NOTHING
    if lp.fatal:
        raise RepairRefused("the broker cannot load this partition, so its cleaner and its truncation never run on it",
                            file=partition_dir, expected="a partition the broker's loader accepts", found=lp.fatal[0])
    if check is not None:
        check(lp)
    names = sorted({c.name for c in lp.changes}
                   | ({ld.RECOVERY_POINT_FILE} if lp.recovery_point_rewrite is not None else set()))
    recovered = [r.base for r in lp.recovered]
    # the broker's producer state after its load: the snapshot it reloads with expiry (loadFromSnapshot) plus, where
    # that snapshot is below the log end, the log after it replayed without expiry (UnifiedLog.java:103-130), then a
    # snapshot at the log end of exactly that state. Replayed: the log-end snapshot read back must not expire anyone
    # again; not replayed (the log-end snapshot survived, or a segment recovery's temporary state wrote it): the
    # broker's state is that file read with expiry, as the command's own load reads it
    snap = lp.log_end_state_replayed
    if not execute:
        return Loaded(names, None, summary(lp), recovered, snap)
    res = rc.run([partition_dir], ld.DEFAULT_VERSION, execute=True, backup_dir=backup_dir, keep_backup=keep_backup,
                 now_ms=now_ms, config=cfg)
    dirs = res[0][2] if res else []
    return Loaded(names, dirs[-1] if dirs else None, summary(lp), recovered, snap)


def needs_load_after_clean_shutdown(lp: ld.LoaderPlan) -> bool:
    """After a clean shutdown Kafka's loader still finishes or undoes the leftovers of an interrupted clean, swap or
    split (``.cleaned``, ``.swap``: LogLoader.removeTempFilesAndCollectSwapFiles, LogLoader.java's swap completion;
    ``.deleted`` files alone the command deletes itself, as the loader does) and recovers a segment whose offset index is missing or fails its sanity check
    (LogLoader.loadSegmentFiles); its cleaner and its truncation then run on that result, so those changes come
    first here too. kafka-real ``Clean``/``Truncate`` on such inputs: tests/test_oracle_compact.py and
    tests/test_oracle_truncate.py (``leftovers after a clean shutdown``)."""
    # .deleted leftovers alone do not count: the load's other changes (e.g. a leader-epoch checkpoint written for a
    # legacy log) are not the broker's at a clean start
    return bool(lp.recovered) or any(c.phase == "leftovers" and not c.name.endswith(".deleted") for c in lp.changes)


def summary(lp: ld.LoaderPlan) -> str:
    """What the load changes, in a few words: segments recovered (cut, records lost), segments deleted, leftovers
    finished, snapshots written, the log end before and after."""
    parts = []
    if lp.recovered:
        cut = [r for r in lp.recovered if r.outcome != "intact"]
        parts.append(f"{len(lp.recovered)} segment(s) recovered (indexes rebuilt" +
                     (f"; {len(cut)} cut at their first invalid batch" if cut else "") + ")")
    if lp.deleted_segments:
        parts.append(f"{len(lp.deleted_segments)} segment(s) past the cut deleted")
    left = [c for c in lp.changes if c.phase == "leftovers"]
    if left:
        parts.append(f"{len(left)} leftover(s) of an interrupted clean, swap or deletion finished or undone")
    if lp.snapshots_written:
        parts.append("producer snapshot(s) written at " + ", ".join(str(o) for o in lp.snapshots_written[-3:]))
    if lp.lost_records:
        parts.append(f"{lp.lost_records} record(s) lost")
    if lp.log_end_offset != lp.log_end_before:
        parts.append(f"log end offset {lp.log_end_before} -> {lp.log_end_offset}")
    return "; ".join(parts)


def load_note(loaded: Loaded, execute: bool) -> str:
    names = loaded.names
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    what = ("applied first, as 'kafkalog recover --execute' applies them" if execute else
            "--execute applies them first, as 'kafkalog recover --execute' does (--no-recover-first: not applied); "
            "the plan below is made on the files as they are now")
    does = f"{loaded.summary}; " if loaded.summary else ""
    return (f"the broker's start-up recovery changes {len(names)} file(s) before it cleans or truncates (the "
            f"partition was left by a crash or holds leftovers: {does}files {shown}): {what}")


def refused_after_load(exc: KafkalogError, loaded: Loaded) -> KafkalogError:
    """The command's own refusal (or error) after ``--execute`` applied the start-up recovery: that step stays (it
    is its own committed change, exactly what the broker's next start makes of the partition), so the hint says so
    instead of "nothing was changed"."""
    where = f"; its backup is in {loaded.backup_dir}" if loaded.backup_dir else ""
    exc.hint = (f"the broker's start-up recovery was applied first ({len(loaded.names)} file(s), as 'kafkalog recover "
                f"--execute'{where}) and stays, as the broker's next start would leave it; nothing else was changed. "
                "Run 'kafkalog verify-crc PARTITION_DIR' to see what the repair refused")
    return exc
