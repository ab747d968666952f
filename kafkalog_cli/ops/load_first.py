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

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeVar

from kafkalog_cli.broker import loader as ld
from kafkalog_cli.errors import KafkalogError, RepairRefused

if TYPE_CHECKING:
    from kafkalog_cli.ops.repair_plan import RepairPlan

R = TypeVar("R")


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

    lp = ld.plan_load(partition_dir, ld.DEFAULT_VERSION, now_ms=now_ms, config=cfg)
    if not lp.has_changes or (lp.clean_shutdown and not needs_load_after_clean_shutdown(lp)):
        # after a clean shutdown the start-up only finishes leftovers and recovers segments whose index is missing;
        # its other changes (stale producer snapshots) are the command's own to make, as the cleaner or the
        # truncation makes them: the command's own checks stand as they are, before anything is written
        return NOTHING
    if lp.fatal:
        raise RepairRefused("the broker cannot load this partition, so its cleaner and its truncation never run on it",
                            file=partition_dir, expected="a partition the broker's loader accepts", found=lp.fatal[0])
    refuse_loss(partition_dir, lp)
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


#: the largest partition a dry run copies to plan on the loaded state (``loaded_copy``); above it the dry run plans on
#: the files as they are and says so. A copy reads the partition once and writes it to the temporary directory
DRY_RUN_COPY_MAX_BYTES = 2 << 30
DRY_RUN_COPY_ENV = "KAFKALOG_DRY_RUN_COPY_MAX_BYTES"


def _copy_limit() -> int:
    try:
        return int(os.environ.get(DRY_RUN_COPY_ENV, DRY_RUN_COPY_MAX_BYTES))
    except ValueError:
        return DRY_RUN_COPY_MAX_BYTES


def _regular_files(d: str) -> list[os.DirEntry]:
    with os.scandir(d) as it:
        return [e for e in it if e.is_file(follow_symlinks=False)]


@contextmanager
def loaded_copy(partition_dir: str, cfg: ld.TopicConfig, now_ms: int | None) -> Iterator[str | None]:
    """A copy of the partition as the broker's start-up leaves it, for a DRY RUN to plan on: the partition's files
    and its log dir's own files (the checkpoints and ``.kafka_cleanshutdown`` the loader reads) copied under the
    temporary directory (``$TMPDIR``), the loader's plan applied there as ``recover --execute`` applies it, removed
    again on exit. The dry run then plans what ``--execute`` does after that same step (a ``.cleaned``/``.swap``
    leftover finished, a torn tail cut, a lost index rebuilt) instead of refusing or planning on files the step
    changes. Nothing is written to the live log dir. Yields None (plan on the files as they are) where the partition is
    larger than ``DRY_RUN_COPY_MAX_BYTES`` (``$KAFKALOG_DRY_RUN_COPY_MAX_BYTES``) or the temporary directory lacks
    the space."""
    from kafkalog_cli.ops import recover as rc

    src = os.path.abspath(partition_dir)
    logdir = os.path.dirname(src)
    files = _regular_files(src)
    size = sum(e.stat(follow_symlinks=False).st_size for e in files)
    tmp = tempfile.gettempdir()
    if size > _copy_limit() or shutil.disk_usage(tmp).free < size + (64 << 20):
        yield None
        return
    scratch = tempfile.mkdtemp(prefix="kafkalog-dry-run-", dir=tmp)
    try:
        sim_logdir = os.path.join(scratch, os.path.basename(logdir) or "logdir")
        sim = os.path.join(sim_logdir, os.path.basename(src))
        os.makedirs(sim)
        for e in _regular_files(logdir):
            if e.name != ".lock" and e.stat(follow_symlinks=False).st_size <= (16 << 20):
                shutil.copy2(e.path, os.path.join(sim_logdir, e.name))
        for e in files:
            shutil.copy2(e.path, os.path.join(sim, e.name))  # mtimes kept: the cleaner and retention read them
        try:
            rc.run([sim], ld.DEFAULT_VERSION, execute=True, backup_dir=os.path.join(scratch, "backup"),
                   keep_backup=False, now_ms=now_ms, config=cfg)
        except KafkalogError:
            # the start-up step fails on the copy (e.g. a directory whose name is no <topic>-<partition>): plan on
            # the files as they are, as before; --execute meets the same failure itself
            yield None
            return
        yield sim
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def relocated(text: str, sim: str, real: str) -> str:
    """A message of the plan made on ``loaded_copy``, naming the live partition (and log dir) instead of the copy's:
    the copy keeps the partition's name, so the log dir's path stands for both."""
    return text.replace(os.path.dirname(sim), os.path.dirname(real))


def relocated_error(exc: KafkalogError, sim: str, real: str) -> KafkalogError:
    """The command's refusal of the loaded copy, located in the live partition (``loaded_copy``)."""
    for attr in ("message", "file", "expected", "found", "hint"):
        v = getattr(exc, attr, None)
        if isinstance(v, str):
            setattr(exc, attr, relocated(v, sim, real))
    return exc


def plan_after_load(partition_dir: str, cfg: ld.TopicConfig, now_ms: int | None,
                    plan_on: Callable[[str], R]) -> tuple[R, str, str] | None:
    """A dry run's plan made on ``loaded_copy`` (what ``--execute`` plans after its start-up step): (the plan, the
    copy's partition path, the live one) for the caller to relocate its messages; None where no copy is made. A
    refusal or error of the plan names the live partition (``relocated_error``)."""
    real = os.path.abspath(partition_dir)
    with loaded_copy(partition_dir, cfg, now_ms) as sim:
        if sim is None:
            return None
        try:
            return plan_on(sim), sim, real
        except KafkalogError as exc:
            raise relocated_error(exc, sim, real) from None


