"""What the broker does to a partition before any of its own repairs run on it (issue 26): ``LogLoader`` at start-up.

Kafka's cleaner and its follower truncation only ever see a LOADED log: after a crash (no ``.kafka_cleanshutdown``)
the loader recovers the segments above the recovery point (torn tails cut, indexes rebuilt, the active segment's
preallocated indexes trimmed at the close, a producer snapshot at the log end) and finishes or undoes an interrupted
clean or swap; kafka-real's ``Clean`` and ``Truncate`` are ``Load`` then the operation. So ``compact --execute
--recover-first`` and ``truncate-to-epoch --execute --recover-first`` first apply the loader's plan (``broker/loader.plan_load``, Kafka 4.0's rules) as
``recover --execute`` applies it (its own repair transaction: a kill between the two leaves the recovered partition,
which is what the broker's own start-up would make of it), then do their work on the result.
"""

from __future__ import annotations

from collections.abc import Callable

from kafkalog_cli.broker import loader as ld
from kafkalog_cli.errors import RepairRefused


def load_first(partition_dir: str, cfg: ld.TopicConfig, now_ms: int | None, *, execute: bool,
               backup_dir: str | None, keep_backup: bool,
               check: Callable[[ld.LoaderPlan], None] | None = None) -> tuple[list[str], str | None]:
    """What the broker does before its cleaner or truncation ever runs: ``LogLoader`` at start-up (``broker/loader.plan_load``,
    Kafka 4.0's rules) recovers a partition left by a crash (no ``.kafka_cleanshutdown``: segments above the recovery
    point re-validated, torn tails cut, indexes rebuilt, the active segment's preallocated indexes trimmed at the
    close, a producer snapshot at the log end) and finishes or undoes an interrupted clean or swap. Kafka's cleaner
    then cleans the loaded log (kafka-real ``Clean`` = ``Load`` + ``Cleaner.clean``, tests/test_oracle_compact.py),
    so ``--execute`` first applies that plan as ``recover --execute`` does (its own repair transaction), then the
    command does its work. Returns (the names of the files the load changes, the backup dir of that step if it
    wrote); nothing after a clean shutdown (``.kafka_cleanshutdown`` present). Raises RepairRefused where the broker
    cannot load the partition, or where ``check`` refuses the loaded
    state (before anything is written: the command's own refusal of the result changes nothing either)."""
    from kafkalog_cli.ops import recover as rc

    lp = ld.plan_load(partition_dir, ld.DEFAULT_VERSION, now_ms=now_ms, config=cfg, lost_detail=False)
    if lp.clean_shutdown or not lp.has_changes:
        # after a clean shutdown the start-up recovers nothing: the command's own checks (refusals of damage,
        # leftovers) stand as they are, before anything is written
        return [], None
    if lp.fatal:
        raise RepairRefused("the broker cannot load this partition, so its cleaner and its truncation never run on it",
                            file=partition_dir, expected="a partition the broker's loader accepts", found=lp.fatal[0])
    if check is not None:
        check(lp)
    names = sorted({c.name for c in lp.changes}
                   | ({ld.RECOVERY_POINT_FILE} if lp.recovery_point_rewrite is not None else set()))
    if not execute:
        return names, None
    res = rc.run([partition_dir], ld.DEFAULT_VERSION, execute=True, backup_dir=backup_dir, keep_backup=keep_backup,
                 now_ms=now_ms, config=cfg)
    dirs = res[0][2] if res else []
    return names, dirs[-1] if dirs else None


def load_note(names: list[str], execute: bool) -> str:
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    what = ("applied first, as 'kafkalog recover --execute' applies them" if execute else
            "--execute applies them first, as 'kafkalog recover --execute' does; the plan below is made on the files "
            "as they are now")
    return (f"the broker's start-up changes {len(names)} file(s) before it cleans or truncates (recovery after a "
            f"crash or leftovers: {shown}): {what}")
