"""What ``dump`` says beside Kafka's text (cli/dump.py prints it on stderr): next steps after problems, and the
notes and errors about inputs Kafka's tool says nothing about (a stray ``.log``, an empty partition, a directory
with nothing to dump)."""

from __future__ import annotations

from typing import Any


def dump_hints(s: Any, args: list[str]) -> list[str]:
    """Next steps after a dump that found problems (the dump itself prints Kafka's text, which has none)."""
    target = " ".join(args) if len(args) <= 2 else "PATH"
    hints = []
    if s.invalid_batches or s.trailing_files or s.errors or s.unreadable_ranges:
        hints.append(f"'kafkalog verify-crc {target}' maps every damaged byte range and says what the broker's "
                     "recovery will do with it ('kafkalog recover' previews it, 'kafkalog salvage' keeps the intact "
                     "batches)")
    if any(k not in s.valid_indexes for k in (*s.index_mismatches, *s.ts_mismatches, *s.not_found)):
        hints.append(f"'kafkalog rebuild-index {target}' shows which index entries are wrong for lookups and "
                     "rebuilds them by the broker's recovery rule (dry run, then --execute)")
    return hints


def stray_note(path: str, fate: str) -> str:
    return f"kafkalog: note: {path}: not a segment name: {fate}"


def empty_partition_note(path: str) -> str:
    return (f"kafkalog: note: {path}: no segment in this partition directory: an empty log (the broker creates its "
            "first segment when it loads the partition)")


def nothing_to_dump(path: str) -> list[str]:
    return [f"kafkalog: error: {path}: no file dump reads in this directory (segments, indexes, snapshots, "
            "checkpoints): is it a Kafka log directory or partition directory?",
            "hint: check the path; 'kafkalog verify-crc' and 'kafkalog scan' take the same paths"]