LOSS_HINT = ("nothing was changed; 'kafkalog salvage PARTITION_DIR' cuts out only the damaged bytes and keeps every "
             "intact batch (add --execute to do it); 'kafkalog recover PARTITION_DIR --execute' applies the broker's "
             "start-up recovery as it is, loss included (its backup keeps the removed files); then run again")


def refuse_loss(partition_dir: str, lp: ld.LoaderPlan) -> None:
    """A repair never loses a record silently: where the broker's start-up recovery would drop intact batches (a
    segment cut at its first invalid batch with readable batches after it, later segments deleted:
    LogLoader.recoverLog), the command refuses before anything is written, and its dry run says the same. A torn or
    zero-filled tail holds no intact batch and is cut as the broker cuts it."""
    if not lp.lost_records:
        return
    found = []
    for r in lp.recovered:
        if r.outcome == "intact":
            continue
        why = r.stop or "an invalid batch"
        if r.lost is not None and not r.lost.records:
            why += ": a torn write, no intact batch after it in the segment"
        found.append(f"{r.base:020d}.log cut at byte {r.stop_position} ({why})")
    gone = [d for d in lp.deleted_segments if d.records]
    if gone:
        found.append(f"{len(gone)} later segment(s) deleted ({sum(d.records for d in gone)} record(s))")
    exc = RepairRefused(f"the broker's start-up recovery of this partition drops {lp.lost_records} intact record(s) "
                        "before it cleans or truncates (log end offset "
                        f"{lp.log_end_before} -> {lp.log_end_offset})", file=partition_dir,
                        expected="a start-up recovery that loses no intact record", found="; ".join(found))
    exc.hint = LOSS_HINT
    raise exc


class Planned(Protocol):
    """What a repair's plan (CompactPlan, TruncatePlan) holds that ``dry_run_after_load`` rewrites (a
    ``repair_plan.Report`` with the partition's path and the start-up step's files)."""

    partition_dir: str
    notes: list[str]
    load_first: list[str]

    @property
    def has_changes(self) -> bool: ...


P = TypeVar("P", bound=Planned)


def dry_run_after_load(partition_dir: str, loaded: Loaded, cfg: ld.TopicConfig, now_ms: int | None,
                       plan_repair: Callable[[str], RepairPlan[P]]) -> P | None:
    """The dry run of compact / truncate-to-epoch where the start-up step has changes: ``plan_repair`` (the command's
    planner, given a partition path) runs on ``loaded_copy``, and its plan is returned naming the live partition, with
    the live log dir's own warnings and the start-up note first; None where no copy is made (the caller plans on the
    files as they are)."""
    from kafkalog_cli.ops import repair_plan, safety

    done = plan_after_load(partition_dir, cfg, now_ms, lambda sim: repair_plan.drive(
        sim, lambda: plan_repair(sim), execute=False, backup_dir=None))
    if done is None:
        return None
    o, sim, real = done
    plan = o.report
    plan.partition_dir = real
    copy_warnings = safety.log_dir_warnings(sim)
    plan.notes = [relocated(n, sim, real) for n in plan.notes if n not in copy_warnings]
    plan.notes.extend(safety.log_dir_warnings(partition_dir))
    plan.load_first = loaded.names
    plan.notes.insert(0, load_note(loaded, False, planned_after=True))
    return plan


def needs_load_after_clean_shutdown(lp: ld.LoaderPlan) -> bool:
    """After a clean shutdown Kafka's loader still finishes or undoes the leftovers of an interrupted clean, swap or
    split (``.cleaned``, ``.swap``: LogLoader.removeTempFilesAndCollectSwapFiles, LogLoader.java's swap completion;
    ``.deleted`` files alone the command deletes itself, as the loader does) and recovers a segment whose offset index is missing or fails its sanity check
    (LogLoader.loadSegmentFiles); its cleaner and its truncation then run on that result, so those changes come
    first here too. kafka-real ``Clean``/``Truncate`` on such inputs: tests/test_oracle_compact.py and
    tests/test_oracle_truncate.py (``leftovers after a clean shutdown``)."""
    # .deleted leftovers alone do not count: the load's other changes (e.g. a leader-epoch checkpoint written for a
    # legacy log) are not the broker's at a clean start. A producer snapshot the load deletes does count: even at a clean start rebuildProducerState's truncateAndReload removes
    # every snapshot at or below the log start (a DeleteRecords or retention past a segment's base) or above the log
    # end (ProducerStateManager.java:355-361, UnifiedLog.java:100-104)
    return (bool(lp.recovered) or bool(lp.snapshots_deleted)
            or any(c.phase == "leftovers" and not c.name.endswith(".deleted") for c in lp.changes))


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


def load_note(loaded: Loaded, execute: bool, planned_after: bool = False) -> str:
    """The plan's first note: the start-up step, and (a dry run) whether the plan below already assumes it
    (``planned_after``: made on ``loaded_copy``) or is made on the files as they are (a partition too large to copy,
    or ``--no-recover-first`` never gets here)."""
    names = loaded.names
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    on = ("the plan below is made on a copy of the partition with them applied, as --execute plans after them"
          if planned_after else
          "the plan below is made on the files as they are now (no loaded copy to plan on: the partition is larger "
          f"than {DRY_RUN_COPY_ENV} or the temporary directory's free space, or the start-up step failed on the copy)")
    what = ("applied first, as 'kafkalog recover --execute' applies them" if execute else
            "--execute applies them first, as 'kafkalog recover --execute' does (--no-recover-first: not applied); "
            + on)
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
