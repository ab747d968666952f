"""Finding partition directories in log dirs, and the per-log-dir facts the broker keeps beside them.

Why a module of its own: ``transactions``, ``explain-retention`` and ``explain-cleaner`` all accept a mix of log
dirs (a broker's ``log.dirs`` entry, possibly copied from several brokers) and partition directories, and all need
the same two checkpoint files the broker keeps per log dir (``log-start-offset-checkpoint``,
``replication-offset-checkpoint``) and the broker id from ``meta.properties``. Nothing here prints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kafkalog_cli.broker.checkpoints import partition_offset
from kafkalog_cli.errors import UnreadableFileError
from kafkalog_cli.storage.layout import segment_bases
from kafkalog_cli.storage.partition_name import parse_topic_partition_name


@dataclass
class PartitionCopy:
    """One partition directory found in the input: which topic-partition, where, and on which broker."""

    topic: str
    partition: int
    path: str
    log_dir: str
    broker: str | None  # broker.id / node.id from the log dir's meta.properties, when there is one

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def where(self) -> str:
        return f"{self.path} (broker {self.broker})" if self.broker is not None else self.path


def split_name(dirname: str) -> tuple[str, int]:
    """(topic, partition) from a live partition directory name (``topic-N``, ``storage/partition_name.py``);
    (name, -1) for any other name, ``-delete``/``-future``/``-stray`` directories included (not live logs)."""
    tp = parse_topic_partition_name(dirname)
    if tp is None or not tp.is_live:
        return dirname, -1
    return tp.topic, tp.partition


def broker_id(log_dir: str) -> str | None:
    """``node.id`` (KRaft) or ``broker.id`` (ZooKeeper) from ``meta.properties``; None when absent or unreadable."""
    try:
        with open(os.path.join(log_dir, "meta.properties"), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    props = {}
    for line in lines:
        if "=" in line and not line.lstrip().startswith("#"):
            k, _, v = line.partition("=")
            props[k.strip()] = v.strip()
    return props.get("node.id") or props.get("broker.id")


def is_partition_dir(path: str) -> bool:
    """A directory holding at least one ``NNN.log`` segment."""
    try:
        return os.path.isdir(path) and bool(segment_bases(path))
    except UnreadableFileError:
        return False


def _partitions_of(log_dir: str, found: list[PartitionCopy]) -> None:
    broker = broker_id(log_dir)
    for name in sorted(os.listdir(log_dir)):
        sub = os.path.join(log_dir, name)
        tp = parse_topic_partition_name(name)
        if tp is None or not tp.is_live or not is_partition_dir(sub):
            continue
        topic, part = split_name(name)
        found.append(PartitionCopy(topic, part, sub, log_dir, broker))


def discover(paths: list[str]) -> tuple[list[PartitionCopy], list[str]]:
    """Partition copies under the given log dirs / partition dirs / folders of log dirs (one level down), sorted by
    (topic, partition, path); and notes for paths that hold no partition. A missing path raises UnreadableFileError (exit 2)."""
    found: list[PartitionCopy] = []
    notes: list[str] = []
    for raw in paths:
        path = os.path.abspath(raw)
        if not os.path.exists(path):
            raise UnreadableFileError("no such file or directory", file=raw)
        if not os.path.isdir(path):
            raise UnreadableFileError("not a directory", file=raw, expected="a log dir or a partition directory",
                                      found="a file")
        if is_partition_dir(path):
            log_dir = os.path.dirname(os.path.realpath(path))
            topic, part = split_name(os.path.basename(path))
            found.append(PartitionCopy(topic, part, path, log_dir, broker_id(log_dir)))
            continue
        before = len(found)
        _partitions_of(path, found)
        if len(found) == before:  # a folder of log dirs (one per broker): one level down, as the other commands
            for name in sorted(os.listdir(path)):
                sub = os.path.join(path, name)
                if os.path.isdir(sub) and not is_partition_dir(sub):
                    _partitions_of(sub, found)
        if len(found) == before:
            notes.append(f"{raw}: no partition directories (topic-N holding .log segments) found")
    found.sort(key=lambda c: (c.topic, c.partition, c.path))
    return found, notes


def checkpoint_offset(copy_or_dir: PartitionCopy | str, filename: str) -> tuple[int | None, str]:
    """The partition's entry in one of the log dir's checkpoint files (``log-start-offset-checkpoint``,
    ``replication-offset-checkpoint``, ``cleaner-offset-checkpoint``), or ``(None, why)``.

    The broker reads these files into a map, so the last entry for a partition wins.
    """
    if isinstance(copy_or_dir, PartitionCopy):
        log_dir, name = copy_or_dir.log_dir, os.path.basename(copy_or_dir.path)
    else:
        real = os.path.realpath(copy_or_dir)
        log_dir, name = os.path.dirname(real), os.path.basename(real)
    topic, _, part = name.rpartition("-")
    return partition_offset(log_dir, topic, part, filename)
