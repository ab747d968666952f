"""The one resolver from PATH arguments to what a command reads: log dirs, partition directories, segment files.

Why one module: every command takes log dirs, partition directories or files on its command line, and each used to
decide for itself which partitions an argument names (six expanders, four name parsers). They disagreed (which
directory counts as a partition, ASCII digits or not, the wording of a missing path). Here is the one answer, in
the broker's terms (Kafka trunk 1eb7644):

* A log dir's partition directories are its subdirectories whose name ``LocalLog.parseTopicPartitionName`` takes
  (``LogManager.loadLogs``, LogManager.scala:467-472; the parser is ``storage/partition_name.py``). Commands that
  act on the live log of a partition (``recover``, ``salvage``, ``explain-*``, ``transactions``) take the live
  ``<topic>-<partition>`` ones; the broker renames the others (``-delete``, ``-future``, ``-stray``) itself. A
  partition directory named on the command line is taken as given by the commands that read or rewrite its files
  (dump, verify-crc, scan, rebuild-index, compact, truncate-to-epoch, seek-*), suffixed or not; recover and salvage
  model the live log's load and take a live one only.
* A partition directory's files are sorted as the broker names them (``storage/layout.py``): a segment is a
  ``<20 digits>.log`` file.
* The typed errors: a PATH that does not exist is ``missing`` ("no such file or directory"), a file where a
  directory is needed is ``not_a_directory``, a directory that lists nothing of Kafka's is ``layout.no_segment``
  (a partition directory: an empty log; any other: the wrong path), a directory that cannot be listed is
  ``errors.cannot_list`` ("cannot list directory: permission denied", through ``layout.list_directory``).

Nothing here prints; local paths only (``scan`` adds object-store URIs above, ``scan/paths.py``).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable

from kafkalog_cli.errors import UnreadableFileError
from kafkalog_cli.storage import layout
from kafkalog_cli.storage.partition_name import FUTURE_DIR_SUFFIX, TopicPartitionName, parse_topic_partition_name

NO_SUCH_PATH = "no such file or directory"


# ------------------------------------------------------------------------------------------------ typed errors
def missing(arg: str) -> UnreadableFileError:
    """The one error for a PATH argument that does not exist."""
    return UnreadableFileError(NO_SUCH_PATH, file=arg)


def not_a_directory(arg: str, expected: str = "a partition directory") -> UnreadableFileError:
    """The one error for a file given where a directory is needed."""
    return UnreadableFileError("not a directory", file=arg, expected=expected, found="a file")


def require_directory(arg: str, expected: str = "a partition directory") -> None:
    """A directory argument exists and is a directory, else ``missing`` / ``not_a_directory``."""
    if os.path.isdir(arg):
        return
    if not os.path.lexists(arg):
        raise missing(arg)
    raise not_a_directory(arg, expected)


# ------------------------------------------------------------------------------------------------ names
def partition_name(path: str) -> TopicPartitionName | None:
    """Kafka's topic-partition name of a directory path's last component (suffixed ones too), None if it has none."""
    return parse_topic_partition_name(os.path.basename(os.path.abspath(path)))


def live_partition(path: str) -> tuple[str, int] | None:
    """(topic, partition) of a live ``<topic>-<partition>`` directory, None for any other name (``-delete``,
    ``-future``, ``-stray`` ones included)."""
    tp = partition_name(path)
    return (tp.topic, tp.partition) if tp is not None and tp.is_live else None


def checkpoint_key(name: str) -> tuple[str, str]:
    """(topic, partition) under which the log dir's checkpoints name the partition directory called ``name`` (the
    caller takes the name of the real path where a symlinked partition must be found in its log dir). The broker checkpoints its current and
    future logs per log dir (``LogManager.logsByDir``: ``currentLogs ++ futureLogs``), keyed by TopicPartition, so a
    live ``topic-N`` and a ``-future`` copy have an entry; a ``-delete``/``-stray`` directory or a name the broker
    does not parse has none: it is returned as it is, with partition ``"-1"``."""
    tp = parse_topic_partition_name(name)
    if tp is None or tp.suffix not in (None, FUTURE_DIR_SUFFIX):
        return name, "-1"
    return tp.topic, str(tp.partition)


# ------------------------------------------------------------------------------------------------ partition dirs
_PARTITION_FILES = (".log", ".snapshot", ".swap", ".cleaned")


def holds_segments(path: str) -> bool:
    """A directory holding at least one ``<20 digits>.log`` segment (False when it cannot be listed)."""
    try:
        return os.path.isdir(path) and bool(layout.segment_bases(path))
    except UnreadableFileError:
        return False


def empty_partition(path: str) -> bool:
    """A partition directory (``partition_name.names_a_partition``: suffixed copies too) holding no ``.log`` file:
    an empty log, which the broker's loader opens by creating its first segment. Subdirectories do not count: the
    loader reads only the directory's files (``LogLoader.loadSegmentFiles``, LogLoader.java:359-361,
    ``filter(File::isFile)``)."""
    if not os.path.isdir(path) or partition_name(path) is None:
        return False
    try:
        names = os.listdir(path)
    except OSError:
        return False
    return not any(n.endswith(".log") and not os.path.isdir(os.path.join(path, n)) for n in names)


def live_children(log_dir: str, *, need_segments: bool = False) -> list[str]:
    """The live partition directories of a log dir (``<topic>-<partition>``, LogManager.scala:467-472), sorted by
    name; with ``need_segments`` only those holding a segment."""
    out = []
    for name in sorted(layout.list_directory(log_dir)):
        sub = os.path.join(log_dir, name)
        tp = parse_topic_partition_name(name)
        if tp is None or not tp.is_live or not (holds_segments(sub) if need_segments else os.path.isdir(sub)):
            continue
        out.append(sub)
    return out


def partition_dirs(args: list[str]) -> list[str]:
    """PATH arguments of the partition loader's commands (``recover``, ``salvage``): a live partition directory (one
    holding a file only a partition has) as is, a log dir as its live partition directories. Absolute paths."""
    out: list[str] = []
    for p in args:
        require_directory(p, "a partition or log directory")
        names = layout.list_directory(p)
        if live_partition(p) is not None and (any(n.endswith(_PARTITION_FILES) for n in names)
                                              or "leader-epoch-checkpoint" in names or "partition.metadata" in names):
            out.append(os.path.abspath(p))
            continue
        subs = live_children(p)
        if not subs:
            raise UnreadableFileError("neither a partition directory nor a log directory with partitions", file=p,
                                      expected="<topic>-<partition> directories", found="none")
        out.extend(os.path.abspath(s) for s in subs)
    return out


def log_dir_partitions(args: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """PATH arguments of the commands that read a fleet's copies (``explain-*``, ``transactions``): a partition
    directory (one holding a segment), a log dir, or a folder of log dirs (one level down). Returns
    ``[(partition dir, its log dir)]`` in argument order and notes for arguments that hold no partition."""
    found: list[tuple[str, str]] = []
    notes: list[str] = []
    for raw in args:
        path = os.path.abspath(raw)
        require_directory(raw, "a log dir or a partition directory")
        if holds_segments(path):
            found.append((path, os.path.dirname(os.path.realpath(path))))
            continue
        before = len(found)
        found += [(sub, path) for sub in live_children(path, need_segments=True)]
        if len(found) == before:  # a folder of log dirs (one per broker): one level down
            for name in sorted(layout.list_directory(path)):
                sub = os.path.join(path, name)
                if os.path.isdir(sub) and not holds_segments(sub):
                    found += [(s, sub) for s in live_children(sub, need_segments=True)]
        if len(found) == before:
            notes.append(f"{raw}: no partition directories (topic-N holding .log segments) found")
    return found, notes


_LOG_FILE_SUFFIXES = (".log", ".log.deleted", ".log.cleaned", ".log.swap")


def log_files(path: str) -> list[str]:
    """The names of a partition directory's log files, leftovers included: ``<offset>.log`` segments and the
    ``.log.deleted`` / ``.log.cleaned`` / ``.log.swap`` files of an unfinished delete, clean or swap (empty when
    the directory cannot be listed)."""
    try:
        names = layout.list_directory(path)
    except UnreadableFileError:
        return []
    return sorted(n for n in names if n.endswith(_LOG_FILE_SUFFIXES) and n[:1].isdigit()
                  and os.path.isfile(os.path.join(path, n)))


def partition_copies(args: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """PATH arguments of the commands that read every copy a fleet still holds of a partition (``group-history``):
    as ``log_dir_partitions``, but a partition directory of any name Kafka gives one (live, ``-delete``,
    ``-future``, ``-stray``: LocalLog.parseTopicPartitionName) counts when it holds a log file or a leftover of
    one (``log_files``), so a deleted partition's or an unfinished clean's records are read too. Returns
    ``[(partition dir, its log dir)]`` in argument order and notes for arguments that hold no partition."""
    found: list[tuple[str, str]] = []
    notes: list[str] = []

    def children(d: str) -> list[str]:
        return [os.path.join(d, n) for n in sorted(layout.list_directory(d))
                if parse_topic_partition_name(n) is not None and log_files(os.path.join(d, n))]

    for raw in args:
        path = os.path.abspath(raw)
        require_directory(raw, "a log dir or a partition directory")
        if partition_name(path) is not None and log_files(path):
            found.append((path, os.path.dirname(os.path.realpath(path))))
            continue
        before = len(found)
        found += [(sub, path) for sub in children(path)]
        if len(found) == before:  # a folder of log dirs (one per broker): one level down
            for name in sorted(layout.list_directory(path)):
                sub = os.path.join(path, name)
                if os.path.isdir(sub) and partition_name(sub) is None:
                    found += [(s, sub) for s in children(sub)]
        if len(found) == before:
            notes.append(f"{raw}: no partition directories (topic-N holding .log segments) found")
    return found, notes


def segment_groups(args: list[str]) -> dict[str, list[str] | None]:
    """PATH arguments of ``rebuild-index``: partition dir -> the selected ``.log`` paths (None: every segment). A
    directory is taken as a partition directory; a file selects the segment it belongs to (``N.log`` beside it)."""
    groups: dict[str, list[str] | None] = {}
    for p in args:
        if os.path.isdir(p):
            groups[os.path.abspath(p)] = None
            continue
        if not os.path.exists(p):
            raise missing(p)
        d = os.path.dirname(os.path.abspath(p))
        stem = os.path.basename(p).split(".", 1)[0]
        log = os.path.join(d, stem + ".log")
        if not os.path.exists(log):
            raise UnreadableFileError("no .log segment for this file", file=p, expected=f"{stem}.log beside it",
                                      found="none")
        if d in groups and groups[d] is None:
            continue
        sel = groups.setdefault(d, [])
        if sel is not None and log not in sel:
            sel.append(log)
    return groups


# ------------------------------------------------------------------------------------------------ files
_LISTING_ORDER = {"log": 0, "index": 1, "timeindex": 2, "txnindex": 3, "snapshot": 4}


def directory_files(path: str, *, top: bool = True, _seen: set[tuple[int, int]] | None = None) -> list[str]:
    """What ``dump`` and ``verify-crc`` walk when given a directory: the files of a partition directory in offset
    order (then KRaft snapshots, then other files); partition directories of a log directory follow, each in the
    same order.

    ``path`` itself must be listable (OSError otherwise); a subdirectory that cannot be listed (permission denied,
    an I/O error, gone meanwhile) is returned as itself, in its place, so that callers report it and go on.
    A directory reached twice (a symlink loop, or a link to a directory walked already) is walked once."""
    try:
        names = sorted(os.listdir(path))
        st = os.stat(path)
    except OSError:
        if top:
            raise
        return [path]
    seen = set() if _seen is None else _seen
    if (st.st_dev, st.st_ino) in seen:
        return []
    seen.add((st.st_dev, st.st_ino))
    segs, snaps, others, subdirs = [], [], [], []
    for n in names:
        full = os.path.join(path, n)
        if os.path.isdir(full):
            subdirs.append(full)
            continue
        kind = layout.classify(n)
        if kind in _LISTING_ORDER:
            try:
                segs.append((layout.base_offset_of(n), _LISTING_ORDER[kind], n))
            except ValueError:
                others.append(n)
        elif kind == "checkpoint":
            snaps.append(n)
        elif n in (".lock",):
            continue
        else:
            others.append(n)
    out = [os.path.join(path, n) for _, _, n in sorted(segs)]
    out += [os.path.join(path, n) for n in snaps]
    out += [os.path.join(path, n) for n in others]
    for d in subdirs:
        out += directory_files(d, top=False, _seen=seen)
    return out


def unmatched_reason(arg: str) -> str | None:
    """Why a local PATH argument (not a glob) gave nothing, when the path itself is the reason: ``missing``'s text,
    or ``cannot list directory: ...``; None when it was read and holds nothing (the caller words that)."""
    if glob.has_magic(arg):
        return None
    if not os.path.lexists(arg):
        return NO_SUCH_PATH
    if os.path.isdir(arg):
        try:
            layout.list_directory(arg)
        except UnreadableFileError as exc:
            return exc.message
    return None


def segment_files(arg: str, *, on_error: Callable[[OSError], None] | None = None,
                  saw: Callable[[str, list[str]], None] | None = None) -> list[str]:
    """The segments ``scan`` reads for one local PATH argument (a log dir, partition dir, segment file or glob):
    every ``<20 digits>.log`` file below it, absolute, unsorted. Every directory below that holds segments counts
    as a partition directory, so a fleet mount (``/mnt/brokers/*/kafka-logs``) works as well as one log dir.
    ``on_error`` gets the directories that cannot be listed, ``saw`` every directory's file names."""
    matches = sorted(glob.glob(arg)) if glob.has_magic(arg) else ([arg] if os.path.exists(arg) else [])
    out: list[str] = []
    for m in matches:
        if os.path.isdir(m):
            for root, dirs, files in os.walk(m, onerror=on_error):
                dirs.sort()
                out.extend(os.path.join(root, f) for f in files if layout.is_scannable_segment(os.path.join(root, f)))
                if saw is not None:
                    saw(root, files)
        elif os.path.isfile(m):
            out.append(m)
    return [os.path.abspath(s) for s in out]
