"""Which segment files a scan reads, and where each one sits (log dir, topic, partition), spec §7.6.

Why here and not in the engines: the driver lists files once and hands plain path strings to either engine, so the
local process pool and the Spark executors see exactly the same work list and label rows the same way.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkalog_cli.storage.layout import SEGMENT_RE, is_scannable_segment
from kafkalog_cli.storage.partition_name import parse_topic_partition_name
from kafkalog_cli.storage.paths import segment_files

if TYPE_CHECKING:
    from kafkalog_cli.scan.listing import Listing

__all__ = ["SEGMENT_RE"]  # re-exported: scan.partition labels rows with it

# <topic>-<partition>[.<32 hex>-(delete|future|stray)]


@dataclass(frozen=True)
class Location:
    log_dir: str
    topic: str
    partition: int | None
    partition_dir: str
    segment: str

    def as_dict(self) -> dict[str, object]:
        from kafkalog_cli.scan.identity import broker_id

        return {
            "log_dir": self.log_dir,
            "broker_id": broker_id(self.log_dir),
            "topic": self.topic,
            "partition": self.partition,
            "partition_dir": self.partition_dir,
            "segment": self.segment,
        }


def parse_partition_dir(name: str) -> tuple[str, int | None]:
    """(topic, partition) of a partition directory name, ``-delete``/``-future``/``-stray`` ones too; the partition
    is None (and the topic the whole name) when the broker would not take the name (``storage/partition_name.py``,
    LocalLog.parseTopicPartitionName)."""
    tp = parse_topic_partition_name(name)
    return (tp.topic, tp.partition) if tp is not None else (name, None)


def display_name(name: str) -> str:
    """A file or directory name as valid UTF-8 text (Parquet strings must be): bytes that are not UTF-8 (an
    ``os.listdir`` name with surrogate escapes) are shown as ``\\xNN``, so the row names the file unambiguously."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def locate(path: str) -> Location:
    """Label a segment path. The path is made absolute (not resolved) so every engine labels it alike; an
    object-store URI (``s3://bucket/.../orders-0/<offset>.log``) is labelled by its key, log_dir a URI too."""
    from kafkalog_cli.storage.tiered import classify

    remote = classify(path) if "-" in path.rsplit("/", 1)[-1] else None
    if remote is not None:  # KIP-405 layouts: topic and partition from the remote directory names
        root = remote.root if "://" in path else os.path.abspath(remote.root)
        return Location(root, remote.topic, remote.partition, remote.partition_dir, os.path.basename(path))
    if "://" in path:
        part_dir = posixpath.dirname(path)
        topic, partition = parse_partition_dir(posixpath.basename(part_dir))
        return Location(posixpath.dirname(part_dir), topic, partition, posixpath.basename(part_dir),
                        posixpath.basename(path))
    if not os.path.isabs(path) or "/." in path or "//" in path:  # expand() hands out normalized absolute paths
        path = os.path.abspath(path)
    part_dir = os.path.dirname(path)
    topic, partition = parse_partition_dir(os.path.basename(part_dir))
    return Location(display_name(os.path.dirname(part_dir)), display_name(topic), partition,
                    display_name(os.path.basename(part_dir)), display_name(os.path.basename(path)))


def segment_sort_key(path: str) -> tuple[str, int, str]:
    if "://" in path:
        name = posixpath.basename(path)
        return posixpath.dirname(path), int(name[:20]) if is_scannable_segment(path) else -1, name
    name = os.path.basename(path)
    base = int(name[:20]) if is_scannable_segment(path) else -1
    return os.path.dirname(os.path.abspath(path)), base, name


def expand(args: list[str], listing: Listing | None = None) -> tuple[list[str], list[str]]:
    """Expand PATH arguments (log dirs, partition dirs, segment files or globs, quoted or not) into absolute
    segment paths in (directory, base offset) order, and the arguments that matched nothing.

    The local arguments are resolved by ``storage/paths.segment_files`` (every directory below an argument that
    holds ``<20 digits>.log`` files counts as a partition directory, so a fleet mount works as well as one log
    dir); object-store prefixes are listed here. Transient files (``.log.deleted``,
    ``.cleaned``, ``.swap``) are not segments and are skipped; with ``listing``, they and the directories that
    cannot be listed are collected there (``scan.listing``).
    """
    from kafkalog_cli.scan import uri

    found: set[str] = set()
    missing: list[str] = []
    for arg in args:
        if uri.is_object_uri(arg):  # every segment object below the prefix
            objs = [o for o in uri.list_objects(arg) if is_scannable_segment(o)]
            found.update(objs)
            if not objs:
                missing.append(arg)
            continue
        arg = uri.local_path(arg)
        segs = segment_files(arg, on_error=listing.walk_error if listing is not None else None,
                             saw=listing.saw if listing is not None else None)
        found.update(segs)
        if not segs:
            missing.append(arg)
    return sorted(found, key=segment_sort_key), missing


def file_size(path: str) -> int:
    """The size of a local file, 0 when it cannot be stat'ed (gone, unreadable): for sizing work, never for deciding
    what a file holds (the walks report a vanished or unreadable file themselves)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
