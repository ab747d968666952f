"""A partition directory's segments, from one directory listing (no file is opened).

The rule itself (what a segment is: a file named ``<20 ASCII digits>.log``) lives in ``storage.layout``; this module
keeps the names its callers import.
"""

from __future__ import annotations

from kafkalog_cli.storage.layout import INT64_MAX, segment_bases, segment_logs, segment_name

__all__ = [
    "INT64_MAX", "LOADER_INDEX_SUFFIXES", "loader_file_kind", "loader_offset", "segment_bases", "segment_logs",
    "segment_name",
]


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
