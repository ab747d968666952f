"""One rule for the files of a Kafka partition directory: names, kinds, segments, leftovers, "no segment".

Why one module: every command (dump, verify-crc, seek-*, scan, transactions, rebuild-index, compact, truncate) must
give the same answer for the same directory. The rule is the broker's, read from Kafka's sources (trunk 1eb7644):

* ``LogFileUtils`` (storage/.../log/LogFileUtils.java): the suffixes; a file's offset is ``Long.parseLong`` of its
  name up to the first '.' (``offsetFromFileName``); names are written as the offset zero-padded to 20 digits
  (``filenamePrefixFromOffset``).
* ``LogLoader.loadSegmentFiles`` (LogLoader.java:356-395): every file whose name ends in ``.log`` is a log file; its
  base offset is parsed from the name, and the segment is then opened by ``LogSegment.open(dir, baseOffset, ...)``
  (LogSegment.java:876-888), which rebuilds the *20-digit* name from the offset and opens it with CREATE
  (FileRecords.openChannel). So ``0.log`` is never read: the broker opens (creating it empty if absent)
  ``00000000000000000000.log`` instead, and ``0.log``'s bytes are invisible to it. A name whose prefix does not parse
  (``abc.log``) throws NumberFormatException and the partition fails to load. Hence: **a segment is a file named
  ``<20 ASCII digits>.log``** (the only name whose data the broker reads); other ``*.log`` names are reported.
* ``LogLoader.removeTempFilesAndCollectSwapFiles`` (LogLoader.java:260-313) and ``load`` (LogLoader.java:128-193):
  what the broker does with leftovers at start-up, see ``leftover_fate``; how it sorts every file of the directory
  (``loader_file_kind``, ``loader_offset``: the recover/salvage model's view).
* An empty partition directory is a valid, empty log: the loader finds no segment and creates the active segment at
  the log start offset. kafkalog says so ("no segment: an empty partition") instead of calling it unreadable, unless
  the directory does not look like a partition directory at all (see ``no_segment``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from kafkalog_cli.errors import UnreadableFileError, cannot_list
from kafkalog_cli.storage.partition_name import names_a_partition

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETE_DIR_SUFFIX = "-delete"
KRAFT_SNAPSHOT_DELETE_SUFFIX = ".checkpoint.deleted"  # LogLoader.java:47, left to KafkaMetadataLog
LEFTOVER_SUFFIXES = (CLEANED_SUFFIX, SWAP_SUFFIX, DELETED_SUFFIX)
INT64_MAX = (1 << 63) - 1
SEGMENT_RE = re.compile(r"^[0-9]{20}\.log$")  # is_segment_name as a pattern (ASCII digits only, unlike \d)

BROKER_CHECKPOINTS = frozenset({
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
})
_KIND_BY_SUFFIX = {
    LOG_SUFFIX: "log",
    INDEX_SUFFIX: "index",
    TIME_INDEX_SUFFIX: "timeindex",
    SNAPSHOT_SUFFIX: "snapshot",
    TXN_INDEX_SUFFIX: "txnindex",
    ".checkpoint": "checkpoint",
}


# ------------------------------------------------------------------------------------------------ names
def filename_prefix(offset: int) -> str:
    """LogFileUtils.filenamePrefixFromOffset: the offset zero-padded to 20 digits."""
    return f"{offset:020d}"


def segment_name(base: int, ext: str = "log") -> str:
    """The broker's name of a segment file: ``segment_name(0, "index")`` is ``00000000000000000000.index``."""
    return f"{filename_prefix(base)}.{ext.lstrip('.')}"


def offset_from_name(name: str) -> int:
    """LogFileUtils.offsetFromFileName: Long.parseLong of the name up to the first '.'; ValueError if it fails
    (the broker's NumberFormatException / StringIndexOutOfBoundsException)."""
    from kafkalog_cli.storage.companions import java_parse_int

    if "." not in name:
        raise ValueError(name)
    return java_parse_int(name[: name.index(".")], 64)


def is_segment_name(name: str) -> bool:
    """``<20 ASCII digits>.log``: the only ``.log`` name whose bytes the broker reads (see the module docstring)."""
    return len(name) == 24 and name.endswith(LOG_SUFFIX) and name[:20].isascii() and name[:20].isdigit()


def remote_base_offset(name: str) -> int | None:
    """The start offset of a remote (KIP-405) segment file name ``<20 digits>-<22-char segment id>.<suffix>``
    (RemoteLogSegmentFileset.toFilename, Aiven ObjectKeyFactory.mainPath), None for any other name."""
    from kafkalog_cli.storage.tiered import REMOTE_FILE_RE

    m = REMOTE_FILE_RE.match(name)
    return int(m["offset"]) if m else None


