"""The log directory's offset checkpoints as the broker reads them for one partition: the recovery point
(``recovery-point-offset-checkpoint``), the log start (``log-start-offset-checkpoint``), the high watermark
(``replication-offset-checkpoint``) and the cleaner's first dirty offset (``cleaner-offset-checkpoint``).

Why one module: every command that needs one of these offsets reads it here, so "which file, which log dir, which
entry wins" is decided once. The file format (``CheckpointFile``: version, count, ``topic partition offset`` lines,
the last entry for a partition wins as in the broker's map, OffsetCheckpointFile.java:65-69) is read by
``storage/companions.py``; this module only picks the file and the entry. Nothing here writes or prints.

Two readers with different texts stay, as the commands print them: ``read_offset_checkpoint`` (the loader's: the
offset parsed as Java's ``Long.parseLong``, the broker's reset-to-0 rule named) and ``partition_offset`` (the
explanations' and repairs': a reason for every unknown value).
"""

from __future__ import annotations

import os

from kafkalog_cli.errors import CheckpointError
from kafkalog_cli.storage import companions as comp
from kafkalog_cli.storage.layout import log_dir_of
from kafkalog_cli.storage.paths import checkpoint_key

RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_FILE = "log-start-offset-checkpoint"
HIGH_WATERMARK_FILE = "replication-offset-checkpoint"
CLEANER_OFFSET_FILE = "cleaner-offset-checkpoint"


def read_offset_checkpoint(logdir: str, name: str, tp: tuple[str, int] | None) -> tuple[int | None, str]:
    """(offset or None, how it was found) from a log-dir checkpoint (``topic partition offset`` lines)."""
    path = os.path.join(logdir, name)
    if not os.path.isfile(path):
        return None, f"{name} missing"
    try:
        cp = comp.parse_checkpoint(comp.read_checkpoint_text(path), path, columns=3)
    except CheckpointError as exc:
        return None, f"{name} unreadable ({exc.message}): the broker resets every partition to 0"
    off = comp.checkpoint_entry(cp, tp[0], str(tp[1])) if tp is not None else None
    if off is not None:  # the last entry for the partition wins, as in the broker's map
        try:
            return comp.java_parse_int(off, 64), f"{name}: {off}"
        except ValueError:
            return None, f"{name} has a malformed offset for this partition"
    return None, f"no entry for this partition in {name}"



def log_start_offset(partition_dir: str, bases: list[int]) -> tuple[int, str]:
    """(the log start offset the broker holds, where it came from): its ``log-start-offset-checkpoint`` entry
    (DeleteRecords moves it) or the first segment's base offset, whichever is greater (LogLoader.java:215-217)."""
    topic, part = checkpoint_key(os.path.basename(os.path.realpath(partition_dir)))
    try:
        tp = (topic, int(part))
    except ValueError:
        tp = None
    cp, _src = read_offset_checkpoint(log_dir_of(partition_dir), LOG_START_FILE, tp)
    if cp is not None and cp > bases[0]:
        return cp, f"{LOG_START_FILE} of the log dir"
    return bases[0], "the first segment's base offset"


def partition_offset(log_dir: str, topic: str, partition: str, filename: str) -> tuple[int | None, str]:
    """``topic partition``'s entry in one of ``log_dir``'s checkpoints, or ``(None, why)``
    (``companions.partition_checkpoint_offset``)."""
    return comp.partition_checkpoint_offset(log_dir, topic, partition, filename)


def high_watermark(partition_dir: str) -> tuple[int | None, str]:
    """The partition's entry in ``replication-offset-checkpoint`` (the cleaner and retention never pass it, a
    follower's truncation falls back to it), or ``(None, why)`` when it is unknown.

    Only a missing/unreadable file (OSError) or one the broker itself would refuse (CheckpointError, non-UTF-8,
    a non-numeric offset) counts as unknown; any other exception is a bug and must surface, not silently drop the
    cap. The caller says so in its plan.
    """
    topic, part = checkpoint_key(os.path.basename(os.path.realpath(partition_dir)))
    return partition_offset(log_dir_of(partition_dir), topic, part, HIGH_WATERMARK_FILE)
