"""The text of ``locate-group``, ``locate-txn`` and ``transactions`` over one segment (cli/internal_cmds.py prints
it; ``transactions`` over log dirs is render/transactions.py)."""

from __future__ import annotations

from typing import Any

from kafkalog_cli.timefmt import iso_utc


def locate_line(info: dict[str, Any], partitions: int) -> str:
    return (f"{info['topic']} partition {info['partition']} (directory {info['directory']}, "
            f"hashCode {info['hash_code']}, {partitions} partitions)")


def segment_open_lines(path: str, segments: int, found: list[Any]) -> list[str]:
    """Open transactions of one segment by the log-only rule; the last timestamp also as UTC ISO-8601."""
    if not found:
        return [f"No open transactions in {path} ({segments} segment(s))."]
    return [f"producerId: {t.producer_id} producerEpoch: {t.producer_epoch} firstOffset: {t.first_offset} "
            f"lastOffset: {t.last_offset} lastTimestamp: {t.last_timestamp} ({iso_utc(t.last_timestamp)}) "
            f"batches: {t.batches} segment: {t.segment}" for t in found]
