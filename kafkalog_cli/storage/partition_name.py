"""The one topic-partition directory-name parser, with the broker's rules: ``<topic>-<partition>``, or a
directory the broker renamed: ``<topic>-<partition>.<uniqueId>-delete`` (scheduled for deletion),
``...-future`` (a replica being moved between log dirs), ``...-stray`` (a partition the controller no longer
assigns here).

Source (apache/kafka 1eb7644, ``core/src/main/scala/kafka/log/LocalLog.scala``): the suffixes 567-573 and their
patterns ``^(\\S+)-(\\S+)\\.(\\S+)<suffix>$`` 575-577; ``parseTopicPartitionName`` 637-671: a name ending in a
suffix must match its pattern, the suffixed part is cut at the last '.', the topic is what precedes the last '-',
and the partition is ``String.toInt`` (``Integer.parseInt``: an optional sign, decimal digits of any script
(``Character.digit``), a signed 32-bit value). Where the broker throws ("is not in the form of topic-partition"),
``parse_topic_partition_name`` returns None. Nothing here touches the disk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"
SUFFIXES = (DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX)
MAX_PARTITION = 2**31 - 1  # Int.MaxValue

_JAVA_S = r"[^ \t\n\x0b\f\r]"  # Java's \S without UNICODE_CHARACTER_CLASS: only ASCII white space is \s
_SUFFIX_PATTERNS = {s: re.compile(rf"{_JAVA_S}+-{_JAVA_S}+\.{_JAVA_S}+{s}") for s in SUFFIXES}  # fullmatch
_JAVA_INT = re.compile(r"[+-]?\d+")  # fullmatch; \d: Unicode decimal digits (Nd), as Character.digit(c, 10)


@dataclass(frozen=True)
class TopicPartitionName:
    topic: str
    partition: int
    suffix: str | None = None  # "-delete" | "-future" | "-stray" | None (a live partition directory)

    @property
    def is_live(self) -> bool:
        """A plain ``<topic>-<partition>``: the broker's current log of that partition in this log dir."""
        return self.suffix is None


def java_parse_int(text: str, bits: int = 32) -> int | None:
    """``Integer.parseInt(text)`` (``Long.parseLong`` with ``bits=64``), None where it throws NumberFormatException.
    The one Java number parser of the names and checkpoint files (``storage/companions.py`` raises on None)."""
    if not _JAVA_INT.fullmatch(text):
        return None
    value = int(text)
    return value if -(1 << (bits - 1)) <= value < (1 << (bits - 1)) else None


def parse_topic_partition_name(name: str) -> TopicPartitionName | None:
    """``LocalLog.parseTopicPartitionName`` of a directory's name; None where the broker refuses the name."""
    if not name or "-" not in name:
        return None
    suffix = next((s for s in SUFFIXES if name.endswith(s)), None)
    if suffix is not None:
        if not _SUFFIX_PATTERNS[suffix].fullmatch(name):
            return None
        name = name[: name.rindex(".")]
    topic, _, part = name.rpartition("-")
    if not topic or not part:
        return None
    partition = java_parse_int(part)
    if partition is None:
        return None
    return TopicPartitionName(topic, partition, suffix)


def names_a_partition(path: str) -> bool:
    """Is ``path``'s last component a partition directory name the broker takes (``topic-N``, or a ``-delete`` /
    ``-future`` / ``-stray`` copy: LogManager.loadLogs loads each, LogManager.scala:467-472)? What the commands ask
    of a PATH argument that holds no segment: an empty log (a note) rather than something that is not Kafka's."""
    import os

    return parse_topic_partition_name(os.path.basename(os.path.abspath(path))) is not None