def is_remote_segment_path(path: str) -> bool:
    """A tiered-storage (KIP-405) remote segment, ``<20 digits>-<segment id>.log`` in a Kafka LocalTieredStorage or
    Aiven plugin directory (``storage/tiered.py`` has the layouts and their sources)."""
    from kafkalog_cli.storage.tiered import is_remote_segment

    return is_remote_segment(path)


def is_scannable_segment(path: str) -> bool:
    """The one discovery rule of scan, verify-crc and dump: a broker segment name, or a remote segment."""
    name = os.path.basename(path)
    return is_segment_name(name) or (name.endswith(LOG_SUFFIX) and is_remote_segment_path(path))


def classify(name: str) -> str:
    """The kind of a file in a Kafka log directory, by name (as DumpLogSegments picks its decoder: by suffix)."""
    if name == "leader-epoch-checkpoint":
        return "leader-epoch-checkpoint"
    if name in BROKER_CHECKPOINTS:
        return "broker-checkpoint"
    if name == "partition.metadata":
        return "partition-metadata"
    if name == "quorum-state":
        return "quorum-state"
    if "." not in name:
        return "nodot"
    return _KIND_BY_SUFFIX.get(name[name.rindex(".") :], "unknown")


# ------------------------------------------------------------------------------------------------ segments
def list_directory(path: str) -> list[str]:
    """``os.listdir`` with the one typed error for a directory that cannot be listed (``errors.cannot_list``)."""
    try:
        return os.listdir(path)
    except OSError as exc:
        raise cannot_list(exc, path) from None


def segment_bases(partition_dir: str) -> list[int]:
    """Sorted base offsets of the segments (possibly none); typed errors for an unreadable directory."""
    names = list_directory(partition_dir)
    bases = []
    for n in names:  # cheaper than a regex per name: this loop is the whole cost on 10,000-segment partitions
        if is_segment_name(n):
            base = int(n[:20])
            if base > INT64_MAX:
                # Long.parseLong fails on such a name and the broker refuses to load the log
                raise UnreadableFileError(
                    "segment file name is not a valid offset (above 2^63-1): the broker refuses to load this partition",
                    file=os.path.join(partition_dir, n),
                    expected="a base offset <= 9223372036854775807",
                    found=n[:20],
                )
            bases.append(base)
    bases.sort()
    return bases


def segment_logs(partition_dir: str) -> list[tuple[int, str]]:
    """(base offset, .log path) of every segment, in offset order."""
    return [(b, os.path.join(partition_dir, segment_name(b))) for b in segment_bases(partition_dir)]


def log_dir_of(partition_dir: str) -> str:
    """The log directory holding a partition directory, the one a broker would lock and keep the checkpoints in:
    the parent of the partition dir's *real* path.

    ``abspath`` would take the parent of a symlink (``/links/t-0`` -> ``/links``), where no ``.lock`` exists, and so
    let a write through a symlinked partition path bypass the broker-lock check.
    """
    return os.path.dirname(os.path.realpath(partition_dir))


def looks_like_partition_dir(path: str) -> bool:
    """``<topic>-<n>`` (optionally with Kafka's ``.<uuid>-delete/-future/-stray`` suffix), or holding a file only a
    partition directory has."""
    if names_a_partition(path):
        return True
    return any(os.path.exists(os.path.join(path, n)) for n in ("partition.metadata", "leader-epoch-checkpoint"))


def no_segment(partition_dir: str) -> UnreadableFileError:
    """The one "no segment found" error: for a partition directory, an empty log (the broker would create the first
    segment at load); for any other directory, probably the wrong path."""
    if looks_like_partition_dir(partition_dir):
        return UnreadableFileError(
            "no segment in this partition directory: an empty log (the broker creates its first segment when it "
            "loads the partition)",
            file=partition_dir, expected="<20-digit offset>.log files", found="none",
        )
    return UnreadableFileError(
        "no segment here: this does not look like a partition directory (give <log dir>/<topic>-<partition>)",
        file=partition_dir, expected="<20-digit offset>.log files", found="none",
    )


def require_segments(partition_dir: str) -> list[int]:
    """Base offsets of the segments, or the ``no_segment`` error when there is none."""
    bases = segment_bases(partition_dir)
    if not bases:
        raise no_segment(partition_dir)
    return bases


# ------------------------------------------------------------------------------------------------ leftovers
def is_leftover(name: str) -> bool:
    """A file of an unfinished clean, split, swap or delete, which the broker resolves when it loads the log."""
    return name.endswith(LEFTOVER_SUFFIXES)


def deleted_leftovers(names: list[str]) -> list[str]:
    """The leftovers the broker's loader just deletes before anything else (files already scheduled for deletion,
    ``.deleted``: LogLoader.removeTempFilesAndCollectSwapFiles, LogLoader.java:276-280 at 1eb7644); a repair resolves
    them the same way instead of refusing. KRaft's ``.checkpoint.deleted`` are left to the metadata log."""
    return [n for n in names if n.endswith(DELETED_SUFFIX) and not n.endswith(KRAFT_SNAPSHOT_DELETE_SUFFIX)]


