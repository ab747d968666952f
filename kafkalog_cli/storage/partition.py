"""A partition directory's segments, from one directory listing (no file is opened).

Every command that walks a partition in offset order lists its segments here, so they all agree on what a segment
is: a file named ``<20 ASCII digits>.log``.
"""

from __future__ import annotations

import os

from kafkalog_cli.errors import UnreadableFileError, unreadable

INT64_MAX = (1 << 63) - 1


def segment_bases(partition_dir: str) -> list[int]:
    """Sorted base offsets of the ``.log`` segments (possibly empty); typed errors for an unreadable directory."""
    try:
        names = os.listdir(partition_dir)
    except OSError as exc:
        raise unreadable(exc, partition_dir, want="directory") from None
    bases = []
    for n in names:  # cheaper than a regex per name: this loop is the whole cost on 10,000-segment partitions
        if len(n) == 24 and n.endswith(".log") and n[:20].isascii() and n[:20].isdigit():
            base = int(n[:20])
            if base > INT64_MAX:
                # Long.parseLong fails on such a name and the broker refuses to load the log (errata-repair E15)
                raise UnreadableFileError(
                    "segment file name is not a valid offset (above 2^63-1): the broker refuses to load this partition",
                    file=os.path.join(partition_dir, n),
                    expected="a base offset <= 9223372036854775807",
                    found=n[:20],
                )
            bases.append(base)
    bases.sort()
    return bases


def segment_name(base: int, ext: str = "log") -> str:
    return f"{base:020d}.{ext}"


def segment_logs(partition_dir: str) -> list[tuple[int, str]]:
    """(base offset, .log path) of every segment, in offset order."""
    return [(b, os.path.join(partition_dir, segment_name(b))) for b in segment_bases(partition_dir)]


# ------------------------------------------------------------------------------------------------ loader view
LOADER_INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")


def loader_file_kind(name: str) -> str:
    """How the broker's LogLoader classifies a file name (LogFileUtils, LogLoader.removeTempFilesAndCollectSwapFiles):
    ``deleted`` (any ``*.deleted`` except a KRaft ``*.checkpoint.deleted``), ``cleaned``, ``swap``, ``log``
    (``*.log``), ``index`` (``*.index``/``*.timeindex``/``*.txnindex``), ``snapshot`` or ``other``. Checked in
    the loader's order, so ``X.log.swap`` is ``swap``."""
    if name.endswith(".deleted"):
        return "other" if name.endswith(".checkpoint.deleted") else "deleted"
    if name.endswith(".cleaned"):
        return "cleaned"
    if name.endswith(".swap"):
        return "swap"
    if name.endswith(".log"):
        return "log"
    if name.endswith(LOADER_INDEX_SUFFIXES):
        return "index"
    if name.endswith(".snapshot"):
        return "snapshot"
    return "other"


def loader_offset(name: str) -> int | None:
    """LogFileUtils.offsetFromFile: Long.parseLong of the text before the first '.'; None where Java throws
    NumberFormatException (which the loader does not catch for log/index/.cleaned files: the broker fails to start,
    errata E15)."""
    prefix = name.split(".", 1)[0]
    if not prefix or not prefix.isascii() or not (prefix.isdigit() or (prefix[0] in "+-" and prefix[1:].isdigit())):
        return None
    v = int(prefix)
    return v if -(1 << 63) <= v <= INT64_MAX else None
