"""``recover``: do offline, now, exactly what the broker's loader would do at its next start (``broker/loader.py``).

Why offline: the broker's recovery deletes every segment after the first bad batch, and it does so silently while
the partition is offline for everyone. Running the same plan here shows it first (dry run), keeps a backup of
everything removed or replaced, and leaves a partition whose next load finds nothing to change.

Execution goes through the one repair driver (``repair_plan.drive``) in two transactions, because Kafka's own leftover
handling is two-step:

1. leftovers: the files the loader deletes (``.deleted``, ``.cleaned``, invalid ``.swap``, the segments an
   interrupted clean/split replaces) are removed through a ``Transaction`` (backed up); then the remaining ``.swap``
   files are renamed to their final names, exactly as the loader's third pass does (a crash between renames leaves
   a state the broker's loader, and the next run, finish the same way);
2. load: truncated segments, rebuilt indexes, deleted later segments, producer snapshots and the leader-epoch
   checkpoint, in one ``Transaction``.

The plan is recomputed under the log-dir lock right before writing, so dry run and execute cannot disagree.
"""

from __future__ import annotations

import os
from functools import partial

from kafkalog_cli.broker import loader as ld
from kafkalog_cli.errors import RepairRefused, UnreadableFileError
from kafkalog_cli.ops import repair_plan, safety
from kafkalog_cli.storage.layout import segment_bases
from kafkalog_cli.storage.partition_name import java_parse_int
from kafkalog_cli.storage.paths import live_partition, partition_dirs


def _swap_order(c: ld.FileChange) -> tuple[str, int, str]:
    """Per segment, ``N.log.swap`` is renamed before its indexes (Kafka's ``LogSegment.changeFileSuffixes`` order):
    killed in between, ``N.log.swap`` beside an already renamed ``N.index`` would make the broker's loader create a
    zero-filled ``N.index.swap`` (AbstractIndex.java:90-103) and install it over the real index."""
    stem, _, ext = c.name.partition(".")
    return stem, 0 if ext == "log" else 1, c.name


def recovery_steps(plan: ld.LoaderPlan) -> list[repair_plan.Step]:
    """The loader's plan as file steps (``repair_plan``), in the loader's order (``LogLoader.load``): the leftovers
    it deletes (``removeTempFilesAndCollectSwapFiles``; a file a ``.swap`` is about to replace is deleted too, so it
    is backed up first), then the ``.swap`` renames (``completeSwapOperations``, ``.log`` before its indexes), then the
    recovery itself (``recoverLog``: truncated segments, rebuilt indexes, deleted later segments, snapshots, the
    leader-epoch checkpoint). The renames split this into the two transactions of the module docstring."""
    pdir = plan.partition_dir
    first = [c for c in plan.changes if c.phase == "leftovers"]
    renames = [c for c in first if c.kind == "rename"]
    # an index swap the loader creates (a .log.swap without its .index.swap) is written first, as Kafka creates it
    # before the deletions of the swap range
    steps = [repair_plan.write(c.name, c.data or b"") for c in first if c.kind == "write"]
    steps += [repair_plan.delete(c.name) for c in first if c.kind == "delete"]
    steps += [repair_plan.delete(c.name) for c in renames if os.path.lexists(os.path.join(pdir, c.name))]
    steps += [repair_plan.Step("rename", c.name, source=c.source) for c in sorted(renames, key=_swap_order)]
    for c in plan.changes:
        if c.phase == "leftovers":
            continue
        if c.kind == "delete":
            steps.append(repair_plan.delete(c.name))
        elif c.kind == "truncate":
            steps.append(repair_plan.write(c.name, repair_plan.copy_prefix(os.path.join(pdir, c.name), c.size),
                                           keep_mtime=True))
        elif c.kind == "write":
            steps.append(repair_plan.write(c.name, c.data or b"", keep_mtime=c.name.endswith((".index", ".timeindex"))))
        elif c.kind == "create-empty":
            steps.append(repair_plan.write(c.name, b""))
        elif c.kind == "copy":  # a piece of a split segment: its mtime is the old segment's (LocalLog.java:192)
            src = os.path.join(pdir, c.source or "")
            steps.append(repair_plan.write(c.name, repair_plan.copy_prefix(src, c.size, start=c.start),
                                           mtime=os.path.getmtime(src)))
    return steps


def changes_data(plan: ld.LoaderPlan) -> bool:
    """Whether the loader's plan changes data: removing files already marked for deletion (the broker's pending async
    deletes) changes none, the same verdict as verify-crc's leftover note and scan (issue 27); they are still listed
    and ``--execute`` does it."""
    return (plan.recovery_point_rewrite is not None
            or any(not (c.kind == "delete" and c.name.endswith(".deleted")) for c in plan.changes))


def write_recovery_point(pdir: str, offset: int) -> None:
    """Set this partition's entry of the log dir's ``recovery-point-offset-checkpoint`` to ``offset``
    (``write_checkpoint_entry``). Called when the entry is above the new log end, where the broker holds ``min(entry,
    log end)`` anyway (LogLoader.java:517-518) and writes it at its next checkpoint (left above, the next start would
    recover the active segment again), and after an unclean shutdown's recovery, when the entry is below the log end
    or absent (the file is created, or the entry added, as the broker's clean close checkpoints it)."""
    write_checkpoint_entry(pdir, ld.RECOVERY_POINT_FILE, offset)