def leftovers(partition_dir: str) -> list[str]:
    """Names of the leftover files in a partition directory, sorted."""
    return sorted(n for n in list_directory(partition_dir) if is_leftover(n))


def leftover_fate(name: str, names: list[str] | set[str]) -> str:
    """What the broker's loader does with leftover ``name`` given the directory's other ``names`` (LogLoader.java
    removeTempFilesAndCollectSwapFiles and load)."""
    if name.endswith(KRAFT_SNAPSHOT_DELETE_SUFFIX):
        return "the KRaft metadata log deletes it at start-up (a snapshot already scheduled for deletion)"
    if name.endswith(DELETED_SUFFIX):
        return "the broker deletes it at start-up (a file already scheduled for deletion)"
    try:
        offset = offset_from_name(name)
    except ValueError:
        return ("its name does not start with an offset: the broker fails to load this partition "
                "(NumberFormatException); move it out of the directory")
    if name.endswith(CLEANED_SUFFIX):
        return "the broker deletes it at start-up (output of an unfinished clean or split)"
    cleaned = [n for n in names if n.endswith(CLEANED_SUFFIX)]
    min_cleaned: int | None = None
    for n in cleaned:
        try:
            o = offset_from_name(n)
        except ValueError:
            continue
        min_cleaned = o if min_cleaned is None else min(min_cleaned, o)
    if min_cleaned is not None and offset >= min_cleaned:
        return (f"the broker deletes it at start-up (part of an unfinished split: at or above the smallest .cleaned "
                f"offset {min_cleaned})")
    if name[: -len(SWAP_SUFFIX)].endswith(LOG_SUFFIX):
        return ("the broker installs it at start-up: it deletes the segments this swap replaces, then renames it to "
                f"{name[: -len(SWAP_SUFFIX)]} (an interrupted clean or split)")
    return f"the broker renames it to {name[: -len(SWAP_SUFFIX)]} at start-up (an interrupted swap)"


# ------------------------------------------------------------------------------------------------ the loader's view
LOADER_INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


def loader_file_kind(name: str) -> str:
    """How the broker's LogLoader classifies a file name (LogFileUtils, LogLoader.removeTempFilesAndCollectSwapFiles,
    LogLoader.java:260-313): ``deleted`` (any ``*.deleted`` except a KRaft ``*.checkpoint.deleted``), ``cleaned``,
    ``swap``, ``log`` (``*.log``), ``index`` (``*.index``/``*.timeindex``/``*.txnindex``), ``snapshot`` or
    ``other``. Checked in the loader's order, so ``X.log.swap`` is ``swap``."""
    if name.endswith(DELETED_SUFFIX):
        return "other" if name.endswith(KRAFT_SNAPSHOT_DELETE_SUFFIX) else "deleted"
    if name.endswith(CLEANED_SUFFIX):
        return "cleaned"
    if name.endswith(SWAP_SUFFIX):
        return "swap"
    if name.endswith(LOG_SUFFIX):
        return "log"
    if name.endswith(LOADER_INDEX_SUFFIXES):
        return "index"
    if name.endswith(SNAPSHOT_SUFFIX):
        return "snapshot"
    return "other"


def loader_offset(name: str) -> int | None:
    """``offset_from_name``, None where Java throws NumberFormatException (which the loader does not catch for
    log/index/.cleaned files: the broker fails to start, errata E15)."""
    try:
        return offset_from_name(name)
    except ValueError:
        return None


@dataclass(frozen=True)
class StrayLog:
    """A ``*.log`` file that is not a segment by the broker's rule, and what the broker does about it."""

    name: str
    fate: str


def stray_logs(names: list[str] | set[str]) -> list[StrayLog]:
    """``.log`` files of a directory listing whose bytes the broker never reads (``0.log``, ``abc.log``)."""
    out = []
    for n in sorted(names):
        if not n.endswith(LOG_SUFFIX) or is_segment_name(n):
            continue
        try:
            offset = offset_from_name(n)
        except ValueError:
            out.append(StrayLog(n, "its name does not start with an offset: the broker fails to load this partition "
                                   "(NumberFormatException); move it out of the directory"))
            continue
        if offset < 0:
            out.append(StrayLog(n, "a negative offset in the name: the broker cannot use it as a segment; move it out"))
            continue
        canonical = segment_name(offset)
        out.append(StrayLog(n, f"the broker never reads it: it opens {canonical} for base offset {offset} "
                               f"(creating it empty if absent); if this file holds the data, rename it to {canonical}"))
    return out


def base_offset_of(name: str) -> int:
    """The base offset in a segment file's name: Long.parseLong of the name up to the first dot (ValueError when it
    fails); a tiered-storage remote segment file (``<20 digits>-<segment id>.<suffix>``) has its start offset in
    front."""
    remote = remote_base_offset(name)
    return remote if remote is not None else offset_from_name(name)
