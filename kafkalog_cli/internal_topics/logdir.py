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
from kafkalog_cli.storage.partition_name import parse_topic_partition_name
from kafkalog_cli.storage.paths import checkpoint_key, log_dir_partitions


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


def discover(paths: list[str]) -> tuple[list[PartitionCopy], list[str]]:
    """Partition copies under the given log dirs / partition dirs / folders of log dirs (one level down), sorted by
    (topic, partition, path); and notes for paths that hold no partition (``storage/paths.log_dir_partitions``).
    A missing path raises UnreadableFileError (exit 2)."""
    pairs, notes = log_dir_partitions(paths)
    brokers: dict[str, str | None] = {}
    found = []
    for path, log_dir in pairs:
        if log_dir not in brokers:
            brokers[log_dir] = broker_id(log_dir)
        topic, part = split_name(os.path.basename(path))
        found.append(PartitionCopy(topic, part, path, log_dir, brokers[log_dir]))
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
    topic, part = checkpoint_key(name)
    return partition_offset(log_dir, topic, part, filename)