def write_checkpoint_entry(pdir: str, name: str, offset: int) -> None:
    """Set this partition's entry of the log dir's checkpoint ``name`` to ``offset``, keeping the other entries and
    their order, as Kafka's CheckpointFile writes it (a ``.tmp`` file, fsync, atomic rename, CheckpointFile.java): a
    kill leaves the old or the new file, and both load."""
    from kafkalog_cli.storage import companions as comp

    logdir = os.path.dirname(os.path.realpath(pdir))
    path = os.path.join(logdir, name)
    tp = live_partition(pdir)
    assert tp is not None
    version, entries = 0, []
    if os.path.isfile(path):
        cp = comp.parse_checkpoint(comp.read_checkpoint_text(path), path, columns=3)
        version, entries = cp.version, cp.entries
    lines = []
    found = False
    for e in entries:
        if e[0] == tp[0] and java_parse_int(e[1]) == tp[1]:  # Integer.parseInt, OffsetCheckpointFile.java:88
            e = [e[0], e[1], str(offset)]
            found = True
        lines.append(" ".join(e))
    if not found:
        lines.append(f"{tp[0]} {tp[1]} {offset}")
    text = f"{version}\n{len(lines)}\n" + "".join(line + "\n" for line in lines)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(logdir, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _interrupted(pdir: str) -> list[str]:
    """safety.recover_interrupted, except that a broker's own ``.log.swap`` is left to the loader model."""
    try:
        return safety.recover_interrupted(pdir)
    except RepairRefused as exc:
        if exc.message.startswith("found a segment .swap file"):
            return []
        raise


def _refuse_fatal(plan: ld.LoaderPlan) -> None:
    if plan.fatal:
        raise RepairRefused("the broker would not load this partition: " + "; ".join(plan.fatal),
                            file=plan.partition_dir, expected="a partition the loader can recover",
                            found=f"{len(plan.fatal)} fatal condition(s)")


def run(paths: list[str], kafka_version: str = ld.DEFAULT_VERSION, *, execute: bool = False,
        backup_dir: str | None = None, keep_backup: bool = True,
        now_ms: int | None = None, config: ld.TopicConfig | None = None,
        recovery_point: int | None = None) -> list[tuple[ld.LoaderPlan, list[str], list[str]]]:
    """Per partition: (plan, interrupted changes finished first, backup dirs written). ``config``: the topic configs
    the loader reads (``index.interval.bytes``, ``segment.index.bytes``); Kafka's defaults when None.
    ``recovery_point``: plan an unclean start whose recovery-point checkpoint is this offset (to make the broker's
    recovery reach a segment below the one on disk)."""
    cfg = config or ld.TopicConfig()
    out: list[tuple[ld.LoaderPlan, list[str], list[str]]] = []
    pdirs = partition_dirs(paths)
    if execute and len(pdirs) > 1:
        # refuse before writing anything: a partition the broker cannot load, found after others were already
        # recovered, must not leave the log dir half changed behind an exit 2 (plans are recomputed under the lock)
        for pdir in pdirs:
            _refuse_fatal(ld.plan_load(pdir, kafka_version, now_ms=now_ms, lost_detail=False, config=cfg,
                                       recovery_point=recovery_point))
    for pdir in pdirs:
        o = repair_plan.drive(pdir, partial(plan_repair, pdir, kafka_version, now_ms=now_ms, config=cfg,
                                            recovery_point=recovery_point),
                              execute=execute, backup_dir=backup_dir, keep_backup=keep_backup, recover=_interrupted,
                              check=_refuse_fatal, after=_after_execute)
        out.append((o.report, o.recovered, o.backup_dirs))
    return out


def plan_repair(pdir: str, kafka_version: str = ld.DEFAULT_VERSION, *, now_ms: int | None = None,
                config: ld.TopicConfig | None = None,
                recovery_point: int | None = None) -> repair_plan.RepairPlan[ld.LoaderPlan]:
    """The repair plan: the broker loader's plan (``broker/loader.plan_load``) and its steps (``recovery_steps``)."""
    report = ld.plan_load(pdir, kafka_version, now_ms=now_ms, config=config or ld.TopicConfig(),
                          recovery_point=recovery_point)
    return repair_plan.RepairPlan(pdir, report, lambda: recovery_steps(report))


def _after_execute(plan: ld.LoaderPlan) -> None:
    """After the steps, under the lock: the recovery-point checkpoint entry above the new log end is rewritten, and a
    partition left without any segment is an error (the broker would create an empty one)."""
    if plan.recovery_point_rewrite is not None:
        write_recovery_point(plan.partition_dir, plan.recovery_point_rewrite)
    if not segment_bases(plan.partition_dir):
        raise UnreadableFileError("no segment left after recovery", file=plan.partition_dir)
